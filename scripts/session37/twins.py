#!/usr/bin/env python3
"""Offline (no GPU): the `--try` groups of a next experiment for issue 16's tail — each
held-out problem's list of sixteen (scripts/session37/l16/picks.json) plus the twins of its
first two configs: the other shared-memory layout (`lds` pad <-> swz) and A's, B's and both
vector widths halved, the legal ones not in the list already (legality from the model_times
example). Written to OUT/g<N>/ for scripts/session25/groups.sh, picks to OUT/picks.json with
`l16` and `twins` (the sixteen, then the twins) per problem.

    Usage: scripts/session37/twins.py [--out scripts/session37/twins]
           [--model-times target/release/examples/model_times]
    Then (device): LOO_DIR=scripts/session37 LIMIT=560 bash scripts/session25/groups.sh twins
    (the groups are not committed: this script writes them in a second; ~4,940 configs,
    ~490 s on an H100). Score: loo-score.py OUT/picks.json j/*.jsonl --best 16,24
"""
import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "session25"))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from loo_groups import write_groups  # noqa: E402
from config_text import fields, render  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--picks", default="scripts/session37/l16/picks.json")
ap.add_argument("--out", default="scripts/session37/twins")
ap.add_argument("--model-times", default="target/release/examples/model_times")
a = ap.parse_args()


def twins(c):
    head, kvs = fields(c)
    d = dict(kvs)
    out = []
    flip = {"pad": "swz", "swz": "pad"}.get(d.get("lds"))
    if flip:
        out.append(render(head, [(k, flip if k == "lds" else v) for k, v in kvs]))
    for names in (("va",), ("vb",), ("va", "vb")):
        if all(int(d[n]) > 1 for n in names):
            out.append(render(head, [(k, str(int(v) // 2) if k in names else v) for k, v in kvs]))
    return out


picks = json.load(open(a.picks))
asked = []
for problem, p in picks.items():
    listed = set(p["l16"]) | {p["tuned"]}
    for c in p["l16"][:2]:
        for t in twins(c):
            if t not in listed:
                listed.add(t)
                asked.append((problem, t))
# Legality (and the model's time) of every twin in one model_times run.
out = subprocess.run([a.model_times], input="".join(f"{p} | {c}\n" for p, c in asked),
                     capture_output=True, text=True, check=True).stdout.splitlines()
legal = defaultdict(list)
for (problem, c), line in zip(asked, out):
    if line.split("\t")[-1].strip() == "true":
        legal[problem].append(c)
result, groups = {}, defaultdict(list)
for problem, p in picks.items():
    result[problem] = {"tuned": p["tuned"], "l16": p["l16"], "twins": p["l16"] + legal[problem]}
    tries = [c for c in result[problem]["twins"] if c != p["tuned"]]
    groups[len(tries)].append((problem, tries))
os.makedirs(a.out, exist_ok=True)
json.dump(result, open(f"{a.out}/picks.json", "w"), indent=1)
write_groups(a.out, groups)
print(f"{sum(map(len, legal.values()))} legal twins of {len(asked)} over {len(picks)} problems")
