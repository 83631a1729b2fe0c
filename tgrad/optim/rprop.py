"""Rprop: resilient backpropagation (PyTorch's torch.optim.Rprop algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, check_implementation_flags
from tgrad.tensor import Tensor


def rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor],
          step_sizes: list[Tensor], state_steps: list[Tensor], *, step_size_min: float,
          step_size_max: float, etaminus: float, etaplus: float, maximize: bool) -> None:
    """One Rprop step for one parameter group (in place, under no_grad), elementwise::

        t <- t + 1;  g <- -g if maximize
        g_prev g > 0:  eta <- min(eta eta_plus, step_max)
        g_prev g < 0:  eta <- max(eta eta_minus, step_min);  g <- 0
        else:          eta unchanged
        p <- p - eta sign(g);   g_prev <- g
    """
    from tgrad.ops.creation import full_like, zeros_like
    from tgrad.ops.elementwise import where
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            prev, step_size = prevs[i], step_sizes[i]
            state_steps[i].add_(1)
            sign = (g * prev).sign()
            factor = where(sign > 0, full_like(g, etaplus),
                           where(sign < 0, full_like(g, etaminus), full_like(g, 1.0)))
            step_size.mul_(factor).clamp_(step_size_min, step_size_max)
            g = where(sign < 0, zeros_like(g), g)
            p.addcmul_(g.sign(), step_size, value=-1)
            prev.copy_(g)


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun, "A Direct Adaptive Method for Faster Backpropagation
    Learning: The RPROP Algorithm"), PyTorch's update rule (see :func:`rprop`): each
    element moves by its own step size, grown by ``etas[1]`` while the gradient keeps its
    sign and shrunk by ``etas[0]`` when it flips, clamped to ``step_sizes`` = (min, max).
    State per parameter: 'step' (float32 scalar tensor), 'prev', 'step_size' (starts at
    lr)."""

    def __init__(self, params: Iterable, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_implementation_flags("Rprop", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import full_like, tensor, zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, prevs, sizes, steps = [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0, dtype="float32")
                    st["prev"] = zeros_like(p)
                    st["step_size"] = full_like(p, group["lr"])
                params.append(p)
                grads.append(p._grad)
                prevs.append(st["prev"])
                sizes.append(st["step_size"])
                steps.append(st["step"])
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, grads, prevs, sizes, steps, step_size_min=step_size_min,
                  step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus,
                  maximize=group["maximize"])
        return loss
