#!/usr/bin/env python3
"""Offline (no GPU; numpy): could a learned correction of the cost model rank better? A ridge
regression of log(measured / predicted) on config fields (one-hot) and the model's own terms
(log compute/memory, blocks, blocks an SM, wave tail), per problem centred (only the order
within a problem matters), fitted on the 2026-12-03 re-tune journal (14,083 timed configs of 39
problems) and judged two ways:
  1. leave-one-problem-out: the corrected model's pick among each held-out problem's timed
     configs, as fastest time / pick time (geomean), against the model alone;
  2. transfer to the fallback: fitted on all 39 problems, the pick among the lookup's first
     four candidates of each held-out database entry (loo-rerank's 158 fully timed entries,
     session 25's timings), against the lookup's own order (0.834).
  Usage: scripts/session30/model-correction.py MODEL_TIMES CONVTUNE
  (MODEL_TIMES: target/release/examples/model_times; CONVTUNE: the build whose lookup to use)
"""
import collections, json, lzma, math, re, subprocess, sys
import numpy as np

model_times, convtune = sys.argv[1:3]

def predict(pairs):
    out = subprocess.run([model_times], input="".join(f"{p} | {c}\n" for p, c in pairs),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [l.split("\t") for l in out]

def rows_of(triples):
    rows = []
    for (p, c, t), pr in zip(triples, predict([(p, c) for p, c, _ in triples])):
        if pr[5].strip() != "true" or not math.isfinite(float(pr[0])):
            continue
        f = dict(kv.split("=") for kv in c.split(":", 1)[1].split(","))
        rows.append(dict(p=p, t=t, pred=float(pr[0]), comp=float(pr[1]), mem=float(pr[2]),
                         blocks=int(pr[3]), bps=int(pr[4]), f=f))
    return rows

def feats(r, with_direction):
    f, x = r["f"], {}
    cat = [f"{k}={f[k]}" for k in ("mma", "ld", "red", "lds", "ep", "pk", "xf", "cl", "st", "sk",
                                    "rs", "va", "vb", "vc") if k in f]
    x.update({c: 1.0 for c in cat})
    waves = r["blocks"] / (132 * max(r["bps"], 1))
    num = {"lg_bmbn": math.log2(int(f["bm"]) * int(f["bn"])), "lg_bk": math.log2(int(f["bk"])),
           "lg_wmwn": math.log2(int(f["wm"]) * int(f["wn"])),
           "lg_cm": math.log(max(r["comp"], 1e-3) / max(r["mem"], 1e-3)), "bps": r["bps"],
           "lg_blocks": math.log(max(r["blocks"], 1)),
           "tail": math.ceil(waves) / waves if waves > 0 else 1.0}
    x.update(num)
    if with_direction:
        d = re.search(r"-F (\d)", r["p"]).group(1)
        for k in cat + list(num):
            if k.split("=")[0] in ("mma", "ld", "red", "sk", "rs", "pk", "st") or k in ("lg_bmbn", "lg_cm", "lg_bk"):
                x[f"F{d}:{k}"] = x[k]
    return x

def matrix(rows, wd, names=None):
    fl = [feats(r, wd) for r in rows]
    names = names or sorted({k for x in fl for k in x})
    idx = {n: i for i, n in enumerate(names)}
    X = np.zeros((len(rows), len(names)))
    for i, x in enumerate(fl):
        for k, v in x.items():
            if k in idx:
                X[i, idx[k]] = v
    return X, names

def fit(X, y, pid, lam):
    X, y = X.copy(), y.copy()
    for j in np.unique(pid):
        m = pid == j
        X[m] -= X[m].mean(0); y[m] -= y[m].mean()
    return np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ y)

gm = lambda v: math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
best = {}
for line in lzma.open("recordings/journals/h200-retune-2026-12-03.jsonl.xz", "rt"):
    r = json.loads(line)
    if r.get("time_us") and "config" in r:
        k = (r["problem_key"], r["config"]); best[k] = min(r["time_us"], best.get(k, 1e18))
train = rows_of([(p, c, t) for (p, c), t in best.items()])
probs = sorted({r["p"] for r in train})
pid = np.array([probs.index(r["p"]) for r in train])
lp = np.log([r["pred"] for r in train]); lt = np.log([r["t"] for r in train])

def picks(adj):
    return [math.exp(lt[pid == j].min() - lt[pid == j][np.argmin((lp + adj)[pid == j])])
            for j in range(len(probs))]

print(f"{len(train)} timed configs of {len(probs)} problems")
print(f"1. model alone: pick among the timed configs {gm(picks(np.zeros(len(train)))):.3f}")
for wd in (False, True):
    X, names = matrix(train, wd)
    for lam in (30, 100, 300):
        adj = np.zeros(len(train))
        for j in range(len(probs)):
            w = fit(X[pid != j], lt[pid != j] - lp[pid != j], pid[pid != j], lam)
            adj[pid == j] = X[pid == j] @ w
        print(f"   corrected ({'fields x direction' if wd else 'fields'}, ridge {lam}): "
              f"{gm(picks(adj)):.3f} (leave-one-problem-out)")

# 2. The fallback: session 27's leave-one-out candidates with session 25's timings.
src = open("scripts/session27/loo-rerank.py").read().split("gm = lambda")[0]
sys.argv = ["loo-rerank", convtune]
scope = {}
exec(compile(src, "loo-rerank", "exec"), scope)
full = scope["full"]
groups = []
for cs in full:
    key = next(k for k, v in scope["cands"].items() if v is cs)
    rs = rows_of([(key, c["config"], 1.0 / c["speed"]) for c in cs])
    if len(rs) == 4:
        groups.append(rs)
print(f"2. fallback, {len(groups)} held-out entries with four timed candidates: the lookup's "
      f"first {gm([cs[0]['speed'] for cs in full]):.3f}, lowest predicted "
      f"{gm([1 / min(g, key=lambda r: r['pred'])['t'] for g in groups]):.3f}, fastest of four "
      f"{gm([max(c['speed'] for c in cs) for cs in full]):.3f}")
for wd in (False, True):
    X, names = matrix(train, wd)
    for lam in (30, 100, 300):
        w = fit(X, lt - lp, pid, lam)
        got = []
        for g in groups:
            Xg, _ = matrix(g, wd, names)
            got.append(1 / g[int(np.argmin(np.log([r["pred"] for r in g]) + Xg @ w))]["t"])
        print(f"   corrected ({'fields x direction' if wd else 'fields'}, ridge {lam}): {gm(got):.3f}")
