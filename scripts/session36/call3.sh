#!/usr/bin/env bash
# Session 36, device call 3 (any H100/H200, about 300 s; carry .carry with 09039fd's
# convtune.xz): the fallback's lists of eight as committed (the whole search's picks and the
# vendor space's own), every shipped H200 entry held out (scripts/session36/loo, written by
# scripts/session25/loo-tries.py), each problem's tuned winner a try of its own.
#   Usage (repo root, on the device): bash scripts/session36/call3.sh
#   Score (no GPU): tar xzf j.tgz; python3 scripts/session25/loo-score.py \
#     scripts/session36/loo/picks.json j/*.jsonl --best 1,2,4,8
set -uo pipefail
LOO_DIR=scripts/session36 LIMIT=${LIMIT:-290} bash scripts/session25/groups.sh loo
