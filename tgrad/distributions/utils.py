"""Helpers shared by the distributions (PyTorch's ``torch.distributions.utils``)."""

from __future__ import annotations

import numbers
from typing import Any

import ml_dtypes

from tgrad import dtypes
from tgrad.autograd.grad_mode import enable_grad, no_grad
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import tensor
from tgrad.ops.extras import logit
from tgrad.ops.pointwise_extras import broadcast_tensors
from tgrad.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "set_probs_or_logits", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]



def in_float64(fn, *params: Tensor) -> Tensor:
    """``fn`` on float64 copies of ``params`` (no graph), cast back to params[0]'s dtype."""
    with no_grad():
        return fn(*[t.detach().to(dtypes.float64) for t in params]).to(params[0].dtype)


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """The values broadcast to one shape (``broadcast_tensors``' views, so gradients flow
    back to the originals).
    Python numbers become 0-d tensors of the first tensor argument's dtype and device, or of
    the default dtype when all are numbers; tensors keep their own dtypes."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    ref = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = ref.dtype if ref is not None else dtypes.get_default_dtype()
    device = ref.device if ref is not None else None
    ts = [v if isinstance(v, Tensor) else tensor(v, dtype=dtype, device=device)
          for v in values]
    return broadcast_tensors(*ts)


def _tril_flat_indices(n: int, diag: int) -> list[int]:
    """Row-major flat indices (i n + j) of the entries j < i + diag + 1 of an n x n matrix
    (PyTorch's tril mask order)."""
    return [i * n + j for i in range(n) for j in range(n) if j < i + diag + 1]


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of (..., n, n) ``mat`` on and below diagonal ``diag``, row by row, as
    (..., m) (a gather: differentiable)."""
    n = mat.shape[-1]
    # int64 given: the list is empty for n < 2 - diag
    idx = tensor(_tril_flat_indices(n, diag), dtype=dtypes.int64, device=mat.device)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,)).index_select(-1, idx)


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of ``tril_matrix_to_vec``: (..., m) -> (..., n, n), zeros above diagonal
    ``diag``; raises ValueError when m is not such a count for any n."""
    m = vec.shape[-1]
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > 1e-9 or len(_tril_flat_indices(round(n), diag)) != m:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         f"the lower triangular part of a square D x D matrix.")
    n = round(n)
    where = [m] * (n * n)  # slot m is a zero appended to vec
    for k, flat in enumerate(_tril_flat_indices(n, diag)):
        where[flat] = k
    padded = F.pad(vec, [0, 1], value=0.0)
    out = padded.index_select(-1, tensor(where, dtype=dtypes.int64, device=vec.device))
    return out.reshape(tuple(vec.shape[:-1]) + (n, n))


def set_probs_or_logits(dist, probs, logits) -> Tensor:
    """Set exactly one of ``dist.probs`` / ``dist.logits`` (a tensor or float, as a tensor;
    the other is a lazy_property) and return it (the binary families' parameter)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (dist.probs,) = broadcast_all(probs)
        return dist.probs
    (dist.logits,) = broadcast_all(logits)
    return dist.logits


def _finfo(dtype: dtypes.DType):
    """NumPy's finfo of a floating tgrad dtype (bfloat16's from ml_dtypes); TypeError
    (PyTorch's torch.finfo text) for an integer or bool dtype."""
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                        f"to handle 'torch.finfo' (got {dtype})")
    return ml_dtypes.finfo(dtype.np)


def clamp_probs(probs: Tensor) -> Tensor:
    """probs clamped to [eps, 1 - eps] (eps: the dtype's machine epsilon), so their logs and
    log1p(-p) are finite."""
    eps = float(_finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log p (categorical), or the log-odds logit(p) = log p - log(1 - p) (binary), of the
    clamped probabilities."""
    p = clamp_probs(probs)
    return logit(p) if is_binary else ew.log(p)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """sigmoid(logits) (binary), else softmax over the last dim."""
    return ew.sigmoid(logits) if is_binary else F.softmax(logits, dim=-1)


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed once on first access (with grad enabled, so it stays
    differentiable when first read under no_grad), then stored in the instance's
    ``__dict__``: the other parameterisation of Bernoulli and Categorical."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


@lazy_property
def logits(self) -> Tensor:
    """The log-odds log(p / (1 - p))."""
    return probs_to_logits(self.probs, is_binary=True)


@lazy_property
def probs(self) -> Tensor:
    """The probability of success (of 1)."""
    return logits_to_probs(self.logits, is_binary=True)


# The two parameterisations of a two-outcome family (Bernoulli, Geometric, Binomial,
# NegativeBinomial): the one not given is derived on first use. A class names them in its
# own body (``logits = binary_logits``) so docs/api.md lists them there.
binary_logits, binary_probs = logits, probs
del logits, probs
