#!/usr/bin/env bash
# Session 4, mid-session GPU pass on the H200: self-check of main after the split-K and HIP
# merges, then the split-K in-kernel reduction check (red=fixup vs red=atomic vs cuDNN).
# Run through the device tool with .carry/ holding the xz-compressed binary and libffi.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session4/unpack.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "== selfcheck"
BIN=target/release/convtune CONFIGS=1 LOG=$OUT/selfcheck.log timeout 200 scripts/gpu-tests.sh 2>&1 | tail -4
echo "== split-K check"
OUT=$OUT timeout 300 scripts/session4/splitk-check.sh target/release/convtune 2>&1 | tail -40
