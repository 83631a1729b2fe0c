"""Optimizer hooks (step, state_dict, load_state_dict; per optimizer and global), PyTorch's
param-group keys (foreach, fused, capturable, differentiable, decoupled_weight_decay), the
dtype of state["step"], and the aliases _LRScheduler / clip_grad_norm. Expected values are
hand-derived (or NumPy float64); the key lists are those of torch 2.13's optimizers."""

import copy
import math
import pickle

import numpy as np
import pytest

import tgrad
from tgrad import nn, optim
from tgrad.optim import lr_scheduler
from tgrad.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)


def _param(values=(1.0, -2.0), grad=(0.5, 0.25), dtype=tgrad.float64):
    p = tgrad.tensor(list(values), dtype=dtype, requires_grad=True)
    p.grad = tgrad.tensor(list(grad), dtype=dtype)
    return p


def _closure(p):
    def closure():
        p.grad = None
        loss = (p * p).sum()
        loss.backward()
        return loss
    return closure


# Every optimizer, built on one parameter, and how to call its step.
MAKERS = {
    "SGD": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam": lambda ps: optim.Adam(ps),
    "AdamW": lambda ps: optim.AdamW(ps),
    "Adagrad": lambda ps: optim.Adagrad(ps),
    "RMSprop": lambda ps: optim.RMSprop(ps),
    "Adadelta": lambda ps: optim.Adadelta(ps),
    "Adamax": lambda ps: optim.Adamax(ps),
    "NAdam": lambda ps: optim.NAdam(ps),
    "RAdam": lambda ps: optim.RAdam(ps),
    "ASGD": lambda ps: optim.ASGD(ps),
    "Rprop": lambda ps: optim.Rprop(ps),
    "LBFGS": lambda ps: optim.LBFGS(ps, max_iter=2),
}

# sorted(torch.optim.X([p]).state_dict()["param_groups"][0]) in torch 2.13 (tgrad's LBFGS
# also has "maximize", which torch's has not).
TORCH_GROUP_KEYS = {
    "SGD": ["dampening", "differentiable", "foreach", "fused", "lr", "maximize", "momentum",
            "nesterov", "params", "weight_decay"],
    "Adam": ["amsgrad", "betas", "capturable", "decoupled_weight_decay", "differentiable",
             "eps", "foreach", "fused", "lr", "maximize", "params", "weight_decay"],
    "AdamW": ["amsgrad", "betas", "capturable", "decoupled_weight_decay", "differentiable",
              "eps", "foreach", "fused", "lr", "maximize", "params", "weight_decay"],
    "Adagrad": ["differentiable", "eps", "foreach", "fused", "initial_accumulator_value", "lr",
                "lr_decay", "maximize", "params", "weight_decay"],
    "RMSprop": ["alpha", "capturable", "centered", "differentiable", "eps", "foreach", "lr",
                "maximize", "momentum", "params", "weight_decay"],
    "Adadelta": ["capturable", "differentiable", "eps", "foreach", "lr", "maximize", "params",
                 "rho", "weight_decay"],
    "Adamax": ["betas", "capturable", "differentiable", "eps", "foreach", "lr", "maximize",
               "params", "weight_decay"],
    "NAdam": ["betas", "capturable", "decoupled_weight_decay", "differentiable", "eps",
              "foreach", "lr", "maximize", "momentum_decay", "params", "weight_decay"],
    "RAdam": ["betas", "capturable", "decoupled_weight_decay", "differentiable", "eps",
              "foreach", "lr", "maximize", "params", "weight_decay"],
    "ASGD": ["alpha", "capturable", "differentiable", "foreach", "lambd", "lr", "maximize",
             "params", "t0", "weight_decay"],
    "Rprop": ["capturable", "differentiable", "etas", "foreach", "lr", "maximize", "params",
              "step_sizes"],
    "LBFGS": ["history_size", "line_search_fn", "lr", "max_eval", "max_iter", "maximize",
              "params", "tolerance_change", "tolerance_grad"],
}


