"""tgrad.optim.lr_scheduler: MultiplicativeLR, ConstantLR, PolynomialLR, SequentialLR,
ChainedScheduler, ReduceLROnPlateau, CosineAnnealingWarmRestarts and OneCycleLR against
the closed forms of PyTorch's documentation (written out here), plus state_dict round
trips and PyTorch's errors."""

from __future__ import annotations

import math

import pytest

import tgrad
from tgrad.optim import lr_scheduler as S

LRS = (0.1, 0.03)


def _opt(lrs=LRS, kind="sgd"):
    groups = [{"params": [tgrad.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    if kind == "sgd":
        return tgrad.optim.SGD(groups, lr=lrs[0], momentum=0.9)
    if kind == "adam":
        return tgrad.optim.Adam(groups, lr=lrs[0], betas=(0.9, 0.99))
    return tgrad.optim.Adagrad(groups, lr=lrs[0])


def _run(sched, steps):
    """get_last_lr() after construction and after each of ``steps`` steps; each must equal
    the groups' "lr"."""
    out = [list(sched.get_last_lr())]
    for _ in range(steps):
        sched.optimizer.step()
        sched.step()
        lrs = sched.get_last_lr()
        assert lrs == [g["lr"] for g in sched.optimizer.param_groups]
        out.append(list(lrs))
    return out


def _assert_close(got, want, what):
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15), what


# --------------------------------------------------------------------- closed forms
def _mult(e):
    return 0.95 if e % 3 else 0.8


CLOSED = {  # name -> (kwargs, rate at epoch e of a group whose initial rate is b)
    "MultiplicativeLR": (dict(lr_lambda=_mult),
                         lambda b, e: b * math.prod(_mult(k) for k in range(1, e + 1))),
    "ConstantLR": (dict(factor=0.3, total_iters=7), lambda b, e: b * (0.3 if e < 7 else 1.0)),
    "ConstantLR-default": (dict(), lambda b, e: b * (1 / 3 if e < 5 else 1.0)),
    "PolynomialLR": (dict(total_iters=13, power=2.0),
                     lambda b, e: b * (1 - min(e, 13) / 13) ** 2.0),
    "PolynomialLR-sqrt": (dict(total_iters=9, power=0.5),
                          lambda b, e: b * (1 - min(e, 9) / 9) ** 0.5),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_rates_follow_the_closed_forms(name):
    kw, rate = CLOSED[name]
    sched = getattr(S, name.split("-")[0])(_opt(), **kw)
    for e, lrs in enumerate(_run(sched, 25)):
        _assert_close(lrs, [rate(b, e) for b in LRS], (e, lrs))


def test_multiplicative_lr_takes_one_function_per_group():
    sched = S.MultiplicativeLR(_opt(), [_mult, lambda e: 0.5])
    for e, lrs in enumerate(_run(sched, 10)):
        _assert_close(lrs, [0.1 * math.prod(_mult(k) for k in range(1, e + 1)),
                            0.03 * 0.5 ** e], e)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.MultiplicativeLR(_opt(), [_mult])
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        S.MultiplicativeLR(_opt(), 0.5)


@pytest.mark.parametrize("name", ["ConstantLR", "PolynomialLR"])
def test_step_with_epoch_uses_the_closed_form(name):
    kw, rate = CLOSED[name]
    sched = getattr(S, name)(_opt(), **kw)
    for e in (3, 11, 1, 20, 6, 0):
        with pytest.warns(UserWarning, match="The epoch parameter"):
            sched.step(e)
        _assert_close(sched.get_last_lr(), [rate(b, e) for b in LRS], e)


def test_sequential_lr_switches_at_the_milestones():
    opt = _opt()
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=5)
    decay = S.ExponentialLR(opt, gamma=0.9)
    cos = S.CosineAnnealingLR(opt, T_max=10)
    sched = S.SequentialLR(opt, [warm, decay, cos], milestones=[5, 15])

    def rate(b, e):  # each scheduler's closed form, restarted at its milestone
        if e < 5:
            return b * (0.1 + 0.9 * e / 5)
        if e < 15:
            return b * 0.9 ** (e - 5)
        return b * (1 + math.cos(math.pi * (e - 15) / 10)) / 2

    for e, lrs in enumerate(_run(sched, 30)):
        _assert_close(lrs, [rate(b, e) for b in LRS], (e, lrs))


def test_sequential_lr_of_constant_then_polynomial():
    opt = _opt()
    sched = S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, total_iters=3),
                                 S.PolynomialLR(opt, total_iters=8, power=1.0)], [6])
    for e, lrs in enumerate(_run(sched, 18)):
        want = [b * (0.5 if e < 3 else 1.0) if e < 6 else b * (1 - min(e - 6, 8) / 8)
                for b in LRS]
        _assert_close(lrs, want, (e, lrs))


