#!/usr/bin/env bash
# Session 24 device call 8 (H200): the cost of convtune.torch.verify on a first training step
# (scripts/session24/verify-cost.py, the fixed build's wheel).
#   Usage (repo root, on the device): bash scripts/session24/call8.sh
set -uo pipefail
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
PYTHONPATH=$site timeout 150 python3 scripts/session24/verify-cost.py 2>&1 | grep -v Warning | tee "$OUT/summary.txt"
