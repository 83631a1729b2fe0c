"""Bad inputs to the elementwise and reduction ops raise clear errors that name the op;
integer division follows PyTorch (``/`` true-divides to float, ``//`` floors)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad

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
    with pytest.raises(TypeError, match=rf"^{name}\(\)"):
        getattr(tgrad, name)(1.0, 2.0)  # no tensor at all


@pytest.mark.parametrize("name", UNARY)
def test_unary_rejects_non_tensor(name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' must be Tensor"):
        getattr(tgrad, name)([1.0, 2.0])


def test_where_shape_mismatch_and_condition_dtype():
    with pytest.raises(RuntimeError, match="where"):
        tgrad.where(_x(2, 3) > 2, _x(2, 3), _x(4))
    with pytest.raises(RuntimeError, match="^where: expected condition to be a bool tensor"):
        tgrad.where(_x(3), _x(3), _x(3))


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


def test_bool_tensors_in_arithmetic_unary():
    with pytest.raises(RuntimeError, match="^neg: not supported for bool tensors"):
        tgrad.neg(tgrad.tensor([True, False]))


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
    for y in (x // 2, x > 0, tgrad.eq(x, 1.5), tgrad.logical_not(x)):
        assert not y.requires_grad and y.grad_fn is None


def test_integer_negative_power():
    with pytest.raises(RuntimeError, match="^pow: integers to negative integer powers"):
        tgrad.tensor([2, 3]) ** -1
    assert (tgrad.tensor([2, 3]) ** -1.0).dtype is tgrad.float32


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
