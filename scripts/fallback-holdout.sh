#!/usr/bin/env bash
# How good is the untuned fallback, measured honestly (issue 16 item 5): hold out COUNT entries
# of a tuned database, ship the rest as the only database (`--db rest --no-system-db`), ask
# `convtune lookup` for each held-out problem, then time on this GPU, in the same run, the
# looked-up config and the tuned one (each as a one-config search space, verified first).
# Prints per problem tuned/fallback speed (1.0 = as fast as tuned) and the geomean and minimum.
# One split of scripts/fallback-loo.py (which also scores every entry held out alone).
#   Usage: scripts/fallback-holdout.sh [COUNT] [DB] [BIN]
#          (defaults: 6, tuned-db/sm_90.toml, target/release/convtune; OLD_BIN=… also scores
#          another build's lookup, e.g. the one before the ranked fallback)
#   Results: $OUT/holdout/ (the split database, logs).
set -uo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
db=${2:-tuned-db/sm_90.toml}
BIN=${3:-target/release/convtune}
OUT=${OUT:-out}
[ -f "$(dirname "$BIN")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$BIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
variants=(--variant "new=$BIN")
[ -n "${OLD_BIN:-}" ] && variants+=(--variant "old=$OLD_BIN")
exec python3 scripts/fallback-loo.py --db "$db" --bin "$BIN" "${variants[@]}" --holdout "$count" \
  --no-loo --out "$OUT/holdout"
