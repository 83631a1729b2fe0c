"""Tensor basics: dtypes, type promotion, creation functions, interop, metadata, repr."""

import re

import ml_dtypes
import numpy as np
import pytest

import tgrad
from tgrad import dtypes

# ----------------------------------------------------------------------------- dtypes

ALL = [("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16), ("float32", np.float32),
       ("float64", np.float64), ("int32", np.int32), ("int64", np.int64), ("bool", np.bool_)]


@pytest.mark.parametrize("name,np_dtype", ALL)
def test_dtypes_exported_and_backed_by_numpy(name, np_dtype):
    dt = getattr(tgrad, name)
    assert isinstance(dt, tgrad.dtype)
    assert dt.np == np.dtype(np_dtype)
    assert repr(dt) == f"tgrad.{name}"
    t = tgrad.zeros(2, dtype=dt)
    assert t.dtype is dt
    assert t.numpy().dtype == np.dtype(np_dtype)


def test_dtype_aliases():
    assert tgrad.float is tgrad.float32 and tgrad.double is tgrad.float64
    assert tgrad.half is tgrad.float16 and tgrad.long is tgrad.int64
    assert tgrad.int is tgrad.int32


def test_default_float_dtype_and_inference():
    assert tgrad.get_default_dtype() is tgrad.float32
    assert tgrad.tensor([1.0, 2.0]).dtype is tgrad.float32
    assert tgrad.tensor(2.5).dtype is tgrad.float32
    assert tgrad.tensor([1, 2]).dtype is tgrad.int64
    assert tgrad.tensor(3).dtype is tgrad.int64
    assert tgrad.tensor([True, False]).dtype is tgrad.bool
    assert tgrad.tensor([1, 2.5]).dtype is tgrad.float32  # mixed int/float -> default float
    assert tgrad.tensor([True, 2]).dtype is tgrad.int64
    assert tgrad.tensor([]).dtype is tgrad.float32
    # NumPy arrays and NumPy scalars keep their dtype.
    assert tgrad.tensor(np.ones(2)).dtype is tgrad.float64
    assert tgrad.tensor(np.ones(2, np.int32)).dtype is tgrad.int32
    assert tgrad.tensor(np.float64(1.0)).dtype is tgrad.float64
    assert tgrad.zeros(2).dtype is tgrad.float32
    assert tgrad.rand(2).dtype is tgrad.float32


def test_set_default_dtype_round_trip():
    try:
        tgrad.set_default_dtype(tgrad.float64)
        assert tgrad.tensor([1.5]).dtype is tgrad.float64
        assert tgrad.ones(1).dtype is tgrad.float64
        assert (tgrad.tensor([1, 2]) * 0.5).dtype is tgrad.float64
    finally:
        tgrad.set_default_dtype(tgrad.float32)
    with pytest.raises(TypeError, match="floating-point"):
        tgrad.set_default_dtype(tgrad.int64)


def test_set_default_dtype_takes_only_the_four_float_dtypes():
    # PyTorch: a dtype object of float16/bfloat16/float32/float64; None (which NumPy reads
    # as float64), Python's float, a name and the float8 storage types are TypeErrors and
    # leave the default unchanged
    for bad in (None, float, "float64", np.float64):
        with pytest.raises(TypeError, match="invalid dtype object: only floating-point"):
            tgrad.set_default_dtype(bad)
    for f8 in (tgrad.float8_e4m3fn, tgrad.float8_e5m2, tgrad.float8_e8m0fnu):
        with pytest.raises(TypeError, match="only floating-point types are supported"):
            tgrad.set_default_dtype(f8)
    assert tgrad.get_default_dtype() is tgrad.float32
    assert tgrad.tensor([1.0]).dtype is tgrad.float32
    try:
        for dt in (tgrad.float16, tgrad.bfloat16, tgrad.float64):
            tgrad.set_default_dtype(dt)
            assert tgrad.tensor([1.0]).dtype is dt and tgrad.arange(2.0).dtype is dt
    finally:
        tgrad.set_default_dtype(tgrad.float32)


def test_bad_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="not support NumPy dtype uint32"):
        tgrad.tensor(np.ones(2, np.uint32))
    with pytest.raises(TypeError, match="is not a dtype"):
        tgrad.zeros(2, dtype=object())


# ------------------------------------------------------------------------ promotion

def T(dt, shape=(2,)):  # noqa: N802
    return tgrad.ones(shape, dtype=dt)


PROMOTION_CASES = [
    # (a, b, expected) ; a/b: (dtype, shape) or Python scalar
    ((tgrad.int64, (2,)), 2.5, tgrad.float32),      # a float scalar only changes the category
    ((tgrad.int32, (2,)), 5, tgrad.int32),          # same-category scalar does not upcast
    ((tgrad.float16, (2,)), 1.0, tgrad.float16),
    ((tgrad.bfloat16, (2,)), 1.0, tgrad.bfloat16),
    ((tgrad.float16, (2,)), (tgrad.bfloat16, (2,)), tgrad.float32),
    ((tgrad.float16, (2,)), (tgrad.float32, (2,)), tgrad.float32),
    ((tgrad.int32, (2,)), (tgrad.int64, (2,)), tgrad.int64),
    ((tgrad.int64, (2,)), (tgrad.float16, (2,)), tgrad.float16),
    ((tgrad.bool, (2,)), True, tgrad.bool),
    ((tgrad.bool, (2,)), 2, tgrad.int64),
    ((tgrad.bool, (2,)), 2.0, tgrad.float32),
    ((tgrad.float32, (2,)), (tgrad.float64, ()), tgrad.float32),   # 0-d same category
    ((tgrad.int64, (2,)), (tgrad.float64, ()), tgrad.float64),     # 0-d higher category
    ((tgrad.int32, (2,)), (tgrad.int64, ()), tgrad.int32),
    ((tgrad.float16, ()), (tgrad.float64, ()), tgrad.float64),     # both 0-d: promote
    ((tgrad.int64, ()), 2.5, tgrad.float32),
    ((tgrad.float64, ()), 2.5, tgrad.float64),
]


def _make(op):
    return T(*op) if isinstance(op, tuple) else op


@pytest.mark.parametrize("a,b,expected", PROMOTION_CASES)
def test_type_promotion_follows_pytorch(a, b, expected):
    x, y = _make(a), _make(b)
    assert tgrad.result_type(x, y) is expected
    assert (x + y).dtype is expected
    assert (y * x).dtype is expected


def test_promote_types_table():
    assert tgrad.promote_types(tgrad.float16, tgrad.bfloat16) is tgrad.float32
    assert tgrad.promote_types(tgrad.bool, tgrad.int32) is tgrad.int32
    assert tgrad.promote_types(tgrad.int64, tgrad.float16) is tgrad.float16
    assert tgrad.promote_types(tgrad.float32, tgrad.float64) is tgrad.float64


def test_integer_true_division_gives_default_float():
    r = tgrad.tensor([1, 3]) / tgrad.tensor([2, 2])
    assert r.dtype is tgrad.float32
    np.testing.assert_array_equal(r.numpy(), np.array([0.5, 1.5], np.float32))


