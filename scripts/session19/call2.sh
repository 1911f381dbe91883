#!/usr/bin/env bash
# Session 19, device call 2 (H200, < 420 s): the untuned fallback leave-one-out again
# (`scripts/fallback-loo.py`), five lookups of this session's experiment build scored on the same
# timings: the session-18 fallback (base), + the model's own pick and f16/bf16 neighbours (x16h),
# + re-tiling only the nearest neighbours (near), + trust falling with distance (trust), both
# (both); picks and timings dumped. Then the tuner's cost of a bf16 strided bwd-data candidate
# against a one-phase twin (`--time 10`, candidates evaluated).
#   Usage (repo root, on the device): bash scripts/session19/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 fallback leave-one-out $(el)"
V="--variant base=$B,ZZ_NOX=1,ZZ_NOHEUR=1 --variant x16h=$B --variant near=$B,ZZ_NEARTILE=1"
V="$V --variant trust=$B,ZZ_TRUST=1 --variant both=$B,ZZ_TRUST=1,ZZ_NEARTILE=1"
timeout 300 python3 scripts/fallback-loo.py --bin "$B" $V --holdout 8 \
  --extra scripts/session19/unseen.txt --out /tmp/loo --dump "$OUT/loo.json" > "$OUT/loo.txt" 2>&1
say "rc=$? $(el)"; grep -E "geomean|^timed" "$OUT/loo.txt" | tee -a "$S"
say "== 2 tuner cost, --time 10 $(el)"
T=/tmp/tune; mkdir -p "$T"
i=0
while read -r p; do
  timeout 40 "$B" --problem "$p" --arch sm_90 --time 10 --db "$T/db$i.toml" --journal "$T/j$i.jsonl" \
    > "$T/log$i.txt" 2>&1
  say "p$i rc=$?: $(grep -h '^summary' "$T/log$i.txt" | grep -o 'best.*' | cut -c1-300) | $p"
  cp "$T/log$i.txt" "$OUT/"
  i=$((i + 1))
done <<'P'
convbfp16 -F 2 -n 16 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
convbfp16 -F 2 -n 16 -c 192 -H 18 -W 18 -k 192 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 --layout NHWC
P
say "== done $(el)"
