"""The error-function family: erfc, erfcx, ndtr, log_ndtr, ndtri and erfinv (shape-preserving
elementwise ops, composites of tgrad's elementwise ops, so they run on every backend).

Maths: erfcx(x) = exp(x^2) erfc(x) is the core, for x >= 0 as Taylor polynomials about 1 and
3 on [0, 2] and [2, 4] (33 and 26 terms, their coefficients computed once, at import, in
80-digit decimals from erfcx' = 2x erfcx - 2/sqrt(pi)) and beyond 4 as the continued fraction
erfcx(x) = 1/sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))) (40 levels);
erfcx(-x) = 2 exp(x^2) - erfcx(x). Then erfc(x) = exp(-x^2) erfcx(x) for x >= 1/2 (exp(-x^2)
as exp(-h^2) exp(-(x - h)(x + h)), h = x rounded to 1/16, so that x^2's rounding does not
cost relative precision), 1 - erf(x) below; ndtr(x) = exp(-x^2/2) erfcx(-x/sqrt 2) / 2 below
-1 (reflected above 1, (1 + erf(x/sqrt 2)) / 2 between) and log_ndtr by PyTorch's split on
top of them; erfinv's tails (|y| >= 1/2) and ndtri (p < 1/4 or > 3/4) solve erfc(v) = s by
Newton steps on log erfc from Giles' approximation or the asymptote. Relative errors ~1e-15
in float64 (see docs/design.md). On the CPU (float32 / float64) the forwards run as
tgrad.backends._numpy_special: the same operations, each region on its own elements
(``_numpy_on_cpu``; bit-identical; but float32 erfc, ndtr, ndtri and erfinv, computed in
float64 from their own fits, <= 0.502 ulp), as do erfcx's and log_ndtr's backward factors
when no graph is recorded.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.backends.numpy import _erfcx_taylor
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    apply_float_unary,
    host_reads_ok,
    route_sparse,
    tensor_method,
    wrap,
)
from tgrad.ops.inplace import inplace_method
from tgrad.ops.special import _horner
from tgrad.tensor import Tensor

__all__ = ["erfc", "erfinv"]

_SQRT_PI = math.sqrt(math.pi)
_R2 = 1 / math.sqrt(2.0)
_F32_F64 = (dtypes.float32, dtypes.float64)  # the dtypes of the NumPy forwards


def _numpy_on_cpu(name: str):
    """Decorator: the composite fn(x) runs as ``tgrad.backends._numpy_special.<name>`` on a
    float32 / float64 CPU tensor (the same operations per element, each region on its own
    elements only: bit-identical, 20-100x faster; but float32 erfc, ndtr and ndtri, from
    their own fits in float64: within 0.505 ulp of the float64 composites); elsewhere
    (cuda, halves) as written. The composite stays reachable as ``.composite`` (the tests
    compare the two)."""
    def deco(fn):
        def run(x: Tensor) -> Tensor:
            if x.device.type == "cpu" and x.dtype in _F32_F64:
                from tgrad.backends import _numpy_special
                return wrap(getattr(_numpy_special, name)(x._data), x.device)
            return fn(x)
        run.__name__, run.__doc__, run.composite = fn.__name__, fn.__doc__, fn
        return run
    return deco


# (lo, hi, centre, coefficients): |x - centre| <= 1, to ~2 ulp
_ERFCX_PIECES = ((0.0, 2.0, 1.0, _erfcx_taylor(1.0, 33)), (2.0, 4.0, 3.0, _erfcx_taylor(3.0, 26)))


def _erfcx_pos(x: Tensor) -> Tensor:
    """erfcx(x) for x >= 0 (+inf included; other elements, NaN too, give garbage)."""
    out = None
    for lo, hi, centre, coef in _ERFCX_PIECES:
        val = _horner(coef, ew.clamp(x, lo, hi) - centre)
        out = val if out is None else ew.where(ew.lt(x, lo), out, val)
    xc = ew.where(ew.ge(x, 4.0), x, 4.0)
    return ew.where(ew.ge(x, 4.0), 1.0 / (_erfcx_fraction(xc, 1) * _SQRT_PI), out)


# erfinv's breakpoints and step counts, shared with its NumPy form
# (tgrad/backends/_numpy_special.py), which must give the same float64 bits
ERFCX_FRACTION_LEVELS = 40  # erfcx's continued fraction, beyond its last Taylor piece
GILES_SPLIT = 5.0  # Giles' fits: central for w < 5, in w - 2.5; tail in sqrt(w) - 3
GILES_CENTRAL_AT, GILES_TAIL_AT = 2.5, 3.0
ERFINV_CENTRAL_NEWTON = 2  # Newton steps on erf of the central branch (|y| < 1/2)
ERFCINV_FIT = 16.0  # erfcinv starts from Giles' fit where w < 16, else from the asymptote
ERFCINV_NEWTON = 4  # and takes this many Newton steps on log erfc


def _erfcx_fraction(x: Tensor, last: int) -> Tensor:
    """f_last = x + (last/2) / (x + ((last+1)/2) / (x + ...)), 40 levels in all, for x >= 2.5
    (others: garbage): erfcx(x) = 1/sqrt(pi) / f_1 and f_1 = x + (1/2) / f_2."""
    f = x
    for k in range(ERFCX_FRACTION_LEVELS, last - 1, -1):
        f = x + (k / 2) / f
    return f


def _erfcx_grad(g: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """erfcx'(x) = 2 x erfcx(x) - 2/sqrt(pi), which cancels for large x (5.5e-6 relative at
    x = 1e5 in float64); for x >= 2.5 it is -erfcx(x) / f_2 (``_erfcx_fraction``: with
    erfcx = 1/sqrt(pi) / f_1, 2 x / (sqrt(pi) f_1) - 2/sqrt(pi) = (2/sqrt(pi)) (x - f_1) / f_1
    and x - f_1 = -(1/2) / f_2), all terms positive; 0 at +inf. The 40 levels give f_2 to
    ~7e-16 at x = 2.5 (5e-13 at 2), where the direct form still cancels 14-fold."""
    if x.device.type == "cpu" and x.dtype in _F32_F64 and not (
            is_grad_enabled() and (g.requires_grad or x.requires_grad or y.requires_grad)):
        from tgrad.backends import _numpy_special  # (no graph to record: the same
        # operations on the NumPy arrays, the fraction on its elements only)
        return g * wrap(_numpy_special.erfcx_grad_factor(x._data, y._data), x.device)
    direct = x * y * 2.0 - 2 / _SQRT_PI
    big = ew.ge(x, 2.5)
    if host_reads_ok(x) and not bool(big.any()):  # (the common range: no fraction to run;
        return g * direct  # while a CUDA graph is captured, the fraction runs regardless)
    tail = -y / _erfcx_fraction(ew.where(big, x, 2.5), 2)
    return g * ew.where(big, tail, direct)


class _Saturate(Function):
    """clamp(x, -bound, bound) whose derivative is 1 everywhere: _exp_sq's clamp, where
    exp(factor x^2) is already 0 or inf, so its derivative 2 factor x exp(factor x^2) stays
    0 or +-inf beyond the bound (erfinv'' at +-1 is +-inf, as PyTorch's), not 0 * inf."""

    node_name = "SaturateBackward"

    @staticmethod
    def forward(ctx, x, bound):
        return ew.clamp(x, -bound, bound)

    @staticmethod
    def backward(ctx, g):
        return g, None


def _exp_sq(x: Tensor, factor: float) -> Tensor:
    """exp(factor * x^2) without x^2's rounding error: x = h + (x - h), h = x to 1/16, h^2
    exact. |x| is first clamped where the result is 0 or inf already (_Saturate)."""
    bound = math.sqrt(790.0 / abs(factor))
    x = _Saturate.apply(x, bound)
    h = ew.trunc(x * 16.0) / 16.0
    return ew.exp(h * h * factor) * ew.exp((x - h) * (x + h) * factor)


@_numpy_on_cpu("erfcx")
def _erfcx(x: Tensor) -> Tensor:
    pos = _erfcx_pos(ew.abs(x))
    out = ew.where(ew.lt(x, 0.0), _exp_sq(x, 1.0) * 2.0 - pos, pos)
    return ew.where(ew.isnan(x), x, out)


@_numpy_on_cpu("erfc")
def _erfc(x: Tensor) -> Tensor:
    big = ew.ge(x, 0.5)
    xb = ew.where(big, x, 0.5)
    out = ew.where(big, _exp_sq(xb, -1.0) * _erfcx_pos(xb), 1.0 - ew.erf(x))
    return ew.where(ew.isnan(x), x, out)


def _ndtr_lower(x: Tensor) -> Tensor:
    """Phi(x) = exp(-x^2/2) erfcx(-x / sqrt 2) / 2 for x <= -1 (others: garbage)."""
    x = ew.where(ew.le(x, -1.0), x, -1.0)
    return _exp_sq(x, -0.5) * _erfcx_pos(x * -_R2) * 0.5


@_numpy_on_cpu("ndtr")
def _ndtr(x: Tensor) -> Tensor:
    """(1 + erf(x / sqrt 2)) / 2 for |x| <= 1, ``_ndtr_lower`` (reflected, 1 - it, for
    x > 1) beyond: relative precision in the lower tail, down to the underflow."""
    mid = 0.5 + 0.5 * ew.erf(x * _R2)
    out = ew.where(ew.lt(x, -1.0), _ndtr_lower(x),
                   ew.where(ew.gt(x, 1.0), 1.0 - _ndtr_lower(-x), mid))
    return ew.where(ew.isnan(x), x, out)


@_numpy_on_cpu("log_ndtr")
def _log_ndtr(x: Tensor) -> Tensor:
    """PyTorch's split: log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 for x < -1, else
    log1p(-Phi(-x)). x^2 / 2 as (x / 2) x (x / 2 exact): finite up to |x| = sqrt(2 max),
    where x * x overflows from sqrt(max) (1.34e154 in float64)."""
    low = ew.lt(x, -1.0)
    xl = ew.where(low, x, -1.0)
    upper = ew.where(ew.gt(x, 1.0), _ndtr_lower(-x), 0.5 - 0.5 * ew.erf(x * _R2))
    out = ew.where(low, ew.log(_erfcx_pos(xl * -_R2) * 0.5) - xl * 0.5 * xl,
                   ew.log1p(-upper))
    return ew.where(ew.isnan(x), x, out)


# Giles' polynomials (by power): erfinv(y) / y = P_c(w - 2.5) for w < 5, P_t(sqrt(w) - 3)
_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                  -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
               -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257)


