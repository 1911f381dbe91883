#!/usr/bin/env python3
"""Offline (no GPU): could a better ranking of the lookup's four candidates lift the untuned
fallback (issue 16)? Leave-one-out over the shipped database: for each entry, BIN's lookup with
the database without it (its first four candidates, their sources and predicted times); session
25's timings of those configs against the entry's tuned winner in the same process
(recordings/journals/h200-session25-loo.jsonl.xz) score each rule as tuned time / pick time,
geomean over the problems whose four candidates were all timed. Rules: the lookup's first; the
fastest of the four (the ceiling of any ranking); the lowest predicted; the nearest neighbour's;
and a learned one (log predicted time plus weights on the source and config fields, chosen on
the other problems: leave-one-out cross-validation).
  Usage: scripts/session27/loo-rerank.py BIN [--db tuned-db/sm_90.toml]
"""
import collections, glob, itertools, json, lzma, math, os, re, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

args = sys.argv[1:]
db = "tuned-db/sm_90.toml"
if "--db" in args:
    k = args.index("--db"); db = args[k + 1]; del args[k:k + 2]
binary = args[0]
head, *blocks = open(db).read().split("\n[[entry]]\n")
problems = [re.search(r'problem = "([^"]+)"', b).group(1) for b in blocks]

def lookup(i):
    keep = [b for j, b in enumerate(blocks) if j != i]
    path = os.path.join(tempfile.mkdtemp(), "loo.toml")
    open(path, "w").write(re.sub(r"entries = \d+", f"entries = {len(keep)}", head)
                          + "".join("\n[[entry]]\n" + b for b in keep))
    o = subprocess.run([binary, "lookup", "--problem", problems[i], "--arch", "sm_90", "--db", path,
                        "--no-system-db", "--json", "--candidates", "4"], capture_output=True, text=True)
    if o.returncode:
        return []
    j = json.loads(o.stdout)
    found = [(j["config"], j["source"], j["reason"])] + [
        (c["config"], c["source"], c["reason"]) for c in j.get("candidates", []) if c["config"] != j["config"]]
    return [dict(config=c, kind=s.get("kind"), dist=s.get("distance"),
                 pred=float(re.search(r"\(([\d.]+) µs predicted\)", r).group(1)) if "predicted" in r else None)
            for c, s, r in found[:4]]

with ThreadPoolExecutor(os.cpu_count()) as ex:
    cands = dict(zip(problems, ex.map(lookup, range(len(problems)))))
# Session 25's tuned winners and the timings, tuned time / time within each journal.
tuned = {}
for pj in glob.glob("scripts/session25/loo/*/picks.json"):
    tuned.update({k: p["tuned"] for k, p in json.load(open(pj)).items()})
per_file = collections.defaultdict(dict)
for line in lzma.open("recordings/journals/h200-session25-loo.jsonl.xz", "rt"):
    r = json.loads(line)
    if r.get("time_us") and "config" in r:
        per_file[r["file"]][(r["problem_key"], r["config"])] = r["time_us"]
def kernel(c):
    """`c` with a `vc` its kernel does not read written as `vc=*` (`PerfConfig::reads_vec_c`:
    split-K slices added by atomics, or `ep=tma`): configs that differ only there compile to
    the same PTX, and a timing of one is a timing of the others."""
    f = dict(x.split("=") for x in c.split(":", 1)[1].split(","))
    if (f.get("red", "atomic") == "atomic" and f.get("sk", "1") != "1") or f.get("ep") == "tma":
        return re.sub(r"\bvc=\d+", "vc=*", c)
    return c


speeds = collections.defaultdict(list)
for t in per_file.values():
    for (k, c), us in t.items():
        if (k, tuned.get(k)) in t:
            speeds[(k, kernel(c))].append(t[(k, tuned[k])] / us)
speed = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in speeds.items()}
full = []
for k, cs in cands.items():
    for c in cs:
        c["speed"] = speed.get((k, kernel(c["config"])),
                               1.0 if kernel(c["config"]) == kernel(tuned.get(k, "v:x=0")) else None)
    if len(cs) == 4 and all(c["speed"] and c["pred"] for c in cs):
        full.append(cs)
gm = lambda v: math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
def report(name, pick):
    v = [pick(cs)["speed"] for cs in full]
    print(f"{name:44} {gm(v):.3f}  min {min(v):.3f}  below 0.8: {sum(x < 0.8 for x in v)}")
print(f"{len(full)} of {len(problems)} entries with all four candidates timed")
report("the lookup's first", lambda cs: cs[0])
report("the fastest of the four (ceiling)", lambda cs: max(cs, key=lambda c: c["speed"]))
report("the lowest predicted", lambda cs: min(cs, key=lambda c: c["pred"]))
report("the nearest neighbour's", lambda cs: min(cs, key=lambda c: c["dist"] if c["dist"] is not None else 1e9))
def fields(c):
    f = dict(kv.split("=") for kv in c["config"].split(":")[1].split(","))
    return [c["kind"] != "nearest", f.get("ld") == "ws", f.get("red") == "stream", int(f["st"]) >= 5,
            (c["dist"] or 8.0) / 4, f.get("rs", "1") != "1", int(f["bm"]) * int(f["bn"]) >= 128 * 128]
X = [[(math.log(c["pred"]), fields(c), c["speed"]) for c in cs] for cs in full]
grid = list(itertools.product([0, .1, .2, .4], [0, .1, .2, .4], [0, .1, .2, .4], [0, .1, .2],
                              [-.1, 0, .1], [-.1, 0, .1], [-.2, 0, .2]))
got = [[math.log(min(p, key=lambda x: x[0] + sum(w * f for w, f in zip(ws, x[1])))[2]) for p in X] for ws in grid]
sums = [sum(g) for g in got]
cv = [got[max(range(len(grid)), key=lambda j: sums[j] - got[j][i])][i] for i in range(len(X))]
print(f"{'learned weights, leave-one-out cross-validated':44} {math.exp(sum(cv) / len(cv)):.3f}  "
      f"(in sample {math.exp(max(sums) / len(X)):.3f})")
