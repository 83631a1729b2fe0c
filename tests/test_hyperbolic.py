"""asinh / acosh / atanh (and PyTorch's arc* names): values against NumPy float64, gradients
by finite differences (gradcheck / gradgradcheck), edge values, dtypes, views, in-place."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(3)
OPS = {"asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh}


def _domain(name: str, n: int) -> np.ndarray:
    """n float64 points inside each function's domain, over many magnitudes."""
    z = RNG.standard_normal(n)
    if name == "asinh":
        return z * np.logspace(-12, 12, n)
    if name == "acosh":
        return 1.0 + np.abs(z) * np.logspace(-14, 12, n)
    return np.tanh(z * 3.0)


def _close(got: np.ndarray, ref: np.ndarray) -> None:
    # a few float64 ulps (NumPy's are correctly rounded to about 1 ulp)
    np.testing.assert_allclose(got, ref, rtol=4e-16 * 4, atol=0.0)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("n", [1, 17, 1023, 1025])
def test_matches_numpy_float64(name, n):
    x = _domain(name, n)
    _close(getattr(tgrad, name)(tgrad.tensor(x)).numpy(), OPS[name](x))


def test_edge_values_follow_numpy():
    tiny, big = 1e-300, 1e300
    xs = np.array([0.0, -0.0, tiny, -tiny, 2.0 ** 28, 2.0 ** 28 * 1.5, -1e200, big, np.inf,
                   -np.inf, np.nan])
    got = tgrad.asinh(tgrad.tensor(xs)).numpy()
    ref = np.arcsinh(xs)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))  # -0.0 stays -0.0
    np.testing.assert_allclose(got, ref, rtol=2e-15)
    xs = np.array([1.0, 1.0 + 1e-15, 0.5, -1.0, 2.0 ** 28 * 3, big, np.inf, np.nan,
                   -2.0, -1e10, -1e16, -big, -np.inf])  # below -1: NaN, not log1p of t x
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(tgrad.acosh(tgrad.tensor(xs)).numpy(), np.arccosh(xs),
                                   rtol=2e-15)
    xs = np.array([0.0, -0.0, tiny, 1.0, -1.0, 1.0 - 2.0 ** -53, 1.5, -2.0, np.inf, np.nan])
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.arctanh(xs)
    got = tgrad.atanh(tgrad.tensor(xs)).numpy()
    np.testing.assert_allclose(got, ref, rtol=2e-15)
    np.testing.assert_array_equal(np.signbit(got[:2]), [False, True])


@pytest.mark.parametrize("name", list(OPS))
def test_gradcheck_and_gradgradcheck(name):
    x = _domain(name, 9)
    if name == "asinh":
        x = x / np.max(np.abs(x)) * 5  # finite differences need moderate magnitudes
    if name == "acosh":
        x = 1.1 + np.abs(x - 1.0) / np.max(np.abs(x - 1.0)) * 5
    if name == "atanh":
        x = np.clip(x, -0.9, 0.9)
    t = tgrad.tensor(x, requires_grad=True)
    fn = getattr(tgrad, name)
    assert gradcheck(fn, (t,))
    assert gradgradcheck(fn, (t,))


