"""Where a config's wrong result comes from: launches each config of a list on one problem, with
the same inputs, from the PTX the driver JITs at its default level, at level 0, and from cubins
of the toolkit's ptxas at -O3 and -O0; the output starts as NaN (unwritten elements stay NaN).
Prints, per config and build, the count of wrong elements and where they fall (GEMM N tile,
position inside it, output channel inside its 16-channel group block).

    python3 scripts/session24/wrongdiag.py PROBLEM CONFIGS_FILE OUTDIR
"""
import ctypes
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

import convtune
from convtune import _cuda

line, cfg_file, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(outdir, exist_ok=True)
configs = [l.strip() for l in open(cfg_file) if l.strip() and not l.startswith("#")]
info = convtune.problem(line)
print(info["dtype"], {k: v["elements"] for k, v in info["tensors"].items()})
N, C, H, W, K, Y, X, G = 64, 1024, 7, 7, 2048, 7, 7, 1024
Ho, Wo = 7, 7
torch.manual_seed(0)
x = torch.randn(N, H, W, C, device="cuda").to(torch.bfloat16).contiguous()
w = torch.randn(K, Y, X, C // G, device="cuda").to(torch.bfloat16).contiguous()
ref = F.conv2d(x.double().permute(0, 3, 1, 2), w.double().permute(0, 3, 1, 2), padding=3,
               groups=G).permute(0, 2, 3, 1).contiguous()
scale = ref.abs().max().item()
drv = _cuda.driver()
drv.make_current(0)
lib = drv._lib


def load_jit(ptx, level):
    mod = ctypes.c_void_p()
    opts = (ctypes.c_int * 1)(7)  # CU_JIT_OPTIMIZATION_LEVEL
    vals = (ctypes.c_void_p * 1)(level)
    rc = lib.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0"), 1, opts, vals)
    if rc != 0:
        raise RuntimeError(f"cuModuleLoadDataEx rc={rc}")
    return mod


def functions(mod, kernels):
    out = []
    for k in kernels:
        f = ctypes.c_void_p()
        assert lib.cuModuleGetFunction(ctypes.byref(f), mod, k["name"].encode()) == 0
        if int(k["shared_bytes"]) > 0:
            assert lib.cuFuncSetAttribute(f, 8, int(k["shared_bytes"])) == 0
        out.append(f)
    return out


def run(fns, manifest, fill=float("nan")):
    y = torch.full((N, Ho, Wo, K), fill, device="cuda", dtype=torch.bfloat16)
    ws = None
    if manifest.get("workspace_bytes"):
        ws = torch.zeros(manifest["workspace_bytes"], dtype=torch.uint8, device="cuda")
    ptrs = {"x": x.data_ptr(), "w": w.data_ptr(), "y": y.data_ptr(),
            "workspace": ws.data_ptr() if ws is not None else 0}
    torch.cuda.synchronize()
    for f, k in zip(fns, manifest["kernels"]):
        p = _cuda.kernel_params(k, ptrs, drv.encode_tensor_map)
        drv.launch(f, k["grid"], k["block"], int(k["shared_bytes"]), 0, p)
    torch.cuda.synchronize()
    return y


def describe(y, bn):
    d = (y.double() - ref).abs()
    nan = torch.isnan(y.double())
    bad = nan | (d > 0.02 * scale)
    nb = int(bad.sum())
    rel = float(torch.nan_to_num(d, nan=float("inf")).max() / scale)
    s = f"wrong {nb} of {bad.numel()} (unwritten {int(nan.sum())}), max rel {rel:.3g}"
    if nb == 0:
        return s
    idx = bad.nonzero()
    n, ho, wo, k = idx.unbind(1)
    p = n * Ho * Wo + ho * Wo + wo
    tile, within = p // bn, p % bn
    m, gb = k % 16, k // 16
    def hist(t, name, top=12):
        u, c = torch.unique(t, return_counts=True)
        order = c.argsort(descending=True)[:top]
        return f"{name}: " + " ".join(f"{int(u[i])}:{int(c[i])}" for i in order) + f" ({len(u)} values)"
    return "\n    ".join([s, hist(tile, "N tile"), hist(within, "within tile"),
                          hist(m, "channel in block"), hist(gb, "group block", 8),
                          hist(n, "image", 8)])


for i, cfg in enumerate(configs):
    manifest, ptx = convtune.compile(line, "sm_90", config=cfg)
    bn = int(cfg.split("bn=")[1].split(",")[0])
    path = os.path.join(outdir, f"c{i}.ptx")
    open(path, "wb").write(ptx)
    print(f"== c{i} {cfg}\n  grid {[k['grid'] for k in manifest['kernels']]} block "
          f"{[k['block'] for k in manifest['kernels']]} smem {[k['shared_bytes'] for k in manifest['kernels']]}")
    builds = {}
    for lvl in (4, 0):
        try:
            builds[f"jit O{lvl}"] = functions(load_jit(ptx, lvl), manifest["kernels"])
        except Exception as e:
            print(f"  jit O{lvl}: {e}")
    for o in ("3", "0"):
        cub = os.path.join(outdir, f"c{i}-O{o}.cubin")
        r = subprocess.run(["ptxas", "-arch=sm_90", f"-O{o}", path, "-o", cub],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  ptxas -O{o}: {r.stderr[-300:]}")
            continue
        mod = ctypes.c_void_p()
        data = open(cub, "rb").read()
        assert lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(data)) == 0
        builds[f"ptxas O{o}"] = functions(mod, manifest["kernels"])
    for name, fns in builds.items():
        y1 = run(fns, manifest)
        y2 = run(fns, manifest, fill=0.0)
        same = torch.equal(torch.nan_to_num(y1, nan=0.0), y2)
        print(f"  {name}: {describe(y1, bn)}\n    repeat (zero-filled) identical where written: {same}")