def _step(name, opt, p):
    return opt.step(_closure(p)) if name == "LBFGS" else opt.step()


# ----------------------------------------------------------------------------- step hooks
@pytest.mark.parametrize("name", list(MAKERS))
def test_step_hooks_run_around_every_optimizer(name):
    p = _param()
    opt = MAKERS[name]([p])
    calls = []

    def pre(o, args, kwargs):
        assert o is opt and args[0] is opt  # PyTorch passes self as args[0]
        calls.append(("pre", p.detach().numpy().copy()))

    def post(o, args, kwargs):
        calls.append(("post", p.detach().numpy().copy()))

    h1 = opt.register_step_pre_hook(pre)
    h2 = opt.register_step_post_hook(post)
    before = p.detach().numpy().copy()
    _step(name, opt, p)
    assert [c[0] for c in calls] == ["pre", "post"]
    np.testing.assert_array_equal(calls[0][1], before)  # the pre hook sees the old value
    assert not np.array_equal(calls[1][1], before)  # the post hook sees the stepped one
    np.testing.assert_array_equal(calls[1][1], p.detach().numpy())
    h1.remove()
    h2.remove()
    _step(name, opt, p)
    assert len(calls) == 2


def test_step_hook_order_global_and_local():
    p = _param()
    opt = optim.SGD([p], lr=0.1)
    order = []
    handles = [
        register_optimizer_step_pre_hook(lambda o, a, k: order.append("global pre")),
        register_optimizer_step_post_hook(lambda o, a, k: order.append("global post")),
        opt.register_step_pre_hook(lambda o, a, k: order.append("pre 1")),
        opt.register_step_pre_hook(lambda o, a, k: order.append("pre 2")),
        opt.register_step_post_hook(lambda o, a, k: order.append("post")),
    ]
    try:
        opt.step()
        # global pre hooks first, global post hooks last (PyTorch's order)
        assert order == ["global pre", "pre 1", "pre 2", "post", "global post"]
        order.clear()
        other = optim.Adam([_param()])
        other.step()  # the global hooks run for every optimizer
        assert order == ["global pre", "global post"]
    finally:
        for h in handles:
            h.remove()
    order.clear()
    optim.Adam([_param()]).step()
    assert order == []


def test_step_pre_hook_can_replace_args_and_kwargs():
    p = _param(values=(1.0,), grad=(2.0,))
    opt = optim.SGD([p], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: 7.5}))
    opt.register_step_post_hook(lambda o, a, k: seen.append(sorted(k)))
    assert opt.step() == 7.5  # the closure the hook put in is the one evaluated
    assert seen == [["closure"]]  # the post hook gets the replaced kwargs
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.1 * 2.0])


def test_step_pre_hook_changing_the_lr_changes_the_step():
    p = _param(values=(1.0,), grad=(2.0,))
    opt = optim.SGD([p], lr=0.1)

    def halve(o, args, kwargs):
        o.param_groups[0]["lr"] = 0.25

    opt.register_step_pre_hook(halve)
    opt.step()
    assert p.item() == 1.0 - 0.25 * 2.0


def test_step_pre_hook_bad_return_raises():
    opt = optim.SGD([_param()], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_step_hooks_on_a_user_subclass_run_once():
    class MySGD(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)  # a nested step does not re-run the hooks

    class Plain(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})

        def step(self, closure=None):
            for p in self.param_groups[0]["params"]:
                p.data.sub_(self.param_groups[0]["lr"] * p.grad)

    calls = []
    h = register_optimizer_step_pre_hook(lambda o, a, k: calls.append(type(o).__name__))
    try:
        p = _param(values=(1.0,), grad=(2.0,))
        MySGD([p], lr=0.1).step()
        assert calls == ["MySGD"] and p.item() == 0.8
        q = _param(values=(1.0,), grad=(2.0,))
        Plain([q]).step()
        assert calls == ["MySGD", "Plain"] and q.item() == 0.0
    finally:
        h.remove()


