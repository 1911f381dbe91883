"""Which convolutions convtune runs and how they are written as problems, in plain Python
(no torch), so the choices are tested where no GPU or torch is installed.

A choice that is not convtune's is a :class:`Fallback` with a category (one warning per
category) and a detail for the message.
"""

DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
_DIRECTIONS = ("fwd", "bwd-data", "bwd-weight")


class Fallback(Exception):
    """Why a convolution goes to PyTorch instead: ``category`` names the kind (one warning each),
    the message the case."""

    def __init__(self, category, detail):
        super().__init__(f"{category}: {detail}")
        self.category = category
        self.detail = detail


def dtype_name(torch_dtype):
    """convtune's name for a torch dtype (``torch.bfloat16`` or ``"bfloat16"``)."""
    name = str(torch_dtype).replace("torch.", "")
    if name not in DTYPES:
        raise Fallback("dtype", f"{name} is not a convtune type (float32, float16, bfloat16)")
    return DTYPES[name]


def _dense_strides(shape, order):
    """Strides of a dense tensor whose dims are stored in ``order`` (outermost first)."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return strides


def memory_format(shape, strides):
    """``"NCHW"`` (contiguous) or ``"NHWC"`` (channels_last) for a dense 4-D tensor whose
    strides match one of them (dims of extent 1 may have any stride), else None."""
    if len(shape) != 4:
        return None
    for name, order in (("NCHW", (0, 1, 2, 3)), ("NHWC", (0, 2, 3, 1))):
        want = _dense_strides(shape, order)
        if all(s == 1 or a == b for s, a, b in zip(shape, strides, want)):
            return name
    return None


def _pair(v, name):
    t = (v, v) if isinstance(v, int) else tuple(v)
    if len(t) == 1:
        t = (t[0], t[0])
    if len(t) != 2 or not all(isinstance(i, int) and i >= 0 for i in t):
        raise ValueError(f"{name}: expected a non-negative int or pair, got {v!r}")
    return t


def padding_pair(padding, filter_hw, stride, dilation):
    """Symmetric padding (h, w) from torch's ``padding`` (int, pair, ``"valid"`` or ``"same"``).
    ``"same"`` with an odd total padding pads one side more, which the kernels do not."""
    if padding == "valid":
        return (0, 0)
    if padding == "same":
        if tuple(stride) != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        pads = []
        for f, d in zip(filter_hw, dilation):
            total = d * (f - 1)
            if total % 2:
                raise Fallback("padding", f"'same' padding of a {f}-wide filter with dilation "
                               f"{d} is asymmetric")
            pads.append(total // 2)
        return tuple(pads)
    return _pair(padding, "padding")


def problem_line(direction, x_shape, w_shape, dtype, stride, padding, dilation, groups,
                 layout):
    """The MIOpenDriver line of a torch conv2d: ``x_shape`` (N, C, H, W), ``w_shape``
    (K, C/groups, Y, X) in torch's logical order whatever the memory format; ``layout`` is the
    activations' memory format (``NCHW``/``NHWC``), the filter's following it (KCYX/KYXC)."""
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected one of {_DIRECTIONS}")
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise Fallback("rank", f"conv2d needs 4-D input and weight, got {len(x_shape)}-D and "
                       f"{len(w_shape)}-D")
    n, c, h, w = x_shape
    k, cg, y, x = w_shape
    if not isinstance(groups, int) or groups < 1 or c != cg * groups or k % groups:
        raise ValueError(f"weight {tuple(w_shape)} does not fit input channels {c} with "
                         f"groups={groups}")
    (sh, sw), (dh, dw) = _pair(stride, "stride"), _pair(dilation, "dilation")
    if 0 in (sh, sw, dh, dw):
        raise ValueError("stride and dilation must be positive")
    ph, pw = padding_pair(padding, (y, x), (sh, sw), (dh, dw))
    if 0 in (n, c, h, w, k):
        raise Fallback("empty", f"a tensor with no elements (input {tuple(x_shape)})")
    cmd = {"f32": "conv", "f16": "convfp16", "bf16": "convbfp16"}[dtype]
    flag = {"fwd": 1, "bwd-data": 2, "bwd-weight": 4}[direction]
    fil = "KCYX" if layout == "NCHW" else "KYXC"
    return (f"{cmd} -F {flag} -n {n} -c {c} -H {h} -W {w} -k {k} -y {y} -x {x} -p {ph} "
            f"-q {pw} -u {sh} -v {sw} -l {dh} -j {dw} -g {groups} -I {layout} -f {fil} "
            f"-O {layout}")


def arch_name(device_type, capability):
    """The convtune arch of a device (``sm_90`` for capability (9, 0)); non-CUDA devices and
    ROCm builds of torch (which report ``cuda`` too but are asked for by the caller) fall back."""
    if device_type != "cuda":
        raise Fallback("device", f"tensors on '{device_type}', not on a CUDA device")
    major, minor = capability
    return f"sm_{major}{minor}"
