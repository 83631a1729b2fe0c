"""Adamax: Adam with the infinity norm (PyTorch's torch.optim.Adamax algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, check_implementation_flags
from tgrad.tensor import Tensor


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_infs: list[Tensor], state_steps: list[Tensor], *, lr: float, beta1: float,
           beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """One Adamax step for one parameter group (in place, under no_grad)::

        t <- t + 1;  g <- -g if maximize;  g <- g + wd p
        m <- b1 m + (1 - b1) g;   u <- max(b2 u, |g| + eps)
        p <- p - lr / (1 - b1^t) m / u
    """
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            m, u, step_t = exp_avgs[i], exp_infs[i], state_steps[i]
            step_t.add_(1)
            step = step_t.item()
            if weight_decay != 0:
                g = g + p * weight_decay
            m.lerp_(g, 1 - beta1)
            u.copy_((u * beta2).maximum(g.abs() + eps))
            p.addcdiv_(m, u, value=-lr / (1 - beta1 ** step))


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, "Adam: A Method for Stochastic Optimization", section 7),
    PyTorch's update rule (see :func:`adamax`). State per parameter: 'step' (float32
    scalar tensor), 'exp_avg', 'exp_inf'."""

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_implementation_flags("Adamax", foreach, None, capturable, differentiable)
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
                                      weight_decay=weight_decay, maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import tensor, zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, u, steps = [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0, dtype="float32")
                    st["exp_avg"] = zeros_like(p)
                    st["exp_inf"] = zeros_like(p)
                params.append(p)
                grads.append(p._grad)
                m.append(st["exp_avg"])
                u.append(st["exp_inf"])
                steps.append(st["step"])
            beta1, beta2 = group["betas"]
            adamax(params, grads, m, u, steps, lr=group["lr"], beta1=beta1, beta2=beta2,
                   eps=group["eps"], weight_decay=group["weight_decay"],
                   maximize=group["maximize"])
        return loss
