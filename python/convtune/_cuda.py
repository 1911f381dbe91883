"""The few CUDA driver calls that run convtune's kernels, through ctypes on libcuda.so.1.

The kernel ABI (src/abi/): every kernel takes four u64 device pointers, x, w, y and workspace,
in that order, then (``ld=tma``/``ld=ws`` kernels) one 128-byte ``CUtensorMap`` per operand it
loads with TMA, passed by value. The manifest says everything about each kernel's parameters:
``params`` (offset, size and alignment of each value in the parameter buffer) and
``tensor_maps`` (per map, the driver call that encodes it, ``encode``: function and arguments,
written by convtune's Rust side). This module only passes those on: it encodes each map over
the live tensor pointer and packs the values where ``params`` puts them; no rule of the
encoding or of the layout is restated here. Kernels use only dynamic shared memory (more than
the default 48 KiB needs cuFuncSetAttribute first), and the launches of one convolution run in
order on one stream. No torch here: ``convtune.torch`` passes it pointers and the stream handle.
"""

import ctypes
import struct

# CUfunction_attribute: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
_MAX_DYNAMIC_SHARED = 8

_c_ptr = ctypes.c_void_p
_u32, _u64, _int = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int

# Bytes of a CUtensorMap, and the alignment of the one the driver encodes into: cuda.h 12
# declares it alignas(64), cuda.h 13 alignas(128); 128 satisfies both. (As a kernel parameter
# its alignment is the manifest's `params` `align`, 64.)
TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGN = 128

# The encode functions' parameters after the output map, in the driver's order: (name in the
# manifest's `encode`, ctypes type; a list type is an array argument). Enums are C ints.
_ENCODE_PARAMS = {
    "cuTensorMapEncodeTiled": [
        ("data_type", _int), ("rank", _u32), ("address", _c_ptr), ("global_dim", [_u64]),
        ("global_strides", [_u64]), ("box_dim", [_u32]), ("element_strides", [_u32]),
        ("interleave", _int), ("swizzle", _int), ("l2_promotion", _int), ("oob_fill", _int)],
    "cuTensorMapEncodeIm2col": [
        ("data_type", _int), ("rank", _u32), ("address", _c_ptr), ("global_dim", [_u64]),
        ("global_strides", [_u64]), ("pixel_box_lower_corner", [_int]),
        ("pixel_box_upper_corner", [_int]), ("channels_per_pixel", _u32),
        ("pixels_per_column", _u32), ("element_strides", [_u32]), ("interleave", _int),
        ("swizzle", _int), ("l2_promotion", _int), ("oob_fill", _int)],
}


def encode_arguments(encode, base):
    """The driver call of a manifest's tensor-map ``encode`` over the tensor at device address
    ``base``: ``(function name, [ctypes values after the output map, in parameter order])``.
    ``globalAddress`` is ``base + encode["address_offset"]``; every other value is the
    manifest's, unchanged."""
    name = encode["function"]
    if name not in _ENCODE_PARAMS:
        raise ValueError(f"tensor map: unknown encode function {name!r}")
    rank = int(encode["rank"])
    if not 1 <= rank <= len(encode["global_dim"]):
        raise ValueError(f"tensor map: rank {rank} with {len(encode['global_dim'])} dims")
    values = []
    for field, ty in _ENCODE_PARAMS[name]:
        if field == "address":
            values.append(_c_ptr(int(base) + int(encode["address_offset"])))
        elif isinstance(ty, list):
            items = [int(v) for v in encode[field]]
            values.append((ty[0] * len(items))(*items))
        else:
            values.append(ty(int(encode[field])))
    return name, values


def param_buffer_layout(params):
    """(bytes, alignment) of a kernel's parameter buffer from the manifest's ``params``."""
    size = max((int(p["offset"]) + int(p["bytes"]) for p in params), default=0)
    align = max((int(p["align"]) for p in params), default=1)
    return size, align


