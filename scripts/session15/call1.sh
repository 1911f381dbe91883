#!/usr/bin/env bash
# Session 15, device call 1 (H200, < 590 s): re-tune every entry of the shipped database under
# the read-sweep timing (session 14's `runtime::l2_sweep`; the entries were tuned after a memset
# flush). The built-in space, default strategy, `--time 9` a problem (`--time-total 390`). The
# build carries the shipped database, so each search measures the shipped winner first (the
# lookup config): the journal holds old and new configs timed in the same run. Then the
# untuned fallback with and without this session's re-tiling, on the shipped database
# (scripts/fallback-holdout.sh 8, OLD_BIN = the session's base build).
#   Usage (repo root, on the device): bash scripts/session15/call1.sh
#   Results: $OUT/retune/ (and a copy in target/session15/retune for call 2):{db.toml,j.jsonl,report.json,tune.log}, $OUT/summary.txt.
set -uo pipefail
. scripts/session11/lib.sh
R=$OUT/retune; mkdir -p "$R"
python3 -c "
import tomllib
for e in tomllib.load(open('tuned-db/sm_90.toml', 'rb'))['entry']:
    print(e['problem'])" > "$R/problems.txt"
say "== retune $(wc -l < "$R/problems.txt") problems $(el)"
timeout 410 "$B" --problems "$R/problems.txt" --arch sm_90 --time 9 --time-total 390 \
  --db "$R/db.toml" --journal "$R/j.jsonl" --report "$R/report.json" > "$R/tune.log" 2>&1
say "tune rc=$? $(el)"
grep "^summary" "$R/tune.log" | cut -c1-200 | tee -a "$S"
rm -f "$R"/*.lock
# Kept on the device for call 2 (while the machine stays warm): target/ is not carried over.
mkdir -p target/session15 && cp -r "$R" target/session15/
say "== fallback holdout, this build and the base build $(el)"
OLD_BIN=$PWD/target/base/convtune OUT=$OUT timeout 120 bash scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$B" \
  > "$OUT/holdout.log" 2>&1
say "rc=$? $(el)"; tail -14 "$OUT/holdout.log" | tee -a "$S"
tar czf "$OUT/holdout.tgz" -C "$OUT" holdout 2>/dev/null && rm -rf "$OUT/holdout"
say "== done $(el)"
