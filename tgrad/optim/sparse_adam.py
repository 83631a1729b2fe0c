"""SparseAdam: lazy Adam for sparse COO gradients (PyTorch's torch.optim.SparseAdam)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tgrad.optim import _functional
from tgrad.optim.optimizer import Optimizer
from tgrad.tensor import Tensor


class SparseAdam(Optimizer):
    """Adam that updates, at each step, only the entries a sparse gradient has (its
    coalesced indices): the moments elsewhere are not decayed, and the bias correction uses
    the parameter's global step count (see ``_functional.sparse_adam``). Parameters must be
    dense and real, their gradients sparse (``nn.Embedding(sparse=True)``); a dense gradient
    raises PyTorch's error. State per parameter: 'step' (a Python int, as PyTorch),
    'exp_avg', 'exp_avg_sq' (dense, the parameter's shape)."""

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p._sparse:
                    sparse_params.append([index, d_index])
                if p.dtype.is_complex:
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             f"dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             f"support complex parameters")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        from tgrad.ops.creation import zeros_like
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                if not p._grad._sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                if p.device.type != "cpu":
                    raise RuntimeError(f"SparseAdam: tgrad's sparse gradients are CPU-only, "
                                       f"got a parameter on {p.device}")
                st = self.state[p]
                if not st:
                    st.update(step=0, exp_avg=zeros_like(p), exp_avg_sq=zeros_like(p))
                st["step"] = int(st["step"]) + 1  # (an int also after load_state_dict)
                params.append(p)
                grads.append(p._grad)
                exp_avgs.append(st["exp_avg"])
                exp_avg_sqs.append(st["exp_avg_sq"])
                steps.append(st["step"])
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            _functional.sparse_adam(params, grads, exp_avgs, exp_avg_sqs, steps,
                                    lr=float(lr.item() if isinstance(lr, Tensor) else lr),
                                    beta1=beta1, beta2=beta2, eps=group["eps"],
                                    maximize=group.get("maximize", False))
        return loss