def _giles(w: Tensor, y: Tensor) -> Tensor:
    """Giles' single-precision erfinv(y) given w = -log((1 - y)(1 + y)) ("Approximating the
    erfinv function", GPU Gems Pro 2012)."""
    central = ew.lt(w, GILES_SPLIT)
    p_c = _horner(_GILES_CENTRAL, ew.where(central, w, 0.0) - GILES_CENTRAL_AT)
    p_t = _horner(_GILES_TAIL, ew.sqrt(ew.where(central, GILES_SPLIT, w)) - GILES_TAIL_AT)
    return ew.where(central, p_c, p_t) * y


def _erfinv_central(y: Tensor) -> Tensor:
    """erf^-1(y) for |y| <= 1/2: Giles, then two Newton steps
    x -= (erf(x) - y) / (2/sqrt(pi) exp(-x^2)) (erf keeps its precision there)."""
    x = _giles(-ew.log((1.0 - y) * (1.0 + y)), y)
    for _ in range(ERFINV_CENTRAL_NEWTON):
        x = x - (ew.erf(x) - y) / (ew.exp(-(x * x)) * (2.0 / _SQRT_PI))
    return x


def _erfcinv(s: Tensor) -> Tensor:
    """v > 0 with erfc(v) = s, for 0 < s <= 1/2: four Newton steps on the concave log erfc,
    v += (log erfcx(v) - v^2 - log s) sqrt(pi)/2 erfcx(v) (monotone after the first), from
    Giles' erfinv(1 - s) where its fit holds (w = -log(s (2 - s)) < 16), else from the
    asymptote v^2 = L - log(pi L) / 2, L = -log s."""
    log_s = ew.log(s)
    w = -ew.log(s * (2.0 - s))
    fit = ew.lt(w, ERFCINV_FIT)
    big_l = ew.where(fit, 20.0, -log_s)
    v = ew.where(fit, _giles(ew.where(fit, w, 0.0), 1.0 - s),
                 ew.sqrt(big_l - 0.5 * ew.log(big_l * math.pi)))
    for _ in range(ERFCINV_NEWTON):
        e = _erfcx_pos(v)
        v = v + (ew.log(e) - v * v - log_s) * e * (_SQRT_PI / 2)
    return v


