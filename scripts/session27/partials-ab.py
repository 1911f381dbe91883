#!/usr/bin/env python3
"""Depthwise backward weight, atomics against partials on the same tiles (session 27): from a
tuner journal of `--try scripts/session27/partials/tries.txt`, per problem the time of each
tile with `red=atomic` and `red=fixup`, and the geomean of atomic / fixup (> 1: partials faster).
  Usage: scripts/session27/partials-ab.py JOURNAL.jsonl
"""
import json, math, sys
from collections import defaultdict

t = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("time_us") and "mma=dw" in r.get("config", ""):
        t[(r["problem_key"], r["config"])] = r["time_us"]
def tile(c):
    """The config without its format version, reduction and load fields: the journal writes an
    atomic depthwise config in the v2 format (no `red=`), its partials twin in v3."""
    return ",".join(f for f in c.split(":", 1)[1].split(",") if not f.startswith(("red=", "ld=")))


pairs = defaultdict(list)
fixup = {(p, tile(c)): us for (p, c), us in t.items() if "red=fixup" in c}
for (p, c), us in t.items():
    if "red=fixup" not in c and (p, tile(c)) in fixup:
        pairs[p].append((us, fixup[(p, tile(c))], c))
ratios = []
for p, v in sorted(pairs.items()):
    best_a, best_f = min(a for a, _, _ in v), min(f for _, f, _ in v)
    ratios += [a / f for a, f, _ in v]
    print(f"atomic {best_a:7.1f}  fixup {best_f:7.1f}  best ratio {best_a / best_f:.3f}  {p}")
if ratios:
    print(f"{len(ratios)} tiles: atomic / fixup geomean "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
