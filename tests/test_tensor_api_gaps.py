"""PyTorch Tensor methods and functions filling gaps in tgrad's API: in-place view ops
(unsqueeze_, squeeze_, t_, transpose_, swapdims_, as_strided_), as_strided, empty_strided,
top-level in-place functions, in-place forms of special/matmul ops, nextafter, frexp, rsub,
can_cast, resize_, apply_/map_ (values against NumPy float64, gradcheck)."""

import math
import re

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

A = np.array([[0.5, -1.5, 2.0], [0.25, 3.0, -0.75]])


def leaf(arr):
    return tgrad.tensor(arr, dtype=tgrad.float64, requires_grad=True)


def f64(arr):
    return tgrad.tensor(arr, dtype=tgrad.float64)


# ---------------------------------------------------------------- in-place view ops
VIEW_CASES = [
    ("unsqueeze_", lambda t: t.unsqueeze_(1), lambda a: a[:, None], "UnsqueezeBackward1"),
    ("unsqueeze_neg", lambda t: t.unsqueeze_(-1), lambda a: a[..., None], "UnsqueezeBackward1"),
    ("squeeze_", lambda t: t.reshape(2, 1, 3).squeeze_(), lambda a: a, "SqueezeBackward3"),
    ("squeeze_dim", lambda t: t.reshape(2, 1, 3).squeeze_(1), lambda a: a, "SqueezeBackward4"),
    ("squeeze_dims", lambda t: t.reshape(1, 2, 1, 3).squeeze_((0, 2)), lambda a: a,
     "SqueezeBackward5"),
    ("transpose_", lambda t: t.transpose_(0, 1), lambda a: a.T, "TransposeBackward1"),
    ("swapdims_", lambda t: t.swapdims_(1, 0), lambda a: a.T, "TransposeBackward1"),
    ("swapaxes_", lambda t: t.swapaxes_(0, -1), lambda a: a.T, "TransposeBackward1"),
    ("t_", lambda t: t.t_(), lambda a: a.T, "TBackward1"),
    ("as_strided_", lambda t: t.as_strided_((3, 2), (1, 3)), lambda a: a.T, "AsStridedBackward1"),
]


@pytest.mark.parametrize("name,op,ref,node", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_inplace_view_ops(name, op, ref, node):
    x = leaf(A)
    y = x * 2.0
    storage = y._storage
    out = op(y)  # the squeeze_ cases work on a reshaped view of y
    assert out._storage is storage and (out is y or out._base is y)
    y = out
    np.testing.assert_array_equal(y.detach().numpy(), ref(2.0 * A))
    assert type(y.grad_fn).__name__ == node
    w = np.arange(y.numel(), dtype=np.float64).reshape(y.shape)
    (y * f64(w)).sum().backward()
    # d/dx sum(w * ref(2 x)) = 2 * (w laid back out as x)
    back = np.zeros_like(A)
    ref_idx = ref(np.arange(A.size).reshape(A.shape)).reshape(-1)
    back.reshape(-1)[ref_idx] = 2.0 * w.reshape(-1)
    np.testing.assert_allclose(x.grad.numpy(), back)
    assert gradcheck(lambda a: op(a * 1.0), (leaf(A),))


def test_inplace_view_ops_same_object_and_version():
    y = tgrad.zeros(2, 3)
    v0 = y._version
    assert y.unsqueeze_(0) is y and y.shape == (1, 2, 3) and y._version == v0 + 1
    assert y.squeeze_() is y and y.shape == (2, 3)
    assert y.t_() is y and y.shape == (3, 2) and y.stride() == (1, 3)
    z = tgrad.zeros(3)
    z.t_()
    assert z.shape == (3,)
    with pytest.raises(RuntimeError, match="t_\\(\\) expects a tensor with <= 2 dimensions"):
        tgrad.zeros(2, 2, 2).t_()
    with pytest.raises(IndexError):
        y.transpose_(0, 5)


def test_inplace_view_ops_on_a_leaf_requiring_grad():
    x = leaf(A)
    for op in (lambda t: t.unsqueeze_(0), lambda t: t.t_(), lambda t: t.squeeze_(),
               lambda t: t.transpose_(0, 1), lambda t: t.as_strided_((3,), (1,))):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op(x)
    with tgrad.no_grad():
        x.t_()
    assert x.shape == (3, 2) and x.is_leaf and x.requires_grad


def test_inplace_view_op_on_a_view_then_write():
    a = leaf(np.arange(6.0))
    b = a * 1.0
    v = b[1:5]
    v.unsqueeze_(0)
    assert v.shape == (1, 4) and v._base is b
    v.mul_(f64(np.arange(4.0)))
    np.testing.assert_array_equal(b.detach().numpy(), [0, 0, 2, 6, 12, 5])
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 0, 1, 2, 3, 1])


