"""The Python package on a GPU (run by scripts/python-gpu-check.sh, which installs the wheel).

1. Every problem of the given suite files runs through convtune.torch.launch (the kernels of
   the tuned config, in the problem's own layouts, outputs poisoned with NaN first) and is
   compared with PyTorch's float64 result: relative L2 error within the dtype's tolerance.
   NCHW/NHWC problems also run through the autograd-facing ops (conv2d, conv2d_input,
   conv2d_weight) on torch tensors in that memory format.
2. Tensor-map kernels: a shipped ld=tma config (seed 003, bwd-data: tiled maps of the filter
   and of dy, a plain matrix since session 30; the same config on width 511 takes an im2col map
   of dy) and a shipped ld=ws config (fwd 3x3 stride 2 pad 1: a tiled filter map and
   an im2col map of x with padding corners and element strides 2) through convtune.torch.launch
   with that config, and the same problems through the torch ops (their looked-up configs):
   within tolerance of PyTorch's float64 result, every map encoded (no "fallback").
3. A ResNet-50 bottleneck block (1x1 -> 3x3 -> 1x1, + residual, batch norm and ReLU, bf16
   channels_last) forward and backward with convtune's Conv2d against the same block on cuDNN:
   loss and every gradient within tolerance, and step times side by side.
4. convtune.torch.verify: a kernel whose first result is made wrong (the written tensor scaled
   after the launch) is refused with one warning, the call returns PyTorch's result and later
   calls run in PyTorch; a right kernel is counted as verified.

Prints a table; writes JSON to --json when given.
"""

import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F

import convtune
import convtune.torch as ct

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def read_suites(paths):
    lines, seen = [], set()
    for path in paths:
        with open(path) as f:
            for raw in f:
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                key = convtune.problem(line)["key"]
                if key not in seen:
                    seen.add(key)
                    lines.append((path, line))
    return lines


def logical4(flat, t, kind):
    """The 4-D torch view (N, G*C, H, W) or (G*K, C, Y, X) of a flat buffer in the problem's layout."""
    dims, strides = t["dims"], t["strides"]
    five = flat.as_strided(dims, strides)
    if kind == "act":
        n, g, c, h, w = dims
        return five.reshape(n, g * c, h, w)
    g, k, c, y, x = dims
    return five.reshape(g * k, c, y, x)


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    denom = ref.norm().item()
    return (out - ref).norm().item() / (denom if denom > 0 else 1.0)


def reference(info, x4, w4, y4):
    s = info["sizes"]
    conv = dict(stride=tuple(s["stride"]), padding=tuple(s["pad"]),
                dilation=tuple(s["dilation"]), groups=s["groups"])
    d = info["direction"]
    if d == "fwd":
        return F.conv2d(x4.double(), w4.double(), **conv)
    if d == "bwd-data":
        return torch.nn.grad.conv2d_input(x4.shape, w4.double(), y4.double(), **conv)
    return torch.nn.grad.conv2d_weight(x4.double(), w4.shape, y4.double(), **conv)


# (problem, config, load path): shipped tuned-db/sm_90.toml entries whose kernels take tensor
# maps of both modes.
TENSOR_MAP_CASES = [
    ("convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 "
     "-F 2 --layout NHWC",
     "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,"
     "red=atomic,ld=tma", "tma"),
    ("convbfp16 -n 16 -c 2048 -H 1 -W 511 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 "
     "-F 2 --layout NHWC",
     "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,"
     "red=atomic,ld=tma", "tma"),
    ("convbfp16 -F 1 -n 64 -c 128 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 "
     "-g 1 -I NHWGC -f GKYXC -O NHWGC",
     "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,"
     "red=atomic,ld=ws", "ws"),
]


