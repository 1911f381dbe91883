#!/usr/bin/env bash
# Session 6 mid pass (H200): the merged ws + im2col build. Self-check of the Hopper space's
# kernels (every load path, sampled on the sweep's 16-bit problems), then ws-check.sh (ld = cp
# vs tma vs ws, ptxas warnings, cuDNN) and im2col-check.sh (ld = cp vs tma with im2col maps).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "== selfcheck --space nvidia-hopper $(el)"
timeout 150 "$B" selfcheck --configs 2 --space search-spaces/nvidia-hopper.toml > "$OUT/selfcheck-hopper.log" 2>&1; echo "rc=$?"
grep -E "^selfcheck|FAIL|ws|deadlock|timeout" "$OUT/selfcheck-hopper.log" | tail -12
echo "== ws-check $(el)"
BIN=$B OUT=$OUT timeout 230 scripts/session6/ws-check.sh > "$OUT/ws-log.txt" 2>&1; echo "rc=$?"
tail -45 "$OUT/ws-summary.txt"
echo "== im2col-check $(el)"
BIN=$B OUT=$OUT timeout 170 scripts/session6/im2col-check.sh > "$OUT/im2col-log.txt" 2>&1; echo "rc=$?"
tail -40 "$OUT/im2col-summary.txt"
echo "== done $(el)"
tar czf "$OUT/mid.tgz" -C "$OUT" --exclude=mid.tgz --exclude='*.tgz' . 2>/dev/null
