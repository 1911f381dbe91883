#!/usr/bin/env bash
# Session 32, device call 4 (H200, < 560 s; carry .carry with convtune.xz only, and .whl):
#  1. Re-tune (default strategy, `--time 10`) the 8 shipped problems whose bwd-data slice session 30
#     shrank (scripts/session30/slice-problems.txt): their kernels ran 1.04-1.53x faster in call 1
#     with the same configs, so their winners may have moved. Into $OUT/slice/{db.toml,j.jsonl}
#     (merged into tuned-db/ on the development machine: faster measurement wins).
#  2. scripts/python-gpu-check.sh with HEAD's wheel: every suite problem through convtune.torch
#     against PyTorch's float64 result, tensor-map kernels, ResNet-50 blocks, the first-result check.
#  3. scripts/same-harness.py on the whole shipped database (218 entries, the depthwise re-tune of
#     call 3 merged): each output against PyTorch's float64 result, then ours and cuDNN in both
#     protocols (issue 13's standing), with the time left.
#   Usage (repo root, on the device): bash scripts/session32/call4.sh
#   Results: $OUT/summary.txt, $OUT/slice.tgz, $OUT/pycheck.log, $OUT/same.{json,log}
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 re-tune the slice problems $(el)"
mkdir -p "$OUT/slice" && grep -v '^#' scripts/session30/slice-problems.txt > "$OUT/slice/problems.txt"
tune_list "$OUT/slice" 100
(cd "$OUT" && tar czf slice.tgz slice && rm -rf slice)
W=$(ls .whl/convtune-*.whl)
say "== 2 python-gpu-check $(el)"
timeout 200 bash scripts/python-gpu-check.sh "$W" > "$OUT/pycheck.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/pycheck.log" | grep -E "FAIL|ERROR|first-result|suite problems|^block|^\(" | cut -c1-300 | tee -a "$S"
say "== 3 same harness, whole shipped database $(el)"
left=$(( 550 - $(date +%s) + t0 ))
same_harness "$left" 14
say "== done $(el)"
