#!/usr/bin/env python3
"""Offline (no GPU): how well the cost model ranks the direct depthwise kernel (`mma=dw`) on
timed configs. For each problem of the journals, the model's first pick among the timed dw
configs (and among all timed configs, GEMM paths included, with --all) as the fastest's time /
the pick's time; the geomean over problems (1.0 = the model picks the fastest), and the width
choice: among configs that differ only in `va`, the model's against the fastest.
  Usage: scripts/session27/dw-model-picks.py MODEL_TIMES JOURNAL[.xz]... [--all] [-v]
  MODEL_TIMES: target/release/examples/model_times (cargo build --release --example model_times)
  e.g. recordings/journals/h200-session26-call4-dw-bwdw.jsonl.xz (session 26 call 4, bwd-weight)
       recordings/journals/h200-retune-2026-12-03.jsonl.xz (one forward depthwise problem)
"""
import collections, json, lzma, math, re, subprocess, sys

args = [a for a in sys.argv[1:] if not a.startswith("-")]
every, verbose = "--all" in sys.argv, "-v" in sys.argv
best = {}
for path in args[1:]:
    for line in (lzma.open if path.endswith(".xz") else open)(path, "rt"):
        r = json.loads(line)
        if r.get("time_us") and "config" in r:
            k = (r["problem_key"], r["config"])
            best[k] = min(r["time_us"], best.get(k, math.inf))
dw_problems = {p for p, c in best if "mma=dw" in c}
keys = [k for k in best if k[0] in dw_problems and (every or "mma=dw" in k[1])]
out = subprocess.run([args[0]], input="".join(f"{p} | {c}\n" for p, c in keys),
                     capture_output=True, text=True, check=True).stdout.splitlines()
pred = {k: float(o.split("\t")[0]) for k, o in zip(keys, out)}
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
by_problem, by_tile = collections.defaultdict(list), collections.defaultdict(list)
for (p, c) in keys:
    by_problem[p].append((pred[(p, c)], best[(p, c)], c))
    if "mma=dw" in c:
        by_tile[(p, re.sub(r"va=\d+", "", c))].append((pred[(p, c)], best[(p, c)]))
picks = []
for p, rows in sorted(by_problem.items()):
    # Ties go to the config timed first, never to the faster one.
    pick, fastest = min(rows, key=lambda r: r[0]), min(t for _, t, _ in rows)
    picks.append(fastest / pick[1])
    if verbose:
        print(f"{fastest / pick[1]:.3f}  pick {pick[1]:7.1f} µs  fastest {fastest:7.1f}  n={len(rows):4d}  {p}")
widths = [min(t for _, t in rows) / min(rows, key=lambda r: r[0])[1] for rows in by_tile.values() if len(rows) > 1]
print(f"{len(picks)} problems, {len(keys)} timed configs: the model's pick {gm(picks):.3f} of the "
      f"fastest (min {min(picks):.3f}); its width within a tile {gm(widths):.3f} "
      f"({len(widths)} tiles with more than one va timed)")
