#!/usr/bin/env bash
# Session 15, device call 2 (H200, < 590 s): the re-tuned database against cuDNN and the
# untuned fallback on it. The database: call 1's re-tuned entries (target/session15/retune,
# left by call 1 on a still-warm machine, or RETUNE=DIR) with the shipped entries of the
# problems call 1 did not finish, written to $OUT/sm_90.toml; without call 1's results, the
# shipped tuned-db/sm_90.toml.
#  1. scripts/same-harness.py: both sides through one harness, cold (the tuner's protocol) and
#     graph replays, each output checked against PyTorch f64 first (wheel in .whl/);
#  2. scripts/fallback-holdout.sh 8 on it with this build, OLD_BIN = the session's base build
#     (the fallback before re-tiling);
#  3. scripts/session15/loo.sh: leave-one-out fallback picks that re-tiling changed, timed;
#  4. scripts/db-vs-cudnn.sh on it (the tuner's own timing against cuDNN graph replays), as
#     far as the call's time allows.
#   Usage (repo root, on the device): bash scripts/session15/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
DB=tuned-db/sm_90.toml
RETUNE=${RETUNE:-target/session15/retune}
if [ -f "$RETUNE/db.toml" ]; then
  # The shipped entries of problems the re-tune has no entry for, then merged with it.
  python3 scripts/session15/rest.py tuned-db/sm_90.toml "$RETUNE/db.toml" "$OUT/rest.toml" | tee -a "$S"
  "$B" db merge "$RETUNE/db.toml" "$OUT/rest.toml" -o "$OUT/sm_90.toml" 2>&1 | tail -2 | tee -a "$S"
  [ -f "$OUT/sm_90.toml" ] && DB=$OUT/sm_90.toml
fi
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
say "== fallback leave-one-out on the picks re-tiling changed $(el)"
BIN=$B OUT=$OUT timeout 150 bash scripts/session15/loo.sh > "$OUT/loo.log" 2>&1
say "rc=$? $(el)"; cut -c1-160 "$OUT/loo.log" | tee -a "$S"
tar czf "$OUT/loo.tgz" -C "$OUT" loo 2>/dev/null && rm -rf "$OUT/loo"
left=$(( 530 - $(date +%s) + t0 ))
say "== 3 db vs cuDNN (${left} s left) $(el)"
if [ "$left" -gt 60 ]; then
  OUT=$OUT timeout "$left" bash scripts/db-vs-cudnn.sh "$DB" "$B" > "$OUT/dbrun.log" 2>&1
  say "rc=$? $(el)"; tail -45 "$OUT/dbrun.log" | cut -c1-200 | tee -a "$S"
  tar czf "$OUT/dbrun.tgz" -C "$OUT" dbrun 2>/dev/null && rm -rf "$OUT/dbrun"
fi
say "== cuDNN back to back: do its kernels overlap (PDL)? $(el)"
printf '%s\n' "convbfp16 -F 1 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 --layout NHWC" \
  "convbfp16 -F 1 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 --layout NHWC" > "$OUT/overlap.txt"
timeout 40 python3 scripts/session15/overlap.py "$OUT/overlap.txt" 2>&1 | grep -v Warning | tee -a "$S"
say "== done $(el)"
