"""The NumPy backend's shortcuts around NumPy's Python wrappers give exactly what the
wrapped NumPy functions give: ``expand`` (np.broadcast_to), ``sum_`` (np.sum) and ``mean``
(np.mean), bit for bit, over dtypes, axes, keepdim, odd sizes and special values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tgrad
from tgrad.backends import numpy as nb

EXPAND_CASES = [((), (5,)), ((1,), (4,)), ((3,), (2, 3)), ((2, 1), (2, 5)), ((1, 3), (4, 2, 3)),
                ((0,), (3, 0)), ((1, 0), (2, 0)), ((2, 3), (2, 3)), ((), ()), ((1, 1), (0, 1)),
                ((1, 1), (3, 1)), ((17, 1), (2, 17, 1025))]


@pytest.mark.parametrize("src,shape", EXPAND_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "sliced"])
def test_numpy_backend_expand_is_broadcast_to(src, shape, layout):
    # the backend builds stride-0 views of contiguous arrays itself: the same read-only view
    # np.broadcast_to gives (same elements, same strides where a dim has more than one)
    rng = np.random.default_rng(0)
    base = rng.standard_normal(src if layout == "contiguous" else src + (2,))
    x = base if layout == "contiguous" else base[..., 0]
    got, want = nb.expand(x, shape), np.broadcast_to(x, shape)
    assert got.shape == want.shape and np.array_equal(got, want)
    assert not got.flags.writeable and np.shares_memory(got, x) or got.size == 0
    assert [s for s, n in zip(got.strides, shape) if n > 1] == \
        [s for s, n in zip(want.strides, shape) if n > 1]
    x[...] = 7.0  # a view, not a copy
    assert np.all(got == 7.0)


@pytest.mark.parametrize("src,shape", [((2,), (3,)), ((2, 3), (3,)), ((2,), (2, 3))])
def test_numpy_backend_expand_rejects_what_broadcast_to_rejects(src, shape):
    with pytest.raises(ValueError):
        nb.expand(np.zeros(src), shape)
    with pytest.raises(RuntimeError, match="expanded size|number of sizes"):
        tgrad.zeros(src).expand(*shape)



REDUCE_CASES = [((64,), None, False), ((17, 1025), (1,), False), ((17, 1025), (0,), True),
                ((3, 4, 5), (0, 2), False), ((1023,), None, True), ((), None, False),
                ((1,), (0,), False), ((2, 0, 3), (0,), False)]
DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


@pytest.mark.parametrize("shape,axes,keepdim", REDUCE_CASES)
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sum_and_mean_are_bit_identical_to_numpy(shape, axes, keepdim, dt):
    rng = np.random.default_rng(3)
    for scale in (1e-3, 1.0, 1e4):
        x = (rng.standard_normal(shape) * scale).astype(dt)
        if x.size > 3:
            x.reshape(-1)[:3] = [np.inf, np.nan, -np.inf] if scale == 1.0 else x.reshape(-1)[:3]
        cd = np.float32 if np.dtype(dt).itemsize == 2 else dt  # halves accumulate in float32
        with np.errstate(all="ignore"):
            want_sum = np.asarray(np.sum(x, axis=axes, dtype=cd, keepdims=keepdim)).astype(dt)
            want_mean = np.asarray(np.mean(x.astype(cd), axis=axes, keepdims=keepdim)).astype(dt)
        for got, want in ((nb.sum_(x, axes, keepdim), want_sum),
                          (nb.mean(x, axes, keepdim), want_mean)):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want, equal_nan=True)


def test_integer_sum_is_int64_and_reductions_do_not_warn():
    assert nb.sum_(np.array([1, 2, 3], np.int32), None, False).dtype == np.int64
    assert nb.sum_(np.array([True, True]), None, False) == 2
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(nb.sum_(np.array([np.inf, -np.inf], np.float32), None, False))
        assert np.isinf(nb.sum_(np.array([6e4, 6e4], np.float16), None, False))
        assert np.isnan(nb.mean(np.array([np.inf, -np.inf]), None, False))
        assert np.isnan(nb.mean(np.zeros((0,), np.float32), None, False))


def test_casts_that_overflow_or_meet_nan_do_not_warn():
    # PyTorch converts silently: a bfloat16 past float16's range is inf, NaN to an integer
    # is whatever the conversion gives (no RuntimeWarning from NumPy)
    import warnings

    import ml_dtypes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = nb.cast(np.array([1e5, -7e4, 2.0], ml_dtypes.bfloat16), np.dtype(np.float16))
        assert h.dtype == np.float16 and h.tolist() == [np.inf, -np.inf, 2.0]
        assert nb.cast(np.array([3e38]), np.dtype(np.float32)) == np.float32(3e38)
        assert np.isinf(nb.cast(np.array([1e39]), np.dtype(np.float32))).all()
        assert nb.cast(np.array([np.nan, 2.5], np.float32), np.dtype(np.int64))[1] == 2


@pytest.mark.parametrize("layout", ["c", "transposed", "strided"])
def test_gather_along_a_later_dim_is_c_contiguous_and_matches_numpy(layout):
    # index_select along dim 2 (im2col's columns) goes through np.take: NumPy's x[:, :, idx]
    # values, in a C-contiguous array of the result's shape
    rng = np.random.default_rng(0)
    base = rng.standard_normal((3, 4, 10)).astype(np.float32)
    x = {"c": base, "transposed": base.transpose(1, 0, 2).copy().transpose(1, 0, 2),
         "strided": np.repeat(base, 2, 2)[:, :, ::2]}[layout]
    idx = np.array([9, 0, 0, -1, 4])
    for key in ((slice(None), slice(None), idx), (slice(None), (idx % 4)[:, None].repeat(2, 1))):
        out = nb.gather(x, key)
        ref = x[key]
        assert out.flags.c_contiguous and out.shape == ref.shape and out.dtype == ref.dtype
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, ml_dtypes.bfloat16])
def test_index_add_without_integer_arrays_is_zeros_plus_values(dt):
    # masks/slices/ints select each position once: an assignment, then + 0 (-0.0 reads 0.0,
    # as 0 + -0.0 does); integer arrays still add their repeats up
    x = np.array([[-0.0, 1.5, np.inf], [np.nan, -2.0, 3.0]]).astype(dt)
    mask = np.array([[True, False, True], [True, True, False]])
    out = nb.index_add(x.shape, x.dtype, (mask,), x[mask])
    ref = np.zeros(x.shape, np.float64).astype(dt)
    ref[mask] = x[mask]
    np.testing.assert_array_equal(out, ref)
    assert not np.signbit(np.real(out[0, 0]).astype(np.float64))  # 0 + -0.0 = 0.0
    out = nb.index_add((3,), x.dtype, (np.array([2, 0, 2]),), np.array([1.0, 2.0, 3.0]).astype(dt))
    np.testing.assert_array_equal(out, np.array([2.0, 0.0, 4.0]).astype(dt))


def _index_add_by_loop(shape, dtype, key, values):
    """The reference: every position of out[key] (enumerated by indexing an array of the
    positions themselves) gets its value added, in C order, one at a time."""
    out = np.zeros(shape, dtype)
    positions = np.arange(out.size).reshape(shape)[key]
    flat = out.reshape(-1)
    for p, v in zip(positions.reshape(-1), np.broadcast_to(values, positions.shape).reshape(-1)):
        flat[p] += v
    return out


@pytest.mark.parametrize("key_of", [
    lambda r: (r.integers(-7, 7, 3000),),                               # one dim, negatives
    lambda r: (r.integers(0, 7, (50, 60)), slice(None), r.integers(0, 9, (50, 60))),  # split
    lambda r: (slice(1, 6, 2), r.integers(0, 5, 2000), r.integers(-9, 9, 2000)),      # adjacent
    lambda r: (r.integers(0, 7, (40, 1)), r.integers(0, 5, (1, 40)), 3),              # broadcast
])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.complex128])
def test_index_add_of_many_values_adds_repeats_in_order(key_of, dt):
    # more than 1k values take the linear-position path (one np.add.at on the flat array);
    # repeated positions add up in the same order as the element-by-element reference
    rng = np.random.default_rng(3)
    shape = (7, 5, 9)
    key = key_of(rng)
    n = np.zeros(shape)[key].shape
    values = (rng.normal(size=n) * 100).astype(dt)
    np.testing.assert_array_equal(nb.index_add(shape, np.dtype(dt), key, values),
                                  _index_add_by_loop(shape, dt, key, values))


# where: large C-contiguous operands of one dtype select by integer bits (_where_bits)
WHERE_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8, np.uint8,
                np.int16, np.int32, np.int64, np.bool_, np.complex64, np.complex128]
WHERE_SHAPES = [((4096,), (4096,), (4096,)), ((64, 128), (64, 1), (1, 128)),
                ((64, 128), (64, 128), ()), ((64, 1), (64, 128), (64, 128)),
                ((), (64, 128), (64, 128)), ((3, 0, 5000),) * 3, ((65, 67),) * 3,
                ((2, 64, 64), (64, 64), (2, 1, 64)), ((17,), (17,), (17,))]


def _where_operand(rng, shape, dt):
    x = rng.standard_normal(shape) * 3
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = np.asarray(x).astype(dt)
    if x.size >= 3 and (np.dtype(dt).kind == "f" or dt is ml_dtypes.bfloat16):
        x.flat[:3] = [np.nan, -0.0, np.inf]
        bits = x.view(nb._BITS_INT[x.itemsize])
        bits.flat[0] |= 1  # a NaN with a payload keeps its bits
    return x


@pytest.mark.parametrize("dt", WHERE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=str)
@pytest.mark.parametrize("other", ["array", "zero", "scalar"])
def test_numpy_backend_where_is_np_where_bit_for_bit(dt, shapes, other):
    rng = np.random.default_rng(0)
    cs, as_, bs = shapes
    c = rng.random(cs) < 0.5
    a = _where_operand(rng, as_, dt)
    b = _where_operand(rng, bs, dt) if other == "array" else np.zeros(bs, dt)
    if other == "scalar":  # NumPy scalars, as the ops pass Python numbers
        b = b.reshape(-1)[:1].reshape(()) if b.size else b
        b = b[()] if b.ndim == 0 else b
    want = np.where(c, a, b)
    got = nb.where(c, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert got.flags.c_contiguous == want.flags.c_contiguous


def test_numpy_backend_where_bits_path_is_taken_and_falls_back():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    c = a > 0
    assert nb._where_bits(c, a, np.asarray(np.float32(0))) is not None
    # non-contiguous, mixed dtypes, small, Python numbers: np.where (same values)
    assert nb._where_bits(c.T, a.T, a) is None
    assert nb._where_bits(c, a, a.astype(np.float64)) is None
    assert nb._where_bits(c[:8, :8], a[:8, :8].copy(), a[:8, :8].copy()) is None
    for args in [(c.T, a.T, 0.0), (c, a, 2), (c, a.T, a), (c[:8, :8], a[:8, :8], -0.0)]:
        want = np.where(*args)
        got = nb.where(*args)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_where_op_values_and_grads_through_the_bits_path():
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((64, 96))
    x = tgrad.tensor(xn, requires_grad=True)
    y = tgrad.where(x > 0, x, x * 0.25)
    assert np.array_equal(y.detach().numpy(), np.where(xn > 0, xn, xn * 0.25))
    (gx,) = tgrad.autograd.grad(y, x, tgrad.ones_like(y), create_graph=True)
    assert np.array_equal(gx.detach().numpy(), np.where(xn > 0, 1.0, 0.25))
    xs = tgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: tgrad.where(t > 0, t, t * 0.25), (xs,))
    assert tgrad.autograd.gradgradcheck(lambda t: tgrad.where(t > 0, t * t, t * 0.25), (xs,))


def _index_reduce_by_tuple_key(shape, dt, key, v, reduce):
    # the reference: ufunc.at with the key as given (NumPy's tuple indexing)
    cd = nb.compute_dtype(np.dtype(dt))
    if reduce == "prod":
        init = 1
    elif np.dtype(dt).kind in "iu":
        init = np.iinfo(dt).min if reduce == "amax" else np.iinfo(dt).max
    else:
        init = -np.inf if reduce == "amax" else np.inf
    ref = np.full(shape, init, cd)
    with np.errstate(all="ignore"):
        nb._UFUNC_AT[reduce].at(ref, key, v.astype(cd))
    return nb._down(ref, np.dtype(dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16,
                                np.int32, np.int64, np.uint8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("case", ["scatter_dim0", "middle_dim_negative", "flat", "small"])
def test_numpy_backend_index_reduce_flat_positions_fold_as_ufunc_at(dt, reduce, case):
    # index_reduce folds through the key's linear positions on the flat array (_ufunc_at):
    # the same bits as ufunc.at with the tuple key (same visiting order; NaN, -0.0, inf)
    rng = np.random.default_rng(3)
    if case == "scatter_dim0":
        shape, vs = (64, 32), (4096, 32)
        key = (np.broadcast_to(rng.integers(0, 64, (4096, 1)), vs),
               np.broadcast_to(np.arange(32), vs))
    elif case == "middle_dim_negative":
        shape, vs = (50, 7, 9), (50, 300, 9)
        key = (np.arange(50)[:, None, None], rng.integers(-7, 7, vs), np.arange(9))
    elif case == "flat":
        shape, vs = (3000,), (5000,)
        key = rng.integers(0, 3000, vs)
    else:
        shape, vs = (5, 3), (4, 3)
        key = (rng.integers(0, 5, vs), np.broadcast_to(np.arange(3), vs))
    v = rng.standard_normal(vs) * (0.3 if reduce == "prod" else 1) + (reduce == "prod")
    if np.dtype(dt).kind in "iu":
        v = v * 10
    else:
        v.flat[::97], v.flat[::89], v.flat[::101] = np.nan, -0.0, np.inf
    v = v.astype(dt)
    got = nb.index_reduce(shape, np.dtype(dt), key, v, reduce)
    want = _index_reduce_by_tuple_key(shape, dt, key, v, reduce)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


CLAMP_BOUNDS = [(-0.5, 0.5), (0.0, 6.0), (-0.0, 6.0), (-1.0, 0.0), (-1.0, -0.0), (0.0, 0.0),
                (-0.0, 0.0), (1.0, -1.0), (0.0, -1.0), (-np.inf, 2.0), (None, 0.3), (0.3, None),
                (None, 0.0), (-0.0, None), (0.0, None), (np.nan, 1.0), (1.0, np.nan),
                (2.0, 2.0), (-np.inf, np.inf)]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int8, np.int16, np.int32,
                                np.int64, np.uint8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bounds", CLAMP_BOUNDS, ids=str)
@pytest.mark.parametrize("n", [1, 1023, 1024, 4099])
def test_numpy_backend_clamp_is_the_maximum_minimum_pair_bit_for_bit(dt, bounds, n):
    # _clamp (NumPy's clip ufunc, zero ties redone by the pair) against the pair itself
    rng = np.random.default_rng(4)
    kind = np.dtype(dt).kind
    if kind != "f" and any(b is not None and not (np.isfinite(b) and (kind == "i" or b >= 0))
                           for b in bounds):
        return  # (integer bounds are finite, unsigned ones not negative)
    x = rng.standard_normal(2 * n) * 3
    if kind == "f":
        x[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan, 0.5, -0.5][:x.size]
        x = x.astype(dt)
        bits = x.view(nb._BITS_INT[x.itemsize])
        bits[0] |= 5  # a NaN payload
    else:
        x = (x * 10).astype(dt)
    x = x[::2]  # (non-contiguous)
    lo, hi = (None if b is None else dt(b) for b in bounds)
    got = nb._clamp(x, lo, hi)
    want = nb._clamp_pair(x, lo, hi)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_clamp_op_values_grads_and_signed_zero_ties():
    rng = np.random.default_rng(5)
    xn = rng.standard_normal(5000).astype(np.float32) * 4
    xn[:4] = [-0.0, 0.0, 6.0, np.nan]
    x = tgrad.tensor(xn, requires_grad=True)
    y = tgrad.nn.functional.relu6(x)
    want = np.minimum(np.float32(6), np.maximum(np.float32(0), xn))
    assert y.detach().numpy().tobytes() == want.tobytes()  # relu6(-0.0) is -0.0, as PyTorch
    (gx,) = tgrad.autograd.grad(y.sum(), x)
    # (hardtanh's backward: 0 where x <= 0 or x >= 6, else g, NaN included)
    assert np.array_equal(gx.numpy(), (~((xn <= 0) | (xn >= 6))).astype(np.float32))
    xs = tgrad.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: tgrad.clamp(t, -0.5, 0.5), (xs,))
    assert tgrad.autograd.gradgradcheck(lambda t: tgrad.clamp(t * t, -0.5, 0.5) * t, (xs,))


GATHER_KEYS = [  # (x shape, key arrays' shapes and ranges) for the all-array gather path
    ((256, 256), [((256, 1), 256), ((256, 64), 256)]),   # gather's key along dim 1
    ((5, 7, 3), [((5, 1, 1), 5), ((1, 4, 1), 7), ((5, 4, 3), 3)]),
    ((17, 1), [((1025,), 17), ((1025,), 1)]),
    ((1023, 2), [((1025,), 1023), ((1,), 2)]),
]


@pytest.mark.parametrize("shape,keys", GATHER_KEYS)
@pytest.mark.parametrize("kdt", [np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, ml_dtypes.bfloat16])
def test_numpy_backend_gather_by_flat_positions_is_numpy_indexing(shape, keys, kdt, dt):
    # one take at sum_d key[d] * stride[d]: NumPy's multi-array indexing, bit for bit
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(dt)
    key = tuple(rng.integers(0, min(hi, 256), s).astype(kdt) for s, hi in keys)
    got, want = nb.gather(x, key), x[key]
    assert got.dtype == want.dtype and got.flags.c_contiguous
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


def test_numpy_backend_gather_by_flat_positions_wraps_negatives_and_refuses_misses():
    x = np.arange(12.0).reshape(3, 4)
    rows, cols = np.repeat([0, 2], 1025), np.repeat([-1, 3], 1025)
    assert np.array_equal(nb.gather(x, (rows, cols)), x[rows, cols])  # -1 wraps: 3, 11
    for bad in ((np.full(1025, 3), np.zeros(1025, int)), (np.zeros(1025, int),
                                                            np.full(1025, 4))):
        assert nb._flat_index(x.shape, bad) is None
        with pytest.raises(IndexError):
            nb.gather(x, bad)
    with pytest.raises(IndexError):  # through an op: tgrad's text, not a wrong element
        tgrad.tensor(x)[tgrad.tensor([0] * 1025), tgrad.tensor([4] * 1025)]
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1"):
        tgrad.gather(tgrad.tensor(x), 1, tgrad.tensor([[4]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1"):
        tgrad.gather(tgrad.tensor(x), 1, tgrad.tensor([[0], [-1]]))


@pytest.mark.parametrize("shape,dims", [((1, 5), (0,)), ((4, 1), (1,)), ((3, 5), (0, 1)),
                                        ((2, 0, 3), (2,)), ((17,), (0,))])
def test_flip_on_the_cpu_is_a_fresh_row_major_copy(shape, dims):
    # np.flip's view, copied: never x's memory (a flipped size-1 dim is "contiguous")
    a = np.random.default_rng(0).standard_normal(shape)
    x = tgrad.tensor(a)
    y = tgrad.flip(x, dims)
    assert np.array_equal(y.numpy(), np.flip(a, dims)) and y.is_contiguous()
    y.add_(1.0)
    assert np.array_equal(x.numpy(), a)
    rev = tuple(range(a.ndim - 1, -1, -1))
    t = tgrad.tensor(a.T.copy()).permute(*rev)  # a non-contiguous input
    assert np.array_equal(tgrad.flip(t, dims).numpy(), np.flip(a, dims))


def _diag_embed_reference(a: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    n = a.shape[-1]
    m = n + abs(offset)
    out = np.zeros(a.shape[:-1] + (m, m), a.dtype)
    for i in range(n):
        out[..., i + max(-offset, 0), i + max(offset, 0)] = a[..., i]
    nd = a.ndim + 1
    d1, d2 = d1 % nd, d2 % nd
    rest = iter(range(nd - 2))
    order = [nd - 2 if k == d1 else nd - 1 if k == d2 else next(rest) for k in range(nd)]
    return out.transpose(order)


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("shape,dims", [((4,), (-2, -1)), ((2, 3), (0, 2)), ((2, 3), (2, 0)),
                                        ((2, 5, 3), (1, -1)), ((0, 3), (-2, -1)),
                                        ((2, 0), (0, 1)), ((1, 17), (-1, 0))])
def test_diag_embed_cpu_path_against_a_loop(offset, shape, dims):
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape)
    for x in (tgrad.tensor(a), tgrad.tensor(np.ascontiguousarray(a.T)).permute(
            *range(a.ndim - 1, -1, -1))):  # contiguous, and a transposed view
        y = tgrad.diag_embed(x, offset, *dims)
        want = _diag_embed_reference(a, offset, *dims)
        assert y.shape == want.shape and y.is_contiguous()
        assert np.array_equal(y.numpy(), want)
    xg = tgrad.tensor(a, requires_grad=True)
    if xg.numel():
        assert tgrad.autograd.gradcheck(lambda t: tgrad.diag_embed(t, offset, *dims), (xg,))
        assert tgrad.autograd.gradgradcheck(lambda t: tgrad.diag_embed(t, offset, *dims),
                                            (xg,))


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (17, 4), (0, 3)])
def test_trace_reads_the_diagonal_view(shape):
    a = np.random.default_rng(3).standard_normal(shape)
    for x in (tgrad.tensor(a), tgrad.tensor(a.T.copy()).t()):
        assert tgrad.trace(x).item() == np.add.reduce(np.diagonal(a).copy())
    xg = tgrad.tensor(a, requires_grad=True)
    tgrad.trace(xg).backward()
    assert np.array_equal(xg.grad.numpy(), np.eye(*shape))
    assert tgrad.autograd.gradgradcheck(tgrad.trace, (xg,))


@pytest.mark.parametrize("shape,offset,d1,d2", [((3, 5), 0, 0, 1), ((3, 5), 2, 0, 1),
                                                ((3, 5), -1, 1, 0), ((2, 4, 3, 4), 1, 1, 3),
                                                ((2, 4, 3, 4), -2, 3, 0), ((4, 4), 7, 0, 1),
                                                ((0, 3), 0, 0, 1), ((17, 1, 2), 0, 2, 0)])
def test_diagonal_backward_cpu_path_is_the_index_put(shape, offset, d1, d2):
    # the plain backward writes g through a strided view; create_graph's is the index_put
    a = np.random.default_rng(5).standard_normal(shape)
    grads = []
    for create_graph in (False, True):
        x = tgrad.tensor(a, requires_grad=True)
        y = tgrad.diagonal(x, offset, d1, d2)
        g = tgrad.tensor(np.random.default_rng(6).standard_normal(tuple(y.shape)))
        (gx,) = tgrad.autograd.grad(y, x, g, create_graph=create_graph)
        want = np.zeros(shape)  # the reference: NumPy's own diagonal view, written
        view = np.diagonal(want, offset, d1, d2)
        view.flags.writeable = True
        view[...] = g.numpy()
        assert np.array_equal(gx.detach().numpy(), want)
        grads.append(gx.detach().numpy().tobytes())
    assert grads[0] == grads[1]
    x = tgrad.tensor(a, requires_grad=True)
    if x.numel():
        assert tgrad.autograd.gradgradcheck(lambda t: tgrad.diagonal(t, offset, d1, d2), (x,))
