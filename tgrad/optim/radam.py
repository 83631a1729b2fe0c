"""RAdam: rectified Adam (PyTorch's torch.optim.RAdam algorithm)."""

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


class RAdam(Optimizer):
    """RAdam (Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond"),
    PyTorch's update rule (see ``_functional.radam``); ``decoupled_weight_decay=True``
    applies the weight decay to the weights as AdamW. State per parameter: 'step' (float32
    scalar tensor; float64 with a float64 default dtype), 'exp_avg', 'exp_avg_sq'."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("RAdam", foreach, None, capturable, differentiable)
        check_adam_args(lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        return {"step": tensor(0.0, dtype=_get_scalar_dtype()), "exp_avg": zeros_like(p),
                "exp_avg_sq": zeros_like(p)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, v, steps = self._collect(group, self._init_state, "exp_avg",
                                                       "exp_avg_sq", "step")
            beta1, beta2 = group["betas"]
            _functional.radam(params, grads, m, v, steps, lr=group["lr"], beta1=beta1,
                              beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                              decoupled_weight_decay=group["decoupled_weight_decay"],
                              maximize=group["maximize"])
        return loss