def test_promoted_values_match_numpy():
    a = np.array([1.25, -2.5, 3.0], np.float16)
    r = tgrad.tensor(a) * 3.0
    assert r.dtype is tgrad.float16
    np.testing.assert_array_equal(r.numpy(), (a.astype(np.float64) * 3.0).astype(np.float16))


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "minimum"])
def test_float_tensor_with_python_float_both_sides(op, dt):
    # a float tensor and a Python float: the tensor's dtype, the number rounded to it (as
    # PyTorch's CPU kernels do), values against NumPy float64, and gradients for both sides
    a = np.array([0.5, 1.25, 3.0, 7.5], dt)
    s = 1.7
    fn = getattr(tgrad.ops.elementwise, op)  # (tgrad.maximum refuses numbers, as PyTorch)
    ref = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
                       "pow": "power", "maximum": "maximum", "minimum": "minimum"}[op])
    s_rounded = np.float64(np.dtype(dt).type(s))
    rtol = 1e-6 if dt == "float32" else 1e-15
    for left in (True, False):
        x = tgrad.tensor(a, requires_grad=True)
        y = fn(x, s) if left else fn(s, x)
        want = ref(a.astype(np.float64), s_rounded) if left else ref(s_rounded,
                                                                      a.astype(np.float64))
        assert y.dtype is getattr(tgrad, dt)
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=rtol)
        if dt == "float64":
            assert tgrad.autograd.gradcheck(lambda t, left=left: fn(t, s) if left else fn(s, t),
                                            (x,))


# ------------------------------------------------------------------------- creation

@pytest.mark.parametrize("fn", [tgrad.zeros, tgrad.ones, tgrad.empty, tgrad.rand, tgrad.randn])
def test_creation_shapes_varargs_tuple_list(fn):
    assert fn(2, 3).shape == (2, 3)
    assert fn((2, 3)).shape == (2, 3)
    assert fn([2, 3]).shape == (2, 3)
    assert fn(4).shape == (4,)
    assert fn(()).shape == ()
    with pytest.raises(TypeError, match="invalid combination of arguments" if fn in (
            tgrad.rand, tgrad.randn) else 'missing 1 required positional arguments: "size"'):
        fn()  # PyTorch's TypeError without a size
    assert fn(2, 3, dtype=tgrad.float64).dtype is tgrad.float64
    t = fn(2, requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_creation_values():
    np.testing.assert_array_equal(tgrad.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(tgrad.ones(3).numpy(), np.ones(3, np.float32))
    f = tgrad.full((2, 2), 7)
    assert f.dtype is tgrad.int64
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 7))
    assert tgrad.full((2,), 1.5).dtype is tgrad.float32
    assert tgrad.full((2,), True).dtype is tgrad.bool
    assert tgrad.full((2,), 3, dtype=tgrad.float64).dtype is tgrad.float64
    np.testing.assert_array_equal(tgrad.arange(5).numpy(), np.arange(5))
    assert tgrad.arange(5).dtype is tgrad.int64
    np.testing.assert_allclose(tgrad.arange(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75])
    assert tgrad.arange(0, 1, 0.25).dtype is tgrad.float32
    np.testing.assert_array_equal(tgrad.arange(2, 11, 3).numpy(), [2, 5, 8])
    with pytest.raises(RuntimeError, match="negative dimension"):
        tgrad.zeros(2, -1)


def test_like_functions_keep_dtype_and_shape():
    x = tgrad.tensor([[1, 2, 3]], dtype=tgrad.int32)
    for fn, val in ((tgrad.zeros_like, 0), (tgrad.ones_like, 1)):
        y = fn(x)
        assert y.shape == (1, 3) and y.dtype is tgrad.int32
        np.testing.assert_array_equal(y.numpy(), np.full((1, 3), val))
    y = tgrad.full_like(x, 9)
    np.testing.assert_array_equal(y.numpy(), np.full((1, 3), 9))
    assert tgrad.empty_like(x).shape == (1, 3)
    assert tgrad.zeros_like(x, dtype=tgrad.float64).dtype is tgrad.float64
    assert tgrad.ones_like(tgrad.zeros(2), requires_grad=True).requires_grad


def test_random_is_seeded_and_distributed():
    tgrad.manual_seed(123)
    a = tgrad.rand(1000).numpy()
    tgrad.manual_seed(123)
    b = tgrad.rand(1000).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.05
    n = tgrad.randn(20000).numpy().astype(np.float64)
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    with pytest.raises(RuntimeError, match="floating point"):
        tgrad.rand(2, dtype=tgrad.int64)


def test_tensor_copies_but_from_numpy_shares():
    a = np.zeros(3)
    t = tgrad.tensor(a)
    a[0] = 5
    assert t.numpy()[0] == 0
    s = tgrad.from_numpy(a)
    a[1] = 7
    assert s.numpy()[1] == 7
    s.add_(1)
    np.testing.assert_array_equal(a, [6, 8, 1])
    assert s.dtype is tgrad.float64
    with pytest.raises(TypeError, match="expected np.ndarray"):
        tgrad.from_numpy([1, 2])


def test_tensor_from_tensors_and_ragged_error():
    t = tgrad.tensor([tgrad.tensor(1.5), tgrad.tensor(2.5)])
    np.testing.assert_array_equal(t.numpy(), np.array([1.5, 2.5], np.float32))
    with pytest.raises(ValueError, match="irregular shape"):
        tgrad.tensor([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="and complex dtype can require gradients"):
        tgrad.tensor([1, 2], requires_grad=True)


# -------------------------------------------------------------------------- interop

def test_numpy_refuses_tensors_that_require_grad():
    x = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        x.numpy()
    assert "Can't call numpy() on Tensor that requires grad" in str(e.value)
    assert "tensor.detach().numpy()" in str(e.value)
    np.testing.assert_array_equal(x.detach().numpy(), np.ones(2, np.float32))
    # __array__ (np.asarray) goes through numpy(): it raises too, as PyTorch's
    with pytest.raises(RuntimeError, match="Can't call numpy"):
        np.asarray(x)
    with tgrad.no_grad():
        np.testing.assert_array_equal(np.asarray(x), np.ones(2, np.float32))
    assert np.asarray(tgrad.ones(2), dtype=np.float64).dtype == np.float64


def test_array_protocol_copy_keyword():
    # NumPy's __array__ copy protocol: np.array(t) (copy=True) is a copy, never t's memory
    # (it was: writing to it changed t); copy=False refuses a conversion
    t = tgrad.tensor([1.0, 2.0])
    a = np.array(t)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0] and a.tolist() == [9.0, 2.0]
    c = np.array(t, dtype=np.float64)
    c[1] = 7.0
    assert t.tolist() == [1.0, 2.0] and c.dtype == np.float64
    # the copy keeps the layout (NumPy's order='K'): a transpose's copy is column-major
    m = tgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mt = np.array(m.t())
    assert mt.flags.f_contiguous and mt.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    ms = np.array(m[:, ::2])
    assert ms.flags.c_contiguous and ms.tolist() == [[1.0, 3.0], [4.0, 6.0]]
    # np.asarray (copy=None) and copy=False without a conversion share t's memory
    for b in (np.asarray(t), np.asarray(t, copy=False),
              np.asarray(t, dtype=np.float32, copy=False)):
        b[1] = 5.0
        assert t.tolist() == [1.0, 5.0]
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(t, dtype=np.int32, copy=False)


def test_numpy_force_must_be_bool():
    t = tgrad.tensor([1.0, 2.0])
    for bad in (1, None, np.bool_(True)):
        with pytest.raises(TypeError, match="numpy\\(\\): argument 'force' must be bool"):
            t.numpy(force=bad)
    assert t.numpy(force=False).tolist() == [1.0, 2.0]


