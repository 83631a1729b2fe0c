"""float32 fmod / remainder / floor_divide of the NumPy backend (tgrad/backends/_numpy_divmod.py:
float64 arithmetic instead of libm's fmod per element) against NumPy's own functions, bit for
bit (signed zeros, NaN, inf, subnormals, huge quotients, near multiples of the divisor)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.backends import _numpy_divmod as dm

F32 = np.float32
_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45,
                     1.1754942e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, 3.0, -3.0],
                    F32)


def _reference_remainder(a, b):
    """The backend's remainder before the float32 path: NumPy's, zeros with a's sign."""
    r = np.remainder(a, b)
    return np.where(r == 0, np.copysign(r, a), r)


REFERENCE = {"fmod": np.fmod, "remainder": _reference_remainder,
             "floor_divide": np.floor_divide}
FAST = {"fmod": dm.fmod, "remainder": dm.remainder, "floor_divide": dm.floor_divide}


def _pairs(n: int, seed: int = 0) -> list:
    """(a, b) float32 arrays of n elements: the kinds of operands where the exact range
    ends or the float64 steps could go wrong."""
    rng = np.random.default_rng(seed)

    def bits(m):  # any float32 bit pattern (NaN, inf, subnormals included)
        return rng.integers(0, 2 ** 32, m, dtype=np.uint64).astype(np.uint32).view(F32)

    normal = rng.standard_normal(n).astype(F32)
    b = rng.standard_normal(n).astype(F32)
    k = rng.integers(-2 ** 24, 2 ** 24, n).astype(np.float64)
    mult = (k * b).astype(F32)  # near multiples of b, and one ulp either side
    side = np.where(rng.random(n) < 0.5, np.inf, -np.inf).astype(F32)
    e = rng.integers(0, 32, n)  # quotients 2^0 .. 2^32 across the 2^20 / 2^29 limits
    bs = (rng.uniform(0.5, 1, n) * np.where(rng.random(n) < 0.5, -1, 1)).astype(F32)
    big = (bs * 2.0 ** e * rng.uniform(0.5, 2, n)).astype(F32)
    sub_a = rng.integers(-2 ** 23, 2 ** 23, n).astype(F32) * F32(2.0 ** -149)
    sub_b = rng.integers(-2 ** 10, 2 ** 10, n).astype(F32) * F32(2.0 ** -149)
    small_a = rng.integers(-50, 50, n).astype(F32)
    small_b = rng.integers(-6, 7, n).astype(F32)
    sa, sb = rng.choice(_SPECIAL, n), rng.choice(_SPECIAL, n)
    return [(normal, b), (bits(n), bits(n)), (mult, b), (np.nextafter(mult, side), b),
            (big, bs), (np.nextafter(big, F32(0)), bs), (small_a, small_b), (sa, sb),
            (sa, normal), (normal, sb), (sub_a, sub_b), (sub_a, bits(n)), (bits(n), sub_b)]


def _same_bits(x, y) -> bool:
    return x.dtype == y.dtype == F32 and x.shape == y.shape and np.array_equal(
        x.view(np.uint32), y.view(np.uint32))


@pytest.mark.parametrize("op", sorted(FAST))
@pytest.mark.parametrize("seed", [0, 1])
def test_float32_paths_are_numpys_bit_for_bit(op, seed):
    with np.errstate(all="ignore"):
        for a, b in _pairs(50_000, seed):
            assert _same_bits(FAST[op](a, b), REFERENCE[op](a, b))
            for scalar in (b[3], b[:1].reshape(())):  # a NumPy scalar / 0-d divisor
                assert _same_bits(FAST[op](a, scalar), REFERENCE[op](a, scalar))


@pytest.mark.parametrize("op", sorted(FAST))
@pytest.mark.parametrize("shape", [(1,), (17,), (1023,), (1025,), (0,), (0, 3), (33, 31)])
def test_tensor_ops_sizes_and_layouts(op, shape):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(F32) * 10
    b = rng.standard_normal(shape).astype(F32)
    b.ravel()[::7] = a.ravel()[::7]  # exact multiples: zero results of both signs
    if a.size > 4:
        a.ravel()[1], b.ravel()[2], b.ravel()[3] = np.nan, 0.0, np.inf
    fn = getattr(tgrad, op)
    with np.errstate(all="ignore"):
        want = REFERENCE[op](a, b)
        assert _same_bits(fn(tgrad.tensor(a), tgrad.tensor(b)).numpy(), want)
        if len(shape) == 2:  # non-contiguous operands, a broadcast row
            ta, tb = tgrad.tensor(a.T.copy()).T, tgrad.tensor(b.T.copy()).T
            assert _same_bits(fn(ta, tb).numpy(), want)
            assert _same_bits(fn(tgrad.tensor(a), tgrad.tensor(b[:1])).numpy(),
                              REFERENCE[op](a, b[:1]))
        assert _same_bits(fn(tgrad.tensor(a), -2.5).numpy(), REFERENCE[op](a, F32(-2.5)))


@pytest.mark.parametrize("dtype", [tgrad.float16, tgrad.bfloat16])
@pytest.mark.parametrize("op", sorted(FAST))
def test_half_dtypes_compute_in_float32_as_before(op, dtype):
    rng = np.random.default_rng(4)
    a = tgrad.tensor(rng.standard_normal(300) * 20).to(dtype)
    b = tgrad.tensor(rng.standard_normal(300)).to(dtype)
    want = REFERENCE[op](a.float().numpy(), b.float().numpy())
    got = getattr(tgrad, op)(a, b)
    assert got.dtype is dtype
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got.float().numpy(),
                                      tgrad.tensor(want).to(dtype).float().numpy())


@pytest.mark.parametrize("op", ["fmod", "remainder"])
def test_float32_gradients_unchanged(op):
    # d/da = 1, d/db = -trunc(a / b) (fmod: the float32 quotient truncated) or
    # -floor_divide(a, b) (remainder)
    rng = np.random.default_rng(5)
    a = tgrad.tensor(rng.standard_normal((40, 30)).astype(F32) * 5, requires_grad=True)
    b = tgrad.tensor(rng.standard_normal((40, 30)).astype(F32), requires_grad=True)
    getattr(tgrad, op)(a, b).sum().backward()
    an, bn = a.detach().numpy(), b.detach().numpy()
    q = np.trunc(an / bn) if op == "fmod" else np.floor_divide(an, bn)
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((40, 30), F32))
    np.testing.assert_array_equal(b.grad.numpy(), -q)
