"""PyTorch-parity polish: signed zeros of remainder, integer linspace/arange edge cases,
bool pow, empty-dim errors, gradient's dtype, number operands PyTorch refuses, integer
inputs to activations, module reprs, saved attributes, create_graph in inference_mode.
Expectations are PyTorch 2.13's documented behaviour, checked by hand computations."""

import math
import os

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = [(-0.0, 1.0), (0.0, -1.0), (-2.0, 1.0), (2.0, -1.0), (-3.0, -1.5), (3.0, 1.5),
         (-0.0, -1.0), (0.0, 1.0), (-1.0, 3.0), (1.0, -3.0), (5.5, 2.0)]


def _c_remainder(a: float, b: float) -> float:
    """PyTorch's formula: C's fmod (a zero keeps a's sign), moved by b when the signs
    differ."""
    r = math.fmod(a, b)
    if r != 0 and (b < 0) != (r < 0):
        r += b
    return r


def test_remainder_zero_keeps_the_sign_of_the_dividend():
    a = tgrad.tensor([p[0] for p in PAIRS], dtype=tgrad.float64)
    b = tgrad.tensor([p[1] for p in PAIRS], dtype=tgrad.float64)
    want = np.array([_c_remainder(x, y) for x, y in PAIRS])
    for got in (tgrad.remainder(a, b), a % b):
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want))
    got = tgrad.remainder(tgrad.tensor([-2.0, 2.0, -0.0]), 1)  # float tensor, int number
    np.testing.assert_array_equal(np.signbit(got.numpy()), [True, False, True])
    got = tgrad.remainder(tgrad.tensor([-4, 4, 0, -5]), tgrad.tensor([2, -2, -3, 3]))
    assert got.tolist() == [0, 0, 0, 1]


def test_remainder_signed_zeros_in_the_triton_interpreter():
    from interpreted import run_json
    res = run_json(f"""
import json, sys
import numpy as np
sys.path.insert(0, {HERE!r})
import tgrad, test_parity_polish as m
a = tgrad.tensor([p[0] for p in m.PAIRS], device="cuda")
b = tgrad.tensor([p[1] for p in m.PAIRS], device="cuda")
r = tgrad.remainder(a, b).cpu().numpy()
print(json.dumps({{"v": r.tolist(), "s": np.signbit(r).tolist()}}))
""")
    want = np.array([_c_remainder(x, y) for x, y in PAIRS], dtype=np.float32)
    np.testing.assert_array_equal(np.array(res["v"], dtype=np.float32), want)
    assert res["s"] == np.signbit(want).tolist()


def test_linspace_uint8_wraps_negative_integer_bounds():
    # start -5 -> 251 (two's complement); step (5 - 251) / 10 = -24.6 in float64; the first
    # half counts from start, the second back from end; truncated toward zero
    step = (5 - 251) / 10
    want = [int(251 + step * i) if i < 5 else int(5 - step * (10 - i)) for i in range(11)]
    assert tgrad.linspace(-5, 5, 11, dtype=tgrad.uint8).tolist() == want
    assert tgrad.linspace(-255, 5, 3, dtype=tgrad.uint8).tolist() == [1, 3, 5]
    for bad in (-256, 256, -5.0):  # past -255 / 255, and a negative float, still raise
        with pytest.raises(RuntimeError, match="cannot be converted to type uint8 without "
                                               "overflow"):
            tgrad.linspace(bad, 5, 3, dtype=tgrad.uint8)


def test_arange_infinite_step():
    inf = math.inf
    for args in ((0, 1, inf), (0, 0, inf), (0.5, 3.5, inf), (1, 0, -inf)):
        r = tgrad.arange(*args)  # ceil((end - start) / step) = 0 elements
        assert r.shape == (0,) and r.dtype is tgrad.float32
    assert tgrad.arange(0, 1, inf, dtype=tgrad.float64).dtype is tgrad.float64
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with "
                                           "step sign"):
        tgrad.arange(0, 1, -inf)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tgrad.arange(0, 1, math.nan)
    with pytest.raises(RuntimeError, match="unsupported range: 0 -> inf"):
        tgrad.arange(0, inf, 1)
    with pytest.raises(RuntimeError, match="cannot be converted to type int64_t without "
                                           "overflow"):
        tgrad.arange(0, 1, inf, dtype=tgrad.int64)


def test_pow_of_a_bool_tensor_by_a_bool():
    b = tgrad.tensor([True, False])
    for y in (tgrad.pow(b, True), b ** True, b.clone().pow_(True)):
        assert y.dtype is tgrad.bool and y.tolist() == [True, False]  # x ** 1 = x
    for y in (tgrad.pow(b, False), b ** False):
        assert y.dtype is tgrad.bool and y.tolist() == [True, True]  # x ** 0 = 1
    assert tgrad.pow(b, 2).tolist() == [1, 0]  # an int exponent promotes to int64
    for f in (lambda: tgrad.pow(b, tgrad.tensor(True)), lambda: tgrad.pow(True, b)):
        with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
            f()


