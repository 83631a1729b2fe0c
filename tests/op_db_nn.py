"""OpInfo entries for shape ops / views / indexing / matmul and tgrad.nn.functional.

Collected by tests/test_opinfo.py next to tests/op_db.py (same OpSpec/Sample conventions).
References are NumPy float64; the softmax family uses max-subtraction as PyTorch's kernels
do, so NaN/inf rows behave the same way.
"""

from __future__ import annotations

import math

import numpy as np
from op_db import OpSpec, Sample

import tgrad
import tgrad.nn.functional as F

SIZES = (1, 17, 1023, 1025)


def _n(rng, *shape):
    return rng.standard_normal(shape)


# ====================================================================== shape & views
def _reshape_samples(rng):
    return [Sample((_n(rng, 3, 4), (4, 3)), desc="2d"),
            Sample((_n(rng, 3, 4), (-1,)), desc="flat -1"),
            Sample((_n(rng), (1, 1)), desc="0-d"),
            Sample((_n(rng, 1), ()), desc="to 0-d"),
            Sample((_n(rng, 0, 3), (3, 0, 1)), desc="empty"),
            Sample((_n(rng, 1025), (5, 205)), desc="n=1025"),
            Sample((_n(rng, 4, 3), (2, -1)), layouts=("T",), desc="T (copies)"),
            Sample((_n(rng, 3, 5), (3, 5, 1)), layouts=("s",), desc="sliced (a view)")]


def _view_samples(rng):
    return [s for s in _reshape_samples(rng) if "copies" not in s.desc]


def _permute_samples(rng):
    return [Sample((_n(rng, 2, 3, 4), (2, 0, 1)), desc="3d"),
            Sample((_n(rng, 2, 3, 4), (-1, 0, 1)), desc="negative"),
            Sample((_n(rng), ()), desc="0-d"),
            Sample((_n(rng, 0, 3), (1, 0)), desc="empty"),
            Sample((_n(rng, 1025, 1), (1, 0)), desc="n=1025"),
            Sample((_n(rng, 4, 3), (1, 0)), layouts=("T",), desc="T")]


def _transpose_samples(rng):
    return [Sample((_n(rng, 2, 3, 4), 0, 2), desc="3d"),
            Sample((_n(rng, 2, 3, 4), -1, 1), desc="negative"),
            Sample((_n(rng), 0, -1), desc="0-d"),
            Sample((_n(rng, 0, 3), 0, 1), desc="empty"),
            Sample((_n(rng, 17, 3), 0, 1), layouts=("s",), desc="sliced")]


def _matrixish(rng):
    return [Sample((_n(rng, 3, 4),), desc="2d"), Sample((_n(rng, 5),), desc="1d"),
            Sample((_n(rng),), desc="0-d"), Sample((_n(rng, 0, 3),), desc="empty"),
            Sample((_n(rng, 4, 3),), layouts=("T",), desc="T"),
            Sample((_n(rng, 17, 1025),), layouts=("s",), desc="sliced large")]


def _expand_samples(rng):
    return [Sample((_n(rng, 3, 1), (2, 3, 4)), desc="3,1 -> 2,3,4"),
            Sample((_n(rng), (3, 2)), desc="0-d"),
            Sample((_n(rng, 1, 4), (-1, 4)), desc="-1 keeps"),
            Sample((_n(rng, 1, 3), (0, 3)), desc="to empty"),
            Sample((_n(rng, 1), (1025,)), desc="n=1025"),
            Sample((_n(rng, 1, 3), (4, 2, 3)), layouts=("T",), desc="T")]


def _squeeze_samples(rng):
    return [Sample((_n(rng, 1, 3, 1, 2),), desc="all"),
            Sample((_n(rng, 1, 3, 1, 2), 2), desc="dim 2"),
            Sample((_n(rng, 1, 3, 1, 2), -4), desc="dim -4"),
            Sample((_n(rng, 1, 3, 1, 2), 1), desc="non-1 dim: no-op"),
            Sample((_n(rng, 1, 3, 1, 2), (0, 2)), desc="tuple dims"),
            Sample((_n(rng),), desc="0-d"), Sample((_n(rng, 0, 1),), desc="empty"),
            Sample((_n(rng, 3, 1),), layouts=("T",), desc="T")]


def _np_squeeze(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    dims = (dim,) if isinstance(dim, int) else dim
    dims = tuple(d % max(x.ndim, 1) for d in dims if x.ndim and x.shape[d] == 1)
    return np.squeeze(x, axis=dims) if dims else x


def _unsqueeze_samples(rng):
    return [Sample((_n(rng, 3, 4), 0), desc="front"), Sample((_n(rng, 3, 4), -1), desc="back"),
            Sample((_n(rng, 3, 4), 1), desc="middle"), Sample((_n(rng), 0), desc="0-d"),
            Sample((_n(rng, 0), 0), desc="empty"),
            Sample((_n(rng, 4, 3), 1), layouts=("T",), desc="T")]


def _flatten_samples(rng):
    return [Sample((_n(rng, 2, 3, 4),), desc="all"),
            Sample((_n(rng, 2, 3, 4), 1), desc="start 1"),
            Sample((_n(rng, 2, 3, 4), 0, 1), desc="0..1"),
            Sample((_n(rng),), desc="0-d"), Sample((_n(rng, 0, 3),), desc="empty"),
            Sample((_n(rng, 4, 3),), layouts=("T",), desc="T"),
            Sample((_n(rng, 3, 1025),), layouts=("s",), desc="sliced large")]


def _np_flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:]) if x.size else \
        x.reshape(x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


def _movedim_samples(rng):
    return [Sample((_n(rng, 2, 3, 4), 0, 2), desc="0->2"),
            Sample((_n(rng, 2, 3, 4), -1, 0), desc="-1->0"),
            Sample((_n(rng, 4, 3), 0, 1), layouts=("T",), desc="T")]


# ---------------------------------------------------------------------- indexing
def _basic_index_samples(rng):
    keys = [(1,), (-1,), (slice(1, None),), (slice(None, None, 2),),
            (slice(None), slice(1, 4, 2)), (None, Ellipsis, 0), (Ellipsis, None),
            (0, slice(None), None), (slice(5, 1),), (slice(-3, None), -2)]
    s = [Sample((_n(rng, 4, 5), k), desc=f"key {k}") for k in keys]
    s += [Sample((_n(rng), (None,)), desc="0-d None"),
          Sample((_n(rng), (Ellipsis,)), desc="0-d ..."),
          Sample((_n(rng, 0, 3), (slice(None), 1)), desc="empty"),
          Sample((_n(rng, 1025), (slice(3, None, 7),)), desc="n=1025 step 7"),
          Sample((_n(rng, 5, 4), (slice(None, None, 2), 1)), layouts=("T",), desc="T"),
          Sample((_n(rng, 4, 6), (Ellipsis, slice(1, None, 2))), layouts=("s",), desc="s")]
    return s


def _basic_getitem(x, key):
    return x[key]


def _int_index_samples(rng):
    def idx(*vals):
        return np.array(vals, dtype=np.int64)
    return [Sample((_n(rng, 5, 3), idx(0, 2, 2, -1)), desc="repeats"),
            Sample((_n(rng, 5, 3), idx(4)), desc="one"),
            Sample((_n(rng, 5, 3), np.array([[0, 1], [1, 1]])), desc="2-d index"),
            Sample((_n(rng, 5, 3), np.zeros(0, np.int64)), desc="empty index"),
            Sample((_n(rng, 1025), rng.integers(0, 1025, 40)), desc="n=1025"),
            Sample((_n(rng, 3, 5), idx(1, 1, 0)), layouts=("T",), desc="T")]


def _int_getitem(x, i):
    return x[i]


def _mixed_samples(rng):
    return [Sample((_n(rng, 4, 3, 5), np.array([0, 3, 3]), np.array([4, 0, 4])),
                   desc="separated arrays"),
            Sample((_n(rng, 4, 3, 5), np.array([[1], [2]]), np.array([0, 1, 4])),
                   desc="broadcast arrays"),
            Sample((_n(rng, 3, 2, 4), np.array([2, 2]), np.array([-1, 3])), desc="small")]


def _mixed_getitem(x, i, j):
    return x[i, :, j]


def _mask_samples(rng):
    return [Sample((_n(rng, 4, 5), _n(rng, 4, 5) > 0), desc="full mask"),
            Sample((_n(rng, 4, 5), _n(rng, 4) > 0), desc="row mask"),
            Sample((_n(rng, 4, 5), np.zeros((4, 5), bool)), desc="none selected"),
            Sample((_n(rng, 0, 2), np.zeros((0, 2), bool)), desc="empty"),
            Sample((_n(rng, 1025), _n(rng, 1025) > 0), desc="n=1025"),
            Sample((_n(rng, 5, 4), _n(rng, 5, 4) > 0), layouts=("T",), desc="T")]


# ---------------------------------------------------------------------- cat / stack / split
def _cat_samples(rng):
    return [Sample((_n(rng, 2, 3), _n(rng, 4, 3)), desc="dim0"),
            Sample((_n(rng, 2, 3), _n(rng, 2, 1), _n(rng, 2, 2)), {"dim": 1}, desc="dim1 x3"),
            Sample((_n(rng, 2, 3), _n(rng, 2, 3)), {"dim": -1}, desc="dim -1"),
            Sample((_n(rng, 17),), desc="single"),
            Sample((_n(rng, 0, 3), _n(rng, 2, 3)), desc="with empty"),
            Sample((_n(rng, 1025), _n(rng, 1023)), desc="large"),
            Sample((_n(rng, 3, 4), _n(rng, 3, 4)), {"dim": 1}, layouts=("T", "s"),
                   desc="T and s")]


def _cat(*xs, dim=0):
    return tgrad.cat(list(xs), dim)


def _np_cat(*xs, dim=0):
    return np.concatenate(xs, axis=dim)


def _stack_samples(rng):
    return [Sample((_n(rng, 2, 3), _n(rng, 2, 3)), desc="dim0"),
            Sample((_n(rng, 2, 3), _n(rng, 2, 3), _n(rng, 2, 3)), {"dim": 2}, desc="dim2"),
            Sample((_n(rng, 2, 3), _n(rng, 2, 3)), {"dim": -2}, desc="dim -2"),
            Sample((_n(rng), _n(rng)), desc="0-d"),
            Sample((_n(rng, 0), _n(rng, 0)), desc="empty"),
            Sample((_n(rng, 1025), _n(rng, 1025)), {"dim": 1}, desc="large"),
            Sample((_n(rng, 3, 4), _n(rng, 3, 4)), layouts=("T", "s"), desc="T and s")]


def _stack(*xs, dim=0):
    return tgrad.stack(list(xs), dim)


def _np_stack(*xs, dim=0):
    return np.stack(xs, axis=dim)


def _split_samples(rng):
    return [Sample((_n(rng, 7, 3), 2), desc="size 2"),
            Sample((_n(rng, 7, 3), [3, 0, 4]), desc="sections"),
            Sample((_n(rng, 3, 7), 3, 1), desc="dim1"),
            Sample((_n(rng, 3, 7), 10, -1), desc="bigger than dim"),
            Sample((_n(rng, 1025), 100), desc="n=1025"),
            Sample((_n(rng, 4, 6), [1, 2, 3], 1), layouts=("T",), desc="T")]


def _np_split(x, s, dim=0):
    n = x.shape[dim]
    if isinstance(s, int):
        cuts = list(range(s, n, s))
    else:
        cuts = list(np.cumsum(s)[:-1])
    return tuple(np.split(x, cuts, axis=dim))


def _chunk_samples(rng):
    return [Sample((_n(rng, 7, 3), 3), desc="7/3"), Sample((_n(rng, 6, 3), 3), desc="6/3"),
            Sample((_n(rng, 4, 3), 3), desc="4/3 -> 2 chunks"),
            Sample((_n(rng, 3, 5), 2, 1), desc="dim1"),
            Sample((_n(rng, 1025), 4), desc="n=1025"),
            Sample((_n(rng, 4, 6), 4, 1), layouts=("s",), desc="s")]


def _np_chunk(x, chunks, dim=0):
    n = x.shape[dim]
    step = -(-n // chunks)
    return tuple(np.split(x, list(range(step, n, step)), axis=dim))


def _narrow_samples(rng):
    return [Sample((_n(rng, 5, 3), 0, 1, 3), desc="dim0"),
            Sample((_n(rng, 5, 3), -1, -2, 2), desc="negative"),
            Sample((_n(rng, 5, 3), 1, 1, 0), desc="empty"),
            Sample((_n(rng, 3, 5), 1, 2, 3), layouts=("T",), desc="T")]


def _np_narrow(x, dim, start, length):
    d = dim % x.ndim
    start = start % x.shape[d] if start < 0 else start
    return np.take(x, np.arange(start, start + length), axis=d)


def _unfold_samples(rng):
    return [Sample((_n(rng, 5, 3), 0, 2, 1), desc="overlapping"),
            Sample((_n(rng, 4, 7), -1, 3, 2), desc="negative dim, step 2"),
            Sample((_n(rng, 17), 0, 4, 5), desc="gaps between windows"),
            Sample((_n(rng, 2, 6, 3), 1, 6, 1), desc="one whole window"),
            Sample((_n(rng, 4, 3), 1, 0, 1), desc="empty windows"),
            Sample((_n(rng, 0, 5), 1, 2, 2), desc="empty"),
            Sample((np.asarray(_n(rng)), 0, 1, 1), desc="0-d"),
            Sample((_n(rng, 6, 5), 0, 3, 1), layouts=("T",), desc="T")]


def _np_unfold(x, dim, size, step):
    """Windows by explicit indices (np.take), not strides."""
    if x.ndim == 0:
        return x.reshape(1)[:size]
    d = dim % x.ndim
    n = (x.shape[d] - size) // step + 1
    idx = np.arange(n)[:, None] * step + np.arange(size)  # (n, size)
    return np.moveaxis(np.take(x, idx, axis=d), d + 1, -1)


def _unbind_samples(rng):
    return [Sample((_n(rng, 3, 2),), desc="dim0"), Sample((_n(rng, 3, 2), 1), desc="dim1"),
            Sample((_n(rng, 2, 3), -1), layouts=("T",), desc="T")]


def _np_unbind(x, dim=0):
    return tuple(np.moveaxis(x, dim, 0))


# ---------------------------------------------------------------------- matmul
def _matmul_samples(rng):
    return [Sample((_n(rng, 5), _n(rng, 5)), desc="1d.1d"),
            Sample((_n(rng, 3, 4), _n(rng, 4, 2)), desc="2d"),
            Sample((_n(rng, 4), _n(rng, 4, 2)), desc="1d.2d"),
            Sample((_n(rng, 3, 4), _n(rng, 4)), desc="2d.1d"),
            Sample((_n(rng, 2, 3, 4), _n(rng, 4, 2)), desc="batched.2d"),
            Sample((_n(rng, 2, 1, 3, 4), _n(rng, 3, 4, 2)), desc="broadcast batches"),
            Sample((_n(rng, 4), _n(rng, 2, 4, 3)), desc="1d.batched"),
            Sample((_n(rng, 3, 0), _n(rng, 0, 2)), desc="k=0"),
            Sample((_n(rng, 0, 3), _n(rng, 3, 2)), desc="m=0"),
            Sample((_n(rng, 1025, 17), _n(rng, 17)), desc="1025x17 . 17"),
            Sample((_n(rng, 1023, 17), _n(rng, 17, 3)), desc="1023x17x3"),
            Sample((_n(rng, 3, 4), _n(rng, 4, 2)), layouts=("T", "T"), desc="T.T"),
            Sample((_n(rng, 3, 4), _n(rng, 4, 2)), layouts=("s", "c"), desc="s.c")]


def _long_k_samples(rng):
    """Reductions of length 1023/1025: float32 accumulation error over K terms exceeds
    PyTorch's default float32 (elementwise) tolerance against a float64 reference, so these
    run in float64/float16/bfloat16 here; tests/test_shape_ops.py checks float32 against
    the rigorous bound K * 2^-24 * sum|a||b|."""
    return [Sample((_n(rng, 1025), _n(rng, 1025)), desc="dot 1025"),
            Sample((_n(rng, 3, 1023), _n(rng, 1023, 2)), desc="3x1023x2"),
            Sample((_n(rng, 2, 1025), _n(rng, 1025, 3)), layouts=("c", "T"), desc="T"),
            Sample((_n(rng, 2, 3, 1025), _n(rng, 1025, 2)), desc="batched"),
            Sample((_n(rng, 2, 5), _n(rng, 5, 2)), desc="small (gradcheck)")]


def _mm_samples(rng):
    return [s for s in _matmul_samples(rng) if s.args[0].ndim == 2 and s.args[1].ndim == 2]


def _bmm_samples(rng):
    return [Sample((_n(rng, 2, 3, 4), _n(rng, 2, 4, 5)), desc="2x3x4.2x4x5"),
            Sample((_n(rng, 1, 1, 1), _n(rng, 1, 1, 1)), desc="ones"),
            Sample((_n(rng, 0, 3, 4), _n(rng, 0, 4, 2)), desc="empty batch"),
            Sample((_n(rng, 2, 3, 4), _n(rng, 2, 4, 5)), layouts=("T", "c"), desc="T")]


# ====================================================================== nn.functional
def _np_softmax(x, dim):
    if x.ndim == 0:
        return np.ones_like(x) if np.isfinite(x) else np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=dim, keepdims=True, initial=-np.inf))
        return e / np.sum(e, axis=dim, keepdims=True)


