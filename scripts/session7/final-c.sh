#!/usr/bin/env bash
# Session 7 final pass, call C (H200): the untuned fallback on the re-tuned database
# (scripts/fallback-holdout.sh 8: eight entries held out, looked up from the rest, timed against
# their tuned configs in the same run). Results in $OUT/holdout/.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
OUT=$OUT timeout 300 scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$PWD/target/release/convtune" 2>&1 | tail -20