def test_views_taken_before_the_base_is_transposed_in_place():
    # the view is re-derived from storage geometry (as PyTorch's AsStridedBackward)
    a = leaf(np.arange(6.0).reshape(2, 3))
    b = a * 1.0
    v = b[0]
    b.t_()
    v.mul_(10.0)
    np.testing.assert_array_equal(b.detach().numpy(), [[0, 3], [10, 4], [20, 5]])
    (b * f64(np.arange(6.0).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0, 20, 40], [1, 3, 5]])
    a = leaf(np.arange(6.0).reshape(2, 3))
    b = a * 1.0
    v = b[0]
    b.t_()
    b.mul_(2.0)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    (v * f64(np.arange(3.0))).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0, 2, 4], [0, 0, 0]])


# ---------------------------------------------------------------- as_strided, empty_strided
def test_as_strided_values_and_grad():
    x = leaf(np.arange(12.0))
    y = tgrad.as_strided(x, (3, 3), (2, 1), 1)
    ref = np.lib.stride_tricks.as_strided(np.arange(12.0)[1:], (3, 3), (16, 8))
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    assert y._base is x and type(y.grad_fn).__name__ == "AsStridedBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 2, 1, 2, 1, 1, 0, 0, 0, 0])
    z = leaf(np.random.default_rng(0).standard_normal((3, 4)))
    assert gradcheck(lambda a: a.as_strided((2, 2), (1, 2), 3), (z,))
    assert gradgradcheck(lambda a: a.as_strided((2, 2), (1, 2), 3), (z,))
    assert gradcheck(lambda a: a.t().as_strided((2, 3), (3, 1)), (z,))
    # an input that overlaps itself (expanded): its positions' gradient is shared out
    e = leaf([[1.0], [2.0], [3.0]])
    g = tgrad.autograd.grad(e.expand(3, 4).as_strided((2, 2), (1, 1), 0).sum(), e)[0]
    np.testing.assert_array_equal(g.numpy(), [[1.0], [2.0], [1.0]])
    assert gradcheck(lambda a: a.expand(3, 4).as_strided((2, 2), (1, 1), 0), (e,))


def test_as_strided_write_through_and_errors():
    b = leaf(np.arange(6.0))
    c = b * 1.0
    c.as_strided((2,), (2,), 1).mul_(3.0)
    np.testing.assert_array_equal(c.detach().numpy(), [0, 3, 2, 9, 4, 5])
    c.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [1, 3, 1, 3, 1, 1])
    x = tgrad.zeros(6)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        x.as_strided((3, 3), (1, 1), 2)
    with pytest.raises(RuntimeError, match="Negative strides"):
        x.as_strided((2,), (-1,))
    with pytest.raises(RuntimeError, match="mismatch in length"):
        x.as_strided((2, 2), (1,))


def test_empty_strided():
    t = tgrad.empty_strided((2, 3), (1, 2), dtype=tgrad.float64)
    assert t.shape == (2, 3) and t.stride() == (1, 2) and t._base is None
    assert t.dtype is tgrad.float64 and not t.is_contiguous()
    t.copy_(f64(A))
    np.testing.assert_array_equal(t.numpy(), A)
    u = t.new_empty_strided((3,), (2,))
    assert u.shape == (3,) and u.stride() == (2,) and u.dtype is tgrad.float64
    assert tgrad.empty_strided((0, 3), (3, 1)).numel() == 0


