#!/usr/bin/env bash
# Session 7 final pass, call B (H200): re-tune the suite's and the families' 16-bit NHWC
# problems over search-spaces/nvidia-hopper.toml (every load path, pk) with `--time 8` each
# (scripts/session6/retune.sh), and the NCHW problems (16-bit 3x3, f32 strided bwd-data) over
# the built-in space with `--time 10`; merge the winners into the shipped database and time
# that database against cuDNN in the same run (scripts/db-vs-cudnn.sh). Results in
# $OUT/final-b-summary.txt, $OUT/merged.toml and $OUT/final-b.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
. scripts/session6/retune.sh
retune "${TUNE_TIME:-8}"
R=$OUT/retune-nchw; mkdir -p "$R"
cat scripts/suites/all.txt scripts/suites/families.txt | grep -v '^#' | grep -v NHWC \
  | grep -E -- '-F [124]' | grep -E '^conv(bfp16|fp16) |-u [23] ' | sort -u > "$R/problems.txt"
echo "== retune NCHW: $(wc -l < "$R/problems.txt") problems, --time 10 $(el)"
timeout 100 "$B" --problems "$R/problems.txt" --arch sm_90 --time 10 --db "$R/db.toml" \
  --journal "$R/j.jsonl" --report "$R/report.json" > "$R/tune.log" 2>&1; echo "tune rc=$?"
grep "^summary" "$R/tune.log" | cut -c1-260
rm -f "$R"/*.lock "$OUT"/*.lock
"$B" db merge "$OUT/merged.toml" "$R/db.toml" -o "$OUT/merged2.toml" 2>&1 | tail -2 \
  && mv "$OUT/merged2.toml" "$OUT/merged.toml"
echo "== db-vs-cudnn $(el)"
OUT=$OUT timeout 230 scripts/db-vs-cudnn.sh "$OUT/merged.toml" "$B" 2>&1 | tail -50
rm -f "$OUT"/dbrun/*.lock "$OUT"/*.lock
echo "== done $(el)"
tar czf "$OUT/final-b.tgz" -C "$OUT" retune retune-nchw dbrun merged.toml 2>/dev/null
