# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Fused optimizer updates (PyTorch's SGD and Adam/AdamW rules, see
tgrad/optim/_functional.py) over MANY parameters per launch ("multi-tensor apply").

One launch per (parameter group, dtype). The parameters of a launch live in separate
allocations; the wrapper passes the first tensor of each list as the base pointer and, per
tensor j, int64 element offsets (ptr_j - ptr_0) / itemsize plus numel_j, and a block table
(tensor index, start element) with one row per program. Each program updates one BLOCK of
one tensor, in float32 registers for 16/32-bit params (float64 for float64).
  SGD:   g <- -g (maximize);  g <- g + wd p;  b <- g (first step) | mu b + (1 - damp) g;
         g <- g + mu b (nesterov) | b;  p <- p - lr g            bytes/elt: 3 reads 2 writes
  Adam:  g <- -g;  Adam: g <- g + wd p | AdamW: p <- p (1 - lr wd);
         m <- lerp(m, g, 1 - b1);  v <- b2 v + ((1 - b2) g) g;  (amsgrad: vmax <- max(vmax, v))
         p <- p + ((-lr / bc1) m) / (sqrt(v | vmax) / sqrt(bc2) + eps)
         bc1 = 1 - b1^t, bc2 = 1 - b2^t per tensor (its own step t)   bytes/elt: 4 (5) r, 3 (4) w
