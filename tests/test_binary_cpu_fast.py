"""The CPU paths of hypot, copysign (a tensor ``other``) and lerp (a tensor weight)
(tgrad/backends/_numpy_binary.py, taken in tgrad/ops/logmath.py and composite.py) and of
nan_to_num's mask and backward (tgrad/ops/extras.py) against the compositions of tgrad
ops they replace, forced by monkeypatching ``_numpy_binary.fast_dtype``: bit-identical
outputs and gradients (NaN payloads, +-inf, +-0, subnormals) for float32/float64,
broadcasting, odd sizes, empty, 0-d and non-contiguous inputs; the create_graph backward
(the compositions) against the plain one; node names; gradcheck and gradgradcheck in
float64."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from special_values import mixed_specials, raw_bytes

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_binary

OPS = {
    "hypot": (tgrad.hypot, "HypotBackward0"),
    "copysign": (tgrad.copysign, "CopysignBackward0"),
    "lerp": (tgrad.lerp, "LerpBackward1"),
}
# operand shapes (broadcasting, odd sizes, empty, 0-d); lerp takes the three, the binary
# ops the first two
SHAPES = [((517, 129), (517, 129), (517, 129)), ((7, 1), (1, 9), (7, 9)),
          ((33, 17), (17,), (33, 1)), ((17,), (33, 17), ()), ((0, 4), (0, 4), (4,)),
          ((), (), ()), ((3, 5, 7), (3, 5, 7), (3, 5, 7))]


def _values(shape: tuple, dt, seed: int) -> np.ndarray:
    """4 N(0, 1) with +-0, NaNs with payloads, +-inf, +-subnormals, +-0.5 and huge
    values (hypot's overflow, lerp's branch point)."""
    rng = np.random.default_rng(seed)
    a = np.array(mixed_specials(shape, dt, rng) * dt(4), dt)  # (0-d: an array)
    r = np.asarray(rng.random(shape))
    info = np.finfo(dt)
    for (lo, hi), v in zip(((0.3, 0.32), (0.32, 0.34), (0.34, 0.38), (0.38, 0.4)),
                           (info.smallest_subnormal, info.max / 3, 0.5, 0.4999999)):
        m = (r >= lo) & (r < hi)
        a[m] = dt(v) * np.where(np.asarray(rng.random(shape))[m] < 0.5, dt(-1), dt(1))
    return np.asarray(a, dt)


def _leaf(xn: np.ndarray, layout: str, grad: bool = True) -> tgrad.Tensor:
    """xn as a leaf, C-contiguous or a transposed view of a copy (non-contiguous)."""
    if layout == "c" or xn.ndim < 2:
        return tgrad.tensor(xn, requires_grad=grad)
    base = tgrad.tensor(np.ascontiguousarray(np.swapaxes(xn, -1, -2)))
    return base.transpose(-1, -2).detach().requires_grad_(grad)


def _run(fn, arrays: list, g: np.ndarray, layout: str, needs: tuple,
         create_graph: bool = False) -> list:
    """fn's output, its node name and the gradients of the leaves that need one."""
    leaves = [_leaf(a, layout, n) for a, n in zip(arrays, needs)]
    y = fn(*leaves)
    wanted = [t for t in leaves if t.requires_grad]
    grads = tgrad.autograd.grad(y, wanted, tgrad.tensor(g), create_graph=create_graph)
    return [y.detach().numpy()] + [d.detach().numpy() for d in grads]


def _assert_same(fast: list, slow: list) -> None:
    for f, s in zip(fast, slow, strict=True):
        assert type(f) is np.ndarray and f.dtype == s.dtype and f.shape == s.shape
        assert raw_bytes(f) == raw_bytes(s)


def _needs(name: str, n: int) -> list:
    out = [(True,) * n, (True,) + (False,) * (n - 1), (False,) * (n - 1) + (True,)]
    return out if name != "copysign" else [(True, True)]  # (see the test below)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(OPS))
