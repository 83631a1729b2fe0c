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
            return g * (2 + tgrad.randn(g.shape, dtype=g.dtype) * 1e-7)

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


# PyTorch's keyword arguments: check_forward_ad / check_backward_ad /
# check_batched_grad / check_batched_forward_grad / check_grad_dtypes / masked, and
# check_undefined_grad (undefined output gradients must give undefined or zero input ones).

class ForwardOk(Function):
    """y = 2x with a correct jvp and a wrong backward (3g)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3

    @staticmethod
    def jvp(ctx, t):
        return t * 2


class ForwardWrong(Function):
    """y = 2x with a correct backward and a wrong jvp (5t)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2

    @staticmethod
    def jvp(ctx, t):
        return t * 5


def test_pytorch_keyword_arguments_accepted():
    x = leaf(3)
    assert gradcheck(lambda t: t.exp() * t, (x,), check_grad_dtypes=True,
                     check_batched_grad=True, check_forward_ad=True,
                     check_batched_forward_grad=True, check_backward_ad=True,
                     fast_mode=True, masked=False)
    assert gradgradcheck(lambda t: t ** 3, (x,), check_grad_dtypes=True,
                         check_batched_grad=True, check_rev_over_rev=True, masked=False)
    for f in (gradcheck, gradgradcheck):
        kw = {p.name for p in inspect.signature(f).parameters.values()
              if p.kind is p.KEYWORD_ONLY}
        assert {"check_undefined_grad", "check_grad_dtypes", "check_batched_grad",
                "fast_mode", "masked"} <= kw
    assert {"check_batched_forward_grad", "check_forward_ad", "check_backward_ad"} <= {
        p.name for p in inspect.signature(gradcheck).parameters.values()}
    assert {"check_fwd_over_rev", "check_rev_over_rev"} <= {
        p.name for p in inspect.signature(gradgradcheck).parameters.values()}


