#!/usr/bin/env bash
# Session 32, device call 4 (H200, < 530 s; carry .carry with convtune.xz only, and .whl):
#  1. Re-tune (default strategy, `--time 10`) the 8 shipped problems whose bwd-data slice session 30
#     shrank (scripts/session30/slice-problems.txt): their kernels ran 1.04-1.53x faster in call 1
#     with the same configs, so their winners may have moved. Into $OUT/slice/{db.toml,j.jsonl}
#     (merged into tuned-db/ on the development machine: faster measurement wins).
#  2. scripts/same-harness.py on the whole shipped database (218 entries, the depthwise re-tune of
#     call 3 merged): each output against PyTorch's float64 result, then ours and cuDNN in both
#     protocols (issue 13's standing), with the time left.
#  3. scripts/gemm-ceiling.py: cuBLAS (torch) on the GEMMs of seed 003 and the largest bf16 layers.
#   Usage (repo root, on the device): bash scripts/session32/call4.sh [SECONDS]
#   (SECONDS, default 520: the call's whole time; step 1 runs only when it is over 480)
#   Results: $OUT/summary.txt, $OUT/slice.tgz, $OUT/same.{json,log}, $OUT/gemm.log
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
T=${1:-520}
if [ "$T" -gt 480 ]; then
  say "== 1 re-tune the slice problems $(el)"
  mkdir -p "$OUT/slice" && grep -v '^#' scripts/session30/slice-problems.txt > "$OUT/slice/problems.txt"
  tune_list "$OUT/slice" 85
  (cd "$OUT" && tar czf slice.tgz slice && rm -rf slice)
fi
say "== 2 same harness, whole shipped database $(el)"
left=$(( T - 45 - $(date +%s) + t0 ))
same_harness "$left" 14
say "== 3 cuBLAS on the conv layers' own GEMMs $(el)"
PYTHONPATH=$WHEEL_SITE timeout 40 python3 scripts/gemm-ceiling.py 4096,4096,2048:seed-003 \
  50176,256,2304:fwd-3x3-c256-28-n64 256,2304,50176:bwdw-3x3-c256-28-n64 \
  12544,256,1024:fwd-1x1-c1024-256-14-n64 3136,2048,512:fwd-1x1-c512-2048-7-n64 \
  > "$OUT/gemm.log" 2>&1
say "rc=$? $(el)"; tail -7 "$OUT/gemm.log" | tee -a "$S"
say "== done $(el)"
