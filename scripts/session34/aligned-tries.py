#!/usr/bin/env python3
"""Writes `PROBLEM | CONFIG` tries for the shipped red=stream entries: each entry's config as
shipped (cut=tile) and the same config with cut=aligned (a v7 string), so one tuner run per
problem times both cuts on the same GPU (`--try FILE --budget 2 --full-timing`). Where the
aligned cut does not apply, legality refuses the second and the run times the first alone.
  Usage: scripts/session34/aligned-tries.py DB > tries.txt
"""
import re, sys, tomllib

# Every field of the v7 string form, in order, with the value an older string stands for.
FIELDS = ["bm", "bn", "bk", "wm", "wn", "st", "va", "vb", "vc", "lds", "sk", "rs", "mma", "red",
          "ld", "pk", "xf", "cl", "ep", "cut"]
DEFAULTS = {"mma": "sync", "red": "atomic", "ld": "cp", "pk": "0", "xf": "none", "cl": "1",
            "ep": "reg", "cut": "tile"}

def v7(config, cut):
    kv = dict(f.split("=") for f in config.split(":", 1)[1].split(","))
    kv = {**DEFAULTS, **kv, "cut": cut}
    return "v7:" + ",".join(f"{k}={kv[k]}" for k in FIELDS)

for e in tomllib.load(open(sys.argv[1], "rb"))["entry"]:
    if "red=stream" in e["config"]:
        print(f'{e["problem"]} | {e["config"]}')
        print(f'{e["problem"]} | {v7(e["config"], "aligned")}')
