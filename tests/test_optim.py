"""tgrad.optim against hand-written NumPy float64 implementations of PyTorch's documented
algorithms (torch.optim.SGD / Adam / AdamW pseudo-code), over several steps."""

import math
import re

import numpy as np
import pytest

import tgrad
from tgrad import optim

STEPS = 6


def _loss_grad(ws: list[np.ndarray], step: int) -> list[np.ndarray]:
    """Gradient of a fixed quartic-ish loss (independent of tgrad): g = w^3 - c_step."""
    return [w ** 3 - 0.3 * (step + 1) * np.cos(np.arange(w.size).reshape(w.shape) + k)
            for k, w in enumerate(ws)]


def _grads_stepped(ws: list[np.ndarray], step: int, maximize: bool) -> list[np.ndarray]:
    """The gradients an optimizer steps with: with ``maximize`` the tgrad run maximises
    -loss, whose gradient is -g, and maximize flips it back to g; so g either way."""
    gs = _loss_grad(ws, step)
    if maximize:
        gs = [-g for g in gs]  # the gradient of -loss
    return [-g for g in gs] if maximize else gs  # maximize's flip


def _tgrad_loss(params: list, step: int):
    total = 0
    for k, p in enumerate(params):
        c = 0.3 * (step + 1) * np.cos(np.arange(p.numel()).reshape(p.shape) + k)
        total = total + (p ** 4 / 4 - p * tgrad.tensor(c, dtype=tgrad.float64)).sum()
    return total


def _init() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.normal(size=(3, 4)), rng.normal(size=(5,))]


def _run_tgrad(make_opt, steps=STEPS, maximize=False):
    ws = _init()
    params = [tgrad.tensor(w, requires_grad=True) for w in ws]
    opt = make_opt(params)
    for s in range(steps):
        opt.zero_grad()
        loss = _tgrad_loss(params, s)
        (-loss if maximize else loss).backward()
        opt.step()
    return [p.detach().numpy() for p in params], opt


# ----------------------------------------------------------------- NumPy references
def ref_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False, steps=STEPS):
    ws = _init()
    bufs = [None] * len(ws)
    for t in range(steps):
        gs = _grads_stepped(ws, t, maximize)
        for i in range(len(ws)):
            g = gs[i]
            if weight_decay:
                g = g + weight_decay * ws[i]
            if momentum:
                bufs[i] = g.copy() if t == 0 else momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            ws[i] = ws[i] - lr * g
    return ws


def ref_adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             decoupled=False, maximize=False, steps=STEPS):
    b1, b2 = betas
    ws = _init()
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    vmax = [np.zeros_like(w) for w in ws]
    for t in range(1, steps + 1):
        gs = _grads_stepped(ws, t - 1, maximize)
        for i in range(len(ws)):
            g = gs[i]
            if weight_decay:
                if decoupled:
                    ws[i] = ws[i] * (1 - lr * weight_decay)
                else:
                    g = g + weight_decay * ws[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            mhat = m[i] / (1 - b1 ** t)
            if amsgrad:
                vmax[i] = np.maximum(vmax[i], v[i])
                vhat = vmax[i] / (1 - b2 ** t)
            else:
                vhat = v[i] / (1 - b2 ** t)
            ws[i] = ws[i] - lr * mhat / (np.sqrt(vhat) + eps)
    return ws


def _close(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
    dict(lr=0.05, momentum=0.5, maximize=True),
])
def test_sgd_matches_reference(kw):
    got, _ = _run_tgrad(lambda ps: optim.SGD(ps, **kw), maximize=kw.get("maximize", False))
    _close(got, ref_sgd(**kw))


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    dict(lr=0.05, amsgrad=True),
    dict(lr=0.05, amsgrad=True, weight_decay=0.05, maximize=True),
])
def test_adam_matches_reference(kw):
    got, opt = _run_tgrad(lambda ps: optim.Adam(ps, **kw), maximize=kw.get("maximize", False))
    _close(got, ref_adam(**kw))
    st = opt.state[opt.param_groups[0]["params"][0]]
    assert st["step"].item() == STEPS
    assert ("max_exp_avg_sq" in st) == kw.get("amsgrad", False)


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, weight_decay=0.3, amsgrad=True),
])
def test_adamw_matches_reference(kw):
    got, _ = _run_tgrad(lambda ps: optim.AdamW(ps, **kw))
    _close(got, ref_adam(decoupled=True, weight_decay=kw.get("weight_decay", 1e-2),
                         **{k: v for k, v in kw.items() if k != "weight_decay"}))