class KernelParams:
    """One launch's parameter values, each at its ``params`` offset in one buffer aligned as
    the largest value asks (64 bytes with tensor maps), and the ``void **`` array of
    cuLaunchKernel pointing at each. Keeps the buffer alive while it is."""

    def __init__(self, params, values):
        size, align = param_buffer_layout(params)
        self.size = size
        self._raw = ctypes.create_string_buffer(size + align)
        start = ctypes.addressof(self._raw)
        self.base = (start + align - 1) // align * align
        self.offsets = []
        for p in sorted(params, key=lambda p: int(p["index"])):
            value, off = values[int(p["index"])], int(p["offset"])
            if len(value) != int(p["bytes"]) or off % int(p["align"]):
                raise ValueError(f"parameter {p['index']} ({p['kind']} of {p['tensor']}): "
                                 f"{len(value)} bytes at offset {off}, the manifest says "
                                 f"{p['bytes']} aligned to {p['align']}")
            ctypes.memmove(self.base + off, value, len(value))
            self.offsets.append(off)
        self.array = (_c_ptr * len(self.offsets))(*[self.base + o for o in self.offsets])

    def bytes(self):
        """The buffer's contents: what the kernel receives as its parameters."""
        return ctypes.string_at(self.base, self.size)


def kernel_params(kernel, pointers, encode_map):
    """The parameters of one manifest ``kernel`` for device pointers ``pointers`` (role name ->
    address: ``x``, ``w``, ``y``, ``workspace``): each device-pointer parameter its role's
    address, each tensor-map parameter ``encode_map(encode, address)`` (128 bytes) over its
    tensor's address. Returns :class:`KernelParams`."""
    maps = {int(m["index"]): m for m in kernel.get("tensor_maps", [])}
    values = {}
    for p in kernel["params"]:
        i, role = int(p["index"]), p["tensor"]
        if role not in pointers:
            raise ValueError(f"parameter {i}: no pointer for `{role}`")
        if p["kind"] == "device-pointer":
            values[i] = struct.pack("<Q", int(pointers[role]))
        elif p["kind"] == "tensor-map":
            m = maps.get(i)
            if m is None or m["tensor"] != role:
                raise ValueError(f"parameter {i}: a tensor map of `{role}` that `tensor_maps` "
                                 "does not describe")
            values[i] = bytes(encode_map(m["encode"], int(pointers[role])))
        else:
            raise ValueError(f"parameter {i}: kind {p['kind']!r} is not one this launcher "
                             "passes")
    if set(maps) - set(values):
        raise ValueError(f"tensor maps {sorted(set(maps) - set(values))} are no parameter")
    return KernelParams(kernel["params"], values)


class CudaError(RuntimeError):
    """A CUDA driver call that returned an error."""


