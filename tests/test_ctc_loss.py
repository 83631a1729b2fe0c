"""F.ctc_loss against an independent NumPy float64 forward algorithm (loops over time and
extended labels, logaddexp of Python floats) and against brute force over every alignment
on tiny cases; gradcheck and gradgradcheck; batching with padded and 1-D targets, varied
input and target lengths, reductions, repeated labels, impossible targets (inf, or 0 with
zero_infinity), unbatched input, and the interpreted cuda device."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(9)


def _log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _np_ctc_one(lp, target, blank=0):
    """-log p(target | lp) for one sample: lp (T, C) log-probabilities."""
    ext = [blank]
    for lab in target:
        ext += [lab, blank]
    alpha = [-math.inf] * len(ext)
    if len(lp) == 0:
        return 0.0 if not target else math.inf
    alpha[0] = lp[0][ext[0]]
    if len(ext) > 1:
        alpha[1] = lp[0][ext[1]]

    def lae(*xs):
        m = max(xs)
        return m if m == -math.inf else m + math.log(sum(math.exp(x - m) for x in xs))
    for t in range(1, len(lp)):
        new = []
        for s in range(len(ext)):
            terms = [alpha[s]] + ([alpha[s - 1]] if s >= 1 else [])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new.append(lae(*terms) + lp[t][ext[s]])
        alpha = new
    ends = [alpha[-1]] + ([alpha[-2]] if len(ext) > 1 else [])
    return -lae(*ends)


def _brute_force(lp, target, blank=0):
    """-log of the sum over every length-T path that collapses to target."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
        if collapsed == list(target):
            total += math.exp(sum(lp[t][k] for t, k in enumerate(path)))
    return -math.log(total)


def test_forward_matches_brute_force_and_reference():
    for target in ([1], [1, 1], [1, 2], [2, 1, 2], []):
        lp = _log_softmax(RNG.standard_normal((4, 3)))
        got = F.ctc_loss(tgrad.tensor(lp), tgrad.tensor(target, dtype=tgrad.int64), [4],
                         [len(target)], reduction="sum").item()
        assert got == pytest.approx(_brute_force(lp, target), rel=1e-12)
        assert got == pytest.approx(_np_ctc_one(lp, target), rel=1e-12)


def _batch():
    t, n, c = 9, 4, 5
    lp = _log_softmax(RNG.standard_normal((t, n, c)))
    in_len = [9, 7, 9, 5]
    tg_len = [3, 2, 0, 4]
    targets = RNG.integers(1, c, (n, 4))
    targets[0, :3] = [2, 2, 3]  # a repeated label needs a blank between
    return lp, targets, in_len, tg_len


def test_batched_reductions_and_target_layouts():
    lp, targets, in_len, tg_len = _batch()
    want = np.array([_np_ctc_one(lp[:ti, i], list(targets[i, :li]))
                     for i, (ti, li) in enumerate(zip(in_len, tg_len))])
    x = tgrad.tensor(lp)
    none = F.ctc_loss(x, tgrad.tensor(targets), tgrad.tensor(in_len), tgrad.tensor(tg_len),
                      reduction="none")
    np.testing.assert_allclose(none.numpy(), want, rtol=1e-12)
    flat = np.concatenate([targets[i, :li] for i, li in enumerate(tg_len)])
    mean = F.ctc_loss(x, tgrad.tensor(flat), tuple(in_len), tuple(tg_len))
    assert mean.item() == pytest.approx(np.mean(want / np.maximum(tg_len, 1)), rel=1e-12)
    total = F.ctc_loss(x, tgrad.tensor(targets), in_len, tg_len, reduction="sum")
    assert total.item() == pytest.approx(want.sum(), rel=1e-12)
    one = F.ctc_loss(tgrad.tensor(lp[:, 1]), tgrad.tensor(targets[1, :2]), [7], [2],
                     reduction="none")  # unbatched (T, C)
    assert one.shape == () and one.item() == pytest.approx(want[1], rel=1e-12)