def _np_log_softmax(x, dim):
    if x.ndim == 0:
        return np.zeros_like(x) if np.isfinite(x) else np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        s = x - np.max(x, axis=dim, keepdims=True, initial=-np.inf)
        return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


def _softmax_samples(rng):
    s = [Sample((_n(rng), 0), desc="0-d"), Sample((_n(rng, 0, 3), 1), desc="empty rows"),
         Sample((_n(rng, 3, 0), 1), desc="rows of 0")]
    s += [Sample((_n(rng, 2, n), -1), desc=f"rows of {n}") for n in SIZES]
    s += [Sample((_n(rng, 3, 4), 0), desc="dim0"),
          Sample((_n(rng, 2, 3, 4), 1), desc="3d dim1"),
          Sample((_n(rng, 4, 3), 1), layouts=("T",), desc="T"),
          Sample((_n(rng, 3, 5), 1), layouts=("s",), desc="sliced"),
          Sample((_n(rng, 1025, 3), 0), layouts=("T",), desc="T large")]
    return s


def _class_targets(rng, shape, n_classes, ignore=0):
    t = rng.integers(0, n_classes, shape).astype(np.int64)
    if ignore and t.size:
        t.reshape(-1)[:ignore] = -100
    return t


def _np_cross_entropy(x, t, reduction="mean", ignore_index=-100):
    axis = 0 if x.ndim == 1 else 1
    keep = t != ignore_index
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        lse = np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m, axis)
        picked = np.squeeze(np.take_along_axis(x, np.expand_dims(np.where(keep, t, 0), axis),
                                               axis=axis), axis)
        loss = np.where(keep, lse - picked, 0.0)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return np.asarray(loss.sum())
        return np.asarray(loss.sum() / np.count_nonzero(keep))


def _ce_samples(rng):
    s = [Sample((_n(rng, 5), _class_targets(rng, (), 5)), desc="1-D input"),
         Sample((_n(rng, 4, 5), _class_targets(rng, (4,), 5, ignore=1)), desc="ignore one"),
         Sample((_n(rng, 0, 3), np.zeros(0, np.int64)), {"reduction": "sum"}, desc="empty"),
         Sample((_n(rng, 0, 3), np.zeros(0, np.int64)), {"reduction": "none"},
                desc="empty none"),
         Sample((_n(rng, 2, 3, 2, 2), _class_targets(rng, (2, 2, 2), 3, ignore=2)),
                desc="spatial"),
         Sample((_n(rng, 3, 4), _class_targets(rng, (3,), 4)), {"ignore_index": 1},
                desc="ignore_index=1")]
    for red in ("mean", "sum", "none"):
        s.append(Sample((_n(rng, 3, 4), _class_targets(rng, (3,), 4)), {"reduction": red},
                        desc=f"reduction={red}"))
    s += [Sample((_n(rng, 2, n), _class_targets(rng, (2,), n)), desc=f"{n} classes")
          for n in SIZES]
    s += [Sample((_n(rng, 4, 3), _class_targets(rng, (4,), 3)), layouts=("T",), desc="T"),
          Sample((_n(rng, 3, 5), _class_targets(rng, (3,), 5)), {"reduction": "none"},
                 layouts=("s",), desc="sliced")]
    return s


def _np_mse(x, y, reduction="mean"):
    d = (x - y) ** 2
    return d if reduction == "none" else np.asarray(d.sum() if reduction == "sum" else d.mean())


def _mse_samples(rng):
    s = [Sample((_n(rng, 3, 4), _n(rng, 3, 4)), {"reduction": r}, desc=r)
         for r in ("mean", "sum", "none")]
    s += [Sample((_n(rng), _n(rng)), desc="0-d"),
          Sample((_n(rng, 0), _n(rng, 0)), {"reduction": "sum"}, desc="empty"),
          Sample((_n(rng, 1025), _n(rng, 1025)), desc="n=1025"),
          Sample((_n(rng, 4, 3), _n(rng, 4, 3)), layouts=("T", "s"), desc="T,s")]
    return s


