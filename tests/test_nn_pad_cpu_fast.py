"""The CPU paths of F.pad and the shuffles (tgrad/backends/_numpy_pad.py, taken by IndexPad
in tgrad/nn/_pad.py, ConstantPad in tgrad/nn/_composite.py, circular padding that records
no graph, and PixelShuffle / PixelUnshuffle / ChannelShuffle in tgrad/nn/_shuffle.py)
against the composites they replace, forced by monkeypatching the modules' ``_fast``
predicates: bit-identical outputs and gradients (NaN payloads, +-inf, +-0 included; a sum
of two NaNs compares as a NaN: which payload NumPy's add keeps then depends on its loop)
over 1-D/2-D/3-D pads, sizes 1 and 17, zero pads, reflect pads of size - 1, crops,
non-contiguous and unbatched inputs and empty batches; the create_graph backward (the
composite's) against the plain one; gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import numpy as np
import pytest
from special_values import layout_leaf, mixed_specials, nan_canonical, raw_bytes

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import _composite, _pad, _shuffle

# (input shape, pad, modes): reflect needs pads < size (after nothing is cropped)
CASES = [
    ((2, 3, 17), (3, 5), "reflect replicate circular"),
    ((2, 3, 17), (16, 16), "reflect replicate circular"),
    ((2, 3, 17), (0, 0), "reflect replicate circular"),
    ((3, 1), (4, 2), "replicate"),
    ((3, 1), (1, 1), "replicate circular"),
    ((2, 3, 17), (-3, 2), "reflect replicate circular"),
    ((2, 3, 17), (2, -16), "reflect replicate"),
    ((2, 3, 17), (20, 1), "replicate"),
    ((2, 2, 7, 17), (1, 2, 3, 1), "reflect replicate circular"),
    ((2, 2, 7, 17), (16, 0, 0, 6), "reflect replicate circular"),
    ((3, 1, 5), (0, 3, 2, 4), "replicate"),
    ((2, 2, 7, 17), (-2, 3, 2, -1), "reflect replicate circular"),
    ((2, 2, 7, 17), (-1, -1, 2, 2), "reflect replicate circular"),
    ((1, 2, 3, 5, 17), (1, 1, 2, 2, 1, 1), "reflect replicate circular"),
    ((1, 2, 3, 5, 17), (2, 0, 0, 4, 2, 1), "reflect replicate circular"),
    ((2, 3, 5, 6), (1, 0, 2, 1, 1, 2), "reflect replicate circular"),
    ((0, 2, 5, 6), (1, 2, 3, 1), "reflect replicate circular"),
]
PARAMS = [(shape, pad, mode) for shape, pad, modes in CASES for mode in modes.split()]


def _values(shape: tuple, dt, seed: int) -> np.ndarray:
    """-1..1 normals with +-0, NaNs with payloads, +-inf."""
    return mixed_specials(shape, dt, np.random.default_rng(abs(seed)))


def _input(xn: np.ndarray, layout: str) -> tgrad.Tensor:
    """layout_leaf(xn, layout); the transposed one checked non-contiguous."""
    x = layout_leaf(xn, layout)
    if layout != "c":
        assert not x.is_contiguous() or min(xn.shape[-2:]) <= 1 or not xn.size
    return x


def _run(fn, x: tgrad.Tensor, gn: np.ndarray | None, create_graph: bool = False):
    y = fn(x)
    if gn is None:
        return y.detach().numpy(), None
    (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(gn), create_graph=create_graph)
    return y.detach().numpy(), gx.detach().numpy()


def _check_against_composite(monkeypatch, module, fn, xn: np.ndarray, seed: int,
                             layout: str = "c", grad: bool = True) -> None:
    """fn on x: the fast path against the composite (``module._fast`` False): forward bit
    for bit; the plain backward against the composite's and the create_graph one."""
    x = _input(xn, layout)
    y_fast = fn(x).detach().numpy()
    gn = _values(y_fast.shape, xn.dtype, seed + 1) if grad else None
    y_fast, g_fast = _run(fn, x, gn)
    y_graph, g_graph = _run(fn, x, gn, create_graph=True) if grad else (y_fast, None)
    with monkeypatch.context() as m:
        m.setattr(module, next(n for n in ("_fast", "_fast_constant_pad") if hasattr(module, n)),
                  lambda t: False)
        y_ref, g_ref = _run(fn, _input(xn, layout), gn)
    assert y_fast.shape == y_ref.shape and y_fast.dtype == y_ref.dtype
    assert raw_bytes(y_fast) == raw_bytes(y_ref) and raw_bytes(y_graph) == raw_bytes(y_ref)
    if grad:
        assert g_fast.shape == xn.shape and g_fast.dtype == xn.dtype
        assert nan_canonical(g_fast) == nan_canonical(g_ref)
        assert nan_canonical(g_graph) == nan_canonical(g_ref)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize("shape,pad,mode", PARAMS)