class Driver:
    """libcuda.so.1, loaded once. Raises OSError where no driver is installed."""

    def __init__(self, path="libcuda.so.1"):
        lib = ctypes.CDLL(path)
        sig = {
            "cuInit": [ctypes.c_uint],
            "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
            "cuCtxGetCurrent": [ctypes.POINTER(_c_ptr)],
            "cuCtxSetCurrent": [_c_ptr],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(_c_ptr), ctypes.c_int],
            "cuModuleLoadData": [ctypes.POINTER(_c_ptr), ctypes.c_char_p],
            "cuModuleUnload": [_c_ptr],
            "cuModuleGetFunction": [ctypes.POINTER(_c_ptr), _c_ptr, ctypes.c_char_p],
            "cuFuncSetAttribute": [_c_ptr, ctypes.c_int, ctypes.c_int],
            "cuLaunchKernel": [_c_ptr] + [ctypes.c_uint] * 7
            + [_c_ptr, ctypes.POINTER(_c_ptr), ctypes.POINTER(_c_ptr)],
        }
        for name, argtypes in sig.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        # The encode functions (CUDA 12+): bound when present, so an older driver still runs
        # kernels that take no tensor maps.
        for name, params in _ENCODE_PARAMS.items():
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [_c_ptr] + [ctypes.POINTER(t[0]) if isinstance(t, list) else t
                                          for _, t in params]
                fn.restype = ctypes.c_int
        self._lib = lib
        self.check(lib.cuInit(0), "cuInit")

    def check(self, rc, what):
        if rc == 0:
            return
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self._lib.cuGetErrorName(rc, ctypes.byref(name))
        self._lib.cuGetErrorString(rc, ctypes.byref(text))
        raise CudaError(f"{what}: {(name.value or b'?').decode()} ({rc}): "
                        f"{(text.value or b'').decode()}")

    def make_current(self, device_index):
        """Makes a context of the device current on this thread: the one already current (torch's
        primary context after ``torch.cuda.device(i)``), else the device's primary context."""
        ctx = _c_ptr()
        self.check(self._lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if ctx.value:
            return ctx.value
        dev = ctypes.c_int()
        self.check(self._lib.cuDeviceGet(ctypes.byref(dev), device_index), "cuDeviceGet")
        self.check(self._lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                   "cuDevicePrimaryCtxRetain")
        self.check(self._lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return ctx.value

    def load(self, image, kernels):
        """Loads a module (PTX text or cubin) into the current context and resolves its kernels.

        ``kernels``: the manifest's launches (name, grid, block, shared_bytes). Returns the
        module handle and, per launch, the function handle. Each kernel is opted in to the
        largest dynamic shared memory any of its launches asks for.
        """
        if not image.endswith(b"\0"):
            image = image + b"\0"  # PTX is loaded as a C string
        module = _c_ptr()
        self.check(self._lib.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        functions, shared = {}, {}
        try:
            for k in kernels:
                name = k["name"]
                if name not in functions:
                    f = _c_ptr()
                    self.check(self._lib.cuModuleGetFunction(ctypes.byref(f), module,
                                                             name.encode()),
                               f"cuModuleGetFunction({name})")
                    functions[name] = f
                shared[name] = max(shared.get(name, 0), int(k["shared_bytes"]))
            for name, nbytes in shared.items():
                if nbytes > 0:
                    self.check(self._lib.cuFuncSetAttribute(functions[name], _MAX_DYNAMIC_SHARED,
                                                            nbytes),
                               f"cuFuncSetAttribute({name}, max dynamic shared = {nbytes} B)")
        except CudaError:
            self._lib.cuModuleUnload(module)
            raise
        return module.value, [functions[k["name"]] for k in kernels]

    def encode_tensor_map(self, encode, base):
        """The 128-byte CUtensorMap of a manifest's tensor-map ``encode`` over the tensor at
        device address ``base``, encoded by the driver call it names."""
        name, values = encode_arguments(encode, base)
        fn = getattr(self._lib, name, None)
        if fn is None:
            raise CudaError(f"{name}: this CUDA driver has no such function (CUDA 12 or later "
                            "encodes tensor maps)")
        raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN)
        out = (ctypes.addressof(raw) + TENSOR_MAP_ALIGN - 1) // TENSOR_MAP_ALIGN * TENSOR_MAP_ALIGN
        self.check(fn(_c_ptr(out), *values), f"{name}({_describe(encode)})")
        return ctypes.string_at(out, TENSOR_MAP_BYTES)

    def launch(self, function, grid, block, shared_bytes, stream, params):
        """One launch with the parameters of :func:`kernel_params` (a :class:`KernelParams`)."""
        rc = self._lib.cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1],
                                      block[2], shared_bytes, _c_ptr(stream or None),
                                      params.array, None)
        self.check(rc, "cuLaunchKernel")


def _describe(encode):
    r = int(encode["rank"])
    keys = ["global_dim", "global_strides", "box_dim", "pixel_box_lower_corner",
            "pixel_box_upper_corner", "element_strides"]
    return ", ".join(f"{k} {list(encode[k])[:r]}" for k in keys if k in encode)


_driver = None


def driver():
    """The process's driver handle, loaded on first use."""
    global _driver
    if _driver is None:
        _driver = Driver()
    return _driver
