#!/usr/bin/env bash
# Session 29, device call 2 (H200, about 420 s): issue 16's fallback, leave-one-out over the
# whole shipped database with the lookup's first EIGHT candidates (the first-call benchmark's
# `convtune.torch.BENCHMARK_CANDIDATES` is 4): is the fastest of eight within 0.95 of tuned
# where the fastest of four (0.938, session 27 offline) is not? Every tuner run times the tuned
# winner first, then exactly the picks (scripts/session25/groups.sh).
#   The picks (scripts/session29/loo8/, written with this build, no GPU):
#     python3 scripts/session25/loo-tries.py --variant new=target/release/convtune --candidates 8 \
#       --legal-only target/release/examples/model_times --out scripts/session29/loo8
#   (write them again whenever tuned-db/sm_90.toml changes: the tuned winner timed is the
#   build's own entry).
#   Usage (repo root, on the device; carry .carry): bash scripts/session29/call2.sh
#   Score (no GPU): tar xzf j.tgz; python3 scripts/session25/loo-score.py \
#     scripts/session29/loo8/picks.json j/*.jsonl --best 2,4,8
set -uo pipefail
LOO_DIR=scripts/session29 LIMIT=${LIMIT:-480} bash scripts/session25/groups.sh loo8
