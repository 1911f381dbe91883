#!/usr/bin/env python3
"""The second round's CPU cost (no GPU): `convtune lookup --measured` for each problem of a
first-use pass's JSON (scripts/first-use.py --json), its first round's times as the measured file.

    Usage: scripts/session39/round-cpu.py CONVTUNE FIRST_USE.json
"""
import json, subprocess, sys, time, tempfile, os, statistics
B=sys.argv[1]
rows=json.load(open(sys.argv[2]))
ts=[]
for r in rows:
    if "first_call_ms" not in r or not r["first_call_ms"]: continue
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for c, ms in r["first_call_ms"].items():
            f.write(f"{c} {ms*1000 if ms else 'failed'}\n")
    t=time.perf_counter()
    out=subprocess.run([B,"lookup","--problem",r["problem"],"--arch","sm_90","--measured",f.name],capture_output=True,text=True)
    ts.append(time.perf_counter()-t)
    os.unlink(f.name)
    if out.returncode: print("ERR", out.stderr[:200])
print(f"{len(ts)} problems: median {statistics.median(ts):.2f} s, max {max(ts):.2f} s")
