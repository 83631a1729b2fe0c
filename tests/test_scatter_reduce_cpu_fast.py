"""scatter_reduce's CPU fast paths: prod / amax / amin with include_self skip the count
and the select; amax / amin's plain backward and prod's zero-free one run on the NumPy
arrays. Checked against the tgrad-op formulas (create_graph=True) and NumPy references."""

import numpy as np
import pytest

import tgrad


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
