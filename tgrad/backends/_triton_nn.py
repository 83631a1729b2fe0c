"""GPU implementations of the nn primitives (the names and signatures of
tgrad/backends/_numpy_nn.py, plus matmul, gather, index_add, index_reduce, index_put_,
manual_seed, rand, randn of tgrad/backends/numpy.py): thin launch wrappers over
tgrad/kernels/{softmax,cross_entropy,layer_norm,activations,dropout,matmul,optim,
grid_sample}.py; the
indexing ones (tgrad/kernels/indexing.py) live in tgrad/backends/_triton_index.py and are
re-exported.

Imported at the end of tgrad/backends/triton.py (``from ... import *``), so these replace
the temporary host path there. Wrappers: check, allocate, describe rows/strides, launch.
Row kernels read any strided layout in place when the leading dims collapse to at most two
(always true for contiguous and transposed tensors); otherwise the input is copied once.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from tgrad.backends._triton_index import (  # noqa: F401
    check_index_range,
    gather,
    index_add,
    index_put_,
    index_reduce,
)
from tgrad.cuda import is_interpreted
from tgrad.cuda.array import DeviceArray, contiguous_strides
from tgrad.kernels import configs
from tgrad.kernels import grid_sample as kgs
from tgrad.kernels import softmax as ksm
from tgrad.kernels.launch import collapse, ensure_driver, is_half, launch
from tgrad.kernels.matmul import FLAGS as MATMUL_FLAGS  # noqa: F401  .allow_tf32 = False

__all__ = ["softmax_fwd", "softmax_bwd", "log_softmax_fwd", "log_softmax_bwd",
           "cross_entropy_fwd", "cross_entropy_bwd", "layer_norm_fwd", "layer_norm_bwd",
           "gelu_fwd", "gelu_bwd", "silu_fwd", "silu_bwd", "softplus_fwd", "softplus_bwd",
           "manual_seed", "get_rng_state", "set_rng_state", "rand", "randn", "dropout_fwd",
           "dropout_bwd", "matmul", "gather", "index_add", "index_reduce", "index_put_",
           "check_index_range",
           "im2col", "col2im", "grid_sample_fwd", "grid_sample_bwd"]


def im2col(x: DeviceArray, key, size: tuple, kernel: tuple, stride: tuple,
           dilation: tuple, blocks: tuple) -> DeviceArray:
    """x (N, C, prod size) -> its windows as columns (N, C, prod kernel prod blocks): the
    gather at ``key`` = (:, :, the flat window index of the geometry) (the NumPy backend
    copies a strided view instead, the same values)."""
    return gather(x, key)


def col2im(cols: DeviceArray, key, size: tuple, kernel: tuple, stride: tuple,
           dilation: tuple, blocks: tuple) -> DeviceArray:
    """cols (N, C, prod kernel prod blocks) summed into zeros (N, C, prod size) at ``key`` =
    (:, :, the flat window index of the geometry): index_add's deterministic segmented sums
    (the NumPy backend adds strided slices instead, in the same order)."""
    return index_add((cols.shape[0], cols.shape[1], math.prod(size)), cols.dtype, key, cols)


def _tb():
    """tgrad.backends.triton (imported lazily: it imports this module at its end)."""
    return sys.modules["tgrad.backends.triton"]


def _empty(shape, dtype) -> DeviceArray:
    return _tb().empty(tuple(shape), np.dtype(dtype))


def _compute_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)


def _acc64(dt: np.dtype) -> bool:
    return np.dtype(dt) == np.float64


# ---------------------------------------------------------------- row description
def _rows(full: list, n_red: int, per_row: list = ()):
    """Describe the rows of ``full`` arrays (the last ``n_red`` dims reduced, same shape)
    and ``per_row`` arrays (shape = the leading dims). Returns (M, N, M0, strides) with
    strides[i] = (S1, S0, SN) per array (full first), or None when the leading dims do not
    collapse to two or the reduced dims to one in every array. Row r starts at
    (r // M0) S1 + (r % M0) S0; M0 = 1 when the leading dims collapse to one."""
    shape = full[0].shape
    lead, red = shape[:len(shape) - n_red], shape[len(shape) - n_red:]
    n = math.prod(red)
    m = math.prod(lead)
    if n_red > 1:
        rshape, rst = collapse(red, [a.estrides[len(lead):] for a in full])
        if len(rshape) != 1:
            return None
        sn = [s[0] for s in rst]
    else:
        sn = [a.estrides[-1] if n_red else 0 for a in full]
    lst = [a.estrides[:len(lead)] for a in full] + [a.estrides for a in per_row]
    lshape, lst = collapse(lead, lst) if lead else ((1,), [(0,) for _ in lst])
    if len(lshape) > 2:
        return None
    out = []
    if len(lshape) == 1:
        # one row dim: r -> r * S1 with M0 = 1, which Triton specializes into a constant,
        # so the kernels' r // M0 and r % M0 (64-bit divisions) fold away
        for i, st in enumerate(lst):
            out.append((st[0], 0, sn[i] if i < len(full) else 0))
        return m, n, 1, out
    for i, st in enumerate(lst):
        out.append((st[0], st[1], sn[i] if i < len(full) else 0))
    return m, n, lshape[1], out


def _last(x: DeviceArray, axis: int) -> DeviceArray:
    """View with ``axis`` moved last."""
    dims = tuple(d for d in range(x.ndim) if d != axis) + (axis,)
    return _tb().permute(x, dims)


def _row_cfg(n: int, dt: np.dtype, heavy: bool = False, strided: bool = False,
             forward: bool = False) -> configs.RowConfig:
    """``forward``: a forward kernel (its 16-bit rows get configs.row_config's half_rows)."""
    return configs.row_config(n, _acc64(dt), is_interpreted(), heavy, strided,
                              half_rows=forward and is_half(dt))


def _contig(x: DeviceArray) -> DeviceArray:
    return x if x.is_contiguous() else _tb().clone(x)


# ---------------------------------------------------------------- softmax family
# Shapes: x, y, g all [..., n, ...] with the softmax taken over ``axis``.
def _softmax(x: DeviceArray, axis: int, log: bool) -> DeviceArray:
    axis %= max(x.ndim, 1)
    y = _empty(x.shape, x.dtype)
    if x.size == 0:
        return y
    if x.ndim == 0:
        return _tb().fill_(y, 0.0 if log else 1.0) or y
    xv, yv = _last(x, axis), _last(y, axis)
    rows = _rows([xv, yv], 1)
    if rows is None:
        xv = _last(_tb().clone(x), axis)
        rows = _rows([xv, yv], 1)
    with np.errstate(all="ignore"):
        # (softmax's forward keeps its 8 warps: measured at 84% with them on the H200, not
        # measured with 4; log_softmax's went 77% -> 82% with 4)
        ksm.launch_fwd(xv, yv, rows, _row_cfg(rows[1], x.dtype, forward=log), log,
                       _acc64(x.dtype))
    return y


def _softmax_bwd(g: DeviceArray, y: DeviceArray, axis: int, log: bool) -> DeviceArray:
    axis %= max(g.ndim, 1)
    if y.dtype != g.dtype:
        y = _tb().cast(y, g.dtype)
    dx = _empty(g.shape, g.dtype)
    if g.size == 0:
        return dx
    if g.ndim == 0:
        return _tb().fill_(dx, 0.0) or dx
    gv, yv, dv = _last(g, axis), _last(y, axis), _last(dx, axis)
    rows = _rows([gv, yv, dv], 1)
    if rows is None:
        gv, yv = _last(_tb().clone(g), axis), _last(_tb().clone(y), axis)
        rows = _rows([gv, yv, dv], 1)
    with np.errstate(all="ignore"):
        ksm.launch_bwd(gv, yv, dv, rows, _row_cfg(rows[1], g.dtype), log, _acc64(g.dtype))
    return dx


def softmax_fwd(x: DeviceArray, axis: int) -> DeviceArray:
    """y = exp(x - m) / sum(exp(x - m)), m the row max (stable)."""
    return _softmax(x, axis, False)


def softmax_bwd(g: DeviceArray, y: DeviceArray, axis: int) -> DeviceArray:
    """dx = y * (g - sum(g * y))."""
    return _softmax_bwd(g, y, axis, False)


def log_softmax_fwd(x: DeviceArray, axis: int) -> DeviceArray:
    """y = (x - m) - log(sum(exp(x - m)))."""
    return _softmax(x, axis, True)


def log_softmax_bwd(g: DeviceArray, y: DeviceArray, axis: int) -> DeviceArray:
    """dx = g - exp(y) * sum(g)."""
    return _softmax_bwd(g, y, axis, True)


# ---------------------------------------------------------------- cross entropy
# x: logits [C] or [N, C, d1...] with classes on ``axis`` (0 or 1); t: int64 targets of x's
# shape without the class axis; rw: optional per-row weights of t's shape.
def _ce_rows(x: DeviceArray, axis: int, *others: DeviceArray):
    """Views of x and ``others`` (x's shape) with the classes last, and their rows
    collapsed together (one M0 for all); x is cloned when its rows do not collapse."""
    views = [_last(a, axis) for a in (x, *others)]
    rows = _rows(views, 1)
    if rows is None:
        views[0] = _last(_tb().clone(x), axis)
        rows = _rows(views, 1)
    return views, rows


def cross_entropy_fwd(x: DeviceArray, t: DeviceArray, rw, axis: int, ignore_index: int,
                      reduction: str) -> tuple:
    """(loss, lse): loss_i = rw_i (lse_i - x[i, t_i]) (0 where ignored), reduced ("mean":
    / sum(rw) over kept rows); lse: (2,) + t.shape in the compute dtype, saved for
    backward: lse[0] the row max, lse[1] log(sum exp(x - max)), so a float32 lse of large
    logits is not rounded at its own magnitude (see tgrad/kernels/cross_entropy.py)."""
    tb = _tb()
    cdt = _compute_dtype(x.dtype)
    if t.size == 0:  # no rows: PyTorch's empty / 0 / nan (0 / 0) results
        lse = _empty((2,) + t.shape, cdt)
        if reduction == "none":
            return _empty(t.shape, x.dtype), lse
        return tb.full((), 0.0 if reduction == "sum" else float("nan"), x.dtype), lse
    if x.size == 0:  # rows without classes (every target must be ignore_index)
        return tb._host_path("cross_entropy_fwd", None, x, t, rw, axis, ignore_index,
                             reduction)
    from tgrad.kernels import cross_entropy as kce
    t = _contig(tb.cast(t, np.int64))
    rwc = _contig(tb.cast(rw, cdt)) if rw is not None else None
    (xv,), (m, n, m0, (sx,)) = _ce_rows(x, axis)
    # "none": the kernel writes the loss in x's dtype (no cast launch after it)
    loss = _empty(t.shape, x.dtype if reduction == "none" else cdt)
    lse, w = _empty((2,) + t.shape, cdt), _empty(t.shape, cdt)
    cfg = _row_cfg(n, x.dtype, forward=True)
    from tgrad.kernels.launch import karg, triton_cdiv
    with np.errstate(all="ignore"):
        blocks = triton_cdiv(m, cfg.block_m)  # (stages > 1: persistent programs)
        progs = blocks if cfg.stages == 1 else min(blocks, configs.row_persistent_programs(
            is_interpreted()))
        launch(kce.ce_fwd_kernel, (progs,),
               karg(xv), karg(t), karg(rwc if rwc is not None else t), karg(loss), karg(lse),
               karg(w), m, n, m0, *sx, int(ignore_index), HAS_W=rwc is not None,
               ACC64=_acc64(x.dtype), ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m,
               BLOCK_N=cfg.block_n, STAGES=cfg.stages, num_warps=cfg.num_warps)
    if reduction == "sum":
        loss = tb.sum_(loss, None, False)
    elif reduction == "mean":
        loss = tb.binary("div", tb.sum_(loss, None, False), tb.sum_(w, None, False))
    return tb.cast(loss, x.dtype), lse


def cross_entropy_bwd(g: DeviceArray, x: DeviceArray, t: DeviceArray, rw, lse: DeviceArray,
                      axis: int, ignore_index: int, reduction: str) -> DeviceArray:
    """dx = c_i (softmax(x)_i - onehot(t_i)), c_i = g_i rw_i ("none"), g rw_i ("sum"),
    g rw_i / sum(rw) ("mean"; a sum of 0 divides too, as PyTorch's); 0 on ignored rows. lse: the
    forward's (2,) + t.shape head (row max) and tail (log-sum of the shifted row)."""
    tb = _tb()
    cdt = _compute_dtype(x.dtype)
    dx = _empty(x.shape, x.dtype)
    if x.size == 0:
        return dx
    from tgrad.kernels import cross_entropy as kce
    from tgrad.kernels.launch import karg, triton_cdiv
    t = _contig(tb.cast(t, np.int64))
    rwc = _contig(tb.cast(rw, cdt)) if rw is not None else None
    g = _contig(tb.cast(g, cdt))
    lse = _contig(tb.cast(lse, cdt))
    # x and dx collapsed together (a sliced x and the contiguous dx can collapse
    # differently apart)
    (xv, dv), (m, n, m0, (sx, sd)) = _ce_rows(x, axis, dx)
    total = g
    with np.errstate(all="ignore"):
        if reduction == "mean":
            w = _empty(t.shape, cdt)
            blk = configs.flat_block(is_interpreted())
            launch(kce.ce_weights_kernel, (triton_cdiv(m, blk),),
                   karg(t), karg(rwc if rwc is not None else t), karg(w), m, n,
                   int(ignore_index), HAS_W=rwc is not None, ACC64=_acc64(x.dtype), BLOCK=blk,
                   num_warps=configs.FLAT_WARPS)
            total = tb.sum_(w, None, False)
        cfg = _row_cfg(n, x.dtype)
        bn = cfg.block_n if not cfg.one_pass else min(cfg.block_n, 4096)
        launch(kce.ce_bwd_kernel, (triton_cdiv(m, cfg.block_m),),
               karg(g), karg(xv), karg(t), karg(rwc if rwc is not None else t), karg(lse),
               karg(total), karg(dv), m, n, m0, *sx, *sd, int(ignore_index),
               G_PER_ROW=reduction == "none", MEAN=reduction == "mean", HAS_W=rwc is not None,
               ACC64=_acc64(x.dtype), BLOCK_M=cfg.block_m, BLOCK_N=bn,
               num_warps=cfg.num_warps)
    return dx


# ---------------------------------------------------------------- layer norm
# x: [..., *normalized] with the statistics over the last ``k`` dims; w, b: normalized shape.
def _ln_rows(arrs: list, k: int):
    rows = _rows(arrs, k)
    if rows is None:
        arrs = [a if a.is_contiguous() else _tb().clone(a) for a in arrs]
        rows = _rows(arrs, k)
    return arrs, rows


def layer_norm_fwd(x: DeviceArray, k: int, w, b, eps: float) -> tuple:
    """(y, mean, rstd): y = (x - mean) rstd w + b, rstd = 1/sqrt(var + eps) (biased var);
    mean and rstd keep dims ([..., 1, ..., 1]) in the compute dtype."""
    tb = _tb()
    stat_shape = x.shape[:x.ndim - k] + (1,) * k
    if x.size == 0:  # as the NumPy backend: empty y, statistics 0
        cdt = _compute_dtype(x.dtype)
        return _empty(x.shape, x.dtype), tb.full(stat_shape, 0.0, cdt), \
            tb.full(stat_shape, 0.0, cdt)
    from tgrad.kernels import layer_norm as kln
    from tgrad.kernels.launch import karg, triton_cdiv
    cdt = _compute_dtype(x.dtype)
    y = _empty(x.shape, x.dtype)
    mean, rstd = _empty(stat_shape, cdt), _empty(stat_shape, cdt)
    (xv, yv), (m, n, m0, (sx, sy)) = _ln_rows([x, y], k)
    wc = _contig(w) if w is not None else None
    bc = _contig(b) if b is not None else None
    cfg = _row_cfg(n, x.dtype, forward=True)
    with np.errstate(all="ignore"):
        launch(kln.ln_fwd_kernel, (triton_cdiv(m, cfg.block_m),),
               karg(xv), karg(wc if wc is not None else xv), karg(bc if bc is not None else xv),
               karg(yv), karg(mean), karg(rstd), m, n, m0, *sx, *sy, float(eps),
               HAS_W=wc is not None, HAS_B=bc is not None, ACC64=_acc64(x.dtype),
               ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
               num_warps=cfg.num_warps)
    return y, mean, rstd


def layer_norm_bwd(g: DeviceArray, x: DeviceArray, mean: DeviceArray, rstd: DeviceArray, w,
                   k: int, need_w: bool, need_b: bool) -> tuple:
    """(dx, dw, db): gw = g w, dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),
    dw = sum_batch(g xhat), db = sum_batch(g) (deterministic two-stage sums)."""
    tb = _tb()
    nshape = x.shape[x.ndim - k:]
    pdt = w.dtype if w is not None else _compute_dtype(x.dtype)  # (as the NumPy backend's)
    if x.size == 0:  # empty dx; dw, db are sums over no rows (0) or empty
        return (_empty(x.shape, x.dtype), tb.full(nshape, 0.0, pdt) if need_w else None,
                tb.full(nshape, 0.0, pdt) if need_b else None)
    from tgrad.kernels import layer_norm as kln
    from tgrad.kernels.launch import karg, triton_cdiv
    cdt = _compute_dtype(x.dtype)
    if g.dtype != x.dtype:
        g = tb.cast(g, x.dtype)
    dx = _empty(x.shape, x.dtype)
    (gv, xv, dv), (m, n, m0, (sg, sx, sd)) = _ln_rows([g, x, dx], k)
    mean, rstd = _contig(tb.cast(mean, cdt)), _contig(tb.cast(rstd, cdt))
    wc = _contig(w) if w is not None else None
    cfg = _row_cfg(n, x.dtype, heavy=True, strided=not sg[2] == sx[2] == sd[2] == 1)
    n_blocks = triton_cdiv(m, cfg.block_m)
    cap = configs.LN_INTERP_MAX_PARTIALS if is_interpreted() else configs.LN_MAX_PARTIALS
    n_progs = min(n_blocks, cap)
    dwp = _empty((n_progs, n), cdt) if need_w else None
    dbp = _empty((n_progs, n), cdt) if need_b else None
    if not cfg.one_pass:
        for p in (dwp, dbp):
            if p is not None:
                tb.fill_(p, 0.0)
    with np.errstate(all="ignore"):
        launch(kln.ln_bwd_kernel, (n_progs,),
               karg(gv), karg(xv), karg(wc if wc is not None else xv), karg(mean), karg(rstd),
               karg(dv), karg(dwp if need_w else mean), karg(dbp if need_b else mean),
               m, n, m0, *sg, *sx, *sd, n_blocks, n_progs,
               HAS_W=wc is not None, NEED_W=bool(need_w), NEED_B=bool(need_b),
               ACC64=_acc64(x.dtype), ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m,
               BLOCK_N=cfg.block_n, STAGES=cfg.stages,
               EVEN=cfg.one_pass and n == cfg.block_n and m % cfg.block_m == 0,
               num_warps=cfg.num_warps)
    dw = _empty(nshape, pdt) if need_w else None
    db = _empty(nshape, pdt) if need_b else None
    if need_w or need_b:  # stage 2: both sums and their casts in one launch
        bp, bn = configs.ln_dwdb_config(is_interpreted())
        launch(kln.ln_dwdb_kernel, (triton_cdiv(n, bn),),
               karg(dwp if need_w else dbp), karg(dbp if need_b else dwp),
               karg(dw if need_w else db), karg(db if need_b else dw), n_progs, n,
               NEED_W=bool(need_w), NEED_B=bool(need_b), ACC64=_acc64(x.dtype),
               BLOCK_P=bp, BLOCK_N=bn, num_warps=configs.LN_DWDB_WARPS)
    return dx, dw, db


# ---------------------------------------------------------------- activations
def _ew(fn, out_dtype, inputs: list) -> DeviceArray:
    from tgrad.kernels.launch import launch_ew
    tb = _tb()
    shape = _tb().broadcast_shape(*[a.shape for a in inputs])
    inputs = [tb.expand(tb.cast(a, inputs[0].dtype), shape) for a in inputs]
    out = tb.empty_like_layout(shape, out_dtype, inputs)  # the inputs' memory order
    with np.errstate(all="ignore"):
        return launch_ew(fn, out, inputs, upcast=is_half(inputs[0].dtype))


def gelu_fwd(x: DeviceArray, approximate: str) -> DeviceArray:
    """'none': x Phi(x);  'tanh': 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    from tgrad.kernels import activations as ka
    return _ew(ka.FORWARD[approximate], x.dtype, [x])


def gelu_bwd(g: DeviceArray, x: DeviceArray, approximate: str) -> DeviceArray:
    """g (Phi + x phi), or the tanh form's derivative (tgrad/kernels/activations.py)."""
    from tgrad.kernels import activations as ka
    return _ew(ka.BACKWARD[approximate], g.dtype, [g, x])


def silu_fwd(x: DeviceArray) -> DeviceArray:
    """y = x sigmoid(x)."""
    from tgrad.kernels import activations as ka
    return _ew(ka.f_silu, x.dtype, [x])


def silu_bwd(g: DeviceArray, x: DeviceArray) -> DeviceArray:
    """dx = g s (1 + x (1 - s)), s = sigmoid(x)."""
    from tgrad.kernels import activations as ka
    return _ew(ka.f_silu_backward, g.dtype, [g, x])


def _flat(arrs: list):
    """(n, [stride]) when every array (same shape) is one collapsed strided run, else the
    arrays made contiguous."""
    shape, sts = collapse(arrs[0].shape, [a.estrides for a in arrs])
    if len(shape) == 1:
        return arrs, shape[0], [s[0] for s in sts]
    arrs = [_contig(a) for a in arrs]
    return arrs, arrs[0].size, [1] * len(arrs)


def _softplus(g, x: DeviceArray, beta: float, threshold: float, bwd: bool) -> DeviceArray:
    from tgrad.kernels import activations as ka
    from tgrad.kernels.launch import karg, triton_cdiv
    dt = g.dtype if bwd else x.dtype
    if bwd:
        shape = _tb().broadcast_shape(g.shape, x.shape)
        g, x = _tb().expand(g, shape), _tb().expand(_tb().cast(x, dt), shape)
    out = _tb().empty_like_layout(x.shape, dt, [x] + ([g] if bwd else []))
    if out.size == 0:
        return out
    # every array's dims in out's memory order (slowest first), so out is one run for _flat
    order = sorted(range(out.ndim), key=lambda a: -out.estrides[a])
    arrs, n, st = _flat([a.view(tuple(a.shape[d] for d in order),
                                tuple(a.estrides[d] for d in order))
                         for a in [out, x] + ([g] if bwd else [])])
    blk = configs.flat_block(is_interpreted())
    with np.errstate(all="ignore"):
        launch(ka.softplus_kernel, (triton_cdiv(n, blk),),
               karg(arrs[0]), karg(arrs[-1]), karg(arrs[1]), n, st[0], st[-1], st[1],
               float(beta), float(threshold), BWD=bwd, UPCAST=is_half(dt), BLOCK=blk,
               num_warps=configs.FLAT_WARPS)
    return out


def softplus_fwd(x: DeviceArray, beta: float, threshold: float) -> DeviceArray:
    """y = log1p(exp(beta x)) / beta, or x where beta x > threshold."""
    return _softplus(None, x, beta, threshold, False)


def softplus_bwd(g: DeviceArray, x: DeviceArray, beta: float, threshold: float):
    """dx = g sigmoid(beta x), or g where beta x > threshold."""
    return _softplus(g, x, beta, threshold, True)


# ---------------------------------------------------------------- random, dropout
# Philox state: (seed, offset); every launch draws counters offset .. offset + numel - 1.
# The state keeps the full 64-bit seed (PyTorch's cuda state); the kernels read its low 31
# bits (philox_next).
_PHILOX = {"seed": None, "offset": 0}
_INITIAL_SEED = [None]  # the seed of the last manual_seed / set_rng_state (initial_seed)


def manual_seed(seed: int) -> None:
    _INITIAL_SEED[0] = int(seed)
    _PHILOX["seed"] = int(seed)
    _PHILOX["offset"] = 0


def ensure_seeded() -> None:
    """Seed the device generator on first use: with the last ``tgrad.manual_seed`` value, or
    from the operating system's entropy when there was none."""
    if _PHILOX["seed"] is None:
        from tgrad.ops.creation import LAST_SEED
        manual_seed(LAST_SEED[0] if LAST_SEED[0] is not None
                    else int.from_bytes(__import__("os").urandom(4), "little"))


def get_rng_state() -> dict:
    """The device generator's Philox (seed, offset)."""
    return dict(_PHILOX)


def set_rng_state(state: dict) -> None:
    """Restore (seed, offset); the state's seed becomes initial_seed(), as PyTorch's
    CUDAGeneratorImpl::set_state sets the current seed from it."""
    _PHILOX.update(state)
    _INITIAL_SEED[0] = _PHILOX["seed"]


def philox_next(n: int) -> tuple[int, int]:
    """(seed, offset) for a launch of ``n`` draws; advances the offset."""
    ensure_seeded()
    seed, off = _PHILOX["seed"] & 0x7FFFFFFF, _PHILOX["offset"]
    _PHILOX["offset"] = off + ((n + 3) // 4) * 4
    return seed, off


def _random(shape: tuple, dtype, normal: bool) -> DeviceArray:
    from tgrad.kernels import dropout as kd
    from tgrad.kernels.launch import karg, triton_cdiv
    out = _empty(shape, dtype)
    n = out.size
    if n == 0:
        return out
    seed, off = philox_next(n)
    blk = configs.flat_block(is_interpreted())
    launch(kd.rand_kernel, (triton_cdiv(n, blk),), karg(out), n, seed, off, NORMAL=normal,
           F64=out.dtype == np.float64, BLOCK=blk, num_warps=configs.FLAT_WARPS)
    return out


def rand(shape: tuple, dtype: np.dtype) -> DeviceArray:
    """Uniform [0, 1) from Philox (float64: 53 random bits; else float32's). float16 /
    bfloat16: the float32 draw floored to multiples of 2^-11 / 2^-8 first (exact), so
    rounding can never give 1.0."""
    if not is_half(np.dtype(dtype)):
        return _random(tuple(shape), dtype, False)
    tb = _tb()
    scale = np.float32(2 ** (11 if np.dtype(dtype).name == "float16" else 8))
    u = _random(tuple(shape), np.dtype(np.float32), False)
    u = tb.binary("div", tb.unary("floor", tb.binary("mul", u, scale)), scale)
    return tb.cast(u, np.dtype(dtype))


def randn(shape: tuple, dtype: np.dtype) -> DeviceArray:
    """Standard normal from Philox (Box-Muller in tl.randn)."""
    return _random(tuple(shape), dtype, True)


def _dropout(x: DeviceArray, p: float, seed: int, offset: int) -> DeviceArray:
    from tgrad.kernels import dropout as kd
    from tgrad.kernels.launch import karg, triton_cdiv
    x = _contig(x)  # the mask is indexed by the logical (row-major) element index
    out = _empty(x.shape, x.dtype)
    n = out.size
    if n == 0:
        return out
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    blk = configs.flat_block(is_interpreted())
    launch(kd.dropout_kernel, (triton_cdiv(n, blk),), karg(out), karg(x), n, float(p), scale,
           seed, offset, UPCAST=is_half(x.dtype), BLOCK=blk, num_warps=configs.FLAT_WARPS)
    return out


def dropout_fwd(x: DeviceArray, p: float) -> tuple:
    """(y, state): y = x * (1 / (1 - p) where u >= p else 0), u_i ~ Philox(seed, offset + i)
    (multiplied in, so a dropped NaN/inf gives NaN, as PyTorch);
    state = (seed, offset), from which the backward regenerates the mask (none stored)."""
    seed, off = philox_next(x.size)
    return _dropout(x, p, seed, off), (seed, off)


def dropout_bwd(g: DeviceArray, p: float, state: tuple) -> DeviceArray:
    """dx = g / (1 - p) where u >= p else 0 (the forward's mask, regenerated from state)."""
    return _dropout(g, p, *state)


# ---------------------------------------------------------------- matmul
def _mm_cfgs(dt: np.dtype) -> tuple:
    if dt == np.float64:
        return tuple(configs.MATMUL_CONFIGS_64)
    if dt == np.float32:
        return tuple(configs.MATMUL_CONFIGS_32)
    return tuple(configs.MATMUL_CONFIGS_16)


_MM_STATE: dict = {}
_MM_BEST: dict = {}  # (m, n, k, batches, precision, dtype) -> the autotuner's Config
_GRID_Y_MAX = 65535


def _launch_mm(a: DeviceArray, b: DeviceArray, c: DeviceArray) -> None:
    """c[...] = a @ b for 2-D+ views whose batch dims already equal c's (stride 0 where
    broadcast)."""
    from tgrad.kernels import matmul as kmm
    from tgrad.kernels.launch import compile_options, karg, triton_cdiv
    bshape = c.shape[:-2]
    m, n = c.shape[-2:]
    k = a.shape[-1]
    if bshape:
        bs, bst = collapse(bshape, [a.estrides[:-2], b.estrides[:-2], c.estrides[:-2]])
    else:
        bs, bst = (1,), [(0,), (0,), (0,)]
    nbatch = math.prod(bshape)
    if len(bs) > 2 or nbatch > _GRID_Y_MAX:
        # rare: batch dims that do not collapse to two, or more batches than the grid's
        # y extent: launch per chunk of the outermost batch dim
        step = 1 if len(bs) > 2 else max(1, _GRID_Y_MAX // (nbatch // bshape[0]))
        for i in range(0, bshape[0], step):
            key = (slice(i, i + step),) if step > 1 else (i,)
            _launch_mm(*(_tb().basic_index(t, key) for t in (a, b, c)))
        return
    nb0 = bs[-1]
    nb = math.prod(bs)
    st = [(s[0] if len(s) == 2 else 0, s[-1]) for s in bst]
    dt = a.dtype
    prec = "tf32" if (dt != np.float32 or kmm.FLAGS.allow_tf32) else "ieee"
    args = (karg(a), karg(b), karg(c), m, n, k, nb0, *st[0], *a.estrides[-2:], *st[1],
            *b.estrides[-2:], *st[2], *c.estrides[-2:])
    if dt == np.int64:  # exact integer sums (matmul casts integer operands to int64)
        cfg = configs.MATMUL_INT
        grid = (triton_cdiv(m, cfg.block_m) * triton_cdiv(n, cfg.block_n), nb)
        launch(kmm.int_matmul_kernel, grid, *args, BLOCK_M=cfg.block_m,
               BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, num_warps=cfg.num_warps)
        return
    if is_interpreted():
        cfg = configs.MATMUL_INTERP
        grid = (triton_cdiv(m, cfg.block_m) * triton_cdiv(n, cfg.block_n), nb)
        launch(kmm.matmul_kernel, grid, *args, PRECISION=prec, ACC64=dt == np.float64,
               BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
               GROUP_M=cfg.group_m, num_warps=cfg.num_warps)
    else:
        cfgs = _mm_cfgs(dt)
        if configs.MATMUL_AUTOTUNE and not _MM_STATE.get("tune_failed"):
            # Autotune once per problem (Triton's autotuner benchmarks every config), then
            # launch its best config through launch()'s fast path: no autotuner or binder
            # work per call, and pointers go to the launcher as addresses, so a matmul can
            # be captured in a CUDA graph once its shape was seen eagerly.
            tkey = (m, n, k, nb, prec, dt)
            best = _MM_BEST.get(tkey)
            if best is None:
                ensure_driver()  # the autotuner takes kernel[grid](...), not launch()

                def grid(meta):
                    return (triton_cdiv(m, meta["BLOCK_M"]) * triton_cdiv(n, meta["BLOCK_N"]),
                            nb)
                tuned = kmm.tuned_kernel(cfgs)
                try:
                    tuned[grid](*args, PRECISION=prec, ACC64=dt == np.float64,
                                **compile_options())
                    _MM_BEST[tkey] = tuned.best_config
                    return
                except Exception as e:  # noqa: BLE001 - fall back to a fixed config, loudly
                    import warnings
                    warnings.warn(f"matmul autotuning failed ({type(e).__name__}: {e}); "
                                  f"using the first config of tgrad.kernels.configs",
                                  stacklevel=3)
                    _MM_STATE["tune_failed"] = True
            else:
                kw = best.kwargs
                grid = (triton_cdiv(m, kw["BLOCK_M"]) * triton_cdiv(n, kw["BLOCK_N"]), nb)
                launch(kmm.matmul_kernel, grid, *args, PRECISION=prec,
                       ACC64=dt == np.float64, **kw, num_warps=best.num_warps,
                       num_stages=best.num_stages)
                return
        cfg = cfgs[0]
        grid = (triton_cdiv(m, cfg.block_m) * triton_cdiv(n, cfg.block_n), nb)
        launch(kmm.matmul_kernel, grid, *args, PRECISION=prec, ACC64=dt == np.float64,
               BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
               GROUP_M=cfg.group_m, num_warps=cfg.num_warps, num_stages=cfg.num_stages)


def matmul(a: DeviceArray, b: DeviceArray) -> DeviceArray:
    """NumPy matmul semantics (1-D operands promoted and squeezed, batch dims broadcast);
    a and b share a dtype: floats by tl.dot, integers and bools by exact int64 sums
    (int_matmul_kernel), cast back to the result dtype (int32 / int8 sums wrap, as on the
    CPU and in PyTorch's CPU kernels)."""
    tb = _tb()
    a1, b1 = a.ndim == 1, b.ndim == 1
    av = tb.reshape_view(a, (1, a.shape[0])) if a1 else a
    bv = tb.reshape_view(b, (b.shape[0], 1)) if b1 else b
    if av.shape[-1] != bv.shape[-2]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} cannot be multiplied")
    bshape = np.broadcast_shapes(av.shape[:-2], bv.shape[:-2])
    out_dt = np.result_type(a.dtype, b.dtype)
    work = out_dt if (out_dt.kind == "f" or is_half(out_dt)) else np.dtype(np.int64)
    av, bv = tb.cast(av, work), tb.cast(bv, work)
    m, n = av.shape[-2], bv.shape[-1]
    c = _empty(tuple(bshape) + (m, n), work)
    if c.size:
        if av.shape[-1] == 0:
            tb.fill_(c, 0)
        else:
            _launch_mm(tb.expand(av, tuple(bshape) + av.shape[-2:]),
                       tb.expand(bv, tuple(bshape) + bv.shape[-2:]), c)
    c = tb.cast(c, out_dt)
    shape = c.shape[:-2] + (() if a1 else (m,)) + (() if b1 else (n,))
    return c.view(shape, contiguous_strides(shape)) if shape != c.shape else c


# ---------------------------------------------------------------- grid_sample
# x (N, C, *sp), sp = (H, W) or (D, H, W), read in place through its strides; grid
# (N, *osp, k) copied contiguous when it is not; out and g (N, C, *osp).
_GS_MODES = ("bilinear", "nearest", "bicubic")
_GS_PADDINGS = ("zeros", "border", "reflection")


def _gs_geometry(x: DeviceArray, grid: DeviceArray) -> tuple:
    """(N P, P, C, D, H, W, (SXN, SXC, SXD, SXH, SXW)) of the kernels (2-D: D = 1)."""
    n, c, *sp = x.shape
    st = x.estrides
    if len(sp) == 2:
        sp, st = [1] + sp, st[:2] + (0,) + st[2:]
    p = math.prod(grid.shape[1:-1])
    return (n * p, p, c, *sp, tuple(st))


def _gs_zeros(shape: tuple, dtype: np.dtype) -> DeviceArray:
    z = _empty(shape, dtype)
    if z.size:
        _tb().fill_(z, 0.0)
    return z


def grid_sample_fwd(x: DeviceArray, grid: DeviceArray, mode: str, padding: str,
                    align: bool) -> DeviceArray:
    """out (N, C, *osp): one grid_sample_fwd_kernel launch."""
    n, c = x.shape[:2]
    out = _empty((n, c) + tuple(grid.shape[1:-1]), x.dtype)
    if out.size == 0:
        return out
    grid = _contig(grid)
    geom = _gs_geometry(x, grid)
    with np.errstate(all="ignore"):
        kgs.launch_fwd(x, grid, out, geom, _GS_MODES.index(mode), _GS_PADDINGS.index(padding),
                       align, _acc64(x.dtype),
                       configs.grid_sample_config(geom[0], c, is_interpreted()))
    return out


def grid_sample_bwd(g: DeviceArray, x: DeviceArray, grid: DeviceArray, mode: str,
                    padding: str, align: bool) -> tuple:
    """(d x, d grid) for d out = g. One grid_sample_bwd_kernel launch writes d grid and,
    per tap, its target row (n S + pixel; N S outside the image) and g * weight per
    channel; d x is index_add's deterministic segmented sum of those values into an
    (N S + 1, C) buffer (targets sorted stably, each row summed in tap order: no atomics),
    whose last row is dropped and whose (N, S, C) layout is copied into (N, C, *sp)."""
    n, c, *sp = x.shape
    k = len(sp)
    s = math.prod(sp)
    p = math.prod(grid.shape[1:-1])
    if n * p * c == 0:  # nothing sampled: zero gradients
        return _gs_zeros(x.shape, x.dtype), _gs_zeros(grid.shape, x.dtype)
    mi = _GS_MODES.index(mode)
    t = kgs.tap_count(mi, k)
    dgrid = _empty(grid.shape, x.dtype)
    tgt = _empty((n, p, t), np.int64)
    val = _empty((n, p, t, c), x.dtype)
    grid = _contig(grid)
    geom = _gs_geometry(x, grid)
    with np.errstate(all="ignore"):
        kgs.launch_bwd(_contig(g), x, grid, dgrid, tgt, val, geom, mi,
                       _GS_PADDINGS.index(padding), align, _acc64(x.dtype),
                       configs.grid_sample_config(geom[0], c, is_interpreted()))
    tb = _tb()
    rows = index_add((n * s + 1, c), x.dtype, (tb.reshape_view(tgt, (n * p * t,)),),
                     tb.reshape_view(val, (n * p * t, c)))
    dx = tb.reshape_view(tb.basic_index(rows, (slice(0, n * s),)), (n, s, c))
    dx = tb.contiguous(tb.permute(dx, (0, 2, 1)))
    return tb.reshape_view(dx, x.shape), dgrid


def _register_optim() -> None:
    from tgrad.kernels import optim as kopt
    kopt.register()


def _mark_native() -> None:
    """Tell tgrad.backends.triton these primitives are native (its NATIVE set feeds
    ``ops_without_native_kernel()`` / ``python -m tgrad info``)."""
    tb = sys.modules.get("tgrad.backends.triton")
    if tb is not None and hasattr(tb, "NATIVE"):
        tb.NATIVE.update(__all__)


_register_optim()
_mark_native()