@_numpy_on_cpu("ndtri")
def _ndtri(p: Tensor) -> Tensor:
    """Phi^-1(p) = sqrt(2) erfinv(2p - 1): with q = min(p, 1 - p) (exact), 2q - 1 is exact
    for q >= 1/4 (erfinv's central branch); below, x = -sqrt(2) erfcinv(2q) (2q exact).
    ndtri(1 - q) = -ndtri(q); -inf at 0, inf at 1, NaN outside [0, 1]."""
    upper = ew.gt(p, 0.5)
    ok = ew.logical_and(ew.gt(p, 0.0), ew.lt(p, 1.0))
    q = ew.where(ok, ew.where(upper, 1.0 - p, p), 0.25)
    mid = ew.ge(q, 0.25)
    x = ew.where(mid, _erfinv_central(ew.where(mid, q * 2.0 - 1.0, 0.0)),
                 -_erfcinv(ew.where(mid, 0.25, q * 2.0))) * math.sqrt(2.0)
    x = ew.where(upper, -x, x)
    edge = ew.where(ew.eq(p, 0.0), -math.inf, ew.where(ew.eq(p, 1.0), math.inf, math.nan))
    return ew.where(ok, x, edge.to(x.dtype))  # (a where of two numbers: the default dtype)


def _erfinv(y: Tensor) -> Tensor:
    """erf^-1(y) elementwise (+-inf at +-1, NaN outside [-1, 1]): ``_erfinv_central`` for
    |y| < 1/2, else sign(y) erfcinv(1 - |y|) (1 - |y| exact; erf(x) there is too flat, and
    rounds to +-1 in the tails, for Newton steps on it). On the CPU the same formulas on the
    NumPy array, in float64 (float32 rounded once), each branch on its own elements only
    (tgrad.backends._numpy_special; float64 bit-identical, 30x faster than these ~1000 ops)."""
    if y.device.type == "cpu" and y.dtype in _F32_F64:
        from tgrad.backends import _numpy_special
        return wrap(_numpy_special.erfinv(y._data), y.device)
    inner = ew.lt(ew.abs(y), 1.0)
    ys = ew.where(inner, y, 0.0)  # keep +-1 out of log(0) (and its infs out of Newton)
    central = ew.lt(ew.abs(ys), 0.5)
    v = _erfcinv(ew.where(central, 0.25, 1.0 - ew.abs(ys)))
    x = ew.where(central, _erfinv_central(ew.where(central, ys, 0.0)),
                 ew.where(ew.lt(ys, 0.0), -v, v))
    return ew.where(inner, x, ew.where(ew.eq(ew.abs(y), 1.0), y * math.inf, math.nan))


