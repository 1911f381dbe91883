#!/usr/bin/env bash
# Session 7, issue 16 on the H200: does `--time T` hold (every problem within T + 1 s, every
# stage included) and `--time-total` for a list, with the deadline capping compile waits, the
# reference, each measurement and worker restarts? Per problem: wall time from outside
# (/usr/bin/time), the summary line (cut-off count), OutOfTime / Timeout / Fault counts in the
# journal. The Hopper space (ld=ws split-K) is where a hung candidate overran `--time 8` by
# 70 s in session 6. Then the dry run cold and warm (codegen cache). About 2.5 min, at most 4.
# Run from the repo root; results in $OUT/time-summary.txt.
set -uo pipefail
BIN=${BIN:-target/release/convtune}
OUT=${OUT:-/tmp/time-check}
T=${T:-10}
mkdir -p "$OUT"
export CONVTUNE_PROGRESS_SECS=5
export CONVTUNE_CODEGEN_CACHE="$OUT/codegen-cache"   # empty: the first compile of each candidate is cold
SUMMARY="$OUT/time-summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
PROBLEMS=(
  "convbfp16 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC"
)
NAMES=(fwd-1x1 bwd-weight-3x3 bwd-data-strided)
counts() { # journal
  for k in OutOfTime Timeout Fault; do printf '%s %s  ' "$k" "$(grep -c "\"$k" "$1" 2>/dev/null || echo 0)"; done
}
one() { # tag index [extra flags...]
  local tag=$1 i=$2; shift 2
  local f="$OUT/${NAMES[$i]}-$tag"
  /usr/bin/time -f "%e" -o "$f.wall" timeout 120 "$BIN" --problem "${PROBLEMS[$i]}" --time "$T" "$@" \
    --db "$f.toml" --journal "$f.jsonl" > "$f.out" 2> "$f.err"
  local rc=$?
  say "  ${NAMES[$i]} $tag (rc $rc): wall $(cat "$f.wall") s (target <= $((T + 1))); $(counts "$f.jsonl")"
  grep -h '^summary:' "$f.out" "$f.err" | sed 's/;.*(time limit/ ... (time limit/' | cut -c1-220 | sed 's/^/    /' | tee -a "$SUMMARY"
}
say "== time-check: --time $T, BIN=$BIN, $(date -u +%FT%TZ)"
say "-- built-in space, one problem a command"
for i in "${!PROBLEMS[@]}"; do one builtin "$i"; done
say "-- Hopper space (ld=ws split-K: the session-6 hang), bwd-weight 3x3, twice"
one hopper-a 1 --space search-spaces/nvidia-hopper.toml
one hopper-b 1 --space search-spaces/nvidia-hopper.toml
say "-- the three in one list, --time $T (target <= $((3 * (T + 1))) s)"
printf '%s\n' "${PROBLEMS[@]}" > "$OUT/three.txt"
/usr/bin/time -f "%e" -o "$OUT/list.wall" timeout 200 "$BIN" --problems "$OUT/three.txt" --time "$T" \
  --db "$OUT/list.toml" --journal "$OUT/list.jsonl" > "$OUT/list.out" 2> "$OUT/list.err"
say "  rc $?: wall $(cat "$OUT/list.wall") s; $(counts "$OUT/list.jsonl")"
say "-- the three in one list, --time-total 15 (target <= 16 s)"
/usr/bin/time -f "%e" -o "$OUT/total.wall" timeout 100 "$BIN" --problems "$OUT/three.txt" --time-total 15 \
  --db "$OUT/total.toml" --journal "$OUT/total.jsonl" > "$OUT/total.out" 2> "$OUT/total.err"
say "  rc $?: wall $(cat "$OUT/total.wall") s; $(counts "$OUT/total.jsonl")"
grep -h '^summary:' "$OUT/total.out" "$OUT/total.err" | cut -c1-160 | sed 's/^/    /' | tee -a "$SUMMARY"
say "-- plain progress lines (stderr not a terminal, every 5 s) in the first run's log:"
say "   $(grep -c '^convtune: problem' "$OUT/${NAMES[0]}-builtin.err") lines, e.g.: $(grep -m1 '^convtune: problem' "$OUT/${NAMES[0]}-builtin.err" | cut -c1-200)"