def check_tensor_map_case(line, config, ld, device):
    """One tensor-map config through launch (that config) and the torch op (the lookup's):
    both run in convtune's kernels with every map encoded, within tolerance."""
    ct.reset_stats()
    row = check_problem(line, device, config)
    plan = ct._plan(device, line, config)
    maps = [m["encode"]["function"] for k in plan.manifest["kernels"]
            for m in k.get("tensor_maps", [])]
    modes = sorted(set(maps))
    stats = ct.stats()
    row.update({"ld": ld, "encode_functions": modes, "maps": len(maps),
                "fallbacks": stats["fallback"], "convtune_runs": stats["convtune"]})
    # Both operands through maps (seed 003's are both tiled since session 30; the others
    # one im2col and one tiled).
    row["ok"] = (row["ok"] and row.get("torch_op_ok", False) and not stats["fallback"]
                 and f"ld={ld}" in row["config"] and len(maps) >= 2)
    return row


def buffers(info, device):
    """Flat buffers of a problem's tensors in its own layouts: read ones random, the written
    one NaN (so an element the kernels skip shows)."""
    dt = DTYPES[info["dtype"]]
    flats = {}
    for name, t in info["tensors"].items():
        buf = torch.empty(t["elements"], dtype=dt, device=device)
        if t["written"]:
            buf.fill_(float("nan"))
        else:
            buf.normal_()
        flats[name] = buf
    return flats


def launch_and_check(line, flats, config=None):
    """Runs the problem's kernels on `flats`; returns the relative L2 error of the written
    tensor against PyTorch's float64 result, and the 4-D views and that result."""
    info = convtune.problem(line)
    ct.launch(line, flats["x"], flats["w"], flats["y"], config=config)
    torch.cuda.synchronize(flats["x"].device)
    x4 = logical4(flats["x"], info["tensors"]["x"], "act")
    w4 = logical4(flats["w"], info["tensors"]["w"], "fil")
    y4 = logical4(flats["y"], info["tensors"]["y"], "act")
    written = {"fwd": y4, "bwd-data": x4, "bwd-weight": w4}[info["direction"]]
    ref = reference(info, x4, w4, y4)
    return rel_err(written, ref), (x4, w4, y4, ref)


def check_problem(line, device, config=None):
    info = convtune.problem(line)
    flats = buffers(info, device)
    err, (x4, w4, y4, ref) = launch_and_check(line, flats, config)
    lookup = ct._plan(device, line, config).manifest["lookup"]
    row = {"problem": line, "key": info["key"], "direction": info["direction"],
           "dtype": info["dtype"], "rel_err": err, "tolerance": info["tolerance"],
           "ok": err <= info["tolerance"], "source": lookup["source"], "config": lookup["config"]}
    row.update(check_torch_ops(info, x4, w4, y4, ref))
    return row


def check_torch_ops(info, x4, w4, y4, ref):
    """The same problem through the autograd-facing ops, where torch can hold its layout."""
    lay = {t["layout"] for t in info["tensors"].values()}
    if lay == {"NGCHW", "GKCYX"}:
        fmt = torch.contiguous_format
    elif lay == {"NHWGC", "GKYXC"}:
        fmt = torch.channels_last
    else:
        return {"torch_op": "n/a (layout)"}
    s = info["sizes"]
    conv = (tuple(s["stride"]), tuple(s["pad"]), tuple(s["dilation"]), s["groups"])
    x, w, dy = (t.contiguous(memory_format=fmt) for t in (x4, w4, y4))
    before = ct.stats()["convtune"]
    d = info["direction"]
    if d == "fwd":
        out = ct.conv2d(x, w, None, *conv)
    elif d == "bwd-data":
        out = ct.conv2d_input(x.shape, w, dy, *conv)
    else:
        out = ct.conv2d_weight(x, w.shape, dy, *conv)
    torch.cuda.synchronize()
    ran = ct.stats()["convtune"] - before
    err = rel_err(out, ref)
    # The op looked the config up as convtune.lookup does.
    arch = "sm_{}{}".format(*torch.cuda.get_device_capability(out.device))
    return {"torch_op": "convtune" if ran else "fallback", "torch_op_rel_err": err,
            "torch_op_ok": bool(ran) and err <= info["tolerance"],
            "torch_op_config": convtune.lookup(info["key"], arch)["config"]}


