"""Channel-wise ("feature") dropout, re-exported by tgrad.nn.functional: dropout1d,
dropout2d, dropout3d.

Shapes: input (N, C, *spatial) or, unbatched, (C, *spatial). In training each channel
(all of input[n, c]) is kept with probability 1 - p and scaled by 1 / (1 - p), or zeroed:
y = x * m, m of shape (N, C, 1, ..., 1) (unbatched (C, 1, ..., 1)). m is ``F.dropout`` of a
tensor of ones, so it comes from tgrad's generator (seeded by tgrad.manual_seed) like
every dropout; the product is a tgrad op, so dx = g * m and double backward work.
"""

from __future__ import annotations

import warnings

from tgrad.nn.functional import _check_float, _check_tensor, dropout
from tgrad.tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d"]


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,  # noqa: A002
                     batched: bool, op: str) -> Tensor:
    """x * m with one Bernoulli(1 - p) / (1 - p) value per channel (the leading one or two
    dims: (N, C) when ``batched``, (C,) otherwise)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    _check_float(op, input)
    from tgrad.ops.creation import ones, zeros
    if p == 1.0:  # PyTorch's x * 0 before any rank check (so NaN/inf give NaN, 0-d works)
        zero = zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    shape = _channel_shape(input, 2 if batched else 1)
    mask = dropout(ones(shape, dtype=input.dtype, device=input.device), p, True)
    return input.mul_(mask) if inplace else input * mask


def _channel_shape(input: Tensor, lead: int) -> tuple:  # noqa: A002
    """The shape of a per-channel mask: input's ``lead`` leading dims, then 1s."""
    if input.ndim < lead:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        if p != p:  # NaN: PyTorch's kernel check (a RuntimeError, also when not training)
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p``, scale the rest by
    1/(1-p); the identity when not training."""
    _check_tensor("dropout1d", input)
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim == 3, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability ``p``, scale the rest by
    1/(1-p). As PyTorch, a 3-D input is read as (N, C, L) (with its warning), and other
    ranks warn and drop over their first two dims."""
    _check_tensor("dropout2d", input)
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change in "
                      "a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, True, "dropout2d")


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``, scale
    the rest by 1/(1-p). Other ranks warn (PyTorch's message) and are read as unbatched."""
    _check_tensor("dropout3d", input)
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, input.ndim == 5, "dropout3d")
