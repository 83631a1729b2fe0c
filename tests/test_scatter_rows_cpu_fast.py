"""The NumPy backend's whole-slice accumulation (tgrad/backends/_numpy_scatter.py
``rows_at``, taken by ``index_add`` / ``index_reduce`` for a key of full slices and one 1-D
index array: index_add, index_select's and x[idx]'s backward, index_put with one index)
against ``ufunc.at`` (the path it replaces, the order every other key still takes):
bit-identical (NaN payloads, +-inf, +-0 included; where two NaN-making operands meet,
which NaN payload survives is NumPy's loop's choice, so there any NaN passes) over many
repeats, float / complex / int / bool dtypes, sizes 1, 17 and 1025, leading and trailing
dims, negative indices, non-contiguous values, targets never hit and every target hit;
the thresholds that route small cases to ufunc.at; gradcheck and gradgradcheck in float64
through the ops with the path forced (the thresholds monkeypatched to zero)."""

from __future__ import annotations

import numpy as np
import pytest
from special_values import mixed_specials, raw_bytes

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_scatter
from tgrad.backends import numpy as be


def _values(shape: tuple, dt, seed: int) -> np.ndarray:
    """Normals with +-0, NaNs with payloads and +-inf (floats); small ints; random bools."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.3
    if dt.kind in "iu":
        return rng.integers(-50 if dt.kind == "i" else 0, 50, shape).astype(dt)
    if dt.kind == "c":  # (inf * 1j: NaN real parts, quietly)
        with np.errstate(invalid="ignore"):
            return _values(shape, np.float32 if dt == np.complex64 else np.float64, seed) + \
                1j * _values(shape, np.float32 if dt == np.complex64 else np.float64, seed + 1)
    return mixed_specials(shape, dt, rng, cuts=(0.15, 0.2, 0.22, 0.24, 0.26))


def _same(out: np.ndarray, ref: np.ndarray, key, v: np.ndarray) -> bool:
    """Bit for bit, except at a target both NaN with two or more NaN-making operands
    (NaN, +-inf, and 0 for products): which payload a NaN op NaN keeps depends on NumPy's
    loop (the ufunc.at loop, the vector loop and its remainder differ)."""
    if out.dtype.kind not in "fc" or not v.size:
        return raw_bytes(out) == raw_bytes(ref)
    parts = v.view(np.float32 if v.dtype == np.complex64 else np.float64) \
        if v.dtype.kind == "c" else v
    special = (~np.isfinite(parts) | (parts == 0)).reshape(
        v.shape + (-1,)).sum(-1).astype(np.int64)
    count = np.zeros(out.shape, np.int64)
    _flat_at(np.add, count, key, special)
    loose = (count >= 2) & np.isnan(out) & np.isnan(ref)
    return raw_bytes(np.where(loose, 0, out)) == raw_bytes(np.where(loose, 0, ref))


def _flat_at(ufunc: np.ufunc, out: np.ndarray, key, v: np.ndarray) -> None:
    """The path replaced: ufunc.at over the flat C-order positions of ``key`` (what
    be._ufunc_at runs above 1024 elements, as every size this path takes unforced; NumPy's
    ufunc.at with a tuple key may keep the other payload of a NaN op NaN)."""
    ufunc.at(out.reshape(-1), be._flat_index(out.shape, key).reshape(-1), v.reshape(-1))


@pytest.fixture
def forced(monkeypatch):
    """The path taken for any size (the thresholds at zero)."""
    monkeypatch.setattr(_numpy_scatter, "_MIN_FIXED", 0)
    monkeypatch.setattr(_numpy_scatter, "_MIN_PER_RANK", 0)
    monkeypatch.setattr(_numpy_scatter, "_MIN_SLICE", 1)


# (out shape, dim, index length, index high (None: the dim's size), ...)
CASES = [
    ((17, 1025), 0, 40, None),  # many repeats
    ((1, 1025), 0, 33, None),  # one target: 33 ranks
    ((1025, 17), 0, 2000, None),
    ((4, 17, 33), 1, 60, 5),  # a leading dim; targets 5..16 never hit
    ((3, 17, 1), 1, 17, None),
    ((17,), 0, 1025, None),
    ((2, 5, 3, 7), 2, 9, None),
    ((6, 8), 0, 6, "perm"),  # every target once: the whole-out write
    ((6, 8), 0, 0, None),  # no index: ufunc.at (nothing to add)
]


def _case(shape, dim, m, high, seed):
    rng = np.random.default_rng(seed)
    n = shape[dim]
    if high == "perm":
        idx = rng.permutation(n)[:m]
    else:
        idx = rng.integers(0, n if high is None else high, m)
    key = (slice(None),) * dim + (idx,)
    vshape = shape[:dim] + (m,) + shape[dim + 1:]
    return idx, key, vshape


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.int64, np.int32,
                                np.bool_])
@pytest.mark.parametrize("case", CASES)
def test_rows_at_matches_add_at(forced, case, dt):
    shape, dim, m, high = case
    idx, key, vshape = _case(shape, dim, m, high, 1)
    v = _values(vshape, dt, 2)
    ref = np.zeros(shape, dt)
    out = np.zeros(shape, dt)
    with np.errstate(all="ignore"):
        _flat_at(np.add, ref, key, v)
        done = _numpy_scatter.rows_at(np.add, out, key, v, out.dtype.type(0))
    assert done == (m > 0)
    if not done:
        np.add.at(out, key, v)
    assert _same(out, ref, key, v)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("case", CASES[:5])
def test_index_reduce_matches_ufunc_at(forced, case, dt, reduce):
    shape, dim, m, high = case
    _, key, vshape = _case(shape, dim, m, high, 3)
    v = _values(vshape, dt, 4)
    ufunc = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    if reduce == "prod":
        init = 1
    elif np.dtype(dt).kind == "i":
        init = np.iinfo(dt).min if reduce == "amax" else np.iinfo(dt).max
    else:
        init = -np.inf if reduce == "amax" else np.inf
    ref = np.full(shape, init, dt)
    with np.errstate(all="ignore"):
        _flat_at(ufunc, ref, key, v)
        got = be.index_reduce(shape, np.dtype(dt), key, v, reduce)
    assert _same(got, ref, key, v)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.int64])
def test_index_add_default_thresholds(monkeypatch, dt):
    """The bench shape (512 rows of 256 into 256, the path taken unforced) and a small case
    (routed to ufunc.at), bit for bit against ufunc.at; negative indices; a
    non-contiguous (transposed) value array."""
    rng = np.random.default_rng(5)
    idx = rng.integers(-256, 256, 512)
    v = np.ascontiguousarray(_values((256, 512), dt, 6).T)[:, ::1]
    vt = _values((256, 512), dt, 6).T  # the same values, a transposed view
    calls = []
    real = _numpy_scatter.rows_at
    monkeypatch.setattr(_numpy_scatter, "rows_at", lambda *a: calls.append(real(*a))
                        or calls[-1])
    with np.errstate(all="ignore"):
        got = be.index_add((256, 256), np.dtype(dt), (idx,), v)
        got_t = be.index_add((256, 256), np.dtype(dt), (idx,), vt)
        small = be.index_add((256, 8), np.dtype(dt), (idx,), v[:, :8])
        assert calls == [True, True, False]
        cd = be.compute_dtype(np.dtype(dt))
        ref = np.zeros((256, 256), cd)
        _flat_at(np.add, ref, (idx,), v.astype(cd))
        ref_small = np.zeros((256, 8), cd)
        _flat_at(np.add, ref_small, (idx,), v[:, :8].astype(cd))
    assert raw_bytes(got) == raw_bytes(got_t) == raw_bytes(ref.astype(dt))
    assert raw_bytes(small) == raw_bytes(ref_small.astype(dt))


def test_ops_bit_identical(monkeypatch):
    """index_add, index_select's backward, x[idx]'s backward and index_put(accumulate) at
    the bench sizes: the same bits with the path and without it (ufunc.at)."""
    rng = np.random.default_rng(7)
    xn = _values((256, 256), np.float32, 8)
    sn = _values((512, 256), np.float32, 9)
    i = tgrad.tensor(rng.integers(0, 256, 512))

    def run():
        x = tgrad.tensor(xn, requires_grad=True)
        s = tgrad.tensor(sn, requires_grad=True)
        a = tgrad.index_add(x, 0, i, s)
        b = tgrad.index_put(x, (i,), s, accumulate=True)
        (tgrad.index_select(x, 0, i) * s).sum().backward()
        gx = x.grad.numpy().copy()
        x.grad = None
        (x[i] * s).sum().backward()
        return [a.detach().numpy(), b.detach().numpy(), gx, x.grad.numpy()]

    with np.errstate(all="ignore"):
        new = run()
        monkeypatch.setattr(_numpy_scatter, "rows_at", lambda *a: False)
        old = run()
    for p, q in zip(new, old):
        assert raw_bytes(p) == raw_bytes(q)


def test_empty_and_zero_rows(forced):
    assert not _numpy_scatter.rows_at(np.add, np.zeros((3, 0)), (np.array([0, 1]),),
                                      np.zeros((2, 0)), 0.0)
    out = tgrad.index_add(tgrad.zeros(3, 0), 0, tgrad.tensor([0, 2, 0]), tgrad.zeros(3, 0))
    assert out.shape == (3, 0)
    out = tgrad.index_add(tgrad.ones(3, 4), 0, tgrad.tensor([], dtype=tgrad.int64),
                          tgrad.zeros(0, 4))
    assert np.array_equal(out.numpy(), np.ones((3, 4), np.float32))


@pytest.mark.parametrize("dim", [0, 1])
def test_gradcheck_forced(forced, dim):
    rng = np.random.default_rng(10)
    x = tgrad.tensor(rng.standard_normal((4, 5, 3)), requires_grad=True)
    i = tgrad.tensor(np.array([1, 0, 1, 3, 1, 0, 4][:6 if dim else 7]) % x.shape[dim])
    sshape = list(x.shape)
    sshape[dim] = i.numel()
    s = tgrad.tensor(rng.standard_normal(sshape), requires_grad=True)

    def f(x, s):
        return tgrad.index_add(x, dim, i, s, alpha=1.5) * tgrad.index_add(x, dim, i, s)

    def g(x):
        return tgrad.index_select(x, dim, i) ** 2

    def h(x, s):
        return tgrad.index_put(x, (i,), s, accumulate=True) ** 2

    def k(x):
        return x[:, i] ** 3 if dim else x[i] ** 3

    cases = [(f, (x, s)), (g, (x,)), (k, (x,))] + ([(h, (x, s))] if dim == 0 else [])
    for fn, args in cases:
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)


# (out shape, dim, index shape): an n-d index at one dim (embedding's (B, T) input), flattened
# in C order by _whole_slice_key; an empty one
ND_CASES = [((17, 65), 0, (4, 30)), ((3, 17, 5), 1, (2, 3, 4)), ((9, 2), 0, (3, 1, 7)),
            ((5, 8), 0, (0, 3))]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.int64])
@pytest.mark.parametrize("case", ND_CASES)
def test_rows_at_with_an_nd_index_matches_add_at(forced, case, dt):
    shape, dim, ishape = case
    rng = np.random.default_rng(11)
    idx = rng.integers(-shape[dim], shape[dim], ishape)  # (negatives count from the end)
    key = (slice(None),) * dim + (idx,)
    v = _values(shape[:dim] + ishape + shape[dim + 1:], dt, 12)
    ref = np.zeros(shape, dt)
    out = np.zeros(shape, dt)
    with np.errstate(all="ignore"):
        _flat_at(np.add, ref, key, v)
        done = _numpy_scatter.rows_at(np.add, out, key, v, out.dtype.type(0))
    assert done == (idx.size > 0)
    if not done:
        np.add.at(out, key, v)
    assert _same(out, ref, key, v)
