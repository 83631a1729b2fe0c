"""NAdam, RAdam, Adamax, Adadelta, Rprop, ASGD and LBFGS against independent NumPy float64
implementations of PyTorch's published algorithms (the pseudo-code of each optimizer's
documentation page; ASGD and LBFGS, which have none, transcribed from PyTorch's
single-tensor code), over several steps, with two parameter groups and a parameter that
never gets a gradient."""

import math

import numpy as np
import pytest

import tgrad
from tgrad import optim

STEPS = 6


# ----------------------------------------------------------------- the problem
def _init() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.normal(size=(3, 4)), rng.normal(size=(5,)), rng.normal(size=(2,))]


def _target(shape, k: int, step: int) -> np.ndarray:
    return 0.3 * (step + 1) * np.cos(np.arange(int(np.prod(shape))).reshape(shape) + k)


def _np_grad(w: np.ndarray, k: int, step: int) -> np.ndarray:
    """Gradient of sum(w^4 / 4 - c w), computed by hand (not via tgrad)."""
    return w ** 3 - _target(w.shape, k, step)


def _tgrad_loss(params: list, step: int):
    """Loss over the first two parameters; the third one never gets a gradient."""
    total = 0
    for k, p in enumerate(params[:2]):
        c = tgrad.tensor(_target(tuple(p.shape), k, step), dtype=tgrad.float64)
        total = total + (p ** 4 / 4 - p * c).sum()
    return total


def _groups(params: list, group2: dict) -> list[dict]:
    # group 0: the first parameter and the one without a gradient; group 1: the second
    return [{"params": [params[0], params[2]]}, dict(group2, params=[params[1]])]


def _run_tgrad(cls, kw: dict, group2: dict, steps: int = STEPS, maximize: bool = False):
    params = [tgrad.tensor(w, requires_grad=True) for w in _init()]
    opt = cls(_groups(params, group2), maximize=maximize, **kw)
    for s in range(steps):
        opt.zero_grad()
        loss = _tgrad_loss(params, s)
        (-loss if maximize else loss).backward()
        opt.step()
    return [p.detach().numpy() for p in params], opt


def _run_reference(step_fn, defaults: dict, kw: dict, group2: dict, steps: int = STEPS,
                   maximize: bool = False):
    """Drive a per-parameter NumPy update ``step_fn(w, g, state, hp)`` over the same
    problem; ``hp`` is the parameter's group's hyper-parameters."""
    ws = _init()
    hp0 = dict(defaults, **kw, maximize=maximize)
    hps = [hp0, dict(hp0, **group2)]
    states: list[dict] = [{}, {}]
    for t in range(steps):
        for k in range(2):
            g = _np_grad(ws[k], k, t)
            if maximize:
                g = -g  # the gradient of the maximised objective, -loss
            ws[k] = step_fn(ws[k], g, states[k], hps[k])
    return ws, states


def _close(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------- NumPy references
NADAM_DEFAULTS = dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                      momentum_decay=4e-3, decoupled_weight_decay=False)


def ref_nadam(w, g, st, hp):
    b1, b2 = hp["betas"]
    lr, wd, psi = hp["lr"], hp["weight_decay"], hp["momentum_decay"]
    t = st["t"] = st.get("t", 0) + 1
    m, v = st.get("m", np.zeros_like(w)), st.get("v", np.zeros_like(w))
    if hp["maximize"]:
        g = -g
    if wd != 0:
        if hp["decoupled_weight_decay"]:
            w = w - lr * wd * w
        else:
            g = g + wd * w
    mu_t = b1 * (1 - 0.5 * 0.96 ** (t * psi))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
    # the running product is a float32 scalar tensor (PyTorch's _get_scalar_dtype): each
    # step multiplies it by mu_t rounded to float32, in float32
    prod_t = st["prod"] = float(np.float32(st.get("prod", 1.0)) * np.float32(mu_t))
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    m_hat = mu_next * m / (1 - prod_t * mu_next) + (1 - mu_t) * g / (1 - prod_t)
    v_hat = v / (1 - b2 ** t)
    st["m"], st["v"] = m, v
    return w - lr * m_hat / (np.sqrt(v_hat) + hp["eps"])


RADAM_DEFAULTS = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                      decoupled_weight_decay=False)


def ref_radam(w, g, st, hp):
    b1, b2 = hp["betas"]
    lr, wd = hp["lr"], hp["weight_decay"]
    t = st["t"] = st.get("t", 0) + 1
    m, v = st.get("m", np.zeros_like(w)), st.get("v", np.zeros_like(w))
    if hp["maximize"]:
        g = -g
    if wd != 0:
        if hp["decoupled_weight_decay"]:
            w = w - lr * wd * w
        else:
            g = g + wd * w
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    st["m"], st["v"] = m, v
    m_hat = m / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    st.setdefault("rectified", []).append(rho_t > 5)
    if rho_t > 5:
        lt = np.sqrt(1 - b2 ** t) / (np.sqrt(v) + hp["eps"])
        rt = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return w - lr * m_hat * rt * lt
    return w - lr * m_hat


ADAMAX_DEFAULTS = dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)


def ref_adamax(w, g, st, hp):
    b1, b2 = hp["betas"]
    t = st["t"] = st.get("t", 0) + 1
    m, u = st.get("m", np.zeros_like(w)), st.get("u", np.zeros_like(w))
    if hp["maximize"]:
        g = -g
    if hp["weight_decay"] != 0:
        g = g + hp["weight_decay"] * w
    m = b1 * m + (1 - b1) * g
    u = np.maximum(b2 * u, np.abs(g) + hp["eps"])
    st["m"], st["u"] = m, u
    return w - hp["lr"] * m / ((1 - b1 ** t) * u)


