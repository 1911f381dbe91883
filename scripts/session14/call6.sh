#!/usr/bin/env bash
# Session 14, device call 6 (H200, < 400 s): the shipped database under the read-sweep timing.
#  1. scripts/db-vs-cudnn.sh tuned-db/sm_90.toml with this build and the base build (memset
#     flush), alternating, cuDNN and the bf16 matmul rate in the same run;
#  2. scripts/fallback-holdout.sh 8 with this build.
#   Usage (repo root, on the device): bash scripts/session14/call6.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 db vs cuDNN, A/B $(el)"
OUT=$OUT timeout 300 bash scripts/db-vs-cudnn.sh tuned-db/sm_90.toml "$B" "$PWD/target/base/convtune" > "$OUT/dbrun.log" 2>&1
say "rc=$? $(el)"
tail -55 "$OUT/dbrun.log" | cut -c1-200 | tee -a "$S"
tar czf "$OUT/dbrun.tgz" -C "$OUT" dbrun 2>/dev/null && rm -rf "$OUT/dbrun"
say "== 2 fallback holdout $(el)"
OUT=$OUT timeout 90 bash scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$B" > "$OUT/holdout.log" 2>&1
say "rc=$? $(el)"; tail -10 "$OUT/holdout.log" | tee -a "$S"
rm -rf "$OUT/holdout"
say "== done $(el)"