def test_check_forward_ad_compares_jvp_with_finite_differences():
    x = leaf(3)
    # check_backward_ad=False: only the (correct) forward-mode Jacobian is checked
    assert gradcheck(ForwardOk.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradcheck(ForwardOk.apply, (x,), check_forward_ad=True)
    assert gradcheck(ForwardWrong.apply, (x,))  # forward AD is not checked by default
    with pytest.raises(GradcheckError) as e:
        gradcheck(ForwardWrong.apply, (x,), check_forward_ad=True)
    msg = str(e.value)
    assert msg.startswith("Jacobian computed with forward mode mismatch for output 0 with "
                          "respect to input 0,\nnumerical:")
    # numerical 2 on the diagonal, forward-mode 5
    assert "[[2. 0. 0.]" in msg and "[[5. 0. 0.]" in msg
    assert gradcheck(ForwardWrong.apply, (x,), check_forward_ad=True,
                     raise_exception=False) is False


def test_flag_combinations_refused_as_in_pytorch():
    x = leaf(2)
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True"):
        gradcheck(lambda t: t * 2, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="Setting check_batched_grad=True requires "
                                             "check_backward_ad to be True"):
        gradcheck(lambda t: t * 2, (x,), check_forward_ad=True, check_backward_ad=False,
                  check_batched_grad=True)
    with pytest.raises(AssertionError, match="Setting check_batched_forward_grad=True "
                                             "requires check_forward_ad to be True"):
        gradcheck(lambda t: t * 2, (x,), check_batched_forward_grad=True)
    with pytest.raises(AssertionError, match="Expected at least one of check_fwd_over_rev or "
                                             "check_rev_over_rev to be True"):
        gradgradcheck(lambda t: t * 2, (x,), check_rev_over_rev=False)
    with pytest.raises(AssertionError, match="Setting check_undefined_grad=True requires "
                                             "check_rev_over_rev to be True"):
        gradgradcheck(lambda t: t * 2, (x,), check_rev_over_rev=False, check_fwd_over_rev=True)


def test_check_undefined_grad():
    class OnesWhenUndefined(Function):
        # wrong: an undefined output gradient must give an undefined (or zero) one back
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return tgrad.ones(3, dtype=tgrad.float64) if g is None else g * 2

    class FailsWhenUndefined(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if g is None:
                raise RuntimeError("no gradient")
            return g * 2

    class TwoOutputs(Function):
        # right: y = (2x, 3x), each missing gradient counted as zero
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            if ga is None and gb is None:
                return None
            return (0 if ga is None else ga * 2) + (0 if gb is None else gb * 3)

    x = leaf(3)
    with pytest.raises(GradcheckError, match="Expected all input grads to be undefined or "
                                             "zero when all output grads are undefined or "
                                             "zero"):
        gradcheck(OnesWhenUndefined.apply, (x,))
    assert gradcheck(OnesWhenUndefined.apply, (x,), raise_exception=False) is False
    assert gradcheck(OnesWhenUndefined.apply, (x,), check_undefined_grad=False)
    with pytest.raises(GradcheckError, match="Expected backward function to handle undefined "
                                             "output grads"):
        gradcheck(FailsWhenUndefined.apply, (x,))
    assert gradcheck(TwoOutputs.apply, (x,))
    assert gradcheck(lambda t: (t.exp(), t.sin() * t), (x,))  # built-in ops: zeros
    # the same tensor twice: one undefined and one zero gradient arrive at one edge
    assert gradcheck(lambda t: (lambda y: (y, y))(t * 2), (x,))


def test_messages_match_pytorch():
    with pytest.raises(ValueError, match="none of them have requires_grad=True"):
        gradcheck(lambda t: t * 2, (tgrad.ones(2, dtype=tgrad.float64),))
    with pytest.warns(UserWarning, match="is not a double precision floating point or "
                                         "complex"):
        gradcheck(lambda t: t * 2, (tgrad.ones(2, requires_grad=True),), eps=1e-2,
                  atol=1e-2, rtol=1e-2)


def test_batched_forward_grad_check_takes_a_function_without_a_vmap_rule():
    # PyTorch batches this check with its legacy vmap, which does not ask a custom Function
    # for a vmap rule: gradcheck passes (tgrad raised functorch's "does not have vmap
    # support" even with raise_exception=False); a wrong jvp still fails
    def cube(wrong: bool):
        class Cube(tgrad.autograd.Function):
            @staticmethod
            def forward(x):
                return x ** 3

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.save_for_forward(inputs[0])

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x ** 2

            @staticmethod
            def jvp(ctx, t):
                (x,) = ctx.saved_tensors
                return t * (2 if wrong else 3) * x ** 2
        return Cube.apply

    x = tgrad.tensor([0.5, -1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    kw = dict(check_forward_ad=True, check_batched_forward_grad=True)
    assert tgrad.autograd.gradcheck(cube(False), (x,), **kw)
    assert not tgrad.autograd.gradcheck(cube(True), (x,), raise_exception=False, **kw)


def test_gradcheck_edge_cases_as_pytorch():
    # NaN Jacobian entries are a mismatch (np.allclose without equal_nan, as PyTorch)
    x = tgrad.tensor([-1.0, 4.0], dtype=tgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch"):
        gradcheck(tgrad.sqrt, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(tgrad.sqrt, (x,))
    # integer and bool outputs are not compared (a step in .long() is no derivative)
    y = tgrad.tensor([0.75, 2.0], dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: ((2 * t).long(), t * 3, t > 1), (y,))
    # an empty input: empty Jacobian columns, forward mode included
    e = tgrad.zeros(0, dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t * 2, (e,), check_forward_ad=True)
    # a stride-0 (expanded) input is refused with PyTorch's error
    z = tgrad.tensor([1.0], dtype=tgrad.float64, requires_grad=True).expand(3)
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda t: t * 2, (z,))
