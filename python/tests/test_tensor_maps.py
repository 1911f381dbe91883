"""Tensor-map kernels (ld=tma, ld=ws) without a GPU: the manifest's encode calls carry the
numbers the Rust runtime passes the driver, _cuda turns them into the driver call's arguments
unchanged, and the launch packs pointers and 128-byte maps where the manifest's `params` say.
A fake libcuda records what the launcher would hand the driver."""

import ctypes
import re
import struct

import pytest

import convtune
from convtune import _cuda
from conftest import SEED_003, SEED_003_CONFIG

# A shipped ld=ws entry: forward 3x3, stride 2, pad 1 (its activation map is im2col with the
# padding in the corners and the stride in the element strides).
WS_PROBLEM = ("convbfp16 -F 1 -n 64 -c 128 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 "
              "-j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC")
WS_CONFIG = ("v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,"
             "red=atomic,ld=ws")

# Seed 003's shape on an odd width: dy's last column pair reads past its 255 pixels, so dy goes
# through an im2col map (on seed 003's own 512 it is a plain tiled matrix).
SEED_003_ODD = SEED_003.replace("-W 512", "-W 511")

BF16 = 9  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
SWIZZLE_128B, L2_256B = 3, 3


def maps_of(manifest):
    return [m for k in manifest["kernels"] for m in k.get("tensor_maps", [])]


def test_seed_003_encodes_the_numbers_of_its_problem(no_user_db):
    manifest, _ = convtune.compile(SEED_003, "sm_90", config=SEED_003_CONFIG)
    maps = {m["tensor"]: m for m in maps_of(manifest)}
    assert sorted(maps) == ["w", "y"]
    # The filter (GKYXC, 2048 k x 2 x x 2048 c) as 2048 rows of x*c = 4096 elements, a row
    # 8192 bytes apart, loaded in 64 x 64 boxes (64 bf16 = the 128-byte swizzle span).
    w = maps["w"]["encode"]
    assert w["function"] == "cuTensorMapEncodeTiled"
    assert (w["data_type"], w["rank"], w["address_offset"]) == (BF16, 2, 0)
    assert w["global_dim"][:2] == [4096, 2048] and w["global_strides"][:1] == [8192]
    assert w["box_dim"][:2] == [64, 64] and w["element_strides"][:2] == [1, 1]
    assert (w["swizzle"], w["interleave"], w["l2_promotion"], w["oob_fill"]) == \
        (SWIZZLE_128B, 0, L2_256B, 0)
    # dy (NHWK: 16 n x 1 ho x 256 wo x 2048 k): the GEMM's columns are its 16 x 256 pixels
    # exactly, so a plain matrix of 4096 rows of 2048 channels, 4096 bytes apart, loaded in
    # boxes of 64 channels by 128 pixels.
    y = maps["y"]["encode"]
    assert y["function"] == "cuTensorMapEncodeTiled"
    assert y["rank"] == 2 and y["global_dim"][:2] == [2048, 4096]
    assert y["global_strides"][:1] == [4096]
    assert y["box_dim"][:2] == [64, 128] and y["element_strides"][:2] == [1, 1]
    assert y["swizzle"] == SWIZZLE_128B


def test_encode_calls_follow_their_map_descriptions(no_user_db):
    """Every rule the Rust side applies, checked field by field against the `map` it came from
    (the spec the code generator and the emulator read)."""
    for line, cfg in ((SEED_003_ODD, SEED_003_CONFIG), (WS_PROBLEM, WS_CONFIG)):
        manifest, _ = convtune.compile(line, "sm_90", config=cfg)
        maps = maps_of(manifest)
        assert {m["encode"]["function"] for m in maps} == {"cuTensorMapEncodeTiled",
                                                           "cuTensorMapEncodeIm2col"}, line
        for m in maps:
            spec, e = m["map"], m["encode"]
            assert e["rank"] == spec["rank"]
            assert e["global_dim"] == spec["dims"] and e["global_strides"] == spec["strides"]
            assert e["address_offset"] == spec["offset"]
            assert e["swizzle"] == spec["swizzle"]
            assert e["data_type"] == {"BF16": 9, "F16": 6, "F32": 7}[spec["dtype"]]
            im = spec.get("im2col")
            if im is None:
                assert e["box_dim"] == spec["boxes"] and e["element_strides"] == [1] * 5
            else:
                assert (e["channels_per_pixel"], e["pixels_per_column"]) == \
                    tuple(spec["boxes"][:2])
                assert e["pixel_box_lower_corner"] == im["lower"]
                assert e["pixel_box_upper_corner"] == im["upper"]
                assert e["element_strides"] == im["element_strides"]


