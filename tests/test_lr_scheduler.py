"""tgrad.optim.lr_scheduler: the recursive rates against PyTorch's documented closed forms,
step(epoch), composition, state_dict and errors."""

from __future__ import annotations

import math

import pytest

import tgrad
from tgrad.optim import lr_scheduler as S


def _opt(lrs=(0.1, 0.03)):
    groups = [{"params": [tgrad.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    return tgrad.optim.SGD(groups, lr=lrs[0])


def _run(sched, steps):
    out = [sched.get_last_lr()]
    for _ in range(steps):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr())
    return out


CLOSED = {  # rate at epoch e of a group whose initial rate is b
    "StepLR": (dict(step_size=3, gamma=0.5), lambda b, e: b * 0.5 ** (e // 3)),
    "MultiStepLR": (dict(milestones=[2, 5, 5], gamma=0.3),
                    lambda b, e: b * 0.3 ** sum(m <= e for m in (2, 5, 5))),
    "ExponentialLR": (dict(gamma=0.9), lambda b, e: b * 0.9 ** e),
    "CosineAnnealingLR": (dict(T_max=7, eta_min=0.001),
                          lambda b, e: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 7)) / 2),
    "LinearLR": (dict(start_factor=0.25, total_iters=6),
                 lambda b, e: b * (0.25 + 0.75 * min(e, 6) / 6)),
    "LambdaLR": (dict(lr_lambda=lambda e: 1.0 / (e + 1)), lambda b, e: b / (e + 1)),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_rates_follow_the_closed_forms(name):
    kw, rate = CLOSED[name]
    opt = _opt()
    sched = getattr(S, name)(opt, **kw)
    for e, lrs in enumerate(_run(sched, 20)):
        for lr, b in zip(lrs, (0.1, 0.03)):
            assert lr == pytest.approx(rate(b, e), rel=1e-12, abs=1e-15), (e, lrs)
    assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.03]


def test_step_with_epoch_uses_the_closed_form_and_warns():
    sched = S.StepLR(_opt(), step_size=2, gamma=0.1)
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(5)
    assert sched.get_last_lr() == pytest.approx([0.1 * 0.1 ** 2, 0.03 * 0.1 ** 2], rel=1e-15)


def test_two_schedulers_compose_and_state_round_trips():
    opt = _opt((1.0,))
    a, b = S.StepLR(opt, 2, 0.5), S.ExponentialLR(opt, 0.9)
    for _ in range(4):
        a.step()
        b.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 ** 2 * 0.9 ** 4, rel=1e-15)
    state = b.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 4
    fresh = S.ExponentialLR(_opt((1.0,)), 0.5)
    fresh.load_state_dict(state)
    assert fresh.gamma == 0.9 and fresh.last_epoch == 4


def test_lambda_lr_saves_callable_objects_not_functions():
    class Warmup:
        def __init__(self):
            self.n = 3

        def __call__(self, e):
            return min(1.0, (e + 1) / self.n)

    w = Warmup()
    sched = S.LambdaLR(_opt(), [w, lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"n": 3}, None]
    w.n = 10
    sched.load_state_dict(state)
    assert w.n == 3
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(_opt(), [lambda e: 1.0])


def test_resuming_needs_initial_lr_and_factors_are_checked():
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in "
                                       r"param_groups\[0\] when resuming scheduler with "
                                       r"last_epoch >= 0"):
        S.StepLR(_opt(), 2, last_epoch=3)
    opt = _opt()
    S.StepLR(opt, 2)
    resumed = S.StepLR(opt, 2, gamma=0.5, last_epoch=3)  # initial_lr is set now
    assert resumed.last_epoch == 4
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater "
                                         "than 0 and less or equal to 1"):
        S.LinearLR(_opt(), start_factor=0.0)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        S.StepLR([], 2)
