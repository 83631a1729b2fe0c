"""The small integer dtypes uint8, int8 and int16 (PyTorch's Byte, Char, Short): promotion,
creation and casts, wrapping arithmetic, reductions, indexing, errors, printing, save/load
and the cuda device in Triton's interpreter. References: NumPy with the same dtypes (its
integer arithmetic wraps as PyTorch's does), hand computations and PyTorch's documented
promotion table."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import dtypes

SMALL = ("uint8", "int8", "int16")
NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64")

# PyTorch's promote_types among the bool and integer dtypes (torch.promote_types), written
# out by hand: row op column; a float on either side gives that float.
_PROMOTE = {
    "bool":  ["bool", "uint8", "int8", "int16", "int32", "int64"],
    "uint8": ["uint8", "uint8", "int16", "int16", "int32", "int64"],
    "int8":  ["int8", "int16", "int8", "int16", "int32", "int64"],
    "int16": ["int16", "int16", "int16", "int16", "int32", "int64"],
    "int32": ["int32", "int32", "int32", "int32", "int32", "int64"],
    "int64": ["int64", "int64", "int64", "int64", "int64", "int64"],
}


def _dt(name: str):
    return getattr(tgrad, name)


def _ints(rng, name: str, shape, lo=None, hi=None) -> np.ndarray:
    info = np.iinfo(np.dtype(name))
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi + 1, shape).astype(name)


# ---------------------------------------------------------------- dtype objects
def test_dtype_objects_names_and_aliases():
    assert [d.name for d in dtypes.ALL_DTYPES] == list(NAMES)
    assert tgrad.short is tgrad.int16
    for name, np_dt, scalar, tname, bits in (("uint8", np.uint8, "Byte", "ByteTensor", 8),
                                             ("int8", np.int8, "Char", "CharTensor", 8),
                                             ("int16", np.int16, "Short", "ShortTensor", 16)):
        d = _dt(name)
        assert repr(d) == f"tgrad.{name}" and d.itemsize == bits // 8
        assert dtypes.as_dtype(name) is d and dtypes.as_dtype(np_dt) is d
        assert dtypes.SCALAR_TYPE_NAMES[d] == scalar
        assert not d.is_floating_point
        assert tgrad.zeros(2, dtype=d).type() == "tgrad." + tname
        assert tgrad.tensor([1.0]).type("tgrad." + tname).dtype is d
        info = tgrad.iinfo(d)
        assert (info.bits, info.min, info.max, info.dtype) == (
            bits, int(np.iinfo(np_dt).min), int(np.iinfo(np_dt).max), name)
    assert dtypes.as_dtype("short") is tgrad.int16
    assert str(tgrad.iinfo(tgrad.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
    # is_signed: uint8 (and bool) are unsigned
    assert not tgrad.uint8.is_signed and tgrad.int8.is_signed and tgrad.int16.is_signed
    assert not tgrad.zeros(1, dtype=tgrad.uint8).is_signed()
    assert tgrad.zeros(1, dtype=tgrad.int8).is_signed()
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point input type"):
        tgrad.finfo(tgrad.int16)


def test_promote_types_table():
    ints = list(_PROMOTE)
    for a in ints:
        for b, want in zip(ints, _PROMOTE[a]):
            got = tgrad.promote_types(_dt(a), _dt(b))
            assert got is _dt(want), (a, b, got)
        for f in ("float16", "bfloat16", "float32", "float64"):
            assert tgrad.promote_types(_dt(a), _dt(f)) is _dt(f)
            assert tgrad.promote_types(_dt(f), _dt(a)) is _dt(f)


def test_result_type_with_scalars_and_zero_dim_tensors():
    for name in SMALL:
        t = tgrad.zeros(2, dtype=_dt(name))
        assert tgrad.result_type(t, 5) is t.dtype  # a Python int keeps the tensor's dtype
        assert tgrad.result_type(t, True) is t.dtype
        assert tgrad.result_type(t, 2.5) is tgrad.float32
        assert tgrad.result_type(t, tgrad.tensor(1)) is t.dtype  # 0-d int64: same category
        assert tgrad.result_type(t, tgrad.tensor(1.0, dtype=tgrad.float64)) is tgrad.float64
    u = tgrad.tensor([1, 2], dtype=tgrad.uint8)
    assert (u + tgrad.tensor(1, dtype=tgrad.int8)).dtype is tgrad.uint8
    assert (u + tgrad.tensor([1, 1], dtype=tgrad.int8)).dtype is tgrad.int16
    assert (tgrad.tensor([True]) + u[:1]).dtype is tgrad.uint8
    assert (u * 1.5).dtype is tgrad.float32 and (u * 1.5).tolist() == [1.5, 3.0]
    assert (u / 2).dtype is tgrad.float32 and (u / 2).tolist() == [0.5, 1.0]


# ---------------------------------------------------------------- creation and casts
@pytest.mark.parametrize("name", SMALL)
def test_from_numpy_tensor_and_as_tensor_keep_the_dtype(name):
    a = np.array([[1, 2, 3]], dtype=name)
    t = tgrad.from_numpy(a)
    assert t.dtype is _dt(name)
    a[0, 0] = 9  # from_numpy shares the memory, as torch.from_numpy
    assert t.tolist() == [[9, 2, 3]]
    assert tgrad.tensor(a).dtype is _dt(name) and tgrad.as_tensor(a).dtype is _dt(name)
    assert tgrad.tensor(np.dtype(name).type(3)).dtype is _dt(name)
    assert t.numpy().dtype == np.dtype(name)
    b = tgrad.tensor([[1, 2], [3, 4]], dtype=_dt(name))
    assert b.dtype is _dt(name) and b.tolist() == [[1, 2], [3, 4]]
    assert isinstance(b[0, 0].item(), int)


def test_creation_from_python_numbers_checks_the_range():
    # In range: floats truncate; a negative int wraps into uint8 (PyTorch: -1 is 255)
    assert tgrad.tensor([1.7, 250.9], dtype=tgrad.uint8).tolist() == [1, 250]
    assert tgrad.tensor([-1, -255], dtype=tgrad.uint8).tolist() == [255, 1]
    assert tgrad.tensor([1.9, -1.9, 32767.0], dtype=tgrad.int16).tolist() == [1, -1, 32767]
    assert tgrad.full((2,), -1, dtype=tgrad.uint8).tolist() == [255, 255]
    assert tgrad.zeros(2, dtype=tgrad.uint8).fill_(-2).tolist() == [254, 254]
    x = tgrad.zeros(3, dtype=tgrad.uint8)
    x[1] = -1
    assert x.tolist() == [0, 255, 0]
    assert tgrad.arange(5, dtype=tgrad.uint8).tolist() == [0, 1, 2, 3, 4]
    # Out of range: PyTorch's "value cannot be converted to type uint8 without overflow"
    for call, op in ((lambda: tgrad.tensor([300], dtype=tgrad.uint8), "tensor()"),
                     (lambda: tgrad.tensor([-256], dtype=tgrad.uint8), "tensor()"),
                     (lambda: tgrad.tensor([-1.5], dtype=tgrad.uint8), "tensor()"),
                     (lambda: tgrad.full((1,), 255.5, dtype=tgrad.uint8), "full()"),
                     (lambda: tgrad.full((1,), 128, dtype=tgrad.int8), "full()"),
                     (lambda: tgrad.full((1,), 127.9, dtype=tgrad.int8), "full()"),
                     (lambda: tgrad.zeros(1, dtype=tgrad.int16).fill_(40000), "fill_"),
                     (lambda: tgrad.zeros(1, dtype=tgrad.int8).fill_(float("nan")), "fill_")):
        with pytest.raises(RuntimeError, match=f"^{re.escape(op)}: value .* cannot be "
                                               f"converted to type u?int(8|16) without overflow"):
            call()


def test_negative_ints_wrap_into_uint8_through_index_arrays_and_masks_too():
    # x[1] = -1 gave 255 but x[tensor([1])] = -1 (index_put) raised NumPy's OverflowError;
    # PyTorch's checked conversion takes -255..-1 into uint8 everywhere (two's complement)
    x = tgrad.zeros(4, dtype=tgrad.uint8)
    x[tgrad.tensor([1])] = -1
    x[tgrad.tensor([False, False, True, False])] = -255
    x[[3]] = -2
    assert x.tolist() == [0, 255, 1, 254]
    idx = tgrad.tensor([0, 2])
    assert tgrad.zeros(3, dtype=tgrad.uint8).index_fill(0, idx, -1).tolist() == [255, 0, 255]
    assert tgrad.zeros(3, dtype=tgrad.uint8).scatter(0, idx, -3).tolist() == [253, 0, 253]
    # and out of range values raise naming the op that took them
    for call, op in ((lambda: x.index_fill(0, idx, -256), "index_fill"),
                     (lambda: x.scatter(0, idx, 256), "scatter"),
                     (lambda: x.__setitem__(tgrad.tensor([0]), 300), "__setitem__")):
        with pytest.raises(RuntimeError, match=f"^{op}: value .* cannot be converted to type "
                                               f"uint8 without overflow"):
            call()


def test_casts_truncate_and_wrap_as_pytorch_cpu():
    f = tgrad.tensor([1.7, -1.5, 255.9, -3.0, 300.0])
    # truncation toward zero, then two's complement wrapping (hand-computed: 300 - 256 = 44,
    # -1 + 256 = 255, -3 + 256 = 253)
    assert f.to(tgrad.uint8).tolist() == [1, 255, 255, 253, 44]
    assert f.byte().tolist() == [1, 255, 255, 253, 44]
    assert tgrad.tensor([1.7, -1.5, 127.9, -128.9, 200.0]).char().tolist() == [1, -1, 127,
                                                                                -128, -56]
    assert tgrad.tensor([256, -1, 511, 70000]).to(tgrad.uint8).tolist() == [0, 255, 255, 112]
    assert tgrad.tensor([70000, -40000]).short().tolist() == [70000 - 65536, -40000 + 65536]
    u = tgrad.tensor([0, 200, 255], dtype=tgrad.uint8)
    assert u.char().tolist() == [0, -56, -1] and u.short().tolist() == [0, 200, 255]
    assert u.float().tolist() == [0.0, 200.0, 255.0] and u.bool().tolist() == [False, True, True]
    assert tgrad.tensor([True, False]).byte().tolist() == [1, 0]


def test_casts_of_floats_past_int32_as_pytorch_cpu():
    # PyTorch's CPU cast (x86) reads a float for int8/int16 through int32 and for uint8
    # through int64 (c10's explicit step); past that range, inf and NaN the intermediate is
    # the "integer indefinite" minimum, whose low bits are 0. Hand-computed: 2**31 - 1 has
    # all low bits set; 70000 = 273 * 256 + 112 = 65536 + 4464; 2**31 + 775 and 2**32 + 7
    # are 7 modulo 256 (uint8, through int64) but past int32 (int8/int16: 0).
    nan, inf = float("nan"), float("inf")
    vals = [1e10, -1e10, 2.0 ** 31 + 775, 2.0 ** 32 + 7, nan, inf, -inf, 2.0 ** 31 - 1, 70000.5]
    f = tgrad.tensor(vals, dtype=tgrad.float64)
    assert f.to(tgrad.uint8).tolist() == [0, 0, 7, 7, 0, 0, 0, 255, 112]
    assert f.char().tolist() == [0, 0, 0, 0, 0, 0, 0, -1, 112]
    assert f.short().tolist() == [0, 0, 0, 0, 0, 0, 0, -1, 4464]
    # float32 2**31 + 768 is exact: 768 modulo 2**16 through int64, 0 through int32
    g = tgrad.tensor([1e10, 2.0 ** 31 + 768, -1e10, 70000.0])
    assert g.short().tolist() == [0, 0, 0, 4464] and g.byte().tolist() == [0, 0, 0, 112]
    assert tgrad.tensor([1e10, 300.0]).to(tgrad.float16).char().tolist() == [0, 44]  # inf
    # bfloat16 keeps 8 significant bits: 70000 rounds to 70144 = 65536 + 4608
    assert tgrad.tensor([1e10, 70000.0]).to(tgrad.bfloat16).short().tolist() == [0, 4608]
    # int32 / int64 from float16, bfloat16 and float32 alike: past the range, inf and NaN
    # the lowest value (x86's integer indefinite); bfloat16 is read as its float32 value
    lo32, lo64 = -2 ** 31, -2 ** 63
    for dt in (tgrad.float16, tgrad.bfloat16, tgrad.float32):
        h = tgrad.tensor([inf, nan, -inf, 2.5, -2.5], dtype=dt)
        assert h.int().tolist() == [lo32, lo32, lo32, 2, -2], dt
        assert h.long().tolist() == [lo64, lo64, lo64, 2, -2], dt
    b = tgrad.tensor([3e9, 1e38], dtype=tgrad.bfloat16)
    assert b.long().tolist() == [int(np.float32(b[0].item())), lo64]  # (3e9: 3003121664)
    # the Python-number conversion shares the rule
    assert dtypes.number_as(1e10, tgrad.int16) == 0
    assert dtypes.number_as(2.0 ** 32 + 7, tgrad.uint8) == 7
    assert dtypes.number_as(-1.5, tgrad.uint8) == 255


@pytest.mark.parametrize("name", SMALL)
def test_requires_grad_raises(name):
    with pytest.raises(RuntimeError, match="floating point .*dtype can require gradients"):
        tgrad.zeros(2, dtype=_dt(name)).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point .*dtype can require gradients"):
        tgrad.zeros(2, dtype=_dt(name), requires_grad=True)


# ---------------------------------------------------------------- arithmetic
def test_wraparound_by_hand():
    u = tgrad.tensor([200, 10], dtype=tgrad.uint8)
    assert (u + 100).tolist() == [44, 110]          # 300 - 256
    assert (u - 11).tolist() == [189, 255]          # 10 - 11 + 256
    assert (u + (-1)).tolist() == [199, 9]          # -1 is 255: 200 + 255 - 256
    assert (u * 2).tolist() == [144, 20]            # 400 - 256
    assert (-u).tolist() == [56, 246]
    assert (~u).tolist() == [55, 245]
    assert (u ** 2).tolist() == [64, 100]           # 40000 mod 256
    i8 = tgrad.tensor([127, -128], dtype=tgrad.int8)
    assert (i8 + 1).tolist() == [-128, -127] and (-i8).tolist() == [-127, -128]
    assert i8.abs().tolist() == [127, -128]         # |-128| wraps, as PyTorch's
    s = tgrad.tensor([32767, -32768], dtype=tgrad.int16)
    assert (s + 1).tolist() == [-32768, -32767] and (s * 2).tolist() == [-2, 0]
    x = tgrad.tensor([200], dtype=tgrad.uint8)
    x.add_(100)
    assert x.tolist() == [44] and x.dtype is tgrad.uint8


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "floor_divide", "remainder", "fmod",
                                "maximum", "minimum", "bitwise_and", "bitwise_or",
                                "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge"])
def test_binary_ops_match_numpy(name, op):
    rng = np.random.default_rng(7)
    a = _ints(rng, name, (3, 5))
    b = _ints(rng, name, (3, 5), lo=1, hi=100)  # non-zero divisors
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
           "floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod,
           "maximum": np.maximum, "minimum": np.minimum, "bitwise_and": np.bitwise_and,
           "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "eq": np.equal,
           "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}[op]
    with np.errstate(over="ignore"):
        want = ref(a, b)
    got = getattr(tgrad, op)(tgrad.tensor(a), tgrad.tensor(b))
    assert got.numpy().dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_integer_division_semantics():
    a = tgrad.tensor([-7, 7, -128], dtype=tgrad.int8)
    b = tgrad.tensor([2, -2, -1], dtype=tgrad.int8)
    assert (a // b).tolist() == [-4, -4, -128]      # floor; -128 // -1 wraps
    assert (a % b).tolist() == [1, -1, 0]           # the divisor's sign
    assert tgrad.fmod(a, b).tolist() == [-1, 1, 0]  # the dividend's sign
    assert tgrad.div(a, b, rounding_mode="trunc").tolist() == [-3, -3, -128]
    assert (a / b).dtype is tgrad.float32 and (a / b).tolist() == [-3.5, -3.5, 128.0]
    with pytest.raises(ZeroDivisionError, match="floor_divide: integer division by zero"):
        a // 0
    with pytest.raises(RuntimeError, match="remainder: integer division by zero"):
        a % tgrad.zeros(3, dtype=tgrad.int8)


@pytest.mark.parametrize("name", SMALL)
def test_mixed_dtype_ops_match_numpy(name):
    rng = np.random.default_rng(3)
    a = _ints(rng, name, (4,))
    for other in SMALL:
        b = _ints(rng, other, (4,), lo=1, hi=50)
        with np.errstate(over="ignore"):
            for fn, ref in ((tgrad.add, np.add), (tgrad.mul, np.multiply),
                            (tgrad.bitwise_xor, np.bitwise_xor), (tgrad.lt, np.less)):
                got = fn(tgrad.tensor(a), tgrad.tensor(b))
                want = ref(a, b)
                assert got.numpy().dtype == want.dtype, (name, other, fn)
                np.testing.assert_array_equal(got.numpy(), want)


def test_shifts():
    u = tgrad.tensor([200, 10, 1], dtype=tgrad.uint8)
    assert (u << 1).tolist() == [144, 20, 2] and (u >> 1).tolist() == [100, 5, 0]
    assert (u << tgrad.tensor([1, 4, 7], dtype=tgrad.uint8)).tolist() == [144, 160, 128]
    i8 = tgrad.tensor([-128, 64, 1], dtype=tgrad.int8)
    assert (i8 >> 1).tolist() == [-64, 32, 0]       # arithmetic shift keeps the sign
    assert (i8 << 1).tolist() == [0, -128, 2]
    s = tgrad.tensor([-3, 300], dtype=tgrad.int16)
    assert (s << 2).tolist() == [-12, 1200] and (s >> 3).tolist() == [-1, 37]
    with pytest.raises(RuntimeError, match="bitwise_left_shift: not implemented for float32"):
        u << 1.5


def test_python_int_operands():
    u = tgrad.tensor([255, 3], dtype=tgrad.uint8)
    assert (u == -1).tolist() == [True, False]      # -1 is 255 in uint8, as PyTorch
    assert (1 - u).tolist() == [2, 254]
    assert (u * -1).tolist() == [1, 253]
    # tgrad raises where PyTorch wraps a number outside the dtype silently (u + 300 is
    # u + 44 there; u < 256 compares with 0): the documented rule for every integer dtype
    with pytest.raises(RuntimeError, match="add: value 300 cannot be converted to type uint8 "
                                           "without overflow"):
        u + 300
    with pytest.raises(RuntimeError, match="lt: value 128 cannot be converted to type int8"):
        tgrad.lt(tgrad.tensor([1], dtype=tgrad.int8), 128)
    for op, call in (("mul", lambda: u * 1000), ("remainder", lambda: u % 300),
                     ("bitwise_and", lambda: u & 300), ("lt", lambda: u < 300),
                     ("sub", lambda: 300 - u), ("bitwise_left_shift", lambda: u << 300)):
        with pytest.raises(RuntimeError, match=f"^{op}: value 300|^{op}: value 1000"):
            call()


# ---------------------------------------------------------------- reductions
@pytest.mark.parametrize("name", SMALL)
def test_reductions(name):
    rng = np.random.default_rng(11)
    a = _ints(rng, name, (3, 6))
    t = tgrad.tensor(a)
    a64 = a.astype(np.int64)
    for got, want in ((t.sum(), a64.sum()), (t.sum(1), a64.sum(1)), (t.prod(1), a64.prod(1)),
                      (t.cumsum(0), a64.cumsum(0)), (t.cumprod(1), a64.cumprod(1))):
        assert got.dtype is tgrad.int64  # PyTorch: integer sums are int64
        np.testing.assert_array_equal(got.numpy(), want)
    assert t.sum(dtype=_dt(name)).dtype is _dt(name)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(t.sum(1, dtype=_dt(name)).numpy(), a.sum(1, dtype=name))
    for got, want in ((t.amax(1), a.max(1)), (t.amin(0), a.min(0)), (t.max(), a.max()),
                      (t.min(), a.min())):
        assert got.dtype is _dt(name)
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(t.argmax(1).numpy(), a.argmax(1))
    np.testing.assert_array_equal(t.argmin().numpy(), a.argmin())
    values, idx = t.max(1)
    np.testing.assert_array_equal(values.numpy(), a.max(1))
    np.testing.assert_array_equal(idx.numpy(), a.argmax(1))
    s, order = t.sort(1)
    np.testing.assert_array_equal(s.numpy(), np.sort(a, 1))
    np.testing.assert_array_equal(order.numpy(), np.argsort(a, 1, kind="stable"))
    msg = (f"mean\\(\\): could not infer output dtype. Input dtype must be either a floating "
           f"point or complex dtype. Got: {dtypes.SCALAR_TYPE_NAMES[_dt(name)]}")
    with pytest.raises(RuntimeError, match=msg):
        t.mean()
    assert t.mean(dtype=tgrad.float64).item() == pytest.approx(a64.mean(), rel=1e-15)


def test_mean_into_a_half_dtype_sums_in_float32():
    # PyTorch's CPU mean with dtype=float16/bfloat16: cast to float32, sum, divide, round
    # once (not each integer into float16 first, where 70000 is inf): 231042 / 6 = 38507,
    # 38496 in float16 (multiples of 32 there), 38400 in bfloat16 (multiples of 256)
    t = tgrad.tensor([70000, 100000, -70000, 3, 65519, 65520])
    got = t.mean(dtype=tgrad.float16)
    assert got.dtype is tgrad.float16 and got.item() == 38496.0
    assert tgrad.mean(t, dtype=tgrad.bfloat16).item() == 38400.0
    rows = t.reshape(2, 3).mean(1, dtype=tgrad.float16)  # 100000 / 3, 131042 / 3
    assert rows.tolist() == [33344.0, 43680.0]
    assert tgrad.tensor([True, False, True]).mean(dtype=tgrad.float16).item() == 0.66650390625


def test_any_all_of_uint8_are_uint8():
    u = tgrad.tensor([[1, 0], [2, 3]], dtype=tgrad.uint8)
    assert u.any().dtype is tgrad.uint8 and u.any().item() == 1
    assert u.all().item() == 0 and u.all(1).tolist() == [0, 1]
    assert tgrad.tensor([1, 0], dtype=tgrad.int8).any().dtype is tgrad.bool


# ---------------------------------------------------------------- indexing
def test_indexing_with_small_int_tensors():
    x = tgrad.arange(5.0)
    with pytest.warns(UserWarning, match="indexing with dtype tgrad.uint8 is now deprecated"):
        got = x[tgrad.tensor([1, 0, 1, 0, 1], dtype=tgrad.uint8)]
    assert got.tolist() == [0.0, 2.0, 4.0]  # PyTorch reads a uint8 index as a boolean mask
    m = tgrad.arange(4.0).reshape(2, 2)
    with pytest.warns(UserWarning):
        assert m[tgrad.tensor([[1, 0], [0, 1]], dtype=tgrad.uint8)].tolist() == [0.0, 3.0]
    for dt in (tgrad.int8, tgrad.int16):
        with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte "
                                             "or bool tensors"):
            x[tgrad.tensor([1, 3], dtype=dt)]
        with pytest.raises(RuntimeError, match="index_select\\(\\): Expected dtype "
                                               "int32/int64 for index"):
            x.index_select(0, tgrad.tensor([1, 3], dtype=dt))
    # tensors of the small dtypes indexed by int64 indices and masks keep their dtype
    u = tgrad.tensor([10, 20, 30], dtype=tgrad.uint8)
    assert u[tgrad.tensor([2, 0])].tolist() == [30, 10] and u[u > 15].dtype is tgrad.uint8
    assert u.gather(0, tgrad.tensor([1, 1])).tolist() == [20, 20]
    u[tgrad.tensor([0])] = 7
    assert u.tolist() == [7, 20, 30]


def test_uint8_arrays_and_lists_index_as_masks_and_masks_must_match_shapes():
    t = tgrad.tensor([1, 2, 3, 4])
    m = np.array([1, 0, 1, 0], dtype=np.uint8)
    # a NumPy uint8 array (or a list of NumPy uint8s) is a mask, as a uint8 tensor (was
    # read as the indices [1, 0, 1, 0]: [2, 1, 2, 1])
    with pytest.warns(UserWarning, match="indexing with dtype tgrad.uint8 is now deprecated"):
        assert t[m].tolist() == [1, 3]
    with pytest.warns(UserWarning):
        assert t[[np.uint8(0), np.uint8(1), np.uint8(1), np.uint8(0)]].tolist() == [2, 3]
    with pytest.warns(UserWarning):  # a 0-d one is a 0-d mask: a new dim, all or nothing
        assert t[np.array(1, dtype=np.uint8)].shape == (1, 4)
        assert t[np.array(0, dtype=np.uint8)].shape == (0, 4)
    a = tgrad.arange(6).reshape(2, 3)
    with pytest.warns(UserWarning):
        assert a[np.array([[1, 0, 1], [0, 0, 1]], dtype=np.uint8)].tolist() == [0, 2, 5]
        assert a[np.array([0, 1], dtype=np.uint8), 1].tolist() == [4]
    assert t[[True, False, True, False]].tolist() == [1, 3]
    assert t[np.array([False, True, True, False])].tolist() == [2, 3]
    u = t.clone()
    with pytest.warns(UserWarning):  # more values than one: written at the True positions
        u[m] = tgrad.tensor([8, 9])
    assert u.tolist() == [8, 2, 9, 4]
    assert t.clone().index_put_((tgrad.tensor([1, 0, 1, 0], dtype=tgrad.uint8),),
                                tgrad.tensor([7, 9])).tolist() == [7, 2, 9, 4]
    # one uint8 mask with a one-element value: PyTorch's masked_fill_ refuses the dtype (a
    # 0-d mask in index_put_ filled every element)
    fill = "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=fill):
        t.clone()[m] = 9
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=fill):
        a.clone()[:, np.array([1, 0, 1], dtype=np.uint8)] = tgrad.tensor([9])
    for k in (tgrad.tensor(1, dtype=tgrad.uint8), tgrad.tensor(m)):
        with pytest.raises(RuntimeError, match=fill):
            t.clone().index_put_((k,), tgrad.tensor(9))
    b = a.clone()  # with a second index array it is an index_put_, as PyTorch's
    with pytest.warns(UserWarning):
        b[tgrad.tensor([1, 0], dtype=tgrad.uint8), [0]] = 9
    assert b.tolist() == [[9, 1, 2], [3, 4, 5]]
    # a mask's dims must equal the dims it indexes (an empty mask indexed nothing)
    for key, ms, at, sh, dim in ((tgrad.tensor([], dtype=tgrad.bool), [0], 0, [4], 0),
                                 (np.array([True, False]), [2], 0, [4], 0),
                                 ([True, False, True], [3], 0, [4], 0)):
        text = re.escape(f"The shape of the mask {ms} at index {at} does not match the "
                         f"shape of the indexed tensor {sh} at index {dim}")
        with pytest.raises(IndexError, match=text):
            t[key]
        with pytest.raises(IndexError, match=text):
            t.clone()[key] = 9
        if isinstance(key, tgrad.Tensor):
            for acc in (False, True):
                with pytest.raises(IndexError, match=text):
                    t.clone().index_put_((key,), tgrad.tensor(9), accumulate=acc)
    with pytest.raises(IndexError, match=r"mask \[2\] at index 0 .* tensor \[2, 3\] at index 1"):
        a[:, tgrad.tensor([True, False])]
    with pytest.raises(IndexError, match=r"mask \[2, 2\] at index 1 .* \[2, 3\] at index 1"):
        a[..., tgrad.tensor([[True, False], [True, True]])]


def test_losses_take_uint8_class_targets():
    x = tgrad.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]], dtype=tgrad.float64)
    want = F.cross_entropy(x, tgrad.tensor([1, 2]))
    assert F.cross_entropy(x, tgrad.tensor([1, 2], dtype=tgrad.uint8)).item() == want.item()
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but "
                                           "got Char"):
        F.nll_loss(x, tgrad.tensor([1, 2], dtype=tgrad.int8))
    with pytest.raises(RuntimeError, match="expected an integer index tensor"):
        F.embedding(tgrad.tensor([1], dtype=tgrad.uint8), tgrad.ones(3, 2))
    counts = tgrad.bincount(tgrad.tensor([3, 1, 3], dtype=tgrad.uint8))
    assert counts.tolist() == [0, 1, 0, 2] and counts.dtype is tgrad.int64


# ---------------------------------------------------------------- printing, save/load
def test_printing():
    assert repr(tgrad.tensor([200, 10], dtype=tgrad.uint8)) == \
        "tensor([200,  10], dtype=tgrad.uint8)"
    assert repr(tgrad.tensor([-1, 2], dtype=tgrad.int8)) == "tensor([-1,  2], dtype=tgrad.int8)"
    assert repr(tgrad.tensor(5, dtype=tgrad.int16)) == "tensor(5, dtype=tgrad.int16)"
    assert str(tgrad.zeros((2, 0), dtype=tgrad.uint8)) == \
        "tensor([], size=(2, 0), dtype=tgrad.uint8)"


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    state = {n: tgrad.tensor(_ints(rng, n, (2, 3))) for n in SMALL}
    path = tmp_path / "small.pt"
    tgrad.save(state, path)
    back = tgrad.load(path)
    for n in SMALL:
        assert back[n].dtype is _dt(n)
        np.testing.assert_array_equal(back[n].numpy(), state[n].numpy())


# ---------------------------------------------------------------- cuda (interpreted)
_CUDA_SCRIPT = r"""
import json, warnings
import numpy as np
import tgrad
rng = np.random.default_rng(0)
out = {}
for name in ("uint8", "int8", "int16"):
    info = np.iinfo(np.dtype(name))
    a = rng.integers(info.min, info.max + 1, (3, 5)).astype(name)
    b = rng.integers(1, 100, (3, 5)).astype(name)
    A, B = tgrad.tensor(a, device="cuda"), tgrad.tensor(b, device="cuda")
    r = {}
    for op in ("add", "sub", "mul", "floor_divide", "remainder", "maximum", "bitwise_and",
               "bitwise_xor", "lt"):
        r[op] = getattr(tgrad, op)(A, B)
    r["shl"], r["shr"], r["neg"], r["not"] = A << 3, A >> 2, -A, ~A
    r["pow"], r["add_num"], r["sub_num"] = A ** 2, A + 100, A - 1
    r["lcm"] = tgrad.lcm(A.clamp(min=info.min + 1), B)  # (no INT_MIN: its |.| overflows)
    r["sum"], r["prod"], r["cumsum"] = A.sum(1), A.prod(1), A.cumsum(1)
    r["amax"], r["argmin"], r["sorted"] = A.amax(1), A.argmin(1), A.sort(1)[0]
    r["mix"] = A + tgrad.tensor(b.astype(np.int8), device="cuda")
    r["f"] = A.float() * 0.5
    r["cast"] = tgrad.tensor([1.7, -1.5, 300.0, -3.0], device="cuda").to(A.dtype)
    r["cast_big"] = tgrad.tensor([1e10, 2.0 ** 31 + 768, -1e10, float("nan"), 70000.0],
                                 device="cuda").to(A.dtype)
    r["gather"] = A[tgrad.tensor([2, 0], device="cuda")]
    r["mask"] = A[A > 0]
    r["full"] = tgrad.full((2,), -1 if name == "uint8" else -5, dtype=A.dtype, device="cuda")
    out[name] = {k: [str(v.dtype), v.device.type, v.cpu().tolist()] for k, v in r.items()}
    out[name]["a"], out[name]["b"] = a.tolist(), b.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = tgrad.tensor([1, 0, 1, 0, 1], dtype=tgrad.uint8, device="cuda")
        out["umask"] = tgrad.arange(5.0, device="cuda")[m].cpu().tolist()
