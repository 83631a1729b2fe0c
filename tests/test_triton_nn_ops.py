"""The nn kernels (tgrad/backends/_triton_nn.py over tgrad/kernels/) in Triton's interpreter
(TRITON_INTERPRET=1, device "cuda" emulated in host memory) against the NumPy backend,
forward and backward, float32 and float64: rows that fit one tile (one-pass kernels) and
rows that do not (online / multi-pass kernels; the interpreter's configs make that
threshold 64 elements), odd sizes, transposed / sliced / moved-axis inputs read in place;
plus dropout's regenerated mask, Philox determinism, matmul with broadcasting and
transposed operands, deterministic scatter-add, and the fused optimizers against the CPU
optimizers. This file is also the runner: pytest starts ``python THIS_FILE`` once in a
subprocess with TRITON_INTERPRET=1 (so the rest of the suite never sees it), when it has
collected this file, beside the rest of the suite (tests/background.py)."""

from __future__ import annotations

import json
import os
import sys
import traceback
import zlib

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHECKS = ["softmax", "cross_entropy", "layer_norm", "activations", "random_dropout",
          "matmul", "indexing", "optim", "float16", "grid_sample", "native"]
# (rtol, atol); float16: both sides compute in float32 and round once, so they may differ
# by one float16 ulp (2^-10 relative).
TOL = {np.float32: (2e-5, 2e-6), np.float64: (1e-12, 1e-13), np.float16: (1e-3, 1e-3)}


# ============================================================ the runner (subprocess side)
def _h(a):
    from tgrad.backends import triton as tb
    return tb.from_host(np.array(a, order="C"))


def _t(x, lay):
    """A device view of host array ``x`` in layout ``lay``: "c" contiguous, "T" a
    transposed view of a contiguous buffer, "s" every other column of a wider buffer, "p"
    the first columns of a wider buffer."""
    from tgrad.backends import triton as tb
    if lay == "T":
        base = _h(np.swapaxes(x, -1, -2))
        return tb.permute(base, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))
    if lay == "s":
        wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        wide[..., ::2] = x
        return tb.basic_index(_h(wide), (Ellipsis, slice(None, None, 2)))
    if lay == "p":
        wide = np.zeros(x.shape[:-1] + (x.shape[-1] + 2,), x.dtype)
        wide[..., :x.shape[-1]] = x
        return tb.basic_index(_h(wide), (Ellipsis, slice(0, x.shape[-1])))
    return _h(x)


def _close(got, ref, dt, what, atol=None):
    got = got.to_host() if hasattr(got, "to_host") else np.asarray(got)
    ref = np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, \
        f"{what}: {got.shape} {got.dtype} vs {ref.shape} {ref.dtype}"
    rtol, atol0 = TOL[np.dtype(dt).type]
    atol = atol0 if atol is None else atol
    assert np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True), \
        f"{what}: max abs diff {np.nanmax(np.abs(got.astype(float) - ref.astype(float)))}"


