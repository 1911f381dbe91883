#!/usr/bin/env python3
"""Offline (no GPU): the `--try` lists that time untuned-fallback variants leave-one-out.

For every entry of a database matching --only: the database without it is the only database,
each lookup build (`--variant NAME=BIN`) answers its first --candidates configs, and, with
--sweep-sk, the first variant's pick is also listed at every split-K of --sk (with --sweep
FIELD=V1,V2…, at each value of that field; repeatable). Writes
OUT/picks.json (entry → variant → configs) and, grouped by how many configs a problem has,
OUT/g<N>/{problems.txt,tries.txt}: one tuner run per group with `--budget N+1` times the tuned
winner (the lookup's answer from the built-in database: the entry itself) and exactly those.
  Usage: scripts/session25/loo-tries.py --variant base=BIN [--variant new=BIN2] [--only REGEX]
         [--candidates 4] [--sweep-sk] [--sweep FIELD=V1,V2…] [--out out/loo-tries]
"""
import argparse, json, os, re, subprocess, sys, tempfile, tomllib
from collections import defaultdict

from loo_groups import write_groups
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tuned_db import load, rewrite  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--db", default="tuned-db/sm_90.toml")
ap.add_argument("--variant", action="append", required=True)
ap.add_argument("--only", default="")
ap.add_argument("--candidates", type=int, default=4)
ap.add_argument("--sweep-sk", action="store_true")
ap.add_argument("--sk", default="1,2,3,4,5,7,8,11,16,22,32,44,64")
ap.add_argument("--legal-only", help="the model_times example binary: drop illegal configs")
ap.add_argument("--sweep", action="append", default=[], help="FIELD=V1,V2,...")
ap.add_argument("--out", default="out/loo-tries")
a = ap.parse_args()
if a.sweep_sk:
    a.sweep.append("sk=" + a.sk)
os.makedirs(a.out, exist_ok=True)
# The home device's entries only: another GPU's entry of a held-out problem would answer it.
head, blocks, entries = load(a.db)
arch = tomllib.load(open(a.db, "rb"))["header"]["arch"]
variants = [v.split("=", 1) for v in a.variant]
# The database without the entry at hand: scratch, rewritten per entry.
path = os.path.join(tempfile.mkdtemp(), "loo.toml")
picks, groups = {}, defaultdict(list)
for i, e in enumerate(entries):
    if not re.search(a.only, e["problem"]):
        continue
    open(path, "w").write(rewrite(head, [b for j, b in enumerate(blocks) if j != i]))
    got = {}
    for name, binary in variants:
        o = subprocess.run([binary, "lookup", "--problem", e["problem"], "--arch", arch, "--db",
                            path, "--no-system-db", "--json", "--candidates", str(a.candidates)],
                           capture_output=True, text=True)
        if o.returncode:
            got[name] = []
            continue
        j = json.loads(o.stdout)
        got[name] = [j["config"]] + [c["config"] for c in j.get("candidates", [])
                                     if c["config"] != j["config"]]
    configs = [c for cs in got.values() for c in cs]
    if got[variants[0][0]]:
        first = got[variants[0][0]][0]
        for sweep in a.sweep:
            field, values = sweep.split("=", 1)
            configs += [re.sub(rf"\b{field}=\w+", f"{field}={v}", first) for v in values.split(",")]
    configs = [c for k, c in enumerate(configs) if c not in configs[:k] and c != e["config"]]
    if a.legal_only and configs:
        # examples/model_times: the cost model's time and legality of `PROBLEM | CONFIG` lines.
        o = subprocess.run([a.legal_only], input="".join(f"{e['problem']} | {c}\n" for c in configs),
                           capture_output=True, text=True, check=True).stdout.split("\n")
        configs = [c for c, line in zip(configs, o) if line.endswith("true")]
    picks[e["problem"]] = {"tuned": e["config"], "index": i, **got}
    groups[len(configs)].append((e["problem"], configs))
json.dump(picks, open(f"{a.out}/picks.json", "w"), indent=1)
write_groups(a.out, groups)