def test_ws_activation_map_carries_padding_and_stride():
    manifest, _ = convtune.compile(WS_PROBLEM, "sm_90", config=WS_CONFIG)
    x = next(m for m in maps_of(manifest) if m["tensor"] == "x")["encode"]
    assert x["function"] == "cuTensorMapEncodeIm2col"
    # NHWC 64 x 56 x 56 x 128: channels, w, h, n.
    assert x["global_dim"][:4] == [128, 56, 56, 64]
    assert x["global_strides"][:3] == [256, 56 * 256, 56 * 56 * 256]
    # lower = -pad, upper = pad - (R-1)*dilation; the stride 2 in the element strides.
    assert x["pixel_box_lower_corner"][:2] == [-1, -1]
    assert x["pixel_box_upper_corner"][:2] == [-2, -2]
    assert x["element_strides"][:4] == [1, 2, 2, 1]


def test_driver_arguments_are_the_manifests_numbers():
    manifest, _ = convtune.compile(SEED_003, "sm_90", config=SEED_003_CONFIG)
    for m in maps_of(manifest):
        e = m["encode"]
        name, args = _cuda.encode_arguments(e, 0x7000_0000_0000)
        assert name == e["function"]
        fields = [f for f, _ in _cuda._ENCODE_PARAMS[name]]
        got = dict(zip(fields, args))
        assert got["address"].value == 0x7000_0000_0000 + e["address_offset"]
        for f in fields:
            if f == "address":
                continue
            v = got[f]
            assert (list(v) if isinstance(v, ctypes.Array) else v.value) == e[f], f
        assert len(args) == {"cuTensorMapEncodeTiled": 11, "cuTensorMapEncodeIm2col": 14}[name]
    with pytest.raises(ValueError, match="unknown encode function"):
        _cuda.encode_arguments({"function": "cuTensorMapEncodeWhatever"}, 0)


class FakeLib:
    """The few libcuda calls the launcher makes, recording their arguments."""

    def __init__(self):
        self.encoded, self.launched = [], []

    def _encode(self, name, out, args):
        rec = [list(a) if isinstance(a, ctypes.Array) else a.value for a in args]
        self.encoded.append((name, out.value, rec))
        # A map whose bytes say which call made it: the address, then its index.
        blob = struct.pack("<QQ", rec[2], len(self.encoded)).ljust(128, b"\xab")
        ctypes.memmove(out.value, blob, 128)
        return 0

    def cuTensorMapEncodeTiled(self, out, *args):
        return self._encode("cuTensorMapEncodeTiled", out, args)

    def cuTensorMapEncodeIm2col(self, out, *args):
        return self._encode("cuTensorMapEncodeIm2col", out, args)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launched.append(((f, gx, gy, gz, bx, by, bz, shared), [params[i] for i in
                                                                    range(len(params))]))
        return 0


def fake_driver():
    d = _cuda.Driver.__new__(_cuda.Driver)
    d._lib = FakeLib()
    return d