def check_softmax(rng):
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    for dt in (np.float32, np.float64):
        # (shape, axis, layout): 37 fits one tile, 150 / 65 stream (online); odd rows.
        for shape, axis, lay in [((5, 37), -1, "c"), ((3, 150), 1, "c"), ((4, 65), 1, "T"),
                                 ((3, 7, 6), 1, "c"), ((2, 9, 70), 0, "s"),
                                 ((37, 3), 0, "T")]:
            x = (rng.standard_normal(shape) * 4).astype(dt)
            g = rng.standard_normal(shape).astype(dt)
            x[0, 1] = -np.inf if x.ndim == 2 else x[0, 1]
            for log in (False, True):
                name = "log_softmax" if log else "softmax"
                y_ref = getattr(nb, name + "_fwd")(x, axis)
                y = getattr(nn, name + "_fwd")(_t(x, lay), axis)
                _close(y, y_ref, dt, f"{name} fwd {shape} axis={axis} {lay} {dt.__name__}")
                y_ref = np.where(np.isinf(y_ref), -1e30, y_ref).astype(dt) if log else y_ref
                dx = getattr(nn, name + "_bwd")(_t(g, lay), _t(y_ref, lay), axis)
                _close(dx, getattr(nb, name + "_bwd")(g, y_ref, axis), dt,
                       f"{name} bwd {shape} axis={axis} {lay} {dt.__name__}")
    # special rows through the one-pass float32 forms (exponents by FMA, 2^x): -inf
    # logits, a row of -inf, +inf, NaN, logits near 1e4, underflowing (subnormal) terms
    inf, nan = np.inf, np.nan
    for dt in (np.float32, np.float64):
        x = np.array([[0.5, -inf, 2.0, -1.0], [-inf, -inf, -inf, -inf], [1.0, inf, 0.0, 2.0],
                      [nan, 1.0, 2.0, 3.0], [1e4, 1e4 - 3.0, 1e4 + 1.5, 1e4 - 0.25],
                      [-90.0, -200.0, -88.0, 0.0], [1e-30, 0.0, -1e-30, 2e-30]], dt)
        for name in ("softmax", "log_softmax"):
            y = getattr(nn, name + "_fwd")(_h(x), 1)
            _close(y, getattr(nb, name + "_fwd")(x, 1), dt, f"{name} special rows {dt}")
            exact = getattr(nb, name + "_fwd")(x.astype(np.float64), 1)
            got = y.to_host().astype(np.float64)
            assert np.array_equal(np.isnan(got), np.isnan(exact)), (name, got, exact)
            fin = np.isfinite(exact)
            # float32: within 2 ulps of the float64 maths on the same inputs (atol: the
            # subnormal softmax values e^-88.., which float32 keeps with fewer digits)
            assert np.allclose(got[fin], exact[fin], rtol=2.4e-7, atol=1e-44), (name, got)


