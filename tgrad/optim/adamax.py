"""Adamax: Adam with the infinity norm (PyTorch's torch.optim.Adamax algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    _get_scalar_dtype,
    check_adam_args,
    check_implementation_flags,
    check_tensor_lr,
)


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, "Adam: A Method for Stochastic Optimization", section 7),
    PyTorch's update rule (see ``_functional.adamax``). State per parameter: 'step'
    (scalar tensor), 'exp_avg', 'exp_inf'."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("Adamax", foreach, None, capturable, differentiable)
        check_adam_args(lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        return {"step": tensor(0.0, dtype=_get_scalar_dtype()), "exp_avg": zeros_like(p),
                "exp_inf": zeros_like(p)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, u, steps = self._collect(group, self._init_state, "exp_avg",
                                                       "exp_inf", "step")
            beta1, beta2 = group["betas"]
            _functional.adamax(params, grads, m, u, steps, lr=group["lr"], beta1=beta1,
                               beta2=beta2, eps=group["eps"],
                               weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss
