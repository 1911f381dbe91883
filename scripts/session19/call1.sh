#!/usr/bin/env bash
# Session 19, device call 1 (H200, < 480 s): the untuned fallback leave-one-out over the whole
# shipped database, the 8-entry holdout split and four problems outside it
# (`scripts/fallback-loo.py`), four lookups scored on the same timings: the session-18 fallback
# (base), + the cost model's own pick as a guess (heur), + f16/bf16 neighbours borrowed across
# types (x16h), + per-neighbour calibration (all). Then what a bf16 strided bwd-data candidate
# (ws walk among its candidates) costs the tuner against a one-phase twin, `--time 10` each.
# The lookup variants are switched by environment variables of this session's experiment build.
#   Usage (repo root, on the device): bash scripts/session19/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 fallback leave-one-out $(el)"
V="--variant base=$B,ZZ_NOX=1,ZZ_NOCAL=1,ZZ_NOHEUR=1 --variant heur=$B,ZZ_NOX=1,ZZ_NOCAL=1"
V="$V --variant x16h=$B,ZZ_NOCAL=1 --variant all=$B"
timeout 330 python3 scripts/fallback-loo.py --bin "$B" $V --holdout 8 \
  --extra scripts/session19/unseen.txt --out /tmp/loo > "$OUT/loo.txt" 2>&1
say "rc=$? $(el)"; grep -E "geomean|^timed" "$OUT/loo.txt" | tee -a "$S"
say "== 2 tuner cost, --time 10 $(el)"
T=/tmp/tune; mkdir -p "$T"
i=0
while read -r p; do
  s0=$(date +%s%N)
  timeout 40 "$B" --problem "$p" --arch sm_90 --time 10 --db "$T/db$i.toml" --journal "$T/j$i.jsonl" \
    > "$T/log$i.txt" 2>&1
  say "p$i rc=$? wall $(( ($(date +%s%N) - s0) / 1000000 )) ms: $(grep -h '^summary' "$T/log$i.txt" | cut -c1-200) | $p"
  i=$((i + 1))
done <<'P'
convbfp16 -F 2 -n 16 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
convbfp16 -F 2 -n 16 -c 192 -H 18 -W 18 -k 192 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 --layout NHWC
convbfp16 -F 2 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
convbfp16 -F 2 -n 32 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 --layout NHWC
P
say "== done $(el)"
