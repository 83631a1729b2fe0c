"""RMSprop and Adagrad (PyTorch's update rules, see ``_functional.rmsprop/adagrad``).

They run as in-place tgrad ops per parameter on either device (no fused kernel yet)."""

from __future__ import annotations

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    _get_scalar_dtype,
    check_fused_param,
    check_implementation_flags,
    check_tensor_lr,
)


class RMSprop(Optimizer):
    """Divides each step by a running root mean square of the gradients."""

    _tensor_step = True

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("RMSprop", foreach, None, capturable, differentiable)
        for name, value in (("learning rate", lr), ("epsilon value", eps),
                            ("momentum value", momentum), ("weight_decay value", weight_decay),
                            ("alpha value", alpha)):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        st = {"step": tensor(0.0, dtype=_get_scalar_dtype()), "square_avg": zeros_like(p)}
        if group["momentum"] > 0:
            st["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            st["grad_avg"] = zeros_like(p)
        return st

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, sq, steps = self._collect(group, self._init_state, "square_avg",
                                                     "step")
            for step_t in steps:
                step_t.add_(1)
            ga = [self.state[p].get("grad_avg") for p in params]
            bufs = [self.state[p].get("momentum_buffer") for p in params]
            _functional.rmsprop(params, grads, sq, ga, bufs, lr=group["lr"],
                                alpha=group["alpha"], eps=group["eps"],
                                weight_decay=group["weight_decay"], momentum=group["momentum"],
                                centered=group["centered"], maximize=group["maximize"])
        return loss


class Adagrad(Optimizer):
    """Divides each step by the root of the sum of all past squared gradients. A sparse COO
    gradient updates only its indices (PyTorch's sparse path; not with weight_decay or
    fused=True)."""

    _tensor_step = True

    _sparse_grads = True

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("Adagrad", foreach, fused, False, differentiable)
        for name, value in (("learning rate", lr), ("lr_decay value", lr_decay),
                            ("weight_decay value", weight_decay),
                            ("initial_accumulator_value value", initial_accumulator_value),
                            ("epsilon value", eps)):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:  # PyTorch creates the state up front
            self._init_state(group)

    def _init_state(self, group: dict) -> None:
        from tgrad.ops.creation import full_like, tensor
        for p in group["params"]:
            st = self.state[p]
            st["step"] = tensor(0.0, dtype=_get_scalar_dtype(group["fused"]))
            # a complex parameter is its view_as_real pairs: both parts start at v (v + vi)
            v = group["initial_accumulator_value"]
            st["sum"] = full_like(p, complex(v, v) if p.dtype.is_complex else v)

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        self._init_state(self.param_groups[-1])

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, sums, steps = self._collect(group, None, "sum", "step")
            if group["fused"] and params:
                # PyTorch checks the first parameter with a gradient, then refuses any
                # complex one with its own message
                check_fused_param(params[0])
                if any(p.dtype.is_complex for p in params) or any(g._sparse for g in grads):
                    raise RuntimeError("`fused` does not support sparse grad or complex param")
            _functional.adagrad(params, grads, sums, steps, lr=group["lr"],
                                lr_decay=group["lr_decay"], weight_decay=group["weight_decay"],
                                eps=group["eps"], maximize=group["maximize"])
        return loss
