"""The CPU row paths of layer_norm and the softmax family (tgrad/backends/_numpy_nn.py
``_ln_fwd_rows`` / ``_ln_bwd_rows``, ``_sm_rows``: C-contiguous float32/float64, the
statistics over the trailing axes as (R, N) rows; ``_row_sum``, ``_row_max``) and the
NumPy backend's ``where`` on one-valued masks (np.where's bits, dtype, layout, no alias),
against the general formulas they replace
(kept below as the reference): float64 bit for bit; float32 against a float64 reference
(its row sums are np.einsum's for rows of <= 128); odd sizes, rows short and long (the
column-loop maximum and np.maximum.reduce), k = 2, None weight / bias, every needs-grad
combination, halves, non-finite rows, empty and non-contiguous inputs (the general path);
gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_nn
from tgrad.backends import numpy as nb


# ---------------------------------------------------------------- the general formulas
def _ref_ln_fwd(x, k, w, b, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    with np.errstate(all="ignore"):
        mean = np.mean(x, axis=axes, keepdims=True)
        c = x - mean
        shift = np.mean(c, axis=axes, keepdims=True)
        c -= shift
        mean = mean + shift
        rstd = 1.0 / np.sqrt(np.mean(np.square(c), axis=axes, keepdims=True) + eps)
        y = c * rstd
        if w is not None:
            y = y * w
        if b is not None:
            y = y + b
    return y, mean, rstd


def _ref_ln_bwd(g, x, mean, rstd, w, k, need_w, need_b):
    axes, batch = tuple(range(x.ndim - k, x.ndim)), tuple(range(x.ndim - k))
    with np.errstate(all="ignore"):
        xhat = (x - mean) * rstd
        gw = g * w if w is not None else g
        dx = rstd * (gw - np.mean(gw, axis=axes, keepdims=True)
                     - xhat * np.mean(gw * xhat, axis=axes, keepdims=True))
        dw = np.add.reduce(g * xhat, axis=batch) if need_w else None
        db = np.add.reduce(g, axis=batch) if need_b else None
    return dx, dw, db


def _ref_softmax(x):
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, -1, keepdims=True))
        return e / np.add.reduce(e, -1, keepdims=True)


def _ref_log_softmax(x):
    with np.errstate(all="ignore"):
        s = x - np.max(x, -1, keepdims=True)
        return s - np.log(np.add.reduce(np.exp(s), -1, keepdims=True))


def _ref_softmax_bwd(g, y):
    with np.errstate(all="ignore"):
        return y * (g - np.add.reduce(g * y, -1, keepdims=True))


def _ref_log_softmax_bwd(g, y):
    with np.errstate(all="ignore"):
        return g - np.exp(y) * np.add.reduce(g, -1, keepdims=True)


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)
    fin = np.isfinite(a)  # (a NaN's payload is NumPy's loop's choice)
    assert np.array_equal(a[fin].view(np.uint64 if a.itemsize == 8 else np.uint32),
                          b[fin].view(np.uint64 if b.itemsize == 8 else np.uint32))


def _close(a, ref, row_ulps):
    """float32 a within row_ulps ulps of its row's largest |ref| (ref float64)."""
    a64 = a.astype(np.float64).reshape(-1, ref.shape[-1])
    r = ref.reshape(-1, ref.shape[-1])
    scale = np.spacing(np.abs(r).max(1, keepdims=True).astype(np.float32)).astype(np.float64)
    assert (np.abs(a64 - r) <= row_ulps * scale).all()


SHAPES = [((16, 32, 128), 1), ((7, 33), 1), ((300, 20), 1), ((5, 3, 4, 10), 2), ((2, 300), 1),
          ((1, 1), 1), ((3, 1, 1), 2)]


def _data(shape, kind, rng):
    x = rng.standard_normal(shape)
    if kind == "large-mean":  # a one-pass variance would cancel here
        x = x * 1e-3 + 1e4
    elif kind == "constant":
        x = np.full(shape, 1e30)
    return x


# ---------------------------------------------------------------- layer_norm
@pytest.mark.parametrize("shape,k", SHAPES)
@pytest.mark.parametrize("kind", ["normal", "large-mean", "constant"])
def test_layer_norm_float64_bits(shape, k, kind):
    rng = np.random.default_rng(0)
    x = _data(shape, kind, rng)
    g = rng.standard_normal(shape)
    w, b = rng.standard_normal(shape[-k:]), rng.standard_normal(shape[-k:])
    for wi, bi in itertools.product((w, None), (b, None)):
        got = _numpy_nn.layer_norm_fwd(x, k, wi, bi, 1e-5)
        ref = _ref_ln_fwd(x, k, wi, bi, 1e-5)
        for a, r in zip(got, ref):
            _same_bits(a, r)
        assert got[0].flags.c_contiguous
        for need_w, need_b in itertools.product((True, False), repeat=2):
            got = _numpy_nn.layer_norm_bwd(g, x, ref[1], ref[2], wi, k, need_w, need_b)
            want = _ref_ln_bwd(g, x, ref[1], ref[2], wi, k, need_w, need_b)
            for a, r in zip(got, want):
                assert (a is None) == (r is None)
                if a is not None:
                    _same_bits(a, r)


