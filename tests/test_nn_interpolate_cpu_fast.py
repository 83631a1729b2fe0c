"""The CPU path of F.interpolate (tgrad/backends/_numpy_interp.py, taken by Resample in
tgrad/nn/_interpolate.py for float32/float64) against the composite it replaces, forced by
monkeypatching ``_interpolate._fast``: bit-identical outputs and gradients (NaN payloads,
+-inf, +-0 included; a sum of two NaNs compares as a NaN: which payload NumPy's add keeps
then depends on its loop) for every mode, align_corners both ways, up- and downsampling,
odd sizes, size and scale_factor forms, antialias (tap counts below and above 8),
non-contiguous inputs and empty batches; the create_graph backward (the composite's)
against the plain one; gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import numpy as np
import pytest
from special_values import layout_leaf, mixed_specials, nan_canonical, raw_bytes

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_interp
from tgrad.nn import _interpolate

SPATIAL = {"linear": (7,), "bilinear": (5, 7), "bicubic": (5, 7), "trilinear": (3, 5, 4)}
SIZES = [{"scale_factor": 2}, {"scale_factor": 0.6}, {"scale_factor": 1.7},
         {"size": "up"}, {"size": "down"}, {"size": "one"}]


def _cases() -> list:
    out = []
    for mode, nd in [("nearest", 3), ("nearest", 4), ("nearest", 5), ("nearest-exact", 4),
                     ("nearest-exact", 5), ("linear", 3), ("bilinear", 4), ("bicubic", 4),
                     ("trilinear", 5)]:
        for size in SIZES:
            for align in ([None] if "nearest" in mode else [False, True]):
                out.append((mode, nd, size, align))
    return out


def _values(shape: tuple, dt, seed: int) -> np.ndarray:
    """normals with +-0, NaNs with payloads, +-inf."""
    return mixed_specials(shape, dt, np.random.default_rng(abs(seed)))


def _run(fn, x: tgrad.Tensor, gn: np.ndarray, create_graph: bool = False):
    y = fn(x)
    (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(gn), create_graph=create_graph)
    return y.detach().numpy(), gx.detach().numpy()


def _check_against_composite(monkeypatch, fn, xn: np.ndarray, layout: str,
                             copy: bool = False) -> None:
    """fn on x: the fast path against the composite (``_interpolate._fast`` False): the
    forward bit for bit (NaNs as NaN unless ``copy``, see the module docstring); the plain
    backward and the create_graph one (the composite's)."""
    y_fast = fn(layout_leaf(xn, layout)).detach().numpy()
    gn = _values(y_fast.shape, xn.dtype, 7)
    y_fast, g_fast = _run(fn, layout_leaf(xn, layout), gn)
    y_graph, g_graph = _run(fn, layout_leaf(xn, layout), gn, create_graph=True)
    with monkeypatch.context() as m:
        m.setattr(_interpolate, "_fast", lambda t: False)
        y_ref, g_ref = _run(fn, layout_leaf(xn, layout), gn)
    assert y_fast.shape == y_ref.shape and y_fast.dtype == y_ref.dtype
    assert nan_canonical(y_fast) == nan_canonical(y_ref) == nan_canonical(y_graph)
    if copy:  # (the nearest modes: a copy, NaN payloads too)
        assert raw_bytes(y_fast) == raw_bytes(y_ref) == raw_bytes(y_graph)
    assert g_fast.shape == xn.shape and g_fast.dtype == xn.dtype
    assert nan_canonical(g_fast) == nan_canonical(g_ref)
    assert nan_canonical(g_graph) == nan_canonical(g_ref)


def _kwargs(mode: str, spatial: tuple, size: dict, align) -> dict:
    kw = {"mode": mode}
    if "size" in size:
        kw["size"] = tuple({"up": s * 3 + 1, "down": max(1, s // 2), "one": 1}[size["size"]]
                           for s in spatial)
    else:
        kw.update(size)
    if align is not None:
        kw["align_corners"] = align
    return kw


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize("mode,nd,size,align", _cases())
def test_interpolate_matches_the_composite(monkeypatch, mode, nd, size, align, layout, dt):
    spatial = SPATIAL.get(mode) or {3: (7,), 4: (5, 7), 5: (3, 5, 4)}[nd]
    kw = _kwargs(mode, spatial, size, align)
    xn = _values((2, 3) + spatial, dt, nd)
    _check_against_composite(monkeypatch, lambda t: F.interpolate(t, **kw), xn, layout,
                             "nearest" in mode)


@pytest.mark.parametrize("batch", [0, 1])
@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_empty_batch_and_single_pixel(monkeypatch, batch, mode):
    xn = _values((batch, 2, 1, 5), np.float32, 3)
    for kw in ({"scale_factor": 3}, {"size": (4, 2)}):
        _check_against_composite(monkeypatch, lambda t, kw=kw: F.interpolate(t, mode=mode, **kw),
                                 xn, "c")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 17), (2, 1), (13, 4)])
