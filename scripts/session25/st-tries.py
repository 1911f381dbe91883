#!/usr/bin/env python3
"""Offline: the `--try` lists of session 25's call 3. For each leave-one-out pick (a picks.json of
scripts/session25/loo-tries.py) whose pipeline depth the cost model would change (another `st`
predicted faster, legal), the pick at every legal `st` of the spaces, so that the timed sweep
says whether the model's choice of `st` beats the neighbour's.
  Usage: scripts/session25/st-tries.py MODEL_TIMES OUT PICKS.json:VARIANT...
"""
import json, re, subprocess, sys
from collections import defaultdict

from loo_groups import write_groups

model, out, *sets = sys.argv[1:]
groups = defaultdict(list)
for spec in sets:
    path, variant = spec.split(":")
    for k, p in json.load(open(path)).items():
        if not p[variant]:
            continue
        first = p[variant][0]
        sweep = [re.sub(r"\bst=\d+", f"st={v}", first) for v in range(2, 9)]
        o = subprocess.run([model], input="".join(f"{k} | {c}\n" for c in sweep),
                           capture_output=True, text=True, check=True).stdout.split("\n")
        legal = [(c, float(line.split("\t")[0])) for c, line in zip(sweep, o) if line.endswith("true")]
        own = dict(legal).get(first)
        if own is None or min(t for _, t in legal) >= own * 0.999:
            continue
        tries = [c for c, _ in legal if c != p["tuned"]]
        groups[len(tries)].append((k, tries))
write_groups(out, groups)