@pytest.mark.parametrize("shape,k", SHAPES)
@pytest.mark.parametrize("kind", ["normal", "large-mean", "constant"])
def test_layer_norm_float32_values(shape, k, kind):
    rng = np.random.default_rng(1)
    x = _data(shape, kind, rng).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-k:]).astype(np.float32)
    b = rng.standard_normal(shape[-k:]).astype(np.float32)
    y, mean, rstd = _numpy_nn.layer_norm_fwd(x, k, w, b, 1e-5)
    assert y.dtype == mean.dtype == rstd.dtype == np.float32
    yr, mr, rr = _ref_ln_fwd(*(a.astype(np.float64) for a in (x,)), k, w.astype(np.float64),
                             b.astype(np.float64), 1e-5)
    _close(y, yr, 8)
    np.testing.assert_allclose(rstd, rr, rtol=3e-6)
    np.testing.assert_allclose(mean, mr, rtol=1e-6, atol=1e-6)
    if kind == "constant":  # the refined mean: the constant itself, xhat 0
        assert (mean == x.reshape(mean.shape[:x.ndim - k] + (-1,))[..., :1].reshape(
            mean.shape)).all()
        assert (y == np.broadcast_to(b, y.shape)).all()
    dx, dw, db = _numpy_nn.layer_norm_bwd(g, x, mean, rstd, w, k, True, True)
    rx, rw, rb = _ref_ln_bwd(g.astype(np.float64), x.astype(np.float64), mean, rstd,
                             w.astype(np.float64), k, True, True)
    assert dx.dtype == dw.dtype == db.dtype == np.float32
    _close(dx, rx, 8)
    np.testing.assert_allclose(dw, rw, rtol=1e-5, atol=1e-4 * np.abs(rw).max())
    np.testing.assert_allclose(db, rb, rtol=1e-5, atol=1e-5 * np.abs(rb).max())


