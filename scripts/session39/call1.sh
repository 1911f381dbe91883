#!/usr/bin/env bash
# Session 39, device call 1 (carry .carry and .whlx, both built at 8723ecf): on an H200, issue
# 16's first round on its own GPU, the held-out lists of sixteen with each tuned winner timed
# first (scripts/session37/l16, journals in $OUT/j.tgz); on an H100 (the H200 did not come),
# session 38's call 3 instead: the torch path's first use with the shipped second round
# (off-grid step included) against cuDNN.
#   Usage (repo root, on the device): bash scripts/session39/call1.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu"
case $gpu in
  *H200*) LOO_DIR=scripts/session37 LIMIT=520 bash scripts/session25/groups.sh l16 ;;
  *) bash scripts/session38/call3.sh ;;
esac
