#!/usr/bin/env bash
# Installs the system packages the build needs (Debian 12): LLVM 19 for codegen (linked
# statically, which also needs Polly and zstd), lld to link AMDGPU code objects, and the HIP
# headers (src/runtime/hip/ffi.rs was written from them; the build does not link the HIP
# runtime, which is opened at run time). Then a Python virtual environment (target/venv, or
# $CONVTUNE_VENV) with maturin and pytest, which scripts/test.sh uses to build and test the wheel,
# and the CUDA 13.0 toolkit's ptxas (the pip wheel nvidia-cuda-nvcc, no GPU needed), which the
# tests use to assemble generated kernels (src/runtime/ptxas.rs), and nvdisasm (tests/ptxas.rs
# reads one SASS pattern); without them those tests skip.
set -euo pipefail
pkgs=(llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev libxml2-dev lld-19 libamdhip64-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends python3 python3-venv python3-pip
fi
venv=${CONVTUNE_VENV:-"$(dirname "$0")/../target/venv"}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" pytest
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "nvidia-cuda-nvcc==13.0.*" \
  || echo "NOTE: the ptxas wheel (nvidia-cuda-nvcc) did not install: the ptxas tests will skip"
# nvdisasm beside it (the SASS check of the kernels ptxas 13.0 once miscompiled).
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "nvidia-cuda-nvdisasm>=13,<14" \
  || echo "NOTE: the nvdisasm wheel did not install: the SASS check will skip"
