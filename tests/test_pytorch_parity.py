"""Behaviour that a differential run against PyTorch 2.13 (CPU) found different, now as
PyTorch documents it. References are NumPy float64 or finite differences (gradcheck); the
comments give PyTorch's rule (tools/autograd/derivatives.yaml and its helpers)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

F = tgrad.nn.functional
NAN = float("nan")
RNG = np.random.default_rng(11)


def _leaf(values) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def _grad_of(fn, values) -> np.ndarray:
    x = _leaf(values)
    fn(x).sum().backward()
    return x.grad.numpy()


# ------------------------------------------------------------------ reductions
def test_std_gradient_is_zero_where_std_is_zero():
    # std_backward: grad / (2 std), masked to 0 where std == 0 (not 0/0)
    assert np.array_equal(_grad_of(lambda t: t.std(), np.ones(4)), np.zeros(4))
    rows = np.array([[1.0, 1.0, 1.0], [2.0, 3.0, 7.0]])
    g = _grad_of(lambda t: t.std(1), rows)
    r = rows[1]
    ref = (r - r.mean()) / (2 * r.std(ddof=1)) * 2 / (len(r) - 1)
    assert np.array_equal(g[0], np.zeros(3)) and np.allclose(g[1], ref, rtol=1e-14, atol=0)
    assert np.array_equal(_grad_of(lambda t: t.std(correction=0), [5.0]), [0.0])
    assert np.isnan(_grad_of(lambda t: t.std(), [5.0])).all()  # N - 1 = 0: std is NaN
    x = _leaf(RNG.standard_normal((3, 4)))
    assert gradcheck(lambda t: t.std(1), (x,)) and gradgradcheck(lambda t: t.std(1), (x,))


def test_var_std_of_a_constant_slice_is_exactly_zero():
    # a row of one repeated value has variance 0 (PyTorch's Welford var gives exactly 0);
    # a plain two-pass var leaves ~1e-32 (mean(0.7, 0.7, 0.7) != 0.7 in float64), and std's
    # gradient g / std then blows up to ~1e15 instead of PyTorch's 0 at std == 0
    rows = np.array([[0.7] * 3, [3.3] * 3, [2.0, 3.0, 7.0]])
    x = _leaf(np.concatenate([rows, np.full((1, 3), 0.1)]))
    r = rows[2]
    v = x.var(1)
    assert np.array_equal(v.detach().numpy()[[0, 1, 3]], np.zeros(3))
    assert np.allclose(v.detach().numpy()[2], ((r - r.mean()) ** 2).sum() / 2, rtol=1e-15)
    assert np.array_equal(x.std(1, correction=0).detach().numpy()[[0, 1, 3]], np.zeros(3))
    cx = tgrad.tensor(np.full(7, 0.7 - 0.1j))  # complex: sum |x - mean|^2
    assert cx.var().item() == 0.0
    g = _grad_of(lambda t: t.std(1), np.concatenate([rows, np.full((1, 3), 0.1)]))
    assert np.array_equal(g[[0, 1, 3]], np.zeros((3, 3)))
    assert np.allclose(g[2], (r - r.mean()) / (2 * r.std(ddof=1)), rtol=1e-14, atol=0)


def test_std_derivatives_of_a_constant_slice_are_zero_not_nan():
    # std's backward is (g / std) masked to 0 where std == 0 (PyTorch's masked_fill_); its
    # derivative in g there is 0 too (PyTorch's, through masked_fill), not 0 * (1 / 0) = NaN:
    # the forward-AD tangent (the vjp of the vjp) and create_graph's second order
    rows = np.array([[0.5, 0.5, 0.5], [2.0, 3.0, 7.0]])
    with tgrad.autograd.forward_ad.dual_level():
        fw = tgrad.autograd.forward_ad
        t = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 0.5]])  # a constant row stays constant
        y = fw.make_dual(tgrad.tensor(rows), tgrad.tensor(t)).std(1)
        r, tr = rows[1], t[1]
        want = (r - r.mean()) @ tr / (2 * r.std(ddof=1))  # d std = (x - m) . t / ((N-1) s)
        assert np.allclose(fw.unpack_dual(y).tangent.numpy(), [0.0, want], rtol=1e-14, atol=0)
    x = _leaf(rows)
    (g,) = tgrad.autograd.grad(x.std(1).sum(), x, create_graph=True)
    (gg,) = tgrad.autograd.grad((g * g).sum(), x)
    assert np.array_equal(g.detach().numpy()[0], np.zeros(3))
    assert np.array_equal(gg.numpy()[0], np.zeros(3)) and np.isfinite(gg.numpy()).all()


@pytest.mark.parametrize("log", [False, True])
def test_softmax_of_a_permuted_input_is_contiguous(log):
    # PyTorch's CPU softmax / log_softmax write a contiguous result whatever the input's
    # layout, so .view(-1) of it works (it raised here: the result kept x.T's strides)
    a = RNG.standard_normal((2, 3, 4))
    x = tgrad.tensor(a).permute(2, 0, 1)
    fn = F.log_softmax if log else F.softmax
    for d in range(3):
        y = fn(x, d)
        e = np.exp(a.transpose(2, 0, 1) - a.transpose(2, 0, 1).max(d, keepdims=True))
        want = e / e.sum(d, keepdims=True)
        want = np.log(want) if log else want
        assert y.is_contiguous() and y.stride() == (6, 3, 1)
        assert np.allclose(y.view(-1).numpy(), want.reshape(-1), rtol=1e-14, atol=1e-15)




_P = RNG.standard_normal((2, 3, 4))  # x = _P.transpose(2, 0, 1): shape (4, 2, 3), permuted
_LAYOUT_CASES = {  # op on the permuted tensor -> its NumPy float64 value
    "sum": (lambda x: x.sum(1), lambda a: a.sum(1)),
    "amax": (lambda x: x.amax(2), lambda a: a.max(2)),
    "max_indices": (lambda x: x.max(1).indices, lambda a: a.argmax(1)),
    "var": (lambda x: x.var(1), lambda a: a.var(1, ddof=1)),
    "logsumexp": (lambda x: x.logsumexp(1), lambda a: np.log(np.exp(a).sum(1))),
    "any": (lambda x: (x > 0).any(1), lambda a: (a > 0).any(1)),
    "cat": (lambda x: tgrad.cat([x, x], 0), lambda a: np.concatenate([a, a], 0)),
    "stack": (lambda x: tgrad.stack([x, x], 1), lambda a: np.stack([a, a], 1)),
    "roll": (lambda x: x.roll(1, 1), lambda a: np.roll(a, 1, 1)),
    "layer_norm": (lambda x: F.layer_norm(x, (3,)),
                   lambda a: (a - a.mean(-1, keepdims=True))
                   / np.sqrt(a.var(-1, keepdims=True) + 1e-5)),
    "masked_fill": (lambda x: x.masked_fill(x > 0, 1.0), lambda a: np.where(a > 0, 1.0, a)),
    "tril": (lambda x: x.tril(), lambda a: np.tril(a)),
    "topk_indices": (lambda x: x.topk(2, 1).indices, lambda a: np.argsort(-a, 1)[:, :2]),
}


@pytest.mark.parametrize("name", sorted(_LAYOUT_CASES))
def test_results_of_permuted_inputs_are_contiguous(name):
    # PyTorch's reductions, cat/stack, roll, layer_norm, masked_fill, tril and topk write a
    # C-contiguous result for a permuted input, so .view(-1) works (here it raised: NumPy
    # kept the input's stride order, or the result was a slice of a bigger buffer)
    fn, ref = _LAYOUT_CASES[name]
    a = _P.transpose(2, 0, 1)
    y = fn(tgrad.tensor(_P).permute(2, 0, 1))
    assert y.is_contiguous()
    np.testing.assert_allclose(y.view(-1).numpy(), np.asarray(ref(a)).reshape(-1),
                               rtol=1e-12, atol=1e-12)
@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "logsumexp", "norm"])
def test_empty_dim_reduces_every_dim(op):
    a = RNG.standard_normal((2, 3))
    x = tgrad.tensor(a)
    ref = {"sum": a.sum(), "mean": a.mean(), "var": a.var(ddof=1), "std": a.std(ddof=1),
           "logsumexp": np.log(np.exp(a).sum()), "norm": np.sqrt((a * a).sum())}[op]
    for dim in ((), []):
        kw = {"keepdim": True} if op == "logsumexp" else {}
        out = getattr(x, op)(dim=dim, **kw)
        assert out.shape == ((1, 1) if kw else ())
        assert np.allclose(out.numpy(), ref, rtol=1e-14, atol=0)


def test_all_any_with_empty_dim_reduce_nothing():
    m = np.array([[True, False, True]])
    for op in ("all", "any"):
        out = getattr(tgrad.tensor(m), op)(dim=())
        assert out.shape == (1, 3) and np.array_equal(out.numpy(), m)


def test_argmax_keepdim_without_dim_keeps_every_dim():
    a = np.array([[1.0, 5.0], [7.0, 2.0]])
    x = tgrad.tensor(a)
    assert x.argmax(keepdim=True).shape == (1, 1) and x.argmax(keepdim=True).item() == 2
    assert tgrad.argmin(x, keepdim=True).tolist() == [[0]]
    assert x.argmax().shape == () and x.argmax(1, keepdim=True).shape == (2, 1)
    assert tgrad.tensor(3.0).argmax(keepdim=True).shape == ()


def test_sum_honours_an_integer_dtype():
    x = tgrad.tensor(np.array([2**31 - 1, 1], dtype=np.int32))
    out = x.sum(dtype=tgrad.int32)
    assert out.dtype is tgrad.int32 and out.item() == -(2**31)  # wraps, as int32 does
    assert x.sum().dtype is tgrad.int64 and x.sum().item() == 2**31


def test_max_min_of_everything_send_the_gradient_to_the_nans():
    # evenly_distribute_backward: mask = isnan(x) if the result is NaN, else x == result
    assert np.array_equal(_grad_of(lambda t: t.max(), [1.0, NAN, 3.0]), [0.0, 1.0, 0.0])
    assert np.array_equal(_grad_of(lambda t: t.min(), [1.0, NAN, NAN]), [0.0, 0.5, 0.5])
    assert np.array_equal(_grad_of(lambda t: t.max(), [3.0, 1.0, 3.0]), [0.5, 0.0, 0.5])
    x = _leaf([1.0, NAN])
    y = x.max()
    assert y.grad_fn.name() == "MaxBackward1" and x.min().grad_fn.name() == "MinBackward1"
    x = _leaf(RNG.standard_normal(5))
    assert gradcheck(lambda t: t.max(), (x,)) and gradgradcheck(lambda t: t.min() * t, (x,))
    with pytest.raises(RuntimeError, match=r"^max\(\): Expected reduction dim to be specified"):
        tgrad.tensor([]).max()


# ------------------------------------------------------------------ elementwise
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_pass_the_gradient_to_both_at_nan(op):
    # maximum: a gets where(a == b, g/2, g) masked to 0 where a < b (b: where a > b); a NaN
    # makes every comparison false, so both get g
    a, b = _leaf([NAN, 1.0, 2.0, 3.0, NAN]), _leaf([1.0, NAN, 2.0, 1.0, NAN])
    getattr(tgrad, op)(a, b).sum().backward()
    win = [1.0, 0.0] if op == "maximum" else [0.0, 1.0]  # at 3 vs 1
    assert np.array_equal(a.grad.numpy(), [1.0, 1.0, 0.5, win[0], 1.0])
    assert np.array_equal(b.grad.numpy(), [1.0, 1.0, 0.5, win[1], 1.0])
    ga, = tgrad.autograd.grad(getattr(tgrad, op)(a, b).sum(), a, create_graph=True)
    assert np.array_equal(ga.detach().numpy(), a.grad.numpy())  # the composite rule agrees


def test_clamp_with_tensor_bounds_splits_ties_evenly():
    # PyTorch 2.14's minimum-norm subgradients: where x equals a bound (lo < hi) x and that
    # bound share g; lo == hi == x gives x all of it; lo > hi gives hi all of it; a NaN x is
    # its own output and keeps g. (Values from torch 2.14 for these inputs.)
    x = _leaf([0.0, 1.0, NAN, -2.0, 3.0, 0.5, 0.65, 0.3])
    lo = _leaf([0.0, 0.0, 0.0, 0.0, 0.0, 0.7, 0.65, 0.3])
    hi = _leaf([1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 0.65, 0.9])  # [5]: lo > hi, output is hi
    y = tgrad.clamp(x, lo, hi)
    assert y.grad_fn.name() == "ClampBackward0"
    assert np.array_equal(y.detach().numpy(), [0.0, 1.0, NAN, 0.0, 1.0, 0.6, 0.65, 0.3],
                          equal_nan=True)
    y.sum().backward()
    assert x.grad.tolist() == [0.5, 0.5, 1.0, 0.0, 0.0, 0.0, 1.0, 0.5]
    assert lo.grad.tolist() == [0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5]
    assert hi.grad.tolist() == [0.0, 0.5, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    x, bound = _leaf([1.0, 0.0, 2.0]), _leaf([1.0])
    tgrad.clamp(x, min=bound).sum().backward()  # one tensor bound: ties split as well
    assert x.grad.tolist() == [0.5, 0.0, 1.0] and bound.grad.tolist() == [1.5]
    x, bound = _leaf([1.0, 0.0, 2.0]), _leaf([1.0])
    tgrad.clamp(x, max=bound).sum().backward()
    assert x.grad.tolist() == [0.5, 1.0, 0.0] and bound.grad.tolist() == [1.5]
    x = _leaf([0.0, 2.0])
    bound = _leaf([1.0])
    tgrad.clamp(x, min=bound).sum().backward()  # one bound, broadcast
    assert x.grad.tolist() == [0.0, 1.0] and bound.grad.tolist() == [1.0]
    xs = _leaf(RNG.uniform(-2, 2, 7))
    los, his = _leaf(RNG.uniform(-3, -0.5, 7) * [1, 1, 1, 0, 0, 0, 1]), _leaf(np.full(7, 0.9))
    f = lambda t, u, v: tgrad.clamp(t, u, v) * t  # noqa: E731
    assert gradcheck(f, (xs, los, his)) and gradgradcheck(f, (xs, los, his))


def test_relu_passes_the_gradient_through_nan():
    # threshold_backward: 0 where relu(x) <= 0, else g (NaN <= 0 is false)
    assert np.array_equal(_grad_of(F.relu, [NAN, 1.0, -1.0, 0.0]), [1.0, 1.0, 0.0, 0.0])
    assert np.array_equal(_grad_of(lambda t: t.relu(), [NAN]), [1.0])


# ------------------------------------------------------------------ nn.functional
def test_silu_inplace_on_a_non_leaf_matches_out_of_place():
    a = RNG.standard_normal(6)
    x1, x2 = _leaf(a), _leaf(a)
    b = x1 * 1.0
    r = F.silu(b, inplace=True)
    assert r is b and r.grad_fn.name() == "SiluBackward0"
    (r * r).sum().backward()
    (F.silu(x2 * 1.0) ** 2).sum().backward()
    assert np.allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-15, atol=0)
    with pytest.raises(RuntimeError, match="^silu_: a leaf Variable that requires grad"):
        F.silu(_leaf([1.0]), inplace=True)


def test_cross_entropy_differentiates_weight_with_probability_targets():
    x = _leaf(RNG.standard_normal((4, 3)))
    q = tgrad.tensor(RNG.dirichlet(np.ones(3), 4))
    w = _leaf(RNG.uniform(0.5, 2.0, 3))
    for red in ("mean", "sum", "none"):
        f = lambda a, b, red=red: F.cross_entropy(a, q, weight=b, reduction=red)  # noqa: E731
        assert gradcheck(f, (x, w)) and gradgradcheck(f, (x, w))
    loss = F.cross_entropy(x, q, weight=w, label_smoothing=0.1)
    (gw,) = tgrad.autograd.grad(loss, w)
    logp = x.detach().numpy() - np.log(np.exp(x.detach().numpy()).sum(1, keepdims=True))
    qs = q.numpy() * 0.9 + 0.1 / 3
    assert np.allclose(gw.numpy(), -(qs * logp).sum(0) / 4, rtol=1e-13, atol=0)


def test_cross_entropy_weight_and_ignore_index_errors():
    x = _leaf(RNG.standard_normal((2, 3)))
    q = tgrad.tensor(np.full((2, 3), 1 / 3))
    with pytest.raises(RuntimeError, match="^cross_entropy: ignore_index is not supported for "
                                           "floating point target"):
        F.cross_entropy(x, q, ignore_index=1)
    w = _leaf([1.0, 2.0, 3.0])
    t = tgrad.tensor([0, 2])
    with pytest.raises(RuntimeError, match="^cross_entropy: the derivative for 'weight' is not "
                                           "implemented with class-index targets"):
        F.cross_entropy(x, t, weight=w)
    with tgrad.no_grad():
        assert np.isfinite(F.cross_entropy(x, t, weight=w).item())
    F.cross_entropy(x, t, weight=w.detach()).backward()  # the way round it
    assert x.grad is not None


def test_cross_entropy_all_ignored_with_label_smoothing_has_zero_gradient():
    # the mean over no rows is NaN (as PyTorch) but the ignored rows get no gradient
    x = _leaf(np.zeros((2, 3)))
    loss = F.cross_entropy(x, tgrad.tensor([-100, -100]), label_smoothing=0.2)
    assert np.isnan(loss.item())
    loss.backward()
    assert np.array_equal(x.grad.numpy(), np.zeros((2, 3)))


# ------------------------------------------------------------------ tensors
def test_data_has_its_own_version_counter():
    # .data shares memory but not the version counter (unlike detach())
    x = _leaf([1.0, 2.0])
    z = (x * 1.0).exp()
    d = z.data
    d.add_(1.0)
    assert z._version == 0 and d._version == 1
    z.sum().backward()  # no "modified by an inplace operation" error
    assert np.allclose(x.grad.numpy(), np.exp([1.0, 2.0]) + 1, rtol=1e-15, atol=0)
    y = tgrad.tensor([1.0, 2.0, 3.0])
    y.data[1:].mul_(10.0)
    assert y.tolist() == [1.0, 20.0, 30.0] and y._version == 0
    z2 = (x * 1.0).exp()
    z2.detach().add_(1.0)  # detach() shares the counter, so this one is caught
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z2.sum().backward()


def test_div_rounding_modes():
    a = np.concatenate([RNG.uniform(-20, 20, 40), [1.0, -1.0, 0.0, 7.5, -7.5, NAN]])
    b = np.concatenate([RNG.uniform(-5, 5, 40), [0.1, 0.0, 0.0, 2.0, 2.0, 1.0]])
    ta, tb = tgrad.tensor(a), tgrad.tensor(b)
    with np.errstate(all="ignore"):
        trunc, floor = np.trunc(a / b), np.floor_divide(a, b)
    assert np.array_equal(tgrad.div(ta, tb, rounding_mode="trunc").numpy(), trunc,
                          equal_nan=True)
    assert np.array_equal(ta.div(tb, rounding_mode="floor").numpy(), floor, equal_nan=True)
    assert tgrad.div(tgrad.tensor(1.0), 0.1, rounding_mode="trunc").item() == 10.0  # 1/0.1
    assert tgrad.div(tgrad.tensor(1.0), 0.1, rounding_mode="floor").item() == 9.0  # 1 // 0.1
    i, j = RNG.integers(-50, 50, 60), RNG.integers(1, 9, 60) * RNG.choice([-1, 1], 60)
    ti, tj = tgrad.tensor(i), tgrad.tensor(j)
    want = np.sign(i) * np.sign(j) * (np.abs(i) // np.abs(j))  # C division
    got = tgrad.div(ti, tj, rounding_mode="trunc")
    assert got.dtype is tgrad.int64 and np.array_equal(got.numpy(), want)
    assert np.array_equal(tgrad.div(ti, tj, rounding_mode="floor").numpy(), i // j)
    assert np.allclose(tgrad.divide(ti, tj).numpy(), i / j, rtol=1e-6)  # true division
    x = _leaf([1.0, -2.5])
    tgrad.div(x, 3.0, rounding_mode="trunc").sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]  # piecewise constant
    with pytest.raises(ValueError, match="^div expected rounding_mode to be one of None"):
        tgrad.div(ta, tb, rounding_mode="round")
    with pytest.raises(RuntimeError, match="but found 'round'"):  # PyTorch's type
        ta.div_(tb, rounding_mode="round")
    with pytest.raises(ZeroDivisionError, match="^floor_divide: integer division by zero"):
        tgrad.div(ti, tgrad.tensor(0), rounding_mode="trunc")


def test_round_decimals_matches_numpy():
    a = np.concatenate([RNG.uniform(-1e4, 1e4, 50), [1.2345, 2.5, 0.125, -1250.0, 1350.0]])
    x = tgrad.tensor(a)
    for d in (-3, -2, -1, 1, 2, 3):
        want = np.round(a, d)  # NumPy scales, rounds half to even and scales back too
        assert np.array_equal(tgrad.round(x, decimals=d).numpy(), want), d
        assert np.array_equal(x.round(decimals=d).numpy(), want), d
    assert np.array_equal(tgrad.round(tgrad.tensor([0.5, 1.5, 2.5])).numpy(), [0.0, 2.0, 2.0])
    x = _leaf([1.26, -3.14159])
    tgrad.round(x, decimals=1).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    with pytest.raises(NotImplementedError,
                       match="^round: decimals is only supported for floating"):
        tgrad.round(tgrad.tensor([15, 25]), decimals=-1)


# ------------------------------------------------------------------ autograd API
def test_node_hook_results_are_checked():
    x = _leaf([1.0, 2.0])
    y = x * 3.0  # MulBackward0: one gradient per argument, None for the number
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0], gi[0]))
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has returned an incorrect number "
                                           r"of values \(got 3, but expected 2\)"):
        y.sum().backward()
    y = x * 3.0
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None"):
        y.sum().backward()
    y = x * 3.0
    y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match=r"incorrect number of values \(got 2, but expected "
                                           r"1\)"):
        y.sum().backward()
    x.grad = None
    w = _leaf([5.0, 7.0])
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (None, gi[1] * 2.0))  # dropping one is allowed
    y.sum().backward()
    assert x.grad is None and w.grad.tolist() == [2.0, 4.0]


def test_grad_materialize_grads_needs_allow_unused():
    x, unused = _leaf([1.0]), _leaf([2.0])
    with pytest.raises(ValueError, match="^Expected allow_unused to be True or not passed when "
                                         "materialize_grads=True"):
        tgrad.autograd.grad((x * 2).sum(), (x, unused), allow_unused=False,
                            materialize_grads=True)
    gx, gu = tgrad.autograd.grad((x * 2).sum(), (x, unused), materialize_grads=True)
    assert gx.tolist() == [2.0] and gu.tolist() == [0.0]


def test_retains_grad_and_post_accumulate_grad_hooks():
    x = _leaf([1.0, 2.0])
    y = x * 2.0
    assert not x.retains_grad and not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]  # after each accumulation, with the tensor
    tgrad.autograd.grad((x * 2.0).sum(), x)  # grad() accumulates nothing: no call
    handle.remove()
    (x * 3.0).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered "
                                           "on non-leaf tensors"):
        y.register_post_accumulate_grad_hook(lambda t: None)
    x.register_post_accumulate_grad_hook(lambda t: 1)
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks should return None"):
        (x * 2.0).sum().backward()


class _CubeSetupContext(tgrad.autograd.Function):
    """PyTorch's second style: forward without ctx, then setup_context."""

    @staticmethod
    def forward(x, k):
        return x ** 3 * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x, output)
        ctx.k = k

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * 3.0 * x ** 2 * ctx.k, None


