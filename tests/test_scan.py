"""cumsum beyond the op table (tests/op_db.py checks values and gradients): dtypes, the
reverse-scan backward, in-place form and errors, as PyTorch documents them."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad


def test_cumsum_dtypes():
    assert tgrad.tensor([1, 2, 3], dtype=tgrad.int32).cumsum(0).dtype is tgrad.int64
    b = tgrad.tensor([True, False, True]).cumsum(0)
    assert b.dtype is tgrad.int64 and b.tolist() == [1, 1, 2]
    x = tgrad.tensor([1.5, 2.5])
    y = x.cumsum(0, dtype=tgrad.float64)  # casts the input first
    assert y.dtype is tgrad.float64 and y.tolist() == [1.5, 4.0]
    h = tgrad.full((4096,), 1.0, dtype=tgrad.float16).cumsum(0)
    assert h.tolist()[-1] == 4096.0  # float32 accumulation (float16 alone stalls at 2048)


def test_cumsum_backward_is_the_reverse_cumsum():
    x = tgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tgrad.float64,
                     requires_grad=True)
    g = tgrad.tensor([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]], dtype=tgrad.float64)
    x.cumsum(1).backward(g)
    assert x.grad.tolist() == [[111.0, 110.0, 100.0], [222.0, 220.0, 200.0]]
    assert x.cumsum(1).grad_fn.name() == "CumsumBackward0"
    z = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    (gz,) = tgrad.autograd.grad(z.cumsum(0).pow(2).sum(), z, create_graph=True)
    # d/dz_j sum_k (S_k)^2 = 2 sum_{k >= j} S_k with S = [1, 3, 6]
    assert gz.tolist() == [20.0, 18.0, 12.0]
    (ggz,) = tgrad.autograd.grad(gz.sum(), z)
    # d/dz_i of 2 sum_j sum_{k >= j} S_k = 2 sum_j sum_{k >= max(i, j)} 1
    assert ggz.tolist() == [12.0, 10.0, 6.0]


def test_cumsum_inplace_and_errors():
    a = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    assert b.cumsum_(0) is b and b.tolist() == [1.0, 3.0, 6.0]
    b.sum().backward()
    assert a.grad.tolist() == [3.0, 2.0, 1.0]
    with pytest.raises(IndexError, match=r"cumsum: Dimension out of range \(expected to be in "
                                         r"range of \[-1, 0\], but got 1\)"):
        tgrad.ones(3).cumsum(1)
    with pytest.raises(TypeError,
                       match=r"cumsum\(\): argument 'input' \(position 1\) must be Tensor"):
        tgrad.cumsum(np.ones(3), 0)


def _cumprod_second_grad(x_np, hook, scale=1.0):
    x = tgrad.tensor(x_np, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(scale * np.linspace(-1.0, 1.5, x_np.size).reshape(x_np.shape),
                     dtype=tgrad.float64)
    v = x.pow(2).cumprod(1)
    if hook:
        v.register_hook(lambda g: g * 3)
    (g,) = tgrad.autograd.grad((v * w).sum(), x, create_graph=True)
    (g2,) = tgrad.autograd.grad((g * g).sum() * 0.5 + g.sin().sum(), x)
    return g.detach().numpy(), g2.numpy()


def _reference_second_grad(x_np, with_zero):
    """PyTorch's cumprod_backward written in elementary tgrad ops on the same graph (the
    hook on the output y): no zero in x: reversed_cumsum(y g) / x, so the second-order
    gradient reaching y is tripled; with zeros, from x alone (the hook does not act)."""
    x = tgrad.tensor(x_np, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(np.linspace(-1.0, 1.5, x_np.size).reshape(x_np.shape), dtype=tgrad.float64)
    p = x.pow(2)
    cols = [p[:, :1]]
    for j in range(1, p.shape[1]):
        cols.append(cols[-1] * p[:, j:j + 1])
    y = tgrad.cat(cols, 1)
    y3 = y if with_zero else y * 1.0
    if not with_zero:
        y3.register_hook(lambda g: g * 3)
    gp = (y3 * (3 * w)).flip(1).cumsum(1).flip(1) / p  # 3 w: the hook on the first grad
    (g,) = tgrad.autograd.grad(p, x, gp, create_graph=True)
    (g2,) = tgrad.autograd.grad((g * g).sum() * 0.5 + g.sin().sum(), x)
    return g.detach().numpy(), g2.numpy()


def test_cumprod_double_backward_uses_the_saved_output_as_pytorch():
    # A hook on cumprod's output also scales the second-order gradient that reaches the
    # output through the backward's use of it (PyTorch: reversed_cumsum(y g) / x)
    x_np = np.array([[0.5, -1.2, 0.8], [1.1, 0.7, -0.9]])
    g, g2 = _cumprod_second_grad(x_np, hook=True)
    rg, rg2 = _reference_second_grad(x_np, with_zero=False)
    np.testing.assert_allclose(g, rg, rtol=1e-12)
    np.testing.assert_allclose(g2, rg2, rtol=1e-10)
    # with a zero: PyTorch's x-only formula, so the hook acts on the first-order gradient
    # only: the same as no hook and the weights tripled (that path gradgradchecked below)
    x_np[0, 1] = 0.0
    g, g2 = _cumprod_second_grad(x_np, hook=True)
    rg, rg2 = _cumprod_second_grad(x_np, hook=False, scale=3.0)
    np.testing.assert_allclose(g, rg, rtol=1e-12)
    np.testing.assert_allclose(g2, rg2, rtol=1e-12)
    x = tgrad.tensor(x_np, dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradgradcheck(lambda t: t.cumprod(1), (x,))
