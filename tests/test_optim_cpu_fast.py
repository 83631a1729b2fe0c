"""The CPU fast path of sgd / adam (tgrad/optim/_functional.py: _sgd_cpu, _adam_cpu, NumPy
in place) against the per-tensor op path it replaces: bit-identical parameters and state,
the same version counters, over several steps, on float32 and float64 parameters of odd
shapes and layouts (0-d, empty, a transposed view, a slice of a bigger storage)."""

import numpy as np
import pytest

import tgrad
from tgrad import optim
from tgrad.optim import _functional

STEPS = 4
DTYPES = [np.float32, np.float64]


def _force_op_path(monkeypatch) -> None:
    monkeypatch.setattr(_functional, "_cpu_fast_group", lambda *hyper: False)


def _count_calls(monkeypatch, name: str) -> list:
    calls, fn = [], getattr(_functional, name)

    def spy(*a, **k):
        calls.append(1)
        return fn(*a, **k)
    monkeypatch.setattr(_functional, name, spy)
    return calls


def _op_then_fast(monkeypatch, run, fast: str | None = None) -> tuple:
    """(run() on the op path, run() again where the fast path may apply, the calls of
    _functional's ``fast`` function during the second run (None: not counted))."""
    with monkeypatch.context() as mp:
        _force_op_path(mp)
        ref = run()
    calls = None if fast is None else _count_calls(monkeypatch, fast)
    return ref, run(), calls


def _bits(t) -> bytes:
    return np.ascontiguousarray(t.numpy(force=True)).tobytes()


class _Case:
    """Parameters in odd layouts (fresh tensors per instance, same values), gradients per
    step (some non-contiguous, some with inf / NaN / -0.0 / overflowing squares)."""

    def __init__(self, dt) -> None:
        rng = np.random.default_rng(7)
        self.big = tgrad.tensor(rng.normal(size=(6, 9)).astype(dt))
        base_t = tgrad.tensor(rng.normal(size=(5, 3)).astype(dt))
        self.params = [
            tgrad.tensor(rng.normal(size=(1,)).astype(dt)),
            tgrad.tensor(rng.normal(size=(17,)).astype(dt)),
            base_t.t(),                       # (3, 5) transposed view
            self.big[1:4, 2:7],               # (3, 5) slice of a bigger storage
            tgrad.tensor(np.asarray(0.7, dt)),  # 0-d
            tgrad.tensor(np.zeros((0,), dt)),   # empty
            tgrad.tensor(np.asarray([0.5, -1.0, 2.0, 0.0, 3.0], dt)),
        ]
        self.base_t = base_t
        self.grads = []
        for k in range(STEPS):
            gs = [tgrad.tensor((rng.normal(size=tuple(p.shape)) * 10.0 ** (k - 1)).astype(dt))
                  for p in self.params[:2]]
            gs.append(tgrad.tensor(rng.normal(size=(5, 3)).astype(dt)).t())  # non-contiguous
            gs.append(tgrad.tensor(rng.normal(size=(3, 5)).astype(dt)))
            gs.append(tgrad.tensor(np.asarray(rng.normal(), dt)))
            gs.append(tgrad.tensor(np.zeros((0,), dt)))
            special = [np.inf, np.nan, -0.0, 1e-30, 1e30] if k == 1 else rng.normal(size=5)
            gs.append(tgrad.tensor(np.asarray(special, dt)))
            self.grads.append(gs)

    def state(self, n: int) -> list:
        return [[tgrad.zeros_like(p) for p in self.params] for _ in range(n)]

    def tensors(self) -> list:
        return [self.big, self.base_t] + self.params


def _assert_same(a: list, b: list) -> None:
    for x, y in zip(a, b, strict=True):
        if x is None:
            assert y is None
            continue
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x.numpy(force=True), y.numpy(force=True), equal_nan=True)
        assert _bits(x) == _bits(y)  # bit-identical, -0.0 and NaNs included
        assert x._version == y._version


ADAM = [dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0, amsgrad=False,
             maximize=False, decoupled_weight_decay=False),
        dict(lr=0.05, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0, amsgrad=True,
             maximize=False, decoupled_weight_decay=False),
        dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1, amsgrad=False,
             maximize=True, decoupled_weight_decay=False),
        dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, amsgrad=True,
             maximize=True, decoupled_weight_decay=True),  # AdamW
        dict(lr=1, beta1=0, beta2=0.5, eps=1e-3, weight_decay=1, amsgrad=False,
             maximize=False, decoupled_weight_decay=False)]  # ints; alpha == 1 (beta1 = 0)


