"""scatter_reduce / index_reduce beyond the op table (tests/op_db.py runs every reduction,
both include_self forms, through forward, gradcheck and gradgradcheck in float64 and the
interpreted cuda device): PyTorch's documented examples, ties and NaN in amax/amin, the
gradient of products with zeros, integer dtypes (exact on cuda too), in-place forms and
errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

F64 = tgrad.float64


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def test_pytorch_documented_examples():
    src = tgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    index = tgrad.tensor([0, 1, 0, 1, 2, 1])
    x = tgrad.tensor([1.0, 2.0, 3.0, 4.0])
    assert x.scatter_reduce(0, index, src, reduce="sum").tolist() == [5.0, 14.0, 8.0, 4.0]
    assert x.scatter_reduce(0, index, src, reduce="sum",
                            include_self=False).tolist() == [4.0, 12.0, 5.0, 4.0]
    x2 = tgrad.tensor([5.0, 4.0, 3.0, 2.0])
    assert x2.scatter_reduce(0, index, src, reduce="amax").tolist() == [5.0, 6.0, 5.0, 2.0]
    assert x2.scatter_reduce(0, index, src, reduce="amax",
                             include_self=False).tolist() == [3.0, 6.0, 5.0, 2.0]


def test_ties_share_the_gradient_and_nan_propagates():
    x = _t([2.0, 0.0, 5.0], requires_grad=True)
    src = _t([2.0, 2.0, 1.0, 7.0], requires_grad=True)
    idx = tgrad.tensor([0, 0, 1, 1])
    x.scatter_reduce(0, idx, src, "amax").backward(_t([6.0, 1.0, 1.0]))
    assert x.grad.tolist() == [2.0, 0.0, 1.0]  # x[0] ties with two src values: a third each
    assert src.grad.tolist() == [2.0, 2.0, 0.0, 1.0]
    # include_self=False: an excluded x equal to the result takes no share (PyTorch gives
    # the unique maximum src[0] only half here, a known bug; the derivative is 1)
    s = _t([3.0, 5.0], requires_grad=True)
    v = _t([3.0, 1.0], requires_grad=True)
    s.scatter_reduce(0, tgrad.tensor([0, 0]), v, "amax", include_self=False).sum().backward()
    assert v.grad.tolist() == [1.0, 0.0] and s.grad.tolist() == [0.0, 1.0]
    nan = float("nan")
    for r in ("amax", "amin"):
        out = _t([1.0, 2.0, nan]).scatter_reduce(0, tgrad.tensor([0, 0, 1]),
                                                 _t([nan, 3.0, -1.0]), r)
        assert np.isnan(out[0].item()) and out[1].item() == (2.0 if r == "amax" else -1.0)
        assert np.isnan(out[2].item())  # kept: nothing scattered there


def test_product_gradient_with_zeros():
    # target 0 receives one zero (its other contributors get 0, the zero gets their
    # product); target 1 receives two zeros (all 0); target 2 none (x's gradient is g)
    x = _t([3.0, 2.0, 4.0], requires_grad=True)
    src = _t([0.0, 5.0, 0.0, 0.0, 7.0], requires_grad=True)
    out = x.scatter_reduce(0, tgrad.tensor([0, 0, 1, 1, 1]), src, "prod")
    assert out.tolist() == [0.0, 0.0, 4.0]
    out.backward(_t([1.0, 1.0, 1.0]))
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    assert src.grad.tolist() == [15.0, 0.0, 0.0, 0.0, 0.0]
    a = _t([[1.5, -2.0], [0.5, 3.0]], requires_grad=True)
    b = _t([[0.0, 1.0], [2.0, 0.5], [1.0, -1.0]], requires_grad=True)
    idx = tgrad.tensor([[0, 1], [0, 0], [1, 1]])
    for incl in (True, False):
        assert gradcheck(lambda p, q, incl=incl: p.scatter_reduce(
            0, idx, q, "prod", include_self=incl), (a, b))
    # a NaN or inf among the others of a zero product: 0 * NaN is NaN (was 0), as prod's own
    # backward; a NaN contributor's own gradient is still the others' product (0 here)
    for bad in (np.nan, np.inf):
        x = _t([1.0, 2.0], requires_grad=True)
        src = _t([bad, 0.0, 3.0, 0.0, 0.0], requires_grad=True)
        x.scatter_reduce(0, tgrad.tensor([0, 0, 0, 1, 1]), src, "prod").sum().backward()
        v = [1.0, bad, 0.0, 3.0]  # target 0's contributors: x[0], src[0], src[1], src[2]
        with np.errstate(invalid="ignore"):  # [nan, 0, nan, nan] for NaN, [nan, 0, inf, nan]
            want = [np.prod(v[:i] + v[i + 1:]) for i in range(4)]
        np.testing.assert_array_equal(x.grad.numpy(), [want[0], 0.0])
        np.testing.assert_array_equal(src.grad.numpy(), want[1:] + [0.0, 0.0])


def test_product_second_derivatives_with_zeros():
    # one or two zeros among a target's contributors: a product of the others that holds
    # exactly one zero is 0 but has a derivative in that zero (the product of the rest); it
    # was a constant 0, so every second derivative through it was 0
    x = _t([0.0, 2.0, 3.0, 0.0], requires_grad=True)
    src = _t([[0.0, 5.0], [1.5, 0.0], [-2.0, 4.0], [0.0, 0.5], [3.0, 0.0]], requires_grad=True)
    idx = tgrad.tensor([[0, 1], [0, 1], [1, 2], [2, 3], [3, 3]])
    for incl in (True, False):
        for op in (lambda p, q, incl=incl: p.scatter_reduce(0, idx[:, 0], q[:, 0], "prod",
                                                            include_self=incl),
                   lambda p, q, incl=incl: p.index_reduce(0, idx[:, 1], q[:, 1], "prod",
                                                          include_self=incl)):
            assert gradgradcheck(op, (x, src))
    # the audit's case: d/d self of the gradient of src[0] is src[1]
    a = _t([0.0], requires_grad=True)
    b = _t([3.0, 2.0], requires_grad=True)
    _, gb = tgrad.autograd.grad(a.scatter_reduce(0, tgrad.tensor([0, 0]), b, "prod").sum(),
                                [a, b], create_graph=True)
    assert tgrad.autograd.grad(gb[0], a)[0].tolist() == [2.0]


def test_integers_exact_on_both_backends():
    big = np.array([2**40 + 1, 3, 2**30 + 7, -(2**45), 5])
    idx = np.array([0, 0, 2, 2, 1])
    x = np.array([7, -1, 2**33])
    want = {"sum": [2**40 + 11, 4, 2**33 + 2**30 + 7 - 2**45],
            "amax": [2**40 + 1, 5, 2**33], "amin": [3, -1, -(2**45)],
            "mean": [(2**40 + 11) // 3, 2, (2**33 + 2**30 + 7 - 2**45) // 3],
            "prod": [7 * 3 * (2**40 + 1), -5, None]}
    devices = ["cpu"] + (["cuda"] if tgrad.cuda.is_available() else [])
    for dev in devices:
        for r, w in want.items():
            out = tgrad.tensor(x, device=dev).scatter_reduce(
                0, tgrad.tensor(idx, device=dev), tgrad.tensor(big, device=dev), r)
            got = out.cpu().tolist()
            assert out.dtype is tgrad.int64
            assert got[:2] == w[:2] and (w[2] is None or got[2] == w[2]), (dev, r, got)
        # index_add / scatter_add of int64 add in int64 (not through float32)
        out = tgrad.zeros(3, dtype=tgrad.int64, device=dev).index_add(
            0, tgrad.tensor(idx[:3], device=dev), tgrad.tensor(big[:3], device=dev))
        assert out.cpu().tolist() == [2**40 + 4, 0, 2**30 + 7]


def test_index_reduce_and_inplace_forms():
    x = np.arange(6.0).reshape(3, 2)
    src = np.array([[10.0, -1.0], [4.0, 9.0], [-3.0, 2.0], [1.0, 1.0]])
    idx = np.array([0, 2, 0, 1])
    t = _t(x)
    out = t.index_reduce(0, tgrad.tensor(idx), _t(src), "amax")
    assert out.tolist() == [[10.0, 2.0], [2.0, 3.0], [4.0, 9.0]]
    out = t.index_reduce(0, tgrad.tensor(idx), _t(src), "mean", include_self=False)
    assert out.tolist() == [[3.5, 0.5], [1.0, 1.0], [4.0, 9.0]]
    y = _t(x)
    view = y[1:]
    assert view.index_reduce_(0, tgrad.tensor([1, 1]), _t(src[:2]), "prod") is view
    assert y.tolist() == [[0.0, 1.0], [2.0, 3.0], [160.0, -45.0]]
    y.scatter_reduce_(1, tgrad.tensor([[1], [1], [0]]), _t([[7.0], [1.0], [8.0]]), "amin",
                      include_self=False)
    assert y.tolist() == [[0.0, 7.0], [2.0, 1.0], [8.0, -45.0]]
    leaf = _t(x, requires_grad=True)
    assert gradgradcheck(lambda a: a.index_reduce(0, tgrad.tensor(idx[:2]), a[:2] * 2, "mean"),
                         (leaf,))


def test_errors():
    x, idx, src = _t(np.zeros(3)), tgrad.tensor([0, 1]), _t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, "
                                           "amax or amin, got median"):
        x.scatter_reduce(0, idx, src, "median")  # ("max" / "min" are amax / amin's aliases)
    with pytest.raises(RuntimeError, match=r"index_reduce\(\): Expected reduce to be one of "
                                           r"prod, mean, amax or amin but got sum\."):
        x.index_reduce(0, idx, src, "sum")
    with pytest.raises(RuntimeError, match=r"scatter_reduce\(\): Expected self\.dtype to be "
                                           r"equal to src\.dtype"):
        x.scatter_reduce(0, idx, src.float(), "sum")
    with pytest.raises(RuntimeError, match=r"scatter_reduce\(\): index 3 is out of bounds for "
                                         r"dimension 0 with size 3"):
        x.scatter_reduce(0, tgrad.tensor([3]), src, "amax")
    with pytest.raises(RuntimeError, match="not implemented for bool"):  # mean only
        tgrad.zeros(2, dtype=tgrad.bool).scatter_reduce(0, idx, tgrad.ones(2, dtype=tgrad.bool),
                                                        "mean")
    with pytest.raises(RuntimeError, match="same slice shapes"):
        _t(np.zeros((3, 2))).index_reduce(0, idx, _t(np.zeros((2, 3))), "amax")


def test_index_reduce_bool_index_checks_and_tied_extremes():
    b = tgrad.tensor([[True, False, True]])
    src = tgrad.tensor([[False, True]])
    idx = tgrad.tensor([0, 0])
    # bool input with include_self: prod is all, amax any, amin all (PyTorch's)
    assert b.index_reduce(1, idx, src, "amax").tolist() == [[True, False, True]]
    assert b.index_reduce(1, idx, src, "amin").tolist() == [[False, False, True]]
    assert b.index_reduce(1, idx, src, "prod").tolist() == [[False, False, True]]
    for reduce, include_self in (("mean", True), ("amax", False)):
        with pytest.raises(NotImplementedError, match="not implemented for bool"):
            b.index_reduce(1, idx, src, reduce, include_self=include_self)
    x = _t(np.zeros((5, 3)))
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to "
                                           r"source\.size\(dim\): \(3\), for dim: 0"):
        x.index_reduce(0, tgrad.tensor([0, 1]), _t(np.ones((3, 3))), "prod")
    for bad in (7, -1):
        with pytest.raises(IndexError, match=f"index_reduce\\(\\): index {bad} is out of range "
                                             f"for dimension 0 with size 5"):
            x.index_reduce(0, tgrad.tensor([0, bad]), _t(np.ones((2, 3))), "amax")
    # amax, include_self=False: the two tied sources share the gradient (w / 2 each) though
    # input's own value ties too (it does not take part); hand-computed
    a = _t([1.0, 2.0, 3.0], requires_grad=True)
    s = _t([1.0, 1.0, 2.0], requires_grad=True)
    out = a.index_reduce(0, tgrad.tensor([0, 0, 1]), s, "amax", include_self=False)
    assert out.tolist() == [1.0, 2.0, 3.0]
    out.backward(_t([4.0, 6.0, 8.0]))
    assert s.grad.tolist() == [2.0, 2.0, 6.0]
    assert a.grad.tolist() == [0.0, 0.0, 8.0]


def test_scatter_with_the_deprecated_reduce_argument():
    # PyTorch's scatter(..., reduce='add' | 'multiply'): accumulate into a copy of input
    x = tgrad.ones(2, 4, dtype=tgrad.float64)
    idx = tgrad.tensor([[0, 1, 0], [3, 3, 2]])
    src = tgrad.arange(1.0, 7.0, dtype=tgrad.float64).reshape(2, 3)
    want_add = np.ones((2, 4))
    want_mul = np.ones((2, 4))
    for (i, j), v in zip([(0, 0), (0, 1), (0, 0), (1, 3), (1, 3), (1, 2)], range(1, 7)):
        want_add[i, j] += v
        want_mul[i, j] *= v
    np.testing.assert_array_equal(tgrad.scatter(x, 1, idx, src, reduce="add").numpy(), want_add)
    np.testing.assert_array_equal(x.scatter(1, idx, src, reduce="multiply").numpy(), want_mul)
    np.testing.assert_array_equal(x.scatter(1, idx, 2.0, reduce="multiply").numpy(),
                                  [[4.0, 2.0, 1.0, 1.0], [1.0, 1.0, 2.0, 4.0]])
    with pytest.raises(RuntimeError, match="either add or multiply"):
        x.scatter(1, idx, src, reduce="max")


def test_max_and_min_are_amax_and_amin():
    # PyTorch's scatter_reduce also takes reduce="max" / "min" (amax / amin's values and
    # gradients)
    x = _t([0.0, 4.0, -1.0], requires_grad=True)
    src = _t([3.0, 2.0, 7.0, -5.0], requires_grad=True)
    idx = tgrad.tensor([0, 0, 1, 2])
    for alias, name in (("max", "amax"), ("min", "amin")):
        for incl in (True, False):
            got = x.scatter_reduce(0, idx, src, alias, include_self=incl)
            want = x.scatter_reduce(0, idx, src, name, include_self=incl)
            ref = np.array([0.0, 4.0, -1.0]) if incl else np.full(3, np.nan)
            for i, v in zip([0, 0, 1, 2], [3.0, 2.0, 7.0, -5.0]):
                ref[i] = v if np.isnan(ref[i]) else (max if alias == "max" else min)(ref[i], v)
            np.testing.assert_array_equal(got.detach().numpy(), ref)
            gx, gs = tgrad.autograd.grad(got.sum(), [x, src])
            wx, ws = tgrad.autograd.grad(want.sum(), [x, src])
            np.testing.assert_array_equal(gx.numpy(), wx.numpy())
            np.testing.assert_array_equal(gs.numpy(), ws.numpy())


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_scatter_reduce_prod_backward_numpy_path_is_bit_identical(monkeypatch, dt):
    # _prod_grads_np (CPU, no create_graph) against _prod_grads' tgrad ops, forced by
    # monkeypatching _fast_prod: zeros (one, two), -0, inf and NaN contributors, include_self
    import sys
    sr = sys.modules["tgrad.ops.scatter_reduce"]
    rng = np.random.default_rng(12)
    for trial in range(30):
        r, c = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        x = rng.standard_normal((r, c)).astype(dt)
        src = rng.standard_normal((r, c + 2)).astype(dt)
        if trial % 2:
            src[rng.random(src.shape) < 0.3] = 0
            x[rng.random(x.shape) < 0.3] = 0
        if trial % 5 == 1:
            src.reshape(-1)[::7] = np.inf
            x.reshape(-1)[::5] = np.nan
        if trial % 3 == 0:
            src[rng.random(src.shape) < 0.2] = -0.0
        idx = rng.integers(0, c, (r, c + 2))
        g = rng.standard_normal((r, c)).astype(dt)
        for incl in (True, False):
            outs = []
            for fast in (True, False):
                with monkeypatch.context() as m:
                    if not fast:
                        m.setattr(sr, "_fast_prod", lambda *a: False)
                    xt = tgrad.tensor(x, requires_grad=True)
                    st = tgrad.tensor(src, requires_grad=True)
                    y = tgrad.scatter_reduce(xt, 1, tgrad.tensor(idx), st, "prod",
                                             include_self=incl)
                    y.backward(tgrad.tensor(g))
                outs.append((xt.grad.numpy().tobytes(), st.grad.numpy().tobytes()))
            assert outs[0] == outs[1], (trial, incl)
