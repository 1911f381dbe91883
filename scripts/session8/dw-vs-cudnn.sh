#!/usr/bin/env bash
# Session 8, issue 14 item 3: the direct depthwise kernel (mma=dw) on the H200, cuDNN in the
# same run. Each problem is tuned over a dw-only space (scripts/session8/dw-space.toml; every
# candidate is verified against the reference kernel before it is timed), the shipped GEMM
# config of the shipped depthwise problem is timed beside it, then cuDNN on the same problems
# (scripts/compare-cudnn.py).
#   Usage: scripts/session8/dw-vs-cudnn.sh BIN OUT [SECS_PER_PROBLEM] [SPACE]
#   Output: OUT/report.json (winners), OUT/journal.jsonl (every candidate), OUT/compare.txt,
#   OUT/summary.txt (verified/failed per problem, best config and registers).
set -u
B=${1:?binary}; OUT=${2:?out dir}; T=${3:-12}
D=$(cd "$(dirname "$0")" && pwd)
S=${4:-$D/dw-space.toml}
REPO=$(cd "$D/../.." && pwd)
W=$(mktemp -d)
mkdir -p "$OUT"
cat > "$W/problems.txt" <<'LIST'
convfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -g 256 -F 1 --layout NHWC
convbfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -g 256 -F 1 --layout NHWC
convfp16 -n 32 -c 512 -H 14 -W 14 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 512 -F 1 --layout NHWC
convbfp16 -n 32 -c 512 -H 14 -W 14 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 512 -F 1 --layout NHWC
convfp16 -n 32 -c 128 -H 56 -W 56 -k 128 -y 5 -x 5 -p 2 -q 2 -g 128 -F 1 --layout NHWC
convbfp16 -n 32 -c 128 -H 56 -W 56 -k 128 -y 5 -x 5 -p 2 -q 2 -g 128 -F 1 --layout NHWC
convfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -g 256 -F 2 --layout NHWC
LIST
"$B" --problems "$W/problems.txt" --arch sm_90 --space "$S" --time "$T" \
  --db "$W/db.toml" --journal "$OUT/journal.jsonl" --report "$OUT/report.json" --quiet \
  > "$OUT/tune.log" 2>&1; echo "dw tuning: rc=$?"
# The shipped GEMM config of the shipped problem (30.5 µs, session 7), timed in this run.
P0=$(head -1 "$W/problems.txt")
"$B" space --problem "$P0" --arch sm_90 \
  --pin "v1:bm=16,bn=256,bk=32,wm=16,wn=32,st=4,va=1,vb=8,vc=8,lds=swz,sk=1,rs=1" > "$W/gemm.toml" \
  && "$B" --problem "$P0" --arch sm_90 --space "$W/gemm.toml" --strategy exhaustive \
    --db "$W/dbg.toml" --journal "$W/jg.jsonl" --report "$OUT/gemm.json" --quiet >> "$OUT/tune.log" 2>&1
echo "gemm baseline: rc=$?"
timeout 120 python3 "$REPO/scripts/compare-cudnn.py" --convtune "$OUT/report.json" \
  --json "$OUT/cudnn.json" > "$OUT/compare.txt" 2>&1
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, sys, collections
out = sys.argv[1]
per = collections.defaultdict(collections.Counter)
best = {}
for line in open(f"{out}/journal.jsonl"):
    e = json.loads(line)
    c = e.get("config", "")
    if c.startswith("@"):
        continue
    o = e.get("outcome")
    kind = next(iter(o)) if isinstance(o, dict) else str(o)
    p = e.get("problem_key", "")
    per[p][kind] += 1
    if kind == "Ok":
        t = o["Ok"]
        if p not in best or t["median_us"] < best[p][0]:
            regs = [r.get("registers") for r in t.get("resources", [])]
            best[p] = (t["median_us"], c, regs, t.get("rel_err"))
for p, n in per.items():
    b = best.get(p)
    print(dict(n), p)
    if b:
        print(f"   best {b[0]:.2f} us regs {b[2]} rel_err {b[3]:.1e} {b[1]}")
try:
    g = json.load(open(f"{out}/gemm.json"))
    for x in g:
        print(f"GEMM (shipped config) {x['time_us']:.2f} us  {x['problem']}")
except Exception as ex:
    print("no GEMM baseline:", ex)
PY
echo "--- cuDNN vs convtune (same run) ---"
tail -n 12 "$OUT/compare.txt"
rm -rf "$W"
