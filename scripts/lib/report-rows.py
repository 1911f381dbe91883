"""Prints the rows of `convtune --report` files (time, problem, config), one block a file.

    python3 scripts/lib/report-rows.py REPORT.json [...]
"""
import json
import sys

for f in sys.argv[1:]:
    print("==", f.split("/")[-1])
    try:
        rows = json.load(open(f))
    except Exception as e:  # a missing or half-written report is a line, not a stop
        print("  unreadable:", e)
        continue
    for r in rows if isinstance(rows, list) else [rows]:
        print(f"  {r.get('time_us', 0):9.1f} us  {r.get('problem', '')[:60]}  {r.get('config', '')}")
