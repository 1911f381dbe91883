#!/usr/bin/env bash
# Session 14, device call 5 (H200, < 500 s): the measurer's L2 sweep (runtime::l2_sweep)
# against the memset flush it replaces, and the tuner under it against cuDNN.
#  1. the library's GPU tests (carried test binary .carry/libtests.xz) and `selfcheck`;
#  2. A/B, alternating: pinned configs timed by the base build (memset flush) and this build
#     (read sweep), 3 rounds, same GPU, same call;
#  3. cuDNN on the same problems: dirty (after a memset) / clean (after a read) / graph;
#  4. default `--time 10` searches with this build on session 13's four unseen problems and
#     bwd-weight 1x1 c256 56x56, beside 3.
#   Usage (repo root, on the device): bash scripts/session14/call5.sh
set -uo pipefail
. scripts/session11/lib.sh
OLD=$PWD/target/base/convtune
say "== 1 gpu tests $(el)"
xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
timeout 150 /tmp/libtests runtime:: --test-threads=1 > "$OUT/libtests.log" 2>&1
say "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/libtests.log" | tee -a "$S"
timeout 90 "$B" selfcheck --configs 2 > "$OUT/selfcheck.log" 2>&1
say "selfcheck rc=$?"; tail -3 "$OUT/selfcheck.log" | tee -a "$S"
say "== 2 A/B $(el)"
R=/tmp/ab; mkdir -p "$R"
cat > "$R/pins.txt" <<'P'
bwdw1x1-28|convbfp16 -F 4 -n 64 -c 128 -H 28 -W 28 -k 512 -y 1 -x 1 --layout NHWC|v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=8,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg1
bwdw1x1-56|convbfp16 -F 4 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 --layout NHWC|v3:bm=64,bn=64,bk=64,wm=64,wn=64,st=8,va=8,vb=8,vc=8,lds=swz,sk=32,rs=1,mma=wg,red=fixup,ld=ws
fwd3x3-35|convbfp16 -n 32 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|v4:bm=64,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=2,vc=8,lds=swz,sk=1,rs=4,mma=wg1,red=atomic,ld=ws,pk=1,xf=none
bwdd3x3s2|convbfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC|v2:bm=64,bn=96,bk=64,wm=64,wn=96,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg
P
for round in 1 2 3; do
  while IFS='|' read -r n p c; do
    echo "$p" > "$R/$n.p"
    "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$R/$n.s.toml" 2>/dev/null || { say "$n not pinned"; continue; }
    for side in old new; do
      bin=$B; [ $side = old ] && bin=$OLD
      rm -f "$R"/*.db.toml* "$R"/*.jsonl
      t=$(timeout 60 "$bin" --problems "$R/$n.p" --space "$R/$n.s.toml" --strategy exhaustive --full-timing \
        --db "$R/$side.db.toml" --journal "$R/$side.jsonl" --quiet 2>&1 | grep -o 'best [0-9.]* us' | head -1)
      echo "$round $n $side $t" >> "$R/ab.txt"
    done
  done < "$R/pins.txt"
done
python3 - "$R/ab.txt" <<'PY' | tee -a "$S"
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5:
        d[(f[1], f[2])].append(float(f[4]))
names = sorted({k[0] for k in d})
print(f"{'pinned config':14} {'memset flush':>13} {'read sweep':>11}  (median of rounds, us)")
for n in names:
    o, w = d.get((n, "old"), []), d.get((n, "new"), [])
    fmt = lambda v: f"{statistics.median(v):.1f}" if v else "-"
    print(f"{n:14} {fmt(o):>13} {fmt(w):>11}   rounds old {o} new {w}")
PY
cp "$R/ab.txt" "$OUT/"
say "== 3 cuDNN $(el)"
U=/tmp/u; mkdir -p "$U"
cut -d'|' -f2 "$R/pins.txt" > "$U/list.txt"
timeout 120 python3 scripts/session14/dirty-l2.py "$U/list.txt" 2>&1 | grep -v -i warn | tee -a "$S"
say "== 4 --time 10 $(el)"
i=0
while read -r p; do
  i=$((i + 1)); echo "$p" > "$U/p$i.txt"
  timeout 20 "$B" --problems "$U/p$i.txt" --arch sm_90 --time 10 --db "$U/t$i.toml" \
    --journal "$U/t$i.jsonl" --report "$U/t$i.json" --quiet > "$U/t$i.log" 2>&1
  say "p$i rc=$? $(grep -h '^summary:' "$U/t$i.log" | grep -o 'best [0-9.]* us.*evaluated' | cut -c1-80) $(el)"
done < "$U/list.txt"
tar czf "$OUT/t10.tgz" -C "$U" . 2>/dev/null
say "== done $(el)"
