#!/usr/bin/env bash
# Session 4, issue 16 (time to a good kernel) on the H200: does `--time 10` hold (a problem ends
# within T + 1 s, every stage included), where does a problem's time go (stage timings of the
# summary lines), does `--time-total` hold for a list, do the plain progress lines appear when
# stderr is not a terminal, and what adaptive timing saves (same budget with and without
# `--full-timing`: wall time and winner), and the untuned fallback on 4 held-out database
# entries (scripts/fallback-holdout.sh). About 2.5 minutes, at most 4; results under $OUT.
# Run from the repo root with the release binary at target/release/convtune.
set -uo pipefail
BIN=${BIN:-target/release/convtune}
OUT=${OUT:-/tmp/fasttune-check}
T=${T:-10}
mkdir -p "$OUT"
export CONVTUNE_PROGRESS_SECS=2
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
within() { awk -v w="$1" -v l="$2" 'BEGIN { exit !(w <= l) }'; }
# Three seed problems: a small fp32 NCHW bwd-data 1x1, a padded 3x3 one, and the big bf16 one.
mapfile -t PROBLEMS < <(grep -v '^#' scripts/suites/seeds.txt | grep -v '^\s*$' | sed -n '1p;2p;7p')
fails=0
echo "== --time $T per problem (limit: T + 1 s wall, process start included)" | tee "$OUT/summary.txt"
i=0
for p in "${PROBLEMS[@]}"; do
  i=$((i + 1))
  t0=$(now)
  timeout 25 "$BIN" --problem "$p" --time "$T" --db "$OUT/t$i.toml" --journal "$OUT/t$i.jsonl" \
    --report "$OUT/t$i.json" > "$OUT/t$i.out" 2> "$OUT/t$i.err"
  rc=$?
  wall=$(since "$t0")
  if within "$wall" $((T + 1)); then verdict=within; else verdict=OVER; fails=$((fails + 1)); fi
  [ "$rc" -eq 0 ] || { verdict="$verdict, FAILED"; fails=$((fails + 1)); }
  echo "problem $i: rc $rc, wall $wall s, $verdict T+1" | tee -a "$OUT/summary.txt"
  grep '^summary:' "$OUT/t$i.out" | tee -a "$OUT/summary.txt"
  echo "  progress lines on the non-tty stderr: $(grep -c '^convtune: problem' "$OUT/t$i.err")" | tee -a "$OUT/summary.txt"
done
echo "== --time-total 15 over the three (limit 16 s)" | tee -a "$OUT/summary.txt"
printf '%s\n' "${PROBLEMS[@]}" > "$OUT/three.txt"
t0=$(now)
timeout 30 "$BIN" --problems "$OUT/three.txt" --time-total 15 --db "$OUT/tt.toml" \
  --journal "$OUT/tt.jsonl" > "$OUT/tt.out" 2> "$OUT/tt.err"
rc=$?
wall=$(since "$t0")
if within "$wall" 16; then verdict=within; else verdict=OVER; fails=$((fails + 1)); fi
[ "$rc" -eq 0 ] || { verdict="$verdict, FAILED"; fails=$((fails + 1)); }
echo "list: rc $rc, wall $wall s, $verdict 16 s" | tee -a "$OUT/summary.txt"
grep '^summary:\|not started' "$OUT/tt.out" "$OUT/tt.err" | tee -a "$OUT/summary.txt"
echo "== adaptive vs full timing, budget 64, problem 2" | tee -a "$OUT/summary.txt"
for mode in adaptive full; do
  flag=(); [ "$mode" = full ] && flag=(--full-timing)
  t0=$(now)
  timeout 40 "$BIN" --problem "${PROBLEMS[1]}" --budget 64 "${flag[@]}" --db "$OUT/$mode.toml" \
    --journal "$OUT/$mode.jsonl" --quiet > "$OUT/$mode.out" 2>&1
  wall=$(since "$t0")
  echo "$mode: wall $wall s" | tee -a "$OUT/summary.txt"
  grep '^summary:' "$OUT/$mode.out" | tee -a "$OUT/summary.txt"
done
echo "== $fails run(s) failed or overran their time limit" | tee -a "$OUT/summary.txt"
echo "== fallback holdout (4 held-out entries of tuned-db/sm_90.toml)" | tee -a "$OUT/summary.txt"
OUT=$OUT timeout 50 scripts/fallback-holdout.sh 4 tuned-db/sm_90.toml "$BIN" 2>&1 | tail -7 | tee -a "$OUT/summary.txt"
