#!/usr/bin/env bash
# Prepared in session 34 for the next device call (an H200, < 590 s; carry .carry with this
# build's convtune.xz, and .whl = this build's wheel): stream-K's `cut=aligned` knob (v7),
# which session 34 built after its last device call (its first form, the default then, was
# GPU-checked and timed in session 34's call 1; this one only on the CPU emulator).
#  1. `convtune selfcheck --red stream`, built-in and Hopper spaces (both list cut=aligned).
#  2. The bwd-weight 3x3 c256 (issue 13): the shipped winner and four stream-K shapes with each
#     cut (scripts/session34/bw3/tries-cut.txt), `--full-timing`, twice.
#  3. The 15 shipped red=stream entries, each config with cut=tile and cut=aligned
#     (scripts/session34/aligned-tries.py; legality refuses aligned on 4), `--full-timing`,
#     in the file's order and reversed.
#  4. The bw3 winner in the same harness as cuDNN (cold and graph) with the bf16 matmul rate.
#  5. Re-tune (`--time 10`, what is left in total) the shipped non-depthwise bwd-weight and
#     red=stream entries of at least 25 us, slowest first; cuDNN on them. Merge afterwards with
#     `convtune db merge --output tuned-db/sm_90.toml tuned-db/sm_90.toml <db>`.
#   Usage (repo root, on the device): bash scripts/session34/next.sh
#   Results: $OUT/summary.txt, $OUT/selfcheck-*.log, $OUT/cut.tgz, $OUT/same-bw3.*, $OUT/retune.tgz
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck $(el)"
selfcheck_red stream
W=/tmp/cut; mkdir -p $W
say "== 2 bw3, both cuts $(el)"
mkdir -p $W/bw3
tries_twice scripts/session34/bw3/problems.txt scripts/session34/bw3/tries-cut.txt $W/bw3 80
say "== 3 shipped stream-K entries, both cuts $(el)"
python3 scripts/session34/aligned-tries.py tuned-db/sm_90.toml > $W/tries.txt
tac $W/tries.txt > $W/tries-rev.txt
cut -d'|' -f1 $W/tries.txt | sed 's/ *$//' | uniq > $W/problems.txt
for order in tries tries-rev; do
  timeout 150 "$B" --problems $W/problems.txt --arch sm_90 --try $W/$order.txt --budget 3 \
    --time 20 --full-timing --db $W/$order.toml --journal $W/$order.jsonl > $W/$order.log 2>&1
  say "$order rc=$? $(el)"
done
python3 - $W/tries.jsonl $W/tries-rev.jsonl <<'PY' | tee -a "$S"
import json, math, re, sys
# Pairs: the same config with each cut (the config used before, timed too, counts only if
# its twin was timed).
def twin(c):
    c = re.sub(r"^v\d+:", "", c)
    c = re.sub(r",cut=\w+", "", c)
    return re.sub(r",(pk=0|xf=none|cl=1|ep=reg)\b", "", c)
t = {}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        c = r.get("config", "")
        if r.get("time_us") and "red=stream" in c:
            cut = "aligned" if "cut=aligned" in c else "tile"
            t.setdefault((r["problem_key"], twin(c)), {}).setdefault(cut, []).append(r["time_us"])
ratios = []
for (p, _), d in t.items():
    if "aligned" in d and "tile" in d:
        a, b = min(d["aligned"]), min(d["tile"])
        ratios.append(b / a)
        print(f"{b:8.2f} {a:8.2f} {b / a:6.3f}  {p[:90]}")
if ratios:
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"tile/aligned geomean {g:.3f} over {len(ratios)} pairs (min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
tar czf "$OUT/cut.tgz" -C /tmp cut
say "== 4 same harness, bw3 $(el)"
cp $W/bw3/best.toml /tmp/bw3.toml
same_harness 70 8 /tmp/bw3.toml
say "== 5 retune $(el)"
R=/tmp/retune; mkdir -p $R
python3 - > $R/problems.txt <<'PY'
import re, tomllib
es = []
for e in tomllib.load(open("tuned-db/sm_90.toml", "rb"))["entry"]:
    p, c = e["problem"], e["config"]
    dw = re.search(r"-c (\d+) .* -g \1 -I", p)
    if not dw and ("-F 4" in p or "red=stream" in c) and e["time_us"] >= 25:
        es.append((e["time_us"], p))
for _, p in sorted(es, reverse=True):
    print(p)
PY
left=$(( ${CALL_S:-545} - $(date +%s) + t0 ))
say "$(wc -l < $R/problems.txt) problems, ${left} s"
tune_list $R $left
say "-- cuDNN $(el)"
timeout 35 python3 scripts/compare-cudnn.py $R/problems.txt --convtune $R/report.json --json $R/cudnn.json > $R/cudnn.log 2>&1
say "rc=$? $(el)"; grep -v Warning $R/cudnn.log | tail -3 | cut -c1-200 | tee -a "$S"
tar czf "$OUT/retune.tgz" -C /tmp retune
say "== done $(el)"
