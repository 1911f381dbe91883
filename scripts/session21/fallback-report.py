#!/usr/bin/env python3
"""The untuned fallback on problems tuned for the first time, read from tuning reports.

A tuning run measures first the config `convtune lookup` answers for the problem (`before_us`
in the `--report` rows: the fallback of the database that existed before the problem was
tuned, since the problem was not in it) and then searches; so `time_us / before_us` is the
fallback's speed as a fraction of tuned, both timed in the same run and protocol. Prints it per
problem, per family (direction, precision, grouping), and the geomean and minimum against
issue 16's target (geomean >= 0.95, none below 0.8). Where the run also timed the lookup's
next candidates (`lookup_best_us`, builds from session 22 on: `convtune lookup --candidates 4`),
the same for the fastest of them: what a consumer timing those on first use would run.
  Usage: scripts/session21/fallback-report.py REPORT.json [REPORT.json ...]
"""
import json
import math
import re
import sys
from collections import defaultdict


def family(p):
    f = {"1": "fwd", "2": "bwd-data", "4": "bwd-weight"}[re.search(r"-F (\d)", p).group(1)]
    g = int(re.search(r"-g (\d+)", p).group(1))
    c = int(re.search(r"-c (\d+)", p).group(1))
    grouping = "dense" if g == 1 else "depthwise" if g == c else "grouped"
    layout = "NHWC" if "NHWGC" in p else "NCHW"
    return f"{p.split()[0]:9} {f:10} {grouping:9} {layout}"


def geo(xs):
    return math.exp(sum(math.log(max(x, 1e-3)) for x in xs) / len(xs))


rows = [r for path in sys.argv[1:] for r in json.load(open(path))]
speeds, bests, fams, best_fams = [], [], defaultdict(list), defaultdict(list)
for r in rows:
    if not r.get("before_us"):
        print(f"   no fallback timing  {r['problem']}")
        continue
    s = r["time_us"] / r["before_us"]
    speeds.append(s)
    fams[family(r["problem"])].append(s)
    b = r["time_us"] / r["lookup_best_us"] if r.get("lookup_best_us") else None
    if b is not None:
        bests.append(b)
        best_fams[family(r["problem"])].append(b)
    best = f"{b:5.3f} best of candidates" if b is not None else ""
    print(f"{s:5.3f}  {r['time_us']:9.1f} us tuned  {r['before_us']:9.1f} us fallback  {best}  "
          f"{r['problem']}")
print()
for f, v in sorted(fams.items()):
    w = best_fams.get(f)
    extra = f"  best of candidates {geo(w):.3f} min {min(w):.3f}" if w else ""
    print(f"{f}  {len(v):3} problems  geomean {geo(v):.3f}  min {min(v):.3f}{extra}")
for name, v in (("fallback", speeds), ("best of the lookup's candidates", bests)):
    if v:
        print(f"\n{name}: geomean {geo(v):.3f} of tuned speed, min {min(v):.3f}, "
              f"{sum(s < 0.8 for s in v)} below 0.8, {len(v)} problems "
              "(target: geomean >= 0.95, none below 0.8)")