def test_chained_scheduler_multiplies_the_factors():
    opt = _opt()
    sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=4),
                                S.ExponentialLR(opt, gamma=0.9)])
    for e, lrs in enumerate(_run(sched, 12)):
        _assert_close(lrs, [b * (0.1 if e < 4 else 1.0) * 0.9 ** e for b in LRS], e)
    opt = _opt((1.0,))
    sched = S.ChainedScheduler([S.StepLR(opt, 3, 0.5), S.PolynomialLR(opt, 10, 1.0)],
                               optimizer=opt)
    for e, lrs in enumerate(_run(sched, 12)):
        _assert_close(lrs, [0.5 ** (e // 3) * (1 - min(e, 10) / 10)], e)


def _warm_restarts(e: float, t0: int, t_mult: int) -> tuple[float, float]:
    """(T_cur, T_i) at epoch e, by walking the periods T_0, T_0 T_mult, ..."""
    start, period = 0.0, t0
    while e >= start + period:
        start += period
        period *= t_mult
    return e - start, period


@pytest.mark.parametrize("t0,t_mult,eta_min", [(5, 1, 0.0), (3, 2, 0.001), (4, 3, 0.01),
                                               (1, 2, 0.0)])
def test_cosine_annealing_warm_restarts(t0, t_mult, eta_min):
    def rate(b, e):
        t_cur, t_i = _warm_restarts(e, t0, t_mult)
        return eta_min + (b - eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2

    sched = S.CosineAnnealingWarmRestarts(_opt(), T_0=t0, T_mult=t_mult, eta_min=eta_min)
    for e, lrs in enumerate(_run(sched, 45)):
        _assert_close(lrs, [rate(b, e) for b in LRS], (e, lrs))
    # step(epoch) with fractional epochs (epoch + batch / batches), then back and forth
    sched = S.CosineAnnealingWarmRestarts(_opt(), T_0=t0, T_mult=t_mult, eta_min=eta_min)
    for epoch in [i * 0.37 for i in range(100)] + [2.5, 0.0, 17.25, 1.0]:
        sched.step(epoch)
        assert sched.last_epoch == math.floor(epoch)
        want = [rate(b, epoch) for b in LRS]
        assert sched.get_last_lr() == pytest.approx(want, rel=1e-9, abs=1e-15), epoch


def test_cosine_annealing_warm_restarts_errors():
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=2, T_mult=1.5)
    sched = S.CosineAnnealingWarmRestarts(_opt(), T_0=2)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


def _one_cycle_reference(step, total, pct, start, peak, end_lr, anneal, three_phase):
    """PyTorch's documented 1cycle: up from ``start`` to ``peak`` over the first pct of the
    steps (ending at step pct*total - 1), then down to ``end_lr`` (three_phase: back to
    ``start`` at step 2 pct total - 2, then down to ``end_lr``) at step total - 1."""
    def ann(a, b, frac):
        if anneal == "cos":
            return b + (a - b) / 2 * (1 + math.cos(math.pi * frac))
        return a + (b - a) * frac

    up = pct * total - 1
    if step <= up:
        return ann(start, peak, step / up)
    if not three_phase:
        return ann(peak, end_lr, (step - up) / (total - 1 - up))
    down = 2 * pct * total - 2
    if step <= down:
        return ann(peak, start, (step - up) / (down - up))
    return ann(start, end_lr, (step - down) / (total - 1 - down))


@pytest.mark.parametrize("anneal", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_one_cycle_lr_and_momentum(anneal, three_phase, kind):
    total, pct, maxes = 37, 0.3, (1.0, 0.5)
    opt = _opt(kind=kind)
    sched = S.OneCycleLR(opt, max_lr=list(maxes), total_steps=total, pct_start=pct,
                         anneal_strategy=anneal, three_phase=three_phase, div_factor=20.0,
                         final_div_factor=50.0)
    for g, m in zip(opt.param_groups, maxes):
        assert g["initial_lr"] == m / 20.0 and g["max_lr"] == m
        assert g["min_lr"] == m / 20.0 / 50.0
    for step in range(total):
        if step:
            opt.step()
            sched.step()
        want = [_one_cycle_reference(step, total, pct, m / 20.0, m, m / 20.0 / 50.0, anneal,
                                     three_phase) for m in maxes]
        _assert_close(sched.get_last_lr(), want, step)
        # momentum moves the other way: max_momentum at the ends, base_momentum at the peak
        mom = _one_cycle_reference(step, total, pct, 0.95, 0.85, 0.95, anneal, three_phase)
        for g in opt.param_groups:
            got = g["betas"][0] if kind == "adam" else g["momentum"]
            assert got == pytest.approx(mom, rel=1e-12), step
            if kind == "adam":
                assert g["betas"][1] == 0.99
    assert sched.get_last_lr() == pytest.approx([m / 20.0 / 50.0 for m in maxes], rel=1e-12)
    opt.step()
    sched.step()  # step total_steps is allowed (PyTorch's check is step > total_steps)
    with pytest.raises(ValueError, match=f"Tried to step {total + 1} times. The specified "
                                         f"number of total steps is {total}"):
        sched.step()


def test_one_cycle_lr_from_epochs_without_momentum():
    opt = _opt(kind="adagrad")
    sched = S.OneCycleLR(opt, max_lr=0.3, epochs=4, steps_per_epoch=9, cycle_momentum=False)
    assert sched.total_steps == 36
    for step, lrs in enumerate(_run(sched, 35)):
        want = _one_cycle_reference(step, 36, 0.3, 0.3 / 25, 0.3, 0.3 / 25 / 1e4, "cos", False)
        _assert_close(lrs, [want, want], step)


def test_one_cycle_lr_errors():
    with pytest.raises(ValueError, match=r"You must define either total_steps OR \(epochs "
                                         r"AND steps_per_epoch\)"):
        S.OneCycleLR(_opt(), 0.1, epochs=3)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        S.OneCycleLR(_opt(), 0.1, total_steps=0)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start, but got 2"):
        S.OneCycleLR(_opt(), 0.1, total_steps=10, pct_start=2)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got exp"):
        S.OneCycleLR(_opt(), 0.1, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="max_lr must have the same length as "
                                         "optimizer.param_groups"):
        S.OneCycleLR(_opt(), [0.1], total_steps=10)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with "
                                         "`cycle_momentum` option enabled"):
        S.OneCycleLR(_opt(kind="adagrad"), 0.1, total_steps=10)


# --------------------------------------------------------------------- ReduceLROnPlateau
def _plateau(metrics, **kw):
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, **kw)
    out = []
    for m in metrics:
        sched.step(m)
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
        out.append(list(sched.get_last_lr()))
    return sched, out


@pytest.mark.parametrize("patience,cooldown", [(0, 0), (2, 0), (3, 2), (1, 4)])
def test_plateau_reduces_every_patience_plus_cooldown_epochs(patience, cooldown):
    # a constant metric: the first epoch sets the best, every later one is bad, so the rate
    # drops at epoch patience + 2, then every patience + 1 + cooldown epochs
    steps = 40
    _, out = _plateau([1.0] * steps, factor=0.5, patience=patience, cooldown=cooldown,
                      eps=0.0)  # eps (tested below) would stop the halving near 1e-8
    for epoch, lrs in enumerate(out, start=1):
        first = patience + 2
        drops = 0 if epoch < first else 1 + (epoch - first) // (patience + 1 + cooldown)
        _assert_close(lrs, [b * 0.5 ** drops for b in LRS], (epoch, lrs))


def test_plateau_improvements_reset_the_count_and_min_lr_and_eps_hold():
    # improving every epoch: never reduced
    _, out = _plateau([10.0 - i for i in range(10)], patience=0)
    assert out[-1] == list(LRS)
    # min_lr per group bounds the rate; eps skips changes smaller than it
    _, out = _plateau([1.0] * 12, factor=0.1, patience=0, min_lr=[0.002, 0.0])
    assert out[1] == pytest.approx([0.01, 0.003]) and out[2] == pytest.approx([0.002, 3e-4])
    assert out[-1][0] == 0.002
    _, out = _plateau([1.0] * 6, factor=0.5, patience=0, eps=0.02)
    assert out[-1] == pytest.approx([0.025, 0.03])  # 0.1 -> 0.05 -> 0.025, 0.03 never


@pytest.mark.parametrize("mode,threshold_mode,seq,bad", [
    # min/rel: better means m < best (1 - 0.1)
    ("min", "rel", [1.0, 0.95, 0.91, 0.89], [0, 1, 2, 0]),
    # min/abs: better means m < best - 0.1
    ("min", "abs", [1.0, 0.91, 0.89, 0.85], [0, 1, 0, 1]),
    # max/rel: better means m > best (1 + 0.1)
    ("max", "rel", [1.0, 1.05, 1.11, 1.2], [0, 1, 0, 1]),
    # max/abs: better means m > best + 0.1
    ("max", "abs", [1.0, 1.09, 1.11, 1.3], [0, 1, 0, 0]),
])
def test_plateau_thresholds(mode, threshold_mode, seq, bad):
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, mode=mode, threshold=0.1, threshold_mode=threshold_mode,
                                patience=10)
    for m, n_bad in zip(seq, bad):
        sched.step(tgrad.tensor(m))  # a one-element tensor works as the metric
        assert sched.num_bad_epochs == n_bad, (m, sched.best)


def test_plateau_state_and_errors():
    sched, _ = _plateau([1.0, 2.0, 3.0], mode="max", patience=5)
    state = sched.state_dict()
    assert state["best"] == 3.0 and state["last_epoch"] == 3 and "optimizer" not in state
    fresh = S.ReduceLROnPlateau(_opt())
    fresh.load_state_dict(state)
    assert fresh.mode == "max" and fresh.mode_worse == -math.inf and fresh.best == 3.0
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        S.ReduceLROnPlateau(_opt(), mode="avg")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        S.ReduceLROnPlateau(_opt(), threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        S.ReduceLROnPlateau(_opt(), min_lr=[0.1])
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        S.ReduceLROnPlateau([])


# --------------------------------------------------------------------- state and errors
def _make(name, opt):
    return {
        "MultiplicativeLR": lambda: S.MultiplicativeLR(opt, _mult),
        "ConstantLR": lambda: S.ConstantLR(opt, 0.25, 6),
        "PolynomialLR": lambda: S.PolynomialLR(opt, 15, 1.5),
        "SequentialLR": lambda: S.SequentialLR(
            opt, [S.LinearLR(opt, 0.2, total_iters=4), S.StepLR(opt, 3, 0.5)], [4]),
        "ChainedScheduler": lambda: S.ChainedScheduler(
            [S.ConstantLR(opt, 0.5, 5), S.ExponentialLR(opt, 0.9)]),
        "CosineAnnealingWarmRestarts": lambda: S.CosineAnnealingWarmRestarts(opt, 3, 2, 0.001),
        "OneCycleLR": lambda: S.OneCycleLR(opt, [0.5, 0.2], total_steps=20),
    }[name]()


@pytest.mark.parametrize("name", ["MultiplicativeLR", "ConstantLR", "PolynomialLR",
                                  "SequentialLR", "ChainedScheduler",
                                  "CosineAnnealingWarmRestarts", "OneCycleLR"])
def test_state_dict_round_trip_resumes_the_schedule(name):
    opt = _opt()
    sched = _make(name, opt)
    _run(sched, 7)
    state, opt_state = sched.state_dict(), opt.state_dict()
    assert "optimizer" not in state
    rest = _run(sched, 8)
    opt2 = _opt()
    resumed = _make(name, opt2)
    opt2.load_state_dict(opt_state)
    resumed.load_state_dict(state)
    assert resumed.get_last_lr() == rest[0]
    assert _run(resumed, 8) == rest


def test_composite_schedulers_check_their_children():
    opt, other = _opt(), _opt()
    a, b = S.ConstantLR(opt), S.StepLR(other, 2)
    with pytest.raises(ValueError, match="SequentialLR expects all schedulers to belong to "
                                         "the same optimizer"):
        S.SequentialLR(opt, [a, b], [3])
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers "
                                         "provided to be one more than the number of "
                                         "milestone points"):
        S.SequentialLR(opt, [a, S.StepLR(opt, 2)], [3, 4])
    with pytest.raises(ValueError, match="SequentialLR expects at least one scheduler"):
        S.SequentialLR(opt, [], [])
    with pytest.raises(ValueError, match="ChainedScheduler does not support "
                                         "`ReduceLROnPlateau`"):
        S.ChainedScheduler([a, S.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="ChainedScheduler expects at least one scheduler"):
        S.ChainedScheduler([])
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be "
                                         "between 0 and 1."):
        S.ConstantLR(opt, factor=1.5)


# ------------------------------------------------------------------------------- CyclicLR
def _cyclic_height(step: int, up: int, down: int) -> float:
    """Where ``step`` sits in its cycle: 0 at base_lr, 1 at max_lr (linear both ways)."""
    pos = step % (up + down)
    return pos / up if pos <= up else 1 - (pos - up) / down


@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_lr_modes_and_momentum(mode):
    up, down, gamma = 2, 3, 0.9
    opt = _opt()
    sched = S.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=up,
                       step_size_down=down, mode=mode, gamma=gamma, base_momentum=0.8,
                       max_momentum=0.95)
    for step in range(13):
        if step:
            sched.step()
        cycle = step // (up + down) + 1
        scale = {"triangular": 1.0, "triangular2": 0.5 ** (cycle - 1),
                 "exp_range": gamma ** step}[mode]
        h = _cyclic_height(step, up, down) * scale
        want = [0.01 + (0.1 - 0.01) * h, 0.02 + (0.1 - 0.02) * h]
        assert sched.get_last_lr() == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx(want, rel=1e-12, abs=1e-15)
        for g in opt.param_groups:
            assert g["momentum"] == pytest.approx(0.95 - 0.15 * h, rel=1e-12)
    assert opt.param_groups[0]["max_momentum"] == 0.95


