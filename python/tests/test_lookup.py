import pytest

import convtune
from conftest import SEED_003, SEED_003_FIELDS, SEED_003_SHIPPED


def test_seed_003_finds_the_shipped_entry_in_any_spelling(no_user_db):
    r = convtune.lookup(SEED_003, "sm_90", db=no_user_db)
    assert r["source"] == "exact", r["reason"]
    assert r["config"] == SEED_003_SHIPPED
    assert r["nearest"] is None
    assert r["problem"].endswith("-I NHWGC -f GKYXC -O NHWGC")
    f = r["fields"]
    want = SEED_003_FIELDS
    # Numbers come back as ints, the named fields (persistent included) as strings.
    numbers = {"block_m": "bm", "block_n": "bn", "block_k": "bk", "warp_m": "wm", "warp_n": "wn",
               "stages": "st", "vec_a": "va", "vec_b": "vb", "vec_c": "vc", "split_k": "sk",
               "raster": "rs"}
    names = {"lds": "lds", "mma": "mma", "ld": "ld", "persistent": "pk", "xf": "xf"}
    for name, key in numbers.items():
        assert f[name] == int(want[key]), (name, f[name], want[key])
    for name, key in names.items():
        assert f[name] == want[key], (name, f[name], want[key])
    line = convtune.problem_string(16, 2048, 1, 512, 2048, 1, 2, direction="bwd-data",
                                   dtype="bf16", stride=(1, 2), layout="NHWGC")
    again = convtune.lookup(line, "sm_90", db=no_user_db)
    assert again["problem"] == r["problem"]
    assert again["config"] == SEED_003_SHIPPED


def test_the_gpu_named_picks_its_own_entries_and_starts_elsewhere_from_the_shipped_one(
        no_user_db):
    # Seed 003 was tuned on the H200 (the home device) and on an H100: each gets its own entry,
    # exact; on a GPU nothing was tuned on (an H20) the home device's winner comes as a
    # distance-0 neighbour (to be timed against the fallback's next configs).
    h200 = convtune.lookup(SEED_003, "sm_90", db=no_user_db, gpu="NVIDIA H200",
                           compute_units=132)
    assert h200["source"] == "exact", h200["reason"]
    assert h200["config"] == SEED_003_SHIPPED
    h100 = convtune.lookup(SEED_003, "sm_90", db=no_user_db, gpu="NVIDIA H100 80GB HBM3",
                           compute_units=132)
    assert h100["source"] == "exact", h100["reason"]
    assert h100["config"] != SEED_003_SHIPPED
    assert "NVIDIA H100" in h100["reason"]
    h20 = convtune.lookup(SEED_003, "sm_90", db=no_user_db, candidates=4, gpu="NVIDIA H20",
                          compute_units=78)
    assert h20["source"] == "nearest", h20["reason"]
    assert h20["nearest"]["distance"] == 0
    assert h20["config"] == SEED_003_SHIPPED
    assert "NVIDIA H200" in h20["reason"]
    assert h20["candidates"][0]["config"] == SEED_003_SHIPPED
    assert len(h20["candidates"]) > 1
    manifest, _ = convtune.compile(SEED_003, "sm_90", db=no_user_db, gpu="NVIDIA H20",
                                   compute_units=78)
    assert manifest["lookup"]["source"] == "nearest"
    with pytest.raises(ValueError, match="go together"):
        convtune.lookup(SEED_003, "sm_90", db=no_user_db, gpu="NVIDIA H200")


def test_an_untuned_problem_falls_back_and_says_why(no_user_db):
    r = convtune.lookup("conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1", "sm_90",
                        db=no_user_db)
    assert r["source"] in ("nearest", "quick", "heuristic")
    if r["source"] == "nearest":
        assert r["nearest"]["distance"] > 0
    assert r["reason"]
    assert r["config"].startswith("v")


def test_without_the_system_database_seed_003_is_not_exact(no_user_db):
    r = convtune.lookup(SEED_003, "sm_90", db=no_user_db, system_db=False)
    assert r["source"] != "exact"


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="sm_42"):
        convtune.lookup(SEED_003, "sm_42")
    with pytest.raises(ValueError, match="not a problem"):
        convtune.lookup("not a problem", "sm_90")
    with pytest.raises(ValueError, match="-n"):
        convtune.lookup("conv -n 0 -c 4 -F 1", "sm_90")
    with pytest.raises(TypeError, match="problem_string"):
        convtune.lookup({"n": 1}, "sm_90")
    with pytest.raises(ValueError, match="direction"):
        convtune.problem_string(1, 1, 1, 1, 1, 1, 1, direction="sideways")


def test_a_broken_user_database_is_an_error(tmp_path):
    db = tmp_path / "sm_90.toml"
    db.write_text("not a database")
    with pytest.raises(convtune.ConvtuneError, match="sm_90.toml"):
        convtune.lookup(SEED_003, "sm_90", db=db)


