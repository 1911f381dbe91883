"""PyTorch ops that run convtune's tuned kernels on CUDA tensors.

:func:`conv2d` (a ``torch.autograd.Function``: its backward runs :func:`conv2d_input` and
:func:`conv2d_weight`, convtune's backward-data and backward-weight kernels) and :class:`Conv2d`
(a drop-in ``torch.nn.Conv2d``). Each distinct problem is looked up and compiled once per
process (the config comes from the tuned database as ``convtune.lookup`` finds it), loaded
into the device's context through the CUDA driver, and launched on torch's current stream.

With ``convtune.torch.benchmark = True`` (as ``torch.backends.cudnn.benchmark``), the first
call of a problem the database has no exact entry for compiles the lookup's first
``BENCHMARK_CANDIDATES`` candidates (``convtune.lookup(..., candidates=N)``: the untuned
fallback's answer and the configs it ranks next), times each on that call's tensors, then
times a second round of ``SECOND_ROUND`` configs around the fastest (``convtune.second_round``:
what a tuning would measure next from those times) beside it, and keeps the fastest of all for
the rest of the process.

With ``convtune.torch.verify = True`` (the default), the first result of each kernel in a
process is checked against PyTorch's float64 convolution of the same tensors (relative L2
error within the problem's tolerance, as the tuner checks candidates) before it is trusted: a
database answer for a problem nobody tuned on this machine was never run, and a toolkit can
miscompile a kernel (session 24 found ptxas doing so). A kernel that fails is not used again
in the process; that call returns PyTorch's result, converted to the tensor's dtype, and a
warning names the config and the error. It costs one float64 convolution per problem and
kernel, once; with :data:`benchmark`, every timed candidate is checked and only those that pass
are timed.

Under ``torch.use_deterministic_algorithms(True)`` every lookup asks for configs whose results
are the same bits on every run (``convtune.lookup(..., deterministic=True)``: no floating-point
atomics), and :func:`launch` refuses a config that adds by atomics (RuntimeError).

A convolution convtune does not run (CPU tensors, float64, an arch with no convtune target, a
problem with no legal config, a kernel that failed the check, ...) runs in PyTorch instead, and
a warning says so once per kind of reason. :func:`stats` counts both, and the checks.
"""

import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F

from . import ConvtuneError, FIRST_USE_CANDIDATES, SECOND_ROUND_CANDIDATES
from . import second_round as _second_round
from . import problem as _native_problem
from . import compile as _compile
from . import lookup as _lookup
from . import _cuda
from ._select import (Fallback, arch_name, dtype_name, memory_format, padding_pair,
                      problem_line)

__all__ = ["Conv2d", "Conv2dFunction", "conv2d", "conv2d_input", "conv2d_weight", "launch",
           "stats", "reset_stats", "benchmark", "BENCHMARK_CANDIDATES", "SECOND_ROUND", "choices",
           "verify"]

#: Time the lookup's candidates on a problem's first call and keep the fastest (see above).
benchmark = False
#: Check each kernel's first result against PyTorch's float64 convolution (see above).
verify = True
#: How many of the lookup's candidates a first-call benchmark times: the library's
#: ``convtune.FIRST_USE_CANDIDATES`` (16), which a tuning also measures first. With each
#: shipped entry held out, the fastest of sixteen ran at 0.986 of tuned speed (geomean; 7 of
#: 184 below 0.8), of the first eight at 0.960 (12 below 0.8), the same lists timed in one
#: H100 run (BENCHMARKS.md session 37).
BENCHMARK_CANDIDATES = FIRST_USE_CANDIDATES
#: How many configs a first-call benchmark times in its second round, after the lookup's:
#: ``convtune.second_round`` from the first round's times (the tuner's local search around the
#: fastest, and one config of a kernel family nothing measured), timed beside the fastest so
#: far; 0 turns it off. With each shipped entry held out, the config kept after eight more ran
#: at 0.998 of tuned speed against 0.974 after sixteen (geomean over 182, below 0.8: 5 -> 0;
#: one H100, BENCHMARKS.md session 39); out of the box on problems the database lacks, the kept
#: config ran 1.04x faster, the first call 4.6 s instead of 2.7 (median, session 39 call 3).
SECOND_ROUND = SECOND_ROUND_CANDIDATES
#: Timed runs of each candidate in a first-call benchmark (after one warm-up run).
_BENCHMARK_RUNS = 5
#: GPU clock cycles each timed run waits for the host to enqueue it (~1 ms at 2 GHz).
_HOLD_CYCLES = 2_000_000

