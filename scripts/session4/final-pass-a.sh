#!/usr/bin/env bash
# Session 4 final GPU pass, call A (H200, through the device tool; .carry/ holds the
# xz-compressed release binary of main and libffi): self-check of the merged build (84 sweep
# problems), the TMA A/B, the HIP backend's behaviour on an NVIDIA host, and split-K / stream-K
# against cuDNN. Results under $OUT/{selfcheck.log,tma*,hip,splitk}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session4/unpack.sh
B=target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "== selfcheck $(el)"
BIN=$B CONFIGS=1 LOG=$OUT/selfcheck.log timeout 230 scripts/gpu-tests.sh 2>&1 | tail -6
echo "== hip-check $(el)"
OUT=$OUT/hip timeout 40 scripts/session4/hip-check.sh $B 2>&1 | tail -5
echo "== tma-check $(el)"
REPO=$PWD BIN=$B OUT=$OUT timeout 120 scripts/session4/tma-check.sh > "$OUT/tma-log.txt" 2>&1; echo "rc=$?"; tail -30 "$OUT/tma-summary.txt"
echo "== splitk-check $(el)"
OUT=$OUT timeout 200 scripts/session4/splitk-check.sh $B 2>&1 | tail -12
cat "$OUT/splitk/summary.txt" 2>/dev/null | head -60
rm -f "$OUT"/splitk/*.lock
echo "== done $(el)"; tar czf "$OUT/all.tgz" -C "$OUT" --exclude=all.tgz . 2>/dev/null