class Bottleneck(torch.nn.Module):
    """torchvision's ResNet-50 bottleneck (v1.5: stride on the 3x3), conv class chosen."""

    def __init__(self, conv, inplanes, planes, stride=1):
        super().__init__()
        width, out = planes, planes * 4
        self.conv1 = conv(inplanes, width, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(width)
        self.conv2 = conv(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(width)
        self.conv3 = conv(width, out, 1, bias=False)
        self.bn3 = torch.nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or inplanes != out:
            self.down = torch.nn.Sequential(conv(inplanes, out, 1, stride=stride, bias=False),
                                            torch.nn.BatchNorm2d(out))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + idt)


def step_time(block, x, target, iters):
    def step():
        block.zero_grad(set_to_none=True)
        xi = x.detach().requires_grad_()
        loss = F.mse_loss(block(xi).float(), target)
        loss.backward()
        return loss, xi

    step()  # warm-up: compiles and loads convtune's kernels, picks cuDNN's algorithms
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / iters
    loss, xi = step()
    torch.cuda.synchronize()
    return ms, loss, xi


def grads_of(block, xi):
    g = {"x": xi.grad}
    for name, p in block.named_parameters():
        if name.startswith(("conv", "down.0")):
            g[name] = p.grad
    return g


def check_block(device, batch, inplanes, planes, stride, hw, dtype, iters):
    """One bottleneck block, convtune vs cuDNN, both measured against the block in float64:
    convtune passes when its loss and every gradient are within the dtype's tolerance of the
    float64 result, or no further from it than twice cuDNN's own error."""
    torch.manual_seed(0)
    ref = Bottleneck(torch.nn.Conv2d, inplanes, planes, stride)
    ours = Bottleneck(ct.Conv2d, inplanes, planes, stride)
    exact = Bottleneck(torch.nn.Conv2d, inplanes, planes, stride)
    ours.load_state_dict(ref.state_dict())
    exact.load_state_dict(ref.state_dict())
    fmt = torch.channels_last
    for m in (ref, ours):
        m.to(device=device, dtype=dtype, memory_format=fmt).train()
    exact.to(device=device, dtype=torch.float64).train()
    x = torch.randn(batch, inplanes, hw, hw, device=device, dtype=dtype).to(memory_format=fmt)
    out_hw = (hw - 1) // stride + 1
    target = torch.randn(batch, planes * 4, out_hw, out_hw, device=device)
    ct.reset_stats()
    ms_ours, loss_ours, x_ours = step_time(ours, x, target, iters)
    stats = ct.stats()
    ms_ref, loss_ref, x_ref = step_time(ref, x, target, iters)
    x64 = x.double().contiguous().requires_grad_()
    loss64 = F.mse_loss(exact(x64), target.double())
    loss64.backward()
    tol = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}[dtype]
    g64, g_ours, g_ref = grads_of(exact, x64), grads_of(ours, x_ours), grads_of(ref, x_ref)
    errs = {"loss": (abs(loss_ours.item() - loss64.item()) / abs(loss64.item()),
                     abs(loss_ref.item() - loss64.item()) / abs(loss64.item()))}
    for name, g in g64.items():
        errs[name] = (rel_err(g_ours[name], g), rel_err(g_ref[name], g))
    ok = all(o <= max(tol, 2 * r) for o, r in errs.values()) and not stats["fallback"] \
        and stats["convtune"] > 0
    return {"block": f"bottleneck {inplanes}->{planes}x4 stride {stride} {hw}x{hw} batch {batch}",
            "dtype": str(dtype).replace("torch.", ""), "loss": loss_ours.item(),
            "loss_cudnn": loss_ref.item(), "loss_f64": loss64.item(),
            "rel_err_vs_f64": {k: {"convtune": o, "cudnn": r} for k, (o, r) in errs.items()},
            "tolerance": tol, "ms_convtune": ms_ours, "ms_cudnn": ms_ref,
            "convtune_convs_per_step": stats["convtune"] / (iters + 2),
            "fallbacks": stats["fallback"], "ok": ok}