ADADELTA_DEFAULTS = dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0)


def ref_adadelta(w, g, st, hp):
    rho, eps = hp["rho"], hp["eps"]
    v, u = st.get("v", np.zeros_like(w)), st.get("u", np.zeros_like(w))
    if hp["maximize"]:
        g = -g
    if hp["weight_decay"] != 0:
        g = g + hp["weight_decay"] * w
    v = v * rho + g * g * (1 - rho)
    dx = np.sqrt(u + eps) / np.sqrt(v + eps) * g
    u = u * rho + dx * dx * (1 - rho)
    st["v"], st["u"] = v, u
    return w - hp["lr"] * dx


RPROP_DEFAULTS = dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50))


def ref_rprop(w, g, st, hp):
    eta_minus, eta_plus = hp["etas"]
    smin, smax = hp["step_sizes"]
    prev = st.get("prev", np.zeros_like(w))
    eta = st.get("eta", np.full_like(w, hp["lr"]))
    if hp["maximize"]:
        g = -g
    g = g.copy()
    eta = eta.copy()
    for i in np.ndindex(w.shape):
        if prev[i] * g[i] > 0:
            eta[i] = min(eta[i] * eta_plus, smax)
            st["grew"] = st.get("grew", 0) + 1
        elif prev[i] * g[i] < 0:
            eta[i] = max(eta[i] * eta_minus, smin)
            g[i] = 0
            st["shrank"] = st.get("shrank", 0) + 1
    st["prev"], st["eta"] = g, eta
    return w - eta * np.sign(g)


ASGD_DEFAULTS = dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0)


def ref_asgd(w, g, st, hp):
    lr, lambd = hp["lr"], hp["lambd"]
    t = st["t"] = st.get("t", 0) + 1
    eta, mu = st.get("eta", float(np.float32(lr))), st.get("mu", 1.0)  # float32 state
    ax = st.get("ax", np.zeros_like(w))
    if hp["maximize"]:
        g = -g
    if hp["weight_decay"] != 0:
        g = g + hp["weight_decay"] * w
    w = w * (1 - lambd * eta) - eta * g
    ax = ax + mu * (w - ax) if mu != 1 else w.copy()
    # eta and mu are float32 scalar tensors (PyTorch's _get_scalar_dtype)
    st["eta"] = float(np.float32(lr / (1 + lambd * lr * t) ** hp["alpha"]))
    st["mu"] = float(np.float32(1 / max(1, t - hp["t0"])))
    st["ax"] = ax
    return w


CASES = {
    "NAdam": (optim.NAdam, ref_nadam, NADAM_DEFAULTS, [
        (dict(lr=0.05), {}),
        (dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.05),
         dict(lr=0.02, momentum_decay=0.3)),
        (dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True), dict(weight_decay=0)),
    ]),
    "RAdam": (optim.RAdam, ref_radam, RADAM_DEFAULTS, [
        (dict(lr=0.05), {}),
        # beta2 = 0.9 (0.85): rho_t > 5 from the sixth step on, so both branches run
        (dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1), dict(lr=0.1, eps=1e-3)),
        (dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.2, decoupled_weight_decay=True),
         dict(betas=(0.7, 0.85))),
    ]),
    "Adamax": (optim.Adamax, ref_adamax, ADAMAX_DEFAULTS, [
        (dict(lr=0.05), {}),
        (dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1), dict(lr=0.2)),
    ]),
    "Adadelta": (optim.Adadelta, ref_adadelta, ADADELTA_DEFAULTS, [
        ({}, {}),
        (dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1), dict(rho=0.95, lr=2.0)),
    ]),
    "Rprop": (optim.Rprop, ref_rprop, RPROP_DEFAULTS, [
        ({}, {}),
        (dict(lr=0.3, etas=(0.4, 1.5), step_sizes=(0.05, 0.6)), dict(lr=0.5)),
    ]),
    "ASGD": (optim.ASGD, ref_asgd, ASGD_DEFAULTS, [
        (dict(lr=0.05), {}),
        # t0 = 2: averaging (mu != 1) starts after the third step
        (dict(lr=0.05, lambd=0.3, alpha=0.6, t0=2, weight_decay=0.1), dict(lr=0.1, t0=1)),
    ]),
}
PARAMS = [(name, i, maximize) for name, (_, _, _, cases) in CASES.items()
          for i in range(len(cases)) for maximize in (False, True)]


