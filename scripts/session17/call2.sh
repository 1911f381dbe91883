#!/usr/bin/env bash
# Session 17, device call 2 (H200, < 560 s): which of call 1's two kernel changes cost time.
# Call 1's A/B put the build with both (stmatrix epilogue + tensor-map prefetch) 2.6% behind the
# base on the kernels that got both. Four builds — base, stmatrix only (stm), prefetch only
# (pf), both (new) — each time every shipped 16-bit entry's own config, the builds alternating
# per entry, in forward then reverse order (so drift cancels); then Nsight Compute on the
# entry that lost most (bwd-data 1x1 c1024 ping-pong), base and new.
#   Usage (repo root, on the device): bash scripts/session17/call2.sh
#   Results: $OUT/summary.txt, $OUT/ab.txt, $OUT/ncu.txt
set -uo pipefail
. scripts/session11/lib.sh
for v in stm pf; do xz -dc .carry/convtune-$v.xz > target/base/convtune-$v && chmod +x target/base/convtune-$v; done
declare -A BIN=([base]=$PWD/target/base/convtune [stm]=$PWD/target/base/convtune-stm [pf]=$PWD/target/base/convtune-pf [new]=$B)
R=$OUT/ab; mkdir -p "$R"
python3 - "$R" <<'PY'
import sys, tomllib
n = 0
for e in tomllib.load(open("tuned-db/sm_90.toml", "rb"))["entry"]:
    if e["problem"].startswith(("convbfp16", "convfp16")):
        open(f"{sys.argv[1]}/p{n}.txt", "w").write(e["problem"] + "\n")
        open(f"{sys.argv[1]}/c{n}.txt", "w").write(e["config"] + "\n")
        n += 1
print(n, file=open(f"{sys.argv[1]}/n", "w"))
PY
n=$(cat "$R/n")
for ((i = 0; i < n; i++)); do
  "$B" space --problem "$(cat "$R/p$i.txt")" --arch sm_90 --pin "$(cat "$R/c$i.txt")" > "$R/s$i.toml" 2>> "$R/errors.txt"
done
say "== 1 $n entries x 4 builds x 2 orders $(el)"
for order in "base stm pf new" "new pf stm base"; do
  for ((i = 0; i < n; i++)); do
    for v in $order; do
      "${BIN[$v]}" --problems "$R/p$i.txt" --space "$R/s$i.toml" --strategy exhaustive --db "$R/db-$v.toml" \
        --journal "$R/j-$v.jsonl" --report "$R/r-$v-$i-${order%% *}.json" --quiet >> "$R/log-$v.txt" 2>&1 \
        || echo "entry $i $v: exit $?" >> "$R/errors.txt"
    done
  done
  say "order '$order' done $(el)"
done
python3 - "$R" "$n" <<'PY' | tee "$OUT/ab.txt" | tee -a "$S"
import json, math, sys, glob, statistics
r, n = sys.argv[1], int(sys.argv[2])
vs = ["base", "stm", "pf", "new"]
t = {v: {} for v in vs}
for v in vs:
    for f in glob.glob(f"{r}/r-{v}-*.json"):
        i = int(f.split("-")[-2])
        for x in json.load(open(f)):
            t[v].setdefault(i, []).append(x["time_us"])
g = lambda l: math.exp(sum(map(math.log, l)) / len(l))
print("per entry: base us, then base/variant (mean of the two orders) for stm, pf, new")
ratios = {v: [] for v in vs[1:]}
for i in range(n):
    if not all(i in t[v] for v in vs):
        continue
    b = statistics.mean(t["base"][i])
    row = [b / statistics.mean(t[v][i]) for v in vs[1:]]
    for v, x in zip(vs[1:], row):
        ratios[v].append(x)
    p = open(f"{r}/p{i}.txt").read().split(" -I")[0]
    c = open(f"{r}/c{i}.txt").read().strip()
    print(f"{b:8.2f} " + " ".join(f"{x:6.3f}" for x in row) + f"  {p}  {c[3:60]}")
for v in vs[1:]:
    print(f"{v}: geomean base/{v} {g(ratios[v]):.4f} over {len(ratios[v])} (min {min(ratios[v]):.3f}, max {max(ratios[v]):.3f})")
PY
say "== 2 ncu bwd-data 1x1 c1024 ping-pong, base and new $(el)"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section LaunchStats --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables"
KEEP="Duration|Registers Per|Executed Instructions |Issue Slots Busy|Warp Cycles Per Issued|Stall [A-Z]|Bank Conflicts|Tensor|Shared"
i=$(grep -l -- "-F 2 -n 64 -c 1024" "$R"/p*.txt | head -1 | sed 's/.*p\([0-9]*\).txt/\1/')
for v in base new; do
  [ -n "$i" ] && [ -x "$NCU" ] || break
  timeout 70 "$NCU" --target-processes all --clock-control none -k "regex:convtune_gemm" -c 1 $SECTIONS --print-details all \
    "${BIN[$v]}" --problems "$R/p$i.txt" --space "$R/s$i.toml" --strategy exhaustive --full-timing \
    --db "$R/ncu-$v.toml" --journal "$R/ncu-$v.jsonl" --quiet > "$R/ncu-$v.txt" 2>&1
  say "-- $v rc=$? $(el)"; grep -E "$KEEP" "$R/ncu-$v.txt" | cut -c1-150 | head -40 | tee -a "$OUT/ncu.txt" | tee -a "$S"
done
rm -f "$R"/*.lock
say "== done $(el)"
