"""The CPU primitives of a convolution (tgrad/backends/_numpy_conv.py, taken by Convolution in
tgrad/nn/_conv.py for float32/float64 CPU tensors) against the composite they replace (Im2Col,
the batched matmuls, Col2Im and the crop), forced by monkeypatching ``_conv._fast_conv``:
bit-identical outputs and gradients over 1-, 2- and 3-d kernels, strides, padding (also
'same'), dilation, groups, non-contiguous inputs and gradients, NaN / inf / -0.0 values,
unbatched and empty inputs, any chunk of samples; the workspace (its arrays are never a
tensor's memory, reuse across calls and a retained graph's second backward), gradcheck and
gradgradcheck in float64 (the create_graph path), forward-mode AD, and halves still taking the
composite."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import forward_ad, gradcheck, gradgradcheck
from tgrad.backends import _numpy_conv
from tgrad.nn import _conv

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}

# (x shape, weight shape, kwargs)
CASES = [
    ((32, 3, 32, 32), (16, 3, 3, 3), dict(padding=1)),
    ((4, 16, 16, 16), (32, 16, 3, 3), dict(padding=1)),
    ((3, 4, 9, 11), (6, 2, 3, 2), dict(padding=(2, 1), stride=(2, 3), dilation=(1, 2),
                                       groups=2)),
    ((2, 3, 8, 8), (4, 3, 3, 3), dict(padding=3, dilation=3)),
    ((2, 4, 6, 7), (4, 1, 3, 3), dict(padding="same", groups=4)),
    ((2, 6, 9, 8), (6, 1, 7, 7), dict(padding=3, groups=6)),  # depthwise 7 x 7
    ((2, 3, 8, 8), (6, 1, 3, 3), dict(padding=1, groups=3)),  # depthwise, multiplier 2
    ((2, 4, 5, 6, 5), (4, 1, 3, 3, 3), dict(padding=1, groups=4)),  # depthwise 3-d
    ((2, 3, 5, 5), (4, 3, 5, 5), dict()),
    ((2, 3, 6, 5), (5, 3, 1, 1), dict(stride=2)),
    ((2, 3, 7), (4, 3, 3), dict(padding=2, stride=2)),
    ((2, 2, 5, 6, 7), (3, 2, 2, 3, 2), dict(padding=1, stride=(1, 2, 1))),
    ((0, 3, 5, 5), (4, 3, 3, 3), dict(padding=1)),
    ((3, 5, 5), (4, 3, 3, 3), dict(padding=1)),  # unbatched
    # 'same' rows of an even, dilated kernel: asymmetric row padding (_shifted_columns)
    ((3, 4, 7, 9), (5, 4, 2, 4), dict(padding="same", dilation=(1, 2))),
    ((2, 4, 9), (4, 1, 3), dict(padding=1, groups=4)),  # depthwise 1-d (_depthwise_col2im)
    ((2, 3, 4, 5, 6), (4, 3, 3, 3, 3), dict(padding=1)),  # 3-d: shifted rows, wide col2im
]


def _values(shape: tuple, dt, special: bool, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dt)
    if special and a.size:
        flat = a.reshape(-1)
        flat[::7] = -0.0
        flat[3::41] = np.inf
        flat[5::53] = np.nan
    return a


def _run(xs, ws, kw, dt, *, bias: bool, special: bool, noncontig: bool, need_x: bool = True,
         need_w: bool = True) -> list:
    """[y, dx, dw, db] as bytes (None where no gradient is asked for)."""
    spatial = len(ws) - 2
    x_np = _values(xs, dt, special, 0)
    if noncontig:  # a transposed view of a contiguous copy
        x = tgrad.tensor(np.ascontiguousarray(np.swapaxes(x_np, -1, -2))).transpose(-1, -2)
    else:
        x = tgrad.tensor(x_np)
    w = tgrad.tensor(_values(ws, dt, False, 1))
    b = tgrad.tensor(_values((ws[0],), dt, False, 2)) if bias else None
    x.requires_grad_(need_x)
    w.requires_grad_(need_w)
    if b is not None:
        b.requires_grad_(True)
    y = CONV[spatial](x, w, b, **kw)
    g_np = _values(tuple(y.shape), dt, special, 3)
    g = tgrad.tensor(g_np)
    if noncontig and g_np.ndim >= 2:
        g = tgrad.tensor(np.ascontiguousarray(np.swapaxes(g_np, -1, -2))).transpose(-1, -2)
    y.backward(g)
    return [y.detach().numpy().tobytes()] + [
        None if t is None or t.grad is None else t.grad.numpy().tobytes() for t in (x, w, b)]


def _both(monkeypatch, *args, **kw) -> tuple:
    fast = _run(*args, **kw)
    with monkeypatch.context() as m:
        m.setattr(_conv, "_fast_conv", lambda t: False)
        slow = _run(*args, **kw)
    return fast, slow


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt, case):
    xs, ws, kw = CASES[case]
    for bias, special, noncontig in ((True, False, False), (False, True, True),
                                     (True, True, False)):
        fast, slow = _both(monkeypatch, xs, ws, kw, dt, bias=bias, special=special,
                           noncontig=noncontig)
        assert fast == slow, (xs, ws, kw, bias, special, noncontig)


@pytest.mark.parametrize("chunk_bytes", [1, 3000, 1 << 40])
@pytest.mark.parametrize("case", [0, 2, 7, 8])
def test_conv_fast_path_is_bit_identical_for_any_chunk_of_samples(monkeypatch, chunk_bytes,
                                                                   case):
    # one sample per chunk, a few (with a shorter last chunk), the whole batch at once
    monkeypatch.setattr(_numpy_conv, "BATCH_BYTES", 0)
    monkeypatch.setattr(_numpy_conv, "CHUNK_BYTES", chunk_bytes)
    xs, ws, kw = CASES[case]
    for dt in (np.float32, np.float64):
        fast, slow = _both(monkeypatch, xs, ws, kw, dt, bias=True, special=True,
                           noncontig=True)
        assert fast == slow, (xs, ws, kw, dt)


def _strided_columns(x: np.ndarray, kernel: tuple, dilation: tuple, pads: tuple,
                     out: tuple) -> np.ndarray:
    """The columns (N, C, kh, kw, *out) of x zero-padded by pads, unit strides, tap by tap."""
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    cols = np.empty(x.shape[:2] + tuple(kernel) + tuple(out), x.dtype)
    for ki, kj in np.ndindex(*kernel):
        r, c = ki * dilation[0], kj * dilation[1]
        cols[:, :, ki, kj] = xp[:, :, r:r + out[0], c:c + out[1]]
    return cols


def test_shifted_columns_are_the_strided_copy_bit_for_bit():
    # unit strides, rows padded to keep their width (any split of pl + pr, dilations, row
    # padding of any height, kernels taller or wider than x), NaN / -0.0 kept, twice each:
    # the second call reuses the workspace rows, whose zeros must still be there
    rng = np.random.default_rng(0)
    taken = 0
    for _ in range(300):
        n, c, h, w = (int(v) for v in rng.integers(0, 4, 4) + (0, 1, 1, 1))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(2, 5))
        dh, dw = (int(v) for v in rng.integers(1, 3, 2))
        pt, pb = (int(v) for v in rng.integers(0, 4, 2))
        pl = int(rng.integers(0, dw * (kw - 1) + 1))
        pads = ((pt, pb), (pl, dw * (kw - 1) - pl))
        out = (h + pt + pb - dh * (kh - 1), w)
        if out[0] < 1:
            continue
        dt = np.float32 if rng.random() < 0.5 else np.float64
        x = rng.standard_normal((n, c, h, w)).astype(dt)
        x[rng.random(x.shape) < 0.2] = np.nan
        x[rng.random(x.shape) < 0.2] = -0.0
        want = _strided_columns(x, (kh, kw), (dh, dw), pads, out).tobytes()
        assert _numpy_conv.shifted_rows_apply(x, (kh, kw), (1, 1), pads, out)
        taken += 1
        for _ in range(2):
            cols = _numpy_conv._columns(x, (kh, kw), (1, 1), (dh, dw), pads, out)
            assert cols.tobytes() == want, (x.shape, (kh, kw), (dh, dw), pads)
            _numpy_conv.WORKSPACE.give("cols", cols)
    assert taken > 100
    # not taken: strided rows, a row width that changes, a one-tap-wide kernel, a view
    x = np.zeros((2, 3, 6, 8), np.float32)
    assert not _numpy_conv.shifted_rows_apply(x, (3, 3), (1, 2), ((1, 1), (1, 1)), (6, 4))
    assert not _numpy_conv.shifted_rows_apply(x, (3, 3), (1, 1), ((1, 1), (0, 0)), (6, 6))
    assert not _numpy_conv.shifted_rows_apply(x, (3, 1), (1, 1), ((1, 1), (0, 0)), (6, 8))
    assert not _numpy_conv.shifted_rows_apply(x[..., ::2], (3, 3), (1, 1), ((1, 1), (1, 1)),
                                              (6, 4))


def test_chunks_cover_the_batch_in_order(monkeypatch):
    assert _numpy_conv._chunks(0, 10) == [(0, 0)]
    assert _numpy_conv._chunks(2, 0) == [(0, 2)]
    assert _numpy_conv._chunks(5, _numpy_conv.BATCH_BYTES // 5) == [(0, 5)]  # one chunk
    monkeypatch.setattr(_numpy_conv, "BATCH_BYTES", 0)
    assert _numpy_conv._chunks(7, _numpy_conv.CHUNK_BYTES // 3) == [(0, 3), (3, 6), (6, 7)]
    assert _numpy_conv._chunks(3, 1 << 40) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("need_x, need_w", [(False, True), (True, False)])
def test_conv_fast_path_with_one_gradient_is_bit_identical(monkeypatch, need_x, need_w):
    fast, slow = _both(monkeypatch, (4, 3, 9, 9), (5, 3, 3, 3), dict(padding=1),
                       np.float32, bias=True, special=False, noncontig=False, need_x=need_x,
                       need_w=need_w)
    assert fast == slow
    assert (fast[1] is None) != need_x and (fast[2] is None) != need_w


def test_conv_values_and_gradients_against_float64_loops():
    """An independent reference: the direct sums in float64 (2-d, stride 2, padding 1)."""
    rng = np.random.default_rng(5)
    x_np = rng.standard_normal((2, 3, 7, 6))
    w_np = rng.standard_normal((4, 3, 3, 2))
    x = tgrad.tensor(x_np, requires_grad=True)
    w = tgrad.tensor(w_np, requires_grad=True)
    y = F.conv2d(x, w, stride=2, padding=1)
    xp = np.pad(x_np, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = y.shape[2:]
    ref = np.zeros((2, 4, oh, ow))
    g = rng.standard_normal(ref.shape)
    dxp, dw = np.zeros_like(xp), np.zeros_like(w_np)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 2]
            ref[:, :, i, j] = np.einsum("nckl,ockl->no", win, w_np)
            dw += np.einsum("no,nckl->ockl", g[:, :, i, j], win)
            dxp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 2] += np.einsum("no,ockl->nckl",
                                                                     g[:, :, i, j], w_np)
    y.backward(tgrad.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), dxp[:, :, 1:-1, 1:-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("xs, ws, kw", [((2, 2, 5, 4), (3, 2, 3, 2), dict(padding=1,
                                                                           stride=(2, 1))),
                                        ((2, 4, 5), (4, 2, 3), dict(padding=1, groups=2)),
                                        ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), dict(padding=1)),
                                        ((1, 2, 3, 4, 5), (2, 2, 3, 3, 3), dict(padding=1)),
                                        ((2, 3, 5, 4), (3, 1, 3, 3), dict(padding=1,
                                                                          groups=3))])
def test_conv_gradcheck_and_gradgradcheck_float64(xs, ws, kw):
    rng = np.random.default_rng(7)
    x = tgrad.tensor(rng.standard_normal(xs), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(ws), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(ws[0]), requires_grad=True)
    fn = CONV[len(ws) - 2]

    def f(x, w, b):
        return fn(x, w, b, **kw)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_conv_forward_ad_matches_the_finite_difference():
    rng = np.random.default_rng(8)
    x_np, w_np = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    tx, tw = rng.standard_normal(x_np.shape), rng.standard_normal(w_np.shape)
    with forward_ad.dual_level():
        x = forward_ad.make_dual(tgrad.tensor(x_np), tgrad.tensor(tx))
        w = forward_ad.make_dual(tgrad.tensor(w_np), tgrad.tensor(tw))
        tangent = forward_ad.unpack_dual(F.conv2d(x, w, padding=1)).tangent.numpy()
    # the convolution is bilinear: d = conv(tx, w) + conv(x, tw)
    ref = (F.conv2d(tgrad.tensor(tx), tgrad.tensor(w_np), padding=1)
           + F.conv2d(tgrad.tensor(x_np), tgrad.tensor(tw), padding=1)).numpy()
    np.testing.assert_allclose(tangent, ref, rtol=1e-12, atol=1e-12)


def test_workspace_arrays_are_never_a_tensors_memory_and_are_reused():
    _numpy_conv.WORKSPACE.clear()
    rng = np.random.default_rng(9)
    x = tgrad.tensor(rng.standard_normal((4, 3, 8, 8)).astype(np.float32), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((5, 3, 3, 3)).astype(np.float32), requires_grad=True)
    results = []
    for _ in range(3):
        x.grad = w.grad = None
        y = F.conv2d(x, w, padding=1)
        y.backward(tgrad.ones_like(y))
        results.append((y, x.grad, w.grad))
    kept = [a for arrays in _numpy_conv.WORKSPACE._kept.values() for a in arrays]
    assert kept and _numpy_conv.WORKSPACE.nbytes == sum(a.nbytes for a in kept)
    for ts in results:
        for t in ts:
            assert not any(np.shares_memory(t.detach().numpy(), a) for a in kept)
    first = [t.detach().numpy().copy() for t in results[0]]  # later calls left them alone
    for a, t in zip(first, results[-1]):
        np.testing.assert_array_equal(a, t.detach().numpy())


def test_workspace_bounds_its_bytes_and_hands_an_array_to_one_caller():
    ws = _numpy_conv.Workspace(1000)
    a = ws.take("t", (10,), np.dtype(np.float64))
    b = ws.take("t", (10,), np.dtype(np.float64))
    assert a is not b
    ws.give("t", a)
    ws.give("t", b)
    assert ws.nbytes == 160
    assert ws.take("t", (10,), np.dtype(np.float64)) is b
    ws.give("t", ws.take("big", (200,), np.dtype(np.float64)))  # over the bound: dropped
    assert ws.nbytes == 80
    for _ in range(20):
        ws.give("u", np.empty(100, np.uint8))
    assert ws.nbytes <= 1000
    ws.clear()
    assert ws.nbytes == 0


def test_a_retained_graphs_second_backward_and_two_forwards_before_a_backward():
    rng = np.random.default_rng(10)
    x = tgrad.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), requires_grad=True)
    y1 = F.conv2d(x, w, padding=1)
    y2 = F.conv2d(x * 2, w, padding=1)  # two nodes holding columns of one shape
    (y1.sum() + y2.sum()).backward(retain_graph=True)
    first = (x.grad.numpy().copy(), w.grad.numpy().copy())
    x.grad = w.grad = None
    (y1.sum() + y2.sum()).backward()  # the columns rebuilt from the saved input
    np.testing.assert_array_equal(first[0], x.grad.numpy())
    np.testing.assert_array_equal(first[1], w.grad.numpy())


def test_double_backward_through_the_fast_forward_matches_the_composite(monkeypatch):
    def run():
        rng = np.random.default_rng(11)
        x = tgrad.tensor(rng.standard_normal((2, 3, 5, 5)), requires_grad=True)
        w = tgrad.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
        y = F.conv2d(x, w, padding=1)
        (gx,) = tgrad.autograd.grad((y * y).sum(), (x,), create_graph=True)
        (gx * gx).sum().backward()
        return gx.detach().numpy().tobytes(), w.grad.numpy().tobytes()
    fast = run()
    with monkeypatch.context() as m:
        m.setattr(_conv, "_fast_conv", lambda t: False)
        assert run() == fast


def test_halves_take_the_composite():
    assert not _conv._fast_conv(tgrad.zeros(1, 1, 2, 2, dtype=tgrad.float16))
    assert not _conv._fast_conv(tgrad.zeros(1, 1, 2, 2, dtype=tgrad.complex64))
    x = tgrad.randn(2, 3, 5, 5, dtype=tgrad.bfloat16, requires_grad=True)
    w = tgrad.randn(4, 3, 3, 3, dtype=tgrad.bfloat16, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    y.sum().backward()
    assert y.dtype is tgrad.bfloat16 and x.grad.dtype is tgrad.bfloat16


def _strided_columns_nd(x: np.ndarray, kernel: tuple, dilation: tuple, pads: tuple,
                        out: tuple) -> np.ndarray:
    """The columns (N, C, *kernel, *out) of x zero-padded by pads, unit strides, tap by tap
    (any number of spatial dims)."""
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    cols = np.empty(x.shape[:2] + tuple(kernel) + tuple(out), x.dtype)
    for k in np.ndindex(*kernel):
        cols[(slice(None),) * 2 + k] = xp[(slice(None),) * 2 + tuple(
            slice(ki * di, ki * di + o) for ki, di, o in zip(k, dilation, out))]
    return cols


def test_shifted_columns_in_3d_are_the_strided_copy_bit_for_bit():
    # 3-d kernels, unit strides, rows keeping their width (any split of pl + pr), padded
    # depth and height of any size, dilations, NaN / -0.0 kept, empty batches, twice each
    rng = np.random.default_rng(1)
    taken = 0
    for _ in range(300):
        n, c = int(rng.integers(0, 3)), int(rng.integers(1, 3))
        sizes = tuple(int(v) for v in rng.integers(1, 5, 3))
        kernel = tuple(int(v) for v in rng.integers(1, 4, 2)) + (int(rng.integers(2, 5)),)
        dil = tuple(int(v) for v in rng.integers(1, 3, 3))
        pl = int(rng.integers(0, dil[2] * (kernel[2] - 1) + 1))
        pads = tuple(tuple(int(v) for v in rng.integers(0, 4, 2)) for _ in range(2)) + (
            (pl, dil[2] * (kernel[2] - 1) - pl),)
        out = tuple(s + lo + hi - d * (k - 1) for s, (lo, hi), d, k in
                    zip(sizes, pads, dil, kernel))
        if min(out) < 1:
            continue
        dt = np.float32 if rng.random() < 0.5 else np.float64
        x = rng.standard_normal((n, c) + sizes).astype(dt)
        x[rng.random(x.shape) < 0.2] = np.nan
        x[rng.random(x.shape) < 0.2] = -0.0
        want = _strided_columns_nd(x, kernel, dil, pads, out).tobytes()
        assert _numpy_conv.shifted_rows_apply(x, kernel, (1, 1, 1), pads, out)
        taken += 1
        for _ in range(2):
            cols = _numpy_conv._columns(x, kernel, (1, 1, 1), dil, pads, out)
            assert cols.tobytes() == want, (x.shape, kernel, dil, pads)
            _numpy_conv.WORKSPACE.give("cols", cols)
    assert taken > 100
    x = np.zeros((2, 3, 4, 6, 8), np.float32)
    assert not _numpy_conv.shifted_rows_apply(x, (3, 3, 3), (1, 1, 2), ((1, 1),) * 3,
                                              (4, 6, 4))
    assert not _numpy_conv.shifted_rows_apply(x, (3, 3, 1), (1, 1, 1), ((1, 1),) * 2 + (
        (0, 0),), (4, 6, 8))


def _per_tap_col2im(dcols: np.ndarray, sizes: tuple, kernel: tuple, dilation: tuple,
                    pads: tuple) -> np.ndarray:
    """col2im by one add per tap (unit strides) into a zeroed padded plane, cropped."""
    n, c = dcols.shape[:2]
    out = dcols.shape[2 + len(kernel):]
    dxp = np.zeros((n, c) + tuple(s + lo + hi for s, (lo, hi) in zip(sizes, pads)),
                   dcols.dtype)
    for k in np.ndindex(*kernel):
        view = dxp[(slice(None),) * 2 + tuple(slice(ki * di, ki * di + o) for ki, di, o in
                                              zip(k, dilation, out))]
        np.add(view, dcols[(slice(None),) * 2 + k], out=view)
    return dxp[(slice(None),) * 2 + tuple(slice(lo, lo + s) for s, (lo, _) in
                                          zip(sizes, pads))]


def _unit_stride_out(sizes: tuple, pads: tuple, dil: tuple, kernel: tuple) -> tuple:
    """Output sizes of a unit-stride conv: s + lo + hi - d (k - 1) per dim."""
    return tuple(s + lo + hi - d * (k - 1) for s, (lo, hi), d, k in
                 zip(sizes, pads, dil, kernel))


def _random_dcols(rng, lead: tuple, kernel: tuple, out: tuple) -> np.ndarray:
    """Column gradients (lead..., kernel..., out...) of float32 or float64 (half the
    time each), a tenth of them -0.0."""
    dt = np.float32 if rng.random() < 0.5 else np.float64
    dcols = rng.standard_normal(lead + kernel + out).astype(dt)
    dcols[rng.random(dcols.shape) < 0.1] = -0.0
    return dcols


@pytest.mark.parametrize("wide_bytes", [1, 1 << 12, 1 << 40])
def test_col2im_in_3d_blocks_is_the_per_tap_adds(monkeypatch, wide_bytes):
    # 3-d col2im through wide_col2im in blocks of planes (one plane, a few, all of them):
    # the per-tap adds' bits (-0.0, +inf and one NaN payload: no NaN payload choice)
    monkeypatch.setattr(_numpy_conv, "WIDE_BYTES", wide_bytes)
    rng = np.random.default_rng(2)
    for _ in range(40):
        n, c = int(rng.integers(0, 3)), int(rng.integers(1, 4))
        sizes = tuple(int(v) for v in rng.integers(1, 6, 3))
        kernel = tuple(int(v) for v in rng.integers(1, 4, 3))
        if kernel == (1, 1, 1):
            continue
        dil = tuple(int(v) for v in rng.integers(1, 3, 3))
        pads = tuple(tuple(int(v) for v in rng.integers(0, 3, 2)) for _ in range(3))
        out = _unit_stride_out(sizes, pads, dil, kernel)
        if min(out) < 1:
            continue
        dcols = _random_dcols(rng, (n, c), kernel, out)
        dt = dcols.dtype.type
        dcols[rng.random(dcols.shape) < 0.02] = np.inf
        dcols[rng.random(dcols.shape) < 0.02] = np.nan
        dx = np.empty((n, c) + sizes, dt)
        assert _numpy_conv.wide_col2im_applies(kernel, (1, 1, 1))
        _numpy_conv._col2im(dcols, sizes, kernel, (1, 1, 1), dil, pads, dx)
        want = _per_tap_col2im(dcols, sizes, kernel, dil, pads)
        assert dx.tobytes() == want.tobytes(), (dcols.shape, kernel, dil, pads)
    assert not _numpy_conv.wide_col2im_applies((3, 3, 3), (1, 2, 1))
    assert not _numpy_conv.wide_col2im_applies((1, 1, 1), (1, 1, 1))


# depthwise cases (x shape, weight shape, kwargs) of _depthwise_col2im: one output channel
# a group (two input channels a group too), dilations, asymmetric and no padding, odd sizes
DW_CASES = [
    ((8, 32, 16, 16), (32, 1, 3, 3), dict(padding=1, groups=32)),
    ((3, 5, 7, 9), (5, 1, 3, 2), dict(padding=(2, 0), dilation=(1, 2), groups=5)),
    ((2, 4, 6, 5), (2, 2, 3, 3), dict(padding=1, groups=2)),
    ((2, 3, 5, 4), (3, 1, 5, 3), dict(padding="same", groups=3)),
    ((1, 2, 9, 1), (2, 1, 4, 1), dict(groups=2)),
    ((0, 3, 5, 5), (3, 1, 3, 3), dict(padding=1, groups=3)),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(DW_CASES)))
def test_depthwise_col2im_is_the_products_then_col2im(monkeypatch, dt, case):
    xs, ws, kw = DW_CASES[case]
    assert _numpy_conv.depthwise_col2im_applies(ws[2:], (1, 1), ws[0], kw["groups"],
                                                np.ones(ws, dt))
    for special, noncontig in ((False, False), (True, True)):
        fast = _run(xs, ws, kw, dt, bias=True, special=special, noncontig=noncontig)
        with monkeypatch.context() as m:
            m.setattr(_numpy_conv, "depthwise_col2im_applies", lambda *a: False)
            plain = _run(xs, ws, kw, dt, bias=True, special=special, noncontig=noncontig)
        assert fast == plain, (xs, ws, kw, special)
    # not taken: a non-finite weight (w 0 in the gaps), strides, a multiplier, 3-d, 1 x 1
    w = np.ones(ws, dt)
    w.reshape(-1)[0] = np.inf
    assert not _numpy_conv.depthwise_col2im_applies(ws[2:], (1, 1), ws[0], kw["groups"], w)
    assert not _numpy_conv.depthwise_col2im_applies((3, 3), (2, 1), 4, 4, np.ones(1))
    assert not _numpy_conv.depthwise_col2im_applies((3, 3), (1, 1), 8, 4, np.ones(1))
    assert not _numpy_conv.depthwise_col2im_applies((3, 3, 3), (1, 1, 1), 4, 4, np.ones(1))
    assert not _numpy_conv.depthwise_col2im_applies((1, 1), (1, 1), 4, 4, np.ones(1))


def test_depthwise_with_a_non_finite_weight_takes_the_products(monkeypatch):
    # an inf weight: the dcols path (its inf 0 = NaN stays out of the gaps), the composite's
    # bits
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    w_np = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    w_np[1, 0, 1, 2] = np.inf

    def grads():
        x = tgrad.tensor(x_np, requires_grad=True)
        F.conv2d(x, tgrad.tensor(w_np), padding=1, groups=3).sum().backward()
        return x.grad.numpy().tobytes()
    fast = grads()
    with monkeypatch.context() as m:
        m.setattr(_conv, "_fast_conv", lambda t: False)
        assert grads() == fast


def test_rows_col2im_is_the_per_tap_adds():
    # conv_bwd's _rows_col2im (unit strides, rows as wide as x's, finite values: -0.0
    # included), 2-d and 3-d, any split of the row padding, dilations, padded depth and
    # height, one-tap-wide kernels, empty batches: the per-tap adds' bits
    rng = np.random.default_rng(6)
    taken = 0
    for _ in range(200):
        nd = int(rng.integers(2, 4))
        n, c = int(rng.integers(0, 3)), int(rng.integers(1, 4))
        sizes = tuple(int(v) for v in rng.integers(1, 6, nd))
        kernel = tuple(int(v) for v in rng.integers(1, 4, nd))
        if kernel == (1,) * nd:
            continue
        dil = tuple(int(v) for v in rng.integers(1, 3, nd))
        pl = int(rng.integers(0, dil[-1] * (kernel[-1] - 1) + 1))
        pads = tuple(tuple(int(v) for v in rng.integers(0, 3, 2)) for _ in range(nd - 1)) + (
            (pl, dil[-1] * (kernel[-1] - 1) - pl),)
        out = _unit_stride_out(sizes, pads, dil, kernel)
        if min(out) < 1:
            continue
        dcols = _random_dcols(rng, (n, c), kernel, out)
        dt = dcols.dtype.type
        g, w = np.ones((1, 1) + out, dt), np.ones(2, dt)
        assert _numpy_conv.rows_col2im_applies(sizes, kernel, (1,) * nd, pads, out, g, w)
        want = _per_tap_col2im(dcols, sizes, kernel, dil, pads)
        dx = np.empty((n, c) + sizes, dt)
        _numpy_conv._rows_col2im(dcols.copy(), sizes, kernel, dil, pads, dx)
        assert dx.tobytes() == want.tobytes(), (dcols.shape, kernel, dil, pads)
        taken += 1
    assert taken > 100
    # not taken: a non-finite g or w, strides, rows that change width, 1-d, one tap
    one = np.ones(3, np.float32)
    inf = np.array([1.0, np.inf], np.float32)
    nan = np.array([np.nan], np.float32)
    args = ((4, 6, 8), (3, 3, 3), (1, 1, 1), ((1, 1),) * 3, (4, 6, 8))
    assert _numpy_conv.rows_col2im_applies(*args, one, one)
    assert not _numpy_conv.rows_col2im_applies(*args, inf, one)
    assert not _numpy_conv.rows_col2im_applies(*args, one, nan)
    assert not _numpy_conv.rows_col2im_applies((6, 8), (3, 3), (1, 2), ((1, 1),) * 2, (6, 4),
                                               one, one)
    assert not _numpy_conv.rows_col2im_applies((6, 8), (3, 3), (1, 1), ((1, 1), (0, 0)),
                                               (6, 6), one, one)
    assert not _numpy_conv.rows_col2im_applies((8,), (3,), (1,), ((1, 1),), (8,), one, one)
    assert not _numpy_conv.rows_col2im_applies((6, 8), (1, 1), (1, 1), ((0, 0),) * 2, (6, 8),
                                               one, one)