print(json.dumps(out))
"""


def _lcm_wrapped(a64, b64, name):
    """lcm computed exactly in int64, then wrapped into ``name``: PyTorch's uint8/int8/int16
    lcm (C promotes them to int, so the absolute value comes before the wrap)."""
    g = np.gcd(a64, b64)
    return np.abs(a64 // np.where(g == 0, 1, g) * b64).astype(name)


def test_small_int_lcm_takes_the_absolute_value_before_wrapping():
    a = tgrad.tensor([100, -100, 127, 3, 0, -7], dtype=tgrad.int8)
    b = tgrad.tensor([7, 7, -3, -1, 5, 7], dtype=tgrad.int8)
    # exact lcms 700, 700, 381, 3, 0, 7 wrapped into int8 by hand: 700 - 768 = -68,
    # 381 - 256 = 125
    assert tgrad.lcm(a, b).tolist() == [-68, -68, 125, 3, 0, 7]
    u = tgrad.tensor([200, 100], dtype=tgrad.uint8)
    assert tgrad.lcm(u, tgrad.tensor([3, 7], dtype=tgrad.uint8)).tolist() == [600 % 256,
                                                                              700 % 256]
    s = tgrad.tensor([300, -32767], dtype=tgrad.int16)
    # 32767 * 3 = 98301 (coprime): 98301 - 65536 = 32765
    assert tgrad.lcm(s, tgrad.tensor([7, 3], dtype=tgrad.int16)).tolist() == [2100, 32765]
    big = tgrad.tensor([250, 251], dtype=tgrad.int16)
    # 250 * 251 = 62750 > 32767: 62750 - 65536 = -2786 (wraps after |.|, as PyTorch's)
    assert tgrad.lcm(big, tgrad.tensor([251, -250], dtype=tgrad.int16)).tolist() == [-2786,
                                                                                      -2786]


def test_small_int_ops_on_cuda_interpreted():
    from interpreted import run_json
    r = run_json(_CUDA_SCRIPT)
    assert r["umask"] == [0.0, 2.0, 4.0]
    for name in SMALL:
        res = r[name]
        info = np.iinfo(np.dtype(name))
        a, b = np.array(res["a"], name), np.array(res["b"], name)
        a64 = a.astype(np.int64)
        with np.errstate(over="ignore"):
            want = {"add": a + b, "sub": a - b, "mul": a * b, "floor_divide": a // b,
                    "remainder": a % b, "maximum": np.maximum(a, b), "bitwise_and": a & b,
                    "bitwise_xor": a ^ b, "lt": a < b, "shl": a << 3, "shr": a >> 2, "neg": -a,
                    "not": ~a, "pow": a * a, "add_num": a + np.dtype(name).type(100),
                    "sub_num": a - np.dtype(name).type(1),
                    "lcm": _lcm_wrapped(np.maximum(a64, info.min + 1), b.astype(np.int64),
                                        name),
                    "sum": a64.sum(1), "prod": a64.prod(1), "cumsum": a64.cumsum(1),
                    "amax": a.max(1), "argmin": a.argmin(1), "sorted": np.sort(a, 1),
                    "mix": a + b.astype(np.int8), "f": a.astype(np.float32) * 0.5,
                    "cast": np.array([1, -1, 300, -3]).astype(name),
                    # past int32 (int8/int16) and NaN give 0, as PyTorch's CPU cast;
                    # 70000 = 273 * 256 + 112 = 65536 + 4464 (hand-computed)
                    "cast_big": np.array([0, 0, 0, 0, 4464 if name == "int16" else 112],
                                         name),
                    "gather": a[[2, 0]], "mask": a[a > 0],
                    "full": np.full(2, -1 if name == "uint8" else -5).astype(name)}
        for k, w in want.items():
            dt, dev, vals = res[k]
            w = np.asarray(w)
            assert dev == "cuda", (name, k)
            assert dt == f"tgrad.{'bool' if w.dtype == np.bool_ else w.dtype.name}", (name, k, dt)
            np.testing.assert_array_equal(np.array(vals), w, err_msg=f"{name} {k}")


def test_uint8_mask_fill_refused_only_for_a_cpu_value():
    # PyTorch's canDispatchToMaskedFill: one uint8 mask and a one-element value on the CPU
    # (a number is one) go to masked_fill_, which refuses the dtype; a one-element value on
    # the GPU takes the index_put path and fills the mask's positions
    script = r"""
import json, warnings
import tgrad
warnings.simplefilter("ignore")
out = {}
m = tgrad.tensor([1, 0, 1], dtype=tgrad.uint8, device="cuda")
for how in ("number", "cpu", "cuda"):
    x = tgrad.zeros(3, device="cuda")
    v = {"number": 9.0, "cpu": tgrad.tensor([9.0]), "cuda": tgrad.tensor([9.0], device="cuda")}
    for op in ("setitem", "index_put_"):
        y = x.clone()
        try:
            if op == "setitem":
                y[m] = v[how]
            else:
                y.index_put_((m,), v[how] if how != "number" else tgrad.tensor(9.0))
            out[how + op] = y.cpu().tolist()
        except RuntimeError as e:
            out[how + op] = str(e)
print(json.dumps(out))
"""
    from interpreted import run_json
    r = run_json(script)
    refused = "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"
    for key in ("numbersetitem", "numberindex_put_", "cpusetitem", "cpuindex_put_"):
        assert r[key].startswith(refused), (key, r[key])
    assert r["cudasetitem"] == r["cudaindex_put_"] == [9.0, 0.0, 9.0]
