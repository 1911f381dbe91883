#!/usr/bin/env bash
# Session 15, device call 2 (H200, < 590 s): the re-tuned database (tuned-db/sm_90.toml after
# call 1) against cuDNN and the untuned fallback on it.
#  1. scripts/same-harness.py: both sides through one harness, cold (the tuner's protocol) and
#     graph replays, each output checked against PyTorch f64 first (wheel in .whl/);
#  2. scripts/fallback-holdout.sh 8 on it with this build, OLD_BIN = the session's base build
#     (the fallback before re-tiling);
#  3. scripts/db-vs-cudnn.sh on it (the tuner's own timing against cuDNN graph replays), as
#     far as the call's time allows.
#   Usage (repo root, on the device): bash scripts/session15/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
DB=tuned-db/sm_90.toml
say "== 1 same harness $DB $(el)"
site=$(mktemp -d)
if python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl; then
  PYTHONPATH="$site" timeout 220 python3 scripts/same-harness.py "$DB" --json "$OUT/same.json" \
    > "$OUT/same.log" 2>&1
  say "rc=$? $(el)"; grep -v Warning "$OUT/same.log" | tail -48 | tee -a "$S"
else
  say "no wheel in .whl/"
fi
say "== 2 fallback holdout $(el)"
OLD_BIN=$PWD/target/base/convtune OUT=$OUT timeout 120 bash scripts/fallback-holdout.sh 8 "$DB" "$B" \
  > "$OUT/holdout.log" 2>&1
say "rc=$? $(el)"; tail -14 "$OUT/holdout.log" | tee -a "$S"
tar czf "$OUT/holdout.tgz" -C "$OUT" holdout 2>/dev/null && rm -rf "$OUT/holdout"
left=$(( 570 - $(date +%s) + t0 ))
say "== 3 db vs cuDNN (${left} s left) $(el)"
if [ "$left" -gt 60 ]; then
  OUT=$OUT timeout "$left" bash scripts/db-vs-cudnn.sh "$DB" "$B" > "$OUT/dbrun.log" 2>&1
  say "rc=$? $(el)"; tail -45 "$OUT/dbrun.log" | cut -c1-200 | tee -a "$S"
  tar czf "$OUT/dbrun.tgz" -C "$OUT" dbrun 2>/dev/null && rm -rf "$OUT/dbrun"
fi
say "== done $(el)"
