#!/usr/bin/env python3
"""A re-tune's journal against the database it started from: per problem, the old entry's config
as this run timed it (the search measures the lookup config, the old winner, first), the run's
best, and the ratio; then the geomean. Old and new times come from the same run and protocol.
    Usage: retune-ab.py OLD_DB JOURNAL"""
import json, math, sys, tomllib
old = {e["problem"]: e for e in tomllib.load(open(sys.argv[1], "rb"))["entry"]}
runs = {}
for line in open(sys.argv[2]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    runs.setdefault(r["problem_key"], []).append(r)
ratios = []
for p, recs in runs.items():
    timed = [r for r in recs if r.get("time_us")]
    if p not in old or not timed:
        continue
    mine = [r["time_us"] for r in timed if r["config"] == old[p]["config"]]
    best = min(timed, key=lambda r: r["time_us"])
    o = mine[0] if mine else None
    ratio = o / best["time_us"] if o else None
    if ratio:
        ratios.append(ratio)
    print(f"{'%8.1f' % o if o else '     n/a'} -> {best['time_us']:8.1f} us  "
          f"{'%.3f' % ratio if ratio else '  -  '}  n={len(recs):4d}  {p[:90]}")
    if ratio and ratio > 1.0001:
        print(f"{'':27s}{best['config']}")
if ratios:
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"old config / new best, same run: geomean {g:.3f} over {len(ratios)} problems, "
          f"{sum(r > 1.02 for r in ratios)} improved by > 2%, max {max(ratios):.3f}")
