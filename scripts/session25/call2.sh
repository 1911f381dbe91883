#!/usr/bin/env bash
# Session 25, device call 2 (H200): bwd-weight leave-one-out, the session-start lookup against
# the one that fits each neighbour config's split-K by the model (scripts/session25/loo/bw2,
# from scripts/session25/loo-tries.py with both builds): per problem, in one tuner run, the
# tuned winner first, then both lookups' four candidates. Journals in $OUT/j.tgz.
# Call 3 is the same over scripts/session25/loo/st (scripts/session25/st-tries.py: the picks whose
# pipeline depth the model would change, at every legal depth).
#   Usage (repo root, on the device): [LIMIT=400] bash scripts/session25/call2.sh [SET (bw2)]
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-400} - $(date +%s) + t0 )); }
J=/tmp/j; mkdir -p $J
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
set=${1:-bw2}
for g in scripts/session25/loo/$set/g*; do
  n=${g##*/g}; tag=$set-g$n; np=$(wc -l < "$g/problems.txt")
  tt=$(( $(left) - 20 )); [ "$tt" -lt 20 ] && { say "$tag: no time left"; continue; }
  say "== $tag: $np problems, $n tries each $(el)"
  timeout $(( tt + 15 )) "$B" --problems "$g/problems.txt" --arch sm_90 --try "$g/tries.txt" \
    --budget $(( n + 1 )) --time 60 --time-total "$tt" --db /tmp/$tag.toml --journal $J/$tag.jsonl \
    --quiet > $J/$tag.log 2>&1
  say "rc=$? $(el) timed: $(grep -c '"time_us":[0-9]' $J/$tag.jsonl)"
  grep -E "not started|error" $J/$tag.log | head -5 | tee -a "$S"
done
tar czf "$OUT/j.tgz" -C /tmp j
say "== done $(el)"
