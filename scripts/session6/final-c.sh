#!/usr/bin/env bash
# Session 6 final pass, call C (H200): the re-tune of final-a.sh again with the fixed build
# (no loader threads by default, the measure limit counting every announced module's JIT),
# merged into the shipped database, and that database timed against cuDNN in the same run.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
R=$OUT/retune; mkdir -p "$R"
cat scripts/suites/all.txt scripts/suites/families.txt | grep -v '^#' | grep -E '^conv(bfp16|fp16) ' \
  | grep NHWC | grep -v -E -- '-g (32|64|256) |-c 3 ' | sort -u > "$R/problems.txt"
echo "== retune $(wc -l < "$R/problems.txt") problems, --time ${TUNE_TIME:-8} $(el)"
timeout 300 "$B" --problems "$R/problems.txt" --arch sm_90 --space search-spaces/nvidia-hopper.toml \
  --time "${TUNE_TIME:-8}" --db "$R/db.toml" --journal "$R/j.jsonl" --report "$R/report.json" \
  > "$R/tune.log" 2>&1; echo "tune rc=$?"
grep "^summary" "$R/tune.log" | cut -c1-230 | tail -25
rm -f "$R"/*.lock
"$B" db merge tuned-db/sm_90.toml "$R/db.toml" -o "$OUT/merged.toml" 2>&1 | tail -1
echo "== db-vs-cudnn $(el)"
OUT=$OUT timeout 200 scripts/db-vs-cudnn.sh "$OUT/merged.toml" "$B" 2>&1 | tail -45
rm -f "$OUT"/dbrun/*.lock "$OUT"/*.lock
echo "== done $(el)"
tar czf "$OUT/final-c.tgz" -C "$OUT" retune dbrun merged.toml 2>/dev/null
