"""PyTorch's torch.signal: ``tgrad.signal.windows`` (window functions for filter design
and spectral analysis)."""

from tgrad.signal import windows

__all__ = ["windows"]
