"""PyTorch-parity fixes in tgrad.nn found by a differential test, each checked against an
independent reference (NumPy float64 formulas, finite differences or PyTorch's documented
rules): Module registration names, forward-hook keywords, SiLU(inplace), lp_pool with
p = +-inf, embedding_bag max's gradient on ties, integer hardtanh/relu6/threshold, elu's
gradient for very negative x, and double backward through piecewise-linear ops."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn
from tgrad.autograd import gradcheck, gradgradcheck


# ====================================================================== 1. registration
def _linear_with_buffer():
    m = nn.Linear(2, 2)
    m.register_buffer("buf", tgrad.zeros(1))
    m.add_module("sub", nn.ReLU())
    m.plain = 3
    return m


# (registration, name): PyTorch raises KeyError when the name is an attribute that is not
# already of the kind being registered
CLASHES = [
    ("register_buffer", "weight"), ("register_buffer", "sub"), ("register_buffer", "plain"),
    ("register_buffer", "forward"), ("register_parameter", "buf"),
    ("register_parameter", "sub"), ("register_parameter", "plain"),
    ("add_module", "weight"), ("add_module", "buf"), ("add_module", "training"),
]


@pytest.mark.parametrize("method,name", CLASHES)
def test_register_existing_attribute_of_another_kind_raises(method, name):
    m = _linear_with_buffer()
    value = {"register_buffer": tgrad.ones(1), "register_parameter": None,
             "add_module": nn.ReLU()}[method]
    with pytest.raises(KeyError, match=f"attribute '{name}' already exists"):
        getattr(m, method)(name, value)
    # nothing changed: state_dict still saves the original tensors
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias", "buf"]
    np.testing.assert_array_equal(sd["weight"].numpy(), m.weight.detach().numpy())
    np.testing.assert_array_equal(sd["buf"].numpy(), [0.0])


def test_register_same_kind_again_replaces():
    m = _linear_with_buffer()
    m.register_buffer("buf", tgrad.full((2,), 5.0))
    m.register_parameter("weight", nn.Parameter(tgrad.ones(2, 2)))
    m.add_module("sub", nn.Tanh())
    sd = m.state_dict()
    np.testing.assert_array_equal(sd["buf"].numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(sd["weight"].numpy(), np.ones((2, 2)))
    assert isinstance(m.sub, nn.Tanh)


# ====================================================================== 4. hooks, SiLU
class _Scale(nn.Module):
    def forward(self, x, scale=1.0):
        if scale == 0:
            raise ValueError("boom")
        return x * scale


def test_forward_hooks_with_kwargs_and_prepend():
    m, log = _Scale(), []

    def pre_kw(mod, args, kwargs):
        log.append(("pre_kw", dict(kwargs)))
        return (args[0] + 1.0,), {"scale": 2.0}

    def fwd_kw(mod, args, kwargs, out):
        log.append(("fwd_kw", dict(kwargs), out.tolist()))
        return out * 10.0

    m.register_forward_pre_hook(pre_kw, with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, args: log.append("pre_first"), prepend=True)
    m.register_forward_hook(fwd_kw, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("fwd_first", out.tolist())),
                            prepend=True)
    out = m(tgrad.tensor([1.0]), scale=3.0)
    assert out.tolist() == [40.0]  # (1 + 1) * 2, then * 10 by the kwargs hook
    assert log == ["pre_first", ("pre_kw", {"scale": 3.0}), ("fwd_first", [4.0]),
                   ("fwd_kw", {"scale": 2.0}, [4.0])]


def test_forward_pre_hook_with_kwargs_bad_return():
    m = _Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"tuple of \(new_args, new_kwargs\), but got 5"):
        m(tgrad.tensor([1.0]))


def test_forward_hook_always_call():
    m, log = _Scale(), []
    m.register_forward_hook(lambda mod, args, out: log.append("plain"))
    h = m.register_forward_hook(lambda mod, args, out: log.append(("always", out)),
                                always_call=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("always_kw", kwargs)),
                            always_call=True, with_kwargs=True)
    with pytest.raises(ValueError, match="boom"):
        m(tgrad.tensor([1.0]), scale=0)
    assert log == [("always", None), ("always_kw", {"scale": 0})]  # output None: not computed
    log.clear()
    m(tgrad.tensor([1.0]))  # a normal call runs each hook once
    assert [e if isinstance(e, str) else e[0] for e in log] == ["plain", "always", "always_kw"]
    log.clear()
    h.remove()  # removing a hook removes its flags too
    with pytest.raises(ValueError):
        m(tgrad.tensor([1.0]), scale=0)
    assert log == [("always_kw", {"scale": 0})]


def test_always_call_hook_errors_only_warn_when_forward_raised():
    m = _Scale()

    def bad(mod, args, out):
        raise KeyError("hook")
    m.register_forward_hook(bad, always_call=True)
    with pytest.warns(UserWarning, match="always_call=True"), pytest.raises(ValueError):
        m(tgrad.tensor([1.0]), scale=0)


@pytest.mark.parametrize("inplace", [False, True])
def test_silu_module_inplace(inplace):
    xs = np.array([-2.0, -0.5, 0.0, 1.5])
    x = tgrad.tensor(xs)
    y = nn.SiLU(inplace=inplace)(x)
    np.testing.assert_allclose(y.numpy(), xs / (1 + np.exp(-xs)), rtol=1e-14)
    assert (y is x) == inplace
    assert repr(nn.SiLU(inplace=inplace)) == ("SiLU(inplace=True)" if inplace else "SiLU()")


# ====================================================================== 2. lp_pool inf
def _np_windows(a: np.ndarray, k: int) -> np.ndarray:
    """non-overlapping windows of k along the last dim (stride k, floor)."""
    n = a.shape[-1] // k
    return a[..., :n * k].reshape(*a.shape[:-1], n, k)


@pytest.mark.parametrize("p", [math.inf, -math.inf])
def test_lp_pool1d_infinite_norm(p):
    xs = np.array([[[0.5, 2.0, 1.0, 3.0, -4.0, 2.0, -1.5, 1.5]]])
    x = tgrad.tensor(xs, requires_grad=True)
    y = F.lp_pool1d(x, p, 2)
    w = np.abs(_np_windows(xs, 2))
    np.testing.assert_array_equal(y.detach().numpy(), w.max(-1) if p > 0 else w.min(-1))
    y.sum().backward()
    # the gradient: sign(x) at the first extreme |x| of each window (PyTorch's max_pool)
    pick = w.argmax(-1) if p > 0 else w.argmin(-1)
    ref = np.zeros_like(xs)
    for j, i in enumerate(pick[0, 0]):
        ref[0, 0, 2 * j + i] = np.sign(xs[0, 0, 2 * j + i])
    np.testing.assert_array_equal(x.grad.numpy(), ref)


def test_lp_pool_infinite_norm_ties_take_the_first():
    x = tgrad.tensor([[[2.0, 2.0, -3.0, 3.0]]], requires_grad=True)
    y = F.lp_pool1d(x, math.inf, 2)
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [[[2.0, 3.0]]])
    np.testing.assert_array_equal(x.grad.numpy(), [[[1.0, 0.0, -1.0, 0.0]]])


@pytest.mark.parametrize("fn,module,shape", [
    (F.lp_pool2d, nn.LPPool2d, (1, 2, 4, 4)), (F.lp_pool3d, nn.LPPool3d, (1, 1, 4, 2, 4))])
def test_lp_pool2d_3d_infinite_norm(fn, module, shape):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(shape)
    spatial = len(shape) - 2
    y = fn(tgrad.tensor(xs), math.inf, 2)
    # reference: |x| max over 2 x 2 (x 2) blocks
    a = np.abs(xs)
    blocks = a.reshape(shape[:2] + sum(((s // 2, 2) for s in shape[2:]), ()))
    ref = blocks.max(axis=tuple(range(3, 3 + 2 * spatial, 2)))
    np.testing.assert_array_equal(y.numpy(), ref)
    np.testing.assert_array_equal(module(math.inf, 2)(tgrad.tensor(xs)).numpy(), ref)


def test_lp_pool_finite_norm_unchanged_and_gradcheck_infinite():
    xs = np.array([[[0.5, 2.0, 1.0, 3.0]]])
    y = F.lp_pool1d(tgrad.tensor(xs), 2.0, 2)
    np.testing.assert_allclose(y.numpy(), np.sqrt((_np_windows(xs, 2) ** 2).sum(-1)),
                               rtol=1e-15)
    x = tgrad.tensor([[[0.5, -2.0, 1.0, 3.0, -0.25, 0.75]]], dtype=tgrad.float64,
                     requires_grad=True)
    assert gradcheck(lambda t: F.lp_pool1d(t, math.inf, 2), (x,))


def test_lp_pool_integer_and_bool_inputs_as_pytorch():
    # PyTorch composes lp_pool of pow, avg_pool (an int64 kernel: the window sum divided by
    # its size in integers) and ^(1/p): int64/bool give a float32 result
    xs = np.array([[[[1, 2, 3], [0, 5, 1], [7, 1, 1]]]])
    win = np.stack([xs[0, 0, i:i + 2, j:j + 2].ravel() for i in (0, 1) for j in (0, 1)])
    # integer p: x^2 stays int64, the window mean is truncated (30 // 4 = 7, ...)
    y = F.lp_pool2d(tgrad.tensor(xs), 2, 2, 1)
    assert y.dtype is tgrad.float32
    want = np.sqrt(((win ** 2).sum(1) // 4) * 4).reshape(1, 1, 2, 2)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)  # [sqrt 28, 6, sqrt 72, sqrt 28]
    # float p: x^2.0 is float32, nothing truncated
    y = F.lp_pool2d(tgrad.tensor(xs), 2.0, 2, 1)
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy(), np.sqrt((win ** 2).sum(1)).reshape(1, 1, 2, 2),
                               rtol=1e-6)
    # bool: x^2 is int64 0/1; a window with one of two set truncates to 1 // 2 = 0
    yb = F.lp_pool1d(tgrad.tensor([[True, True, False, True]]), 2, 2)
    assert yb.dtype is tgrad.float32
    np.testing.assert_allclose(yb.numpy(), [[np.sqrt(2.0), 0.0]], rtol=1e-6)
    y3 = F.lp_pool3d(tgrad.ones(1, 1, 2, 2, 2, dtype=tgrad.int64), 1, 2)
    assert y3.dtype is tgrad.float32 and y3.item() == 8.0
    # the other integer dtypes have no avg_pool kernel: PyTorch's NotImplementedError
    for fn, shape, kernel in ((F.lp_pool1d, (1, 4), "avg_pool2d"),
                              (F.lp_pool2d, (1, 4, 4), "avg_pool2d"),
                              (F.lp_pool3d, (1, 2, 2, 2), "avg_pool3d_out_frame")):
        for dt, name in ((tgrad.int32, "Int"), (tgrad.uint8, "Byte")):
            with pytest.raises(NotImplementedError,
                               match=f"\"{kernel}\" not implemented for '{name}'"):
                fn(tgrad.ones(shape, dtype=dt), 2, 2)


# ====================================================================== 3. embedding_bag
def _np_bag_max(w: np.ndarray, bags: list) -> tuple:
    """PyTorch's rule: the first maximal entry of each bag and column takes the gradient
    (ones here); empty bags give zeros."""
    out = np.zeros((len(bags), w.shape[1]))
    grad = np.zeros_like(w)
    for b, rows in enumerate(bags):
        for d in range(w.shape[1]):
            if rows:
                vals = [w[r, d] for r in rows]
                first = int(np.argmax(vals))  # argmax: the first maximum
                out[b, d] = vals[first]
                grad[rows[first], d] += 1.0
    return out, grad


BAGS = [  # (indices, offsets, bags as lists of rows)
    ([1, 1, 2], [0], [[1, 1, 2]]),
    ([2, 1, 0, 3, 4, 1], [0, 3], [[2, 1, 0], [3, 4, 1]]),
    ([3, 0, 2, 1], [0, 2, 2], [[3, 0], [], [2, 1]]),
]


@pytest.mark.parametrize("idx,offsets,bags", BAGS)
def test_embedding_bag_max_gradient_goes_to_the_first_maximum(idx, offsets, bags):
    w0 = np.array([[1.0, 2.0, 3.0], [1.0, 5.0, 0.0], [1.0, 5.0, 3.0], [0.0, 0.0, 9.0],
                   [7.0, 7.0, 7.0]])
    w = tgrad.tensor(w0, requires_grad=True)
    y = F.embedding_bag(tgrad.tensor(idx), w, tgrad.tensor(offsets), mode="max")
    y.sum().backward()
    ref_out, ref_grad = _np_bag_max(w0, bags)
    np.testing.assert_array_equal(y.detach().numpy(), ref_out)
    np.testing.assert_array_equal(w.grad.numpy(), ref_grad)


def test_embedding_bag_max_brief_example_and_padding():
    w = tgrad.ones(4, 3, requires_grad=True)
    F.embedding_bag(tgrad.tensor([1, 1, 2]), w, tgrad.tensor([0]), mode="max").sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[1:3], [[1.0] * 3, [0.0] * 3])
    # padding entries are skipped: a bag of only padding is zeros, and ties skip it
    w = tgrad.ones(4, 3, requires_grad=True)
    y = F.embedding_bag(tgrad.tensor([3, 3, 1, 2]), w, tgrad.tensor([0, 1]), mode="max",
                        padding_idx=3)
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [[0.0] * 3, [1.0] * 3])
    np.testing.assert_array_equal(w.grad.numpy(), [[0.0] * 3, [1.0] * 3, [0.0] * 3, [0.0] * 3])


def test_embedding_bag_max_nan_and_gradcheck():
    nan = float("nan")
    w = tgrad.tensor([[nan, 1.0], [2.0, nan], [3.0, 0.0]], requires_grad=True)
    y = F.embedding_bag(tgrad.tensor([2, 0, 1, 0]), w, tgrad.tensor([0]), mode="max")
    y.sum().backward()  # a NaN propagates (np.max); the first NaN takes the gradient
    np.testing.assert_array_equal(y.detach().numpy(), [[nan, nan]])
    np.testing.assert_array_equal(w.grad.numpy(), [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    rng = np.random.default_rng(1)
    w = tgrad.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    idx, off = tgrad.tensor([4, 0, 2, 1, 3, 2]), tgrad.tensor([0, 2, 2])
    assert gradcheck(lambda t: F.embedding_bag(idx, t, off, mode="max"), (w,))
    assert gradgradcheck(lambda t: F.embedding_bag(idx, t, off, mode="max") ** 2, (w,))


# ====================================================================== 5. integer inputs
INT_CASES = [  # (fn, input, reference as PyTorch: scalars truncated to the integer dtype)
    (lambda x: F.hardtanh(x), [-3, 0, 3], [-1, 0, 1]),
    (lambda x: F.hardtanh(x, -2.7, 2.7), [-3, 0, 3], [-2, 0, 2]),
    (lambda x: F.hardtanh(x, 0.5, 0.7), [-3, 0, 3], [0, 0, 0]),
    (lambda x: F.relu6(x), [-3, 4, 9], [0, 4, 6]),
    (lambda x: F.threshold(x, 2, 0), [1, 5], [0, 5]),
    (lambda x: F.threshold(x, -2.5, 7.9), [-2, 3], [7, 3]),
    (lambda x: nn.Hardtanh(-2, 2)(x), [-3, 4, 9], [-2, 2, 2]),
    (lambda x: nn.Threshold(2, -1)(x), [1, 5], [-1, 5]),
]


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("fn,xs,ref", INT_CASES)
def test_integer_inputs_stay_integer(fn, xs, ref, dtype):
    dt = getattr(tgrad, dtype)
    y = fn(tgrad.tensor(xs, dtype=dt))
    assert y.dtype is dt
    np.testing.assert_array_equal(y.numpy(), np.array(ref))


@pytest.mark.parametrize("op", ["hardtanh", "relu6", "threshold"])
def test_integer_inputs_in_place(op):
    x = tgrad.tensor([-3, 1, 9])
    fn = {"hardtanh": lambda t: F.hardtanh(t, inplace=True),
          "relu6": lambda t: F.relu6(t, inplace=True),
          "threshold": lambda t: F.threshold(t, 1, 0, inplace=True)}[op]
    assert fn(x) is x and x.dtype is tgrad.int64
    ref = {"hardtanh": [-1, 1, 1], "relu6": [0, 1, 6], "threshold": [0, 0, 9]}[op]
    np.testing.assert_array_equal(x.numpy(), ref)


def test_integer_scalar_overflow_and_bool_raise():
    with pytest.raises(RuntimeError, match="without overflow"):
        F.hardtanh(tgrad.tensor([1], dtype=tgrad.int32), -1.0, 2.0 ** 40)
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        F.hardtanh(tgrad.tensor([True]))
    with pytest.raises(NotImplementedError, match="Bool"):
        F.threshold(tgrad.tensor([True]), 0, 0)


# ====================================================================== 6. elu precision
ELU_CASES = [  # (fn, alpha, input scale s): negative branch alpha (e^(s x) - 1)
    (lambda x: F.elu(x), 1.0, 1.0),
    (lambda x: F.elu(x, 1.5), 1.5, 1.0),
    (lambda x: F.celu(x, 0.7), 0.7, 1 / 0.7),
]


@pytest.mark.parametrize("fn,alpha,s", ELU_CASES)
def test_elu_gradient_relative_precision_float32(fn, alpha, s):
    xs = np.array([-30.0, -17.0, -10.0, -1.0, -1e-3, 0.0, 0.5, 3.0])
    x = tgrad.tensor(xs.astype(np.float32), requires_grad=True)
    y = fn(x)
    y.sum().backward()
    x32 = xs.astype(np.float32).astype(np.float64)
    ref_y = np.where(x32 > 0, x32, alpha * np.expm1(s * x32))
    ref_g = np.where(x32 > 0, 1.0, alpha * s * np.exp(s * x32))
    np.testing.assert_allclose(y.detach().numpy(), ref_y, rtol=1e-6, atol=0)
    np.testing.assert_allclose(x.grad.numpy(), ref_g, rtol=1e-6, atol=0)  # relative, tiny too


def test_elu_special_values_and_double_backward():
    x = tgrad.tensor([float("nan"), -math.inf, math.inf], requires_grad=True)
    y = F.elu(x, 2.0)
    y.sum().backward()  # PyTorch's elu_backward: x <= 0 takes the exponential branch
    np.testing.assert_array_equal(y.detach().numpy(), [np.nan, -2.0, np.inf])
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0])
    xd = tgrad.tensor([-3.0, -0.7, -1e-4, 0.4, 2.0], dtype=tgrad.float64, requires_grad=True)
    for fn in (lambda t: F.elu(t, 1.3), lambda t: F.celu(t, 0.6), F.selu):
        assert gradcheck(fn, (xd,))
        assert gradgradcheck(fn, (xd,))
    # the second derivative itself: alpha e^x on the negative side, 0 on the positive
    g, = tgrad.autograd.grad(F.elu(xd, 1.3).sum(), xd, create_graph=True)
    g.sum().backward()
    xv = xd.detach().numpy()
    np.testing.assert_allclose(xd.grad.numpy(), np.where(xv > 0, 0.0, 1.3 * np.exp(xv)),
                               rtol=1e-14)


_SELU = (1.6732632423543772, 1.0507009873554805)  # alpha, scale


@pytest.mark.parametrize("fn,alpha,s,pos", [c + (1.0,) for c in ELU_CASES]
                         + [(F.selu, _SELU[0] * _SELU[1], 1.0, _SELU[1])])
def test_elu_second_derivative_at_zero_is_zero(fn, alpha, s, pos):
    # PyTorch's elu_backward takes the negative branch at x <= 0 (dy/dx = alpha s at 0), its
    # elu_double_backward masks x < 0: d2y/dx2 is alpha s^2 e^(s x) for x < 0, else 0 (x = 0
    # and -0 included)
    xs = np.array([-1.5, -0.0, 0.0, 0.8])
    x = tgrad.tensor(xs, requires_grad=True)
    g, = tgrad.autograd.grad(fn(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [alpha * s * np.exp(-1.5 * s), alpha * s,
                                                    alpha * s, pos], rtol=1e-14)
    h, = tgrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [alpha * s * s * np.exp(-1.5 * s), 0.0, 0.0, 0.0],
                               rtol=1e-14, atol=0)


# ====================================================================== 7. double backward
def _pool_in(x):
    return x.reshape(1, 1, -1)


def _copies(source: np.ndarray) -> np.ndarray:
    """d(sum of a padding)/dx: how often each input position was copied."""
    return np.bincount(source, minlength=6).astype(float)


PIECEWISE = [  # (name, fn of a (6,) float64 tensor, first derivative as NumPy)
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda v: np.where(v > 0, 1.0, 0.1)),
    ("hardtanh", lambda x: F.hardtanh(x, -1.0, 2.0),
     lambda v: ((v > -1) & (v < 2)).astype(float)),
    ("relu6", lambda x: F.relu6(x * 3), lambda v: 3.0 * ((3 * v > 0) & (3 * v < 6))),
    ("threshold", lambda x: F.threshold(x, 0.5, -2.0), lambda v: (v > 0.5).astype(float)),
    ("prelu", lambda x: F.prelu(x, tgrad.tensor([0.25], dtype=tgrad.float64)),
     lambda v: np.where(v > 0, 1.0, 0.25)),
    ("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3), lambda v: np.where(v >= 0, 1.0, 0.2)),
    ("softshrink", lambda x: F.softshrink(x, 0.5), lambda v: (np.abs(v) > 0.5).astype(float)),
    ("hardshrink", lambda x: F.hardshrink(x, 0.5), lambda v: (np.abs(v) > 0.5).astype(float)),
    ("max_pool1d", lambda x: F.max_pool1d(_pool_in(x), 2),
     lambda v: np.eye(2)[np.argmax(v.reshape(3, 2), 1)].reshape(-1)),
    ("max_pool2d", lambda x: F.max_pool2d(x.reshape(1, 1, 2, 3), (2, 1)),
     lambda v: np.eye(2)[np.argmax(v.reshape(2, 3), 0)].T.reshape(-1)),
    ("max_pool3d", lambda x: F.max_pool3d(x.reshape(1, 1, 1, 2, 3), (1, 2, 1)),
     lambda v: np.eye(2)[np.argmax(v.reshape(2, 3), 0)].T.reshape(-1)),
    ("avg_pool1d", lambda x: F.avg_pool1d(_pool_in(x), 3), lambda v: np.full(6, 1 / 3)),
    ("avg_pool2d", lambda x: F.avg_pool2d(x.reshape(1, 1, 2, 3), 2, 1),
     lambda v: np.array([1, 2, 1, 1, 2, 1]) / 4),
    ("avg_pool3d", lambda x: F.avg_pool3d(x.reshape(1, 1, 1, 2, 3), (1, 2, 3)),
     lambda v: np.full(6, 1 / 6)),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(_pool_in(x), 2),
     lambda v: np.full(6, 1 / 3)),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(_pool_in(x), 2),
     lambda v: np.eye(3)[np.argmax(v.reshape(2, 3), 1)].reshape(-1)),
    ("reflect_pad", lambda x: F.pad(_pool_in(x), (2, 1), mode="reflect"),
     lambda v: _copies(np.pad(np.arange(6), (2, 1), mode="reflect"))),
    ("replicate_pad", lambda x: F.pad(_pool_in(x), (2, 1), mode="replicate"),
     lambda v: _copies(np.pad(np.arange(6), (2, 1), mode="edge"))),
]
XS = np.array([1.3, -0.7, 2.6, 0.2, -1.9, 0.9])


@pytest.mark.parametrize("name,fn,dfn", PIECEWISE, ids=[c[0] for c in PIECEWISE])
def test_double_backward_through_piecewise_linear_ops(name, fn, dfn):
    x = tgrad.tensor(XS, requires_grad=True)
    g, = tgrad.autograd.grad(fn(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), dfn(XS), rtol=1e-15)
    assert g.requires_grad  # in x's graph although the incoming gradient is a constant
    g.sum().backward()  # the second derivative is 0 almost everywhere
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))
    # and the gradient's dependence on the incoming gradient is kept: finite differences
    x = tgrad.tensor(XS, requires_grad=True)
    assert gradgradcheck(fn, (x,))


def test_double_backward_rrelu_training_and_in_place():
    tgrad.manual_seed(0)
    x = tgrad.tensor(XS, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    g, = tgrad.autograd.grad(y.sum(), x, create_graph=True)
    slopes = y.detach().numpy() / XS  # the slope drawn for each element (1 for x >= 0)
    np.testing.assert_allclose(g.detach().numpy(), slopes, rtol=1e-14)
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))
    for inplace_fn in (lambda t: F.leaky_relu(t, 0.1, inplace=True),
                       lambda t: F.hardtanh(t, inplace=True),
                       lambda t: F.rrelu(t, 0.1, 0.3, training=True, inplace=True)):
        x = tgrad.tensor(XS, requires_grad=True)
        g, = tgrad.autograd.grad(inplace_fn(x * 1.0).sum(), x, create_graph=True)
        g.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))


def test_double_backward_mixed_terms_kept():
    # prelu with a weight that needs grad: d2/dx dw = 1 where x <= 0
    x = tgrad.tensor(XS, requires_grad=True)
    w = tgrad.tensor([0.25], dtype=tgrad.float64, requires_grad=True)
    g, = tgrad.autograd.grad(F.prelu(x, w).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))
    np.testing.assert_array_equal(w.grad.numpy(), [(XS <= 0).sum()])
    # a second-order term through another op: d/dx of (leaky_relu(x)^2)' = 2 slope^2
    x = tgrad.tensor(XS, requires_grad=True)
    g, = tgrad.autograd.grad((F.leaky_relu(x, 0.1) ** 2).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.where(XS > 0, 1.0, 0.01), rtol=1e-15)


def test_prelu_zero_dim_input():
    # PyTorch: a 0-d input takes a one-element weight (result 0-d); a longer weight raises
    x = tgrad.tensor(-2.0, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor([0.25], dtype=tgrad.float64, requires_grad=True)
    y = F.prelu(x, w)
    assert y.shape == () and y.item() == -0.5
    y.backward()
    assert x.grad.item() == 0.25 and w.grad.tolist() == [-2.0]
    assert F.prelu(tgrad.tensor(3.0), tgrad.tensor([0.25])).item() == 3.0
    with pytest.raises(RuntimeError, match="Not allow zero-dim input tensor"):
        F.prelu(tgrad.tensor(3.0), tgrad.tensor([0.25, 0.5]))


def test_prelu_weight_ndim_and_celu_alpha_zero_errors():
    # PyTorch's texts: a weight of 2+ dims (even one element) is refused for its ndim (the
    # text named a parameter-count mismatch), a wrong count for the channels; celu(alpha=0)
    x = tgrad.ones(2, 3)
    for w in (tgrad.ones(3, 1), tgrad.ones(1, 1)):
        with pytest.raises(RuntimeError, match=r"^prelu: Expected `weight` to be a scalar or "
                                               r"1D tensor, but got: ndim = 2$"):
            F.prelu(x, w)
    with pytest.raises(RuntimeError, match="Found parameter numbers = 2 and channel size = 3"):
        F.prelu(x, tgrad.ones(2))
    assert F.prelu(tgrad.tensor([[-2.0, 1.0]]), tgrad.tensor(0.5)).tolist() == [[-1.0, 1.0]]
    with pytest.raises(RuntimeError, match="^ZeroDivisionError: alpha cannot be 0 for CELU$"):
        F.celu(x, 0.0)


def test_first_order_unchanged_without_create_graph():
    x = tgrad.tensor(XS, requires_grad=True)
    g, = tgrad.autograd.grad(F.leaky_relu(x, 0.1).sum(), x)
    assert not g.requires_grad
    np.testing.assert_array_equal(g.numpy(), np.where(XS > 0, 1.0, 0.1))


def test_hardswish_gradient_at_nan_and_the_kinks():
    # PyTorch's hardswish_backward: 0 for x <= -3, g (x / 3 + 1/2) strictly inside, g for
    # x >= 3 and for NaN
    x = tgrad.tensor([float("nan"), -3.0, 3.0, -1.5, 0.0, 4.0], dtype=tgrad.float64,
                     requires_grad=True)
    F.hardswish(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0, 0.0, 0.5, 1.0])


# ====================================================================== module reprs
def test_selu_mish_repr_show_inplace():
    # PyTorch's SELU/Mish extra_repr: "inplace=True" when set, nothing otherwise
    assert repr(nn.SELU(inplace=True)) == "SELU(inplace=True)"
    assert repr(nn.Mish(inplace=True)) == "Mish(inplace=True)"
    assert repr(nn.SELU()) == "SELU()" and repr(nn.Mish()) == "Mish()"


def test_parameter_list_repr_names_a_gpu_device_as_pytorch():
    # PyTorch 2.13's ParameterList/ParameterDict extra_repr: " (cuda:1)" after the size of a
    # tensor on a cuda device (older releases printed " (GPU 1)"). A Parameter relabelled
    # as on cuda:1 stands in for one here (the repr reads no values), so no GPU is needed.
    on_cuda = nn.Parameter(tgrad.zeros(2, 3))
    on_cuda._device = tgrad.device("cuda", 1)  # (device itself is read-only, as PyTorch)
    pl = nn.ParameterList([on_cuda, nn.Parameter(tgrad.zeros(2))])
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [tgrad.float32 of size 2x3 (cuda:1)]\n"
                        "    (1): Parameter containing: [tgrad.float32 of size 2]\n)")


# ================================================= bad input: PyTorch's error types and texts
def _ones(*shape, dtype=tgrad.float32):
    return tgrad.ones(shape, dtype=dtype)


_IDX = tgrad.tensor([0, 4, 2, 1])
_F64 = tgrad.float64
# (call, exception type, text it contains): each one returned a value, leaked an internal
# error or raised another type before; the texts are PyTorch's (plus tgrad's op names)
_NN_BAD_INPUT = [
    (lambda: F.embedding(tgrad.tensor([0]), _ones(5)), RuntimeError, "'weight' must be 2-D"),
    (lambda: F.embedding(tgrad.tensor([0]), _ones(5, 3, 2)), RuntimeError,
     "'weight' must be 2-D"),
    (lambda: F.prelu(_ones(2, 4), _ones(4, dtype=_F64)), RuntimeError,
     "prelu: Type promoting not supported. Got Float and Double"),
    (lambda: F.prelu(_ones(2, 4, dtype=_F64), _ones(4)), RuntimeError,
     "prelu: Type promoting not supported. Got Double and Float"),
    (lambda: F.cross_entropy(_ones(4, 5), _IDX, weight=_ones(5, dtype=_F64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: F.cross_entropy(_ones(4, 5), _IDX, weight=_ones(5, dtype=_F64),
                             label_smoothing=0.1), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: F.nll_loss(_ones(4, 5, dtype=_F64), _IDX, weight=_ones(5)), RuntimeError,
     "expected scalar type Double but found Float"),
    (lambda: F.multi_margin_loss(_ones(4, 5), _IDX, weight=_ones(5, dtype=_F64)),
     RuntimeError, "expected scalar type Float but found Double"),
    (lambda: F.nll_loss(tgrad.tensor(1.5), tgrad.tensor(0)), ValueError,
     "Expected 1 or more dimensions (got 0)"),
    (lambda: F.adaptive_avg_pool2d(_ones(1, 2, 4, 4), None), TypeError,
     "adaptive_avg_pool2d(): argument 'output_size' must be tuple of ints, not NoneType"),
    (lambda: F.adaptive_max_pool1d(_ones(1, 2, 4), None), TypeError,
     "adaptive_max_pool1d(): argument 'output_size' must be tuple of ints, not NoneType"),
    (lambda: nn.AdaptiveAvgPool3d(None)(_ones(1, 2, 4, 4, 4)), TypeError,
     "argument 'output_size' must be tuple of ints, not NoneType"),
    (lambda: nn.AvgPool1d(2.0)(_ones(1, 2, 4)), TypeError,
     "avg_pool1d(): argument 'kernel_size' must be tuple of ints, but found element of "
     "type float at pos 0"),
    (lambda: F.max_pool2d(_ones(1, 1, 4, 4), (2, 2.0)), TypeError,
     "max_pool2d(): argument 'kernel_size' must be tuple of ints, but found element of "
     "type float at pos 1"),
    (lambda: F.conv_transpose2d(_ones(1, 2, 4, 4), _ones(2, 1, 3, 3), padding="same"),
     TypeError, "conv_transpose2d(): argument 'padding' must be tuple of ints, not str"),
    (lambda: F.conv1d(_ones(1, 2, 5), _ones(3, 2, 3), padding=None), TypeError,
     "conv1d(): argument 'padding' must be tuple of ints, not NoneType"),
    (lambda: F.unfold(_ones(1, 2, 4, 4), 2, stride=1.5), TypeError,
     "unfold(): argument 'stride' must be tuple of ints, not float"),
    (lambda: F.scaled_dot_product_attention(_ones(2, 3, 4), _ones(2, 3, 4), _ones(2, 3, 4),
                                            dropout_p=1.5), RuntimeError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: F.affine_grid(tgrad.zeros(2, 2, 3), (3, 3, 4, 4), align_corners=False),
     RuntimeError, "affine_grid: Expected theta's batch size 2 to match size[0] = 3"),
    (lambda: nn.InstanceNorm2d(3, affine=True)(_ones(2, 4, 3, 3)), ValueError,
     "expected input's size at dim=1 to match num_features (3), but got: 4."),
    (lambda: nn.InstanceNorm1d(3, affine=True)(_ones(4, 5)), ValueError,
     "expected input's size at dim=0 to match num_features (3), but got: 4."),
    (lambda: F.batch_norm(_ones(2, 4, 3), tgrad.zeros(4, 1), _ones(4)), RuntimeError,
     "Expected running_mean to be a vector of size equal to the number of channels in input"),
    (lambda: F.group_norm(_ones(2, 4, 3), 2, _ones(4, 1)), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels in input, but "
     "got weight of shape [4, 1] and input of shape [2, 4, 3]"),
    (lambda: F.group_norm(_ones(2, 4, 3), 2.0), TypeError,
     "group_norm(): argument 'num_groups' (position 2) must be int, not float"),
    (lambda: F.group_norm(_ones(2, 4, 3), 2, _ones(4, dtype=_F64)), RuntimeError,
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    (lambda: F.group_norm(_ones(2, 4, 3, dtype=_F64), 2, None, _ones(4)), RuntimeError,
     "mixed dtype (CPU): all inputs must share same datatype."),
    (lambda: F.instance_norm(_ones(2, 4, 3), weight=_ones(4, dtype=_F64)), RuntimeError,
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    (lambda: F.instance_norm(_ones(2, 4, 3), weight=_ones(4, 1)), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels in input"),
    (lambda: F.softmax(_ones(2, 3), 1.0), TypeError,
     "softmax(): argument 'dim' must be int, not float"),
    (lambda: F.linear(_ones(2, 3), _ones(4, 3), 3), TypeError,
     "linear(): argument 'bias' must be Tensor, not int"),
    (lambda: F.linear(_ones(2, 3), _ones(4, 3), _ones(4, dtype=_F64)), RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: F.embedding(tgrad.tensor([0]), _ones(5, 3), padding_idx=1.5), TypeError,
     "embedding(): argument 'padding_idx' (position 3) must be int, not float"),
    (lambda: F.one_hot(tgrad.tensor([0, 1]), 2.0), TypeError,
     "one_hot(): argument 'num_classes' (position 2) must be int, not float"),
    (lambda: F.cosine_similarity(_ones(2, 3), _ones(2, 3), eps=-1.0), RuntimeError,
     "eps must be non-negative, got: -1.0"),
    (lambda: F.embedding_bag(tgrad.tensor([0, 1, 2]), _ones(5), tgrad.tensor([0, 2])),
     ValueError, "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
    (lambda: F.embedding_bag(tgrad.tensor([0, 1, 2]), _ones(5, 3), tgrad.tensor([0, 2]),
                             padding_idx=9), RuntimeError,
     "padding_idx must be within the number of embeddings, -5 through 4, but got 9"),
    (lambda: F.embedding_bag(tgrad.tensor([0, 1, 2]), _ones(5, 3), tgrad.tensor([0, 2]),
                             mode="sum", per_sample_weights=_ones(3, dtype=_F64)),
     RuntimeError, "to have the same type as tensor for argument #1 'per_sample_weights'"),
    (lambda: F.kl_div(_ones(2, 3), tgrad.ones(2, 3, dtype=tgrad.int64), reduction="sum"),
     RuntimeError, "kl_div: Integral inputs not supported."),
    (lambda: F.nll_loss(_ones(4, 5), _IDX, ignore_index=1.5), TypeError,
     "nll_loss_nd(): argument 'ignore_index' (position 5) must be int, not float"),
    (lambda: F.cross_entropy(_ones(4, 5), _IDX, ignore_index=1.5), TypeError,
     "cross_entropy_loss(): argument 'ignore_index' (position 5) must be int, not float"),
]


@pytest.mark.parametrize("case", range(len(_NN_BAD_INPUT)))
def test_nn_bad_input_raises_pytorchs_error(case):
    call, exc, text = _NN_BAD_INPUT[case]
    with pytest.raises(exc) as info:
        call()
    assert type(info.value) is exc and text in str(info.value), repr(info.value)


def test_nn_bad_input_checks_keep_the_valid_calls():
    # the same calls with matching dtypes / sizes give their values (hand-computed)
    x = tgrad.tensor([[-2.0, 1.0], [3.0, -4.0]], dtype=_F64)
    assert F.prelu(x, tgrad.tensor([0.5, 0.25], dtype=_F64)).tolist() == [[-1.0, 1.0],
                                                                           [3.0, -1.0]]
    logp = tgrad.log(tgrad.tensor([[0.5, 0.25, 0.25], [0.125, 0.5, 0.375]], dtype=_F64))
    t = tgrad.tensor([0, 2])
    w = tgrad.tensor([2.0, 1.0, 3.0], dtype=_F64)
    want = (2.0 * math.log(2.0) + 3.0 * math.log(8 / 3)) / 5.0  # sum w_t (-log p_t) / sum w_t
    assert math.isclose(F.nll_loss(logp, t, weight=w).item(), want, rel_tol=1e-12)
    # class probabilities: a float64 weight promotes a float32 input's loss (PyTorch)
    xs = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=np.float32)
    q = np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]], dtype=np.float32)
    wv = np.array([2.0, 1.0, 3.0])
    x64 = xs.astype(np.float64)
    logsm = x64 - np.log(np.exp(x64).sum(1, keepdims=True))
    got = F.cross_entropy(tgrad.tensor(xs), tgrad.tensor(q), weight=tgrad.tensor(wv))
    assert got.dtype is _F64
    assert math.isclose(got.item(), float(-(wv * q * logsm).sum(1).mean()), rel_tol=1e-6)
    assert F.embedding(tgrad.tensor([1]), tgrad.tensor([[1.0], [2.0]])).tolist() == [[2.0]]
    assert F.adaptive_avg_pool2d(_ones(1, 1, 4, 4), (None, 2)).shape == (1, 1, 4, 2)
    assert F.max_pool2d(tgrad.arange(16.0).reshape(1, 1, 4, 4),
                        (np.int64(2), tgrad.tensor(2))).tolist() == [[[[5.0, 7.0],
                                                                         [13.0, 15.0]]]]
    # group_norm of a float16 input takes float32 parameters (PyTorch's mixed-dtype rule)
    h = np.arange(12.0).reshape(1, 4, 3) / 8
    y = F.group_norm(tgrad.tensor(h).half(), 2, _ones(4), tgrad.zeros(4))
    g = h.reshape(1, 2, 6)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    assert y.dtype is tgrad.float16
    np.testing.assert_allclose(y.float().numpy(), want.reshape(1, 4, 3), rtol=2e-3, atol=2e-3)
    # InstanceNorm without affine: PyTorch's warning, then the per-instance normalisation
    a = np.arange(8.0).reshape(1, 2, 4)
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        y = nn.InstanceNorm1d(3)(tgrad.tensor(a))
    want = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)


def test_loss_dtype_is_the_inputs_where_pytorch_writes_in_place():
    # huber_loss writes into input's dtype; the (pos_)weight of binary_cross_entropy(_with_
    # logits) multiplies the loss in place: a float64 one leaves a float32 loss (PyTorch)
    xv = np.array([[0.2, -1.5, 3.0]])
    tv = np.array([[0.7, 0.4, 0.1]])
    wv = np.array([2.0, 0.5, 1.5])
    x32, t64, w64 = tgrad.tensor(xv.astype(np.float32)), tgrad.tensor(tv), tgrad.tensor(wv)
    d = xv.astype(np.float32) - tv
    want = np.where(np.abs(d) < 1.0, 0.5 * d * d, np.abs(d) - 0.5).mean()
    got = F.huber_loss(x32, t64)
    assert got.dtype is tgrad.float32
    assert math.isclose(got.item(), want, rel_tol=1e-6)
    p32, q32 = tgrad.tensor(tv.astype(np.float32)), tgrad.tensor([[1.0, 0.0, 0.5]])
    pv = tv.astype(np.float32).astype(np.float64)
    qv = np.array([[1.0, 0.0, 0.5]])
    got = F.binary_cross_entropy(p32, q32, weight=w64)
    assert got.dtype is tgrad.float32
    want = (-wv * (qv * np.log(pv) + (1 - qv) * np.log(1 - pv))).mean()
    assert math.isclose(got.item(), want, rel_tol=1e-6)
    x = xv.astype(np.float32).astype(np.float64)
    sp = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # softplus(-x)
    for kw, want in ((dict(weight=w64), (wv * ((1 - qv) * x + sp)).mean()),
                     (dict(pos_weight=w64), ((1 - qv) * x + (1 + (wv - 1) * qv) * sp).mean())):
        got = F.binary_cross_entropy_with_logits(x32, q32, **kw)
        assert got.dtype is tgrad.float32
        assert math.isclose(got.item(), want, rel_tol=1e-6)
