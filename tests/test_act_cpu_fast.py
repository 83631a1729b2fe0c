"""The CPU paths of the piecewise activations and losses (tgrad/backends/_numpy_act.py,
taken by _Piecewise's np_value / np_grad in tgrad/nn/_composite.py and _activations.py,
Hardswish, Elu (elu, celu, selu) and Glu in _composite.py, and _DiffLoss's np_loss /
np_dloss for smooth_l1_loss and huber_loss) against
the compositions of tgrad ops they replace, forced by monkeypatching
``_numpy_act.fast_dtype``: bit-identical outputs and gradients (NaN payloads, +-inf, +-0,
subnormals and values exactly at each op's thresholds included) for float32/float64, odd
sizes, empty, 0-d and non-contiguous inputs, broadcast loss targets, every reduction; the
create_graph backward (the composition) against the plain one; node names; halves (not
taken: the composition); gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import numpy as np
import pytest
from special_values import raw_bytes, with_nan_payloads

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_act

ACTS = {
    "leaky_relu": lambda x: F.leaky_relu(x),
    "leaky_relu_0.2": lambda x: F.leaky_relu(x, 0.2),
    "leaky_relu_0": lambda x: F.leaky_relu(x, 0.0),
    "leaky_relu_1.5": lambda x: F.leaky_relu(x, 1.5),
    "leaky_relu_-0.3": lambda x: F.leaky_relu(x, -0.3),
    "softshrink": lambda x: F.softshrink(x),
    "softshrink_0": lambda x: F.softshrink(x, 0.0),
    "softshrink_0.3": lambda x: F.softshrink(x, 0.3),
    "softshrink_inf": lambda x: F.softshrink(x, float("inf")),
    "hardshrink": lambda x: F.hardshrink(x),
    "hardshrink_0": lambda x: F.hardshrink(x, 0.0),
    "hardshrink_-1": lambda x: F.hardshrink(x, -1.0),
    "threshold": lambda x: F.threshold(x, 0.1, 0.0),
    "threshold_20": lambda x: F.threshold(x, 0.1, 20.0),
    "threshold_-0": lambda x: F.threshold(x, -1.0, -0.0),
    "hardtanh": lambda x: F.hardtanh(x),
    "hardtanh_0": lambda x: F.hardtanh(x, -0.0, 0.0),
    "relu6": lambda x: F.relu6(x),
    "hardsigmoid": lambda x: F.hardsigmoid(x),
    "hardswish": lambda x: F.hardswish(x),
    "elu": lambda x: F.elu(x),
    "elu_0.5": lambda x: F.elu(x, 0.5),
    "elu_0": lambda x: F.elu(x, 0.0),
    "celu": lambda x: F.celu(x),
    "celu_2.5": lambda x: F.celu(x, 2.5),
    "selu": lambda x: F.selu(x),
}
# values exactly at the ops' thresholds (and their negatives)
EDGES = [0.01, 0.2, 0.3, 0.5, 1.0, 0.1, 3.0, 6.0, 2.5, 1.5]
NODES = {"leaky_relu": "LeakyReluBackward0", "softshrink": "SoftshrinkBackward0",
         "hardshrink": "HardshrinkBackward0", "threshold": "ThresholdBackward0",
         "hardtanh": "HardtanhBackward0", "relu6": "HardtanhBackward0",
         "hardsigmoid": "HardsigmoidBackward0", "hardswish": "HardswishBackward0",
         "elu": "EluBackward0", "celu": "CeluBackward0", "selu": "EluBackward0"}


def _values(shape: tuple, dt, seed: int) -> np.ndarray:
    """4 N(0, 1) with +-0, NaNs with payloads, +-inf, subnormals and the EDGES."""
    rng = np.random.default_rng(seed)
    a = np.array(4 * rng.standard_normal(shape), dt)
    r = np.asarray(rng.random(shape))
    a[r < 0.05] = -0.0
    a[(r >= 0.05) & (r < 0.1)] = 0.0
    a[(r >= 0.1) & (r < 0.14)] = np.nan
    a[(r >= 0.14) & (r < 0.16)] = -np.inf
    a[(r >= 0.16) & (r < 0.18)] = np.inf
    tiny = np.finfo(dt).smallest_subnormal
    a[(r >= 0.18) & (r < 0.2)] = tiny
    a[(r >= 0.2) & (r < 0.22)] = -tiny
    edge = (r >= 0.22) & (r < 0.4)
    pick = rng.integers(0, len(EDGES), int(edge.sum()))
    a[edge] = np.array(EDGES, dt)[pick] * rng.choice(np.array([-1, 1], dt), pick.size)
    return with_nan_payloads(a, rng)


def _leaf(xn: np.ndarray, layout: str) -> tgrad.Tensor:
    """xn as a leaf, C-contiguous or a transposed view of a copy (non-contiguous)."""
    if layout == "c" or xn.ndim < 2:
        return tgrad.tensor(xn, requires_grad=True)
    base = tgrad.tensor(np.ascontiguousarray(np.swapaxes(xn, -1, -2)))
    return base.transpose(-1, -2).detach().requires_grad_(True)


def _run(fn, arrays: list, g: np.ndarray | None, layout: str) -> list:
    """fn's output and the leaves' gradients (for upstream g; None: a scalar output's 1)."""
    leaves = [_leaf(a, layout) for a in arrays]
    y = fn(*leaves)
    y.backward(None if g is None else tgrad.tensor(g))
    return [y.detach().numpy()] + [leaf.grad.numpy() for leaf in leaves]


def _both(monkeypatch, fn, arrays, g, layout) -> tuple:
    fast = _run(fn, arrays, g, layout)
    with monkeypatch.context() as m:
        m.setattr(_numpy_act, "fast_dtype", lambda dt: False)
        slow = _run(fn, arrays, g, layout)
    return fast, slow


def _assert_same(fast: list, slow: list) -> None:
    for f, s in zip(fast, slow):
        assert f.dtype == s.dtype and f.shape == s.shape
        assert raw_bytes(f) == raw_bytes(s)


# (shape, layout): "t" a transposed view (non-contiguous), for 2+ dims
LAYOUTS = [((517, 129), "c"), ((517, 129), "t"), ((3, 5, 7), "c"), ((3, 5, 7), "t"),
           ((1,), "c"), ((0, 4), "c"), ((0, 4), "t"), ((), "c")]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "layout"), LAYOUTS)