_lock = threading.Lock()
_plans = {}  # (device index, arch, problem line, config, deterministic) -> _Plan or Fallback
_warned = set()
_stats = {"convtune": 0, "fallback": {}, "verified": 0, "failed_check": 0, "unchecked": 0}
_choices = {}  # problem line -> {config: ms} of its first-call benchmark, the kept one first
_kept = {}  # (device index, stream) -> the workspace of the plans with a kept-zero region


class _Plan:
    """A compiled problem loaded on one device: the launches in order and the workspace size."""

    def __init__(self, manifest, launches):
        self.manifest = manifest
        self.launches = launches  # [(function, the manifest's kernel)]
        self.workspace_bytes = int(manifest["workspace_bytes"])
        # Its first bytes must be zero when it starts, and it leaves them zero (its split-K
        # counters): it runs on a kept workspace, cleared once (`_workspace`).
        self.kept_zero = int(manifest.get("workspace_kept_zero", 0))
        self.verified = False  # its result has matched PyTorch's float64 one (see `verify`)

    @property
    def config(self):
        return self.manifest["lookup"]["config"]


class _Candidates:
    """A problem's lookup candidates, compiled and loaded, not yet timed: the first call times
    them on its tensors and replaces this with the fastest."""

    def __init__(self, key, plans):
        self.key = key
        self.plans = plans  # [_Plan], the lookup's answer first
        self.manifest = plans[0].manifest  # shapes are the problem's, the same in every plan


def choices():
    """What each first-call benchmark measured: ``{problem line: {config: ms}}``, the config
    kept first."""
    with _lock:
        return {line: dict(times) for line, times in _choices.items()}


def stats():
    """How many convolutions ran in convtune's kernels and, per reason category, in PyTorch;
    how many kernels passed the first-result check (``verified``), failed it
    (``failed_check``) or ran unchecked for want of memory (``unchecked``)."""
    with _lock:
        return {"convtune": _stats["convtune"], "fallback": dict(_stats["fallback"]),
                **{k: _stats[k] for k in ("verified", "failed_check", "unchecked")}}


def reset_stats():
    """Zeroes :func:`stats` (the compiled-kernel cache and the checks made stay)."""
    with _lock:
        _stats["convtune"] = 0
        _stats["fallback"].clear()
        for k in ("verified", "failed_check", "unchecked"):
            _stats[k] = 0


def _fell_back(reason):
    with _lock:
        fb = _stats["fallback"]
        fb[reason.category] = fb.get(reason.category, 0) + 1
        first = reason.category not in _warned
        _warned.add(reason.category)
    if first:
        warnings.warn(f"convtune: running in PyTorch instead: {reason} (said once per kind of "
                      f"reason; convtune.torch.stats() counts them)", RuntimeWarning,
                      stacklevel=4)


def _gpu(device):
    """The device as the database's fingerprints name it (the CUDA driver's name and the SM
    count), so a lookup serves the entries tuned on this GPU."""
    props = torch.cuda.get_device_properties(device)
    return {"gpu": props.name, "compute_units": props.multi_processor_count}


