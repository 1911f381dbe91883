#!/usr/bin/env python3
"""Time convolution problems with PyTorch/cuDNN on this GPU and print them beside convtune.

    python3 scripts/compare-cudnn.py [PROBLEMS_FILE] [--convtune REPORT.json] [--json OUT.json]

PROBLEMS_FILE holds MIOpenDriver lines (the canonical keys convtune prints work too); without
it, the problems are those of the report;
REPORT.json is what `convtune --report` wrote: a list of {problem, time_us, tflops, config}.
cuDNN runs with cudnn.benchmark = True, in the same direction, dtype and memory format,
timed by CUDA-graph replay (median of many replays, L2 flushed between batches).
The bf16 8192^3 matmul rate of this run is printed too, as the chip's ceiling.
"""
import argparse, json, math, shlex, statistics, sys

import torch
import torch.nn.functional as F

DTYPES = {"conv": torch.float32, "convfp16": torch.float16, "convbfp16": torch.bfloat16}
FLAGS = {"-n": "n", "-c": "c", "-H": "h", "-W": "w", "-k": "k", "-y": "y", "-x": "x",
         "-p": "ph", "-q": "pw", "-u": "sh", "-v": "sw", "-l": "dh", "-j": "dw",
         "-g": "g", "-F": "dir"}


def parse(line):
    toks = shlex.split(line.split("#")[0])
    if not toks:
        return None
    if toks[0] not in DTYPES:
        print(f"skipping (not a MIOpenDriver line; use convtune's canonical key): {line.strip()[:80]}",
              file=sys.stderr)
        return None
    p = dict(n=1, c=1, h=1, w=1, k=1, y=1, x=1, ph=0, pw=0, sh=1, sw=1, dh=1, dw=1, g=1, dir=1,
             layout="NCHW", dtype=DTYPES[toks[0]], line=line.strip())
    i = 1
    while i < len(toks):
        t = toks[i]
        if t in FLAGS:
            p[FLAGS[t]] = int(toks[i + 1])
        elif t in ("-I", "--layout"):
            p["layout"] = toks[i + 1].upper()
        i += 2
    p["channels_last"] = p["layout"] in ("NHWC", "NHWGC")
    return p


def out_size(p):
    ho = (p["h"] + 2 * p["ph"] - p["dh"] * (p["y"] - 1) - 1) // p["sh"] + 1
    wo = (p["w"] + 2 * p["pw"] - p["dw"] * (p["x"] - 1) - 1) // p["sw"] + 1
    return ho, wo


def flops(p):
    ho, wo = out_size(p)
    return 2.0 * p["n"] * p["k"] * ho * wo * (p["c"] // p["g"]) * p["y"] * p["x"]


def make_op(p):
    dev, dt = "cuda", p["dtype"]
    mf = torch.channels_last if p["channels_last"] else torch.contiguous_format
    ho, wo = out_size(p)
    x = torch.randn(p["n"], p["c"], p["h"], p["w"], device=dev, dtype=dt).to(memory_format=mf)
    w = torch.randn(p["k"], p["c"] // p["g"], p["y"], p["x"], device=dev, dtype=dt).to(memory_format=mf)
    dy = torch.randn(p["n"], p["k"], ho, wo, device=dev, dtype=dt).to(memory_format=mf)
    kw = dict(stride=(p["sh"], p["sw"]), padding=(p["ph"], p["pw"]),
              dilation=(p["dh"], p["dw"]), groups=p["g"])
    if p["dir"] == 1:
        return lambda: F.conv2d(x, w, **kw)
    if p["dir"] == 2:
        return lambda: torch.ops.aten.convolution_backward(
            dy, x, w, None, kw["stride"], kw["padding"], kw["dilation"], False, (0, 0),
            p["g"], (True, False, False))[0]
    return lambda: torch.ops.aten.convolution_backward(
        dy, x, w, None, kw["stride"], kw["padding"], kw["dilation"], False, (0, 0),
        p["g"], (False, True, False))[1]


def time_graph(fn, min_ms=20.0):
    """Median µs per call over graph replays; each replay runs `reps` calls back to back."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    t0 = torch.cuda.Event(enable_timing=True); t1 = torch.cuda.Event(enable_timing=True)
    t0.record(); fn(); t1.record(); torch.cuda.synchronize()
    one = max(t0.elapsed_time(t1), 1e-3)
    reps = max(1, min(100, int(1.0 / one)))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times = []
    total = 0.0
    while total < min_ms or len(times) < 10:
        flush.zero_()
        t0.record(); g.replay(); t1.record(); torch.cuda.synchronize()
        ms = t0.elapsed_time(t1)
        times.append(ms * 1000.0 / reps)
        total += ms
        if len(times) > 2000:
            break
    return statistics.median(times)


def matmul_rate():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    us = time_graph(lambda: a @ b)
    return 2 * 8192 ** 3 / (us * 1e-6) / 1e12


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problems", nargs="?", help="problem file (default: the report's problems)")
    ap.add_argument("--convtune", help="convtune report JSON")
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ours = {}
    if a.convtune:
        for r in json.load(open(a.convtune)):
            ours[r["problem"]] = r
    lines = open(a.problems).readlines() if a.problems else list(ours)
    probs = [q for q in (parse(l) for l in lines) if q]
    rate = matmul_rate()
    print(f"GPU: {torch.cuda.get_device_name()}  cuDNN {torch.backends.cudnn.version()}  "
          f"bf16 8192^3 matmul: {rate:.0f} TFLOP/s")
    print(f"{'problem':<100} {'cuDNN us':>9} {'TFLOP/s':>8} {'convtune us':>11} {'TFLOP/s':>8} {'cuDNN/ours':>10}")
    rows, ratios = [], []
    for p in probs:
        us = time_graph(make_op(p))
        tf = flops(p) / (us * 1e-6) / 1e12
        mine = None
        for key, r in ours.items():
            q = parse(key)
            if q and all(q[f] == p[f] for f in FLAGS.values()) and q["dtype"] == p["dtype"] and q["channels_last"] == p["channels_last"]:
                mine = r
        row = dict(problem=p["line"], cudnn_us=us, cudnn_tflops=tf)
        if mine:
            row.update(convtune_us=mine["time_us"], convtune_tflops=mine["tflops"], ratio=us / mine["time_us"])
            ratios.append(us / mine["time_us"])
            print(f"{p['line']:<100} {us:9.1f} {tf:8.1f} {mine['time_us']:11.1f} {mine['tflops']:8.1f} {us / mine['time_us']:10.3f}")
        else:
            print(f"{p['line']:<100} {us:9.1f} {tf:8.1f} {'-':>11} {'-':>8} {'-':>10}")
        rows.append(row)
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geomean cuDNN time / convtune time: {gm:.3f} over {len(ratios)} problems (min {min(ratios):.3f})")
    if a.json:
        json.dump(dict(matmul_tflops=rate, rows=rows), open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
