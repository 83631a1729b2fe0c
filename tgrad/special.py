"""``tgrad.special``: PyTorch's ``torch.special`` namespace, for the functions tgrad provides.

Most are tgrad's ops under their SciPy-style names (gammaln = lgamma, psi = digamma,
expit = sigmoid, multigammaln = mvlgamma, ...); ``xlog1py``, ``entr`` and ``sinc`` are
defined in tgrad.ops.special, the error-function family (erfc, erfcx, ndtr, ndtri,
log_ndtr, erfinv) in tgrad.ops.erfs, gammainc / gammaincc (PyTorch's igamma / igammac) in
tgrad.ops.incomplete_gamma. All are elementwise and keep the input's shape (xlogy /
xlog1py / gammainc broadcast their two arguments), except the reductions logsumexp /
softmax / log_softmax along ``dim``. Not provided (yet): i0 / i0e / i1 / i1e, zeta, the
Bessel and orthogonal-polynomial families, airy_ai.
"""

from __future__ import annotations

from tgrad.nn.functional import log_softmax, softmax
from tgrad.ops import elementwise as ew
from tgrad.ops.erfs import erfc, erfcx, erfinv, log_ndtr, ndtr, ndtri
from tgrad.ops.extras import logit, xlogy
from tgrad.ops.incomplete_gamma import igamma, igammac
from tgrad.ops.reduce import logsumexp
from tgrad.ops.special import digamma, entr, lgamma, mvlgamma, polygamma, sinc, xlog1py

__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
           "erfinv", "ndtr", "ndtri", "log_ndtr", "expit", "logit", "xlogy", "xlog1py",
           "entr", "sinc", "expm1", "exp2", "log1p", "logsumexp", "softmax", "log_softmax",
           "round", "gammainc", "gammaincc"]

gammaln = lgamma
gammainc = igamma
gammaincc = igammac
psi = digamma
erf = ew.erf
expit = ew.sigmoid
expm1 = ew.expm1
exp2 = ew.exp2
log1p = ew.log1p
round = ew.round  # noqa: A001
multigammaln = mvlgamma