def _plan(device, line, config=None):
    """The loaded kernels of a problem on a device (with the looked-up config, or ``config``),
    or the Fallback that says why not; with :data:`benchmark` on and no config given, the
    lookup's candidates (:class:`_Candidates`) until the first call has timed them."""
    arch = arch_name(device.type, torch.cuda.get_device_capability(device))
    # PyTorch's deterministic mode may change between calls: a plan is kept per mode.
    deterministic = torch.are_deterministic_algorithms_enabled()
    key = (device.index, arch, line, config, deterministic)
    with _lock:
        hit = _plans.get(key)
    if hit is not None:
        return hit
    gpu = _gpu(device)
    if config is None and benchmark and BENCHMARK_CANDIDATES > 1:
        try:
            found = _lookup(line, arch, candidates=BENCHMARK_CANDIDATES,
                            deterministic=deterministic, **gpu)
        except (ValueError, ConvtuneError):
            found = None  # the plain path below says why
        if found is not None and found["source"] != "exact" and len(found["candidates"]) > 1:
            configs = [c["config"] for c in found["candidates"]]
            # Compiled (the native code lets go of the GIL) and loaded (the driver's JIT) side
            # by side: a first call waits for the slowest candidate, not for their sum.
            with ThreadPoolExecutor(max_workers=min(len(configs), os.cpu_count() or 1)) as pool:
                plans = list(pool.map(lambda c: _plan(device, line, c), configs))
            plans = [p for p in plans if isinstance(p, _Plan)]
            if plans:
                result = _Candidates(key, plans) if len(plans) > 1 else plans[0]
                with _lock:
                    _plans[key] = result
                return result
    try:
        manifest, module = _compile(line, arch, config=config, deterministic=deterministic,
                                    **gpu)
        if deterministic and not manifest["lookup"]["deterministic"]:
            raise Fallback("nondeterministic", f"{config} adds its sums with atomics, and "
                           "torch.use_deterministic_algorithms(True) is set")
        if manifest["module"]["kind"] != "ptx":
            raise Fallback("module", f"a {manifest['module']['kind']} cannot run through the "
                           "CUDA driver")
        drv = _cuda.driver()
        # Every tensor map must be one the driver encodes: tried now over a stand-in address
        # (256-byte aligned, as allocations are), so a map the driver refuses is a fallback
        # here with its numbers, not an error at the first launch. The Rust runtime does the
        # same when it loads a plan.
        with torch.cuda.device(device):
            drv.make_current(device.index)
            for k in manifest["kernels"]:
                for m in k.get("tensor_maps", []):
                    drv.encode_tensor_map(m["encode"], 1 << 32)
            _, functions = drv.load(module, manifest["kernels"])
        launches = list(zip(functions, manifest["kernels"]))
        result = _Plan(manifest, launches)
    except ValueError as e:  # an arch or problem convtune refuses
        result = Fallback("unsupported", str(e))
    except ConvtuneError as e:
        result = Fallback("no-kernel", str(e))
    except (_cuda.CudaError, OSError) as e:
        result = Fallback("driver", str(e))
    except Fallback as e:
        result = e
    with _lock:
        _plans[key] = result
    return result


def _run(plan, x, w, y, out, reference):
    """Launches a plan's kernels on torch's current stream of x's device, writing ``out`` (one
    of x, w, y: the problem's written tensor). A plan's candidates are timed first and the
    fastest kept. With :data:`verify`, a kernel's first result is checked against
    ``reference()`` (PyTorch's float64 result; None: no check); one that fails is replaced by
    PyTorch for good, and ``out`` gets the reference. Returns nothing: ``out`` holds the
    result."""
    checking = (verify and reference is not None
                and not torch.cuda.is_current_stream_capturing())
    ref = None
    if isinstance(plan, _Candidates):
        if checking:
            ref = _reference(reference)
        plan = _choose(plan, x, w, y, out, ref)
    if isinstance(plan, _Plan):
        _launch(plan, x, w, y)
        if checking and not plan.verified:
            ref = _reference(reference) if ref is None else ref
            if ref is None:
                with _lock:
                    plan.verified = True  # trusted unchecked: see _reference
                    _stats["unchecked"] += 1
            else:
                plan = _check(plan, out, ref)
    if isinstance(plan, Fallback):
        out.copy_(ref)
        _fell_back(plan)
        return
    with _lock:
        _stats["convtune"] += 1


def _reference(reference):
    """PyTorch's float64 result, or None where the GPU has no memory for it (a float64 copy of
    the tensors is four times a bf16 one): then the kernel is trusted unchecked, counted in
    :func:`stats` as ``unchecked``."""
    try:
        return reference()
    except torch.cuda.OutOfMemoryError:
        return None


def _rel_err(out, ref):
    """Relative L2 error of ``out`` against the float64 ``ref`` (the tuner's measure)."""
    want = ref.norm().item()
    diff = (out.double() - ref).norm().item()
    return diff / want if want > 0 else diff


def _check(plan, out, ref):
    """``plan`` when ``out`` (its kernels' result) is within the problem's tolerance of
    ``ref``, else a Fallback that replaces it, from now on, under every key it is cached under
    (its config's, and the problem's when it was the only candidate a benchmark loaded)."""
    tol = float(plan.manifest["problem"]["tolerance"])
    err = _rel_err(out, ref)
    with _lock:
        if err <= tol:  # NaN fails
            plan.verified = True
            _stats["verified"] += 1
            return plan
        _stats["failed_check"] += 1
        reason = Fallback("wrong-result",
                          f"config {plan.config} on {plan.manifest['problem']['key']}: relative "
                          f"error {err:.3g} against PyTorch's float64 result (tolerance "
                          f"{tol:.3g}); please report it with `convtune compile --ptxas` output")
        for key in [k for k, v in _plans.items() if v is plan]:
            _plans[key] = reason
    return reason


