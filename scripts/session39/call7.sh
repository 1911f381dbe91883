#!/usr/bin/env bash
# Session 39, device call 7 (any H100/H200, about 3 min; carry .carry as call 6): the config
# each round variant keeps (the fastest of its configs over the earlier runs: sixteen alone,
# the round with the family slot, the round that names measured configs as the enumeration
# does), timed again beside each tuned winner, twice (scripts/session39/kept and its copy
# keptb, written by `python3 scripts/session39/kept.py scripts/session39/kept
# sixteen=scripts/session39/family/picks.json:16 family=scripts/session39/family/picks.json
# named=scripts/session39/named/picks.json --runs
# recordings/journals/h100-session38-{twins,refine,second,second2}.jsonl.xz
# recordings/journals/h100-session39-{family,named}.jsonl.xz`; journals in $OUT/j.tgz).
#   Usage (repo root, on the device): bash scripts/session39/call7.sh
set -uo pipefail
LOO_DIR=scripts/session39 LIMIT=${LIMIT:-300} bash scripts/session25/groups.sh kept keptb
