#!/usr/bin/env bash
# Session 18, device call 6 (H200, < 200 s): the untuned fallback on this session's database
# (`scripts/fallback-holdout.sh 8`: 8 entries held out, the rest the only database, each
# held-out problem's looked-up config and its tuned one timed in the same run).
#   Usage (repo root, on the device): bash scripts/session18/call6.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== fallback holdout $(el)"
OUT=$OUT timeout 180 bash scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$B" > "$OUT/holdout.txt" 2>&1
say "rc=$? $(el)"; tail -12 "$OUT/holdout.txt" | cut -c1-220 | tee -a "$S"
rm -rf "$OUT/holdout"
say "== done $(el)"
