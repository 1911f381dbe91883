#!/usr/bin/env bash
# Session 24 device call 6 (H200), the build whose Hopper space has non-power-of-two split-K:
# the shipped database's 16-bit bwd-weight entries (scripts/session24/wrw16.txt) re-tuned,
# `--time SECS` each within `--time-total TOTAL`; each problem's shipped config is timed first
# in the same run (the report's before_us), so before/after is a same-run comparison.
#   Usage (repo root, on the device): bash scripts/session24/call6.sh SECS TOTAL
set -uo pipefail
. scripts/session11/lib.sh
grep -v '^#' scripts/session24/wrw16.txt > /tmp/wrw16.txt
say "== re-tune $(wc -l < /tmp/wrw16.txt) bwd-weight entries $(el)"
timeout $(( $2 + 30 )) "$B" --problems /tmp/wrw16.txt --arch sm_90 --time "$1" --time-total "$2" \
  --db "$OUT/wrw16.toml" --journal /tmp/j.jsonl --report "$OUT/report.json" > "$OUT/tune.log" 2>&1
say "rc=$? $(el)"
rm -f "$OUT"/*.lock
python3 - "$OUT/report.json" <<'PY' | tee -a "$S"
import json, math, sys
rows = [r for r in json.load(open(sys.argv[1])) if r.get("before_us")]
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
sk = lambda c: int(c.split("sk=")[1].split(",")[0])
odd = [r for r in rows if sk(r["config"]) & (sk(r["config"]) - 1)]
print(f"{len(rows)} re-tuned: shipped/found time geomean {g([r['before_us'] / r['time_us'] for r in rows]):.3f}, "
      f"{len(odd)} winners with a non-power-of-two split-K ({g([r['before_us'] / r['time_us'] for r in odd]) if odd else 0:.3f} on those)")
for r in sorted(rows, key=lambda r: r["time_us"] / r["before_us"])[:8]:
    print(f"  {r['before_us']:7.1f} -> {r['time_us']:7.1f} us  {r['config'][:80]}  {r['problem'][:70]}")
PY
grep -E "not started" "$OUT/tune.log" | head -3 | tee -a "$S"
say "== done $(el)"
