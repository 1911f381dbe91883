#!/usr/bin/env bash
# Session 38, device call 2 (carry .carry with HEAD's convtune.xz). On an H100: the library's
# second round (scripts/session38/second.py's groups: `convtune lookup --measured` from the
# sixteen's times in the H100 twins run, session 38's first call), ~170 s. On an H200 (issue 16's GPU): the
# leave-one-out of the lists of sixteen and their twins (scripts/session37/twins.py), ~370 s.
# Journals in $OUT/j.tgz.   Usage (repo root, on the device): bash scripts/session38/call2.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" > "$OUT/gpu.txt"
case "$gpu" in
  *H200*) LOO_DIR=scripts/session37 LIMIT=545 bash scripts/session25/groups.sh twins ;;
  *) LOO_DIR=scripts/session38 LIMIT=300 bash scripts/session25/groups.sh second ;;
esac