def test_hooks_are_not_pickled_or_deep_copied():
    p = _param()
    opt = optim.Adam([p], lr=0.1)
    opt.step()
    opt.register_step_pre_hook(lambda o, a, k: None)  # a lambda: not picklable
    opt.register_state_dict_post_hook(lambda o, sd: None)
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert not clone._optimizer_step_pre_hooks
        assert not clone._optimizer_state_dict_post_hooks
        assert clone.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
        q = clone.param_groups[0]["params"][0]
        assert clone.state[q]["step"].item() == 1.0
        clone.register_step_post_hook(lambda o, a, k: None)  # hooks can be added again


# ------------------------------------------------------------------------ state dict hooks
def test_state_dict_hooks():
    p = _param()
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.step()
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre 1"))
    opt.register_state_dict_pre_hook(lambda o: order.append("pre 0"), prepend=True)

    def add_key(o, sd):
        order.append("post add")
        sd["extra"] = 42  # in place, returns None

    def replace(o, sd):
        order.append("post replace")
        return {"state": sd["state"], "param_groups": sd["param_groups"],
                "extra": sd["extra"] + 1}

    opt.register_state_dict_post_hook(replace)
    h = opt.register_state_dict_post_hook(add_key, prepend=True)
    sd = opt.state_dict()
    assert order == ["pre 0", "pre 1", "post add", "post replace"]
    assert sd["extra"] == 43
    assert sd["param_groups"][0]["lr"] == 0.1
    # momentum buffer after one step: b = g
    np.testing.assert_allclose(sd["state"][0]["momentum_buffer"].numpy(), [0.5, 0.25])
    h.remove()
    order.clear()
    with pytest.raises(KeyError):  # replace now runs without add_key before it
        opt.state_dict()
    assert order == ["pre 0", "pre 1", "post replace"]


def test_load_state_dict_hooks():
    p = _param()
    opt = optim.SGD([p], lr=0.1)
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = 0.3
    order, seen = [], []

    def pre_edit(o, sd):
        order.append("pre edit")
        seen.append(sd)
        sd["param_groups"] = [dict(sd["param_groups"][0], lr=0.4)]  # edit the copy

    def pre_replace(o, sd):
        order.append("pre replace")
        groups = [dict(g, lr=g["lr"] * 2) for g in sd["param_groups"]]
        return {"state": sd["state"], "param_groups": groups}

    def post(o):
        order.append("post")
        seen.append(o.param_groups[0]["lr"])  # runs after the state is loaded

    opt.register_load_state_dict_pre_hook(pre_replace)
    opt.register_load_state_dict_pre_hook(pre_edit, prepend=True)
    opt.register_load_state_dict_post_hook(post)
    opt.register_load_state_dict_post_hook(lambda o: order.append("post 0"), prepend=True)
    opt.load_state_dict(saved)
    assert order == ["pre edit", "pre replace", "post 0", "post"]
    assert seen[0] is not saved  # the hooks get a shallow copy
    assert saved["param_groups"][0]["lr"] == 0.3  # the caller's dict is not modified
    assert opt.param_groups[0]["lr"] == 0.8 and seen[1] == 0.8
    assert opt.param_groups[0]["params"][0] is p
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.8 * 0.5, -2.0 - 0.8 * 0.25])


# ------------------------------------------------------------------------ param group keys
@pytest.mark.parametrize("name", list(MAKERS))
def test_param_group_keys_match_torch(name):
    p = _param()
    opt = MAKERS[name]([p])
    keys = TORCH_GROUP_KEYS[name]
    assert sorted(opt.param_groups[0]) == keys
    assert sorted(opt.state_dict()["param_groups"][0]) == keys
    assert sorted(opt.defaults) == [k for k in keys if k != "params"]
    _step(name, opt, p)
    opt.load_state_dict(opt.state_dict())  # loading adds no key to the groups
    assert sorted(opt.state_dict()["param_groups"][0]) == keys
    if "foreach" in keys:
        assert opt.param_groups[0]["foreach"] is None
        assert opt.param_groups[0]["differentiable"] is False
    if "fused" in keys:
        assert opt.param_groups[0]["fused"] is None
    if "capturable" in keys:
        assert opt.param_groups[0]["capturable"] is False
    if "decoupled_weight_decay" in keys:
        assert opt.param_groups[0]["decoupled_weight_decay"] is (name == "AdamW")