def test_empty_reduction_dim_raises_index_error():
    e = tgrad.zeros(2, 0)
    for op in ("argmax", "argmin", "amax", "amin"):
        with pytest.raises(IndexError, match=rf"^{op}\(\): Expected reduction dim 1 to have "
                                             r"non-zero size\.$"):
            getattr(tgrad, op)(e, 1)
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim -1 to have"):
        tgrad.amax(e, -1)  # as written
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 0 to have"):
        tgrad.amin(tgrad.zeros(0, 3), (0, 1))  # the first empty one
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be "
                                         r"specified for input.numel\(\) == 0\."):
        tgrad.argmax(e)
    with pytest.raises(RuntimeError, match=r"amax\(\): Expected reduction dim to be specified"):
        tgrad.amax(e)
    assert tgrad.argmax(e, 0).shape == (0,)


@pytest.mark.parametrize("fdt,cdt,want", [
    ("float16", "float32", "float32"), ("float32", "float64", "float64"),
    ("float64", "float32", "float64"), ("int64", "float32", "float32"),
    ("float16", "int64", "float32"), ("bfloat16", "float16", "float32"),
    ("float16", "float16", "float16"), ("complex64", "float64", "complex128")])
def test_gradient_promotes_values_with_coordinates(fdt, cdt, want):
    f, x = np.array([1.0, 2.0, 4.0, 7.0]), np.array([0.0, 1.0, 3.0, 4.0])
    for edge_order in (1, 2):
        g, = tgrad.gradient(tgrad.tensor(f).to(getattr(tgrad, fdt)),
                            spacing=(tgrad.tensor(x).to(getattr(tgrad, cdt)),),
                            edge_order=edge_order)
        assert g.dtype is getattr(tgrad, want)
        np.testing.assert_allclose(g.numpy(), np.gradient(f, x, edge_order=edge_order),
                                   rtol=2e-3 if "16" in want else 1e-6)