# ---------------------------------------------------------------- top-level in-place
TOP = [("abs_", (), np.abs), ("exp_", (), np.exp), ("neg_", (), np.negative),
       ("relu_", (), lambda a: np.maximum(a, 0)), ("sigmoid_", (), lambda a: 1 / (1 + np.exp(-a))),
       ("square_", (), np.square), ("tanh_", (), np.tanh), ("sin_", (), np.sin),
       ("zero_", (), np.zeros_like), ("clamp_", (-1.0, 1.0), lambda a: np.clip(a, -1, 1)),
       ("fill_", (2.5,), lambda a: np.full_like(a, 2.5)),
       ("sinc_", (), np.sinc), ("erf_", (), np.vectorize(math.erf)), ("trunc_", (), np.trunc)]


@pytest.mark.parametrize("name,args,ref", TOP, ids=[t[0] for t in TOP])
def test_top_level_inplace(name, args, ref):
    x = f64(A)
    out = getattr(tgrad, name)(x, *args)
    assert out is x and x._version == 1
    np.testing.assert_allclose(x.numpy(), ref(A), rtol=1e-12, atol=1e-15)


def test_top_level_inplace_positive_domain_and_index_put():
    p = np.abs(A) + 0.5
    for name, ref in (("log_", np.log), ("sqrt_", np.sqrt), ("rsqrt_", lambda a: a ** -0.5),
                      ("log1p_", np.log1p), ("reciprocal_", np.reciprocal)):
        x = f64(p)
        getattr(tgrad, name)(x)
        np.testing.assert_allclose(x.numpy(), ref(p), rtol=1e-12)
    x = f64(A)
    tgrad.index_put_(x, (tgrad.tensor([0, 1]), tgrad.tensor([2, 0])), f64([7.0, 8.0]))
    ref = A.copy()
    ref[[0, 1], [2, 0]] = [7.0, 8.0]
    np.testing.assert_array_equal(x.numpy(), ref)
    for name in ("abs_", "exp_", "log_", "neg_", "relu_", "sigmoid_", "square_", "zero_",
                 "clamp_", "fill_", "index_put_", "sqrt_", "tanh_", "as_strided_", "addmv_"):
        assert hasattr(tgrad, name), name
    with pytest.raises(TypeError):
        tgrad.abs_([1.0])


def test_top_level_inplace_records_autograd():
    x = leaf(A)
    y = x * 1.0
    tgrad.exp_(y)
    assert type(y.grad_fn).__name__ == "ExpBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(A), rtol=1e-12)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tgrad.exp_(x)


def test_fill_out_of_place():
    x = f64(A)
    y = tgrad.fill(x, 3.0)
    assert y is not x
    np.testing.assert_array_equal(y.numpy(), np.full_like(A, 3.0))
    np.testing.assert_array_equal(x.numpy(), A)


# ---------------------------------------------------------------- in-place forms of ops
def _inplace_grad(op, ref_fn, arr, rtol=1e-10):
    x = leaf(arr)
    y = x * 1.0
    out = op(y)
    assert out is y
    np.testing.assert_allclose(y.detach().numpy(), ref_fn(arr), rtol=rtol)
    assert gradcheck(lambda a: op(a * 1.0), (leaf(arr),))


def test_inplace_special_forms():
    p = np.abs(A) + 0.6
    _inplace_grad(lambda t: t.sinc_(), np.sinc, A)
    # trigamma by its series sum_k 1 / (a + k)^2 (to k = 10^6, plus the tail 1 / (a + 10^6))
    ks = np.arange(1_000_000.0)
    _inplace_grad(lambda t: t.polygamma_(1), np.vectorize(
        lambda a: math.fsum(1.0 / (a + ks) ** 2) + 1.0 / (a + 1e6) + 0.5 / (a + 1e6) ** 2), p)
    _inplace_grad(lambda t: t.mvlgamma_(2), np.vectorize(  # lgamma(a) + lgamma(a - 1/2)
        lambda a: math.lgamma(a) + math.lgamma(a - 0.5) + 0.5 * math.log(math.pi)), p + 0.5)
    _inplace_grad(lambda t: t.float_power_(2.5), lambda a: a ** 2.5, p)
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float"):
        tgrad.ones(2).float_power_(2)
    other = np.abs(A.T.reshape(2, 3)) + 0.3
    x = f64(p)
    x.igamma_(f64(other))
    # against the out-of-place op (tests/test_incomplete_gamma.py checks it independently)
    np.testing.assert_array_equal(x.numpy(), tgrad.special.gammainc(f64(p), f64(other)).numpy())
    x = f64(p)
    x.igammac_(f64(other))
    np.testing.assert_array_equal(x.numpy(),
                                  tgrad.special.gammaincc(f64(p), f64(other)).numpy())
    i = tgrad.tensor([0, 5, -3])
    i.bitwise_not_()
    assert i.tolist() == [-1, -6, 2]


