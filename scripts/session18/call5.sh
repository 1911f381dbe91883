#!/usr/bin/env bash
# Session 18, device call 5 (H200, < 200 s): `--l2 warm` timed in bursts of back-to-back calls
# (one event pair a burst; call 4 timed each warm call between events of its own, and its
# warm-tuned fwd 1x1 c1024 config lost to the shipped one in graph replays):
#  0. the library's GPU tests (carried .carry/libtests.xz);
#  1. the two short-K 1x1 layers re-tuned warm (`--time 20`, into a copy of the shipped
#     database: the shipped cold-tuned config is timed first, warm);
#  2. scripts/same-harness.py on those two entries of the warm database and of the shipped one.
#   Usage (repo root, on the device): bash scripts/session18/call5.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 0 gpu lib tests $(el)"
gpu_lib_tests
ONLY='^convbfp16 -F 1 -n 64 -c (1024 -H 14|512 -H 7)'
W=$OUT/warm; mkdir -p "$W"
cp tuned-db/sm_90.toml "$W/warm.toml"
db_problems "$ONLY" > "$W/problems.txt"
say "== 1 tune --l2 warm --time 20: $(wc -l < "$W/problems.txt") problems $(el)"
timeout 80 "$B" --problems "$W/problems.txt" --arch sm_90 --l2 warm --time 20 --db "$W/warm.toml" \
  --journal /tmp/warm.jsonl --report "$W/report.json" > /tmp/warm.log 2>&1
say "rc=$? $(el)"; grep -h '^summary' /tmp/warm.log | cut -c1-250 | tee -a "$S"
grep -A2 'c 1024 -H 14\|c 512 -H 7' "$W/warm.toml" | grep config | tee -a "$S"
rm -f "$W"/*.lock
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1 \
  || say "wheel not installed: $(tail -2 "$OUT/pip.log")"
for db in "$W/warm.toml" tuned-db/sm_90.toml "$W/warm.toml" tuned-db/sm_90.toml; do
  say "== 2 same harness, $(basename "$db"), the two entries $(el)"
  PYTHONPATH="$site" timeout 60 python3 scripts/same-harness.py "$db" --only "$ONLY" > /tmp/same.log 2>&1
  say "rc=$? $(el)"; grep -v Warning /tmp/same.log | tail -5 | cut -c1-200 | tee -a "$S"
done
say "== done $(el)"
