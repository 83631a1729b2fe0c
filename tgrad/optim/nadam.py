"""NAdam: Adam with Nesterov momentum (PyTorch's torch.optim.NAdam algorithm)."""

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


class NAdam(Optimizer):
    """NAdam (Dozat, "Incorporating Nesterov Momentum into Adam"), PyTorch's update rule
    (see ``_functional.nadam``); ``decoupled_weight_decay=True`` gives NAdamW. State per
    parameter: 'step' (scalar tensor), 'mu_product' (scalar tensor in the step's dtype, the
    running product of the momentum schedule), 'exp_avg', 'exp_avg_sq'."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("NAdam", foreach, None, capturable, differentiable)
        check_adam_args(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        return {"step": tensor(0.0, dtype=_get_scalar_dtype()),
                "mu_product": tensor(1.0, dtype=_get_scalar_dtype()), "exp_avg": zeros_like(p),
                "exp_avg_sq": zeros_like(p)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, v, mus, steps = self._collect(
                group, self._init_state, "exp_avg", "exp_avg_sq", "mu_product", "step")
            beta1, beta2 = group["betas"]
            _functional.nadam(params, grads, m, v, mus, steps, lr=group["lr"], beta1=beta1,
                              beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                              momentum_decay=group["momentum_decay"],
                              decoupled_weight_decay=group["decoupled_weight_decay"],
                              maximize=group["maximize"])
        return loss