@pytest.mark.parametrize("line,cfg,kinds", [
    (SEED_003, SEED_003_CONFIG, ["cuTensorMapEncodeTiled"]),
    (WS_PROBLEM, WS_CONFIG, ["cuTensorMapEncodeIm2col", "cuTensorMapEncodeTiled"]),
])
def test_a_launch_packs_pointers_and_maps_where_params_say(line, cfg, kinds):
    manifest, _ = convtune.compile(line, "sm_90", config=cfg)
    drv = fake_driver()
    pointers = {"x": 0x7f00_0000_0000, "w": 0x7f10_0000_0000, "y": 0x7f20_0000_0000,
                "workspace": 0}
    for k in manifest["kernels"]:
        params = _cuda.kernel_params(k, pointers, drv.encode_tensor_map)
        drv.launch("f", k["grid"], k["block"], k["shared_bytes"], 7, params)
        (_, addresses) = drv._lib.launched[-1]
        assert len(addresses) == len(k["params"])
        assert params.base % 64 == 0
        for p, a in zip(k["params"], addresses):
            assert a == params.base + p["offset"]
            assert a % p["align"] == 0
            value = ctypes.string_at(a, p["bytes"])
            if p["kind"] == "device-pointer":
                assert struct.unpack("<Q", value)[0] == pointers[p["tensor"]]
            else:
                assert p["bytes"] == 128 and p["offset"] % 64 == 0
                m = next(m for m in k["tensor_maps"] if m["index"] == p["index"])
                address = struct.unpack("<Q", value[:8])[0]
                assert address == pointers[m["tensor"]] + m["encode"]["address_offset"]
        # The four pointers first, at 0, 8, 16, 24; maps after them at multiples of 64.
        assert [p["offset"] for p in k["params"][:4]] == [0, 8, 16, 24]
        assert [p["offset"] for p in k["params"][4:]] == [64 + 128 * i for i in
                                                          range(len(k["tensor_maps"]))]
    names = [n for n, _, _ in drv._lib.encoded]
    assert sorted(set(names)) == kinds
    # The driver writes each map into a CUtensorMap aligned as cuda.h 12 and 13 declare it.
    assert all(out % 128 == 0 for _, out, _ in drv._lib.encoded)


def test_params_that_disagree_with_the_maps_are_refused():
    manifest, _ = convtune.compile(SEED_003, "sm_90", config=SEED_003_CONFIG)
    k = dict(manifest["kernels"][0])
    k["tensor_maps"] = k["tensor_maps"][:1]
    with pytest.raises(ValueError, match="does not describe"):
        _cuda.kernel_params(k, {"x": 0, "w": 0, "y": 0, "workspace": 0}, lambda e, b: b"")
    k = dict(manifest["kernels"][0])
    with pytest.raises(ValueError, match="128 aligned to 64"):
        _cuda.kernel_params(k, {"x": 0, "w": 0, "y": 0, "workspace": 0}, lambda e, b: b"x")


def test_kernels_without_maps_take_the_four_pointers():
    line = "conv -n 2 -c 16 -H 8 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1"
    manifest, _ = convtune.compile(line, "sm_80",
                                   config="v1:bm=64,bn=64,bk=16,wm=32,wn=32,st=2,va=1,vb=1,vc=1,"
                                   "lds=pad,sk=1,rs=1")
    for k in manifest["kernels"]:
        assert not k["tensor_maps"]
        params = _cuda.kernel_params(k, {"x": 1, "w": 2, "y": 3, "workspace": 4},
                                     lambda e, b: pytest.fail("no map to encode"))
        assert params.bytes() == struct.pack("<4Q", 1, 2, 3, 4)


def ptx_params(ptx, entry):
    """(offset, bytes) of each `.param` of a PTX entry, laid out as PTX does: each at the next
    multiple of its alignment (its `.align`, else its size)."""
    head = re.search(r"\.entry\s+" + entry + r"\s*\((.*?)\)", ptx, re.S).group(1)
    out, end = [], 0
    for decl in head.split(","):
        m = re.search(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w)(\d+)\s+\w+(?:\[(\d+)\])?", decl)
        align, width, count = m.group(1), int(m.group(3)) // 8, int(m.group(4) or 1)
        align = int(align) if align else width
        off = (end + align - 1) // align * align
        out.append((off, width * count))
        end = off + width * count
    return out


@pytest.mark.parametrize("line,cfg", [(SEED_003, SEED_003_CONFIG), (WS_PROBLEM, WS_CONFIG)])
def test_params_match_the_kernels_ptx_declarations(line, cfg):
    manifest, module = convtune.compile(line, "sm_90", config=cfg)
    ptx = module.decode()
    for k in manifest["kernels"]:
        assert ptx_params(ptx, k["name"]) == [(p["offset"], p["bytes"]) for p in k["params"]]
