"""embedding_bag 'sum' / 'mean' on the CPU kernel (tgrad/backends/_numpy_bag.py, one
_BagSum node in tgrad/nn/_embedding_bag.py for float32/float64 dense weights) against
the composite it replaces (weight[idx], per_sample_weights, padding mask, index_add),
forced by monkeypatching ``_embedding_bag._fast_bag``: bit-identical outputs and weight
gradients over 2-D input and 1-D input with offsets (empty bags, include_last_offset),
padding_idx, per_sample_weights, +-0 / inf weights, non-contiguous weights, empty
input and zero bags, through both of segment_sums' ways (the loop over positions and the
np.add.at fallback); values against a float64 loop; gradcheck and gradgradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_bag
from tgrad.nn import _embedding_bag


def _case(rng, dt, trial: int) -> dict:
    """A random embedding_bag call (weight, input, offsets, mode, psw, padding_idx, ...)."""
    rows, dim = int(rng.integers(1, 30)), int(rng.integers(1, 9))
    w = (rng.standard_normal((rows, dim)) * rng.choice([1e-4, 1.0, 1e4], (rows, dim)))
    w = w.astype(dt)
    w.reshape(-1)[::7] = -0.0
    if trial % 5 == 0:
        w.reshape(-1)[0], w.reshape(-1)[-1] = np.inf, -np.inf
    c = {"w": w, "offsets": None, "ilo": False}
    if trial % 2 == 0:  # 2-d: (B, N) bags, N may be 0
        c["idx"] = rng.integers(0, rows, (int(rng.integers(0, 6)), int(rng.integers(0, 9))))
        bags = c["idx"].shape[0]
    else:  # 1-d with offsets; few distinct indices every third time (long segments)
        n = int(rng.integers(0, 40))
        c["idx"] = rng.integers(0, min(rows, 3) if trial % 3 == 0 else rows, n)
        off = np.sort(rng.integers(0, n + 1, int(rng.integers(1, 7))))
        off[0] = 0
        c["offsets"], c["ilo"] = off, trial % 4 == 1
        bags = len(off) - c["ilo"]
    c["mode"] = "sum" if trial % 4 in (0, 1) else "mean"
    c["psw"] = rng.standard_normal(c["idx"].shape).astype(dt) \
        if c["mode"] == "sum" and trial % 3 == 1 else None
    c["pad"] = int(rng.integers(0, rows)) if trial % 3 == 2 else None
    g = rng.standard_normal((bags, dim)).astype(dt)
    g.reshape(-1)[::4] = -0.0
    c["g"] = g
    return c


def _run(c: dict, noncontig: bool = False) -> list:
    w = tgrad.tensor(c["w"].T.copy()).t() if noncontig else tgrad.tensor(c["w"].copy())
    w = w.detach().requires_grad_(True)
    off = None if c["offsets"] is None else tgrad.tensor(c["offsets"])
    psw = None if c["psw"] is None else tgrad.tensor(c["psw"])
    y = F.embedding_bag(tgrad.tensor(c["idx"]), w, off, mode=c["mode"],
                        per_sample_weights=psw, padding_idx=c["pad"],
                        include_last_offset=c["ilo"])
    y.backward(tgrad.tensor(c["g"]))
    return [y.shape, y.dtype.name, y.detach().numpy().tobytes(), w.grad.numpy().tobytes()]


def _spied_run(monkeypatch, kernel: str, c: dict, noncontig: bool) -> tuple:
    """_run(c) with _numpy_bag.<kernel> spied on: (the results, whether it was called)."""
    calls = []
    fwd = getattr(_numpy_bag, kernel)

    def spy(*a):
        calls.append(1)
        return fwd(*a)
    with monkeypatch.context() as m:
        m.setattr(_numpy_bag, kernel, spy)
        return _run(c, noncontig), bool(calls)


def _composite_run(monkeypatch, gate: str, c: dict, noncontig: bool) -> list:
    """_run(c) with _embedding_bag.<gate> saying no: the composite's results."""
    with monkeypatch.context() as m:
        m.setattr(_embedding_bag, gate, lambda *a: False)
        return _run(c, noncontig)


def _both(monkeypatch, c: dict, noncontig: bool) -> tuple:
    fast, called = _spied_run(monkeypatch, "segment_sums", c, noncontig)
    assert called
    return fast, _composite_run(monkeypatch, "_fast_bag", c, noncontig)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("step_cost", [0, 4000, 10 ** 9])  # loop / either / np.add.at
