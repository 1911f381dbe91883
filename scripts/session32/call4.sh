#!/usr/bin/env bash
# Session 32, device call 4 (H200, < 530 s; carry .carry with convtune.xz only, and .whl):
#  1. Re-tune (default strategy, `--time 10`) the 8 shipped problems whose bwd-data slice session 30
#     shrank (scripts/session30/slice-problems.txt): their kernels ran 1.04-1.53x faster in call 1
#     with the same configs, so their winners may have moved. Into $OUT/slice/{db.toml,j.jsonl}
#     (merged into tuned-db/ on the development machine: faster measurement wins).
#  2. scripts/same-harness.py on the whole shipped database (218 entries, the depthwise re-tune of
#     call 3 merged): each output against PyTorch's float64 result, then ours and cuDNN in both
#     protocols (issue 13's standing), with the time left.
#   Usage (repo root, on the device): bash scripts/session32/call4.sh [SECONDS]
#   (SECONDS, default 520: the call's whole time; step 1 runs only when it is over 480)
#   Results: $OUT/summary.txt, $OUT/slice.tgz, $OUT/same.{json,log}
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
left=$(( T - $(date +%s) + t0 ))
same_harness "$left" 14
say "== done $(el)"