_DTYPE_CHANGES = [(tgrad.float32, tgrad.float64, ("float", "double")),
                  (tgrad.float64, tgrad.float32, ("double", "float")),
                  (tgrad.float32, tgrad.float16, ("float", "c10::Half")),
                  (tgrad.complex64, tgrad.complex128, ("float", "double"))]  # (real views)


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
@pytest.mark.parametrize("kw, old, new, names", [
    (kw, *change) for kw in (dict(), dict(amsgrad=True), dict(foreach=True),
                             dict(foreach=False, weight_decay=0.1))
    for change in _DTYPE_CHANGES
    # (PyTorch's foreach kernels word a complex mismatch differently: not compared)
    if not (kw.get("foreach") and change[0].is_complex)])
def test_adam_refuses_state_of_another_dtype_than_the_gradient(cls, kw, old, new, names):
    # PyTorch 2.13's Adam / AdamW (every implementation) raise lerp's error when a
    # parameter changed dtype after its state was made (p.data = p.data.double(),
    # module.double()); tgrad added a float64 gradient into float32 moments silently.
    # tgrad raises before it changes anything (PyTorch has already counted the step).
    p = tgrad.nn.Parameter(tgrad.tensor([1.0, -2.0], dtype=old))
    opt = cls([p], lr=0.1, **kw)
    (p * p).abs().sum().backward()
    opt.step()
    p.data = p.data.to(new)
    p.grad = None
    (p * p).abs().sum().backward()
    before = p.detach().clone()
    with pytest.raises(RuntimeError, match=f"^expected dtype {re.escape(names[0])} for "
                                           f"`end` but got dtype {re.escape(names[1])}"):
        opt.step()
    assert opt.state[p]["step"].item() == 1
    np.testing.assert_array_equal(p.detach().numpy(), before.numpy())


def test_param_groups_have_their_own_hyperparameters():
    ws = _init()
    a, b = (tgrad.tensor(w, requires_grad=True) for w in ws)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    loss = (a * a).sum() + (b * b).sum()
    loss.backward()
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), ws[0] - 0.1 * 2 * ws[0], rtol=1e-15)
    np.testing.assert_allclose(b.detach().numpy(), ws[1] - 0.5 * 2 * ws[1], rtol=1e-15)


def test_params_without_grad_are_skipped_and_float32_stays_float32():
    a = tgrad.ones(3, requires_grad=True)
    b = tgrad.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    (a * 2).sum().backward()
    opt.step()
    assert a.dtype is tgrad.float32 and opt.state[a]["exp_avg"].dtype is tgrad.float32
    np.testing.assert_allclose(a.detach().numpy(), 1 - 0.1 * (0.2 / 0.1) /
                               (math.sqrt(0.004 / 0.001) + 1e-8), rtol=1e-6)
    assert b not in opt.state or not opt.state[b]
    np.testing.assert_array_equal(b.detach().numpy(), np.ones(2, np.float32))
    assert a.grad_fn is None and a.is_leaf


def test_zero_grad():
    a = tgrad.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * 3).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(3, np.float32))
    opt.zero_grad()
    assert a.grad is None


