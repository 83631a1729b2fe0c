"""Per-group update rules of the optimizers, PyTorch's algorithms (torch.optim docs).

Each function updates ONE parameter group: lists of params, grads and state tensors of
equal length, hyper-parameters as keywords. They run under no_grad with in-place tensor
ops on the CPU (sgd's and adam's common float32/float64 case on the NumPy arrays directly,
bit-identical: the CPU fast path below). ``FUSED`` is the seam for the GPU: a
per-device-type implementation ``FUSED[(name, device_type)](same arguments)`` (one fused
kernel launch per group) is used instead when registered.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad._strides import has_internal_overlap
from tgrad.autograd import function as _function
from tgrad.autograd.grad_mode import STATE, no_grad
from tgrad.backends.numpy import quiet
from tgrad.tensor import InferenceStorage, Tensor

# (rule name, device type) -> fused implementation with the same signature.
FUSED: dict = {}


def _fused(name: str, params: list[Tensor]):
    if not params:
        return None
    return FUSED.get((name, params[0].device.type))


def _real_views(*tensors):
    """Complex tensors as their view_as_real views (real tensors and None unchanged), so a
    rule written for reals updates a complex parameter part by part in place, as PyTorch's
    optimizers do (a complex parameter is a pair of real parameters: Adam's second moment
    is re^2 and im^2, not the complex square g^2)."""
    if not any(t is not None and t.dtype.is_complex for t in tensors):
        return tensors
    from tgrad.ops.complex_ops import view_as_real
    return tuple(view_as_real(t) if t is not None and t.dtype.is_complex else t
                 for t in tensors)


def _weight_decay(p: Tensor, g: Tensor, lr: float, weight_decay: float,
                  decoupled: bool) -> Tensor:
    """L2 weight decay (returns g + wd p) or decoupled (p <- p (1 - lr wd), returns g)."""
    if weight_decay != 0:
        if decoupled:
            p.mul_(1 - lr * weight_decay)
        else:
            g = g + p * weight_decay
    return g


def _add_(t: Tensor, g: Tensor, alpha: float) -> None:
    """t <- t + alpha g in place; a sparse COO ``g`` adds its entries (PyTorch's
    add_(dense, sparse))."""
    if g._sparse:
        from tgrad.sparse import add_dense_
        add_dense_(t, g, alpha)
    else:
        t.add_(g, alpha=alpha)


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffers: list, *, lr: float,
        momentum: float, dampening: float, weight_decay: float, nesterov: bool,
        maximize: bool) -> None:
    """g <- -g if maximize;  g <- g + wd p;
    with momentum: b <- g (first step) else mu b + (1 - dampening) g;
                   g <- g + mu b if nesterov else b;
    p <- p - lr g.   ``momentum_buffers[i]`` is None until created here (set in place).
    A sparse COO gradient (CPU) works as PyTorch's: the buffer starts as its copy and stays
    sparse (PyTorch's merge, uncoalesced), p gets the entries added; weight decay raises
    PyTorch's add(sparse, dense) error."""
    fused = _fused("sgd", params)
    if fused is not None:
        return fused(params, grads, momentum_buffers, lr=lr, momentum=momentum,
                     dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                     maximize=maximize)
    fast = _cpu_fast_group(lr, momentum, dampening, weight_decay)
    with no_grad():
        for i, p in enumerate(params):
            if fast and (momentum == 0 or momentum_buffers[i] is not None) and _cpu_fast_ok(
                    p, grads[i], momentum_buffers[i] if momentum != 0 else None):
                _sgd_cpu(p, grads[i], momentum_buffers[i], lr=lr, momentum=momentum,
                         dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                         maximize=maximize)
                continue
            g = -grads[i] if maximize else grads[i]
            if weight_decay != 0:
                g = g + p * weight_decay
            if momentum != 0:
                buf = momentum_buffers[i]
                if buf is None:
                    buf = g.clone()
                    momentum_buffers[i] = buf
                elif buf._sparse:  # sparse + sparse (a dense g raises PyTorch's error)
                    buf._assign(buf * momentum + (g if dampening == 0 else g * (1 - dampening)))
                else:
                    _add_(buf.mul_(momentum), g, 1 - dampening)
                g = g + buf * momentum if nesterov else buf
            _add_(p, g, -lr)


def _check_state_dtypes(grads: list[Tensor], states: list[Tensor]) -> None:
    """Each gradient must have its state's dtype (compared as real views): PyTorch's Adam
    raises lerp's error when a parameter changed dtype after its state was made
    (``p.data = p.data.double()``, ``module.double()``). Checked for the whole group
    before anything is updated."""
    from tgrad._out import _C10_NAMES
    for g, s in zip(grads, states):
        if g.dtype is not s.dtype:
            want, got = s.dtype.to_real(), g.dtype.to_real()
            raise RuntimeError(f"expected dtype {_C10_NAMES.get(want, want.name)} for `end` "
                               f"but got dtype {_C10_NAMES.get(got, got.name)}")


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list, state_steps: list[Tensor], *,
         lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
         amsgrad: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;
    Adam:  g <- g + wd p            AdamW: p <- p (1 - lr wd)
    m <- lerp(m, g, 1 - b1);   v <- b2 v + ((1 - b2) g) g;   (amsgrad: vmax <- max(vmax, v))
    p <- p + ((-lr / (1 - b1^t)) m) / (sqrt(v or vmax) / sqrt(1 - b2^t) + eps).
    As PyTorch's (exp_avg.lerp_(grad, 1 - beta1), exp_avg_sq.mul_(beta2).addcmul_(grad,
    grad, value=1 - beta2)): m + w (g - m), so an infinite m meets the next gradient as
    inf - inf = NaN (not b1 m + (1 - b1) g = +-inf), and (1 - b2) g g does not overflow
    where g g alone would. The step is PyTorch's addcdiv_(m, denom, value=-lr / bc1): the
    scaled m divided (so a scaled m that overflows gives +-inf, or NaN over an infinite
    denom, as PyTorch; not the finite m / denom scaled)."""
    _check_state_dtypes(grads, exp_avgs)
    fused = _fused("adam", params)
    if fused is not None:
        return fused(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                     lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                     amsgrad=amsgrad, maximize=maximize,
                     decoupled_weight_decay=decoupled_weight_decay)
    fast = _cpu_fast_group(lr, beta1, beta2, eps, weight_decay)
    with no_grad():
        for i, p in enumerate(params):
            if fast and _cpu_fast_ok(p, grads[i], exp_avgs[i], exp_avg_sqs[i],
                                     max_exp_avg_sqs[i] if amsgrad else None):
                _adam_cpu(p, grads[i], exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i],
                          state_steps[i], lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                          weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                          decoupled_weight_decay=decoupled_weight_decay)
                continue
            g = -grads[i] if maximize else grads[i]
            m, v, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
            vmax = max_exp_avg_sqs[i] if amsgrad else None
            p, g, m, v, vmax = _real_views(p, g, m, v, vmax)
            step_t.add_(1)
            step = step_t.item()
            g = _weight_decay(p, g, lr, weight_decay, decoupled_weight_decay)
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).add_(g * (1 - beta2) * g)
            bc1 = 1 - beta1 ** step
            bc2_sqrt = math.sqrt(1 - beta2 ** step)
            if amsgrad:
                vmax.copy_(vmax.maximum(v))
                denom = vmax.sqrt() / bc2_sqrt + eps
            else:
                denom = v.sqrt() / bc2_sqrt + eps
            p.add_(m * -(lr / bc1) / denom)  # p.addcdiv_(m, denom, value=-lr / bc1)


# ------------------------------------------------------------------------ CPU fast path
# sgd and adam's common CPU case computed on the NumPy arrays (``t._data``) in place, one
# parameter at a time: the op path's exact sequence of roundings (so the values are
# bit-identical) without its per-op dispatch, checks and temporaries. What the ops do in
# the NumPy backend, reproduced here:
#   t * c, t / c, t + c (c a Python number)  ->  np.multiply(t, dtype(c)): the number is
#       read in the tensor's dtype first (elementwise._number_as), then one IEEE op;
#   t.add_(x, alpha=a)  ->  t + x * dtype(a), or t + x when a == 1 (elementwise._alpha_apply);
#   -g, t.sqrt(), a.maximum(b), a / b  ->  np.negative, np.sqrt, np.maximum(a, b), np.divide;
#   an in-place op computes out of place and copies in (inplace.apply_inplace): the same
#   value as computing into ``out=t``; each in-place op bumps the storage's version once.
# Anything else (complex, sparse, other devices or dtypes, a hyper-parameter that is a
# Tensor, forward AD, allow_mutation_on_saved_tensors...) takes the op path. The GPU keeps
# its own seam (FUSED), checked first.

_CPU_FAST_DTYPES = (np.float32, np.float64)


def _cpu_fast_group(*hyper) -> bool:
    """Whether a group may take the CPU fast path: every hyper-parameter a plain Python
    number, no forward-AD level (in-place ops update tangents) and no
    allow_mutation_on_saved_tensors context (in-place ops clone saved tensors first)."""
    return (all(type(h) is float or type(h) is int for h in hyper)
            and STATE.mutation_ctx is None
            and not (_function._FW_ACTIVE and STATE.fw_level is not None))


def _cpu_fast_ok(p: Tensor, g: Tensor, *state) -> bool:
    """Whether NumPy may update parameter ``p`` and its ``state`` tensors (None: absent) in
    place from gradient ``g``: all dense CPU NumPy arrays of one real float32/float64 dtype
    and one shape, in distinct storages; the written ones (p, state) writable, not inference
    tensors and without internal overlap (what the in-place ops would refuse)."""
    if g is None or g._sparse or type(g._data) is not np.ndarray:
        return False
    dt = p._data.dtype
    if dt.type not in _CPU_FAST_DTYPES or g._data.dtype != dt or g.shape != p.shape:
        return False
    written = [p] + [t for t in state if t is not None]
    for t in written:
        a = t._data
        if (t._sparse or type(a) is not np.ndarray or t.device.type != "cpu"
                or a.dtype != dt or a.shape != p.shape or not a.flags.writeable
                or type(t._storage) is InferenceStorage
                or (a.size > 1 and not a.flags.c_contiguous
                    and has_internal_overlap(a.shape, a.strides))):
            return False
    return g.device.type == "cpu" and len({id(t._storage) for t in written + [g]}) \
        == len(written) + 1


def _iadd(t: np.ndarray, x) -> np.ndarray:
    """t <- t + x in place, with the NaN the op path's out-of-place ``t + x`` gives (the
    first operand's where both are NaN): NumPy's in-place add of a one-element array runs
    its reduction loop, which keeps the second operand's NaN (sign) instead."""
    if t.size == 1:
        t[...] = np.add(t, x)
        return t
    return np.add(t, x, out=t)


