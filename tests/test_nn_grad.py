"""tgrad.nn.grad (torch.nn.grad): gradients of conv1d/2d/3d w.r.t. input and weight,
against a direct NumPy float64 loop over the convolution's terms, and gradcheck."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck
from tgrad.nn import grad as nn_grad

RNG = np.random.default_rng(3)


def _np_conv_grads(x, w, gy, stride, padding, dilation, groups):
    """(dL/dx, dL/dw) of y[n, o, p] = sum_{c, k} x[n, g*C + c, p*s - pad + k*d] w[o, c, k]
    (zero outside x), for dL/dy = gy: each term of the sum, visited once."""
    gx, gw = np.zeros_like(x), np.zeros_like(w)
    cin_g, cout_g = w.shape[1], w.shape[0] // groups
    spatial = x.ndim - 2
    for n, o in itertools.product(range(x.shape[0]), range(w.shape[0])):
        g = o // cout_g
        for p in itertools.product(*(range(m) for m in gy.shape[2:])):
            for c in range(cin_g):
                for k in itertools.product(*(range(m) for m in w.shape[2:])):
                    idx = tuple(p[i] * stride[i] - padding[i] + k[i] * dilation[i]
                                for i in range(spatial))
                    if all(0 <= idx[i] < x.shape[2 + i] for i in range(spatial)):
                        ci = g * cin_g + c
                        gx[(n, ci) + idx] += gy[(n, o) + p] * w[(o, c) + k]
                        gw[(o, c) + k] += gy[(n, o) + p] * x[(n, ci) + idx]
    return gx, gw


CASES = [  # (spatial, x shape, w shape, stride, padding, dilation, groups)
    (1, (2, 4, 9), (6, 2, 3), (2,), (1,), (1,), 2),
    (2, (1, 2, 6, 5), (3, 2, 2, 3), (1, 2), (1, 0), (2, 1), 1),
    (3, (1, 2, 4, 3, 4), (2, 1, 2, 2, 1), (1, 1, 2), (0, 1, 0), (1, 1, 1), 2),
]


@pytest.mark.parametrize("case", CASES, ids=["1d", "2d", "3d"])
def test_conv_input_and_weight_gradients_match_numpy(case):
    spatial, xs, ws, stride, padding, dilation, groups = case
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    conv = (tgrad.nn.functional.conv1d, tgrad.nn.functional.conv2d,
            tgrad.nn.functional.conv3d)[spatial - 1]
    out_shape = conv(tgrad.tensor(x), tgrad.tensor(w), None, stride, padding, dilation,
                     groups).shape
    gy = RNG.standard_normal(out_shape)
    gx_ref, gw_ref = _np_conv_grads(x, w, gy, stride, padding, dilation, groups)
    f_in = getattr(nn_grad, f"conv{spatial}d_input")
    f_w = getattr(nn_grad, f"conv{spatial}d_weight")
    gx = f_in(x.shape, tgrad.tensor(w), tgrad.tensor(gy), stride, padding, dilation, groups)
    gw = f_w(tgrad.tensor(x), list(w.shape), tgrad.tensor(gy), stride, padding, dilation,
             groups)
    assert gx.shape == x.shape and gw.shape == w.shape and not gx.requires_grad
    np.testing.assert_allclose(gx.numpy(), gx_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), gw_ref, rtol=1e-10, atol=1e-12)


def test_conv2d_input_and_weight_are_differentiable():
    w = tgrad.tensor(RNG.standard_normal((2, 1, 2, 2)), requires_grad=True)
    x = tgrad.tensor(RNG.standard_normal((1, 1, 4, 3)), requires_grad=True)
    gy = tgrad.tensor(RNG.standard_normal((1, 2, 3, 2)), requires_grad=True)
    assert gradcheck(lambda w_, g_: nn_grad.conv2d_input((1, 1, 4, 3), w_, g_, stride=(2, 1),
                                                         padding=(1, 0)), (w, gy))
    assert gradcheck(lambda x_, g_: nn_grad.conv2d_weight(x_, (2, 1, 2, 2), g_, stride=(2, 1),
                                                          padding=(1, 0)), (x, gy))
    with tgrad.no_grad():
        assert not nn_grad.conv2d_input((1, 1, 4, 3), w, gy, stride=(2, 1),
                                        padding=(1, 0)).requires_grad


def test_functional_grad_alias_and_shape_error():
    assert tgrad.nn.functional.grad is nn_grad
    w = tgrad.ones(1, 1, 3)
    with pytest.raises(RuntimeError, match=r"conv1d_input: grad_output has size \[1, 1, 4\].*"
                                           r"output of size \[1, 1, 3\]"):
        nn_grad.conv1d_input((1, 1, 5), w, tgrad.ones(1, 1, 4))
