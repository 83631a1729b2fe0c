"""Adafactor: factored second moments (PyTorch's torch.optim.Adafactor algorithm)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.optim.optimizer import Optimizer, _get_scalar_dtype
from tgrad.tensor import Tensor


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, "Adafactor: Adaptive Learning Rates with Sublinear Memory
    Cost"), PyTorch 2.13's variant: ``lr`` caps the relative step size rho_t and scales the
    decoupled weight decay, and eps1 (None: the parameter dtype's machine epsilon) is applied
    to the variance estimate and the update, not to the factors. A parameter of dim > 1 is
    factored over its last two dims: state 'row_var' (shape [..., m, 1]) and 'col_var'
    ([..., 1, n]); a 0-D / 1-D one keeps 'variance' (its shape). Plus 'step' (scalar
    tensor). Per step, t <- t + 1, G = grad (-grad if maximize):

        b2hat = 1 - t^beta2_decay;  rho = min(lr, 1 / sqrt(t));
        alpha = max(eps2, RMS(p)) rho   (RMS of p before the weight decay);
        p <- p (1 - lr weight_decay);
        dim > 1: R <- lerp(R, mean(G^2, -1), 1 - b2hat); C <- lerp(C, mean(G^2, -2), 1 - b2hat);
                 V = R @ C / max(mean(R, -2), eps1)
        else:    V <- lerp(V, G^2, 1 - b2hat)
        U = G / sqrt(max(V, eps1^2));  p <- p - alpha / max(1, RMS(U) / d) U.

    ``foreach`` is accepted for compatibility (same update)."""

    _tensor_step = True

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    @staticmethod
    def _init_state(p, group: dict) -> dict:
        from tgrad.ops.creation import tensor, zeros, zeros_like
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        st = {"step": tensor(0.0, dtype=_get_scalar_dtype())}
        if p.dim() > 1:
            shape = list(p.shape)
            st["row_var"] = zeros(shape[:-1] + [1], dtype=p.dtype, device=p.device)
            st["col_var"] = zeros(shape[:-2] + [1, shape[-1]], dtype=p.dtype, device=p.device)
        else:
            st["variance"] = zeros_like(p)
        return st

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.dtypes import finfo
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, steps = self._collect(group, self._init_state, "step")
            lr = float(group["lr"])
            beta2_decay, d, wd = group["beta2_decay"], group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            with no_grad():
                for p, g, step_t in zip(params, grads, steps):
                    st = self.state[p]
                    if g.is_complex():
                        raise RuntimeError("Adafactor does not support complex parameters")
                    if group["maximize"]:
                        g = -g
                    if eps1 is None:  # as PyTorch: the first parameter's dtype sets it
                        eps1 = finfo(p.dtype).eps
                    step_t.add_(1)
                    t = step_t.item()
                    one_minus_beta2 = t ** beta2_decay
                    rho = min(lr, 1 / t ** 0.5)
                    alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
                    if wd != 0:
                        p.mul_(1 - lr * wd)
                    g2 = g * g
                    if g.dim() > 1:
                        row, col = st["row_var"], st["col_var"]
                        row.lerp_(g2.mean(dim=-1, keepdim=True), one_minus_beta2)
                        col.lerp_(g2.mean(dim=-2, keepdim=True), one_minus_beta2)
                        var = (row @ col) / row.mean(dim=-2, keepdim=True).clamp(min=eps1)
                    else:
                        st["variance"].lerp_(g2, one_minus_beta2)
                        var = st["variance"]
                    update = var.clamp(min=eps1 * eps1).rsqrt() * g
                    denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
                    p.add_(update, alpha=-alpha / denom)
        return loss
