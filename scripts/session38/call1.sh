#!/usr/bin/env bash
# Session 38, device call 1 (carry .carry with HEAD's convtune.xz). On an H200 (issue 16's
# GPU): the leave-one-out of the lists of sixteen and their twins
# (scripts/session37/twins.py's groups), about 370 s. On an H100 (whose l16 + twins run is
# session 38's first call): the second round (scripts/session38/refine.py's groups), ~150 s.
# Journals in $OUT/j.tgz.   Usage (repo root, on the device): bash scripts/session38/call1.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" > "$OUT/gpu.txt"
case "$gpu" in
  *H200*) LOO_DIR=scripts/session37 LIMIT=545 bash scripts/session25/groups.sh twins ;;
  *) LOO_DIR=scripts/session38 LIMIT=300 bash scripts/session25/groups.sh refine ;;
esac