"""

from __future__ import annotations

import math

import numpy as np
import triton
import triton.language as tl


@triton.jit
def _load(ptr, mask, ACC64: tl.constexpr):
    v = tl.load(ptr, mask=mask, other=0.0)
    if ACC64:
        r = v.to(tl.float64)
    else:
        r = v.to(tl.float32)
    return r


@triton.jit
def sgd_kernel(P, G, B, OFFS, FIRST, BT, BS, lr: tl.float64, momentum: tl.float64,
               dampening: tl.float64, wd: tl.float64,
               HAS_WD: tl.constexpr, HAS_MOM: tl.constexpr, NESTEROV: tl.constexpr,
               MAXIMIZE: tl.constexpr, ACC64: tl.constexpr, BLOCK: tl.constexpr):
    if not ACC64:  # float64 arguments; fp32 maths for fp32 params
        lr = tl.cast(lr, tl.float32)
        momentum = tl.cast(momentum, tl.float32)
        dampening = tl.cast(dampening, tl.float32)
        wd = tl.cast(wd, tl.float32)
    # OFFS: [T, 4] int64 rows (p offset, g offset, buf offset, numel)
    pid = tl.program_id(0)
    j = tl.load(BT + pid)
    i = tl.load(BS + pid) + tl.arange(0, BLOCK).to(tl.int64)
    mask = i < tl.load(OFFS + j * 4 + 3)
    po = tl.load(OFFS + j * 4) + i
    go = tl.load(OFFS + j * 4 + 1) + i
    p = _load(P + po, mask, ACC64)
    g = _load(G + go, mask, ACC64)
    if MAXIMIZE:
        g = -g
    if HAS_WD:
        g = g + p * wd
    if HAS_MOM:
        bo = tl.load(OFFS + j * 4 + 2) + i
        b = _load(B + bo, mask, ACC64)
        first = tl.load(FIRST + j)
        b = tl.where(first != 0, g, b * momentum + (1.0 - dampening) * g)
        tl.store(B + bo, b.to(B.dtype.element_ty), mask=mask)
        if NESTEROV:
            g = g + b * momentum
        else:
            g = b
    tl.store(P + po, (p - lr * g).to(P.dtype.element_ty), mask=mask)


@triton.jit
def adam_kernel(P, G, M, V, VM, OFFS, SCAL, BT, BS, w1: tl.float64, w1c: tl.float64,
                beta2: tl.float64, w2: tl.float64, eps: tl.float64, wd: tl.float64,
                decay: tl.float64, LERP_LOW: tl.constexpr,
                HAS_WD: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr,
                MAXIMIZE: tl.constexpr, ACC64: tl.constexpr, BLOCK: tl.constexpr):
    # Every constant comes from the host, computed there in float64 as the CPU rule computes
    # it (w1 = 1 - beta1, w1c = 1 - w1, w2 = 1 - beta2, decay = 1 - lr wd; LERP_LOW =
    # |w1| < 0.5), then read once in the parameters' dtype: 1 - beta2 taken in float32 from
    # float32(beta2) is 1.3e-5 off for beta2 = 0.999.
    if not ACC64:  # float64 arguments; fp32 maths for fp32 params
        w1 = tl.cast(w1, tl.float32)
        w1c = tl.cast(w1c, tl.float32)
        beta2 = tl.cast(beta2, tl.float32)
        w2 = tl.cast(w2, tl.float32)
        eps = tl.cast(eps, tl.float32)
        wd = tl.cast(wd, tl.float32)
        decay = tl.cast(decay, tl.float32)
    # OFFS: [T, 6] int64 rows (p, g, m, v, vmax offsets, numel);
    # SCAL: [T, 2] float64 rows (lr / bc1, sqrt(bc2)) for each tensor's own step.
    pid = tl.program_id(0)
    j = tl.load(BT + pid)
    i = tl.load(BS + pid) + tl.arange(0, BLOCK).to(tl.int64)
    mask = i < tl.load(OFFS + j * 6 + 5)
    po = tl.load(OFFS + j * 6) + i
    go = tl.load(OFFS + j * 6 + 1) + i
    mo = tl.load(OFFS + j * 6 + 2) + i
    vo = tl.load(OFFS + j * 6 + 3) + i
    step_size = tl.load(SCAL + j * 2)
    bc2_sqrt = tl.load(SCAL + j * 2 + 1)
    if not ACC64:
        step_size = step_size.to(tl.float32)
        bc2_sqrt = bc2_sqrt.to(tl.float32)
    p = _load(P + po, mask, ACC64)
    g = _load(G + go, mask, ACC64)
    m = _load(M + mo, mask, ACC64)
    v = _load(V + vo, mask, ACC64)
    if MAXIMIZE:
        g = -g
    if HAS_WD:
        if DECOUPLED:
            p = p * decay
        else:
            g = g + p * wd
    # m <- lerp(m, g, w1) (PyTorch's exp_avg.lerp_: an infinite m meets the next g as
    # inf - inf = NaN): m + (g - m) w1 where |w1| < 0.5, else g - (g - m) w1c;
    # v <- v beta2 + (w2 g) g (addcmul_'s order); vmax <- max(vmax, v), NaN propagated
    # (torch.maximum's, NumPy's: tl.maximum's default drops a NaN)
    d = g - m
    if LERP_LOW:
        m = m + d * w1
    else:
        m = g - d * w1c
    v = v * beta2 + w2 * g * g
    if AMSGRAD:
        vmo = tl.load(OFFS + j * 6 + 4) + i
        vm = tl.maximum(_load(VM + vmo, mask, ACC64), v, propagate_nan=tl.PropagateNan.ALL)
        tl.store(VM + vmo, vm.to(VM.dtype.element_ty), mask=mask)
        denom = tl.sqrt(vm) / bc2_sqrt + eps
    else:
        denom = tl.sqrt(v) / bc2_sqrt + eps
    p = p + (-step_size * m) / denom  # addcdiv_(m, denom, value=-step_size)'s order
    tl.store(M + mo, m.to(M.dtype.element_ty), mask=mask)
    tl.store(V + vo, v.to(V.dtype.element_ty), mask=mask)
    tl.store(P + po, p.to(P.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------ host side (the seam)
def _be():
    from tgrad.backends import triton as tb
    return tb


def _offsets(arrs: list) -> list[int]:
    base = arrs[0].data_ptr()
    item = arrs[0].dtype.itemsize
    out = []
    for a in arrs:
        d = a.data_ptr() - base
        assert d % item == 0, "fused optimizer: misaligned tensor"
        out.append(d // item)
    return out


def _blocks(numels: list[int], block: int) -> tuple[np.ndarray, np.ndarray]:
    bt, bs = [], []
    for j, n in enumerate(numels):
        for s in range(0, n, block):
            bt.append(j)
            bs.append(s)
    return np.asarray(bt, np.int64), np.asarray(bs, np.int64)


def _groups(params: list) -> dict:
    """Indices of the params, grouped by dtype (one launch each)."""
    out: dict = {}
    for i, p in enumerate(params):
        out.setdefault(p.dtype.np, []).append(i)
    return out


def _work(t):
    """(array to update in place, writeback) for a Tensor: contiguous arrays are updated in
    place; others through a contiguous copy written back after the launch."""
    tb = _be()
    a = t._data
    if a.is_contiguous():
        return a, None
    c = tb.clone(a)
    return c, (a, c)


def _launch(kernel, lists: list, table_rows, numels, extra_tables: list, **kw):
    from tgrad.cuda import is_interpreted
    from tgrad.kernels import configs
    from tgrad.kernels.launch import karg, launch
    tb = _be()
    block = configs.optim_block(is_interpreted())
    bt, bs = _blocks(numels, block)
    if bt.size == 0:
        return
    tabs = [tb.from_host(np.ascontiguousarray(table_rows, np.int64))]
    tabs += [tb.from_host(np.ascontiguousarray(e)) for e in extra_tables]
    with np.errstate(all="ignore"):
        launch(kernel, (bt.size,), *[karg(x[0]) for x in lists], *[karg(t) for t in tabs],
               karg(tb.from_host(bt)), karg(tb.from_host(bs)), **kw,
               BLOCK=block, num_warps=4)


def _bump(tensors: list) -> None:
    for t in tensors:
        t._storage.version += 1


def fused_sgd(params: list, grads: list, momentum_buffers: list, *, lr: float,
              momentum: float, dampening: float, weight_decay: float, nesterov: bool,
              maximize: bool) -> None:
    """tgrad.optim._functional.sgd on cuda: one launch per dtype for the whole group."""
    from tgrad.ops.creation import zeros_like
    tb = _be()
    for dt, idx in _groups(params).items():
        first = []
        for i in idx:
            if momentum != 0 and momentum_buffers[i] is None:
                momentum_buffers[i] = zeros_like(params[i])
                first.append(1)
            else:
                first.append(0)
        ps, wbs = [], []
        for i in idx:
            a, wb = _work(params[i])
            ps.append(a)
            if wb:
                wbs.append(wb)
        gs = [tb.contiguous(tb.cast(grads[i]._data, dt)) for i in idx]
        bufs = [momentum_buffers[i]._data for i in idx] if momentum != 0 else ps
        rows = np.stack([_offsets(ps), _offsets(gs), _offsets(bufs),
                         [a.size for a in ps]], 1)
        _launch(sgd_kernel, [ps, gs, bufs], rows, [a.size for a in ps],
                [np.asarray(first or [0] * len(idx), np.int64)], lr=float(lr),
                momentum=float(momentum), dampening=float(dampening),
                wd=float(weight_decay), HAS_WD=weight_decay != 0, HAS_MOM=momentum != 0,
                NESTEROV=bool(nesterov), MAXIMIZE=bool(maximize), ACC64=dt == np.float64)
        for dst, src in wbs:
            tb.copy_(dst, src)
        _bump([params[i] for i in idx] + ([momentum_buffers[i] for i in idx]
                                          if momentum != 0 else []))


def fused_adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list,
               max_exp_avg_sqs: list, state_steps: list, *, lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, amsgrad: bool, maximize: bool,
               decoupled_weight_decay: bool) -> None:
    """tgrad.optim._functional.adam (Adam and AdamW) on cuda: one launch per dtype."""
    tb = _be()
    for dt, idx in _groups(params).items():
        scal = []
        for i in idx:
            state_steps[i].add_(1)
            step = float(state_steps[i].item())
            scal.append((lr / (1 - beta1 ** step), math.sqrt(1 - beta2 ** step)))
        tensors = [params, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
        work, wbs = [], []
        for lst in tensors:
            cur = []
            for i in idx:
                a, wb = _work(lst[i])
                cur.append(a)
                if wb:
                    wbs.append(wb)
            work.append(cur)
        ps, ms, vs = work[:3]
        vms = work[3] if amsgrad else ps
        gs = [tb.contiguous(tb.cast(grads[i]._data, dt)) for i in idx]
        rows = np.stack([_offsets(ps), _offsets(gs), _offsets(ms), _offsets(vs),
                         _offsets(vms), [a.size for a in ps]], 1)
        _launch(adam_kernel, [ps, gs, ms, vs, vms], rows, [a.size for a in ps],
                [np.asarray(scal, np.float64)], w1=float(1 - beta1),
                w1c=float(1.0 - (1 - beta1)), beta2=float(beta2), w2=float(1 - beta2),
                eps=float(eps), wd=float(weight_decay), decay=float(1 - lr * weight_decay),
                LERP_LOW=abs(1 - beta1) < 0.5, HAS_WD=weight_decay != 0,
                DECOUPLED=bool(decoupled_weight_decay), AMSGRAD=bool(amsgrad),
                MAXIMIZE=bool(maximize), ACC64=dt == np.float64)
        for dst, src in wbs:
            tb.copy_(dst, src)
        _bump([lst[i] for lst in tensors for i in idx])


def register() -> None:
    """Install the fused updates at the optimizer seam (FUSED[(rule, "cuda")]); AdamW is
    the "adam" rule with decoupled_weight_decay=True."""
    from tgrad.optim import _functional
    _functional.FUSED[("sgd", "cuda")] = fused_sgd
    _functional.FUSED[("adam", "cuda")] = fused_adam


__all__ = ["sgd_kernel", "adam_kernel", "fused_sgd", "fused_adam", "register", "triton"]