def test_bit_identical_to_the_composition(monkeypatch, dt, layout, shapes, name):
    fn, node = OPS[name]
    n = 3 if name == "lerp" else 2
    arrays = [_values(s, dt, 11 * i + len(name)) for i, s in enumerate(shapes[:n])]
    out_shape = np.broadcast_shapes(*shapes[:n])
    g = _values(out_shape, dt, 97)
    for needs in _needs(name, n):
        fast = _run(fn, arrays, g, layout, needs)
        leaves = [_leaf(a, layout, nd) for a, nd in zip(arrays, needs)]
        assert fn(*leaves).grad_fn.name() == node
        # the create_graph backward: the compositions' formulas (tgrad ops)
        _assert_same(_run(fn, arrays, g, layout, needs, create_graph=True), fast)
        with monkeypatch.context() as m:
            m.setattr(_numpy_binary, "fast_dtype", lambda dt: False)
            slow = _run(fn, arrays, g, layout, needs)
        _assert_same(fast, slow)
        with tgrad.no_grad():  # the no-grad path: the same forward
            assert raw_bytes(fn(*[tgrad.tensor(a) for a in arrays]).numpy()) \
                == raw_bytes(fast[0])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_copysign_constant_other_gives_the_same_input_gradient(dt):
    """other not requiring grad: the same node and d input (PyTorch's g result / input,
    0 at input = 0) as other requiring one; the composition there (a where) gave +0.0 for
    a zero g where other's sign bit is set (now -0.0, as PyTorch's g * -1)."""
    a, b = _values((41, 23), dt, 1), _values((41, 23), dt, 2)
    g = _values((41, 23), dt, 3)
    both = _run(tgrad.copysign, [a, b], g, "c", (True, True))
    one = _run(tgrad.copysign, [a, b], g, "c", (True, False))
    _assert_same(one, both[:2])
    assert not both[2].any()  # other's gradient: zeros


def test_halves_and_mixed_dtypes_keep_the_compositions():
    """float16/bfloat16 lerp and copysign and mixed-dtype copysign are not taken (hypot's
    halves are widened to float32 first, then taken): values as NumPy float64 within the
    dtypes' rounding."""
    rng = np.random.default_rng(4)
    for dt in (np.float16, ml_dtypes.bfloat16):
        a, b, w = (rng.standard_normal((5, 6)).astype(dt) for _ in range(3))
        ta, tb, tw = (tgrad.tensor(v, requires_grad=True) for v in (a, b, w))
        a64, b64, w64 = (v.astype(np.float64) for v in (a, b, w))
        for y, ref in ((tgrad.hypot(ta, tb), np.hypot(a64, b64)),
                       (tgrad.copysign(ta, tb), np.copysign(a64, b64)),
                       (tgrad.lerp(ta, tb, tw), a64 + w64 * (b64 - a64))):
            assert y.dtype == ta.dtype
            np.testing.assert_allclose(y.detach().numpy().astype(np.float64), ref,
                                       rtol=2e-2, atol=2e-2)
            y.sum().backward()
    x = tgrad.tensor(np.array([1.5, -2.0, 0.0], np.float32), requires_grad=True)
    y = tgrad.copysign(x, tgrad.tensor(np.array([-1.0, 1.0, -0.0])))  # float64 other
    assert y.dtype == tgrad.float64
    assert y.detach().numpy().tolist() == [-1.5, 2.0, -0.0]


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradcheck_and_gradgradcheck(name):
    fn, _ = OPS[name]
    rng = np.random.default_rng(6)
    n = 3 if name == "lerp" else 2
    shapes = [(3, 4), (4,), (3, 1)][:n]
    xs = [tgrad.tensor(rng.standard_normal(s) + 0.3, dtype=tgrad.float64, requires_grad=True)
          for s in shapes]
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
@pytest.mark.parametrize("shape", [(517, 129), (0, 3), (), (7,)])
@pytest.mark.parametrize("create_graph", [False, True])
def test_nan_to_num_gradient(dt, shape, create_graph):
    """dx = g where x is finite, else +0.0, bit for bit (NumPy's mask, the bool-mask
    product; the create_graph path: a where of tgrad ops)."""
    rng = np.random.default_rng(7)
    xn = mixed_specials(shape, np.float32, rng).astype(dt)
    g = mixed_specials(shape, np.float32, rng).astype(dt)
    x = tgrad.tensor(xn, requires_grad=True)
    y = tgrad.nan_to_num(x)
    assert y.grad_fn.name() == "NanToNumBackward0"
    (dx,) = tgrad.autograd.grad(y, [x], tgrad.tensor(g), create_graph=create_graph)
    ref = np.where(np.isfinite(xn.astype(np.float64)), g, np.zeros((), dt)).astype(dt)
    assert type(dx.detach().numpy()) is np.ndarray
    assert raw_bytes(dx.detach().numpy()) == raw_bytes(ref)