def test_embedding_bag_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt,
                                                                   step_cost):
    monkeypatch.setattr(_numpy_bag, "_STEP_COST", step_cost)
    rng = np.random.default_rng(step_cost % 97)
    for trial in range(48):
        c = _case(rng, dt, trial)
        fast, slow = _both(monkeypatch, c, trial % 5 == 3)
        assert fast == slow, (trial, c["mode"], c["offsets"], c["pad"], c["psw"] is not None)


def test_embedding_bag_fast_path_node_and_composite_fallbacks():
    w = tgrad.tensor(np.ones((5, 2)), requires_grad=True)
    idx = tgrad.tensor([[0, 1], [2, 4]])
    assert F.embedding_bag(idx, w, mode="mean").grad_fn.name() == "EmbeddingBagBackward0"
    psw = tgrad.tensor(np.ones((2, 2)), requires_grad=True)  # its gradient: the composite
    y = F.embedding_bag(idx, w, mode="sum", per_sample_weights=psw)
    assert y.grad_fn.name() != "EmbeddingBagBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(psw.grad.numpy(), np.full((2, 2), 2.0))
    np.testing.assert_array_equal(w.grad.numpy(), [[1, 1], [1, 1], [1, 1], [0, 0], [1, 1]])


def test_embedding_bag_fast_path_against_a_float64_loop():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((50, 16)).astype(np.float32)
    idx = rng.integers(0, 50, 300)
    off = np.sort(rng.choice(np.arange(1, 300), 40, replace=False))
    off = np.concatenate([[0], off, [off[-1]]])  # (an empty bag)
    psw = rng.standard_normal(300).astype(np.float32)
    g = rng.standard_normal((len(off), 16)).astype(np.float32)
    ends = np.append(off[1:], 300)
    for mode, pad in (("sum", None), ("mean", 7), ("sum", 3)):
        p = psw if mode == "sum" else None
        wt = tgrad.tensor(w, requires_grad=True)
        y = F.embedding_bag(tgrad.tensor(idx), wt, tgrad.tensor(off), mode=mode,
                            per_sample_weights=None if p is None else tgrad.tensor(p),
                            padding_idx=pad)
        y.backward(tgrad.tensor(g))
        want = np.zeros((len(off), 16))
        gw = np.zeros((50, 16))
        for b, (s, e) in enumerate(zip(off, ends)):
            kept = [i for i in range(s, e) if idx[i] != pad]
            scale = 1.0 / max(len(kept), 1) if mode == "mean" else 1.0
            for i in kept:
                f = (1.0 if p is None else float(p[i])) * scale
                want[b] += f * w[idx[i]].astype(np.float64)
                gw[idx[i]] += f * g[b]
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,two_d,pad", [("sum", True, None), ("mean", True, 2),
                                            ("mean", False, None), ("sum", False, 1)])
def test_embedding_bag_fast_path_gradcheck_and_gradgradcheck(mode, two_d, pad):
    rng = np.random.default_rng(9)
    w = tgrad.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    if two_d:
        idx, off = tgrad.tensor(rng.integers(0, 6, (4, 3))), None
        psw = tgrad.tensor(rng.standard_normal((4, 3))) if mode == "sum" else None
    else:
        idx, off = tgrad.tensor(rng.integers(0, 6, 9)), tgrad.tensor([0, 2, 2, 7])
        psw = tgrad.tensor(rng.standard_normal(9)) if mode == "sum" else None

    def fn(t):
        return F.embedding_bag(idx, t, off, mode=mode, per_sample_weights=psw,
                               padding_idx=pad)
    assert fn(w).grad_fn.name() == "EmbeddingBagBackward0"
    assert gradcheck(fn, (w,))
    assert gradgradcheck(fn, (w,))


# ------------------------------------------------------------------ mode 'max' (_BagMax)
def _max_case(rng, dt, trial: int) -> dict:
    """_case for mode 'max': ties (small integers), +-0, inf and NaN weights."""
    c = _case(rng, dt, trial)
    c["mode"], c["psw"] = "max", None
    w = c["w"]
    if trial % 3 == 0:  # many ties, +-0 among them
        w[...] = rng.integers(-2, 3, w.shape).astype(dt)
        w.reshape(-1)[::5] = -0.0
    if trial % 7 == 2:
        w.reshape(-1)[1::6] = np.nan
    if trial % 4 == 3:
        w.reshape(-1)[::3] = -np.inf
    return c


