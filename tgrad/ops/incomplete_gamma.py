"""The regularized incomplete gamma functions, PyTorch's ``igamma`` / ``igammac``
(``tgrad.special.gammainc`` / ``gammaincc``), elementwise with broadcasting:

    P(a, x) = gamma(a, x) / Gamma(a) = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1)..(a+n))
              (the series, used for x < a + 1)
    Q(a, x) = 1 - P(a, x) = x^a e^-x / Gamma(a) times a continued fraction (modified Lentz,
              used for x >= a + 1)
    Q(a, x) = -expm1(a log x - lgamma(1 + a)) - x^a / Gamma(a) sum_{n>=1} (-x)^n / (n! (a+n))
              (small a and x <= 1.1, where 1 - P would cancel: Cephes' igamc_series, as
              PyTorch; lgamma(1 + a) by its Taylor series for |a| <= 1/4)
    dP/dx = -dQ/dx = x^(a-1) e^-x / Gamma(a); no derivative in a (PyTorch's neither).

Both branches are loops of vector ops (at most 300 terms; every 16 terms the elements that
have converged are set aside and the loop goes on over the rest: ``converge``), so they run
on any device; on the CPU the forward runs as tgrad.backends._numpy_igamma, the same
operations on NumPy arrays with each element through its own branch only (bit-identical,
~6x faster at 65K elements). Where a > 20 and
0.3 <= x / a <= 2.2 (where those loops would need O(sqrt(a)) terms) Temme's uniform
asymptotic expansion is used instead:

    Q = erfc(eta sqrt(a/2)) / 2 + R,  P = erfc(-eta sqrt(a/2)) / 2 - R,
    R = e^(-a eta^2 / 2) / sqrt(2 pi a) sum_{k<10} C_k(eta) a^-k,  C_k = sum_{n<25} D[k][n] eta^n,
    eta = sign(x/a - 1) sqrt(2 (x/a - 1 - log(x/a)))

(D derived exactly by docs/gen_temme_coefs.py). Accuracy ~1e-13 relative in float64 for
every a (the rounding of e^(-a eta^2 / 2) for tiny tails), ~1e-14 where the loops run;
float32 and float16/bfloat16 inputs are computed in float64 and rounded once (1 - P cancels
in float32 for small a).
Special values follow PyTorch: NaN for a < 0 or x < 0; a = 0: P = 1 for x > 0; x = 0:
P = 0; x = inf: P = 1; a = inf (finite x): P = 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops._common import promoted_float_dtype, tensor_method, wrap
from tgrad.ops._temme_coefs import D as _TEMME
from tgrad.ops.creation import arange, zeros
from tgrad.ops.erfs import erfc
from tgrad.ops.pointwise_extras import broadcast_tensors
from tgrad.ops.shape import cat
from tgrad.ops.special import _horner, lgamma
from tgrad.tensor import Tensor

__all__ = ["igamma", "igammac"]

_TERMS = 300


def _log_prefactor(a: Tensor, x: Tensor) -> Tensor:
    """log(x^a e^-x / Gamma(a))."""
    return a * ew.log(x) - x - lgamma(a)


_CHECK_EVERY = 16  # terms between (synchronising) convergence checks


def converge(step: Callable[[int, dict], None], state: dict, converged: Callable[[dict], Tensor],
             keep: tuple) -> list[Tensor]:
    """Run a loop over terms n = 1 .. _TERMS - 1 (``step(n, state)`` updates the dict of
    tensors in place; loop invariants such as a and x belong in it too) and return the
    ``keep`` entries in the state's broadcast shape.

    Every _CHECK_EVERY-th term the elements where ``converged(state)`` holds are done: their
    ``keep`` values are set aside and the loop goes on over the other elements only (the
    state is compacted, ``_set_aside``); it stops when none are left. Elements still
    unconverged after the last term keep their values then.

    Stopping each element at its own first passing check, as the scalar algorithms do,
    matters for the continued fractions: their step ratio d c settles within an ulp or two
    of 1 and wanders there, so checking every element at once almost always found a few of
    thousands two ulps off and ran all 300 terms (the values kept are as accurate as the
    later ones). Compacting matters where a few elements need many more terms than the
    rest (Beta(0.05, 0.1)'s draws): each term then costs what the active elements do."""
    names = list(state)
    tensors = broadcast_tensors(*state.values())
    shape = tensors[0].shape
    state = {k: v.reshape(-1) for k, v in zip(names, tensors)}
    positions = arange(math.prod(shape), device=tensors[0].device)
    done: list = []
    for n in range(1, _TERMS):
        step(n, state)
        if n % _CHECK_EVERY == 0:
            state, positions = _set_aside(converged(state), state, positions, keep, done)
            if positions.numel() == 0:
                break
    else:
        done.append((positions, [state[k] for k in keep]))
    if len(done) == 1:  # every element done at one check: still in order
        return [v.reshape(shape) for v in done[0][1]]
    order = cat([p for p, _ in done])
    return [zeros(order.shape, dtype=done[0][1][i].dtype, device=order.device)
            .index_copy(0, order, cat([vals[i] for _, vals in done])).reshape(shape)
            for i in range(len(keep))]


def _set_aside(ok: Tensor, state: dict, positions: Tensor, keep: tuple, done: list) -> tuple:
    """Append (positions, keep values) of the elements where ``ok`` holds to ``done``;
    return the state and positions of the others. (On a GPU: the two nonzero() are the
    check's host reads; the gathers by their device indices do not synchronize.)"""
    ok_at = ok.nonzero().reshape(-1)
    if ok_at.numel() == ok.numel():  # (no elements at all included)
        done.append((positions, [state[k] for k in keep]))
        return {}, positions[:0]
    if ok_at.numel() == 0:
        return state, positions
    done.append((positions[ok_at], [state[k][ok_at] for k in keep]))
    rest_at = (~ok).nonzero().reshape(-1)
    return {k: v[rest_at] for k, v in state.items()}, positions[rest_at]


def small_vs(small: Tensor, big: Tensor | float) -> Tensor:
    """|small| <= eps |big|, elementwise (eps of small's dtype)."""
    return small.abs() <= dtypes.finfo(small.dtype).eps * abs(big)


def _lower_series(a: Tensor, x: Tensor) -> Tensor:
    """P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1)..(a+n)): the sum starts at 1, not 1/a
    (1/a overflows for a subnormal a)."""
    def step(n: int, s: dict) -> None:
        s["term"] = s["term"] * s["x"] / (s["a"] + n)
        s["total"] = s["total"] + s["term"]

    one = 1.0 + 0.0 * a
    (total,) = converge(step, {"a": a, "x": x, "term": one, "total": one},
                        lambda s: small_vs(s["term"], s["total"]), ("total",))
    return ew.exp(a * ew.log(x) - x - lgamma(a + 1.0)) * total


# lgamma(1 + a) = -euler a + sum_{n>=2} (-1)^n zeta(n) / n a^n (|a| < 1); to double precision
# for |a| <= 1/4 with these terms
_ZETA = [1.6449340668482264, 1.2020569031595942, 1.0823232337111381, 1.03692775514337,
         1.0173430619844492, 1.008349277381923, 1.0040773561979444, 1.0020083928260821,
         1.000994575127818, 1.0004941886041194, 1.000246086553308, 1.0001227133475785,
         1.0000612481350588, 1.000030588236307, 1.0000152822594086, 1.0000076371976379,
         1.000003817293265, 1.0000019082127165, 1.0000009539620338, 1.0000004769329869,
         1.0000002384505027, 1.000000119219926, 1.000000059608189, 1.0000000298035034,
         1.0000000149015549]  # zeta(2), ..., zeta(26)
_LGAM1P = [0.0, -0.5772156649015329] + [(-1) ** n * z / n for n, z in enumerate(_ZETA, 2)]


def _lgamma1p(a: Tensor) -> Tensor:
    """lgamma(1 + a) without rounding 1 + a: the Taylor series where |a| <= 1/4."""
    near = a.abs() <= 0.25
    return ew.where(near, _horner(_LGAM1P, ew.where(near, a, 0.0)),
                    lgamma(ew.where(near, 1.0, a) + 1.0))


def _upper_series(a: Tensor, x: Tensor) -> Tensor:
    """Q for small a and x <= 1.1 without 1 - P (Cephes' igamc_series, PyTorch's):
    Q = 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) sum_{n>=1} (-x)^n / (n! (a + n)),
    1 - x^a / Gamma(a + 1) = -expm1(a log x - lgamma(1 + a))."""
    def step(n: int, s: dict) -> None:
        s["fac"] = s["fac"] * (-s["x"] / n)
        s["term"] = s["fac"] / (s["a"] + n)
        s["total"] = s["total"] + s["term"]

    zero = 0.0 * x
    (total,) = converge(step, {"a": a, "x": x, "fac": 1.0 + zero, "term": zero, "total": zero},
                        lambda s: small_vs(s["term"], s["total"]), ("total",))
    logx = ew.log(x)
    return -ew.expm1(a * logx - _lgamma1p(a)) - ew.exp(a * logx - lgamma(a)) * total


def _upper_fraction(a: Tensor, x: Tensor) -> Tensor:
    """Q = x^a e^-x / Gamma(a) h, h the continued fraction by modified Lentz."""
    tiny = 1e-300 if a.dtype.itemsize == 8 else 1e-30
    b = x + 1.0 - a
    d = 1.0 / ew.where(b.abs() < tiny, tiny, b)

    def step(i: int, s: dict) -> None:
        an = -i * (i - s["a"])
        s["b"] = b = s["b"] + 2.0
        d = an * s["d"] + b
        s["d"] = d = 1.0 / ew.where(d.abs() < tiny, tiny, d)
        c = b + an / s["c"]
        s["c"] = c = ew.where(c.abs() < tiny, tiny, c)
        s["h"] = s["h"] * d * c

    (h,) = converge(step, {"a": a, "b": b, "c": 1.0 / tiny + 0.0 * x, "d": d, "h": d},
                    lambda s: small_vs(s["d"] * s["c"] - 1.0, 1.0), ("h",))
    return ew.exp(_log_prefactor(a, x)) * h


_M_MINUS_LOG1P = [(-1) ** k / k for k in range(2, 24)]  # m - log1p(m) = m^2 sum_k c_k m^k


def _temme_eta(m: Tensor) -> Tensor:
    """eta = sign(m) sqrt(2 (m - log1p(m))); below |m| = 0.1 as m sqrt(2 h(m)) with h the
    series of (m - log1p(m)) / m^2, smooth through m = 0 (so the expansion's graph is
    differentiable in a there: Gamma's reparameterised gradient)."""
    near = m.abs() < 0.1
    mn = ew.where(near, m, 0.0)
    mf = ew.where(near, 1.0, m)
    return ew.where(near, mn * ew.sqrt(2.0 * _horner(_M_MINUS_LOG1P, mn)),
                    ew.sqrt(2.0 * (mf - ew.log1p(mf))) * ew.sign(mf))


def uniform_region(a: Tensor, x: Tensor) -> Tensor:
    """Where Temme's expansion replaces the loops (module docstring): a > 20 and
    0.3 <= x / a <= 2.2."""
    ratio = x / a
    return (a > 20) & (ratio >= 0.3) & (ratio <= 2.2)


def _temme(a: Tensor, x: Tensor) -> tuple:
    """(P, Q) by Temme's uniform expansion (module docstring); meant for a > 20. Built of
    differentiable ops: its graph gives dP/da."""
    m = (x - a) / a  # lambda - 1
    eta = _temme_eta(m)
    total = 0.0 * a
    for row in reversed(_TEMME):
        total = total / a + _horner(row, eta)
    r = ew.exp(-0.5 * a * eta * eta) * ew.rsqrt(2 * math.pi * a) * total
    z = eta * ew.sqrt(0.5 * a)
    return 0.5 * erfc(-z) - r, 0.5 * erfc(z) + r


def _regularized(a: Tensor, x: Tensor, upper: bool) -> Tensor:
    """P(a, x) (or Q with ``upper``) with PyTorch's special values."""
    ok = (a > 0) & (x > 0) & ew.isfinite(a) & ew.isfinite(x)
    sa, sx = ew.where(ok, a, 1.0), ew.where(ok, x, 1.0)  # safe values for the loops
    uniform = uniform_region(sa, sx)
    sx = ew.where(uniform, 0.1 * sa, sx)  # a quick series there (overwritten below)
    use_series = sx < sa + 1
    series = _lower_series(sa, ew.where(use_series, sx, 0.5 * sa))
    fraction = _upper_fraction(sa, ew.where(use_series, sa + 2.0, sx))
    p = ew.where(use_series, series, 1.0 - fraction)
    q = ew.where(use_series, 1.0 - series, fraction)
    # small a, x <= 1.1: Q directly (1 - P cancels), where Cephes / PyTorch do
    direct = (sx <= 1.1) & ew.where(sx <= 0.5, sa * ew.log(sx) >= -0.4, sa <= 1.1 * sx)
    if bool(direct.any()):
        q = ew.where(direct, _upper_series(ew.where(direct, sa, 0.5), ew.where(direct, sx, 0.5)), q)
    if bool(uniform.any()):
        ta = ew.where(uniform, sa, 100.0)
        tp, tq = _temme(ta, ew.where(uniform, ew.where(ok, x, 1.0), 100.0))
        p, q = ew.where(uniform, tp, p), ew.where(uniform, tq, q)
    out = q if upper else p
    nan = math.nan
    lower_at = (  # P at the special points (Q = 1 - P)
        ew.where((a < 0) | (x < 0) | (ew.isnan(a)) | (ew.isnan(x)), nan,
                 ew.where(a == 0, ew.where(x > 0, 1.0, nan),
                          ew.where(x == 0, 0.0,
                                   ew.where(ew.isinf(a), ew.where(ew.isinf(x), nan, 0.0),
                                            1.0)))))
    special = lower_at if not upper else 1.0 - lower_at
    return ew.where(ok, out, special.to(out.dtype))


def _regularized_on_cpu(a: Tensor, x: Tensor, upper: bool) -> Tensor:
    """_regularized of two float64 CPU tensors of one shape, as its NumPy form
    (tgrad.backends._numpy_igamma: the same operations per element, bit-identical; each
    element through its own branch only, without a tensor op per term: ~6x faster)."""
    from tgrad.backends import _numpy_igamma
    return wrap(_numpy_igamma.regularized(a._data, x._data, upper), a.device)


class _IncompleteGamma(Function):
    node_name = "IgammaBackward0"  # IgammacBackward0 for igammac (see below)

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.upper = upper
        ctx.save_for_backward(a, x)
        # float32 and the halves in float64, rounded once: 1 - P (and 1 - Q) cancel in
        # float32 (gammaincc(8.3e-6, 0.71) = 3.05e-6 came out 3.28e-6)
        wide = dtypes.float64
        wa, wx = (a, x) if a.dtype is wide else (a.to(wide), x.to(wide))
        out = _regularized_on_cpu(wa, wx, upper) if a.device.type == "cpu" else \
            _regularized(wa, wx, upper)
        return out if a.dtype is wide else out.to(a.dtype)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        need_a, need_x = ctx.needs_input_grad[:2]
        if need_a:
            raise NotImplementedError("igamma / igammac: the derivative with respect to the "
                                      "first argument (a) is not implemented (as in "
                                      "PyTorch)")
        dx = ew.exp((a - 1) * ew.log(x) - x - lgamma(a))
        return None, (-dx if ctx.upper else dx) * g, None


class _UpperIncompleteGamma(_IncompleteGamma):
    """igammac (upper=True) under PyTorch's name for it."""

    node_name = "IgammacBackward0"


def _prepare(op: str, input, other) -> tuple:  # noqa: A002
    """The two tensors in their promoted dtype (PyTorch's rules: a 0-d tensor does not
    promote a dimensioned one of its category; an integer or bool tensor takes a float
    one's dtype), broadcast. Two integer / bool tensors raise, as PyTorch's."""
    dt = promoted_float_dtype(op, input, other)
    return broadcast_tensors(input.to(dt), other.to(dt))


@tensor_method("igamma")
def igamma(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """P(input, other): the regularized lower incomplete gamma function."""
    a, x = _prepare("igamma", input, other)
    return _IncompleteGamma.apply(a, x, False)


@tensor_method("igammac")
def igammac(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Q(input, other) = 1 - P: the regularized upper incomplete gamma function."""
    a, x = _prepare("igammac", input, other)
    return _UpperIncompleteGamma.apply(a, x, True)
