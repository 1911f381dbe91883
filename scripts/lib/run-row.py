#!/usr/bin/env python3
"""One line about one tuner run, from its journal (DIR/TAG-NAME.jsonl) and report
(DIR/TAG-NAME.json): build tag, problem name, wall s, the first measured candidate's time since
the campaign started, candidates measured, candidates/s from one second after the first on,
best µs, then the named stages of the run's `@stages` record (seconds).

    run-row.py DIR TAG NAME WALL [STAGE...]     e.g. run-row.py $R new fwd-3x3 10.2 codegen_s jit_s
"""
import json
import sys

r, tag, name, wall, *wanted = sys.argv[1:]
ats, stages = [], {}
try:
    lines = open(f"{r}/{tag}-{name}.jsonl").readlines()
except OSError:
    lines = []
for j in map(json.loads, lines):
    if j["config"] == "@stages":
        stages = j["outcome"]
    elif not j["config"].startswith("@") and j.get("at_s") is not None:
        ats.append(j["at_s"])
ats.sort()
nan = float("nan")
first = ats[0] if ats else nan
win = [a for a in ats if a >= first + 1.0]
rate = (len(win) - 1) / (win[-1] - win[0]) if len(win) > 2 and win[-1] > win[0] else nan
try:
    best = json.load(open(f"{r}/{tag}-{name}.json"))[0]["time_us"]
except (OSError, ValueError, LookupError):
    best = nan
try:
    wall = float(wall)
except ValueError:
    wall = nan
cols = " ".join(f"{stages.get(s, nan):7.2f}" for s in wanted)
print(f"{tag:4} {name:9} {wall:6.1f} {first:7.2f} {len(ats):6d} {rate:7.1f} {best:8.1f} {cols}")