def test_cyclic_lr_adam_betas_custom_scale_state_dict_and_errors():
    opt = _opt(kind="adam")
    sched = S.CyclicLR(opt, 0.001, 0.01, step_size_up=4, scale_fn=lambda x: 0.5,
                       scale_mode="iterations")
    for _ in range(3):
        sched.step()
    assert sched.get_last_lr()[0] == pytest.approx(0.001 + 0.009 * 0.75 * 0.5, rel=1e-12)
    assert opt.param_groups[0]["betas"] == pytest.approx((0.9 - 0.1 * 0.75 * 0.5, 0.99))
    state = sched.state_dict()
    assert state["_scale_fn_custom"] is None and state["last_epoch"] == 3
    again = S.CyclicLR(_opt(kind="adam"), 0.001, 0.01, step_size_up=4,
                       scale_fn=lambda x: 0.5, scale_mode="iterations")
    again.load_state_dict(state)
    again.step()
    sched.step()
    assert again.get_last_lr() == pytest.approx(sched.get_last_lr(), rel=1e-15)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        S.CyclicLR(_opt(), 0.01, 0.1, mode="sine")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.CyclicLR(_opt(kind="adagrad"), 0.01, 0.1)
    plain = S.CyclicLR(_opt(kind="adagrad"), 0.01, 0.1, cycle_momentum=False)
    assert plain.get_last_lr() == [0.01, 0.01]