def _add_scaled_(t: np.ndarray, x: np.ndarray, alpha: float, tmp: np.ndarray) -> None:
    """``t.add_(x, alpha=alpha)``: t <- t + x * alpha (x * alpha rounded first, in ``tmp``,
    which may be x itself); x as it is when alpha == 1, as elementwise._alpha_apply."""
    if alpha != 1:
        x = np.multiply(x, t.dtype.type(alpha), out=tmp)
    _iadd(t, x)


def _lerp_(t: np.ndarray, end: np.ndarray, weight: float, tmp: np.ndarray) -> None:
    """``t.lerp_(end, weight)`` for a number weight (tgrad.ops.composite._lerp_value):
    diff = end - t; t <- t + diff * w if |w| < 0.5, else end - diff * (1 - w) (1 - w taken
    as a Python number, then read in t's dtype)."""
    c = t.dtype.type
    diff = np.subtract(end, t, out=tmp)
    if abs(weight) < 0.5:
        _iadd(t, np.multiply(diff, c(weight), out=diff))
    else:
        np.subtract(end, np.multiply(diff, c(1.0 - weight), out=diff), out=t)


def _sgd_cpu(p: Tensor, g: Tensor, buf: Tensor | None, *, lr: float, momentum: float,
             dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    """sgd's update of one dense real CPU parameter on its NumPy arrays (see _cpu_fast_ok);
    ``buf`` is the existing momentum buffer (the first step, which creates it, takes the
    op path). Same roundings and version bumps as the op path (p: 1, buf: 2)."""
    pa, ga = p._data, g._data
    c = pa.dtype.type  # a Python number is read in the parameter's dtype
    tmp = np.empty_like(pa)
    with quiet():  # the backend's ops ignore floating-point errors
        if maximize:
            ga = np.negative(ga, out=np.empty_like(pa))  # g = -grads[i]
        if weight_decay != 0:  # g = g + p * wd (into a new array unless g is one already)
            wd = np.multiply(pa, c(weight_decay), out=tmp)
            ga = _iadd(ga, wd) if maximize else np.add(ga, wd)
        if momentum != 0:
            ba = buf._data
            np.multiply(ba, c(momentum), out=ba)      # buf.mul_(mu)
            _add_scaled_(ba, ga, 1 - dampening, tmp)  # _add_(buf, g, 1 - dampening)
            buf._storage.version += 2
            if nesterov:  # g = g + buf * mu
                ga = np.add(ga, np.multiply(ba, c(momentum), out=tmp), out=np.empty_like(pa))
            else:  # g = buf
                ga = ba
        _add_scaled_(pa, ga, -lr, tmp)  # _add_(p, g, -lr)
    p._storage.version += 1


def _next_step(step_t: Tensor) -> float:
    """``step_t.add_(1); step_t.item()``: a 0-d float CPU step tensor in place on its array
    (1 read in its dtype, one version bump); any other through the op."""
    a = step_t._data
    if (type(a) is np.ndarray and a.ndim == 0 and a.dtype.kind == "f" and a.flags.writeable
            and step_t.device.type == "cpu" and type(step_t._storage) is not InferenceStorage
            and not step_t._sparse):
        np.add(a, a.dtype.type(1), out=a)
        step_t._storage.version += 1
        return a.item()
    step_t.add_(1)
    return step_t.item()


def _adam_cpu(p: Tensor, g: Tensor, m: Tensor, v: Tensor, vmax: Tensor | None,
              step_t: Tensor, *, lr: float, beta1: float, beta2: float, eps: float,
              weight_decay: float, amsgrad: bool, maximize: bool,
              decoupled_weight_decay: bool) -> None:
    """adam's update of one dense real CPU parameter on its NumPy arrays (see _cpu_fast_ok),
    op for op the op path's roundings:
      m <- lerp(m, g, 1 - b1) (tgrad.ops.composite._lerp_value: m + (g - m) * w for |w| < 0.5,
      else g - (g - m) * (1 - w));   v <- v * b2 + (g * (1 - b2)) * g;   (vmax <- max(vmax, v))
      d <- sqrt(v | vmax) / sqrt(1 - b2^t) + eps;   p <- p + (m * (-(lr / (1 - b1^t)))) / d,
    each product, quotient and sum rounded in the parameter's dtype. The step tensor is
    updated as step_t.add_(1) (_next_step); versions bump as the op path's (p: 1, or 2 with
    decoupled weight decay; m: 1; v: 2; vmax: 1)."""
    step = _next_step(step_t)
    pa, ga, ma, va = p._data, g._data, m._data, v._data
    c = pa.dtype.type  # a Python number is read in the parameter's dtype
    tmp = np.empty_like(pa)
    with quiet():  # the backend's ops ignore floating-point errors
        if maximize:
            ga = np.negative(ga, out=np.empty_like(pa))  # g = -grads[i]
        if weight_decay != 0 and decoupled_weight_decay:
            np.multiply(pa, c(1 - lr * weight_decay), out=pa)  # p.mul_(1 - lr * wd)
            p._storage.version += 1
        elif weight_decay != 0:  # g = g + p * wd (into a new array unless g is one already)
            wd = np.multiply(pa, c(weight_decay), out=tmp)
            ga = _iadd(ga, wd) if maximize else np.add(ga, wd)
        _lerp_(ma, ga, 1 - beta1, tmp)      # m.lerp_(g, 1 - beta1)
        np.multiply(va, c(beta2), out=va)    # v.mul_(beta2)
        sq = np.multiply(ga, c(1 - beta2), out=tmp)  # .add_(g * (1 - beta2) * g)
        _iadd(va, np.multiply(sq, ga, out=sq))
        bc1 = 1 - beta1 ** step
        bc2_sqrt = math.sqrt(1 - beta2 ** step)
        if amsgrad:
            np.maximum(vmax._data, va, out=vmax._data)  # vmax.copy_(vmax.maximum(v))
            vmax._storage.version += 1
            va = vmax._data
        d = np.sqrt(va, out=tmp)          # denom = v.sqrt()
        np.divide(d, c(bc2_sqrt), out=d)  #         / bc2_sqrt
        _iadd(d, c(eps))                  #         + eps
        q = np.multiply(ma, c(-(lr / bc1)), out=np.empty_like(pa))  # m * -(lr / bc1)
        _iadd(pa, np.divide(q, d, out=q))     # p.add_(... / denom)
    p._storage.version += 1
    m._storage.version += 1
    v._storage.version += 2


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list, momentum_buffers: list, *, lr: float, alpha: float, eps: float,
            weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """g <- -g if maximize;  g <- g + wd p;  s <- alpha s + (1 - alpha) g^2;
    centered: a <- alpha a + (1 - alpha) g,  d = sqrt(s - a^2) + eps;  else d = sqrt(s) + eps;
    momentum: b <- mu b + g / d,  p <- p - lr b;  else p <- p - lr g / d."""
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            p, g, s, a, buf = _real_views(p, g, square_avgs[i], grad_avgs[i],
                                          momentum_buffers[i])
            if weight_decay != 0:
                g = g + p * weight_decay
            s.mul_(alpha).addcmul_(g, g, value=1 - alpha)
            if centered:
                a.lerp_(g, 1 - alpha)
                denom = s.addcmul(a, a, value=-1).sqrt() + eps
            else:
                denom = s.sqrt() + eps
            if momentum > 0:
                buf.mul_(momentum).addcdiv_(g, denom)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(g, denom, value=-lr)


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            state_steps: list[Tensor], *, lr: float, lr_decay: float, weight_decay: float,
            eps: float, maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;  g <- g + wd p;  lr_t = lr / (1 + (t - 1) lr_decay);
    s <- s + g^2;  p <- p - lr_t g / (sqrt(s) + eps).
    A sparse COO gradient (PyTorch's _make_sparse path): g coalesced to unique indices I,
    s[I] <- s[I] + g_I^2 and p[I] <- p[I] - lr_t g_I / (sqrt(s[I]) + eps), other entries
    untouched; weight_decay != 0 raises PyTorch's error."""
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            step_t = state_steps[i]
            if g._sparse:
                step_t.add_(1)
                if weight_decay != 0:
                    raise RuntimeError("weight_decay option is not compatible with sparse "
                                       "gradients")
                clr = lr / (1 + (step_t.item() - 1) * lr_decay)
                _adagrad_sparse(p, g.coalesce(), state_sums[i], clr, eps)
                continue
            p, g, s = _real_views(p, g, state_sums[i])
            step_t.add_(1)
            step = step_t.item()
            if weight_decay != 0:
                g = g + p * weight_decay
            clr = lr / (1 + (step - 1) * lr_decay)
            s.addcmul_(g, g, value=1)
            p.addcdiv_(g, s.sqrt() + eps, value=-clr)


def _adagrad_sparse(p: Tensor, g, s: Tensor, clr: float, eps: float) -> None:
    """Adagrad's update at a coalesced sparse gradient's (unique) indices I, in place:
    s[I] += g_I^2;  p[I] += -clr (g_I / (sqrt(s[I]) + eps))."""
    if p.device.type != "cpu":
        raise RuntimeError(f"Adagrad: tgrad's sparse gradients are CPU-only, got a parameter "
                           f"on {p.device}")
    idx, gv = tuple(g._sp_indices), g._sp_values
    sd = s._data
    sd[idx] += gv * gv
    p._data[idx] += -clr * (gv / (np.sqrt(sd[idx]) + eps))
    s._storage.version += 1
    p._storage.version += 1


def sparse_adam(params: list[Tensor], grads: list, exp_avgs: list[Tensor],
                exp_avg_sqs: list[Tensor], state_steps: list[int], *, lr: float, beta1: float,
                beta2: float, eps: float, maximize: bool) -> None:
    """Lazy Adam (PyTorch's SparseAdam): g <- -g if maximize, coalesced to unique indices I
    (nothing moves when it has no entries); with t the parameter's global step count,
    m[I] <- m[I] + (1 - b1)(g_I - m[I]);   v[I] <- v[I] + (1 - b2)(g_I^2 - v[I]);
    p[I] <- p[I] - lr sqrt(1 - b2^t) / (1 - b1^t) * m[I] / (sqrt(v[I]) + eps);
    entries outside I (of m, v and p) are untouched."""
    for i, p in enumerate(params):
        g = -grads[i] if maximize else grads[i]
        g = g.coalesce()
        if g._nnz() == 0:
            continue
        idx, gv = tuple(g._sp_indices), g._sp_values
        m, v, step = exp_avgs[i]._data, exp_avg_sqs[i]._data, state_steps[i]
        old_m, old_v = m[idx], v[idx]
        upd_m = (gv - old_m) * (1 - beta1)
        upd_v = (gv * gv - old_v) * (1 - beta2)
        m[idx] += upd_m
        v[idx] += upd_v
        numer = upd_m + old_m
        denom = np.sqrt(upd_v + old_v) + eps
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p._data[idx] += -step_size * (numer / denom)
        for t in (p, exp_avgs[i], exp_avg_sqs[i]):
            t._storage.version += 1


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_infs: list[Tensor], state_steps: list[Tensor], *, lr: float, beta1: float,
           beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;  g <- g + wd p;
    m <- b1 m + (1 - b1) g;   u <- max(b2 u, |g| + eps);
    p <- p - lr / (1 - b1^t) m / u."""
    fused = _fused("adamax", params)
    if fused is not None:
        return fused(params, grads, exp_avgs, exp_infs, state_steps, lr=lr, beta1=beta1,
                     beta2=beta2, eps=eps, weight_decay=weight_decay, maximize=maximize)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            m, u, step_t = exp_avgs[i], exp_infs[i], state_steps[i]
            p, g, m, u = _real_views(p, g, m, u)
            step_t.add_(1)
            step = step_t.item()
            if weight_decay != 0:
                g = g + p * weight_decay
            m.lerp_(g, 1 - beta1)
            u.copy_((u * beta2).maximum(g.abs() + eps))
            p.addcdiv_(m, u, value=-lr / (1 - beta1 ** step))


def nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], mu_products: list[Tensor], state_steps: list[Tensor], *,
          lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
          momentum_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;
    NAdam: g <- g + wd p            NAdamW (decoupled): p <- p (1 - lr wd)
    mu_t = b1 (1 - 0.96^(t psi) / 2);   mu_{t+1} = b1 (1 - 0.96^((t+1) psi) / 2);
    P_t = mu_1 ... mu_t  (state 'mu_product');
    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2;   d = sqrt(v / (1 - b2^t)) + eps;
    p <- p - lr (1 - mu_t) / (1 - P_t) g / d - lr mu_{t+1} / (1 - P_t mu_{t+1}) m / d."""
    fused = _fused("nadam", params)
    if fused is not None:
        return fused(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, lr=lr,
                     beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                     momentum_decay=momentum_decay,
                     decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            m, v, mu_product, step_t = exp_avgs[i], exp_avg_sqs[i], mu_products[i], state_steps[i]
            p, g, m, v = _real_views(p, g, m, v)
            step_t.add_(1)
            step = step_t.item()
            bias_correction2 = 1 - beta2 ** step
            g = _weight_decay(p, g, lr, weight_decay, decoupled_weight_decay)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            mu_product.mul_(mu)
            prod = mu_product.item()
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v / bias_correction2).sqrt() + eps
            p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - prod))
            p.addcdiv_(m, denom, value=-lr * mu_next / (1.0 - prod * mu_next))


def radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, lr: float, beta1: float,
          beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
          maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;
    RAdam: g <- g + wd p            decoupled: p <- p (1 - lr wd)
    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2;   m_hat = m / (1 - b1^t);
    rho_inf = 2 / (1 - b2) - 1;   rho_t = rho_inf - 2 t b2^t / (1 - b2^t);
    rho_t > 5:  l = sqrt(1 - b2^t) / (sqrt(v) + eps),
                r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
                p <- p - lr m_hat r l;
    else:       p <- p - lr m_hat."""
    fused = _fused("radam", params)
    if fused is not None:
        return fused(params, grads, exp_avgs, exp_avg_sqs, state_steps, lr=lr, beta1=beta1,
                     beta2=beta2, eps=eps, weight_decay=weight_decay,
                     decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            m, v, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
            p, g, m, v = _real_views(p, g, m, v)
            step_t.add_(1)
            step = step_t.item()
            g = _weight_decay(p, g, lr, weight_decay, decoupled_weight_decay)
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                 / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                p.addcdiv_(m, v.sqrt() + eps,
                           value=-lr * rect * math.sqrt(bias_correction2) / bias_correction1)
            else:
                p.add_(m, alpha=-lr / bias_correction1)


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
             acc_deltas: list[Tensor], state_steps: list[Tensor], *, lr: float, rho: float,
             eps: float, weight_decay: float, maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;  g <- g + wd p;
    v <- rho v + (1 - rho) g^2;   dx = sqrt(u + eps) / sqrt(v + eps) g;
    u <- rho u + (1 - rho) dx^2;   p <- p - lr dx."""
    fused = _fused("adadelta", params)
    if fused is not None:
        return fused(params, grads, square_avgs, acc_deltas, state_steps, lr=lr, rho=rho,
                     eps=eps, weight_decay=weight_decay, maximize=maximize)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            p, g, v, u = _real_views(p, g, square_avgs[i], acc_deltas[i])
            state_steps[i].add_(1)
            if weight_decay != 0:
                g = g + p * weight_decay
            v.mul_(rho).addcmul_(g, g, value=1 - rho)
            delta = (u + eps).sqrt() / (v + eps).sqrt() * g
            u.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)


def rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor],
          step_sizes: list[Tensor], state_steps: list[Tensor], *, step_size_min: float,
          step_size_max: float, etaminus: float, etaplus: float, maximize: bool) -> None:
    """Elementwise:  t <- t + 1;  g <- -g if maximize;
    g_prev g > 0:  eta <- min(eta eta_plus, step_max);
    g_prev g < 0:  eta <- max(eta eta_minus, step_min),  g <- 0;
    else:          eta unchanged;
    p <- p - eta sign(g) (0 where g is NaN, as PyTorch);   g_prev <- g."""
    fused = _fused("rprop", params)
    if fused is not None:
        return fused(params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min,
                     step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus,
                     maximize=maximize)
    from tgrad.ops.creation import tensor
    from tgrad.ops.elementwise import where
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            p, g, prev, step_size = _real_views(p, g, prevs[i], step_sizes[i])
            state_steps[i].add_(1)
            sign = (g * prev).sign()
            # The 0-d "1" in g's dtype keeps the factor in g's dtype (where over two Python
            # scalars alone would give the default float dtype).
            one = tensor(1.0, dtype=g.dtype, device=g.device)
            step_size.mul_(where(sign > 0, etaplus, where(sign < 0, etaminus, one)))
            step_size.clamp_(step_size_min, step_size_max)
            g = where(sign < 0, 0.0, g)
            # a NaN gradient moves nothing (PyTorch's sign(NaN) is 0 there)
            p.addcmul_(where(g != g, 0.0, g.sign()), step_size, value=-1)
            prev.copy_(g)


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
         etas: list[Tensor], state_steps: list[Tensor], *, lr: float, lambd: float,
         alpha: float, t0: float, weight_decay: float, maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;  g <- g + wd p;
    p <- p (1 - lambd eta) - eta g;   ax <- ax + mu (p - ax)  (ax <- p while mu == 1);
    eta <- lr / (1 + lambd lr t)^alpha;   mu <- 1 / max(1, t - t0)."""
    fused = _fused("asgd", params)
    if fused is not None:
        return fused(params, grads, axs, mus, etas, state_steps, lr=lr, lambd=lambd,
                     alpha=alpha, t0=t0, weight_decay=weight_decay, maximize=maximize)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            ax, mu, eta, step_t = axs[i], mus[i], etas[i], state_steps[i]
            p, g, ax = _real_views(p, g, ax)
            step_t.add_(1)
            if weight_decay != 0:
                g = g + p * weight_decay
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value)
            p.add_(g, alpha=-eta_value)
            mu_value = mu.item()
            if mu_value != 1:
                ax.add_((p - ax) * mu_value)
            else:
                ax.copy_(p)
            step = step_t.item()
            eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
            mu.fill_(1 / max(1, step - t0))