def check_cross_entropy(rng):
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    for dt in (np.float32, np.float64):
        for shape, axis, lay in [((6, 37), 1, "c"), ((5, 150), 1, "c"), ((4, 70), 1, "T"),
                                 ((3, 11, 4), 1, "c"), ((23,), 0, "c"), ((5, 9), 1, "s"),
                                 ((3, 1, 4), 1, "p")]:  # x's rows 2-level, dx's one dim
            x = (rng.standard_normal(shape) * 3).astype(dt)
            tshape = shape[:axis] + shape[axis + 1:]
            t = rng.integers(0, shape[axis], tshape)
            if t.ndim:
                t.reshape(-1)[::3] = -100  # ignore_index rows
            w = rng.random(tshape).astype(dt) + 0.5
            for red in ("none", "sum", "mean"):
                for rw in (None, w):
                    what = f"cross_entropy {shape} {lay} {red} w={rw is not None} {dt.__name__}"
                    hrw = None if rw is None else _h(rw)
                    loss, lse = nn.cross_entropy_fwd(_t(x, lay), _h(t), hrw, axis, -100, red)
                    loss_ref, lse_ref = nb.cross_entropy_fwd(x, t, rw, axis, -100, red)
                    _close(loss, loss_ref, dt, what + " loss")
                    _close(_lse(lse), _lse(lse_ref).astype(dt), dt, what + " lse")
                    g = rng.standard_normal(np.shape(loss_ref)).astype(dt)
                    dx = nn.cross_entropy_bwd(_h(g), _t(x, lay), _h(t), hrw, lse, axis, -100,
                                              red)
                    _close(dx, nb.cross_entropy_bwd(g, x, t, rw, lse_ref, axis, -100, red),
                           dt, what + " dx")
    # special rows (the float32 forward sums 2^(x log2 e - m log2 e) with subnormal terms
    # flushed): -inf logits, a row of -inf, +inf, NaN, logits near 1e4, a tiny spread
    inf, nan = np.inf, np.nan
    for dt in (np.float32, np.float64):
        x = np.array([[0.5, -inf, 2.0, -1.0], [-inf, -inf, -inf, -inf],
                      [1.0, inf, 0.0, 2.0], [nan, 1.0, 2.0, 3.0],
                      [1e4, 1e4 - 3.0, 1e4 + 1.5, 1e4 - 0.25], [-90.0, -200.0, -88.0, 0.0],
                      [1e-30, 0.0, -1e-30, 2e-30]], dt)
        t = np.array([0, 2, 3, 1, 2, 1, 3])
        loss, lse = nn.cross_entropy_fwd(_h(x), _h(t), None, 1, -100, "none")
        loss_ref, lse_ref = nb.cross_entropy_fwd(x, t, None, 1, -100, "none")
        _close(loss, loss_ref, dt, f"cross_entropy special rows loss {dt.__name__}")
        # lse is internal (saved for backward): the row of -inf keeps -inf (log of an empty
        # sum) where NumPy's inf - inf gives NaN; its loss is NaN on both
        keep = np.arange(len(t)) != 1
        _close(_lse(lse)[keep], _lse(lse_ref)[keep].astype(dt), dt,
               f"cross_entropy special lse {dt.__name__}")
        assert np.isneginf(_lse(lse)[1]) and np.isnan(loss.to_host()[1])
        # float32 against float64 maths on the same inputs: logits near 1e4 lose nothing to
        # lse's rounding (the loss is (m - x[t]) + log(sum(exp(x - m)))), at 2 float32 ulps
        exact = nb.cross_entropy_fwd(x.astype(np.float64), t, None, 1, -100, "none")[0]
        got = loss.to_host().astype(np.float64)
        fin = np.isfinite(exact)
        assert np.array_equal(np.isnan(got), np.isnan(exact)), (got, exact)
        assert np.allclose(got[fin], exact[fin], rtol=2.4e-7, atol=0), (got, exact)
    # float32 backward at logits ~1000 against float64 maths on the same inputs: the saved
    # lse is a head (row max) and tail (log-sum), not one float32 (ulp 6e-5 at 1000, which
    # made e^(x - lse) off by ~1e-5 relative), so dx keeps float32's precision
    x = (rng.standard_normal((3, 5)) * 3 + 1000).astype(np.float32)
    t = np.array([0, 3, 4])
    g = rng.standard_normal(3).astype(np.float32)
    _, lse = nn.cross_entropy_fwd(_h(x), _h(t), None, 1, -100, "none")
    dx = nn.cross_entropy_bwd(_h(g), _h(x), _h(t), None, lse, 1, -100, "none").to_host()
    x64 = x.astype(np.float64)
    p = np.exp(x64 - x64.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ref = g.astype(np.float64)[:, None] * (p - np.eye(5)[t])
    assert np.allclose(dx, ref, rtol=1e-6, atol=1e-7 * np.abs(g).max()), (dx, ref)
    # no rows at all: empty / 0 / nan like PyTorch
    x = np.zeros((0, 5), np.float32)
    t = np.zeros((0,), np.int64)
    for red in ("none", "sum", "mean"):
        loss, _ = nn.cross_entropy_fwd(_h(x), _h(t), None, 1, -100, red)
        _close(loss, nb.cross_entropy_fwd(x, t, None, 1, -100, red)[0], np.float32,
               f"cross_entropy empty {red}")


def _lse(lse):
    """A cross_entropy's saved lse ((2,) + rows: head m and tail log-sum, on the device or
    the CPU's) as one value per row, summed in float64 and rounded once to its dtype."""
    h = lse.to_host() if hasattr(lse, "to_host") else np.asarray(lse)
    return (h[0].astype(np.float64) + h[1]).astype(h.dtype)


def check_layer_norm(rng):
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    for dt in (np.float32, np.float64):
        # 37 rows of 33 -> > 4 partial rows (the interpreter's stage-1 cap); 150: online.
        # (32, 32): the backward's EVEN path (whole row blocks of 16, N = the block's 32)
        for shape, k, lay in [((37, 33), 1, "c"), ((6, 150), 1, "c"), ((3, 4, 5), 2, "c"),
                              ((9, 70), 1, "T"), ((5, 13), 1, "s"), ((32, 32), 1, "c"),
                              ((32, 32), 1, "T")]:
            x = (rng.standard_normal(shape) * 2 + 1).astype(dt)
            g = rng.standard_normal(shape).astype(dt)
            ns = shape[len(shape) - k:]
            w, b = rng.standard_normal(ns).astype(dt), rng.standard_normal(ns).astype(dt)
            for ww, bb in ((w, b), (None, None), (w, None)):
                what = f"layer_norm {shape} k={k} {lay} affine={ww is not None} {dt.__name__}"
                hw = None if ww is None else _h(ww)
                y, mu, rs = nn.layer_norm_fwd(_t(x, lay), k, hw,
                                              None if bb is None else _h(bb), 1e-5)
                y_ref, mu_ref, rs_ref = nb.layer_norm_fwd(x, k, ww, bb, 1e-5)
                _close(y, y_ref, dt, what + " y")
                _close(mu, mu_ref, dt, what + " mean")
                _close(rs, rs_ref, dt, what + " rstd")
                res = nn.layer_norm_bwd(_t(g, lay), _t(x, lay), mu, rs, hw, k, True,
                                        bb is not None)
                ref = nb.layer_norm_bwd(g, x, mu_ref, rs_ref, ww, k, True, bb is not None)
                for got, r, n in zip(res, ref, ("dx", "dw", "db")):
                    assert (got is None) == (r is None), what + n
                    if r is not None:
                        _close(got, r, dt, f"{what} {n}")
                again = nn.layer_norm_bwd(_t(g, lay), _t(x, lay), mu, rs, hw, k, True, True)
                assert np.array_equal(again[1].to_host(), res[1].to_host()), \
                    what + " dw not bit-identical run to run"
                only_b = nn.layer_norm_bwd(_t(g, lay), _t(x, lay), mu, rs, hw, k, False, True)
                assert only_b[1] is None, what
                _close(only_b[2], nb.layer_norm_bwd(g, x, mu_ref, rs_ref, ww, k, False,
                                                    True)[2], dt, f"{what} db alone")


def check_activations(rng):
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    for dt in (np.float32, np.float64):
        for lay in ("c", "T", "s"):
            x = (rng.standard_normal((7, 33)) * 4).astype(dt)
            g = rng.standard_normal((7, 33)).astype(dt)
            # tanh-gelu's derivative has the term 0.5 x (1 - t^2) u' with t = tanh(u) near
            # +-1: (1 - t^2) cancels, so two float32 evaluations differ by up to a few ulp of
            # |g| (1 + 0.5 |x| u'(x)) (that term's scale), not of the result.
            scale = np.abs(g) * (1 + 0.5 * np.abs(x) * 0.798 * (1 + 0.134 * x * x))
            cancel = 8 * np.finfo(dt).eps * scale + TOL[dt][1]
            for ap in ("none", "tanh"):
                _close(nn.gelu_fwd(_t(x, lay), ap), nb.gelu_fwd(x, ap), dt, f"gelu {ap}")
                _close(nn.gelu_bwd(_t(g, lay), _t(x, lay), ap), nb.gelu_bwd(g, x, ap), dt,
                       f"gelu_bwd {ap} {lay}", atol=cancel if ap == "tanh" else None)
            _close(nn.silu_fwd(_t(x, lay)), nb.silu_fwd(x), dt, f"silu {lay}")
            _close(nn.silu_bwd(_t(g, lay), _t(x, lay)), nb.silu_bwd(g, x), dt, "silu_bwd")
            for beta, thr in ((1.0, 20.0), (2.0, 3.0)):
                _close(nn.softplus_fwd(_t(x, lay), beta, thr), nb.softplus_fwd(x, beta, thr),
                       dt, f"softplus {beta} {thr} {lay}")
                _close(nn.softplus_bwd(_t(g, lay), _t(x, lay), beta, thr),
                       nb.softplus_bwd(g, x, beta, thr), dt, f"softplus_bwd {lay}")


def check_random_dropout(rng):
    import tgrad
    from tgrad.backends import _triton_nn as nn
    tgrad.manual_seed(1234)
    u1 = nn.rand((3000,), np.float32).to_host()
    z1 = nn.randn((3000,), np.float64).to_host()
    tgrad.manual_seed(1234)
    assert np.array_equal(nn.rand((3000,), np.float32).to_host(), u1), "rand not reproducible"
    assert np.array_equal(nn.randn((3000,), np.float64).to_host(), z1)
    assert not np.array_equal(nn.rand((3000,), np.float32).to_host(), u1), "offset not advanced"
    # 3000 uniforms: mean within 5 sigma of 1/2, all in [0, 1); normals: mean 0, var 1
    assert 0.0 <= u1.min() and u1.max() < 1.0 and abs(u1.mean() - 0.5) < 5 * 0.2887 / 3000 ** .5
    assert abs(z1.mean()) < 5 / 3000 ** .5 and abs(z1.var() - 1) < 5 * (2 / 3000) ** .5
    for dt in (np.float32, np.float64):
        x = rng.standard_normal((40, 51)).astype(dt)
        p = 0.3
        y, state = nn.dropout_fwd(_t(x, "T"), p)
        y = y.to_host()
        xt = x  # the transposed-buffer view holds x's values (logical order)
        kept = y != 0
        frac = 1 - kept.mean()
        assert abs(frac - p) < 5 * (p * (1 - p) / x.size) ** .5, f"dropout rate {frac}"
        _close(y[kept], (xt[kept] / (1 - p)).astype(dt), dt, "dropout kept values")
        g = rng.standard_normal(xt.shape).astype(dt)
        dx = nn.dropout_bwd(_h(g), p, state).to_host()
        assert np.array_equal(dx != 0, kept), "backward mask differs from forward mask"
        _close(dx[kept], (g[kept] / (1 - p)).astype(dt), dt, "dropout bwd values")
        y1, _ = nn.dropout_fwd(_h(x), 1.0)
        assert not y1.to_host().any()


def check_matmul(rng):
    import tgrad
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import triton as tb
    from tgrad.kernels import matmul as kmm
    assert kmm.FLAGS.allow_tf32 is False and nn.MATMUL_FLAGS is kmm.FLAGS
    for dt in (np.float32, np.float64):
        cases = [((7, 13), (13, 9), "cc"), ((33, 40), (40, 35), "TT"), ((3, 7, 17), (17, 9), "cT"),
                 ((2, 1, 7, 13), (3, 13, 5), "Tc"), ((13,), (13, 9), "cc"),
                 ((7, 13), (13,), "cc"), ((13,), (13,), "cc"), ((4, 0), (0, 3), "cc")]
        for sa, sb, lays in cases:
            a = rng.standard_normal(sa).astype(dt)
            b = rng.standard_normal(sb).astype(dt)
            la = lays[0] if a.ndim >= 2 else "c"
            lb = lays[1] if b.ndim >= 2 else "c"
            ref = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dt)
            _close(nn.matmul(_t(a, la), _t(b, lb)), ref, dt, f"matmul {sa} {sb} {lays}")
        # more batches than the grid's y extent (shrunk to 4 here): chunked launches
        saved, nn._GRID_Y_MAX = nn._GRID_Y_MAX, 4
        try:
            for sa, sb in [((10, 3, 4), (10, 4, 2)), ((2, 1, 3, 5, 3, 4), (2, 4, 1, 5, 4, 2))]:
                a = rng.standard_normal(sa).astype(dt)
                b = rng.standard_normal(sb).astype(dt)
                _close(nn.matmul(_h(a), _h(b)), np.matmul(a, b), dt, f"matmul chunked {sa}")
        finally:
            nn._GRID_Y_MAX = saved
        # backward through autograd: two matmuls on strided views, no host path
        a = rng.standard_normal((2, 5, 19)).astype(dt)
        b = rng.standard_normal((19, 6)).astype(dt)
        g = rng.standard_normal((2, 5, 6)).astype(dt)
        ta = tgrad.tensor(a, device="cuda", requires_grad=True)
        tb_ = tgrad.tensor(b, device="cuda", requires_grad=True)
        (ta @ tb_).backward(tgrad.tensor(g, device="cuda"))
        _close(ta.grad.numpy(), (g @ b.T).astype(dt), dt, "matmul grad a")
        _close(tb_.grad.numpy(), np.einsum("bmk,bmn->kn", a, g).astype(dt), dt,
               "matmul grad b")
    assert not [u for u in tb.host_path_used() if u == "matmul"]


