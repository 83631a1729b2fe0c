"""scatter_reduce's CPU fast paths: prod / amax / amin with include_self skip the count
and the select; amax / amin's plain backward and prod's zero-free one run on the NumPy
arrays; sum / mean run forward and backward on the arrays (_numpy_scatter.scatter_sum_fwd /
_bwd). Checked against the tgrad-op formulas (create_graph=True, or the composite forward)
and NumPy references."""

import sys

import numpy as np
import pytest
from special_values import layout_leaf, mixed_specials, raw_bytes

import tgrad
import tgrad.ops.scatter_reduce

sr_mod = sys.modules["tgrad.ops.scatter_reduce"]


def _grads(x, s, i, red, incl, dim, create_graph):
    X = tgrad.tensor(x, requires_grad=True)  # noqa: N806
    S = tgrad.tensor(s, requires_grad=True)  # noqa: N806
    y = tgrad.scatter_reduce(X, dim, tgrad.tensor(i), S, red, include_self=incl)
    g = tgrad.tensor(np.linspace(-1.0, 1.0, y.numel()).reshape(y.shape).astype(x.dtype))
    gx, gs = tgrad.autograd.grad(y, (X, S), g, create_graph=create_graph)
    return y.detach().numpy(), gx.detach().numpy(), gs.detach().numpy()


def _np_reduce(x, s, i, red, incl, dim):
    """A NumPy reference (sequential folds in index order)."""
    out = x.astype(np.float64).copy()
    seen = np.zeros(x.shape, bool)
    fn = {"prod": np.multiply, "amax": np.fmax, "amin": np.fmin}[red]
    for j in np.ndindex(*i.shape):
        t = list(j)
        t[dim] = i[j]
        t = tuple(t)
        if not seen[t] and not incl:
            out[t] = s[j]
        else:
            out[t] = fn(out[t], s[j])
        seen[t] = True
    return out


CASES = ["plain", "ties", "zeros", "nonfinite"]


def _data(case, dt, rng):
    x = rng.standard_normal((7, 9)) * 2
    s = rng.standard_normal((6, 9)) * 2
    if case == "ties":
        x, s = np.round(x), np.round(s)
    elif case == "zeros":
        x.flat[[2, 30]] = 0.0
        s.flat[[4, 9, 13]] = [0.0, -0.0, 0.0]
    elif case == "nonfinite":
        x.flat[[1, 17]] = [np.nan, np.inf]
        s.flat[[3, 5]] = [-np.inf, np.nan]
    return x.astype(dt), s.astype(dt)


@pytest.mark.parametrize("red", ["prod", "amax", "amin"])
@pytest.mark.parametrize("incl", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fast_paths_match_the_op_formulas(red, incl, dim, case, dt):
    rng = np.random.default_rng(hash((red, incl, dim, case)) % 2**32)
    x, s = _data(case, dt, rng)
    i = rng.integers(0, x.shape[dim], (6, 9))
    y, gx, gs = _grads(x, s, i, red, incl, dim, create_graph=False)
    y2, gx2, gs2 = _grads(x, s, i, red, incl, dim, create_graph=True)  # the tgrad ops
    np.testing.assert_array_equal(y, y2)
    if case != "nonfinite":
        want = _np_reduce(x, s, i, red, incl, dim)
        np.testing.assert_allclose(y, want, rtol=4 * np.finfo(dt).eps)
    if red != "prod" or case != "zeros":  # (create_graph's zero rule keeps derivatives)
        np.testing.assert_array_equal(gx, gx2)
        np.testing.assert_array_equal(gs, gs2)
    else:
        np.testing.assert_allclose(gx, gx2, rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(gs, gs2, rtol=1e-6, equal_nan=True)


def test_empty_src_and_gradcheck():
    x = tgrad.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    s = tgrad.tensor(np.zeros((2, 0)), requires_grad=True)
    y = tgrad.scatter_reduce(x, 1, tgrad.tensor(np.zeros((2, 0), np.int64)), s, "amax")
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    rng = np.random.default_rng(0)
    xs = tgrad.tensor(rng.uniform(0.5, 2, (4, 5)), requires_grad=True)
    ss = tgrad.tensor(rng.uniform(0.5, 2, (4, 5)), requires_grad=True)
    idx = tgrad.tensor(rng.integers(0, 5, (4, 5)))
    for red in ("prod", "amax", "amin"):
        def f(a, b, red=red):
            return tgrad.scatter_reduce(a, 1, idx, b, red)
        assert tgrad.autograd.gradcheck(f, (xs, ss))
        assert tgrad.autograd.gradgradcheck(f, (xs, ss))


# ------------------------------------------------------------------ sum / mean on the arrays
def _sum_run(x, s, i, red, incl, dim, layout, composite, monkeypatch):
    """(y, d x, d src) as arrays; composite: the tgrad-op forward and backward (the fast
    path switched off)."""
    with monkeypatch.context() as m:
        if composite:
            m.setattr(sr_mod, "_fast_sum", lambda a, b: False)
        X, S = layout_leaf(x, layout), layout_leaf(s, layout)  # noqa: N806
        y = tgrad.scatter_reduce(X, dim, tgrad.tensor(i), S, red, include_self=incl)
        g = tgrad.tensor(np.linspace(-1.5, 1.5, y.numel()).reshape(y.shape).astype(x.dtype))
        gx, gs = tgrad.autograd.grad(y, (X, S), g)
    return y.detach().numpy(), gx.numpy(), gs.numpy()


def _np_sum(x, s, i, red, incl, dim):
    """float64 reference of sum / mean (finite inputs)."""
    out = x.astype(np.float64) * incl
    n = np.full(x.shape, float(incl))
    for j in np.ndindex(*i.shape):
        t = list(j)
        t[dim] = i[j]
        out[tuple(t)] += s[j]
        n[tuple(t)] += 1
    if red == "mean":
        out = out / np.maximum(n, 1)
    return np.where(n > incl, out, x)


@pytest.mark.parametrize("red", ["sum", "mean"])
@pytest.mark.parametrize("incl", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 9), (37, 65)])
def test_sum_mean_arrays_match_the_composite_bit_for_bit(red, incl, dim, layout, dt, shape,
                                                        monkeypatch):
    rng = np.random.default_rng(hash((red, incl, dim, layout, shape)) % 2**32)
    x = mixed_specials(shape, dt, rng)
    s = mixed_specials(shape, dt, rng)
    ishape = (shape[0] - 1, shape[1] - 2)
    i = rng.integers(0, shape[dim], ishape)
    fast = _sum_run(x, s, i, red, incl, dim, layout, False, monkeypatch)
    ref = _sum_run(x, s, i, red, incl, dim, layout, True, monkeypatch)
    for a, b in zip(fast, ref):
        assert a.shape == b.shape and a.dtype == b.dtype and raw_bytes(a) == raw_bytes(b)
    xf, sf = rng.standard_normal(shape).astype(dt), rng.standard_normal(shape).astype(dt)
    y = _sum_run(xf, sf, i, red, incl, dim, layout, False, monkeypatch)[0]
    np.testing.assert_allclose(y, _np_sum(xf, sf[:ishape[0], :ishape[1]], i, red, incl, dim),
                               rtol=1e-5 if dt == np.float32 else 1e-13, atol=1e-6)