def test_problem_describes_tensors_in_kernel_argument_order():
    p = convtune.problem(SEED_003)
    assert p["direction"] == "bwd-data" and p["dtype"] == "bf16"
    assert p["tolerance"] == pytest.approx(1e-2)
    assert p["out_size"] == [1, 256]
    assert p["tensors"]["x"]["written"] and not p["tensors"]["y"]["written"]
    assert p["tensors"]["x"]["layout"] == "NHWGC"
    assert p["tensors"]["w"]["layout"] == "GKYXC"
    # NHWGC strides of (n, g, c, h, w) = (16, 1, 2048, 1, 512): c innermost.
    assert p["tensors"]["x"]["strides"] == [512 * 2048, 2048, 1, 512 * 2048, 2048]


def test_candidates_start_with_the_answer_and_are_distinct(no_user_db):
    line = "convbfp16 -n 24 -c 96 -H 20 -W 20 -k 160 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
    plain = convtune.lookup(line, "sm_90", db=no_user_db)
    assert "candidates" not in plain
    r = convtune.lookup(line, "sm_90", db=no_user_db, candidates=4)
    cs = r["candidates"]
    assert 2 <= len(cs) <= 4, cs
    assert cs[0]["config"] == plain["config"] == r["config"]
    assert len({c["config"] for c in cs}) == len(cs)
    assert all(c["reason"] and c["problem"] == plain["problem"] for c in cs)
    with pytest.raises(ValueError, match="candidates"):
        convtune.lookup(line, "sm_90", db=no_user_db, candidates=0)
    with pytest.raises(ValueError, match="candidates"):
        convtune.lookup(line, "sm_90", db=no_user_db, candidates=convtune.MAX_CANDIDATES + 1)


def test_a_first_use_benchmark_gets_a_full_list(no_user_db):
    """The first-use count (what convtune.torch times) is a full list on an untuned problem:
    the fallback fills it from neighbours, the quick list and the model's picks."""
    line = "convbfp16 -n 24 -c 96 -H 20 -W 20 -k 160 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
    n = convtune.FIRST_USE_CANDIDATES
    assert 1 < n <= convtune.MAX_CANDIDATES
    cs = convtune.lookup(line, "sm_90", db=no_user_db, candidates=n)["candidates"]
    assert len(cs) == n, [c["config"] for c in cs]
    assert len({c["config"] for c in cs}) == n


def test_second_round_searches_around_the_fastest(no_user_db):
    """A first use's second round: new, legal configs from the first round's times, none of
    those measured; nothing without a success; the constant as the library has it."""
    line = "convbfp16 -n 24 -c 96 -H 20 -W 20 -k 160 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
    cs = [c["config"] for c in convtune.lookup(line, "sm_90", db=no_user_db,
                                                candidates=8)["candidates"]]
    measured = {c: 50.0 + i for i, c in enumerate(cs)}
    measured[cs[-1]] = None  # failed
    n = convtune.SECOND_ROUND_CANDIDATES
    assert 1 <= n <= convtune.MAX_CANDIDATES
    nxt = convtune.second_round(line, "sm_90", measured)
    assert len(nxt) == n and len(set(nxt)) == n, nxt
    assert not set(nxt) & set(cs)
    for c in nxt:  # each compiles for the problem (legal)
        manifest, _ = convtune.compile(line, "sm_90", config=c, db=no_user_db)
        assert manifest["lookup"]["config"] == c
    # Pairs as well as a dict; the same times, the same round.
    assert convtune.second_round(line, "sm_90", list(measured.items())) == nxt
    assert len(convtune.second_round(line, "sm_90", measured, candidates=3)) == 3
    assert convtune.second_round(line, "sm_90", {cs[0]: None}) == []
    with pytest.raises(ValueError, match="config"):
        convtune.second_round(line, "sm_90", {"v1:bm=7": 3.0})
    with pytest.raises(ValueError, match="candidates"):
        convtune.second_round(line, "sm_90", measured, candidates=0)


def test_deterministic_lookup_passes_over_atomics(no_user_db):
    # The shipped entry of this grouped bwd-weight problem splits K 16 ways by atomics, which
    # torch.use_deterministic_algorithms(True) does not allow.
    line = ("convbfp16 -n 32 -c 160 -H 56 -W 56 -k 160 -y 3 -x 3 -p 1 -q 1 -g 5 -F 4 "
            "--layout NHWC")
    plain = convtune.lookup(line, "sm_90", db=no_user_db)
    assert plain["source"] == "exact"
    assert "sk=16" in plain["config"] and "red=atomic" in plain["config"]
    det = convtune.lookup(line, "sm_90", db=no_user_db, candidates=4, deterministic=True)
    assert det["source"] != "exact"
    assert "atomics" in det["reason"]
    for c in det["candidates"]:
        split = c["fields"]["split_k"]
        assert split == 1 or "red=atomic" not in c["config"], c["config"]
    manifest, _ = convtune.compile(line, "sm_90", db=no_user_db, deterministic=True)
    assert manifest["lookup"]["deterministic"] is True
    manifest, _ = convtune.compile(line, "sm_90", db=no_user_db)
    assert manifest["lookup"]["deterministic"] is False
