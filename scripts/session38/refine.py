#!/usr/bin/env python3
"""Offline (no GPU): a second round for the first-use benchmark, prototyped. For each held-out
problem, the two fastest configs of its timed list of sixteen (journals of
`groups.sh twins`/`l16`) and their one-step neighbours: one field moved to another value (tile,
warp tile, depth, K-tile, each vector width, the shared-memory layout, split-K), or A's and B's
widths moved together; the legal ones (model_times) not timed already, ranked by the cost
model, the first ROUND (five around the fastest, the rest around the second). Written as
`--try` groups for scripts/session25/groups.sh; picks.json holds `l16` and `refine`
(the sixteen, then the round) per problem, for loo-score.py / compose.py.

    Usage: scripts/session38/refine.py PICKS.json RUN... (a directory of *.jsonl or a .jsonl[.xz]) [--out DIR] [--round 8]
"""
import argparse, json, os, subprocess, sys
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "session25"))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "lib"))
from loo_groups import write_groups  # noqa: E402
from config_text import fields as parse, render  # noqa: E402
from journals import times  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("picks")
ap.add_argument("journals", nargs="+")
ap.add_argument("--out", default="scripts/session38/refine")
ap.add_argument("--round", type=int, default=8)
ap.add_argument("--model-times", default="target/release/examples/model_times")
a = ap.parse_args()

t = {}
for run in a.journals:
    t.update(times(run))
picks = json.load(open(a.picks))

TILE = ["16", "32", "64", "96", "128", "192", "256"]
DOMAIN = {"bm": TILE, "bn": TILE, "wm": TILE, "wn": TILE, "bk": ["16", "32", "64"],
          "st": ["2", "3", "4", "5", "6", "8"], "va": ["1", "2", "4", "8"],
          "vb": ["1", "2", "4", "8"], "vc": ["1", "2", "4", "8"], "lds": ["pad", "swz"]}


def moves(c):
    head, kvs = parse(c)
    d = dict(kvs)
    out = []
    for i, (k, v) in enumerate(kvs):
        for x in DOMAIN.get(k, []):
            if x != v:
                out.append(render(head, kvs[:i] + [(k, x)] + kvs[i + 1:]))
        if k == "sk" and v != "1":
            s = int(v)
            for x in {max(1, s // 2), s * 2, 1} - {s}:
                out.append(render(head, kvs[:i] + [(k, str(x))] + kvs[i + 1:]))
    for xa in DOMAIN["va"]:
        for xb in DOMAIN["vb"]:
            if xa != d["va"] and xb != d["vb"]:
                out.append(render(head, [(k, xa if k == "va" else xb if k == "vb" else v) for k, v in kvs]))
    return out


asked = []  # (problem, config, which)
for problem, p in picks.items():
    timed = [c for c in p["l16"] if (problem, c) in t]
    if len(timed) < 2:
        continue
    top = sorted(timed, key=lambda c: t[(problem, c)])[:2]
    seen = set(p["l16"])
    for which, c in enumerate(top):
        for m in moves(c):
            if m not in seen:
                seen.add(m)
                asked.append((problem, m, which))
out = subprocess.run([a.model_times], input="".join(f"{p} | {c}\n" for p, c, _ in asked),
                     capture_output=True, text=True, check=True).stdout.splitlines()
cands = defaultdict(lambda: ([], []))
for (problem, c, which), line in zip(asked, out):
    f = line.split("\t")
    if f[-1].strip() == "true":
        cands[problem][which].append((float(f[0]), c))
result, groups, new = {}, defaultdict(list), 0
for problem, p in picks.items():
    if problem not in cands:
        continue
    first, second = (sorted(x) for x in cands[problem])
    n1 = (a.round * 5 + 7) // 8
    chosen = [c for _, c in first[:n1]]
    chosen += [c for _, c in second if c not in chosen][: a.round - len(chosen)]
    chosen += [c for _, c in first[n1:] if c not in chosen][: a.round - len(chosen)]
    result[problem] = {"tuned": p["tuned"], "l16": p["l16"], "refine": p["l16"] + chosen}
    tries = [c for c in chosen if (problem, c) not in t and c != p["tuned"]]
    new += len(tries)
    groups[len(tries)].append((problem, tries))
os.makedirs(a.out, exist_ok=True)
json.dump(result, open(f"{a.out}/picks.json", "w"), indent=1)
groups.pop(0, None)
write_groups(a.out, groups)
print(f"{len(result)} problems, {new} configs to time")
