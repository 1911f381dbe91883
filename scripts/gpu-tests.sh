#!/usr/bin/env bash
# GPU tests: builds convtune when cargo is here (the H200 machine has no Rust: there, carry a
# binary built elsewhere as target/release/convtune), then runs `convtune selfcheck` — every
# generated kernel of a sweep (all directions, f32/f16/bf16, NCHW/NHWC, seed shapes, odd sizes,
# padding, stride > filter, dilation, groups) against the reference kernel with poisoned outputs,
# the reference kernel against the CPU f64 convolution, and fault isolation — and prints a summary.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/convtune}
if command -v cargo >/dev/null 2>&1; then
  cargo build --release || exit 1
fi
# A binary built on Debian links libffi.so.8; carry it beside the binary when the host lacks it.
[ -f "$(dirname "$BIN")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$BIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The library's GPU tests (the measurer's outcomes through the GPU output check, timing, worker
# fault recovery, ptxas for the device): with cargo, built and run here; without it, a test
# binary carried from a build machine (`cargo test --release --lib --no-run` names it) as
# LIBTESTS=path.
libtests_rc=0
rm -f /tmp/convtune-libtests.log
if command -v cargo >/dev/null 2>&1; then
  cargo test --release --lib runtime:: -- --test-threads=1 2>&1 | tee /tmp/convtune-libtests.log
  libtests_rc=${PIPESTATUS[0]}
elif [ -n "${LIBTESTS:-}" ]; then
  "$LIBTESTS" runtime:: --test-threads=1 2>&1 | tee /tmp/convtune-libtests.log
  libtests_rc=${PIPESTATUS[0]}
fi
configs=${CONFIGS:-4}
log=${LOG:-/tmp/convtune-selfcheck.log}
"$BIN" selfcheck --configs "$configs" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "---- summary ----"
grep -hE "^test result|panicked" /tmp/convtune-libtests.log 2>/dev/null
grep -E "^(selfcheck:|FAIL)" "$log" | tail -20
[ "$libtests_rc" -ne 0 ] && exit "$libtests_rc"
exit "$rc"
