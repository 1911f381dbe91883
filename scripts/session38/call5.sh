#!/usr/bin/env bash
# Session 38, device call 5 (any H100/H200, ~80 s; carry .carry): the second round with the
# measured off-grid configs (and their one-field variants) joining the search
# (scripts/session38/second.py --out scripts/session38/second2, the configs calls 1-2 did not
# time). Journals in $OUT/j.tgz.   Usage: bash scripts/session38/call5.sh
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 > "$OUT/gpu.txt"
LOO_DIR=scripts/session38 LIMIT=${LIMIT:-110} bash scripts/session25/groups.sh ${SET:-second2}
