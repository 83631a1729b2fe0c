"""batch_norm's blocked CPU path (tgrad/backends/_numpy_nn.py ``_bn_fwd_blocked`` /
``_bn_bwd_blocked``: C-contiguous float32/float64 (N, C, *) with C >= 2, float32 N <= 128)
against the unblocked formulas it replaces (kept below as the reference): the same
values bit for bit (NaN positions included; which NaN's sign an operation on two NaNs
returns is NumPy's loop's choice and may differ), one span or many (the block size
monkeypatched small), odd sizes, None weight / bias, every needs-grad combination,
float16 through float32; plus the values against a float64 reference, the fallbacks
(non-contiguous, C = 1, N > 128), empty batches, gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_nn


# ---------------------------------------------------------------- the unblocked reference
def _axes(x):
    c = x.shape[1]
    return (0,) + tuple(range(2, x.ndim)), (c,) + (1,) * (x.ndim - 2), x.size // c


def _up(a):
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _ref_fwd(x, w, b, eps):
    xf = _up(x)
    axes, shape, m = _axes(x)
    with np.errstate(all="ignore"):
        mean = _numpy_nn._bn_sum(xf, axes) / xf.dtype.type(m)
        y = np.subtract(xf, mean.reshape(shape), order="C")
        var = _numpy_nn._bn_sum(np.square(y), axes) / xf.dtype.type(m)
        invstd = 1.0 / np.sqrt(var + xf.dtype.type(eps))
        scale = invstd if w is None else invstd * _up(w).astype(xf.dtype)
        np.multiply(y, scale.reshape(shape), out=y)
        if b is not None:
            np.add(y, _up(b).astype(xf.dtype).reshape(shape), out=y)
    return y.astype(x.dtype), mean, var, invstd


def _ref_bwd(g, x, w, mean, invstd, training, need_x, need_w, need_b):
    gf, xf = _up(g), _up(x)
    axes, shape, m = _axes(x)
    pdt = w.dtype if w is not None else gf.dtype
    training = training and need_x
    with np.errstate(all="ignore"):
        scale = invstd if w is None else invstd * _up(w).astype(xf.dtype)
        sum_g = _numpy_nn._bn_sum(gf, axes) if need_b or training else None
        dx = sum_gxc = None
        if need_w or training:
            xc = xf - mean.reshape(shape)
            t = gf * xc
            sum_gxc = _numpy_nn._bn_sum(t, axes)
            if training:
                k = scale * invstd * invstd * sum_gxc / xf.dtype.type(m)
                dx = (gf - (sum_g / xf.dtype.type(m)).reshape(shape)) * scale.reshape(shape)
                dx = dx - xc * k.reshape(shape)
        if need_x and dx is None:
            dx = gf * scale.reshape(shape)
    dw = (sum_gxc * invstd).astype(pdt) if need_w and w is not None else None
    db = sum_g.astype(pdt) if need_b else None
    return None if dx is None else dx.astype(x.dtype), dw, db


def _same(a, b) -> bool:
    """Equal dtype, shape and bits, NaN positions equal (any NaN bits)."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    return bool(np.array_equal(na, nb)) and np.array_equal(
        np.where(na, 0, a).astype(a.dtype).tobytes(), np.where(nb, 0, b).astype(b.dtype).tobytes())


def _data(shape, dt, seed, specials=False):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dt)
    g = rng.standard_normal(shape).astype(dt)
    if specials and x.size > 8:
        x.flat[3] = np.nan
        g.flat[5] = np.inf
        g.flat[7] = -0.0
        x.flat[x.size - 1] = -0.0
    pdt = np.float32 if dt == np.float16 else dt
    w = rng.standard_normal(shape[1]).astype(pdt)
    b = rng.standard_normal(shape[1]).astype(pdt)
    return x, g, w, b


SHAPES = [(4, 3, 5, 7), (7, 2, 33), (2, 5, 3, 4, 3), (1, 4, 9, 9), (3, 6, 1, 1), (128, 2, 3),
          (2, 3, 40, 50)]  # (the last: planes of 6000 > 40 / 2, v (C, 1) with block 40)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("block", [None, 1, 40])