def test_function_with_setup_context():
    a = RNG.standard_normal(5)
    x = _leaf(a)
    y = _CubeSetupContext.apply(x, 2.0)
    assert np.allclose(y.detach().numpy(), 2 * a ** 3, rtol=1e-15, atol=0)
    assert y.grad_fn.name() == "_CubeSetupContextBackward"
    y.sum().backward()
    assert np.allclose(x.grad.numpy(), 6 * a ** 2, rtol=1e-15, atol=0)
    f = lambda t: _CubeSetupContext.apply(t, -1.5)  # noqa: E731
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    with tgrad.no_grad():
        assert np.allclose(f(x).numpy(), -1.5 * a ** 3, rtol=1e-15, atol=0)


class _SquareOnce(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @tgrad.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x


def test_once_differentiable_runs_once_and_refuses_twice():
    x = _leaf([1.0, 2.0])
    _SquareOnce.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert gradcheck(_SquareOnce.apply, (x,))
    y = _SquareOnce.apply(x)
    (g,) = tgrad.autograd.grad((y * y).sum(), x, create_graph=True)  # the incoming grad has
    assert g.tolist() == [4.0, 32.0] and g.grad_fn.name() == "Error"  # a graph: marked
    with pytest.raises(RuntimeError, match="^trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.sum().backward()


@pytest.mark.parametrize("p", [0.5, 1.5, 3.0, -1.0])
def test_norm_gradient_at_zero_elements(p):
    # norm_backward: sign(x) |x|^(p-1) / y^(p-1), 0 at x == 0 (p < 1: PyTorch's subgradient;
    # p > 1: the limit) and 0 where y == 0; elsewhere the analytic derivative
    a = np.array([0.0, 1.0, -2.0, 0.5])
    g = _grad_of(lambda t: t.norm(p=p), a)
    nz = a != 0
    y = (np.abs(a[nz]) ** p).sum() ** (1 / p) if p > 0 else 0.0
    want = np.zeros(4)
    if p > 0:
        want[nz] = np.sign(a[nz]) * np.abs(a[nz]) ** (p - 1) / y ** (p - 1)
    assert np.allclose(g, want, rtol=1e-13, atol=0), (g, want)
    x = _leaf([0.3, -1.0, 2.0])
    assert gradcheck(lambda t: t.norm(p=p), (x,)) and gradgradcheck(lambda t: t.norm(p=p), (x,))


MASKED_CASES = {  # a gradient of inf (d sqrt at 0) meets each op's closed mask
    "relu": lambda x: F.relu(x),
    "relu_": lambda x: F.relu(x * 1.0, inplace=True),
    "clamp_min": lambda x: x.clamp(min=0.0),
    "clamp_": lambda x: (x * 1.0).clamp_(min=0.0),
    "clamp_tensor": lambda x: tgrad.clamp(x, tgrad.zeros(2, dtype=tgrad.float64)),
    "maximum": lambda x: tgrad.maximum(x, tgrad.zeros(2, dtype=tgrad.float64)),
    "setitem": lambda x: _written(x, lambda y: y.__setitem__(0, 0.0)),
    "setitem_mask": lambda x: _written(x, lambda y: y.__setitem__(
        tgrad.tensor([True, False]), 0.0)),
    "zero_view": lambda x: _written(x, lambda y: y[:1].zero_()),
    "fill_view": lambda x: _written(x, lambda y: y[:1].fill_(0.0)),
}


def _written(x, write):
    y = x * 1.0
    write(y)
    return y


@pytest.mark.parametrize("name", sorted(MASKED_CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_nan_or_inf_gradient_does_not_leak_through_a_closed_mask(name, dtype):
    # PyTorch's rules use where/masked_fill/zero_ there, so x[0] (where the op outputs a
    # constant 0, whose sqrt has an infinite derivative) gets exactly 0, not 0 * inf = NaN
    x = tgrad.tensor([-1.0, 4.0], dtype=getattr(tgrad, dtype), requires_grad=True)
    MASKED_CASES[name](x).sqrt().sum().backward()
    assert x.grad.tolist() == [0.0, 0.25], x.grad.tolist()


def test_max_of_everything_keeps_an_inf_gradient_off_the_other_elements():
    # evenly_distribute_backward masks: the non-maximal elements get exactly 0
    x = _leaf([-1.0, 4.0, 2.0])
    (x.max() - 4.0).sqrt().backward()  # d sqrt at 0 is inf
    assert x.grad.tolist() == [0.0, np.inf, 0.0]


def test_max_dim_gradient_goes_only_to_the_index():
    x = _leaf([[-1.0, 4.0], [0.0, -3.0]])
    x.max(1)[0].sqrt().sum().backward()  # row 1's max is 0: an infinite gradient there
    assert x.grad.tolist() == [[0.0, 0.25], [np.inf, 0.0]]


def test_masked_product_primitive():
    from tgrad.backends.numpy import _masked_product
    g = np.array([np.nan, np.inf, -np.inf, 2.0, np.nan, 3.0])
    f = np.array([0.0, 0.0, 0.0, 0.5, 1.0, 1.0])
    with np.errstate(all="ignore"):
        want = np.where(f == 0, 0.0, g * f)
    np.testing.assert_array_equal(_masked_product(g, f), want)  # the unmasked NaN stays
    np.testing.assert_array_equal(_masked_product(g[3:4], f[3:4] != 0), [2.0])
    assert _masked_product(np.float64(np.nan), np.bool_(False)) == 0.0
    assert _masked_product(np.zeros(0), np.zeros(0, bool)).shape == (0,)


SAVED_CASES = {  # (forward on a non-leaf a, then a or y is modified in place before backward)
    "mul_constant": lambda a, c: (a * c, a),
    "div_number": lambda a, c: (a / 2.0, None),
    "div_tensor": lambda a, c: (a / (c * 1.0).requires_grad_(), None),
    "pow_number": lambda a, c: (a ** 2, None),
    "clamp": lambda a, c: (a.clamp(min=0.3), None),
    "matmul_constant": lambda a, c: (a.reshape(2, 2) @ c.reshape(2, 2), a),
    "add_alpha": lambda a, c: (tgrad.add(c, a, alpha=2), a),
}


@pytest.mark.parametrize("name", sorted(SAVED_CASES))
def test_ops_save_only_what_the_needed_gradients_read(name):
    # PyTorch saves, per input needing a gradient, only what its formula reads, so these
    # in-place changes are allowed; the gradient is checked against the same graph built
    # without the in-place change (values of the modified tensor are not read)
    def grad(modify: bool) -> np.ndarray:
        x = _leaf([0.5, -1.0, 2.0, 0.25])
        c = tgrad.tensor([1.5, 2.0, -0.5, 3.0], dtype=tgrad.float64)
        a = x * 1.0
        y, other = SAVED_CASES[name](a, c)
        target = y if other is None else other
        if modify:
            target.add_(1.0)
        (y * 1.0).sum().backward() if other is not None else y.sum().backward()
        return x.grad.numpy()

    np.testing.assert_array_equal(grad(True), grad(False))


def test_a_saved_operand_still_guards_the_gradient():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    a = x * 1.0
    y = a * w  # w's gradient reads a: a is saved
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    v = w * 1.0
    z = x / v  # both gradients read the divisor v: it is saved
    v.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    z = x / w  # the output is not saved (as PyTorch): modifying it is fine
    z.mul_(2.0)
    x.grad = w.grad = None
    z.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), -2 * np.array([1.0, 2.0]) / np.array([9.0, 16.0]),
                               rtol=1e-15)


def test_cat_keeps_legacy_empty_inputs_in_the_graph():
    e = tgrad.zeros(0, dtype=tgrad.float64, requires_grad=True)
    c = _leaf([1.0, 2.0])
    y = tgrad.cat([c, e])
    assert y.requires_grad and y.shape == (2,)
    (y * 2.0).sum().backward()
    assert c.grad.tolist() == [2.0, 2.0] and e.grad.shape == (0,)
    z = tgrad.cat([e, e])
    assert z is not e and z.requires_grad and not z.is_leaf and z.shape == (0,)
    m = tgrad.cat([tgrad.ones(2, 3), tgrad.zeros(0), tgrad.ones(1, 3)])
    assert m.shape == (3, 3)


def test_setitem_drops_leading_size_one_dims_of_the_value():
    x = tgrad.zeros(2, 4)
    x[0] = tgrad.ones(1, 4)
    x[...] = x + tgrad.ones(1, 1, 2, 4)
    assert x.tolist() == [[2.0] * 4, [1.0] * 4]
    x = tgrad.zeros(3, 4)
    x[tgrad.tensor([True, False, True]), 2] = tgrad.tensor([[0.5]])
    assert x[:, 2].tolist() == [0.5, 0.0, 0.5]
    w = _leaf([[1.0, 2.0]])
    y = tgrad.zeros(3, 2, dtype=tgrad.float64)
    y[1] = w * 2.0
    y.sum().backward()
    assert w.grad.tolist() == [[2.0, 2.0]]
    with pytest.raises(RuntimeError):
        tgrad.zeros(2, 4)[0] = tgrad.ones(2, 4)  # a real size mismatch still raises


# ------------------------------------------------------------------ half precision
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_matmul_gradient_over_broadcast_batch_is_rounded_once(dtype):
    # the weight gradient of a batched (8, 4, 6) @ (6, 5) sums 8 products: in float32, then
    # one rounding (PyTorch folds the batch into one matmul), not one rounding per batch
    rng = np.random.default_rng(3)
    a64, b64, g64 = (rng.standard_normal(s) for s in ((8, 4, 6), (6, 5), (8, 4, 5)))
    dt = getattr(tgrad, dtype)
    a = tgrad.tensor(a64).to(dt).requires_grad_()
    b = tgrad.tensor(b64).to(dt).requires_grad_()
    g = tgrad.tensor(g64).to(dt)
    (a @ b).backward(g)
    ah, gh, bh = (t.detach().double().numpy() for t in (a, g, b))
    ref_b = np.einsum("bmk,bmn->kn", ah, gh)  # float64 maths on the rounded inputs
    once_b = tgrad.tensor(ref_b).to(dt).double().numpy()  # one rounding of the exact sum
    assert b.grad.dtype is dt and np.array_equal(b.grad.double().numpy(), once_b)
    assert a.grad.dtype is dt  # no reduction for a: its own rounding
    np.testing.assert_allclose(a.grad.double().numpy(), np.einsum("bmn,kn->bmk", gh, bh),
                               rtol=1e-2, atol=1e-2)
    x = tgrad.tensor([[[3.0]], [[-3.0]]], dtype=tgrad.float16, requires_grad=True)
    w = tgrad.tensor([[1.0]], dtype=tgrad.float16, requires_grad=True)
    (x @ w).backward(tgrad.tensor([[[1.0009765625]], [[1.0]]], dtype=tgrad.float16))
    assert w.grad.item() == 0.0029296875  # 3 * 0.0009765625 exactly (per-batch gave 0.0039)


def test_add_alpha_scales_in_the_compute_dtype():
    # other * alpha is not rounded (or overflowed) in other's half dtype first
    x = tgrad.zeros(2, dtype=tgrad.float32)
    y = tgrad.tensor([1.0009765625, 30000.0], dtype=tgrad.float16)
    assert tgrad.add(x, y, alpha=3).tolist() == [3.0029296875, 90000.0]
    a = tgrad.tensor([1.59375], dtype=tgrad.float16)
    b = tgrad.tensor([0.53173828125], dtype=tgrad.float16)
    out = tgrad.sub(a, b, alpha=3)  # 1.59375 - 1.59521484375, exact in float16
    assert out.dtype is tgrad.float16 and out.item() == -0.00146484375
    p = tgrad.tensor([1.0, 2.0], dtype=tgrad.float16, requires_grad=True)
    q = tgrad.tensor([3.0, 4.0], dtype=tgrad.float32, requires_grad=True)
    tgrad.add(p, q, alpha=2).sum().backward()
    assert p.grad.dtype is tgrad.float16 and p.grad.tolist() == [1.0, 1.0]
    assert q.grad.dtype is tgrad.float32 and q.grad.tolist() == [2.0, 2.0]


def test_clamp_backward_uses_the_bounds_the_forward_used():
    # 0.1 is 0.10009765625 in bfloat16: x == that bound is at the bound for the backward too
    # (gradient 0, PyTorch 2.14), not above an unrounded 0.1 (gradient 1)
    x = tgrad.tensor([1.7, 0.1, 0.05, 2.0, 1.0], dtype=tgrad.bfloat16, requires_grad=True)
    y = x.clamp(0.1, 1.7)
    assert y.float().tolist() == [1.703125, 0.10009765625, 0.10009765625, 1.703125, 1.0]
    y.sum().backward()
    assert x.grad.float().tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_half_mul_div_keep_a_python_float_in_float32():
    # PyTorch's mul/div use the number in float32 (opmath) for float16/bfloat16 tensors;
    # add/sub round it to the tensor's dtype first
    x = tgrad.tensor([0.1, 0.9, 60000.0], dtype=tgrad.float16, requires_grad=True)
    x32 = x.detach().float().numpy()
    y = x * 70000.0
    assert y.dtype is tgrad.float16
    np.testing.assert_array_equal(y.detach().numpy(), (x32 * np.float32(70000)).astype(np.float16))
    assert y.tolist()[1] == 63008.0  # not inf (70000 rounded to float16 first)
    np.testing.assert_array_equal((70000.0 * x).detach().numpy(), y.detach().numpy())
    np.testing.assert_array_equal((x / 1e5).detach().numpy(),
                                  (x32 / np.float32(1e5)).astype(np.float16))
    assert (x - 0.1).tolist()[0] == 0.0  # sub: 0.1 rounded to float16, as PyTorch
    (x / 1e5).sum().backward()
    assert x.grad.dtype is tgrad.float16
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, np.float16(np.float32(1) / 1e5)))
    b = tgrad.tensor([0.1, 0.9], dtype=tgrad.bfloat16)
    assert (b * 3.3).dtype is tgrad.bfloat16
    assert (b * 3.3).float().tolist() == [0.330078125, 2.96875]


