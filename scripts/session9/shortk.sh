#!/usr/bin/env bash
# Session 9 (shortk), one H200 pass (< 150 s): the wave-shaped tiles (bn/wn 96 and 192, stages
# to 8) on the three short-K 1x1 layers that cuDNN wins. Per problem: exhaustive over a small
# space around cuDNN's tiles (every candidate verified, then timed); cuDNN in the same run
# (scripts/compare-cudnn.py); then, while time is left, the shipped config on this build and on
# the session's base build (A/B, same config).
# From the repo root with the carried files (notes/common.md):  bash .carry/shortk/shortk.sh
# (.carry/shortk/{f14,f7,w7}.toml and problems.txt: name|problem|shipped config).
set -uo pipefail
C=.carry/shortk
mkdir -p t b && xz -dc .carry/shortk.xz > t/convtune && chmod +x t/convtune
cp .carry/libffi.so.8 t/ && export LD_LIBRARY_PATH=$PWD/t
[ -f .carry/convtune-base.xz ] && xz -dc .carry/convtune-base.xz > b/convtune && chmod +x b/convtune
R=$OUT/shortk; mkdir -p "$R"
t0=$(date +%s); secs() { echo $(( $(date +%s) - t0 )); }
: > "$R/lines.txt"
while IFS='|' read -r n p shipped; do
  echo "$p" > "$R/$n.problem"; echo "$p" >> "$R/lines.txt"
  echo "== $n exhaustive [$(secs) s]"
  timeout 32 t/convtune --problems "$R/$n.problem" --space "$C/$n.toml" --arch sm_90 --strategy exhaustive \
    --time 28 --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/new.json" --quiet > "$R/$n.tune.txt" 2>&1
  echo "rc=$?"; tail -2 "$R/$n.tune.txt" | cut -c1-250
done < "$C/problems.txt"
echo "== cuDNN [$(secs) s]"
timeout 30 python3 scripts/compare-cudnn.py "$R/lines.txt" --convtune "$R/new.json" --json "$R/cudnn.json" > "$R/cudnn.txt" 2>&1
echo "rc=$?"; tail -8 "$R/cudnn.txt" | cut -c1-250
# The ten best of each problem's journal.
python3 - "$R/journal.jsonl" > "$R/best.txt" <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    t = j.get("time_us")
    if isinstance(t, (int, float)) and not str(j.get("config", "")).startswith("@"):
        rows[j.get("problem_key", "?")].append((t, j.get("config", "?")))
for p, r in rows.items():
    r.sort()
    print(f"## {p[:60]}  ({len(r)} timed)")
    for t, c in r[:10]:
        print(f"{t:8.2f} {c}")
PY
cat "$R/best.txt"
echo "== shipped configs, base (b) and this build (t) [$(secs) s]"
while IFS='|' read -r n p shipped; do
  for side in b t t b; do
    [ "$(secs)" -lt 128 ] && [ -x $side/convtune ] || continue
    $side/convtune space --problem "$p" --arch sm_90 --pin "$shipped" > "$R/pin.toml" 2>> "$R/errors.txt" || continue
    timeout 8 $side/convtune --problems "$R/$n.problem" --space "$R/pin.toml" --arch sm_90 \
      --strategy exhaustive --full-timing --db "$R/db-ab.toml" --journal "$R/journal-ab.jsonl" \
      --quiet > "$R/ab.txt" 2>&1
    echo "$n shipped on $side: $(grep -o '[0-9.]* us' "$R/ab.txt" | head -1) $(tail -1 "$R/ab.txt" | cut -c1-160)"
  done
done < "$C/problems.txt"
rm -f "$R"/*.lock "$R/pin.toml" "$R/ab.txt"
tar czf "$OUT/shortk.tgz" -C "$OUT" shortk 2>/dev/null && rm -rf "$R"
echo "== done [$(secs) s]"