def test_flags_are_kept_in_the_groups():
    opt = optim.Adam([_param()], foreach=False, capturable=True, fused=True)
    g = opt.param_groups[0]
    assert (g["foreach"], g["capturable"], g["fused"]) == (False, True, True)
    sd = optim.SGD([_param()], lr=0.1, foreach=True).state_dict()
    assert sd["param_groups"][0]["foreach"] is True
    assert optim.Adagrad([_param()], fused=True).param_groups[0]["fused"] is True
    assert optim.RMSprop([_param()], capturable=True).defaults["capturable"] is True


_ALL = "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla']"
_NO_XLA = "['cuda', 'xpu', 'hpu', 'privateuseone']"


# PyTorch 2.13's texts on the CPU: (foreach=None/False, foreach=True)
@pytest.mark.parametrize("name, what, devices", [
    ("Adam", ("params and state_steps",) * 2, (_ALL, _NO_XLA)),
    ("AdamW", ("params and state_steps",) * 2, (_ALL, _NO_XLA)),
    ("Adamax", ("params and state_steps",) * 2, (_ALL, _NO_XLA)),
    ("RAdam", ("params and state_steps",) * 2, (_ALL, _NO_XLA)),
    ("RMSprop", ("params and state_steps",) * 2, (_ALL, _ALL)),
    ("Rprop", ("params and state_steps",) * 2, (_ALL, _ALL)),
    ("Adadelta", ("params and state_steps",) * 2, (_NO_XLA, _NO_XLA)),
    ("ASGD", ("params, mus, etas, and state_steps",) * 2, (_ALL, _NO_XLA)),
    ("NAdam", ("params, mu_products and state_steps", "params, mu_products, and state_steps"),
     (_ALL, _NO_XLA)),
])
def test_capturable_with_cpu_params_raises_at_step(name, what, devices):
    # capturable=True (for CUDA graphs) is accepted by the constructor, but PyTorch's step
    # asserts the parameters are on a capturable device; tgrad stepped silently on the CPU
    for foreach, w, dev in zip((None, True), what, devices):
        p = _param()
        opt = getattr(optim, name)([p], lr=0.1, capturable=True, foreach=foreach)
        with pytest.raises(AssertionError) as info:
            opt.step()
        assert str(info.value) == (f"If capturable=True, {w} must be on supported devices: "
                                   f"{dev}.")
        assert p.tolist() == [1.0, -2.0]  # nothing updated
    p = _param()
    getattr(optim, name)([p], lr=0.1, foreach=False, capturable=False).step()
    assert p.tolist() != [1.0, -2.0]


@pytest.mark.parametrize("make", [
    lambda ps: optim.Adam(ps, fused=True, foreach=True),
    lambda ps: optim.AdamW(ps, fused=True, foreach=True),
    lambda ps: optim.SGD(ps, lr=0.1, fused=True, foreach=True),
    lambda ps: optim.Adagrad(ps, fused=True, foreach=True),
])
def test_fused_with_foreach_raises(make):
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        make([_param()])


@pytest.mark.parametrize("make", [
    lambda ps: optim.Adam(ps, fused=True, differentiable=True),
    lambda ps: optim.SGD(ps, lr=0.1, fused=True, differentiable=True),
])
def test_fused_with_differentiable_raises(make):
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        make([_param()])