_NUMBER_OPS = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2",
               "remainder", "fmod", "eq", "ne", "lt", "le", "gt", "ge")


@pytest.mark.parametrize("dtype", [tgrad.float16, tgrad.bfloat16, tgrad.float32,
                                   tgrad.float64])
def test_a_python_int_operand_acts_as_the_equal_float(dtype):
    # PyTorch converts a number operand of a float tensor the same way whether it is an int
    # or a float (x_half * 70000 is 63008 for x = 0.9, like x_half * 70000.0); results and
    # gradients of int and float numbers agree, in both operand orders
    vals = np.array([0.1, 0.9, 3.0, -2.5, 60000.0 if dtype is tgrad.float16 else 1e5])
    for k in (70000, 3, -2, 0, 1, 2**40):
        for op in _NUMBER_OPS:
            # (tgrad.maximum/minimum/atan2 refuse numbers, as PyTorch's; the op module's
            # functions, which tgrad's formulas call, take them)
            fn = getattr(tgrad.ops.elementwise, op)
            for swap in (False, True):
                if op == "pow" and not swap and dtype is tgrad.float16 and abs(k) > 65504:
                    for num in (k, float(k)):  # an exponent past float16's range raises
                        with pytest.raises(RuntimeError, match="cannot be converted"):
                            fn(tgrad.tensor(vals, dtype=dtype), num)
                    continue
                outs, grads = [], []
                for num in (k, float(k)):
                    x = tgrad.tensor(vals, dtype=dtype, requires_grad=True)
                    with np.errstate(all="ignore"):
                        y = fn(num, x) if swap else fn(x, num)
                        if y.dtype.is_floating_point and op == "remainder" and swap:
                            # PyTorch defines no derivative of remainder(number, tensor)
                            with pytest.raises(RuntimeError, match="derivative for "
                                                                   "aten::remainder is not"):
                                y.float().sum().backward()
                        elif y.dtype.is_floating_point:
                            y.float().sum().backward()
                    outs.append(y.detach().float().numpy() if y.dtype.is_floating_point
                                else y.numpy())
                    grads.append(None if x.grad is None else x.grad.float().numpy())
                assert y.dtype is (dtype if y.dtype.is_floating_point else tgrad.bool)
                np.testing.assert_array_equal(outs[0], outs[1], err_msg=f"{op} {k} {swap}")
                np.testing.assert_array_equal(grads[0], grads[1], err_msg=f"{op} {k} {swap}")
    x = tgrad.tensor([0.1, 0.9], dtype=dtype)
    xn = x.numpy()
    cd = np.float32 if dtype.itemsize == 2 else dtype.np.type  # halves: the number in float32
    for y, ref in ((x * 70000, xn.astype(cd) * cd(70000)), (x / 100000, xn.astype(cd) / cd(1e5))):
        np.testing.assert_array_equal(y.float().numpy(), ref.astype(dtype.np).astype(np.float32))
    with pytest.raises(RuntimeError, match=f"mul: value {10**400} cannot be converted"):
        x * 10**400


