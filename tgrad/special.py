"""``tgrad.special``: PyTorch's ``torch.special`` namespace, for the functions tgrad provides.

Most are tgrad's ops under their SciPy-style names (gammaln = lgamma, psi = digamma,
expit = sigmoid, multigammaln = mvlgamma
modified_bessel_i0 = i0
modified_bessel_i1 = i1, ...); ``xlog1py``, ``entr`` and ``sinc`` are
defined in tgrad.ops.special, the error-function family (erfc, erfcx, ndtr, ndtri,
log_ndtr, erfinv) in tgrad.ops.erfs, gammainc / gammaincc (PyTorch's igamma / igammac) in
tgrad.ops.incomplete_gamma, the modified Bessel functions i0 / i0e / i1 / i1e (also as
modified_bessel_i0 / modified_bessel_i1) in tgrad.ops.bessel; bessel_j0 / j1 / y0 / y1,
modified_bessel_k0 / k1, scaled_modified_bessel_k0 / k1, spherical_bessel_j0, airy_ai, zeta
and the orthogonal polynomials (chebyshev_polynomial_t/u/v/w, shifted_chebyshev_polynomial_
t/u/v/w, hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p; x and n
broadcast) in tgrad.ops.special_functions, which, as PyTorch 2.13, record no graph (zeta:
differentiable in q only). All are elementwise and keep the input's shape (xlogy / xlog1py /
gammainc / zeta / the polynomials broadcast their two arguments), except the reductions
logsumexp / softmax / log_softmax along ``dim``.
"""

from __future__ import annotations

from tgrad.nn import functional as _functional
from tgrad.ops import elementwise as ew
from tgrad.ops.bessel import i0, i0e, i1, i1e
from tgrad.ops.erfs import erfc, erfcx, erfinv, log_ndtr, ndtr, ndtri
from tgrad.ops.extras import logit, xlogy
from tgrad.ops.incomplete_gamma import igamma, igammac
from tgrad.ops.reduce import logsumexp
from tgrad.ops.special import digamma, entr, lgamma, mvlgamma, polygamma, sinc, xlog1py
from tgrad.ops.special_functions import *  # noqa: F403
from tgrad.ops.special_functions import __all__ as _more

__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
           "erfinv", "ndtr", "ndtri", "log_ndtr", "expit", "logit", "xlogy", "xlog1py",
           "entr", "sinc", "expm1", "exp2", "log1p", "logsumexp", "softmax", "log_softmax",
           "round", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e", "modified_bessel_i0",
           "modified_bessel_i1", *_more]

gammaln = lgamma


def softmax(input, dim: int, *, dtype=None):  # noqa: A002
    """``nn.functional.softmax`` with ``dim`` required, as PyTorch's special.softmax."""
    return _functional.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim: int, *, dtype=None):  # noqa: A002
    """``nn.functional.log_softmax`` with ``dim`` required, as PyTorch's
    special.log_softmax."""
    return _functional.log_softmax(input, dim, dtype=dtype)


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
modified_bessel_i0 = i0
modified_bessel_i1 = i1

from tgrad import _out  # noqa: E402

_out.install(globals(), "special")  # PyTorch's out= (tgrad/_out.py's NAMESPACE_FUNCTIONS)
