#!/usr/bin/env bash
# Thread-block clusters (cl=2m|2n) on the H200, one run:
#  1. `convtune selfcheck` over a cluster-only space (scripts/session9/cluster-only.toml) on
#     small fwd / bwd-data / bwd-weight problems: each kernel verified on the GPU;
#  2. per problem (seed 003, fwd 3x3 c256 28x28): an exhaustive, fully timed search of a small
#     space (bm 128|256, bn 128|256, wm 64|128, wn 128, st 4, va 4, the shipped rs, ld=ws, pk=1,
#     cl 1|2m|2n: the shipped config is one of them), every
#     candidate verified first, then timed;
#  3. cuDNN on the same problems (scripts/compare-cudnn.py), same run.
# Usage: scripts/session9/cluster-device.sh BIN OUT     Output: OUT/table.txt, journals, logs.
set -u
B=${1:?binary}; OUT=${2:?out dir}; mkdir -p "$OUT"; D=$(dirname "$0")
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
timeout "${SELF_T:-30}" "$B" selfcheck --space "$D/cluster-only.toml" --problems "$D/cluster-selfcheck.txt" \
  --configs "${SELF_N:-3}" > "$OUT/selfcheck.txt" 2>&1; echo "selfcheck rc=$? $(el)"; tail -6 "$OUT/selfcheck.txt"
i=0
while IFS='|' read -r prob rs; do
  [ -z "$prob" ] && continue
  i=$((i + 1))
  echo "$prob" > "$OUT/p$i.txt"
  cat > "$OUT/s$i.toml" <<TOML
name = "cluster-ab"
vendor = "nvidia"
[params]
block_m = [128, 256]
block_n = [128, 256]
block_k = [64]
warp_m = [64, 128]
warp_n = [128]
stages = [4]
vec_a = [4]
vec_b = [8]
vec_c = [8]
lds = ["swz"]
split_k = [1]
raster = [$rs]
mma = ["wg"]
red = ["atomic"]
ld = ["ws"]
persistent = ["1"]
xf = ["none"]
cluster = ["1", "2m", "2n"]
[constraints]
max_threads = 384
min_warps = 1
max_warps = 12
TOML
  timeout "${T_PROB:-40}" "$B" --time "$((${T_PROB:-40} - 8))" --problems "$OUT/p$i.txt" --arch sm_90 \
    --space "$OUT/s$i.toml" --strategy exhaustive --full-timing --db "$OUT/db$i.toml" \
    --journal "$OUT/j$i.jsonl" --report "$OUT/r.json" --quiet > "$OUT/log$i.txt" 2>&1
  echo "problem $i: rc=$? $(el)"
  rm -f "$OUT"/*.lock
done <<'LIST'
convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC|4
convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|1
LIST
timeout 40 python3 scripts/compare-cudnn.py --convtune "$OUT/r.json" --json "$OUT/cudnn.json" \
  > "$OUT/compare.txt" 2>&1; echo "cudnn rc=$? $(el)"
python3 - "$OUT" "$i" <<'PY' | tee "$OUT/table.txt"
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
try:
    cud = [r["cudnn_us"] for r in json.load(open(f"{out}/cudnn.json"))["rows"]]
except Exception:
    cud = []
for i in range(1, n + 1):
    p = open(f"{out}/p{i}.txt").read().strip()
    print(f"== {p} | cuDNN {cud[i - 1]:.1f} us" if len(cud) >= i else f"== {p} | cuDNN -")
    try:
        lines = open(f"{out}/j{i}.jsonl").read().splitlines()
    except OSError:
        print("  no journal"); continue
    for line in lines:
        e = json.loads(line); c = e.get("config", "")
        if c.startswith("@"):
            continue
        us = e.get("time_us") or e.get("median_us")
        what = f"{us:.1f} us" if isinstance(us, (int, float)) else str(e.get("status") or e.get("outcome") or e)[:120]
        print(f"  {what:>10} | {c}")
PY
tail -4 "$OUT/compare.txt"