def test_index_pad_matches_the_composite(monkeypatch, shape, pad, mode, layout, dt):
    xn = _values(shape, dt, len(shape) + sum(pad))
    fn = lambda t: F.pad(t, pad, mode=mode)  # noqa: E731
    if mode == "circular":  # the graph is the composite's (CopySlices); without one the
        # fast gather: against the composite's values (no gradient to compare)
        x = _input(xn, layout)
        y_graph = fn(x)
        with tgrad.no_grad():
            y_fast = fn(x)
        assert y_fast.is_contiguous() and y_fast._base is None
        y_plain = fn(x.detach())
        assert raw_bytes(y_fast.numpy()) == raw_bytes(y_graph.detach().numpy()) \
            == raw_bytes(y_plain.numpy())
        with monkeypatch.context() as m:
            m.setattr(_pad, "_fast", lambda t: False)
            with tgrad.no_grad():
                assert raw_bytes(fn(x).numpy()) == raw_bytes(y_fast.numpy())
        return
    _check_against_composite(monkeypatch, _pad, fn, xn, len(shape), layout)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_index_pad_unbatched_halves_and_integers(monkeypatch, mode):
    # unbatched input; float16 / bfloat16 take the fast forward and the composite's
    # backward (sums in float32, rounded per step); integers pad without a gradient
    fn = lambda t: F.pad(t, (2, 1, 1, 3), mode=mode)  # noqa: E731
    _check_against_composite(monkeypatch, _pad, fn, _values((3, 6, 5), np.float64, 3), 3)
    for dt in (tgrad.float16, tgrad.bfloat16):
        x = tgrad.tensor(_values((2, 3, 6, 5), np.float32, 4)).to(dt).requires_grad_(True)
        y = fn(x)
        g = tgrad.tensor(_values(tuple(y.shape), np.float32, 5)).to(dt)
        (gx,) = tgrad.autograd.grad(y, x, g)
        with monkeypatch.context() as m:
            m.setattr(_pad, "_fast", lambda t: False)
            x2 = x.detach().requires_grad_(True)
            y2 = fn(x2)
            (gx2,) = tgrad.autograd.grad(y2, x2, g)
        assert raw_bytes(y.float().detach().numpy()) == raw_bytes(y2.float().detach().numpy())
        assert nan_canonical(gx.float().numpy()) == nan_canonical(gx2.float().numpy())
    xi = tgrad.tensor(np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5))
    ref = np.pad(xi.numpy(), [(0, 0), (0, 0), (1, 3), (2, 1)],
                 mode={"reflect": "reflect", "replicate": "edge"}[mode])
    np.testing.assert_array_equal(fn(xi).numpy(), ref)


CONSTANT = [((2, 3, 17), (3, 5)), ((3, 1), (0, 0)), ((2, 3, 17), (-3, 2)),
            ((2, 3, 17), (-3, -14)), ((2, 2, 7, 17), (1, 2, 3, 1)),
            ((2, 2, 7, 17), (-1, -2, 0, -3)), ((1, 2, 3, 5, 17), (1, -1, 2, 0, 0, 3)),
            ((0, 2, 5, 6), (1, 2, 3, 1)), ((4, 5), (1, 1, 2, 2)), ((2, 3, 4), (0, 0, 0, 0, 1, 1))]


