#!/usr/bin/env bash
# Session 39, device call 5 (carry .carry): one more ask for issue 16's GPU. On an H200, the
# held-out lists of sixteen beside each tuned winner (scripts/session37/l16, journals in
# $OUT/j.tgz: the first round that `scripts/session38/second.py` turns into the H200's second
# round); on anything else nothing (calls 1-4 measured what an H100 can).
#   Usage (repo root, on the device): bash scripts/session39/call5.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu"
case $gpu in
  *H200*) LOO_DIR=scripts/session37 LIMIT=${LIMIT:-380} bash scripts/session25/groups.sh l16 ;;
  *) echo "not an H200: nothing to run" ;;
esac
