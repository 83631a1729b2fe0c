"""GroupNorm's plain CPU backward on the NumPy arrays (tgrad/nn/_norm.py
``_group_norm_bwd_host``) against the tgrad-op path it replaces (forced by monkeypatching
``_host_group_norm_bwd``): bit-identical dx, dw, db over shapes, groups, affine or not,
contiguous and transposed gradients, NaN / inf / -0.0 values; create_graph keeps the tgrad
ops (gradcheck / gradgradcheck in float64)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import _norm

CASES = [((8, 32, 16, 16), 8), ((2, 6, 5), 3), ((3, 4, 7, 1), 2), ((1, 17, 3, 3), 17),
         ((4, 8), 4), ((2, 4, 1025), 1), ((0, 4, 3), 2)]


def _grads(shape, groups, dt, affine, transposed_g, special, host, monkeypatch) -> list:
    rng = np.random.default_rng(sum(shape) + groups)
    a = rng.standard_normal(shape).astype(dt)
    if special and a.size:
        flat = a.reshape(-1)
        flat[::11] = -0.0
        flat[5::97] = np.inf
        flat[7::101] = np.nan
    wa, ba = (rng.standard_normal(shape[1]).astype(dt) for _ in range(2))
    g = rng.standard_normal(shape).astype(dt)
    with monkeypatch.context() as m:
        if not host:
            m.setattr(_norm, "_host_group_norm_bwd", lambda *args: False)
        x = tgrad.tensor(a, requires_grad=True)
        w = tgrad.tensor(wa, requires_grad=True) if affine else None
        b = tgrad.tensor(ba, requires_grad=True) if affine else None
        y = F.group_norm(x, groups, w, b)
        gt = tgrad.tensor(g)
        if transposed_g and g.ndim >= 2:
            gt = tgrad.tensor(np.ascontiguousarray(np.swapaxes(g, -1, -2))).transpose(-1, -2)
        y.backward(gt)
        return [t.grad.numpy().tobytes() for t in (x, w, b) if t is not None]


@pytest.mark.parametrize("shape,groups", CASES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("transposed_g", [False, True])
def test_group_norm_host_backward_is_the_op_path(shape, groups, dt, affine, transposed_g,
                                                  monkeypatch):
    for special in (False, True):
        args = (shape, groups, dt, affine, transposed_g, special)
        assert _grads(*args, True, monkeypatch) == _grads(*args, False, monkeypatch)


def test_group_norm_host_backward_is_taken_only_without_a_graph(monkeypatch):
    calls = []
    real = _norm._group_norm_bwd_host
    monkeypatch.setattr(_norm, "_group_norm_bwd_host",
                        lambda *a: calls.append(1) or real(*a))
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((2, 4, 5)), requires_grad=True)
    w = tgrad.ones(4, dtype=tgrad.float64, requires_grad=True)
    F.group_norm(x, 2, w).sum().backward()
    assert calls == [1]
    (gx,) = tgrad.autograd.grad(F.group_norm(x, 2, w).pow(2).sum(), x, create_graph=True)
    assert calls == [1] and gx.requires_grad  # create_graph: the tgrad ops


def test_group_norm_gradcheck_float64():
    rng = np.random.default_rng(1)
    x = tgrad.tensor(rng.standard_normal((2, 6, 3)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(6), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(6), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 3, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.group_norm(x, 3, w, b), (x, w, b))


@pytest.mark.parametrize("host", [True, False])
def test_group_norm_empty_batch_gradients_are_zero(host, monkeypatch):
    # PyTorch: an empty batch gives empty dx and zero dw, db (the op path's reshape(n, c, -1)
    # raised for n = 0 before)
    if not host:
        monkeypatch.setattr(_norm, "_host_group_norm_bwd", lambda *args: False)
    x = tgrad.zeros((0, 4, 3), requires_grad=True)
    w, b = tgrad.ones(4, requires_grad=True), tgrad.zeros(4, requires_grad=True)
    F.group_norm(x, 2, w, b).sum().backward()
    assert x.grad.shape == (0, 4, 3)
    assert np.array_equal(w.grad.numpy(), np.zeros(4)) and np.array_equal(b.grad.numpy(),
                                                                         np.zeros(4))