@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize("shape,pad", CONSTANT)
def test_constant_pad_matches_the_composite(monkeypatch, shape, pad, layout):
    for dt, value in ((np.float32, None), (np.float64, -2.5), (np.float32, float("nan"))):
        xn = _values(shape, dt, len(shape) + sum(pad))
        fn = lambda t, value=value: F.pad(t, pad, value=value)  # noqa: E731
        _check_against_composite(monkeypatch, _composite, fn, xn, 7, layout)
    xi = tgrad.tensor(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape))
    y = F.pad(xi, pad, value=7)
    with monkeypatch.context() as m:
        m.setattr(_composite, "_fast_constant_pad", lambda t: False)
        ref = F.pad(xi, pad, value=7)
    assert y.dtype == ref.dtype and raw_bytes(y.numpy()) == raw_bytes(ref.numpy())


SHUFFLES = [
    (lambda t: F.pixel_shuffle(t, 2), (2, 8, 5, 7)),
    (lambda t: F.pixel_shuffle(t, 3), (3, 2, 9, 4, 1)),
    (lambda t: F.pixel_shuffle(t, 1), (2, 3, 4, 5)),
    (lambda t: F.pixel_shuffle(t, 9), (1, 81, 2, 3)),  # r^2 > 64: one transposed copy
    (lambda t: F.pixel_shuffle(t, 2), (0, 4, 3, 3)),
    (lambda t: F.pixel_unshuffle(t, 2), (2, 3, 6, 8)),
    (lambda t: F.pixel_unshuffle(t, 3), (2, 1, 2, 9, 3)),
    (lambda t: F.pixel_unshuffle(t, 1), (3, 5, 4)),
    (lambda t: F.channel_shuffle(t, 3), (2, 6, 5, 4)),
    (lambda t: F.channel_shuffle(t, 1), (2, 6, 5)),
    (lambda t: F.channel_shuffle(t, 6), (2, 6, 1, 3)),
    (lambda t: F.channel_shuffle(t, 2), (0, 4, 3)),
]


@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize("k", range(len(SHUFFLES)))
def test_shuffles_match_the_composite(monkeypatch, k, layout):
    fn, shape = SHUFFLES[k]
    for dt in (np.float32, np.float64):
        _check_against_composite(monkeypatch, _shuffle, fn, _values(shape, dt, k), k, layout)
    x = tgrad.tensor(_values(shape, np.float32, k))
    y = fn(x)
    assert y._base is None and y.is_contiguous()
    assert y._storage.root is not x._storage.root  # never a view of the input
    xi = tgrad.tensor(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape))
    with monkeypatch.context() as m:
        m.setattr(_shuffle, "_fast", lambda t: False)
        ref = fn(xi)
    np.testing.assert_array_equal(fn(xi).numpy(), ref.numpy())


