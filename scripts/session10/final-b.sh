#!/usr/bin/env bash
# Session 10 final pass, call B (H200): the database call A merged (DB, default
# .carry/merged.toml) timed entry by entry against cuDNN in the same run
# (scripts/db-vs-cudnn.sh, each config verified first), the untuned fallback on it
# (scripts/fallback-holdout.sh 8), then both sides through one harness and two timing protocols
# (scripts/same-harness.py, through the wheel carried in .whl/), then the Python package's GPU
# check (scripts/python-gpu-check.sh: every suite problem through convtune.torch against
# PyTorch's f64 result). Results in $OUT/dbrun/, $OUT/holdout/, $OUT/same.json and
# $OUT/python-gpu-check.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
DB=${DB:-.carry/merged.toml}
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
if [ -n "${PINS:-}" ]; then
  # Pinned configs (problem|config lines), each verified then timed, merged where faster.
  echo "== pinned configs $PINS $(el)"
  P=$OUT/pin; mkdir -p "$P"; i=0
  grep -v '^#' "$PINS" | while IFS='|' read -r p c; do
    [ -z "$p" ] && continue; i=$((i + 1)); echo "$p" > "$P/p$i.txt"
    "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$P/s$i.toml" && \
      timeout 60 "$B" --problems "$P/p$i.txt" --space "$P/s$i.toml" --strategy exhaustive \
        --db "$P/db.toml" --journal "$P/j.jsonl" --quiet 2>&1 | grep "^summary" | cut -c1-200
  done
  rm -f "$P"/*.lock
  "$B" db merge "$DB" "$P/db.toml" -o "$OUT/merged-b.toml" 2>&1 | tail -4
  [ -f "$OUT/merged-b.toml" ] && DB=$OUT/merged-b.toml
fi
echo "== db-vs-cudnn $DB $(el)"
OUT=$OUT timeout "${DB_LIMIT:-300}" scripts/db-vs-cudnn.sh "$DB" "$B" 2>&1 | tail -48
rm -f "$OUT"/dbrun/*.lock "$OUT"/*.lock
echo "== holdout $(el)"
OUT=$OUT timeout "${HOLD_LIMIT:-120}" scripts/fallback-holdout.sh 8 "$DB" "$B" 2>&1 | tail -12
echo "== same harness $(el)"
site=$(mktemp -d)
if python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl; then
  PYTHONPATH="$site" timeout "${SAME_LIMIT:-200}" python3 scripts/same-harness.py "$DB" \
    --json "$OUT/same.json" 2>&1 | grep -v Warning | tail -48
else
  echo "no wheel in .whl/"
fi
if [ -n "${PYCHECK:-}" ]; then
  echo "== python-gpu-check $(el)"
  OUT=$OUT timeout "${PY_LIMIT:-150}" scripts/python-gpu-check.sh .whl/convtune-*.whl 2>&1 \
    | grep -v Warning | tail -16
fi
echo "== done $(el)"
tar czf "$OUT/final-b.tgz" -C "$OUT" dbrun holdout same.json pin 2>/dev/null
