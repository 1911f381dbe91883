#!/usr/bin/env python3
"""Offline (no GPU): lists of sixteen composed from the twins experiment's timings
(scripts/session37/twins.py, timed by scripts/session25/groups.sh twins): for each K, the
lookup's first K configs, then the legal twins of its first two (lds flipped, A's / B's / both
vector widths halved, in that order) up to sixteen; scored as tuned time / the fastest
timed config of the list (the tuned winner in the list counts 1.0).

    Usage: scripts/session38/compose.py PICKS.json RUN... [--total 16]
    (RUN: a directory of *.jsonl or a .jsonl[.xz] journal)
"""
import json, math, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journals import times  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
total = 16
if "--total" in sys.argv:
    total = int(sys.argv[sys.argv.index("--total") + 1])
    args.remove(str(total))
picks = json.load(open(args[0]))
t = {}
for run in args[1:]:
    t.update(times(run))


def gm(v):
    return math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))


def score(k, p, cs):
    tuned = t[(k, p["tuned"])]
    return max([tuned / t[(k, c)] for c in cs if (k, c) in t] + [1.0 if p["tuned"] in cs else 0.0])


timed = [(k, p) for k, p in picks.items() if (k, p["tuned"]) in t]
print(f"{len(timed)} problems with the tuned winner timed")
for K in range(total, 7, -1):
    s = []
    for k, p in timed:
        tw = p["twins"][len(p["l16"]):]
        cs = p["l16"][:K] + tw[: total - K]
        s.append(score(k, p, cs))
    low = sum(x < 0.8 for x in s)
    print(f"first {K:2} + twins to {total}: geomean {gm(s):.3f}  min {min(s):.3f}  <0.8: {low}  <0.9: {sum(x < 0.9 for x in s)}")
s = [score(k, p, p["twins"]) for k, p in timed]
print(f"all (l16 + every twin):  geomean {gm(s):.3f}  min {min(s):.3f}  <0.8: {sum(x < 0.8 for x in s)}")
