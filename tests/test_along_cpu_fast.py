"""The CPU paths of gather / take_along_dim / scatter / scatter_add / put on the key's flat
positions (tgrad/backends/_numpy_along.py): values against NumPy references (float64,
repeated indices summing in C order, the last write winning), empty and non-contiguous
inputs, every dtype, the graph under create_graph, gradcheck / gradgradcheck."""

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_along as al

rng = np.random.default_rng(7)


def _t(a, **kw):
    return tgrad.tensor(a, **kw)


@pytest.mark.parametrize("shape,dim,ishape", [((7, 9), 1, (5, 4)), ((40, 50), 0, (60, 50)),
                                              ((3, 4, 5), 2, (3, 2, 9)), ((6,), 0, (20,)),
                                              ((64, 64), 1, (64, 40))])
def test_flat_positions_match_take_along_axis_and_sums(shape, dim, ishape):
    x = rng.standard_normal(shape)
    idx = rng.integers(0, shape[dim], ishape)
    key, flat = al.key_and_flat(shape, dim, idx)
    assert np.array_equal(al.take(x, flat), x[key])
    g = rng.standard_normal(ishape)
    want = np.zeros(shape)
    np.add.at(want, key, g)
    assert np.array_equal(al.add_at(shape, np.dtype(np.float64), flat, g), want)
    w = x.copy()
    w[key] = g
    assert np.array_equal(al.written(x, flat, g), w)


def test_gather_scatter_values_dtypes_noncontiguous():
    x64 = rng.standard_normal((9, 12))
    idx = rng.integers(0, 9, (12, 5))  # repeats
    for dt in (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.complex64, tgrad.int32,
               tgrad.int64, tgrad.bool):
        x = _t(x64).to(dt).mT  # (12, 9), non-contiguous
        ix = _t(idx.T.copy()).mT  # (12, 5), a transposed (non-contiguous) index
        xn = x.numpy()
        got = tgrad.gather(x, 1, ix).numpy()
        assert np.array_equal(got, np.take_along_axis(xn, idx, 1))
        src = tgrad.gather(x, 1, _t(rng.integers(0, 9, (12, 5))))
        out = tgrad.scatter(x, 1, ix, src).numpy()
        ref = xn.copy()
        for i in range(12):
            for j in range(5):  # the last write in C order stays
                ref[i, idx[i, j]] = src.numpy()[i, j]
        assert np.array_equal(out, ref)


def test_scatter_add_and_put_sum_in_c_order_with_nan_and_negative_zero():
    x = np.full((4, 6), -0.0, np.float32)
    x[0, 0] = np.nan
    idx = rng.integers(0, 6, (4, 30))
    src = rng.standard_normal((4, 30)).astype(np.float32)
    src[1, :3] = -0.0
    out = tgrad.scatter_add(_t(x), 1, _t(idx), _t(src)).numpy()
    acc = np.zeros_like(x)
    for i in range(4):
        for j in range(30):
            acc[i, idx[i, j]] += src[i, j]
    want = x + acc  # (x is -0.0 but for one NaN: the sums' order does not round here)
    assert np.array_equal(want, out, equal_nan=True)
    finite = ~np.isnan(want)  # -0.0 where nothing (or only -0.0) was added, as NumPy's
    assert np.array_equal(np.signbit(want[finite]), np.signbit(out[finite]))
    ip = rng.integers(-24, 24, 200)
    sp = rng.standard_normal(200).astype(np.float32)
    got = tgrad.put(_t(x), _t(ip), _t(sp), accumulate=True).numpy().reshape(-1)
    acc = np.zeros(24, np.float32)
    for k, v in zip(ip, sp):
        acc[k % 24] += v
    assert np.array_equal(x.reshape(-1) + acc, got, equal_nan=True)
    got = tgrad.put(_t(x), _t(ip), _t(sp)).numpy().reshape(-1)
    ref = x.reshape(-1).copy()
    ref[ip] = sp
    assert np.array_equal(ref, got, equal_nan=True)


def test_empty_and_zero_d():
    x = tgrad.zeros(0, 3, requires_grad=True)
    out = tgrad.gather(x.mT, 1, tgrad.zeros(3, 0, dtype=tgrad.int64))
    assert out.shape == (3, 0)
    out.sum().backward()
    assert x.grad.shape == (0, 3)
    y = tgrad.gather(tgrad.tensor(2.0), 0, tgrad.tensor([0, 0]))
    assert isinstance(y.numpy(), np.ndarray) and y.tolist() == [2.0, 2.0]


def test_grads_and_graph():
    x = _t(rng.standard_normal((5, 7)), requires_grad=True)
    s = _t(rng.standard_normal((5, 9)), requires_grad=True)
    sp = _t(rng.standard_normal(30), requires_grad=True)
    idx = _t(rng.integers(0, 7, (5, 9)))
    ip = _t(rng.integers(-35, 35, 30))
    once = _t(rng.permutation(35)[:20] - 35 * (np.arange(20) % 2))  # distinct, negatives
    perm = _t(np.argsort(rng.random((5, 7)), axis=1)[:, :5])  # (no repeats: scatter's grad)
    fns = [lambda x, s: tgrad.gather(x, 1, idx), lambda x, s: tgrad.scatter(x, 1, perm, s),
           lambda x, s: tgrad.scatter_add(x, 1, idx, s),
           lambda x, s: tgrad.take_along_dim(x, idx - 7 * (idx % 2), 1)]
    for f in fns:
        assert gradcheck(f, (x, s)) and gradgradcheck(f, (x, s))
    for acc in (False, True):
        def fp(x, sp, acc=acc):
            return tgrad.put(x, once if not acc else ip, sp[:20] if not acc else sp,
                             accumulate=acc)
        assert gradcheck(fp, (x, sp)) and gradgradcheck(fp, (x, sp))
    y = tgrad.scatter(x, 1, perm, s)
    assert y.grad_fn.name() == "ScatterBackward0"
    (gx,) = tgrad.autograd.grad((y * y).sum(), x, create_graph=True)
    assert gx.grad_fn is not None and gx.grad_fn.name() == "ScatterBackward1"
    y = tgrad.gather(x, 1, idx)
    (gx,) = tgrad.autograd.grad((y * y).sum(), x, create_graph=True)
    assert gx.grad_fn is not None
