"""The NumPy backend's cumsum along a dim that is not the innermost
(tgrad/backends/_numpy_cumsum.py: one vectorised addition per step over all lines) against
np.cumsum in the accumulation dtype: bit-identical values (NaN, +-inf, +-0) for every float
dtype, reversed (cumsum's backward), non-contiguous inputs, and the tgrad op's gradient."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from special_values import mixed_specials, raw_bytes

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_cumsum
from tgrad.backends import numpy as be

CASES = [((256, 256), 0), ((7, 65, 10), 1), ((9, 11, 13), 0), ((2, 70), 0), ((3, 1, 70), 0)]


def _ref(x: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
    """np.cumsum in PyTorch's CPU accumulation dtype, rounded once."""
    cd = np.float64 if x.dtype in (np.float32, np.float64) else np.float32
    a = np.flip(x, axis) if reverse else x
    with np.errstate(all="ignore"):
        out = np.cumsum(a, axis=axis, dtype=cd)
    return (np.flip(out, axis) if reverse else out).astype(x.dtype)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_rows_bits(dt, reverse):
    for i, (shape, axis) in enumerate(CASES):
        rng = np.random.default_rng(i)
        x = mixed_specials(shape, np.float32, rng, (0.02, 0.04, 0.05, 0.06, 0.07)).astype(dt)
        for arr in (x, np.swapaxes(np.ascontiguousarray(np.swapaxes(x, 0, -1)), 0, -1)):
            assert _numpy_cumsum.use_rows(arr.shape, axis)
            out = be.cumsum(arr, axis, reverse)
            assert out.dtype == arr.dtype and out.flags.c_contiguous
            assert raw_bytes(out) == raw_bytes(_ref(arr, axis, reverse)), (shape, axis)


def test_cumsum_rows_not_taken_innermost():
    assert not _numpy_cumsum.use_rows((256, 256), 1)
    assert not _numpy_cumsum.use_rows((4, 3), 0)  # few lines
    assert not _numpy_cumsum.use_rows((1, 256), 0) and not _numpy_cumsum.use_rows((0, 256), 0)


def test_cumsum_dim0_grad():
    xn = np.random.default_rng(3).standard_normal((40, 9))
    x = tgrad.tensor(xn.astype(np.float32), requires_grad=True)
    g = np.random.default_rng(4).standard_normal((40, 9)).astype(np.float32)
    y = tgrad.cumsum(x, 0)
    y.backward(tgrad.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), np.cumsum(xn.astype(np.float32), 0),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x.grad.numpy(), _ref(g, 0, True))
    x64 = tgrad.tensor(xn, requires_grad=True)
    assert gradcheck(lambda t: tgrad.cumsum(t, 0), (x64,))
    assert gradgradcheck(lambda t: tgrad.cumsum(t, 0), (x64,))
