#!/usr/bin/env bash
# Session 33, device call 1 (any H100/H200, about 520 s; carry .carry): session 32's
# leave-one-out best-of-eight with the filled lists (scripts/session32/loo8's picks), each
# problem's tuned winner added as a `--try` of its own. On a card other than the one the
# database was tuned on, the tuner does not take the shipped entry as exact (fingerprints
# differ), so session 32's call 5 on an H100 timed the held-out lists without their tuned
# winner; here it is timed beside them whatever the card.
#   Usage (repo root, on the device): bash scripts/session33/call1.sh
#   Score (no GPU): tar xzf j.tgz; python3 scripts/session25/loo-score.py \
#     scripts/session33/loo8/picks.json j/*.jsonl --best 2,4,8
set -uo pipefail
LOO_DIR=scripts/session33 LIMIT=${LIMIT:-560} bash scripts/session25/groups.sh loo8