_FUSED_MSG = ("`fused=True` requires all the params to be floating point Tensors of supported "
              "devices: ['cuda', 'cpu'] but tgrad.complex64 and cpu")


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_fused_refuses_a_complex_parameter_at_the_step(name):
    # PyTorch accepts the parameters at construction and refuses a complex one at the first
    # step (its _device_dtype_check_for_fused); the parameter is not moved
    cls = getattr(optim, name)
    p = _param((1 + 1j, 2 - 1j), (1j, 1.0), tgrad.complex64)
    opt = cls([p], lr=0.1, fused=True)
    with pytest.raises(RuntimeError) as info:
        opt.step()
    assert str(info.value) == _FUSED_MSG
    np.testing.assert_array_equal(p.detach().numpy(), np.array([1 + 1j, 2 - 1j], np.complex64))
    # a real first parameter then a complex one: still refused (Adagrad with its own text)
    q = _param((1 + 1j, 2 - 1j), (1j, 1.0), tgrad.complex64)
    opt = cls([_param(dtype=tgrad.float32), q], lr=0.1, fused=True)
    msg = "`fused` does not support sparse grad or complex param" if name == "Adagrad" else \
        _FUSED_MSG
    with pytest.raises(RuntimeError) as info:
        opt.step()
    assert str(info.value) == msg
    # real parameters step as without fused
    a, b = _param(dtype=tgrad.float32), _param(dtype=tgrad.float32)
    ca, cb = cls([a], lr=0.1, fused=True), cls([b], lr=0.1)
    ca.step()
    cb.step()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert not np.array_equal(a.detach().numpy(), np.array([1.0, -2.0], np.float32))


@pytest.mark.parametrize("name", [n for n in MAKERS if n != "LBFGS"])
def test_differentiable_raises(name):
    cls = getattr(optim, name)
    kw = {"lr": 0.1} if name == "SGD" else {}
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        cls([_param()], differentiable=True, **kw)


def _adam_one_step(decoupled: bool, cls=optim.Adam, **kw):
    # p = 1, g = 0.5, lr = 0.1, weight_decay = 0.1, one step
    p = _param(values=(1.0,), grad=(0.5,))
    opt = cls([p], lr=0.1, weight_decay=0.1, **kw)
    if cls is optim.Adam:
        assert opt.param_groups[0]["decoupled_weight_decay"] is decoupled
    opt.step()
    return p.item()


def _ref_adam_one_step(decoupled: bool) -> float:
    lr, wd, eps, b1, b2 = 0.1, 0.1, 1e-8, 0.9, 0.999
    w, g = 1.0, 0.5
    if decoupled:
        w *= 1 - lr * wd
    else:
        g += wd * w
    m, v = (1 - b1) * g, (1 - b2) * g * g
    return w - lr * (m / (1 - b1)) / (math.sqrt(v / (1 - b2)) + eps)


def test_adam_decoupled_weight_decay():
    # the first Adam step moves by about lr (m_hat / sqrt(v_hat) = 1): 0.99 - 0.1, 1 - 0.1
    assert _adam_one_step(True, decoupled_weight_decay=True) == pytest.approx(0.89, abs=1e-7)
    assert _adam_one_step(False) == pytest.approx(0.9, abs=1e-7)
    assert _adam_one_step(True, decoupled_weight_decay=True) == _ref_adam_one_step(True)
    assert _adam_one_step(False) == _ref_adam_one_step(False)
    assert _adam_one_step(True, cls=optim.AdamW) == _ref_adam_one_step(True)


def test_adamw_stays_decoupled_after_load_state_dict():
    p = _param()
    opt = optim.AdamW([p])
    sd = opt.state_dict()
    sd["param_groups"][0]["decoupled_weight_decay"] = False
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True  # as torch's AdamW


def test_load_state_dict_fills_missing_keys_from_defaults():
    # a checkpoint saved before the groups had the implementation keys
    p = _param(values=(1.0,), grad=(0.5,))
    opt = optim.Adam([p], lr=0.1)
    sd = opt.state_dict()
    for k in ("foreach", "fused", "capturable", "differentiable", "decoupled_weight_decay"):
        del sd["param_groups"][0][k]
    sd["param_groups"][0]["lr"] = 0.2
    opt.load_state_dict(sd)
    g = opt.param_groups[0]
    assert (g["lr"], g["fused"], g["decoupled_weight_decay"], g["capturable"]) == \
        (0.2, None, False, False)
    opt.step()
    assert p.item() == pytest.approx(1.0 - 0.2, abs=1e-7)