def test_blocked_batch_norm_is_bit_identical_to_the_unblocked_formulas(monkeypatch, dt, block):
    if block is not None:  # many spans (one sample or a few per block)
        monkeypatch.setattr(_numpy_nn, "_BN_BLOCK", block)
    calls = []
    fwd = _numpy_nn._bn_fwd_blocked
    monkeypatch.setattr(_numpy_nn, "_bn_fwd_blocked", lambda *a: calls.append(1) or fwd(*a))
    for i, shape in enumerate(SHAPES):
        for specials in (False, True):
            x, g, w, b = _data(shape, dt, i, specials)
            for ww, bb in ((w, b), (None, None), (w, None)):
                ref = _ref_fwd(x, ww, bb, 1e-5)
                got = _numpy_nn.batch_norm_fwd(x, ww, bb, None, None, 1e-5)
                assert all(_same(r, o) for r, o in zip(ref, got)), (shape, specials)
                mean, invstd = ref[1], ref[3]
                for flags in itertools.product((True, False), repeat=4):
                    r = _ref_bwd(g, x, ww, mean, invstd, *flags)
                    o = _numpy_nn.batch_norm_bwd(g, x, ww, mean, invstd, *flags)
                    assert all(_same(u, v) for u, v in zip(r, o)), (shape, specials, flags)
    assert len(calls) == len(SHAPES) * 2 * 3  # (every shape took the blocked path)


def test_blocked_batch_norm_fallbacks_match_the_reference():
    """C = 1 (NumPy reduces (N, 1, S) as one run), float32 N > 128 (float_sum cascades),
    non-contiguous x or g: the unblocked code, the same values."""
    assert not _numpy_nn._bn_blocked(np.zeros((4, 1, 5), np.float32))
    assert not _numpy_nn._bn_blocked(np.zeros((129, 2, 5), np.float32))
    assert _numpy_nn._bn_blocked(np.zeros((129, 2, 5), np.float64))
    x, g, w, b = _data((5, 3, 6, 4), np.float32, 0)
    xt = np.swapaxes(x, 2, 3)
    assert not _numpy_nn._bn_blocked(xt)
    for xx, gg in ((x[:, :, :, ::2], g[:, :, :, ::2]), (np.ascontiguousarray(xt), xt),
                   (x[:, :1], g[:, :1]), (_data((130, 2, 3), np.float32, 1)[0],
                                          _data((130, 2, 3), np.float32, 2)[0])):
        ww, bb = w[:xx.shape[1]], b[:xx.shape[1]]
        ref = _ref_fwd(xx, ww, bb, 1e-5)
        assert all(_same(r, o) for r, o in
                   zip(ref, _numpy_nn.batch_norm_fwd(xx, ww, bb, None, None, 1e-5)))
        r = _ref_bwd(gg, xx, ww, ref[1], ref[3], True, True, True, True)
        o = _numpy_nn.batch_norm_bwd(gg, xx, ww, ref[1], ref[3], True, True, True, True)
        assert all(_same(u, v) for u, v in zip(r, o))


@pytest.mark.parametrize("shape", [(32, 16, 32, 32), (32, 32, 16, 16), (3, 5, 7, 9)])
def test_blocked_batch_norm_against_float64(shape):
    """The float32 outputs within a few ulps of the float64 maths (the formulas')."""
    x, g, w, b = _data(shape, np.float32, 3)
    y, mean, var, invstd = _numpy_nn.batch_norm_fwd(x, w, b, None, None, 1e-5)
    dx, dw, db = _numpy_nn.batch_norm_bwd(g, x, w, mean, invstd, True, True, True, True)
    xd, gd, wd, bd = (a.astype(np.float64) for a in (x, g, w, b))
    axes, shape_c, m = _axes(x)
    md = xd.mean(axes)
    vd = ((xd - md.reshape(shape_c)) ** 2).mean(axes)
    isd = 1 / np.sqrt(vd + 1e-5)
    xhat = (xd - md.reshape(shape_c)) * isd.reshape(shape_c)
    yd = xhat * wd.reshape(shape_c) + bd.reshape(shape_c)
    dbd = gd.sum(axes)
    dwd = (gd * xhat).sum(axes)
    dxd = (wd * isd).reshape(shape_c) / m * (m * gd - dbd.reshape(shape_c)
                                             - xhat * dwd.reshape(shape_c))
    for got, want in ((y, yd), (mean, md), (var, vd), (dx, dxd), (dw, dwd), (db, dbd)):
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert err < 2e-6, err