def _run_adam(dt, hyper: dict) -> list:
    case = _Case(dt)
    m, v, vmax = case.state(3)
    steps = [tgrad.tensor(0.0) for _ in case.params]
    for gs in case.grads:
        _functional.adam(case.params, gs, m, v, vmax, steps, **hyper)
    return case.tensors() + m + v + (vmax if hyper["amsgrad"] else []) + steps


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("hyper", ADAM)
def test_adam_fast_path_is_bit_identical_to_the_op_path(dt, hyper, monkeypatch):
    ref, got, calls = _op_then_fast(monkeypatch, lambda: _run_adam(dt, hyper), "_adam_cpu")
    assert len(calls) == STEPS * 7  # every parameter took the fast path
    _assert_same(got, ref)


SGD = [dict(lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False),
       dict(lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=False, maximize=False),
       dict(lr=0.05, momentum=0.9, dampening=0.5, weight_decay=0.01, nesterov=False,
            maximize=True),
       dict(lr=0.05, momentum=0.8, dampening=0, weight_decay=1e-2, nesterov=True,
            maximize=False),
       dict(lr=0.3, momentum=0.5, dampening=0, weight_decay=0.1, nesterov=True, maximize=True),
       dict(lr=-1, momentum=2, dampening=0, weight_decay=1, nesterov=False,
            maximize=False)]  # ints; alpha == 1 for the buffer and p


def _run_sgd(dt, hyper: dict) -> list:
    case = _Case(dt)
    bufs = [None] * len(case.params)
    for gs in case.grads:
        _functional.sgd(case.params, gs, bufs, **hyper)
    return case.tensors() + bufs


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("hyper", SGD)
def test_sgd_fast_path_is_bit_identical_to_the_op_path(dt, hyper, monkeypatch):
    ref, got, calls = _op_then_fast(monkeypatch, lambda: _run_sgd(dt, hyper), "_sgd_cpu")
    # the first step creates the momentum buffers on the op path
    assert len(calls) == (STEPS - (hyper["momentum"] != 0)) * 7
    _assert_same(got, ref)


def test_view_parameter_writes_through_its_storage():
    big = tgrad.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    p = big[1:, 1:3]
    before = big.numpy().copy()
    v0 = big._version
    _functional.sgd([p], [tgrad.ones(2, 2)], [None], lr=0.5, momentum=0, dampening=0,
                    weight_decay=0, nesterov=False, maximize=False)
    expect = before.copy()
    expect[1:, 1:3] -= np.float32(0.5)
    assert np.array_equal(big.numpy(), expect)
    assert big._version == p._version == v0 + 1


def _mixed_group():
    """A group with a complex parameter, a float16 parameter and plain float32 / float64
    parameters: the first two take the op path, the others not. (A float64 gradient of a
    float32 parameter raises in Adam, as PyTorch: test_optim_more.)"""
    rng = np.random.default_rng(3)
    ps = [tgrad.tensor(rng.normal(size=(4,)) + 1j * rng.normal(size=(4,))),
          tgrad.tensor(rng.normal(size=(3,)).astype(np.float16)),
          tgrad.tensor(rng.normal(size=(2, 3)).astype(np.float32)),
          tgrad.tensor(rng.normal(size=(5,)))]
    gs = [[tgrad.tensor(rng.normal(size=(4,)) + 1j * rng.normal(size=(4,))),
           tgrad.tensor(rng.normal(size=(3,)).astype(np.float16)),
           tgrad.tensor(rng.normal(size=(2, 3)).astype(np.float32)),
           tgrad.tensor(rng.normal(size=(5,)))] for _ in range(STEPS)]
    return ps, gs


def _run_mixed_adam() -> list:
    ps, gs = _mixed_group()
    m, v, vmax = ([tgrad.zeros_like(p) for p in ps] for _ in range(3))
    steps = [tgrad.tensor(0.0) for _ in ps]
    for g in gs:
        _functional.adam(ps, g, m, v, vmax, steps, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8,
                         weight_decay=0.1, amsgrad=True, maximize=True,
                         decoupled_weight_decay=False)
    return ps + m + v + vmax + steps


