"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize."""

from __future__ import annotations

from tgrad.optim import _functional
from tgrad.optim.optimizer import (
    Optimizer,
    _get_scalar_dtype,
    check_adam_args,
    check_fused_param,
    check_implementation_flags,
    check_tensor_lr,
)


class Adam(Optimizer):
    """Adam (PyTorch's update rule, see ``_functional.adam``); weight_decay is L2 added to
    the gradient (decoupled as AdamW with ``decoupled_weight_decay=True``). State per
    parameter: step (scalar tensor, float32, or float64 when the default dtype is float64),
    exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad)."""

    _tensor_step = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_tensor_lr(lr, foreach, capturable)
        check_implementation_flags(type(self).__name__, foreach, fused, capturable,
                                   differentiable)
        check_adam_args(lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _sparse_grad_error(self) -> str:  # also AdamW's, as PyTorch
        return "Adam does not support sparse gradients, please consider SparseAdam instead"

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros_like
        if group["fused"]:  # checked as each parameter's state is made, as PyTorch
            check_fused_param(p)
        st = {"step": tensor(0.0, dtype=_get_scalar_dtype(group["fused"])),
              "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}
        if group["amsgrad"]:
            st["max_exp_avg_sq"] = zeros_like(p)
        return st

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, m, v, steps = self._collect(group, self._init_state, "exp_avg",
                                                       "exp_avg_sq", "step")
            vmax = [self.state[p].get("max_exp_avg_sq") for p in params]
            beta1, beta2 = group["betas"]
            _functional.adam(params, grads, m, v, vmax, steps, lr=group["lr"], beta1=beta1,
                             beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                             amsgrad=group["amsgrad"], maximize=group["maximize"],
                             decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p (1 - lr wd) before the Adam update (its
    groups always have ``decoupled_weight_decay=True``, also after ``load_state_dict``)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:  # as PyTorch: AdamW's decay is always decoupled
            group["decoupled_weight_decay"] = True