def test_nll_loss_picks_the_target_entry_even_next_to_minus_inf():
    # log-probabilities of -inf in other classes (log_softmax of extreme logits) stay out
    # of the loss and its gradient; a one-hot product gave NaN (0 * -inf)
    x = tgrad.tensor([[0.0, -np.inf], [-np.inf, -0.5]], requires_grad=True)
    loss = tgrad.nn.functional.nll_loss(x, tgrad.tensor([0, 1]))
    assert loss.item() == 0.25
    loss.backward()
    assert x.grad.tolist() == [[-0.5, 0.0], [0.0, -0.5]]


def test_numbers_past_a_float_dtype_become_inf_without_a_warning():
    # PyTorch converts silently where it does not raise: a number operand past the tensor's
    # float range is inf (x_half > 70000 compares with inf), and so is a tensor() value;
    # full() raises its overflow error, with no NumPy warning on the way
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tgrad.tensor([1.0, 70000.0], dtype=tgrad.float16)
        assert x.tolist() == [1.0, np.inf]
        assert (x > 70000).tolist() == [False, False]
        assert (x + 70000.0).tolist() == [np.inf, np.inf]
        d = (x - 1e300).tolist()  # 1 - inf, inf - inf
        assert d[0] == -np.inf and np.isnan(d[1])
        assert (tgrad.tensor([2.0]) * 1e300).tolist() == [np.inf]
        assert (1e300 * tgrad.tensor([2.0], dtype=tgrad.bfloat16)).float().tolist() == [np.inf]
        with pytest.raises(RuntimeError, match="full\\(\\): value 1e\\+39 cannot be converted"):
            tgrad.full((2,), 1e39, dtype=tgrad.float16)


