"""Adadelta (PyTorch's torch.optim.Adadelta algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    _get_scalar_dtype,
    check_implementation_flags,
    check_tensor_lr,
)


class Adadelta(Optimizer):
    """Adadelta (Zeiler, "ADADELTA: An Adaptive Learning Rate Method"), PyTorch's update
    rule (see ``_functional.adadelta``). State per parameter: 'step' (scalar
    tensor), 'square_avg', 'acc_delta'."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_tensor_lr(lr)
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
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        return {"step": tensor(0.0, dtype=_get_scalar_dtype()), "square_avg": zeros_like(p),
                "acc_delta": zeros_like(p)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, v, u, steps = self._collect(group, self._init_state, "square_avg",
                                                       "acc_delta", "step")
            _functional.adadelta(params, grads, v, u, steps, lr=group["lr"], rho=group["rho"],
                                 eps=group["eps"], weight_decay=group["weight_decay"],
                                 maximize=group["maximize"])
        return loss
