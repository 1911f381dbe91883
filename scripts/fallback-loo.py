#!/usr/bin/env python3
"""The untuned fallback, leave-one-out (issue 16 item 5), measured on this GPU.

For every entry of a tuned database: the database without that entry is the only database,
`convtune lookup` picks a config for the entry's problem, and the pick and the tuned config are
both timed here, in the same run (each as a one-config search space, verified first). Also
scores the split of `scripts/fallback-holdout.sh` (COUNT entries held out at once), and problems
outside the database (`--extra FILE`: `problem<TAB>config` lines, the config being the best a
long search found), which are looked up in the whole database.

Several lookups can be scored against the same timings (`--variant NAME=BIN[,VAR=VALUE…]`: a
build and environment for `convtune lookup`; `{db}` in a value is replaced by the name of the
database the lookup reads, `loo<i>`, `holdout` or `whole`, so that e.g. a cost-model
correction fitted without the held-out problems can be named per lookup:
`CONVTUNE_MODEL_CORRECTION=corr/{db}.toml`); each distinct (problem, config) is timed once.

Prints per problem tuned/pick speed per variant (1.0 = as fast as tuned), then per variant and
set the geomean and the minimum; `--dump FILE` writes every pick and timing as JSON (to score
another lookup later on the same timings, where its picks were timed).
  Usage: scripts/fallback-loo.py [--db tuned-db/sm_90.toml] [--bin target/release/convtune]
         [--variant new=target/release/convtune] [--holdout 8] [--no-loo] [--extra FILE]
         [--out out/loo] [--dump FILE]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from tuned_db import load, rewrite  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--db", default="tuned-db/sm_90.toml")
ap.add_argument("--bin", default="target/release/convtune", help="the build that times configs")
ap.add_argument("--variant", action="append", default=[], help="NAME=BIN[,VAR=VALUE...]")
ap.add_argument("--holdout", type=int, default=8, help="also the split of fallback-holdout.sh")
ap.add_argument("--no-loo", action="store_true", help="only the holdout split (and --extra)")
ap.add_argument("--extra", help="problem<TAB>config lines of problems outside the database")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "out"), "loo"))
ap.add_argument("--dump", help="write the picks and timings here (JSON)")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
variants = []
for v in a.variant or [f"new={a.bin}"]:
    name, rest = v.split("=", 1)
    binary, *env = rest.split(",")
    variants.append((name, binary, dict(e.split("=", 1) for e in env)))

# The home device's entries only: another GPU's entry of a held-out problem would answer it.
head, blocks, entries = load(a.db)
arch = tomllib.load(open(a.db, "rb"))["header"]["arch"]


def database(name, drop):
    """The database without the entries at indices `drop`, written once."""
    path = f"{a.out}/{name}.toml"
    open(path, "w").write(rewrite(head, [b for i, b in enumerate(blocks) if i not in drop]))
    return path


def lookup(variant, problem, db):
    _, binary, env = variant
    name = os.path.splitext(os.path.basename(db))[0]
    env = {k: v.replace("{db}", name) for k, v in env.items()}
    o = subprocess.run([binary, "lookup", "--problem", problem, "--arch", arch, "--db", db,
                        "--no-system-db", "--json"], capture_output=True, text=True,
                       env={**os.environ, **env})
    if o.returncode != 0:
        return None, "error: " + o.stderr.strip()[-200:]
    j = json.loads(o.stdout)
    return j["config"], j["source"]["kind"]


timed = {}


def time_config(problem, config):
    """The config's verified median on this GPU, µs (None: it failed); each pair once."""
    if (problem, config) in timed:
        return timed[(problem, config)]
    tag = f"c{len(timed)}"
    t = None
    # `convtune space --pin` writes the one-config space and refuses an illegal config.
    with open(f"{a.out}/{tag}.space.toml", "w") as space:
        pinned = subprocess.run([a.bin, "space", "--problem", problem, "--arch", arch, "--pin",
                                 config], stdout=space, stderr=subprocess.PIPE, text=True)
    if pinned.returncode == 0:
        open(f"{a.out}/{tag}.problem.txt", "w").write(problem + "\n")
        rep = f"{a.out}/{tag}.report.json"
        with open(f"{a.out}/{tag}.log", "w") as log:
            subprocess.run([a.bin, "--problems", f"{a.out}/{tag}.problem.txt", "--space",
                            f"{a.out}/{tag}.space.toml", "--strategy", "exhaustive", "--db",
                            f"{a.out}/{tag}.db.toml", "--journal", f"{a.out}/{tag}.jsonl",
                            "--report", rep, "--quiet", "--full-timing"],
                           stdout=log, stderr=log, timeout=120)
        try:
            t = json.load(open(rep))[0]["time_us"]
        except Exception:
            t = None
    else:
        print(f"  {config} not pinned for {problem}: {pinned.stderr.strip()[-200:]}")
    timed[(problem, config)] = t
    return t


# The sets: (set name, [(problem, tuned config, database to look up in)]).
sets = [] if a.no_loo else [("loo", [(e["problem"], e["config"], database(f"loo{i}", {i}))
                                    for i, e in enumerate(entries)])]
if a.holdout:
    step = max(1, len(entries) // a.holdout)
    held = list(range(0, len(entries), step))[:a.holdout]
    rest = database("holdout", set(held))
    sets.append((f"holdout{a.holdout}", [(entries[i]["problem"], entries[i]["config"], rest)
                                        for i in held]))
if a.extra:
    whole = database("whole", set())
    pairs = [line.rstrip("\n").split("\t")[:2] for line in open(a.extra)
             if line.strip() and not line.startswith("#")]
    sets.append(("unseen", [(p, c, whole) for p, c in pairs]))

picks = []
for set_name, problems in sets:
    speeds = {v[0]: [] for v in variants}
    print(f"== {set_name}: {len(problems)} problems")
    for problem, tuned_cfg, db in problems:
        tuned = time_config(problem, tuned_cfg)
        cells = []
        for v in variants:
            cfg, source = lookup(v, problem, db)
            t = time_config(problem, cfg) if cfg and tuned else None
            s = tuned / t if t else 0.0  # a pick that fails to run counts as speed 0
            if tuned:
                speeds[v[0]].append(s)
            cells.append(f"{v[0]} {s:4.2f} {source[:9]:9}")
            picks.append({"set": set_name, "variant": v[0], "problem": problem, "config": cfg,
                          "source": source, "tuned": tuned_cfg})
        print(f"{tuned or float('nan'):8.1f} us  {'  '.join(cells)}  {problem}", flush=True)
    for name, v in speeds.items():
        if v:
            g = math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
            print(f"{set_name} {name}: geomean {g:.3f} of tuned speed, min {min(v):.3f}, "
                  f"{len(v)} problems (target: geomean >= 0.95, none below 0.8)", flush=True)
print(f"timed {len(timed)} (problem, config) pairs")
if a.dump:
    json.dump({"picks": picks, "timed": [{"problem": p, "config": c, "time_us": t}
                                         for (p, c), t in timed.items()]},
              open(a.dump, "w"), indent=0)
