#!/usr/bin/env bash
# Session 30's build on the H200, one call (< 590 s; carry .carry: convtune.xz is this build,
# convtune-base.xz session 28's last, fe08f57, the build before sessions 29-30's changes):
#  1. `convtune selfcheck --configs 2`: the built-in sweep's kernels verified on the GPU
#     (session 29's loader: a TMA-loaded operand gets no per-thread copies; session 30's
#     bwd-data lowering: the hTilda slice ends at the last column that writes in the image).
#  2. `convtune selfcheck` on the 8 shipped problems the tighter slice made smaller
#     (scripts/session30/slice-problems.txt), 3 configs each.
#  3. scripts/session10/tune-cost-ab.sh, both builds alternating: the 20 configs of
#     scripts/session30/ab.txt timed in full (12 shipped configs whose PTX session 29's loader
#     reordered; the 8 shipped configs of the slice-changed problems, 0.64-0.996 of the GEMM
#     work); then the four tune-cost problems with `--time 10`, both builds: candidates a
#     second with the unread widths pruned (session 29) and dead-store elimination's scan off
#     (session 30: the same PTX, 11-31% less LLVM CPU on half-precision candidates).
#  4. cuDNN on the 8 slice-changed problems, same call (scripts/compare-cudnn.py).
#   Usage (repo root, on the device): bash scripts/session30/call1.sh
#   Results: $OUT/summary.txt, $OUT/selfcheck-*.log, $OUT/cost.txt, $OUT/cudnn.txt
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck $(el)"
selfcheck_step c2 180 --configs 2
say "== 2 selfcheck, slice-changed problems $(el)"
selfcheck_step slice 80 --problems scripts/session30/slice-problems.txt --configs 3
say "== 3 A/B and tune cost $(el)"
export AB=scripts/session30/ab.txt
tune_cost 250 target/base/convtune 'fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9'
sed -n '/== A\/B/,/== tune-cost/p' "$OUT/cost.txt" | cut -c1-200 | tee -a "$S"
say "== 4 cuDNN $(el)"
timeout 60 python3 scripts/compare-cudnn.py scripts/session30/slice-problems.txt --json "$OUT/cudnn.json" \
  > "$OUT/cudnn.txt" 2>&1
say "rc=$? $(el)"; tail -12 "$OUT/cudnn.txt" | tee -a "$S"
say "== done $(el)"
