#!/usr/bin/env bash
# Session 20, device call 2 (H200, < 590 s): the re-tuned database (call 1's) and the cost
# model's learned correction (tuned-db/model/sm_90.toml, `convtune db fit-model` on call 1's
# journal), each measured in this run:
#  1. the untuned fallback, leave-one-out over the whole database, the 8-entry holdout split and
#     four problems outside it (scripts/fallback-loo.py): the model as it is
#     (CONVTUNE_MODEL_CORRECTION=none) against the learned correction fitted *without* the
#     held-out problems (.carry/corr/<db>.toml: loo<i>, holdout, whole), picks and tuned
#     configs timed in the same run;
#  2. the re-tuned database against cuDNN (scripts/same-harness.py, every entry, carried wheel),
#     then the database shipped before it (.carry/old-sm_90.toml) with the time left.
#   Usage (repo root, on the device): [LIMIT=590] bash scripts/session20/call2.sh
#   Results: $OUT/summary.txt, $OUT/loo.{log,json}, $OUT/same*.{log,json}.
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-590} - $(date +%s) + t0 )); }
say "== 1 fallback: leave-one-out, holdout 8, unseen 4; model as it is vs learned correction $(el)"
C=$PWD/.carry/corr
timeout 300 python3 scripts/fallback-loo.py --db tuned-db/sm_90.toml --bin "$B" \
  --variant "none=$B,CONVTUNE_MODEL_CORRECTION=none" \
  --variant "corr=$B,CONVTUNE_MODEL_CORRECTION=$C/{db}.toml" \
  --holdout 8 --extra scripts/session19/unseen.txt --out /tmp/loo --dump "$OUT/loo.json" > "$OUT/loo.log" 2>&1
say "rc=$? $(el)"; grep -E "geomean|^timed" "$OUT/loo.log" | tee -a "$S"
say "== 2a same harness, the re-tuned database $(el)"
same_harness $(( $(left) > 200 ? 180 : $(left) - 20 )) 14
if [ "$(left)" -gt 120 ]; then
  say "== 2b same harness, the database shipped before $(el)"
  cp .carry/old-sm_90.toml /tmp/old-sm_90.toml
  same_harness $(( $(left) - 20 )) 6 /tmp/old-sm_90.toml
fi
say "== done $(el)"
