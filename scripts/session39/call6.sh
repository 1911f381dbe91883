#!/usr/bin/env bash
# Session 39, device call 6 (any H100/H200, about 5 min; carry .carry built with the round
# naming measured configs as the enumeration does): the configs no earlier run timed of the
# second rounds that `python3 scripts/session38/second.py scripts/session37/twins/picks.json
# recordings/journals/h100-session38-twins.jsonl.xz
# recordings/journals/h100-session38-{refine,second,second2}.jsonl.xz
# recordings/journals/h100-session39-family.jsonl.xz --out scripts/session39/named` wrote,
# each group's tuned winners timed first (journals in $OUT/j.tgz).
#   Usage (repo root, on the device): LIMIT=420 bash scripts/session39/call6.sh
set -uo pipefail
LOO_DIR=scripts/session39 LIMIT=${LIMIT:-420} bash scripts/session25/groups.sh named