def test_iteration_is_unbind():
    # iter(t) gives unbind(0)'s views, as PyTorch's: UnbindBackward0, views of t that
    # refuse in-place changes while grad is recorded (outputs of a multi-view op)
    x = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tgrad.float64, requires_grad=True)
    y = x * 1
    rows = list(y)
    assert [r.grad_fn.name() for r in rows] == ["UnbindBackward0"] * 2
    assert all(r._base is y for r in rows)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        rows[0].mul_(2)
    # rows of a tensor without grad are writable views of it
    z = tgrad.tensor([[1, 2], [3, 4]])
    next(iter(z)).add_(10)
    assert z.tolist() == [[11, 12], [3, 4]]
    # gradient: d/dx sum_i (i + 1) * w_i . x_i = (i + 1) * w_i (hand computation)
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    s = sum((r * tgrad.tensor(w[i])).sum() * (i + 1) for i, r in enumerate(x))
    s.backward()
    np.testing.assert_allclose(x.grad.numpy(), w * np.array([[1.0], [2.0]]), rtol=1e-15)
    assert tgrad.autograd.gradcheck(lambda a: tgrad.stack([r * (i + 1) for i, r in
                                                           enumerate(a)]), (x,))
    assert list(tgrad.zeros(0, 3)) == [] and [r.shape for r in tgrad.zeros(2, 0)] == [(0,)] * 2


def test_item_tolist_and_python_scalars():
    assert tgrad.tensor([2.5]).item() == 2.5
    assert isinstance(tgrad.tensor(3).item(), int)
    assert isinstance(tgrad.tensor([1.5], dtype=tgrad.bfloat16).item(), float)
    assert tgrad.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert tgrad.tensor(1.5).tolist() == 1.5
    assert float(tgrad.tensor(2.0)) == 2.0 and int(tgrad.tensor(3)) == 3
    # complex() as PyTorch: a complex tensor's value, a real one's as a complex number
    assert complex(tgrad.tensor([1 - 2j])) == 1 - 2j and complex(tgrad.tensor(3)) == 3 + 0j
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        tgrad.ones(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tgrad.ones(2))
    assert len(tgrad.zeros(4, 2)) == 4
    assert [r.tolist() for r in tgrad.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]


def test_metadata():
    x = tgrad.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(1) == 3
    assert x.size(-1) == 4
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12
    assert x.is_contiguous()
    assert x.device == tgrad.device("cpu") and str(x.device) == "cpu"
    assert x.dtype is tgrad.float32
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)
    y = x.transpose(0, 2)
    assert y.shape == (4, 3, 2) and y.stride() == (1, 4, 12)
    assert not y.is_contiguous()
    c = y.contiguous()
    assert c.is_contiguous() and c.stride() == (6, 2, 1)
    np.testing.assert_array_equal(c.numpy(), y.numpy())
    assert x.contiguous() is x
    s = x[1]
    assert s.storage_offset() == 12 and s.stride() == (4, 1)


def test_conversions():
    x = tgrad.tensor([1.5, -2.25])
    for meth, dt in (("float", tgrad.float32), ("double", tgrad.float64),
                     ("half", tgrad.float16), ("bfloat16", tgrad.bfloat16),
                     ("long", tgrad.int64), ("int", tgrad.int32), ("bool", tgrad.bool)):
        y = getattr(x, meth)()
        assert y.dtype is dt
        np.testing.assert_array_equal(y.numpy(), x.numpy().astype(dt.np))
    assert x.float() is x  # no-op conversion returns self, as PyTorch
    assert x.to(tgrad.float64).dtype is tgrad.float64
    assert x.to("cpu") is x
    assert x.to("cpu", tgrad.float64).dtype is tgrad.float64
    assert x.to(dtype=tgrad.float16).dtype is tgrad.float16
    assert x.to(tgrad.zeros(1, dtype=tgrad.int32)).dtype is tgrad.int32
    assert x.to(tgrad.float32, copy=True) is not x
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        x.to("tpu")


def test_to_is_differentiable():
    x = tgrad.tensor([1.5, -2.0], requires_grad=True)
    y = x.double()
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.dtype is tgrad.float32
    np.testing.assert_array_equal(x.grad.numpy(), np.array([3.0, -4.0], np.float32))


def test_clone_is_a_copy_with_gradient():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0"
    assert c.data_ptr() != x.data_ptr()
    (c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_data_shares_storage_and_is_detached():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d.mul_(2)  # allowed: .data is outside the graph
    np.testing.assert_array_equal(x.detach().numpy(), [2.0, 4.0])
    x.data = tgrad.tensor([5.0, 6.0])
    np.testing.assert_array_equal(x.detach().numpy(), [5.0, 6.0])
    assert x.requires_grad


def test_repr_is_readable():
    assert repr(tgrad.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"  # PyTorch's
    assert repr(tgrad.tensor(3.5)) == "tensor(3.5000)"
    assert repr(tgrad.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(tgrad.tensor([1, 2], dtype=tgrad.int32)) == "tensor([1, 2], dtype=tgrad.int32)"
    assert repr(tgrad.ones(2, dtype=tgrad.float64)) == "tensor([1., 1.], dtype=tgrad.float64)"
    assert repr(tgrad.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    assert repr(tgrad.ones(2, requires_grad=True) * 2) == \
        "tensor([2., 2.], grad_fn=<MulBackward0>)"
    assert repr(tgrad.zeros(0)) == "tensor([])"
    assert repr(tgrad.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(tgrad.zeros(0, dtype=tgrad.int64)) == "tensor([], dtype=tgrad.int64)"
    assert "\n" in repr(tgrad.zeros(2, 2))
    big = repr(tgrad.zeros(10000))
    assert "..." in big and len(big) < 200


def test_default_dtype_table_is_consistent():
    assert set(dtypes.FLOATING_DTYPES) == {tgrad.float16, tgrad.bfloat16, tgrad.float32,
                                           tgrad.float64}
    for d in dtypes.ALL_DTYPES:
        assert dtypes.as_dtype(d.name) is d
        assert dtypes.as_dtype(d.np) is d


def test_to_copy_true_makes_a_new_buffer():
    x = tgrad.tensor([1.0, 2.0])
    y = x.to(tgrad.float32, copy=True)
    assert y.data_ptr() != x.data_ptr()
    y.add_(1)
    assert x.tolist() == [1.0, 2.0]


def test_tensor_from_tensor_warns_and_copies():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="use sourceTensor.detach\\(\\).clone\\(\\) or .*rather "
                                         "than tgrad.tensor\\(sourceTensor\\)"):
        y = tgrad.tensor(x)
    assert not y.requires_grad and y.data_ptr() != x.data_ptr()
    assert y.tolist() == [1.0, 2.0]


def test_comparing_with_none_follows_python():
    """``t == None`` is False and ``t != None`` True (PyTorch); tgrad.eq still rejects it."""
    t = tgrad.tensor([1.0, 2.0])
    assert (t == None) is False  # noqa: E711
    assert (t != None) is True  # noqa: E711
    assert (t == 1.0).tolist() == [True, False] and (t != t).tolist() == [False, False]
    assert {t: 1}[t] == 1  # tensors stay hashable by identity
    with pytest.raises(TypeError, match=r"^eq\(\): unsupported operand type NoneType"):
        tgrad.eq(t, None)


def test_new_factory_methods_take_this_tensors_dtype_and_device():
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64)
    for t, shape, value in ((x.new_zeros(3), (3,), 0.0), (x.new_zeros((2, 3)), (2, 3), 0.0),
                            (x.new_ones(2, 2), (2, 2), 1.0), (x.new_full((2,), 7), (2,), 7.0)):
        assert t.dtype is tgrad.float64 and t.shape == shape
        assert np.array_equal(t.numpy(), np.full(shape, value))
    assert x.new_ones(2, dtype=tgrad.int32).dtype is tgrad.int32
    assert x.new_empty(2, 1).shape == (2, 1) and x.new_empty(2).dtype is tgrad.float64
    t = x.new_tensor([3, 4])  # this tensor's dtype, not the data's
    assert t.dtype is tgrad.float64 and t.tolist() == [3.0, 4.0]
    z = x.new_zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf
    with pytest.warns(UserWarning, match="To copy construct from a tensor, it is recommended "
                                         "to use sourceTensor.detach\\(\\).clone\\(\\) .*rather "
                                         "than tensor.new_tensor\\(sourceTensor\\)"):
        c = x.new_tensor(x)  # a copy, not a view
    c.add_(1.0)
    assert x.tolist() == [1.0, 2.0]


def test_new_factory_size_keyword_and_argument_errors():
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64)
    for name, value in (("new_zeros", 0.0), ("new_ones", 1.0), ("new_empty", None)):
        f = getattr(x, name)
        for t in (f(size=(2, 3)), f(size=[2, 3]), f(size=x.new_zeros(2, 3).size())):
            assert t.shape == (2, 3) and t.dtype is tgrad.float64
            if value is not None:
                assert np.array_equal(t.numpy(), np.full((2, 3), value))
        assert f(size=(2,), dtype=tgrad.int64).dtype is tgrad.int64 and f(size=()).shape == ()
        with pytest.raises(TypeError, match=f"{name}\\(\\) missing 1 required positional "
                                            f"arguments: \"size\""):
            f()
        with pytest.raises(TypeError, match=f"{name}\\(\\) got multiple values for argument "
                                            f"'size'"):
            f(2, size=(3,))
        with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'size' must be tuple of "
                                            f"ints, not int"):
            f(size=2)
    assert x.new_full(size=[2], fill_value=3).tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="new_full\\(\\): argument 'size' \\(position 1\\) must be "
                                        "tuple of ints, not int"):
        x.new_full(2, 3.0)


