#!/usr/bin/env python3
"""The table of a 10 s against 80 s comparison (issue 16): DIR holds p<i>.txt (the problem),
t<T>-<i>.json (the tuner's report), t<T>-<i>.jsonl (its journal) for T = 10 and 80, and
cudnn.json (scripts/compare-cudnn.py). Prints per problem cuDNN's time, each search's best and
candidate count, 10 s / 80 s and cuDNN / 10 s (nan where a search did not run).
  Usage: scripts/lib/short-vs-long.py DIR COUNT
"""
import json
import sys

u, count = sys.argv[1], int(sys.argv[2])
try:
    cud = {r["problem"].strip(): r["cudnn_us"] for r in json.load(open(f"{u}/cudnn.json"))["rows"]}
except Exception as e:
    cud = {}
    print("cudnn:", e)


def best(t, i):
    try:
        return json.load(open(f"{u}/t{t}-{i}.json"))[0]["time_us"]
    except Exception:
        return float("nan")


def count_of(t, i):
    n = 0
    try:
        for line in open(f"{u}/t{t}-{i}.jsonl"):
            n += not json.loads(line)["config"].startswith("@")
    except OSError:
        pass
    return n


print(f"{'problem':66} {'cuDNN':>7} {'10 s':>7} {'n':>5} {'80 s':>7} {'n':>5} {'10/80':>6} {'cuDNN/10 s':>10}")
for i in range(1, count + 1):
    p = open(f"{u}/p{i}.txt").read().strip()
    s, l = best(10, i), best(80, i)
    c = cud.get(p, float("nan"))
    print(f"{p[:66]:66} {c:7.1f} {s:7.1f} {count_of(10, i):5d} {l:7.1f} {count_of(80, i):5d} "
          f"{s / l:6.3f} {c / s:10.3f}")
