#!/usr/bin/env bash
# Session 10 final pass, call A (H200), the merged build: (1) GPU self-check of the Hopper space
# (sampled: every load path and the knobs this session added);
# (2) re-tune the suite's and the families' 16-bit NHWC problems over
# search-spaces/nvidia-hopper.toml with `--time T` each (default 9), merged with the shipped
# database into $OUT/merged.toml (call B times it against cuDNN).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
S=$OUT/final-a-summary.txt; : > "$S"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
say() { echo "$*" | tee -a "$S"; }
say "== 1. selfcheck --space search-spaces/nvidia-hopper.toml $(el)"
timeout "${SELF_T:-60}" "$B" selfcheck --space search-spaces/nvidia-hopper.toml > "$OUT/selfcheck.log" 2>&1
say "selfcheck rc=$?"; grep -v "^ok" "$OUT/selfcheck.log" | tail -8 | tee -a "$S"
R=$OUT/retune; mkdir -p "$R"
cat scripts/suites/all.txt scripts/suites/families.txt | grep -v '^#' | grep -E '^conv(bfp16|fp16) ' \
  | grep NHWC | grep -v -E -- '-g (32|64) |-c 3 ' | sort -u > "$R/problems.txt"
say "== 2. retune $(wc -l < "$R/problems.txt") problems, --time ${T:-9} $(el)"
timeout "${TUNE_LIMIT:-360}" "$B" --problems "$R/problems.txt" --arch sm_90 --space search-spaces/nvidia-hopper.toml \
  --time "${T:-9}" --db "$R/db.toml" --journal "$R/j.jsonl" --report "$R/report.json" \
  > "$R/tune.log" 2>&1; say "tune rc=$?"
grep "^summary" "$R/tune.log" | cut -c1-220 | tee -a "$S"
rm -f "$R"/*.lock
"$B" db merge tuned-db/sm_90.toml "$R/db.toml" -o "$OUT/merged.toml" 2>&1 | tail -2 | tee -a "$S"
say "== done $(el)"
tar czf "$OUT/final-a.tgz" -C "$OUT" selfcheck.log retune 2>/dev/null
