#!/usr/bin/env bash
# Session 17, device call 1 (H200, < 590 s): the staged epilogue through stmatrix and the
# tensor-map prefetch, against the session's base build, and where the shipped database stands.
#  1. A/B on the shipped configs: scripts/db-vs-cudnn.sh with the base build (A) and this
#     build (B), alternating per entry; cuDNN (graph replays) and the bf16 matmul rate in the
#     same run, against this build;
#  2. scripts/same-harness.py with this build's wheel: both sides cold and graph, every output
#     checked against PyTorch's float64 result first;
#  3. the two short-K fwd 1x1 layers on cuDNN's tile shape (128x192, with and without a 2-block
#     cluster, both warpgroup splits: scripts/session17/cuDNN-shapes.toml), every config timed;
#  4. the weakest forward / stride-1 backward-data layers re-tuned with this build (--time 10,
#     default strategy; each search measures the shipped winner first).
#   Usage (repo root, on the device): [LIMIT=590] bash scripts/session17/call1.sh
#   Results: $OUT/summary.txt, $OUT/dbrun.tgz, $OUT/same.json, $OUT/retune/.
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-590} - $(date +%s) + t0 )); }
say "== 1 A/B base vs this build on the shipped configs, cuDNN $(el)"
OUT=$OUT timeout 200 bash scripts/db-vs-cudnn.sh tuned-db/sm_90.toml "$PWD/target/base/convtune" "$B" \
  > "$OUT/dbrun.log" 2>&1
say "rc=$? $(el)"
cut -c1-200 "$OUT/dbrun/ab.txt" | tee -a "$S"
python3 - "$OUT/dbrun/ab.txt" <<'PY' | tee -a "$S"
import math, sys
r = [float(l.split()[3]) for l in open(sys.argv[1]) if "A/B" in l]
if r:
    print(f"A/B (base time / new time): geomean {math.exp(sum(map(math.log, r)) / len(r)):.4f} over {len(r)}, min {min(r):.3f}, max {max(r):.3f}")
PY
tail -45 "$OUT/dbrun.log" | cut -c1-200 | tee -a "$S"
tar czf "$OUT/dbrun.tgz" -C "$OUT" dbrun 2>/dev/null && rm -rf "$OUT/dbrun"
say "== 2 same harness, this build's wheel $(el)"
same_harness 220 12
say "== 3 cuDNN's tile shapes on the short-K 1x1 layers $(el)"
C=$OUT/shapes; mkdir -p "$C"
printf '%s\n' "convbfp16 -F 1 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 --layout NHWC" \
  "convbfp16 -F 1 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 --layout NHWC" > "$C/problems.txt"
timeout 120 "$B" --problems "$C/problems.txt" --space scripts/session17/cuDNN-shapes.toml --strategy exhaustive \
  --full-timing --db "$C/db.toml" --journal "$C/j.jsonl" --report "$C/report.json" --quiet > "$C/tune.log" 2>&1
say "rc=$? $(el)"; grep "^summary" "$C/tune.log" | cut -c1-220 | tee -a "$S"
python3 - "$C/j.jsonl" <<'PY' | tee -a "$S"
import json, sys
rows = []
for l in open(sys.argv[1]):
    try:
        r = json.loads(l)
    except ValueError:
        continue
    t = r.get("time_us")
    if t:
        rows.append((r.get("problem_key", "")[:40], float(t), r.get("config", "")))
    else:
        rows.append((r.get("problem_key", "")[:40], float("inf"), r.get("config", "") + " " + str(r.get("outcome"))[:80]))
for p, t, c in sorted(rows)[:60]:
    print(f"{t:8.2f}  {p}  {c}")
PY
rm -f "$C"/*.lock
R=$OUT/retune; mkdir -p "$R"
cat > "$R/problems.txt" <<'P'
convbfp16 -F 1 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 1 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 1 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 1 -n 64 -c 128 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 1 -n 64 -c 64 -H 56 -W 56 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 2 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 2 -n 64 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
convbfp16 -F 2 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC
P
total=$(( $(left) - 25 ))
say "== 4 re-tune $(wc -l < "$R/problems.txt") weakest layers, --time 10, --time-total $total $(el)"
if [ "$total" -gt 40 ]; then
  tune_list "$R" "$total"
fi
say "== done $(el)"
