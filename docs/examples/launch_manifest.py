#!/usr/bin/env python3
"""Run a convtune module through the CUDA driver, as any program outside convtune would, and
check it against PyTorch's convolution in f64.

    convtune compile --problem "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC" \
        --arch sm_90 -o k.ptx --manifest k.json
    python3 docs/examples/launch_manifest.py k.json

Everything the launch needs comes from the manifest (docs/abi.md): the module, the kernels in
order with grid/block/dynamic shared memory and the >48 KiB opt-in, the four pointer
parameters, the tensor maps of ld=tma/ld=ws kernels (each with the driver call that encodes it)
and every parameter's offset, the workspace size, and each tensor's shape and element strides. Needs python3,
torch with CUDA, and libcuda.so.1 (no nvcc, no cuda-python). Exit status 0 when the result is
within the manifest's tolerance, 1 when not, 2 on a usage or launch error.
"""

import argparse
import ctypes
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


class Driver:
    """The few CUDA driver calls a launch needs, through ctypes on libcuda.so.1."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")

    def check(self, status, what):
        if status != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(status, ctypes.byref(msg))
            text = msg.value.decode() if msg.value else "unknown error"
            raise RuntimeError(f"{what}: CUDA error {status}: {text}")

    def use_torch_context(self):
        """Make the primary context (the one torch allocates in) current on this thread."""
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            dev = ctypes.c_int()
            self.check(self.lib.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device()), "cuDeviceGet")
            self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def load(self, ptx: bytes):
        module = ctypes.c_void_p()
        log = ctypes.create_string_buffer(16384)
        opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
        status = self.lib.cuModuleLoadDataEx(ctypes.byref(module), ctypes.c_char_p(ptx), 2, opts, vals)
        if status != 0:
            print(log.value.decode(errors="replace"), file=sys.stderr)
        self.check(status, "cuModuleLoadDataEx")
        return module

    def function(self, module, name: str, shared: int, opt_in: bool):
        f = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()), f"cuModuleGetFunction({name})")
        if opt_in:
            status = self.lib.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ctypes.c_int(shared))
            self.check(status, f"cuFuncSetAttribute({name}, {shared} B shared)")
        return f

    def encode_tensor_map(self, e, base: int) -> bytes:
        """The 128-byte CUtensorMap of a manifest's `encode` over the tensor at `base`: the
        driver call it names with its arguments, in the driver's parameter order."""
        u32, u64, i32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int
        arr = lambda t, v: (t * len(v))(*v)  # noqa: E731
        head = [i32(e["data_type"]), u32(e["rank"]),
                ctypes.c_void_p(base + e["address_offset"]), arr(u64, e["global_dim"]),
                arr(u64, e["global_strides"])]
        tail = [arr(u32, e["element_strides"]), i32(e["interleave"]), i32(e["swizzle"]),
                i32(e["l2_promotion"]), i32(e["oob_fill"])]
        if e["function"] == "cuTensorMapEncodeIm2col":
            middle = [arr(i32, e["pixel_box_lower_corner"]), arr(i32, e["pixel_box_upper_corner"]),
                      u32(e["channels_per_pixel"]), u32(e["pixels_per_column"])]
        else:
            middle = [arr(u32, e["box_dim"])]
        raw = ctypes.create_string_buffer(128 + 128)  # CUtensorMap: alignas(64), 128 in CUDA 13
        out = (ctypes.addressof(raw) + 127) // 128 * 128
        fn = getattr(self.lib, e["function"])
        self.check(fn(ctypes.c_void_p(out), *head, *middle, *tail), e["function"])
        return ctypes.string_at(out, 128)

    def launch(self, f, k, shared: int, stream: int, pointers):
        # One buffer laid out as the manifest's `params` say (u64 pointers, then 128-byte tensor
        # maps at multiples of 64); kernelParams holds the address of each value in it.
        maps = {t["index"]: t for t in k.get("tensor_maps", [])}
        size = max(p["offset"] + p["bytes"] for p in k["params"])
        raw = ctypes.create_string_buffer(size + 64)
        base = (ctypes.addressof(raw) + 63) // 64 * 64
        for p in k["params"]:
            ptr = pointers[p["tensor"]]
            if p["kind"] == "tensor-map":
                value = self.encode_tensor_map(maps[p["index"]]["encode"], ptr)
            else:
                value = ptr.to_bytes(8, "little")
            ctypes.memmove(base + p["offset"], value, p["bytes"])
        params = (ctypes.c_void_p * len(k["params"]))(*[base + p["offset"] for p in k["params"]])
        grid, block = k["grid"], k["block"]
        status = self.lib.cuLaunchKernel(
            f, *[ctypes.c_uint(g) for g in grid], *[ctypes.c_uint(b) for b in block],
            ctypes.c_uint(shared), ctypes.c_void_p(stream), params, None)
        self.check(status, "cuLaunchKernel")


