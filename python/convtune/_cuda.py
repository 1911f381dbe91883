"""The few CUDA driver calls that run convtune's kernels, through ctypes on libcuda.so.1.

The kernel ABI (src/runtime/plan.rs): every kernel takes four u64 device pointers, x, w, y and
workspace, in that order, uses only dynamic shared memory (a kernel asking for more than the
default 48 KiB must be opted in with cuFuncSetAttribute first), and the launches of one
convolution run in order on one stream. No torch here: ``convtune.torch`` passes it pointers
and the stream handle.
"""

import ctypes

# CUfunction_attribute: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
_MAX_DYNAMIC_SHARED = 8

_c_ptr = ctypes.c_void_p


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

    def launch(self, function, grid, block, shared_bytes, stream, pointers):
        """One launch with the kernel ABI's four u64 pointers (x, w, y, workspace)."""
        values = [ctypes.c_uint64(p) for p in pointers]
        params = (_c_ptr * len(values))(*[ctypes.addressof(v) for v in values])
        rc = self._lib.cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1],
                                      block[2], shared_bytes, _c_ptr(stream or None), params, None)
        self.check(rc, "cuLaunchKernel")


_driver = None


def driver():
    """The process's driver handle, loaded on first use."""
    global _driver
    if _driver is None:
        _driver = Driver()
    return _driver