def test_where_with_the_condition_alone_is_nonzero_as_tuple():
    c = tgrad.tensor([[True, False], [False, True]])
    got = tgrad.where(c)
    assert isinstance(got, tuple) and len(got) == 2
    assert [g.tolist() for g in got] == [[0, 1], [0, 1]] and got[0].dtype is tgrad.int64
    assert [g.tolist() for g in tgrad.where(tgrad.tensor([0.0, 2.0, -1.0]))] == [[1, 2]]
    with pytest.raises(TypeError, match="condition alone or with both input and other"):
        tgrad.where(c, tgrad.ones(2, 2))


def test_half_floor_and_trunc_division_by_a_number_run_in_float32():
    # ATen's div_floor / div_trunc kernels read a number divisor as float32 (opmath) for
    # halves and round the truncated float32 quotient once
    for dt in (tgrad.float16, tgrad.bfloat16):
        x = tgrad.tensor([1.0], dtype=dt)
        assert (x // 0.1).item() == 9.0  # 1 / float32(0.1) = 9.99999985
        assert tgrad.div(x, 0.1, rounding_mode="floor").item() == 9.0
    h = tgrad.tensor([2047.0, -2047.0], dtype=tgrad.float16)
    assert tgrad.div(h, 1.0002, rounding_mode="trunc").tolist() == [2046.0, -2046.0]
    assert tgrad.div(h, 1.0002, rounding_mode="floor").tolist() == [2046.0, -2047.0]
    v = np.array([7.5, -7.5, 3.0, -0.5])
    for mode, fn in (("trunc", np.trunc), ("floor", np.floor)):
        got = tgrad.div(tgrad.tensor(v, dtype=tgrad.bfloat16), 2, rounding_mode=mode)
        assert got.dtype is tgrad.bfloat16 and got.float().tolist() == fn(v / 2).tolist()


def test_half_trunc_division_rounds_an_integer_tensor_operand_to_the_half_dtype_first():
    # type promotion casts the int tensor to float16 before dividing: 70000 is inf there,
    # 100000 too; in bfloat16 -70000 is -70144 (8 significant bits), / 3 = -23381.3,
    # truncated -23381, rounded to bfloat16 -23424 (multiples of 128 there)
    ints = tgrad.tensor([70000, 100000, -70000, 3])
    h = tgrad.tensor([2.0, 4.0, 3.0, 2.0], dtype=tgrad.float16)
    assert tgrad.div(ints, h, rounding_mode="trunc").tolist() == [np.inf, np.inf, -np.inf, 1.0]
    assert tgrad.div(tgrad.tensor(70000), h, rounding_mode="trunc").tolist() == [np.inf] * 4
    got = tgrad.div(ints[2:3], h[2:3].to(tgrad.bfloat16), rounding_mode="trunc")
    assert got.dtype is tgrad.bfloat16 and got.tolist() == [-23424.0]
    # a one-element second operand is still read in float32 (PyTorch's CPU scalar)
    assert tgrad.div(h * 100, tgrad.tensor([70000]), rounding_mode="trunc").tolist() == [0.0] * 4


def test_half_composites_round_an_integer_tensor_operand_to_the_half_dtype_first():
    # addcmul / addcdiv / add and sub with alpha compute halves in float32, but their integer
    # tensor operands are first cast to float16 as promotion casts them: 70000 and 65520 are
    # inf there, 65519 is 65504 (hand-computed float16 roundings)
    ints = tgrad.tensor([70000, 65519, 65520, 3])
    h = tgrad.tensor([2.0, 1.0, 1.0, 2.0], dtype=tgrad.float16)
    inf = np.inf
    assert tgrad.addcdiv(h, ints, h).tolist() == [inf, 65504.0, inf, 3.5]  # 2 + 1.5
    assert tgrad.addcmul(h, h, ints, value=0.5).tolist() == [inf, 32752.0, inf, 5.0]
    assert tgrad.addcmul(ints, h, h).tolist() == [inf, 65504.0, inf, 7.0]  # 65504 + 1
    assert tgrad.sub(ints, h, alpha=0.5).tolist() == [inf, 65504.0, inf, 2.0]
    assert tgrad.add(h, ints, alpha=2).tolist() == [inf, inf, inf, 8.0]  # 2 * 65504 > max


def test_half_mul_div_read_a_python_int_past_2_to_62_in_float32_too():
    # ints of 2^62 and more take the checked path; their mul/div/floor_divide with a half
    # tensor still reads them in float32 (2^63 - 1 is 9.22e18 there, not inf as in float16)
    big = 2**63 - 1  # 2^63 in float32
    for dt, prod, quot in ((tgrad.float16, [0.0, -np.inf, np.inf], [0.0, -0.0, 0.0]),
                           # bfloat16 has float32's range: -0.5 2^63, 3 2^63, -2^-64, 3 2^-63
                           (tgrad.bfloat16, [0.0, -2.0**62, 3 * 2.0**63],
                            [0.0, -2.0**-64, 3 * 2.0**-63])):
        h = tgrad.tensor([0.0, -0.5, 3.0], dtype=dt)
        assert (h * big).tolist() == prod  # 0 * 9.2e18 = 0, not 0 * inf = NaN
        assert (big * h).tolist() == prod
        assert (h / big).tolist() == quot
        assert (h // -2**62).tolist() == [-0.0, 0.0, -1.0]


def test_number_arguments_past_the_dtype_raise_where_pytorch_converts_them_checked():
    # clamp bounds and masked_fill values go through Scalar.to<T>(), a checked conversion:
    # past the dtype's range they raise instead of becoming inf; item assignment of a half
    # fills through float32 in PyTorch (inf, no error), of a float32 it is checked
    h = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float16)
    msg = "cannot be converted to type float16 without overflow"
    for call, op in ((lambda: h.clamp(max=1e5), "clamp"), (lambda: h.clamp_min(-1e9), "clamp"),
                     (lambda: h.masked_fill(h > 1, 7e4), "masked_fill")):
        with pytest.raises(RuntimeError, match=f"^{op}: value .* {msg}"):
            call()
    h2 = h.clone()
    h2[0] = 1e5
    assert h2.tolist() == [np.inf, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="__setitem__: value 1e\\+39 cannot be converted to "
                                           "type float32 without overflow"):
        h.float()[0] = 1e39
    with pytest.raises(RuntimeError, match="value 1099511627776 cannot be converted to type "
                                           "int32 without overflow"):
        tgrad.tensor([1, 2], dtype=tgrad.int32)[0] = 2**40
    # infinities and in-range values are fine; an int tensor clamped by a float is float
    assert h.clamp(-np.inf, 2.5).tolist() == [1.0, 2.0, 2.5]
    assert tgrad.tensor([1, 5]).clamp(max=2.5).tolist() == [1.0, 2.5]


@pytest.mark.parametrize("dt", [tgrad.float16, tgrad.bfloat16])
def test_layer_norm_of_a_half_input_takes_float32_weight_and_bias(dt):
    # PyTorch's mixed-type layer_norm: the half input normalized in float32 with the float32
    # parameters, the output in the input's dtype, the parameters' gradients in float32
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 7))
    wv, bv = rng.standard_normal(7), rng.standard_normal(7)
    x = tgrad.tensor(xv, dtype=dt, requires_grad=True)
    w = tgrad.tensor(wv, dtype=tgrad.float32, requires_grad=True)
    b = tgrad.tensor(bv, dtype=tgrad.float32, requires_grad=True)
    y = tgrad.nn.functional.layer_norm(x, (7,), w, b)
    assert y.dtype is dt
    xh = x.detach().float().numpy().astype(np.float64)
    mu, var = xh.mean(-1, keepdims=True), xh.var(-1, keepdims=True)
    xhat = (xh - mu) / np.sqrt(var + 1e-5)
    ref = xhat * w.detach().numpy() + b.detach().numpy()
    ulp = 2.0 ** -(10 if dt is tgrad.float16 else 7)
    np.testing.assert_allclose(y.detach().float().numpy(), ref, rtol=ulp, atol=ulp)
    y.float().sum().backward()
    assert x.grad.dtype is dt and w.grad.dtype is b.grad.dtype is tgrad.float32
    np.testing.assert_allclose(w.grad.numpy(), xhat.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), np.full(7, 4.0))
    assert tgrad.nn.LayerNorm(7)(x).dtype is dt


