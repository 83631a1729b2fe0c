"""RAdam: rectified Adam (PyTorch's torch.optim.RAdam algorithm)."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, check_implementation_flags
from tgrad.tensor import Tensor


def radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, lr: float, beta1: float,
          beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
          maximize: bool) -> None:
    """One RAdam step for one parameter group (in place, under no_grad)::

        t <- t + 1;  g <- -g if maximize
        decoupled: p <- p (1 - lr wd)        else: g <- g + wd p
        m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2;   m_hat = m / (1 - b1^t)
        rho_inf = 2 / (1 - b2) - 1;   rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
        rho_t > 5:  l = sqrt(1 - b2^t) / (sqrt(v) + eps)
                    r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    p <- p - lr m_hat r l
        else:       p <- p - lr m_hat
    """
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


class RAdam(Optimizer):
    """RAdam (Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond"),
    PyTorch's update rule (see :func:`radam`); ``decoupled_weight_decay=True`` applies the
    weight decay to the weights as AdamW. State per parameter: 'step' (float32 scalar
    tensor), 'exp_avg', 'exp_avg_sq'."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_implementation_flags("RAdam", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import tensor, zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, v, steps = [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0, dtype="float32")
                    st["exp_avg"] = zeros_like(p)
                    st["exp_avg_sq"] = zeros_like(p)
                params.append(p)
                grads.append(p._grad)
                m.append(st["exp_avg"])
                v.append(st["exp_avg_sq"])
                steps.append(st["step"])
            beta1, beta2 = group["betas"]
            radam(params, grads, m, v, steps, lr=group["lr"], beta1=beta1, beta2=beta2,
                  eps=group["eps"], weight_decay=group["weight_decay"],
                  decoupled_weight_decay=group["decoupled_weight_decay"],
                  maximize=group["maximize"])
        return loss
