"""PyTorch's other names and trivial forms (tgrad/ops/aliases.py): values against NumPy,
gradients, and PyTorch's error texts (checked with torch 2.14)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad

NAN = float("nan")

COMPARES = {"eq_": np.equal, "ne_": np.not_equal, "lt_": np.less, "le_": np.less_equal,
            "gt_": np.greater, "ge_": np.greater_equal, "not_equal_": np.not_equal,
            "less_": np.less, "less_equal_": np.less_equal, "greater_": np.greater,
            "greater_equal_": np.greater_equal, "logical_and_": np.logical_and,
            "logical_or_": np.logical_or, "logical_xor_": np.logical_xor}


@pytest.mark.parametrize("name", list(COMPARES))
def test_inplace_comparisons_write_one_or_zero_in_self_dtype(name):
    x = np.array([[1.0, 2.0, NAN, -1.0, 0.0]] * 3)
    other = np.array([[2.0], [0.0], [-1.0]])  # broadcasts against x
    t = tgrad.tensor(x)
    out = getattr(t, name)(tgrad.tensor(other))
    assert out is t and t.dtype is tgrad.float64  # tensor() of a float64 array keeps float64
    np.testing.assert_array_equal(t.numpy(), COMPARES[name](x, other).astype(np.float64))
    t = tgrad.tensor(x)
    getattr(t, name)(2.0)  # a number
    np.testing.assert_array_equal(t.numpy(), COMPARES[name](x, 2.0).astype(np.float64))
    ints = tgrad.tensor([1, 2, 3])
    getattr(ints, name)(2)
    assert ints.dtype is tgrad.int64
    assert ints.tolist() == COMPARES[name](np.array([1, 2, 3]), 2).astype(int).tolist()


def test_logical_not_inplace_and_gradients_are_zero():
    assert tgrad.tensor([0.0, 2.0, NAN]).logical_not_().tolist() == [1.0, 0.0, 0.0]
    a = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor([1.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    h = a * 1.0
    h.eq_(b)
    assert h.requires_grad and h.tolist() == [1.0, 0.0]
    (h * a).sum().backward()  # d/da (eq(a, b) * a) = eq(a, b): the comparison gives 0
    assert a.grad.tolist() == [1.0, 0.0] and b.grad.tolist() == [0.0, 0.0]
    leaf = tgrad.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.lt_(0.0)


def test_arithmetic_names():
    assert tgrad.tensor([2.0]).multiply_(3).tolist() == [6.0]
    assert tgrad.tensor([7.0]).divide_(2, rounding_mode="floor").tolist() == [3.0]
    assert tgrad.tensor([7.0]).true_divide_(2).tolist() == [3.5]
    assert tgrad.tensor([7.0]).subtract_(2, alpha=2).tolist() == [3.0]
    # a float alpha with complex tensors (not integral: allowed, as PyTorch)
    z, w = np.array([1 + 2j, -3j]), np.array([0.5, 2 - 1j])
    np.testing.assert_allclose(tgrad.rsub(tgrad.tensor(z), tgrad.tensor(w), alpha=0.5).numpy(),
                               w - 0.5 * z, rtol=1e-15)
    np.testing.assert_allclose(tgrad.add(tgrad.tensor(z), tgrad.tensor(z), alpha=1.5).numpy(),
                               2.5 * z, rtol=1e-15)
    np.testing.assert_allclose(tgrad.rsub(tgrad.tensor(z), 2.0, alpha=0.5).numpy(),
                               2.0 - 0.5 * z, rtol=1e-15)
    assert tgrad.tensor([7.0]).negative_().tolist() == [-7.0]
    assert tgrad.tensor([-2.5, 2.5]).fix_().tolist() == [-2.0, 2.0]
    assert tgrad.fix(tgrad.tensor([-2.7, 2.7])).tolist() == [-2.0, 2.0]
    assert tgrad.tensor([3.0]).hypot_(tgrad.tensor([4.0])).tolist() == [5.0]
    assert tgrad.tensor([3.0]).copysign_(tgrad.tensor([-0.0])).tolist() == [-3.0]
    x = np.array([-2.0, -0.0, 0.0, 3.0, NAN])
    # NaN stays NaN (NumPy's sign, the project's NaN rule; PyTorch's sign(NaN) is 0)
    np.testing.assert_array_equal(tgrad.sgn(tgrad.tensor(x)).numpy(), np.sign(x))
    for dt in (tgrad.float64, tgrad.float16, tgrad.bfloat16):
        np.testing.assert_array_equal(tgrad.tensor(x, dtype=dt).sign().float().numpy(),
                                      np.sign(x))
    a = tgrad.tensor(x, requires_grad=True)  # d|x| = sign(x): NaN at NaN
    a.abs().backward(tgrad.ones(5, dtype=tgrad.float64))
    np.testing.assert_array_equal(a.grad.numpy(), np.sign(x))
    t = tgrad.tensor(x)
    assert tgrad.positive(t) is t
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is "
                                           "not supported."):
        tgrad.positive(tgrad.tensor([True]))


def test_ravel_and_split_with_sizes():
    base = np.arange(12.0).reshape(3, 4)
    t = tgrad.tensor(base)
    np.testing.assert_array_equal(t.t().ravel().numpy(), base.T.ravel())  # a copy
    flat = t.ravel()
    assert flat._storage is t._storage  # contiguous: a view
    pieces = t.split_with_sizes([1, 3], dim=1)
    np.testing.assert_array_equal(pieces[1].numpy(), base[:, 1:])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum "
                                           r"exactly to 3"):
        t.split_with_sizes([1, 1])


def test_complex_api_on_real_tensors():
    t = tgrad.tensor([1.0, -2.0])
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg"):
        assert getattr(t, name)() is t and getattr(tgrad, name)(t) is t
    assert t.real is t and tgrad.real(t) is t
    assert not t.is_conj() and not t.is_neg() and not tgrad.is_complex(t)
    assert tgrad.isreal(tgrad.tensor([1.0, NAN])).tolist() == [True, True]
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes."):
        t.imag  # noqa: B018


def test_conjugate_transposes():
    base = np.arange(24.0).reshape(2, 3, 4)
    t = tgrad.tensor(base)
    np.testing.assert_array_equal(t.mH.numpy(), base.transpose(0, 2, 1))
    np.testing.assert_array_equal(t.adjoint().numpy(), base.transpose(0, 2, 1))
    np.testing.assert_array_equal(t[0].H.numpy(), base[0].T)
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices \\(2-D "
                                           "tensors\\). Got 3-D tensor. For batches"):
        t.H  # noqa: B018
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices or "
                                           "batches of matrices. Got 1-D tensor."):
        t[0, 0].mH  # noqa: B018
    with pytest.raises(RuntimeError, match="tensor.adjoint\\(\\) is only supported on "
                                           "matrices or batches of matrices. Got 1-D"):
        t[0, 0].adjoint()


def test_metadata():
    t = tgrad.zeros(2, 3, dtype=tgrad.float64)
    assert t.ndimension() == 2 and t.itemsize == 8 and t.nbytes == 48
    assert t.is_cpu and t.get_device() == -1
    assert t.is_signed() and not tgrad.tensor([True]).is_signed()
    assert t.is_same_size(tgrad.ones(2, 3)) and not t.is_same_size(tgrad.ones(3, 2))
    assert tgrad.tensor([NAN]).is_nonzero() and not tgrad.tensor(0.0).is_nonzero()
    assert tgrad.is_storage(t.untyped_storage()) and not tgrad.is_storage(t)
    assert not tgrad.is_storage([1.0]) and tgrad.is_tensor(t) and not tgrad.is_tensor(1.0)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value "
                                           "is ambiguous"):
        tgrad.tensor([1, 2]).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is "
                                           "ambiguous"):
        tgrad.tensor([]).is_nonzero()


def test_real_imag_setters_and_adjoint_of_0d():
    z = tgrad.tensor([1 + 2j, 3j])
    z.real = tgrad.tensor([5.0, 6.0])
    z.imag = 7  # a number, broadcast
    np.testing.assert_array_equal(z.numpy(), [5 + 7j, 6 + 7j])
    w = tgrad.tensor([1.0, 2.0])
    w.real = tgrad.tensor([3.0, 4.0])  # a real tensor's real part is itself
    assert w.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        w.imag = tgrad.tensor([3.0, 4.0])
    with pytest.warns(UserWarning, match="adjoint\\(\\) is deprecated on 0-D tensors"):
        assert tgrad.tensor(2 + 1j).adjoint().item() == 2 - 1j
