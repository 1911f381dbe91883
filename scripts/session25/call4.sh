#!/usr/bin/env bash
# Session 25, device call 4 (H200): issue 16's tuning targets with this build, in one run.
#  1. scripts/session10/tune-cost-ab.sh, `--time 10`, this build only: wall (overrun), time to the
#     first measured candidate (fixed cost), candidates/s, the 4-phase f32 problem;
#  2. default `--time 10` searches of the four problems outside the suite of
#     scripts/session13/long-vs-short.txt, and a `--time 80` search of the one whose 10 s search
#     missed 2% (fwd 3x3 c192 35x35), cuDNN on all four in the same run.
#   Usage (repo root, on the device): bash scripts/session25/call4.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 tune-cost $(el)"
tune_cost 70 "$B" ' '
say "== 2 10 s (and 80 s for p1) $(el)"
U=$OUT/long; mkdir -p "$U"; i=0
while read -r p; do
  i=$((i + 1)); echo "$p" > "$U/p$i.txt"
  ts=10; [ $i -eq 1 ] && ts="10 80"
  for t in $ts; do
    timeout $((t + 8)) "$B" --problems "$U/p$i.txt" --arch sm_90 --time $t --db "$U/t$t-$i.toml" \
      --journal "$U/t$t-$i.jsonl" --report "$U/t$t-$i.json" --quiet > "$U/t$t-$i.log" 2>&1
    say "p$i t=$t rc=$? $(el) $(grep -h '^summary:' "$U/t$t-$i.log" | grep -o 'evaluated.*' | cut -c1-200)"
  done
done < scripts/session13/long-vs-short.txt
timeout 60 python3 scripts/compare-cudnn.py scripts/session13/long-vs-short.txt --json "$U/cudnn.json" > "$U/cudnn.txt" 2>&1
say "cudnn rc=$? $(el)"
python3 scripts/lib/short-vs-long.py "$U" "$i" | tee -a "$S"
grep -h "^summary:" "$U"/*.log | sed 's/^summary: //' | cut -c1-400 > "$OUT/long-summaries.txt"
tail -5 "$U/cudnn.txt" | tee -a "$S"
say "== done $(el)"
