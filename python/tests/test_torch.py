"""convtune.torch where there is no GPU: every convolution must take the PyTorch path, say so
once, and give PyTorch's results and gradients. Skipped (visibly) without torch."""

import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: convtune.torch tests skipped")
ct = pytest.importorskip("convtune.torch")


def test_cpu_tensors_fall_back_once_with_a_warning_and_match_pytorch():
    ct.reset_stats()
    ct._warned.clear()
    x = torch.randn(2, 4, 7, 7, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = ct.conv2d(x, w, b, stride=2, padding=1, groups=2)
        y.square().sum().backward()
        ct.conv2d(x, w, None, 1, 1, 1, 2)
    said = [str(c.message) for c in caught if "convtune" in str(c.message)]
    assert len(said) == 1, said
    assert "PyTorch" in said[0]
    ref_x, ref_w, ref_b = (t.detach().clone().requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.conv2d(ref_x, ref_w, ref_b, stride=2, padding=1, groups=2)
    ref.square().sum().backward()
    torch.testing.assert_close(y, ref)
    torch.testing.assert_close(x.grad, ref_x.grad)
    torch.testing.assert_close(w.grad, ref_w.grad)
    torch.testing.assert_close(b.grad, ref_b.grad)
    s = ct.stats()
    assert s["convtune"] == 0 and sum(s["fallback"].values()) == 4


def test_conv2d_module_is_a_drop_in():
    m = ct.Conv2d(3, 5, 3, padding=1, bias=True).double()
    ref = torch.nn.Conv2d(3, 5, 3, padding=1, bias=True).double()
    ref.load_state_dict(m.state_dict())
    x = torch.randn(1, 3, 6, 6, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(m(x), ref(x))
