#!/usr/bin/env bash
# Session 17, device call 3 (H200, < 520 s): the final build (session base + the tensor-map
# prefetch; the stmatrix epilogue reverted) checked and measured.
#  1. the library's GPU tests (carried test binary .carry/libtests.xz);
#  2. `convtune selfcheck --configs 2` (every direction, type and layout of the sweep against the
#     reference, fault isolation);
#  3. scripts/same-harness.py with the final wheel: the shipped database against cuDNN, cold and
#     graph, every output checked against PyTorch's float64 result first;
#  4. the 11 problems outside the suite (scripts/session12/unseen-all.txt), each tuned alone as a
#     new user would (`--time 10`, default strategy and space), cuDNN in the same call.
#   Usage (repo root, on the device): [LIMIT=520] bash scripts/session17/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-520} - $(date +%s) + t0 )); }
say "== 1 gpu lib tests $(el)"
xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
timeout 120 /tmp/libtests runtime::gpu_tests runtime::ptxas --test-threads=1 > "$OUT/libtests.log" 2>&1
say "rc=$? $(el)"; grep -E "test result|panicked|FAILED" "$OUT/libtests.log" | tee -a "$S"
say "== 2 selfcheck --configs 2 $(el)"
timeout 110 "$B" selfcheck --configs 2 > "$OUT/selfcheck.log" 2>&1
say "rc=$? $(el)"; grep -E "^(selfcheck:|FAIL)" "$OUT/selfcheck.log" | tail -8 | tee -a "$S"
say "== 3 same harness, final wheel $(el)"
same_harness 120 4
if [ "$(left)" -gt 190 ]; then
  say "== 4 unseen problems, --time 10 each $(el)"
  # In a folder of its own: call4.sh starts its own summary.txt there.
  mkdir -p "$OUT/u"
  OUT=$OUT/u SHORT_ONLY=1 LIST=scripts/session12/unseen-all.txt timeout $(( $(left) - 10 )) \
    bash scripts/session11/call4.sh > "$OUT/unseen.txt" 2>&1
  say "rc=$? $(el)"; sed -n '/problem  /,$p' "$OUT/unseen.txt" | cut -c1-200 | tee -a "$S"
else
  say "== 4 unseen problems skipped: $(left) s left"
fi
say "== done $(el)"
