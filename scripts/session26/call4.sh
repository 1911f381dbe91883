#!/usr/bin/env bash
# Session 26, device call 4 (H200): depthwise backward weight on the direct kernel (mma=dw).
#  1. `convtune selfcheck` over scripts/session26/dw-wgrad.txt with a space of only `mma=dw`
#     (every sampled kernel verified against the reference on the GPU);
#  2. each problem tuned `--time 10` with this build (default space: the dw and GEMM
#     candidates compete; the shipped entry, where there is one, is measured first), and the
#     four without an entry with the session's starting build (GEMM paths only);
#  3. cuDNN on the same problems in the same call (scripts/compare-cudnn.py, graph replays).
#   Usage (repo root, on the device): bash scripts/session26/call4.sh
set -uo pipefail
. scripts/session11/lib.sh
L=scripts/session26/dw-wgrad.txt
sed 's/^mma = \[[^]]*\]/mma = ["dw"]/' search-spaces/nvidia.toml > /tmp/dw-space.toml
grep -q '^mma = \["dw"\]' /tmp/dw-space.toml || say "dw-only space not made"
say "== 1 selfcheck, mma=dw only $(el)"
selfcheck_step dw 200 --problems "$L" --space /tmp/dw-space.toml --configs 6
say "== 2 tune, --time 10 each $(el)"
mkdir -p "$OUT/new" "$OUT/old"
grep -v '^#' "$L" > "$OUT/new/problems.txt"
grep -v '^#' "$L" | tail -4 > "$OUT/old/problems.txt"
for b in new old; do
  bin=$B; [ $b = old ] && bin=$PWD/target/base/convtune
  timeout 170 "$bin" --problems "$OUT/$b/problems.txt" --arch sm_90 --time 10 --db "$OUT/$b/db.toml" \
    --journal "$OUT/$b/j.jsonl" --report "$OUT/$b/report.json" > "$OUT/$b/tune.log" 2>&1
  say "$b rc=$? $(el)"
  grep "^summary" "$OUT/$b/tune.log" | sed 's/ -u 1 -v 1 -l 1 -j 1//; s/(\([0-9]* screened\).*//' | cut -c1-260 | tee -a "$S"
done
say "== 3 cuDNN $(el)"
for b in new old; do
  timeout 120 python3 scripts/compare-cudnn.py "$OUT/$b/problems.txt" --convtune "$OUT/$b/report.json" \
    --json "$OUT/$b/cudnn.json" > "$OUT/$b/cudnn.log" 2>&1
  say "$b rc=$? $(el)"; grep -v Warning "$OUT/$b/cudnn.log" | tail -16 | cut -c1-220 | tee -a "$S"
done
tar czf "$OUT/runs.tgz" -C "$OUT" new old && rm -rf "$OUT/new" "$OUT/old"
say "== done $(el)"
