#!/usr/bin/env bash
# Session 15, one device call for everything (H200, < 590 s; the device was scarce, so calls 1
# and 2 became this one):
#  1. the untuned fallback with and without this session's re-tiling on the shipped database
#     (scripts/fallback-holdout.sh 8, OLD_BIN = the session's base build);
#  2. leave-one-out fallback picks that re-tiling changed, timed (scripts/session15/loo.sh);
#  3. whether cuDNN's kernels overlap back-to-back calls (scripts/session15/overlap.py);
#  4. re-tune every shipped entry under the read-sweep timing with the time left (default
#     strategy, built-in space; the build carries the shipped database, so each search measures
#     the shipped winner first and the journal holds old and new configs timed in the same run).
#   Usage (repo root, on the device): [LIMIT=seconds the call may run, default 590] bash scripts/session15/call3.sh
#   Results: $OUT/summary.txt, $OUT/{holdout,loo}.tgz, $OUT/retune/.
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 fallback holdout, this build and the base build $(el)"
OLD_BIN=$PWD/target/base/convtune OUT=$OUT timeout 110 bash scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$B" \
  > "$OUT/holdout.log" 2>&1
say "rc=$? $(el)"; tail -20 "$OUT/holdout.log" | cut -c1-220 | tee -a "$S"
tar czf "$OUT/holdout.tgz" -C "$OUT" holdout 2>/dev/null && rm -rf "$OUT/holdout"
say "== 2 fallback leave-one-out on the picks re-tiling changed $(el)"
BIN=$B OUT=$OUT timeout 120 bash scripts/session15/loo.sh > "$OUT/loo.log" 2>&1
say "rc=$? $(el)"; cut -c1-200 "$OUT/loo.log" | tee -a "$S"
tar czf "$OUT/loo.tgz" -C "$OUT" loo 2>/dev/null && rm -rf "$OUT/loo"
say "== 3 cuDNN back to back: do its kernels overlap (PDL)? $(el)"
printf '%s\n' "convbfp16 -F 1 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 --layout NHWC" \
  "convbfp16 -F 1 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 --layout NHWC" > "$OUT/overlap.txt"
timeout 40 python3 scripts/session15/overlap.py "$OUT/overlap.txt" 2>&1 | grep -v Warning | tee -a "$S"
R=$OUT/retune; mkdir -p "$R"
python3 -c "
import tomllib
for e in tomllib.load(open('tuned-db/sm_90.toml', 'rb'))['entry']:
    print(e['problem'])" > "$R/problems.txt"
total=$(( ${LIMIT:-590} - 30 - $(date +%s) + t0 ))
say "== 4 retune $(wc -l < "$R/problems.txt") problems, --time-total $total $(el)"
if [ "$total" -gt 60 ]; then
  tune_list "$R" "$total"
  mkdir -p target/session15 && cp -r "$R" target/session15/
fi
say "== done $(el)"
