#!/usr/bin/env bash
# Session 39, device call 4 (carry .carry with convtune.xz and libtests.xz built at 551ba5c): on
# an H200, issue 16's first round on its GPU (the held-out lists of sixteen beside each tuned
# winner, scripts/session37/l16; journals in $OUT/j.tgz); on an H100, the GPU tests instead
# (the library's runtime tests from the carried test binary, then `convtune selfcheck
# --configs 2`), a health check of the build that lands.
#   Usage (repo root, on the device): bash scripts/session39/call4.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu"
case $gpu in
  *H200*) LOO_DIR=scripts/session37 LIMIT=${LIMIT:-400} bash scripts/session25/groups.sh l16 ;;
  *)
    . scripts/session5/unpack.sh
    xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
    CONFIGS=2 LIBTESTS=/tmp/libtests LOG=$OUT/selfcheck.log timeout 400 bash scripts/gpu-tests.sh \
      > "$OUT/gpu-tests.log" 2>&1
    echo "gpu-tests rc=$?"; sed -n '/---- summary/,$p' "$OUT/gpu-tests.log"
    ;;
esac