def test_layer_norm_halves_and_general_path():
    """float16 and bfloat16 (widened to float32, C-contiguous: the row path) and strided
    or empty inputs (the general path) give the general formulas' values."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 40)).astype(np.float32)
    w, b = rng.standard_normal(40).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    for dt in (np.float16, tgrad.bfloat16.np):
        y, mean, rstd = _numpy_nn.layer_norm_fwd(x.astype(dt), 1, w.astype(dt), b.astype(dt),
                                                 1e-5)
        assert y.dtype == dt and mean.dtype == np.float32
        ref = _ref_ln_fwd(x.astype(dt).astype(np.float64), 1, w.astype(dt).astype(np.float64),
                          b.astype(dt).astype(np.float64), 1e-5)[0]
        np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-2, atol=2e-2)
    xt = np.asfortranarray(rng.standard_normal((9, 12)))
    for a, r in zip(_numpy_nn.layer_norm_fwd(xt, 1, None, None, 1e-5),
                    _ref_ln_fwd(xt, 1, None, None, 1e-5)):
        _same_bits(a, r)
    y, mean, rstd = _numpy_nn.layer_norm_fwd(np.zeros((0, 5), np.float32), 1, None, None, 1e-5)
    assert y.shape == (0, 5) and mean.shape == rstd.shape == (0, 1)


@pytest.mark.parametrize("shape,k", [((3, 5), 1), ((2, 3, 4), 2), ((1, 7), 1)])
def test_layer_norm_gradcheck(shape, k):
    rng = np.random.default_rng(3)
    x = tgrad.tensor(rng.standard_normal(shape), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(shape[-k:]), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(shape[-k:]), requires_grad=True)
    fn = lambda x, w, b: F.layer_norm(x, shape[-k:], w, b)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


# ---------------------------------------------------------------- softmax family
SM_SHAPES = [(16, 4, 32, 32), (300, 20), (7, 33), (2, 300), (5, 1), (1000, 3), (4,)]


def _sm_data(shape, rng):
    x = rng.standard_normal(shape) * 3
    if shape[-1] > 2 and x.ndim > 1 and x.shape[0] > 3:  # rows of -inf, +inf, NaN, zeros
        x[0, ..., 1] = -np.inf
        x[1, ..., :] = -np.inf
        x[2, ..., 2] = np.inf
        x[3, ..., 0] = np.nan
        x[-1, ..., :] = 0.0
        x[-1, ..., 1] = -0.0
    return x


@pytest.mark.parametrize("shape", SM_SHAPES)
def test_softmax_family_float64_bits(shape):
    rng = np.random.default_rng(4)
    x = _sm_data(shape, rng)
    g = rng.standard_normal(shape)
    y = _numpy_nn.softmax_fwd(x, -1)
    _same_bits(y, _ref_softmax(x))
    _same_bits(_numpy_nn.softmax_bwd(g, y, x.ndim - 1), _ref_softmax_bwd(g, y))
    yl = _numpy_nn.log_softmax_fwd(x, -1)
    _same_bits(yl, _ref_log_softmax(x))
    _same_bits(_numpy_nn.log_softmax_bwd(g, yl, -1), _ref_log_softmax_bwd(g, yl))


@pytest.mark.parametrize("shape", SM_SHAPES)
def test_softmax_family_float32_values(shape):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    y = _numpy_nn.softmax_fwd(x, -1)
    assert y.dtype == np.float32 and y.flags.c_contiguous
    _close(y, _ref_softmax(x64), 4)
    y64, u = y.astype(np.float64), 2.0 ** -24
    # y (g - s), s = sum(g y): within a few roundings of y (|g| + sum|g y|) (g - s cancels)
    tol = 8 * u * y64 * (np.abs(g64) + np.sum(np.abs(g64 * y64), -1, keepdims=True))
    assert (np.abs(_numpy_nn.softmax_bwd(g, y, -1) - _ref_softmax_bwd(g64, y64)) <= tol).all()
    yl = _numpy_nn.log_softmax_fwd(x, -1)
    _close(yl, _ref_log_softmax(x64), 4)
    yl64 = yl.astype(np.float64)  # g - exp(y) sum(g): a few roundings of |g| + exp(y) sum|g|
    tol = 8 * u * (np.abs(g64) + np.exp(yl64) * np.sum(np.abs(g64), -1, keepdims=True))
    assert (np.abs(_numpy_nn.log_softmax_bwd(g, yl, -1) - _ref_log_softmax_bwd(g64, yl64))
            <= tol).all()


def test_row_max_column_loop():
    """_row_max's column loop (rows of <= 32, >= 256 of them) and np.maximum.reduce agree,
    NaN rows included."""
    rng = np.random.default_rng(6)
    for r, n in ((256, 32), (300, 1), (1000, 7), (255, 32), (300, 33)):
        a = rng.standard_normal((r, n)).astype(np.float32)
        a[5, n // 2] = np.nan
        a[7] = -np.inf
        got = _numpy_nn._row_max(a)
        assert got.shape == (r, 1)
        np.testing.assert_array_equal(got, np.max(a, 1, keepdims=True))


def test_softmax_general_path_and_halves():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 10))
    for xi, axis in ((x, 0), (np.asfortranarray(x), 1), (x[:, ::2], 1)):
        ref = np.moveaxis(_ref_softmax(np.moveaxis(xi, axis, -1)), -1, axis)
        got = _numpy_nn.softmax_fwd(xi, axis)
        assert got.flags.c_contiguous
        np.testing.assert_allclose(got, ref, rtol=1e-14)
    for dt in (np.float16, tgrad.bfloat16.np):
        y = _numpy_nn.softmax_fwd(x.astype(dt), 1)
        assert y.dtype == dt
        np.testing.assert_allclose(y.astype(np.float64), _ref_softmax(x), rtol=1e-2, atol=1e-3)
    assert _numpy_nn.softmax_fwd(np.zeros((0, 4), np.float32), -1).shape == (0, 4)
    assert _numpy_nn.log_softmax_fwd(np.zeros((3, 0), np.float32), -1).shape == (3, 0)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_softmax_family_gradcheck(fn):
    rng = np.random.default_rng(8)
    for shape in ((3, 5), (300, 2)):  # (300, 2): the column-loop maximum
        x = tgrad.tensor(rng.standard_normal(shape), requires_grad=True)
        assert gradcheck(lambda x: fn(x, -1), (x,))
        assert gradgradcheck(lambda x: fn(x, -1), (x,))


# ---------------------------------------------------------------- where
def _strided(a):
    """a's values in a layout of the same shape with its last two axes swapped in memory."""
    return np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2) if a.ndim > 1 else a[::1]


