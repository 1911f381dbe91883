#!/usr/bin/env bash
# Session 13, device call 1 (H200, < 560 s): issue 16's open measurements with this build.
#  1. scripts/session10/tune-cost-ab.sh, `--time 10`, this build only (the first candidate of
#     bwd-weight 3x3 after the enumeration fix);
#  2. where an f32 NCHW 5x5 s3 (4-phase) candidate's time goes: `convtune compile --ptxas`
#     of two configs on that problem and on the stride-1 problem with the same sub-GEMM shape;
#  3. a default `--time 10` search against a default `--time 80` search on four problems
#     outside the suite (scripts/session13/long-vs-short.txt), cuDNN in the same run;
#  4. scripts/fallback-holdout.sh 8 (the shipped database, 8 entries held out).
#   Usage (repo root, on the device): bash scripts/session13/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 tune-cost $(el)"
tune_cost 70 "$B" ' '
say "== 2 phased compile $(el)"
P9="conv -F 2 -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3"
P1="conv -F 2 -n 16 -c 64 -H 16 -W 16 -k 64 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1"
for c in "v1:bm=32,bn=64,bk=32,wm=32,wn=64,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=4" "v1:bm=32,bn=32,bk=16,wm=16,wn=32,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1"; do
  for p in "$P9" "$P1"; do
    s0=$(date +%s.%N)
    "$B" compile --problem "$p" --arch sm_90 --config "$c" -o /tmp/k.ptx --ptxas --json > /tmp/k.json 2>&1
    rc=$?; s1=$(date +%s.%N)
    python3 - "$p" "$c" "$rc" "$s0" "$s1" <<'PY' | tee -a "$S"
import json, sys
p, c, rc, s0, s1 = sys.argv[1:]
try:
    j = json.load(open("/tmp/k.json")); st = j["steps_s"]; llvm = sum(st.values())
except Exception as e:
    j, llvm = {}, float("nan")
wall = float(s1) - float(s0)
print(f"{p[24:60]:36} {c[3:40]:38} rc={rc} wall {wall:5.2f} s LLVM {llvm:5.2f} s ptxas+rest {wall-llvm:5.2f} s PTX {j.get('ptx',{}).get('bytes')} B")
PY
  done
done
say "== 3 10 s vs 80 s $(el)"
U=$OUT/long; mkdir -p "$U"; i=0
while read -r p; do
  i=$((i + 1)); echo "$p" > "$U/p$i.txt"
  for t in 10 80; do
    timeout $((t + 8)) "$B" --problems "$U/p$i.txt" --arch sm_90 --time $t --db "$U/t$t-$i.toml" \
      --journal "$U/t$t-$i.jsonl" --report "$U/t$t-$i.json" --quiet > "$U/t$t-$i.log" 2>&1
    say "p$i t=$t rc=$? $(el)"
  done
done < scripts/session13/long-vs-short.txt
timeout 40 python3 scripts/compare-cudnn.py scripts/session13/long-vs-short.txt --json "$U/cudnn.json" > "$U/cudnn.txt" 2>&1
say "cudnn rc=$? $(el)"
python3 scripts/lib/short-vs-long.py "$U" "$i" | tee -a "$S"
grep -h "^summary:" "$U"/*.log | sed 's/^summary: //' | cut -c1-400 > "$OUT/long-summaries.txt"
tar czf "$OUT/long.tgz" -C "$OUT" long 2>/dev/null && rm -rf "$U"
say "== 4 fallback holdout $(el)"
OUT=$OUT timeout 120 bash scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$B" > "$OUT/holdout.log" 2>&1
say "rc=$? $(el)"; tail -12 "$OUT/holdout.log" | tee -a "$S"
tar czf "$OUT/holdout.tgz" -C "$OUT" holdout 2>/dev/null && rm -rf "$OUT/holdout"
say "== done $(el)"
