#!/usr/bin/env python3
"""What cuBLAS reaches on a convolution's own GEMM: bf16 `A[M×K] @ B[K×N]` through torch, timed
with scripts/same-harness.py's two protocols (cold: L2 swept before each call, as the tuner
times; graph: replays), beside the 8192³ matmul rate. A target stated as a fraction of the
8192³ rate (issue 13: seed 003 ≤ 90 µs = 97% of it) is only reachable where the library's own
GEMM of that shape gets there.

    Usage (with the wheel on PYTHONPATH, as same-harness.py needs it):
      scripts/gemm-ceiling.py M,N,K[:NAME] ...
"""
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("same_harness", os.path.join(HERE, "same-harness.py"))
sh = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sh)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    rate = sh.cc.matmul_rate()
    print(f"GPU: {torch.cuda.get_device_name()}  bf16 8192^3 matmul: {rate:.0f} TFLOP/s")
    print(f"{'M':>6} {'N':>6} {'K':>6} {'cold us':>8} {'TFLOP/s':>8} {'graph us':>8} {'TFLOP/s':>8}  name")
    for arg in sys.argv[1:]:
        dims, _, name = arg.partition(":")
        m, n, k = (int(x) for x in dims.split(","))
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        fl = 2.0 * m * n * k
        cold, graph = sh.time_cold(lambda: a @ b), sh.cc.time_graph(lambda: a @ b)
        print(f"{m:6} {n:6} {k:6} {cold:8.1f} {fl / cold / 1e6:8.0f} {graph:8.1f} "
              f"{fl / graph / 1e6:8.0f}  {name}")


if __name__ == "__main__":
    main()
