"""optim.Adafactor against a NumPy float64 implementation of PyTorch 2.13's documented
update (torch.optim.Adafactor's pseudo-code and its eps1 / lr notes), several steps on 1-D,
2-D and 3-D parameters, with weight decay, maximize and clipping; argument errors; the
state_dict round trip."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import optim

F64 = tgrad.float64


def _ref_steps(p0: np.ndarray, grads: list, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3),
               d=1.0, weight_decay=0.0, maximize=False) -> np.ndarray:
    """The pseudo-code: rr, cc (rows / columns of the last two dims) or vv, in float64."""
    p = p0.copy()
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    eps2 = eps[1]
    rr = cc = vv = None
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        b2 = 1.0 - t ** beta2_decay          # beta2_hat_t
        rho = min(lr, 1.0 / np.sqrt(t))
        alpha = max(eps2, np.sqrt(np.mean(p * p))) * rho
        p = p - lr * weight_decay * p
        if g.ndim > 1:
            r_new, c_new = np.mean(g * g, axis=-1, keepdims=True), np.mean(g * g, axis=-2,
                                                                          keepdims=True)
            rr = (1 - b2) * r_new if rr is None else b2 * rr + (1 - b2) * r_new
            cc = (1 - b2) * c_new if cc is None else b2 * cc + (1 - b2) * c_new
            v = rr * cc / np.maximum(np.mean(rr, axis=-2, keepdims=True), eps1)
        else:
            vv = (1 - b2) * g * g if vv is None else b2 * vv + (1 - b2) * g * g
            v = vv
        u = g / np.maximum(np.sqrt(v), eps1)
        u = u / max(1.0, np.sqrt(np.mean(u * u)) / d)
        p = p - alpha * u
    return p


def _run(p0, grads, **kw):
    w = tgrad.tensor(p0, dtype=F64, requires_grad=True)
    opt = optim.Adafactor([w], **kw)
    for g in grads:
        w.grad = tgrad.tensor(g, dtype=F64)
        opt.step()
    return w, opt


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 3, 4), ()])
@pytest.mark.parametrize("kw", [{}, dict(lr=0.3, weight_decay=0.1, d=1.5),
                                dict(maximize=True, eps=(1e-8, 1e-2), beta2_decay=-0.5),
                                dict(lr=2.0, eps=(1e-30, 0.0))])
def test_steps_match_reference(shape, kw):
    rng = np.random.default_rng(len(shape) + 7 * len(kw))
    p0 = rng.normal(size=shape)
    grads = [rng.normal(size=shape) * s for s in (1.0, 0.01, 3.0, 1e-3, 0.5, 2.0)]
    w, opt = _run(p0, grads, **kw)
    np.testing.assert_allclose(w.detach().numpy(), _ref_steps(p0, grads, **kw), rtol=1e-13,
                               atol=1e-15)
    st = opt.state[w]
    assert float(st["step"].item()) == 6.0
    if len(shape) > 1:
        assert set(st) == {"step", "row_var", "col_var"}
        assert st["row_var"].shape == (*shape[:-1], 1)
        assert st["col_var"].shape == (*shape[:-2], 1, shape[-1])
    else:
        assert set(st) == {"step", "variance"} and st["variance"].shape == shape


def test_defaults_zero_param_and_group_keys():
    w = tgrad.zeros(3, dtype=F64, requires_grad=True)
    opt = optim.Adafactor([w])
    assert {k: v for k, v in opt.param_groups[0].items() if k != "params"} == dict(
        lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, foreach=None,
        maximize=False)
    g = np.array([1.0, -2.0, 0.0])
    w.grad = tgrad.tensor(g, dtype=F64)
    opt.step()
    # the first step: vv = g^2, U = g / max(|g|, eps1) = sign(g), RMS(U) = sqrt(2/3) < 1,
    # alpha = eps2 * min(lr, 1) = 1e-5 (zero parameter)
    np.testing.assert_allclose(w.detach().numpy(), -1e-5 * np.sign(g), rtol=1e-15)


def test_argument_errors():
    w = [tgrad.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Learning rate should be >= 0"):
        optim.Adafactor(w, lr=-1.0)
    with pytest.raises(ValueError, match="beta2_decay should be <= 0"):
        optim.Adafactor(w, beta2_decay=0.5)
    with pytest.raises(ValueError, match="epsilon1 should be >= 0"):
        optim.Adafactor(w, eps=(-1.0, 1e-3))
    with pytest.raises(ValueError, match="epsilon2 should be >= 0"):
        optim.Adafactor(w, eps=(None, -1e-3))
    with pytest.raises(ValueError, match="Clipping threshold d should be >= 1"):
        optim.Adafactor(w, d=0.5)
    with pytest.raises(ValueError, match="weight_decay should be >= 0"):
        optim.Adafactor(w, weight_decay=-0.1)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.Adafactor(w, lr=tgrad.tensor([0.1, 0.2]))


def test_state_dict_round_trip():
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=(3, 4))
    grads = [rng.normal(size=(3, 4)) for _ in range(5)]
    w, opt = _run(p0, grads[:3], lr=0.2)
    sd = opt.state_dict()
    w2 = tgrad.tensor(w.detach().numpy(), dtype=F64, requires_grad=True)
    opt2 = optim.Adafactor([w2], lr=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.2
    for g in grads[3:]:
        for p, o in ((w, opt), (w2, opt2)):
            p.grad = tgrad.tensor(g, dtype=F64)
            o.step()
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy())
    np.testing.assert_allclose(w.detach().numpy(), _ref_steps(p0, grads, lr=0.2), rtol=1e-13)