def test_antialias_matches_the_composite(monkeypatch, mode, size, dt):
    # (15, 11) -> 2 / 3 rows: 11 to 21 taps (the backend's sum); -> 17 / 13: 2-5 taps
    xn = _values((2, 2, 15, 11), dt, 5)
    for align in (False, True):
        _check_against_composite(
            monkeypatch, lambda t, a=align: F.interpolate(t, size=size, mode=mode,
                                                          antialias=True, align_corners=a),
            xn, "t")


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_tap_sums_without_the_sequential_reduce(monkeypatch, mode):
    """The fallback where NumPy's reduce would not be the sequential sum: the backend's sum
    on the composite's array (the same bits)."""
    monkeypatch.setattr(_numpy_interp, "_reduce_is_sequential", lambda: False)
    xn = _values((2, 3, 5, 7), np.float32, 9)
    _check_against_composite(monkeypatch,
                             lambda t: F.interpolate(t, size=(9, 4), mode=mode,
                                                     antialias=mode == "bilinear"), xn, "c")


def test_reduce_probe_and_rank_plan():
    assert isinstance(_numpy_interp._reduce_is_sequential(), bool)
    index = np.array([0, 0, 2, 2, 2, 4, 5], dtype=np.int64)
    whole, ranks = _numpy_interp._rank_plan(index.tobytes(), 7)
    assert not whole and len(ranks) == 3
    (t0, s0), (t1, s1), (t2, s2) = ranks
    assert list(t0) == [0, 2, 4, 5] and list(s0) == [0, 2, 5, 6]
    assert t1 == slice(0, 3, 2) and list(s1) == [1, 3]
    assert t2 == slice(2, 3) and list(s2) == [4]
    v = _values((3, 7, 2), np.float64, 4)
    ref = np.zeros((3, 7, 2))
    np.add.at(ref, (slice(None), index), v)
    out = _numpy_interp._scatter(v, 1, 7, index)
    assert nan_canonical(out + 0.0) == nan_canonical(ref)


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (1, 2, 3, 4), {"scale_factor": 1.5}),
    ("linear", (2, 2, 5), {"size": 8, "align_corners": False}),
    ("bilinear", (1, 2, 4, 3), {"size": (5, 2), "align_corners": True}),
    ("bicubic", (1, 1, 4, 5), {"scale_factor": 1.4, "align_corners": False}),
    ("trilinear", (1, 1, 2, 3, 3), {"size": (3, 2, 4), "align_corners": False}),
    ("bicubic", (1, 1, 9, 4), {"size": (3, 6), "antialias": True}),
])
def test_fast_path_gradcheck(mode, shape, kw):
    x = tgrad.tensor(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    fn = lambda t: F.interpolate(t, mode=mode, **kw)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
@pytest.mark.parametrize("antialias", [False, True])
def test_signed_zeros(monkeypatch, mode, antialias):
    """Sums of zeros only: each +-0.0 result as the composite's (its sums start at +0)."""
    rng = np.random.default_rng(11)
    xn = np.where(rng.random((2, 2, 5, 7)) < 0.8, -0.0, 0.0)
    for kw in ({"size": (9, 13), "align_corners": True}, {"scale_factor": 2},
               {"size": (3, 4)}):
        _check_against_composite(
            monkeypatch, lambda t, kw=kw: F.interpolate(t, mode=mode, antialias=antialias,
                                                        **kw), xn, "c", copy=True)


@pytest.mark.parametrize("mode,kw", [("bilinear", {"scale_factor": 2}),
                                     ("bicubic", {"size": (4, 9), "align_corners": True}),
                                     ("nearest", {"size": (7, 3)})])
def test_forward_ad_is_the_linear_map(mode, kw):
    """interpolate is linear in x: its jvp with tangent t is interpolate(t)."""
    import tgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(4)
    x, t = (tgrad.tensor(rng.standard_normal((2, 3, 5, 6))) for _ in range(2))
    with fwAD.dual_level():
        out = F.interpolate(fwAD.make_dual(x, t), mode=mode, **kw)
        tangent = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(tangent.numpy(), F.interpolate(t, mode=mode, **kw).numpy(),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,shape,size", [("linear", (2, 3, 7), (70,)),
                                             ("bilinear", (2, 2, 5, 7), (9, 66)),
                                             ("bicubic", (1, 2, 5, 7), (4, 65)),
                                             ("trilinear", (1, 2, 2, 3, 5), (3, 4, 67))])
def test_long_last_axis(monkeypatch, mode, shape, size):
    """Outputs of more than _numpy_interp._MAX_ROWS along the last axis: the adjoint in
    place (shorter ones run transposed)."""
    assert size[-1] > _numpy_interp._MAX_ROWS
    xn = _values(shape, np.float64, 13)
    for align in (False, True):
        _check_against_composite(
            monkeypatch, lambda t, a=align: F.interpolate(t, size=size, mode=mode,
                                                          align_corners=a), xn, "t")