def test_nan_to_num_gradcheck():
    x = tgrad.tensor(np.random.default_rng(8).standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(tgrad.nan_to_num, [x])
    assert gradgradcheck(tgrad.nan_to_num, [x])


@pytest.mark.parametrize("name", sorted(OPS))
def test_fast_path_is_taken_for_c_contiguous_cpu_float(monkeypatch, name):
    """C-contiguous float32 operands run _numpy_binary's forward and backward (a spy);
    a transposed operand keeps the composition."""
    fn, _ = OPS[name]
    calls = []
    for attr in ("hypot", "hypot_grad", "copysign", "flip_signs", "lerp", "lerp_grads"):
        real = getattr(_numpy_binary, attr)
        monkeypatch.setattr(_numpy_binary, attr,
                            lambda *a, _r=real, _n=attr: calls.append(_n) or _r(*a))
    n = 3 if name == "lerp" else 2
    arrays = [_values((6, 5), np.float32, i) for i in range(n)]
    _run(fn, arrays, _values((6, 5), np.float32, 9), "c", (True,) * n)
    assert calls[0] == name and len(calls) == (3 if name == "hypot" else 2)
    calls.clear()
    _run(fn, arrays, _values((6, 5), np.float32, 9), "t", (True,) * n)
    assert calls == []


# ------------------------------------------------------------------------------ prelu
PRELU_SHAPES = [((8, 32, 5, 3), (32,)), ((8, 32, 5, 3), (1,)), ((7, 3), (3,)), ((5,), (1,)),
                ((0, 4, 3), (4,)), ((), (1,)), ((2, 3, 4, 5, 6), (3,))]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "t"])
@pytest.mark.parametrize(("xs", "ws"), PRELU_SHAPES, ids=str)
def test_prelu_bit_identical_to_the_composition(monkeypatch, dt, layout, xs, ws):
    """F.prelu's CPU path (_numpy_act.prelu / prelu_grads) against its composition
    (forced by monkeypatching _numpy_act.fast_dtype): the same bytes for y, dx and dw
    (specials in x, w and g; a transposed x keeps the composition), the create_graph
    backward too; node PreluKernelBackward0."""
    import tgrad.nn.functional as F
    from tgrad.backends import _numpy_act
    xn, wn, g = _values(xs, dt, 1), _values(ws, dt, 2), _values(xs, dt, 3)
    for needs in ((True, True), (True, False), (False, True)):
        def run(create_graph=False, xn=xn, wn=wn, g=g, needs=needs):
            x = _leaf(xn, layout, needs[0])
            w = tgrad.tensor(wn, requires_grad=needs[1])
            y = F.prelu(x, w)
            assert y.grad_fn.name() == "PreluKernelBackward0"
            wanted = [t for t in (x, w) if t.requires_grad]
            grads = tgrad.autograd.grad(y, wanted, tgrad.tensor(g), create_graph=create_graph)
            return [y.detach().numpy()] + [d.detach().numpy() for d in grads]
        fast = run()
        _assert_same(run(create_graph=True), fast)
        with monkeypatch.context() as m:
            m.setattr(_numpy_act, "fast_dtype", lambda dt: False)
            slow = run()
        _assert_same(fast, slow)


def test_prelu_gradcheck():
    import tgrad.nn.functional as F
    rng = np.random.default_rng(10)
    x = tgrad.tensor(rng.standard_normal((3, 4, 5)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(4), requires_grad=True)
    assert gradcheck(F.prelu, [x, w])
    assert gradgradcheck(F.prelu, [x, w])


def test_prelu_fast_path_is_taken(monkeypatch):
    import tgrad.nn.functional as F
    from tgrad.backends import _numpy_act
    calls = []
    for attr in ("prelu", "prelu_grads"):
        real = getattr(_numpy_act, attr)
        monkeypatch.setattr(_numpy_act, attr,
                            lambda *a, _r=real, _n=attr: calls.append(_n) or _r(*a))
    xn, wn = _values((40, 3, 50), np.float32, 1), _values((3,), np.float32, 2)

    def run():  # (sum's backward: g is one value expanded, not C-contiguous)
        x, w = tgrad.tensor(xn, requires_grad=True), tgrad.tensor(wn, requires_grad=True)
        F.prelu(x, w).sum().backward()
        return [x.grad.numpy(), w.grad.numpy()]
    fast = run()
    assert calls == ["prelu", "prelu_grads"]
    with monkeypatch.context() as m:
        m.setattr(_numpy_act, "fast_dtype", lambda dt: False)
        _assert_same(fast, run())
