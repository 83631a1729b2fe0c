"""Bad inputs to the elementwise and reduction ops raise clear errors that name the op;
integer division follows PyTorch (``/`` true-divides to float, ``//`` floors)."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le",
          "gt", "ge", "logical_and", "logical_or", "floor_divide", "remainder", "fmod", "atan2"]
UNARY = ["neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
         "sigmoid", "erf", "reciprocal", "square", "sign", "floor", "ceil", "round", "trunc",
         "log2", "log10", "exp2", "sinh", "cosh", "tan", "atan", "asin", "acos"]
DIM_REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "var", "std", "logsumexp", "norm",
                  "all", "any"]


def _x(*shape):
    return tgrad.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape))


@pytest.mark.parametrize("name", BINARY)
def test_binary_shape_mismatch_names_op_and_shapes(name):
    a, b = _x(2, 3), _x(2, 4)
    with pytest.raises(RuntimeError, match=rf"^{name}: .*\[2, 3\].*\[2, 4\]"):
        getattr(tgrad, name)(a, b)


@pytest.mark.parametrize("name", BINARY)
def test_binary_rejects_non_numbers(name):
    with pytest.raises(TypeError, match=rf"^{name}\(\)"):
        getattr(tgrad, name)(_x(3), "1")
    if name in ("add", "sub", "mul", "div", "floor_divide"):  # PyTorch takes two numbers
        assert getattr(tgrad, name)(5.0, 2.0).item() == getattr(operator, {
            "add": "add", "sub": "sub", "mul": "mul", "div": "truediv",
            "floor_divide": "floordiv"}[name])(5.0, 2.0)
        return
    with pytest.raises(TypeError, match=rf"^{name}\(\)"):
        getattr(tgrad, name)(1.0, 2.0)  # no tensor at all


@pytest.mark.parametrize("name", UNARY)
def test_unary_rejects_non_tensor(name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' must be Tensor"):
        getattr(tgrad, name)([1.0, 2.0])


def test_where_shape_mismatch_and_condition_dtype():
    with pytest.raises(RuntimeError, match="where"):
        tgrad.where(_x(2, 3) > 2, _x(2, 3), _x(4))
    with pytest.raises(RuntimeError, match="^where expected condition to be a boolean tensor, "
                                           "but got a tensor with dtype Double"):
        tgrad.where(_x(3), _x(3), _x(3))
    with pytest.raises(RuntimeError, match="dtype Char"):
        tgrad.where(tgrad.tensor([1, 0], dtype=tgrad.int8), 1.0, 2.0)


def test_where_takes_a_uint8_condition_with_pytorchs_deprecation_warning():
    cond = tgrad.tensor([1, 0, 2], dtype=tgrad.uint8)  # nonzero is true
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        out = tgrad.where(cond, tgrad.tensor([1.0, 2.0, 3.0]), 0.0)
    assert out.dtype is tgrad.float32 and out.tolist() == [1.0, 0.0, 3.0]
    with pytest.warns(UserWarning, match="deprecated"):
        assert tgrad.tensor([4, 5, 6]).where(cond, -1).tolist() == [4, -1, 6]


@pytest.mark.parametrize("name", DIM_REDUCTIONS)
@pytest.mark.parametrize("dim", [2, -3, (0, 5)])
def test_reduction_dim_out_of_range(name, dim):
    with pytest.raises(IndexError, match=rf"^{name}: Dimension out of range"):
        getattr(tgrad, name)(_x(2, 3), dim=dim)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "var", "norm", "all"])
def test_reduction_repeated_dim(name):
    with pytest.raises(RuntimeError, match=rf"^{name}: dim \(1, -1\) appears multiple times"):
        getattr(tgrad, name)(_x(2, 3), dim=(1, -1))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_single_dim_ops_reject_tuples_and_bad_dims(name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'dim' must be int"):
        getattr(tgrad, name)(_x(2, 3), dim=(0, 1))
    with pytest.raises(IndexError, match=rf"^{name}: Dimension out of range"):
        getattr(tgrad, name)(_x(2, 3), dim=2)


@pytest.mark.parametrize("name", ["amax", "amin", "argmax", "argmin"])
def test_empty_reductions_without_identity(name):
    # PyTorch: IndexError for an empty dim; over all dims amax/amin raise RuntimeError,
    # argmax/argmin IndexError
    with pytest.raises(IndexError, match=rf"^{name}\(\): Expected reduction dim 0"):
        getattr(tgrad, name)(tgrad.zeros(0, 3), dim=0)
    with pytest.raises(IndexError if name.startswith("arg") else RuntimeError,
                       match=rf"^{name}\(\): Expected reduction dim"):
        getattr(tgrad, name)(tgrad.zeros(0))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_dim_on_empty(name):
    with pytest.raises(IndexError, match=rf"^{name}\(\): Expected reduction dim 0"):
        getattr(tgrad, name)(tgrad.zeros(0, 3), 0)


@pytest.mark.parametrize("name", ["mean", "var", "std", "norm"])
def test_float_only_reductions_reject_integers(name):
    with pytest.raises(RuntimeError, match=rf"^{name}\(\).*int64"):
        getattr(tgrad, name)(tgrad.tensor([1, 2, 3]))


def test_var_correction_arguments():
    with pytest.raises(RuntimeError, match="^var\\(\\): cannot pass both 'unbiased' and"):
        tgrad.var(_x(3), unbiased=True, correction=1)
    with pytest.raises(TypeError, match="^std\\(\\): correction must be a number"):
        tgrad.std(_x(3), correction="1")


def test_norm_p_strings_none_and_unsupported():
    """torch.norm's p: 'nuc' is the nuclear norm (NumPy's), None the default 2-norm, an
    unknown string matrix_norm's error, another type a TypeError."""
    x = _x(2, 2)
    np.testing.assert_allclose(tgrad.norm(x, p="nuc").item(),
                               np.linalg.norm(x.numpy(), "nuc"), rtol=1e-6)
    np.testing.assert_allclose(tgrad.norm(x, p=None).item(), np.sqrt(30.0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Order foo not supported"):
        tgrad.norm(x, p="foo")
    with pytest.raises(TypeError, match="^norm\\(\\): p must be a number"):
        tgrad.norm(x, p=[2])


def test_clamp_needs_a_bound():
    with pytest.raises(RuntimeError, match="^clamp: At least one of 'min' or 'max'"):
        tgrad.clamp(_x(3))


def test_clamp_of_a_bool_result_raises_pytorchs_not_implemented():
    b = tgrad.tensor([True, False])
    for call, kernel in ((lambda: tgrad.clamp(b, min=True), "clamp_min_scalar_cpu"),
                         (lambda: b.clamp(max=False), "clamp_max_scalar_cpu"),
                         (lambda: tgrad.clip(b, False, True), "clamp_scalar_cpu"),
                         (lambda: b.clone().clamp_(True), "clamp_min_scalar_cpu"),
                         (lambda: tgrad.clamp_min(b, True), "clamp_min_scalar_cpu")):
        with pytest.raises(NotImplementedError, match=f"^clamp: \"{kernel}\" not implemented "
                                                      "for 'Bool'"):
            call()
    assert tgrad.clamp(b, min=1).tolist() == [1, 1]  # an int bound promotes: int64
    assert tgrad.clamp(b, min=0.5).tolist() == [1.0, 0.5]


def test_bool_tensors_in_arithmetic_unary():
    for neg in (tgrad.neg, lambda t: -t, lambda t: t.clone().neg_()):
        with pytest.raises(RuntimeError, match="^neg: Negation, the `-` operator, on a bool "
                                               "tensor is not supported. If you are trying to "
                                               "invert a mask, use the `~`"):
            neg(tgrad.tensor([True, False]))


def test_sub_with_bool_tensor():
    m = tgrad.tensor([True, False])
    with pytest.raises(RuntimeError, match="^sub: Subtraction, the `-` operator, with a bool"):
        m - tgrad.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^sub: .*use the `~` or `logical_not\\(\\)`"):
        1 - m
    f = tgrad.tensor([0.5, 1.5], dtype=tgrad.float64)
    for op in (lambda: tgrad.sub(f, m, alpha=2), lambda: f.clone().sub_(m, alpha=2),
               lambda: tgrad.rsub(m, f, alpha=2), lambda: tgrad.sub(f, True, alpha=0.5)):
        # with alpha too (the scaled operand is no longer bool), as PyTorch
        with pytest.raises(RuntimeError, match="^sub: Subtraction, the `-` operator, with a "
                                               "bool tensor"):
            op()


def test_non_float_requires_grad():
    for t in (tgrad.tensor([1, 2]), tgrad.tensor([True])):
        with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex "
                                               "dtype can require gradients"):
            t.requires_grad_(True)
    with pytest.raises(RuntimeError, match="floating point"):
        tgrad.tensor([1, 2], requires_grad=True)


def test_integer_true_division_gives_float():
    a, b = tgrad.tensor([7, -7, 1, 0]), tgrad.tensor([2, 2, 0, 0])
    q = a / b
    assert q.dtype is tgrad.get_default_dtype()
    with np.errstate(all="ignore"):
        expected = np.array([7, -7, 1, 0]) / np.array([2, 2, 0, 0])
    np.testing.assert_array_equal(q.numpy(), expected.astype(np.float32))  # 3.5, -3.5, inf, nan
    r = tgrad.tensor([3]) / 2
    assert r.dtype is tgrad.float32 and r.item() == 1.5
    assert (7 / tgrad.tensor([2])).item() == 3.5
    assert tgrad.div(tgrad.tensor([5], dtype=tgrad.int32), 2).dtype is tgrad.float32


@pytest.mark.parametrize("name", ["atan", "asin", "acos", "arctan", "arcsin", "arccos"])
def test_inverse_trig_of_integers_and_bools_gives_default_float(name):
    # PyTorch promotes integer and bool inputs to the default float dtype
    for x in (tgrad.tensor([0, 1, -1]), tgrad.tensor([0, 1], dtype=tgrad.int32),
              tgrad.tensor([False, True])):
        y = getattr(tgrad, name)(x)
        assert y.dtype is tgrad.get_default_dtype()
        ref = getattr(np, name if name.startswith("arc") else "arc" + name[1:])
        np.testing.assert_allclose(y.numpy(), ref(x.numpy().astype(np.float64)), rtol=1e-7)
    with pytest.raises(RuntimeError, match=rf"^{name}_: result type Float can't be cast "
                                           r"to the desired output type Long"):
        getattr(tgrad.tensor([0, 1]), name + "_")()


def test_atan2_promotes_like_pytorch():
    i, f64 = tgrad.tensor([1, -2]), tgrad.tensor([3.0, 4.0], dtype=tgrad.float64)
    assert tgrad.atan2(i, tgrad.tensor([3, 4])).dtype is tgrad.float32  # ints: default float
    assert tgrad.atan2(tgrad.tensor([True]), i).dtype is tgrad.float32
    assert tgrad.atan2(i, f64).dtype is tgrad.float64
    assert tgrad.atan2(i, tgrad.tensor(3.0, dtype=tgrad.float64)).dtype is tgrad.float64
    half = tgrad.tensor([1.0], dtype=tgrad.float16)
    assert tgrad.atan2(half, tgrad.tensor(3.0, dtype=tgrad.float64)).dtype is tgrad.float16
    assert tgrad.arctan2(half, tgrad.tensor([3.0])).dtype is tgrad.float32
    np.testing.assert_allclose(i.atan2(tgrad.tensor([3, 4])).numpy(),
                               np.arctan2([1.0, -2.0], [3.0, 4.0]), rtol=1e-7)
    with pytest.raises(RuntimeError, match=r"^atan2_: result type Float can't be cast"):
        i.atan2_(tgrad.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"^arctan2_: output with shape \[2\] doesn't match "
                                           r"the broadcast shape \[1, 2\]"):
        tgrad.tensor([1.0, 2.0]).arctan2_(tgrad.tensor([[1.0, 2.0]]))


def test_integer_floor_division_floors_and_keeps_dtype():
    a = tgrad.tensor([7, -7, 6])
    q = a // 2
    assert q.dtype is tgrad.int64
    np.testing.assert_array_equal(q.numpy(), np.array([7, -7, 6]) // 2)  # [3, -4, 3]
    np.testing.assert_array_equal((7 // tgrad.tensor([2, -2])).numpy(), [3, -4])
    f = tgrad.tensor([7.5, -7.5]) // 2
    assert f.dtype is tgrad.float32
    np.testing.assert_array_equal(f.numpy(), np.floor(np.array([7.5, -7.5]) / 2))
    with pytest.raises(ZeroDivisionError, match="^floor_divide: integer division by zero"):
        a // 0
    # PyTorch raises RuntimeError("ZeroDivisionError"): the error is a RuntimeError too
    with pytest.raises(RuntimeError, match="^remainder: integer division by zero"):
        a % tgrad.tensor([1, 0, 1])
    # nothing to divide, nothing to raise (PyTorch checks each element)
    empty = tgrad.tensor([], dtype=tgrad.int64)
    assert (empty // 0).shape == (0,) and (empty % tgrad.tensor([0])).shape == (0,)


def test_floor_divide_and_comparisons_are_not_differentiable():
    x = tgrad.tensor([1.5, -2.5], requires_grad=True)
    for y in (x > 0, tgrad.eq(x, 1.5), tgrad.logical_not(x),
              tgrad.tensor([3, 4]) // tgrad.tensor(2)):
        assert not y.requires_grad and y.grad_fn is None
    # PyTorch's node "NotImplemented": floor_divide's float result requires grad and
    # backward raises (a silent zero would hide the missing derivative); so do heaviside
    # and remainder(number, tensor)
    xn = np.array([1.5, -2.5])
    for op, y, want in (("floor_divide", x // 2, np.floor_divide(xn, 2)),
                        ("floor_divide", 3.0 // x, np.floor_divide(3.0, xn)),
                        ("floor_divide", tgrad.floor_divide(x, x), np.ones(2)),
                        ("heaviside", tgrad.heaviside(x, tgrad.tensor([0.5])),
                         np.heaviside(xn, 0.5)),
                        ("remainder", 5.5 % x, np.remainder(5.5, xn))):
        np.testing.assert_array_equal(y.detach().numpy(), want)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not "
                                               f"implemented"):
            (y.sum() + x.sum()).backward()
    (tgrad.remainder(x, 2.0).sum()).backward()  # remainder(tensor, number): d x = 1
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_integer_negative_power():
    # PyTorch: a negative number exponent of an integer tensor raises...
    with pytest.raises(RuntimeError, match="^pow: integers to negative integer powers"):
        tgrad.tensor([2, 3]) ** -1
    assert (tgrad.tensor([2, 3]) ** -1.0).dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="^pow: integers to negative integer powers"):
        tgrad.tensor([True, False]) ** -2  # a bool base too (an int64 result)
    # ...a tensor of negative exponents computes 1 / a^|e| truncated: 1 for a base of 1,
    # -1 or 1 by parity for -1, else 0 (0 ** -1 too); a number base alike
    a = tgrad.tensor([2, 1, -1, -1, 0, 3, -2, 5])
    e = tgrad.tensor([-1, -2, -3, -4, -1, 2, -1, 0])
    for got in (a ** e, tgrad.pow(a, e), a.clone().pow_(e)):
        assert got.dtype is tgrad.int64 and got.tolist() == [0, 1, -1, 1, 0, 9, 0, 1]
    assert (2 ** tgrad.tensor([-1, 2])).tolist() == [0, 4]
    assert ((-1) ** tgrad.tensor([-1, -2, 3], dtype=tgrad.int8)).tolist() == [-1, 1, -1]


@pytest.mark.parametrize("exponent", [-1, -2, -255, -256, np.int64(-3)])
def test_negative_number_exponent_of_a_uint8_tensor_raises(exponent):
    # the number must be checked before it is converted to uint8, where -1 wraps to 255
    # (uint8 [0, 1, 2, 3] ** -1 was computed as x^255 mod 256: [0, 1, 0, 171])
    u = tgrad.tensor([0, 1, 2, 3], dtype=tgrad.uint8)
    for call in (lambda: u ** exponent, lambda: tgrad.pow(u, exponent), lambda: u.pow(exponent),
                 lambda: u.clone().pow_(exponent)):
        with pytest.raises(RuntimeError, match="^pow: integers to negative integer powers"):
            call()
    # non-negative numbers and a float exponent still compute (hand values)
    assert (u ** 2).tolist() == [0, 1, 4, 9] and (u ** 2).dtype is tgrad.uint8
    np.testing.assert_allclose((u ** -1.0).numpy(), [np.inf, 1.0, 0.5, 1 / 3], rtol=1e-7)


def test_promotion_rules():
    i, f16, f64 = tgrad.tensor([1, 2]), tgrad.tensor([1.0], dtype=tgrad.float16), \
        tgrad.tensor([1.0], dtype=tgrad.float64)
    assert (i + 1.5).dtype is tgrad.float32
    assert (f16 + 1.5).dtype is tgrad.float16  # Python scalars do not widen tensors
    assert (f16 + f64).dtype is tgrad.float64
    assert (f16 + tgrad.tensor([1.0], dtype=tgrad.bfloat16)).dtype is tgrad.float32
    assert (i + tgrad.tensor(2.5, dtype=tgrad.float64)).dtype is tgrad.float64  # 0-d float
    assert (f16 + tgrad.tensor(2.5, dtype=tgrad.float64)).dtype is tgrad.float16
    assert tgrad.tensor([True, False]).sum().dtype is tgrad.int64
    assert tgrad.tensor([1, 2], dtype=tgrad.int32).prod().dtype is tgrad.int64


def test_bool_pow_and_floor_divide_raise_like_pytorch():
    b = tgrad.tensor([True, False])
    for f in (lambda: b ** b, lambda: b // b, lambda: tgrad.pow(b, b[0]), lambda: b % b,
              lambda: tgrad.fmod(b, True)):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            f()
    assert (b + b).tolist() == [True, False] and (b * b).dtype is tgrad.bool


def test_sign_and_abs_of_bool_keep_the_values():
    b = tgrad.tensor([True, False])
    assert tgrad.sign(b).tolist() == [True, False] and tgrad.sign(b).dtype is tgrad.bool
    with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
        tgrad.abs(b)  # PyTorch's abs takes no bools (sign does)


def test_remainder_and_fmod_follow_python_and_c_signs():
    a = tgrad.tensor([7, -7, 7, -7])
    b = tgrad.tensor([3, 3, -3, -3])
    assert (a % b).tolist() == [1, 2, -2, -1]  # Python's %: the divisor's sign
    assert tgrad.fmod(a, b).tolist() == [1, -1, 1, -1]  # C's fmod: the dividend's sign
    assert (-7.5 % tgrad.tensor([2.0])).tolist() == [0.5]
    with pytest.raises(ZeroDivisionError, match="^remainder: integer division by zero"):
        a % 0
    with pytest.raises(ZeroDivisionError, match="^fmod: integer division by zero"):
        tgrad.fmod(a, tgrad.tensor([1, 0, 1, 1]))


def test_index_add_converts_alpha_to_the_input_dtype():
    # PyTorch's index_add converts alpha to input's dtype (unlike add, a float alpha on an
    # integer tensor is no error): truncated toward zero, overflow raises; for bool any
    # nonzero alpha is True (a logical or of the selected source values)
    z = tgrad.zeros(3, dtype=tgrad.int64)
    idx, src = tgrad.tensor([0, 0]), tgrad.tensor([1, 2])
    out = z.index_add(0, idx, src, alpha=3)
    assert out.dtype is tgrad.int64 and out.tolist() == [9, 0, 0]
    for alpha, k in ((1.5, 1), (2.7, 2), (-2.7, -2), (0.5, 0)):  # math.trunc
        assert z.index_add(0, idx, src, alpha=alpha).tolist() == [3 * k, 0, 0]
        y = z.int().clone()
        assert y.index_add_(0, idx, src.int(), alpha=alpha) is y
        assert y.dtype is tgrad.int32 and y.tolist() == [3 * k, 0, 0]
    for alpha in (1e30, float("nan"), float("inf")):
        with pytest.raises(RuntimeError, match="index_add: value .* cannot be converted to "
                                               "type int64 without overflow"):
            z.index_add(0, idx, src, alpha=alpha)
    with pytest.raises(RuntimeError, match="cannot be converted to type int32"):
        z.int().index_add(0, idx, src.int(), alpha=2 ** 40)
    with pytest.raises(RuntimeError, match="cannot be converted to type float32"):
        z.float().index_add(0, idx, src.float(), alpha=1e40)
    b = tgrad.zeros(3, dtype=tgrad.bool)
    bsrc = tgrad.tensor([True, False])
    for alpha, want in ((2, [True, False, False]), (-1, [True, False, False]),
                        (0.5, [True, False, False]), (0, [False, False, False])):
        out = b.index_add(0, tgrad.tensor([0, 2]), bsrc, alpha=alpha)
        assert out.dtype is tgrad.bool and out.tolist() == want


def test_unary_plus_is_positive():
    x = tgrad.tensor([1, -2])
    assert (+x) is x and tgrad.positive(x) is x
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor") as e:
        +tgrad.tensor([True])
    assert type(e.value) is RuntimeError  # PyTorch 2.13's type (not NotImplementedError)


def test_argmax_argmin_refuse_bool_input():
    """PyTorch: "argmax(): does not support bool input" (max/amax of bools are fine)."""
    x = tgrad.tensor([False, True, True])
    for name in ("argmax", "argmin"):
        with pytest.raises(RuntimeError, match=rf"^{name}\(\): does not support bool input"):
            getattr(x, name)()
    assert x.max().item() is True and x.amax().item() is True


@pytest.mark.parametrize("call", [
    lambda t: t.sum(dtype=tgrad.int64), lambda t: t.sum(0, dtype=tgrad.int32),
    lambda t: t.prod(dtype=tgrad.int64), lambda t: t.nansum(dtype=tgrad.int64),
    lambda t: t.cumsum(0, dtype=tgrad.int64), lambda t: t.cumprod(0, dtype=tgrad.int32)])
def test_integer_dtype_result_of_an_input_that_requires_grad_raises(call):
    """PyTorch refuses to record an integer result ("Autograd not support dtype: Long");
    without grad (detached, or under no_grad) the same call sums the truncated values."""
    x = tgrad.tensor([[1.5, 2.5], [-3.5, 4.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Autograd not support dtype: (Long|Int)"):
        call(x)
    want = call(tgrad.tensor(np.trunc(x.detach().numpy()).astype(np.int64)))
    with tgrad.no_grad():
        np.testing.assert_array_equal(call(x).numpy(), want.numpy())
    np.testing.assert_array_equal(call(x.detach()).numpy(), want.numpy())


def test_bool_scans_are_not_implemented():
    x = tgrad.tensor([1, 0, 2])
    for name in ("cumsum", "cumprod"):
        with pytest.raises(NotImplementedError, match=rf"\"{name}\" not implemented for 'Bool'"):
            getattr(x, name)(0, dtype=tgrad.bool)


def test_ops_without_a_pytorch_kernel_raise_not_implemented_with_its_text():
    # PyTorch raises NotImplementedError naming its CPU kernel; tgrad's explanation first
    b, i = tgrad.tensor([True, False]), tgrad.tensor([1, 2])
    for name in ("floor", "ceil", "round", "trunc"):
        with pytest.raises(NotImplementedError, match=rf"^{name}: .*\"{name}_vml_cpu\" not "
                                                      rf"implemented for 'Bool'"):
            getattr(tgrad, name)(b)
    for t, st in ((b, "Bool"), (i, "Long"), (i.to(tgrad.uint8), "Byte")):
        with pytest.raises(NotImplementedError, match=rf"^frac: .*\"frac_cpu\" not implemented "
                                                      rf"for '{st}'"):
            tgrad.frac(t)
    m, v, m3 = tgrad.ones(2, 2, dtype=tgrad.bool), b, tgrad.ones(2, 2, 2, dtype=tgrad.bool)
    for call, kernel in ((lambda: v @ v, "dot"), (lambda: m @ v, "addmv_impl_cpu"),
                         (lambda: m @ m, "addmm_impl_cpu_"), (lambda: v @ m, "addmm_impl_cpu_"),
                         (lambda: tgrad.bmm(m3, m3), "bmm")):
        with pytest.raises(NotImplementedError, match=rf"^matmul: .*\"{kernel}\" not "
                                                      rf"implemented for 'Bool'"):
            call()
    with pytest.raises(NotImplementedError, match="\"searchsorted_out_cpu\" not implemented "
                                                  "for 'Bool'"):
        tgrad.searchsorted(b, b)
    assert tgrad.searchsorted(tgrad.tensor([0, 1]), b).tolist() == [1, 0]  # (int64: fine)
    for r in (tgrad.tensor([1, 2], dtype=tgrad.int16), tgrad.tensor([1.0, 2.0])):
        with pytest.raises(NotImplementedError, match="^repeat_interleave\\(\\): .*"
                                                      "\"repeat_interleave_cpu\" not"):
            tgrad.repeat_interleave(tgrad.ones(2), r)
    assert tgrad.repeat_interleave(tgrad.tensor([1, 2], dtype=tgrad.int32)).tolist() == [0, 1, 1]
    h = tgrad.ones(2, dtype=tgrad.float16)
    with pytest.raises(NotImplementedError, match="\"binomial_cpu\" not implemented for 'Half'"):
        tgrad.binomial(h, h / 2)
    with pytest.raises(RuntimeError, match="^binomial: Found dtype Double but expected Float"):
        tgrad.binomial(tgrad.ones(2), tgrad.ones(2, dtype=tgrad.float64) / 2)
    with pytest.raises(NotImplementedError, match="\"polar_cpu\" not implemented for 'Half'"):
        tgrad.polar(h, h)


def test_histogram_dtypes_as_pytorch():
    # int / bool inputs: no kernel; float16/bfloat16 only with edge tensors of their dtype
    x = tgrad.tensor([0.25, 0.5, 1.5, 1.75, 1.0])
    for t, bins, kernel in ((x.long(), 2, "histogramdd"), (x.long(), x.long(), "histogram_cpu"),
                            (x.half(), 2, "histogramdd")):
        with pytest.raises(NotImplementedError, match=rf"^torch\.histogram: .*\"{kernel}\" not "
                                                      rf"implemented for"):
            tgrad.histogram(t, bins)
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Half'"):
        tgrad.histogramdd(x.half().reshape(-1, 1), 2)
    with pytest.raises(RuntimeError, match="same dtype, but got input with dtype float32 and "
                                           "bins for dimension 0 with dtype float64"):
        tgrad.histogram(x, tgrad.tensor([0.0, 1.0, 2.0], dtype=tgrad.float64))
    edges = np.array([0.0, 1.0, 2.0])
    for dt in (tgrad.float16, tgrad.bfloat16):
        hist, e = tgrad.histogram(x.to(dt), tgrad.tensor(edges).to(dt))
        assert hist.dtype is dt and e.dtype is dt
        np.testing.assert_array_equal(hist.float().numpy(),
                                      np.histogram(x.numpy().astype(np.float64), edges)[0])


# ---- bad-input hunt against PyTorch 2.13: non-tensor inputs, Python's own TypeErrors,
# complex orderings, dtype and int-sequence checks (PyTorch's error types; texts name the op)

# (name, valid args with the first tensor at index 0; a second tensor checked too when
# the entry has a third element, its argument name)
_TENSOR_FIRST = [
    ("flip", (0,)), ("roll", (1,)), ("tile", ((2,),)), ("clone", ()), ("unsqueeze", (0,)),
    ("squeeze", ()), ("flatten", ()), ("permute", ((1, 0),)), ("transpose", (0, 1)),
    ("swapaxes", (0, 1)), ("t", ()), ("movedim", (0, 1)), ("split", (1,)), ("chunk", (2,)),
    ("unbind", ()), ("hsplit", (2,)), ("vsplit", (2,)), ("tensor_split", (2,)),
    ("diagonal", ()), ("diag", ()), ("diag_embed", ()), ("trace", ()), ("tril", ()),
    ("triu", ()), ("rot90", ()), ("select", (0, 0)), ("nonzero", ()), ("argwhere", ()),
    ("unique", ()), ("unique_consecutive", ()), ("isinf", ()), ("isfinite", ()),
    ("logical_not", ()), ("relu", ()), ("signbit", ()), ("frac", ()), ("logit", ()),
    ("nan_to_num", ()), ("nansum", ()), ("nanmean", ()), ("diff", ()), ("aminmax", ()),
    ("zeros_like", ()), ("ones_like", ()), ("full_like", (1.0,)), ("is_conj", ()),
    ("is_neg", ()), ("resolve_conj", ()), ("resolve_neg", ()), ("repeat_interleave", (2,)),
    ("mm", (None,), "mat2"), ("kron", (None,), "other"), ("tensordot", (None, 1), "b"),
    ("addcmul", (None, None), "tensor1"), ("lerp", (None, 0.5), "end"),
]


@pytest.mark.parametrize("entry", _TENSOR_FIRST, ids=[e[0] for e in _TENSOR_FIRST])
@pytest.mark.parametrize("bad", ["x", None, [1.0, 2.0]])
def test_non_tensor_input_is_pytorchs_type_error(entry, bad):
    # PyTorch: TypeError "<op>(): argument 'input' (position 1) must be Tensor, not str";
    # tgrad leaked "'str' object has no attribute 'ndim'" or accepted it (is_conj, tile...)
    name, rest = entry[0], entry[1]
    fn = getattr(tgrad, name)
    x = _x(2, 2)
    args = tuple(x if a is None else a for a in rest)
    assert fn(x, *args) is not None  # the valid call works
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument '\w+' \(position 1\) must be "
                                        rf"Tensor, not {type(bad).__name__}"):
        fn(bad, *args)
    if len(entry) == 3:  # the second tensor operand too
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument '{entry[2]}' \(position "
                                            rf"2\) must be Tensor, not float"):
            fn(x, 2.5, *args[1:])


def test_more_non_tensor_inputs_are_type_errors():
    # found by calling every public function with a str: each read an attribute of it
    # ("'str' object has no attribute 'dtype'") instead of PyTorch's TypeError
    x, t = _x(2, 3), tgrad.tensor([0, 2])
    for fn, name, rest in ((tgrad.bernoulli, "bernoulli", ()), (tgrad.bincount, "bincount", ()),
                           (tgrad.is_nonzero, "is_nonzero", ()),
                           (tgrad.multinomial, "multinomial", (2,)),
                           (tgrad.index_put, "index_put", ((t,), _x(2, 3))),
                           (F.cross_entropy, "cross_entropy", (t,)),
                           (F.soft_margin_loss, "soft_margin_loss", (x,))):
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input'( \(position 1\))? "
                                            rf"must be Tensor, not str"):
            fn("x", *rest)
    for fn in (F.triplet_margin_loss, F.triplet_margin_with_distance_loss):
        assert fn(x, x, x) is not None
        for pos, name in ((2, "positive"), (3, "negative")):
            args = [x, x, x]
            args[pos - 1] = "x"
            with pytest.raises(TypeError, match=rf"^{fn.__name__}\(\): argument '{name}' "
                                                rf"\(position {pos}\) must be Tensor, not str"):
                fn(*args)


@pytest.mark.parametrize("name", ["dot", "vdot", "outer"])
def test_vector_products_refuse_non_tensors(name):
    v = _x(3)
    assert getattr(tgrad, name)(v, v) is not None
    for args, pos, arg in (((None, v), 1, "input"), ((v, 2.5), 2, "other|vec2")):
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument '({arg})' \(position "
                                            rf"{pos}\) must be Tensor"):
            getattr(tgrad, name)(*args)


@pytest.mark.parametrize("name", ["abs", "exp", "add", "mul", "div", "atanh", "clamp", "conj",
                                  "resolve_neg"])
def test_python_type_errors_name_the_op(name):
    # an unknown keyword / too many arguments: Python's TypeError names the function by its
    # __qualname__, which was the factory's ("_unary_fn.<locals>.fn() got an unexpected ...")
    fn = getattr(tgrad, name)
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument "
                                        rf"'bogus'"):
        fn(_x(2), bogus=1)
    with pytest.raises(TypeError, match=rf"^{name}\(\) takes"):
        fn(_x(2), _x(2), _x(2), _x(2))


_COMPLEX_ORDER = [  # PyTorch 2.13's exception types for ops over a complex order
    ("sort", lambda z: tgrad.sort(z), RuntimeError, "Sort does not support complex"),
    ("argsort", lambda z: tgrad.argsort(z), RuntimeError, "Sort does not support complex"),
    ("msort", lambda z: tgrad.msort(z), RuntimeError, "Sort does not support complex"),
    ("topk", lambda z: tgrad.topk(z, 1), RuntimeError, "topk does not support complex"),
    ("argmax", lambda z: tgrad.argmax(z), RuntimeError, "does not support complex"),
    ("argmin", lambda z: z.argmin(), RuntimeError, "does not support complex"),
    ("maximum", lambda z: tgrad.maximum(z, z), RuntimeError, "not implemented for complex"),
    ("minimum", lambda z: z.minimum(z), RuntimeError, "not implemented for complex"),
    ("fmax", lambda z: tgrad.fmax(z, z), RuntimeError, "not implemented for complex"),
    ("fmin", lambda z: tgrad.fmin(z, z), RuntimeError, "not implemented for complex"),
    ("heaviside", lambda z: tgrad.heaviside(z, z), RuntimeError, "not yet implemented for "
                                                                 "complex"),
    ("kthvalue", lambda z: tgrad.kthvalue(z, 1), NotImplementedError,
     "\"kthvalue_cpu\" not implemented for 'ComplexDouble'"),
    ("cummax", lambda z: tgrad.cummax(z, 0), NotImplementedError,
     "\"cummax_cpu\" not implemented for 'ComplexDouble'"),
    ("cummin", lambda z: z.cummin(0), NotImplementedError,
     "\"cummin_cpu\" not implemented for 'ComplexDouble'"),
    ("searchsorted", lambda z: tgrad.searchsorted(z, z), NotImplementedError,
     "\"searchsorted_out_cpu\" not implemented for 'ComplexDouble'"),
    ("bucketize", lambda z: tgrad.bucketize(z, z), NotImplementedError,
     "\"searchsorted_out_cpu\" not implemented"),
    ("unique", lambda z: tgrad.unique(z), NotImplementedError,
     "\"unique\" not implemented for 'ComplexDouble'"),
]


@pytest.mark.parametrize("name, fn, err, text", _COMPLEX_ORDER,
                         ids=[e[0] for e in _COMPLEX_ORDER])
def test_complex_orderings_raise_pytorchs_type(name, fn, err, text):
    # kthvalue / cummax / cummin returned a value (NumPy's lexicographic complex order);
    # sort / topk / argmax / maximum raised NotImplementedError where PyTorch's is a
    # RuntimeError; heaviside / fmax named gt / ge
    z = tgrad.tensor([1 + 2j, -1 + 0.5j, 3 - 1j], dtype=tgrad.complex128)
    with pytest.raises(err, match=text) as info:
        fn(z)
    assert name in str(info.value) or name in ("msort", "bucketize")


def test_linalg_vecdot_dtype_checks():
    x = _x(2, 3)
    with pytest.raises(RuntimeError, match=r"^linalg.vecdot: Expected x and y to have the same "
                                           r"dtype, but found x of type Double and y of type "
                                           r"Long instead"):
        tgrad.linalg.vecdot(x, x.long())  # PyTorch does not promote (tgrad did)
    with pytest.raises(RuntimeError, match=r"^linalg.vecdot: Expected a floating point or "
                                           r"complex tensor as input. Got Long"):
        tgrad.linalg.vecdot(x.long(), x.long())  # (tgrad returned an int64 sum)
    np.testing.assert_allclose(tgrad.linalg.vecdot(x, x).numpy(),
                               (x.numpy() ** 2).sum(-1), rtol=1e-15)


def test_int_sequences_and_counts():
    x = tgrad.tensor(np.arange(12.0).reshape(3, 4))
    with pytest.raises(TypeError, match=r"^tile\(\): argument 'dims' \(position 2\) must be "
                                        r"tuple of ints, but found element of type float at "
                                        r"pos 0"):
        tgrad.tile(x, [1.5, 1.5])  # (returned x unchanged)
    with pytest.raises(TypeError, match=r"^roll\(\): argument 'shifts' \(position 2\) must be "
                                        r"tuple of ints, not bool"):
        tgrad.roll(x, True)
    # a one-element integer tensor is an int (PyTorch's __index__), here and for steps
    np.testing.assert_array_equal(tgrad.roll(x, tgrad.tensor(1), 1).numpy(),
                                  np.roll(np.arange(12.0).reshape(3, 4), 1, 1))
    np.testing.assert_array_equal(tgrad.tile(x, (2,)).numpy(),
                                  np.tile(np.arange(12.0).reshape(3, 4), 2))
    for name in ("linspace", "logspace"):
        fn = getattr(tgrad, name)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'steps' \(position 3\) "
                                            rf"must be int, not float"):
            fn(0, 1, 1.5)  # (linspace(0, 5, 1.5) gave 2 values)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'steps'"):
            fn(0, 1, True)
    np.testing.assert_allclose(tgrad.linspace(0, 5, tgrad.tensor(3)).numpy(), [0, 2.5, 5])
    with pytest.raises(TypeError, match=r"^bucketize\(\): argument 'input' \(position 1\) must "
                                        r"be Tensor or Number, not list"):
        tgrad.bucketize([1.0, 2.0], tgrad.tensor([0.0, 1.5, 3.0]))
    assert tgrad.bucketize(2.0, tgrad.tensor([0.0, 1.5, 3.0])).item() == 2


def test_permute_refuses_float_dims():
    # int() truncated them: permute(x, (0.5, 1.5)) returned x unpermuted
    x = _x(2, 3)
    with pytest.raises(TypeError, match=r"^permute\(\): argument 'dims' \(position 2\) must be "
                                        r"tuple of ints, but found element of type float"):
        tgrad.permute(x, (0.5, 1.5))
    with pytest.raises(TypeError, match=r"^permute\(\): argument 'dims' \(position 2\) must be "
                                        r"tuple of ints, not str"):
        x.permute("ab")
    ref = np.arange(1.0, 7.0).reshape(2, 3).T
    for got in (x.permute(1, 0), x.permute([1, 0]), tgrad.permute(x, (1, 0)),
                x.permute(dims=(1, 0)), x.permute(tgrad.tensor(1), 0)):
        np.testing.assert_array_equal(got.numpy(), ref)


@pytest.mark.parametrize("call, err, text", [
    # NumPy's broadcast ValueError leaked
    (lambda: tgrad.complex(_x(5).double(), _x(3, 4).double()), RuntimeError,
     r"^complex: The size of tensor a \(5\) must match the size of tensor b \(4\) at "
     r"non-singleton dimension 1"),
    (lambda: tgrad.nextafter(_x(5), _x(3, 4)), RuntimeError,
     r"^nextafter: The size of tensor a \(5\) must match"),
    # a 0-d right-hand side: IndexError 'tuple index out of range'
    (lambda: tgrad.linalg.solve(tgrad.eye(2), tgrad.tensor(1.0)), RuntimeError,
     r"^linalg.solve: The input tensor B must have at least 2 dimensions"),
    (lambda: tgrad.linalg.lstsq(tgrad.eye(2), tgrad.tensor(1.0)), RuntimeError,
     r"lstsq: other must have at least 1 dimension"),
    # non-tensors: AttributeError ('str' object has no attribute ...)
    (lambda: tgrad.linalg.eigvals("x"), TypeError,
     r"^linalg.eigvals\(\): argument 'input' \(position 1\) must be Tensor, not str"),
    (lambda: tgrad.linalg.diagonal(None), TypeError,
     r"^linalg.diagonal\(\): argument 'A' \(position 1\) must be Tensor, not NoneType"),
    (lambda: tgrad.slice_scatter(2.5, _x(2)), TypeError,
     r"^slice_scatter\(\): argument 'input' \(position 1\) must be Tensor, not float"),
    (lambda: tgrad.atleast_2d(_x(2), 1), TypeError,
     r"^atleast_2d\(\): expected Tensor as element 1 in argument 0, but got int"),
    (lambda: tgrad.atleast_3d([1.0]), TypeError,
     r"^atleast_3d\(\): expected Tensor as element 0 in argument 0, but got float"),
    (lambda: tgrad.meshgrid(_x(2), None), TypeError,
     r"^meshgrid\(\): expected Tensor as element 1 in argument 0, but got NoneType"),
    (lambda: tgrad.gather(_x(2), 0, [0]), TypeError,  # (was a RuntimeError)
     r"^gather\(\): argument 'index' \(position 3\) must be Tensor, not list"),
    # strings where a number goes: NumPy's / float()'s ValueError leaked
    (lambda: tgrad.xlogy(_x(2), "x"), TypeError,
     r"^xlogy\(\): argument 'other' \(position 2\) must be Tensor or Number, not str"),
    (lambda: tgrad.special.zeta("x", _x(2)), TypeError, r"^zeta\(\): argument 'input'"),
    (lambda: tgrad.special.chebyshev_polynomial_t(_x(2), "x"), TypeError,
     r"^chebyshev_polynomial_t\(\): argument"),
    (lambda: tgrad.copysign(_x(2), "x"), TypeError, r"^copysign\(\): argument 'other'"),
    (lambda: tgrad.float_power(_x(2), None), TypeError, r"^float_power\(\): argument 'exponent'"),
    (lambda: tgrad.linspace("a", 1, 3), TypeError, r"^linspace\(\): argument 'start'"),
    (lambda: tgrad.fft.fftfreq(3, "a"), TypeError,
     r"^fftfreq\(\): argument 'd' \(position 2\) must be float, not str"),
    (lambda: tgrad.linalg.vecdot(_x(2, 3), _x(2, 3), dim=(0, 1)), TypeError,
     r"^linalg.vecdot\(\): argument 'dim' must be int, not tuple"),
])
def test_leaked_internal_errors_are_pytorchs(call, err, text):
    with pytest.raises(err, match=text):
        call()


def test_number_operands_still_work():
    # the checks above take numbers (NumPy's too) where PyTorch does
    x = tgrad.tensor([0.5, 2.0], dtype=tgrad.float64)
    np.testing.assert_allclose(tgrad.xlogy(3, x).numpy(), 3 * np.log([0.5, 2.0]), rtol=1e-15)
    np.testing.assert_array_equal(tgrad.copysign(x, np.float32(-1)).numpy(), [-0.5, -2.0])
    np.testing.assert_array_equal(tgrad.float_power(2, x).numpy(), 2.0 ** np.array([0.5, 2.0]))
    np.testing.assert_array_equal(tgrad.fft.fftfreq(4, 2).numpy(), np.fft.fftfreq(4, 2))
    np.testing.assert_allclose(tgrad.complex(x, x.reshape(2, 1)).numpy(),
                               np.array([0.5, 2.0]) + 1j * np.array([[0.5], [2.0]]))
    assert tgrad.atleast_2d([_x(2), _x(1, 2)])[0].shape == (1, 2)


def test_mvlgamma_and_broadcast_shapes_checks():
    x = tgrad.tensor([3.0, 4.5], dtype=tgrad.float64)
    for fn in (tgrad.mvlgamma, tgrad.special.multigammaln):  # a bool input was read as 0 / 1
        with pytest.raises(RuntimeError, match="may not be a boolean tensor"):
            fn(x > 0, 1)
    with pytest.raises(TypeError, match=r"^mvlgamma\(\): argument 'p' \(position 2\) must be "
                                        r"int, not float"):
        tgrad.mvlgamma(x, 1.5)
    # p = 2: lgamma(x) + lgamma(x - 1/2) + log(pi) / 2
    ref = [math.lgamma(v) + math.lgamma(v - 0.5) + math.log(math.pi) / 2 for v in (3.0, 4.5)]
    np.testing.assert_allclose(tgrad.mvlgamma(x, 2).numpy(), ref, rtol=1e-14)
    with pytest.raises(TypeError, match=r"torch.Size\(\) takes an iterable of 'int' \(item 0 "
                                        r"is 'float'\)"):
        tgrad.broadcast_shapes((1.5, 2))  # (returned (1.5, 2))
    assert tgrad.broadcast_shapes((2, 1), (3,), 1) == (2, 3)


@pytest.mark.parametrize("name, shapes, text", [
    ("addmm", ((2, 2), (2, 3), (3, 2)),
     r"^addmm: self and mat2 must have the same dtype, but got Float and Double"),
    ("addmv", ((2,), (2, 3), (3,)),
     r"^addmv input tensors must have the same dtype, but got Float, Double, and Double"),
    ("baddbmm", ((1, 2, 2), (1, 2, 3), (1, 3, 2)),
     r"^baddbmm: Input dtypes must be the same, got: input float32, batch1: float64"),
    ("addbmm", ((2, 2), (1, 2, 3), (1, 3, 2)), r"^addbmm: self and mat2 must have the same"),
])
def test_add_matmul_family_does_not_promote_input(name, shapes, text):
    # PyTorch's kernels take one dtype; tgrad promoted a float32 input to the float64 product
    a, b, c = (tgrad.tensor(np.ones(s)) for s in shapes)
    with pytest.raises(RuntimeError, match=text):
        getattr(tgrad, name)(a.float(), b, c)


def test_addr_promotes_as_pytorch():
    # PyTorch's addr is a broadcast product: mixed dtypes promote (tgrad's matmul refused them)
    m, u, v = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0]), np.array([0.5, -1.0, 2.0])
    out = tgrad.addr(tgrad.tensor(m), tgrad.tensor(u), tgrad.tensor(v, dtype=tgrad.float32),
                     beta=2, alpha=3)
    assert out.dtype is tgrad.float64
    np.testing.assert_allclose(out.numpy(), 2 * m + 3 * np.outer(u, v), rtol=1e-15)


def _args_for(name):
    x, i, v = _x(2, 2), tgrad.tensor([0, 1]), _x(2)
    return {
        "addmm": (x, x, x), "addmv": (v, x, v), "mv": (x, v), "baddbmm": (x[None], x[None],
                                                                            x[None]),
        "addbmm": (x, x[None], x[None]), "index_add": (x, 0, i, x), "index_copy": (x, 0, i, x),
        "index_select": (x, 0, i), "scatter_add": (x, 0, i[None], x), "scatter": (x, 0, i[None], x),
        "take_along_dim": (x, i[None], 0), "take": (x, i), "index_fill": (x, 0, i, 1.0),
        "masked_fill": (x, x > 2, 0.0), "masked_scatter": (x, x > 2, x), "reshape": (x, (4,)),
        "broadcast_to": (x, (2, 2, 2)), "narrow": (x, 0, 0, 1), "narrow_copy": (x, 0, 0, 1),
        "unflatten": (v, 0, (1, 2)), "triplet_margin_loss": (x, x, x),
    }[name]


@pytest.mark.parametrize("name", ["addmm", "addmv", "mv", "baddbmm", "addbmm", "index_add",
                                  "index_copy", "index_select", "scatter_add", "scatter",
                                  "take_along_dim", "take", "index_fill", "masked_fill",
                                  "masked_scatter", "reshape", "broadcast_to", "narrow",
                                  "narrow_copy", "unflatten", "triplet_margin_loss"])
def test_every_tensor_operand_is_checked(name):
    # each tensor operand in turn replaced by a string: PyTorch's TypeError naming the
    # argument and its position (tgrad leaked "'str' object has no attribute 'ndim'")
    fn, args = getattr(tgrad, name), _args_for(name)
    assert fn(*args) is not None
    for pos, a in enumerate(args):
        if not isinstance(a, tgrad.Tensor) or (name, pos) in {("scatter", 3), ("index_copy", 2),
                                                              ("masked_fill", 1),
                                                              ("masked_scatter", 1),
                                                              ("index_fill", 2),
                                                              ("triplet_margin_loss", 0)}:
            continue  # (operands checked by other code: their own texts)
        bad = args[:pos] + ("x",) + args[pos + 1:]
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument '\w+' \(position {pos + 1}"
                                            rf"\) must be Tensor, not str"):
            fn(*bad)


@pytest.mark.parametrize("call, err, text", [
    # float sizes were truncated by int(): broadcast_to(x, (3.7, 4.2)) had shape (3, 4)
    (lambda: tgrad.broadcast_to(_x(1, 4), (3.7, 4.2)), TypeError,
     r"^broadcast_to\(\): argument 'size' \(position 2\) must be tuple of ints, but found "
     r"element of type float at pos 0"),
    (lambda: tgrad.expand_copy(_x(1, 4), (3.7, 4)), TypeError, r"^expand_copy\(\): argument"),
    (lambda: tgrad.unflatten(_x(4), 0, (2.0, 2.0)), TypeError,
     r"^unflatten\(\): argument 'sizes' \(position 3\) must be tuple of ints"),
    # out-of-range dims were wrapped modulo ndim
    (lambda: tgrad.linalg.tensorsolve(_x(2, 3, 6), _x(6), dims=(5, 1)), IndexError,
     r"^linalg.tensorsolve: Dimension out of range \(expected to be in range of \[-3, 2\], "
     r"but got 5\)"),
    (lambda: tgrad.linalg.tensorsolve(_x(2, 3, 6), _x(6), dims=1), TypeError,
     r"argument 'dims' must be tuple of ints, not int"),
    # leaked "'float' object is not iterable" / int('a') / iteration over a tensor
    (lambda: tgrad.fft.fftn(_x(2, 4), dim=1.5), TypeError,
     r"^fftn\(\): argument 'dim' must be tuple of ints, not float"),
    (lambda: tgrad.fft.fftshift(_x(2, 4), dim=1.5), TypeError, r"^fftshift\(\): argument 'dim'"),
    (lambda: tgrad.linalg.norm(_x(2, 4), dim=1.5), TypeError,
     r"^linalg.norm\(\): argument 'dim' must be tuple of ints, not float"),
    (lambda: tgrad.polygamma("a", _x(2)), TypeError,
     r"^polygamma\(\): argument 'n' \(position 1\) must be int, not str"),
    (lambda: tgrad.linalg.eigh(tgrad.eye(2), 1), TypeError, r"argument 'UPLO' \(position 2\)"),
    (lambda: tgrad.linalg.qr(tgrad.eye(2), 1), TypeError, r"argument 'mode' \(position 2\)"),
    (lambda: tgrad.linalg.multi_dot(tgrad.eye(2)), TypeError,
     r"^linalg.multi_dot\(\): argument 'tensors' \(position 1\) must be tuple of Tensors"),
    # a non-tensor mask / index: PyTorch's TypeError (was a RuntimeError / IndexError)
    (lambda: tgrad.masked_fill(_x(2), "x", 1.0), TypeError,
     r"^masked_fill\(\): argument 'mask' \(position 2\) must be Tensor, not str"),
    (lambda: tgrad.masked_scatter(_x(2), None, _x(2)), TypeError,
     r"^masked_scatter\(\): argument 'mask'"),
    (lambda: tgrad.index_fill(_x(2), 0, [0], 1.0), TypeError,
     r"^index_fill\(\): argument 'index' \(position 3\) must be Tensor, not list"),
    (lambda: tgrad.index_copy(_x(2), 0, None, _x(1)), TypeError, r"^index_copy\(\): argument"),
])
def test_sizes_dims_and_operand_types(call, err, text):
    with pytest.raises(err, match=text):
        call()


def test_sizes_and_dims_as_tensors_still_work():
    x = tgrad.tensor(np.arange(8.0).reshape(2, 4))
    np.testing.assert_allclose(tgrad.fft.fftn(x, dim=tgrad.tensor([0, 1])).numpy(),
                               np.fft.fftn(np.arange(8.0).reshape(2, 4)), atol=1e-12)
    assert tgrad.broadcast_to(x[:1], (tgrad.tensor(3), 4)).shape == (3, 4)
    a = np.random.default_rng(1).standard_normal((2, 3, 6))
    b = np.arange(6.0)
    got = tgrad.linalg.tensorsolve(tgrad.tensor(a), tgrad.tensor(b), dims=(-3, 1)).numpy()
    # dims (0, 1) moved to the end: A' = a.transpose(2, 0, 1) (6, 2, 3), A' X = b
    np.testing.assert_allclose(np.tensordot(a.transpose(2, 0, 1), got, 2), b, atol=1e-10)


@pytest.mark.parametrize("call, text", [
    (lambda: tgrad.tril(_x(3, 4), 1.5), r"^tril\(\): argument 'diagonal' \(position 2\) must "
                                        r"be int, not float"),  # (was compared as it is)
    (lambda: tgrad.triu(_x(3, 4), "a"), r"^triu\(\): argument 'diagonal'"),
    (lambda: tgrad.diagflat(_x(2), 1.5), r"^diagflat\(\): argument 'offset'"),
    (lambda: tgrad.diff(_x(3), 1.5), r"^diff\(\): argument 'n' \(position 2\) must be int"),
    (lambda: tgrad.chunk(_x(3), "a"), r"^chunk\(\): argument 'chunks' \(position 2\)"),
    (lambda: tgrad.eye(3, "a"), r"^eye\(\): argument 'm' \(position 2\) must be int, not str"),
    (lambda: tgrad.eye(2.5), r"^eye\(\): argument 'n' \(position 1\) must be int, not float"),
    (lambda: tgrad.empty_strided((2.5, 3), (3, 1)), r"^empty_strided\(\): argument 'size'"),
    (lambda: tgrad.unravel_index(tgrad.tensor([5]), (2.5, 3)),
     r"expected 'shape' sequence to only contain ints"),  # (int() truncated: gave [1], [2])
])
def test_int_arguments_refuse_other_types(call, text):
    # leaked "'<=' not supported between instances of 'str' and 'int'" or accepted a float
    with pytest.raises(TypeError, match=text):
        call()


def test_triangles_take_integer_diagonals():
    a = np.arange(12.0).reshape(3, 4)
    x = tgrad.tensor(a)
    np.testing.assert_array_equal(tgrad.tril(x, 1).numpy(), np.tril(a, 1))
    np.testing.assert_array_equal(tgrad.triu(x, np.int64(-1)).numpy(), np.triu(a, -1))
    np.testing.assert_array_equal(tgrad.tril(x, tgrad.tensor(1)).numpy(), np.tril(a, 1))


@pytest.mark.parametrize("name, call", [
    ("linalg.solve_triangular", lambda a, b: tgrad.linalg.solve_triangular(a, b, upper=True)),
    ("lstsq", lambda a, b: tgrad.linalg.lstsq(a, b)),
    ("linalg.solve", lambda a, b: tgrad.linalg.solve(a, b)),
    ("ldl_solve", lambda a, b: tgrad.linalg.ldl_solve(*tgrad.linalg.ldl_factor(a), b)),
])
def test_linalg_batch_mismatch_is_pytorchs_error(name, call):
    # NumPy's "shape mismatch: objects cannot be broadcast" ValueError leaked
    a = tgrad.eye(3, dtype=tgrad.float64).expand(2, 3, 3)
    b = tgrad.ones(4, 3, 1, dtype=tgrad.float64)
    with pytest.raises(RuntimeError, match=rf"{name}: The size of tensor a \(2\) must match "
                                           rf"the size of tensor b \(4\) at non-singleton "
                                           rf"dimension 0"):
        call(a, b)


def test_solve_triangular_integers_and_round_decimals():
    a = tgrad.tensor([[2, 1], [0, 4]])
    with pytest.raises(NotImplementedError, match="\"triangular_solve_cpu\" not implemented "
                                                  "for 'Long'"):
        tgrad.linalg.solve_triangular(a, tgrad.tensor([[1], [2]]), upper=True)
    x = tgrad.tensor([1.2345, -2.5], dtype=tgrad.float64)
    with pytest.raises(TypeError, match=r"^round\(\): argument 'decimals' must be int, not "
                                        r"float"):
        tgrad.special.round(x, decimals=1.5)  # (int() truncated it to 1)
    np.testing.assert_allclose(tgrad.round(x, decimals=2).numpy(), [1.23, -2.5])



@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_result_has_a_dtype(left):
    # PyTorch 2.13: B is cast to A's dtype (no promotion); a complex B to a real A warns
    # that the imaginary part is discarded. Reference: NumPy float64 on the cast values.
    a = np.array([[2.0, 1.0], [0.0, 4.0]])
    b = np.array([[1.0], [3.0]]) / 3
    for da, db in [(tgrad.float32, tgrad.float64), (tgrad.float64, tgrad.float32),
                   (tgrad.complex64, tgrad.float64), (tgrad.float32, tgrad.int64)]:
        ta, tb = tgrad.tensor(a, dtype=da), tgrad.tensor(b if db.is_floating_point else
                                                         np.array([[1], [3]]), dtype=db)
        if not left:
            tb = tb.mT
        x = tgrad.linalg.solve_triangular(ta, tb, upper=True, left=left)
        assert x.dtype is da
        bn = tb.to(da).numpy().astype(np.complex128)
        want = np.linalg.solve(a, bn) if left else np.linalg.solve(a.T, bn.T).T
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    tb = tgrad.tensor(b * (1 + 2j), dtype=tgrad.complex128)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        x = tgrad.linalg.solve_triangular(tgrad.tensor(a, dtype=tgrad.float64),
                                          tb if left else tb.mT, upper=True, left=left)
    assert x.dtype is tgrad.float64
    want = np.linalg.solve(a, b) if left else np.linalg.solve(a.T, b).T
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-14)

@pytest.mark.parametrize("name, args", [("zeros", (2.5,)), ("ones", ((2, "a"),)),
                                        ("empty", (2, 3.0)), ("rand", (2, None)),
                                        ("randn", (1.5,)), ("full", ((2.5, 2), 1.0))])
def test_factory_sizes_name_the_op(name, args):
    # was "size must be a sequence of ints, but got float (2.5)" without the op
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'size' must be tuple of ints, "
                                        rf"but found element of type \w+ at pos \d"):
        getattr(tgrad, name)(*args)


def test_eye_refuses_bools_and_isin_non_numbers():
    for args in ((True,), (3, True)):  # (True was taken as 1)
        with pytest.raises(TypeError, match=r"^eye\(\): argument '[nm]'"):
            tgrad.eye(*args)
    x = tgrad.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"^isin\(\): argument 'test_elements' \(position 2\) "
                                        r"must be Tensor or Number, not list"):
        tgrad.isin(x, [1.0])  # (the error named eq)
    np.testing.assert_array_equal(tgrad.isin(x, 2.0).numpy(), [False, True])


