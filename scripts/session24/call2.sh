#!/usr/bin/env bash
# Session 24 device call 2 (H200): the fix for the ptxas IMAD.HI merge (bounds checks compare a
# quotient with per-slot bounds instead of adding it to each slot's coordinate).
# 1. The 8 configs of scripts/session23/wrong-c.txt, verified by the tuner (--try, full
#    timing) with the session's base build and the fixed build, on the grouped problem at
#    n = 64 (where call 3 of session 23 found them) and n = 8 (selfcheck's MISCOMPILED).
# 2. wrongdiag.py with the fixed wheel: jit O4/O0, ptxas O3/O0 on c0..c3.
# 3. A/B base vs fixed on the 39 suite entries of the shipped database, and cuDNN
#    (scripts/db-vs-cudnn.sh with two builds).
# 4. convtune selfcheck --configs 1 with the fixed build (the sweep + MISCOMPILED).
#   Usage (repo root, on the device): bash scripts/session24/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
A=target/base/convtune
X=$OUT/wrong; mkdir -p "$X"
for n in 64 8; do
  P="convbfp16 -F 1 -n $n -c 1024 -H 7 -W 7 -k 2048 -y 7 -x 7 -p 3 -q 3 -u 1 -v 1 -l 1 -j 1 -g 1024 -I NHWGC -f GKYXC -O NHWGC"
  for b in base fixed; do
    bin=$B; [ $b = base ] && bin=$A
    timeout 90 "$bin" --problem "$P" --arch sm_90 --try scripts/session23/wrong-c.txt --budget 8 \
      --full-timing --db "/tmp/w-$b-$n.toml" --journal "$X/j-$b-$n.jsonl" --quiet > "$X/try-$b-$n.log" 2>&1
    say "n=$n $b rc=$? $(el): $(python3 -c "
import json
rows=[json.loads(l) for l in open('$X/j-$b-$n.jsonl')]
out=[r['outcome'] if isinstance(r['outcome'],str) else list(r['outcome'])[0] for r in rows]
import collections; print(len(rows),'measured',dict(collections.Counter(out)))")"
  done
done
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
P="convbfp16 -F 1 -n 64 -c 1024 -H 7 -W 7 -k 2048 -y 7 -x 7 -p 3 -q 3 -u 1 -v 1 -l 1 -j 1 -g 1024 -I NHWGC -f GKYXC -O NHWGC"
say "== wrongdiag, fixed wheel $(el)"
PYTHONPATH=$site timeout 120 python3 scripts/session24/wrongdiag.py "$P" scripts/session24/diag.txt /tmp/diag 2>&1 \
  | grep -E "^==|: wrong" | tee -a "$S"
say "== A/B base vs fixed, 39 suite entries, cuDNN $(el)"
python3 - <<'PY'
import tomllib
src = open("tuned-db/sm_90.toml").read()
head, *entries = src.split("[[entry]]")
keep = [e for e in entries if 'date = "2026-12-03"' in e]
open("/tmp/suite.toml", "w").write(head.replace("entries = 214", f"entries = {len(keep)}") + "".join("[[entry]]" + e for e in keep))
print(len(keep), "entries")
PY
timeout 420 bash scripts/db-vs-cudnn.sh /tmp/suite.toml "$A" "$B" > "$OUT/dbab.log" 2>&1
say "rc=$? $(el)"
python3 - "$OUT/dbrun" <<'PY' | tee -a "$S"
import json, math, sys
r = sys.argv[1]
try:
    rows = [l.split() for l in open(f"{r}/ab.txt")]
    ratios = [float(x[3]) for x in rows]
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"base/fixed time geomean {g:.3f} over {len(ratios)} (min {min(ratios):.3f}, max {max(ratios):.3f})")
except Exception as e:
    print("no A/B:", e)
PY
tail -4 "$OUT/dbrun/compare.txt" | tee -a "$S"
grep -h -i "wrong\|fail" "$OUT/dbrun/errors.txt" 2>/dev/null | head -5 | tee -a "$S"
say "== selfcheck --configs 1, fixed $(el)"
timeout 240 "$B" selfcheck --configs 1 > "$OUT/selfcheck.log" 2>&1
say "rc=$? $(el)"; tail -12 "$OUT/selfcheck.log" | cut -c1-220 | tee -a "$S"
rm -rf "$OUT/dbrun/spaces"
say "== done $(el)"
