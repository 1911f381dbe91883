#!/usr/bin/env python3
"""Our kernels and cuDNN's timed by the same harness, two protocols, in one process.

scripts/compare-cudnn.py times cuDNN with CUDA-graph replays of back-to-back calls (the L2
flushed once per replay, so most calls find their operands in L2 and pay no launch gap),
while the tuner times each candidate as one launch between device events after a read of
twice the L2 (convtune's `runtime::l2_sweep`). Those are different protocols: for a problem
whose tensors fit in the H200's 50 MB L2 they can differ by a third. This script runs both
sides through both protocols:

- **graph**: compare-cudnn.py's `time_graph` (warm L2, back-to-back calls), for both;
- **cold**: per call a read of 2 × L2 (a clean, cold L2), a GPU sleep (so the host's enqueueing of the call is
  not timed), then events around one call: the tuner's protocol, for both.

Our side runs through the Python package (`convtune.torch.launch`, the database entry's own
config, compiled by the installed wheel) on flat buffers in the problem's layout; each
output is first checked against PyTorch's float64 result (relative L2 error within the
dtype's tolerance), so a timed kernel is a correct one.

    Usage: same-harness.py DB.toml [--json OUT.json] [--only REGEX]
    (the wheel's package importable, e.g. through scripts/python-gpu-check.sh's install)
"""

import argparse
import importlib.util
import json
import math
import os
import re
import statistics
import sys
import tomllib

import torch

import convtune
import convtune.torch as ct

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cc = _load("compare_cudnn", "compare-cudnn.py")
gc = _load("python_gpu_check", "python-gpu-check.py")
tuned_db = _load("tuned_db", "lib/tuned_db.py")

L2_BYTES = torch.cuda.get_device_properties(0).L2_cache_size if torch.cuda.is_available() else 0


def one_device(entries):
    """One entry a problem, of one device: this GPU's where the database holds any, else the
    home device's (the one most entries were tuned on), as a lookup that names its GPU would
    serve exact entries and one that names none would."""
    props = torch.cuda.get_device_properties(0)
    keep = tuned_db.pick(entries, (props.name, props.multi_processor_count))
    return [e for e in entries if tuned_db.device(e) == keep]


def time_cold(fn, min_ms=1.0, max_runs=500):
    """The tuner's protocol: per call, read 2 × L2 of an unrelated buffer (outside the events:
    the L2 is then cold and clean, as the tuner's `runtime::l2_sweep` leaves it; a memset
    would leave dirty lines for the call to write back), then one call between events;
    median µs over at least `min_ms` of calls (and at least 10)."""
    flush = torch.ones(max(2 * L2_BYTES, 1 << 20) // 4, dtype=torch.float32, device="cuda")
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    pairs, total_us = [], 0.0
    while (total_us < min_ms * 1000.0 or len(pairs) < 10) and len(pairs) < max_runs:
        batch = []
        for _ in range(10):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            flush.sum()
            # ~1 ms at the H200's clock: the host enqueues the call meanwhile. The package's
            # launch costs 0.1-0.3 ms of Python and driver calls; a 50 µs sleep was too short
            # (first run: a 19 µs kernel timed at 249 µs).
            torch.cuda._sleep(2_000_000)
            e0.record()
            fn()
            e1.record()
            batch.append((e0, e1))
        torch.cuda.synchronize()
        for e0, e1 in batch:
            us = e0.elapsed_time(e1) * 1000.0
            pairs.append(us)
            total_us += us
    return statistics.median(pairs)


def ours(line, config, device):
    """A closure launching the entry's config on random buffers, after checking its output."""
    info = convtune.problem(line)
    flats = gc.buffers(info, device)
    err, _ = gc.launch_and_check(line, flats, config)
    ok = err <= info["tolerance"]
    return (lambda: ct.launch(line, flats["x"], flats["w"], flats["y"], config=config)), err, ok


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def print_geomeans(rows, columns):
    """One line per (name, key) of `columns`: the geomean of cuDNN's time over ours in `rows`."""
    for name, key in columns:
        rs = [r[key] for r in rows]
        if rs:
            print(f"geomean cuDNN/ours, {name}: {geomean(rs):.3f} over {len(rs)} problems "
                  f"(min {min(rs):.3f}, >= 1.0: {sum(x >= 1.0 for x in rs)}, < 0.8: "
                  f"{sum(x < 0.8 for x in rs)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--json")
    ap.add_argument("--only", help="regex over problem keys")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    entries = one_device(tomllib.load(open(a.db, "rb")).get("entry", []))
    dev = torch.device("cuda", 0)
    print(f"GPU: {torch.cuda.get_device_name()}  cuDNN {torch.backends.cudnn.version()}  "
          f"L2 {L2_BYTES >> 20} MB  bf16 8192^3 matmul: {cc.matmul_rate():.0f} TFLOP/s")
    print(f"{'tuner us':>9} {'ours cold':>9} {'cuDNN cold':>10} {'ratio':>6} | {'ours graph':>10} "
          f"{'cuDNN graph':>11} {'ratio':>6}  problem")
    rows = []
    for e in entries:
        line, config = e["problem"], e["config"]
        if a.only and not re.search(a.only, line):
            continue
        p = cc.parse(line)
        if p is None:
            continue
        row = dict(problem=line, config=config, tuner_us=e["time_us"])
        try:
            mine, err, ok = ours(line, config, dev)
            row.update(rel_err=err, ok=ok)
            if not ok:
                raise RuntimeError(f"wrong result: rel_err {err:.3g}")
            cud = cc.make_op(p)
            row["ours_cold"], row["cudnn_cold"] = time_cold(mine), time_cold(cud)
            row["ours_graph"], row["cudnn_graph"] = cc.time_graph(mine), cc.time_graph(cud)
        except Exception as ex:  # one entry failing is a row, not the end of the run
            row["error"] = str(ex)[:300]
            print(f"  error: {row['error']}  {line}")
            rows.append(row)
            continue
        rc, rg = row["cudnn_cold"] / row["ours_cold"], row["cudnn_graph"] / row["ours_graph"]
        row.update(ratio_cold=rc, ratio_graph=rg)
        print(f"{e['time_us']:9.1f} {row['ours_cold']:9.1f} {row['cudnn_cold']:10.1f} {rc:6.3f} | "
              f"{row['ours_graph']:10.1f} {row['cudnn_graph']:11.1f} {rg:6.3f}  {line[:110]}")
        rows.append(row)
    good = [r for r in rows if "ratio_cold" in r]
    print_geomeans(good, [(proto, f"ratio_{proto}") for proto in ("cold", "graph")])
    bad = [r for r in rows if "error" in r]
    print(f"{len(good)} timed, {len(bad)} failed")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