def _choose(candidates, x, w, y, out, ref):
    """Times each candidate plan on these tensors (each fully overwrites the written one, which
    the caller's launch then writes again), then, with :data:`SECOND_ROUND` > 0, the configs
    the library's second round proposes from those times (``convtune.second_round``: the
    tuner's local search around the fastest) beside the fastest so far, and caches the
    fastest of all under the problem's key."""
    plans, times = _timed(candidates.plans, x, w, y, out, ref)
    if not plans:
        failed = Fallback("wrong-result", f"all {len(candidates.plans)} candidates of "
                          f"{candidates.manifest['problem']['key']} failed the check against "
                          "PyTorch's float64 result")
        with _lock:
            _plans[candidates.key] = failed
        return failed
    best = min(plans, key=lambda p: times[p.config])
    if SECOND_ROUND > 0:
        _, arch, line, _, deterministic = candidates.key
        # Failed the check: measured as failed, so the search steers away from it.
        measured = [(p.config, times[p.config] * 1e3 if p.config in times else None)
                    for p in candidates.plans]
        try:
            configs = _second_round(line, arch, measured, candidates=SECOND_ROUND,
                                    deterministic=deterministic)
        except (ValueError, ConvtuneError):
            configs = []
        if configs:
            with ThreadPoolExecutor(max_workers=min(len(configs), os.cpu_count() or 1)) as pool:
                more = list(pool.map(lambda c: _plan(x.device, line, c), configs))
            more = [p for p in more if isinstance(p, _Plan)]
            if more:
                # Beside the fastest of the first round, in the same runs: one clock for both.
                again, times2 = _timed([best] + more, x, w, y, out, ref)
                times.update(times2)
                best = min(again, key=lambda p: times2[p.config])
    kept = best.config
    with _lock:
        _plans[candidates.key] = best
        _choices[candidates.key[2]] = {kept: times[kept],
                                       **{c: t for c, t in times.items() if c != kept}}
    return best


