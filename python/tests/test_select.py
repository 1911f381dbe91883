"""How torch convolutions become problems, and which go to PyTorch: no torch needed."""

import pytest

import convtune
from convtune._select import (Fallback, arch_name, dtype_name, memory_format, padding_pair,
                              problem_line)


def test_memory_format_from_strides():
    assert memory_format((2, 3, 4, 5), (60, 20, 5, 1)) == "NCHW"
    assert memory_format((2, 3, 4, 5), (60, 1, 15, 3)) == "NHWC"
    # Extent-1 dims may have any stride (torch gives them whatever).
    assert memory_format((1, 3, 1, 1), (3, 1, 3, 3)) == "NCHW"
    assert memory_format((2, 3, 4, 5), (0, 20, 5, 1)) is None  # expanded
    assert memory_format((2, 3, 4), (12, 4, 1)) is None


def test_padding():
    assert padding_pair(1, (3, 3), (1, 1), (1, 1)) == (1, 1)
    assert padding_pair((2, 0), (5, 1), (1, 1), (1, 1)) == (2, 0)
    assert padding_pair("valid", (3, 3), (2, 2), (1, 1)) == (0, 0)
    assert padding_pair("same", (3, 5), (1, 1), (1, 2)) == (1, 4)
    with pytest.raises(Fallback) as e:
        padding_pair("same", (2, 2), (1, 1), (1, 1))
    assert e.value.category == "padding"
    with pytest.raises(ValueError):
        padding_pair("same", (3, 3), (2, 2), (1, 1))


def test_dtypes_and_devices():
    assert dtype_name("torch.bfloat16") == "bf16"
    assert dtype_name("float32") == "f32"
    with pytest.raises(Fallback) as e:
        dtype_name("torch.float64")
    assert e.value.category == "dtype" and "float64" in str(e.value)
    assert arch_name("cuda", (9, 0)) == "sm_90"
    with pytest.raises(Fallback) as e:
        arch_name("cpu", None)
    assert e.value.category == "device"


def test_problem_lines_parse_to_the_database_spelling():
    line = problem_line("bwd-data", (16, 2048, 1, 512), (2048, 2048, 1, 2), "bf16", (1, 2), 0, 1,
                        1, "NHWC")
    key = convtune.problem(line)["key"]
    assert key == ("convbfp16 -F 2 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 "
                   "-v 2 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC")
    grouped = convtune.problem(problem_line("fwd", (2, 8, 9, 9), (12, 2, 3, 3), "f16", 2, 1, 1, 4,
                                            "NCHW"))
    assert grouped["sizes"]["groups"] == 4 and grouped["sizes"]["k"] == 12
    assert grouped["out_size"] == [5, 5]


def test_argument_validation():
    with pytest.raises(ValueError, match="groups"):
        problem_line("fwd", (2, 8, 9, 9), (12, 3, 3, 3), "f32", 1, 0, 1, 2, "NCHW")
    with pytest.raises(ValueError, match="stride"):
        problem_line("fwd", (2, 8, 9, 9), (12, 8, 3, 3), "f32", 0, 0, 1, 1, "NCHW")
    with pytest.raises(Fallback) as e:
        problem_line("fwd", (2, 8, 9), (12, 8, 3, 3), "f32", 1, 0, 1, 1, "NCHW")
    assert e.value.category == "rank"
    with pytest.raises(Fallback) as e:
        problem_line("fwd", (0, 8, 9, 9), (12, 8, 3, 3), "f32", 1, 0, 1, 1, "NCHW")
    assert e.value.category == "empty"
