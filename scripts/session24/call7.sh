#!/usr/bin/env bash
# Session 24 device call 7 (H200): the re-tuned 16-bit bwd-weight entries (calls 5-6, 21 new
# configs, 7 with a non-power-of-two split-K) through the Python package's launcher in the
# same harness as cuDNN: each output against PyTorch's float64 result, then both timed.
#   Usage (repo root, on the device): bash scripts/session24/call7.sh SECONDS
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
S=$OUT/summary.txt; : > "$S"; say() { echo "$*" | tee -a "$S"; }
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
PYTHONPATH=$site timeout "$1" python3 scripts/same-harness.py tuned-db/sm_90.toml --only '^conv(b?fp16) -F 4' \
  --json "$OUT/same.json" > "$OUT/same.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/same.log" | grep -E "geomean|timed|matmul|c 256 -H 28 -W 28 -k 256 -y 3" | cut -c1-220 | tee -a "$S"
