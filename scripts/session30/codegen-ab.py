#!/usr/bin/env python3
"""Offline (no GPU): do two builds generate the same kernels, and at what LLVM cost? Compiles
(`convtune compile`, codegen cache off) the shipped database's winners and SAMPLE random legal
configs of each problem of PROBLEMS per arch with both binaries, compares the PTX / code objects
byte for byte and sums each build's compile steps (IR, O3, back end; CPU seconds).
  Usage: scripts/session30/codegen-ab.py OLD_BIN NEW_BIN [--problems FILE] [--sample N]
         [--arch sm_90,gfx90a,gfx942] [--seed S]
"""
import argparse, json, os, random, re, subprocess, tempfile
from concurrent.futures import ThreadPoolExecutor

ap = argparse.ArgumentParser()
ap.add_argument("old"); ap.add_argument("new")
ap.add_argument("--problems", default="scripts/session30/codegen-problems.txt")
ap.add_argument("--sample", type=int, default=12)
ap.add_argument("--arch", default="sm_90,gfx90a,gfx942")
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()
random.seed(a.seed)
jobs = [("sm_90", p, c) for p, c in re.findall(r'problem = "([^"]+)"\nconfig = "([^"]+)"',
                                                open("tuned-db/sm_90.toml").read())]
problems = [l.strip() for l in open(a.problems) if l.strip() and not l.startswith("#")]
for arch in a.arch.split(","):
    for p in problems:
        legal = subprocess.run([a.old, "space", "--problem", p, "--arch", arch, "--list"],
                               capture_output=True, text=True).stdout.split()
        jobs += [(arch, p, c) for c in random.sample(legal, min(a.sample, len(legal)))]
out = tempfile.mkdtemp()
env = dict(os.environ, CONVTUNE_CODEGEN_CACHE="off")

def compile(job):
    i, (arch, p, c), which = job
    path = f"{out}/{which}-{i}"
    o = subprocess.run([getattr(a, which), "compile", "--problem", p, "--config", c, "--arch", arch,
                        "-o", path, "--no-system-db", "--json"], capture_output=True, text=True, env=env)
    if o.returncode:
        return None, None
    return json.loads(o.stdout)["steps_s"], open(path, "rb").read()

steps = {"old": {}, "new": {}}
same = differ = failed = 0
with ThreadPoolExecutor(os.cpu_count()) as ex:
    # Alternate the builds job by job so that machine load falls on both alike.
    for i, job in enumerate(jobs):
        (so, bo), (sn, bn) = ex.map(compile, [(i, job, "old"), (i, job, "new")])
        if so is None or sn is None:
            failed += 1
            continue
        for which, s in (("old", so), ("new", sn)):
            for k, v in s.items():
                steps[which][k] = steps[which].get(k, 0) + v
        if bo == bn:
            same += 1
        else:
            differ += 1
            print(f"differs: {job[0]} {job[2]} | {job[1]}")
print(f"{len(jobs)} kernels: {same} byte-identical, {differ} differ, {failed} failed to compile")
for which in ("old", "new"):
    print(which, {k: round(v, 2) for k, v in steps[which].items()})