def _np_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    k = len(normalized_shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    with np.errstate(all="ignore"):
        mean = x.mean(axis=axes, keepdims=True) if x.size else 0.0
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True) if x.size else 0.0
        y = (x - mean) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _ln(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return F.layer_norm(x, normalized_shape, weight, bias, eps)


def _ln_samples(rng):
    s = [Sample((_n(rng, 3, 5), (5,), _n(rng, 5), _n(rng, 5)), desc="affine"),
         Sample((_n(rng, 3, 5), (5,)), desc="no affine"),
         Sample((_n(rng, 3, 5), (5,), _n(rng, 5), None), desc="weight only"),
         Sample((_n(rng, 3, 5), (5,), None, _n(rng, 5)), desc="bias only"),
         Sample((_n(rng, 2, 3, 4), (3, 4), _n(rng, 3, 4), _n(rng, 3, 4)), desc="2 dims"),
         Sample((_n(rng, 4), (4,), _n(rng, 4), _n(rng, 4), 1e-2), desc="1-D eps"),
         Sample((_n(rng, 0, 4), (4,), _n(rng, 4), _n(rng, 4)), desc="empty batch")]
    s += [Sample((_n(rng, 2, n), (n,), _n(rng, n), _n(rng, n)), desc=f"rows of {n}")
          for n in SIZES]
    s += [Sample((_n(rng, 4, 3), (3,), _n(rng, 3), _n(rng, 3)), layouts=("T",), desc="T"),
          Sample((_n(rng, 3, 4), (4,), _n(rng, 4), _n(rng, 4)), layouts=("s", "s"),
                 desc="sliced")]
    return s


def _np_linear(x, w, b=None):
    y = x @ (w.T if w.ndim == 2 else w)
    return y if b is None else y + b


def _linear_samples(rng):
    return [Sample((_n(rng, 3, 4), _n(rng, 2, 4), _n(rng, 2)), desc="2d"),
            Sample((_n(rng, 4), _n(rng, 2, 4), _n(rng, 2)), desc="1-D input"),
            Sample((_n(rng, 2, 3, 4), _n(rng, 5, 4)), desc="3-D no bias"),
            Sample((_n(rng, 3, 4), _n(rng, 4)), desc="1-D weight"),
            Sample((_n(rng, 0, 4), _n(rng, 2, 4), _n(rng, 2)), desc="empty batch"),
            Sample((_n(rng, 1025, 17), _n(rng, 3, 17), _n(rng, 3)), desc="1025 rows"),
            Sample((_n(rng, 4, 3), _n(rng, 2, 3), _n(rng, 2)), layouts=("T", "T"), desc="T")]


def _act_samples(extra=None):
    def gen(rng):
        s = [Sample((np.asarray(_n(rng) * 2),), dict(extra or {}), desc="0-d"),
             Sample((_n(rng, 0),), dict(extra or {}), desc="empty")]
        s += [Sample((_n(rng, n) * 3,), dict(extra or {}), desc=f"n={n}") for n in SIZES]
        s += [Sample((_n(rng, 4, 3) * 3,), dict(extra or {}), layouts=("T",), desc="T"),
              Sample((_n(rng, 3, 5) * 3,), dict(extra or {}), layouts=("s",), desc="s")]
        return s
    return gen


def _np_phi(x):
    return 0.5 * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0)))


def _np_gelu(x, approximate="none"):
    with np.errstate(all="ignore"):
        if approximate == "tanh":
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return x * _np_phi(x)


def _np_silu(x):
    with np.errstate(all="ignore"):
        return x / (1.0 + np.exp(-x))


