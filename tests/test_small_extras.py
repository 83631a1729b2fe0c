"""logspace, randint_like, narrow_copy, is_floating_point, unravel_index, vander against
NumPy (np.logspace, np.unravel_index, np.vander) and PyTorch's documented behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck


def test_logspace():
    for args in ((0, 2, 3), (-1.5, 4.25, 17), (2, -3, 1), (0, 1, 0)):
        np.testing.assert_allclose(tgrad.logspace(*args, dtype=tgrad.float64).numpy(),
                                   np.logspace(*args), rtol=1e-15)
    np.testing.assert_allclose(tgrad.logspace(0, 3, 4, base=2).numpy(), [1, 2, 4, 8])
    assert tgrad.logspace(0, 3, 4, base=2, dtype=tgrad.int64).tolist() == [1, 2, 4, 8]
    assert tgrad.logspace(0, 1, 2).dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        tgrad.logspace(0, 1, -1)


def test_logspace_float64_is_c_pow_of_pytorchs_exponents():
    # PyTorch: exponent i < steps // 2 is start + step i, else end - step (steps - 1 - i),
    # then C's pow (math.pow) per element: logspace(0, 3, 7)[5] is 10 ** 2.5 exactly
    assert tgrad.logspace(0, 3, 7, dtype=tgrad.float64)[5].item() == math.pow(10.0, 2.5)
    for start, end, steps, base in ((0, 3, 7, 10.0), (-7.3, 11.9, 33, 10.0),
                                    (1.25, -4.5, 10, 2.0), (-3, 3, 100, 3.5)):
        step = (end - start) / (steps - 1)
        want = [math.pow(base, start + step * i if i < steps // 2
                         else end - step * (steps - 1 - i)) for i in range(steps)]
        got = tgrad.logspace(start, end, steps, base, dtype=tgrad.float64).tolist()
        assert got == want


def test_randint_like_narrow_copy_is_floating_point():
    x = tgrad.zeros(3, 4, dtype=tgrad.int32)
    r = tgrad.randint_like(x, 5)
    assert r.shape == (3, 4) and r.dtype is tgrad.int32
    assert 0 <= int(r.min()) and int(r.max()) < 5
    r = tgrad.randint_like(x, 10, 12, dtype=tgrad.int64)
    assert set(r.reshape(-1).tolist()) <= {10, 11} and r.dtype is tgrad.int64
    base = tgrad.arange(12.0).reshape(3, 4)
    c = base.narrow_copy(1, 1, 2)
    assert c.tolist() == [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]] and c._base is None
    base[0, 1] = -1.0
    assert c[0, 0].item() == 1.0  # a copy: the write did not reach it
    assert tgrad.is_floating_point(base) and not tgrad.is_floating_point(x)


def test_unravel_index():
    flat = np.array([[0, 5, 23], [7, 11, 1]])
    got = tgrad.unravel_index(tgrad.tensor(flat), (2, 3, 4))
    for g, w in zip(got, np.unravel_index(flat, (2, 3, 4))):
        assert g.dtype is tgrad.int64 and g.tolist() == w.tolist()
    neg = tgrad.unravel_index(tgrad.tensor([-1, -24]), (2, 3, 4))  # from the end (PyTorch)
    assert [t.tolist() for t in neg] == [[1, 0], [2, 0], [3, 0]]
    assert tgrad.unravel_index(tgrad.tensor(5), 7)[0].item() == 5
    with pytest.raises(ValueError, match=r"'indices' must be in range \[-24, 23\]"):
        tgrad.unravel_index(tgrad.tensor([24]), (2, 3, 4))
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        tgrad.unravel_index(tgrad.tensor([1.0]), (2,))


def test_vander_values_and_gradients():
    x = np.array([0.0, -1.5, 2.0, 0.5])
    for n in (None, 1, 3, 6):
        for inc in (False, True):
            np.testing.assert_allclose(tgrad.vander(tgrad.tensor(x), n, inc).numpy(),
                                       np.vander(x, n, inc), rtol=1e-15)
    assert tgrad.vander(tgrad.tensor([1, 2, 3])).tolist() == np.vander([1, 2, 3]).tolist()
    assert tgrad.vander(tgrad.tensor(x), 0).shape == (4, 0)
    t = tgrad.tensor(x, requires_grad=True)  # x = 0 included: cumprod's exact gradient
    assert gradcheck(lambda v: tgrad.vander(v, 4), (t,))
    assert gradgradcheck(lambda v: tgrad.vander(v, 4, True), (t,))
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor"):
        tgrad.vander(tgrad.ones(2, 2))
