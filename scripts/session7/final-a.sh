#!/usr/bin/env bash
# Session 7 final pass, call A (H200), the merged build: (1) GPU self-check of the Hopper space
# (every load path, the persistent knob pk, sampled), (2) pk=0 vs pk=1 and the ld=ws split-K
# hang cases (scripts/session7/pk-ab.sh), (3) `--time` / `--time-total` holding
# (scripts/session7/time-check.sh). Results in $OUT/final-a-summary.txt and $OUT/final-a.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
S=$OUT/final-a-summary.txt; : > "$S"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
say() { echo "$*" | tee -a "$S"; }
say "== 1. selfcheck --space search-spaces/nvidia-hopper.toml $(el)"
timeout 130 "$B" selfcheck --space search-spaces/nvidia-hopper.toml > "$OUT/selfcheck.log" 2>&1
say "selfcheck rc=$?"; grep -v "^ok" "$OUT/selfcheck.log" | tail -12 | tee -a "$S"
say "== 2. pk-ab $(el)"
timeout 140 bash scripts/session7/pk-ab.sh "$B" "$OUT/pk" > "$OUT/pk.log" 2>&1
say "pk-ab rc=$?"; tail -8 "$OUT/pk.log" | cut -c1-250 | tee -a "$S"
say "== 3. time-check $(el)"
BIN=$B OUT=$OUT/time timeout 230 bash scripts/session7/time-check.sh > "$OUT/time.log" 2>&1
say "time-check rc=$?"; cut -c1-250 "$OUT/time/time-summary.txt" | tail -30 | tee -a "$S"
say "== done $(el)"
tar czf "$OUT/final-a.tgz" -C "$OUT" selfcheck.log pk pk.log time.log time 2>/dev/null
