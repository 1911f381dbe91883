#!/usr/bin/env bash
# Session 9, issue 14: strided backward data in ONE launch on the warp-specialised persistent
# walk (ld=ws|wspp, pk=1) on the H200, one device call (≤ 150 s):
#  1. `selfcheck` of a few of the new one-launch kernels on the three problems (GPU-verified
#     against the reference kernel, a hang recorded as a timeout);
#  2. a guided tune over scripts/session9/phws-space.toml (ld ws|wspp, pk=1, bm 128|256,
#     bn 64|128|256, wm 64|128, st 3-5) of the three problems, every candidate verified first;
#  3. cuDNN on the same problems (scripts/compare-cudnn.py), same run;
#  4. the shipped configs (v2 cp.async, one launch) timed with the session's base build (A/B).
# Usage (device, repo root): bash .carry/phws/phws-device.sh NEW_BIN BASE_BIN WORK_DIR
# (the work dir holds many files: tar it into the device $OUT afterwards).
set -u
N=${1:?new binary}; B=${2:?base binary}; OUT=${3:?out dir}; mkdir -p "$OUT"
D=$(cd "$(dirname "$0")" && pwd); P=$D/phws-problems.txt
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== 1. selfcheck $(el)"
timeout "${SELF_T:-15}" "$N" selfcheck --space "$D/phws-space.toml" --problems "$P" --configs 2 \
  > "$OUT/selfcheck.txt" 2>&1; echo "selfcheck rc=$?"; tail -5 "$OUT/selfcheck.txt" | cut -c1-220
echo "== 2. tune $(el)"
timeout "${TUNE_T:-66}" "$N" --problems "$P" --arch sm_90 --space "$D/phws-space.toml" \
  --time "${T:-20}" --db "$OUT/db-new.toml" --journal "$OUT/j-new.jsonl" --report "$OUT/r-new.json" \
  --quiet > "$OUT/tune.log" 2>&1; echo "tune rc=$?"; grep -i "^summary\|error" "$OUT/tune.log" | cut -c1-220 | head -6
echo "== 3. cuDNN $(el)"
timeout 28 python3 scripts/compare-cudnn.py "$P" --convtune "$OUT/r-new.json" --json "$OUT/cudnn.json" \
  > "$OUT/compare.txt" 2>&1; echo "compare rc=$?"
echo "== 4. shipped (base build) $(el)"
i=0
while IFS='|' read -r prob shipped; do
  i=$((i + 1)); echo "$prob" > "$OUT/p$i.txt"
  "$B" space --problem "$prob" --arch sm_90 --pin "$shipped" > "$OUT/ship$i.toml" 2>>"$OUT/err.txt"
  timeout 11 "$B" --problems "$OUT/p$i.txt" --arch sm_90 --space "$OUT/ship$i.toml" --strategy exhaustive \
    --time 5 --db "$OUT/db-ship$i.toml" --journal "$OUT/j-ship$i.jsonl" --report "$OUT/r-ship.json" \
    --quiet > "$OUT/log-ship$i.txt" 2>&1; echo "shipped $i rc=$?"
done <<'LIST'
convfp16 -n 32 -c 96 -H 56 -W 56 -k 128 -y 5 -x 5 -p 2 -q 2 -u 2 -v 2 -F 2 --layout NHWC|v2:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg
convbfp16 -n 64 -c 128 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC|v2:bm=128,bn=128,bk=64,wm=128,wn=128,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg
convbfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC|v2:bm=128,bn=128,bk=64,wm=128,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg
LIST
rm -f "$OUT"/*.lock
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import json, os, sys, collections
out = sys.argv[1]
def load(f):
    try:
        return json.load(open(f))
    except Exception:
        return []
cud = load(f"{out}/cudnn.json")
rows = cud.get("rows", []) if isinstance(cud, dict) else []
tried, ok = collections.Counter(), collections.Counter()
if os.path.exists(f"{out}/j-new.jsonl"):
    for line in open(f"{out}/j-new.jsonl"):
        e = json.loads(line)
        if e.get("config", "").startswith("@"):
            continue
        p = e.get("problem_key", ""); tried[p] += 1
        o = e.get("outcome")
        ok[p] += isinstance(o, dict) and "Ok" in o
for r in load(f"{out}/r-new.json"):
    print(f"new  {r['time_us']:8.2f} us  {r['config']}  {r['problem']}")
for r in load(f"{out}/r-ship.json"):
    print(f"ship {r['time_us']:8.2f} us  {r['config']}  {r['problem']}")
for r in rows:
    print(f"cudnn {r.get('cudnn_us')} us  ours {r.get('convtune_us')}  cuDNN/ours {r.get('ratio')}  {r.get('line', r.get('problem'))}")
for p in tried:
    print(f"journal {ok[p]}/{tried[p]} timed  {p}")
PY
tail -8 "$OUT/compare.txt"
echo "== done $(el)"
