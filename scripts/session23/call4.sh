#!/usr/bin/env bash
# Session 23 device call 4 (H200), build with the 178-entry database:
# 1. the 8 candidates that failed verification on one grouped problem in call 3
#    (scripts/session23/wrong-c.txt), timed again three times: deterministic or not;
# 2. compute-sanitizer racecheck on one of them, on the same problem with a batch of 4;
# 3. scripts/first-use.py over scripts/session23/setD.txt (30 problems the database lacks):
#    the lookup's config, the first-call benchmark's pick and cuDNN in one harness.
#   Usage (repo root, on the device): bash scripts/session23/call4.sh FIRST_USE_SECONDS
set -uo pipefail
. scripts/session11/lib.sh
X=$OUT/wrong; mkdir -p "$X"
P="convbfp16 -F 1 -n 64 -c 1024 -H 7 -W 7 -k 2048 -y 7 -x 7 -p 3 -q 3 -u 1 -v 1 -l 1 -j 1 -g 1024 -I NHWGC -f GKYXC -O NHWGC"
n=$(grep -vc '^#' scripts/session23/wrong-c.txt)
for i in 1 2 3; do
  timeout 60 "$B" --problem "$P" --arch sm_90 --try scripts/session23/wrong-c.txt --budget $((n + 1)) \
    --full-timing --db "$X/db$i.toml" --journal "$X/j$i.jsonl" --quiet > "$X/try$i.log" 2>&1
  say "repeat $i rc=$? $(el): $(python3 -c "
import json,sys
rows=[json.loads(l) for l in open('$X/j$i.jsonl')]
bad=[(r['config'],round(r['outcome']['WrongResult']['rel_err'],3)) for r in rows if isinstance(r.get('outcome'),dict) and 'WrongResult' in r['outcome']]
print(len(rows),'measured,',len(bad),'wrong:',bad)")"
done
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
C1=$(grep -v '^#' scripts/session23/wrong-c.txt | head -1)
say "== racecheck $(el): $C1"
PYTHONPATH=$site timeout 200 compute-sanitizer --tool racecheck --racecheck-report hazard \
  python3 scripts/session23/race.py "${P/-n 64/-n 4}" "$C1" > "$OUT/racecheck.log" 2>&1
say "rc=$? $(el)"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|Race reported|hazard|launched" "$OUT/racecheck.log" | head -8 | tee -a "$S"
say "== first use $(el)"
grep -v '^#' scripts/session23/setD.txt > "$OUT/setD.txt"
PYTHONPATH=$site timeout "$1" python3 scripts/first-use.py "$OUT/setD.txt" --json "$OUT/first-use.json" \
  > "$OUT/first-use.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/first-use.log" | tail -12 | cut -c1-220 | tee -a "$S"
say "== done $(el)"
