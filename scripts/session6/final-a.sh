#!/usr/bin/env bash
# Session 6 final pass, call A (H200): re-tune the suite's and the families' 16-bit NHWC
# problems in search-spaces/nvidia-hopper.toml (every load path: cp, tma with tiled/im2col maps,
# ws), merge the winners into the shipped database (db merge keeps the faster entry per
# problem), then the built-in self-check and
# fast-check.sh (time to a good kernel, this build against the base).
# Results: $OUT/retune/ (db, journal, report, log), $OUT/merged.toml, $OUT/final-a.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
. scripts/session6/retune.sh
retune "${TUNE_TIME:-7}"
echo "== selfcheck (built-in space) $(el)"
timeout 150 "$B" selfcheck --configs 1 > "$OUT/selfcheck.log" 2>&1; echo "rc=$?"
grep -E "^selfcheck|FAIL" "$OUT/selfcheck.log" | tail -8
if [ -x scripts/session6/fast-check.sh ]; then
  echo "== fast-check $(el)"
  BIN=$B BASE=target/base/convtune OUT=$OUT timeout 200 scripts/session6/fast-check.sh > "$OUT/fast-log.txt" 2>&1; echo "rc=$?"
  tail -30 "$OUT/fast-summary.txt"
fi
echo "== done $(el)"
tar czf "$OUT/final-a.tgz" -C "$OUT" --exclude='*.tgz' . 2>/dev/null
