#!/usr/bin/env bash
# Session 32, device call 5 (H200, about 420 s): session 29's leave-one-out best-of-eight again,
# with the lookup that fills a short candidate list (the rest of the quick list, each
# neighbour's fastest re-tile, then the cost model's next picks): what the added configs are
# worth. Picks written with this
# build, no GPU:
#   python3 scripts/session25/loo-tries.py --variant new=target/release/convtune --candidates 8 \
#     --legal-only target/release/examples/model_times --out scripts/session32/loo8
#   Usage (repo root, on the device; carry .carry): bash scripts/session32/call5.sh
#   Score (no GPU): tar xzf j.tgz; python3 scripts/session25/loo-score.py \
#     scripts/session32/loo8/picks.json j/*.jsonl --best 2,4,8
set -uo pipefail
LOO_DIR=scripts/session32 LIMIT=${LIMIT:-480} bash scripts/session25/groups.sh loo8