def test_as_methods_refuse_non_tensor_other():
    x = tgrad.ones(2, 3)
    for name, bad in (("type_as", 3), ("view_as", (2, 3)), ("reshape_as", (3, 2)),
                      ("expand_as", None)):
        with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'other' \\(position 1\\) "
                                            f"must be Tensor, not {type(bad).__name__}"):
            getattr(x, name)(bad)
    assert x.type_as(tgrad.zeros(1, dtype=tgrad.int64)).dtype is tgrad.int64
    assert x.view_as(tgrad.zeros(3, 2)).shape == (3, 2)
    assert x[:1].expand_as(x).shape == (2, 3)


def test_arange_with_an_integer_dtype_truncates_bounds_first():
    assert tgrad.arange(2.5, dtype=tgrad.int64).tolist() == [0, 1]
    assert tgrad.arange(-0.5, 2, dtype=tgrad.int64).tolist() == [0, 1]
    assert tgrad.arange(0.9, dtype=tgrad.int64).tolist() == []
    assert tgrad.arange(end=3).tolist() == [0, 1, 2]
    assert tgrad.arange(1, 3, 0.5).tolist() == [1.0, 1.5, 2.0, 2.5]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tgrad.arange(0, 2.5, 0.5, dtype=tgrad.int64)  # the step truncates to 0
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        tgrad.arange(5, dtype=tgrad.bool)