def test_square_of_bools_is_int64():
    # PyTorch's square is pow(input, 2): bools give int64
    got = tgrad.square(tgrad.tensor([True, False]))
    assert got.dtype is tgrad.int64 and got.tolist() == [1, 0]
    assert tgrad.tensor([True]).square().tolist() == [1]


def test_finfo_and_iinfo_give_pytorchs_limits():
    f = tgrad.finfo(tgrad.float16)
    assert (f.bits, f.eps, f.max, f.min) == (16, 2.0**-10, 65504.0, -65504.0)
    assert f.tiny == f.smallest_normal == 2.0**-14 and f.resolution == 0.001
    b = tgrad.finfo(tgrad.bfloat16)
    assert (b.bits, b.eps, b.resolution, b.dtype) == (16, 2.0**-7, 0.01, "bfloat16")
    assert b.max == (2 - 2.0**-7) * 2.0**127 and b.min == -b.max
    for dt, npdt in ((tgrad.float32, np.float32), (tgrad.float64, np.float64)):
        ref = np.finfo(npdt)
        got = tgrad.finfo(dt)
        assert (got.eps, got.max, got.tiny) == (float(ref.eps), float(ref.max), float(ref.tiny))
    assert tgrad.finfo().dtype == "float32"  # the default dtype
    i = tgrad.iinfo(tgrad.int32)
    assert (i.bits, i.min, i.max, i.dtype) == (32, -2**31, 2**31 - 1, "int32")
    assert tgrad.iinfo(tgrad.int64).max == 2**63 - 1
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point input type"):
        tgrad.finfo(tgrad.int64)
    with pytest.raises(TypeError, match="iinfo\\(\\) requires an integer input type"):
        tgrad.iinfo(tgrad.float32)
    with pytest.raises(TypeError, match="tgrad.bool is not supported by tgrad.iinfo"):
        tgrad.iinfo(tgrad.bool)
    # PyTorch's: limits of one dtype compare equal; the repr has 6 significant digits
    assert tgrad.finfo(tgrad.float32) == tgrad.finfo(tgrad.float32)
    assert tgrad.finfo(tgrad.complex64) == tgrad.finfo(tgrad.float32)
    assert tgrad.finfo(tgrad.float32) != tgrad.finfo(tgrad.float64)
    assert tgrad.iinfo(tgrad.int8) == tgrad.iinfo(tgrad.int8) != tgrad.iinfo(tgrad.int16)
    assert len({tgrad.finfo(tgrad.float16), tgrad.finfo(tgrad.float16)}) == 1
    assert repr(tgrad.finfo(tgrad.float16)) == (
        "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, "
        "smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)")
    assert repr(tgrad.iinfo(tgrad.int32)) == \
        "iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)"
    # the mask value float16 attention code uses where -1e9 would raise
    h = tgrad.zeros(2, dtype=tgrad.float16)
    assert h.masked_fill(tgrad.tensor([True, False]), f.min).tolist() == [-65504.0, 0.0]


