#!/usr/bin/env bash
# Session 6 final pass, call B (H200): today's against the new, same run. The shipped database
# as the session found it (tuned-db/sm_90.toml at the base commit, carried as .carry/base-db.toml)
# timed with the base build, then the re-tuned database (tuned-db/sm_90.toml now) with this
# build; each entry's own config verified, then timed; cuDNN and the matmul rate with each.
# Then fast-check.sh (time to a good kernel, base against this build).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== new: tuned-db/sm_90.toml with this build $(el)"
OUT=$OUT/new timeout 200 scripts/db-vs-cudnn.sh tuned-db/sm_90.toml target/release/convtune 2>&1 | tail -4
echo "== old: the base database with the base build $(el)"
OUT=$OUT/old timeout 180 scripts/db-vs-cudnn.sh .carry/base-db.toml target/base/convtune 2>&1 | tail -4
rm -f "$OUT"/*/dbrun/*.lock
python3 - "$OUT" <<'PY'
import json, math, sys
o = sys.argv[1]
def rows(d):
    try:
        return {r["problem"]: r for r in json.load(open(f"{o}/{d}/dbrun/cudnn.json"))["rows"]}
    except Exception as e:
        print(d, "no cudnn.json:", e); return {}
new, old = rows("new"), rows("old")
print(f"{'old us':>9} {'new us':>9} {'cuDNN us':>9} {'old/new':>8} {'cuDNN/new':>9}  problem")
lg = []
for p, r in new.items():
    n, c = r.get("convtune_us"), r.get("cudnn_us")
    ol = old.get(p, {}).get("convtune_us")
    if n and c:
        lg.append(math.log(c / n))
    f = lambda v: f"{v:9.1f}" if v else "        -"
    print(f"{f(ol)} {f(n)} {f(c)} {(ol / n if ol and n else float('nan')):8.3f} {(c / n if c and n else float('nan')):9.3f}  {p[:110]}")
if lg:
    print(f"geomean cuDNN/new {math.exp(sum(lg) / len(lg)):.3f} over {len(lg)}, min {min(math.exp(x) for x in lg):.3f}")
PY
echo "== fast-check $(el)"
BIN=target/release/convtune BASE=target/base/convtune OUT=$OUT timeout 170 scripts/session6/fast-check.sh > "$OUT/fast-log.txt" 2>&1; echo "rc=$?"
tail -25 "$OUT/fast-summary.txt"
echo "== done $(el)"
tar czf "$OUT/final-b.tgz" -C "$OUT" --exclude='*.tgz' . 2>/dev/null
