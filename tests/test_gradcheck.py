"""gradcheck / gradgradcheck: signatures, failure reporting, and every core op checked."""

import inspect
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def leaf(*shape, positive=False, seed=None):
    rng = np.random.default_rng(seed if seed is not None else sum(shape) + len(shape))
    arr = rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)
    return tgrad.tensor(arr, dtype=tgrad.float64, requires_grad=True)


def test_signatures_match_pytorch():
    p = list(inspect.signature(gradcheck).parameters.values())
    assert [x.name for x in p[:8]] == ["func", "inputs", "eps", "atol", "rtol",
                                       "raise_exception", "check_sparse_nnz", "nondet_tol"]
    assert [x.default for x in p[2:8]] == [1e-6, 1e-5, 1e-3, True, False, 0.0]
    q = list(inspect.signature(gradgradcheck).parameters.values())
    assert [x.name for x in q[:9]] == ["func", "inputs", "grad_outputs", "eps", "atol", "rtol",
                                       "gen_non_contig_grad_outputs", "raise_exception",
                                       "nondet_tol"]
    assert [x.default for x in q[2:9]] == [None, 1e-6, 1e-5, 1e-3, False, True, 0.0]
    # positional use as in PyTorch
    assert gradcheck(lambda x: x * 2, (leaf(3),), 1e-6, 1e-5, 1e-3, True)
    assert gradgradcheck(lambda x: x ** 3, (leaf(3),), None, 1e-6, 1e-5, 1e-3, False, True)


class WrongGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_mismatch_raises_with_output_and_input_index():
    with pytest.raises(GradcheckError) as e:
        gradcheck(WrongGrad.apply, (leaf(3),))
    assert isinstance(e.value, RuntimeError)
    msg = str(e.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0")
    assert "numerical" in msg and "analytical" in msg

    def two(a, b):
        return a * 1, WrongGrad.apply(b) + a

    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 1 with respect to "
                                           "input 1"):
        gradcheck(two, (leaf(2), leaf(2, seed=5)))


def test_returns_false_when_not_raising():
    assert gradcheck(WrongGrad.apply, (leaf(3),), raise_exception=False) is False
    assert gradcheck(lambda x: x.exp(), (leaf(3),), raise_exception=False) is True


def test_warns_on_non_double_inputs():
    x = tgrad.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double "
                                         "precision floating point"):
        gradcheck(lambda t: t * 2, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_requires_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda t: t * 2, (tgrad.ones(2, dtype=tgrad.float64),))
    with pytest.raises(ValueError, match="sparse"):
        gradcheck(lambda t: t * 2, (leaf(2),), check_sparse_nnz=True)


def test_non_reentrant_backward_detected():
    class Noisy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            # noise scaled by g: a backward must stay linear in g (gradcheck checks that)
            return g * (2 + tgrad.randn(*g.shape, dtype=g.dtype) * 1e-7)

    x = leaf(3)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        gradcheck(Noisy.apply, (x,), atol=1e-4)
    assert gradcheck(Noisy.apply, (x,), atol=1e-4, nondet_tol=1e-5)


def test_non_differentiable_output_must_have_zero_numerical_gradient():
    x = leaf(4)
    assert gradcheck(lambda t: (t * 2, t.argmax()), (x,))


def test_gradgradcheck_detects_non_differentiable_backward():
    class SquareDetachedBackward(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * tgrad.tensor(2 * x.detach().numpy())  # breaks the second derivative

    x = leaf(3)
    assert gradcheck(SquareDetachedBackward.apply, (x,))
    assert gradgradcheck(SquareDetachedBackward.apply, (x,), raise_exception=False) is False
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                           "input 0"):
        gradgradcheck(SquareDetachedBackward.apply, (x,))


def test_gradgradcheck_with_given_and_non_contiguous_grad_outputs():
    x = leaf(2, 3)
    go = tgrad.tensor(np.arange(6.0).reshape(2, 3), dtype=tgrad.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.tanh() * t, (x,), (go,))
    assert gradgradcheck(lambda t: t.tanh() * t, (x,), gen_non_contig_grad_outputs=True)


# ---------------------------------------------------------- every op of the core