def test_node_names_of_single_ops_are_pytorchs():
    # PyTorch 2.13's grad_fn names (name() and the node's type name): log1p's is
    # Log1PBackward0, square is pow(x, 2) (PowBackward0), sgn / digamma / igammac /
    # nanmedian have their own names, prod over all elements is ProdBackward0 (over a dim
    # ProdBackward1). Values and gradients against hand-computed ones.
    x = tgrad.tensor([0.5, 2.0, 1.5], dtype=tgrad.float64, requires_grad=True)
    a = tgrad.tensor([1.0, 1.0, 1.0], dtype=tgrad.float64)
    cases = [(x.log1p(), "Log1PBackward0"), (x.square(), "PowBackward0"),
             (tgrad.square(x), "PowBackward0"), (x.sgn(), "SgnBackward0"),
             (x.digamma(), "DigammaBackward0"), (tgrad.igammac(a, x), "IgammacBackward0"),
             (tgrad.igamma(a, x), "IgammaBackward0"), (x.nanmedian(), "NanmedianBackward0"),
             (x.median(), "MedianBackward0"), (x.prod(), "ProdBackward0"),
             (x.prod(0), "ProdBackward1"), (tgrad.polygamma(1, x), "PolygammaBackward0")]
    for y, name in cases:
        assert y.grad_fn.name() == name and type(y.grad_fn).__name__ == name
    xs = np.array([0.5, 2.0, 1.5])
    (g,) = tgrad.autograd.grad(x.square().sum() + x.log1p().sum() + x.prod(), x)
    np.testing.assert_allclose(g.numpy(), 2 * xs + 1 / (1 + xs) + xs.prod() / xs, rtol=1e-14)
    # igammac(1, x) = exp(-x): d/dx = -exp(-x); sgn: 0 gradient
    (g,) = tgrad.autograd.grad(tgrad.igammac(a, x).sum() + x.sgn().sum(), x)
    np.testing.assert_allclose(g.numpy(), -np.exp(-xs), rtol=1e-12)
    # digamma(1) = -Euler's gamma; d digamma = polygamma(1, .): pi^2 / 6 at 1
    one = tgrad.tensor(1.0, dtype=tgrad.float64, requires_grad=True)
    d = one.digamma()
    assert abs(d.item() + 0.5772156649015329) < 1e-14
    (g,) = tgrad.autograd.grad(d, one, create_graph=True)
    assert abs(g.item() - np.pi ** 2 / 6) < 1e-13