@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_is_bit_identical(monkeypatch, dt, shape, name, layout):
    seed = len(name) * 7 + len(shape)
    xn, g = _values(shape, dt, seed), _values(shape, dt, seed + 1)
    fast, slow = _both(monkeypatch, ACTS[name], [xn], g, layout)
    _assert_same(fast, slow)


LOSSES = {
    "smooth_l1": lambda r: lambda x, t: F.smooth_l1_loss(x, t, reduction=r),
    "smooth_l1_0.3": lambda r: lambda x, t: F.smooth_l1_loss(x, t, reduction=r, beta=0.3),
    "huber": lambda r: lambda x, t: F.huber_loss(x, t, reduction=r),
    "huber_2.5": lambda r: lambda x, t: F.huber_loss(x, t, reduction=r, delta=2.5),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "layout"), LAYOUTS)
@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_loss_is_bit_identical(monkeypatch, dt, shape, name, reduction, layout):
    # differences at the bounds too (the target a quarter of such values)
    xn, tn = _values(shape, dt, 3), _values(shape, dt, 4) / dt(4)
    g = _values(shape, dt, 5) if reduction == "none" else None
    fast, slow = _both(monkeypatch, LOSSES[name](reduction), [xn, tn], g, layout)
    _assert_same(fast, slow)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_broadcast_target_is_bit_identical(monkeypatch, dt, name):
    # a target that broadcasts (PyTorch warns): the gradients summed to each shape
    xn, tn = _values((6, 9), dt, 6), _values((9,), dt, 7) / dt(4)
    with pytest.warns(UserWarning):
        fast, slow = _both(monkeypatch, LOSSES[name]("mean"), [xn, tn], None, "c")
    _assert_same(fast, slow)


def _grads_under_create_graph(fn, arrays: list, g: np.ndarray | None) -> list:
    leaves = [tgrad.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*leaves)
    gs = tgrad.autograd.grad(y, leaves, None if g is None else tgrad.tensor(g),
                             create_graph=True)
    assert all(d.requires_grad for d in gs)  # the composition's graph (_Attach, formulas)
    return [d.detach().numpy() for d in gs]


@pytest.mark.parametrize("name", sorted(ACTS))
def test_create_graph_backward_matches_the_plain_one(name):
    xn, g = _values((9, 11), np.float32, 11), _values((9, 11), np.float32, 12)
    plain = _run(ACTS[name], [xn], g, "c")[1:]
    _assert_same(_grads_under_create_graph(ACTS[name], [xn], g), plain)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_create_graph_backward_matches_the_plain_one(name):
    xn, tn = _values((9, 11), np.float64, 13), _values((9, 11), np.float64, 14) / 4
    fn = LOSSES[name]("mean")
    plain = _run(fn, [xn, tn], None, "c")[1:]
    _assert_same(_grads_under_create_graph(fn, [xn, tn], None), plain)


