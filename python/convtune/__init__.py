"""convtune from Python: the tuned config for a convolution, its compiled kernels, and
(``convtune.torch``) PyTorch ops that run them.

Problems are written the way the command line takes them: a MIOpenDriver line
(``"convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC"``)
or rocMLIR driver flags; :func:`problem_string` writes one from keyword arguments.
"""

import json as _json

from . import _native
from ._native import ConvtuneError
#: How many of the lookup's candidates a first-use benchmark times (the library's constant:
#: what `convtune.torch` times and a tuning measures first), and the most one lookup answers.
from ._native import FIRST_USE_CANDIDATES, MAX_CANDIDATES
#: How many configs a first use times in its second round (:func:`second_round`).
from ._native import SECOND_ROUND_CANDIDATES

__all__ = [
    "ConvtuneError",
    "FIRST_USE_CANDIDATES",
    "MAX_CANDIDATES",
    "SECOND_ROUND_CANDIDATES",
    "compile",
    "lookup",
    "problem",
    "problem_string",
    "second_round",
    "__version__",
]

__version__ = _native.version()

_DIRECTIONS = {"fwd": 1, "bwd-data": 2, "bwd-weight": 4}
_COMMANDS = {"f32": "conv", "f16": "convfp16", "bf16": "convbfp16"}


def _pair(v, name):
    if isinstance(v, int):
        return (v, v)
    t = tuple(v)
    if len(t) != 2 or not all(isinstance(i, int) for i in t):
        raise ValueError(f"{name}: expected an int or two ints, got {v!r}")
    return t


