"""``tgrad.special``: PyTorch's ``torch.special`` namespace, for the functions tgrad provides.

Most are tgrad's elementwise ops under their SciPy-style names (gammaln = lgamma, psi =
digamma, expit = sigmoid, multigammaln = mvlgamma, ...); ``xlog1py``, ``entr`` and
``sinc`` are defined here or in tgrad.ops.special, the error-function family (erfc, erfcx,
ndtr, ndtri, log_ndtr, erfinv) in tgrad.ops.erfs. All are elementwise and keep the input's
shape (xlogy / xlog1py broadcast their two arguments), except the reductions logsumexp /
softmax / log_softmax along ``dim``. Not provided (yet): i0 / i0e / i1 / i1e, zeta,
gammainc(c), the Bessel and orthogonal-polynomial families, airy_ai.
"""

from __future__ import annotations

import math

from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops.erfs import erfc, erfcx, erfinv, log_ndtr, ndtr, ndtri
from tgrad.ops.extras import _tensors_in_result_dtype, logit, xlogy
from tgrad.ops.reduce import logsumexp
from tgrad.ops.special import _float_input, digamma, lgamma, mvlgamma, polygamma, sinc
from tgrad.tensor import Tensor

__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
           "erfinv", "ndtr", "ndtri", "log_ndtr", "expit", "logit", "xlogy", "xlog1py",
           "entr", "sinc", "expm1", "exp2", "log1p", "logsumexp", "softmax", "log_softmax",
           "round"]

gammaln = lgamma
psi = digamma
erf = ew.erf
expit = ew.sigmoid
expm1 = ew.expm1
exp2 = ew.exp2
log1p = ew.log1p
round = ew.round  # noqa: A001


def multigammaln(input: Tensor, p: int) -> Tensor:  # noqa: A002
    """The multivariate log-gamma of dimension p (``mvlgamma``), elementwise."""
    return mvlgamma(input, p)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """exp(x) / sum(exp(x)) along ``dim`` (the input's shape), computed in ``dtype``."""
    from tgrad.nn.functional import softmax as _softmax
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """x - logsumexp(x) along ``dim`` (the input's shape), computed in ``dtype``."""
    from tgrad.nn.functional import log_softmax as _log_softmax
    return _log_softmax(input, dim, dtype=dtype)


def xlog1py(input, other) -> Tensor:  # noqa: A002
    """x log1p(y) (broadcast, in the promoted float dtype), 0 where x == 0 unless y is NaN
    (PyTorch's rule); dx = log1p(y), dy = x / (1 + y). Where x == 0 and log1p(y) is not
    finite (y <= -1 or y = inf) the log1p is taken of 0 instead, so the branch not taken
    stays finite (its gradients are then 0, where PyTorch's are NaN / inf)."""
    x, y = _tensors_in_result_dtype(input, other)
    unsafe = ew.logical_and(ew.eq(x, 0), ew.logical_or(ew.le(y, -1), ew.eq(y, math.inf)))
    return ew.where(unsafe, 0.0, x * ew.log1p(ew.where(unsafe, 0.0, y)))


class Entr(Function):
    """y = -x log x for x > 0, 0 at 0, -inf for x < 0 (NaN stays NaN);
    dx = -g (1 + log x) (+inf at 0, NaN for x < 0, as PyTorch)."""

    node_name = "SpecialEntrBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        pos = ew.gt(x, 0.0)
        val = -x * ew.log(ew.where(pos, x, 1.0))
        return ew.where(pos, val, ew.where(ew.eq(x, 0.0), 0.0, ew.where(
            ew.lt(x, 0.0), -math.inf, x)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * (1.0 + ew.log(x))


def entr(input: Tensor) -> Tensor:  # noqa: A002
    """The elementwise entropy -x log x (any shape; see ``Entr``)."""
    from tgrad.ops._common import rounded_to
    x, half = _float_input("entr", input)
    return rounded_to(Entr.apply(x), half)
