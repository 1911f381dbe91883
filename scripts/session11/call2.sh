#!/usr/bin/env bash
# Session 11, device call 2 (H200, < 420 s), from the repo root with .carry/{convtune.xz,
# convtune-o2.xz,libffi.so.8} and .carry/ab.tsv:
#  1. selfcheck: ep=tma on strided bwd-data (wrapped-row stores; call 1 faulted there), and
#     the stream-K kernels the relaxed rule admits (fwd 1x1 98-tile shapes);
#  2. stream-K against one block per tile, same tiles, exhaustive and fully timed
#     (scripts/session11/sk-fwd.toml) on the fwd shapes cuDNN wins; seed 003 ep=reg|tma;
#     cuDNN in the same run;
#  3. the NVPTX back end at Default (convtune-o2) against Aggressive: the shipped winners
#     whose PTX differs, alternating, and the tune-cost problems' candidate rate.
set -uo pipefail
. scripts/session11/lib.sh
mkdir -p target/o2 && xz -dc .carry/convtune-o2.xz > target/o2/convtune && chmod +x target/o2/convtune
D=scripts/session11
say "== 1a selfcheck ep=tma wrapped rows $(el)"
timeout 50 "$B" selfcheck --problems $D/ep-wrap-problems.txt --space $D/ep-wrap.toml --configs 8 > "$OUT/self-wrap.log" 2>&1
say "rc=$?"; grep -v "^ok" "$OUT/self-wrap.log" | grep -v "so far, 0 failed" | tail -8 | tee -a "$S"
say "== 1b selfcheck stream-K fwd $(el)"
timeout 40 "$B" selfcheck --problems $D/sk-problems.txt --space $D/sk-fwd.toml --red stream --configs 6 > "$OUT/self-sk.log" 2>&1
say "rc=$?"; grep -v "^ok" "$OUT/self-sk.log" | grep -v "so far, 0 failed" | tail -8 | tee -a "$S"
say "== 2 stream-K timing $(el)"
R=$OUT/sk; mkdir -p "$R"
i=0
while read -r p; do
  i=$((i + 1)); echo "$p" > "$R/p$i.txt"
  timeout 40 "$B" --problems "$R/p$i.txt" --arch sm_90 --space $D/sk-fwd.toml --strategy exhaustive --full-timing \
    --time 34 --db "$R/db.toml" --journal "$R/j$i.jsonl" --report "$R/r$i.json" --quiet > "$R/log$i.txt" 2>&1
  say "p$i rc=$? $(el)"; rm -f "$R"/*.lock
done < $D/sk-problems.txt
echo "convbfp16 -F 2 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 --layout NHWC" > "$R/p9.txt"
timeout 25 "$B" --problems "$R/p9.txt" --arch sm_90 --space scripts/session10/epi/s003.toml --strategy exhaustive \
  --full-timing --time 20 --db "$R/db.toml" --journal "$R/j9.jsonl" --report "$R/r9.json" --quiet > "$R/log9.txt" 2>&1
say "s003 ep rc=$? $(el)"; rm -f "$R"/*.lock
cat $D/sk-problems.txt "$R/p9.txt" > "$R/all.txt"
timeout 30 python3 scripts/compare-cudnn.py "$R/all.txt" --json "$R/cudnn.json" > "$R/cudnn.txt" 2>&1
say "cudnn rc=$? $(el)"; tail -7 "$R/cudnn.txt" | tee -a "$S"
python3 - "$R" <<'PY' | tee -a "$S"
import json, sys, glob
r = sys.argv[1]
for j in sorted(glob.glob(f"{r}/j*.jsonl")):
    rows = []
    for line in open(j):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        c = str(e.get("config", ""))
        if not c or c.startswith("@"):
            continue
        t = e.get("time_us")
        rows.append((t if isinstance(t, (int, float)) else 1e9, c, str(e.get("outcome", ""))[:90]))
    rows.sort()
    print("##", j.split("/")[-1], (rows and rows[0][1]) or "")
    for t, c, o in rows[:8]:
        s = c.split(":", 1)[-1].replace(",lds=swz,sk=1", "").replace(",mma=wg", "").replace(",ld=ws,pk=1,xf=none,cl=1", "")
        print(f"  {t:9.2f}  {s}  {'' if t < 1e9 else o}")
    fails = [c for t, c, o in rows if t >= 1e9]
    if fails:
        print(f"  {len(fails)} failed, first: {fails[0]}")
PY
tar czf "$OUT/sk.tgz" -C "$OUT" sk self-wrap.log self-sk.log 2>/dev/null && rm -rf "$R" "$OUT"/self-*.log
say "== 3 O2 A/B $(el)"
BIN=target/o2/convtune OLD_BIN=$B AB=.carry/ab.tsv T=8 OLD_FOR='fwd-3x3 bwdw-3x3' OUT=$OUT \
  timeout 200 bash scripts/session10/tune-cost-ab.sh > "$OUT/o2.txt" 2>&1
say "rc=$? $(el)"; grep -v "^\[" "$OUT/o2.txt" | tail -22 | tee -a "$S"
say "== done $(el)"