def test_inplace_matmul_forms():
    rng = np.random.default_rng(1)
    m1, m2 = rng.standard_normal((2, 4)), rng.standard_normal((4, 3))
    _inplace_grad(lambda t: t.addmm_(f64(m1), f64(m2), beta=0.5, alpha=2.0),
                  lambda a: 0.5 * a + 2.0 * m1 @ m2, A)
    b1, b2 = rng.standard_normal((5, 2, 4)), rng.standard_normal((5, 4, 3))
    _inplace_grad(lambda t: t.addbmm_(f64(b1), f64(b2)), lambda a: a + (b1 @ b2).sum(0), A)
    _inplace_grad(lambda t: t.baddbmm_(f64(b1), f64(b2)), lambda a: a + b1 @ b2,
                  np.broadcast_to(A, (5, 2, 3)).copy())
    v = rng.standard_normal(4)
    _inplace_grad(lambda t: t.addmv_(f64(m1), f64(v)), lambda a: a + m1 @ v, A[:, 0].copy())
    v1, v2 = rng.standard_normal(2), rng.standard_normal(3)
    _inplace_grad(lambda t: t.addr_(f64(v1), f64(v2)), lambda a: a + np.outer(v1, v2), A)
    x = f64(A[:, 0].copy())
    tgrad.addmv_(x, f64(m1), f64(v))
    np.testing.assert_allclose(x.numpy(), A[:, 0] + m1 @ v, rtol=1e-12)


# ---------------------------------------------------------------- nextafter, frexp, rsub
def test_nextafter():
    a, b = np.array([1.0, 2.0, 0.0, -1.0]), np.array([2.0, 1.0, 1.0, -1.0])
    np.testing.assert_array_equal(tgrad.nextafter(f64(a), f64(b)).numpy(), np.nextafter(a, b))
    x32 = tgrad.tensor(a.astype(np.float32))
    r = x32.nextafter(tgrad.tensor(b.astype(np.float32)))
    assert r.dtype is tgrad.float32
    np.testing.assert_array_equal(r.numpy(), np.nextafter(a.astype(np.float32),
                                                          b.astype(np.float32)))
    x = f64(a)
    assert x.nextafter_(f64(b)) is x
    np.testing.assert_array_equal(x.numpy(), np.nextafter(a, b))
    mixed = tgrad.nextafter(f64(a), tgrad.tensor(b.astype(np.float32)))  # promoted, as PyTorch
    assert mixed.dtype is tgrad.float64
    np.testing.assert_array_equal(mixed.numpy(), np.nextafter(a, b))


def test_frexp():
    a = np.array([0.0, -3.0, math.inf, 1e-310, 5.5, 0.3])
    m, e = tgrad.frexp(f64(a))
    rm, re = np.frexp(a)
    np.testing.assert_array_equal(m.numpy(), rm)
    np.testing.assert_array_equal(e.numpy(), re)
    assert e.dtype is tgrad.int32 and m.dtype is tgrad.float64
    out = f64(a[[1, 4, 5]]).frexp()
    assert out.mantissa.shape == (3,) and out.exponent.tolist() == [2, 3, -1]
    assert gradcheck(lambda t: tgrad.frexp(t).mantissa, (leaf([0.3, -3.0, 7.0]),))
    with pytest.raises(RuntimeError, match="floating-point"):
        tgrad.frexp(tgrad.tensor([1, 2]))


def test_rsub_and_can_cast():
    b = np.array([[1.0, -2.0, 0.5], [3.0, 0.75, -1.0]])
    np.testing.assert_allclose(tgrad.rsub(f64(A), f64(b), alpha=2).numpy(), b - 2 * A)
    np.testing.assert_allclose(tgrad.rsub(f64(A), 3.0).numpy(), 3.0 - A)
    assert gradcheck(lambda x, y: tgrad.rsub(x, y, alpha=1.5), (leaf(A), leaf(b)))
    assert not tgrad.can_cast(tgrad.float32, tgrad.int32)
    assert tgrad.can_cast(tgrad.int64, tgrad.float16)
    assert not tgrad.can_cast(tgrad.int32, tgrad.bool)
    assert tgrad.can_cast(tgrad.bool, tgrad.int32)
    assert tgrad.can_cast(tgrad.float64, tgrad.float16)


