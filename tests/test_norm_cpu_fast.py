"""The CPU paths of the norm family's plain backwards (tgrad/backends/_numpy_norms.py: the
vector norm's p = 1 and 2 gradient, taken in tgrad/ops/reduce.py) against the
compositions of tgrad ops they replace, forced by monkeypatching ``_numpy_norms.fast_dtype``:
bit-identical gradients (NaN payloads, +-inf, +-0, zero rows) for float32/float64, dims,
keepdim, odd sizes, empty, 0-d and non-contiguous inputs; node names; gradcheck and
gradgradcheck in float64; other dtypes (the composition) still against float64."""

from __future__ import annotations

import numpy as np
import pytest
from special_values import mixed_specials, raw_bytes

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_norms

NORMS = {
    "norm": lambda x, p, dim, kd: x.norm(p, dim, kd),
    "vector_norm": lambda x, p, dim, kd: tgrad.linalg.vector_norm(x, p, dim, kd),
}
SHAPES = [((517, 129), [None, 1, -2, (0, 1)]), ((7,), [None, 0]), ((3, 5, 7), [None, 1, (0, 2)]),
          ((0, 4), [1]), ((), [None]), ((1, 1), [None, 0])]


def _values(shape: tuple, dt, seed: int, specials: bool) -> np.ndarray:
    """N(0, 1) (with +-0, NaN payloads and +-inf when ``specials``) and a zero first row
    (the norm's gradient at 0)."""
    rng = np.random.default_rng(seed)
    a = (mixed_specials(shape, dt, rng) if specials
         else rng.standard_normal(shape).astype(dt))
    a = np.asarray(a, dt)
    if a.ndim >= 2 and a.shape[0] > 1:
        a[0] = 0
    return a


def _leaf(xn: np.ndarray, layout: str, requires_grad: bool) -> tgrad.Tensor:
    """xn as a leaf: C-contiguous (layout "c", or under 2 dims) or the all-dims-reversed
    view of its transposed copy (non-contiguous)."""
    if layout == "c" or xn.ndim < 2:
        return tgrad.tensor(xn, requires_grad=requires_grad)
    x = tgrad.tensor(np.ascontiguousarray(xn.T)).permute(*range(xn.ndim - 1, -1, -1))
    return x.detach().requires_grad_(requires_grad)


def _grad(fn, xn: np.ndarray, g_seed: int, layout: str, fast: bool, monkeypatch):
    """(y, dx, node name) with the NumPy path on or off."""
    if not fast:  # the composition
        monkeypatch.setattr(_numpy_norms, "fast_dtype", lambda dt: False)
    x = _leaf(xn, layout, True)
    y = fn(x)
    g = np.random.default_rng(g_seed).standard_normal(y.shape).astype(xn.dtype)
    y.backward(tgrad.tensor(g))
    return y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("p", [2, 1, 2.0, 1.0])
@pytest.mark.parametrize("name", list(NORMS))
@pytest.mark.parametrize("specials", [False, True])
def test_norm_grad_bits(monkeypatch, name, p, dt, specials):
    for i, (shape, dims) in enumerate(SHAPES):
        xn = _values(shape, dt, i, specials)
        for dim in dims:
            for kd in (False, True):
                for layout in ("c", "t"):
                    fn = lambda x, dim=dim, kd=kd: NORMS[name](x, p, dim, kd)  # noqa: E731
                    ref = _grad(fn, xn, i, layout, False, monkeypatch)
                    new = _grad(fn, xn, i, layout, True, monkeypatch)
                    assert new[2] == ref[2] == "LinalgVectorNormBackward0"
                    assert new[0].shape == ref[0].shape and new[1].shape == ref[1].shape
                    assert raw_bytes(new[0]) == raw_bytes(ref[0])
                    assert raw_bytes(new[1]) == raw_bytes(ref[1]), (shape, dim, kd, layout)


def test_norm_grad_fast_path_taken(monkeypatch):
    calls = []
    orig = _numpy_norms.norm_grad
    monkeypatch.setattr(_numpy_norms, "norm_grad", lambda *a: calls.append(1) or orig(*a))
    x = tgrad.tensor(np.ones((4, 3), np.float32), requires_grad=True)
    x.norm(dim=1).sum().backward()
    assert calls == [1]
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 3 ** -0.5, np.float32))
    # create_graph: the composition (differentiable), the same values, no NumPy path
    x.grad = None
    (gx,) = tgrad.autograd.grad(x.norm(dim=1).sum(), x, create_graph=True)
    assert calls == [1] and gx.requires_grad
    np.testing.assert_array_equal(gx.detach().numpy(), np.full((4, 3), 3 ** -0.5, np.float32))