def test_t_of_a_vector_or_scalar_is_a_new_view():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.t()
    assert y is not x and not y.is_leaf and y.grad_fn is not None
    (y * tgrad.tensor([3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]
    base = tgrad.tensor([1.0, 2.0])
    v = base.t()
    v.mul_(2)  # an alias: the write shows through the base
    assert base.tolist() == [2.0, 4.0] and tgrad.tensor(3.0).t().shape == ()


def test_reductions_accept_numpy_axis_name():
    a = np.arange(12.0).reshape(3, 4)
    x = tgrad.tensor(a, dtype=tgrad.float64)
    np.testing.assert_array_equal(x.sum(axis=0).numpy(), a.sum(axis=0))
    np.testing.assert_array_equal(tgrad.mean(x, axis=1).numpy(), a.mean(axis=1))
    np.testing.assert_array_equal(x.amax(axis=(0, 1)).numpy(), a.max())
    np.testing.assert_array_equal(x.max(axis=1).values.numpy(), a.max(axis=1))
    np.testing.assert_array_equal(x.argmin(axis=0).numpy(), a.argmin(axis=0))
    np.testing.assert_allclose(x.var(axis=0).numpy(), a.var(axis=0, ddof=1))
    np.testing.assert_allclose(x.logsumexp(axis=1).numpy(),
                               np.log(np.exp(a).sum(axis=1)), rtol=1e-15)
    np.testing.assert_array_equal(x.cumsum(axis=1).numpy(), a.cumsum(axis=1))
    np.testing.assert_array_equal(x.cumprod(axis=0).numpy(), a.cumprod(axis=0))
    np.testing.assert_array_equal(x.prod(axis=1).numpy(), a.prod(axis=1))
    np.testing.assert_array_equal(tgrad.nansum(x, axis=0).numpy(), a.sum(axis=0))
    np.testing.assert_array_equal(x.any(axis=1).numpy(), a.any(axis=1))
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        x.sum(0, axis=1)
    with pytest.raises(TypeError, match="missing required argument 'dim'"):
        x.cumsum()


def test_python_scalar_of_a_tensor_with_more_or_fewer_elements():
    # PyTorch: float() / int() raise ValueError (item() stays a RuntimeError)
    for conv in (float, int):
        for t in (tgrad.tensor([1.0, 2.0]), tgrad.tensor([]), tgrad.zeros(2, 1)):
            with pytest.raises(ValueError, match="only one element tensors can be converted"):
                conv(t)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        tgrad.tensor([1.0, 2.0]).item()
    assert float(tgrad.tensor([[2.5]])) == 2.5 and int(tgrad.tensor([7])) == 7


@pytest.mark.parametrize("make", [
    lambda x, **k: tgrad.zeros_like(x, **k), lambda x, **k: tgrad.ones_like(x, **k),
    lambda x, **k: tgrad.full_like(x, 2.5, **k), lambda x, **k: tgrad.empty_like(x, **k),
    lambda x, **k: tgrad.rand_like(x, **k), lambda x, **k: tgrad.randn_like(x, **k)])
def test_like_factories_take_memory_format(make):
    # PyTorch's keyword: preserve_format and contiguous_format give x's shape (tgrad lays
    # the result out row-major either way); channels_last gives PyTorch's NHWC strides
    x = tgrad.ones(2, 3, 4, 5).permute(0, 2, 3, 1)
    for fmt in (tgrad.preserve_format, tgrad.contiguous_format):
        r = make(x, memory_format=fmt)
        assert r.shape == (2, 4, 5, 3) and r.is_contiguous() and r.dtype is tgrad.float32
    r = make(tgrad.ones(2, 3, 4, 5), memory_format=tgrad.channels_last)
    assert r.shape == (2, 3, 4, 5) and r.stride() == (60, 1, 15, 3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        make(tgrad.ones(2, 3, 4), memory_format=tgrad.channels_last)
    with pytest.raises(TypeError, match="memory_format"):
        make(x, memory_format="contiguous")
    assert tgrad.full_like(x, 2.5, memory_format=tgrad.preserve_format).numpy().sum() == 300.0


def test_to_and_module_to_take_memory_format():
    # PyTorch's keyword on Tensor.to: without a dtype/device change x itself comes back
    # (also for a non-contiguous x), a cast casts; channels_last lays the result out NHWC
    x = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tgrad.float64, requires_grad=True)
    for fmt in (tgrad.preserve_format, tgrad.contiguous_format):
        assert x.to(memory_format=fmt) is x and x.t().to(memory_format=fmt).shape == (2, 2)
        y = x.to(tgrad.float32, memory_format=fmt)
        assert y.dtype is tgrad.float32 and y.grad_fn.name() == "ToCopyBackward0"
        np.testing.assert_array_equal(y.detach().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        x.to(memory_format=tgrad.channels_last)
    assert tgrad.ones(1, 2, 3, 4).to(memory_format=tgrad.channels_last).stride() == \
        (24, 1, 8, 2)
    with pytest.raises(TypeError, match="memory_format"):
        x.to(memory_format="contiguous")
    # Module.to: memory_format goes to 4-D / 5-D parameters only (a Linear ignores it)
    lin = tgrad.nn.Linear(2, 3)
    assert lin.to(tgrad.float64, memory_format=tgrad.channels_last) is lin
    assert lin.weight.dtype is tgrad.float64
    conv = tgrad.nn.Conv2d(1, 1, 2)
    assert conv.to(memory_format=tgrad.contiguous_format) is conv
    assert conv.to(memory_format=tgrad.channels_last) is conv
    assert conv.weight.is_contiguous(memory_format=tgrad.channels_last)


# ------------------------------------------------- Tensor object API (PyTorch 2.13 parity)
def test_size_stride_dim_must_be_an_int_before_the_rank_check():
    t, s = tgrad.zeros(2, 3), tgrad.tensor(1.0)
    for bad, name in ((True, "bool"), (1.0, "float"), ("0", "str")):
        for meth in ("size", "stride"):
            for x in (t, s):  # a 0-d tensor too: the type is checked first, as PyTorch
                with pytest.raises(TypeError, match=f"{meth}\\(\\): argument 'dim' "
                                                    f"\\(position 1\\) must be int, not {name}"):
                    getattr(x, meth)(bad)
    assert t.size(np.int64(-1)) == 3 and t.stride(-2) == 3  # NumPy ints still count


def test_is_contiguous_memory_format():
    x = tgrad.zeros(2, 3, 4, 5)
    nhwc = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # strides (60, 1, 15, 3)
    assert nhwc.stride() == (60, 1, 15, 3)
    assert nhwc.is_contiguous(memory_format=tgrad.channels_last)
    assert not nhwc.is_contiguous() and x.is_contiguous(memory_format=tgrad.contiguous_format)
    assert not x.is_contiguous(memory_format=tgrad.channels_last)
    # a size-1 dim's stride does not matter; other ranks are never channels_last
    assert tgrad.zeros(2, 1, 1, 1).is_contiguous(memory_format=tgrad.channels_last)
    assert not tgrad.zeros(2, 3, 4).is_contiguous(memory_format=tgrad.channels_last)
    ndhwc = tgrad.zeros(2, 3, 2, 2, 2).permute(0, 2, 3, 4, 1).contiguous().permute(0, 4, 1, 2, 3)
    assert ndhwc.is_contiguous(memory_format=tgrad.channels_last_3d)
    with pytest.raises(TypeError, match="is_contiguous\\(\\): argument 'memory_format'"):
        x.is_contiguous(memory_format="channels_last")


def test_python_conversions_of_empty_and_many_element_tensors():
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is "
                                           "ambiguous"):
        bool(tgrad.zeros(0))
    with pytest.raises(RuntimeError, match="with more than one value is ambiguous"):
        bool(tgrad.zeros(2))
    for t in (tgrad.zeros(0), tgrad.zeros(3, dtype=tgrad.complex128)):
        with pytest.raises(ValueError, match="only one element tensors can be converted"):
            complex(t)
    assert complex(tgrad.tensor([[1 - 2j]])) == 1 - 2j
    assert 1 + 0j in tgrad.tensor([1.0, 2.0]) and 2j not in tgrad.tensor([1.0, 2.0])
    assert 2j in tgrad.tensor([1 + 0j, 2j])
    x = tgrad.tensor(1.5, requires_grad=True)
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a "
                                         "scalar may lead to unexpected behavior"):
        assert float(x) == 1.5
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # int() and item() do not warn (PyTorch 2.13)
        assert int(x) == 1 and x.item() == 1.5


def test_float_of_a_tensor_requiring_grad_warns_only_in_grad_mode():
    # PyTorch 2.13 warns only while grad mode is on: not under no_grad or inference_mode
    # (so optim.LBFGS, whose step runs under no_grad, converts its loss silently)
    import warnings
    x = tgrad.tensor([2.5], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tgrad.no_grad():
            assert float(x) == 2.5
        with tgrad.inference_mode():
            assert float(x * 2) == 5.0
    with tgrad.no_grad(), tgrad.enable_grad():
        with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True"):
            assert float(x) == 2.5
    w = tgrad.tensor([1.0, -1.0], dtype=tgrad.float64, requires_grad=True)
    opt = tgrad.optim.LBFGS([w], max_iter=5)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step(closure)
    assert w.abs().max().item() < 1e-6  # the minimum of |w|^2, at 0


def test_numpy_ufuncs_on_tensors_return_tensors():
    n = np.array([1.0, 0.5])
    t = tgrad.tensor([1, 2])
    for r, ref in ((np.add(n, t), n + [1, 2]), (np.add(t, n), n + [1, 2]),
                   (np.exp(t), np.exp([1.0, 2.0])), (np.maximum(n, t), [1.0, 2.0])):
        assert type(r) is tgrad.Tensor and r.dtype is tgrad.float64
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-15)
    r = np.isnan(tgrad.tensor([1.0, float("nan")]))
    assert type(r) is tgrad.Tensor and r.tolist() == [False, True]  # bool (PyTorch: uint8)
    r = np.add(np.float64(1.0), tgrad.tensor(2.0))
    assert type(r) is tgrad.Tensor and r.shape == () and r.item() == 3.0
    assert type(np.asarray(t)) is np.ndarray  # not a ufunc: still the array


def test_operators_with_a_numpy_array_operand():
    # PyTorch's operators give NotImplemented for an ndarray: t op ndarray is NumPy's
    # result (NumPy's promotion) as a tensor, ndarray op t Python's TypeError
    import operator as op
    t = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]])  # float32
    tn = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    n = np.array([[1.0, 0.5], [-2.0, 2.0]])
    for f in (op.add, op.sub, op.mul, op.truediv, op.pow, op.floordiv, op.mod, op.matmul):
        r = f(t, n)
        assert type(r) is tgrad.Tensor and r.dtype is tgrad.float64, f
        np.testing.assert_allclose(r.numpy(), f(tn.astype(np.float64), n), rtol=1e-15)
    r = t + np.array([1.0, 2.0], dtype=np.float32)  # broadcast, float32 kept
    assert r.dtype is tgrad.float32 and r.tolist() == [[2.0, 4.0], [4.0, 6.0]]
    r = tgrad.tensor([6, 3]) & np.array([3, 1])
    assert r.dtype is tgrad.int64 and r.tolist() == [2, 1]
    r = n / t  # PyTorch's __rtruediv__ computes it too, as t.reciprocal() * n
    assert type(r) is tgrad.Tensor
    np.testing.assert_allclose(r.numpy(), n * (1 / tn).astype(np.float64), rtol=1e-15)
    r = np.array([1.5], dtype=np.float32) / tgrad.tensor([2])  # float32: the reciprocal's
    assert r.dtype is tgrad.float32 and r.tolist() == [0.75]
    r = np.array([1.0]) / tgrad.tensor([3.0], dtype=tgrad.float16)  # the half reciprocal
    assert r.dtype is tgrad.float64 and r.tolist() == [float(np.float16(1 / 3))]
    for f, sym in ((op.sub, "-"), (op.mul, r"\*"), (op.matmul, "@"), (op.floordiv, "//"),
                   (op.pow, r"\*\*")):
        with pytest.raises(TypeError, match=f"unsupported operand type\\(s\\) for {sym}"):
            f(n, t)
    with pytest.raises(TypeError, match="'<' not supported between instances of 'Tensor' "
                                        "and 'numpy.ndarray'"):
        t < n  # noqa: B015
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires "
                                           "grad"):
        tgrad.tensor([1.0, 2.0], requires_grad=True) + np.array([1.0, 2.0])
    # the functions take tensors only (PyTorch's TypeError)
    with pytest.raises(TypeError, match="add\\(\\)"):
        tgrad.add(t, n)
    with pytest.raises(TypeError, match="matmul\\(\\): argument 'other' \\(position 2\\) must "
                                        "be Tensor, not numpy.ndarray"):
        tgrad.matmul(t, n)
    with pytest.raises(TypeError, match="argument 'input' \\(position 1\\) must be Tensor, "
                                        "not list"):
        tgrad.matmul([1.0], t)


