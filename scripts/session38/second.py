#!/usr/bin/env python3
"""Offline (no GPU): the library's second round (`convtune lookup --measured`) for each held-out
problem, from its list of sixteen's times in a leave-one-out run (groups.sh's journals), as
`--try` groups of the configs not timed yet (for groups.sh) and picks.json with `l16` and
`second` (the sixteen, then the round) per problem, for score-runs.py.

    Usage: scripts/session38/second.py PICKS.json RUN_DIR [TIMED_DIR...] [--out DIR]
           [--convtune target/release/convtune]
    (RUN_DIR: the run whose times of the sixteen are the first round; TIMED_DIR: other runs
    whose configs need no new timing; each a directory of *.jsonl or a .jsonl[.xz] journal)
"""
import argparse, json, os, subprocess, sys, tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "session25"))
sys.path.insert(0, here)
from loo_groups import write_groups  # noqa: E402
from journals import records  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("picks")
ap.add_argument("run")
ap.add_argument("timed", nargs="*")
ap.add_argument("--out", default="scripts/session38/second")
ap.add_argument("--convtune", default="target/release/convtune")
a = ap.parse_args()


def times(run):
    """Every timed or failed config of a run: {(problem, config): µs or None}."""
    return {(r["problem_key"], r["config"]): r.get("time_us") for r in records(run)
            if "config" in r and not r["config"].startswith("@")}


first = times(a.run)
done = set(first)
for run in a.timed:
    done |= set(times(run))
picks = json.load(open(a.picks))


def round2(item):
    problem, p = item
    lines = [f"{c} {first[(problem, c)] or 'failed'}\n" for c in p["l16"] if (problem, c) in first]
    if not lines:
        return problem, None
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.writelines(lines)
    out = subprocess.run([a.convtune, "lookup", "--problem", problem, "--arch", "sm_90",
                          "--measured", f.name, "--json"], capture_output=True, text=True)
    os.unlink(f.name)
    if out.returncode != 0:
        print(f"{problem}: {out.stderr.strip()}", file=sys.stderr)
        return problem, None
    return problem, json.loads(out.stdout)["next"]


with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    rounds = dict(pool.map(round2, picks.items()))
result, groups, new = {}, defaultdict(list), 0
for problem, p in picks.items():
    nxt = rounds.get(problem)
    if nxt is None:
        continue
    result[problem] = {"tuned": p["tuned"], "l16": p["l16"], "second": p["l16"] + nxt}
    tries = [c for c in nxt if (problem, c) not in done and c != p["tuned"]]
    new += len(tries)
    if tries:
        groups[len(tries)].append((problem, tries))
os.makedirs(a.out, exist_ok=True)
json.dump(result, open(f"{a.out}/picks.json", "w"), indent=1)
write_groups(a.out, groups)
print(f"{len(result)} problems, {new} configs to time")