# ---------------------------------------------------------------- resize_, apply_, map_
def test_resize():
    x = tgrad.arange(6.0, dtype=tgrad.float64)
    assert x.resize_(2, 2) is x
    np.testing.assert_array_equal(x.numpy(), [[0.0, 1.0], [2.0, 3.0]])
    assert x.is_contiguous() and x._version == 1
    x.resize_as_(tgrad.zeros(3, 2))
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(3, 2))
    tgrad.resize_as_(x, tgrad.zeros(6))
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0))
    with pytest.raises(RuntimeError, match="growing the storage"):
        x.resize_(2, 4)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        leaf(A).resize_(3)


def test_apply_and_map():
    x = f64(A)
    assert x.apply_(lambda v: v * 2 + 1) is x
    np.testing.assert_array_equal(x.numpy(), A * 2 + 1)
    y = f64(A)
    y.map_(f64([10.0, 20.0, 30.0]), lambda a, b: a - b)
    np.testing.assert_array_equal(y.numpy(), A - [10.0, 20.0, 30.0])
    i = tgrad.tensor([1, 2, 3])
    i.apply_(lambda v: v * v)
    assert i.tolist() == [1, 4, 9] and i.dtype is tgrad.int64
    with pytest.raises(RuntimeError, match="requires grad"):
        (leaf(A) * 1.0).apply_(abs)
    with pytest.raises(RuntimeError, match="requires grad"):
        f64(A).map_(leaf(A), lambda a, b: a)


def test_apply_and_map_check_the_callable_result_and_other():
    for bad, name in ((None, "NoneType"), ("a", "str"), (1 + 2j, "complex")):
        with pytest.raises(TypeError, match=f"apply_\\(\\): the callable must return a real "
                                            f"number, not {name}"):
            f64([1.0, 2.0]).apply_(lambda v, bad=bad: bad)
    c = tgrad.tensor([1 + 1j, 2.0])
    c.apply_(lambda v: v * 1j)  # a complex self takes complex results
    np.testing.assert_array_equal(c.numpy(), [-1 + 1j, 2j])
    x = f64([1.0, 2.0])
    x.apply_(lambda v: tgrad.tensor(v + 0.5))  # a one-element tensor is a number
    assert x.tolist() == [1.5, 2.5]
    with pytest.raises(RuntimeError, match="apply_\\(\\): value 300 .* cannot be converted "
                                           "to type uint8 without overflow"):
        tgrad.tensor([1], dtype=tgrad.uint8).apply_(lambda v: 300)
    with pytest.raises(TypeError, match="map_: expected tgrad.DoubleTensor for 'other' "
                                        "\\(got tgrad.LongTensor\\)"):
        f64([1.0, 2.0]).map_(tgrad.tensor([1, 2]), lambda a, b: a + b)
    with pytest.raises(RuntimeError, match="map_: .*'other' of shape \\[2\\] cannot be "
                                           "broadcast to self's shape \\[1\\]"):
        f64([1.0]).map_(f64([1.0, 2.0]), lambda a, b: a + b)
    y = f64([[1.0, 2.0]])
    y.map_(f64([10.0]), lambda a, b: a * b)  # other broadcast to self's shape
    assert y.tolist() == [[10.0, 20.0]]


