#!/usr/bin/env bash
# Session 18, device call 3 (H200, < 300 s):
#  1. the two shipped f32 NCHW strided bwd-data entries re-tuned with the shared phase body
#     (`--time 40` each, default strategy, into a copy of tuned-db/sm_90.toml, so each search
#     measures the shipped winner first); the copy comes back as $OUT/sm_90.toml;
#  2. the journals of a 10 s and an 80 s search of fwd bf16 3x3 c192 35x35 n32 (the problem
#     whose 10 s search stays > 2% behind), for the analysis of what the short one misses.
#   Usage (repo root, on the device): [LIMIT=290] bash scripts/session18/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
cp tuned-db/sm_90.toml "$OUT/sm_90.toml"
say "== 1 re-tune the f32 NCHW strided entries $(el)"
grep -E '^problem = "conv -F 2 .*-u [2-9] .*NGCHW' tuned-db/sm_90.toml | sed 's/^problem = "//; s/"$//' > /tmp/strided.txt
cat /tmp/strided.txt | tee -a "$S"
timeout 120 "$B" --problems /tmp/strided.txt --arch sm_90 --time 40 --db "$OUT/sm_90.toml" \
  --journal /tmp/retune.jsonl --report "$OUT/retune.json" > /tmp/retune.log 2>&1
say "rc=$? $(el)"; grep -h '^summary' /tmp/retune.log | cut -c1-260 | tee -a "$S"
rm -f "$OUT"/*.lock
say "== 2 journals, fwd 3x3 c192, 10 s and 80 s $(el)"
P="convbfp16 -F 1 -n 32 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 --layout NHWC"
for t in 10 80; do
  timeout $(( t + 30 )) "$B" --problem "$P" --arch sm_90 --time $t --db /tmp/db-$t.toml \
    --journal /tmp/j-$t.jsonl > /tmp/log-$t.txt 2>&1
  say "$t s rc=$? $(el): $(grep -h '^summary' /tmp/log-$t.txt | grep -o 'best .*' | cut -c1-200)"
  gzip -c /tmp/j-$t.jsonl > "$OUT/j-$t.jsonl.gz"
done
say "== done $(el)"
