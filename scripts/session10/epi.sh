#!/usr/bin/env bash
# Session 10 (epi), one H200 pass (< 150 s): ep=reg against ep=tma (the TMA-store epilogue) on
# the shipped winners of seed 003, fwd 1x1 14x14, fwd 1x1 7x7 and fwd 3x3 c256 28x28. Per
# problem: exhaustive over a small space around the shipped config (stages, ep; pk for the
# 14x14 whose shipped entry is pk=0): every candidate verified against the reference, then
# timed. cuDNN in the same run (scripts/compare-cudnn.py), then a table.
# From the repo root with the carried files (notes/common.md):  bash .carry/epi/epi.sh
# (.carry/epi/{s003,f14,f7,f3}.toml and problems.txt: name|problem|shipped config).
set -uo pipefail
C=.carry/epi
mkdir -p t && xz -dc .carry/epi.xz > t/convtune && chmod +x t/convtune
cp .carry/libffi.so.8 t/ && export LD_LIBRARY_PATH=$PWD/t
R=$OUT/epi; mkdir -p "$R"
t0=$(date +%s); secs() { echo $(( $(date +%s) - t0 )); }
: > "$R/lines.txt"
while IFS='|' read -r n p shipped; do
  echo "$p" > "$R/$n.problem"; echo "$p" >> "$R/lines.txt"
  echo "== $n [$(secs) s]"
  timeout 27 t/convtune --problems "$R/$n.problem" --space "$C/$n.toml" --arch sm_90 --strategy exhaustive \
    --time 24 --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/$n.json" --quiet > "$R/$n.tune.txt" 2>&1
  echo "rc=$?"; tail -2 "$R/$n.tune.txt" | cut -c1-250
done < "$C/problems.txt"
echo "== cuDNN [$(secs) s]"
timeout 22 python3 scripts/compare-cudnn.py "$R/lines.txt" --json "$R/cudnn.json" > "$R/cudnn.txt" 2>&1
echo "rc=$?"; tail -6 "$R/cudnn.txt" | cut -c1-250
python3 - "$R/journal.jsonl" > "$R/table.txt" <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    c = str(j.get("config", "?"))
    if c.startswith("@"):
        continue
    t = j.get("time_us")
    rows[j.get("problem_key", "?")].append((t if isinstance(t, (int, float)) else 1e9, c, j.get("status", j.get("error", ""))))
for p, r in rows.items():
    r.sort()
    print(f"## {p[:70]}")
    for t, c, s in r:
        print(f"{t:9.2f} {c} {'' if t < 1e9 else str(s)[:120]}")
PY
cat "$R/table.txt"
rm -f "$R"/*.lock
tar czf "$OUT/epi.tgz" -C "$OUT" epi 2>/dev/null && rm -rf "$R"
echo "== done [$(secs) s]"