def _timed(candidates, x, w, y, out, ref):
    """The plans of ``candidates`` that pass the check against ``ref`` (all with ``ref``
    None), and their median times in ms on these tensors.

    A launch costs 0.1-0.3 ms of Python and driver calls, more than many kernels run: events
    around back-to-back launches time the host. So the GPU first sleeps while the host enqueues
    each timed launch, and the events hold the kernels alone (session 23's first run without
    the sleep kept a slower config than the lookup's on 25 of 28 problems, 0.88x of its speed);
    the candidates take turns, and each keeps its median."""
    stream = torch.cuda.current_stream(x.device)
    plans = []
    for plan in candidates:
        _launch(plan, x, w, y)  # warm-up: module load, caches
        if ref is not None and not plan.verified:
            if not isinstance(_check(plan, out, ref), _Plan):
                continue
        plans.append(plan)
    events = [[] for _ in plans]
    with torch.cuda.device(x.device):
        for _ in range(_BENCHMARK_RUNS):
            for i, plan in enumerate(plans):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                _hold(stream)
                start.record(stream)
                _launch(plan, x, w, y)
                end.record(stream)
                events[i].append((start, end))
        stream.synchronize()
    times = {}
    for plan, pairs in zip(plans, events):
        ms = sorted(s.elapsed_time(e) for s, e in pairs)
        times[plan.config] = ms[len(ms) // 2]
    return plans, times


def _hold(stream):
    """Keeps the GPU busy for about a millisecond on ``stream`` (``torch.cuda._sleep``, where
    this torch has it), so that what the host enqueues next starts when the sleep ends."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        with torch.cuda.stream(stream):
            sleep(_HOLD_CYCLES)


def _cleared(plan, device):
    """A new workspace for ``plan`` with its kept-zero region cleared (on the current stream)."""
    ws = torch.empty(plan.workspace_bytes, dtype=torch.uint8, device=device)
    ws[:plan.kept_zero].zero_()
    return ws


def _workspace(plan, device, stream):
    """The workspace of one call of ``plan`` on ``stream``. A plan with a kept-zero region (its
    split-K counters, which it finds zero and leaves zero) gets the buffer kept for such plans
    on that stream, cleared once when allocated: no launch clears counters before each call.
    Plans in flight on one stream run one after another, so they share it safely; another
    stream has its own. Other plans get a fresh buffer; their contents do not matter."""
    if not plan.kept_zero:
        return torch.empty(plan.workspace_bytes, dtype=torch.uint8, device=device)
    if torch.cuda.is_current_stream_capturing():
        # Allocated in the graph's pool, its region cleared by a node of the graph (a memset
        # of the region, as cheap as the clearing launch it replaces): correct at every
        # replay, never kept for calls outside it.
        return _cleared(plan, device)
    key = (device.index, stream)
    with _lock:
        ws = _kept.get(key)
        if ws is None or ws.numel() < plan.workspace_bytes:
            # Stream-ordered on this stream: the previous buffer's last use is queued before
            # the clearing of the new one.
            ws = _kept[key] = _cleared(plan, device)
    return ws


def _launch(plan, x, w, y):
    """Launches a plan's kernels on torch's current stream of x's device."""
    with torch.cuda.device(x.device):
        stream = torch.cuda.current_stream(x.device).cuda_stream
        ws = _workspace(plan, x.device, stream) if plan.workspace_bytes else None
        pointers = {"x": x.data_ptr(), "w": w.data_ptr(), "y": y.data_ptr(),
                    "workspace": ws.data_ptr() if ws is not None else 0}
        drv = _cuda.driver()
        drv.make_current(x.device.index)
        for function, k in plan.launches:
            # Tensor maps are encoded over this call's pointers (a microsecond or two each).
            params = _cuda.kernel_params(k, pointers, drv.encode_tensor_map)
            drv.launch(function, k["grid"], k["block"], int(k["shared_bytes"]), stream, params)


def launch(problem, x, w, y, config=None):
    """Runs one problem line's kernels on flat buffers: ``x``, ``w``, ``y`` are contiguous CUDA
    tensors of the problem's dtype holding each tensor in the problem's own layout (any layout
    the problem names, not only torch's two memory formats; ``convtune.problem(line)`` gives
    each tensor's element count and strides). The written tensor is fully overwritten.
    ``config``: a config string to compile instead of the looked-up one (checked for legality).
    Raises RuntimeError where convtune cannot run the problem (no fallback here). The result is
    not checked (:data:`verify` is the torch ops'): compare it yourself, as
    ``scripts/python-gpu-check.py`` does."""
    info = _native_problem(problem)
    for name, t in (("x", x), ("w", w), ("y", y)):
        want = info["tensors"][name]["elements"]
        if t.device.type != "cuda" or not t.is_contiguous() or t.numel() != want:
            raise ValueError(f"{name}: expected a contiguous CUDA tensor of {want} elements, got "
                             f"{t.numel()} on {t.device} (contiguous: {t.is_contiguous()})")
        if dtype_name(t.dtype) != info["dtype"]:
            raise ValueError(f"{name}: dtype {t.dtype}, the problem is {info['dtype']}")
    plan = _plan(x.device, problem, config)
    if isinstance(plan, Fallback):
        raise RuntimeError(f"convtune cannot run {problem!r}: {plan}")
    _run(plan, x, w, y, None, None)


def _layout_of(t):
    """The activations' layout: channels_last where ``t`` is stored so, else NCHW."""
    fmt = memory_format(tuple(t.shape), tuple(t.stride()))
    return fmt if fmt == "NHWC" and not t.is_contiguous() else "NCHW"


def _dense(t, layout):
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    t = t.contiguous(memory_format=fmt)
    if t.data_ptr() % 16:  # vector loads need aligned bases; a fresh copy is
        t = t.clone(memory_format=fmt)
    return t


def _select(direction, x_meta, w_shape, tensors, stride, padding, dilation, groups, layout):
    """The plan for one convolution, or the Fallback."""
    try:
        for t in tensors:
            if t.device.type != "cuda":
                raise Fallback("device", f"a tensor on '{t.device.type}', not on a CUDA device")
        dts = {dtype_name(t.dtype) for t in tensors}
        if len(dts) != 1:
            raise Fallback("dtype", f"mixed dtypes {sorted(dts)}")
        line = problem_line(direction, x_meta, w_shape, dts.pop(), stride, padding, dilation,
                            groups, layout)
        return _plan(tensors[0].device, line)
    except Fallback as e:
        return e


def _forward(x, w, stride, padding, dilation, groups):
    layout = _layout_of(x)
    plan = _select("fwd", tuple(x.shape), tuple(w.shape), (x, w), stride, padding, dilation,
                   groups, layout)
    if isinstance(plan, Fallback):
        _fell_back(plan)
        return F.conv2d(x, w, None, stride, padding, dilation, groups)
    x, w = _dense(x, layout), _dense(w, layout)
    n, _, ho, wo = _out_shape(plan)
    y = _empty((n, w.shape[0], ho, wo), x, layout)
    _run(plan, x, w, y, y,
         lambda: F.conv2d(x.double(), w.double(), None, stride, padding, dilation, groups))
    return y


def _out_shape(plan):
    p = plan.manifest["problem"]
    return p["sizes"]["n"], p["sizes"]["k"], p["out_size"][0], p["out_size"][1]


def _empty(shape, like, layout):
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=fmt)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its input (``torch.nn.grad.conv2d_input``),
    computed by convtune's backward-data kernels."""
    input_size = tuple(input_size)
    layout = _layout_of(grad_output)
    plan = _select("bwd-data", input_size, tuple(weight.shape), (weight, grad_output), stride,
                   padding, dilation, groups, layout)
    if isinstance(plan, Fallback):
        _fell_back(plan)
        return torch.nn.grad.conv2d_input(input_size, weight, grad_output, stride, padding,
                                          dilation, groups)
    w, dy = _dense(weight, layout), _dense(grad_output, layout)
    dx = _empty(input_size, dy, layout)
    _run(plan, dx, w, dy, dx,
         lambda: torch.nn.grad.conv2d_input(input_size, w.double(), dy.double(), stride,
                                            padding, dilation, groups))
    return dx


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its weight (``torch.nn.grad.conv2d_weight``),
    computed by convtune's backward-weight kernels."""
    weight_size = tuple(weight_size)
    layout = _layout_of(input)
    plan = _select("bwd-weight", tuple(input.shape), weight_size, (input, grad_output), stride,
                   padding, dilation, groups, layout)
    if isinstance(plan, Fallback):
        _fell_back(plan)
        return torch.nn.grad.conv2d_weight(input, weight_size, grad_output, stride, padding,
                                           dilation, groups)
    x, dy = _dense(input, layout), _dense(grad_output, layout)
    dw = _empty(weight_size, x, layout)
    _run(plan, x, dw, dy, dw,
         lambda: torch.nn.grad.conv2d_weight(x.double(), weight_size, dy.double(), stride,
                                             padding, dilation, groups))
    return dw


