"""Per-group update rules of the optimizers, PyTorch's algorithms (torch.optim docs).

Each function updates ONE parameter group: lists of params, grads and state tensors of
equal length, hyper-parameters as keywords. They run under no_grad with in-place tensor
ops on the CPU. ``FUSED`` is the seam for the GPU: a per-device-type implementation
``FUSED[(name, device_type)](same arguments)`` (one fused kernel launch per group) is used
instead when registered.
"""

from __future__ import annotations

import math

from tgrad.autograd.grad_mode import no_grad
from tgrad.tensor import Tensor

# (rule name, device type) -> fused implementation with the same signature.
FUSED: dict = {}


def _fused(name: str, params: list[Tensor]):
    if not params:
        return None
    return FUSED.get((name, params[0].device.type))


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffers: list, *, lr: float,
        momentum: float, dampening: float, weight_decay: float, nesterov: bool,
        maximize: bool) -> None:
    """g <- -g if maximize;  g <- g + wd p;
    with momentum: b <- g (first step) else mu b + (1 - dampening) g;
                   g <- g + mu b if nesterov else b;
    p <- p - lr g.   ``momentum_buffers[i]`` is None until created here (set in place)."""
    fused = _fused("sgd", params)
    if fused is not None:
        return fused(params, grads, momentum_buffers, lr=lr, momentum=momentum,
                     dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                     maximize=maximize)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            if weight_decay != 0:
                g = g + p * weight_decay
            if momentum != 0:
                buf = momentum_buffers[i]
                if buf is None:
                    buf = g.clone()
                    momentum_buffers[i] = buf
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g + buf * momentum if nesterov else buf
            p.add_(g, alpha=-lr)


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list, state_steps: list[Tensor], *,
         lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
         amsgrad: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;
    Adam:  g <- g + wd p            AdamW: p <- p (1 - lr wd)
    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2;   (amsgrad: vmax <- max(vmax, v))
    p <- p - lr / (1 - b1^t) * m / (sqrt(v or vmax) / sqrt(1 - b2^t) + eps)."""
    fused = _fused("adam", params)
    if fused is not None:
        return fused(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                     lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                     amsgrad=amsgrad, maximize=maximize,
                     decoupled_weight_decay=decoupled_weight_decay)
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            m, v, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
            step_t.add_(1)
            step = step_t.item()
            if weight_decay != 0:
                if decoupled_weight_decay:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g + p * weight_decay
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).add_(g * g, alpha=1 - beta2)
            bc1 = 1 - beta1 ** step
            bc2_sqrt = math.sqrt(1 - beta2 ** step)
            if amsgrad:
                vmax = max_exp_avg_sqs[i]
                vmax.copy_(vmax.maximum(v))
                denom = vmax.sqrt() / bc2_sqrt + eps
            else:
                denom = v.sqrt() / bc2_sqrt + eps
            p.add_(m / denom, alpha=-(lr / bc1))


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list, momentum_buffers: list, *, lr: float, alpha: float, eps: float,
            weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """g <- -g if maximize;  g <- g + wd p;  s <- alpha s + (1 - alpha) g^2;
    centered: a <- alpha a + (1 - alpha) g,  d = sqrt(s - a^2) + eps;  else d = sqrt(s) + eps;
    momentum: b <- mu b + g / d,  p <- p - lr b;  else p <- p - lr g / d."""
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            if weight_decay != 0:
                g = g + p * weight_decay
            s = square_avgs[i]
            s.mul_(alpha).addcmul_(g, g, value=1 - alpha)
            if centered:
                a = grad_avgs[i]
                a.lerp_(g, 1 - alpha)
                denom = s.addcmul(a, a, value=-1).sqrt() + eps
            else:
                denom = s.sqrt() + eps
            if momentum > 0:
                buf = momentum_buffers[i]
                buf.mul_(momentum).addcdiv_(g, denom)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(g, denom, value=-lr)


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            state_steps: list[Tensor], *, lr: float, lr_decay: float, weight_decay: float,
            eps: float, maximize: bool) -> None:
    """t <- t + 1;  g <- -g if maximize;  g <- g + wd p;  lr_t = lr / (1 + (t - 1) lr_decay);
    s <- s + g^2;  p <- p - lr_t g / (sqrt(s) + eps)."""
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            step_t = state_steps[i]
            step_t.add_(1)
            step = step_t.item()
            if weight_decay != 0:
                g = g + p * weight_decay
            clr = lr / (1 + (step - 1) * lr_decay)
            s = state_sums[i]
            s.addcmul_(g, g, value=1)
            p.addcdiv_(g, s.sqrt() + eps, value=-clr)