def check_indexing(rng):
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    from tgrad.backends import triton as tb
    for dt in (np.float32, np.float64):
        x = rng.standard_normal((6, 7, 5)).astype(dt)
        keys = [(np.array([0, 2, 2, 5, 2]),), (slice(None), np.array([[1, 1], [3, 0]])),
                (x[..., 0] > 0,), (np.array([1, 1, 4]), slice(None, None, 2),
                                   np.array([0, 4, 4])),
                (Ellipsis, np.array([4, 0, 4])), (2, None, np.array([1, 1]))]
        for key in keys:
            ref = nb.gather(x, key)
            _close(nn.gather(_h(x), key), ref, dt, f"gather {key}")
            v = rng.standard_normal(ref.shape).astype(dt)
            got = nn.index_add(x.shape, np.dtype(dt), key, _h(v))
            _close(got, nb.index_add(x.shape, np.dtype(dt), key, v), dt, f"index_add {key}")
            again = nn.index_add(x.shape, np.dtype(dt), key, _h(v))
            assert np.array_equal(got.to_host(), again.to_host()), "index_add not deterministic"
            for val in (v, 2.5):
                d = x.copy()
                nb.index_put_(d, key, val)
                dd = _h(x)
                nn.index_put_(dd, key, _h(v) if val is v else val)
                assert np.array_equal(dd.to_host(), d), f"index_put_ {key}"
        # a strided (sliced, stepped) source read in place
        xs = tb.basic_index(_h(x), (slice(1, None), slice(None, None, 2)))
        key = (np.array([3, 0, 3]), np.array([1, 2, 0]))
        _close(nn.gather(xs, key), x[1:, ::2][key], dt, "gather strided view")
        try:
            nn.gather(_h(x), (np.array([6]),))
        except IndexError as e:
            assert "out of bounds" in str(e)
        else:
            raise AssertionError("no IndexError")


