"""One launch of a config on a problem through the Python package, for compute-sanitizer:
    compute-sanitizer --tool racecheck python3 scripts/session23/race.py PROBLEM CONFIG"""
import sys

import torch

import convtune
import convtune.torch as ct

line, config = sys.argv[1], sys.argv[2]
info = convtune.problem(line)
dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[info["dtype"]]
t = {n: torch.randn(v["elements"], device="cuda").to(dt) for n, v in info["tensors"].items()}
ct.launch(line, t["x"], t["w"], t["y"], config=config)
torch.cuda.synchronize()
print("launched", config)
