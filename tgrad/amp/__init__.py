"""tgrad.amp, PyTorch's automatic mixed precision: ``autocast`` regions
(tgrad/amp/autocast_mode.py, with ``custom_fwd`` / ``custom_bwd`` for custom Functions) and
``GradScaler`` (tgrad/amp/grad_scaler.py)."""

from tgrad.amp.autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from tgrad.amp.grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype",
           "is_autocast_available",
           "custom_fwd", "custom_bwd"]
