#!/usr/bin/env bash
# Session 21 device calls 1-3 (H200): tunes one set of random problems (scripts/session21/set$1.txt,
# drawn by gen-problems.py) with the default strategy and space, `--time ${TIME:-9}` a problem and
# `--time-total $2`, over the database as it stands (the built-in one, plus the carried user
# database .carry/seed-db.toml when there is one: the earlier sets' winners). Each problem is
# looked up before it is tuned, so the run measures the fallback on problems it has not seen
# (scripts/session21/fallback-report.py). With SAME=SECS, then also the new winners against
# cuDNN (scripts/same-harness.py on $OUT/$1/db.toml, carried wheel).
#   Usage (repo root, on the device): [TIME=9] [SAME=SECS] [LIST=FILE] bash scripts/session21/tune-set.sh A 460
#   (LIST: another problem list than scripts/session21/set$1.txt)
#   Results: $OUT/summary.txt, $OUT/$1/{db.toml,j.jsonl,report.json,tune.log,fallback.txt}.
set -uo pipefail
. scripts/session11/lib.sh
X=$OUT/$1; mkdir -p "$X"
grep -v '^#' "${LIST:-scripts/session21/set$1.txt}" > "$X/problems.txt"
[ -f .carry/seed-db.toml ] && cp .carry/seed-db.toml "$X/db.toml"
say "== tune set $1: $(wc -l < "$X/problems.txt") problems, seed db: $(grep -c '^\[\[entry' "$X/db.toml" 2>/dev/null || echo none) $(el)"
timeout $(( $2 + 20 )) "$B" --problems "$X/problems.txt" --arch sm_90 --time "${TIME:-9}" --time-total "$2" \
  --db "$X/db.toml" --journal "$X/j.jsonl" --report "$X/report.json" > "$X/tune.log" 2>&1
say "tune rc=$? $(el)"
grep -E "not started|error" "$X/tune.log" | head -5 | tee -a "$S"
rm -f "$X"/*.lock
python3 scripts/session21/fallback-report.py "$X/report.json" > "$X/fallback.txt" 2>&1
tail -25 "$X/fallback.txt" | tee -a "$S"
if [ -n "${SAME:-}" ]; then
  say "== same harness, set $1's winners $(el)"
  same_harness "$SAME" 6 "$X/db.toml"
fi
say "== done $(el)"
