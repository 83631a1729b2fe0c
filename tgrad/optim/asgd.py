"""ASGD: averaged stochastic gradient descent (PyTorch's torch.optim.ASGD algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, check_implementation_flags
from tgrad.tensor import Tensor


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
         etas: list[Tensor], state_steps: list[Tensor], *, lr: float, lambd: float,
         alpha: float, t0: float, weight_decay: float, maximize: bool) -> None:
    """One ASGD step for one parameter group (in place, under no_grad)::

        t <- t + 1;  g <- -g if maximize;  g <- g + wd p
        p <- p (1 - lambd eta) - eta g
        ax <- ax + mu (p - ax)   (ax <- p while mu == 1)
        eta <- lr / (1 + lambd lr t)^alpha;   mu <- 1 / max(1, t - t0)
    """
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            ax, mu, eta, step_t = axs[i], mus[i], etas[i], state_steps[i]
            step_t.add_(1)
            if weight_decay != 0:
                g = g + p * weight_decay
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value)
            p.add_(g, alpha=-eta_value)
            mu_value = mu.item()
            if mu_value != 1:
                ax.add_((p - ax) * mu_value)
            else:
                ax.copy_(p)
            step = step_t.item()
            eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
            mu.fill_(1 / max(1, step - t0))


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, "Acceleration of stochastic approximation by
    averaging"), PyTorch's update rule (see :func:`asgd`); the running average of the
    iterates is kept in state 'ax'. State per parameter: 'step' (float32 scalar tensor),
    'eta' and 'mu' (float64 scalar tensors), 'ax'."""

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_implementation_flags("ASGD", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import tensor, zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, axs, mus, etas, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0, dtype="float32")
                    st["eta"] = tensor(float(group["lr"]), dtype="float64")
                    st["mu"] = tensor(1.0, dtype="float64")
                    st["ax"] = zeros_like(p)
                params.append(p)
                grads.append(p._grad)
                axs.append(st["ax"])
                mus.append(st["mu"])
                etas.append(st["eta"])
                steps.append(st["step"])
            asgd(params, grads, axs, mus, etas, steps, lr=group["lr"], lambd=group["lambd"],
                 alpha=group["alpha"], t0=group["t0"], weight_decay=group["weight_decay"],
                 maximize=group["maximize"])
        return loss