def test_deepcopy_keeps_shared_storage_and_strides():
    import copy
    a = tgrad.arange(6.0)
    v, w = a[1:4], a[::2]
    ca, cv, cw = copy.deepcopy([a, v, w])
    assert cv.storage_offset() == 1 and cw.stride() == (2,) and cv._base is None
    ca[2] = 100.0  # the copies share one new storage, as the originals share theirs
    assert cv.tolist() == [1.0, 100.0, 3.0] and cw.tolist() == [0.0, 100.0, 4.0]
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # ... which is not the source's
    e = copy.deepcopy(tgrad.zeros(1).expand(3))
    assert e.stride() == (0,) and e.tolist() == [0.0, 0.0, 0.0]
    f = copy.deepcopy(tgrad.arange(5.0).flip(0))
    assert f.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    assert copy.deepcopy(tgrad.zeros(0, 3)).shape == (0, 3)
    # two separate deepcopy calls do not share
    x, y = copy.deepcopy(v), copy.deepcopy(v)
    x[0] = -1.0
    assert y.tolist() == [1.0, 2.0, 3.0]


def test_data_grad_and_requires_grad_setter_checks():
    w = tgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients "
                                           "must be floating point or complex dtype"):
        w.data = tgrad.tensor([1, 2])
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        w.data = [1.0, 2.0]
    u = tgrad.tensor([1.0, 2.0])
    u.data = tgrad.tensor([3, 4])  # allowed when it does not require grad
    assert u.dtype is tgrad.int64 and u.tolist() == [3, 4]
    w.grad = tgrad.tensor([1.0, 1.0])
    del w.grad
    assert w.grad is None
    for bad in (1, None, "yes"):
        with pytest.raises(TypeError, match="requires_grad_\\(\\): argument 'requires_grad' "
                                            "\\(position 1\\) must be bool"):
            u.requires_grad_(bad)
        with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
            w.requires_grad = bad
    assert w.requires_grad_(np.bool_(False)).requires_grad is False


def test_index_tensor_dtypes_as_pytorch():
    # a complex or float index tensor raises (a complex one was cast to int: t[[1j]] gave
    # t[0]); a 0-d int8/int16 one is an int, as in PyTorch; a 1-d one raises
    t = tgrad.tensor([1, 2, 3, 4])
    for bad in (tgrad.tensor([1j]), tgrad.tensor(1j), tgrad.tensor([1.0]),
                tgrad.tensor([1], dtype=tgrad.int8)):
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            t[bad]
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            t.clone()[bad] = 9
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            t.clone().index_put_((bad,), tgrad.tensor(9))
    for dt in (tgrad.int8, tgrad.int16):
        i = tgrad.tensor(1, dtype=dt)
        assert t[i].item() == 2 and t[i].shape == ()
        m = tgrad.arange(12).reshape(3, 4)
        assert m[1, tgrad.tensor(2, dtype=dt)].item() == 6
        u = t.clone()
        u[i] = 9
        assert u.tolist() == [1, 9, 3, 4]
        with pytest.raises(IndexError, match="index_put_"):  # PyTorch: index_put_ refuses it
            t.clone().index_put_((i,), tgrad.tensor(9))
    with pytest.raises(RuntimeError, match="index_reduce_"):
        t.clone().index_reduce_(0, tgrad.tensor([1j]), tgrad.tensor([5]), "prod")
    with pytest.raises(IndexError, match="index_fill_"):
        t.clone().index_fill_(0, tgrad.tensor([1.0]), 5)


class _Reflected:
    """An operand the tensor cannot convert, with its own reflected operators."""
    def __radd__(self, o): return "radd"
    def __rsub__(self, o): return "rsub"
    def __rmul__(self, o): return "rmul"
    def __rtruediv__(self, o): return "rtruediv"
    def __rfloordiv__(self, o): return "rfloordiv"
    def __rmod__(self, o): return "rmod"
    def __rpow__(self, o): return "rpow"
    def __rmatmul__(self, o): return "rmatmul"
    def __rand__(self, o): return "rand"
    def __ror__(self, o): return "ror"
    def __rxor__(self, o): return "rxor"
    def __rlshift__(self, o): return "rlshift"
    def __rrshift__(self, o): return "rrshift"
    def __gt__(self, o): return "gt"


def test_operators_defer_to_unknown_operands():
    # PyTorch's dunders return NotImplemented for an operand they cannot convert, so
    # Python calls the operand's reflected method (and the in-place forms fall back to it)
    import operator as op
    t, o = tgrad.tensor([1, 2]), _Reflected()
    for name, want in (("add", "radd"), ("sub", "rsub"), ("mul", "rmul"),
                       ("truediv", "rtruediv"), ("floordiv", "rfloordiv"), ("mod", "rmod"),
                       ("pow", "rpow"), ("matmul", "rmatmul"), ("and_", "rand"),
                       ("or_", "ror"), ("xor", "rxor"), ("lshift", "rlshift"),
                       ("rshift", "rrshift")):
        assert getattr(op, name)(t, o) == want
        assert getattr(op, "i" + name.rstrip("_"))(t.clone(), o) == want
    assert (t < o) == "gt"
    assert t.__add__("a") is NotImplemented and t.__radd__("a") is NotImplemented
    assert t.__matmul__(2) is NotImplemented and t.__rmatmul__(2) is NotImplemented
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tensor' "
                                        r"and 'str'"):
        t + "a"
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for /: 'str'"):
        "a" / t
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @"):
        t @ 2
    with pytest.raises(TypeError, match="'<' not supported"):
        _ = t < object()
    with pytest.raises(TypeError, match="add"):  # the function still names itself
        tgrad.add(t, "a")
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*\* or pow"):
        pow(t, 2, 3)
    assert t.__pow__(2, 3) is NotImplemented and t.__rpow__(2, 3) is NotImplemented
    # an explicit modulo, even None, is refused (pow(t, 2, None) calls __pow__(2): computes)
    assert t.__pow__(2, None) is NotImplemented and t.__rpow__(2, None) is NotImplemented
    assert pow(t, 2, None).tolist() == [1, 4]
    assert (t + 1).tolist() == [2, 3] and (2 ** t).tolist() == [2, 4]


def test_invert_of_float_is_a_type_error():
    # ~float: PyTorch's operator TypeError; bitwise_not(float) the kernel's error
    for x in (tgrad.tensor(1.5), tgrad.tensor([1j])):
        with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented"):
            _ = ~x
        with pytest.raises(NotImplementedError, match="bitwise_not"):
            tgrad.bitwise_not(x)
    assert (~tgrad.tensor([0, 5], dtype=tgrad.int8)).tolist() == [-1, -6]


def test_numpy_arrays_pytorch_refuses():
    be = np.arange(3.0).astype(">f8")
    for f in (tgrad.from_numpy, tgrad.tensor, tgrad.as_tensor, tgrad.asarray,
              lambda a: tgrad.tensor(a, dtype=tgrad.float32),
              lambda a: tgrad.asarray(a, copy=False)):
        with pytest.raises(ValueError, match="byte order different from the native"):
            f(be)
    assert tgrad.tensor(be.astype("=f8")).tolist() == [0.0, 1.0, 2.0]
    days = np.array(["2020-01-01"], dtype="datetime64[D]")
    for f in (tgrad.from_numpy, tgrad.tensor, tgrad.as_tensor, tgrad.asarray,
              lambda a: tgrad.tensor(a, dtype=tgrad.float32),
              lambda a: tgrad.asarray(a, dtype=tgrad.float32)):
        with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.datetime64"):
            f(days)
    with pytest.raises(TypeError, match="numpy.datetime64"):
        tgrad.tensor(days[0], dtype=tgrad.float32)
    with pytest.raises(RuntimeError, match="can't alias NumPy scalars"):
        tgrad.asarray(np.float32(2), copy=False)
    assert tgrad.asarray(np.float32(2)).item() == 2.0
    assert tgrad.asarray(np.array(2.0, dtype=np.float32), copy=False).item() == 2.0


# (call on x = ones(2, 3, 4), exception type, text it contains): each returned a value
# (a float size read as an int, a 1-element start tensor...) or leaked an internal error
_METHOD_BAD_INPUT = [
    (lambda x: x.expand(2, 3, 4.0), TypeError, "expand(): argument 'size' must be int, not float"),
    (lambda x: x.expand("a"), TypeError, "expand(): argument 'size' must be int, not str"),
    (lambda x: x.repeat(2.0, 1, 1), TypeError, "repeat(): argument 'repeats' must be int"),
    (lambda x: x.tile(2.0), TypeError, "must be tuple of ints"),
    (lambda x: x.permute(0.0, 1, 2), TypeError, "permute(): argument 'dims'"),
    (lambda x: x.narrow(0, tgrad.tensor([1]), 1), RuntimeError,
     "start must be an 0-dim integral Tensor."),
    (lambda x: x.narrow(0, tgrad.tensor(1.0), 1), RuntimeError,
     "start must be an 0-dim integral Tensor."),
    (lambda x: x.resize_(2.0), TypeError, "resize_(): argument 'size' must be int, not float"),
    (lambda x: x.resize_as_(3), TypeError,
     "resize_as_(): argument 'the_template' (position 1) must be Tensor, not int"),
    (lambda x: x.type(int), ValueError, "invalid type: 'int'"),
    (lambda x: setattr(x.requires_grad_() * 2, "requires_grad", True), RuntimeError,
     "you can only change requires_grad flags of leaf variables."),
    (lambda x: setattr(x, "requires_grad", 1), RuntimeError, "requires_grad must be a bool"),
    (lambda x: x.to(tgrad.int64, "cpu"), TypeError,
     "to() received an invalid combination of arguments - got (DType, str)"),
    (lambda x: x.to(tgrad.float32, tgrad.float64), TypeError,
     "to() received an invalid combination of arguments"),
    (lambda x: x.to(tgrad.float64, 1), TypeError,
     "to() received an invalid combination of arguments"),
    (lambda x: x.to(non_blocking=1), TypeError,
     "to() received an invalid combination of arguments - got (non_blocking=int)"),
    (lambda x: x.to(x.double(), dtype=tgrad.int64), TypeError,
     "to() received an invalid combination of arguments"),
    (lambda x: x.index_put((tgrad.tensor([0]),), 1.0), TypeError,
     "index_put(): argument 'values' (position 2) must be Tensor, not float"),
    (lambda x: x.index_put_((tgrad.tensor([0]),), 1), TypeError,
     "index_put_(): argument 'values' (position 2) must be Tensor, not int"),
    (lambda x: x.scatter_add(1, tgrad.zeros(2, 3, 4, dtype=tgrad.int64), 1.0), TypeError,
     "scatter_add(): argument 'src' (position 4) must be Tensor, not float"),
    (lambda x: x.equal(3), TypeError, "equal(): argument 'other' (position 2) must be Tensor"),
    (lambda x: x.index_fill(1, tgrad.tensor([[0]]), 1.0), RuntimeError,
     "Index has to be a vector/scalar"),
]


@pytest.mark.parametrize("case", range(len(_METHOD_BAD_INPUT)))
def test_tensor_method_bad_input_raises_pytorchs_error(case):
    call, exc, text = _METHOD_BAD_INPUT[case]
    with pytest.raises(exc) as info:
        call(tgrad.ones(2, 3, 4))
    assert type(info.value) is exc and text in str(info.value), repr(info.value)


def test_tensor_method_bad_input_checks_keep_the_valid_calls():
    a = np.arange(6.0).reshape(2, 3)
    x = tgrad.tensor(a)
    np.testing.assert_array_equal(x.narrow(1, tgrad.tensor(1), 2).numpy(), a[:, 1:3])
    np.testing.assert_array_equal(x.expand(np.int64(2), tgrad.tensor(3)).numpy(), a)
    np.testing.assert_array_equal(x.repeat(np.int64(1), 2).numpy(), np.tile(a, (1, 2)))
    np.testing.assert_array_equal(x.permute(np.int64(1), 0).numpy(), a.T)
    y = x.type(tgrad.Tensor)  # PyTorch: torch.Tensor is the default (float32) type
    assert y.dtype is tgrad.float32 and y.tolist() == a.tolist()
    # index_fill casts a 0-d tensor value of another dtype to the input's (PyTorch: its
    # item()); the value's gradient is the count of filled positions, in its own dtype
    v = tgrad.tensor(2.5, dtype=tgrad.float64, requires_grad=True)
    y = tgrad.ones(2, 3).index_fill(0, tgrad.tensor([0]), v)
    assert y.dtype is tgrad.float32 and y.tolist() == [[2.5] * 3, [1.0] * 3]
    y.sum().backward()
    assert v.grad.dtype is tgrad.float64 and v.grad.item() == 3.0
    assert tgrad.tensor([[0, 1], [2, 3]]).index_fill(1, tgrad.tensor([1]),
                                                     tgrad.tensor(7.9)).tolist() == [[0, 7],
                                                                                      [2, 7]]
    # Tensor.to's three signatures (dtype names are tgrad's too); copy=True copies
    assert x.to("cpu", tgrad.float32, True).dtype is tgrad.float32
    assert x.to(None, tgrad.int64).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert x.to("float32", True, True).dtype is tgrad.float32
    same = x.to(tgrad.float64, False, True)
    assert same is not x and same.tolist() == a.tolist()
    assert x.to(tgrad.ones(1, dtype=tgrad.int32), True).dtype is tgrad.int32
    w = tgrad.tensor([1.0, 2.0], requires_grad=True)
    v = (w * 2).requires_grad_(True)  # the method on a non-leaf: a no-op, as PyTorch
    assert v.requires_grad and not v.is_leaf


def test_size_is_pytorchs_torch_size():
    # PyTorch's torch.Size: a tuple subclass, numel(), Size results for +, * and slices,
    # int items, repr torch.Size([2, 3]) (here tgrad.Size); x.shape stays a plain tuple
    x = tgrad.zeros(2, 3)
    s = x.size()
    assert type(s) is tgrad.Size and isinstance(s, tuple) and type(x.shape) is tuple
    assert s == (2, 3) == x.shape and hash(s) == hash((2, 3)) and s != [2, 3]
    assert repr(s) == str(s) == f"{s}" == "tgrad.Size([2, 3])"
    assert s.numel() == 6 and tgrad.Size([]).numel() == 1 and tgrad.Size([4, 0]).numel() == 0
    for r, want in ((s + (1,), (2, 3, 1)), ((1,) + s, (1, 2, 3)), (s[1:], (3,)),
                    (s[::-1], (3, 2)), (s * 2, (2, 3, 2, 3)), (2 * s, (2, 3, 2, 3))):
        assert type(r) is tgrad.Size and r == want
    assert type(s[0]) is int and s[-1] == 3 and list(s) == [2, 3]
    assert repr(tgrad.Size()) == "tgrad.Size([])"
    # items: ints, bools (as PyTorch: Size([True]) == Size([1])), NumPy and 0-d tensors
    assert tgrad.Size([True, np.int64(4), tgrad.tensor(5)]) == (1, 4, 5)
    for bad, name in (([2.5], "float"), (["a"], "str"), ([1, None], "NoneType")):
        with pytest.raises(TypeError, match=rf"takes an iterable of 'int' \(item \d is "
                                            rf"'{name}'\)"):
            tgrad.Size(bad)
    with pytest.raises(TypeError, match="can only concatenate|unsupported operand"):
        s + [1]
    # a Size works wherever a shape does
    assert tgrad.zeros(s).shape == (2, 3) and x.reshape(s[::-1]).shape == (3, 2)
    assert x.new_ones(s).shape == (2, 3) and x.expand(tgrad.Size([4, 2, 3])).shape == (4, 2, 3)
    import copy
    import pickle
    for y in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert type(y) is tgrad.Size and y == (2, 3)


def test_channels_last_layouts():
    # PyTorch's NHWC / NDHWC strides (measured with torch 2.13: (2, 3, 4, 5) -> (60, 1, 15,
    # 3); (2, 3, 4, 5, 6) -> (360, 1, 90, 18, 3)); the values unchanged, differentiable
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4, 5))
    x = tgrad.tensor(a, requires_grad=True)
    cl = tgrad.channels_last
    for y in (x.contiguous(memory_format=cl), x.to(memory_format=cl),
              x.clone(memory_format=cl)):
        assert y.stride() == (60, 1, 15, 3) and y.is_contiguous(memory_format=cl)
        np.testing.assert_array_equal(y.detach().numpy(), a)
    y = x.contiguous(memory_format=cl)
    assert y.contiguous(memory_format=cl) is y and y.to(memory_format=cl) is y
    assert y.contiguous().stride() == (60, 20, 5, 1)
    (y * tgrad.tensor(a)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), a)
    assert tgrad.autograd.gradcheck(lambda t: t.contiguous(memory_format=cl) ** 2, (x,))
    z = tgrad.zeros(2, 3, 4, 5, 6).contiguous(memory_format=tgrad.channels_last_3d)
    assert z.stride() == (360, 1, 90, 18, 3)
    # ops read it in place: a conv on a channels-last input and weight gives the same values
    conv = tgrad.nn.Conv2d(3, 2, 3).double()
    want = conv(x).detach().numpy()
    conv.to(memory_format=cl)
    assert conv.weight.is_contiguous(memory_format=cl) and conv.weight.is_leaf
    np.testing.assert_allclose(conv(y).detach().numpy(), want, rtol=1e-12)
    e = tgrad.empty(2, 3, 4, 5, memory_format=cl, requires_grad=True)
    assert e.stride() == (60, 1, 15, 3) and e.is_leaf and e.requires_grad


# PyTorch's read-only Tensor attributes: assigning (or deleting) one raises AttributeError
# ("attribute 'dtype' of 'torch._C.TensorBase' objects is not writable"); the tensor is
# unchanged. dtype / device name what to use instead.
@pytest.mark.parametrize("name, value, hint", [("dtype", tgrad.float64, "to(dtype)"),
                                               ("device", "cpu", "to(device)")])
def test_dtype_and_device_are_read_only(name, value, hint):
    t = tgrad.ones(2, 3)
    with pytest.raises(AttributeError, match=rf"'{name}'.*not writable.*{re.escape(hint)}"):
        setattr(t, name, value)
    with pytest.raises(AttributeError, match=f"'{name}'.*not writable"):
        delattr(t, name)
    assert t.dtype is tgrad.float32 and t.device == tgrad.device("cpu")
    p = tgrad.nn.Parameter(tgrad.ones(2))  # (a subclass: the same)
    with pytest.raises(AttributeError, match=f"'{name}'.*not writable"):
        setattr(p, name, value)
    assert t.to(tgrad.float64).dtype is tgrad.float64  # (what to use instead)


@pytest.mark.parametrize("name", ["shape", "ndim", "is_leaf", "grad_fn", "is_cuda", "T", "mT",
                                  "output_nr", "retains_grad", "layout", "is_sparse",
                                  "itemsize", "nbytes"])
def test_other_read_only_attributes_raise(name):
    t = tgrad.ones(2, 3, requires_grad=True) * 2
    before = getattr(t, name)
    with pytest.raises(AttributeError):
        setattr(t, name, before)


def test_writable_attributes_stay_writable():
    t = tgrad.ones(2, 3)
    t.requires_grad = True
    t.grad = tgrad.zeros(2, 3)
    t.data = tgrad.full((2, 3), 5.0, dtype=tgrad.float64)  # .data takes the new dtype
    assert t.dtype is tgrad.float64 and float(t.detach().sum()) == 30.0