@pytest.mark.parametrize("p", [2, 1])
def test_norm_grad_vs_float64(p):
    """float32 gradients against NumPy's float64 formula (rows with a zero row)."""
    xn = _values((33, 17), np.float32, 3, False)
    x = tgrad.tensor(xn, requires_grad=True)
    y = x.norm(p, 1)
    g = np.random.default_rng(4).standard_normal(33)
    y.backward(tgrad.tensor(g.astype(np.float32)))
    x64 = xn.astype(np.float64)
    n = np.linalg.norm(x64, p, axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        ref = g[:, None] * (np.where(n == 0, 0, x64 / n) if p == 2 else np.sign(x64))
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("p", [2, 1])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm_gradcheck(p, dim):
    x = tgrad.tensor(np.random.default_rng(5).standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda t: t.norm(p, dim), (x,))
    assert gradgradcheck(lambda t: t.norm(p, dim), (x,))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_norm_grad_halves(dt):
    """Half dtypes keep the composition: values against float64 (half rounding)."""
    xn = np.random.default_rng(6).standard_normal((9, 13)).astype(np.float32)
    x = tgrad.tensor(xn).to(getattr(tgrad, dt)).requires_grad_(True)
    x.norm(dim=1).sum().backward()
    x64 = x.detach().float().numpy().astype(np.float64)
    ref = x64 / np.linalg.norm(x64, axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad.float().numpy(), ref, rtol=1e-2, atol=1e-2)


# ------------------------------------------------------------------ rms_norm
RMS_CASES = [((512, 128), (128,)), ((7, 13), (13,)), ((3, 5, 7), (5, 7)), ((9,), (9,)),
             ((4, 1), (1,)), ((2, 3, 1), (3, 1)), ((0, 5), (5,))]


def _rms(fast: bool, monkeypatch, xn, wn, ns, gn, need_x=True, need_w=True, layout="c"):
    """(y, node name, the leaves' gradients) of F.rms_norm with the NumPy path on or off."""
    if not fast:  # the composition
        monkeypatch.setattr(_numpy_norms, "fast_dtype", lambda dt: False)
    x = _leaf(xn, layout, need_x)
    w = None if wn is None else tgrad.tensor(wn, requires_grad=need_w)
    y = tgrad.nn.functional.rms_norm(x, ns, w)
    y.backward(tgrad.tensor(gn))
    grads = [t.grad.numpy() for t in (x, w) if t is not None and t.requires_grad]
    return [y.detach().numpy()] + grads, y.grad_fn.name()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("weight", [True, False])
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("layout", ["c", "t"])
def test_rms_norm_bits(monkeypatch, dt, weight, needs, layout):
    """Output and gradients bit for bit as the composition's (zero rows, NaN, odd sizes,
    empty, size-1 normalized dims, a transposed x: the composition on both sides)."""
    if not weight and not needs[0]:
        return
    rng = np.random.default_rng(7)
    for shape, ns in RMS_CASES:
        xn = rng.standard_normal(shape).astype(dt)
        if xn.ndim > 1 and xn.shape[0] > 2:
            xn[0] = 0
            xn[1].flat[0] = np.nan
            xn[2].flat[-1] = np.inf
        wn = rng.standard_normal(ns).astype(dt) if weight else None
        gn = rng.standard_normal(shape).astype(dt)
        ref, ref_name = _rms(False, monkeypatch, xn, wn, ns, gn, *needs, layout=layout)
        new, new_name = _rms(True, monkeypatch, xn, wn, ns, gn, *needs, layout=layout)
        assert new_name == ref_name == "MulBackward0"
        assert len(new) == len(ref)
        for a, b in zip(new, ref):
            assert a.shape == b.shape and raw_bytes(a) == raw_bytes(b), (shape, ns)


def test_rms_norm_vs_float64():
    rng = np.random.default_rng(8)
    xn = rng.standard_normal((33, 17)).astype(np.float32)
    wn = rng.standard_normal(17).astype(np.float32)
    y = tgrad.nn.functional.rms_norm(tgrad.tensor(xn), (17,), tgrad.tensor(wn), eps=1e-6)
    x64 = xn.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6) * wn
    np.testing.assert_allclose(y.numpy(), ref, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm_gradcheck(weight):
    rng = np.random.default_rng(9)
    x = tgrad.tensor(rng.standard_normal((3, 4, 5)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    fn = lambda a, *b: tgrad.nn.functional.rms_norm(a, (4, 5), *b)  # noqa: E731
    args = (x, w) if weight else (x,)
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_rms_norm_create_graph_matches(monkeypatch):
    """The create_graph gradients (the tgrad-ops formula) equal the plain ones bit for bit
    here, and differentiate again."""
    rng = np.random.default_rng(10)
    x = tgrad.tensor(rng.standard_normal((6, 11)).astype(np.float32), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(11).astype(np.float32), requires_grad=True)
    g = tgrad.tensor(rng.standard_normal((6, 11)).astype(np.float32))
    y = tgrad.nn.functional.rms_norm(x, (11,), w)
    plain = tgrad.autograd.grad(y, (x, w), g, retain_graph=True)
    cg = tgrad.autograd.grad(y, (x, w), g, create_graph=True)
    for a, b in zip(plain, cg):
        np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-6, atol=1e-6)
    assert cg[0].requires_grad
    (cg[0].sum() + cg[1].sum()).backward()
    assert x.grad is not None and w.grad is not None


# ------------------------------------------------------------------ normalize
NZ_SHAPES = [(517, 129), (7, 13), (3, 5, 7), (9,), (4, 1), (1, 6), (0, 3)]


def _nz(fast: bool, monkeypatch, xn, p, dim, eps, gn, create_graph=False):
    if not fast:  # the composition
        monkeypatch.setattr(_numpy_norms, "fast_dtype", lambda dt: False)
    x = tgrad.tensor(xn, requires_grad=True)
    y = tgrad.nn.functional.normalize(x, p, dim, eps)
    (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(gn), create_graph=create_graph)
    return [y.detach().numpy(), gx.detach().numpy()], y.grad_fn.name()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("p", [2, 1, 2.0])
@pytest.mark.parametrize("eps", [1e-12, 0.0, 0.5])
def test_normalize_bits(monkeypatch, dt, p, eps):
    """Output and gradient bit for bit as the composition's, also under create_graph
    (zero, NaN, inf and small rows, every dim incl. negative ones, odd sizes, empty)."""
    rng = np.random.default_rng(11)
    for shape in NZ_SHAPES:
        for dim in range(-len(shape), len(shape)):
            xn = rng.standard_normal(shape).astype(dt)
            if xn.ndim > 1 and xn.shape[0] > 2:
                xn[0] = 0
                xn[1].flat[0] = np.nan
                xn[2].flat[-1] = np.inf
                xn[-1] *= dt(1e-3)
            gn = rng.standard_normal(shape).astype(dt)
            ref, ref_name = _nz(False, monkeypatch, xn, p, dim, eps, gn)
            for cg in (False, True):
                new, new_name = _nz(True, monkeypatch, xn, p, dim, eps, gn, cg)
                assert new_name == ref_name == "DivBackward0"
                for a, b in zip(new, ref):
                    assert a.shape == b.shape and raw_bytes(a) == raw_bytes(b), (shape, dim, cg)


def test_normalize_vs_float64():
    xn = np.random.default_rng(12).standard_normal((33, 17)).astype(np.float32)
    y = tgrad.nn.functional.normalize(tgrad.tensor(xn), dim=1)
    x64 = xn.astype(np.float64)
    np.testing.assert_allclose(y.numpy(), x64 / np.linalg.norm(x64, axis=1, keepdims=True),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_normalize_gradcheck(p, dim):
    x = tgrad.tensor(np.random.default_rng(13).standard_normal((3, 4, 5)), requires_grad=True)
    fn = lambda a: tgrad.nn.functional.normalize(a, p, dim)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_rms_norm_weight_on_another_device_raises_the_composition_error():
    """A CPU x with a cuda weight keeps the composition (its same-device error), not the
    NumPy path (which was handed the weight's device array)."""
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, tgrad, tgrad.nn.functional as F
try:
    F.rms_norm(tgrad.randn(3, 4), (4,), tgrad.ones(4, device="cuda"))
    out = "no error"
except Exception as e:
    out = type(e).__name__ + ": " + str(e)
print(json.dumps({"error": out}))
""")
    assert res["error"].startswith("RuntimeError: mul: expected all tensors to be on the "
                                   "same device"), res["error"]
