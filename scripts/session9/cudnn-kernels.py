#!/usr/bin/env python3
"""Which kernels cuDNN runs for each problem (cudnn.benchmark = True, after warm-up): run under
`ncu --profile-from-start off` to get each kernel's launch stats (grid, block, cluster, registers,
shared memory) and its duration; the names tell the tile shape. Also prints torch.profiler's
kernel names and times without ncu.
    Usage: cudnn-kernels.py PROBLEMS_FILE"""
import sys, importlib.util, torch
spec = importlib.util.spec_from_file_location("cc", "scripts/compare-cudnn.py")
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)
torch.backends.cudnn.benchmark = True
probs = [p for p in (cc.parse(l) for l in open(sys.argv[1])) if p]
ops = []
for p in probs:
    f = cc.make_op(p)
    for _ in range(5):
        f()
    ops.append((p, f))
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
for p, f in ops:
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            f()
        torch.cuda.synchronize()
    print("##", p["line"])
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" or getattr(e, "cuda_time_total", 0):
            print(f"   {e.count:3d} x {e.device_time_total / max(e.count, 1):8.1f} us  {e.key[:200]}")
torch.cuda.profiler.start()
for p, f in ops:
    f()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
