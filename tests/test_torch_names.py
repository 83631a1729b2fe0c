"""PyTorch top-level names added late: torch.cond / torch.while_loop (eager control flow),
torch.compile (identity: tgrad has no compiler) and the constants pi, e, inf, nan, newaxis.
References: hand values, NumPy float64 and finite differences (gradcheck)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck


def _x(values):
    return tgrad.tensor(np.array(values, dtype=np.float64), requires_grad=True)


# ------------------------------------------------------------------------------ cond
def test_cond_runs_the_branch_picked_by_a_tensor_pred_and_differentiates_it():
    xv = np.array([0.3, -1.1, 2.0])
    x = _x(xv)
    out = tgrad.cond(x.sum() > 0, lambda a: a.sin() * a, lambda a: a.cos(), (x,))
    np.testing.assert_allclose(out.detach().numpy(), np.sin(xv) * xv)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv) * xv + np.sin(xv))
    x2 = _x(-xv)
    out = tgrad.cond(x2.sum() > 0, lambda a: a.sin() * a, lambda a: a.cos(), [x2])
    np.testing.assert_allclose(out.detach().numpy(), np.cos(-xv))
    assert gradcheck(lambda a: tgrad.cond(tgrad.tensor(False), lambda t: t * t,
                                          lambda t: t.exp(), (a,)), (_x([0.2, 0.7]),))


def test_cond_python_pred_and_nested_operands():
    x = _x([1.0, 2.0])
    assert tgrad.cond(True, lambda a, b: 1, lambda a, b: 2, (x, 3)) == 1  # no checks, as torch
    assert tgrad.cond(0, lambda: "t", lambda: "f") == "f"
    out = tgrad.cond(tgrad.tensor([1]), lambda d: d["a"] + d["b"][0], lambda d: d["a"],
                     ({"a": x, "b": [x * 2]},))
    np.testing.assert_allclose(out.detach().numpy(), [3.0, 6.0])


def test_cond_pytorch_input_errors():
    x = _x([1.0, 2.0])
    with pytest.raises(RuntimeError, match="single-element tensor"):
        tgrad.cond(tgrad.tensor([True, False]), lambda a: a, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="Expected pred to be bool or tensor"):
        tgrad.cond("yes", lambda a: a, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="Expect both branches to be callable"):
        tgrad.cond(tgrad.tensor(True), 3, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="only consists of tensor leaves"):
        tgrad.cond(tgrad.tensor(True), lambda a, b: a, lambda a, b: a, (x, 3))
    with pytest.raises(RuntimeError, match="only consists of tensor leaves"):
        tgrad.cond(tgrad.tensor(True), lambda a: a, lambda a: a, {"a": x})


# ------------------------------------------------------------------------ while_loop
def test_while_loop_matches_the_python_loop_and_differentiates_through_it():
    xv = np.array([0.5, 1.5])
    x = _x(xv)
    i, y = tgrad.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * a.sin()),
                            (tgrad.tensor(0), x))
    ref, d = xv.copy(), np.ones(2)
    for _ in range(3):  # y_{k+1} = y_k sin(y_k): dy' = (sin y + y cos y) dy
        d = d * (np.sin(ref) + ref * np.cos(ref))
        ref = ref * np.sin(ref)
    assert i.item() == 3
    np.testing.assert_allclose(y.detach().numpy(), ref)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), d)


def test_while_loop_int_carry_python_bool_and_no_iteration():
    x = tgrad.tensor([1.0, 2.0, 3.0])
    n, y = tgrad.while_loop(lambda n, a: 2 * n < a.shape[0], lambda n, a: (n + 1, a + n),
                            (0, x))
    assert n == 2
    np.testing.assert_allclose(y.numpy(), [2.0, 3.0, 4.0])  # + 0 + 1
    (z,) = tgrad.while_loop(lambda a: a.sum() < 10, lambda a: a * 2, [x])
    np.testing.assert_allclose(z.numpy(), [2.0, 4.0, 6.0])
    out = tgrad.while_loop(lambda a: a.sum() < 0, lambda a: (a * 2,), (x,))
    assert isinstance(out, tuple) and len(out) == 1
    np.testing.assert_allclose(out[0].numpy(), [1.0, 2.0, 3.0])


def test_while_loop_pytorch_checks():
    x = tgrad.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Expect cond_fn and body_fn to be callable"):
        tgrad.while_loop(3, lambda a: (a,), (x,))
    with pytest.raises(RuntimeError, match="tensor or int leaves"):
        tgrad.while_loop(lambda a: False, lambda a: (a,), ("s",))
    with pytest.raises(RuntimeError, match="tensor or int leaves"):
        tgrad.while_loop(lambda a: False, lambda a: (a,), x)
    with pytest.raises(RuntimeError, match="boolean scalar tensor or a bool"):
        tgrad.while_loop(lambda a: a < 10, lambda a: (a * 2,), (x,))
    with pytest.raises(RuntimeError, match="same metadata"):
        tgrad.while_loop(lambda a: a.sum() < 10, lambda a: (a.double() * 2,), (x,))
    with pytest.raises(RuntimeError, match="same structure"):
        tgrad.while_loop(lambda a: a.sum() < 10, lambda a: (a * 2, a), (x,))


# --------------------------------------------------------------------------- compile
def test_compile_returns_the_callable_unchanged():
    model = tgrad.nn.Linear(2, 3)
    assert tgrad.compile(model) is model
    assert tgrad.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    def f(a):
        return a * 2

    assert tgrad.compile(f, backend="eager") is f

    @tgrad.compile
    def g(a):
        return a + 1

    @tgrad.compile(mode="reduce-overhead")
    def h(a):
        return a - 1

    assert g(1) == 2 and h(1) == 0 and h.__name__ == "h"
    with pytest.raises(RuntimeError, match="Unrecognized mode=x"):
        tgrad.compile(f, mode="x")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        tgrad.compile(f, mode="default", options={})
    with pytest.raises(TypeError, match="A callable function is expected"):
        tgrad.compile(3)


def test_constants():
    assert tgrad.pi == math.pi and tgrad.e == math.e
    assert tgrad.inf == float("inf") and math.isnan(tgrad.nan) and tgrad.newaxis is None
    x = tgrad.arange(3)
    assert x[:, tgrad.newaxis].shape == (3, 1)


# ------------------------------------------------------------------ svd_lowrank / pca_lowrank
def _low_rank(m, n, r, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


@pytest.mark.parametrize("shape", [(9, 5), (4, 7)])
def test_svd_lowrank_reconstructs_a_low_rank_matrix(shape):
    a_np = _low_rank(*shape, 3, seed=1)
    tgrad.manual_seed(0)
    u, s, v = tgrad.svd_lowrank(tgrad.tensor(a_np), q=4)
    assert u.shape == (shape[0], 4) and s.shape == (4,) and v.shape == (shape[1], 4)
    np.testing.assert_allclose(((u * s) @ v.mT).numpy(), a_np, atol=1e-10)
    np.testing.assert_allclose(s.numpy()[:3], np.linalg.svd(a_np, compute_uv=False)[:3],
                               rtol=1e-10)
    np.testing.assert_allclose((u.mT @ u).numpy(), np.eye(4), atol=1e-10)
    m_np = np.ones(shape)  # svd_lowrank of (a + m) - m: rank 3 <= q
    u, s, v = tgrad.svd_lowrank(tgrad.tensor(a_np + m_np), q=4, M=tgrad.tensor(np.ones(shape[1])))
    np.testing.assert_allclose(((u * s) @ v.mT).numpy(), a_np, atol=1e-10)


def test_pca_lowrank_centers_and_matches_numpy_svd():
    a_np = _low_rank(10, 6, 2, seed=2) + np.arange(6.0)  # rank 2 after centering
    tgrad.manual_seed(1)
    u, s, v = tgrad.pca_lowrank(tgrad.tensor(a_np))
    assert s.shape == (6,)
    c_np = a_np - a_np.mean(axis=0)
    np.testing.assert_allclose(s.numpy()[:2], np.linalg.svd(c_np, compute_uv=False)[:2],
                               rtol=1e-10)
    np.testing.assert_allclose(((u[:, :2] * s[:2]) @ v[:, :2].mT).numpy(), c_np, atol=1e-10)
    u, s, v = tgrad.pca_lowrank(tgrad.tensor(a_np), q=3, center=False)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a_np, compute_uv=False)[:3], rtol=1e-10)
    with pytest.raises(ValueError, match=r"q\(=7\) must be non-negative integer and not "
                                         r"greater than min\(m, n\)=6"):
        tgrad.pca_lowrank(tgrad.tensor(a_np), q=7)


def test_svd_lowrank_singular_values_are_differentiable():
    a_np = _low_rank(6, 4, 2, seed=3)

    def top_singular_values(a):
        tgrad.manual_seed(5)  # the same random basis at every evaluation
        return tgrad.svd_lowrank(a, q=2, niter=2)[1]

    assert gradcheck(top_singular_values, (tgrad.tensor(a_np, requires_grad=True),))


# ---------------------------------------------------------------- histogramdd, Tensor.histogram
def test_histogramdd_matches_numpy():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 3))
    w = rng.random(50)
    for bins, rng_ in ((4, None), ([2, 3, 5], [-1.0, 1.0, -2.0, 0.5, 0.0, 3.0])):
        for density in (False, True):
            h, e = tgrad.histogramdd(tgrad.tensor(x), bins=bins, range=rng_,
                                     weight=tgrad.tensor(w), density=density)
            np_range = None if rng_ is None else list(zip(rng_[::2], rng_[1::2]))
            hn, en = np.histogramdd(x, bins=bins, range=np_range, weights=w, density=density)
            np.testing.assert_allclose(h.numpy(), hn, rtol=1e-12)
            for a, b in zip(e, en):
                np.testing.assert_allclose(a.numpy(), b, rtol=1e-12)
    edges = [np.array([-1.0, 0.0, 2.0]), np.array([-3.0, 0.0, 0.5, 3.0])]
    pts = x[:, :2].reshape(5, 10, 2)  # leading dims are flattened
    h, e = tgrad.histogramdd(tgrad.tensor(pts), bins=[tgrad.tensor(b) for b in edges])
    np.testing.assert_allclose(h.numpy(), np.histogramdd(x[:, :2], bins=edges)[0])
    h, _ = tgrad.histogramdd(tgrad.tensor([[1.0, 2.0], [1.0, 3.0], [1.0, 4.0]]), bins=[2, 2])
    np.testing.assert_allclose(h.numpy(), [[0.0, 0.0], [1.0, 2.0]])  # PyTorch's: min == max


def test_histogramdd_errors_and_tensor_histogram():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tgrad.histogramdd(tgrad.ones(3), bins=2)
    with pytest.raises(RuntimeError, match="size of bins must be equal"):
        tgrad.histogramdd(tgrad.ones(3, 2), bins=[2, 2, 2])
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        tgrad.histogramdd(tgrad.ones(3, 2), bins=2, range=[0.0, 1.0])
    x = np.array([0.1, 0.5, 0.5, 0.9, 1.0])
    h, e = tgrad.tensor(x).histogram(4, range=(0.0, 1.0))
    hn, en = np.histogram(x, 4, range=(0.0, 1.0))
    np.testing.assert_allclose(h.numpy(), hn)
    np.testing.assert_allclose(e.numpy(), en)


# ------------------------------------------------------------------ as_strided_scatter
def _np_as_strided_scatter(x, src, size, stride, offset):
    """NumPy reference: a C-contiguous copy of x with src written through the strided view."""
    out = np.ascontiguousarray(x).copy()
    flat = out.reshape(-1)
    view = np.lib.stride_tricks.as_strided(flat[offset:], size,
                                           [s * flat.itemsize for s in stride])
    view[...] = src
    return out


@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), 1), ((3,), (4,), 0),
                                                ((2, 3), (4, 1), None), ((0, 2), (1, 1), 2)])
def test_as_strided_scatter_matches_numpy_and_gradcheck(size, stride, offset):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4))
    src = rng.standard_normal(size)
    got = tgrad.as_strided_scatter(tgrad.tensor(x), tgrad.tensor(src), size, stride, offset)
    np.testing.assert_array_equal(got.numpy(),
                                  _np_as_strided_scatter(x, src, size, stride, offset or 0))
    assert got.is_contiguous()
    # d input = g with the written positions zeroed; d src = g read through the view
    xt, st = _x(x), _x(src)
    g = rng.standard_normal((3, 4))
    out = xt.as_strided_scatter(st, size, stride, offset)
    out.backward(tgrad.tensor(g))
    written = _np_as_strided_scatter(np.zeros((3, 4)), np.ones(size), size, stride,
                                     offset or 0)
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(written == 1, 0.0, g))
    gv = np.lib.stride_tricks.as_strided(g.reshape(-1)[offset or 0:], size,
                                         [s * 8 for s in stride])
    np.testing.assert_array_equal(st.grad.numpy(), gv)
    assert gradcheck(lambda a, b: tgrad.as_strided_scatter(a, b, size, stride, offset),
                     (_x(x), _x(src)))


def test_as_strided_scatter_of_a_slice_and_errors():
    x = np.arange(12.0).reshape(3, 4)
    # a slice's copy starts at storage offset 0 (as PyTorch): offset None writes its start
    src = tgrad.full((2, 2), -1.0, dtype=tgrad.float64)
    got = tgrad.as_strided_scatter(tgrad.tensor(x)[1:], src, (2, 2), (1, 2))
    np.testing.assert_array_equal(got.numpy(), [[-1, -1, -1, -1], [8, 9, 10, 11]])
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice"):
        tgrad.as_strided_scatter(tgrad.tensor(x), tgrad.ones(2, 2, dtype=tgrad.float64),
                                 (2, 3), (1, 2), 1)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        tgrad.as_strided_scatter(tgrad.tensor(x), tgrad.ones(2, 2, dtype=tgrad.float64),
                                 (2, 2), (1, 2), 100)


# ------------------------------------------------------------------ more *_copy forms
def test_view_as_real_and_complex_copy():
    z = np.array([1 + 2j, -3 + 0.5j])
    r = tgrad.view_as_real_copy(tgrad.tensor(z))
    np.testing.assert_array_equal(r.numpy(), [[1, 2], [-3, 0.5]])
    assert r._base is None and r.is_contiguous()
    c = tgrad.view_as_complex_copy(tgrad.tensor([[1.0, 2.0], [3.0, -4.0]]))
    np.testing.assert_array_equal(c.numpy(), [1 + 2j, 3 - 4j])
    assert c._base is None
    x = _x([[1.0, 2.0], [3.0, -4.0]])
    w = np.array([2.0, -1.0])
    tgrad.view_as_real_copy(tgrad.view_as_complex_copy(x)).mul(tgrad.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tile(w, (2, 1)))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        tgrad.view_as_complex_copy(tgrad.ones(3))


def test_split_with_sizes_copy_and_out_lists():
    x = np.arange(10.0).reshape(5, 2)
    parts = tgrad.split_with_sizes_copy(_x(x), [2, 3])
    for p, ref in zip(parts, np.split(x, [2])):
        np.testing.assert_array_equal(p.detach().numpy(), ref)
        assert p._base is None
    assert gradcheck(lambda a: tgrad.split_with_sizes_copy(a, [1, 1], dim=1), (_x(x),))
    # out=: one tensor per part, resized as needed; returns None (PyTorch); no graph
    out = [tgrad.empty(2, 2, dtype=tgrad.float64), tgrad.empty(0, dtype=tgrad.float64)]
    assert tgrad.split_with_sizes_copy(_x(x), [2, 3], out=out) is None
    np.testing.assert_array_equal(out[0].numpy(), x[:2])
    np.testing.assert_array_equal(out[1].numpy(), x[2:])
    assert not out[1].requires_grad
    out = [tgrad.empty(3, dtype=tgrad.float64) for _ in range(5)]
    assert tgrad.unbind_copy(tgrad.tensor(x.T), 1, out=out) is None
    np.testing.assert_array_equal(np.stack([o.numpy() for o in out]), x)
    with pytest.raises(RuntimeError, match="expected an out= argument of size 2, got size 1"):
        tgrad.split_with_sizes_copy(tgrad.tensor(x), [2, 3], out=[tgrad.empty(2, 2)])
    with pytest.raises(RuntimeError, match="split_copy.*expected an out= argument of size 3"):
        tgrad.split_copy(tgrad.tensor(x), 2, out=[tgrad.empty(2, 2)])
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        tgrad.split_with_sizes_copy(tgrad.tensor(x), [2, 3],
                                    out=[tgrad.empty(2, 2), tgrad.empty(3, 2)])
