#!/usr/bin/env bash
# Session 20, device call 3 (H200, < 400 s): call 2 found the learned correction *hurting* the
# untuned fallback (leave-one-out 0.822 -> 0.753): its picks narrowed vector widths (va=2
# where the model's kept va=8) and warp tiles. The shipped database is back to session 19's
# (call 2's same-harness run: the re-tune was no faster against cuDNN). Same protocol as call 2
# (scripts/fallback-loo.py, leave-one-out, holdout 8, unseen 4), four lookups on the same timings:
#   none: the model as it is; cw: the correction without the width fields (the default of
#   `convtune db fit-model`); cww: also without the warp tile; ck: also without the block tile
#   (kernel kinds, stages, split-K, raster and the model's terms only). Each correction fitted
#   to call 1's journal without the held-out problems (.carry/corr-<v>/<db>.toml).
#   Usage (repo root, on the device): [LIMIT=400] bash scripts/session20/call3.sh
#   Results: $OUT/summary.txt, $OUT/loo.{log,json}.
set -uo pipefail
. scripts/session11/lib.sh
say "== fallback: leave-one-out, holdout 8, unseen 4; none / cw / cww / ck $(el)"
v=(--variant "none=$B,CONVTUNE_MODEL_CORRECTION=none")
for c in cw cww ck; do v+=(--variant "$c=$B,CONVTUNE_MODEL_CORRECTION=$PWD/.carry/corr-$c/{db}.toml"); done
timeout $(( ${LIMIT:-400} - 20 )) python3 scripts/fallback-loo.py --db tuned-db/sm_90.toml --bin "$B" "${v[@]}" \
  --holdout 8 --extra scripts/session19/unseen.txt --out /tmp/loo --dump "$OUT/loo.json" > "$OUT/loo.log" 2>&1
say "rc=$? $(el)"; grep -E "geomean|^timed" "$OUT/loo.log" | tee -a "$S"
say "== done $(el)"
