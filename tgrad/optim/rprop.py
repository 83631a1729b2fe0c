"""Rprop: resilient backpropagation (PyTorch's torch.optim.Rprop algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    _get_scalar_dtype,
    check_implementation_flags,
    check_tensor_lr,
)


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun, "A Direct Adaptive Method for Faster Backpropagation
    Learning: The RPROP Algorithm"), PyTorch's update rule (see ``_functional.rprop``): each
    element moves by its own step size, grown by ``etas[1]`` while the gradient keeps its
    sign and shrunk by ``etas[0]`` when it flips, clamped to ``step_sizes`` = (min, max).
    State per parameter: 'step' (scalar tensor), 'prev', 'step_size' (starts at
    lr; lr + lr i for a complex parameter, whose real and imaginary parts are separate
    elements, as in every optimizer here)."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_tensor_lr(lr)
        check_implementation_flags("Rprop", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import full_like, tensor, zeros_like
        lr = group["lr"]  # a complex parameter: lr for both parts (PyTorch's complex(lr, lr))
        return {"step": tensor(0.0, dtype=_get_scalar_dtype()), "prev": zeros_like(p),
                "step_size": full_like(p, complex(lr, lr) if p.dtype.is_complex else lr)}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, prevs, sizes, steps = self._collect(group, self._init_state, "prev",
                                                               "step_size", "step")
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            _functional.rprop(params, grads, prevs, sizes, steps, step_size_min=step_size_min,
                              step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus,
                              maximize=group["maximize"])
        return loss
