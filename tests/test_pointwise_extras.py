"""deg2rad, rad2deg, ldexp, heaviside, isposinf/isneginf, broadcast_shapes/_tensors,
diagflat (tgrad/ops/pointwise_extras.py) and dist / renorm (distances.py): values against
NumPy float64, gradients by finite differences, PyTorch's error texts (torch 2.14)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)


def _leaf(*shape):
    return tgrad.tensor(RNG.standard_normal(shape), requires_grad=True)


@pytest.mark.parametrize("n", [1, 17, 1025])
def test_angle_conversions(n):
    x = RNG.standard_normal(n) * 400
    np.testing.assert_allclose(tgrad.deg2rad(tgrad.tensor(x)).numpy(), np.deg2rad(x),
                               rtol=1e-15)
    np.testing.assert_allclose(tgrad.tensor(x).rad2deg().numpy(), np.rad2deg(x), rtol=1e-15)
    ints = tgrad.tensor([180, -90])
    assert tgrad.deg2rad(ints).dtype is tgrad.float32
    np.testing.assert_allclose(tgrad.deg2rad(ints).numpy(), np.deg2rad([180.0, -90.0]),
                               rtol=1e-7)
    t = tgrad.tensor([180.0, 90.0], dtype=tgrad.float64)
    t.deg2rad_()
    np.testing.assert_allclose(t.numpy(), [math.pi, math.pi / 2], rtol=1e-15)
    assert gradgradcheck(tgrad.rad2deg, (_leaf(3),))


def test_ldexp():
    x, e = RNG.standard_normal((3, 4)), RNG.integers(-5, 5, (4,))
    np.testing.assert_array_equal(tgrad.ldexp(tgrad.tensor(x), tgrad.tensor(e)).numpy(),
                                  np.ldexp(x, e))
    out = tgrad.ldexp(tgrad.tensor([1, 2]), tgrad.tensor([2, -1]))
    assert out.dtype is tgrad.float32 and out.tolist() == [4.0, 1.0]
    assert gradcheck(tgrad.ldexp, (_leaf(3), _leaf(3)))
    assert gradgradcheck(tgrad.ldexp, (_leaf(2, 3), _leaf(3)))


def test_heaviside_follows_numpy():
    x = np.array([-1.0, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan])
    values = np.array([0.5])
    np.testing.assert_array_equal(
        tgrad.heaviside(tgrad.tensor(x), tgrad.tensor(values)).numpy(),
        np.heaviside(x, values))  # NaN stays NaN (NumPy; PyTorch gives 0)
    ints = tgrad.tensor([-1, 0, 2])
    assert tgrad.heaviside(ints, tgrad.tensor(5)).tolist() == [0, 5, 1]
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with "
                                           "different dtypes."):
        tgrad.heaviside(tgrad.tensor([1.0]), tgrad.tensor([1]))


def test_isposinf_isneginf():
    x = np.array([np.inf, -np.inf, 1.0, np.nan, -0.0])
    assert tgrad.isposinf(tgrad.tensor(x)).tolist() == np.isposinf(x).tolist()
    assert tgrad.tensor(x).isneginf().tolist() == np.isneginf(x).tolist()
    assert tgrad.isposinf(tgrad.tensor([1, 2])).tolist() == [False, False]


def test_broadcast_shapes_and_tensors():
    assert tgrad.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert tgrad.broadcast_shapes(2, (3, 1)) == (3, 2)
    assert tgrad.broadcast_shapes() == ()
    assert tgrad.broadcast_shapes((0, 1), (4,)) == np.broadcast_shapes((0, 1), (4,))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 at "
                                           "-1! Mismatching argument at index 1 had \\(3,\\)"):
        tgrad.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative "
                                         "length!"):
        tgrad.broadcast_shapes((-1,))
    a, b = tgrad.zeros(2, 1), tgrad.arange(3.0)
    xa, xb = tgrad.broadcast_tensors(a, b)
    assert xa.shape == xb.shape == (2, 3) and xb._storage is b._storage  # views
    np.testing.assert_array_equal(xb.numpy(), np.broadcast_to(np.arange(3.0), (2, 3)))
    assert tgrad.broadcast_tensors() == ()
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size "
                                           "of tensor b \\(3\\) at non-singleton dimension 0"):
        tgrad.broadcast_tensors(tgrad.zeros(2), tgrad.zeros(3))
    leaf = _leaf(3)
    (out,) = tgrad.broadcast_tensors(leaf)
    tgrad.broadcast_tensors(leaf, tgrad.zeros(4, 1))[0].sum().backward()
    assert leaf.grad.tolist() == [4.0, 4.0, 4.0]  # each element used by 4 rows
    assert out.shape == (3,)


def test_diagflat():
    x = np.array([[1, 2], [3, 4]])
    for offset in (-2, 0, 1):
        np.testing.assert_array_equal(tgrad.diagflat(tgrad.tensor(x), offset).numpy(),
                                      np.diagflat(x, offset))
    assert gradgradcheck(lambda t: tgrad.diagflat(t, 1), (_leaf(2, 2),))


def test_dist():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    for p in (0, 1, 2, 3.5, math.inf):
        ref = np.linalg.norm((a - b).ravel(), ord=p)
        got = tgrad.dist(tgrad.tensor(a), tgrad.tensor(b), p)
        assert got.shape == ()
        np.testing.assert_allclose(got.item(), ref, rtol=1e-14)
    assert gradcheck(lambda u, v: tgrad.dist(u, v, 3), (_leaf(2, 3), _leaf(3)))
    assert gradgradcheck(lambda u, v: u.dist(v), (_leaf(2, 3), _leaf(3)))
    with pytest.raises(RuntimeError, match="dist: The size of tensor a \\(2\\) must match"):
        tgrad.dist(tgrad.zeros(2), tgrad.zeros(3))


def test_renorm():
    x = RNG.standard_normal((3, 4, 2)) * 3
    for p, dim, maxnorm in ((2, 0, 2.0), (1, 1, 1.5), (3.0, -1, 0.5)):
        axes = tuple(i for i in range(3) if i != dim % 3)
        norms = np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1 / p)
        ref = x * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
        np.testing.assert_allclose(tgrad.renorm(tgrad.tensor(x), p, dim, maxnorm).numpy(),
                                   ref, rtol=1e-14)
    t = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tgrad.float64)
    t.renorm_(2, 0, 3)
    np.testing.assert_allclose(t.numpy(), [[1.0, 2.0], [3 * 3 / (5 + 1e-7), 4 * 3 / (5 + 1e-7)]],
                               rtol=1e-15)
    assert gradcheck(lambda u: tgrad.renorm(u, 2, 0, 1.0), (_leaf(3, 4),))
    assert gradgradcheck(lambda u: tgrad.renorm(u, 2, 1, 1.0), (_leaf(3, 4),))
    cases = [((tgrad.zeros(2, 2), -1, 0, 3.0), "renorm: non-positive-norm not supported"),
             ((tgrad.zeros(2, 2), 2, 0, -3.0), "renorm: expected maxnorm to be >= 0 but got -3"),
             ((tgrad.zeros(2), 2, 0, 3.0), "renorm: input needs at least 2 dimensions, got 1")]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            tgrad.renorm(*args)
