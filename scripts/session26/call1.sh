#!/usr/bin/env bash
# Session 26, device call 1 (H200): the seeds' compiles, the enumeration, the worker's start and
# the reference overlapped (issue 16's fixed cost), against the session's starting build
# (scripts/session26/first.sh), then `convtune selfcheck --configs 2` with this build.
#   Usage (repo root, on the device): bash scripts/session26/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 first candidate, new and old, $(el)"
T=6 REPS=2 OUT=$OUT timeout 300 bash scripts/session26/first.sh 2>&1 | tee -a "$S"
say "== 2 selfcheck $(el)"
selfcheck_step c2 200 --configs 2
say "== done $(el)"