@pytest.mark.parametrize("red", ["sum", "mean"])
def test_sum_mean_arrays_edge_shapes_and_dtypes(red, monkeypatch):
    rng = np.random.default_rng(3)
    cases = [((0, 4), (0, 4), 1), ((3, 4), (3, 0), 1), ((5,), (8,), 0), ((2, 3, 4), (2, 2, 4), 1),
             ((2, 3, 4), (2, 3, 3), -1), ((), (), 0)]
    for xs, ishape, dim in cases:
        for incl in (True, False):
            x = rng.standard_normal(xs)
            s = rng.standard_normal(ishape)
            i = rng.integers(0, max(xs[dim], 1) if xs else 1, ishape)
            fast = _sum_run(x, s, i, red, incl, dim, "c", False, monkeypatch)
            ref = _sum_run(x, s, i, red, incl, dim, "c", True, monkeypatch)
            for a, b in zip(fast, ref):
                assert a.shape == b.shape and raw_bytes(a) == raw_bytes(b)
                assert isinstance(a, np.ndarray)
    for dt in (tgrad.float16, tgrad.bfloat16):  # computed in float32, rounded once
        x = tgrad.tensor(rng.standard_normal((6, 5))).to(dt)
        s = tgrad.tensor(rng.standard_normal((6, 5))).to(dt)
        i = tgrad.tensor(rng.integers(0, 5, (6, 5)))
        y = tgrad.scatter_reduce(x, 1, i, s, red)
        with monkeypatch.context() as m:
            m.setattr(sr_mod, "_fast_sum", lambda a, b: False)
            y2 = tgrad.scatter_reduce(x, 1, i, s, red)
        assert y.dtype is dt and raw_bytes(y.float().numpy()) == raw_bytes(y2.float().numpy())


@pytest.mark.parametrize("red", ["sum", "mean"])
@pytest.mark.parametrize("incl", [True, False])
def test_sum_mean_gradcheck_and_create_graph(red, incl):
    rng = np.random.default_rng(5)
    xs = tgrad.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    ss = tgrad.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    idx = tgrad.tensor(rng.integers(0, 4, (3, 5)))

    def f(a, b):
        return tgrad.scatter_reduce(a, 0, idx, b, red, include_self=incl)
    assert tgrad.autograd.gradcheck(f, (xs, ss))
    assert tgrad.autograd.gradgradcheck(f, (xs, ss))
    y = f(xs, ss)  # create_graph: the same first derivatives as the array backward
    g = tgrad.tensor(rng.standard_normal(tuple(y.shape)))
    a = tgrad.autograd.grad(y, (xs, ss), g, create_graph=True)
    b = tgrad.autograd.grad(f(xs, ss), (xs, ss), g)
    for u, v in zip(a, b):
        assert raw_bytes(u.detach().numpy()) == raw_bytes(v.numpy())