def test_impossible_targets_and_zero_infinity():
    lp = _log_softmax(RNG.standard_normal((3, 2, 4)))
    targets = tgrad.tensor([[1, 1, 2], [1, 2, 3]])  # 1 1 2 needs 4 frames; 1 2 3 needs 3
    x = tgrad.tensor(lp, requires_grad=True)
    loss = F.ctc_loss(x, targets, [3, 3], [3, 3], reduction="none")
    assert math.isinf(loss[0].item()) and math.isfinite(loss[1].item())
    z = F.ctc_loss(x, targets, [3, 3], [3, 3], reduction="sum", zero_infinity=True)
    z.backward()
    assert z.item() == pytest.approx(loss[1].item(), rel=1e-12)
    assert np.isfinite(x.grad.numpy()).all() and not x.grad.numpy()[:, 0].any()


def test_infinite_loss_gradient_is_nan_in_its_frames():
    # PyTorch: without zero_infinity the gradient of an infinite loss is NaN in the sample's
    # frames t < T_n (exp(y) - exp(log(alpha beta) + nll - y) = inf - inf) and 0 after them;
    # the other samples keep their gradient (finite differences of the finite sample alone)
    lp = _log_softmax(np.random.default_rng(11).standard_normal((4, 2, 4)))
    targets = [[1, 1, 2], [1, 2, 3]]  # 1 1 2 needs 4 frames, sample 0 has 3
    x = tgrad.tensor(lp, requires_grad=True)
    loss = F.ctc_loss(x, tgrad.tensor(targets), [3, 4], [3, 3], reduction="sum")
    assert math.isinf(loss.item())
    loss.backward()
    g = x.grad.numpy()
    assert np.isnan(g[:3, 0]).all() and not g[3, 0].any()
    num, h = np.zeros((4, 4)), 1e-6
    for t in range(4):
        for c in range(4):
            up, dn = lp[:, 1].copy(), lp[:, 1].copy()
            up[t, c] += h
            dn[t, c] -= h
            num[t, c] = (_np_ctc_one(up, [1, 2, 3]) - _np_ctc_one(dn, [1, 2, 3])) / (2 * h)
    np.testing.assert_allclose(g[:, 1], num, rtol=1e-6, atol=1e-8)
    # under create_graph the NaNs stay, and a second backward runs
    x2 = tgrad.tensor(lp, requires_grad=True)
    g2, = tgrad.autograd.grad(F.ctc_loss(x2, tgrad.tensor(targets), [3, 4], [3, 3],
                                         reduction="sum"), x2, create_graph=True)
    assert np.isnan(g2.detach().numpy()[:3, 0]).all()
    g2[:, 1].sum().backward()


def test_gradcheck_and_gradgradcheck():
    lp, targets, in_len, tg_len = _batch()
    logits = tgrad.tensor(RNG.standard_normal((5, 2, 4)), requires_grad=True)

    def fn(z):
        return F.ctc_loss(F.log_softmax(z, -1), tgrad.tensor([[1, 2], [3, 3]]), [5, 4], [2, 2])
    assert gradcheck(fn, (logits,))
    assert gradgradcheck(fn, (logits,))


def test_errors():
    x = tgrad.tensor(_log_softmax(RNG.standard_normal((3, 1, 4))))
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 3"):
        F.ctc_loss(x, tgrad.tensor([[1]]), [4], [1])
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.ctc_loss(x, tgrad.tensor([[1]]), [3], [1], reduction="avg")
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(x, tgrad.tensor([[1]]), [3], [1], blank=4)


def test_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad, tgrad.nn.functional as F
rng = np.random.default_rng(1)
z = rng.standard_normal((6, 3, 5))
out = {}
for dev in ("cpu", "cuda"):
    x = tgrad.tensor(z, device=dev, requires_grad=True)
    t = tgrad.tensor([[1, 2, 2], [3, 0, 0], [4, 1, 0]], device=dev)
    loss = F.ctc_loss(F.log_softmax(x, -1), t, [6, 5, 6], [3, 1, 2])
    loss.backward()
    out[dev] = [loss.item(), x.grad.cpu().numpy().ravel().tolist()]
