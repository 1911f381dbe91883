#!/usr/bin/env bash
# Session 23 device call 3 (H200): set C of session 21's random problems, tuned over the
# shipped database plus sets A and B (.carry/seed-db.toml), with the build that also times the
# lookup's next candidates (`lookup --candidates 4`, report field lookup_best_us); then the f32
# filter gradient with 401,408-term sums that set B could not tune (164 of 165 candidates over
# the flat 1e-5 tolerance), again with the tolerance that grows with the reduction length.
#   Usage (repo root, on the device): bash scripts/session23/call3.sh SECONDS_FOR_C
set -uo pipefail
bash scripts/session21/tune-set.sh C "$1"
cp "$OUT/summary.txt" "$OUT/summary-C.txt"  # lib.sh starts summary.txt afresh
. scripts/session11/lib.sh
S=$OUT/summary-f32.txt; : > "$S"
X=$OUT/f32; mkdir -p "$X"
echo "conv -F 4 -n 128 -c 48 -H 56 -W 56 -k 32 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW" > "$X/problems.txt"
say "== f32 bwd-weight, 401,408-term sums $(el)"
timeout 40 "$B" --problems "$X/problems.txt" --arch sm_90 --time 12 --db "$X/db.toml" \
  --journal "$X/j.jsonl" --report "$X/report.json" > "$X/tune.log" 2>&1
say "rc=$? $(el)"
grep -E "^summary|first failure" "$X/tune.log" | cut -c1-300 | tee -a "$S"