# ---------------------------------------------------------------- cuda (Triton interpreter)
_CUDA_SCRIPT = """
import json, tgrad
d = "cuda"
x = tgrad.arange(12., dtype=tgrad.float64, device=d).requires_grad_()
y = x.as_strided((3, 3), (2, 1), 1)
y.sum().backward()
b = tgrad.arange(6., dtype=tgrad.float64, device=d).reshape(2, 3).requires_grad_()
c = b * 1.0
v = c[0]
c.t_()
v.mul_(10.0)
(c * tgrad.arange(6., dtype=tgrad.float64, device=d).reshape(3, 2)).sum().backward()
e = tgrad.empty_strided((2, 3), (1, 2), device=d)
m, ex = tgrad.frexp(tgrad.tensor([5.5, 0.25], device=d))
print(json.dumps({"y": y.detach().cpu().tolist(), "xg": x.grad.cpu().tolist(),
                  "c": c.detach().cpu().tolist(), "bg": b.grad.cpu().tolist(),
                  "es": list(e.stride()), "m": m.cpu().tolist(), "ex": ex.cpu().tolist()}))
"""


def test_as_strided_and_inplace_views_on_cuda_interpreted():
    from interpreted import run_json
    r = run_json(_CUDA_SCRIPT)
    assert r["y"] == [[1, 2, 3], [3, 4, 5], [5, 6, 7]]
    assert r["xg"] == [0, 1, 1, 2, 1, 2, 1, 1, 0, 0, 0, 0]
    assert r["c"] == [[0, 3], [10, 4], [20, 5]] and r["bg"] == [[0, 20, 40], [1, 3, 5]]
    assert r["es"] == [1, 2] and r["m"] == [0.6875, 0.5] and r["ex"] == [3, -1]


# ---------------------------------------------------------------- type(), numpy(), layout
def test_type_names_and_casts():
    names = {tgrad.float32: "FloatTensor", tgrad.float64: "DoubleTensor",
             tgrad.float16: "HalfTensor", tgrad.bfloat16: "BFloat16Tensor",
             tgrad.int32: "IntTensor", tgrad.int64: "LongTensor", tgrad.bool: "BoolTensor"}
    for dt, name in names.items():
        assert tgrad.zeros(2, dtype=dt).type() == "tgrad." + name
        y = tgrad.tensor([1.0, 0.0, 1.0]).type("tgrad." + name)
        assert y.dtype is dt and y.tolist() == [1, 0, 1]
    x = leaf([0.5, -1.5])
    assert x.type("tgrad.DoubleTensor") is x and x.type(tgrad.float64) is x
    y = x.type("tgrad.FloatTensor")
    assert y.dtype is tgrad.float32 and y.requires_grad
    y.sum().backward()
    assert x.grad.dtype is tgrad.float64 and x.grad.tolist() == [1.0, 1.0]
    assert x.type("float32").dtype is tgrad.float32  # a dtype name (Module.type's form)
    with pytest.raises(ValueError, match="invalid type: 'tgrad.FooTensor'"):
        x.type("tgrad.FooTensor")
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        x.type(5)


def test_numpy_of_requires_grad_tensor_inside_no_grad():
    x = tgrad.tensor([1.5, -2.0], requires_grad=True)
    for mode in (tgrad.no_grad, tgrad.inference_mode):
        with mode():
            np.testing.assert_array_equal(x.numpy(), np.array([1.5, -2.0], np.float32))
    with tgrad.set_grad_enabled(False):
        assert x.numpy().tolist() == [1.5, -2.0]
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires "
                                           r"grad. Use tensor.detach\(\).numpy\(\) instead."):
        x.numpy()


def test_clone_and_contiguous_memory_format():
    x = leaf(A)
    for fmt in (tgrad.contiguous_format, tgrad.preserve_format, None):
        y = x.clone(memory_format=fmt)
        np.testing.assert_array_equal(y.detach().numpy(), A)
        assert y.is_contiguous() and y.grad_fn is not None
    assert tgrad.clone(x, memory_format=tgrad.contiguous_format).shape == (2, 3)
    xt = f64(A).t()
    c = xt.contiguous(memory_format=tgrad.contiguous_format)
    assert c.is_contiguous() and c.stride() == (2, 1)
    np.testing.assert_array_equal(c.numpy(), A.T)
    x2 = f64(A)
    assert x2.contiguous(memory_format=tgrad.preserve_format) is x2
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the "
                                           "contiguous operator"):
        xt.contiguous(memory_format=tgrad.preserve_format)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last "
                                           "format"):
        x2.clone(memory_format=tgrad.channels_last)
    assert tgrad.zeros(1, 2, 3, 4).clone(memory_format=tgrad.channels_last).stride() == \
        (24, 1, 8, 2)
    with pytest.raises(TypeError, match="argument 'memory_format' must be "
                                        "tgrad.memory_format, not str"):
        x2.clone(memory_format="contiguous_format")
    assert isinstance(tgrad.preserve_format, tgrad.memory_format)
    assert gradcheck(lambda t: t.t().contiguous(memory_format=tgrad.contiguous_format) * 2.0,
                     (leaf(A),))