@pytest.mark.parametrize("name, case, maximize", PARAMS)
def test_matches_reference(name, case, maximize):
    cls, ref, defaults, cases = CASES[name]
    kw, group2 = cases[case]
    got, opt = _run_tgrad(cls, kw, group2, maximize=maximize)
    want, ref_states = _run_reference(ref, defaults, kw, group2, maximize=maximize)
    _close(got[:2], want[:2])
    # the parameter without a gradient is untouched and has no state
    np.testing.assert_array_equal(got[2], _init()[2])
    params = opt.param_groups[0]["params"]
    assert not opt.state.get(params[1])
    assert opt.state[params[0]]["step"].item() == STEPS
    if name == "RAdam" and case > 0:
        for st in ref_states:
            assert any(st["rectified"]) and not all(st["rectified"])
    if name == "Rprop" and case == 1:  # the step sizes both grew and shrank
        assert ref_states[0]["grew"] > 0 and ref_states[0]["shrank"] > 0
    if name == "ASGD":  # the averaged iterate
        np.testing.assert_allclose(opt.state[params[0]]["ax"].numpy(), ref_states[0]["ax"],
                                   rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
def test_defaults(name):
    cls, _, defaults, _ = CASES[name]
    opt = cls([tgrad.ones(2, requires_grad=True)])
    assert opt.defaults == dict(defaults, maximize=False, foreach=None, capturable=False,
                                differentiable=False)


STATE_KEYS = {
    "NAdam": ["exp_avg", "exp_avg_sq", "mu_product", "step"],
    "RAdam": ["exp_avg", "exp_avg_sq", "step"],
    "Adamax": ["exp_avg", "exp_inf", "step"],
    "Adadelta": ["acc_delta", "square_avg", "step"],
    "Rprop": ["prev", "step", "step_size"],
    "ASGD": ["ax", "eta", "mu", "step"],
}


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip_continues_identically(name):
    cls, _, _, cases = CASES[name]
    kw, group2 = cases[-1]
    _, opt = _run_tgrad(cls, kw, group2, steps=3)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 2]  # the parameter without a gradient has no state
    assert sorted(sd["state"][0]) == STATE_KEYS[name]
    params = [p for g in opt.param_groups for p in g["params"]]
    clones = [tgrad.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    opt2 = cls([{"params": clones[:2]}, {"params": clones[2:]}])
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1] == dict(opt.param_groups[1], params=clones[2:])
    # PyTorch's order: params, group 0 = [w0, w2], group 1 = [w1]
    ordered, ordered2 = [params[0], params[2], params[1]], [clones[0], clones[2], clones[1]]
    for s in range(3, 6):
        for o, ps in ((opt, ordered), (opt2, ordered2)):
            o.zero_grad()
            _tgrad_loss(ps, s).backward()
            o.step()
    for p, q in zip(params, clones):
        if name in ("ASGD", "NAdam"):
            # their float32 scalar state (eta, mu, mu_product) is cast to the float64
            # parameters' dtype on load, as PyTorch's load_state_dict casts every non-step
            # state tensor: the continuation then rounds those scalars less (float32's
            # 6e-8 relative per step, over three steps)
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
            assert opt2.state[clones[0]][STATE_KEYS[name][1]].dtype is tgrad.float64
        else:
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    first = opt2.state[clones[0]]
    assert all(first[k] is not opt.state[params[0]][k] for k in first)


@pytest.mark.parametrize("name", list(CASES))
def test_float32_parameters_stay_float32(name):
    cls, _, _, cases = CASES[name]
    p = tgrad.tensor([0.5, -1.0, 2.0], requires_grad=True)
    opt = cls([p], **cases[-1][0])
    for _ in range(2):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    assert p.dtype is tgrad.float32 and p.is_leaf and p.grad_fn is None
    for k, v in opt.state[p].items():
        if v.ndim:  # per-element state has the parameter's dtype
            assert v.dtype is tgrad.float32, k


