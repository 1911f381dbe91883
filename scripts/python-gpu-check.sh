#!/usr/bin/env bash
# The Python package on an NVIDIA GPU (needs python3 with torch; no Rust, no network): installs
# the wheel built by scripts/test.sh (target/wheels/convtune-*.whl, or the one given) into a
# temporary folder, then runs scripts/python-gpu-check.py: every suite problem through
# convtune.torch against PyTorch's float64 result, one ld=tma and one ld=ws config (tiled and
# im2col tensor maps encoded by the launcher; "fallback: 0" expected), and ResNet-50 bottleneck
# blocks forward and backward with convtune's ops against cuDNN. Writes
# $OUT/python-gpu-check.json when $OUT is set.
#   scripts/python-gpu-check.sh [WHEEL] [SUITE.txt ...]   (default: every scripts/suites/*.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=${1:-}
[ $# -gt 0 ] && shift
if [ -z "$wheel" ]; then
  wheel=$(ls -t target/wheels/convtune-*.whl 2>/dev/null | head -1 || true)
fi
[ -f "$wheel" ] || { echo "no wheel: build one with scripts/test.sh or pass its path" >&2; exit 2; }
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(scripts/suites/*.txt)
py=${PYTHON:-python3}
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
"$py" -m pip install --quiet --no-deps --no-index --target "$site" "$wheel"
# A library built on Debian links libffi.so.8; carry it beside the wheel (or in target/release,
# as scripts/gpu-tests.sh takes it) when the host lacks it.
for d in "$(dirname "$wheel")" target/release; do
  if [ -f "$d/libffi.so.8" ]; then
    export LD_LIBRARY_PATH="$(cd "$d" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    break
  fi
done
json=()
[ -n "${OUT:-}" ] && json=(--json "$OUT/python-gpu-check.json")
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$py" scripts/python-gpu-check.py "${suites[@]}" "${json[@]}"
