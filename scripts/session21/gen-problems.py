#!/usr/bin/env python3
"""Random convolution problems for the fallback's evidence (issue 16 item 5), not a benchmark list.

The shipped database held 39 entries, most from the ResNet-50 suite, so an unseen problem's
nearest tuned neighbours were often far from it (session 20's cross matrix: the best borrowed
winner reaches 0.847 of the problem's own, and the fallback picks 97% of that). Tuning a broad
sample of convolutions in general, every direction, precision, layout, filter, stride and
grouping a CNN uses, gives every family neighbours. Each sample is tuned with the database that
exists before it, so the tuning run itself measures the fallback on problems it has not seen
(`before` in the report: the lookup's config, timed in the same run as the winner).

Sizes are drawn so that a kernel runs ~10 µs to a few ms (GFLOP bounds per precision) and a
problem is never already in the database. The seed fixes the sample; `--skip` leaves out the
first sets (so that later sets are drawn from the same stream).
  Usage: scripts/session21/gen-problems.py [--seed 21] [--count 60] [--skip 0] [--db tuned-db/sm_90.toml]
"""
import argparse
import json
import random
import subprocess
import tomllib

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, default=21)
ap.add_argument("--count", type=int, default=60)
ap.add_argument("--skip", type=int, default=0, help="problems drawn and dropped first")
ap.add_argument("--db", default="tuned-db/sm_90.toml")
ap.add_argument("--bin", default="target/release/convtune", help="to canonicalise the keys")
a = ap.parse_args()
rng = random.Random(a.seed)


def pick(weighted):
    return rng.choices([v for v, _ in weighted], [w for _, w in weighted])[0]


def draw():
    dtype = pick([("convbfp16", 4), ("convfp16", 3), ("conv", 3)])
    direction = pick([(1, 1), (2, 1), (4, 1)])
    if dtype == "conv":
        layout = pick([("NCHW", 7), ("NHWC", 3)])
    else:
        layout = pick([("NHWC", 8), ("NCHW", 2)])
    r, s = pick([((1, 1), 35), ((3, 3), 45), ((5, 5), 7), ((7, 7), 5), ((1, 7), 3), ((7, 1), 3),
                 ((1, 3), 1), ((3, 1), 1)])
    stride = pick([(1, 7), (2, 3)])
    grouping = pick([("dense", 75), ("grouped", 12), ("depthwise", 13)])
    hw = pick([(7, 2), (14, 3), (17, 1), (28, 3), (35, 1), (56, 3), (112, 1), (9, 1), (20, 1)])
    n = pick([(8, 1), (16, 2), (32, 3), (64, 3), (128, 1)])
    chans = [16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512, 768, 1024, 2048]
    c = rng.choice(chans)
    if grouping == "depthwise":
        g, k = c, c * pick([(1, 4), (2, 1)])
        r, s = pick([((3, 3), 6), ((5, 5), 2), ((7, 7), 1)]), None
        r, s = r
    elif grouping == "grouped":
        cpg = pick([(4, 1), (8, 2), (16, 2), (32, 1), (64, 1)])
        c = max(c, cpg * 2) // cpg * cpg
        g = c // cpg
        k = c * pick([(1, 3), (2, 1)])
    else:
        g = 1
        k = rng.choice([x for x in chans if c / 8 <= x <= c * 8])
    pad_h, pad_w = r // 2, s // 2
    ho = (hw + 2 * pad_h - r) // stride + 1
    wo = (hw + 2 * pad_w - s) // stride + 1
    if ho < 1 or wo < 1:
        return None
    gflop = 2 * n * k * ho * wo * (c // g) * r * s / 1e9
    lo, hi = {"conv": (0.02, 6), "convfp16": (0.02, 40), "convbfp16": (0.02, 40)}[dtype]
    if not lo <= gflop <= hi or n * c * hw * hw > 64 << 20 or n * k * ho * wo > 64 << 20:
        return None
    line = (f"{dtype} -n {n} -c {c} -H {hw} -W {hw} -k {k} -y {r} -x {s} -p {pad_h} -q {pad_w} "
            f"-u {stride} -v {stride} -g {g} -F {direction}")
    return line + (" --layout NHWC" if layout == "NHWC" else "")


def key(line):
    """The canonical key (`convtune lookup --json` prints it), None when it does not lower."""
    o = subprocess.run([a.bin, "lookup", "--problem", line, "--arch", "sm_90", "--json"],
                       capture_output=True, text=True)
    if o.returncode != 0:
        return None

    return json.loads(o.stdout)["problem"]


have = {e["problem"] for e in tomllib.load(open(a.db, "rb"))["entry"]}
out, drawn = [], 0
while len(out) < a.count:
    line = draw()
    if line is None:
        continue
    k = key(line)
    if k is None or k in have:
        continue
    have.add(k)
    drawn += 1
    if drawn > a.skip:
        out.append(line)
print("\n".join(out))
