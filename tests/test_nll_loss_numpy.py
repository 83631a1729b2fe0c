"""nll_loss's CPU path (tgrad/backends/_numpy_nn.py nll_loss_fwd/bwd): the same bits as the
op composition it replaces (gather, neg, mul, where, sum, div and a scatter-add, which still
runs on other devices and under create_graph / forward AD)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from interpreted import run_json

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import grad, gradcheck, gradgradcheck
from tgrad.ops.elementwise import where
from tgrad.ops.gathering import gather

_DTYPES = (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16)
# (input shape, target shape): 1-d (C,), (N, C) with odd sizes, (N, C, d1, d2), an empty batch
_SHAPES = [((7,), ()), ((5, 7), (5,)), ((131, 33), (131,)), ((0, 4), (0,)),
           ((3, 5, 4, 6), (3, 4, 6)), ((2, 3, 5), (2, 5))]


def _bits(t) -> tuple:
    a = np.asarray(t.detach().numpy())
    return a.dtype.str, a.shape, a.tobytes()


def _reference(x, t, weight, ignore_index: int, reduction: str):
    """The op composition nll_loss ran before its NumPy primitives (and still runs off the
    CPU): loss_i = -x[i, t_i] w_i, 0 where ignored; "mean" divides by sum(w)."""
    axis = 0 if x.ndim == 1 else 1
    keep = t != ignore_index
    safe = where(keep, t, 0)
    w = keep.to(x.dtype)
    if weight is not None:
        w = w * weight.to(x.dtype)[safe]
    with tgrad.no_grad():
        loss = where(keep, -gather(x, axis, safe.unsqueeze(axis)).squeeze(axis) * w, 0.0)
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def _case(rng, xs, ts, dtype, weighted, ignore_index, special):
    c = xs[0] if len(xs) == 1 else xs[1]
    xn = rng.standard_normal(xs) * 3 - 2
    if special and xn.size:  # NaN, +-inf and 0 log-probabilities (a -0.0 loss)
        flat = xn.reshape(-1)
        for v, k in ((np.nan, 3), (-np.inf, 3), (np.inf, 2), (0.0, 2)):
            flat[rng.integers(0, flat.size, k)] = v
    tn = rng.integers(0, c, ts)
    tn = np.where(rng.random(ts) < 0.3, ignore_index, tn)
    x = tgrad.tensor(xn).to(dtype).requires_grad_()
    t = tgrad.tensor(np.asarray(tn, dtype=np.int64))
    w = None
    if weighted:
        wn = rng.random(c) * 2
        if special:
            wn[0] = 0.0
        w = tgrad.tensor(wn).to(dtype)
    return x, t, w


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
@pytest.mark.parametrize("xs,ts", _SHAPES, ids=str)
def test_nll_loss_numpy_path_is_bit_identical_to_the_op_composition(dtype, xs, ts):
    rng = np.random.default_rng(3)
    for weighted, ignore_index, reduction, special in itertools.product(
            (False, True), (-100, 1, 40), ("none", "sum", "mean"), (False, True)):
        x, t, w = _case(rng, xs, ts, dtype, weighted, ignore_index, special)
        out = F.nll_loss(x, t, w, ignore_index=ignore_index, reduction=reduction)
        assert _bits(out) == _bits(_reference(x, t, w, ignore_index, reduction))
        gn = rng.standard_normal(out.shape) * 2
        if special and gn.size:
            gn.reshape(-1)[:2] = [np.nan, np.inf][:gn.size]
        g = tgrad.tensor(gn).to(dtype)
        # the plain backward (NumPy) against the create_graph one (the tgrad ops)
        (fast,) = grad(out, x, g, retain_graph=True)
        (ops,) = grad(out, x, g, create_graph=True)
        assert _bits(fast) == _bits(ops)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_numpy_path_all_ignored_and_empty(reduction):
    for xs, tn in (((4, 3), [-100] * 4), ((0, 3), []), ((2, 3, 5), [[-100] * 5] * 2)):
        x = tgrad.zeros(xs, dtype=tgrad.float32, requires_grad=True)
        out = F.nll_loss(x, tgrad.tensor(np.array(tn, dtype=np.int64)), reduction=reduction)
        want = {"none": np.zeros(np.array(tn).shape, np.float32), "sum": np.float32(0),
                "mean": np.float32(np.nan)}[reduction]
        np.testing.assert_array_equal(out.detach().numpy(), want)
        out.backward(tgrad.ones(out.shape))
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(xs, np.float32))
        assert x.grad.dtype is tgrad.float32


def test_nll_loss_numpy_path_values_against_float64_and_gradcheck():
    # odd sizes, a non-contiguous input, weights and an ignore_index inside [0, C)
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((9, 13))
    tn = rng.integers(0, 13, 9)
    wn = rng.random(13) + 0.5
    x = tgrad.tensor(xn.T.copy()).t().requires_grad_()  # (9, 13), strides transposed
    t, w = tgrad.tensor(tn), tgrad.tensor(wn)
    keep = tn != 4
    rows = np.where(keep, -xn[np.arange(9), tn] * wn[tn], 0.0)
    for reduction, ref in (("none", rows), ("sum", rows.sum()),
                           ("mean", rows.sum() / (wn[tn] * keep).sum())):
        out = F.nll_loss(x, t, w, ignore_index=4, reduction=reduction)
        np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-14)

        def f(z, reduction=reduction):
            return F.nll_loss(z, t, w, ignore_index=4, reduction=reduction)
        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


def test_nll_loss_forward_ad_matches_the_gradient():
    # forward AD runs the op composition (the vjp of the vjp): jvp = <grad, v>
    rng = np.random.default_rng(8)
    x = tgrad.tensor(rng.standard_normal((6, 5)))
    v = tgrad.tensor(rng.standard_normal((6, 5)))
    t = tgrad.tensor([0, 4, -100, 2, 2, 1])
    w = tgrad.tensor(rng.random(5))
    f = lambda z: F.nll_loss(z, t, w)  # noqa: E731
    _, tangent = tgrad.func.jvp(f, (x,), (v,))
    (gx,) = grad(f(x.requires_grad_()), x)
    np.testing.assert_allclose(tangent.item(), (gx * v).sum().item(), rtol=1e-14)


def test_nll_loss_cpu_and_interpreted_cuda_agree():
    pytest.importorskip("triton")
    res = run_json("""