def test_number_operands_pytorch_refuses():
    x = tgrad.tensor([1.0, -2.0])
    for op in ("maximum", "minimum", "atan2", "arctan2", "logical_and", "logical_or",
               "logical_xor"):
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'other' \(position 2\) "
                                            r"must be Tensor, not float$"):
            getattr(tgrad, op)(x, 2.0)
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'input' \(position 1\) "
                                            r"must be Tensor, not int$"):
            getattr(tgrad, op)(2, x)
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'other' \(position 1\) "
                                            r"must be Tensor, not float$"):
            getattr(x, op)(2.0)
    xi = tgrad.tensor([4, 6])
    for op, t, arg in (("gcd", xi, "other"), ("lcm", xi, "other"), ("fmax", x, "other"),
                       ("fmin", x, "other"), ("hypot", x, "other"),
                       ("nextafter", x, "other"), ("igamma", x.abs(), "other"),
                       ("igammac", x.abs(), "other"), ("heaviside", x, "values"),
                       ("ldexp", x, "other")):
        num = 2 if t is xi else 2.0
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{arg}' \(position 2\) "
                                            rf"must be Tensor, not {type(num).__name__}$"):
            getattr(tgrad, op)(t, num)
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{arg}' \(position 1\) "
                                            rf"must be Tensor, not"):
            getattr(t, op)(num)
    # comparisons and fmod take a number only as ``other`` (PyTorch's overloads)
    for op in ("eq", "ne", "lt", "le", "gt", "ge", "fmod"):
        with pytest.raises(TypeError, match=rf"^{op}\(\) received an invalid combination of "
                                            r"arguments - got \(float, Tensor\), but expected"):
            getattr(tgrad, op)(2.0, x)
    assert tgrad.ge(x, 1.0).tolist() == [True, False] and (2.0 >= x).tolist() == [True, True]
    assert tgrad.fmod(x, 1.5).tolist() == [1.0, -0.5]  # C fmod: the dividend's sign
    assert tgrad.gcd(xi, tgrad.tensor(4)).tolist() == [4, 2]
    assert tgrad.ldexp(x, tgrad.tensor([1, 2])).tolist() == [2.0, -8.0]
    assert x.heaviside(tgrad.tensor(0.5)).tolist() == [1.0, 0.0]
    assert tgrad.maximum(x, tgrad.tensor(0.0)).tolist() == [1.0, 0.0]
    np.testing.assert_allclose(x.atan2(tgrad.tensor([1.0, 1.0])).numpy(),
                               np.arctan2([1.0, -2.0], 1.0), rtol=1e-6)
    assert tgrad.logical_xor(x, tgrad.tensor([0.0, 1.0])).tolist() == [True, False]
    c = tgrad.tensor([1 + 1j, 1 + 1j, 2 + 0j])
    with pytest.raises(NotImplementedError, match="\"mode_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        tgrad.mode(c)
    with pytest.raises(NotImplementedError, match="\"unique\" not implemented for "
                                                  "'ComplexFloat'"):
        tgrad.unique_consecutive(c)
    for op in ("isposinf", "isneginf"):
        with pytest.raises(RuntimeError, match=f"{op} does not support complex inputs"):
            getattr(tgrad, op)(c)
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        tgrad.trace(tgrad.eye(2, dtype=tgrad.bool))
    assert tgrad.trace(tgrad.eye(3, dtype=tgrad.int32)).item() == 3
    # PyTorch takes a 0-d tensor here (it converts it to a number)
    assert tgrad.tril(tgrad.ones(2, 2), tgrad.tensor(1)).tolist() == [[1, 1], [1, 1]]
    assert tgrad.nan_to_num(tgrad.tensor([math.nan]), tgrad.tensor(1.0)).tolist() == [1.0]


@pytest.mark.parametrize("call,kernel", [
    (lambda x: F.gelu(x), "GeluKernelImpl"), (lambda x: F.silu(x), "silu_cpu"),
    (lambda x: F.softplus(x), "softplus_cpu"), (lambda x: F.elu(x), "elu_cpu"),
    (lambda x: F.selu(x), "elu_cpu"), (lambda x: F.mish(x), "mish_cpu"),
    (lambda x: F.hardswish(x), "hardswish_cpu"), (lambda x: F.logsigmoid(x), "log_sigmoid_cpu"),
    (lambda x: F.log_softmax(x, 1), "log_softmax_lastdim_kernel_impl"),
    (lambda x: F.softmax(x, 0), "softmax_kernel_impl"),
    (lambda x: F.layer_norm(x, (2,)), "LayerNormKernelImpl"),
    (lambda x: F.cross_entropy(x, tgrad.tensor([0, 1])), "log_softmax_lastdim_kernel_impl"),
    (lambda x: F.nll_loss(x, tgrad.tensor([0, 1])), "nll_loss_out_frame"),
    (lambda x: F.mse_loss(x, x), "mse_cpu")])
def test_integer_inputs_to_activations_and_losses(call, kernel):
    for dt, name in ((tgrad.int64, "Long"), (tgrad.int32, "Int")):
        with pytest.raises(NotImplementedError,
                           match=f"^\"{kernel}\" not implemented for '{name}'"):
            call(tgrad.tensor([[1, -2], [3, 4]], dtype=dt))


def test_reprs_as_pytorch():
    assert repr(nn.MultiheadAttention(4, 2)) == (
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=4, "
        "out_features=4, bias=True)\n)")
    assert isinstance(nn.MultiheadAttention(4, 2).out_proj, nn.Linear)
    assert repr(nn.AvgPool1d(3, 2, 1)) == "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))"
    assert repr(nn.MaxUnpool1d(3)) == "MaxUnpool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.MaxUnpool2d((3, 2), 1, 1)) == (
        "MaxUnpool2d(kernel_size=(3, 2), stride=(1, 1), padding=(1, 1))")
    assert repr(nn.MaxUnpool3d(2)) == (
        "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))")
    pd = nn.ParameterDict({"a": nn.Parameter(tgrad.zeros(2, 3)),
                           "b": nn.Parameter(tgrad.zeros(2, dtype=tgrad.float64))})
    assert repr(pd) == ("ParameterDict(\n    (a): Parameter containing: [tgrad.FloatTensor of "
                        "size 2x3]\n    (b): Parameter containing: [tgrad.DoubleTensor of "
                        "size 2]\n)")
    # the modules still compute with the tuples: avg_pool1d of [0..5] by 3, stride 2, pad 1
    x = tgrad.arange(6.0).reshape(1, 1, 6)
    np.testing.assert_allclose(nn.AvgPool1d(3, 2, 1)(x).numpy(), [[[1 / 3, 2.0, 4.0]]],
                               rtol=1e-6)


def test_saved_attributes_of_rmul_and_pow():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    gf = (2.5 * x).grad_fn  # x.__rmul__(2.5) is mul(x, 2.5), as PyTorch's
    assert gf._saved_self is None and gf._saved_other.item() == 2.5
    e = tgrad.tensor([2.0, 3.0])  # no grad: PowBackward1 still saves its result
    gf = (x ** e).grad_fn
    assert gf.name() == "PowBackward1"
    np.testing.assert_array_equal(gf._saved_result.detach().numpy(), [1.0, 8.0])
    (x ** e).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 12.0])  # e x^(e-1)


def test_create_graph_inside_inference_mode_records_nothing(monkeypatch):
    # (the reference-cycle warning is once per process, as PyTorch's: re-armed here)
    monkeypatch.setattr(tgrad.autograd, "_create_graph_warned", False)
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with tgrad.inference_mode():
        g, = tgrad.autograd.grad(y, x, create_graph=True)
    assert g.tolist() == [2.0, 4.0] and g.grad_fn is None and not g.requires_grad
    assert g.is_inference()
    y = (x * x).sum()
    with pytest.warns(UserWarning):
        with tgrad.inference_mode():
            y.backward(create_graph=True)
    assert x.grad.tolist() == [2.0, 4.0] and x.grad.grad_fn is None