def test_step_with_closure_returns_loss():
    a = tgrad.tensor([2.0], dtype=tgrad.float64, requires_grad=True)
    opt = optim.SGD([a], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with tgrad.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0
    assert a.item() == 2.0 - 0.25 * 4.0


def test_state_dict_round_trip_continues_identically():
    kw = dict(lr=0.05, amsgrad=True, weight_decay=0.01)
    _, opt = _run_tgrad(lambda ps: optim.Adam(ps, **kw), steps=3)
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0, 1]
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    # A fresh optimizer over copies of the parameters, restored from the state dict, must
    # take exactly the same next steps as the original.
    params = opt.param_groups[0]["params"]
    clones = [tgrad.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    opt2 = optim.Adam(clones, lr=1.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.05
    for s in range(3, 5):
        for o, ps in ((opt, params), (opt2, clones)):
            o.zero_grad()
            _tgrad_loss(ps, s).backward()
            o.step()
    for p, q in zip(params, clones):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # load_state_dict copies: the two optimizers do not share state tensors
    assert opt2.state[clones[0]]["exp_avg"] is not opt.state[params[0]]["exp_avg"]


def test_load_state_dict_checks_group_sizes():
    a, b = tgrad.ones(2, requires_grad=True), tgrad.ones(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)


def test_load_state_dict_casts_nested_tensors_and_keeps_a_subclass_number_step():
    # PyTorch's _process_value_according_to_param_policy: tensors inside lists and dicts are
    # cast to a floating parameter's dtype too (LBFGS's history: a float32 run resumed on a
    # float64 parameter raised a dtype mismatch at its next step)
    def closure_for(w):
        def closure():
            w.grad = None
            loss = ((w - tgrad.tensor([3.0, -1.0], dtype=w.dtype)) ** 2).sum()
            loss.backward()
            return loss
        return closure

    w = tgrad.tensor([1.0, -2.0], requires_grad=True)
    o = optim.LBFGS([w], max_iter=3)
    o.step(closure_for(w))
    w2 = tgrad.tensor(w.detach().numpy(), dtype=tgrad.float64, requires_grad=True)
    o2 = optim.LBFGS([w2], max_iter=20)
    o2.load_state_dict(o.state_dict())
    st = o2.state[w2]
    assert all(t.dtype is tgrad.float64 for t in st["old_dirs"] + st["old_stps"])
    o2.step(closure_for(w2))
    np.testing.assert_allclose(w2.detach().numpy(), [3.0, -1.0], rtol=1e-12)
    # a user optimizer's number step stays a number (PyTorch's base class leaves it); an
    # int64 state tensor of a float parameter becomes the parameter's dtype, as PyTorch's

    class Counting(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {})

        def step(self, closure=None):
            for p in self.param_groups[0]["params"]:
                st = self.state[p]
                st["step"] = st.get("step", 0) + 1
                st["seen"] = tgrad.tensor([st["step"]])
                st["nested"] = {"k": [tgrad.tensor(1.0)]}

    p = tgrad.ones(2, dtype=tgrad.float64, requires_grad=True)
    c = Counting([p])
    c.step()
    c2 = Counting([p])
    c2.load_state_dict(c.state_dict())
    st = c2.state[p]
    assert type(st["step"]) is int and st["step"] == 1
    assert st["seen"].dtype is tgrad.float64 and st["nested"]["k"][0].dtype is tgrad.float64
    list(range(st["step"]))  # (a tensor step broke this)
    # a built-in optimizer's number step (an older checkpoint) becomes its tensor step
    a = optim.Adam([p])
    sd = a.state_dict()
    sd["state"] = {0: {"step": 3, "exp_avg": tgrad.zeros(2), "exp_avg_sq": tgrad.zeros(2)}}
    a.load_state_dict(sd)
    assert isinstance(a.state[p]["step"], tgrad.Tensor) and a.state[p]["step"].item() == 3


@pytest.mark.parametrize("make, msg", [
    (lambda p: optim.SGD(p, lr=-1), "Invalid learning rate"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
    (lambda p: optim.Adam(p, eps=-1), "Invalid epsilon"),
    (lambda p: optim.AdamW(p, weight_decay=-1), "Invalid weight_decay"),
    (lambda p: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda p: optim.SGD([{"params": p}, {"params": p}], lr=0.1), "more than one"),
])
def test_bad_arguments(make, msg):
    with pytest.raises(ValueError, match=msg):
        make([tgrad.ones(2, requires_grad=True)])


def test_bad_params_types():
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(tgrad.ones(2, requires_grad=True), lr=0.1)
    x = tgrad.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([x * 2], lr=0.1)


def test_fused_seam_is_used_for_registered_device_type(monkeypatch):
    from tgrad.optim import _functional
    calls = []
    monkeypatch.setitem(_functional.FUSED, ("sgd", "cpu"),
                        lambda params, *a, **k: calls.append(len(params)))
    a, b = tgrad.ones(2, requires_grad=True), tgrad.ones(3, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.1)
    (a.sum() + b.sum()).backward()
    opt.step()
    assert calls == [2]  # one call per group with all of its parameters


# ----------------------------------------------------------------- RMSprop, Adagrad
def ref_rmsprop(lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                maximize=False, steps=STEPS):
    ws = _init()
    sq = [np.zeros_like(w) for w in ws]
    ga = [np.zeros_like(w) for w in ws]
    buf = [np.zeros_like(w) for w in ws]
    for t in range(steps):
        gs = _grads_stepped(ws, t, maximize)
        for i in range(len(ws)):
            g = gs[i]
            if weight_decay:
                g = g + weight_decay * ws[i]
            sq[i] = alpha * sq[i] + (1 - alpha) * g * g
            if centered:
                ga[i] = alpha * ga[i] + (1 - alpha) * g
                avg = np.sqrt(sq[i] - ga[i] ** 2) + eps
            else:
                avg = np.sqrt(sq[i]) + eps
            if momentum > 0:
                buf[i] = momentum * buf[i] + g / avg
                ws[i] = ws[i] - lr * buf[i]
            else:
                ws[i] = ws[i] - lr * g / avg
    return ws


def ref_adagrad(lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                maximize=False, steps=STEPS):
    ws = _init()
    sums = [np.full_like(w, initial_accumulator_value) for w in ws]
    for t in range(1, steps + 1):
        gs = _grads_stepped(ws, t - 1, maximize)
        for i in range(len(ws)):
            g = gs[i]
            if weight_decay:
                g = g + weight_decay * ws[i]
            clr = lr / (1 + (t - 1) * lr_decay)
            sums[i] = sums[i] + g * g
            ws[i] = ws[i] - clr * g / (np.sqrt(sums[i]) + eps)
    return ws


@pytest.mark.parametrize("kw", [
    dict(lr=0.01),
    dict(lr=0.01, momentum=0.9, weight_decay=0.1),
    dict(lr=0.01, centered=True, alpha=0.9),
    dict(lr=0.01, centered=True, momentum=0.5, maximize=True),
])
def test_rmsprop_matches_reference(kw):
    got, opt = _run_tgrad(lambda ps: optim.RMSprop(ps, **kw), maximize=kw.get("maximize", False))
    _close(got, ref_rmsprop(**kw))
    st = opt.state[opt.param_groups[0]["params"][0]]
    assert st["step"].item() == STEPS
    assert ("momentum_buffer" in st) == (kw.get("momentum", 0) > 0)
    assert ("grad_avg" in st) == kw.get("centered", False)


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.1, lr_decay=0.2, weight_decay=0.05, initial_accumulator_value=0.3),
    dict(lr=0.1, eps=1e-3, maximize=True),
])
def test_adagrad_matches_reference(kw):
    got, opt = _run_tgrad(lambda ps: optim.Adagrad(ps, **kw), maximize=kw.get("maximize", False))
    _close(got, ref_adagrad(**kw))
    assert opt.state[opt.param_groups[0]["params"][0]]["step"].item() == STEPS


