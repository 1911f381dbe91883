"""What convtune.torch.verify (on by default) costs a user: the first training step of a
ResNet-50 bottleneck block (bf16 channels_last, batch 64, 56x56, forward and backward with
convtune's Conv2d: six problems, each compiled on first use) with the check off and on, each in
a fresh process, and the steady step time after it.

    python3 verify-cost.py            runs the three processes (off, on, off) and prints a line each
    python3 verify-cost.py --child 0|1  one process (internal)
"""
import subprocess
import sys
import time

if len(sys.argv) > 2 and sys.argv[1] == "--child":
    import torch
    import convtune.torch as ct

    ct.verify = sys.argv[2] == "1"
    torch.manual_seed(0)
    dev = torch.device("cuda")
    fmt = torch.channels_last
    layers = torch.nn.Sequential(
        ct.Conv2d(256, 64, 1, bias=False), torch.nn.ReLU(),
        ct.Conv2d(64, 64, 3, padding=1, bias=False), torch.nn.ReLU(),
        ct.Conv2d(64, 256, 1, bias=False),
    ).to(dev, torch.bfloat16).to(memory_format=fmt)
    x = torch.randn(64, 256, 56, 56, device=dev, dtype=torch.bfloat16).to(memory_format=fmt)
    x.requires_grad_()

    def step():
        layers.zero_grad(set_to_none=True)
        y = layers(x)
        y.float().square().mean().backward()

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    steady = (time.perf_counter() - t0) / 20
    s = ct.stats()
    print(f"verify={ct.verify}: first step {first * 1e3:.0f} ms, steady {steady * 1e3:.2f} ms, "
          f"verified {s['verified']}, failed {s['failed_check']}, fallback {s['fallback']}")
else:
    for mode in ("0", "1", "0"):
        r = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True,
                           text=True)
        print(r.stdout.strip() or r.stderr.strip()[-400:])
