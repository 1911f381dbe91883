#!/usr/bin/env python3
"""Scores fallback variants on call 1's timings (no GPU): for each problem of picks.json, each
variant's pick (its first config) and the fastest of its first four, as tuned speed / their
speed (1.0 = as fast as the tuned winner; a pick that was not timed or failed counts 0), plus,
where swept, the best split-K of the first variant's pick.
  Usage: scripts/session25/loo-score.py PICKS.json JOURNAL.jsonl... [--per-problem] [--best 4,8]
  (--best: the fastest of each variant's first N configs, for each N; default 4)
"""
import json, math, sys, re
from collections import defaultdict

args = [a for a in sys.argv[1:] if not a.startswith("--")]
per = "--per-problem" in sys.argv
bests = [4]
for i, a in enumerate(sys.argv):
    if a == "--best":
        bests = [int(n) for n in sys.argv[i + 1].split(",")]
        args.remove(sys.argv[i + 1])
picks = json.load(open(args[0]))
t = {}
for path in args[1:]:
    for line in open(path):
        r = json.loads(line)
        if "config" in r and r.get("time_us"):
            t[(r["problem_key"], r["config"])] = r["time_us"]
def gm(v): return math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v)) if v else float("nan")
rows, scores = [], defaultdict(list)
variants = [k for k in next(iter(picks.values())) if k not in ("tuned", "index")]
for problem, p in picks.items():
    k = problem  # the journal's problem_key is the entry's problem line
    tuned = t.get((k, p["tuned"]))
    if not tuned:
        continue
    cells = []
    for v in variants:
        cs = p[v]
        s1 = tuned / t[(k, cs[0])] if cs and (k, cs[0]) in t else (1.0 if cs and cs[0] == p["tuned"] else 0.0)
        scores[v + " pick"].append(s1)
        cell = f"{v} {s1:.2f}"
        for n in bests:
            sn = max([tuned / t[(k, c)] for c in cs[:n] if (k, c) in t] + [1.0 if p["tuned"] in cs[:n] else 0.0] + [s1])
            scores[f"{v} best{n}"].append(sn)
            cell += f"/{sn:.2f}"
        cells.append(cell)
    if p[variants[0]]:
        first = p[variants[0]][0]
        sw = [tuned / t[(k, c)] for (kk, c) in t if kk == k and re.sub(r"\bsk=\d+", "", c) == re.sub(r"\bsk=\d+", "", first)]
        if len(sw) > 1:
            scores["sk-sweep best"].append(max(sw)); cells.append(f"sweep {max(sw):.2f}")
    if per:
        print(f"{tuned:8.1f}  {'  '.join(cells)}  {problem}")
for name, v in scores.items():
    print(f"{name:16} geomean {gm(v):.3f}  min {min(v):.3f}  <0.8: {sum(x < 0.8 for x in v)}  n={len(v)}")
