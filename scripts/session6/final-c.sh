#!/usr/bin/env bash
# Session 6 final pass, call C (H200): the re-tune of final-a.sh again with the fixed build
# (no loader threads by default, the measure limit counting every announced module's JIT),
# merged into the shipped database, and that database timed against cuDNN in the same run.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
. scripts/session6/retune.sh
retune "${TUNE_TIME:-8}"
echo "== db-vs-cudnn $(el)"
OUT=$OUT timeout 200 scripts/db-vs-cudnn.sh "$OUT/merged.toml" "$B" 2>&1 | tail -45
rm -f "$OUT"/dbrun/*.lock "$OUT"/*.lock
echo "== done $(el)"
tar czf "$OUT/final-c.tgz" -C "$OUT" retune dbrun merged.toml 2>/dev/null
