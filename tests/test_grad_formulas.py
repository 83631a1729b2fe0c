"""Fused gradient formulas (one primitive per elementwise backward, one kernel on the GPU)
against their oracle: the same rule written in differentiable tgrad ops, which is what runs
under create_graph=True. Both paths are also checked against finite differences by the op
table (gradcheck runs the fused path, gradgradcheck the composite one)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import tgrad
from tgrad.backends import numpy as np_backend
from tgrad.ops import elementwise as ew

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, 1e-300, 3.0]
UNARY_FUSED = ["abs", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "erf", "reciprocal",
               "square", "log2", "log10", "exp2", "sinh", "cosh", "tan", "atan", "asin", "acos"]


def _grads(f, inputs, g, create_graph):
    out = f(*inputs)
    grads = tgrad.autograd.grad(out, inputs, g, create_graph=create_graph, allow_unused=True)
    return [None if x is None else x.detach().numpy() for x in grads]


def _compare(f, arrays, g, dtype, rtol):
    """Fused (plain backward) vs composite (create_graph) gradients, same dtype and the same
    rounding steps. (Halves: the fused formula computes in float32 and rounds once; see the
    last test.)"""
    inputs = [tgrad.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    if g is None:  # a random gradient of the output's shape
        g = np.random.default_rng(9).standard_normal(f(*inputs).shape)
    g_t = tgrad.tensor(g, dtype=dtype)
    fused = _grads(f, inputs, g_t, create_graph=False)
    composite = _grads(f, inputs, g_t, create_graph=True)
    for a, b in zip(fused, composite):
        assert (a is None) == (b is None)
        if a is None:  # an input the function does not use
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True)


RTOL = {"float64": 1e-14, "float32": 1e-6}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY_FUSED)
def test_unary_fused_rule_matches_composite(name, dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0.1, 3.0, 23), SPECIAL]).reshape(3, 11)
    g = np.concatenate([rng.standard_normal(30), [np.inf, np.nan, 0.0]]).reshape(3, 11)
    _compare(getattr(tgrad, name), [x], g, getattr(tgrad, dtype), RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["div", "maximum", "minimum", "atan2"])
def test_binary_fused_rule_matches_composite(name, dtype):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(0.5, 2.0, 7), SPECIAL]).reshape(17, 1)
    b = np.concatenate([rng.uniform(0.5, 2.0, 4), [0.5, 1.0, np.nan]]).reshape(1, 7)
    a[3, 0] = b[0, 1]  # a tie
    g = rng.standard_normal((17, 7))
    _compare(getattr(tgrad, name), [a, b], g, getattr(tgrad, dtype), RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("bounds", [(-0.5, None), (None, 0.7), (-0.5, 0.7), (0.7, -0.5)])
def test_clamp_fused_masks_match_composite(bounds, dtype):
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-1.0, 1.0, 20), [-0.5, 0.7], SPECIAL])
    g = np.resize([1.5, -2.0, np.inf, np.nan, 0.25], x.shape)  # inf/NaN at masked places too
    lo, hi = bounds
    _compare(lambda t: tgrad.clamp(t, lo, hi), [x], g, getattr(tgrad, dtype), RTOL[dtype])


@pytest.mark.parametrize("name", ["div", "maximum", "minimum", "atan2"])
def test_binary_fused_rule_with_number_operand(name):
    x = tgrad.tensor([0.5, 1.0, 2.0, -3.0], dtype=tgrad.float64, requires_grad=True)
    # the internal op: torch.maximum / minimum / atan2 refuse number operands (as PyTorch),
    # tgrad's own formulas call them with numbers
    fn = getattr(ew, name)
    for f in (lambda t: fn(t, 1.0), lambda t: fn(1.0, t) if name == "div" else fn(t, 2.0)):
        fused = tgrad.autograd.grad(f(x).sum(), x)[0].numpy()
        composite = tgrad.autograd.grad(f(x).sum(), x, create_graph=True)[0].detach().numpy()
        np.testing.assert_allclose(fused, composite, rtol=1e-15)


def test_fused_rule_on_0d_tensors():
    x = tgrad.tensor(0.7, dtype=tgrad.float64, requires_grad=True)
    y = tgrad.tensor(1.3, dtype=tgrad.float64, requires_grad=True)
    for f in (tgrad.sqrt, tgrad.erf, tgrad.abs, lambda t: t / y, lambda t: tgrad.maximum(t, y)):
        g = tgrad.autograd.grad(f(x), x)[0]
        assert g.shape == ()
        gg = tgrad.autograd.grad(f(x), x, create_graph=True)[0]
        assert abs(g.item() - gg.item()) <= 1e-15 * abs(gg.item())


# atan2's gradient where a^2 + b^2 is 0 (the origin, or squares that underflow) is 0, as
# PyTorch masks it; where a^2 + b^2 is subnormal its reciprocal overflows (PyTorch 2.13's
# values, signed zeros included). Rows: a, b, d/da, d/db.
ATAN2_GRADS = [(0.0, 0.0, 0.0, -0.0), (0.0, -0.0, -0.0, -0.0), (-0.0, 0.0, 0.0, 0.0),
               (-0.0, -0.0, -0.0, 0.0), (1e-200, 1e-200, 0.0, -0.0), (1e-160, 0.0, np.nan, -np.inf),
               (1e-150, 0.0, 0.0, -1e150), (0.0, 1e-160, np.inf, np.nan), (1.0, 0.0, 0.0, -1.0),
               (np.inf, 1.0, 0.0, np.nan), (np.inf, np.inf, np.nan, np.nan),
               (1e200, 0.0, 0.0, -0.0), (3.0, -4.0, -0.16, -0.12)]


@pytest.mark.parametrize("fused", [True, False])
def test_atan2_gradient_at_the_origin_and_underflow_as_pytorch(fused):
    a_v, b_v, ga_v, gb_v = (np.array(c) for c in zip(*ATAN2_GRADS))
    a = tgrad.tensor(a_v, dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor(b_v, dtype=tgrad.float64, requires_grad=True)
    ga, gb = (t.detach().numpy() for t in tgrad.autograd.grad(
        tgrad.atan2(a, b).sum(), (a, b), create_graph=not fused))
    for got, want in ((ga, ga_v), (gb, gb_v)):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)  # (NaN where NaN)
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("name", ["asin", "acos"])
def test_asin_acos_gradient_is_infinite_at_one_and_nan_outside(name):
    x = tgrad.tensor([1.0, -1.0, 1.5, -np.inf, 0.0], dtype=tgrad.float64, requires_grad=True)
    g = tgrad.autograd.grad(getattr(tgrad, name)(x).sum(), x)[0].numpy()
    sign = 1.0 if name == "asin" else -1.0
    np.testing.assert_array_equal(g, [sign * np.inf, sign * np.inf, np.nan, np.nan, sign])
    # second derivative: asin'' = x (1 - x^2)^(-3/2), +-inf at +-1 (PyTorch's; the product
    # (1 - x)(1 + x) differentiated term by term gave inf * 0 = NaN), -acos'' likewise
    g1 = tgrad.autograd.grad(getattr(tgrad, name)(x).sum(), x, create_graph=True)[0]
    g2 = tgrad.autograd.grad(g1.sum(), x)[0].numpy()
    np.testing.assert_array_equal(g2, [sign * np.inf, -sign * np.inf, np.nan, np.nan, 0.0])


def test_maximum_ties_share_the_gradient_evenly():
    a = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor([1.0, 5.0, 0.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 0.0, 1.0] and b.grad.tolist() == [0.5, 1.0, 0.0]


@pytest.mark.parametrize("name", sorted(np_backend.GRAD_FORMULAS))
def test_numpy_formula_keeps_dtype_and_halves_compute_in_float32(name):
    import ml_dtypes
    rng = np.random.default_rng(2)
    n_saved = len(inspect.signature(np_backend.GRAD_FORMULAS[name]).parameters) - 1
    for dt in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64):
        g = rng.uniform(0.5, 2.0, 9).astype(dt)
        saved = [rng.uniform(0.5, 2.0, 9).astype(dt) for _ in range(n_saved)]
        got = np_backend.grad_formula(name, g, *saved)
        assert got.dtype == np.dtype(dt) and got.shape == (9,)
        ref = np_backend.GRAD_FORMULAS[name](g.astype(np.float64),
                                             *[s.astype(np.float64) for s in saved])
        np.testing.assert_allclose(got.astype(np.float64), ref,
                                   rtol=1e-2 if np.dtype(dt).itemsize == 2 else 1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", [
    ("logsumexp", {"dim": 1}), ("logsumexp", {"dim": (0, 1), "keepdim": True}),
    ("var", {}), ("var", {"dim": 0, "correction": 0}), ("std", {"dim": 1, "keepdim": True}),
    ("std", {}), ("prod", {"dim": 1}), ("prod", {}),
])
def test_reduction_fused_rule_matches_composite(name, kwargs, dtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, (4, 9))
    x[1, 2] = np.inf if name == "logsumexp" else x[1, 2]
    f = lambda t: getattr(tgrad, name)(t, **kwargs)  # noqa: E731
    g = rng.standard_normal(np.sum(x, axis=kwargs.get("dim"),
                                   keepdims=kwargs.get("keepdim", False)).shape)
    _compare(f, [x], g, getattr(tgrad, dtype), RTOL[dtype])


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 0.0, 2.5])
def test_prod_of_one_factor_passes_the_gradient_through(value):
    # prod of a single element is the element itself: dx = g exactly (PyTorch's 0-d rule),
    # also where x is inf/NaN and g * y / x would be inf/inf = NaN
    for shape, kw in (((), {}), ((), {"dim": 0}), ((3, 1), {"dim": 1}), ((1, 1), {})):
        x = tgrad.tensor(np.full(shape, value), dtype=tgrad.float64, requires_grad=True)
        g = np.arange(1.0, 4.0)[:3 if shape == (3, 1) else 1].reshape(
            np.sum(np.zeros(shape), axis=kw.get("dim")).shape)
        for create_graph in (False, True):
            (gx,) = tgrad.autograd.grad(tgrad.prod(x, **kw), x, tgrad.tensor(g),
                                        create_graph=create_graph)
            np.testing.assert_array_equal(gx.detach().numpy(), g.reshape(shape))


def test_prod_of_one_factor_is_in_the_graph_under_create_graph():
    # y = prod of one element x_i is x_i: dy/dx = 1 (hand), d2y/dx2 = 0. With create_graph
    # the gradient of a >= 1-d x is a node of x's graph (PyTorch's), so a second grad
    # works and gives 0; a 0-d x's gradient is g itself, a constant, as PyTorch's
    for shape, kw in (((1,), {"dim": 0, "keepdim": True}), ((1,), {}), ((2, 1), {"dim": 1})):
        x = tgrad.tensor(np.full(shape, 2.0), dtype=tgrad.float64, requires_grad=True)
        (g,) = tgrad.autograd.grad(tgrad.prod(x, **kw).sum(), x, create_graph=True)
        assert g.requires_grad and g.grad_fn is not None
        np.testing.assert_array_equal(g.detach().numpy(), np.ones(shape))
        (g2,) = tgrad.autograd.grad((g * g).sum() + g.sin().sum(), x)
        np.testing.assert_array_equal(g2.numpy(), np.zeros(shape))
    x0 = tgrad.tensor(2.0, dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(x0.prod(), x0, create_graph=True)
    assert not g.requires_grad and g.item() == 1.0
    x = tgrad.tensor([1.5, 2.0], dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradgradcheck(lambda t: t.reshape(1, 2).prod(0), (x,))


@pytest.mark.parametrize("value", [2.0, np.inf, -np.inf, np.nan])
def test_logcumsumexp_of_one_element_is_in_the_graph_under_create_graph(value):
    # logcumsumexp of one element is the element: dy/dx = e^(x - out) = 1, d2y/dx2 = 0
    # (hand), NaN where x is +-inf or NaN (e^(inf - inf): PyTorch's formula, as for more
    # elements); under create_graph the gradient of a >= 1-d x is a node of x's graph
    # (PyTorch's), so a second grad works; a 0-d x's is g itself, a constant, as PyTorch's
    finite = np.isfinite(value)
    x0 = tgrad.tensor(value, dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(x0.logcumsumexp(0), x0, create_graph=True)
    assert not g.requires_grad and g.item() == 1.0
    for shape in ((1,), (2, 1)):
        x = tgrad.tensor(np.full(shape, value), dtype=tgrad.float64, requires_grad=True)
        y = x.logcumsumexp(-1)
        np.testing.assert_array_equal(y.detach().numpy(), np.full(shape, value))
        (g,) = tgrad.autograd.grad(y.sum(), x, create_graph=True)
        assert g.requires_grad
        np.testing.assert_array_equal(g.detach().numpy(), np.full(shape, 1.0 if finite
                                                                  else np.nan))
        (g2,) = tgrad.autograd.grad((g * g).sum(), x)
        np.testing.assert_array_equal(g2.numpy(), np.full(shape, 0.0 if finite else np.nan))
        (g1,) = tgrad.autograd.grad(x.logcumsumexp(-1).sum(), x)  # (no create_graph)
        np.testing.assert_array_equal(g1.numpy(), np.full(shape, 1.0 if finite else np.nan))


def test_norm_second_derivative_at_zero_is_nan():
    # ||x||_2 at x = 0: the first derivative is PyTorch's subgradient 0, the second does not
    # exist (the Hessian (I - x x^T / |x|^2) / |x| is unbounded near 0): NaN, as PyTorch's;
    # an identity Hessian (tgrad's x / 1 rule) was wrong
    for f in (lambda t: t.norm(dim=0), lambda t: t.norm(), lambda t: tgrad.linalg.vector_norm(t)):
        x = tgrad.zeros(2, dtype=tgrad.float64, requires_grad=True)
        (g,) = tgrad.autograd.grad(f(x), x, create_graph=True)
        np.testing.assert_array_equal(g.detach().numpy(), [0.0, 0.0])
        (g2,) = tgrad.autograd.grad((g * g).sum() * 0.5 + g.sin().sum(), x)
        assert np.isnan(g2.numpy()).all()
    x = tgrad.tensor([[0.0, 0.0], [3.0, -4.0]], dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(x.norm(dim=1).sum(), x, create_graph=True)
    (h,) = tgrad.autograd.grad(g[1].sum(), x)  # row 1: (I - u u^T) / 5 summed, u = x / 5
    u = np.array([3.0, -4.0]) / 5
    np.testing.assert_allclose(h.numpy()[1], ((np.eye(2) - np.outer(u, u)) / 5).sum(0),
                               rtol=1e-12)


def test_var_with_too_few_elements_gives_nan_gradient_like_composite():
    x = tgrad.tensor([[1.0], [2.0]], dtype=tgrad.float64, requires_grad=True)
    fused = tgrad.autograd.grad(x.var(dim=1).sum(), x)[0].numpy()
    composite = tgrad.autograd.grad(x.var(dim=1).sum(), x, create_graph=True)[0].detach().numpy()
    assert np.isnan(fused).all() and np.isnan(composite).all()


POW_CASES = {
    "tensor ** tensor": lambda a, b: a ** b,
    "tensor ** 2": lambda a, b: a ** 2.0,
    "tensor ** 0.5": lambda a, b: a ** 0.5,
    "tensor ** int 2": lambda a, b: a ** 2,
    "tensor ** 3": lambda a, b: a ** 3,
    "tensor ** 1.5": lambda a, b: a ** 1.5,
    "tensor ** -1": lambda a, b: a ** -1,
    "tensor ** 1": lambda a, b: a ** 1,
    "tensor ** 0": lambda a, b: a ** 0,
    "2 ** tensor": lambda a, b: 2.0 ** b,
    "0 ** tensor": lambda a, b: 0.0 ** b,
    "-2 ** tensor": lambda a, b: (-2.0) ** b,
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", list(POW_CASES))
def test_pow_fused_rules_match_composite(case, dtype):
    a = np.array([[0.0], [0.5], [1.0], [2.0], [-1.5], [3.0]])
    b = np.array([[0.0, 1.0, 2.0, -1.0, 0.5, 3.0]])
    _compare(POW_CASES[case], [a, b], None, getattr(tgrad, dtype), RTOL[dtype])


def _random_bits(dtype, n, seed):
    """n random bit patterns of ``dtype`` (NaNs, infinities, subnormals among them) and the
    special values, shuffled."""
    it = np.uint32 if dtype == np.float32 else np.uint64
    rng = np.random.default_rng(seed)
    x = rng.integers(0, np.iinfo(it).max, n, dtype=it, endpoint=True).view(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    return rng.permutation(np.concatenate([x, np.array(SPECIAL + [tiny, -tiny], dtype)]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("e", [2, 2.0, -1, -1.0, 0.5, 1, 1.0, 0, 0.0])
def test_pow_vectorized_exponents_are_numpys_power_bit_for_bit(dtype, e):
    """pow's vectorized forms of the exponents 2, -1, 0.5, 1, 0 (a * a, 1 / a, sqrt(a), a's
    copy, ones): NumPy's power bits (NaN payloads too), forward and backward (b a^(b-1) g,
    computed with np.power), contiguous, strided, 0-d and empty."""
    x = _random_bits(dtype, 19988, 3).reshape(100, -1)
    g = np.random.default_rng(4).standard_normal(x.shape).astype(dtype)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    with np.errstate(all="ignore"):
        for a, ga in ((x, g), (x[::3, 1::2], g[::3, 1::2]), (x[5, 7], g[5, 7]), (x[:0], g[:0])):
            t = tgrad.tensor(a, requires_grad=True)
            y = tgrad.pow(t, e)
            y.backward(tgrad.tensor(ga))
            want = np.asarray(np.power(a, dtype(e)))
            if dtype == np.float32 and type(e) is float and e in (1.0, 0.0):  # pow's float32
                # kernel for float exponents other than 2, -1, 0.5...: float64, rounded once
                want = np.asarray(np.power(a.astype(np.float64), e).astype(np.float32))
            want_g = ga * (np.power(a, dtype(e - 1)) * dtype(e)) if e != 0 else ga * dtype(0)
            assert y.dtype.np == dtype and y.shape == a.shape
            np.testing.assert_array_equal(y.detach().numpy().view(bits), want.view(bits))
            np.testing.assert_array_equal(t.grad.numpy(), want_g)
    assert not np.shares_memory(tgrad.pow(tgrad.tensor(x), e).numpy(), x)


def test_pow_vectorized_exponents_keep_gradcheck_and_gradgradcheck():
    x = tgrad.tensor([[0.3, 1.7, 2.5], [0.9, 1.1, 3.0]], dtype=tgrad.float64,
                     requires_grad=True)
    for e in (2, -1, 0.5, 1, 0, 3):
        assert tgrad.autograd.gradcheck(lambda t, e=e: t ** e, (x,))
        assert tgrad.autograd.gradgradcheck(lambda t, e=e: t ** e, (x,))


CLAMP_CASES = {"min": dict(min=-0.5), "max": dict(max=0.5), "both": dict(min=-0.5, max=0.5),
               "min > max": dict(min=0.5, max=-0.5), "inf bounds": dict(min=-np.inf, max=np.inf)}


@pytest.mark.parametrize("case", list(CLAMP_CASES))
def test_clamp_fused_rule_matches_composite_and_pytorch_mask(case):
    kw = CLAMP_CASES[case]
    x = np.array([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, np.nan, np.inf, -np.inf])
    g = np.arange(1.0, 10.0)
    _compare(lambda t: t.clamp(**kw), [x], g, tgrad.float64, 0.0)
    xt = tgrad.tensor(x, requires_grad=True)
    xt.clamp(**kw).backward(tgrad.tensor(g))
    # PyTorch's clamp backward mask (2.14: strict, 0 at a bound; an absent bound binds nowhere)
    mask = (x > kw["min"] if "min" in kw else True) & (x < kw["max"] if "max" in kw else True)
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(mask, g, 0.0))


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_extreme_fused_rule_shares_ties_like_composite(name):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [np.nan, 1.0, 5.0, 1.0]])
    g = np.array([1.0, 2.0, 3.0])
    _compare(lambda t: getattr(tgrad, name)(t, dim=1), [x], g, tgrad.float64, 0.0)
    xt = tgrad.tensor(x[:2], requires_grad=True)
    getattr(tgrad, name)(xt, dim=1).backward(tgrad.tensor(g[:2]))
    ref = {"amax": [[0, 0.5, 0.5, 0], [0.25] * 4], "amin": [[0, 0, 0, 1], [0.25] * 4]}[name]
    np.testing.assert_array_equal(xt.grad.numpy(), np.array(ref) * g[:2, None])


def test_erfinv_second_derivative_at_one_is_infinite():
    # erfinv'' = 2 y y'^2 (y = erfinv x): +-inf at +-1 (PyTorch's); the clamp inside
    # exp(y^2) passes its derivative on (exp is already inf there), not 0 * inf = NaN
    x = tgrad.tensor([1.0, -1.0, 0.5], dtype=tgrad.float64, requires_grad=True)
    g1 = tgrad.autograd.grad(tgrad.erfinv(x).sum(), x, create_graph=True)[0]
    g2 = tgrad.autograd.grad(g1.sum(), x)[0].numpy()
    y = 0.4769362762044699  # erfinv(0.5)
    yp = math.sqrt(math.pi) / 2 * math.exp(y * y)
    np.testing.assert_array_equal(g2[:2], [np.inf, -np.inf])
    np.testing.assert_allclose(g2[2], 2 * y * yp * yp, rtol=1e-13)
