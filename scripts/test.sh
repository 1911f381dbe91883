#!/usr/bin/env bash
# The test suite. GPU-only tests skip themselves where no CUDA driver is found (and say so
# below); run them on a GPU machine with scripts/gpu-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# The toolkit's ptxas that setup.sh put into the virtual environment, for the assembler tests.
venv=${CONVTUNE_VENV:-target/venv}
if [ -z "${CONVTUNE_PTXAS:-}" ]; then
  for p in "$venv"/lib/python3*/site-packages/nvidia/cu13/bin/ptxas; do
    case $p in /*) ;; *) p=$PWD/$p ;; esac
    [ -x "$p" ] && export CONVTUNE_PTXAS="$p"
  done
fi
cargo test --all-features --release "$@"
# The C API: the lookup-only library, its unit tests, and the C test compiled with cc.
cargo test --release -p convtune_c
capi/tests/run-c-test.sh
# The Python package: build the wheel (target/wheels/, what scripts/python-gpu-check.sh
# installs on a GPU machine), install it into the virtual environment and run its CPU tests.
venv=${CONVTUNE_VENV:-target/venv}
[ -x "$venv/bin/maturin" ] || ./scripts/setup.sh
rm -f target/wheels/convtune-*.whl
"$venv/bin/maturin" build --release -m python/Cargo.toml -i "$venv/bin/python" \
  --out target/wheels --compatibility linux
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps target/wheels/convtune-*.whl
"$venv/bin/python" -m pytest -rs -q python/tests
if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1"; then
  echo "NOTE: no CUDA driver on this machine: the GPU tests (tests/gpu.rs, runtime::gpu_tests)"
  echo "      were skipped. Run scripts/gpu-tests.sh on a machine with an NVIDIA GPU."
fi
