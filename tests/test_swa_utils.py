"""tgrad.optim.swa_utils (AveragedModel, SWALR, update_bn, the averaging functions) and
lr_scheduler's CyclicLR neighbours: values against the definitions of PyTorch's
documentation, computed here with NumPy float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.optim import swa_utils as swa

F64 = tgrad.float64


def _model(seed):
    tgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4, dtype=F64), nn.BatchNorm1d(4, dtype=F64))


def _params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def test_swa_running_mean_and_buffers_follow_the_model():
    models = [_model(s) for s in range(4)]
    avg = swa.AveragedModel(models[0])
    assert avg.n_averaged.item() == 0 and avg.n_averaged.dtype is tgrad.int64
    for m in models:
        with tgrad.no_grad():
            m[1].running_mean.add_(float(len(m[1].running_mean)))  # a buffer that differs
        avg.update_parameters(m)
    assert avg.n_averaged.item() == 4
    want = [np.mean(ps, axis=0) for ps in zip(*[_params(m) for m in models])]
    for got, w in zip(_params(avg.module), want):
        np.testing.assert_allclose(got, w, rtol=1e-14)
    np.testing.assert_allclose(avg.module[1].running_mean.numpy(),
                               models[-1][1].running_mean.numpy())  # copied, not averaged
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((5, 3)))
    avg.eval()
    np.testing.assert_allclose(avg(x).detach().numpy(), avg.module(x).detach().numpy())
    assert all(p is not q for p, q in zip(avg.parameters(), models[0].parameters()))


def test_ema_functions_and_use_buffers():
    models = [_model(s) for s in range(3)]
    decay = 0.9
    for avg in (swa.AveragedModel(models[0], avg_fn=swa.get_ema_avg_fn(decay)),
                swa.AveragedModel(models[0], multi_avg_fn=swa.get_ema_multi_avg_fn(decay),
                                  use_buffers=True)):
        for m in models:
            avg.update_parameters(m)
        want = _params(models[0])
        for m in models[1:]:
            want = [decay * w + (1 - decay) * p for w, p in zip(want, _params(m))]
        for got, w in zip(_params(avg.module), want):
            np.testing.assert_allclose(got, w, rtol=1e-14)
    # use_buffers: the running statistics are averaged too (EMA here)
    rm = [m[1].running_var.numpy() for m in models]
    np.testing.assert_allclose(avg.module[1].running_var.numpy(), rm[0], rtol=1e-14)
    swa_fn = swa.get_swa_avg_fn()
    a, p = tgrad.tensor([1.0, 3.0]), tgrad.tensor([3.0, 7.0])
    np.testing.assert_allclose(swa_fn(a, p, tgrad.tensor(1)).numpy(), [2.0, 5.0])
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa.AveragedModel(models[0], avg_fn=swa_fn, multi_avg_fn=swa.get_swa_multi_avg_fn())


def test_update_bn_recomputes_the_statistics():
    tgrad.manual_seed(1)
    model = nn.Sequential(nn.Linear(2, 3, dtype=F64), nn.BatchNorm1d(3, dtype=F64))
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((4, 2)) * 3 + 1 for _ in range(3)]
    loader = [(tgrad.tensor(b), tgrad.zeros(4)) for b in batches]  # (input, target) pairs
    model.eval()
    swa.update_bn(loader, model)
    assert not model.training and model[1].momentum == 0.1
    w, b = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    hs = [x @ w.T + b for x in batches]
    np.testing.assert_allclose(model[1].running_mean.numpy(),
                               np.mean([h.mean(0) for h in hs], axis=0), rtol=1e-12)
    np.testing.assert_allclose(model[1].running_var.numpy(),  # unbiased, averaged per batch
                               np.mean([h.var(0, ddof=1) for h in hs], axis=0), rtol=1e-12)
    assert model[1].num_batches_tracked.item() == 3
    swa.update_bn(loader, nn.Linear(2, 2))  # no BatchNorm: nothing to do


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_anneals_to_swa_lr(strategy):
    p = tgrad.zeros(1, requires_grad=True)
    opt = tgrad.optim.SGD([p], lr=1.0)
    sched = swa.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    alpha = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else \
        (lambda t: t)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    want = [0.1 * alpha(min(1.0, s / 4)) + 1.0 * (1 - alpha(min(1.0, s / 4)))
            for s in range(7)]
    assert lrs == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa.SWALR(opt, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa.SWALR(opt, 0.1, anneal_epochs=-1)


def test_swalr_state_dict_keeps_the_strategy_under_pytorchs_key():
    # PyTorch's SWALR state_dict holds the strategy as "_anneal_strategy"; a state loaded
    # into a 'cos' scheduler resumes the saved linear ramp 1.0 -> 0.1 over 4 steps
    def make(strategy):
        opt = tgrad.optim.SGD([tgrad.zeros(1, requires_grad=True)], lr=1.0)
        return opt, swa.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    opt, sched = make("linear")
    opt.step()
    sched.step()
    sd = sched.state_dict()
    assert sd["_anneal_strategy"] == "linear" and "anneal_strategy" not in sd
    opt2, sched2 = make("cos")
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    sched2.load_state_dict(sd)
    assert sched2.anneal_strategy == "linear"
    lrs = []
    for _ in range(4):
        opt2.step()
        sched2.step()
        lrs.append(opt2.param_groups[0]["lr"])
    assert lrs == pytest.approx([1.0 - 0.9 * s / 4 for s in (2, 3, 4, 4)], rel=1e-12)


def test_ema_decay_must_lie_in_zero_one():
    for fn in (swa.get_ema_avg_fn, swa.get_ema_multi_avg_fn):
        for bad in (1.5, -0.1):
            with pytest.raises(ValueError, match="Invalid decay value"):
                fn(bad)
        fn(0.0), fn(1.0)


def test_update_bn_builds_no_graph_and_swalr_get_lr_warns():
    model = _model(0)
    seen = []
    model[1].register_forward_hook(lambda m, i, o: seen.append(o.requires_grad))
    loader = [tgrad.randn(5, 3, dtype=F64) for _ in range(2)]
    swa.update_bn(loader, model)
    assert seen == [False, False]  # PyTorch's update_bn runs under no_grad
    assert tgrad.is_grad_enabled()
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1)
    sched = swa.SWALR(opt, swa_lr=0.05, anneal_epochs=2)
    with pytest.warns(UserWarning, match="To get the last learning rate computed by the "
                                         "scheduler, please use `get_last_lr"):
        sched.get_lr()
    assert sched.state_dict()["_get_lr_called_within_step"] is False
