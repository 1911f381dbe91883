#!/usr/bin/env bash
# Session 17, device call 4 (H200, < 200 s): the noise floor of an A/B. The final build under
# two names through scripts/ab-builds.sh on the shipped 16-bit entries (the same protocol as
# call 2's A/B): any ratio away from 1 is process-to-process spread, not a kernel change.
#   Usage (repo root, on the device): bash scripts/session17/call4.sh
#   Results: $OUT/summary.txt, $OUT/aa.txt
set -uo pipefail
. scripts/session11/lib.sh
say "== A/A, final build, 16-bit entries $(el)"
OUT=$OUT timeout 170 bash scripts/ab-builds.sh tuned-db/sm_90.toml '^conv(b?fp16)' a="$B" b="$B" \
  | tee "$OUT/aa.txt" | tail -4 | tee -a "$S"
rm -rf "$OUT/ab"
say "== done $(el)"
