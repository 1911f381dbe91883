#!/usr/bin/env bash
# Session 39, device call 2 (any H100/H200, about 3 min; carry .carry built with the round's
# family cover, and .whlx): 1. the configs the second round with its last slot covering an
# unmeasured kernel family proposes that no session-38 run timed (scripts/session39/family,
# written by `python3 scripts/session38/second.py scripts/session37/twins/picks.json
# recordings/journals/h100-session38-twins.jsonl.xz recordings/journals/h100-session38-{refine,second,second2}.jsonl.xz
# --out scripts/session39/family`), each group's tuned winners timed first (journals in
# $OUT/j.tgz); 2. call 1's one cold outlier (an f16 bwd-weight timed at 858 us cold, 13.9 us
# in a graph, through convtune.torch) three times more, each a fresh process.
#   Usage (repo root, on the device): bash scripts/session39/call2.sh
set -uo pipefail
LOO_DIR=scripts/session39 LIMIT=${LIMIT:-200} bash scripts/session25/groups.sh family
. scripts/session11/lib.sh
site=$WHEEL_SITE
mkdir -p "$site" && cp -r .whlx/. "$site/" && xz -df "$site"/convtune/*.so.xz
grep -F -- '-k 768 -y 7 -x 1' scripts/session23/setD.txt > /tmp/one.txt
for i in 1 2 3; do
  CUDA_CACHE_DISABLE=1 PYTHONPATH=$site timeout 60 python3 scripts/first-use.py /tmp/one.txt \
    --second 0 --pick-only --json "$OUT/one-$i.json" > "$OUT/one-$i.log" 2>&1
  say "one $i rc=$? $(el): $(grep -F -- '-k 768' "$OUT/one-$i.log" | cut -c1-120)"
done
