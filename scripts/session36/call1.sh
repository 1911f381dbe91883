#!/usr/bin/env bash
# Session 36, device call 1 (any H100/H200, about 330 s; carry .carry): the fallback's model
# picks from the whole built-in search (vendor + Hopper spaces) against the vendor space alone.
# The 109 shipped entries whose leave-one-out list of eight changes (scripts/session36/heur,
# written by scripts/session25/loo-tries.py with both builds), each timed with its tuned
# winner, the old list and the new one in the same tuner run.
#   Usage (repo root, on the device): bash scripts/session36/call1.sh
#   Score (no GPU): tar xzf j.tgz; python3 scripts/session25/loo-score.py \
#     scripts/session36/heur/picks.json j/*.jsonl --best 2,4,8
set -uo pipefail
LOO_DIR=scripts/session36 LIMIT=${LIMIT:-400} bash scripts/session25/groups.sh heur
