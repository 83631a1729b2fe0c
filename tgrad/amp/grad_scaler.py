"""``tgrad.amp.GradScaler``: PyTorch's dynamic loss scaling for float16 training.

    scaler.scale(loss).backward()   # gradients of loss * scale (no float16 underflow)
    scaler.step(optimizer)          # unscale_ (divide the grads by scale), then step unless
                                    # some gradient is inf/NaN (that step is skipped)
    scaler.update()                 # scale *= backoff_factor after a skipped step, or
                                    # *= growth_factor after growth_interval good ones

As PyTorch's, the scale is a float32 value once ``scale`` has been called (before, get_scale
is ``init_scale`` as given): updates round to float32 and a growth to inf is not taken, and
unscale_ multiplies by float32(1 / scale).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.ops.creation import tensor
from tgrad.tensor import Tensor

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = 0, 1, 2
_NEW_SCALE = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
              "torch.FloatTensor with requires_grad=False.")


def _f32(x: float) -> float:
    """x rounded to float32 (PyTorch keeps the scale in a float32 tensor)."""
    with np.errstate(over="ignore"):  # too large: inf (update() then keeps the old scale)
        return float(np.float32(x))


class GradScaler:
    """Scales the loss, unscales the gradients and skips the optimizer steps that met an
    inf/NaN gradient, adapting the scale (module docstring). ``enabled=False`` makes every
    method a pass-through (scale() returns its argument, step() just steps); so does
    ``device="cuda"`` (the default) where tgrad.cuda is not available, with PyTorch's
    warning."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if device == "cuda" and enabled:
            from tgrad import cuda
            if not cuda.is_available():  # PyTorch's warning, and the scaler is disabled
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not "
                              "available.  Disabling.", stacklevel=2)
                enabled = False
        if enabled:  # PyTorch checks the factors of an enabled scaler only
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._device = device
        self._enabled = enabled
        self._scale = float(init_scale)  # float32-rounded from the first scale() on
        # kept as given (PyTorch's getters and state_dict return them so)
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._per_optimizer: dict = {}
        self._scale_used = False  # PyTorch creates its _scale tensor at the first scale()

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or a list / tuple of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if not self._scale_used:  # PyTorch's float32 scale tensor is made here
                self._scale_used = True
                self._scale = _f32(self._scale)
            # times PyTorch's 0-dim float32 scale tensor, with its dtype promotion: a 0-dim
            # float16 / bfloat16 loss (or an integer tensor) comes back float32, an n-d
            # float16 / bfloat16 output keeps its dtype
            return outputs * tensor(self._scale, dtype=dtypes.float32, device=outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _check_scale(self, funcname: str) -> None:
        if not self._scale_used:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate "
                                 f"your script did not use scaler.scale(loss or outputs) "
                                 f"earlier in the iteration.")

    def _state(self, optimizer) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY,
                                                              "found_inf": False,
                                                              "checked": False})

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and note whether any is
        inf/NaN (once per optimizer between updates)."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        stage = self._per_optimizer.get(id(optimizer), {"stage": _READY})["stage"]
        if stage == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if stage == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        if any(g.dtype.name == "float16" for g in grads):  # PyTorch's: fp32 master weights
            raise ValueError("Attempting to unscale FP16 gradients.")
        state = self._state(optimizer)
        inv = _f32(1.0 / self._scale)  # PyTorch's: scale.double().reciprocal().float()
        found = False
        with no_grad():
            for g in grads:
                g.mul_(inv)
                if not found and not bool(g.isfinite().all()):
                    found = True
        state["found_inf"] = found
        state["checked"] = bool(grads)  # PyTorch records no inf check without gradients
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (if not done yet), then ``optimizer.step(*args, **kwargs)`` unless an
        inf/NaN gradient was found; returns the step's result (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if not state["checked"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adapt the scale from the steps since the last update (or set ``new_scale``)."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):  # PyTorch's checks (its message names torch)
                if (new_scale.device.type != self._device or new_scale.numel() != 1
                        or new_scale.requires_grad):
                    raise AssertionError(_NEW_SCALE)
                new_scale = new_scale.item()
            self._scale = _f32(new_scale)
        else:
            if not any(s.get("checked") for s in self._per_optimizer.values()):
                raise AssertionError("No inf checks were recorded prior to update.")
            # PyTorch's _amp_update_scale_: float32 scale times the (double) factor, rounded
            # to float32; a growth that overflows to inf is not taken
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = _f32(self._scale * self._growth_factor)
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was "
                               "saved from a disabled instance of GradScaler.")
        scale = float(state_dict["scale"])
        self._scale = _f32(scale) if self._scale_used else scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
