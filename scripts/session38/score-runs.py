#!/usr/bin/env python3
"""Scores list variants over several runs' journals, each config against the tuned winner's
time of its own run (groups.sh times the tuned winner first in every run): tuned / the
fastest of each variant's first N configs, where every listed config was timed in some run
(a config timed in several runs counts its first run).

    Usage: scripts/session38/score-runs.py PICKS.json RUN_DIR... [--best 16,24]
    (RUN_DIR: one run's journals, a directory of *.jsonl or a .jsonl[.xz] file)
"""
import json, math, os, sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journals import ratios  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
bests = [16]
if "--best" in sys.argv:
    v = sys.argv[sys.argv.index("--best") + 1]
    bests = [int(n) for n in v.split(",")]
    args.remove(v)
picks = json.load(open(args[0]))
ratio = ratios(picks, args[1:])


def gm(v):
    return math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))


variants = [v for v in next(iter(picks.values())) if v != "tuned"]
scores = defaultdict(list)
for k, p in picks.items():
    if (k, p["tuned"]) not in ratio:
        continue
    for v in variants:
        for n in bests:
            cs = p[v][:n]
            scores[f"{v} best{n}"].append(max([ratio.get((k, c), 0.0) for c in cs] + [1.0 if p["tuned"] in cs else 0.0]))
for name, v in scores.items():
    print(f"{name:14} geomean {gm(v):.3f}  min {min(v):.3f}  <0.8: {sum(x < 0.8 for x in v)}  n={len(v)}")