import json, numpy as np, tgrad, tgrad.nn.functional as F
rng = np.random.default_rng(2)
x0 = rng.standard_normal((5, 3, 4))
t0 = np.array([[0, 2, -100, 1], [2, 2, 0, 1], [1, -100, 0, 0], [0, 1, 2, 2], [2, 0, 1, 1]])
out = {}
for dev in ("cpu", "cuda"):
    res = []
    for xs, t in ((x0, t0), (x0[:, :, 0], t0[:, 0])):
        for red, w in (("mean", None), ("sum", [1.0, 0.5, 2.0]), ("none", [0.0, 1.0, 3.0])):
            x = tgrad.tensor(xs, device=dev, requires_grad=True)
            wt = None if w is None else tgrad.tensor(w, dtype=tgrad.float64, device=dev)
            loss = F.nll_loss(x, tgrad.tensor(t, device=dev), weight=wt, reduction=red)
            loss.backward(tgrad.ones(loss.shape, dtype=tgrad.float64, device=dev))
            res.append([loss.detach().cpu().numpy().tolist(), x.grad.cpu().numpy().tolist()])
    out[dev] = res
print(json.dumps(out))
""")
    for cpu, cuda in zip(res["cpu"], res["cuda"]):
        assert cuda[1] == cpu[1]  # the gradients: the same bits
        # the losses: a "sum"/"mean" adds in another order on the GPU (as before this path)
        np.testing.assert_allclose(cuda[0], cpu[0], rtol=4e-16, atol=0)