def check_first_result_check(device):
    """convtune.torch.verify on the GPU: a kernel whose first result is wrong (made wrong here
    by scaling the written tensor after the real launch, the fault a miscompile makes) is
    reported once, that call returns PyTorch's result, and PyTorch runs the problem from then
    on; a right kernel is counted as verified and keeps running."""
    import warnings
    x = torch.randn(3, 24, 13, 13, device=device, dtype=torch.bfloat16)
    w = torch.randn(40, 24, 3, 3, device=device, dtype=torch.bfloat16)
    x2 = torch.randn(3, 24, 11, 11, device=device, dtype=torch.bfloat16)
    ct.reset_stats()
    real = ct._launch

    def wrong(plan, a, b, c):
        real(plan, a, b, c)
        c.mul_(1.5)  # fwd writes y

    ct._launch = wrong
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y1 = ct.conv2d(x, w, None, 1, 1)
            y2 = ct.conv2d(x, w, None, 1, 1)
    finally:
        ct._launch = real
    bad = ct.stats()
    said = [str(c.message) for c in caught if "wrong-result" in str(c.message)]
    ref = F.conv2d(x.double(), w.double(), None, 1, 1)
    ct.reset_stats()
    z1 = ct.conv2d(x2, w, None, 1, 1)
    z2 = ct.conv2d(x2, w, None, 1, 1)
    good = ct.stats()
    ref2 = F.conv2d(x2.double(), w.double(), None, 1, 1)
    errs = [rel_err(t, r) for t, r in ((y1, ref), (y2, ref), (z1, ref2), (z2, ref2))]
    ok = (len(said) == 1 and bad["failed_check"] == 1 and bad["convtune"] == 0
          and sum(bad["fallback"].values()) == 2 and good["verified"] == 1
          and good["convtune"] == 2 and all(e <= 1e-2 for e in errs))
    return {"ok": ok, "warning": said[:1], "stats_wrong": bad, "stats_right": good,
            "rel_errs": errs}


#: Split-K configs whose counters live in the workspace's kept-zero region (red=fixup and
#: red=stream on the wgmma and mma.sync paths), with different counter counts.
KEPT_ZERO_CASES = [
    ("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
     "v3:bm=64,bn=64,bk=32,wm=32,wn=32,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1,mma=sync,red=fixup,ld=cp"),
    ("convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
     "v3:bm=128,bn=192,bk=64,wm=64,wn=192,st=4,va=8,vb=4,vc=4,lds=swz,sk=5,rs=1,mma=wg1,red=fixup,ld=ws"),
    ("conv -F 1 -n 32 -c 64 -H 14 -W 14 -k 64 -y 7 -x 7 -p 3 -q 3 -u 1 -v 1 -l 1 -j 1 -g 1 "
     "-I NHWGC -f GKYXC -O NHWGC",
     "v3:bm=64,bn=128,bk=32,wm=64,wn=16,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=sync,red=stream,ld=cp"),
]