def test_gradient_formulas_at_the_edges():
    x = tgrad.tensor([0.0, 1e10, -3.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.asinh(x).sum().backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 1 / np.sqrt(xv * xv + 1), rtol=1e-15)
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.acosh(x).sum().backward()
    assert x.grad.tolist() == [np.inf, 1 / np.sqrt(3.0)]
    x = tgrad.tensor([1.0, 0.5], dtype=tgrad.float64, requires_grad=True)
    tgrad.atanh(x).sum().backward()
    assert x.grad.tolist() == [np.inf, 1 / 0.75]


@pytest.mark.parametrize("name", list(OPS))
def test_views_empty_0d_and_broadcast_shapes(name):
    fn = getattr(tgrad, name)
    base = _domain(name, 24).reshape(4, 6)
    t = tgrad.tensor(base)
    _close(fn(t.t()).numpy(), OPS[name](base.T))  # transposed
    _close(fn(t[:, ::2]).numpy(), OPS[name](base[:, ::2]))  # strided slice
    assert fn(tgrad.zeros(0, 3, dtype=tgrad.float64)).shape == (0, 3)
    assert fn(tgrad.tensor(base[0, 0])).shape == ()
    _close(getattr(t, name)().numpy(), OPS[name](base))  # the method
    _close(getattr(tgrad, "arc" + name[1:])(t).numpy(), OPS[name](base))  # PyTorch's alias


@pytest.mark.parametrize("name", list(OPS))
def test_lower_precision_and_integer_inputs(name):
    x = _domain(name, 64)
    if name == "acosh":
        x = np.minimum(x, 6e4)  # float16's range
    ref = OPS[name](x)
    tol = {tgrad.float32: (1.3e-6, 1e-5), tgrad.float16: (1e-3, 1e-5),
           tgrad.bfloat16: (1.6e-2, 1e-5)}  # PyTorch's default assert_close tolerances
    for dt, (rtol, atol) in tol.items():
        xd = tgrad.tensor(x, dtype=dt)
        out = getattr(tgrad, name)(xd)
        assert out.dtype is dt
        # against the float64 function of the input as rounded to dt
        ref_rounded = OPS[name](xd.double().numpy())
        np.testing.assert_allclose(out.double().numpy(), ref_rounded, rtol=rtol, atol=atol)
    ints = tgrad.tensor([1, 2, 3]) if name != "atanh" else tgrad.tensor([0, 0])
    out = getattr(tgrad, name)(ints)
    assert out.dtype is tgrad.float32
    np.testing.assert_allclose(out.numpy(), OPS[name](ints.numpy().astype(np.float64)),
                               rtol=1.3e-6)
    assert np.isfinite(ref).all()


@pytest.mark.parametrize("name", list(OPS))
def test_inplace_forms(name):
    base = _domain(name, 5)
    t = tgrad.tensor(base)
    out = getattr(t, name + "_")()
    assert out is t
    _close(t.numpy(), OPS[name](base))
    leaf = tgrad.tensor(base, requires_grad=True)
    h = leaf * 1.0
    getattr(h, "arc" + name[1:] + "_")()
    h.sum().backward()
    deriv = {"asinh": lambda v: 1 / np.sqrt(v * v + 1), "acosh": lambda v: 1 / np.sqrt(v * v - 1),
             "atanh": lambda v: 1 / (1 - v * v)}[name]
    np.testing.assert_allclose(leaf.grad.numpy(), deriv(base), rtol=1e-14)


def test_errors_name_the_op():
    with pytest.raises(TypeError, match=r"asinh\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not list"):
        tgrad.asinh([1.0])


DERIVS = {"asinh": lambda z: 1 / np.sqrt(1 + z * z),
          "acosh": lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1)),
          "atanh": lambda z: 1 / (1 - z * z)}


@pytest.mark.parametrize("name", sorted(OPS))
def test_complex_inputs_give_principal_branch_values_and_gradients(name):
    # PyTorch takes complex inputs (std::asinh...); tgrad cast them to float32, dropping the
    # imaginary part. Values vs NumPy's principal branches, branch cuts, signed zeros and
    # infinities included; gradient conj(f'(z)) g (PyTorch's convention for holomorphic f)
    # NaN parts too: acosh(+-0 + NaN i) is NaN + i pi/2 (C99 G.6.2.1, NumPy; it was -pi/2)
    parts = [-3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, -np.inf, np.nan]
    z = np.array([complex(a, b) for a in parts for b in parts])
    with np.errstate(all="ignore"):
        want = OPS[name](z)
    for dt, tol in ((tgrad.complex128, 1e-12), (tgrad.complex64, 1e-5)):
        got = getattr(tgrad, name)(tgrad.tensor(z, dtype=dt))
        assert got.dtype is dt
        for part in ("real", "imag"):  # (compared apart: inf and NaN parts by position)
            g, w = getattr(got.numpy(), part).astype(np.float64), getattr(want, part)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
            np.testing.assert_array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))
    pts = np.array([1 + 1j, -3 + 0.5j, 0.5 - 1.5j, 0.2 + 0.1j])
    assert gradcheck(getattr(tgrad, name), (tgrad.tensor(pts, requires_grad=True),))
    # and on the real axis (acosh's cut (-inf, 1): acosh(0.5) = i acos(0.5), atanh's cut
    # |x| > 1) and the imaginary axis (asinh's cut |y| > 1), both signed zeros: the
    # derivative from above, f'(x + 0i), for Im z = +0 and -0 alike (PyTorch's; its
    # z - 1 has Im +0 for either). acosh's gradient was real there (|Im acos| has no slope
    # at 0) and sign-flipped for x > 1
    axis = [-3.0, -1.5, -0.5, 0.0, 0.5, 0.999, 1.2, 3.0]
    pts = np.concatenate([pts, [complex(v, s) for v in axis for s in (0.0, -0.0)],
                          [complex(s, v) for v in axis for s in (0.0, -0.0)]])
    above = np.where(pts.imag == 0, pts.real + 0j, pts)  # (-0.0 imaginary parts made +0.0)
    x = tgrad.tensor(pts, requires_grad=True)
    y = getattr(tgrad, name)(x)
    a, b = np.linspace(1.0, 4.0, len(pts)), 0.5
    (y.real * tgrad.tensor(a) + y.imag * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.conj(DERIVS[name](above)) * (a + 1j * b),
                               rtol=1e-12)
    if name == "acosh":  # the reviewer's case: 0.8083 + 0.3464j, by hand
        z = tgrad.tensor([0.5 + 0j], requires_grad=True)
        tgrad.acosh(z).backward(tgrad.tensor([0.3 - 0.7j]))
        np.testing.assert_allclose(z.grad.numpy(),
                                   (0.3 - 0.7j) * np.conj(1 / np.sqrt(-0.75 + 0j)))