def problem_string(n, c, h, w, k, y, x, *, direction="fwd", dtype="f32", padding=0,
                   stride=1, dilation=1, groups=1, layout="NCHW", in_layout=None,
                   fil_layout=None, out_layout=None):
    """A MIOpenDriver line for a 2-D convolution (c and k count all groups, as MIOpen does).

    ``direction`` is ``fwd``, ``bwd-data`` or ``bwd-weight``; ``dtype`` ``f32``, ``f16`` or
    ``bf16``; layouts in any spelling the command line takes (``NCHW``, ``NHWC``, ``NHWGC``).
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected one of {sorted(_DIRECTIONS)}")
    if dtype not in _COMMANDS:
        raise ValueError(f"dtype {dtype!r}: expected one of {sorted(_COMMANDS)}")
    (ph, pw), (sh, sw), (dh, dw) = (_pair(padding, "padding"), _pair(stride, "stride"),
                                    _pair(dilation, "dilation"))
    sizes = dict(n=n, c=c, H=h, W=w, k=k, y=y, x=x, g=groups)
    for flag, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"-{flag}: expected an int, got {v!r}")
    line = (f"{_COMMANDS[dtype]} -F {_DIRECTIONS[direction]} -n {n} -c {c} -H {h} -W {w} "
            f"-k {k} -y {y} -x {x} -p {ph} -q {pw} -u {sh} -v {sw} -l {dh} -j {dw} -g {groups}")
    # A filter spelled like the activations: the 4-letter form (NHWC -> KYXC) names the filter
    # layout that matches, with groups outside K as the activations have them outside C.
    fil = fil_layout or layout.replace("G", "").replace("g", "")
    line += f" -I {in_layout or layout} -f {fil} -O {out_layout or layout}"
    return line


def problem(text):
    """Parses and validates a problem line: canonical key, direction, dtype and its tolerance,
    sizes, output size, and per tensor (x, w, y) layout, logical dims, strides, element count.
    Raises ValueError for a line that is not a valid convolution."""
    return _json.loads(_native.problem_info(text))


def lookup(problem, arch, db=None, system_db=True, candidates=1, deterministic=False,
           gpu=None, compute_units=None):
    """The config a compiler should use for ``problem`` on ``arch`` (``"sm_90"``, ...), as
    ``convtune lookup`` finds it: the user database ``db`` (a file, or None for
    ``$CONVTUNE_DB`` / the XDG path) over the system database, then the shipped quick list,
    then the cost model's heuristic.

    Returns a dict: ``problem`` (canonical key), ``arch``, ``config`` (string), ``source``
    (``exact``, ``nearest``, ``quick`` or ``heuristic``), ``nearest`` (``{key, distance}`` or
    None), ``reason`` and ``fields`` (block/warp tiles, stages, vectors, lds, split_k, raster,
    mma). With ``candidates`` > 1 also ``candidates``: a list of up to that many such dicts,
    the answer first, then the configs the untuned fallback ranks next (``convtune lookup
    --candidates``), for a caller that times a few on first use and keeps the fastest
    (``convtune.torch.benchmark``). With ``deterministic``, only configs whose results are
    the same bits on every run (no floating-point atomics: split-K by atomics and depthwise
    backward weight by atomics are passed over, the reason says so), as
    ``torch.use_deterministic_algorithms(True)`` demands (``convtune lookup --deterministic``).
    ``gpu`` and ``compute_units`` (together: ``torch.cuda.get_device_name()`` and the SM
    count, as :mod:`convtune.torch` passes them) name the device the kernels will run on: exact
    entries are then that GPU's, and a problem tuned only on another GPU of the arch comes as
    source ``nearest`` at distance 0 (the reason names that GPU), to be timed against the
    fallback's next configs; without them, where a problem was tuned on several GPUs, the entry
    of the GPU most of the database was tuned on.
    Raises ValueError for bad arguments and ConvtuneError for a broken database.
    """
    return _json.loads(_native.lookup(_text(problem), arch, _path(db), bool(system_db),
                                      int(candidates), bool(deterministic), gpu,
                                      _units(compute_units)))


def second_round(problem, arch, measured, candidates=SECOND_ROUND_CANDIDATES,
                 deterministic=False):
    """The configs to time after a first use's: ``measured`` maps config strings (or is a list
    of ``(config, µs)`` pairs) to their times, ``None`` for one that failed; the answer is what
    the tuner's guided search measures next from those times (its local search around the
    fastest, with the cost model corrected by them; the last, the model's best of a kernel
    family nothing measured belongs to), at most ``candidates`` config strings, none of
    ``measured`` (``convtune lookup --measured``); a measured config is read as the kernel it
    builds, so no kernel is proposed again under other widths. Empty when nothing measured
    succeeded. With each shipped entry held out, the config kept after eight more ran at 0.998
    of tuned speed against 0.974 after the lookup's sixteen, none below 0.8 (session 39, H100).
    ``deterministic`` as :func:`lookup` takes it. Raises ValueError for bad arguments."""
    pairs = list(measured.items()) if isinstance(measured, dict) else list(measured)
    pairs = [(str(c), None if t is None else float(t)) for c, t in pairs]
    return _native.second_round(_text(problem), arch, pairs, int(candidates),
                                bool(deterministic))


def compile(problem, arch, config=None, db=None, system_db=True, deterministic=False,
            gpu=None, compute_units=None):
    """Compiles ``problem``'s kernels for ``arch``: returns ``(manifest, module)``.

    ``module`` is the PTX text (NVIDIA, bytes) or the AMDGPU code object. ``manifest`` is a dict:
    ``problem`` (as :func:`problem` describes it), ``lookup`` (as :func:`lookup` returns, or
    source ``given`` when ``config`` was passed), ``module`` (kind and size), ``args`` (the kernel
    argument order: device pointers x, w, y, workspace), ``kernels`` in launch order (name,
    grid, block, dynamic shared bytes, ``params``: every parameter's offset, size and
    alignment in the parameter buffer, and ``tensor_maps``: the TMA maps of ``ld=tma``/``ld=ws``
    kernels, each with ``encode``, the driver call that encodes it over its tensor's pointer)
    and ``workspace_bytes``. Its ``format`` is a draft until
    the manifest of ``convtune compile --manifest`` is shared with it. ``deterministic`` limits
    the lookup as :func:`lookup`'s does; ``lookup.deterministic`` in the manifest says whether
    the kernels give the same bits on every run; ``gpu`` and ``compute_units`` as
    :func:`lookup` takes them.
    """
    manifest, module = _native.compile(_text(problem), arch, config, _path(db), bool(system_db),
                                       bool(deterministic), gpu, _units(compute_units))
    return _json.loads(manifest), module


def _text(problem):
    if not isinstance(problem, str):
        raise TypeError(f"problem: expected a problem line (str), got {type(problem).__name__}; "
                        "convtune.problem_string() writes one")
    return problem


def _units(compute_units):
    return None if compute_units is None else int(compute_units)


def _path(db):
    if db is None:
        return None
    import os
    return os.fspath(db)