def test_exception_types_are_pytorchs(tmp_path):
    # users catch PyTorch's exception types: each case as PyTorch 2.13 raises it
    cases = [
        (lambda: tgrad.where(True, tgrad.ones(1), tgrad.zeros(1)), TypeError,
         r"where\(\): argument 'condition' \(position 1\) must be Tensor, not bool"),
        (lambda: tgrad.arange(3, dtype=tgrad.bool), NotImplementedError,
         "\"arange_cpu\" not implemented for 'Bool'"),
        (lambda: tgrad.round(tgrad.tensor([15]), decimals=-1), NotImplementedError,
         "decimals is only supported for floating point"),
        (lambda: tgrad.tensor(None), RuntimeError, "Could not infer dtype of NoneType"),
        (lambda: tgrad.tensor(None, dtype=tgrad.float32), TypeError,
         "must be real number, not NoneType"),
        (lambda: tgrad.save(tgrad.ones(1), tmp_path / "missing" / "f.pt"), RuntimeError,
         "Parent directory .*missing does not exist"),
        (lambda: tgrad.save(tgrad.ones(1), tmp_path / "missing" / "f.pt", format="torch"),
         RuntimeError, "Parent directory .*missing does not exist"),
        (lambda: tgrad.mm(tgrad.zeros(2, 3), tgrad.zeros(4, 5)), RuntimeError,
         r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")]
    for fn, exc, text in cases:
        with pytest.raises(exc, match=text):
            fn()
    tgrad.save(tgrad.ones(1), tmp_path / "f.pt")  # an existing folder: fine
    assert tgrad.load(tmp_path / "f.pt").tolist() == [1.0]


def test_ops_with_several_operands_promote_them_all_before_computing():
    # PyTorch computes alpha * other, tensor1 * tensor2, beta * input and the clamp bounds in
    # the common dtype of all operands: nothing wraps around in a narrower integer dtype
    u8 = tgrad.tensor([200, 100], dtype=tgrad.uint8)
    assert tgrad.zeros(2).add_(u8, alpha=2).tolist() == [400.0, 200.0]
    i32 = tgrad.zeros(2, dtype=tgrad.int32).add_(tgrad.tensor([100, -100], dtype=tgrad.int8),
                                                 alpha=3)
    assert i32.dtype == tgrad.int32 and i32.tolist() == [300, -300]
    assert tgrad.zeros(2, dtype=tgrad.int64).sub_(u8, alpha=-1).tolist() == [200, 100]
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean"):
        tgrad.zeros(2).add_(u8, alpha=True)
    assert tgrad.tensor([True, False]).add_(tgrad.tensor([True, True]), alpha=2).tolist() == \
        [True, True]
    # addcmul / addcdiv: all three operands promoted together
    a, b = tgrad.tensor([200, 16], dtype=tgrad.uint8), tgrad.tensor([2, 16], dtype=tgrad.uint8)
    assert tgrad.addcmul(tgrad.zeros(2), a, b).tolist() == [400.0, 256.0]
    acc = tgrad.zeros(2, dtype=tgrad.int64).addcmul_(a, a)
    assert acc.tolist() == [40000, 256]
    r = tgrad.addcmul(tgrad.tensor(7, dtype=tgrad.uint8), tgrad.tensor([True, False]),
                      tgrad.tensor(-3, dtype=tgrad.int8))
    assert r.dtype == tgrad.int16 and r.tolist() == [4, 7]
    q = tgrad.addcdiv(tgrad.zeros(1, dtype=tgrad.float16),  # float16 and bfloat16: float32
                      tgrad.tensor([0.33], dtype=tgrad.bfloat16),
                      tgrad.tensor([3], dtype=tgrad.int64))  # (the quotient not in bfloat16)
    assert q.dtype == tgrad.float32
    assert q.item() == float(np.float32(np.asarray(0.33, dtype=tgrad.bfloat16.np)) /
                             np.float32(3))
    # addr: beta * input in the common dtype
    out = tgrad.addr(tgrad.tensor([[200, 0], [0, 0]], dtype=tgrad.uint8),
                     tgrad.tensor([1, 0], dtype=tgrad.int32), tgrad.tensor([1, 0],
                                                                    dtype=tgrad.int32), beta=2)
    assert out.dtype == tgrad.int32 and out.tolist() == [[401, 0], [0, 0]]
    # clamp with tensor bounds: x, min and max promoted at once
    c = tgrad.clamp(tgrad.tensor(-7, dtype=tgrad.int8), tgrad.tensor(2, dtype=tgrad.int8),
                    tgrad.tensor([250, 0, 3], dtype=tgrad.uint8))
    assert c.dtype == tgrad.uint8 and c.tolist() == [249, 0, 3]  # (-7 as uint8: 249)
    c = tgrad.clamp(tgrad.tensor([True, False]), tgrad.tensor(2, dtype=tgrad.uint8),
                    tgrad.tensor(-7, dtype=tgrad.int32))
    assert c.dtype == tgrad.int32 and c.tolist() == [-7, -7]


def test_complex_numbers_for_real_tensors_raise_as_in_pytorch():
    # a complex scalar with a nonzero imaginary part cannot become a real tensor's value
    # (tgrad gave a complex result, or for halves silently dropped the imaginary part)
    r = tgrad.ones(2, 2, dtype=tgrad.float64)
    a, b = tgrad.ones(2, 3, dtype=tgrad.float64), tgrad.ones(3, 2, dtype=tgrad.float64)
    for fn in (lambda: tgrad.addmm(r, a, b, alpha=1j), lambda: tgrad.addmm(r, a, b, beta=1j),
               lambda: r.clone().addmm_(a, b, alpha=1j),
               lambda: tgrad.lerp(tgrad.zeros(2), tgrad.ones(2), 0.5j),
               lambda: tgrad.lerp(tgrad.zeros(2, dtype=tgrad.float16),
                                  tgrad.ones(2, dtype=tgrad.float16), 0.5 + 1j)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type .* without "
                                               "overflow"):
            fn()
    # a zero imaginary part converts; complex tensors take complex scalars
    assert tgrad.addmm(r, a, b, alpha=2 + 0j).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    c = tgrad.ones(2, 2, dtype=tgrad.complex128)
    assert tgrad.addmm(c, c, c, alpha=1j).tolist() == [[1 + 2j, 1 + 2j], [1 + 2j, 1 + 2j]]
    assert tgrad.lerp(tgrad.zeros(2), tgrad.ones(2) * 4, 0.25 + 0j).tolist() == [1.0, 1.0]
    # a 0-d bool weight is its number, as in PyTorch
    assert tgrad.lerp(tgrad.zeros(2), tgrad.ones(2) * 4, tgrad.tensor(True)).tolist() == \
        [4.0, 4.0]
    with pytest.raises(TypeError, match=r"pad\(\): argument 'value' \(position 4\) must be "
                                        r"float, not complex"):
        tgrad.nn.functional.pad(tgrad.ones(2, dtype=tgrad.complex64), (1, 1), value=1 + 1j)
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        tgrad.arange(3, dtype=tgrad.complex64)


def test_out_of_place_scatters_start_at_version_zero():
    # new tensors, as PyTorch's: index_put / *_scatter are a clone written in place inside
    x = tgrad.zeros(4, requires_grad=True)
    outs = [tgrad.index_put(x, (tgrad.tensor([1]),), tgrad.tensor(1.0)),
            tgrad.index_put(x, (tgrad.tensor([1]),), tgrad.tensor(1.0), accumulate=True),
            tgrad.slice_scatter(x, tgrad.ones(2), start=0, end=2),
            tgrad.select_scatter(x, tgrad.tensor(1.0), 0, 0),
            tgrad.diagonal_scatter(tgrad.zeros(2, 2), tgrad.ones(2))]
    assert [o._version for o in outs] == [0] * 5
    outs[0].sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0, 1.0]  # (the written place gets none)
    outs[2].exp().sum().backward()  # a saved result at version 0: unchanged, no error


def test_factories_take_pin_memory():
    # PyTorch's keyword: False is the default; True asks for page-locked memory, which
    # needs a GPU (PyTorch's error without one) and a CPU tensor
    makers = {"tensor": lambda **k: tgrad.tensor([1.0, 2.0], **k),
              "zeros": lambda **k: tgrad.zeros(2, **k), "ones": lambda **k: tgrad.ones(2, **k),
              "empty": lambda **k: tgrad.empty(2, **k),
              "full": lambda **k: tgrad.full((2,), 3.0, **k),
              "rand": lambda **k: tgrad.rand(2, **k), "randn": lambda **k: tgrad.randn(2, **k),
              "randint": lambda **k: tgrad.randint(0, 5, (2,), **k),
              "randperm": lambda **k: tgrad.randperm(2, **k),
              "arange": lambda **k: tgrad.arange(2, **k),
              "linspace": lambda **k: tgrad.linspace(0, 1, 2, **k),
              "logspace": lambda **k: tgrad.logspace(0, 1, 2, **k),
              "eye": lambda **k: tgrad.eye(2, **k),
              "empty_strided": lambda **k: tgrad.empty_strided((2,), (1,), **k)}
    for name, make in makers.items():
        assert make(pin_memory=False).shape in ((2,), (2, 2)), name
        if not tgrad.cuda.is_available():
            with pytest.raises(RuntimeError, match=f"{name}: Cannot access accelerator device "
                                                   "when none is available"):
                make(pin_memory=True)
        else:
            assert make(pin_memory=True).device.type == "cpu"
    np.testing.assert_array_equal(tgrad.tensor([1.0, 2.0], pin_memory=False).numpy(), [1, 2])


def test_numpy_names_axis_and_keepdims():
    # PyTorch's argument parser takes NumPy's axis for dim and keepdims for keepdim
    x = tgrad.tensor(np.arange(6.0).reshape(2, 3))
    xn = np.arange(6.0).reshape(2, 3)
    refs = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.max, "amin": np.min,
            "nansum": np.nansum, "nanmean": np.nanmean,
            "logsumexp": lambda a, axis, keepdims: np.log(np.exp(a).sum(axis,
                                                                        keepdims=keepdims)),
            "var": lambda a, axis, keepdims: a.var(axis, ddof=1, keepdims=keepdims),
            "std": lambda a, axis, keepdims: a.std(axis, ddof=1, keepdims=keepdims)}
    for name, ref in refs.items():
        got = getattr(tgrad, name)(x, 1, keepdims=True)
        np.testing.assert_allclose(got.numpy(), ref(xn, axis=1, keepdims=True), rtol=1e-12,
                                   err_msg=name)
        assert getattr(x, name)(axis=0, keepdims=True).shape == (1, 3), name
    assert x.max(1, keepdims=True).values.tolist() == [[2.0], [5.0]]
    assert x.argmax(axis=1, keepdims=True).tolist() == [[2], [2]]
    assert x.all(1, keepdims=True).shape == (2, 1)
    assert x.any(axis=0, keepdims=True).shape == (1, 3)
    with pytest.raises(TypeError, match="got multiple values for argument 'keepdim'"):
        x.sum(1, keepdim=True, keepdims=True)
    # joining: axis for dim
    assert tgrad.cat([x, x], axis=1).shape == (2, 6) and tgrad.stack([x, x], axis=1).shape == \
        (2, 2, 3)
    assert tgrad.concat([x, x], axis=-1).shape == (2, 6)
    with pytest.raises(TypeError, match="got multiple values for argument 'dim'"):
        tgrad.cat([x, x], 1, axis=1)
