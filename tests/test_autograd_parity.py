"""PyTorch-parity fixes found by a differential test against torch 2.13: non-leaf
``backward(inputs=...)`` with ``retain_grad``, ``GradientEdge`` as a grad / backward target,
detached ``has_aux`` outputs of ``tgrad.func``, resumed LR schedulers (``last_epoch >= 0``),
optimizer construction (duplicates, named parameters, no empty state) and
``autograd.grad(y, [])``. Expected values are derived by hand or computed in NumPy float64."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd.graph import GradientEdge, get_gradient_edge
from tgrad.optim import lr_scheduler as S

X = np.array([1.0, 2.0, 3.0])


def _x():
    return tgrad.tensor(X.tolist(), dtype=tgrad.float64, requires_grad=True)


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().numpy(), dtype=np.float64)


# y = sum(h^2) with h = 2x:  dy/dh = 2h = 4x,  dy/dx = 8x
DY_DH = 4 * X
DY_DX = 8 * X


# ------------------------------------------------------- 1. backward(inputs=[non-leaf])
@pytest.mark.parametrize("with_x", [False, True])
def test_backward_inputs_nonleaf_with_retain_grad_counts_once(with_x):
    x = _x()
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward(inputs=[h, x] if with_x else [h])
    np.testing.assert_allclose(_np(h.grad), DY_DH, rtol=0, atol=0)
    if with_x:
        np.testing.assert_allclose(_np(x.grad), DY_DX, rtol=0, atol=0)
    else:
        assert x.grad is None


def test_backward_inputs_nonleaf_retains_grad_afterwards():
    x = _x()
    h = x * 2
    y = (h * h).sum()
    y.backward(inputs=[h], retain_graph=True)
    assert h.retains_grad  # as PyTorch: a non-leaf input is made to retain its grad
    np.testing.assert_allclose(_np(h.grad), DY_DH)
    y.backward(inputs=[h], retain_graph=True)  # accumulates once per backward
    np.testing.assert_allclose(_np(h.grad), 2 * DY_DH)
    y.backward()  # a plain backward fills it too now
    np.testing.assert_allclose(_np(h.grad), 3 * DY_DH)
    np.testing.assert_allclose(_np(x.grad), DY_DX)


@pytest.mark.parametrize("retain", [False, True])
def test_backward_inputs_nonleaf_sees_hooked_gradient_once(retain):
    x = _x()
    h = x * 2
    if retain:
        h.retain_grad()
    h.register_hook(lambda g: g * 10)
    (h * h).sum().backward(inputs=[h])
    np.testing.assert_allclose(_np(h.grad), 10 * DY_DH)


def test_backward_inputs_nonleaf_create_graph():
    x = _x()
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward(inputs=[h], create_graph=True)
    np.testing.assert_allclose(_np(h.grad), DY_DH)
    assert h.grad.requires_grad  # dy/dh = 2h = 4x is differentiable: d sum(4x)/dx = 4
    (gx,) = tgrad.autograd.grad(h.grad.sum(), x)
    np.testing.assert_allclose(_np(gx), np.full(3, 4.0))


# ------------------------------------------------------------------ 2. GradientEdge
def test_grad_with_respect_to_gradient_edges():
    x = _x()
    h = x * 2
    y = (h * h).sum()
    e = get_gradient_edge(h)
    assert isinstance(e, GradientEdge)
    (gh,) = tgrad.autograd.grad(y, e, retain_graph=True)
    np.testing.assert_allclose(_np(gh), DY_DH)
    gh, gx = tgrad.autograd.grad(y, [e, x], retain_graph=True)
    np.testing.assert_allclose(_np(gh), DY_DH)
    np.testing.assert_allclose(_np(gx), DY_DX)
    (gx,) = tgrad.autograd.grad(y, get_gradient_edge(x))  # a leaf's edge
    np.testing.assert_allclose(_np(gx), DY_DX)
    assert x.grad is None and h.grad is None


def test_backward_inputs_gradient_edges():
    x = _x()
    h = x * 2
    y = (h * h).sum()
    y.backward(inputs=[get_gradient_edge(h)], retain_graph=True)
    assert x.grad is None and h._grad is None  # a non-leaf edge fills no .grad (as PyTorch)
    y.backward(inputs=get_gradient_edge(x))
    np.testing.assert_allclose(_np(x.grad), DY_DX)


def test_gradient_edge_outputs():
    x = _x()
    h = x * 2
    y = (h * h).sum()
    ones = tgrad.ones(3, dtype=tgrad.float64)
    (g,) = tgrad.autograd.grad(get_gradient_edge(h), x, grad_outputs=ones, retain_graph=True)
    np.testing.assert_allclose(_np(g), np.full(3, 2.0))  # d(2x)/dx
    (g,) = tgrad.autograd.grad(get_gradient_edge(y), x, retain_graph=True)  # implicit 1
    np.testing.assert_allclose(_np(g), DY_DX)
    g1 = tgrad.tensor(3.0, dtype=tgrad.float64)
    (g,) = tgrad.autograd.grad([y, get_gradient_edge(h)], x, grad_outputs=[g1, ones],
                               retain_graph=True)
    np.testing.assert_allclose(_np(g), 3 * DY_DX + 2.0)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        tgrad.autograd.grad(get_gradient_edge(h), x, retain_graph=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        tgrad.autograd.grad(get_gradient_edge(h), x, grad_outputs=tgrad.ones(2),
                            retain_graph=True)
    with pytest.raises(RuntimeError, match="Batched grads are not supported with GradientEdge"):
        tgrad.autograd.grad(get_gradient_edge(h), x, grad_outputs=tgrad.ones(2, 3),
                            is_grads_batched=True, retain_graph=True)
    x.grad = None
    tgrad.autograd.backward(get_gradient_edge(y))
    np.testing.assert_allclose(_np(x.grad), DY_DX)


def test_gradient_edge_unused_and_materialize():
    x = _x()
    y = (x * x).sum()
    z = tgrad.tensor([1.0], requires_grad=True)
    unused = get_gradient_edge(z * 3)
    assert tgrad.autograd.grad(y, unused, allow_unused=True, retain_graph=True) == (None,)
    with pytest.raises(RuntimeError, match="index 0 appears to not have been used"):
        tgrad.autograd.grad(y, unused, retain_graph=True)
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given "
                                           "input is a GradientEdge"):
        tgrad.autograd.grad(y, unused, materialize_grads=True, retain_graph=True)
    (g,) = tgrad.autograd.grad(y, get_gradient_edge(x), materialize_grads=True)  # used: fine
    np.testing.assert_allclose(_np(g), 2 * X)


# --------------------------------------------------------------- 6. grad(y, []) raises
@pytest.mark.parametrize("inputs", [[], ()])
def test_grad_empty_inputs_raises(inputs):
    x = _x()
    y = (x * x).sum()
    msg = "`inputs` argument to `grad()` cannot be empty."
    with pytest.raises(RuntimeError) as info:
        tgrad.autograd.grad(y, inputs)
    assert str(info.value) == msg
    with pytest.raises(RuntimeError) as info:
        tgrad.autograd.grad([], inputs)
    assert str(info.value) == msg
    with pytest.raises(RuntimeError) as info:
        tgrad.autograd.grad(y, inputs, allow_unused=True, is_grads_batched=True)
    assert str(info.value) == msg


# ------------------------------------------------------------- 3. tgrad.func has_aux
def _xp():
    return tgrad.tensor(X.tolist(), dtype=tgrad.float64)  # a plain input (no grad)


def test_func_grad_aux_detached():
    g, aux = tgrad.func.grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(_xp())
    np.testing.assert_allclose(_np(g), 2 * X)
    assert not aux.requires_grad and aux.grad_fn is None
    np.testing.assert_allclose(_np(aux), 2 * X)


def test_func_grad_and_value_aux_pytree_detached():
    def f(x):
        return (x ** 2).sum(), {"a": x * 2, "b": (x * 3, [x + 1])}

    g, (v, aux) = tgrad.func.grad_and_value(f, has_aux=True)(_xp())
    np.testing.assert_allclose(_np(g), 2 * X)
    assert v.item() == pytest.approx(float((X ** 2).sum()))
    leaves = [aux["a"], aux["b"][0], aux["b"][1][0]]
    assert isinstance(aux["b"], tuple) and isinstance(aux["b"][1], list)
    for leaf, want in zip(leaves, [2 * X, 3 * X, X + 1]):
        assert not leaf.requires_grad
        np.testing.assert_allclose(_np(leaf), want)


def test_func_vjp_jacrev_jacfwd_aux_detached():
    out, vjp_fn, aux = tgrad.func.vjp(lambda x: (x ** 2, [x * 2]), _xp(), has_aux=True)
    assert isinstance(aux, list) and not aux[0].requires_grad
    (g,) = vjp_fn(tgrad.ones(3, dtype=tgrad.float64))
    np.testing.assert_allclose(_np(g), 2 * X)
    for transform in (tgrad.func.jacrev, tgrad.func.jacfwd):
        jac, aux = transform(lambda x: (x ** 2, x * 2), has_aux=True)(_xp())
        np.testing.assert_allclose(_np(jac), np.diag(2 * X))
        assert not aux.requires_grad
        np.testing.assert_allclose(_np(aux), 2 * X)


def test_func_aux_keeps_graph_of_enclosing_transform():
    # outer grad through the inner aux y^2: d/dx sum(x^2) = 2x (as torch.func)
    inner = tgrad.func.grad(lambda y: ((y ** 3).sum(), y ** 2), has_aux=True)
    g = tgrad.func.grad(lambda x: inner(x)[1].sum())(_xp())
    np.testing.assert_allclose(_np(g), 2 * X)
    # an input that already requires grad outside any transform keeps aux on its graph
    _, aux = tgrad.func.grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(_xp())
    assert not aux.requires_grad
    xr = _x()
    _, aux = tgrad.func.grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(xr)
    assert aux.requires_grad  # as torch.func: the input's own graph still tracks aux
    (gx,) = tgrad.autograd.grad(aux.sum(), xr)  # d sum(2x) / dx = 2
    np.testing.assert_allclose(_np(gx), np.full(3, 2.0))


# ------------------------------------------------------ 4. resumed LR schedulers
def _resumable(lr=0.1, initial=0.1):
    p = tgrad.zeros(2, requires_grad=True)
    opt = tgrad.optim.SGD([p], lr=lr)
    opt.param_groups[0]["initial_lr"] = initial
    return opt


def _rates(sched, steps=8) -> list:
    out = [sched.get_last_lr()[0]]
    for _ in range(steps):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out


@pytest.mark.parametrize("last_epoch", [0, 3])
@pytest.mark.parametrize("lr", [0.1, 0.05])
def test_exponential_lr_resumed_keeps_rate(last_epoch, lr):
    sched = S.ExponentialLR(_resumable(lr), 0.9, last_epoch=last_epoch)
    assert sched.last_epoch == last_epoch + 1
    np.testing.assert_allclose(_rates(sched), lr * 0.9 ** np.arange(9), rtol=1e-14)


@pytest.mark.parametrize("lr", [0.1, 0.05])
def test_cosine_annealing_lr_resumed_keeps_rate(lr):
    # construction keeps lr at epoch 4; the recursive form then keeps
    # (lr_e - eta) / (1 + cos(pi e / T)) constant: lr_e = eta + (lr - eta) c_e / c_4
    t_max, eta = 10, 0.01
    sched = S.CosineAnnealingLR(_resumable(lr), t_max, eta_min=eta, last_epoch=3)
    e = np.arange(4, 13)
    c = 1 + np.cos(np.pi * e / t_max)
    want = eta + (lr - eta) * c / c[0]
    want[7:] = [eta + (0.1 - eta) * (1 + math.cos(math.pi * k / t_max)) / 2 for k in (11, 12)]
    # past T_max + 1 the recursive form restarts from initial_lr (0.1): the closed form
    np.testing.assert_allclose(_rates(sched), want, rtol=1e-12)


def test_linear_lr_resumed_keeps_rate():
    # factor f(e) = 0.5 + 0.5 min(e, 6) / 6; resumed at epoch 4 with lr 0.1, lr_e = 0.1 f(e) / f(4)
    sched = S.LinearLR(_resumable(0.1), 0.5, 1.0, total_iters=6, last_epoch=3)
    f = 0.5 + 0.5 * np.minimum(np.arange(4, 13), 6) / 6
    np.testing.assert_allclose(_rates(sched), 0.1 * f / f[0], rtol=1e-14)


def test_linear_lr_resumed_at_zero():
    sched = S.LinearLR(_resumable(0.1), 0.5, 1.0, total_iters=6, last_epoch=0)
    f = 0.5 + 0.5 * np.minimum(np.arange(1, 10), 6) / 6
    np.testing.assert_allclose(_rates(sched), 0.1 * f / f[0], rtol=1e-14)


def test_schedulers_that_already_matched_unchanged_when_resumed():
    # StepLR(2, 0.5) resumed at epoch 4 (a multiple of 2): decays at construction
    np.testing.assert_allclose(_rates(S.StepLR(_resumable(), 2, 0.5, last_epoch=3)),
                               0.1 * 0.5 ** (np.arange(4, 13) // 2 - 1), rtol=1e-14)
    # PolynomialLR(8, power 2): keeps 0.1 at epoch 4, then ratios ((1 - e/8) / (1 - 4/8))^2
    e = np.minimum(np.arange(4, 13), 8)
    np.testing.assert_allclose(_rates(S.PolynomialLR(_resumable(), 8, 2.0, last_epoch=3)),
                               0.1 * ((1 - e / 8) / 0.5) ** 2, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(
        _rates(S.MultiplicativeLR(_resumable(), lambda e: 0.9, last_epoch=3)),
        0.1 * 0.9 ** np.arange(9), rtol=1e-14)
    # a fresh ExponentialLR is unchanged too
    np.testing.assert_allclose(_rates(S.ExponentialLR(_resumable(), 0.9)),
                               0.1 * 0.9 ** np.arange(9), rtol=1e-14)


def test_composites_with_resumed_children():
    # ConstantLR(0.5, 2) resumed past its total_iters does nothing; ExponentialLR decays
    opt = _resumable()
    chain = S.ChainedScheduler([S.ConstantLR(opt, 0.5, 2, last_epoch=3),
                                S.ExponentialLR(opt, 0.9, last_epoch=3)])
    np.testing.assert_allclose(_rates(chain), 0.1 * 0.9 ** np.arange(9), rtol=1e-14)
    # SequentialLR resumed at 3 with milestone 3: ExponentialLR from initial_lr * 0.5 ...
    # PyTorch 2.13's sequence: 0.05, then x 0.9 per step
    opt = _resumable()
    seq = S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 2), S.ExponentialLR(opt, 0.9)], [3],
                         last_epoch=3)
    np.testing.assert_allclose(_rates(seq), 0.05 * 0.9 ** np.arange(9), rtol=1e-14)


# --------------------------------------------------------- 5. optimizer construction
DUP_MSG = ("optimizer contains a parameter group with duplicate parameters; in future, this "
           "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
           "information")


def test_duplicate_parameters_warn_and_are_kept():
    p = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = tgrad.optim.SGD([p, p], lr=0.1)
    assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, DUP_MSG)]
    assert len(opt.param_groups[0]["params"]) == 2
    p.grad = tgrad.ones(2, dtype=tgrad.float64)
    opt.step()  # one update per occurrence: p - 2 * 0.1 * 1
    np.testing.assert_allclose(_np(p), [0.8, 1.8], rtol=1e-15)
    # PyTorch's numbering: a repeated parameter gets the index of its last occurrence
    assert opt.state_dict() == {"state": {}, "param_groups": [
        dict(opt.defaults, params=[1, 1])]}


def test_duplicate_parameters_state_dict_numbering_across_groups():
    p = tgrad.tensor([1.0, 2.0], requires_grad=True)
    q = tgrad.tensor([3.0], requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        opt = tgrad.optim.SGD([{"params": [p, p]}, {"params": [q]}], lr=0.1, momentum=0.9)
    p.grad, q.grad = tgrad.ones(2), tgrad.ones(1)
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[1, 1], [2]]
    assert sorted(sd["state"]) == [1, 2]
    with pytest.warns(UserWarning, match="duplicate parameters"):
        fresh = tgrad.optim.SGD([{"params": [p, p]}, {"params": [q]}], lr=0.1, momentum=0.9)
    fresh.load_state_dict(sd)
    assert len(fresh.state) == 2
    np.testing.assert_allclose(_np(fresh.state[q]["momentum_buffer"]), [1.0])


def test_duplicate_across_groups_still_raises():
    p = tgrad.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="more than one parameter group"):
        tgrad.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


def test_named_parameters():
    p = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    q = tgrad.tensor([3.0], dtype=tgrad.float64, requires_grad=True)
    opt = tgrad.optim.SGD([("a", p), ("b", q)], lr=0.1)
    group = opt.param_groups[0]
    assert group["param_names"] == ["a", "b"]
    assert group["params"][0] is p and group["params"][1] is q
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]
    p.grad = tgrad.ones(2, dtype=tgrad.float64)
    q.grad = tgrad.full((1,), 2.0, dtype=tgrad.float64)
    opt.step()
    np.testing.assert_allclose(_np(p), [0.9, 1.9], rtol=1e-15)
    np.testing.assert_allclose(_np(q), [2.8], rtol=1e-15)

    model = tgrad.nn.Linear(2, 1)
    opt = tgrad.optim.Adam(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]

    opt = tgrad.optim.SGD([{"params": [("a", p)]}, {"params": [("b", q)], "lr": 0.2}], lr=0.1)
    groups = opt.state_dict()["param_groups"]
    assert [g["param_names"] for g in groups] == [["a"], ["b"]]
    assert [g["lr"] for g in groups] == [0.1, 0.2]


def test_named_parameters_errors_and_load():
    p = tgrad.zeros(2, requires_grad=True)
    q = tgrad.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="Some param names are missing"):
        tgrad.optim.SGD([("a", p), q], lr=0.1)
    opt = tgrad.optim.SGD([("a", p)], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [q]})
    opt = tgrad.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group with names"):
        opt.add_param_group({"params": [("b", q)]})
    # a state dict saved without names keeps the loading optimizer's names
    plain = tgrad.optim.SGD([p, q], lr=0.3).state_dict()
    named = tgrad.optim.SGD([("a", p), ("b", q)], lr=0.1)
    named.load_state_dict(plain)
    assert named.param_groups[0]["param_names"] == ["a", "b"]
    assert named.param_groups[0]["lr"] == 0.3


def test_sgd_without_momentum_keeps_no_state():
    p = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    q = tgrad.tensor([3.0], dtype=tgrad.float64, requires_grad=True)
    opt = tgrad.optim.SGD([p, q], lr=0.1)
    p.grad, q.grad = tgrad.ones(2, dtype=tgrad.float64), tgrad.ones(1, dtype=tgrad.float64)
    opt.step()
    assert opt.state_dict()["state"] == {} and len(opt.state) == 0
    np.testing.assert_allclose(_np(p), [0.9, 1.9], rtol=1e-15)
    opt = tgrad.optim.SGD([p, q], lr=0.1, momentum=0.5)
    opt.step()
    sd = opt.state_dict()["state"]
    assert sorted(sd) == [0, 1]
    np.testing.assert_allclose(_np(sd[0]["momentum_buffer"]), [1.0, 1.0])  # b = g at step 1


# ---------------------------------------------- 2nd differential round: autograd.Function,
# autograd.grad's inputs, multi-grad hooks, gradcheck, set_grad_enabled.
def _x64(values):
    return tgrad.tensor(values, dtype=tgrad.float64, requires_grad=True)


class _PassNonDiff(tgrad.autograd.Function):
    """Returns its input unchanged, marked non-differentiable; backward would scale by 100."""

    @staticmethod
    def forward(ctx, x):
        ctx.mark_non_differentiable(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 100


class _DoubleDirtyNonDiff(tgrad.autograd.Function):
    """Doubles its input in place (dirty) and marks it non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        ctx.mark_non_differentiable(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_non_differentiable_returned_input_gets_no_grad():
    # loss = sum(a) + 3 sum(y), y non-differentiable: d loss / da = 1 (y adds nothing)
    a = _x64([1.0, 2.0])
    ai = a * 1
    y = _PassNonDiff.apply(ai)
    assert y is not ai and y.requires_grad is False and y.grad_fn is None
    assert ai.requires_grad is True and ai.grad_fn is not None  # the input keeps its history
    np.testing.assert_array_equal(_np(y), [1.0, 2.0])
    (a.sum() + (y * 3).sum()).backward()
    np.testing.assert_array_equal(_np(a.grad), [1.0, 1.0])


def test_non_differentiable_dirty_output_gets_no_grad():
    b = _x64([1.0, 2.0])
    z = _DoubleDirtyNonDiff.apply(b * 1)
    assert z.requires_grad is False and z.grad_fn is None
    np.testing.assert_array_equal(_np(z), [2.0, 4.0])
    (b.sum() + (z * 3).sum()).backward()
    np.testing.assert_array_equal(_np(b.grad), [1.0, 1.0])


def test_non_differentiable_leaf_input_and_enable_grad_output():
    class Two(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            with tgrad.enable_grad():
                extra = w * 5  # recorded inside forward, then declared non-differentiable
            ctx.mark_non_differentiable(x, extra)
            return x, w * 2, extra

        @staticmethod
        def backward(ctx, g1, g2, g3):
            return None, g2 * 2

    p, q = _x64([1.0]), _x64([2.0])
    r1, r2, r3 = Two.apply(p, q)
    assert r1 is not p and r1.requires_grad is False and p.requires_grad is True
    assert r3.requires_grad is False and r3.grad_fn is None
    assert r2.requires_grad is True
    (r2.sum() + r1.sum() + r3.sum()).backward()
    assert p.grad is None
    np.testing.assert_array_equal(_np(q.grad), [2.0])  # d(2q)/dq


def test_grad_inputs_generator_map_and_grad_outputs_generator():
    x, w = _x64([1.0, 2.0]), _x64([3.0, 4.0])
    y = (x * w).sum()  # dy/dx = w, dy/dw = x
    gx, gw = tgrad.autograd.grad(y, (t for t in [x, w]), retain_graph=True)
    np.testing.assert_array_equal(_np(gx), [3.0, 4.0])
    np.testing.assert_array_equal(_np(gw), [1.0, 2.0])
    got = tgrad.autograd.grad(y, map(lambda t: t, [x, w]), retain_graph=True)
    assert len(got) == 2
    (gx2,) = tgrad.autograd.grad((o for o in [y]), [x],
                                 grad_outputs=(g for g in [tgrad.tensor(2.0, dtype=tgrad.float64)]),
                                 retain_graph=True)
    np.testing.assert_array_equal(_np(gx2), [6.0, 8.0])
    batched = tgrad.autograd.grad(y, (t for t in [x, w]), retain_graph=True,
                                  grad_outputs=tgrad.tensor([1.0, 2.0], dtype=tgrad.float64),
                                  is_grads_batched=True)
    np.testing.assert_array_equal(_np(batched[0]), [[3.0, 4.0], [6.0, 8.0]])
    tgrad.autograd.backward(y, inputs=(t for t in [x]))
    np.testing.assert_array_equal(_np(x.grad), [3.0, 4.0])
    assert w.grad is None
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tgrad.autograd.grad((x * 1).sum(), (t for t in []))


def test_grad_inputs_dict_returns_dict():
    x, w, u = _x64([1.0, 2.0]), _x64([3.0, 4.0]), _x64([5.0])
    y = (x * w).sum()
    got = tgrad.autograd.grad(y, {"b": w, "a": x}, retain_graph=True)
    assert isinstance(got, dict) and list(got) == ["b", "a"]
    np.testing.assert_array_equal(_np(got["a"]), [3.0, 4.0])
    np.testing.assert_array_equal(_np(got["b"]), [1.0, 2.0])
    got = tgrad.autograd.grad(y, {"a": x, "u": u}, materialize_grads=True, retain_graph=True)
    np.testing.assert_array_equal(_np(got["u"]), [0.0])
    got = tgrad.autograd.grad(y, {"a": x}, grad_outputs=tgrad.ones(2, dtype=tgrad.float64),
                              is_grads_batched=True, retain_graph=True)
    np.testing.assert_array_equal(_np(got["a"]), [[3.0, 4.0], [3.0, 4.0]])
    tgrad.autograd.backward(y, inputs={"w": w})
    np.testing.assert_array_equal(_np(w.grad), [1.0, 2.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tgrad.autograd.grad((x * 1).sum(), {})
    from types import MappingProxyType
    with pytest.raises(TypeError, match="must be a dict, not mappingproxy"):
        tgrad.autograd.grad((x * 1).sum(), MappingProxyType({"a": x}))


@pytest.mark.parametrize("create_graph", [False, True])
def test_materialize_grads_zeros_require_grad_under_create_graph(create_graph):
    x, u = _x64([1.0, 2.0]), _x64([5.0])
    gx, gu = tgrad.autograd.grad((x * x).sum(), [x, u], materialize_grads=True,
                                 create_graph=create_graph)
    np.testing.assert_array_equal(_np(gx), [2.0, 4.0])  # 2x
    np.testing.assert_array_equal(_np(gu), [0.0])
    assert gu.requires_grad is create_graph and gu.grad_fn is None
    assert gx.requires_grad is create_graph


def test_needs_input_grad_in_forward_under_no_grad():
    seen = []

    class F(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            return a * k + b

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    x = _x64([1.0])
    n = tgrad.tensor([2.0], dtype=tgrad.float64)
    with tgrad.no_grad():
        out = F.apply(x, n, 3)
    F.apply(x, n, 3)
    F.apply(n, n, 3)
    assert seen == [(True, False, False), (True, False, False), (False, False, False)]
    assert out.requires_grad is False
    np.testing.assert_array_equal(_np(out), [5.0])


class _TwoOut(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * 2 + g2 * 3


@pytest.mark.parametrize("split", ["split", "unbind", "function"])
def test_multi_grad_hook_all_fires_when_one_output_of_a_node_gets_no_grad(split):
    x = _x64([1.0, 2.0])
    if split == "split":
        a, b = x.split(1)
        da = [3.0]
    elif split == "unbind":
        a, b = x.unbind()
        da = 3.0
    else:
        a, b = _TwoOut.apply(x)
        da = [3.0, 3.0]
    seen, b_hook = [], []
    tgrad.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append(list(gs)))
    b.register_hook(b_hook.append)  # as PyTorch: called with None
    (a * 3).sum().backward()
    assert len(seen) == 1 and seen[0][1] is None
    np.testing.assert_array_equal(_np(seen[0][0]), da)
    assert b_hook == [None]


def test_multi_grad_hook_all_with_grad_and_hook_may_not_replace_none():
    x = _x64([1.0, 2.0])
    a, b = x.split(1)
    seen = []
    tgrad.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append(list(gs)))
    (gx,) = tgrad.autograd.grad((a * 3).sum(), [x])
    np.testing.assert_array_equal(_np(gx), [3.0, 0.0])
    assert len(seen) == 1 and seen[0][1] is None
    y = _x64([1.0, 2.0])
    c, d = y.split(1)
    d.register_hook(lambda g: tgrad.ones(1, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        (c * 3).sum().backward()


def test_gradcheck_ignores_non_differentiable_output_next_to_a_differentiable_one():
    gc = tgrad.autograd.gradcheck
    x = _x64([0.3, 0.7])
    assert gc(lambda t: (t * 2, (t * 3).detach()), (x,), raise_exception=False)
    assert gc(lambda t: ((t * 3).detach(), t * 2), (x,), raise_exception=False)
    # no differentiable output: the numerical derivative must then be zero
    assert gc(lambda t: t.detach().round(), (x,), raise_exception=False)
    assert not gc(lambda t: (t * 3).detach(), (x,), raise_exception=False)
    with pytest.raises(tgrad.autograd.GradcheckError,
                       match="Numerical gradient for function expected to be zero"):
        gc(lambda t: (t * 3).detach(), (x,))


def test_gradcheck_catches_backward_not_linear_in_grad_output():
    class Cube(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2 + 5e-6  # the constant is within the Jacobian tolerance

    x = _x64([0.3, 0.7])
    assert not tgrad.autograd.gradcheck(Cube.apply, (x,), raise_exception=False)
    with pytest.raises(tgrad.autograd.GradcheckError,
                       match="backward not multiplied by grad_output"):
        tgrad.autograd.gradcheck(Cube.apply, (x,))
    assert tgrad.autograd.gradcheck(lambda t: t ** 3, (x,))


@pytest.mark.parametrize("mode", [0, 1, None, np.bool_(True)])
def test_set_grad_enabled_requires_a_bool(mode):
    before = tgrad.is_grad_enabled()
    with pytest.raises(TypeError, match="argument 'enabled' \\(position 1\\) must be bool"):
        tgrad.set_grad_enabled(mode)
    assert tgrad.is_grad_enabled() is before