def test_step_returns_closure_loss():
    a = tgrad.tensor([2.0], dtype=tgrad.float64, requires_grad=True)
    opt = optim.Adamax([a], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 4.0
    # first step: m / (1 - b1) = g and u = |g| + eps, so p <- p - lr g / (|g| + eps)
    assert abs(a.item() - (2.0 - 0.1 * 4.0 / (4.0 + 1e-8))) < 1e-15


@pytest.mark.parametrize("make, msg", [
    (lambda p: optim.NAdam(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: optim.NAdam(p, momentum_decay=-0.5), "Invalid momentum_decay value: -0.5"),
    (lambda p: optim.NAdam(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda p: optim.NAdam(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: optim.RAdam(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: optim.RAdam(p, betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda p: optim.Adamax(p, betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    (lambda p: optim.Adamax(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: optim.Adadelta(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: optim.Adadelta(p, weight_decay=-2), "Invalid weight_decay value: -2"),
    (lambda p: optim.Rprop(p, etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    (lambda p: optim.Rprop(p, etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    (lambda p: optim.Rprop(p, lr=-0.01), "Invalid learning rate: -0.01"),
    (lambda p: optim.ASGD(p, lr=-0.5), "Invalid learning rate: -0.5"),
    (lambda p: optim.ASGD(p, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    (lambda p: optim.LBFGS(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.LBFGS([{"params": [tgrad.ones(1, requires_grad=True)]}, {"params": p}]),
     "LBFGS doesn't support per-parameter options \\(parameter groups\\)"),
])
def test_bad_arguments(make, msg):
    with pytest.raises(ValueError, match=f"^{msg}$"):
        make([tgrad.ones(2, requires_grad=True)])


_TWO = lambda: tgrad.tensor([0.1, 0.2])  # noqa: E731  (a Tensor lr of two elements)


@pytest.mark.parametrize("make", [
    lambda p: optim.SGD(p, lr=_TWO()), lambda p: optim.Adam(p, lr=_TWO()),
    lambda p: optim.AdamW(p, lr=_TWO()), lambda p: optim.RMSprop(p, lr=_TWO()),
    lambda p: optim.Adagrad(p, lr=_TWO()), lambda p: optim.Adamax(p, lr=_TWO()),
    lambda p: optim.NAdam(p, lr=_TWO()), lambda p: optim.RAdam(p, lr=_TWO()),
    lambda p: optim.Adadelta(p, lr=_TWO()), lambda p: optim.Rprop(p, lr=_TWO()),
    lambda p: optim.ASGD(p, lr=_TWO()), lambda p: optim.LBFGS(p, lr=_TWO()),
    lambda p: optim.Adafactor(p, lr=_TWO()), lambda p: optim.SparseAdam(p, lr=_TWO()),
])
def test_tensor_lr_must_have_one_element(make):
    # PyTorch's check comes first (a 2-element lr used to reach `lr < 0` and raise the
    # ambiguous-truth-value RuntimeError)
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        make([tgrad.ones(2, requires_grad=True)])


def test_adam_tensor_lr_with_foreach_needs_capturable():
    p = [tgrad.ones(2, requires_grad=True)]
    for cls in (optim.Adam, optim.AdamW):
        with pytest.raises(ValueError, match="^lr as a Tensor is not supported for "
                                             "capturable=False and foreach=True$"):
            cls(p, lr=tgrad.tensor(0.1), foreach=True)
        cls(p, lr=tgrad.tensor(0.1), foreach=True, capturable=True)  # accepted, as PyTorch
        cls(p, lr=tgrad.tensor(0.1), foreach=False)


def test_repr_sets_groups_apart_as_pytorch():
    a, b = tgrad.ones(1, requires_grad=True), tgrad.ones(1, requires_grad=True)
    opt = optim.Rprop([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.25)
    entries = ("    capturable: False\n    differentiable: False\n    etas: (0.5, 1.2)\n"
               "    foreach: None\n    lr: {}\n    maximize: False\n"
               "    step_sizes: (1e-06, 50)\n")
    assert repr(opt) == ("Rprop (\nParameter Group 0\n" + entries.format(0.25)
                         + "\nParameter Group 1\n" + entries.format(0.5) + ")")


def test_differentiable_is_not_supported():
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.NAdam([tgrad.ones(2, requires_grad=True)], differentiable=True)


# ----------------------------------------------------------------- LBFGS
def rosen(x: np.ndarray) -> tuple[float, np.ndarray]:
    """Rosenbrock's f and gradient by hand, its products grouped as the chain rule does
    (d(b^2) = 2 b, times 100, times d(x^2) = 2 x), so that they round as autograd's: the
    trajectories below are compared over dozens of iterations, which amplify rounding."""
    b = x[1] - x[0] * x[0]
    f = (1 - x[0]) ** 2 + 100 * b ** 2
    g = np.array([-(2 * (1 - x[0])) - 2 * x[0] * (200 * b), 200 * b])
    return f, g


def _np_cubic(x1, f1, g1, x2, f2, g2, bounds=None):
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    if x1 <= x2:
        xm = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        xm = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(xm, lo), hi)


def _np_strong_wolfe(fun, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tol=1e-9, max_ls=25):
    """Bracketing then zoom (Nocedal & Wright alg. 3.5/3.6 as in Torch7's lswolfe)."""
    d_norm = np.abs(d).max()
    f_new, g_new = fun(x + t * d)
    n_evals, it = 1, 0
    gtd_new = g_new @ d
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    found = False
    br = brf = brg = brgtd = None
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):
            br, brf, brg, brgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], \
                [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            br, brf, brg, found = [t], [f_new], [g_new], True
            break
        if gtd_new >= 0:
            br, brf, brg, brgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], \
                [gtd_prev, gtd_new]
            break
        t_next = _np_cubic(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                           bounds=(t + 0.01 * (t - t_prev), 10 * t))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = t_next
        f_new, g_new = fun(x + t * d)
        n_evals += 1
        gtd_new = g_new @ d
        it += 1
    if it == max_ls:
        br, brf, brg = [0, t], [f, f_new], [g, g_new]
    lo, hi = (0, 1) if brf[0] <= brf[-1] else (1, 0)
    stalled = False
    while not found and it < max_ls:
        if abs(br[1] - br[0]) * d_norm < tol:
            break
        t = _np_cubic(br[0], brf[0], brgtd[0], br[1], brf[1], brgtd[1])
        a, b = min(br), max(br)
        margin = 0.1 * (b - a)
        if min(b - t, t - a) < margin:
            if stalled or t >= b or t <= a:
                t = b - margin if abs(t - b) < abs(t - a) else a + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = fun(x + t * d)
        n_evals += 1
        gtd_new = g_new @ d
        it += 1
        if f_new > f + c1 * t * gtd or f_new >= brf[lo]:
            br[hi], brf[hi], brg[hi], brgtd[hi] = t, f_new, g_new, gtd_new
            lo, hi = (0, 1) if brf[0] <= brf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                found = True
            elif gtd_new * (br[hi] - br[lo]) >= 0:
                br[hi], brf[hi], brg[hi], brgtd[hi] = br[lo], brf[lo], brg[lo], brgtd[lo]
            br[lo], brf[lo], brg[lo], brgtd[lo] = t, f_new, g_new, gtd_new
    return brf[lo], brg[lo], br[lo], n_evals


class NumpyLBFGS:
    """PyTorch's L-BFGS step, transcribed to NumPy float64 on a flat vector."""

    def __init__(self, x, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        self.x = np.array(x, dtype=np.float64)
        self.lr, self.max_iter, self.hist = lr, max_iter, history_size
        self.max_eval = max_eval if max_eval is not None else max_iter * 5 // 4
        self.tol_grad, self.tol_change, self.ls = tolerance_grad, tolerance_change, \
            line_search_fn
        self.n_iter = self.func_evals = 0
        self.d = self.t = self.prev_g = self.prev_f = None
        self.S, self.Y, self.rho, self.H = [], [], [], 1.0

    def step(self, fun):
        f0, g = fun(self.x)
        f, evals = f0, 1
        self.func_evals += 1
        if np.abs(g).max() <= self.tol_grad:
            return f0
        k = 0
        while k < self.max_iter:
            k += 1
            self.n_iter += 1
            if self.n_iter == 1:
                self.d, self.S, self.Y, self.rho, self.H = -g, [], [], [], 1.0
            else:
                y, s = g - self.prev_g, self.t * self.d
                ys = y @ s
                if ys > 1e-10:
                    if len(self.Y) == self.hist:
                        self.Y.pop(0), self.S.pop(0), self.rho.pop(0)
                    self.Y.append(y), self.S.append(s), self.rho.append(1.0 / ys)
                    self.H = ys / (y @ y)
                q = -g
                alphas = [0.0] * len(self.Y)
                for i in reversed(range(len(self.Y))):
                    alphas[i] = (self.S[i] @ q) * self.rho[i]
                    q = q - alphas[i] * self.Y[i]
                r = q * self.H
                for i in range(len(self.Y)):
                    beta = (self.Y[i] @ r) * self.rho[i]
                    r = r + (alphas[i] - beta) * self.S[i]
                self.d = r
            self.prev_g, self.prev_f = g.copy(), f
            t = min(1.0, 1.0 / np.abs(g).sum()) * self.lr if self.n_iter == 1 else self.lr
            gtd = g @ self.d
            if gtd > -self.tol_change:
                self.t = t
                break
            n = 0
            if self.ls == "strong_wolfe":
                f, g, t, n = _np_strong_wolfe(fun, self.x, t, self.d, f, g, gtd,
                                              max_ls=self.max_eval - evals)
                self.x = self.x + t * self.d
                converged = np.abs(g).max() <= self.tol_grad
            else:
                self.x = self.x + t * self.d
                converged = False
                if k != self.max_iter:
                    f, g = fun(self.x)
                    converged = np.abs(g).max() <= self.tol_grad
                    n = 1
            self.t = t
            evals += n
            self.func_evals += n
            if k == self.max_iter or evals >= self.max_eval or converged:
                break
            if np.abs(self.d * t).max() <= self.tol_change or abs(f - self.prev_f) < \
                    self.tol_change:
                break
        return f0


def _lbfgs_problem(kw: dict, start=(-1.5, 2.0)):
    """Rosenbrock over two one-element parameters, plus a parameter outside the loss."""
    x = tgrad.tensor([start[0]], dtype=tgrad.float64, requires_grad=True)
    y = tgrad.tensor([start[1]], dtype=tgrad.float64, requires_grad=True)
    z = tgrad.tensor([0.25, -0.5], dtype=tgrad.float64, requires_grad=True)
    opt = optim.LBFGS([x, z, y], **kw)
    calls = []

    def closure():
        opt.zero_grad()
        loss = ((1 - x) ** 2 + 100 * (y - x ** 2) ** 2).sum()
        loss.backward()
        calls.append(1)
        return loss
    return (x, y, z), opt, closure, calls


LBFGS_CASES = [
    (dict(lr=1.0), (-1.5, 2.0)),
    (dict(lr=0.5, history_size=3, max_iter=7), (-1.5, 2.0)),
    (dict(line_search_fn="strong_wolfe"), (-1.5, 2.0)),
    (dict(line_search_fn="strong_wolfe", history_size=2, max_iter=9, max_eval=12),
     (-1.5, 2.0)),
    # the line search's other paths: extrapolation until max_ls runs out (small lr), a
    # point beyond the bracket (large lr), trial points moved off the bracket's ends
    (dict(line_search_fn="strong_wolfe", lr=0.01), (-1.5, 2.0)),
    (dict(line_search_fn="strong_wolfe", lr=10.0), (-1.2, 1.0)),
    (dict(line_search_fn="strong_wolfe", lr=1000.0), (2.0, -1.0)),
]


@pytest.mark.parametrize("kw, start", LBFGS_CASES)
def test_lbfgs_matches_reference_on_rosenbrock(kw, start):
    (x, y, z), opt, closure, calls = _lbfgs_problem(kw, start)
    ref = NumpyLBFGS(start, **kw)
    nfev = [0]

    def fun(v):
        nfev[0] += 1
        return rosen(v)

    for _ in range(3):
        loss = opt.step(closure)
        want = ref.step(fun)
        np.testing.assert_allclose(loss.item(), want, rtol=1e-12)
        np.testing.assert_allclose([x.item(), y.item()], ref.x, rtol=1e-12, atol=1e-14)
        st = opt.state[x]
        assert st["n_iter"] == ref.n_iter and st["func_evals"] == ref.func_evals
        assert len(calls) == nfev[0] == ref.func_evals
    np.testing.assert_array_equal(z.detach().numpy(), [0.25, -0.5])
    assert z not in opt.state and y not in opt.state
    assert set(opt.state[x]) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps",
                                 "ro", "H_diag", "prev_flat_grad", "prev_loss", "al"}
    assert len(opt.state[x]["old_dirs"]) <= kw.get("history_size", 100)


@pytest.mark.parametrize("kw, tol", [
    (dict(lr=1.0, history_size=5), 1e-4),
    (dict(line_search_fn="strong_wolfe", tolerance_grad=1e-10, tolerance_change=1e-14),
     1e-8),
])
def test_lbfgs_converges_to_rosenbrock_minimum(kw, tol):
    (x, y, _), opt, closure, _ = _lbfgs_problem(kw)
    for _ in range(6):
        opt.step(closure)
    np.testing.assert_allclose([x.item(), y.item()], [1.0, 1.0], rtol=0, atol=tol)


def test_lbfgs_maximize_and_state_dict_round_trip(tmp_path):
    (x, y, z), opt, closure, _ = _lbfgs_problem(dict(line_search_fn="strong_wolfe",
                                                     max_iter=4))
    opt.step(closure)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0]
    assert sorted(sd["state"][0]) == ["H_diag", "al", "d", "func_evals", "n_iter",
                                      "old_dirs", "old_stps", "prev_flat_grad", "prev_loss",
                                      "ro", "t"]
    (x2, y2, z2), opt2, closure2, _ = _lbfgs_problem(dict(line_search_fn="strong_wolfe",
                                                          max_iter=4))
    with tgrad.no_grad():
        for a, b in ((x, x2), (y, y2), (z, z2)):
            b.copy_(a)
    tgrad.save(sd, tmp_path / "lbfgs.tg")  # through a checkpoint file
    opt2.load_state_dict(tgrad.load(tmp_path / "lbfgs.tg"))
    for _ in range(2):
        opt.step(closure)
        opt2.step(closure2)
    for a, b in ((x, x2), (y, y2), (z, z2)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert opt2.state[x2]["d"] is not opt.state[x]["d"]
    # maximize: maximising -f takes the same steps as minimising f
    for kw in (dict(lr=0.5, max_iter=5), dict(line_search_fn="strong_wolfe", max_iter=5)):
        (xm, ym, _), optm = _lbfgs_problem(dict(kw, maximize=True))[:2]
        ref = NumpyLBFGS([-1.5, 2.0], **kw)

        def neg_closure(optm=optm, xm=xm, ym=ym):
            optm.zero_grad()
            loss = -((1 - xm) ** 2 + 100 * (ym - xm ** 2) ** 2).sum()
            loss.backward()
            return loss
        for _ in range(2):
            np.testing.assert_allclose(optm.step(neg_closure).item(), -ref.step(rosen),
                                       rtol=1e-12)
        np.testing.assert_allclose([xm.item(), ym.item()], ref.x, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(lr=1.0), dict(line_search_fn="strong_wolfe")])
def test_lbfgs_complex_parameter_is_optimized_as_its_real_pairs(kw):
    # PyTorch's LBFGS flattens a complex parameter's gradient as view_as_real (re, im) and
    # updates it through that view: Rosenbrock in (x, y) = (z.re, z.im) takes the steps of
    # the real two-variable problem (NumPy reference); a complex parameter outside the loss
    # (gradient None) is a pair of zeros in the flat vector and does not move
    z = tgrad.tensor([-1.5 + 2j], dtype=tgrad.complex128, requires_grad=True)
    w = tgrad.tensor([0.5 - 1j], dtype=tgrad.complex128, requires_grad=True)
    opt = optim.LBFGS([w, z], **kw)
    ref = NumpyLBFGS([-1.5, 2.0], **kw)

    def closure():
        opt.zero_grad()
        x, y = z.real, z.imag
        loss = ((1 - x) ** 2 + 100 * (y - x ** 2) ** 2).sum()
        loss.backward()
        return loss
    for _ in range(3):
        np.testing.assert_allclose(opt.step(closure).item(), ref.step(rosen), rtol=1e-12)
        got = z.detach().numpy()[0]
        np.testing.assert_allclose([got.real, got.imag], ref.x, rtol=1e-12, atol=1e-14)
        assert opt.state[w]["func_evals"] == ref.func_evals
    assert w.detach().numpy()[0] == 0.5 - 1j
    assert opt.state[w]["d"].dtype is tgrad.float64 and opt.state[w]["d"].shape == (4,)


def test_lbfgs_complex_and_real_parameters_match_the_real_view_problem():
    # a complex (3,) parameter with a real one against the same problem on its real (3, 2)
    # view (complex64: the flat vector is float32 pairs, as view_as_real)
    c = np.array([0.5 + 1j, -1 + 0.25j, 2 - 1j])
    z0 = np.array([1 - 1j, 0.5 + 0.5j, -1 + 2j])
    zc = tgrad.tensor(z0, dtype=tgrad.complex64, requires_grad=True)
    ac = tgrad.tensor([0.3], requires_grad=True)
    zr = tgrad.tensor(np.stack([z0.real, z0.imag], -1), dtype=tgrad.float32,
                      requires_grad=True)
    ar = tgrad.tensor([0.3], requires_grad=True)
    cr = tgrad.tensor(np.stack([c.real, c.imag], -1), dtype=tgrad.float32)
    oc = optim.LBFGS([zc, ac], line_search_fn="strong_wolfe", max_iter=5)
    orr = optim.LBFGS([zr, ar], line_search_fn="strong_wolfe", max_iter=5)

    def loss_of(re, im, a):
        return (((re ** 2 + im ** 2) ** 2).sum() + (a * re).sum() + (a ** 2).sum() * 3)

    def closure_c():
        oc.zero_grad()
        d = zc - tgrad.tensor(c, dtype=tgrad.complex64)
        loss = loss_of(d.real, d.imag, ac)
        loss.backward()
        return loss

    def closure_r():
        orr.zero_grad()
        d = zr - cr
        loss = loss_of(d[:, 0], d[:, 1], ar)
        loss.backward()
        return loss
    for _ in range(2):
        np.testing.assert_allclose(oc.step(closure_c).item(), orr.step(closure_r).item(),
                                   rtol=1e-5)
    got = zc.detach().numpy()
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.stack([got.real, got.imag], -1), zr.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ac.detach().numpy(), ar.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert oc.state[zc]["d"].dtype is tgrad.float32 and oc.state[zc]["d"].shape == (7,)


def test_lbfgs_stops_at_a_stationary_point_and_bad_line_search():
    x = tgrad.tensor([1.0, 1.0], dtype=tgrad.float64, requires_grad=True)
    opt = optim.LBFGS([x])

    def closure():
        opt.zero_grad()
        loss = ((x - 1) ** 2).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 0.0  # zero gradient: returns before iterating
    assert opt.state[x]["n_iter"] == 0 and opt.state[x]["func_evals"] == 1
    assert opt.defaults == dict(lr=1, max_iter=20, max_eval=25, tolerance_grad=1e-7,
                                tolerance_change=1e-9, history_size=100, line_search_fn=None,
                                maximize=False)
    with tgrad.no_grad():
        x.fill_(3.0)
    bad = optim.LBFGS([x], line_search_fn="armijo")
    closure_bad = lambda: (bad.zero_grad(), (x * x).sum().backward(), (x * x).sum())[2]  # noqa: E731
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        bad.step(closure_bad)
    # no parameters: the closure is still evaluated and its loss returned
    assert optim.LBFGS([{"params": []}]).step(lambda: 3.0) == 3.0


def test_rprop_nan_gradient_moves_nothing():
    """PyTorch's sign(NaN) is 0 in Rprop's update: that element stays where it is."""
    p = tgrad.zeros(2, requires_grad=True)
    opt = tgrad.optim.Rprop([p], lr=0.1)
    p.grad = tgrad.tensor([1.0, float("nan")])
    opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), np.array([-0.1, 0.0], np.float32))


def test_asgd_and_nadam_scalar_state_in_the_step_dtype():
    """eta, mu and mu_product are float32 scalars (float64 when that is the default dtype),
    as PyTorch's _get_scalar_dtype; ASGD's eta after two steps is lr / (1 + lambd lr t)^alpha
    rounded to float32 (the float64 formula, by hand)."""
    p = tgrad.zeros(2, dtype=tgrad.float64, requires_grad=True)
    p.grad = tgrad.ones(2, dtype=tgrad.float64)
    asgd = tgrad.optim.ASGD([p], lr=0.1, lambd=0.01)
    asgd.step()
    asgd.step()
    eta = asgd.state[p]["eta"]
    assert eta.dtype is tgrad.float32 and asgd.state[p]["mu"].dtype is tgrad.float32
    assert eta.item() == np.float32(0.1 / (1 + 0.01 * 0.1 * 2) ** 0.75)
    nadam = tgrad.optim.NAdam([p])
    nadam.step()
    assert nadam.state[p]["mu_product"].dtype is tgrad.float32


_COMPLEX_CASES = [("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("AdamW", {}),
                  ("RMSprop", {"centered": True, "momentum": 0.5}), ("Adagrad", {}),
                  ("Adagrad", {"initial_accumulator_value": 0.1, "lr_decay": 0.01}),
                  ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("Adadelta", {}),
                  ("Rprop", {}), ("ASGD", {"t0": 1}), ("SGD", {"momentum": 0.9})]


@pytest.mark.parametrize("name,kw", _COMPLEX_CASES)
def test_complex_parameters_are_optimized_as_pairs_of_reals(name, kw):
    # PyTorch's optimizers treat a complex parameter as view_as_real(p): every rule acts on
    # the real and imaginary parts as separate elements (so Adam's second moment is g.re^2
    # per part, not the complex square g^2). Reference: the same optimizer on the real
    # (..., 2) parameter with the (..., 2) gradients.
    rng = np.random.default_rng(4)
    p0 = rng.standard_normal((3, 2))
    grads = [rng.standard_normal((3, 2)) for _ in range(3)]
    grads[0][1, 0] = 0.0  # a part with no gradient must not move on the first step
    pc = tgrad.nn.Parameter(tgrad.tensor(p0[:, 0] + 1j * p0[:, 1], dtype=tgrad.complex128))
    pr = tgrad.nn.Parameter(tgrad.tensor(p0, dtype=tgrad.float64))
    oc = getattr(optim, name)([pc], lr=0.1, **kw)
    orr = getattr(optim, name)([pr], lr=0.1, **kw)
    for g in grads:
        pc.grad = tgrad.tensor(g[:, 0] + 1j * g[:, 1], dtype=tgrad.complex128)
        pr.grad = tgrad.tensor(g, dtype=tgrad.float64)
        oc.step()
        orr.step()
    got = pc.detach().numpy()
    np.testing.assert_allclose(np.stack([got.real, got.imag], -1), pr.detach().numpy(),
                               rtol=1e-12, atol=1e-15)
    for key, value in oc.state[pc].items():  # the state keeps the parameter's dtype
        if isinstance(value, tgrad.Tensor) and value.shape == pc.shape:
            assert value.dtype is tgrad.complex128, key


def test_adagrad_initial_accumulator_on_a_complex_parameter_by_hand():
    # PyTorch starts a complex parameter's sum at complex(v, v): each part's sum is
    # v + g_part^2 = 1.1, so each part moves by lr g / (sqrt(1.1) + eps), eps = 1e-10
    p = tgrad.nn.Parameter(tgrad.tensor([1 + 1j], dtype=tgrad.complex128))
    o = optim.Adagrad([p], lr=0.1, initial_accumulator_value=0.1)
    np.testing.assert_array_equal(o.state[p]["sum"].numpy(), [0.1 + 0.1j])
    p.grad = tgrad.tensor([1 + 1j], dtype=tgrad.complex128)
    o.step()
    want = 1 - 0.1 / (math.sqrt(1.1) + 1e-10)
    np.testing.assert_allclose(p.detach().numpy(), [want + 1j * want], rtol=1e-14)
    np.testing.assert_allclose(o.state[p]["sum"].numpy(), [1.1 + 1.1j], rtol=1e-15)


def test_adam_first_step_on_a_complex_parameter_by_hand():
    # From zero state m_hat = g and v_hat = g^2 per real part, so each part moves by
    # lr g / (|g| + eps): -lr sign(g), 0 for a zero part
    p = tgrad.nn.Parameter(tgrad.tensor([1 + 1j, 2 - 1j], dtype=tgrad.complex128))
    o = optim.Adam([p], lr=0.1, eps=1e-12)
    p.grad = tgrad.tensor([0.5 - 0.2j, 1j], dtype=tgrad.complex128)
    o.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9 + 1.1j, 2.0 - 1.1j], rtol=1e-10)


def _lbfgs_float32_reference(x, max_iter, lr=1.0):
    """PyTorch's L-BFGS without line search in NumPy float32: every scalar of the two-loop
    recursion (rho, H_diag, al, be, al - be) a float32, as PyTorch's 0-d tensors; the
    problem f = sum x^4 + x0 x1."""
    f32 = np.float32

    def grad(v):
        g = 4 * v ** 3
        g[0] += v[1]
        g[1] += v[0]
        return g.astype(f32)

    x = x.astype(f32)
    g = grad(x)
    dirs, stps, ro, h = [], [], [], f32(1.0)
    d = t = g_prev = None
    for n in range(1, max_iter + 1):
        if n == 1:
            d = -g
        else:
            y, s = g - g_prev, d * f32(t)
            ys = np.dot(y, s)
            if ys > 1e-10:
                dirs.append(y)
                stps.append(s)
                ro.append(f32(1.0) / ys)
                h = ys / np.dot(y, y)
            q, al = -g, [None] * len(dirs)
            for i in range(len(dirs) - 1, -1, -1):
                al[i] = np.dot(stps[i], q) * ro[i]
                q = q + f32(-al[i]) * dirs[i]
            r = q * h
            for i in range(len(dirs)):
                be = np.dot(dirs[i], r) * ro[i]
                r = r + f32(al[i] - be) * stps[i]
            d = r
        g_prev = g.copy()
        t = min(1.0, 1.0 / float(np.abs(g).sum())) * lr if n == 1 else lr
        if float(np.dot(g, d)) > -1e-9:
            break
        x = x + f32(t) * d
        if n != max_iter:
            g = grad(x)
    return x


def test_lbfgs_float32_scalars_round_as_pytorchs():
    # rho, H_diag, al and be are 0-d tensors of the parameters' dtype (PyTorch's state); as
    # Python floats they rounded in double, and float32 iterates drifted from PyTorch's
    start = np.array([1.0, -2.0, 3.0])
    p = tgrad.tensor(start, dtype=tgrad.float32, requires_grad=True)
    opt = optim.LBFGS([p], lr=1.0, max_iter=4)

    def closure():
        opt.zero_grad()
        loss = (p ** 4).sum() + p[0] * p[1]
        loss.backward()
        return loss

    opt.step(closure)
    st = opt.state[p]
    assert all(r.dtype is tgrad.float32 and r.ndim == 0 for r in st["ro"])
    assert st["H_diag"].dtype is tgrad.float32
    np.testing.assert_array_equal(p.detach().numpy(), _lbfgs_float32_reference(start, 4))


@pytest.mark.parametrize("problem", ["neg_exp", "neg_square", "linear"])
def test_lbfgs_strong_wolfe_on_a_diverging_problem_gives_inf_not_an_exception(problem):
    # PyTorch's line search computes with 0-d tensors: on an unbounded objective the cubic
    # interpolation overflows to inf / divides 0 by 0 and the iterates run off to inf/NaN;
    # tgrad's Python floats raised OverflowError (d1 ** 2) or ZeroDivisionError (x1 == x2)
    f = {"neg_exp": lambda x: -x.exp().sum(), "neg_square": lambda x: -(x ** 2).sum(),
         "linear": lambda x: -1e3 * x.sum()}[problem]
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = f(x)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(3)]
    assert losses[0] == f(tgrad.tensor([1.0, 2.0], dtype=tgrad.float64)).item()
    assert losses[2] <= losses[1] < losses[0]  # running downhill, to -inf for neg_exp
    if problem == "neg_exp":  # PyTorch 2.13's iterates: then inf, its loss -inf
        assert losses[1:] == [-math.inf, -math.inf]
        assert x.detach().tolist() == [math.inf, math.inf]
        assert opt.state[x]["n_iter"] == 41 and opt.state[x]["func_evals"] == 68