def check_kept_workspace(device, repeats=5):
    """Plans with a kept-zero workspace region run back to back, interleaved, and on a side
    stream: every result within tolerance of PyTorch's float64 result, and each kept buffer's
    region clear afterwards (the plans' side of the contract, on the GPU)."""
    results, side = [], torch.cuda.Stream(device)
    cases = []
    for line, config in KEPT_ZERO_CASES:
        info = convtune.problem(line)
        flats = buffers(info, device)
        plan = ct._plan(device, line, config)
        cases.append((line, config, info, flats, plan.kept_zero))
    for r in range(repeats):
        for line, config, info, flats, kept in cases:
            stream = side if r % 2 else torch.cuda.current_stream(device)
            with torch.cuda.stream(stream):
                flats[{"fwd": "y", "bwd-data": "x", "bwd-weight": "w"}[info["direction"]]].fill_(
                    float("nan"))
                err, _ = launch_and_check(line, flats, config)
            results.append({"problem": line, "run": r, "kept_zero": kept, "rel_err": err,
                            "ok": kept > 0 and err <= info["tolerance"]})
    torch.cuda.synchronize(device)
    region = max(c[4] for c in cases)
    dirty = {f"{k}": int((ws[:region] != 0).sum()) for k, ws in ct._kept.items()}
    ok = all(r["ok"] for r in results) and len(dirty) >= 2 and not any(dirty.values())
    return {"ok": ok, "runs": len(results), "failed": [r for r in results if not r["ok"]][:4],
            "kept_buffers_nonzero_bytes": dirty}


def check_first_use_benchmark(device):
    """convtune.torch.benchmark on a problem no database has: the first call times the lookup's
    candidates, then a second round around the fastest (convtune.second_round) beside it, keeps
    the fastest of that round, and every call's result matches PyTorch's float64 one."""
    x = torch.randn(5, 40, 19, 23, device=device, dtype=torch.bfloat16)
    w = torch.randn(56, 40, 3, 3, device=device, dtype=torch.bfloat16)
    ct.reset_stats()
    ct._choices.clear()
    ct.benchmark = True
    try:
        ys = [ct.conv2d(x, w, None, 1, 1) for _ in range(2)]
    finally:
        ct.benchmark = False
    torch.cuda.synchronize(device)
    ref = F.conv2d(x.double(), w.double(), None, 1, 1)
    errs = [rel_err(y, ref) for y in ys]
    (line, times), = ct.choices().items()  # the one problem benchmarked
    kept = next(iter(times), None)
    # The lookup as convtune.torch made it: for this GPU by name and SM count.
    first = convtune.lookup(line, "sm_{}{}".format(*torch.cuda.get_device_capability(device)),
                            candidates=ct.BENCHMARK_CANDIDATES, **ct._gpu(device))["candidates"]
    second = [c for c in times if c not in {f["config"] for f in first}]
    # The kept one won the second round's runs, which timed it beside that round's configs.
    ok = (kept is not None and all(times[kept] <= times[c] for c in second)
          and len(second) >= min(1, ct.SECOND_ROUND) and all(e <= 1e-2 for e in errs)
          and ct.stats()["convtune"] == 2)
    return {"ok": ok, "timed": len(times), "second_round": len(second), "kept": kept,
            "kept_from_second_round": kept in second, "rel_errs": errs, "stats": ct.stats()}


def verdict(title, check, device):
    """Runs one of the checks that return {"ok": ...}; an exception is its failure, reported."""
    try:
        got = check(device)
    except Exception as e:
        got = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    print(f"{title}: {'ok' if got['ok'] else 'FAIL'} { {k: v for k, v in got.items() if k != 'ok'} }")
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suites", nargs="+")
    ap.add_argument("--json")
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check", file=sys.stderr)
        return 2
    device = torch.device("cuda", torch.cuda.current_device())
    print(f"convtune {convtune.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name(device)}")
    rows = []
    for path, line in read_suites(args.suites):
        try:
            row = check_problem(line, device)
        except Exception as e:  # report and go on: one bad problem must not hide the rest
            row = {"problem": line, "ok": False, "error": f"{type(e).__name__}: {e}"}
        row["suite"] = path
        rows.append(row)
        if "error" in row:
            print(f"ERROR {line}\n      {row['error']}")
        else:
            op = row.get("torch_op")
            print(f"{'ok  ' if row['ok'] else 'FAIL'} {row['rel_err']:.2e} <= {row['tolerance']:.0e} "
                  f"{row['source']:<9} op:{op:<9} {line}")
    print("\ntensor-map kernels (launch with the config; torch op with the lookup's):")
    tmaps = []
    for line, config, ld in TENSOR_MAP_CASES:
        try:
            row = check_tensor_map_case(line, config, ld, device)
        except Exception as e:
            row = {"problem": line, "ld": ld, "ok": False, "error": f"{type(e).__name__}: {e}"}
        tmaps.append(row)
        if "error" in row:
            print(f"ERROR ld={ld} {line}\n      {row['error']}")
        else:
            print(f"{'ok  ' if row['ok'] else 'FAIL'} ld={ld:<3} launch {row['rel_err']:.2e} "
                  f"op:{row['torch_op']} {row.get('torch_op_rel_err', float('nan')):.2e} "
                  f"(<= {row['tolerance']:.0e}) maps {'+'.join(row['encode_functions'])} "
                  f"fallback: {sum(row['fallbacks'].values())} {row['fallbacks'] or ''}")
            print(f"      op config: {row.get('torch_op_config')}")
    blocks = []
    for cfg in [(64, 256, 64, 1, 56), (64, 256, 128, 2, 56), (64, 1024, 256, 1, 14)]:
        try:
            b = check_block(device, *cfg, dtype=torch.bfloat16, iters=args.iters)
        except Exception as e:
            b = {"block": str(cfg), "ok": False, "error": f"{type(e).__name__}: {e}"}
        blocks.append(b)
    print()
    print("block (bf16 channels_last, fwd+bwd)            worst err vs f64: convtune  cuDNN"
          "   step ms: convtune   cuDNN  ok")
    for b in blocks:
        if "error" in b:
            print(f"{b['block']:<48} ERROR {b['error']}")
            continue
        worst_o = max(e["convtune"] for e in b["rel_err_vs_f64"].values())
        worst_r = max(e["cudnn"] for e in b["rel_err_vs_f64"].values())
        print(f"{b['block']:<48} {worst_o:>17.1e} {worst_r:>6.1e} {b['ms_convtune']:>18.3f} "
              f"{b['ms_cudnn']:>7.3f}  {b['ok']}"
              + (f"  fallbacks: {b['fallbacks']}" if b["fallbacks"] else ""))
    vcheck = verdict("\nfirst-result check (convtune.torch.verify)", check_first_result_check,
                     device)
    kcheck = verdict("kept-zero workspace (split-K counters, no clearing launch)",
                     check_kept_workspace, device)
    bcheck = verdict("first-use benchmark, two rounds (convtune.torch.benchmark)",
                     check_first_use_benchmark, device)
    ops = [r for r in rows if r.get("torch_op") in ("convtune", "fallback")]
    n_ok = sum(r["ok"] for r in rows)
    print(f"\nsuite problems: {n_ok} of {len(rows)} within tolerance; through the torch ops: "
          f"{sum(r.get('torch_op_ok', False) for r in ops)} of {len(ops)}; "
          f"tensor-map kernels: {sum(r['ok'] for r in tmaps)} of {len(tmaps)} (fallbacks: "
          f"{sum(sum(r.get('fallbacks', {}).values()) for r in tmaps)}); "
          f"blocks: {sum(b['ok'] for b in blocks)} of {len(blocks)}; "
          f"first-result check: {'ok' if vcheck['ok'] else 'FAILED'}; "
          f"kept-zero workspace: {'ok' if kcheck['ok'] else 'FAILED'}; "
          f"first-use benchmark: {'ok' if bcheck['ok'] else 'FAILED'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(device), "torch": torch.__version__,
                       "convtune": convtune.__version__, "problems": rows,
                       "tensor_map_kernels": tmaps, "blocks": blocks,
                       "first_result_check": vcheck, "kept_zero_workspace": kcheck,
                       "first_use_benchmark": bcheck},
                      f, indent=1)
        print(f"wrote {args.json}")
    all_ok = n_ok == len(rows) and all(r.get("torch_op_ok", True) for r in ops) and \
        all(b["ok"] for b in blocks) and all(r["ok"] for r in tmaps) and vcheck["ok"] and \
        kcheck["ok"] and bcheck["ok"]
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
