"""Bitwise ops (&, |, ^, ~ and bitwise_*), and add/sub's ``alpha``, as in PyTorch.

References are NumPy on the operands promoted as PyTorch promotes them (bool & bool is bool,
bool & int is int64, int32 & int64 is int64); floating operands raise. Before these ops
existed, ``&``/``|``/``~`` on integer tensors silently returned logical (bool) results."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
BINARY = {"bitwise_and": (np.bitwise_and, lambda a, b: a & b),
          "bitwise_or": (np.bitwise_or, lambda a, b: a | b),
          "bitwise_xor": (np.bitwise_xor, lambda a, b: a ^ b)}


def _ints(*shape, dtype=np.int64):
    return RNG.integers(-2**40, 2**40, shape).astype(dtype)


def _bools(*shape):
    return RNG.integers(0, 2, shape).astype(bool)


def _pairs():
    """(a, b, want dtype): bool, int32, int64, mixed, broadcast, 0-d, empty, strided."""
    big = _ints(6, 8)
    return [
        (_bools(17), _bools(17), np.bool_),
        (_ints(1025), _ints(1025), np.int64),
        (_ints(17, dtype=np.int32), _ints(17, dtype=np.int32), np.int32),
        (_ints(17, dtype=np.int32), _ints(17), np.int64),
        (_bools(17), _ints(17, dtype=np.int32), np.int32),
        (_ints(3, 1), _ints(4), np.int64),
        (_ints(), _ints(), np.int64),
        (_ints(0), _ints(0), np.int64),
        (big.T, big[::2].repeat(2, 0).T, np.int64),  # non-contiguous views
    ]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_bitwise_matches_numpy(name):
    ref, operator = BINARY[name]
    for a, b, dt in _pairs():
        want = ref(a.astype(dt), b.astype(dt))
        ta, tb = tgrad.tensor(a), tgrad.tensor(b)
        if a.ndim == 2 and a.strides[0] < a.strides[1]:  # keep the transposed layout
            ta, tb = tgrad.tensor(a.T).T, tgrad.tensor(np.ascontiguousarray(b.T)).T[:, :]
            assert not ta.is_contiguous()
        for out in (getattr(tgrad, name)(ta, tb), operator(ta, tb), getattr(ta, name)(tb)):
            got = out.numpy()
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want), (name, a, b)
            assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_bitwise_with_python_numbers(name):
    ref, operator = BINARY[name]
    x = _ints(17)
    t = tgrad.tensor(x)
    for n in (5, -3, True):
        assert np.array_equal(operator(t, n).numpy(), ref(x, np.int64(n)))
        assert np.array_equal(operator(n, t).numpy(), ref(np.int64(n), x))  # reflected
    m = _bools(17)
    out = operator(tgrad.tensor(m), True)  # bool & bool number stays bool
    assert out.dtype is tgrad.bool and np.array_equal(out.numpy(), ref(m, True))
    out = operator(tgrad.tensor(m), 3)  # bool & int -> int64 (PyTorch)
    assert out.dtype is tgrad.int64 and np.array_equal(out.numpy(), ref(m.astype(np.int64), 3))


def test_invert_is_bitwise_not():
    x = _ints(1025)
    for arr in (x, x.astype(np.int32), _bools(17), _ints(), _ints(0), _ints(6, 8)[:, ::3]):
        t = tgrad.tensor(arr)
        for out in (~t, tgrad.bitwise_not(t), t.bitwise_not()):
            got = out.numpy()
            assert got.dtype == arr.dtype and np.array_equal(got, np.invert(arr))
    assert np.array_equal((~tgrad.tensor(np.array([0, 5, -1]))).numpy(), [-1, -6, 0])
    # logical_not stays logical (a bool result) on integers
    assert tgrad.logical_not(tgrad.tensor([0, 5])).tolist() == [True, False]


@pytest.mark.parametrize("name", [*sorted(BINARY), "bitwise_not"])
def test_bitwise_rejects_floating_tensors(name):
    f = tgrad.tensor([1.5, 2.0])
    args = (f,) if name == "bitwise_not" else (f, tgrad.tensor([1, 2]))
    kernel = {"bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}.get(name, name)
    # PyTorch's type and its kernel's text, after tgrad's explanation
    with pytest.raises(NotImplementedError, match=f"^{name}: not implemented for float32.*bool "
                       f"or integer tensors.*\"{kernel}_cpu\" not implemented for 'Float'"):
        getattr(tgrad, name)(*args)
    if name != "bitwise_not":
        with pytest.raises(RuntimeError, match=f"^{name}: not implemented for float32 "
                                               r"\(operands int64 and float\)"):
            getattr(tgrad, name)(tgrad.tensor([1, 2]), 1.5)


def test_inplace_bitwise_writes_through_views():
    x = tgrad.tensor(np.array([12, 10, 7]))
    v = x[1:]
    v &= tgrad.tensor(np.array([6, 3]))
    assert x.tolist() == [12, 2, 3]
    v |= 8
    assert x.tolist() == [12, 10, 11]
    x ^= tgrad.tensor(np.array([1, 1, 1]))
    assert x.tolist() == [13, 11, 10]
    assert x.bitwise_and_(6) is x and x.tolist() == [4, 2, 2]
    m = tgrad.tensor([True, False])
    with pytest.raises(RuntimeError, match="bitwise_and_: result type Long can't be cast to "
                                           "the desired output type Bool"):
        m &= tgrad.tensor([1, 2])


def test_add_sub_alpha_values_and_gradients():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    ta = tgrad.tensor(a, requires_grad=True)
    tb = tgrad.tensor(b, requires_grad=True)
    assert np.allclose(tgrad.add(ta, tb, alpha=2.5).detach().numpy(), a + 2.5 * b,
                       rtol=1e-15, atol=0)
    assert np.allclose(ta.sub(tb, alpha=-3).detach().numpy(), a + 3 * b, rtol=1e-15, atol=0)
    assert np.allclose(tgrad.add(ta, 2, alpha=3).detach().numpy(), a + 6, rtol=1e-15, atol=0)
    assert tgrad.add(tgrad.tensor([1, 2]), tgrad.tensor([3, 4]), alpha=2).tolist() == [7, 10]
    g = RNG.standard_normal((3, 4))
    tgrad.sub(ta, tb, alpha=0.5).backward(tgrad.tensor(g))
    assert np.allclose(ta.grad.numpy(), g, rtol=1e-15, atol=0)
    assert np.allclose(tb.grad.numpy(), -0.5 * g.sum(0), rtol=1e-14, atol=1e-15)
    for fn in (lambda x, y: tgrad.add(x, y, alpha=-1.5), lambda x, y: x.sub(y, alpha=2.0)):
        assert gradcheck(fn, (ta.detach().requires_grad_(), tb.detach().requires_grad_()))
        assert gradgradcheck(fn, (ta.detach().requires_grad_(), tb.detach().requires_grad_()))


def test_alpha_must_be_integral_for_integer_tensors():
    with pytest.raises(RuntimeError, match="^add: for integral input tensors, argument alpha "
                                           r"must not be a floating point number \(got 0.5\)"):
        tgrad.add(tgrad.tensor([1, 2]), tgrad.tensor([1, 1]), alpha=0.5)
    with pytest.raises(TypeError):
        tgrad.sub(tgrad.tensor([1.0]), 1, 2)  # alpha is keyword-only, as in PyTorch


# ------------------------------------------------------------------------------ shifts
SHIFTS = {"bitwise_left_shift": lambda a, b: a << b, "bitwise_right_shift": lambda a, b: a >> b}


def _shift_ref(name: str, a: np.ndarray, b: np.ndarray, dt) -> np.ndarray:
    """PyTorch's shifts, element by element in Python ints: a count outside [0, width)
    gives 0 (left) or the sign (right: a >> (width - 1)); left shifts wrap to the dtype."""
    bits = np.dtype(dt).itemsize * 8
    a, b = np.broadcast_arrays(a.astype(dt), b.astype(dt))
    out = []
    for x, s in zip(a.ravel().tolist(), b.ravel().tolist()):
        if name == "bitwise_left_shift":
            v = (x << s) if 0 <= s < bits else 0
            v &= (1 << bits) - 1
            out.append(v - (1 << bits) if v >= 1 << (bits - 1) else v)
        else:
            out.append(x >> s if 0 <= s < bits else x >> (bits - 1))
    return np.array(out, dtype=dt).reshape(a.shape)


def _shift_pairs():
    """(a, b, result dtype): counts inside and outside [0, width), mixed widths, broadcast,
    0-d, empty, a bool shifted by an int, non-contiguous."""
    counts = np.array([0, 1, 5, 31, 32, 33, 62, 63, 64, 65, -1, -64, 200, 7, 3, 12, 40])
    big = _ints(17)
    return [
        (big, counts, np.int64),
        (_ints(17, dtype=np.int32), counts.astype(np.int32), np.int32),
        (_ints(17, dtype=np.int32), counts, np.int64),
        (_bools(17), counts, np.int64),
        (_ints(3, 1), RNG.integers(-3, 70, 4), np.int64),
        (_ints(), np.array(3), np.int64),
        (_ints(0), _ints(0), np.int64),
        (_ints(6, 8).T, RNG.integers(0, 64, (8, 6)), np.int64),  # transposed, non-contiguous
    ]


@pytest.mark.parametrize("name", sorted(SHIFTS))
def test_shifts_match_pytorch(name):
    operator = SHIFTS[name]
    for a, b, dt in _shift_pairs():
        want = _shift_ref(name, a, b, dt)
        ta, tb = tgrad.tensor(a), tgrad.tensor(b)
        if a.ndim == 2 and a.strides[0] < a.strides[1]:  # keep the transposed layout
            ta = tgrad.tensor(np.ascontiguousarray(a.T)).T
            assert not ta.is_contiguous()
        for out in (getattr(tgrad, name)(ta, tb), operator(ta, tb), getattr(ta, name)(tb)):
            got = out.numpy()
            assert got.dtype == want.dtype and got.shape == want.shape, (name, a.shape, b.shape)
            assert np.array_equal(got, want), (name, a, b)
            assert out.grad_fn is None


@pytest.mark.parametrize("name", sorted(SHIFTS))
def test_shifts_with_python_numbers(name):
    operator = SHIFTS[name]
    x = _ints(17, dtype=np.int32)
    t = tgrad.tensor(x)
    for n in (0, 3, 31, 32, 100, -2):
        out = operator(t, n)  # an int number keeps the tensor's dtype (int32)
        assert out.dtype is tgrad.int32
        assert np.array_equal(out.numpy(), _shift_ref(name, x, np.array(n), np.int32))
    s = RNG.integers(-2, 40, 17).astype(np.int32)
    out = operator(5, tgrad.tensor(s))  # reflected: 5 << t
    assert out.dtype is tgrad.int32
    assert np.array_equal(out.numpy(), _shift_ref(name, np.array(5), s, np.int32))


@pytest.mark.parametrize("name", sorted(SHIFTS))
def test_shifts_reject_float_and_bool(name):
    for a, b, what in ((tgrad.tensor([1.5]), tgrad.tensor([1]), "float32"),
                       (tgrad.tensor([4]), 1.0, "float32"),
                       (tgrad.tensor([True]), tgrad.tensor([False]), "bool")):
        with pytest.raises(RuntimeError, match=f"^{name}: not implemented for {what}.*"
                                               "integer tensors"):
            getattr(tgrad, name)(a, b)


def test_inplace_shifts_write_through_views():
    x = tgrad.tensor(np.array([1, 3, -16]))
    v = x[1:]
    v <<= 2
    assert x.tolist() == [1, 12, -64]
    x >>= tgrad.tensor(np.array([0, 1, 3]))
    assert x.tolist() == [1, 6, -8]
    assert x.bitwise_left_shift_(64) is x and x.tolist() == [0, 0, 0]
    y = tgrad.tensor(np.array([-5, 5]))
    assert y.bitwise_right_shift_(99).tolist() == [-1, 0]
    i = tgrad.tensor(np.array([1, -2], dtype=np.int32))
    i <<= tgrad.tensor(np.array([31, 30]))  # an int64 count: the result is cast back (PyTorch)
    assert i.dtype is tgrad.int32 and i.tolist() == [-2**31, -2**31]


# ------------------------------------------------------------------------------ gcd, lcm
def test_gcd_lcm_match_python():
    import math
    rng = np.random.default_rng(3)
    a = rng.integers(-10**6, 10**6, 200)
    b = rng.integers(-10**6, 10**6, 200)
    a[:5], b[3:8] = 0, 0
    fib = [1, 1]
    while fib[-1] < 2**62:
        fib.append(fib[-1] + fib[-2])
    big_a, big_b = np.array([fib[-1], 2**62, -(2**61)]), np.array([fib[-2], 6, 2**40])
    for x, y in ((a, b), (big_a, big_b), (a.astype(np.int32), b.astype(np.int32))):
        g = tgrad.gcd(tgrad.tensor(x), tgrad.tensor(y))
        assert g.dtype == tgrad.tensor(x).dtype
        assert g.tolist() == [math.gcd(int(p), int(q)) for p, q in zip(x, y)]
    s, t = a % 5000 - 2500, b % 5000 - 2500
    want = [abs(int(p) * int(q)) // math.gcd(int(p), int(q)) if p and q else 0
            for p, q in zip(s, t)]
    assert tgrad.lcm(tgrad.tensor(s), tgrad.tensor(t)).tolist() == want
    x = tgrad.tensor(np.array([12, 18]))
    assert x.gcd(tgrad.tensor(8)).tolist() == [4, 2]
    assert x.lcm(tgrad.tensor(8)).tolist() == [24, 72]
    with pytest.raises(TypeError, match=r"gcd\(\): argument 'other' \(position 1\) must be "
                                        r"Tensor, not int"):
        x.gcd(8)  # a number operand: PyTorch's TypeError
    assert x.gcd_(tgrad.tensor(np.array([8, 8]))) is x and x.tolist() == [4, 2]
    bcast = tgrad.gcd(tgrad.tensor(np.array([[6], [10]])), tgrad.tensor(np.array([4, 15])))
    assert bcast.tolist() == [[2, 3], [2, 5]]
    for name in ("gcd", "lcm"):
        with pytest.raises(RuntimeError, match=f"^{name}: not implemented for float32.*integer "
                                               "tensors"):
            getattr(tgrad, name)(tgrad.tensor([1.0]), tgrad.tensor([2.0]))
        with pytest.raises(RuntimeError, match=f"^{name}: not implemented for bool"):
            getattr(tgrad, name)(tgrad.tensor([True]), tgrad.tensor([False]))