@pytest.mark.parametrize("fn,shape", [
    (lambda t: F.pad(t, (2, 1, 1, 2), mode="reflect"), (1, 2, 3, 4)),
    (lambda t: F.pad(t, (2, -1, 3, 1), mode="replicate"), (2, 1, 3, 4)),
    (lambda t: F.pad(t, (1, 2, 1, 0, 1, 1), mode="reflect"), (1, 1, 2, 3, 3)),
    (lambda t: F.pad(t, (3, 3), mode="replicate"), (2, 1)),
    (lambda t: F.pad(t, (1, 2, 0, 1), mode="circular"), (1, 2, 3, 4)),
    (lambda t: F.pad(t, (1, -1, 2, 0), value=0.5), (1, 2, 3, 4)),
    (lambda t: F.pad(t, (-1, -1), value=0.5), (2, 3, 4)),
    (lambda t: F.pixel_shuffle(t, 2), (1, 8, 2, 3)),
    (lambda t: F.pixel_unshuffle(t, 2), (1, 2, 4, 2)),
    (lambda t: F.channel_shuffle(t, 2), (1, 4, 3)),
])
def test_gradcheck_and_gradgradcheck(fn, shape):
    x = tgrad.tensor(np.random.default_rng(len(shape)).standard_normal(shape),
                     requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_pad_graph_nodes_unchanged():
    x = tgrad.tensor(np.ones((1, 2, 3, 4)), requires_grad=True)
    assert F.pad(x, (1, 1, 1, 1), mode="reflect").grad_fn.name() == "ReflectionPad2DBackward0"
    x3 = tgrad.tensor(np.ones((2, 3, 4)), requires_grad=True)
    assert F.pad(x3, (1, 1), mode="replicate").grad_fn.name() == "ReplicationPad1DBackward0"
    assert F.pad(x, (1, 1)).grad_fn.name() == "ConstantPadNdBackward0"
    assert F.pad(x3, (1, 1), mode="circular").grad_fn.name() == "CopySlices"
    assert F.pixel_shuffle(x.reshape(1, 8, 1, 3), 2).grad_fn.name() == "PixelShuffleBackward0"
    with tgrad.no_grad():
        assert F.pad(x3, (1, 1), mode="circular").grad_fn is None


CUDA_SCRIPT = '''
import json
import numpy as np
import tgrad
import tgrad.nn.functional as F

rng = np.random.default_rng(0)
CASES = [
    ("reflect2d", lambda t: F.pad(t, (1, 2, 2, 1), mode="reflect"), (2, 3, 4, 5)),
    ("replicate1d", lambda t: F.pad(t, (3, -1), mode="replicate"), (2, 3, 5)),
    ("replicate3d", lambda t: F.pad(t, (1, 0, 2, 1, 1, 1), mode="replicate"), (1, 2, 3, 3, 4)),
    ("circular2d", lambda t: F.pad(t, (1, 2, 0, 1), mode="circular"), (1, 2, 3, 4)),
    ("constant", lambda t: F.pad(t, (1, -1, 2, 0), value=0.5), (2, 3, 4)),
    ("pixel_shuffle", lambda t: F.pixel_shuffle(t, 2), (1, 8, 2, 3)),
    ("pixel_unshuffle", lambda t: F.pixel_unshuffle(t, 2), (1, 2, 4, 6)),
    ("channel_shuffle", lambda t: F.channel_shuffle(t, 2), (2, 4, 3)),
]
bad = []
for name, fn, shape in CASES:
    a = rng.standard_normal(shape)
    out = {}
    for dev in ("cpu", "cuda"):
        x = tgrad.tensor(a, device=dev, requires_grad=True)
        y = fn(x)
        g = tgrad.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)), device=dev,
                         requires_grad=True)
        (gx,) = tgrad.autograd.grad(y, x, g, create_graph=True)
        w = tgrad.tensor(np.cos(np.arange(a.size)).reshape(shape), device=dev)
        (ggx,) = tgrad.autograd.grad((gx * w).sum(), g)  # the backward's own gradient
        with tgrad.no_grad():
            y0 = fn(x)
        out[dev] = [y.detach().cpu().numpy(), gx.detach().cpu().numpy(),
                    ggx.detach().cpu().numpy(), y0.cpu().numpy()]
    for k, (c, d) in enumerate(zip(out["cpu"], out["cuda"])):
        if c.shape != d.shape or not np.allclose(c, d, rtol=1e-12, atol=1e-12):
            bad.append(f"{name} {k}")
print(json.dumps({"bad": bad}))
'''


def test_cuda_paths_in_the_interpreter(tmp_path):
    # the cuda device (Triton's interpreter) keeps the composites: values, gradients and
    # the create_graph backward as the CPU's
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json_file
    assert run_json_file(CUDA_SCRIPT, tmp_path, "pad_cuda.py") == {"bad": []}
