#!/usr/bin/env bash
# Session 9 final pass, call B (H200): the database call A merged (DB, default
# .carry/merged.toml) timed entry by entry against cuDNN in the same run
# (scripts/db-vs-cudnn.sh, each config verified first), then the untuned fallback on it
# (scripts/fallback-holdout.sh 8). Results in $OUT/dbrun/ and $OUT/holdout/.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
DB=${DB:-.carry/merged.toml}
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== db-vs-cudnn $DB $(el)"
OUT=$OUT timeout 330 scripts/db-vs-cudnn.sh "$DB" "$B" 2>&1 | tail -48
rm -f "$OUT"/dbrun/*.lock "$OUT"/*.lock
echo "== holdout $(el)"
OUT=$OUT timeout 150 scripts/fallback-holdout.sh 8 "$DB" "$B" 2>&1 | tail -12
echo "== done $(el)"
tar czf "$OUT/final-b.tgz" -C "$OUT" dbrun holdout 2>/dev/null
