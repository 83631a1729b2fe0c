"""angle, put / put_, fill_diagonal_ and Tensor.hardshrink against NumPy (np.angle,
np.put / np.add.at, np.fill_diagonal), gradients by gradcheck, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

F64 = tgrad.float64


def test_angle_matches_numpy_with_zero_gradient():
    x = np.array([1.5, -2.0, 0.0, np.nan, np.inf, -np.inf])
    t = tgrad.tensor(x, dtype=F64, requires_grad=True)
    out = tgrad.angle(t)
    np.testing.assert_array_equal(out.detach().numpy(), np.angle(x))
    # -0.0: PyTorch's where(x < 0, pi, 0) gives 0 (NumPy's arctan2 gives pi)
    assert tgrad.angle(tgrad.tensor([-0.0], dtype=F64)).item() == 0.0
    out.sum().backward()
    assert not t.grad.numpy().any()
    ints = tgrad.tensor([-3, 0, 4])
    assert ints.angle().dtype is tgrad.float32
    np.testing.assert_allclose(ints.angle().numpy(), np.angle([-3, 0, 4]), rtol=1e-7)
    assert tgrad.angle(tgrad.zeros(0)).shape == (0,)


def test_put_matches_numpy_and_gradients():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4))
    idx = np.array([[0, 5], [-1, 7]])
    src = rng.standard_normal((2, 2))
    want = a.copy()
    np.put(want, idx % a.size, src)
    got = tgrad.tensor(a).put(tgrad.tensor(idx), tgrad.tensor(src))
    np.testing.assert_allclose(got.numpy(), want)
    rep = np.array([1, 1, 2])
    acc = a.copy()
    np.add.at(acc.reshape(-1), rep, np.array([1.0, 2.0, 3.0]))
    t = tgrad.tensor(a)
    assert t.put_(tgrad.tensor(rep), tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64),
                  accumulate=True) is t
    np.testing.assert_allclose(t.numpy(), acc)
    x = tgrad.tensor(a, requires_grad=True)
    s = tgrad.tensor(src, requires_grad=True)
    i = tgrad.tensor(idx)
    assert gradcheck(lambda u, v: u.put(i, v), (x, s))
    assert gradgradcheck(lambda u, v: u.put(i, v, accumulate=True), (x, s))
    with pytest.raises(IndexError, match="index 12 out of range for tensor of size \\[3, 4\\]"):
        tgrad.tensor(a).put(tgrad.tensor([12]), tgrad.tensor([1.0], dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        tgrad.tensor(a).put(tgrad.tensor([1.0]), tgrad.tensor([1.0]))
    with pytest.raises(IndexError, match="same number of elements"):  # PyTorch's type
        tgrad.tensor(a).put(tgrad.tensor([1, 2]), tgrad.tensor([1.0], dtype=tgrad.float64))


@pytest.mark.parametrize("shape,wrap", [((4, 4), False), ((5, 2), True), ((5, 2), False),
                                        ((2, 5), True), ((3, 3, 3), False), ((7, 3), True)])
def test_fill_diagonal_matches_numpy(shape, wrap):
    want = np.zeros(shape)
    np.fill_diagonal(want, 2.5, wrap=wrap)
    t = tgrad.zeros(shape, dtype=F64)
    assert t.fill_diagonal_(2.5, wrap=wrap) is t
    np.testing.assert_array_equal(t.numpy(), want)


def test_fill_diagonal_views_errors_and_hardshrink():
    base = tgrad.zeros(4, 4, dtype=F64)
    base.mT.fill_diagonal_(1.0)  # a non-contiguous view writes into its base
    np.testing.assert_array_equal(base.numpy(), np.eye(4))
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        tgrad.zeros(3).fill_diagonal_(1.0)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        tgrad.zeros(2, 3, 2).fill_diagonal_(1.0)
    x = tgrad.tensor([-1.0, 0.2, 0.7, -0.5], dtype=F64)
    np.testing.assert_array_equal(x.hardshrink(0.6).numpy(), [-1.0, 0.0, 0.7, 0.0])
