#!/usr/bin/env bash
# Session 38, device call 4 (carry .carry, and .whlx with the wheel of 11a4323). On an H200
# (issue 16's GPU): the leave-one-out of the lists of sixteen and their twins
# (scripts/session37/twins.py's groups) for as long as LIMIT allows (default 370 s); journals in
# $OUT/j.tgz. On an H100: call 3's first-use pass with the second round again, with the time
# to finish all of scripts/session23/setD.txt (330 s).
#   Usage (repo root, on the device): bash scripts/session38/call4.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" > "$OUT/gpu.txt"
case "$gpu" in
  *H200*) LOO_DIR=scripts/session37 LIMIT=${LIMIT:-370} bash scripts/session25/groups.sh twins ;;
  *)
    . scripts/session11/lib.sh
    site=$WHEEL_SITE
    mkdir -p "$site" && cp -r .whlx/. "$site/" && xz -df "$site"/convtune/*.so.xz
    grep -v '^#' scripts/session23/setD.txt > "$OUT/setD.txt"
    CUDA_CACHE_DISABLE=1 PYTHONPATH=$site timeout 330 python3 scripts/first-use.py "$OUT/setD.txt" \
      --second 8 --pick-only --json "$OUT/first-use-s8.json" > "$OUT/first-use-s8.log" 2>&1
    say "rc=$? $(el)"
    grep -v Warning "$OUT/first-use-s8.log" | grep -E "geomean|first use over|first call|timed" \
      | cut -c1-260 | tee -a "$S" ;;
esac
