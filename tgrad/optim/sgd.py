"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""

from __future__ import annotations

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    check_fused_param,
    check_implementation_flags,
    check_tensor_lr,
    required,
)


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's update rule, see ``_functional.sgd``).
    Sparse COO gradients are taken (a sparse momentum buffer, as PyTorch; not with
    weight_decay or fused=True)."""

    _sparse_grads = True

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        check_tensor_lr(lr)
        check_implementation_flags("SGD", foreach, fused, False, differentiable)
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads = self._collect(group)
            if group["fused"]:  # PyTorch's fused SGD takes real floating-point params only
                for p in params:
                    check_fused_param(p)
                if any(g._sparse for g in grads):
                    raise RuntimeError("`_fused_sgd` does not support sparse gradients")
            # Momentum buffers only with momentum: plain SGD keeps no per-parameter state.
            state = self.state
            bufs = [state[p].get("momentum_buffer") if p in state else None for p in params]
            _functional.sgd(params, grads, bufs, lr=group["lr"], momentum=group["momentum"],
                            dampening=group["dampening"], weight_decay=group["weight_decay"],
                            nesterov=group["nesterov"], maximize=group["maximize"])
            if group["momentum"] != 0:
                for p, b in zip(params, bufs):
                    self.state[p]["momentum_buffer"] = b
        return loss