def _np_softplus(x, beta=1.0, threshold=20.0):
    with np.errstate(all="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _softplus_samples(rng):
    s = _act_samples()(rng)
    s += [Sample((_n(rng, 17) * 3,), {"beta": 2.0, "threshold": 1.0}, desc="beta=2 thr=1"),
          Sample((_n(rng, 17) * 3,), {"beta": 0.5}, desc="beta=0.5")]
    return s


def _dropout_samples(rng):
    return [Sample((_n(rng, 3, 4),), {"p": 0.5, "training": False}, desc="eval"),
            Sample((_n(rng, 17),), {"p": 0.0}, desc="p=0"),
            Sample((_n(rng, 17),), {"p": 1.0}, desc="p=1"),
            Sample((_n(rng, 0),), {"p": 1.0}, desc="empty"),
            Sample((_n(rng, 4, 3),), {"p": 0.3, "training": False}, layouts=("T",),
                   desc="T eval")]


def _np_dropout(x, p=0.5, training=True):
    return x * 0.0 if training and p == 1.0 else x



# ---------------------------------------------------------------- composites (nn/_composite.py)
def _np_elu(x, alpha=1.0):
    with np.errstate(over="ignore"):
        return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


def _loss_samples(extra=None):
    def gen(rng):
        kw = dict(extra or {})
        s = [Sample((_n(rng, 3, 4) * 2, _n(rng, 3, 4)), dict(kw, reduction=r), desc=r)
             for r in ("mean", "sum", "none")]
        return s + [Sample((_n(rng), _n(rng)), kw, desc="0-d"),
                    Sample((_n(rng, 0), _n(rng, 0)), dict(kw, reduction="sum"), desc="empty"),
                    Sample((_n(rng, 1025) * 2, _n(rng, 1025)), kw, desc="n=1025"),
                    Sample((_n(rng, 4, 3), _n(rng, 4, 3)), kw, layouts=("T", "s"), desc="T,s")]
    return gen


def _np_reduce(loss, reduction="mean"):
    return loss if reduction == "none" else np.asarray(loss.sum() if reduction == "sum"
                                                      else loss.mean())


def _np_smooth_l1(x, t, reduction="mean", beta=1.0):
    d = np.abs(x - t)
    return _np_reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _np_huber(x, t, reduction="mean", delta=1.0):
    d = np.abs(x - t)
    return _np_reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _np_bce(x, t, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    return _np_reduce(loss if weight is None else loss * weight, reduction)


def _bce_samples(rng):
    return [Sample((_n(rng, 3, 4), _n(rng, 3, 4)), {"reduction": r}, desc=r)
            for r in ("mean", "sum", "none")] + [
        Sample((_n(rng, 3, 4), _n(rng, 3, 4), _n(rng, 4)), desc="weight"),
        Sample((_n(rng), _n(rng)), desc="0-d"),
        Sample((_n(rng, 1025), _n(rng, 1025)), desc="n=1025"),
        Sample((_n(rng, 4, 3), _n(rng, 4, 3)), layouts=("T", "s"), desc="T,s")]


def _np_sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _bce_logits(x, z, weight=None, pos_weight=None, reduction="mean"):
    return F.binary_cross_entropy_with_logits(x, tgrad.sigmoid(z), weight,
                                              reduction=reduction, pos_weight=pos_weight)


def _np_bce_logits(x, z, weight=None, pos_weight=None, reduction="mean"):
    t = _np_sigmoid(z)
    lw = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * t
    loss = (1 - t) * x + lw * np.logaddexp(0.0, -x)
    return _np_reduce(loss if weight is None else loss * weight, reduction)


def _bce_logits_samples(rng):
    return [Sample((_n(rng, 3, 4) * 3, _n(rng, 3, 4)), {"reduction": r}, desc=r)
            for r in ("mean", "sum", "none")] + [
        Sample((_n(rng, 3, 4) * 3, _n(rng, 3, 4), _n(rng, 4), np.abs(_n(rng, 4)) + 0.5),
               desc="weight, pos_weight"),
        Sample((_n(rng), _n(rng)), desc="0-d"),
        Sample((_n(rng, 1025), _n(rng, 1025)), desc="n=1025"),
        Sample((_n(rng, 4, 3), _n(rng, 4, 3)), layouts=("T", "s"), desc="T,s")]


def _kl(x, z, reduction="mean", log_target=False):
    t = F.softmax(z, -1)
    return F.kl_div(x, t.log() if log_target else t, reduction=reduction, log_target=log_target)


def _np_kl(x, z, reduction="mean", log_target=False):
    e = np.exp(z - z.max(-1, keepdims=True))
    t = e / e.sum(-1, keepdims=True)
    loss = t * (np.log(t) - x)
    if reduction == "batchmean":
        return np.asarray(loss.sum() / (x.shape[0] if x.ndim else 1))
    return _np_reduce(loss, reduction)


def _kl_samples(rng):
    return [Sample((_n(rng, 3, 4), _n(rng, 3, 4)), {"reduction": r}, desc=r)
            for r in ("mean", "sum", "none", "batchmean")] + [
        Sample((_n(rng, 2, 5), _n(rng, 2, 5)), {"log_target": True}, desc="log_target"),
        Sample((_n(rng, 4, 3), _n(rng, 4, 3)), layouts=("T", "s"), desc="T,s")]


def _np_cosine(x1, x2, dim=1, eps=1e-8):
    n1 = np.maximum(np.sqrt((x1 * x1).sum(dim, keepdims=True)), eps)
    n2 = np.maximum(np.sqrt((x2 * x2).sum(dim, keepdims=True)), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _cosine_samples(rng):
    return [Sample((_n(rng, 3, 4), _n(rng, 3, 4)), desc="dim1"),
            Sample((_n(rng, 3, 4), _n(rng, 4)), {"dim": -1}, desc="bcast"),
            Sample((_n(rng, 2, 3, 4), _n(rng, 2, 3, 4)), {"dim": 0}, desc="dim0"),
            Sample((_n(rng, 1025, 2), _n(rng, 1025, 2)), {"dim": 0}, desc="n=1025"),
            Sample((_n(rng, 4, 3), _n(rng, 4, 3)), layouts=("T", "s"), desc="T,s")]


def _np_normalize(x, p=2.0, dim=1, eps=1e-12):
    return x / np.maximum((np.abs(x) ** p).sum(dim, keepdims=True) ** (1.0 / p), eps)


def _normalize_samples(rng):
    return [Sample((_n(rng, 3, 4),), desc="dim1"),
            Sample((_n(rng, 3, 4),), {"p": 1.0, "dim": 0}, desc="p=1 dim0"),
            Sample((_n(rng, 17),), {"dim": 0}, desc="n=17"),
            Sample((_n(rng, 0, 4),), desc="empty"),
            Sample((_n(rng, 4, 3),), {"dim": -1}, layouts=("T",), desc="T")]


def _np_pad(x, pad, value=0.0):
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        x = np.take(x, range(max(-left, 0), x.shape[d] - max(-right, 0)), axis=d)
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(left, 0), max(right, 0))
        x = np.pad(x, widths, constant_values=value)
    return x


def _pad(x, pad, value=0.0):
    return F.pad(x, pad, value=value)


def _pad_samples(rng):
    return [Sample((_n(rng, 3, 4), (1, 2)), desc="last dim"),
            Sample((_n(rng, 2, 3, 4), (1, 0, 2, 1), 1.5), desc="two dims, value"),
            Sample((_n(rng, 3, 4), (-1, 1, 1, -2)), desc="crop and pad"),
            Sample((_n(rng, 17), (0, 0)), desc="nothing"),
            Sample((_n(rng, 0, 3), (1, 1)), desc="empty"),
            Sample((_n(rng, 4, 3), (2, 2)), layouts=("T",), desc="T")]


def _np_embedding(idx, w, padding_idx=None):
    return w[idx]


def _embedding_samples(rng):
    return [Sample((rng.integers(0, 5, (3, 4)), _n(rng, 5, 3)), desc="2-D indices"),
            Sample((np.asarray(2), _n(rng, 5, 3)), desc="0-d index"),
            Sample((np.zeros(0, np.int64), _n(rng, 5, 3)), desc="empty"),
            Sample((rng.integers(0, 3, (4,)), _n(rng, 4, 3)), layouts=("c", "T"), desc="T")]

def _bag_samples(mode):
    def samples(rng):
        out = [Sample((rng.integers(0, 6, 9), _n(rng, 6, 3), np.array([0, 4, 4, 7])),
                      {"mode": mode}, desc="offsets, an empty bag"),
               Sample((rng.integers(0, 5, (3, 4)), _n(rng, 5, 2)), {"mode": mode},
                      desc="2-D input"),
               Sample((np.array([0, 2, 0, 0, 3]), _n(rng, 4, 3), np.array([0, 2, 3, 5])),
                      {"mode": mode, "padding_idx": 0, "include_last_offset": True},
                      desc="padding, last offset"),
               Sample((rng.integers(0, 6, (2, 3)), _n(rng, 6, 4)), {"mode": mode},
                      layouts=("c", "T"), desc="T weight")]
        if mode == "sum":
            out.append(Sample((rng.integers(0, 6, 7), _n(rng, 6, 3), np.array([0, 3]),
                               _n(rng, 7)), {"mode": "sum"}, desc="per_sample_weights"))
        return out
    return samples


def _np_embedding_bag(idx, w, offsets=None, psw=None, mode="mean", padding_idx=None,
                      include_last_offset=False):
    """Bag by bag with Python slices."""
    if idx.ndim == 2:
        bags = [list(r) for r in idx]
        weights = [list(r) for r in psw] if psw is not None else None
    else:
        ends = list(offsets[1:]) + ([] if include_last_offset else [len(idx)])
        starts = list(offsets[:-1] if include_last_offset else offsets)
        bags = [list(idx[a:b]) for a, b in zip(starts, ends)]
        weights = [list(psw[a:b]) for a, b in zip(starts, ends)] if psw is not None else None
    out = np.zeros((len(bags), w.shape[1]))
    for b, bag in enumerate(bags):
        rows = [w[i] * (weights[b][j] if weights else 1.0) for j, i in enumerate(bag)
                if i != padding_idx]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](rows, axis=0)
    return out


def _bilinear_samples(rng):
    return [Sample((_n(rng, 4, 3), _n(rng, 4, 2), _n(rng, 5, 3, 2), _n(rng, 5)), desc="bias"),
            Sample((_n(rng, 2, 3, 3), _n(rng, 2, 3, 4), _n(rng, 2, 3, 4)), desc="batch dims"),
            Sample((_n(rng, 3), _n(rng, 1), _n(rng, 1, 3, 1)), desc="1-D"),
            Sample((_n(rng, 0, 3), _n(rng, 0, 2), _n(rng, 2, 3, 2)), desc="empty batch"),
            Sample((_n(rng, 4, 3), _n(rng, 4, 2), _n(rng, 2, 3, 2)), layouts=("T", "c", "s"),
                   desc="views")]


def _np_bilinear(x1, x2, w, b=None):
    y = np.einsum("...i,oij,...j->...o", x1, w, x2)
    return y if b is None else y + b


OP_DB: list = [
    # views and shape ops
    OpSpec("reshape", tgrad.reshape, np.reshape, _reshape_samples),
    OpSpec("view", lambda x, s: x.view(s), np.reshape, _view_samples),
    OpSpec("permute", tgrad.permute, np.transpose, _permute_samples),
    OpSpec("transpose", tgrad.transpose, lambda x, a, b: np.swapaxes(x, a, b) if x.ndim else x,
           _transpose_samples),
    OpSpec("t", tgrad.t, lambda x: x.T, _matrixish),
    OpSpec("T", lambda x: x.T, lambda x: x.T, _matrixish),
    OpSpec("mT", lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2),
           lambda rng: [s for s in _matrixish(rng) if s.args[0].ndim >= 2]),
    OpSpec("expand", lambda x, s: x.expand(*s),
           lambda x, s: np.broadcast_to(x, tuple(x.shape[i - len(s) + x.ndim] if v == -1 else v
                                                 for i, v in enumerate(s))),
           _expand_samples),
    OpSpec("broadcast_to", tgrad.broadcast_to, np.broadcast_to,
           lambda rng: [s for s in _expand_samples(rng) if -1 not in s.args[1]]),
    OpSpec("squeeze", tgrad.squeeze, _np_squeeze, _squeeze_samples),
    OpSpec("unsqueeze", tgrad.unsqueeze, np.expand_dims, _unsqueeze_samples),
    OpSpec("flatten", tgrad.flatten, _np_flatten, _flatten_samples),
    OpSpec("contiguous", lambda x: x.contiguous(), lambda x: x, _matrixish),
    OpSpec("movedim", tgrad.movedim, np.moveaxis, _movedim_samples),
    OpSpec("getitem_basic", _basic_getitem, _basic_getitem, _basic_index_samples),
    OpSpec("getitem_int_array", _int_getitem, _int_getitem, _int_index_samples),
    OpSpec("getitem_mixed_arrays", _mixed_getitem, _mixed_getitem, _mixed_samples),
    OpSpec("getitem_bool_mask", _int_getitem, _int_getitem, _mask_samples),
    OpSpec("cat", _cat, _np_cat, _cat_samples),
    OpSpec("stack", _stack, _np_stack, _stack_samples),
    OpSpec("split", tgrad.split, _np_split, _split_samples),
    OpSpec("chunk", tgrad.chunk, _np_chunk, _chunk_samples),
    OpSpec("narrow", tgrad.narrow, _np_narrow, _narrow_samples),
    OpSpec("unbind", tgrad.unbind, _np_unbind, _unbind_samples),
    OpSpec("unfold", lambda x, d, n, s: x.unfold(d, n, s), _np_unfold, _unfold_samples),
    *[OpSpec(f"nn.embedding_bag_{m}",
             lambda i, w, off=None, psw=None, **kw: F.embedding_bag(i, w, off,
                                                                   per_sample_weights=psw, **kw),
             _np_embedding_bag, _bag_samples(m)) for m in ("sum", "mean", "max")],
    # matrix products
    OpSpec("matmul", tgrad.matmul, np.matmul, _matmul_samples),
    OpSpec("matmul_operator", lambda a, b: a @ b, np.matmul, _matmul_samples),
    OpSpec("matmul_long_k", tgrad.matmul, np.matmul, _long_k_samples,
           dtypes=("float64", "float16", "bfloat16")),
    OpSpec("mm", tgrad.mm, np.matmul, _mm_samples),
    OpSpec("bmm", tgrad.bmm, np.matmul, _bmm_samples),
    # nn.functional
    OpSpec("nn.softmax", F.softmax, _np_softmax, _softmax_samples),
    OpSpec("nn.log_softmax", F.log_softmax, _np_log_softmax, _softmax_samples),
    OpSpec("nn.cross_entropy", F.cross_entropy, _np_cross_entropy, _ce_samples),
    OpSpec("nn.mse_loss", F.mse_loss, _np_mse, _mse_samples),
    OpSpec("nn.layer_norm", _ln, _np_layer_norm, _ln_samples),
    OpSpec("nn.linear", F.linear, _np_linear, _linear_samples),
    OpSpec("nn.bilinear", F.bilinear, _np_bilinear, _bilinear_samples),
    OpSpec("nn.relu", F.relu, lambda x: np.maximum(x, 0.0), _act_samples()),
    OpSpec("nn.gelu", F.gelu, _np_gelu, _act_samples()),
    OpSpec("nn.gelu_tanh", F.gelu, _np_gelu, _act_samples({"approximate": "tanh"})),
    OpSpec("nn.silu", F.silu, _np_silu, _act_samples()),
    OpSpec("nn.softplus", F.softplus, _np_softplus, _softplus_samples),
    OpSpec("nn.dropout", F.dropout, _np_dropout, _dropout_samples),
    # nn.functional composites
    OpSpec("nn.leaky_relu", F.leaky_relu, lambda x, s=0.01: np.where(x > 0, x, s * x),
           _act_samples()),
    OpSpec("nn.leaky_relu_slope", F.leaky_relu, lambda x, s: np.where(x > 0, x, s * x),
           lambda rng: [Sample((_n(rng, 17) * 3, 0.2), desc="slope 0.2")]),
    OpSpec("nn.elu", F.elu, _np_elu, _act_samples()),
    OpSpec("nn.elu_alpha", F.elu, _np_elu, _act_samples({"alpha": 0.5})),
    OpSpec("nn.selu", F.selu, lambda x: _SELU[1] * _np_elu(x, _SELU[0]), _act_samples()),
    OpSpec("nn.logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0.0, -x), _act_samples()),
    OpSpec("nn.hardtanh", F.hardtanh, lambda x: np.clip(x, -1.0, 1.0), _act_samples()),
    OpSpec("nn.relu6", F.relu6, lambda x: np.clip(x, 0.0, 6.0), _act_samples()),
    OpSpec("nn.mish", F.mish, lambda x: x * np.tanh(np.logaddexp(0.0, x)), _act_samples()),
    OpSpec("nn.glu", F.glu, lambda x, dim=-1: np.split(x, 2, dim)[0] * _np_sigmoid(
        np.split(x, 2, dim)[1]), lambda rng: [Sample((_n(rng, 3, 4),), desc="last"),
                                             Sample((_n(rng, 4, 3),), {"dim": 0}, desc="dim0"),
                                             Sample((_n(rng, 3, 2),), layouts=("T",), desc="T")]),
    OpSpec("nn.softmin", F.softmin, lambda x, dim: _np_softmax(-x, dim), _softmax_samples),
    OpSpec("nn.l1_loss", F.l1_loss, lambda x, t, reduction="mean": _np_reduce(
        np.abs(x - t), reduction), _loss_samples()),
    OpSpec("nn.smooth_l1_loss", F.smooth_l1_loss, _np_smooth_l1, _loss_samples()),
    OpSpec("nn.smooth_l1_loss_beta", F.smooth_l1_loss, _np_smooth_l1,
           _loss_samples({"beta": 0.5})),
    OpSpec("nn.huber_loss", F.huber_loss, _np_huber, _loss_samples({"delta": 0.7})),
    OpSpec("nn.binary_cross_entropy", F.binary_cross_entropy, _np_bce, _bce_samples,
           domain=(0.0, 1.0), nan_inf=False),  # NaN/inf inputs raise (out of [0, 1])
    OpSpec("nn.bce_with_logits", _bce_logits, _np_bce_logits, _bce_logits_samples),
    OpSpec("nn.kl_div", _kl, _np_kl, _kl_samples),
    OpSpec("nn.cosine_similarity", F.cosine_similarity, _np_cosine, _cosine_samples),
    OpSpec("nn.normalize", F.normalize, _np_normalize, _normalize_samples),
    OpSpec("nn.pad", _pad, _np_pad, _pad_samples),
    OpSpec("nn.embedding", F.embedding, _np_embedding, _embedding_samples),
]


# ====================================================================== conv, pooling, norms
def _np_windows(x, kernel, stride, dilation):
    """(N, C, oh, ow, kh, kw) windows of an already padded (N, C, Hp, Wp) array (NumPy's
    sliding_window_view, independent of tgrad's gather indices)."""
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    v = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
    return v[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]


def _pair2(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    stride, dilation = _pair2(stride), _pair2(dilation)
    kernel = w.shape[2:]
    if padding == "same":
        tot = [d * (k - 1) for k, d in zip(kernel, dilation)]
        pads = [(t // 2, t - t // 2) for t in tot]
    else:
        pads = [(p, p) for p in _pair2(0 if padding == "valid" else padding)]
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    win = _np_windows(x, kernel, stride, dilation)  # (N, C, oh, ow, kh, kw)
    n, c = win.shape[:2]
    win = win.reshape((n, groups, c // groups) + win.shape[2:])
    wg = w.reshape((groups, w.shape[0] // groups) + w.shape[1:])
    y = np.einsum("ngcyxhw,gochw->ngoyx", win, wg).reshape((n, w.shape[0]) + win.shape[3:5])
    if b is not None:
        y = y + b[:, None, None]
    return y[0] if unbatched else y


def _np_conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    pad = padding if isinstance(padding, str) else (0, padding)
    y = _np_conv2d(x[..., None, :], w[:, :, None, :], b, (1, stride), pad, (1, dilation),
                   groups)
    return y[..., 0, :]


def _conv2d_samples(rng):
    return [Sample((_n(rng, 1, 2, 4, 4), _n(rng, 3, 2, 2, 2), _n(rng, 3)), desc="basic"),
            Sample((_n(rng, 2, 2, 5, 4), _n(rng, 2, 2, 3, 2)), {"stride": (2, 1),
                   "padding": 1, "dilation": (1, 2)}, desc="stride pad dilation"),
            Sample((_n(rng, 1, 4, 3, 3), _n(rng, 2, 2, 2, 2), _n(rng, 2)), {"groups": 2},
                   desc="groups"),
            Sample((_n(rng, 2, 3, 3), _n(rng, 2, 2, 3, 1)), {"padding": "same"},
                   desc="unbatched same"),
            Sample((_n(rng, 0, 2, 4, 4), _n(rng, 3, 2, 2, 2)), desc="empty batch"),
            Sample((_n(rng, 1, 1, 17, 1), _n(rng, 1, 1, 17, 1)), desc="kernel = input 17"),
            Sample((_n(rng, 1, 2, 4, 5), _n(rng, 2, 2, 2, 2)), layouts=("T", "s"),
                   desc="T input, sliced weight")]


def _np_conv3d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Output voxel by voxel: the window's elements times the kernel, summed."""
    unbatched = x.ndim == 4
    x = x[None] if unbatched else x
    st, dl = (stride,) * 3 if isinstance(stride, int) else stride, \
        (dilation,) * 3 if isinstance(dilation, int) else dilation
    k = w.shape[2:]
    if padding == "same":
        pads = [(d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2) for kk, d in zip(k, dl)]
    else:
        pads = [(p, p) for p in ((padding,) * 3 if isinstance(padding, int) else padding)]
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    out = [(x.shape[2 + i] - dl[i] * (k[i] - 1) - 1) // st[i] + 1 for i in range(3)]
    n, c = x.shape[:2]
    cg, og = c // groups, w.shape[0] // groups
    y = np.zeros((n, w.shape[0], *out), np.result_type(x, w))  # complex inputs too
    for o in range(w.shape[0]):
        g = o // og
        for a, bb, cc in np.ndindex(*out):
            patch = x[:, g * cg:(g + 1) * cg,
                      a * st[0]:a * st[0] + dl[0] * (k[0] - 1) + 1:dl[0],
                      bb * st[1]:bb * st[1] + dl[1] * (k[1] - 1) + 1:dl[1],
                      cc * st[2]:cc * st[2] + dl[2] * (k[2] - 1) + 1:dl[2]]
            y[:, o, a, bb, cc] = (patch * w[o]).reshape(n, -1).sum(-1)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1, 1)
    return y[0] if unbatched else y


def _conv3d_samples(rng):
    return [Sample((_n(rng, 1, 2, 3, 3, 3), _n(rng, 2, 2, 2, 2, 2), _n(rng, 2)), desc="basic"),
            Sample((_n(rng, 2, 4, 4, 5, 3), _n(rng, 2, 2, 2, 3, 1)), {"stride": (1, 2, 1),
                   "padding": 1, "dilation": (2, 1, 1), "groups": 2}, desc="all args"),
            Sample((_n(rng, 2, 3, 3, 2), _n(rng, 1, 2, 3, 1, 2)), {"padding": "same"},
                   desc="unbatched same"),
            Sample((_n(rng, 1, 1, 2, 2, 3), _n(rng, 1, 1, 1, 2, 2)), layouts=("T", "c"),
                   desc="T")]


def _np_pool_size(size, k, s, p, ceil_mode, d=1):
    """PyTorch's pooling output size along one dim (ceil mode drops a last window that
    would start in the right padding)."""
    num = size + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil_mode else num // s) + 1
    return o - 1 if ceil_mode and (o - 1) * s >= size + p else o


def _np_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, kind="max",
               count_include_pad=True, return_indices=False):
    """Window by window (dilation 1): max (first maximum, -inf padding, its flat D H W
    position) or mean (zero padding; divisor with or without the padding)."""
    unbatched = x.ndim == 4
    x = x[None] if unbatched else x
    k = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
    st = k if stride is None else ((stride,) * 3 if isinstance(stride, int) else stride)
    pd = (padding,) * 3 if isinstance(padding, int) else tuple(padding)
    sizes = x.shape[2:]
    outs = [_np_pool_size(n_, kk, ss, pp, ceil_mode) for n_, kk, ss, pp in zip(sizes, k, st, pd)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    idx = np.zeros(x.shape[:2] + tuple(outs), np.int64)
    for cell in np.ndindex(*outs):
        lo = [c * ss - pp for c, ss, pp in zip(cell, st, pd)]
        hi_pad = [min(a + kk, n_ + pp) for a, kk, n_, pp in zip(lo, k, sizes, pd)]
        box = tuple(slice(max(a, 0), min(a + kk, n_)) for a, kk, n_ in zip(lo, k, sizes))
        win = x[(Ellipsis,) + box].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            j = np.argmax(win, -1)
            y[(Ellipsis,) + cell] = np.take_along_axis(win, j[..., None], -1)[..., 0]
            pos = np.arange(int(np.prod(sizes))).reshape(sizes)[box].ravel()
            idx[(Ellipsis,) + cell] = pos[j]
        else:
            count = (np.prod([b - a for a, b in zip(lo, hi_pad)]) if count_include_pad
                     else win.shape[-1])
            y[(Ellipsis,) + cell] = win.sum(-1) / count
    if unbatched:
        y, idx = y[0], idx[0]
    return (y, idx) if return_indices else y


def _pool3d_samples(rng):
    return [Sample((_n(rng, 1, 2, 4, 4, 4), 2), desc="2x2x2"),
            Sample((_n(rng, 2, 3, 5, 4), (3, 2, 2)), {"stride": (2, 1, 2), "padding": (1, 1, 0),
                   "ceil_mode": True}, desc="unbatched, pad, ceil"),
            Sample((_n(rng, 1, 1, 3, 2, 2), (2, 2, 2)), {"stride": 1}, desc="small (gradcheck)")]


def _np_max_unpool(x, idx, kernel_size, stride=None, padding=0, output_size=None,
                   spatial=2):
    """Value by value: out[n, c].flat[idx[n, c, ...]] = x[n, c, ...]."""
    unbatched = x.ndim == spatial + 1
    x, idx = (x[None], idx[None]) if unbatched else (x, idx)
    k = (kernel_size,) * spatial if isinstance(kernel_size, int) else tuple(kernel_size)
    st = k if stride is None else ((stride,) * spatial if isinstance(stride, int) else stride)
    pd = (padding,) * spatial if isinstance(padding, int) else tuple(padding)
    out = tuple(output_size)[-spatial:] if output_size is not None else tuple(
        (n - 1) * s - 2 * p + kk for n, s, p, kk in zip(x.shape[2:], st, pd, k))
    y = np.zeros(x.shape[:2] + (int(np.prod(out)),))
    for n, c in np.ndindex(*x.shape[:2]):
        y[n, c, idx[n, c].ravel()] = x[n, c].ravel()
    y = y.reshape(x.shape[:2] + out)
    return y[0] if unbatched else y


def _unpool_samples(spatial):
    def samples(rng):
        def case(shape, out_plane, **kw):
            n_in = int(np.prod(shape[-spatial:]))
            lead = shape[:-spatial]
            idx = np.stack([rng.choice(out_plane, n_in, replace=False)
                            for _ in range(int(np.prod(lead)))]).reshape(shape)
            return _n(rng, *shape), idx
        k = 2
        shape = (1, 2) + (3,) * spatial
        x, i = case(shape, 6 ** spatial)
        xs, isml = case((1, 1) + (2,) * spatial, 4 ** spatial)
        xo, io = case((2,) + (2,) * spatial, 5 ** spatial)
        return [Sample((x, i, k), desc="k=2"),
                Sample((xs, isml, k), desc="small (gradcheck)"),
                Sample((xo, io, k), {"output_size": (5,) * spatial}, desc="unbatched, size")]
    return samples


def _np_conv_transpose3d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    """Each input voxel times the kernel, added into the full output, then cropped."""
    unbatched = x.ndim == 4
    x = x[None] if unbatched else x

    def t3(v):
        return (v,) * 3 if isinstance(v, int) else tuple(v)
    st, pd, op, dl = t3(stride), t3(padding), t3(output_padding), t3(dilation)
    cin, cog = w.shape[0], w.shape[1]
    k = w.shape[2:]
    out = [(x.shape[2 + i] - 1) * st[i] - 2 * pd[i] + dl[i] * (k[i] - 1) + op[i] + 1
           for i in range(3)]
    full = np.zeros((x.shape[0], cog * groups) + tuple(o + 2 * p for o, p in zip(out, pd)),
                    dtype=np.result_type(x, w))  # complex operands: complex
    cg = cin // groups
    for ci in range(cin):
        g = ci // cg
        for i in np.ndindex(*x.shape[2:]):
            for kk in np.ndindex(*k):
                pos = tuple(i[a] * st[a] + kk[a] * dl[a] for a in range(3))
                if all(p < full.shape[2 + a] for a, p in enumerate(pos)):
                    full[(slice(None), slice(g * cog, (g + 1) * cog)) + pos] += \
                        x[(slice(None), ci) + i][:, None] * w[(ci, slice(None)) + kk]
    y = full[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(pd, out))]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1, 1)
    return y[0] if unbatched else y


def _conv_t3d_samples(rng):
    return [Sample((_n(rng, 1, 2, 2, 2, 3), _n(rng, 2, 3, 2, 2, 1), _n(rng, 3)), desc="basic"),
            Sample((_n(rng, 1, 4, 2, 3, 2), _n(rng, 4, 1, 2, 1, 2)),
                   {"stride": (2, 1, 2), "padding": (1, 0, 0), "output_padding": (1, 0, 1),
                    "groups": 2, "dilation": (1, 2, 1)}, desc="all args"),
            Sample((_n(rng, 1, 2, 1, 2), _n(rng, 1, 2, 1, 2, 2)), {"stride": 2},
                   desc="unbatched (gradcheck)")]


def _conv1d_samples(rng):
    return [Sample((_n(rng, 2, 2, 6), _n(rng, 3, 2, 3), _n(rng, 3)), desc="basic"),
            Sample((_n(rng, 1, 4, 7), _n(rng, 2, 2, 2)), {"stride": 2, "padding": 1,
                   "dilation": 2, "groups": 2}, desc="all args"),
            Sample((_n(rng, 2, 1025), _n(rng, 1, 2, 3)), {"padding": "same"},
                   desc="unbatched 1025 same"),
            Sample((_n(rng, 1, 2, 5), _n(rng, 2, 2, 2)), layouts=("s",), desc="sliced")]


def _np_max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                   return_indices=False):
    """Max over windows with -inf padding; indices: the first maximum's h * W + w."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    k, d, p = _pair2(kernel_size), _pair2(dilation), _pair2(padding)
    s = k if stride is None else _pair2(stride)
    h, w = x.shape[2:]
    outs, extra = [], []
    for size, kk, ss, dd, pp in zip((h, w), k, s, d, p):
        o = _np_pool_size(size, kk, ss, pp, ceil_mode, dd)
        outs.append(o)
        extra.append(max(0, (o - 1) * ss + dd * (kk - 1) + 1 - (size + 2 * pp)))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0] + extra[0]), (p[1], p[1] + extra[1])],
                constant_values=-np.inf)
    win = _np_windows(xp, k, s, d)[:, :, :outs[0], :outs[1]]
    flat = win.reshape(win.shape[:4] + (-1,))
    y = flat.max(-1)
    if not return_indices:
        return y[0] if unbatched else y
    a = flat.argmax(-1)  # NaN: NumPy's argmax takes the first NaN
    ky, kx = a // k[1], a % k[1]
    oy = np.arange(outs[0])[:, None] * s[0]
    ox = np.arange(outs[1])[None, :] * s[1]
    idx = (oy + ky * d[0] - p[0]) * w + ox + kx * d[1] - p[1]
    return (y[0], idx[0]) if unbatched else (y, idx)


def _np_max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                   return_indices=False):
    r = _np_max_pool2d(x[..., None, :], (1, kernel_size),
                       None if stride is None else (1, stride), (0, padding), (1, dilation),
                       ceil_mode, return_indices)
    return tuple(t[..., 0, :] for t in r) if return_indices else r[..., 0, :]


def _max_pool2d_samples(rng):
    return [Sample((_n(rng, 1, 2, 4, 4), 2), desc="2x2"),
            Sample((_n(rng, 2, 1, 5, 5), 3), {"stride": 2, "padding": 1, "ceil_mode": True},
                   desc="ceil pad"),
            Sample((_n(rng, 1, 2, 5, 6), (2, 3)), {"stride": (1, 2), "dilation": (2, 1)},
                   desc="dilation"),
            Sample((_n(rng, 2, 3, 3), 2), {"return_indices": True}, desc="indices"),
            Sample((_n(rng, 1, 1, 17, 1), (17, 1)), desc="17x1"),
            Sample((_n(rng, 1, 2, 4, 5), 2), layouts=("T",), desc="T")]


def _max_pool1d_samples(rng):
    return [Sample((_n(rng, 2, 2, 7), 3), {"stride": 2, "padding": 1, "ceil_mode": True,
                   "return_indices": True}, desc="ceil pad indices"),
            Sample((_n(rng, 1, 1025), 2), desc="1025"),
            Sample((_n(rng, 1, 2, 6), 2), {"dilation": 2}, layouts=("s",), desc="sliced")]


def _np_avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                   count_include_pad=True, divisor_override=None):
    """Loops over output positions with PyTorch's window clipping and divisor rules."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    k, p = _pair2(kernel_size), _pair2(padding)
    s = k if stride is None else _pair2(stride)
    h, w = x.shape[2:]
    outs = []
    for size, kk, ss, pp in zip((h, w), k, s, p):
        outs.append(_np_pool_size(size, kk, ss, pp, ceil_mode))
    y = np.zeros(x.shape[:2] + tuple(outs))
    for i in range(outs[0]):
        for j in range(outs[1]):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
            pool = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            div = divisor_override or (pool if count_include_pad else (h1 - h0) * (w1 - w0))
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3)) / div
    return y[0] if unbatched else y


def _np_avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                   count_include_pad=True):
    return _np_avg_pool2d(x[..., None, :], (1, kernel_size),
                          None if stride is None else (1, stride), (0, padding), ceil_mode,
                          count_include_pad)[..., 0, :]


def _avg_pool2d_samples(rng):
    return [Sample((_n(rng, 1, 2, 4, 4), 2), desc="2x2"),
            Sample((_n(rng, 2, 1, 5, 5), 3), {"stride": 2, "padding": 1, "ceil_mode": True},
                   desc="ceil pad"),
            Sample((_n(rng, 1, 1, 5, 5), 3), {"stride": 2, "padding": 1,
                   "count_include_pad": False, "ceil_mode": True}, desc="exclude pad"),
            Sample((_n(rng, 2, 4, 4), (2, 3)), {"stride": 1, "divisor_override": 5},
                   desc="divisor"),
            Sample((_n(rng, 1, 1, 1, 17), (1, 17)), desc="1x17"),
            Sample((_n(rng, 1, 2, 4, 5), 2), layouts=("T",), desc="T")]


def _avg_pool1d_samples(rng):
    return [Sample((_n(rng, 2, 2, 7), 3), {"stride": 2, "padding": 1, "ceil_mode": True,
                   "count_include_pad": False}, desc="ceil exclude pad"),
            Sample((_n(rng, 1, 1025), 4), desc="1025")]


def _np_adaptive_avg_pool(x, output_size, spatial=2):
    sizes = x.shape[x.ndim - spatial:]
    outs = (output_size,) * spatial if isinstance(output_size, int) else output_size
    outs = tuple(s if o is None else o for o, s in zip(outs, sizes))
    y = x
    for i, (size, o) in enumerate(zip(sizes, outs)):
        ax = x.ndim - spatial + i
        parts = [np.take(y, range(j * size // o, -(-(j + 1) * size // o)), axis=ax)
                 .mean(axis=ax, keepdims=True) for j in range(o)]
        y = np.concatenate(parts, axis=ax) if parts else np.take(y, [], axis=ax)
    return y


def _np_adaptive_max_pool(x, output_size, return_indices=False, spatial=2):
    """Window by window: the first maximum (NaN first) and its flat position."""
    sizes = x.shape[x.ndim - spatial:]
    outs = (output_size,) * spatial if isinstance(output_size, int) else output_size
    outs = tuple(s if o is None else o for o, s in zip(outs, sizes))
    lead = x.shape[:x.ndim - spatial]
    y = np.zeros(lead + outs)
    idx = np.zeros(lead + outs, np.int64)
    windows = [[(j * n // o, -(-(j + 1) * n // o)) for j in range(o)] for n, o in zip(sizes,
                                                                                      outs)]
    for cell in np.ndindex(*outs):
        box = tuple(slice(*windows[d][c]) for d, c in enumerate(cell))
        flat_pos = np.arange(int(np.prod(sizes))).reshape(sizes)[box].ravel()
        vals = x[(Ellipsis,) + box].reshape(lead + (-1,))
        nan = np.isnan(vals)
        k = np.where(nan.any(-1), nan.argmax(-1), np.argmax(np.where(nan, -np.inf, vals), -1))
        y[(Ellipsis,) + cell] = np.take_along_axis(vals, k[..., None], -1)[..., 0]
        idx[(Ellipsis,) + cell] = flat_pos[k]
    return (y, idx) if return_indices else y


def _adaptive_max_samples(rng):
    return [Sample((_n(rng, 1, 2, 5, 7), (3, 4)), desc="5x7 -> 3x4"),
            Sample((_n(rng, 2, 3, 3), 1), {"return_indices": True}, desc="global, indices"),
            Sample((_n(rng, 1, 1, 3, 4), (5, None)), {"return_indices": True},
                   desc="upsample, None"),
            Sample((_n(rng, 1, 2, 4, 3), 2), layouts=("T",), desc="T")]


def _adaptive_max1d_samples(rng):
    return [Sample((_n(rng, 2, 3, 7), 3), {"return_indices": True}, desc="7 -> 3"),
            Sample((_n(rng, 2, 17), 5), desc="17 -> 5, unbatched"),
            Sample((_n(rng, 1, 2, 5), 3), desc="small, overlapping windows")]


def _np_lp_pool(x, p, k, stride=None, ceil_mode=False, spatial=2):
    """Window sums of x^p by explicit loops (no ceil_mode in the samples), then ^(1/p) (NaN
    for a negative sum, as PyTorch's sign(s) relu(|s|) = s gives)."""
    ks = (k,) * spatial if isinstance(k, int) else tuple(k)
    st = ks if stride is None else ((stride,) * spatial if isinstance(stride, int) else stride)
    sizes = x.shape[x.ndim - spatial:]
    outs = tuple((n - kk) // ss + 1 for n, kk, ss in zip(sizes, ks, st))
    y = np.zeros(x.shape[:x.ndim - spatial] + outs)
    for cell in np.ndindex(*outs):
        box = tuple(slice(c * ss, c * ss + kk) for c, ss, kk in zip(cell, st, ks))
        y[(Ellipsis,) + cell] = (x[(Ellipsis,) + box] ** p).reshape(
            x.shape[:x.ndim - spatial] + (-1,)).sum(-1)
    return np.power(y, 1.0 / p)


def _lp_pool2d_samples(rng):
    return [Sample((_n(rng, 1, 2, 4, 5), 2, 2), desc="p=2, 2x2"),
            Sample((np.abs(_n(rng, 2, 5, 4)) + 0.1, 3.0, (2, 3)), {"stride": 1},
                   desc="p=3, unbatched"),
            Sample((_n(rng, 1, 1, 4, 4), 2, 2), layouts=("T",), desc="T")]


def _lp_pool1d_samples(rng):
    return [Sample((_n(rng, 2, 3, 7), 2, 3), {"stride": 2}, desc="p=2"),
            Sample((np.abs(_n(rng, 1, 5)) + 0.1, 1.5, 2), desc="p=1.5")]


def _np_lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    div = np.zeros_like(x)
    for ch in range(c):
        lo, hi = ch - size // 2, ch + (size - 1) // 2
        div[:, ch] = (x[:, max(lo, 0):min(hi, c - 1) + 1] ** 2).sum(1) / size
    return x / (k + alpha * div) ** beta


def _lrn_samples(rng):
    return [Sample((_n(rng, 2, 5, 3), 3), desc="size 3"),
            Sample((_n(rng, 1, 4, 2, 3), 2, 0.5, 0.6, 2.0), desc="size 2, 4-d"),
            Sample((_n(rng, 1, 6, 17), 5, 0.1), desc="size 5, L=17"),
            Sample((_n(rng, 2, 3, 4), 3, 0.2), layouts=("T",), desc="T")]


def _np_grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """PyTorch's grid_sampler_2d / grid_sampler_3d, point by point in Python floats (written
    from its documented rules: unnormalize, pad, then nearest / (tri)linear / bicubic)."""
    n, c, *sp = x.shape
    k = len(sp)
    out = np.zeros((n, c) + grid.shape[1:-1])

    def unnorm(v, size):
        return (v + 1) / 2 * (size - 1) if align_corners else ((v + 1) * size - 1) / 2

    def reflect(v, lo2, hi2):
        if lo2 == hi2:
            return 0.0
        lo, span = lo2 / 2, (hi2 - lo2) / 2
        d = abs(v - lo)
        extra, flips = math.fmod(d, span), math.floor(d / span)
        return extra + lo if flips % 2 == 0 else span - extra + lo

    def pad(v, size):
        if padding_mode == "reflection":
            v = reflect(v, 0, 2 * (size - 1)) if align_corners else reflect(v, -1, 2 * size - 1)
        if padding_mode in ("border", "reflection"):
            v = min(max(v, 0), size - 1)
        return v

    def pix(b, idx):  # idx in dim order (D, H, W) / (H, W)
        if all(0 <= i < s for i, s in zip(idx, sp)):
            return x[(b, slice(None)) + tuple(idx)]
        return np.zeros(c)

    def cubic(t):  # Keys' cubic convolution, A = -0.75, taps floor - 1 .. floor + 2
        a = -0.75

        def k1(v):
            return ((a + 2) * v - (a + 3)) * v * v + 1

        def k2(v):
            return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
        return [k2(t + 1), k1(t), k1(1 - t), k2(2 - t)]

    for pt in np.ndindex(n, *grid.shape[1:-1]):
        b = pt[0]
        # grid's last axis lists (x, y[, z]) = dims (W, H[, D]): reverse into dim order
        u = [unnorm(grid[pt][k - 1 - d], sp[d]) for d in range(k)]
        if mode == "bicubic":
            fy, fx = math.floor(u[0]), math.floor(u[1])
            wy, wx = cubic(u[0] - fy), cubic(u[1] - fx)
            val = np.zeros(c)
            for i in range(4):
                for j in range(4):
                    yi, xj = pad(fy - 1 + i, sp[0]), pad(fx - 1 + j, sp[1])
                    val = val + wy[i] * wx[j] * pix(b, (int(yi), int(xj)))
            out[(b, slice(None)) + pt[1:]] = val
            continue
        u = [pad(v, s) for v, s in zip(u, sp)]
        if mode == "nearest":
            out[(b, slice(None)) + pt[1:]] = pix(b, [int(np.rint(v)) for v in u])
            continue
        f = [math.floor(v) for v in u]
        val = np.zeros(c)
        for corner in np.ndindex(*(2,) * k):
            wgt = np.prod([(v - fl) if e else 1 - (v - fl) for v, fl, e in zip(u, f, corner)])
            val = val + wgt * pix(b, [fl + e for fl, e in zip(f, corner)])
        out[(b, slice(None)) + pt[1:]] = val
    return out


def _grid_samples(mode, padding_mode, align_corners):
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}

    def samples(rng):
        return [Sample((_n(rng, 1, 2, 3, 4), rng.uniform(-1.3, 1.3, (1, 2, 3, 2))), kw,
                       desc="3x4 image, out-of-range points"),
                Sample((_n(rng, 2, 1, 5, 2), rng.uniform(-1, 1, (2, 1, 17, 2))), kw,
                       desc="17 points"),
                Sample((_n(rng, 1, 2, 4, 3), rng.uniform(-1, 1, (1, 2, 2, 2))), kw,
                       layouts=("T", "c"), desc="T input"),
                Sample((_n(rng, 1, 1, 2, 3), rng.uniform(-1.2, 1.2, (1, 2, 2, 2))), kw,
                       desc="small (gradcheck)")]
    return samples


def _grid_samples_3d(mode, padding_mode, align_corners):
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}

    def samples(rng):
        return [Sample((_n(rng, 2, 2, 3, 4, 2), rng.uniform(-1.3, 1.3, (2, 2, 1, 3, 3))), kw,
                       desc="3x4x2 volume, out-of-range points"),
                Sample((_n(rng, 1, 1, 2, 3, 4), rng.uniform(-1, 1, (1, 2, 2, 3, 3))), kw,
                       layouts=("T", "c"), desc="T input"),
                Sample((_n(rng, 1, 1, 2, 2, 2), rng.uniform(-1.2, 1.2, (1, 1, 2, 2, 3))), kw,
                       desc="small (gradcheck)")]
    return samples


def _np_affine_grid(theta, size, align_corners=False):
    sp = size[2:]

    def base(k):
        if align_corners:
            return np.linspace(-1, 1, k) if k > 1 else np.zeros(k)
        return (np.arange(k) * 2 + 1) / k - 1
    # points (x_w, y_h[, z_d], 1) over the output's (D,) H, W
    coords = np.meshgrid(*[base(k) for k in sp], indexing="ij")[::-1]
    pts = np.stack(list(coords) + [np.ones(sp)], -1)
    return np.einsum("...k,nik->n...i", pts, theta)


def _adaptive2d_samples(rng):
    return [Sample((_n(rng, 1, 2, 5, 7), (3, 4)), desc="5x7 -> 3x4"),
            Sample((_n(rng, 2, 3, 3), 1), desc="global, unbatched"),
            Sample((_n(rng, 1, 1, 3, 4), (5, None)), desc="upsample, None"),
            Sample((_n(rng, 1, 2, 4, 3), 2), layouts=("T",), desc="T")]


def _np_batch_norm_train(x, weight=None, bias=None, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    with np.errstate(all="ignore"):
        mean = x.mean(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = y if weight is None else y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


def _bn_train(x, weight=None, bias=None, eps=1e-5):
    return F.batch_norm(x, None, None, weight, bias, training=True, eps=eps)


def _np_batch_norm_eval(x, mean, var, weight=None, bias=None, eps=1e-5):
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    with np.errstate(all="ignore"):
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    y = y if weight is None else y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


def _np_bn_eval(x, weight=None, bias=None, mean=(), var=(), eps=1e-5):
    return _np_batch_norm_eval(x, np.array(mean), np.array(var), weight, bias, eps)


def _bn_eval(x, weight=None, bias=None, mean=(), var=(), eps=1e-5):
    """The running statistics are constants (kwargs): PyTorch's native_batch_norm is not
    differentiable with respect to them (a RuntimeError if they require grad); float32 for
    a float16/bfloat16 x (PyTorch's mixed type), exact enough for the reference's float64."""
    dt = tgrad.float32 if x.dtype in (tgrad.float16, tgrad.bfloat16) else x.dtype
    return F.batch_norm(x, tgrad.tensor(mean, dtype=dt, device=x.device),
                        tgrad.tensor(var, dtype=dt, device=x.device),
                        weight, bias, training=False, eps=eps)


def _bn_samples(rng):
    return [Sample((_n(rng, 4, 3), _n(rng, 3), _n(rng, 3)), desc="2d affine"),
            Sample((_n(rng, 2, 3, 5),), desc="3d plain"),
            Sample((_n(rng, 2, 2, 3, 3), _n(rng, 2), None, 1e-3), desc="4d weight eps"),
            Sample((_n(rng, 1025, 1), _n(rng, 1), _n(rng, 1)), desc="1025 rows"),
            Sample((_n(rng, 3, 4), _n(rng, 4), _n(rng, 4)), layouts=("T",), desc="T")]


def _bn_eval_samples(rng):
    def stats(c):
        return {"mean": tuple(_n(rng, c).tolist()),
                "var": tuple((np.abs(_n(rng, c)) + 0.5).tolist())}
    return [Sample((_n(rng, 4, 3), _n(rng, 3), _n(rng, 3)), stats(3), desc="2d affine"),
            Sample((_n(rng, 2, 3, 5),), stats(3), desc="3d plain"),
            Sample((_n(rng, 0, 2),), stats(2), desc="empty"),
            Sample((_n(rng, 3, 4),), stats(4), layouts=("T",), desc="T")]


def _np_group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    with np.errstate(all="ignore"):
        mean = g.mean(-1, keepdims=True)
        y = ((g - mean) / np.sqrt(((g - mean) ** 2).mean(-1, keepdims=True) + eps))
    y = y.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    y = y if weight is None else y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


def _gn_samples(rng):
    return [Sample((_n(rng, 2, 4, 3), 2, _n(rng, 4), _n(rng, 4)), desc="affine"),
            Sample((_n(rng, 1, 6, 2, 2), 3), desc="4d plain"),
            Sample((_n(rng, 3, 2), 1, _n(rng, 2), None, 1e-3), desc="2d one group eps"),
            Sample((_n(rng, 1, 1, 1025), 1), desc="1025"),
            Sample((_n(rng, 2, 2, 3), 2), layouts=("s",), desc="sliced")]


def _np_instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    with np.errstate(all="ignore"):
        mean = x.mean(axis=axes, keepdims=True)
        return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)


def _in_samples(rng):
    return [Sample((_n(rng, 2, 3, 4),), desc="3d"),
            Sample((_n(rng, 1, 2, 3, 3), 1e-3), desc="4d eps"),
            Sample((_n(rng, 2, 3, 2),), layouts=("T",), desc="T")]


def _np_rms_norm(x, normalized_shape, weight=None, eps=1e-6):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    with np.errstate(all="ignore"):
        y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if weight is None else y * weight


def _rms_samples(rng):
    # eps given: its default is the input dtype's epsilon (tests/test_nn_conv.py)
    return [Sample((_n(rng, 3, 5), (5,), _n(rng, 5), 1e-6), desc="weight"),
            Sample((_n(rng, 2, 3, 4), (3, 4), None, 0.1), desc="2 dims eps"),
            Sample((_n(rng, 0, 4), (4,), None, 1e-6), desc="empty"),
            Sample((_n(rng, 2, 1025), (1025,), None, 1e-6), desc="rows of 1025"),
            Sample((_n(rng, 4, 3), (3,), _n(rng, 3), 1e-6), layouts=("T",), desc="T")]


CONV_NORM_SPECS = [
    OpSpec("nn.conv2d", F.conv2d, _np_conv2d, _conv2d_samples),
    OpSpec("nn.conv1d", F.conv1d, _np_conv1d, _conv1d_samples),
    OpSpec("nn.conv3d", F.conv3d, _np_conv3d, _conv3d_samples),
    OpSpec("nn.conv_transpose3d", F.conv_transpose3d, _np_conv_transpose3d,
           _conv_t3d_samples),
    OpSpec("nn.max_pool2d", F.max_pool2d, _np_max_pool2d, _max_pool2d_samples),
    *[OpSpec(f"nn.max_unpool{d}d", getattr(F, f"max_unpool{d}d"),
             lambda x, i, k, stride=None, padding=0, output_size=None, d=d: _np_max_unpool(
                 x, i, k, stride, padding, output_size, d), _unpool_samples(d))
      for d in (1, 2, 3)],
    OpSpec("nn.max_pool3d", F.max_pool3d,
           lambda x, k, stride=None, padding=0, ceil_mode=False, return_indices=False:
           _np_pool3d(x, k, stride, padding, ceil_mode, "max", return_indices=return_indices),
           lambda rng: _pool3d_samples(rng) + [
               Sample((_n(rng, 1, 2, 3, 3, 4), 2), {"return_indices": True}, desc="indices")]),
    OpSpec("nn.avg_pool3d", F.avg_pool3d,
           lambda x, k, stride=None, padding=0, ceil_mode=False, count_include_pad=True:
           _np_pool3d(x, k, stride, padding, ceil_mode, "avg", count_include_pad),
           lambda rng: _pool3d_samples(rng) + [
               Sample((_n(rng, 1, 1, 3, 3, 3), 3), {"stride": 2, "padding": 1,
                      "count_include_pad": False}, desc="exclude pad")]),
    OpSpec("nn.max_pool1d", F.max_pool1d, _np_max_pool1d, _max_pool1d_samples),
    OpSpec("nn.avg_pool2d", F.avg_pool2d, _np_avg_pool2d, _avg_pool2d_samples),
    OpSpec("nn.avg_pool1d", F.avg_pool1d, _np_avg_pool1d, _avg_pool1d_samples),
    OpSpec("nn.adaptive_avg_pool2d", F.adaptive_avg_pool2d, _np_adaptive_avg_pool,
           _adaptive2d_samples),
    OpSpec("nn.adaptive_max_pool2d", F.adaptive_max_pool2d, _np_adaptive_max_pool,
           _adaptive_max_samples),
    OpSpec("nn.adaptive_max_pool1d", F.adaptive_max_pool1d,
           lambda x, o, return_indices=False: _np_adaptive_max_pool(x, o, return_indices, 1),
           _adaptive_max1d_samples),
    OpSpec("nn.adaptive_max_pool3d", F.adaptive_max_pool3d,
           lambda x, o, return_indices=False: _np_adaptive_max_pool(x, o, return_indices, 3),
           lambda rng: [Sample((_n(rng, 1, 2, 3, 5, 4), (2, 3, 2)), {"return_indices": True},
                               desc="3x5x4 -> 2x3x2"),
                        Sample((_n(rng, 1, 2, 2, 3), (1, 2, None)), desc="unbatched, None")]),
    OpSpec("nn.adaptive_avg_pool3d", F.adaptive_avg_pool3d,
           lambda x, o: _np_adaptive_avg_pool(x, o, 3),
           lambda rng: [Sample((_n(rng, 1, 2, 3, 5, 4), (2, 3, 2)), desc="3x5x4 -> 2x3x2"),
                        Sample((_n(rng, 1, 2, 2, 3), 2), desc="unbatched, upsample")]),
    OpSpec("nn.lp_pool2d", F.lp_pool2d, _np_lp_pool, _lp_pool2d_samples),
    OpSpec("nn.lp_pool1d", F.lp_pool1d,
           lambda x, p, k, stride=None: _np_lp_pool(x, p, k, stride, spatial=1),
           _lp_pool1d_samples),
    OpSpec("nn.local_response_norm", F.local_response_norm, _np_lrn, _lrn_samples),
    OpSpec("nn.rrelu_eval", F.rrelu, lambda x, lo=1 / 8, hi=1 / 3: np.where(
        x >= 0, x, x * (lo + hi) / 2), lambda rng: [
            Sample((_n(rng, 17),), desc="default"), Sample((_n(rng, 4, 3), 0.1, 0.3),
                                                         layouts=("T",), desc="T")]),
    *[OpSpec(f"nn.grid_sample_{m}_{p}_{'ac' if a else 'noac'}", F.grid_sample,
             _np_grid_sample, _grid_samples(m, p, a))
      for m, p, a in (("bilinear", "zeros", False), ("bilinear", "border", True),
                      ("bilinear", "reflection", False), ("bilinear", "reflection", True),
                      ("nearest", "zeros", True), ("bicubic", "zeros", False),
                      ("bicubic", "zeros", True), ("bicubic", "border", False),
                      ("bicubic", "border", True), ("bicubic", "reflection", False),
                      ("bicubic", "reflection", True))],
    *[OpSpec(f"nn.grid_sample_3d_{m}_{p}_{'ac' if a else 'noac'}", F.grid_sample,
             _np_grid_sample, _grid_samples_3d(m, p, a))
      for m, p, a in (("bilinear", "zeros", False), ("bilinear", "zeros", True),
                      ("bilinear", "border", False), ("bilinear", "reflection", False),
                      ("bilinear", "reflection", True), ("nearest", "border", True),
                      ("nearest", "reflection", False))],
    OpSpec("nn.affine_grid", F.affine_grid, _np_affine_grid, lambda rng: [
        Sample((_n(rng, 2, 2, 3), (2, 3, 4, 5)), desc="4x5"),
        Sample((_n(rng, 1, 2, 3), (1, 1, 1, 3)), {"align_corners": True}, desc="1x3, ac"),
        Sample((_n(rng, 2, 3, 4), (2, 1, 2, 3, 4)), desc="2x3x4 volume"),
        Sample((_n(rng, 1, 3, 4), (1, 2, 3, 1, 2)), {"align_corners": True},
               desc="3x1x2 volume, ac")]),
    OpSpec("nn.batch_norm_train", _bn_train, _np_batch_norm_train, _bn_samples),
    OpSpec("nn.batch_norm_eval", _bn_eval, _np_bn_eval, _bn_eval_samples),
    OpSpec("nn.group_norm", F.group_norm, _np_group_norm, _gn_samples),
    OpSpec("nn.instance_norm", lambda x, eps=1e-5: F.instance_norm(x, eps=eps),
           _np_instance_norm, _in_samples),
    OpSpec("nn.rms_norm", F.rms_norm, _np_rms_norm, _rms_samples),
]

def _np_sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """softmax(q k^T scale + mask) v, rows with nothing to attend to giving 0."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    with np.errstate(all="ignore"):
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
        if is_causal:
            attn_mask = np.tril(np.ones(scores.shape[-2:], dtype=bool))
        if attn_mask is not None:
            scores = (np.where(attn_mask, scores, -np.inf) if attn_mask.dtype == bool
                      else scores + attn_mask)
        empty = np.all(scores == -np.inf, axis=-1, keepdims=True)
        w = np.where(empty, 0.0, _np_softmax(np.where(empty, 0.0, scores), -1))
        return np.matmul(w, v)


def _sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale)


def _sdpa_samples(rng):
    mask = rng.random((3, 4)) > 0.4
    mask[0] = False  # a row with nothing to attend to
    return [Sample((_n(rng, 2, 3, 4), _n(rng, 2, 4, 4), _n(rng, 2, 4, 2)), desc="batched"),
            Sample((_n(rng, 3, 4), _n(rng, 4, 4), _n(rng, 4, 2), mask), desc="bool mask"),
            Sample((_n(rng, 3, 2), _n(rng, 4, 2), _n(rng, 4, 3), _n(rng, 3, 4)),
                   desc="float mask"),
            Sample((_n(rng, 1, 3, 2), _n(rng, 1, 3, 2), _n(rng, 1, 3, 2)),
                   {"is_causal": True, "scale": 0.7}, desc="causal scale"),
            Sample((_n(rng, 0, 3, 2), _n(rng, 0, 4, 2), _n(rng, 0, 4, 2)), desc="empty"),
            Sample((_n(rng, 1, 17, 4), _n(rng, 1, 17, 4), _n(rng, 1, 17, 4)), desc="17"),
            Sample((_n(rng, 3, 4), _n(rng, 4, 4), _n(rng, 4, 2)), layouts=("T", "s"),
                   desc="T, sliced")]


CONV_NORM_SPECS.append(OpSpec("nn.scaled_dot_product_attention", _sdpa, _np_sdpa,
                              _sdpa_samples))

OP_DB += CONV_NORM_SPECS


def _np_softshrink(x, lambd=0.5):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0.0))


def _np_hardshrink(x, lambd=0.5):
    return np.where((x < -lambd) | (x > lambd) | np.isnan(x), x, 0.0)


def _np_prelu(x, w):
    w = w.reshape(()) if w.size == 1 else w.reshape((w.size,) + (1,) * (x.ndim - 2))
    return np.where(x > 0, x, w * x)


def _prelu_samples(rng):
    return [Sample((_n(rng, 4, 3), _n(rng, 3)), desc="per channel"),
            Sample((_n(rng, 2, 3, 5), _n(rng, 1)), desc="one weight"),
            Sample((_n(rng, 17), _n(rng, 1)), desc="1-d"),
            Sample((_n(rng, 0, 2), _n(rng, 2)), desc="empty"),
            Sample((_n(rng, 2, 3, 4), _n(rng, 3)), layouts=("T",), desc="T")]


ACTIVATION_SPECS = [
    OpSpec("nn.hardswish", F.hardswish, lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
           _act_samples()),
    OpSpec("nn.hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3.0, 0.0, 6.0) / 6.0,
           _act_samples()),
    OpSpec("nn.softsign", F.softsign, lambda x: x / (1.0 + np.abs(x)), _act_samples()),
    OpSpec("nn.tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), _act_samples()),
    OpSpec("nn.softshrink", F.softshrink, _np_softshrink, _act_samples({"lambd": 1.0})),
    OpSpec("nn.hardshrink", F.hardshrink, _np_hardshrink, _act_samples()),
    OpSpec("nn.celu", F.celu, lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(
        np.minimum(x, 0.0) / alpha)), _act_samples({"alpha": 0.7})),
    OpSpec("nn.threshold", F.threshold, lambda x, t, v: np.where(x <= t, v, x),
           lambda rng: [Sample((_n(rng, 17) * 3, 0.5, -2.0), desc="17"),
                        Sample((_n(rng, 4, 3), -0.1, 7.0), layouts=("T",), desc="T"),
                        Sample((_n(rng, 0), 0.0, 1.0), desc="empty")]),
    OpSpec("nn.prelu", F.prelu, _np_prelu, _prelu_samples),
]
OP_DB += ACTIVATION_SPECS