class Conv2dFunction(torch.autograd.Function):
    """conv2d with convtune's kernels forward and backward (bias added by PyTorch)."""

    @staticmethod
    def forward(ctx, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        ctx.save_for_backward(input, weight)
        ctx.conv = (stride, padding, dilation, groups)
        ctx.has_bias = bias is not None
        y = _forward(input, weight, stride, padding, dilation, groups)
        if bias is not None:
            y = y + bias.reshape(1, -1, 1, 1)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.conv
        gi = gw = gb = None
        if ctx.needs_input_grad[0]:
            gi = conv2d_input(input.shape, weight, grad_output, stride, padding, dilation, groups)
        if ctx.needs_input_grad[1]:
            gw = conv2d_weight(input, weight.shape, grad_output, stride, padding, dilation,
                               groups)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = grad_output.sum((0, 2, 3))
        return gi, gw, gb, None, None, None, None


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``torch.nn.functional.conv2d`` on convtune's kernels, differentiable."""
    if isinstance(padding, str):
        # "valid"/"same" become the symmetric pair the kernels (and torch.nn.grad) take.
        s, d = _pair(stride), _pair(dilation)
        try:
            padding = padding_pair(padding, tuple(weight.shape[2:]), s, d)
        except Fallback as reason:
            _fell_back(reason)
            return F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    return Conv2dFunction.apply(input, weight, bias, stride, padding, dilation, groups)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Conv2d(torch.nn.Conv2d):
    """``torch.nn.Conv2d`` whose convolution runs on convtune's kernels (zero padding mode;
    other padding modes pad in PyTorch first, as ``nn.Conv2d`` does)."""

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv2d(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