# PyTorch's parser refuses a float and a bool where it wants an int dim (True is an int in
# Python, but not to PyTorch: "argument 'dim' (position 2) must be int, not bool"), while
# NumPy integers and 0-d integer tensors are taken. (op, a call with dim d) over (2, 3, 4).
_I = lambda: tgrad.zeros(2, 3, 4, dtype=tgrad.int64)  # noqa: E731
DIM_CALLS = {
    "softmax": lambda x, d: tgrad.softmax(x, d),
    "log_softmax": lambda x, d: tgrad.nn.functional.log_softmax(x, d),
    "softmin": lambda x, d: tgrad.nn.functional.softmin(x, d),
    "cumsum": lambda x, d: tgrad.cumsum(x, d), "cumprod": lambda x, d: x.cumprod(d),
    "cummax": lambda x, d: tgrad.cummax(x, d), "cummin": lambda x, d: x.cummin(d),
    "logcumsumexp": lambda x, d: tgrad.logcumsumexp(x, d),
    "sum": lambda x, d: x.sum(d), "sum tuple": lambda x, d: x.sum((d, 0)),
    "mean": lambda x, d: tgrad.mean(x, d), "prod": lambda x, d: x.prod(d),
    "amax": lambda x, d: x.amax(d), "max": lambda x, d: x.max(d), "min": lambda x, d: x.min(d),
    "argmax": lambda x, d: x.argmax(d), "argmin": lambda x, d: tgrad.argmin(x, d),
    "flip": lambda x, d: tgrad.flip(x, (d,)), "flip int": lambda x, d: tgrad.flip(x, d),
    "roll": lambda x, d: tgrad.roll(x, 1, d), "narrow": lambda x, d: x.narrow(d, 0, 1),
    "select": lambda x, d: x.select(d, 0), "unbind": lambda x, d: x.unbind(d),
    "movedim": lambda x, d: x.movedim(d, 0), "diff": lambda x, d: tgrad.diff(x, dim=d),
    "logsumexp": lambda x, d: x.logsumexp(d), "std": lambda x, d: x.std(d),
    "var": lambda x, d: tgrad.var(x, d), "sort": lambda x, d: x.sort(d),
    "topk": lambda x, d: x.topk(1, d), "kthvalue": lambda x, d: x.kthvalue(1, d),
    "index_select": lambda x, d: x.index_select(d, tgrad.tensor([0])),
    "gather": lambda x, d: x.gather(d, _I()), "scatter": lambda x, d: x.scatter(d, _I(), 0.0),
    "unsqueeze": lambda x, d: x.unsqueeze(d), "squeeze": lambda x, d: x.squeeze(d),
    "transpose": lambda x, d: x.transpose(d, 0), "cat": lambda x, d: tgrad.cat([x, x], d),
    "stack": lambda x, d: tgrad.stack([x, x], d), "split": lambda x, d: x.split(1, d),
    "chunk": lambda x, d: x.chunk(2, d), "flatten": lambda x, d: x.flatten(d),
    "cross": lambda x, d: tgrad.cross(tgrad.zeros(3, 3), tgrad.zeros(3, 3), d),
    "all": lambda x, d: x.all(d), "median": lambda x, d: x.median(d),
    "cumsum_": lambda x, d: x.clone().cumsum_(d), "squeeze_": lambda x, d: x.clone().squeeze_(d),
    "unsqueeze_": lambda x, d: x.clone().unsqueeze_(d),
}