def test_mixed_group_falls_back_per_parameter(monkeypatch):
    ref, got, calls = _op_then_fast(monkeypatch, _run_mixed_adam, "_adam_cpu")
    assert len(calls) == STEPS * 2  # only the two plain real parameters
    _assert_same(got, ref)


def test_tensor_lr_takes_the_op_path(monkeypatch):
    calls = _count_calls(monkeypatch, "_adam_cpu")
    p = tgrad.ones(3, requires_grad=True)
    opt = optim.Adam([p], lr=tgrad.tensor(0.1))
    (p * p).sum().backward()
    opt.step()
    assert calls == []
    # the first Adam step moves each entry by lr (times 1 - tiny eps effects)
    assert np.allclose(p.detach().numpy(), 0.9, rtol=0, atol=1e-6)


def _model_run(make_opt, dt) -> list:
    """A small model's parameters (Parameters, leaves) after a few optimizer steps."""
    rng = np.random.default_rng(5)
    w = tgrad.nn.Parameter(tgrad.tensor(rng.normal(size=(4, 3)).astype(dt)))
    b = tgrad.nn.Parameter(tgrad.tensor(rng.normal(size=(3,)).astype(dt)))
    x = tgrad.tensor(rng.normal(size=(6, 4)).astype(dt))
    opt = make_opt([w, b])
    for _ in range(STEPS):
        opt.zero_grad()
        (((x @ w + b).tanh() - 0.3) ** 2).sum().backward()
        opt.step()
    st = [t for p in (w, b) for t in opt.state[p].values() if isinstance(t, tgrad.Tensor)]
    return [w, b] + st


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("make_opt", [
    lambda ps: optim.Adam(ps, lr=1e-2),
    lambda ps: optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=0.1, maximize=True),
    lambda ps: optim.AdamW(ps, lr=1e-2, amsgrad=True),
    lambda ps: optim.SGD(ps, lr=1e-2, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda ps: optim.SGD(ps, lr=1e-2, momentum=0.9, dampening=0.1, maximize=True),
], ids=["adam", "adam-ams-wd-max", "adamw-ams", "sgd-nesterov", "sgd-damp-max"])
def test_optimizers_fast_path_bit_identical(dt, make_opt, monkeypatch):
    ref, got, _ = _op_then_fast(monkeypatch, lambda: _model_run(make_opt, dt))
    _assert_same(got, ref)


def _run_expanded_grad_adam() -> list:
    # an expanded (stride-0, read-only) gradient is read in place, never written
    p = tgrad.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    g = tgrad.tensor(np.float32(0.25)).expand(3, 4)
    m, v = tgrad.zeros_like(p), tgrad.zeros_like(p)
    step = tgrad.tensor(0.0)
    for _ in range(STEPS):
        _functional.adam([p], [g], [m], [v], [None], [step], lr=0.1, beta1=0.9, beta2=0.99,
                         eps=1e-8, weight_decay=0.5, amsgrad=False, maximize=True,
                         decoupled_weight_decay=False)
    return [p, m, v, step, g]


def test_expanded_gradient(monkeypatch):
    ref, got, calls = _op_then_fast(monkeypatch, _run_expanded_grad_adam, "_adam_cpu")
    assert len(calls) == STEPS
    _assert_same(got, ref)
    assert np.all(got[-1].numpy() == np.float32(0.25))


