#!/usr/bin/env bash
# Session 25, device call 1 (H200): the untuned fallback leave-one-out, timed in bulk.
# scripts/session25/loo/{bw,fd}/g<N>/{problems.txt,tries.txt} (from scripts/session25/loo-tries.py):
# per problem of the shipped database, the configs the lookup answers with that entry left out
# (bw: bwd-weight, the session-start build and the build whose re-tile also fits split-K, plus
# the first pick at every split-K; fd: fwd and bwd-data, the session-start build's four).
# One tuner run per group, `--budget N+1`: the tuned winner (the lookup's exact answer from the
# built-in database) first, then exactly the tries. Journals in $OUT/j.tgz.
#   Usage (repo root, on the device): [LIMIT=540] bash scripts/session25/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-540} - $(date +%s) + t0 )); }
J=/tmp/j; mkdir -p $J
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
for set in bw fd; do
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
done
tar czf "$OUT/j.tgz" -C /tmp j
say "== done $(el)"
