#!/usr/bin/env bash
# Session 29's build on the H200, one call (< 590 s; carry .carry: convtune.xz is this build,
# convtune-base.xz session 28's last, fe08f57):
#  1. `convtune selfcheck --configs 2`: every suite problem's kernels verified on the GPU (the
#     loader now gives a TMA-loaded operand no per-thread copies; the CPU emulator tests pass).
#  2. scripts/session10/tune-cost-ab.sh, both builds alternating: first the 12 shipped configs
#     whose PTX the loader change altered (scripts/session29/ptx-changed.txt: 11 the same
#     instructions reordered, one address arithmetic folded differently), timed in full; then
#     the four tune-cost problems with `--time 10`, both builds: candidates a second and the
#     best after 10 s now that the enumeration lists each kernel once (bf16 bwd-weight 3x3
#     c256: 3.98 M -> 2.27 M legal configs).
#   Usage (repo root, on the device): bash scripts/session29/call1.sh
#   Results: $OUT/summary.txt, $OUT/selfcheck-c2.log, $OUT/cost.txt
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck $(el)"
selfcheck_step c2 200 --configs 2
say "== 2 tune-cost A/B $(el)"
export AB=scripts/session29/ptx-changed.txt
tune_cost 330 target/base/convtune 'fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9'
say "== done $(el)"
