#!/usr/bin/env bash
# Session 25's device calls 1-3 (H200): times `--try` lists of leave-one-out fallback picks in
# bulk. For each SET, scripts/session25/loo/SET/g<N>/{problems.txt,tries.txt} (written by
# scripts/session25/loo-tries.py or st-tries.py): one tuner run per group, `--budget N+1`, so
# that it times the tuned winner (the lookup's exact answer from the built-in database) first,
# then exactly the N tries of each problem. Journals in $OUT/j.tgz.
#   call 1: LIMIT=540 bash scripts/session25/groups.sh bw fd
#   call 2: LIMIT=330 bash scripts/session25/groups.sh bw2
#   call 3: LIMIT=200 bash scripts/session25/groups.sh st
#   (LOO_DIR: where the sets lie; default scripts/session25/loo)
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-400} - $(date +%s) + t0 )); }
J=/tmp/j; mkdir -p $J
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
for set in "$@"; do
  for g in ${LOO_DIR:-scripts/session25/loo}/$set/g*; do
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
