#!/usr/bin/env python3
"""convtune.torch under torch.use_deterministic_algorithms(True), on an NVIDIA GPU (needs torch
and the convtune wheel on PYTHONPATH): backward-weight problems whose shipped or best configs add
by atomics (grouped split-K, depthwise) run through convtune (not PyTorch), give the same bits on
two runs, and stay within tolerance of PyTorch's float64 result; with the mode off the same
problems may use atomics. Prints one line a problem and exits non-zero on a failure.
  Usage: PYTHONPATH=SITE python3 scripts/session27/deterministic-check.py
"""
import sys
import warnings

import torch
import convtune
import convtune.torch as ct

CASES = [  # (N, C, H, W, K, groups, dtype): bwd-weight 3x3 pad 1, channels-last
    (32, 160, 56, 56, 160, 5, torch.bfloat16),
    (8, 2048, 56, 56, 2048, 2048, torch.float16),
    (64, 384, 14, 14, 384, 384, torch.bfloat16),
]
failed = 0
torch.use_deterministic_algorithms(True)
for n, c, h, w, k, g, dt in CASES:
    x = torch.randn(n, c, h, w, device="cuda", dtype=dt).to(memory_format=torch.channels_last)
    dy = torch.randn(n, k, h, w, device="cuda", dtype=dt).to(memory_format=torch.channels_last)
    size = (k, c // g, 3, 3)
    ct.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = ct.conv2d_weight(x, size, dy, 1, 1, 1, g)
        b = ct.conv2d_weight(x, size, dy, 1, 1, 1, g)
    torch.cuda.synchronize()
    s = ct.stats()
    ref = torch.nn.grad.conv2d_weight(x.double(), size, dy.double(), 1, 1, 1, g)
    err = ((a.double() - ref).norm() / ref.norm()).item()
    same = torch.equal(a, b)
    plans = [(key, p) for key, p in ct._plans.items() if key[4] and hasattr(p, "manifest")]
    configs = {p.manifest["lookup"]["config"] for _, p in plans}
    det = all(p.manifest["lookup"]["deterministic"] for _, p in plans)
    ok = s["convtune"] >= 2 and same and det and err < 2e-2
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} n{n} c{c} {h}x{w} g{g} {str(dt)[6:]}: convtune runs "
          f"{s['convtune']}, fallbacks {s['fallback']}, bitwise equal {same}, rel err {err:.1e}, "
          f"configs without atomics {det}: {sorted(configs)}")
    ct._plans.clear()
torch.use_deterministic_algorithms(False)
print(f"deterministic check: {len(CASES) - failed} of {len(CASES)} ok")
sys.exit(1 if failed else 0)
