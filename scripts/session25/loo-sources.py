#!/usr/bin/env python3
"""Offline (no GPU): where the fastest of the lookup's four candidates ranks, on session 25's
timings. For each problem of PICKS.json, the lookup (BIN, the database without the entry) is
asked again for its four candidates with their sources and predicted times; with the journals'
timings it prints how often the fastest timed candidate was the first, second, ... and the
geomean of tuned speed for three rules: the lookup's first, the lowest predicted time, and the
lowest with a non-neighbour's handicapped by 0.85 (BENCHMARKS "Session 25", calls 1-2).
  Usage: scripts/session25/loo-sources.py PICKS.json BIN JOURNAL.jsonl... [--db tuned-db/sm_90.toml]
"""
import json, math, os, re, subprocess, sys, tempfile, tomllib
from collections import Counter

args = sys.argv[1:]
db = "tuned-db/sm_90.toml"
if "--db" in args:
    k = args.index("--db"); db = args[k + 1]; del args[k:k + 2]
picks_path, binary, *journals = args
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tuned_db import load, rewrite  # noqa: E402
head, blocks, _ = load(db)  # the home device's: the indices loo-tries.py wrote
picks = json.load(open(picks_path))
t = {}
for f in journals:
    for line in open(f):
        r = json.loads(line)
        if r.get("time_us"):
            t[(r["problem_key"], r["config"])] = r["time_us"]
scratch = os.path.join(tempfile.mkdtemp(), "loo.toml")
best_at, first, by_pred, handicapped = Counter(), [], [], []
for k, p in picks.items():
    tuned = t.get((k, p["tuned"]))
    if not tuned:
        continue
    open(scratch, "w").write(rewrite(head, [b for j, b in enumerate(blocks) if j != p["index"]]))
    j = json.loads(subprocess.run([binary, "lookup", "--problem", k, "--arch", "sm_90", "--db",
                                   scratch, "--no-system-db", "--json", "--candidates", "4"],
                                  capture_output=True, text=True).stdout)
    cands = [(j["config"], j["source"], j["reason"])] + [
        (c["config"], c["source"], c["reason"]) for c in j["candidates"] if c["config"] != j["config"]]
    rows = []
    for c, src, reason in cands[:4]:
        us = re.search(r"\(([\d.]+) µs predicted\)", reason)
        speed = tuned / t[(k, c)] if (k, c) in t else (1.0 if c == p["tuned"] else None)
        rows.append((speed, float(us.group(1)) if us else None, src.get("kind")))
    if rows[0][0] is None:
        continue
    timed = [r for r in rows if r[0] and r[1]]
    first.append(rows[0][0])
    if timed:
        best_at[rows.index(max(timed, key=lambda r: r[0]))] += 1
        by_pred.append(min(timed, key=lambda r: r[1])[0])
        handicapped.append(min(timed, key=lambda r: r[1] / (1 if r[2] == "nearest" else 0.85))[0])
    else:
        by_pred.append(rows[0][0]); handicapped.append(rows[0][0])
gm = lambda v: math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
print("fastest timed candidate at position (0 = the lookup's answer):", dict(sorted(best_at.items())))
print(f"{len(first)} problems: first {gm(first):.3f}, lowest predicted {gm(by_pred):.3f}, "
      f"lowest with guesses handicapped {gm(handicapped):.3f}")
