import re

import pytest

import convtune
from conftest import SEED_003, SEED_003_SHIPPED


def test_compile_returns_ptx_and_a_manifest(no_user_db):
    manifest, module = convtune.compile(SEED_003, "sm_90", db=no_user_db)
    assert isinstance(module, bytes)
    ptx = module.decode()
    assert ".entry" in ptx
    assert manifest["module"] == {"kind": "ptx", "bytes": len(module)}
    assert manifest["args"] == ["x", "w", "y", "workspace"]
    assert manifest["lookup"]["config"] == SEED_003_SHIPPED
    assert manifest["lookup"]["source"] == "exact"
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    assert manifest["kernels"], "no launches"
    for k in manifest["kernels"]:
        assert k["name"] in entries
        assert len(k["grid"]) == 3 and all(g >= 1 for g in k["grid"])
        assert len(k["block"]) == 3 and k["block"][0] * k["block"][1] * k["block"][2] >= 32
        assert k["shared_bytes"] >= 0
    assert manifest["workspace_bytes"] >= 0
    # wgmma config: the module uses the Hopper instruction.
    assert "wgmma.mma_async" in ptx


def test_a_given_config_is_used_and_checked():
    cfg = "v1:bm=64,bn=64,bk=16,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1"
    line = "conv -n 2 -c 16 -H 8 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1"
    manifest, module = convtune.compile(line, "sm_80", config=cfg)
    assert manifest["lookup"]["source"] == "given"
    assert manifest["lookup"]["config"] == cfg
    assert b".entry" in module
    with pytest.raises(ValueError, match="perf config"):
        convtune.compile(line, "sm_80", config="v9:nonsense")
    with pytest.raises(ValueError, match="illegal"):
        convtune.compile(line, "sm_80", config=cfg.replace("wm=32", "wm=48"))


def test_amd_targets_get_a_code_object():
    manifest, module = convtune.compile("conv -n 2 -c 16 -H 8 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1",
                                        "gfx942")
    assert manifest["module"]["kind"] == "amdgpu-code-object"
    assert module[:4] == b"\x7fELF"


def test_a_fixup_config_asks_for_a_kept_zero_workspace_and_clears_nothing_itself():
    line = "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
    fixup = "v3:bm=64,bn=64,bk=32,wm=32,wn=32,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1,mma=sync,red=fixup,ld=cp"
    manifest, _ = convtune.compile(line, "sm_90", config=fixup)
    assert manifest["workspace_kept_zero"] == 64 * 1024
    assert manifest["workspace_bytes"] > manifest["workspace_kept_zero"]
    assert [k["name"] for k in manifest["kernels"]] == ["convtune_gemm0"]
    atomic, _ = convtune.compile(line, "sm_90", config=fixup.replace("red=fixup", "red=atomic"))
    assert atomic["workspace_kept_zero"] == 0
    assert atomic["kernels"][0]["name"] == "convtune_zero"
