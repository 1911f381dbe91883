#!/usr/bin/env bash
# Stream-K on the warp-specialised persistent path (ld=ws, pk=1, red=stream; DP + SK), issue 14
# item 1, on the H200 in one run: (1) selfcheck of ws stream-K kernels sampled from SPACE on the
# issue's four problems; (2) the shipped configs of tuned-db/sm_90.toml and stream-K variants of
# them, each pinned (verified, then timed); (3) a guided search over SPACE (--time T per
# problem); (4) cuDNN on the same problems in the same run. Prints a table last.
#   Usage: scripts/session8/sk-device.sh BIN SPACE OUT        (T=10 by default)
# (Run order: pinned A/B, cuDNN, search, table, then the selfcheck: what matters most first.)
set -u
B=${1:?binary}; SP=${2:?space}; OUT=${3:?out dir}; T=${T:-10}
W=${TMPDIR:-/tmp}/sk-device; mkdir -p "$W" "$OUT"
P1="convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC"
P2="convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC"
P3="convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
P4="convfp16 -n 128 -c 512 -H 7 -W 7 -k 512 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
printf '%s\n' "$P1" "$P2" "$P3" "$P4" > "$W/problems.txt"
i=0
while IFS='|' read -r tag p c; do
  i=$((i + 1)); echo "$p" > "$W/p$i.txt"
  "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$W/s$i.toml" 2> "$W/pin$i.err" \
    || { echo "pin $i ($tag): $(tail -1 "$W/pin$i.err")"; echo "$tag|unpinned|$c|$p" >> "$OUT/pinned.txt"; continue; }
  timeout 15 "$B" --problems "$W/p$i.txt" --arch sm_90 --space "$W/s$i.toml" --strategy exhaustive \
    --db "$W/db$i.toml" --journal "$W/j$i.jsonl" --report "$W/r$i.json" --quiet > "$W/log$i.txt" 2>&1
  rc=$?; echo "pin $i ($tag) rc=$rc"; [ $rc -ne 0 ] && tail -3 "$W/log$i.txt"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f'{sys.argv[2]}|{r[0][\"time_us\"]:.2f}|{r[0][\"config\"]}|{r[0][\"problem\"]}')" \
    "$W/r$i.json" "$tag" >> "$OUT/pinned.txt" 2>/dev/null || echo "$tag|failed|$c|$p" >> "$OUT/pinned.txt"
  rm -f "$W"/*.lock
done <<LIST
shipped|$P1|v3:bm=64,bn=128,bk=64,wm=64,wn=64,st=6,va=4,vb=2,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=ws
stream|$P1|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=4,vb=2,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=stream,ld=ws,pk=1,xf=none
shipped|$P2|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=ws,pk=1,xf=none
stream|$P2|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=8,mma=wg,red=stream,ld=ws,pk=1,xf=none
shipped|$P3|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=4,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
stream|$P3|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=4,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=stream,ld=ws,pk=1,xf=none
shipped|$P4|v3:bm=64,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=2,vc=8,lds=swz,sk=1,rs=4,mma=wg,red=atomic,ld=tma
stream|$P4|v4:bm=64,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=2,vc=8,lds=swz,sk=1,rs=4,mma=wg,red=stream,ld=ws,pk=1,xf=none
LIST
timeout 35 python3 scripts/compare-cudnn.py "$W/problems.txt" --json "$OUT/cudnn.json" > "$OUT/cudnn.txt" 2>&1
echo "cudnn rc=$?"
timeout 60 "$B" --problems "$W/problems.txt" --arch sm_90 --space "$SP" --time "$T" --db "$W/dbs.toml" \
  --journal "$OUT/search-journal.jsonl" --report "$OUT/search.json" --quiet > "$W/search.log" 2>&1
echo "search rc=$?"; tail -6 "$W/search.log"
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import json, sys
out = sys.argv[1]
pinned = [l.rstrip("\n").split("|") for l in open(f"{out}/pinned.txt")]
try:
    search = json.load(open(f"{out}/search.json"))
except Exception:
    search = []
try:
    cud = json.load(open(f"{out}/cudnn.json"))["rows"]
except Exception:
    cud = []
f = lambda x: f"{x:8.2f}" if isinstance(x, float) else f"{x:>8}"
print("µs: shipped config | stream-K on the shipped tile | best of the ws stream-K search | cuDNN")
for n in range(4):
    rows = pinned[2 * n: 2 * n + 2]
    row = {r[0]: r for r in rows}
    s = search[n] if n < len(search) else None
    c = cud[n]["cudnn_us"] if n < len(cud) else None
    got = lambda t: float(row[t][1]) if t in row and row[t][1].replace(".", "").isdigit() else "-"
    ours = [x for x in (got("stream"), s["time_us"] if s else "-") if isinstance(x, float)]
    print(f"P{n + 1} {rows[0][3] if rows else '?'}")
    print(f"   shipped {f(got('shipped'))}  stream {f(got('stream'))}  search {f(s['time_us']) if s else '       -'}"
          f"  cuDNN {f(c) if c else '-'}  cuDNN/best-stream {f(c / min(ours)) if c and ours else '-'}")
    if s:
        print(f"   search: {s['problem']}\n           {s['config']}")
PY
timeout 30 "$B" selfcheck --space "$SP" --red stream --problems "$W/problems.txt" --configs 2 \
  > "$OUT/selfcheck.txt" 2>&1; echo "selfcheck rc=$? $(tail -3 "$OUT/selfcheck.txt" | tr '\n' ' ')"