@pytest.mark.parametrize("value", [True, False, None])
def test_where_one_valued_mask(value):
    """A mask of one value copies the picked operand: np.where's values, dtype and layout,
    never a view of an operand; mixed masks and other layouts go to np.where."""
    rng = np.random.default_rng(9)
    for shape, cshape in (((16, 4, 32, 32), (16, 4, 32, 1)), ((70, 80), (70, 80)),
                          ((5000,), ()), ((64, 64), (1,))):
        c = (np.full(cshape, value) if value is not None
             else rng.random(cshape) < 0.5).astype(bool)
        for a, b in ((rng.standard_normal(shape).astype(np.float32), np.float32(0)),
                     (np.asarray(np.float32(0)), rng.standard_normal(shape).astype(np.float64)),
                     (_strided(rng.standard_normal(shape)), _strided(rng.standard_normal(shape))),
                     (rng.integers(0, 9, shape), rng.standard_normal(shape).astype(np.float16)),
                     (rng.standard_normal(shape).astype(np.float16), np.float32(2)),  # scalar
                     (rng.standard_normal(shape).astype(np.float32), 2.0)):  # weak
            if isinstance(b, float):  # a Python number: np.where's NEP 50 result type
                for p, q in ((a, b), (b, a)):
                    got, want = nb.where(c, p, q), np.where(c, p, q)
                    assert got.dtype == want.dtype == np.float32
                    _same_bits(got, want)
                continue
            a = np.asarray(a)
            if b.dtype.kind == "f" and b.ndim:
                b.reshape(-1)[::7] = np.nan
            for p, q in ((a, b), (b, a)):
                got, want = nb.where(c, p, q), np.where(c, p, q)
                assert got.dtype == want.dtype and got.strides == want.strides
                _same_bits(got, want) if got.dtype.kind == "f" else \
                    np.testing.assert_array_equal(got, want)
                assert not np.shares_memory(got, p) and not np.shares_memory(got, q)


def test_where_all_false_mask_grad():
    """safe_softmax's pattern: where(empty, 0, x) with an all-false (*, L, 1) mask."""
    rng = np.random.default_rng(10)
    x = tgrad.tensor(rng.standard_normal((2, 3, 40, 50)), requires_grad=True)
    empty = tgrad.zeros((2, 3, 40, 1), dtype=tgrad.bool)
    y = tgrad.where(empty, 0.0, x)
    assert np.array_equal(y.detach().numpy(), x.detach().numpy())
    y.mul(2.0).sum().backward()
    assert (x.grad.numpy() == 2.0).all()
    # gradcheck on the same pattern at (2, 3, 4, 5) (12,000 inputs took 17 s of the suite)
    small = tgrad.tensor(rng.standard_normal((2, 3, 4, 5)), requires_grad=True)
    assert gradcheck(lambda x: tgrad.where(empty[:, :, :4], 0.0, x), (small,))


# ---------------------------------------------------------------- cross_entropy backward
@pytest.mark.parametrize("axis, shape", [(0, (7,)), (1, (5, 7)), (1, (3, 7, 4))])
def test_subtract_onehot_matches_a_full_onehot(axis, shape):
    """cross_entropy_bwd's in-place p - onehot(t): one value per row gathered and scattered;
    targets out of [0, C) (ignore_index -100, and -1, which an index would wrap) subtract
    nothing, as the one-hot mask's comparison; the bits are the full subtraction's."""
    from tgrad.backends._numpy_nn import _subtract_onehot
    rng = np.random.default_rng(3)
    c = shape[axis]
    tshape = shape[:axis] + shape[axis + 1:]
    for dt in (np.float32, np.float64):
        p = rng.uniform(0.0, 1.0, shape).astype(dt)
        p.flat[1] = np.nan
        t = rng.integers(-2, c + 2, tshape)
        if t.ndim:
            t.flat[0] = -100
        classes = np.arange(c).reshape([-1 if i == axis else 1 for i in range(len(shape))])
        want = p - (classes == np.expand_dims(t, axis))
        got = p.copy()
        _subtract_onehot(got, t, axis)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_cross_entropy_2d_gather_matches_the_along_axis_path():
    """cross_entropy on (N, C) gathers the targets' logits (and subtracts the one-hot in
    backward) by fancy indexing; (N, C, 1) takes take/put_along_axis: the same bytes,
    ignore_index rows, NaN/inf logits, every reduction."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 11)).astype(np.float32) * 4
    x[3, 2], x[5, :] = np.nan, np.inf
    t = rng.integers(0, 11, 37)
    t[::5] = -100
    for red in ("none", "mean", "sum"):
        res = []
        for xs, ts in ((x, t), (x[:, :, None], t[:, None])):
            xt = tgrad.tensor(xs, requires_grad=True)
            y = F.cross_entropy(xt, tgrad.tensor(ts), reduction=red)
            y.backward(tgrad.ones_like(y) * 0.3)
            res.append((y.detach().numpy().tobytes(), xt.grad.numpy().tobytes()))
        assert res[0] == res[1], red