def check_optim(rng):
    import tgrad
    from tgrad import optim
    from tgrad.kernels import optim as kopt
    from tgrad.optim import _functional
    assert _functional.FUSED[("sgd", "cuda")] is kopt.fused_sgd
    assert _functional.FUSED[("adam", "cuda")] is kopt.fused_adam
    shapes = [(3, 5), (300,), (2, 3, 4)]
    for dt in ("float32", "float64"):
        for cls, kw in [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True,
                                         weight_decay=0.01)),
                        (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True)),
                        (optim.SGD, dict(lr=0.1)),
                        (optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
                        (optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
                        (optim.Adam, dict(lr=0.01, maximize=True))]:
            init = [rng.standard_normal(s) for s in shapes]
            res = {}
            for dev in ("cpu", "cuda"):
                ps = [tgrad.tensor(a, dtype=getattr(tgrad, dt), device=dev,
                                   requires_grad=True) for a in init]
                opt = cls(ps, **kw)
                for _ in range(3):
                    opt.zero_grad()
                    loss = (ps[0] * ps[0]).sum() + (ps[1] * 2 * ps[1]).sum() \
                        + (ps[2] * ps[2] * ps[2]).sum()
                    loss.backward()
                    opt.step()
                res[dev] = [p.detach().numpy() for p in ps]
            for a, b in zip(res["cuda"], res["cpu"]):
                _close(a, b, getattr(np, dt), f"{cls.__name__} {kw} {dt}")
        # an infinite gradient, then a finite one: Adam's lerp'd first moment is NaN
        # (-inf + w (1 + inf)), as the CPU's (tests/test_optim.py: hand maths)
        moments = {}
        for dev in ("cpu", "cuda"):
            p = tgrad.zeros(4, dtype=getattr(tgrad, dt), device=dev, requires_grad=True)
            opt = optim.Adam([p], lr=0.1)
            for g in ([-np.inf, np.inf, 1.0, np.nan], [1.0, np.inf, np.inf, 1.0]):
                p.grad = tgrad.tensor(g, dtype=getattr(tgrad, dt), device=dev)
                opt.step()
            moments[dev] = opt.state[p]["exp_avg"].cpu().numpy()
        assert np.isnan(moments["cuda"][:2]).all() and np.isinf(moments["cuda"][2]), moments
        assert np.array_equal(np.isnan(moments["cuda"]), np.isnan(moments["cpu"])), moments
        # bit for bit with the CPU rule: the constants (1 - beta1, 1 - beta2, 1 - lr wd) taken
        # in float64 on the host (not 1 - float32(0.999), 1.3e-5 off), the step as addcdiv's
        # (-lr / bc1 m) / denom, amsgrad's max keeping a NaN second moment
        states = {}
        for dev in ("cpu", "cuda"):
            p = tgrad.tensor([0.5, -1.5, 2.0, 0.25, -3.0], dtype=getattr(tgrad, dt), device=dev,
                             requires_grad=True)
            for cls, kw in [(optim.AdamW, dict(weight_decay=0.1)), (optim.Adam, {})]:
                opt = cls([p], lr=0.1, betas=(0.9, 0.999), amsgrad=True, **kw)
                for g in ([0.3, 1e3, -2.0, np.nan, 1e-3], [0.1, -7.0, 1e30, 1.0, 2.0]):
                    p.grad = tgrad.tensor(g, dtype=getattr(tgrad, dt), device=dev)
                    opt.step()
                states[dev, cls.__name__] = [t.detach().cpu().numpy().tobytes() for t in
                                             [p] + list(opt.state[p].values())]
        for name in ("AdamW", "Adam"):
            assert states["cuda", name] == states["cpu", name], (dt, name)


def check_float16(rng):
    """float16 (bfloat16: the op table's bfloat16 run, tests/test_triton_ops.py): computed in
    float32 registers, rounded once, statistics (mean, rstd, lse) kept in float32, as the
    NumPy backend."""
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    dt = np.float16
    x = (rng.standard_normal((6, 100)) * 3).astype(dt)
    g = rng.standard_normal((6, 100)).astype(dt)
    for name in ("softmax", "log_softmax"):
        y = getattr(nb, name + "_fwd")(x, 1)
        _close(getattr(nn, name + "_fwd")(_h(x), 1), y, dt, name + " fp16")
        _close(getattr(nn, name + "_bwd")(_h(g), _h(y), 1), getattr(nb, name + "_bwd")(g, y, 1),
               dt, name + " bwd fp16")
    t = rng.integers(0, 100, 6)
    for red in ("none", "mean"):  # "none": the kernel stores float16 losses itself
        loss, lse = nn.cross_entropy_fwd(_h(x), _h(t), None, 1, -100, red)
        loss_ref, lse_ref = nb.cross_entropy_fwd(x, t, None, 1, -100, red)
        _close(loss, loss_ref, dt, f"cross_entropy fp16 {red}")
    _close(_lse(lse), _lse(lse_ref).astype(np.float32), np.float32, "cross_entropy lse fp16")
    w = rng.standard_normal(100).astype(dt)
    y, mu, rs = nn.layer_norm_fwd(_h(x), 1, _h(w), _h(w), 1e-5)
    ref = nb.layer_norm_fwd(x, 1, w, w, 1e-5)
    _close(y, ref[0], dt, "layer_norm fp16")
    _close(rs, ref[2], np.float32, "layer_norm rstd fp16")
    for got, r in zip(nn.layer_norm_bwd(_h(g), _h(x), mu, rs, _h(w), 1, True, True),
                      nb.layer_norm_bwd(g, x, ref[1], ref[2], w, 1, True, True)):
        _close(got, r, dt, "layer_norm bwd fp16")
    _close(nn.gelu_bwd(_h(g), _h(x), "none"), nb.gelu_bwd(g, x, "none"), dt, "gelu fp16")
    a = rng.standard_normal((9, 21)).astype(dt)
    b = rng.standard_normal((21, 11)).astype(dt)
    _close(nn.matmul(_t(a, "T"), _h(b)), nb.matmul(a, b), dt, "matmul fp16")


def check_grid_sample(rng):
    """grid_sample_fwd / grid_sample_bwd (tgrad/kernels/grid_sample.py) against the NumPy
    twin: every mode and padding, 2-D and 3-D, x transposed or contiguous, grid points out
    of range, NaN, +-inf and huge; d x the same bits on a second run (deterministic)."""
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import numpy as nb
    every = [(k, m, p) for k in (2, 3) for m in ("bilinear", "nearest", "bicubic")
             for p in ("zeros", "border", "reflection") if not (k == 3 and m == "bicubic")]
    some = [(2, "bicubic", "reflection"), (2, "nearest", "zeros"), (3, "bilinear", "border")]
    for dt, cases in ((np.float32, every), (np.float64, some)):
        for k, mode, pad in cases:
            ac = (len(mode) + len(pad)) % 2 == 0
            lay = "T" if pad == "border" else "c"
            sp = (3, 5) if k == 2 else (2, 3, 4)
            x = rng.standard_normal((2, 3) + sp).astype(dt)
            grid = rng.uniform(-1.3, 1.3, (2, 4, 5, k)[:3] + (3,) * (k - 2) + (k,))
            grid.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 1e30, 1.0]
            grid = grid.astype(dt)
            g = rng.standard_normal((2, 3) + grid.shape[1:-1]).astype(dt)
            what = f"grid_sample {k}d {mode} {pad} ac={ac} {lay} {np.dtype(dt).name}"
            _close(nn.grid_sample_fwd(_t(x, lay), _h(grid), mode, pad, ac),
                   nb.grid_sample_fwd(x, grid, mode, pad, ac), dt, what)
            got = nn.grid_sample_bwd(_h(g), _t(x, lay), _h(grid), mode, pad, ac)
            ref = nb.grid_sample_bwd(g, x, grid, mode, pad, ac)
            _close(got[0], ref[0], dt, what + " d input")
            _close(got[1], ref[1], dt, what + " d grid")
            again = nn.grid_sample_bwd(_h(g), _t(x, lay), _h(grid), mode, pad, ac)
            assert np.array_equal(again[0].to_host(), got[0].to_host(), equal_nan=True), what