def test_refused_parameters_keep_the_op_paths_errors(monkeypatch):
    calls = _count_calls(monkeypatch, "_sgd_cpu")
    kw = dict(lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False,
              maximize=False)
    p = tgrad.tensor(np.ones(1, np.float32)).expand(3)  # overlapping memory
    with pytest.raises(RuntimeError, match="more than one element"):
        _functional.sgd([p], [tgrad.ones(3)], [None], **kw)
    with tgrad.inference_mode():
        q = tgrad.ones(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        _functional.sgd([q], [tgrad.ones(3)], [None], **kw)
    assert calls == []


@pytest.mark.parametrize("make_step", [lambda: tgrad.tensor(0.0, dtype=tgrad.float64),
                                       lambda: tgrad.zeros(3)[1],  # a view: shared version
                                       lambda: tgrad.tensor(0)])   # int64: through the op
def test_adam_step_tensors_of_other_kinds_count_as_the_op_path(make_step, monkeypatch):
    def run():
        case = _Case(np.float32)
        m, v, vmax = case.state(3)
        steps = [make_step() for _ in case.params]
        for gs in case.grads:
            _functional.adam(case.params, gs, m, v, vmax, steps, **ADAM[0])
        return case.tensors() + m + v + steps
    ref, got, _ = _op_then_fast(monkeypatch, run)
    _assert_same(got, ref)
    assert got[-1].item() == STEPS


def _nan_pair_case(dt) -> tuple[list, list]:
    """One-element parameters (NumPy's in-place add of a single element runs another loop
    than its out-of-place add: where both operands are NaN, it keeps the other one's sign)
    meeting NaNs of both signs: p and the gradients alternate +NaN / -NaN."""
    nan = dt(np.nan)
    ps = [tgrad.tensor(np.asarray(v, dt).reshape(s))
          for v, s in [(-nan, (1,)), (nan, ()), (-nan, (1, 1)), (1.5, (1,))]]
    signs = [1, -1, -1, 1, -1, 1]
    gs = [[tgrad.tensor(np.asarray(sg * nan * (-1) ** j, dt).reshape(tuple(p.shape)))
           for j, p in enumerate(ps)] for sg in signs]
    return ps, gs


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("hyper", ADAM)
def test_adam_fast_path_keeps_the_op_paths_nan_signs_on_one_element(dt, hyper, monkeypatch):
    def run() -> list:
        ps, gs = _nan_pair_case(dt)
        m, v, vmax = ([tgrad.zeros_like(p) for p in ps] for _ in range(3))
        steps = [tgrad.tensor(0.0) for _ in ps]
        for g in gs:
            _functional.adam(ps, g, m, v, vmax, steps, **hyper)
        return ps + m + v + (vmax if hyper["amsgrad"] else []) + steps
    ref, got, calls = _op_then_fast(monkeypatch, run, "_adam_cpu")
    assert len(calls) == 6 * 4
    _assert_same(got, ref)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("hyper", SGD)
def test_sgd_fast_path_keeps_the_op_paths_nan_signs_on_one_element(dt, hyper, monkeypatch):
    def run() -> list:
        ps, gs = _nan_pair_case(dt)
        bufs = [None] * len(ps)
        for g in gs:
            _functional.sgd(ps, g, bufs, **hyper)
        return ps + bufs
    ref, got, calls = _op_then_fast(monkeypatch, run, "_sgd_cpu")
    assert len(calls) == (6 - (hyper["momentum"] != 0)) * 4
    _assert_same(got, ref)


@pytest.mark.parametrize("path", ["fast", "op"])
def test_adam_step_is_addcdivs_scaled_m_over_denom(path, monkeypatch):
    """p <- p + ((-lr / bc1) m) / denom, PyTorch's addcdiv_(m, denom, value=-lr / bc1) order:
    beta1 = beta2 = 0 make m = g and denom = sqrt(g g) + eps exactly (bc1 = bc2 = 1), so
    the reference is NumPy float64 in that order; a scaled m that overflows gives -inf
    (finite denom) or NaN (infinite denom), not the finite (m / denom) scaled."""
    if path == "op":
        _force_op_path(monkeypatch)
    rng = np.random.default_rng(11)
    g = np.concatenate([rng.normal(size=13) * 10.0 ** rng.uniform(-8, 8, 13),
                        [1e154, 1e308, -3.0]])
    lr = np.asarray([0.37] * 13 + [1e160, 4.0, 1e-300])
    p0 = rng.normal(size=g.size)
    got = []
    for i in range(g.size):
        p = tgrad.tensor(p0[i:i + 1].copy())
        _functional.adam([p], [tgrad.tensor(g[i:i + 1])], [tgrad.zeros(1, dtype=tgrad.float64)],
                         [tgrad.zeros(1, dtype=tgrad.float64)], [None], [tgrad.tensor(0.0)],
                         lr=float(lr[i]), beta1=0.0, beta2=0.0, eps=1e-3, weight_decay=0,
                         amsgrad=False, maximize=False, decoupled_weight_decay=False)
        got.append(p.numpy()[0])
    with np.errstate(all="ignore"):
        want = p0 + (-lr * g) / (np.sqrt(g * g) + 1e-3)
    assert np.isneginf(want[13]) and np.isnan(want[14])  # -1e314 / 1e154; -inf / inf
    assert np.array_equal(np.asarray(got), want, equal_nan=True)