# ------------------------------------------------------------------------------ Functions
def _unary(name: str, forward, backward, doc: str, saves: str = "xy",
           node_prefix: str = "") -> type:
    """A Function y = forward(x), dx = backward(g, x, y) (the rules written with
    differentiable ops, so higher-order gradients work). ``saves``: which of x and y are
    saved, as PyTorch's derivatives.yaml (the other is passed as None), so that an in-place
    change of the one not saved does not break the backward. The node is PyTorch's
    ``<node_prefix><name>Backward0`` ("Special" for the torch.special-only ops)."""
    keep_x, keep_y = "x" in saves, "y" in saves

    def fwd(ctx, x):
        y = forward(x)
        ctx.save_for_backward(x if keep_x else None, y if keep_y else None)
        return y

    def bwd(ctx, g):
        x, y = ctx.saved_tensors
        return backward(g, x, y)

    return type(name, (Function,), {"__doc__": doc, "node_name": f"{node_prefix}{name}Backward0",
                                    "forward": staticmethod(fwd),
                                    "backward": staticmethod(bwd)})


def _log_ndtr_grad(g: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """phi(x) / Phi(x): sqrt(2/pi) / erfcx(-x/sqrt 2) for x < 0 (no underflow), else
    phi(x) / ndtr(x). With no graph to record, on the CPU: the same operations on the
    NumPy array, each branch on its own elements (bit-identical)."""
    if x.device.type == "cpu" and x.dtype in _F32_F64 and not (
            is_grad_enabled() and (g.requires_grad or x.requires_grad)):
        from tgrad.backends import _numpy_special
        return g * wrap(_numpy_special.log_ndtr_grad_factor(x._data), x.device)
    neg = ew.lt(x, 0.0)
    xn, xp = ew.where(neg, x, -1.0), ew.where(neg, 1.0, x)
    left = math.sqrt(2 / math.pi) / Erfcx.apply(xn * -_R2)
    right = (_exp_sq(xp, -0.5) * (1 / math.sqrt(2 * math.pi))
             / Ndtr.apply(xp))
    return g * ew.where(neg, left, right)


Erfc = _unary("Erfc", _erfc, lambda g, x, y: g * _exp_sq(x, -1.0) * (-2 / _SQRT_PI),
              "y = erfc(x) = 1 - erf(x);  dx = -g 2/sqrt(pi) exp(-x^2) (x saved).", "x")
Erfcx = _unary("Erfcx", _erfcx, _erfcx_grad,
               "y = exp(x^2) erfc(x);  dx = g (2 x y - 2/sqrt(pi)) (see _erfcx_grad).",
               node_prefix="Special")
Ndtr = _unary("Ndtr", _ndtr, lambda g, x, y: g * _exp_sq(x, -0.5)
              * (1 / math.sqrt(2 * math.pi)), "y = Phi(x);  dx = g phi(x) (x saved).", "x")
LogNdtr = _unary("LogNdtr", _log_ndtr, _log_ndtr_grad,
                 "y = log Phi(x);  dx = g phi(x) / Phi(x).", node_prefix="Special")
Ndtri = _unary("Ndtri", _ndtri, lambda g, x, y: g * _exp_sq(y, 0.5)
               * math.sqrt(2 * math.pi),
               "x = Phi^-1(p);  dp = g sqrt(2 pi) exp(x^2 / 2) (the result saved).", "y",
               node_prefix="Special")
# erfinv saves its input and recomputes erfinv in the backward, as PyTorch
Erfinv = _unary("Erfinv", _erfinv,
                lambda g, x, y: g * _exp_sq(Erfinv.apply(x), 1.0) * (_SQRT_PI / 2),
                "x = erf^-1(y);  dy = g sqrt(pi)/2 exp(x^2) (y saved, x recomputed).", "x")


@tensor_method("erfc")
def erfc(input: Tensor) -> Tensor:  # noqa: A002
    """1 - erf(x) elementwise (any shape), relative to ~1e-15 also where it is tiny (2 at
    -inf, 0 from x ~ 27.3 in float64)."""
    return apply_float_unary(Erfc, "erfc", input)


def erfcx(input: Tensor) -> Tensor:  # noqa: A002
    """The scaled complementary error function exp(x^2) erfc(x) elementwise (any shape)."""
    return apply_float_unary(Erfcx, "erfcx", input)


def ndtr(input: Tensor) -> Tensor:  # noqa: A002
    """The standard normal CDF Phi(x) = (1 + erf(x / sqrt 2)) / 2 elementwise (any shape)."""
    return apply_float_unary(Ndtr, "ndtr", input)


def log_ndtr(input: Tensor) -> Tensor:  # noqa: A002
    """log Phi(x) elementwise (any shape), finite far into the lower tail (~ -x^2 / 2)."""
    return apply_float_unary(LogNdtr, "log_ndtr", input)


def ndtri(input: Tensor) -> Tensor:  # noqa: A002
    """Phi^-1(p) elementwise (any shape): -inf at 0, inf at 1, NaN outside [0, 1]."""
    return apply_float_unary(Ndtri, "ndtri", input)


@tensor_method("erfinv")
@autocast_policy("fp32", cpu=None)
def erfinv(input: Tensor) -> Tensor:  # noqa: A002
    """The inverse error function elementwise (any shape): +-inf at +-1, NaN outside
    [-1, 1]. dy = sqrt(pi)/2 exp(erfinv(y)^2)."""
    try:
        return apply_float_unary(Erfinv, "erfinv", input)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("erfinv", e, input)


inplace_method("erfc_", erfc)
inplace_method("erfinv_", erfinv)
