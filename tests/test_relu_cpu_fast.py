"""relu's CPU forward (tgrad/backends/numpy.py ``_relu``: float32/float64 C-contiguous
inputs of at least _RELU_ROW elements as rows against a read-only zero row) against the
maximum with the scalar 0 it replaces: bit-identical (+0 for -0.0, each NaN's own bits,
denormals, infinities) at sizes around the row length; the fallbacks (small,
non-contiguous, integer, half) and the op's values, gradient and gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import numpy as npb

ROW = npb._RELU_ROW


def _specials(dt) -> np.ndarray:
    tiny = np.finfo(dt).smallest_subnormal
    vals = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, tiny, -tiny], dt)
    if dt == np.float32:
        pay = np.array([0x7FC00001, 0xFFC00002, 0x7F800003, 0xFF800005], np.uint32)
    else:
        pay = np.array([0x7FF8000000000001, 0xFFF8000000000002, 0x7FF0000000000003],
                       np.uint64)
    return np.concatenate([vals, pay.view(dt)])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, ROW - 1, ROW, ROW + 1, 3 * ROW + 17, 70001])
def test_relu_fast_is_bit_identical_to_maximum_with_zero(dt, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dt)
    sp = _specials(dt)
    idx = rng.integers(0, n, max(1, n // 8))
    x[idx] = np.resize(sp, idx.size)
    k = min(n, sp.size)
    x[:k], x[n - k:] = sp[:k], sp[:k]
    bits = np.uint32 if dt == np.float32 else np.uint64
    want = np.maximum(x, dt(0))
    got = npb._relu(x)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert np.array_equal(got.view(bits), want.view(bits))
    assert got is not x and not np.shares_memory(got, x) and got.flags.writeable
    x2 = x.reshape(1, -1) if n % 2 else x.reshape(2, -1)  # (any C-contiguous shape)
    assert np.array_equal(npb._relu(x2).reshape(-1).view(bits), want.view(bits))


def test_relu_fast_fallbacks():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3 * ROW, 2)).astype(np.float32)
    for a in (x.T, x[::2], rng.integers(-5, 5, 3 * ROW).astype(np.int32),
              x.astype(np.float16), np.zeros((0, 5), np.float32)):
        want = npb.binary("maximum", a, a.dtype.type(0))
        got = npb._relu(a)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert not npb._RELU_ZEROS[np.dtype(np.float32)].flags.writeable


def test_relu_op_values_and_gradient():
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((4, 3, 33, 35)).astype(np.float32)
    xn.flat[::7] = 0.0
    x = tgrad.tensor(xn, requires_grad=True)
    y = tgrad.relu(x)
    assert np.array_equal(y.detach().numpy().view(np.uint32),
                          np.maximum(xn, np.float32(0)).view(np.uint32))
    g = rng.standard_normal(xn.shape).astype(np.float32)
    y.backward(tgrad.tensor(g))
    assert np.array_equal(x.grad.numpy(), np.where(xn > 0, g, np.float32(0)))
    # (the backward is the fast path's too: the saved y is the forward's, either loop)
    xd = tgrad.tensor(rng.standard_normal((3, 7)) + 0.01, requires_grad=True)
    assert gradcheck(tgrad.relu, (xd,))
    assert gradgradcheck(tgrad.relu, (xd,))
