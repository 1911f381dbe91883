#!/usr/bin/env python3
"""How far above cuDNN a layer can go at all: for each layer of a same-harness run
(scripts/same-harness.py --json), the direct convolution's FLOPs, both sides' TFLOP/s, and the
largest cuDNN/ours ratio any kernel could reach, running at the bf16 matmul rate measured in the
same session (the chip's practical ceiling). A layer whose ceiling is below a target ratio
cannot meet it by kernel work.

    Usage: scripts/ceiling.py SAME.json MATMUL_TFLOPS [--only REGEX] [--protocol graph|cold]
"""
import argparse
import json
import re


def flops(line):
    f = dict(re.findall(r"-(\w) (\d+)", line))
    n, c, h, w, k = (int(f[x]) for x in "ncHWk")
    y, x = int(f["y"]), int(f["x"])
    p, q, u, v = (int(f.get(z, 0)) for z in "pquv")
    l, j, g = (int(f.get(z, 1)) for z in "ljg")
    ho = (h + 2 * p - l * (y - 1) - 1) // u + 1
    wo = (w + 2 * q - j * (x - 1) - 1) // v + 1
    return 2.0 * n * k * ho * wo * (c // g) * y * x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("same")
    ap.add_argument("rate", type=float)
    ap.add_argument("--only", default="")
    ap.add_argument("--protocol", default="graph", choices=["graph", "cold"])
    a = ap.parse_args()
    rows = json.load(open(a.same))
    print(f"protocol {a.protocol}, ceiling {a.rate:.0f} TFLOP/s")
    print(f"{'ours us':>8} {'cuDNN us':>8} {'ours TF/s':>9} {'cuDNN TF/s':>10} {'ratio':>6} {'ceiling':>7}  problem")
    for r in rows:
        if not r.get("ok") or not re.search(a.only, r["problem"]):
            continue
        ours, cud = r[f"ours_{a.protocol}"], r[f"cudnn_{a.protocol}"]
        fl = flops(r["problem"])
        best = fl / (a.rate * 1e6)  # us at the ceiling
        print(f"{ours:8.1f} {cud:8.1f} {fl / ours / 1e6:9.0f} {fl / cud / 1e6:10.0f} {cud / ours:6.3f} {cud / best:7.2f}  {r['problem'].split(' -I')[0]}")


if __name__ == "__main__":
    main()