def _max_both(monkeypatch, c: dict, noncontig: bool) -> tuple:
    fast, called = _spied_run(monkeypatch, "segment_first_max", c, noncontig)
    assert called or c["idx"].size == 0 or (c["offsets"] is not None and c["ilo"])
    return fast, _composite_run(monkeypatch, "_fast_max", c, noncontig)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("free,step_cost", [(64, 0), (0, 4000), (64, 10 ** 9),
                                            (0, 10 ** 9)])  # kernel ... composite
def test_embedding_bag_max_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt, free,
                                                                       step_cost):
    monkeypatch.setattr(_numpy_bag, "_STEP_COST", step_cost)
    monkeypatch.setattr(_numpy_bag, "_FREE_STEPS", free)
    rng = np.random.default_rng(step_cost % 89 + 1)
    for trial in range(60):
        c = _max_case(rng, dt, trial)
        fast, slow = _max_both(monkeypatch, c, trial % 5 == 3)
        assert fast == slow, (trial, c["offsets"], c["pad"])


def test_embedding_bag_max_fast_path_max_indices_match_the_composite(monkeypatch):
    from tgrad.nn._embedding_bag import _embedding_bag as eb
    rng = np.random.default_rng(5)
    for trial in range(30):
        c = _max_case(rng, np.float32, trial)
        if c["idx"].size == 0:
            continue
        args = (tgrad.tensor(c["idx"]), tgrad.tensor(c["w"]),
                None if c["offsets"] is None else tgrad.tensor(c["offsets"]), None, 2, False,
                "max", False, None, c["ilo"], c["pad"])
        fast = eb(*args)
        with monkeypatch.context() as m:
            m.setattr(_embedding_bag, "_fast_max", lambda *a: False)
            slow = eb(*args)
        if fast[5] is None or slow[5] is None:
            assert fast[5] is None and slow[5] is None
            continue
        np.testing.assert_array_equal(fast[5].numpy(), slow[5].numpy())


def test_embedding_bag_max_fast_path_against_a_float64_loop():
    rng = np.random.default_rng(4)
    w = rng.integers(-3, 4, (40, 8)).astype(np.float64)  # ties: the first entry wins
    idx = rng.integers(0, 40, 200)
    off = np.concatenate([[0, 0], np.sort(rng.choice(np.arange(1, 200), 30, replace=False))])
    g = rng.standard_normal((len(off), 8))
    ends = np.append(off[1:], 200)
    for pad in (None, 5):
        wt = tgrad.tensor(w, requires_grad=True)
        y = F.embedding_bag(tgrad.tensor(idx), wt, tgrad.tensor(off), mode="max",
                            padding_idx=pad)
        assert y.grad_fn.name() == "EmbeddingBagBackward0"
        y.backward(tgrad.tensor(g))
        want, gw = np.zeros((len(off), 8)), np.zeros((40, 8))
        for b, (s, e) in enumerate(zip(off, ends)):
            kept = [i for i in range(s, e) if idx[i] != pad]
            for d in range(8):
                if kept:
                    i = max(kept, key=lambda i: (w[idx[i], d], -i))
                    want[b, d] = w[idx[i], d]
                    gw[idx[i], d] += g[b, d]
        np.testing.assert_array_equal(y.detach().numpy(), want)
        np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("two_d,pad", [(True, None), (True, 2), (False, None), (False, 1)])
def test_embedding_bag_max_fast_path_gradcheck_gradgradcheck_forward_ad(two_d, pad):
    import tgrad.autograd.forward_ad as fwad
    rng = np.random.default_rng(11)
    w = tgrad.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    if two_d:
        idx, off = tgrad.tensor(rng.integers(0, 6, (4, 3))), None
    else:
        idx, off = tgrad.tensor(rng.integers(0, 6, 9)), tgrad.tensor([0, 2, 2, 7])

    def fn(t):
        return F.embedding_bag(idx, t, off, mode="max", padding_idx=pad)
    assert fn(w).grad_fn.name() == "EmbeddingBagBackward0"
    assert gradcheck(fn, (w,))
    assert gradgradcheck(fn, (w,))
    t = tgrad.tensor(rng.standard_normal((6, 3)))
    jvps = []
    for fast in (True, False):  # the tangent at each bag's maximal entry, as the composite
        with pytest.MonkeyPatch.context() as m:
            if not fast:
                m.setattr(_embedding_bag, "_fast_max", lambda *a: False)
            with fwad.dual_level():
                y = fn(fwad.make_dual(w.detach(), t))
                assert (y.grad_fn is None or fast
                        or y.grad_fn.name() != "EmbeddingBagBackward0")
                jvps.append(fwad.unpack_dual(y).tangent.numpy())
    np.testing.assert_array_equal(jvps[0], jvps[1])
