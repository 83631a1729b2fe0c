"""Stochastic weight averaging and exponential moving averages, as
``torch.optim.swa_utils``: ``AveragedModel``, ``SWALR``, ``update_bn`` and the averaging
functions.

    SWA (default):  avg <- avg + (p - avg) / (n + 1)   (the running mean of the models seen)
    EMA:            avg <- decay avg + (1 - decay) p
    SWALR:          lr anneals from the optimizer's lr to swa_lr over anneal_epochs steps
                    ('cos': alpha = (1 - cos(pi t)) / 2, 'linear': alpha = t), then stays
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Callable, Iterable

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.modules.batchnorm import _BatchNorm
from tgrad.nn.modules.module import Module
from tgrad.ops.creation import tensor
from tgrad.optim.lr_scheduler import LRScheduler, _per_group, _warn_get_lr_called_within_step
from tgrad.optim.optimizer import Optimizer
from tgrad.tensor import Tensor

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_swa_avg_fn",
           "get_ema_multi_avg_fn", "get_swa_multi_avg_fn"]


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """avg_fn(avg, p, n) = decay avg + (1 - decay) p (decay in [0, 1])."""
    _check_decay(decay)
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """avg_fn(avg, p, n) = avg + (p - avg) / (n + 1)."""
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """multi_avg_fn(avgs, ps, n): each avg <- lerp(avg, p, 1 - decay), in place (integer
    buffers: the float result cast back, as PyTorch); decay in [0, 1]."""
    _check_decay(decay)

    def ema_update(ema_params: list, current_params: list, num_averaged) -> None:
        for avg, p in zip(ema_params, current_params):
            if avg.dtype.is_floating_point:
                avg.lerp_(p, 1 - decay)
            else:
                avg.copy_(avg * decay + p * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """multi_avg_fn(avgs, ps, n): each avg += (p - avg) / (n + 1), in place (integer
    buffers: the float result cast back, as PyTorch)."""
    def swa_update(averaged_params: list, current_params: list, num_averaged) -> None:
        for avg, p in zip(averaged_params, current_params):
            if avg.dtype.is_floating_point:
                avg.lerp_(p, 1 / (float(num_averaged) + 1))
            else:
                avg.copy_(avg + (p - avg) / (num_averaged + 1))
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are the
    average of the models passed to ``update_parameters``: SWA's running mean unless
    ``avg_fn(avg, p, n)`` (returns the new average) or ``multi_avg_fn(avgs, ps, n)`` (in
    place) says otherwise. ``n_averaged`` (an int64 buffer) counts the updates; the first
    copies the model. Without ``use_buffers`` the buffers are copied from the model."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, model: Module) -> tuple:
        if self.use_buffers:
            return (list(itertools.chain(self.module.parameters(), self.module.buffers())),
                    list(itertools.chain(model.parameters(), model.buffers())))
        return list(self.module.parameters()), list(model.parameters())

    def update_parameters(self, model: Module) -> None:
        mine, theirs = self._averaged(model)
        with no_grad():
            avgs = [a.detach() for a in mine]
            news = [p.detach().to(a.device) for a, p in zip(avgs, theirs)]
            if int(self.n_averaged.item()) == 0:
                for a, p in zip(avgs, news):
                    a.copy_(p)
            elif self.avg_fn is not None:
                count = self.n_averaged
                for a, p in zip(avgs, news):
                    a.copy_(self.avg_fn(a, p, count.to(a.device)))
            else:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(avgs, news, self.n_averaged)
            if not self.use_buffers:  # keep the buffers in sync with the model
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1


def update_bn(loader: Iterable, model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` in one pass over ``loader``
    (each item an input, or a list/tuple whose first element is): the statistics are reset
    and averaged over all batches (momentum None meanwhile), training mode restored after."""
    with no_grad():  # as PyTorch's @torch.no_grad(): the passes build no graph
        _update_bn(loader, model, device)


def _update_bn(loader: Iterable, model: Module, device) -> None:
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    try:
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    finally:
        for m, momentum in momenta.items():
            m.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to its ``swa_lr`` over ``anneal_epochs`` steps ('cos' or
    'linear'), then hold it (PyTorch's recursive form: correct when composed with the
    optimizer's own lr changes)."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        # kept as "_anneal_strategy", PyTorch's state_dict key (a checkpoint loads across)
        self._anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    @property
    def anneal_strategy(self) -> str:
        return self._anneal_strategy

    def _anneal(self, t: float) -> float:
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def get_lr(self) -> list:
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev = self._anneal(max(0.0, min(1.0, (step - 1) / span)))
        alpha = self._anneal(max(0.0, min(1.0, step / span)))
        out = []
        for group in self.optimizer.param_groups:
            # the lr before annealing, recovered from the current one
            start = group["swa_lr"] if prev == 1 else \
                (group["lr"] - prev * group["swa_lr"]) / (1 - prev)
            out.append(group["swa_lr"] * alpha + start * (1 - alpha))
        return out
