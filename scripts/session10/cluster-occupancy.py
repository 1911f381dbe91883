#!/usr/bin/env python3
"""How many thread-block clusters of each kernel the driver keeps resident at once, against the
clusters its persistent grid launches (session 10, issue 13 item 4, suspect 1: a grid of
SMs x resident blocks assumes every block resident; if fewer clusters fit, the walk runs in
two waves).

    python3 scripts/session10/cluster-occupancy.py MANIFEST.json...

Each manifest is what `convtune compile --manifest` wrote beside the PTX. Per kernel: the
driver's cuOccupancyMaxActiveClusters (cluster kernels: the compiled .reqnctapercluster, then
again with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION set explicitly), or for a kernel without a
cluster cuOccupancyMaxActiveBlocksPerMultiprocessor x SMs, and the waves the launch needs.
Only the CUDA driver (libcuda.so.1) through ctypes: no toolkit, no PyTorch.
"""
import ctypes as C
import json
import os
import sys

cu = C.CDLL("libcuda.so.1")


def check(rc, what):
    if rc != 0:
        name = C.c_char_p()
        cu.cuGetErrorName(rc, C.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else rc}")


class Attr(C.Structure):
    # CUlaunchAttribute: id, 4 bytes of padding, a 64-byte value union (clusterDim: 3 x u32).
    _fields_ = [("id", C.c_uint), ("pad", C.c_char * 4), ("value", C.c_uint * 16)]


class Config(C.Structure):
    _fields_ = [("grid", C.c_uint * 3), ("block", C.c_uint * 3), ("shared", C.c_uint),
                ("stream", C.c_void_p), ("attrs", C.POINTER(Attr)), ("n_attrs", C.c_uint)]


CLUSTER_DIMENSION = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
SM_COUNT = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

check(cu.cuInit(0), "cuInit")
dev = C.c_int()
check(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
ctx = C.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
sms = C.c_int()
check(cu.cuDeviceGetAttribute(C.byref(sms), SM_COUNT, dev), "SM count")
print(f"{sms.value} SMs")
print(f"{'kernel':44s} {'grid':>5s} {'cl':>2s} {'smem':>7s} {'resident':>9s} {'launched':>8s} waves  config")
for path in sys.argv[1:]:
    m = json.load(open(path))
    ptx_path = m["module"]["path"]
    if not os.path.isabs(ptx_path):
        ptx_path = os.path.join(os.path.dirname(path), os.path.basename(ptx_path))
    mod = C.c_void_p()
    check(cu.cuModuleLoadData(C.byref(mod), open(ptx_path, "rb").read() + b"\0"), f"load {ptx_path}")
    for k in m["kernels"]:
        f = C.c_void_p()
        check(cu.cuModuleGetFunction(C.byref(f), mod, k["name"].encode()), k["name"])
        smem = k["dynamic_shared_bytes"]
        check(cu.cuFuncSetAttribute(f, MAX_DYNAMIC_SHARED, smem), "opt in to shared memory")
        cl = k.get("cluster_blocks", 1)
        grid, block = k["grid"], k["block"]
        blocks = grid[0] * grid[1] * grid[2]
        cfg = Config((C.c_uint * 3)(*grid), (C.c_uint * 3)(*block), smem, None, None, 0)
        notes = []
        if cl > 1:
            n = C.c_int()
            check(cu.cuOccupancyMaxActiveClusters(C.byref(n), f, C.byref(cfg)), "max active clusters")
            attr = Attr(CLUSTER_DIMENSION, b"\0" * 4, (C.c_uint * 16)(cl, 1, 1))
            cfg.attrs, cfg.n_attrs = C.pointer(attr), 1
            n2 = C.c_int()
            rc = cu.cuOccupancyMaxActiveClusters(C.byref(n2), f, C.byref(cfg))
            notes.append(f"explicit attr: {n2.value if rc == 0 else 'rc ' + str(rc)}")
            resident, launched = n.value, blocks // cl
        else:
            per_sm = C.c_int()
            check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                C.byref(per_sm), f, block[0] * block[1] * block[2], C.c_size_t(smem)), "blocks per SM")
            resident, launched = per_sm.value * sms.value, blocks
        waves = -(-launched // max(resident, 1))
        print(f"{k['name'] + ' ' + os.path.basename(path):44s} {blocks:5d} {cl:2d} {smem:7d} "
              f"{resident:9d} {launched:8d} {waves:5d}  {m['config']['text']} {' '.join(notes)}")
    cu.cuModuleUnload(mod)