# ---- PyTorch 2.13's warnings, Tensor lr and closed-form bits (differential checks) ----

_BEFORE = r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"


def test_step_before_optimizer_step_warns_as_pytorch():
    import warnings
    opt = _opt()
    sched = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=_BEFORE):
        sched.step()
    with warnings.catch_warnings():  # only the first step is checked
        warnings.simplefilter("error")
        sched.step()
    opt = _opt()
    sched = S.ExponentialLR(opt, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [0.05, 0.015]
    opt = _opt()
    sched = S.StepLR(opt, 2)
    opt.step = lambda closure=None: None  # replaced on the instance after the scheduler
    with pytest.warns(UserWarning, match=r"Seems like `optimizer.step\(\)` has been "
                                         r"overridden after learning rate scheduler"):
        sched.step()


def test_get_lr_outside_step_warns_and_the_flag_is_saved():
    import warnings
    opt = _opt()
    sched = S.CosineAnnealingLR(opt, T_max=4)
    with pytest.warns(UserWarning, match=r"To get the last learning rate computed by the "
                                         r"scheduler, please use `get_last_lr\(\)`"):
        sched.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert sched.state_dict()["_get_lr_called_within_step"] is False
    plateau = S.CosineAnnealingWarmRestarts(_opt(), 3)
    with pytest.warns(UserWarning, match="To get the last learning rate"):
        plateau.get_lr()


def test_epoch_deprecation_warning_is_pytorchs_full_text():
    with pytest.warns(UserWarning, match="During the deprecation, if epoch is different from "
                                         "None, the closed form is used instead of the new "
                                         "chainable form, where available."):
        S.ExponentialLR(_opt(), 0.5).step(3)


def test_tensor_lr_is_updated_in_place():
    lr = tgrad.tensor(0.1, dtype=tgrad.float64)
    opt = tgrad.optim.SGD([tgrad.zeros(1, requires_grad=True)], lr=lr)
    sched = S.ExponentialLR(opt, 0.5)
    for k in range(1, 4):
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] is lr and lr.item() == 0.1 * 0.5 ** k
        last = sched.get_last_lr()[0]
        assert last is not lr and last.item() == lr.item()  # a copy, as PyTorch's clone
    assert opt.param_groups[0]["initial_lr"] is not lr
    assert opt.param_groups[0]["initial_lr"].item() == 0.1
    lr = tgrad.tensor(1.0, dtype=tgrad.float64)
    opt = tgrad.optim.SGD([tgrad.zeros(1, requires_grad=True)], lr=lr)
    plateau = S.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    plateau.step(1.0)
    plateau.step(1.0)  # no improvement > patience 0: lr * factor
    assert opt.param_groups[0]["lr"] is lr and lr.item() == 0.5
    lr = tgrad.tensor(1.0, dtype=tgrad.float64)
    opt = tgrad.optim.SGD([tgrad.zeros(1, requires_grad=True)], lr=lr, momentum=0.9)
    S.CyclicLR(opt, 0.01, 0.1, step_size_up=2)
    assert opt.param_groups[0]["lr"] is lr and lr.item() == 0.01  # base_lr written in place


def test_linear_lr_closed_form_is_pytorchs_expression():
    opt = _opt()
    sched = S.LinearLR(opt, start_factor=0.1, end_factor=0.9, total_iters=13)
    for e in (3, 7, 2, 20, 0):
        with pytest.warns(UserWarning):
            sched.step(e)
        # the documented closed form, evaluated in PyTorch's order of operations
        assert sched.get_last_lr() == [b * (0.1 + (0.9 - 0.1) * min(13, e) / 13) for b in LRS]
    sched = S.LinearLR(_opt(), total_iters=0)
    with pytest.warns(UserWarning), pytest.raises(ZeroDivisionError,
                                                  match="float division by zero"):
        sched.step(2)
