"""Reads one run's journal records: RUN is a directory of *.jsonl (a run's own output, as
groups.sh leaves it) or one journal file, .jsonl or .jsonl.xz (recordings/journals/)."""
import glob
import json
import lzma
import os


def records(run):
    paths = sorted(glob.glob(f"{run}/*.jsonl")) if os.path.isdir(run) else [run]
    for path in paths:
        opener = lzma.open if path.endswith(".xz") else open
        with opener(path, "rt") as f:
            for line in f:
                yield json.loads(line)


def times(run):
    """{(problem key, config): µs} of a run's timed configs."""
    return {(r["problem_key"], r["config"]): r["time_us"]
            for r in records(run) if "config" in r and r.get("time_us")}


def ratios(picks, runs):
    """{(problem, config): tuned µs / config µs} over `runs`, each config against the tuned
    winner (`picks[problem]["tuned"]`) of its own run (groups.sh times the winner first in
    every run); a config timed in several runs counts its first."""
    ratio = {}
    for run in runs:
        t = times(run)
        for k, p in picks.items():
            tuned = t.get((k, p["tuned"]))
            if not tuned:
                continue
            for (kk, c), us in t.items():
                if kk == k and (k, c) not in ratio:
                    ratio[(k, c)] = tuned / us
    return ratio