OPS = {
    "add": (lambda a, b: a + b, [(2, 3), (3,)]),
    "sub": (lambda a, b: a - b, [(2, 3), (2, 1)]),
    "mul": (lambda a, b: a * b, [(2, 3), (1, 3)]),
    "div": (lambda a, b: a / b, [(2, 3), "pos(2, 3)"]),
    "pow": (lambda a, b: a ** b, ["pos(2, 3)", (3,)]),
    "pow_scalar": (lambda a: a ** 3, [(2, 3)]),
    "rpow": (lambda a: 2.0 ** a, [(4,)]),
    "scalar_ops": (lambda a: (3.0 - a) * 2.0 / (a * a + 1.0) + 1.5, [(4,)]),
    "neg": (lambda a: -a, [(3,)]),
    "exp": (lambda a: a.exp(), [(2, 3)]),
    "log": (lambda a: a.log(), ["pos(2, 3)"]),
    "tanh": (lambda a: a.tanh(), [(2, 3)]),
    "sqrt": (lambda a: a.sqrt(), ["pos(2, 3)"]),
    "sum": (lambda a: a.sum(), [(2, 3)]),
    "sum_dim": (lambda a: a.sum(1, keepdim=True), [(2, 3)]),
    "mean": (lambda a: a.mean(), [(2, 3)]),
    "mean_dim": (lambda a: a.mean(0), [(2, 3)]),
    "max": (lambda a: a.max(), [(2, 3)]),
    "max_dim": (lambda a: a.max(1)[0], [(2, 3)]),
    "argmax": (lambda a: a * a.argmax().double(), [(5,)]),
    "matmul": (lambda a, b: a @ b, [(2, 3), (3, 4)]),
    "matvec": (lambda a, b: a @ b, [(2, 3), (3,)]),
    "bmm": (lambda a, b: a @ b, [(2, 2, 3), (3, 2)]),
    "reshape": (lambda a: a.reshape(3, 2) * 2, [(2, 3)]),
    "reshape_copy": (lambda a: a.t().reshape(-1), [(2, 3)]),
    "transpose": (lambda a: a.transpose(0, 1) * 1, [(2, 3)]),
    "getitem": (lambda a: a[1, ::2] * a[0, 1:3], [(2, 4)]),
    "getitem_adv": (lambda a: a[[0, 0, 1]] * 2, [(2, 3)]),
    "getitem_mask": (lambda a: a[a > 0], [(2, 3)]),
    "setitem": (lambda a, b: _setitem(a, b), [(2, 3), (3,)]),
    "broadcast_chain": (lambda a, b, c: (a * b + c).tanh().sum(0), [(2, 1), (1, 3), (3,)]),
}


def _setitem(a, b):
    c = a * 1
    c[0] = b * b
    c[1, [0, 2]] = b[:2]
    return c


def _inputs(specs):
    out = []
    for i, s in enumerate(specs):
        if isinstance(s, str):
            shape = tuple(int(v) for v in s[4:-1].split(",") if v.strip())
            out.append(leaf(*shape, positive=True, seed=i))
        else:
            out.append(leaf(*s, seed=i + 10))
    return tuple(out)


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradcheck_and_gradgradcheck_core_ops(name):
    fn, specs = OPS[name]
    inputs = _inputs(specs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float64 inputs: no precision warning
        assert gradcheck(fn, inputs)
        assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["add", "mul", "div", "exp", "tanh", "matmul", "sum_dim",
                                  "mean", "max_dim", "getitem", "broadcast_chain"])
def test_core_op_values_match_numpy_float64(name):
    fn, specs = OPS[name]
    inputs = _inputs(specs)
    arrays = [t.detach().numpy() for t in inputs]
    ref = {
        "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
        "exp": np.exp, "tanh": np.tanh, "matmul": lambda a, b: a @ b,
        "sum_dim": lambda a: a.sum(1, keepdims=True), "mean": lambda a: a.mean(),
        "max_dim": lambda a: a.max(1), "getitem": lambda a: a[1, ::2] * a[0, 1:3],
        "broadcast_chain": lambda a, b, c: np.tanh(a * b + c).sum(0),
    }[name]
    np.testing.assert_allclose(fn(*inputs).detach().numpy(), ref(*arrays), rtol=1e-12,
                               atol=1e-14)
