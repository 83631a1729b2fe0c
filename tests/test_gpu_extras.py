"""Real-GPU checks (marked ``gpu``) of the ops added with the extras (inverse hyperbolics,
quantiles, mode, pointwise extras, dist/renorm, the new clamp/logit/nanmean rules, in-place
comparisons, cuda Generators): each runs on cuda and on the CPU (the NumPy backend, the
oracle) in float64 and compares values and gradients. They skip without a real GPU;
``TRITON_INTERPRET=1 PYTHONPATH=.:tests python tests/test_gpu_extras.py`` runs the same
checks on the interpreted cuda device (how they were validated without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad


def _real_gpu() -> bool:
    return tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not _real_gpu(), reason="needs a real CUDA GPU")]

RNG = np.random.default_rng(2)


def _close(fn, *arrays, grad: bool = True) -> None:
    """fn on the CPU and on cuda over float64 copies of ``arrays``: equal values, and equal
    gradients of sum(out * w) for a fixed random w."""
    results = []
    for dev in ("cpu", "cuda"):
        xs = [tgrad.tensor(a, device=dev, requires_grad=grad) for a in arrays]
        out = fn(*xs)
        grads = []
        if grad:
            w = np.random.default_rng(0).standard_normal(out.shape)
            (out * tgrad.tensor(w, device=dev)).sum().backward()
            grads = [x.grad.cpu().numpy() for x in xs]
        results.append((out.detach().cpu().numpy(), grads))
    (o_cpu, g_cpu), (o_gpu, g_gpu) = results
    np.testing.assert_allclose(o_gpu, o_cpu, rtol=1e-10, atol=1e-12)
    for a, b in zip(g_gpu, g_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_inverse_hyperbolics_on_gpu():
    x = RNG.standard_normal((3, 5))
    _close(tgrad.asinh, x * 10)
    _close(tgrad.acosh, np.abs(x) + 1.5)
    _close(tgrad.atanh, np.tanh(x))


def test_quantiles_on_gpu():
    x = RNG.standard_normal((4, 7))
    _close(lambda t: tgrad.quantile(
        t, tgrad.tensor([0.2, 0.7], dtype=tgrad.float64, device=t.device), dim=1), x)
    _close(lambda t: tgrad.nanquantile(t, 0.3, dim=0, interpolation="midpoint"),
           np.where(x > 1.2, np.nan, x))
    counts = RNG.integers(0, 4, (5, 9)).astype(np.float64)
    _close(lambda t: tgrad.mode(t, 1).values, counts)
    cpu, gpu = (tgrad.mode(tgrad.tensor(counts, device=d), 1).indices.cpu().tolist()
                for d in ("cpu", "cuda"))
    assert cpu == gpu


def test_pointwise_extras_and_new_gradient_rules_on_gpu():
    x = RNG.standard_normal((3, 5))
    _close(lambda a, b: tgrad.dist(a, b, 3), x, x[0])
    _close(lambda t: tgrad.renorm(t, 2, 0, 1.0), x)
    _close(tgrad.ldexp, x, x)
    _close(lambda t: tgrad.diagflat(t, 1), x[0])
    _close(lambda t: tgrad.logit(t, eps=0.1), RNG.uniform(0, 1, (6,)))
    _close(lambda t: tgrad.nanmean(t, 1), np.where(x > 1, np.nan, x))
    _close(lambda t, lo, hi: tgrad.clamp(t, lo, hi), x, np.full(5, -0.3), np.full(5, 0.4))
    _close(lambda t: tgrad.heaviside(
        t, tgrad.tensor([0.5], dtype=tgrad.float64, device=t.device)), x, grad=False)
    t = tgrad.tensor(x, device="cuda")
    t.lt_(0.0)
    np.testing.assert_array_equal(t.cpu().numpy(), (x < 0).astype(np.float64))


def test_cuda_generator():
    tgrad.manual_seed(5)
    reference = tgrad.rand(4, device="cuda").cpu().numpy()
    tgrad.manual_seed(5)
    g = tgrad.Generator("cuda").manual_seed(5)
    np.testing.assert_array_equal(tgrad.rand(4, device="cuda", generator=g).cpu().numpy(),
                                  reference)  # the same Philox stream
    np.testing.assert_array_equal(tgrad.rand(4, device="cuda").cpu().numpy(), reference)
    a = tgrad.empty(5, device="cuda").normal_(generator=tgrad.Generator("cuda").manual_seed(1))
    b = tgrad.empty(5, device="cuda").normal_(generator=tgrad.Generator("cuda").manual_seed(1))
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        tgrad.rand(2, device="cuda", generator=tgrad.Generator())


def test_linalg_and_multivariate_normal_on_gpu():
    m = RNG.standard_normal((2, 4, 4))
    spd = m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)
    b = RNG.standard_normal((2, 4, 3))
    _close(lambda a: tgrad.linalg.cholesky((a + a.mT) / 2), spd)
    _close(lambda a, y: tgrad.linalg.solve_triangular(a.tril(), y, upper=False), spd, b)
    _close(lambda a, y: tgrad.linalg.solve_triangular(a.triu(), y.mT, upper=True,
                                                      left=False), spd, b)
    _close(lambda a, y: tgrad.cholesky_solve(y, a.tril()), np.linalg.cholesky(spd), b)
    _close(lambda a: tgrad.linalg.matrix_norm(a, 1), m)
    _close(lambda a: tgrad.linalg.vector_norm(a, 3, dim=-1), m)
    mvn = tgrad.distributions.MultivariateNormal
    _close(lambda loc, a, x: mvn(loc, (a + a.mT) / 2).log_prob(x), b[..., 0], spd,
           b[..., 1])
    with pytest.raises(RuntimeError, match="leading minor of order 1"):
        tgrad.linalg.cholesky(-tgrad.eye(2, dtype=tgrad.float64, device="cuda"))


def test_bessel_sinc_incomplete_gamma_and_det_on_gpu():
    x = np.concatenate([RNG.standard_normal(6) * 3, [0.0, 19.5, 20.5, -45.0]])
    for fn in (tgrad.i0, tgrad.special.i0e, tgrad.special.i1, tgrad.special.i1e):
        _close(fn, x)
    _close(tgrad.sinc, np.array([1e-300, 0.01, -0.3, 0.7, 2.5]))
    # the series, the continued fraction and Temme's expansion (a > 20, x / a in [0.3, 2.2])
    a = np.array([0.5, 3.0, 25.0, 300.0, 5e3, 1e5])
    _close(lambda t: tgrad.special.gammainc(
        tgrad.tensor(a, device=t.device), t), a * np.array([2.0, 0.4, 1.0, 0.7, 1.01, 2.0]))
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    _close(tgrad.linalg.det, np.stack([singular, RNG.standard_normal((3, 3))]))


if __name__ == "__main__":  # the same checks on the current cuda device (e.g. interpreted)
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
