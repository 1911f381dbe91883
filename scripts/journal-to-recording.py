#!/usr/bin/env python3
"""Turn the journal of an exhaustive tuning run into replay recordings (one JSON per problem).

    python3 scripts/journal-to-recording.py JOURNAL.jsonl OUTDIR --device "NVIDIA H200 (…)" --arch sm_90

Every journal line is one measured candidate; a failed one (no time) is recorded as null.
"""
import argparse, json, os, re
from collections import OrderedDict

ap = argparse.ArgumentParser()
ap.add_argument("journal")
ap.add_argument("outdir")
ap.add_argument("--device", required=True)
ap.add_argument("--arch", default="sm_90")
a = ap.parse_args()
by = OrderedDict()
for line in open(a.journal):
    if not line.strip():
        continue
    r = json.loads(line)
    if r["config"].startswith("@"):  # a problem-level record (stage timings), not a candidate
        continue
    by.setdefault(r["problem_key"], OrderedDict())[r["config"]] = r.get("time_us")
os.makedirs(a.outdir, exist_ok=True)
for key, cands in by.items():
    slug = re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_")[:120]
    rec = {"problem": key, "arch": a.arch, "device": a.device,
           "candidates": [{"config": c, "time_us": t} for c, t in cands.items()]}
    path = os.path.join(a.outdir, slug + ".json")
    json.dump(rec, open(path, "w"), indent=0)
    ok = [t for t in cands.values() if t]
    print(f"{path}: {len(cands)} candidates, {len(ok)} timed, best {min(ok) if ok else None}")
