"""NAdam: Adam with Nesterov momentum (PyTorch's torch.optim.NAdam algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, check_implementation_flags
from tgrad.tensor import Tensor


def nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], mu_products: list[Tensor], state_steps: list[Tensor], *,
          lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
          momentum_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """One NAdam step for one parameter group (in place, under no_grad)::

        t <- t + 1;  g <- -g if maximize
        decoupled: p <- p (1 - lr wd)        else: g <- g + wd p
        mu_t = b1 (1 - 0.96^(t psi) / 2);   mu_{t+1} = b1 (1 - 0.96^((t+1) psi) / 2)
        P_t = mu_1 ... mu_t  (state 'mu_product')
        m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
        d = sqrt(v / (1 - b2^t)) + eps
        p <- p - lr (1 - mu_t) / (1 - P_t) g / d - lr mu_{t+1} / (1 - P_t mu_{t+1}) m / d
    """
    with no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            m, v, mu_product, step_t = exp_avgs[i], exp_avg_sqs[i], mu_products[i], state_steps[i]
            step_t.add_(1)
            step = step_t.item()
            bias_correction2 = 1 - beta2 ** step
            if weight_decay != 0:
                if decoupled_weight_decay:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g + p * weight_decay
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            mu_product.mul_(mu)
            prod = mu_product.item()
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v / bias_correction2).sqrt() + eps
            p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - prod))
            p.addcdiv_(m, denom, value=-lr * mu_next / (1.0 - prod * mu_next))


class NAdam(Optimizer):
    """NAdam (Dozat, "Incorporating Nesterov Momentum into Adam"), PyTorch's update rule
    (see :func:`nadam`); ``decoupled_weight_decay=True`` gives NAdamW. State per parameter:
    'step' (float32 scalar tensor), 'mu_product' (float64 scalar tensor, the running
    product of the momentum schedule), 'exp_avg', 'exp_avg_sq'."""

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_implementation_flags("NAdam", foreach, None, capturable, differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import tensor, zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, v, mus, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0, dtype="float32")
                    st["mu_product"] = tensor(1.0, dtype="float64")
                    st["exp_avg"] = zeros_like(p)
                    st["exp_avg_sq"] = zeros_like(p)
                params.append(p)
                grads.append(p._grad)
                m.append(st["exp_avg"])
                v.append(st["exp_avg_sq"])
                mus.append(st["mu_product"])
                steps.append(st["step"])
            beta1, beta2 = group["betas"]
            nadam(params, grads, m, v, mus, steps, lr=group["lr"], beta1=beta1, beta2=beta2,
                  eps=group["eps"], weight_decay=group["weight_decay"],
                  momentum_decay=group["momentum_decay"],
                  decoupled_weight_decay=group["decoupled_weight_decay"],
                  maximize=group["maximize"])
        return loss
