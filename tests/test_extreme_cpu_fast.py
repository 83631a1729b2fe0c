"""The CPU path of amax/amin's (and max()/min()'s of a whole tensor) plain backward
(tgrad/backends/_numpy_extreme.py, taken in tgrad/ops/reduce.py) against the composition
of tgrad ops it replaces, forced by monkeypatching ``_numpy_extreme.fast_dtype``:
bit-identical gradients (ties shared evenly, NaN results and payloads, +-inf, +-0, NaN
gradients) for float32/float64, dims, keepdim, negative and tuple dims, odd sizes, empty,
0-d and non-contiguous inputs; node names; create_graph keeps the composition; gradcheck
and gradgradcheck in float64; half dtypes (the composition) against float64."""

from __future__ import annotations

import numpy as np
import pytest
from special_values import layout_leaf, mixed_specials, raw_bytes

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_extreme

OPS = {
    "amax": lambda x, dim, kd: tgrad.amax(x, dim, kd),
    "amin": lambda x, dim, kd: tgrad.amin(x, dim, kd),
    "max": lambda x, dim, kd: tgrad.max(x),
    "min": lambda x, dim, kd: x.min(),
}
NODES = {"amax": "AmaxBackward0", "amin": "AminBackward0", "max": "MaxBackward1",
         "min": "MinBackward1"}
SHAPES = [((257, 67), [None, 1, -1, 0, -2, (0, 1), ()]), ((7,), [None, 0]),
          ((3, 5, 7), [None, 1, (0, 2), (-1, 1)]), ((0, 4), [1]), ((), [None, 0]),
          ((1, 1), [None, 0])]


def _values(shape: tuple, dt, seed: int, kind: str) -> np.ndarray:
    """Ties (values on a grid of 4), N(0, 1), or N(0, 1) with +-0, NaN payloads, +-inf."""
    rng = np.random.default_rng(seed)
    if kind == "specials":
        return np.asarray(mixed_specials(shape, dt, rng), dt)
    if kind == "ties":
        return np.asarray(rng.integers(-2, 2, shape), dt)
    return np.asarray(rng.standard_normal(shape), dt)


def _grad(name, dim, kd, xn, layout, g_kind, fast, monkeypatch):
    """(y, dx, node name) with the NumPy path on or off."""
    if not fast:  # the composition
        monkeypatch.setattr(_numpy_extreme, "fast_dtype", lambda dt: False)
    x = layout_leaf(xn, layout) if xn.ndim >= 2 else tgrad.tensor(xn, requires_grad=True)
    y = OPS[name](x, dim, kd)
    rng = np.random.default_rng(7)
    g = rng.standard_normal(y.shape).astype(xn.dtype)
    if g_kind == "specials" and g.size:
        g = np.asarray(mixed_specials(y.shape, xn.dtype, rng), xn.dtype)
    y.backward(tgrad.tensor(g))
    monkeypatch.undo()
    return y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("kind", ["ties", "normal", "specials"])
def test_extreme_grad_bits(monkeypatch, name, dt, kind):
    for i, (shape, dims) in enumerate(SHAPES):
        xn = _values(shape, dt, i, kind)
        for dim in (dims if name in ("amax", "amin") else [None]):
            if name in ("max", "min") and xn.size == 0:
                continue  # (max() of an empty tensor raises)
            for kd in (False, True):
                for layout in ("c", "t"):
                    for g_kind in ("normal", "specials"):
                        args = (name, dim, kd, xn, layout, g_kind)
                        ref = _grad(*args, False, monkeypatch)
                        new = _grad(*args, True, monkeypatch)
                        assert new[2] == ref[2] == NODES[name]
                        assert new[1].shape == ref[1].shape == xn.shape
                        assert raw_bytes(new[0]) == raw_bytes(ref[0])
                        assert raw_bytes(new[1]) == raw_bytes(ref[1]), (shape, dim, kd, layout)


def test_extreme_grad_fast_path_taken(monkeypatch):
    calls = []
    orig = _numpy_extreme.extreme_grad
    monkeypatch.setattr(_numpy_extreme, "extreme_grad", lambda *a: calls.append(1) or orig(*a))
    xn = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, 5.0, 5.0]], np.float32)
    x = tgrad.tensor(xn, requires_grad=True)
    tgrad.amax(x, 1).sum().backward()
    assert calls == [1]
    ref = np.array([[0, 0.5, 0.5, 0], [np.nan] * 4], np.float32)
    np.testing.assert_array_equal(x.grad.numpy(), ref)
    # create_graph: the composition, the same values, no NumPy path
    (gx,) = tgrad.autograd.grad(tgrad.amax(x, 1).sum(), x, create_graph=True)
    assert calls == [1]
    np.testing.assert_array_equal(gx.detach().numpy(), ref)
    # float16 keeps the composition
    tgrad.amin(x.detach().half().requires_grad_(True), 0).sum().backward()
    assert calls == [1]


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_extreme_grad_vs_float64(name):
    """float32 gradients with ties against a NumPy float64 reference (g / count on ties)."""
    xn = _values((33, 17), np.float32, 3, "ties")
    x = tgrad.tensor(xn, requires_grad=True)
    y = OPS[name](x, 1, False)
    g = np.random.default_rng(4).standard_normal(33)
    y.backward(tgrad.tensor(g.astype(np.float32)))
    x64 = xn.astype(np.float64)
    ext = getattr(np, name[1:])(x64, axis=1, keepdims=True)
    hit = x64 == ext
    ref = np.where(hit, g[:, None] / hit.sum(1, keepdims=True), 0.0)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", list(OPS))
def test_extreme_gradcheck(name):
    x = tgrad.tensor(np.random.default_rng(5).standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda t: OPS[name](t, 1, False), (x,))
    assert gradgradcheck(lambda t: OPS[name](t, 1, False), (x,))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_extreme_grad_halves(dt):
    """Half dtypes keep the composition: ties shared, against float64."""
    xn = _values((9, 13), np.float32, 6, "ties")
    x = tgrad.tensor(xn).to(getattr(tgrad, dt)).requires_grad_(True)
    tgrad.amax(x, 1).sum().backward()
    hit = xn == xn.max(1, keepdims=True)
    ref = np.where(hit, 1.0 / hit.sum(1, keepdims=True), 0.0)
    np.testing.assert_allclose(x.grad.float().numpy(), ref, rtol=1e-2, atol=1e-3)
