#!/usr/bin/env bash
# A/B(/C/…) of builds on the same configs, same GPU, same call: every entry of a tuned database
# (its own config, verified, then timed by the tuner's protocol) with each build, the builds
# alternating per entry, once in the order given and once reversed (so drift and order cancel).
# Prints, per entry, the first build's time and its ratio to each other build (mean of the two
# orders; > 1: that build is faster), then the geomean per build.
#   Usage: scripts/ab-builds.sh DB FILTER NAME=BIN NAME=BIN [NAME=BIN ...]
#     FILTER: a regex the entry's problem must match ('' for all; '^conv(b?fp16)' for 16-bit)
#   Results: $OUT/ab/ (per-run reports), printed table.
set -uo pipefail
cd "$(dirname "$0")/.."
db=$1 filter=$2; shift 2
names=() bins=()
for nb in "$@"; do names+=("${nb%%=*}"); bins+=("${nb#*=}"); done
OUT=${OUT:-out}
R=$OUT/ab; mkdir -p "$R"
n=$(python3 - "$db" "$filter" "$R" <<'PY'
import re, sys, tomllib
db, flt, r = sys.argv[1:4]
n = 0
for e in tomllib.load(open(db, "rb"))["entry"]:
    if re.search(flt, e["problem"]):
        open(f"{r}/p{n}.txt", "w").write(e["problem"] + "\n")
        open(f"{r}/c{n}.txt", "w").write(e["config"] + "\n")
        n += 1
print(n)
PY
)
arch=$(python3 -c "import sys,tomllib; print(tomllib.load(open(sys.argv[1],'rb'))['header']['arch'])" "$db" 2>/dev/null || echo sm_90)
for ((i = 0; i < n; i++)); do
  "${bins[0]}" space --problem "$(cat "$R/p$i.txt")" --arch "$arch" --pin "$(cat "$R/c$i.txt")" > "$R/s$i.toml" 2>> "$R/errors.txt"
done
order=("${!names[@]}")
reversed=(); for ((k = ${#order[@]} - 1; k >= 0; k--)); do reversed+=("$k"); done
for pass in fwd rev; do
  if [ $pass = fwd ]; then seq_=("${order[@]}"); else seq_=("${reversed[@]}"); fi
  for ((i = 0; i < n; i++)); do
    for k in "${seq_[@]}"; do
      "${bins[$k]}" --problems "$R/p$i.txt" --space "$R/s$i.toml" --strategy exhaustive --db "$R/db-${names[$k]}.toml" \
        --journal "$R/j-${names[$k]}.jsonl" --report "$R/r-${names[$k]}-$i-$pass.json" --quiet >> "$R/log-${names[$k]}.txt" 2>&1 \
        || echo "entry $i ${names[$k]}: exit $?" >> "$R/errors.txt"
    done
  done
done
rm -f "$R"/*.lock
python3 - "$R" "$n" "${names[@]}" <<'PY'
import glob, json, math, statistics, sys
r, n, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
t = {v: {} for v in names}
for v in names:
    for f in glob.glob(f"{r}/r-{v}-*.json"):
        i = int(f.rsplit("-", 2)[-2])
        for x in json.load(open(f)):
            t[v].setdefault(i, []).append(x["time_us"])
g = lambda l: math.exp(sum(map(math.log, l)) / len(l))
base, others = names[0], names[1:]
print(f"per entry: {base} us, then {base}/build (mean of both orders) for " + ", ".join(others))
ratios = {v: [] for v in others}
for i in range(n):
    if not all(i in t[v] for v in names):
        continue
    b = statistics.mean(t[base][i])
    row = [b / statistics.mean(t[v][i]) for v in others]
    for v, x in zip(others, row):
        ratios[v].append(x)
    p = open(f"{r}/p{i}.txt").read().split(" -I")[0]
    print(f"{b:8.2f} " + " ".join(f"{x:6.3f}" for x in row) + f"  {p}")
for v in others:
    if ratios[v]:
        print(f"{v}: geomean {base}/{v} {g(ratios[v]):.4f} over {len(ratios[v])} (min {min(ratios[v]):.3f}, max {max(ratios[v]):.3f})")
PY