def logical_view(buf, info):
    """The buffer as the 5-D logical tensor the manifest describes (element strides)."""
    return buf.as_strided(info["shape"], info["strides"])


def to_nchw(view, is_filter):
    """[n,g,c,h,w] → [n, g·c, h, w]; [g,k,c,y,x] → [g·k, c, y, x]; in f64."""
    v = view.to(torch.float64)
    a, b, c, d, e = v.shape
    return v.reshape(a * b, c, d, e) if is_filter else v.reshape(a, b * c, d, e)


def reference(direction, conv, t, shapes):
    """PyTorch's convolution in f64 for the written tensor, from the f64 copies in `t`."""
    kw = dict(stride=conv["stride"], padding=conv["pad"], dilation=conv["dilation"], groups=conv["groups"])
    if direction == "fwd":
        return F.conv2d(t["x"], t["w"], **kw)
    if direction == "bwd-data":
        return torch.nn.grad.conv2d_input(shapes["x"], t["w"], t["y"], **kw)
    if direction == "bwd-weight":
        return torch.nn.grad.conv2d_weight(t["x"], shapes["w"], t["y"], **kw)
    raise ValueError(f"unknown direction {direction}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ref-device", default="cuda", help="where the f64 reference runs (cuda or cpu)")
    args = ap.parse_args()

    with open(args.manifest) as f:
        m = json.load(f)
    if m.get("manifest_version") != 1:
        sys.exit(f"{args.manifest}: manifest_version {m.get('manifest_version')}, this script reads 1")
    if m["module"]["kind"] != "ptx":
        sys.exit("this example drives the CUDA driver; AMD code objects go through hipModuleLoadData")
    path = m["module"]["path"]
    if not os.path.exists(path):  # written relative to where `compile` ran; try beside the manifest
        path = os.path.join(os.path.dirname(os.path.abspath(args.manifest)), os.path.basename(path))
    with open(path, "rb") as f:
        ptx = f.read()

    torch.manual_seed(args.seed)
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)  # creates torch's (primary) context
    cu = Driver()
    cu.use_torch_context()

    # Buffers in argument order: inputs random, the written tensor and the workspace poisoned
    # (NaN / 0xff bytes) to show that the kernels write every element and need no zeroing.
    pointers, views, keep = {}, {}, []
    for arg in m["arguments"]:
        info = arg["tensor"]
        if info is None:  # the workspace
            n = m["workspace"]["bytes"]
            if n == 0:
                pointers[arg["name"]] = 0
                continue
            ws = torch.full((n,), 0xFF, dtype=torch.uint8, device=dev)
            if m["workspace"]["must_be_zeroed"]:
                ws.zero_()
            keep.append(ws)
            pointers[arg["name"]] = ws.data_ptr()
            continue
        dtype = DTYPES[info["dtype"]]
        buf = torch.empty(info["elements"], dtype=dtype, device=dev)
        if arg["access"] == "write":
            buf.fill_(float("nan"))
        else:
            buf.copy_(torch.randn(info["elements"], device=dev).to(dtype))
        keep.append(buf)
        pointers[arg["name"]] = buf.data_ptr()
        views[arg["name"]] = (logical_view(buf, info), arg)

    module = cu.load(ptx)
    stream = torch.cuda.current_stream().cuda_stream
    for k in m["kernels"]:
        f = cu.function(module, k["name"], k["dynamic_shared_bytes"], k["needs_shared_opt_in"])
        cu.launch(f, k, k["dynamic_shared_bytes"], stream, pointers)
    torch.cuda.synchronize()

    ref_dev = torch.device(args.ref_device)
    t = {name: to_nchw(v, name == "w").to(ref_dev) for name, (v, _) in views.items()}
    shapes = {name: tuple(x.shape) for name, x in t.items()}
    written = next(name for name, (_, a) in views.items() if a["access"] == "write")
    want = reference(m["direction"], m["convolution"], t, shapes)
    got = t[written]
    unwritten = int(torch.isnan(got).sum())
    err = (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()
    ok = unwritten == 0 and math.isfinite(err) and err <= m["tolerance"]
    print(f"{m['problem']}\n  config {m['config']['text']} ({m['config']['source']['kind']}), "
          f"{len(m['kernels'])} kernel(s), workspace {m['workspace']['bytes']} B\n"
          f"  {written}: rel. error {err:.3e} vs torch f64 (tolerance {m['tolerance']:g}), "
          f"{unwritten} element(s) left unwritten: {'OK' if ok else 'FAIL'}")
    cu.lib.cuModuleUnload(module)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
