#!/usr/bin/env bash
# Thread-block clusters on the H200 after session 10's fix (the consumers' remote mbarrier
# arrivals at CTA scope, no cluster-scope fence before each): one run, from the repo root.
#  1. residency: the driver's cuOccupancyMaxActiveClusters for the cluster kernels against
#     the clusters their persistent grid launches (cluster-occupancy.py; suspect 1);
#  2. per problem (seed 003, fwd 1x1 c1024 14x14, fwd 3x3 c256 28x28): an exhaustive, fully
#     timed search of cluster-ab-NAME.toml (the same tiles at cl 1|2m|2n), every candidate
#     verified first, with NEW and then, for the first two, with BASE (the session's starting
#     build, .release.cluster arrivals): same configs, same run; cl=1 is a control (its PTX is
#     byte-identical in both builds);
#  3. cuDNN on the same problems (scripts/compare-cudnn.py), same run;
#  4. optional (NCU=1): Nsight Compute warp stalls of one cl=1 / cl=2m pair on seed 003.
# Usage: scripts/session10/cluster-ab.sh NEW_BIN BASE_BIN|- OUT
# Device time ~T_NEW*3 + T_BASE*2 + 35 s (defaults 22 and 18: ~140 s).
set -u
NEW=${1:?new binary}; BASE=${2:?base binary or -}; OUT=${3:?out dir}; mkdir -p "$OUT/occ"
D=$(dirname "$0"); T_NEW=${T_NEW:-22}; T_BASE=${T_BASE:-18}
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
PROBLEMS="seed003|convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC
f14|convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC
f3x3|convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
# 1. residency of every cluster kernel of the spaces (and one cl=1 twin each).
i=0
while IFS='|' read -r n p; do
  "$NEW" space --arch sm_90 --problem "$p" --space "$D/cluster-ab-$n.toml" --list 2>/dev/null |
  while read -r c; do
    i=$((i + 1))
    "$NEW" compile --arch sm_90 --no-system-db --problem "$p" --config "$c" \
      -o "$OUT/occ/$n-$i.ptx" --manifest "$OUT/occ/$n-$i.json" > /dev/null 2>&1
  done
done <<< "$PROBLEMS"
timeout 30 python3 "$D/cluster-occupancy.py" "$OUT"/occ/*.json > "$OUT/occupancy.txt" 2>&1
echo "occupancy rc=$? $(el)"; rm -f "$OUT"/occ/*.ptx
# 2. timing, NEW then BASE.
run() { # bin tag name problem seconds
  echo "$4" > "$OUT/$3.txt"
  timeout "$5" "$1" --time "$(( $5 - 6 ))" --problems "$OUT/$3.txt" --arch sm_90 \
    --space "$D/cluster-ab-$3.toml" --strategy exhaustive --full-timing --db "$OUT/db-$2.toml" \
    --journal "$OUT/j-$2-$3.jsonl" --report "$OUT/r-$2.json" --quiet > "$OUT/log-$2-$3.txt" 2>&1
  echo "$2 $3: rc=$? $(el)"; rm -f "$OUT"/*.lock
}
while IFS='|' read -r n p; do run "$NEW" new "$n" "$p" "$T_NEW"; done <<< "$PROBLEMS"
if [ "$BASE" != "-" ]; then
  while IFS='|' read -r n p; do
    [ "$n" = f3x3 ] || run "$BASE" base "$n" "$p" "$T_BASE"
  done <<< "$PROBLEMS"
fi
# 3. cuDNN.
cut -d'|' -f2 <<< "$PROBLEMS" > "$OUT/problems.txt"
timeout 30 python3 scripts/compare-cudnn.py "$OUT/problems.txt" --json "$OUT/cudnn.json" \
  > "$OUT/cudnn.txt" 2>&1; echo "cudnn rc=$? $(el)"
# 4. Nsight Compute (optional).
if [ "${NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  p=$(head -1 "$OUT/problems.txt")
  for c in "v4:bm=256,bn=128,bk=64,wm=128,wn=128,st=4,va=4,vb=8,vc=8,lds=swz,sk=1,rs=4,mma=wg,red=atomic,ld=ws,pk=1,xf=none" \
           "v5:bm=256,bn=128,bk=64,wm=128,wn=128,st=4,va=4,vb=8,vc=8,lds=swz,sk=1,rs=4,mma=wg,red=atomic,ld=ws,pk=1,xf=none,cl=2m"; do
    tag=${c##*xf=none}; tag=${tag:-,cl=1}; tag=${tag#,}
    "$NEW" space --problem "$p" --arch sm_90 --pin "$c" > "$OUT/pin.toml" 2>/dev/null || continue
    timeout 60 ncu --target-processes all --clock-control none -k "regex:convtune_gemm" -c 1 \
      --section LaunchStats --section WarpStateStats --section SchedulerStats --print-details all \
      "$NEW" --problems "$OUT/seed003.txt" --space "$OUT/pin.toml" --strategy exhaustive \
      --db "$OUT/db-ncu.toml" --journal "$OUT/j-ncu-$tag.jsonl" --quiet > "$OUT/ncu-$tag.txt" 2>&1
    echo "ncu $tag rc=$? $(el)"; rm -f "$OUT"/*.lock
  done
fi
# The table: per problem, cuDNN, then each config's time with NEW and BASE.
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import json, sys
out = sys.argv[1]
try:
    cud = {r["problem"]: r["cudnn_us"] for r in json.load(open(f"{out}/cudnn.json"))["rows"]}
except Exception:
    cud = {}
def journal(tag, n):
    t = {}
    try:
        for line in open(f"{out}/j-{tag}-{n}.jsonl"):
            e = json.loads(line); c = e.get("config", "")
            if c and not c.startswith("@"):
                us = e.get("time_us")
                t[c] = f"{us:.2f}" if isinstance(us, (int, float)) else str(e.get("outcome") or "?")[:24]
    except OSError:
        pass
    return t
for n in ["seed003", "f14", "f3x3"]:
    try:
        p = open(f"{out}/{n}.txt").read().strip()
    except OSError:
        continue
    c = next((v for k, v in cud.items() if k.strip() == p), None)
    print(f"== {n}: {p} | cuDNN {c:.2f} us" if isinstance(c, (int, float)) else f"== {n}: {p} | cuDNN -")
    new, base = journal("new", n), journal("base", n)
    for cfg in sorted(set(new) | set(base), key=lambda s: (s.split("xf=none")[0], s)):
        short = cfg.split(":", 1)[1].replace(",lds=swz,sk=1", "").replace(",mma=wg,red=atomic,ld=ws,pk=1,xf=none", "")
        print(f"  new {new.get(cfg, '-'):>10}  base {base.get(cfg, '-'):>10}  {short}")
PY
grep -v "^$" "$OUT/occupancy.txt" | head -40
