#!/usr/bin/env python3
"""Does a dirty L2 inflate a cold timing? Times cuDNN's call for each problem (cudnn.benchmark)
under three protocols, events around one call, median of 200:

- dirty: the tuner's flush (`runtime::measure`): a memset of 2 x L2, then the call. The
  memset leaves the L2 full of dirty lines, which the call's reads must write back first;
- clean: the same memset, then a read of another 2 x L2 buffer (outside the events), so the
  L2 holds clean lines of an unrelated buffer: cold, as Nsight Compute's cache control makes it;
- graph: compare-cudnn.py's graph replays (warm L2, back-to-back calls).

A GPU sleep before each start event keeps the host's enqueueing out of the timing.
    Usage: dirty-l2.py PROBLEMS_FILE
"""
import importlib.util, statistics, sys, torch
spec = importlib.util.spec_from_file_location("cc", "scripts/compare-cudnn.py")
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)
torch.backends.cudnn.benchmark = True
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
clean = torch.ones(2 * l2 // 4, dtype=torch.float32, device="cuda")

def cold(fn, read, n=200):
    ts = []
    for i in range(n):
        flush.fill_(i % 251)
        if read:
            clean.sum()
        torch.cuda._sleep(20000)
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record()
        ts.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1000 for a, b in ts)

print(f"{'problem':72} {'dirty':>8} {'clean':>8} {'graph':>8}  (us)")
for line in open(sys.argv[1]):
    p = cc.parse(line)
    if not p:
        continue
    f = cc.make_op(p)
    for _ in range(5):
        f()
    d, c = cold(f, False), cold(f, True)
    g = cc.time_graph(f)
    print(f"{p['line'][:72]:72} {d:8.1f} {c:8.1f} {g:8.1f}")
