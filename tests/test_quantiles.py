"""quantile / nanquantile against NumPy float64 (np.quantile / np.nanquantile with the same
method), gradients by finite differences, PyTorch's shapes and error texts (torch 2.14)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)
MODES = ["linear", "lower", "higher", "midpoint", "nearest"]
QS = np.array([0.0, 0.1, 0.25, 0.5, 0.77, 0.9, 1.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 17, 33])
def test_matches_numpy_along_a_dim(mode, n):
    x = RNG.standard_normal((3, n))
    got = tgrad.quantile(tgrad.tensor(x), tgrad.tensor(QS), dim=1, interpolation=mode)
    ref = np.quantile(x, QS, axis=1, method=mode)
    assert got.shape == (len(QS), 3)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("mode", MODES)
def test_dim_none_keepdim_scalar_q_and_views(mode):
    x = RNG.standard_normal((4, 5))
    t = tgrad.tensor(x)
    got = tgrad.quantile(t, 0.3, interpolation=mode)
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), np.quantile(x, 0.3, method=mode), rtol=1e-15)
    q64 = tgrad.tensor([0.3, 0.6], dtype=tgrad.float64)
    got = t.quantile(q64, dim=None, keepdim=True, interpolation=mode)
    assert got.shape == (2, 1, 1)
    np.testing.assert_allclose(got.numpy(), np.quantile(x, [0.3, 0.6], method=mode,
                                                        keepdims=True), rtol=1e-15)
    q0d = tgrad.tensor(0.6, dtype=tgrad.float64)
    got = tgrad.quantile(t.t(), q0d, dim=0, keepdim=True, interpolation=mode)
    assert got.shape == (1, 4)  # a 0-d q adds no dim
    np.testing.assert_allclose(got.numpy(), np.quantile(x.T, 0.6, axis=0, keepdims=True,
                                                        method=mode), rtol=1e-15)
    got = tgrad.quantile(t[:, ::2], 0.5, dim=-1, interpolation=mode)  # strided view
    np.testing.assert_allclose(got.numpy(), np.quantile(x[:, ::2], 0.5, axis=-1,
                                                        method=mode), rtol=1e-15)
    assert tgrad.quantile(tgrad.tensor(2.0), 0.5, dim=0, keepdim=True).shape == ()


def test_nan_handling_like_numpy():
    x = np.array([[np.nan, 1.0, 2.0, 5.0], [1.0, 2.0, 3.0, 4.0], [np.nan] * 4])
    q = np.array([0.0, 0.4, 1.0])
    t = tgrad.tensor(x)
    np.testing.assert_array_equal(tgrad.quantile(t, tgrad.tensor(q), dim=1).numpy(),
                                  np.quantile(x, q, axis=1))
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        ref = np.nanquantile(x, q, axis=1)  # NumPy warns about the all-NaN row
    np.testing.assert_allclose(tgrad.nanquantile(t, tgrad.tensor(q), dim=1).numpy(), ref,
                               rtol=1e-15)


def test_float32_within_default_tolerances():
    x = RNG.standard_normal((5, 9)).astype(np.float32)
    got = tgrad.quantile(tgrad.tensor(x), tgrad.tensor(QS, dtype=tgrad.float32), dim=1)
    ref = np.quantile(x.astype(np.float64), QS.astype(np.float32).astype(np.float64), axis=1)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_gradcheck_and_gradgradcheck(mode):
    x = tgrad.tensor(RNG.standard_normal((3, 7)), requires_grad=True)
    q = tgrad.tensor([0.15, 0.5, 0.8], dtype=tgrad.float64)  # no rank lands on .5 exactly
    assert gradcheck(lambda t: tgrad.quantile(t, q, dim=1, interpolation=mode), (x,))
    assert gradgradcheck(lambda t: tgrad.nanquantile(t, q, dim=0, interpolation=mode), (x,))


def test_gradient_reaches_the_interpolated_elements():
    x = tgrad.tensor([3.0, 1.0, 2.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.quantile(x, 0.5).backward()  # sorted [1, 2, 2, 3]: rank 1.5 between the two 2s
    assert x.grad.tolist() == [0.0, 0.0, 0.5, 0.5]
    x = tgrad.tensor([[3.0, 1.0, 2.0, 4.0], [0.0, 9.0, np.nan, 1.0]], dtype=tgrad.float64,
                     requires_grad=True)
    tgrad.nanquantile(x, 0.4, dim=1).sum().backward()
    # row 0: sorted [1, 2, 3, 4], rank 1.2: 2 gets 0.8, 3 gets 0.2; row 1: 3 values, rank 0.8
    np.testing.assert_allclose(x.grad.numpy(), [[0.2, 0.0, 0.8, 0.0], [0.2, 0.0, 0.0, 0.8]],
                               rtol=1e-15, atol=1e-16)



def test_gradient_with_respect_to_a_tensor_q():
    """The linear weight depends on q: d quantile / d q = (v[ceil] - v[floor]) (n - 1), by
    hand and by finite differences (gradcheck in x and q together); the other
    interpolations are piecewise constant in q, so q gets no gradient from them."""
    x = tgrad.tensor([3.0, 1.0, 4.0, 1.5, 9.0], dtype=tgrad.float64)  # sorted 1 1.5 3 4 9
    q = tgrad.tensor([0.3, 0.55], dtype=tgrad.float64, requires_grad=True)
    tgrad.quantile(x, q).sum().backward()  # ranks 1.2 (1.5..3) and 2.2 (3..4), n - 1 = 4
    np.testing.assert_allclose(q.grad.numpy(), [(3.0 - 1.5) * 4, (4.0 - 3.0) * 4], rtol=1e-14)
    xm = tgrad.tensor(RNG.standard_normal((3, 7)), requires_grad=True)
    qm = tgrad.tensor([0.15, 0.45, 0.8], dtype=tgrad.float64, requires_grad=True)  # no integer rank
    assert gradcheck(lambda t, p: tgrad.quantile(t, p, dim=1), (xm, qm))
    assert gradcheck(lambda t, p: tgrad.nanquantile(t, p, dim=0), (xm, qm))
    xn = tgrad.tensor([3.0, np.nan, 4.0, 1.5, 9.0], dtype=tgrad.float64)  # 4 valid: 1.5 3 4 9
    qn = tgrad.tensor([0.3], dtype=tgrad.float64, requires_grad=True)
    tgrad.nanquantile(xn, qn).sum().backward()  # rank 0.9 between 1.5 and 3, valid - 1 = 3
    np.testing.assert_allclose(qn.grad.numpy(), [(3.0 - 1.5) * 3], rtol=1e-14)
    for mode in ("lower", "higher", "nearest", "midpoint"):
        assert not tgrad.quantile(x, q, interpolation=mode).requires_grad

def test_errors_follow_pytorch():
    x = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    cases = [
        (lambda: tgrad.quantile(x, 1.5), "quantile\\(\\) q must be in the range \\[0, 1\\] but "
                                         "got 1.5"),
        (lambda: tgrad.quantile(x, float("nan")), "q must be in the range \\[0, 1\\] but got "
                                                  "nan"),
        (lambda: tgrad.quantile(x, tgrad.tensor([0.5], dtype=tgrad.float64)),
         "quantile\\(\\) q tensor must be same dtype as the input tensor"),
        (lambda: tgrad.quantile(tgrad.tensor([1, 2]), 0.5),
         "quantile\\(\\) input tensor must be either float or double dtype"),
        (lambda: tgrad.quantile(x, tgrad.ones(2, 2) * 0.5),
         "quantile\\(\\) q must be a scalar or 1D tensor"),
        (lambda: tgrad.quantile(x, 0.5, interpolation="foo"),
         "quantile\\(\\) interpolation must be one of linear, lower, higher, midpoint or "
         "nearest, but got foo"),
        (lambda: tgrad.nanquantile(tgrad.zeros(0, 3), 0.5, dim=0),
         "nanquantile\\(\\) input tensor must be non-empty"),
    ]
    for fn, message in cases:
        with pytest.raises(RuntimeError, match=message):
            fn()
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.quantile(x, 0.5, dim=3)
    with pytest.raises(TypeError, match="argument 'q' must be a float or a Tensor"):
        tgrad.quantile(x, [0.5])