def test_matrix_transposes_of_0d_are_the_tensor_with_a_warning():
    x = tgrad.tensor(3.0, requires_grad=True)
    for attr, text in (("mT", "This function is the identity in these cases."),
                       ("H", "Consider using x.conj()."), ("mH", "Consider using x.conj().")):
        with pytest.warns(UserWarning, match=rf"Tensor.{attr} is deprecated on 0-D tensors. "
                                             rf"{re.escape(text)}"):
            y = getattr(x, attr)
        assert y is x and y.item() == 3.0
    for attr in ("mT", "H", "mH"):  # 1-D still raises
        with pytest.raises(RuntimeError, match=f"tensor.{attr} is only supported on matrices"):
            getattr(tgrad.tensor([3.0]), attr)


def test_asarray_of_requires_grad_tensor_raises_like_numpy():
    x = tgrad.tensor([1.5, -2.0], requires_grad=True)
    for conv in (np.asarray, np.array):
        with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that "
                                               r"requires grad"):
            conv(x)
    np.testing.assert_array_equal(np.asarray(x.detach()), np.array([1.5, -2.0], np.float32))
    with tgrad.no_grad():
        assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.asarray(tgrad.ones(2), dtype=np.float64).tolist() == [1.0, 1.0]


def test_like_factories_take_input_by_keyword_and_empty_takes_memory_format():
    # PyTorch's parameter name is ``input`` (zeros_like(input=x)); empty(memory_format=...)
    # takes contiguous_format and gives PyTorch's error for preserve_format
    x = tgrad.tensor([[1.5, 2.5]])
    for name, fill in (("zeros_like", 0.0), ("ones_like", 1.0)):
        out = getattr(tgrad, name)(input=x, dtype=tgrad.float64)
        assert out.dtype is tgrad.float64 and out.tolist() == [[fill, fill]]
    assert tgrad.full_like(input=x, fill_value=7).tolist() == [[7.0, 7.0]]
    for name in ("empty_like", "rand_like", "randn_like"):
        assert getattr(tgrad, name)(input=x).shape == (1, 2)
    assert tgrad.empty(2, 3, memory_format=tgrad.contiguous_format).shape == (2, 3)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        tgrad.empty(2, memory_format=tgrad.preserve_format)
    assert tgrad.empty(1, 2, 3, 4, memory_format=tgrad.channels_last).stride() == (24, 1, 8, 2)


def test_resize_takes_size_and_expand_takes_implicit():
    x = tgrad.arange(4.0)
    assert x.resize_(size=(2, 2)).shape == (2, 2) and x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert tgrad.ones(1).expand(3, implicit=True).tolist() == [1.0, 1.0, 1.0]


def test_pytorchs_keyword_names_of_rng_device_and_promotion_helpers():
    st = tgrad.get_rng_state()
    first = tgrad.rand(2).tolist()
    tgrad.set_rng_state(new_state=st)
    assert tgrad.rand(2).tolist() == first
    tgrad.set_default_device(device="cpu")
    assert tgrad.get_default_device().type == "cpu"
    assert tgrad.promote_types(type1=tgrad.int64, type2=tgrad.float16) is tgrad.float16


def test_squeeze_and_count_nonzero_take_several_int_dims():
    # PyTorch's x.squeeze(1, 2), x.squeeze_(1, 2), x.count_nonzero(0, 1): the ints as a tuple
    x = tgrad.ones(2, 1, 1, 3)
    assert x.squeeze(1, 2).shape == (2, 3) and tgrad.squeeze(x, 1, 2).shape == (2, 3)
    assert x.clone().squeeze_(1, 2).shape == (2, 3) and x.squeeze(1).shape == (2, 1, 3)
    y = tgrad.tensor([[1, 0], [2, 3]])
    assert y.count_nonzero(0, 1).item() == 3 and y.count_nonzero(0).tolist() == [2, 1]
