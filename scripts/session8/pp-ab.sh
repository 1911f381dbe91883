#!/usr/bin/env bash
# Ping-pong consumers (ld=wspp) against the cooperative ld=ws kernels on the H200, one run:
#  1. `convtune selfcheck` over a wspp-only space (the new knob's kernels verified on the GPU,
#     fwd / bwd-data / bwd-weight with split-K, a hang recorded as a timeout);
#  2. per problem: the shipped config alone (pinned), then an exhaustive, fully timed search of a
#     small space around it in which only ld (ws|wspp), the tile (bm 64|128|256, wm 64|128,
#     bn 128|256, wn 128|256), mma and the stages vary (every candidate verified first);
#  3. cuDNN on the same problems (scripts/compare-cudnn.py), same run.
# Usage: scripts/session8/pp-ab.sh BIN OUT        Output: OUT/table.txt, OUT/*.jsonl, logs.
# Session 8 ran it (26.9 s) before wm=128 existed, with bm 64|128, wm 64 and --time 16; with
# wm=128 it takes about 2.5 minutes.
set -u
B=${1:?binary}; OUT=${2:?out dir}; mkdir -p "$OUT"; D=$(dirname "$0")
timeout 25 "$B" selfcheck --space "$D/wspp-only.toml" --problems "$D/pp-selfcheck.txt" --configs 2 \
  > "$OUT/selfcheck.txt" 2>&1; echo "selfcheck rc=$?"; tail -4 "$OUT/selfcheck.txt"
i=0
while IFS='|' read -r prob shipped; do
  [ -z "$prob" ] && continue
  i=$((i + 1))
  echo "$prob" > "$OUT/p$i.txt"
  "$B" space --problem "$prob" --arch sm_90 --pin "$shipped" > "$OUT/ship$i.toml" 2>>"$OUT/err.txt"
  sed -e 's/^ld = .*/ld = ["ws", "wspp"]/' -e 's/^persistent = .*/persistent = ["1"]/' \
      -e 's/^block_m = .*/block_m = [64, 128, 256]/' -e 's/^block_n = .*/block_n = [128, 256]/' \
      -e 's/^warp_m = .*/warp_m = [64, 128]/' \
      -e 's/^warp_n = .*/warp_n = [128, 256]/' -e 's/^mma = .*/mma = ["wg", "wg1"]/' \
      -e 's/^stages = .*/stages = [4, 5, 6]/' -e 's/^xf = .*/xf = ["none"]/' \
      "$OUT/ship$i.toml" > "$OUT/s$i.toml"
  for kind in ship s; do
    t=8; [ "$kind" = s ] && t=30
    timeout $((t + 10)) "$B" --time "$t" --problems "$OUT/p$i.txt" --arch sm_90 --space "$OUT/$kind$i.toml" \
      --strategy exhaustive --full-timing --db "$OUT/db-$kind$i.toml" --journal "$OUT/j-$kind$i.jsonl" \
      --report "$OUT/r-$kind.json" --quiet > "$OUT/log-$kind$i.txt" 2>&1
    echo "problem $i $kind: rc=$?"
    rm -f "$OUT"/*.lock
  done
done <<'LIST'
convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=ws,pk=1,xf=none
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v2:bm=64,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=4,mma=wg
convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=2,vb=8,vc=4,lds=swz,sk=1,rs=4,mma=wg,red=atomic,ld=ws,pk=1,xf=none
LIST
timeout 45 python3 scripts/compare-cudnn.py --convtune "$OUT/r-s.json" --json "$OUT/cudnn.json" > "$OUT/compare.txt" 2>&1
python3 - "$OUT" "$i" <<'PY' | tee "$OUT/table.txt"
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
try:
    cud = [r["cudnn_us"] for r in json.load(open(f"{out}/cudnn.json"))["rows"]]
except Exception:
    cud = []
print("problem | shipped µs | best ws µs (config) | best wspp µs (config) | wspp timed/tried | cuDNN µs")
for i in range(1, n + 1):
    best = {"ws": None, "wspp": None}; ok = {"ws": 0, "wspp": 0}; tried = {"ws": 0, "wspp": 0}
    ship = None
    for kind in ("ship", "s"):
        try:
            lines = open(f"{out}/j-{kind}{i}.jsonl").read().splitlines()
        except OSError:
            continue
        for line in lines:
            e = json.loads(line); c = e.get("config", "")
            if c.startswith("@"):
                continue
            us = e.get("time_us") or e.get("median_us")
            if kind == "ship":
                ship = us if isinstance(us, (int, float)) else e.get("status") or e.get("outcome"); continue
            ld = "wspp" if "ld=wspp" in c else "ws"
            tried[ld] += 1
            if isinstance(us, (int, float)) and us > 0:
                ok[ld] += 1
                if best[ld] is None or us < best[ld][0]:
                    best[ld] = (us, c)
    p = open(f"{out}/p{i}.txt").read().strip()
    f = lambda b: f"{b[0]:.1f} ({b[1].split(':')[1]})" if b else "-"
    cu = f"{cud[i - 1]:.1f}" if len(cud) >= i else "-"  # the report's order: problems 1..n
    print(f"{p} | {ship} | {f(best['ws'])} | {f(best['wspp'])} | {ok['wspp']}/{tried['wspp']} | {cu}")
PY
tail -6 "$OUT/compare.txt"