@pytest.mark.parametrize("name", list(DIM_CALLS))
@pytest.mark.parametrize("bad", [True, False, 1.5, 1.0, np.bool_(True)])
def test_dim_arguments_refuse_floats_and_bools(name, bad):
    if name in ("std", "var") and type(bad) is bool:
        # PyTorch's std/var(input, unbiased: bool) overload: a bool there is not a dim
        want = np.var(_x(2, 3, 4).numpy(), ddof=1 if bad else 0)
        got = DIM_CALLS[name](_x(2, 3, 4), bad).item()
        assert got == pytest.approx(want if name == "var" else math.sqrt(want), rel=1e-6)
        return
    with pytest.raises(TypeError, match=rf"must be (int|tuple of ints).*{type(bad).__name__}"):
        DIM_CALLS[name](_x(2, 3, 4), bad)


@pytest.mark.parametrize("name", ["argmax", "flip int", "roll", "cumsum", "softmax", "sum"])
def test_dim_arguments_take_numpy_and_0d_integer_tensors(name):
    # each result equals the one for the plain int 1 (the same elements, by NumPy)
    x = _x(2, 3, 4)
    want = DIM_CALLS[name](x, 1).numpy()
    for d in (np.int64(1), tgrad.tensor(1)):
        np.testing.assert_array_equal(DIM_CALLS[name](x, d).numpy(), want)
    ref = {"argmax": np.argmax(x.numpy(), 1), "flip int": np.flip(x.numpy(), 1),
           "roll": np.roll(x.numpy(), 1, 1), "cumsum": np.cumsum(x.numpy(), 1),
           "sum": x.numpy().sum(1)}.get(name)
    if ref is not None:
        np.testing.assert_allclose(want, ref)


