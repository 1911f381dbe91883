#!/usr/bin/env bash
# Session 20, device call 4 (H200, < 480 s), the final build and database:
#  1. the shipped database against cuDNN (scripts/same-harness.py, every entry, carried wheel):
#     session 19's database with six f32 entries of call 1's re-tune, chosen on call 2;
#  2. the cross matrix: every shipped winner timed on every shipped problem where it is legal
#     (`--try` with the database's configs, `--budget 39`: nothing else is measured), so that a
#     fallback's choice among its neighbours' winners can be scored offline, and the best of
#     them against tuned (is the limit the candidates or the ranking?);
#  3. with the time left, the fallback leave-one-out on this database (the model as it is).
#   Usage (repo root, on the device): [LIMIT=480] bash scripts/session20/call4.sh
#   Results: $OUT/summary.txt, $OUT/same.{log,json}, $OUT/cross/{j.jsonl,tune.log}, $OUT/loo.*.
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-480} - $(date +%s) + t0 )); }
say "== 1 same harness, the shipped database $(el)"
same_harness 120 4
X=$OUT/cross; mkdir -p "$X"
db_problems . > "$X/problems.txt"
python3 -c "
import tomllib
for e in tomllib.load(open('tuned-db/sm_90.toml', 'rb'))['entry']:
    print(e['config'])" > "$X/tries.txt"
say "== 2 cross matrix: $(wc -l < "$X/tries.txt") winners on $(wc -l < "$X/problems.txt") problems $(el)"
tt=$(( $(left) - 130 )); [ "$tt" -gt 240 ] && tt=240
timeout $(( tt + 20 )) "$B" --problems "$X/problems.txt" --arch sm_90 --try "$X/tries.txt" --budget 39 \
  --time 20 --time-total "$tt" --db /tmp/cross.toml --journal "$X/j.jsonl" > "$X/tune.log" 2>&1
say "rc=$? $(el)"; grep -c '"time_us":[0-9]' "$X/j.jsonl" | sed 's/^/timed: /' | tee -a "$S"
grep -E "not started" "$X/tune.log" | tee -a "$S"
if [ "$(left)" -gt 90 ]; then
  say "== 3 fallback leave-one-out, this database $(el)"
  timeout $(( $(left) - 15 )) python3 scripts/fallback-loo.py --db tuned-db/sm_90.toml --bin "$B" --holdout 8 \
    --out /tmp/loo --dump "$OUT/loo.json" > "$OUT/loo.log" 2>&1
  say "rc=$? $(el)"; grep -E "geomean|^timed" "$OUT/loo.log" | tee -a "$S"
fi
say "== done $(el)"
