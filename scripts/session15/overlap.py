#!/usr/bin/env python3
"""Does cuDNN's kernel overlap the previous call's (programmatic dependent launch)? Runs each
problem's cuDNN call 20 times back to back under torch.profiler and prints, per kernel name, the
gaps between one kernel's end and the next kernel's start (negative: they overlapped) and the
kernels' own durations.
    Usage: overlap.py PROBLEMS_FILE"""
import importlib.util, statistics, sys, torch
spec = importlib.util.spec_from_file_location("cc", "scripts/compare-cudnn.py")
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)
torch.backends.cudnn.benchmark = True
from torch.profiler import profile, ProfilerActivity
for p in (cc.parse(l) for l in open(sys.argv[1])):
    if not p:
        continue
    f = cc.make_op(p)
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            f()
        torch.cuda.synchronize()
    ev = sorted((e for e in prof.events() if e.device_type.name == "CUDA"),
                key=lambda e: e.time_range.start)
    print("##", p["line"])
    gaps = [b.time_range.start - a.time_range.end for a, b in zip(ev, ev[1:])]
    durs = {}
    for e in ev:
        durs.setdefault(e.name[:90], []).append(e.time_range.end - e.time_range.start)
    for n, d in durs.items():
        print(f"   {len(d):3d} x median {statistics.median(d):7.2f} us  {n}")
    if gaps:
        print(f"   gaps end->next start (us): min {min(gaps):.2f} median {statistics.median(gaps):.2f} "
              f"max {max(gaps):.2f}; overlapping pairs {sum(g < 0 for g in gaps)} of {len(gaps)}")
