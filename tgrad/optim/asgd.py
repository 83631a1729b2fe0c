"""ASGD: averaged stochastic gradient descent (PyTorch's torch.optim.ASGD algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    _get_scalar_dtype,
    check_implementation_flags,
    check_tensor_lr,
)


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, "Acceleration of stochastic approximation by
    averaging"), PyTorch's update rule (see ``_functional.asgd``); the running average of the
    iterates is kept in state 'ax'. State per parameter: 'step' (scalar tensor),
    'eta' and 'mu' (scalar tensors: float32, float64 when that is the default dtype, as
    PyTorch's), 'ax'."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("ASGD", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        return {"step": tensor(0.0, dtype=_get_scalar_dtype()),
                "eta": tensor(float(group["lr"]), dtype=_get_scalar_dtype()),
                "mu": tensor(1.0, dtype=_get_scalar_dtype()), "ax": zeros_like(p)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, axs, mus, etas, steps = self._collect(
                group, self._init_state, "ax", "mu", "eta", "step")
            _functional.asgd(params, grads, axs, mus, etas, steps, lr=group["lr"],
                             lambd=group["lambd"], alpha=group["alpha"], t0=group["t0"],
                             weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss
