"""Lazy modules (tgrad/nn/modules/lazy.py): UninitializedParameter / UninitializedBuffer
placeholders, shapes inferred on the first forward, then the eager class.

References: NumPy float64 for the outputs, hand-computed SGD steps and running statistics,
and the eager layer's documented initialisation (the same draws from the same seed).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

D = tgrad.float64


def _np(t):
    return t.detach().numpy()


def test_lazy_linear_infers_in_features_and_becomes_linear():
    m = nn.LazyLinear(3, dtype=D)
    assert isinstance(m.weight, UninitializedParameter) and is_lazy(m.bias)
    assert m.has_uninitialized_params() and m.in_features == 0
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert repr(m.weight) == "<UninitializedParameter>" and m.weight.size() == (0,)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        m.weight.shape  # noqa: B018
    x = np.random.default_rng(0).standard_normal((2, 4))
    tgrad.manual_seed(5)
    y = m(tgrad.tensor(x, dtype=D))
    assert type(m) is nn.Linear and type(m.weight) is nn.Parameter
    assert m.in_features == 4 and m.weight.shape == (3, 4) and m.weight.dtype is D
    assert not hasattr(m, "has_uninitialized_params")
    w, b = _np(m.weight), _np(m.bias)
    np.testing.assert_allclose(_np(y), x @ w.T + b, rtol=1e-12)
    bound = 1 / np.sqrt(4)  # Linear's U(-1/sqrt(in), 1/sqrt(in))
    assert (np.abs(w) <= bound).all() and (np.abs(b) <= bound).all()
    tgrad.manual_seed(5)
    eager = nn.Linear(4, 3, dtype=D)  # the same draws, in the same order
    np.testing.assert_array_equal(_np(eager.weight), w)
    np.testing.assert_array_equal(_np(eager.bias), b)


def test_optimizer_built_before_the_first_forward():
    m = nn.LazyLinear(2, bias=False, dtype=D)
    opt = tgrad.optim.SGD(m.parameters(), lr=0.5)  # accepted, as PyTorch
    x = np.array([[1.0, 2.0, 3.0]])
    m(tgrad.tensor(x, dtype=D)).sum().backward()
    w0 = _np(m.weight).copy()
    opt.step()
    assert opt.param_groups[0]["params"][0] is m.weight
    np.testing.assert_allclose(_np(m.weight), w0 - 0.5 * np.repeat(x, 2, 0), rtol=1e-12)


def test_ops_on_placeholders_raise():
    p = UninitializedParameter()
    assert p.requires_grad and p.dtype is tgrad.get_default_dtype()
    for use in (lambda: p + 1, lambda: p.sum(), lambda: nn.functional.linear(tgrad.ones(2), p)):
        with pytest.raises((RuntimeError, ValueError), match="uninitialized parameter"):
            use()
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
        p.share_memory_()
    b = UninitializedBuffer(dtype=D)
    assert not b.requires_grad and repr(b) == "<UninitializedBuffer>"
    b.materialize((2, 3))
    assert type(b) is tgrad.Tensor and b.shape == (2, 3) and b.dtype is D
    p.materialize((4,), dtype=D)
    assert type(p) is nn.Parameter and p.shape == (4,) and p.dtype is D and p.requires_grad


def test_lazy_module_to_converts_placeholders():
    m = nn.Sequential(nn.LazyLinear(2), nn.ReLU(), nn.LazyLinear(1)).double()
    assert is_lazy(m[0].weight) and m[0].weight.dtype is D
    y = m(tgrad.ones(5, 3, dtype=D))
    assert y.shape == (5, 1) and m[2].weight.shape == (1, 2) and m[2].weight.dtype is D


def test_state_dict_round_trips():
    lazy = nn.LazyLinear(2, dtype=D)
    sd = lazy.state_dict()
    assert is_lazy(sd["weight"]) and is_lazy(sd["bias"])
    other = nn.LazyLinear(2, dtype=D)
    other.load_state_dict(sd)  # placeholders into placeholders
    assert other.has_uninitialized_params()
    full = nn.Linear(3, 2, dtype=D)
    lazy.load_state_dict(full.state_dict())  # a real state materializes the placeholders
    assert lazy.weight.shape == (2, 3) and not lazy.has_uninitialized_params()
    np.testing.assert_array_equal(_np(lazy.weight), _np(full.weight))
    x = tgrad.ones(1, 3, dtype=D)
    np.testing.assert_allclose(_np(lazy(x)), _np(full.weight).sum(1)[None] + _np(full.bias))
    assert type(lazy) is nn.Linear
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        nn.Linear(3, 2).load_state_dict(nn.LazyLinear(2).state_dict())
    c = copy.deepcopy(nn.LazyLinear(4))
    assert c.has_uninitialized_params() and is_lazy(c.weight)
    c(tgrad.ones(1, 2))
    assert type(c) is nn.Linear and c.weight.shape == (4, 2)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lazy_conv_infers_in_channels(nd):
    m = getattr(nn, f"LazyConv{nd}d")(4, 3, padding=1, dtype=D)
    x = np.random.default_rng(nd).standard_normal((2, 6) + (4,) * nd)
    tgrad.manual_seed(1)
    y = m(tgrad.tensor(x, dtype=D))
    assert type(m) is getattr(nn, f"Conv{nd}d") and m.in_channels == 6
    assert m.weight.shape == (4, 6) + (3,) * nd and m.bias.shape == (4,)
    assert y.shape == (2, 4) + (4,) * nd
    tgrad.manual_seed(1)
    eager = getattr(nn, f"Conv{nd}d")(6, 4, 3, padding=1, dtype=D)
    np.testing.assert_array_equal(_np(eager.weight), _np(m.weight))
    t = getattr(nn, f"LazyConvTranspose{nd}d")(4, 2, stride=2, groups=2, dtype=D)
    t(tgrad.ones((6,) + (3,) * nd, dtype=D))  # unbatched: in_channels = shape[0]
    assert type(t) is getattr(nn, f"ConvTranspose{nd}d")
    assert t.weight.shape == (6, 2) + (2,) * nd and t.in_channels == 6


def test_lazy_conv_values_and_errors():
    m = nn.LazyConv1d(1, 2, bias=False, dtype=D)
    x = np.array([[[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]]])
    y = m(tgrad.tensor(x, dtype=D))
    w = _np(m.weight)[0]
    np.testing.assert_allclose(_np(y)[0, 0], [(x[0, :, i:i + 2] * w).sum() for i in range(2)])
    assert m.bias is None
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv1d(4, 3, groups=2)(tgrad.ones(1, 3, 5))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to LazyConv2d, but got input of size: \[3, 3\]"):
        nn.LazyConv2d(4, 3)(tgrad.ones(3, 3))


@pytest.mark.parametrize("name", ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"])
def test_lazy_batchnorm(name):
    m = getattr(nn, "Lazy" + name)(momentum=0.5, dtype=D)
    assert m.has_uninitialized_params() and is_lazy(m.running_mean)
    assert m.num_batches_tracked.item() == 0
    nd = int(name[-2])
    x = np.random.default_rng(nd).standard_normal((4, 3) + (2,) * (nd if nd > 1 else 0))
    y = m(tgrad.tensor(x, dtype=D))
    assert type(m) is getattr(nn, name) and m.num_features == 3
    axes = (0,) + tuple(range(2, x.ndim))
    mean, var = x.mean(axes), x.var(axes)
    shape = (1, 3) + (1,) * (x.ndim - 2)
    np.testing.assert_allclose(_np(y), (x - mean.reshape(shape)) / np.sqrt(
        var.reshape(shape) + 1e-5), rtol=1e-10, atol=1e-12)
    n = x.size / 3
    np.testing.assert_allclose(_np(m.running_mean), 0.5 * mean, rtol=1e-12)
    np.testing.assert_allclose(_np(m.running_var), 0.5 + 0.5 * var * n / (n - 1), rtol=1e-12)
    assert m.num_batches_tracked.item() == 1


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lazy_instancenorm(nd):
    m = getattr(nn, f"LazyInstanceNorm{nd}d")(dtype=D)
    assert m.affine and m.track_running_stats  # PyTorch's lazy defaults
    x = np.random.default_rng(nd).standard_normal((2, 3) + (4,) * nd)
    y = m(tgrad.tensor(x, dtype=D))
    assert type(m) is getattr(nn, f"InstanceNorm{nd}d") and m.num_features == 3
    axes = tuple(range(2, x.ndim))
    ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-10, atol=1e-12)
    assert m.running_mean.shape == (3,) and m.weight.shape == (3,)
    plain = getattr(nn, f"LazyInstanceNorm{nd}d")(affine=False, track_running_stats=False)
    assert not plain.has_uninitialized_params() and plain.weight is None
