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
R=$OUT/retune; mkdir -p "$R"
cat scripts/suites/all.txt scripts/suites/families.txt | grep -v '^#' | grep -E '^conv(bfp16|fp16) ' \
  | grep NHWC | grep -v -E -- '-g (32|64|256) |-c 3 ' | sort -u > "$R/problems.txt"
echo "== retune $(wc -l < "$R/problems.txt") problems, --time ${TUNE_TIME:-7} $(el)"
timeout 330 "$B" --problems "$R/problems.txt" --arch sm_90 --space search-spaces/nvidia-hopper.toml \
  --time "${TUNE_TIME:-7}" --db "$R/db.toml" --journal "$R/j.jsonl" --report "$R/report.json" \
  > "$R/tune.log" 2>&1; echo "tune rc=$?"
grep "^summary" "$R/tune.log" | cut -c1-300 | tail -30
rm -f "$R"/*.lock
"$B" db merge tuned-db/sm_90.toml "$R/db.toml" -o "$OUT/merged.toml" 2>&1 | tail -2
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