print(json.dumps(out))
""")
    assert res["cuda"][0] == pytest.approx(res["cpu"][0], rel=1e-12)
    np.testing.assert_allclose(res["cuda"][1], res["cpu"][1], rtol=1e-10, atol=1e-12)


def test_module():
    lp, targets, in_len, tg_len = _batch()
    m = tgrad.nn.CTCLoss(reduction="sum", zero_infinity=True)
    got = m(tgrad.tensor(lp), tgrad.tensor(targets), in_len, tg_len)
    want = F.ctc_loss(tgrad.tensor(lp), tgrad.tensor(targets), in_len, tg_len, reduction="sum")
    assert got.item() == pytest.approx(want.item(), rel=1e-15)


def _composite_only(monkeypatch):
    from tgrad.nn import _ctc
    monkeypatch.setattr(_ctc, "_fast_path", lambda *args: False)


@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float32])
@pytest.mark.parametrize("chunk", [8192, 165])  # 165: chunks of 3 frames, a partial last
def test_cpu_node_is_the_composite_bit_for_bit(monkeypatch, dtype, chunk):
    # the CPU node (NumPy, frame by frame) against the composite of tgrad ops it replaces:
    # identical losses and gradients for every reduction, with varied lengths, repeated
    # labels, a blank other than 0, 1-D targets, an impossible target, log-probabilities of
    # -inf, raw scores above 0, a NaN, and a non-contiguous log_probs
    from tgrad.nn import _ctc
    monkeypatch.setattr(_ctc, "_CHUNK", chunk)
    rng = np.random.default_rng(21)
    t, n, c = 11, 5, 6
    targets = rng.integers(0, c - 1, (n, 5))
    targets[0, :4] = [3, 3, 1, 3]
    in_len, tg_len = [11, 8, 11, 2, 6], [5, 3, 0, 2, 4]
    flat = np.concatenate([targets[i, :li] for i, li in enumerate(tg_len)])
    z = rng.standard_normal((n, t, c)) * 4
    lsm = _log_softmax(z)
    with_ninf = lsm.copy()
    with_ninf[rng.random(lsm.shape) < 0.15] = -math.inf
    with_nan = lsm.copy()
    with_nan[1, 3, 2] = math.nan
    cases = [(lsm, "mean", False), (with_ninf, "none", False), (z, "sum", True),
             (with_nan, "none", True), (lsm, "sum", True)]

    def run(lp_np, reduction, zero_inf, tg, blank):
        x = tgrad.tensor(lp_np, dtype=dtype, requires_grad=True)
        loss = F.ctc_loss(x.transpose(0, 1), tgrad.tensor(tg), in_len, tg_len, blank=blank,
                          reduction=reduction, zero_infinity=zero_inf)
        (loss.sum() if reduction == "none" else loss).backward()
        return loss.detach().numpy(), x.grad.numpy()
    got = [run(lp, red, zi, tg, blank) for lp, red, zi in cases
           for tg, blank in ((targets, c - 1), (flat, c - 1))]
    _composite_only(monkeypatch)
    want = [run(lp, red, zi, tg, blank) for lp, red, zi in cases
            for tg, blank in ((targets, c - 1), (flat, c - 1))]
    for (gl, gg), (wl, wg) in zip(got, want):
        assert gl.dtype == wl.dtype and gg.dtype == wg.dtype
        np.testing.assert_array_equal(gl, wl)
        np.testing.assert_array_equal(gg, wg)


def test_cpu_node_double_backward_and_forward_ad_match_the_composite(monkeypatch):
    lp, targets, in_len, tg_len = _batch()

    def derivs():
        z = tgrad.tensor(lp, requires_grad=True)
        loss = F.ctc_loss(F.log_softmax(z, -1), tgrad.tensor(targets), in_len, tg_len)
        g, = tgrad.autograd.grad(loss, z, create_graph=True)
        h, = tgrad.autograd.grad((g * g).sum(), z)
        tangent = tgrad.tensor(np.cos(np.arange(lp.size)).reshape(lp.shape))
        with tgrad.autograd.forward_ad.dual_level():
            dual = tgrad.autograd.forward_ad.make_dual(tgrad.tensor(lp), tangent)
            out = F.ctc_loss(F.log_softmax(dual, -1), tgrad.tensor(targets), in_len, tg_len)
            jvp = tgrad.autograd.forward_ad.unpack_dual(out).tangent
        with tgrad.no_grad():
            value = F.ctc_loss(F.log_softmax(z, -1), tgrad.tensor(targets), in_len, tg_len)
        return g.detach().numpy(), h.numpy(), jvp.numpy(), value.numpy(), loss.item()
    got = derivs()
    assert got[3] == got[4]
    assert got[2] == pytest.approx(float((got[0] * np.cos(np.arange(lp.size)).reshape(
        lp.shape)).sum()), rel=1e-10)
    _composite_only(monkeypatch)
    for a, b in zip(got, derivs()):
        np.testing.assert_array_equal(a, b)
