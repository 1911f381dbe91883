#!/usr/bin/env bash
# pk=0 vs pk=1 (persistent ld=ws grid) on the H200, side by side in one run: for each
# "problem|config" line below, a space whose only difference is `persistent = ["0", "1"]`
# (from `convtune space --pin`), self-checked by the tuner's verification and timed in full,
# every candidate (exhaustive over the two). Usage: scripts/session7/pk-ab.sh BIN OUT
# Output: OUT/ab.txt (pk=0 µs, pk=1 µs, ratio, problem, config); OUT/log*.txt; a hang is a
# worker timeout recorded in the journal, the run goes on.
set -u
B=${1:?binary}; OUT=${2:?out dir}; mkdir -p "$OUT"
i=0
while IFS='|' read -r prob cfg; do
  [ -z "$prob" ] && continue
  i=$((i + 1))
  echo "$prob" > "$OUT/p$i.txt"
  "$B" space --problem "$prob" --arch sm_90 --pin "$cfg" 2> "$OUT/pin$i.err" \
    | sed 's/^persistent = .*/persistent = ["0", "1"]/' > "$OUT/s$i.toml" \
    || { echo "line $i: not pinned: $(tail -1 "$OUT/pin$i.err")"; continue; }
  timeout 300 "$B" --problems "$OUT/p$i.txt" --arch sm_90 --space "$OUT/s$i.toml" --strategy exhaustive \
    --full-timing --db "$OUT/db$i.toml" --journal "$OUT/j$i.jsonl" --report "$OUT/r$i.json" --quiet \
    > "$OUT/log$i.txt" 2>&1; echo "line $i: rc=$?"
  rm -f "$OUT"/*.lock
done <<'LIST'
convbfp16 -n 32 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws
convbfp16 -n 32 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v3:bm=128,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws
convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC|v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws
convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC|v3:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=ws
convbfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC|v3:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=32,rs=1,mma=wg,red=atomic,ld=ws
convbfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC|v3:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg,red=fixup,ld=ws
LIST
python3 - "$OUT" "$i" <<'PY' | tee "$OUT/ab.txt"
import json, sys, glob
out, n = sys.argv[1], int(sys.argv[2])
for i in range(1, n + 1):
    t = {}
    try:
        for line in open(f"{out}/j{i}.jsonl"):
            e = json.loads(line)
            c = e.get("config", "")
            if c.startswith("@"):  # the @stages record
                continue
            us = e.get("time_us") or e.get("median_us")
            t["1" if ",pk=1" in c else "0"] = (us, e.get("status") or e.get("outcome"), c)
    except OSError:
        pass
    a, b = t.get("0"), t.get("1")
    fmt = lambda x: f"{x[0]:9.1f}" if x and isinstance(x[0], (int, float)) else f"{str(x and x[1]):>9}"
    ratio = f"{a[0] / b[0]:.3f}" if a and b and all(isinstance(x[0], (int, float)) and x[0] for x in (a, b)) else "  -  "
    print(f"{fmt(a)} {fmt(b)}  pk0/pk1 {ratio}  line {i}  {(a or b or (0, 0, ''))[2]}")
PY