@pytest.mark.parametrize("make, msg", [
    (lambda p: optim.RMSprop(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.RMSprop(p, alpha=-0.5), "Invalid alpha value: -0.5"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
])
def test_rmsprop_adagrad_bad_arguments(make, msg):
    with pytest.raises(ValueError, match=msg):
        make([tgrad.ones(2, requires_grad=True)])


# Adam's first moment is PyTorch's exp_avg.lerp_(grad, 1 - beta1): m + w (g - m), w = 1 - b1
# (torch.lerp's documented out = start + weight (end - start)), so an infinite moment meets
# the next gradient as inf - inf = NaN; the second moment is addcmul_(g, g, value=1 - b2):
# v b2 + ((1 - b2) g) g, which stays finite where g * g alone overflows (float32 g = 2e19).
# Both the CPU fast path and the op path. Hand maths in NumPy, in the parameter's dtype.
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_adam_moments_with_infinite_and_huge_gradients(fast, dt, monkeypatch):
    from tgrad.optim import _functional
    if not fast:
        monkeypatch.setattr(_functional, "_cpu_fast_group", lambda *hyper: False)
    b1, b2, lr = 0.9, 0.999, 0.1
    grads = [np.array([-np.inf, np.inf, np.inf, np.nan, 2e19, 1.0], dt),
             np.array([1.0, np.inf, -2.0, 1.0, 2e19, np.inf], dt)]
    p = tgrad.tensor(np.zeros(6, dt), requires_grad=True)
    opt = optim.Adam([p], lr=lr, betas=(b1, b2))
    m, v = np.zeros(6, dt), np.zeros(6, dt)
    w, c2 = dt(1 - b1), dt(1 - b2)
    with np.errstate(all="ignore"):
        for g in grads:
            p.grad = tgrad.tensor(g)
            opt.step()
            m = m + w * (g - m)  # lerp, weight < 0.5
            v = v * dt(b2) + (c2 * g) * g
            st = opt.state[p]
            np.testing.assert_array_equal(st["exp_avg"].numpy(), m)
            np.testing.assert_array_equal(st["exp_avg_sq"].numpy(), v)
    # m: -inf then NaN (-inf + 0.1 (1 + inf)); inf + 0.1 (inf - inf) = NaN; inf then finite
    # -inf + ... : NaN; NaN stays; v of 2e19 finite in float32 too
    assert np.isnan(m[:4]).all() and np.isinf(m[5]) and np.isfinite(v[4])
    assert np.isnan(p.detach().numpy()[:4]).all()