def test_factory_sizes_take_integer_tensors_and_refuse_float_tensors():
    # one size check (int_tuple): PyTorch takes 0-d / one-element integer tensors and NumPy
    # integers as sizes, refuses float tensors; the new_* factories name the op
    z = tgrad.zeros(2)
    assert tgrad.zeros((tgrad.tensor(2), np.int64(3))).shape == (2, 3)
    assert tgrad.ones(tgrad.tensor([2]), 3).shape == (2, 3)
    assert z.new_zeros(tgrad.tensor(2), 1).shape == (2, 1)
    for call, op in ((lambda: tgrad.zeros((tgrad.tensor(2.0), 3)), "zeros"),
                     (lambda: tgrad.empty(tgrad.tensor(2.5)), "empty"),
                     (lambda: z.new_zeros(2.5), "new_zeros"),
                     (lambda: z.new_full((2.5,), 1.0), "new_full")):
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'size' must be tuple of "
                                            rf"ints, but found element of type"):
            call()
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
        z.new_zeros((2, -1))


def test_bad_arguments_raise_errors_naming_the_op():
    # (they raised AttributeError '_sparse' / 'dtype', NumPy's "Maximum allowed size
    # exceeded" and "truth value of an array ... is ambiguous")
    for fn, name in ((tgrad.empty_like, "empty_like"), (tgrad.rand_like, "rand_like"),
                     (tgrad.randn_like, "randn_like"), (tgrad.bitwise_not, "bitwise_not")):
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) "
                                            r"must be Tensor, not NoneType"):
            fn(None)
    with pytest.raises(RuntimeError, match=r"arange: invalid size, possible overflow\?"):
        tgrad.arange(0, 1e20)
    with pytest.raises(TypeError, match=r"clamp\(\): argument 'max' must be a number or a "
                                        r"Tensor, not a NumPy array of shape \[3\]"):
        tgrad.ones(3).clamp(max=np.array([0.5, 0.5, 0.5]))
    # a 0-d array is a number, as a NumPy scalar is
    assert tgrad.ones(3).clamp(max=np.array(0.5)).tolist() == [0.5, 0.5, 0.5]


@pytest.mark.parametrize("name", ["copysign", "heaviside", "hypot", "xlogy", "logaddexp",
                                  "logaddexp2", "isclose", "fmax", "fmin", "logical_xor",
                                  "ldexp"])
def test_composite_binary_ops_name_themselves_in_broadcast_errors(name):
    # they raised from their building blocks: copysign "where: condition [4, 5] ...",
    # hypot "logical_or: ...", logaddexp "eq: ..."
    with pytest.raises(RuntimeError, match=rf"^{name}: The size of tensor a \(3\) must match "
                                           r"the size of tensor b \(5\) at non-singleton "
                                           r"dimension 1"):
        getattr(tgrad, name)(tgrad.zeros(2, 3), tgrad.zeros(4, 5))