@pytest.mark.parametrize("name", sorted(ACTS))
def test_node_name_and_halves(name):
    x = tgrad.tensor(_values((5, 6), np.float32, 15), requires_grad=True)
    node = type(ACTS[name](x).grad_fn).__name__
    assert node == NODES[name.split("_")[0] if not name.startswith("leaky") else "leaky_relu"]
    for half in (tgrad.float16, tgrad.bfloat16):  # the composition, in float32 per step
        xh = x.detach().to(half).requires_grad_(True)
        y = ACTS[name](xh)
        assert y.dtype is half
        y.backward(tgrad.ones_like(y))
        assert xh.grad.dtype is half


def _smooth(x: np.ndarray, seed: int) -> np.ndarray:
    """Points away from the kinks (gradcheck's finite differences must not straddle one)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-5, 5, x)
    for e in EDGES:
        a[np.abs(np.abs(a) - e) < 0.05] += 0.11
    return a


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_gradcheck(name):
    x = tgrad.tensor(_smooth((4, 7), 21), requires_grad=True)
    assert gradcheck(ACTS[name], (x,))
    assert gradgradcheck(ACTS[name], (x,))


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_loss_gradcheck(name, reduction):
    x = tgrad.tensor(_smooth((4, 7), 22), requires_grad=True)
    t = tgrad.tensor(_smooth((4, 7), 23) / 3, requires_grad=True)
    fn = LOSSES[name](reduction)
    assert gradcheck(fn, (x, t))
    assert gradgradcheck(fn, (x, t))


def test_values_against_float64_reference():
    # an independent NumPy float64 reference of the float32 results (one rounding: exact)
    xn = _smooth((33, 17), 31).astype(np.float32)
    x = tgrad.tensor(xn)
    w = xn.astype(np.float64)
    ref = {"leaky_relu": np.where(w > 0, w, w * np.float64(np.float32(0.01))),
           "hardtanh": np.clip(w, -1, 1),
           "softshrink": np.where(w > 0.5, w - 0.5, np.where(w < -0.5, w + 0.5, 0.0)),
           "hardshrink": np.where(np.abs(w) > 0.5, w, 0.0)}
    for name, r in ref.items():
        np.testing.assert_allclose(ACTS[name](x).numpy(), r, rtol=1e-6, atol=0)


# glu: halves along an even dim ((shape, dim, layout))
GLU_CASES = [((518, 130), -1, "c"), ((518, 130), 0, "t"), ((518, 130), -1, "t"),
             ((3, 4, 6), 1, "c"), ((3, 4, 6), -1, "t"), ((2,), 0, "c"), ((0, 4), -1, "c"),
             ((4, 0), 0, "t")]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "dim", "layout"), GLU_CASES)
def test_glu_is_bit_identical(monkeypatch, dt, shape, dim, layout):
    xn = _values(shape, dt, 41)
    half = list(shape)
    half[dim] //= 2
    g = _values(tuple(half), dt, 42)
    fast, slow = _both(monkeypatch, lambda x: F.glu(x, dim), [xn], g, layout)
    _assert_same(fast, slow)


def test_glu_create_graph_node_halves_and_gradcheck():
    fn = lambda x: F.glu(x, 0)  # noqa: E731
    xn, g = _values((10, 11), np.float64, 43), _values((5, 11), np.float64, 44)
    plain = _run(fn, [xn], g, "c")[1:]
    _assert_same(_grads_under_create_graph(fn, [xn], g), plain)
    x = tgrad.tensor(_smooth((4, 6), 45), requires_grad=True)
    assert type(fn(x).grad_fn).__name__ == "GluBackward0"
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    xh = x.detach().to(tgrad.float16).requires_grad_(True)
    y = fn(xh)
    assert y.dtype is tgrad.float16
    y.backward(tgrad.ones_like(y))
    assert xh.grad.dtype is tgrad.float16


def test_glu_broadcast_upstream_gradient_is_bit_identical(monkeypatch):
    # an expanded (stride-0) upstream gradient
    xn = _values((6, 8), np.float32, 46)

    def fn(x):
        return F.glu(x, -1) * tgrad.tensor(_values((1, 4), np.float32, 47))
    fast, slow = _both(monkeypatch, lambda x: fn(x).sum(), [xn], None, "c")
    _assert_same(fast, slow)


def test_glu_kept_sigmoid_backward_twice_and_without_grad():
    """glu keeps sigmoid(b) for its fast backward: a retained graph's second backward
    (recomputing it) gives the same bits, and a forward without grad keeps nothing."""
    xn = _values((6, 10), np.float32, 48)
    x = tgrad.tensor(xn, requires_grad=True)
    y = F.glu(x, -1)
    g = tgrad.tensor(_values((6, 5), np.float32, 49))
    (g1,) = tgrad.autograd.grad(y, x, g, retain_graph=True)
    (g2,) = tgrad.autograd.grad(y, x, g)
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    with tgrad.no_grad():
        np.testing.assert_array_equal(F.glu(x, -1).numpy(), y.detach().numpy())
