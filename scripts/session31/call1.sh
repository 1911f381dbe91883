#!/usr/bin/env bash
# Session 31, device call 1 (< 590 s): session 30's call 1 with the steps ordered by what a call
# cut short should still have answered (carry .carry: convtune.xz is HEAD's build, convtune-base.xz
# fe08f57, the build before sessions 29-30's changes):
#  1. `convtune selfcheck` on the 8 shipped problems whose bwd-data slice session 30 shrank
#     (scripts/session30/slice-problems.txt), 3 configs each: their kernels on the GPU first.
#  2. cuDNN on those 8 problems (scripts/compare-cudnn.py), then the A/B of the 20 configs of
#     scripts/session30/ab.txt (12 shipped configs whose PTX session 29's loader reordered, the
#     8 shipped configs of the shrunken slices) and the four tune-cost problems with `--time 10`,
#     both builds alternating (scripts/session10/tune-cost-ab.sh): candidates a second.
#  3. `convtune selfcheck --configs 2`: the built-in sweep (session 29's loader, session 30's
#     lowering).
#   Usage (repo root, on the device): bash scripts/session31/call1.sh
#   Results: $OUT/summary.txt, $OUT/selfcheck-*.log, $OUT/cost.txt, $OUT/cudnn.{txt,json}
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck, slice-changed problems $(el)"
selfcheck_step slice 80 --problems scripts/session30/slice-problems.txt --configs 3
say "== 2a cuDNN $(el)"
timeout 60 python3 scripts/compare-cudnn.py scripts/session30/slice-problems.txt --json "$OUT/cudnn.json" \
  > "$OUT/cudnn.txt" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/cudnn.txt" | tail -12 | cut -c1-200 | tee -a "$S"
say "== 2b A/B and tune cost $(el)"
export AB=scripts/session30/ab.txt
tune_cost 250 target/base/convtune 'fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9'
sed -n '/== A\/B/,/== tune-cost/p' "$OUT/cost.txt" | cut -c1-200 | tee -a "$S"
say "== 3 selfcheck $(el)"
left=$(( 575 - $(date +%s) + t0 ))
selfcheck_step c2 $(( left < 180 ? left : 180 )) --configs 2
say "== done $(el)"
