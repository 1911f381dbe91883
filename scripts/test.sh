#!/usr/bin/env bash
# The test suite. GPU-only tests skip themselves where no CUDA driver is found (and say so
# below); run them on a GPU machine with scripts/gpu-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --all-features --release "$@"
if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1"; then
  echo "NOTE: no CUDA driver on this machine: the GPU tests (tests/gpu.rs, runtime::gpu_tests)"
  echo "      were skipped. Run scripts/gpu-tests.sh on a machine with an NVIDIA GPU."
fi
