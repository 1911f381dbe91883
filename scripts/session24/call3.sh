#!/usr/bin/env bash
# Session 24 device call 3 (H200), the fixed build's wheel (.whl/):
# 1. scripts/python-gpu-check.sh: every suite problem through convtune.torch against PyTorch's
#    float64 result, tensor-map kernels, ResNet-50 blocks, and the first-result check
#    (convtune.torch.verify, fault injection);
# 2. scripts/same-harness.py on the whole shipped database (214 entries; the 175 random ones
#    had not run with the fixed bounds checks): each output against PyTorch's float64 result,
#    then ours and cuDNN in both protocols.
#   Usage (repo root, on the device): bash scripts/session24/call3.sh SAME_SECONDS
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
S=$OUT/summary.txt; : > "$S"; say() { echo "$*" | tee -a "$S"; }
W=$(ls .whl/convtune-*.whl)
say "== python-gpu-check $(el)"
timeout 240 bash scripts/python-gpu-check.sh "$W" > "$OUT/pycheck.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/pycheck.log" | grep -E "FAIL|ERROR|first-result|suite problems|^block|^\(" | cut -c1-300 | tee -a "$S"
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" "$W" > "$OUT/pip.log" 2>&1
say "== same harness, whole shipped database $(el)"
PYTHONPATH=$site timeout "$1" python3 scripts/same-harness.py tuned-db/sm_90.toml --json "$OUT/same.json" \
  > "$OUT/same.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/same.log" | grep -iE "geomean|fail|error|wrong|checked" | tail -12 | cut -c1-220 | tee -a "$S"
say "== done $(el)"
