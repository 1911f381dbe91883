#!/usr/bin/env bash
# Session 32, device call 6 (the last ~110 s of the session's device time; carry .whl):
# scripts/first-use.py over session 23's 30 unseen problems (scripts/session23/setD.txt) with
# HEAD's wheel: the first-call benchmark times eight candidates (was four), from the lookup that
# fills short lists. Every timed config checked against PyTorch's float64 result; cuDNN in the
# same process; each row's first-call wall time. Rows print as they finish.
#   Usage (repo root, on the device): bash scripts/session32/call6.sh [SECONDS]
#   Results: $OUT/first.{log,json}
set -uo pipefail
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$site timeout "${1:-100}" python3 -u scripts/first-use.py scripts/session23/setD.txt \
  --json "$OUT/first.json" > "$OUT/first.log" 2>&1
echo "rc=$?"; grep -v Warning "$OUT/first.log" | tail -40 | cut -c1-230