def test_batch_norm_blocked_through_the_op_and_empty_batches():
    x, g, w, b = _data((6, 3, 5, 4), np.float32, 4)
    xt = tgrad.tensor(x, requires_grad=True)
    wt, bt = tgrad.tensor(w, requires_grad=True), tgrad.tensor(b, requires_grad=True)
    rm, rv = tgrad.zeros(3), tgrad.ones(3)
    y = F.batch_norm(xt, rm, rv, wt, bt, training=True)
    y.backward(tgrad.tensor(g))
    ref = _ref_fwd(x, w, b, 1e-5)
    assert _same(y.detach().numpy(), ref[0])
    r = _ref_bwd(g, x, w, ref[1], ref[3], True, True, True, True)
    for got, want in zip((xt.grad, wt.grad, bt.grad), r):
        assert _same(got.numpy(), want)
    # running statistics: (1 - 0.1) r + 0.1 s, s the unbiased variance
    m = x.size // 3
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * ref[2] * m / (m - 1), rtol=1e-6)
    e = tgrad.zeros((0, 3, 4, 4), requires_grad=True)
    ye = F.batch_norm(e, None, None, training=True)
    assert ye.shape == (0, 3, 4, 4)
    ye.sum().backward()
    assert e.grad.shape == (0, 3, 4, 4)


def test_batch_norm_blocked_gradcheck_gradgradcheck():
    rng = np.random.default_rng(5)
    x = tgrad.tensor(rng.standard_normal((3, 4, 3, 2)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(4), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(4), requires_grad=True)

    def f(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_blocked_batch_norm_scratch_is_kept_and_private():
    """The scratch block comes from (and goes back to) the CPU workspace; no output or
    gradient shares memory with a kept array."""
    from tgrad.backends._workspace import WORKSPACE
    WORKSPACE.clear()
    x, g, w, b = _data((8, 4, 6, 5), np.float32, 6)
    y, mean, var, invstd = _numpy_nn.batch_norm_fwd(x, w, b, None, None, 1e-5)
    outs = [y, *_numpy_nn.batch_norm_bwd(g, x, w, mean, invstd, True, True, True, True)]
    kept = [a for key, arrays in WORKSPACE._kept.items() if key[0] == _numpy_nn._BN_TAG
            for a in arrays]
    assert len(kept) == 1 and kept[0].shape == (8, 4, 6 * 5)
    assert not any(np.shares_memory(o, k) for o in outs for k in kept)
    y2 = _numpy_nn.batch_norm_fwd(x, w, b, None, None, 1e-5)[0]  # (the kept one reused)
    assert y2.tobytes() == y.tobytes()
    WORKSPACE.clear()


def test_blocked_batch_norm_threads_share_the_workspace():
    """Threads running batch_norm (forward + backward) of one blocked shape at once each
    take their own scratch block: every result is the sequential one bit for bit, and no
    output or gradient shares memory with an array kept in the workspace."""
    import threading

    from tgrad.backends._workspace import WORKSPACE

    def step(x, g, w, b):
        xt = tgrad.tensor(x, requires_grad=True)
        wt, bt = tgrad.tensor(w, requires_grad=True), tgrad.tensor(b, requires_grad=True)
        y = F.batch_norm(xt, None, None, wt, bt, training=True)
        y.backward(tgrad.tensor(g))
        return [a.numpy() for a in (y.detach(), xt.grad, wt.grad, bt.grad)]

    data = [_data((16, 4, 24, 24), np.float32, 20 + i) for i in range(4)]
    want = [[a.tobytes() for a in step(*d)] for d in data]
    got, errors = {}, []

    def work(i):
        try:
            for r in range(5):
                got[i, r] = step(*data[i])
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 20
    kept = [a for arrays in WORKSPACE._kept.values() for a in arrays]
    for (i, _), outs in got.items():
        assert [a.tobytes() for a in outs] == want[i]
        assert not any(np.shares_memory(o, k) for o in outs for k in kept)