# ------------------------------------------------------------------------ state["step"]
STEP_MAKERS = {k: v for k, v in MAKERS.items() if k not in ("SGD", "LBFGS")}


@pytest.mark.parametrize("name", list(STEP_MAKERS))
def test_step_is_a_float32_scalar_tensor(name):
    p = _param()
    opt = STEP_MAKERS[name]([p])
    opt.step()
    step = opt.state[p]["step"]
    assert isinstance(step, tgrad.Tensor) and step.dim() == 0
    assert step.dtype is tgrad.float32 and step.item() == 1.0


@pytest.mark.parametrize("name", list(STEP_MAKERS))
def test_step_is_float64_with_a_float64_default_dtype(name):
    old = tgrad.get_default_dtype()
    tgrad.set_default_dtype(tgrad.float64)
    try:
        p = _param()
        opt = STEP_MAKERS[name]([p])
        opt.step()
        opt.step()
        assert opt.state[p]["step"].dtype is tgrad.float64
        assert opt.state[p]["step"].item() == 2.0
    finally:
        tgrad.set_default_dtype(old)


def test_fused_step_is_float32_whatever_the_default_dtype():
    old = tgrad.get_default_dtype()
    tgrad.set_default_dtype(tgrad.float64)
    try:
        p, q = _param(), _param()
        opt = optim.Adam([p], fused=True)
        opt.step()
        assert opt.state[p]["step"].dtype is tgrad.float32
        ada = optim.Adagrad([q], fused=True)
        assert ada.state[q]["step"].dtype is tgrad.float32  # Adagrad's state is made up front
        # a saved float64 step stays float64 unless the saved group is fused or capturable
        # (PyTorch looks at the loaded dict's groups, which replace the optimizer's)
        plain = optim.Adam([q])
        plain.step()
        assert plain.state[q]["step"].dtype is tgrad.float64
        fused = optim.Adam([q], fused=True)
        fused.load_state_dict(plain.state_dict())
        assert fused.state[q]["step"].dtype is tgrad.float64
        assert fused.param_groups[0]["fused"] is None
        for flag in ("fused", "capturable"):
            sd = plain.state_dict()
            sd["param_groups"] = [dict(sd["param_groups"][0], **{flag: True})]
            fused.load_state_dict(sd)
            assert fused.state[q]["step"].dtype is tgrad.float32
            assert fused.state[q]["step"].item() == 1.0
            assert plain.state[q]["step"].dtype is tgrad.float64  # the source is untouched
    finally:
        tgrad.set_default_dtype(old)


def test_numeric_step_in_old_checkpoints_becomes_a_tensor():
    p = _param()
    opt = optim.Adam([p])
    opt.step()
    sd = opt.state_dict()
    sd["state"][0] = dict(sd["state"][0], step=3)
    opt.load_state_dict(sd)
    step = opt.state[p]["step"]
    assert step.dtype is tgrad.float32 and step.item() == 3.0


# ------------------------------------------------------------------------ aliases
def test_lr_scheduler_alias():
    assert issubclass(lr_scheduler._LRScheduler, lr_scheduler.LRScheduler)
    assert lr_scheduler._LRScheduler.__name__ == "_LRScheduler"

    class Halve(lr_scheduler._LRScheduler):  # old-style custom scheduler
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    opt = optim.SGD([_param()], lr=0.8)
    sched = Halve(opt)
    opt.step()
    sched.step()
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.2]
    assert opt.param_groups[0]["lr"] == 0.2


def test_clip_grad_norm_alias_warns_and_clips():
    p = tgrad.tensor([0.0, 0.0], dtype=tgrad.float64, requires_grad=True)
    p.grad = tgrad.tensor([3.0, 4.0], dtype=tgrad.float64)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = nn.utils.clip_grad_norm([p], max_norm=1.0)
    assert total.item() == 5.0
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(p.grad.numpy(), [3.0 * scale, 4.0 * scale], rtol=1e-15)
