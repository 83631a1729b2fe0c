"""Adadelta (PyTorch's torch.optim.Adadelta algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, check_implementation_flags
from tgrad.tensor import Tensor


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
             acc_deltas: list[Tensor], state_steps: list[Tensor], *, lr: float, rho: float,
             eps: float, weight_decay: float, maximize: bool) -> None:
    """One Adadelta step for one parameter group (in place, under no_grad)::

        t <- t + 1;  g <- -g if maximize;  g <- g + wd p
        v <- rho v + (1 - rho) g^2
        dx = sqrt(u + eps) / sqrt(v + eps) g
        u <- rho u + (1 - rho) dx^2
        p <- p - lr dx
    """
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            v, u = square_avgs[i], acc_deltas[i]
            state_steps[i].add_(1)
            if weight_decay != 0:
                g = g + p * weight_decay
            v.mul_(rho).addcmul_(g, g, value=1 - rho)
            delta = (u + eps).sqrt() / (v + eps).sqrt() * g
            u.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)


class Adadelta(Optimizer):
    """Adadelta (Zeiler, "ADADELTA: An Adaptive Learning Rate Method"), PyTorch's update
    rule (see :func:`adadelta`). State per parameter: 'step' (float32 scalar tensor),
    'square_avg', 'acc_delta'."""

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_implementation_flags("Adadelta", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import tensor, zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, v, u, steps = [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0, dtype="float32")
                    st["square_avg"] = zeros_like(p)
                    st["acc_delta"] = zeros_like(p)
                params.append(p)
                grads.append(p._grad)
                v.append(st["square_avg"])
                u.append(st["acc_delta"])
                steps.append(st["step"])
            adadelta(params, grads, v, u, steps, lr=group["lr"], rho=group["rho"],
                     eps=group["eps"], weight_decay=group["weight_decay"],
                     maximize=group["maximize"])
        return loss
