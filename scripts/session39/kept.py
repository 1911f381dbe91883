#!/usr/bin/env python3
"""Offline (no GPU): the config each round variant keeps (the fastest of its first N configs
over earlier runs' journals, as score-runs.py scores them), as `--try` groups for
scripts/session25/groups.sh, so that the kept configs of all variants are timed again in one
run beside each tuned winner: the fastest of many noisy times is biased up, a fresh time of
the kept config is not (a round that re-times one kernel under two names gains from that
bias alone). Writes OUT/g<N>/ and OUT/kept.json ({problem: {variant: config}}).

    Usage: scripts/session39/kept.py OUT NAME=PICKS.json[:N]... --runs RUN... [--best 24]
    Score the fresh runs: scripts/session39/kept.py --score OUT/kept.json PASS_JOURNAL...
"""
import json, math, os, sys
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "session25"))
sys.path.insert(0, os.path.join(here, "..", "session38"))
from loo_groups import write_groups  # noqa: E402
from journals import ratios, times  # noqa: E402


def gm(v):
    return math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))


if sys.argv[1] == "--score":
    # Each pass alone, then per problem the geometric mean of the passes.
    kept, passes = json.load(open(sys.argv[2])), [times(r) for r in sys.argv[3:]]
    scores = defaultdict(lambda: defaultdict(list))
    for k, by in kept.items():
        for n, t in enumerate(passes):
            tuned = t.get((k, by["tuned"]))
            if tuned and all(t.get((k, c)) for c in by.values()):
                for v, c in by.items():
                    if v != "tuned":
                        scores[v][k].append(tuned / t[(k, c)])
    for v, per in scores.items():
        for n in range(len(passes)):
            s = [r[n] for r in per.values() if len(r) == len(passes)]
            print(f"{v:10} pass {n + 1}: geomean {gm(s):.3f}  min {min(s):.3f}  "
                  f"<0.8: {sum(x < 0.8 for x in s)}  n={len(s)}")
        if len(passes) > 1:
            s = [gm(r) for r in per.values() if len(r) == len(passes)]
            print(f"{v:10} mean of the passes: geomean {gm(s):.3f}  min {min(s):.3f}  "
                  f"<0.8: {sum(x < 0.8 for x in s)}  n={len(s)}")
    sys.exit()

out = sys.argv[1]
variants = dict(a.split("=", 1) for a in sys.argv[2:sys.argv.index("--runs")])
rest = sys.argv[sys.argv.index("--runs") + 1:]
best = 24
if "--best" in rest:
    best = int(rest[rest.index("--best") + 1])
    rest = rest[:rest.index("--best")]
# NAME=PICKS.json[:N]: that variant's first N configs (default --best).
limit = {v: int(p.split(":")[1]) if ":" in p else best for v, p in variants.items()}
picks = {v: json.load(open(p.split(":")[0])) for v, p in variants.items()}
first = next(iter(picks.values()))
ratio = ratios(first, rest)
kept, groups = {}, defaultdict(list)
for k, p in first.items():
    if (k, p["tuned"]) not in ratio or not all(k in q for q in picks.values()):
        continue
    by = {"tuned": p["tuned"]}
    for v, q in picks.items():
        by[v] = max(q[k]["second"][:limit[v]], key=lambda c: ratio.get((k, c), 0.0))
    kept[k] = by
    tries = sorted({c for v, c in by.items() if v != "tuned" and c != p["tuned"]})
    if tries:
        groups[len(tries)].append((k, tries))
os.makedirs(out, exist_ok=True)
json.dump(kept, open(f"{out}/kept.json", "w"), indent=1)
write_groups(out, groups)
