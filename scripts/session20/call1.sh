#!/usr/bin/env bash
# Session 20, device call 1 (H200, < 590 s), the build of commit de44722 (session 19's last):
#  1. `convtune selfcheck` of the persistent walk (scripts/session19/walk.txt, walk-space.toml,
#     --configs 6): session 19's final build (waits moved to the top of their blocks, `mma=wg1`
#     consumers sharing one body) had no selfcheck of the walk on the GPU;
#  2. re-tune every shipped entry with the time left (default strategy, `--time 10`): the build
#     carries the shipped database, so each search measures the shipped winner first, and
#     `mma=wg1` candidates (rs=4 ones especially) are no longer serialised by ptxas (C7514).
#     The journal (every timed candidate of 39 problems) comes back for the fallback's evidence.
#   Usage (repo root, on the device): [LIMIT=590] bash scripts/session20/call1.sh
#   Results: $OUT/summary.txt, $OUT/retune/{db.toml,j.jsonl,report.json,tune.log}.
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 selfcheck walk $(el)"
selfcheck_step walk 150 --problems scripts/session19/walk.txt --space scripts/session19/walk-space.toml --configs 6
R=$OUT/retune; mkdir -p "$R"
db_problems . > "$R/problems.txt"
total=$(( ${LIMIT:-590} - 20 - $(date +%s) + t0 ))
say "== 2 retune $(wc -l < "$R/problems.txt") problems, --time-total $total $(el)"
[ "$total" -gt 60 ] && tune_list "$R" "$total"
say "== done $(el)"
