#!/usr/bin/env python3
"""Session 20's cross matrix (call 4): every shipped winner timed on every shipped problem where it
is legal, in one run. Per problem: its own winner's time in that run, the best and the median of
the *other* problems' winners (what a fallback that borrows a winner as tuned can reach at best,
and by a blind pick), and, given a fallback-loo.py dump, the fallback's leave-one-out pick when
it was one of those winners.

    Usage: scripts/session20/cross.py DB.toml CROSS.jsonl [LOO.json]
"""
import json
import math
import statistics
import sys
import tomllib

db, journal = sys.argv[1], sys.argv[2]
entries = tomllib.load(open(db, "rb"))["entry"]
t = {}
for line in open(journal):
    try:
        r = json.loads(line)
    except json.JSONDecodeError:
        continue
    if r.get("time_us"):
        t[(r["problem_key"], r["config"])] = r["time_us"]
picks = {}
if len(sys.argv) > 3:
    for p in json.load(open(sys.argv[3]))["picks"]:
        if p["set"] == "loo":
            picks[p["problem"]] = p["config"]
geo = lambda v: math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")
best, med, pick = [], [], []
print(f"{'own us':>8} {'best':>5} {'med':>5} {'pick':>5} {'n':>3}  problem")
for e in entries:
    own = t.get((e["problem"], e["config"]))
    others = [t[(e["problem"], o["config"])] for o in entries
              if o is not e and o["config"] != e["config"] and (e["problem"], o["config"]) in t]
    if not own or not others:
        print(f"{'-':>8} {'-':>5} {'-':>5} {'-':>5} {len(others):3}  {e['problem'][:90]}")
        continue
    b, m = own / min(others), own / statistics.median(others)
    best.append(min(b, 1.0))
    med.append(m)
    pk = t.get((e["problem"], picks.get(e["problem"], "")))
    if pk:
        pick.append(own / pk)
    ps = f"{own / pk:5.2f}" if pk else "    -"
    print(f"{own:8.1f} {b:5.2f} {m:5.2f} {ps} {len(others):3}  {e['problem'][:90]}")
print(f"best borrowed winner (capped at 1): geomean {geo(best):.3f}, min {min(best):.3f}, "
      f"{sum(1 for x in best if x >= 0.95)} of {len(best)} >= 0.95")
print(f"median borrowed winner: geomean {geo(med):.3f}")
if pick:
    print(f"fallback pick, where it is a borrowed winner ({len(pick)}): geomean {geo(pick):.3f}")