def check_native(rng):
    from tgrad.backends import _triton_nn as nn
    from tgrad.backends import triton as tb
    missing = set(tb.ops_without_native_kernel())
    assert not missing & set(nn.__all__), missing & set(nn.__all__)
    used = set(tb.host_path_used()) & set(nn.__all__)
    assert not used, f"nn primitives took the host path: {sorted(used)}"


def main() -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1"
    sys.path.insert(0, HERE)
    import kernel_specs
    kernel_specs.record_if_asked()  # for tests/test_triton_aot_specs.py
    out = {}
    for name in CHECKS:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        try:
            with np.errstate(all="ignore"):
                globals()["check_" + name](rng)
            out[name] = ""
        except Exception:  # noqa: BLE001 - reported per check to pytest
            out[name] = traceback.format_exc(limit=6)[-2500:]
    print("@@RESULT@@" + json.dumps(out))


# ============================================================ pytest side
_cache: dict = {}


def start_background() -> None:
    """This file's checks in one interpreter subprocess, beside the rest of the suite
    (tests/background.py)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import background
    import kernel_specs
    from interpreted import interpreter_env
    background.start("nn_kernels", [sys.executable, os.path.abspath(__file__)], cwd=ROOT,
                     env=kernel_specs.recording_env(interpreter_env(), "nn_kernels"))


def _results() -> dict:
    if not _cache:
        pytest.importorskip("triton")
        start_background()
        import background
        p = background.result("nn_kernels")
        marker = "@@RESULT@@"
        assert p.returncode == 0 and marker in p.stdout, \
            f"interpreter runner failed (rc={p.returncode}):\n{p.stderr[-3000:]}"
        _cache.update(json.loads(p.stdout.split(marker, 1)[1]))
    return _cache


@pytest.mark.parametrize("check", CHECKS)
def test_nn_kernel_on_interpreted_cuda(check):
    err = _results()[check]
    assert not err, err


if __name__ == "__main__":
    main()
