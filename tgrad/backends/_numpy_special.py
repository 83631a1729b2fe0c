"""CPU (NumPy) forwards of erfinv, lgamma and polygamma (and, below, of erfc, erfcx, ndtr,
log_ndtr, ndtri, with erfcx's and log_ndtr's backward factors, in the input's own dtype and
bit-identical to the composites in float32 too, but float32 erfc, ndtr and ndtri: their own
fits in float64, within 0.505 ulp of the float64 composites): the formulas of tgrad.ops.erfs and
tgrad.ops.special (whose docstrings state the maths), evaluated on NumPy arrays instead of
as hundreds of tgrad tensor ops.

Two things make them fast, neither changes a value (float64 results are bit-identical to
the composites'): the input is processed in blocks of _BLOCK elements, so that the dozens
of temporaries of a series stay in cache (elementwise, so the blocking changes nothing);
and each branch (erfinv's tails, lgamma's and psi's reflection, the pieces of erfcx, ...)
is evaluated only on the elements that take it (np.flatnonzero, take, out[idx] = v), where the
composites, which also run on the GPU, compute every branch for every element and select.
float32 is computed in float64 and rounded once (the composites' lgamma / polygamma do so
too; erfinv's float32 composite, computed in float32, was 2.3 ulp off against mpmath on a
40K-point sweep with the tails, this 0.50); float32 erfc, ndtr, erfinv and ndtri from
their own ~1e-10 fits, <= 0.502 ulp (see _BLOCK32; docs/design.md: the measured errors),
erfinv's and lgamma's (a ~1e-11 fit, _lgamma32_block) rounded as the float64 path's
(_float64_path_rounding).
4M elements, CPU time: erfinv 1195 -> 178 ms (float32; since then its fits), 5080 -> 155 ms
(float64), lgamma 900 -> 182 ms, digamma 1190 -> 230 ms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from tgrad.backends._numpy_sum import flat_blocks
from tgrad.backends.numpy import _ERF32_MID as ERF32_MID
from tgrad.backends.numpy import _ERF32_SMALL as ERF32_SMALL
from tgrad.backends.numpy import _erf
from tgrad.backends.numpy import _horner_f64 as horner_f64
from tgrad.ops.erfs import (
    _ERFCX_PIECES,
    _GILES_CENTRAL,
    _GILES_TAIL,
    ERFCINV_FIT,
    ERFCINV_NEWTON,
    ERFCX_FRACTION_LEVELS,
    ERFINV_CENTRAL_NEWTON,
    GILES_CENTRAL_AT,
    GILES_SPLIT,
    GILES_TAIL_AT,
)
from tgrad.ops.special import (
    _LG2,
    _LGAMMA_MIN3,
    _LGAMMA_ROOTS,
    _PSI,
    _PSI2,
    _STIRLING,
    LGAMMA_RECURRENCE_DOWN_FROM,
    LGAMMA_RECURRENCE_STEPS,
    LGAMMA_ROOTS_SPAN,
    LGAMMA_STIRLING_FROM,
    LGAMMA_TINY_SINE,
    lgamma_about_root,
    polygamma_reflection_terms,
    polygamma_scaled_from,
    polygamma_zeta_terms,
)

_BLOCK = 1 << 16  # elements per block (float64: 512 KiB a temporary; 2^14 was 1.3x slower)
_SQRT_PI = math.sqrt(math.pi)
_R2 = 1 / math.sqrt(2.0)  # erfs._R2
# _LGAMMA_ROOTS by column (left_hi, left_lo, right_hi, right_lo), indexed by -floor(x) - 3
_ROOT_COLS = [np.array([r[c] for r in _LGAMMA_ROOTS]) for c in range(4)]


def blocked(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
            block: int = _BLOCK) -> np.ndarray:
    """fn (elementwise, on a 1-D float64 array) over x's elements in blocks of ``block``,
    each cast to float64 (no full-size float64 copy); the result in x's dtype and memory
    layout (NumPy's K order, as a ufunc's)."""
    if not np.may_share_memory(x.ravel(order="K"), x):  # x not dense: a dense copy
        x = np.copy(x, order="K")
    out = np.empty_like(x)
    with np.errstate(all="ignore"):  # (float32: beyond its range the cast gives +-inf)
        for xb, ob in flat_blocks(x, out, block):
            ob[...] = fn(xb.astype(np.float64))
    return out


def on_elements(out: np.ndarray, mask: np.ndarray, fn: Callable, *args: np.ndarray) -> None:
    """out[mask] = fn(*(v[mask] for v in args)), fn run on the masked elements only (out and
    args 1-D); nothing where the mask holds nowhere."""
    idx = np.flatnonzero(mask)
    if idx.size:
        out[idx] = fn(*(v.take(idx) for v in args))


def split_apply(mask: np.ndarray, on_true: Callable, on_false: Callable,
                *args: np.ndarray) -> np.ndarray:
    """on_true(*args) where mask, on_false(*args) elsewhere, each on its own elements (1-D
    args; the result like args[0]); one call on the whole arrays where mask holds
    everywhere."""
    if mask.all():
        return on_true(*args)
    out = np.empty_like(args[0])
    on_elements(out, mask, on_true, *args)
    on_elements(out, ~mask, on_false, *args)
    return out


def _horner(coefs: Sequence[float], t: np.ndarray) -> np.ndarray:
    """sum_k coefs[k] t^k, the operations of tgrad.ops.special._horner (t * 0 + c_last: NaN
    for a non-finite t)."""
    acc = t * 0.0
    acc += coefs[-1]
    for c in reversed(coefs[:-1]):
        acc *= t
        acc += c
    return acc


# ---------------------------------------------------------------------------- erfinv
def _giles(w: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Giles' erfinv(y) from w = -log((1 - y)(1 + y)): y P_c(w - 2.5) for w < 5, else
    y P_t(sqrt(w) - 3) (erfs._giles)."""
    is_central = w < GILES_SPLIT
    tail = np.flatnonzero(~is_central)
    if not tail.size:
        return _horner(_GILES_CENTRAL, w - GILES_CENTRAL_AT) * y
    p = np.empty_like(w)
    central = np.flatnonzero(is_central)
    p[central] = _horner(_GILES_CENTRAL, w.take(central) - GILES_CENTRAL_AT)
    p[tail] = _horner(_GILES_TAIL, np.sqrt(w.take(tail)) - GILES_TAIL_AT)
    return p * y


def _fraction(x: np.ndarray, last: int) -> np.ndarray:
    """erfs._erfcx_fraction: f_last = x + (last/2) / (x + ((last+1)/2) / (x + ...)), 40
    levels in all, in a new array (x >= 2.5). Each level as the composite computes it: a
    tensor's number / t is t.reciprocal() * number, so (k/2) / f rounds twice."""
    f = x.copy()
    for k in range(ERFCX_FRACTION_LEVELS, last - 1, -1):  # f_k = x + (k/2) / f_(k+1)
        np.reciprocal(f, out=f)
        f *= k / 2
        f += x
    return f


def _erfcx_pos(x: np.ndarray) -> np.ndarray:
    """erfcx(x) for finite x >= 0 (erfs._erfcx_pos): Taylor about 1 on [0, 2), about 3 on
    [2, 4), 1/sqrt(pi) / f_1 beyond (f_1 the continued fraction of erfs._erfcx_fraction)."""
    (_, _, c1, coef1), (_, hi2, c2, coef2) = _ERFCX_PIECES
    out = _horner(coef1, x - c1)  # (garbage from 2 on, replaced below)
    big = np.flatnonzero(x >= 2.0)
    if big.size:
        xb = x.take(big)
        val = _horner(coef2, np.minimum(xb, hi2) - c2)
        far = np.flatnonzero(xb >= hi2)
        if far.size:
            f = _fraction(xb.take(far), 1)
            val[far] = 1.0 / (f * _SQRT_PI)
        out[big] = val
    return out


def _erfinv_central(y: np.ndarray) -> np.ndarray:
    """erf^-1(y) for |y| < 1/2: Giles, two Newton steps on erf (erfs._erfinv_central)."""
    x = _giles(-np.log((1.0 - y) * (1.0 + y)), y)
    for _ in range(ERFINV_CENTRAL_NEWTON):  # x -= (erf(x) - y) / (2/sqrt(pi) exp(-x^2))
        x = x - (_erf(x) - y) / (np.exp(-(x * x)) * (2.0 / _SQRT_PI))
    return x


def _erfcinv(s: np.ndarray) -> np.ndarray:
    """v > 0 with erfc(v) = s, 0 < s <= 1/2: from Giles where w = -log(s (2 - s)) < 16, else
    from v^2 = L - log(pi L) / 2, L = -log s; four Newton steps on log erfc (erfs._erfcinv)."""
    log_s = np.log(s)
    w = -np.log(s * (2.0 - s))
    v = np.empty_like(s)
    is_fit = w < ERFCINV_FIT
    fit = np.flatnonzero(is_fit)
    if fit.size:
        v[fit] = _giles(w.take(fit), 1.0 - s.take(fit))
    far = np.flatnonzero(~is_fit)
    if far.size:
        big_l = -log_s.take(far)
        v[far] = np.sqrt(big_l - 0.5 * np.log(big_l * math.pi))
    for _ in range(ERFCINV_NEWTON):  # v += (log erfcx(v) - v^2 - log s) sqrt(pi)/2 erfcx(v)
        e = _erfcx_pos(v)
        v = v + (np.log(e) - v * v - log_s) * e * (_SQRT_PI / 2)
    return v


def _erfinv_block(y: np.ndarray) -> np.ndarray:
    """erf^-1(y) (erfs._erfinv): the central branch for |y| < 1/2, sign(y) erfcinv(1 - |y|)
    for 1/2 <= |y| < 1, +-inf at +-1, NaN beyond and at NaN."""
    ay = np.abs(y)
    out = np.empty_like(y)
    central = np.flatnonzero(ay < 0.5)
    if central.size == y.size:
        return _erfinv_central(y)
    if central.size:
        out[central] = _erfinv_central(y.take(central))
    tail = np.flatnonzero((ay >= 0.5) & (ay < 1.0))
    if tail.size:
        yt = y.take(tail)
        out[tail] = np.copysign(_erfcinv(1.0 - np.abs(yt)), yt)
    edge = np.flatnonzero(~(ay < 1.0))
    if edge.size:
        ye = y.take(edge)
        out[edge] = np.where(np.abs(ye) == 1.0, ye * math.inf, math.nan)
    return out


# float32 erfc, ndtr, erfinv and ndtri: computed in float64 and rounded once, from
# near-minimax polynomials accurate to ~1e-10 relative (docs/gen_erf32_coefs.py), so each
# result is within ~0.502 ulp of the exact value (docs/performance.md: the measured errors
# against mpmath). Each is one formula over the whole block (NumPy ufuncs in place, no
# index gathers for the common range); the rare branches (erfinv's tails, the edges) run
# on their own elements only when a block has any. In blocks of _BLOCK32 float32 elements,
# whose ~6 float64 temporaries stay in cache (and under the memory bound of
# tests/test_bench.py, as erf's).
#   erfc(a)   = t exp(-a^2 + E(t)), t = 1 / (1 + a/2), a = |x| (a^2 exact);
#               erfc(x) = 2 - erfc(|x|) for x < 0; ndtr(x) = erfc(|x| / sqrt 2) / 2,
#               1 - that for x > 0
#   erfinv(y) = y C(w - 5/2), w = -log((1 - y)(1 + y)), for w < 5, y T(sqrt(w) - 3) for
#               5 <= w < 16, y F(sqrt(w) - 57/8) beyond (only ndtri gets there);
#               ndtri(p) = sqrt 2 erfinv(2p - 1) with w = -log(4 p (1 - p)) (no
#               cancellation near p = 0)
_BLOCK32 = 1 << 14
_ERFC32 = (-1.2655022969314735, 0.9996605409885677, 0.3802294269178412, 0.035806568222731164,
           0.19797666236222483, -1.3180040347155968, 3.351012779896351, -7.149883820205316,
           10.59924742441243, -10.0677857986398, 6.0225015410798495, -2.175987831680918,
           0.42208851329288344, -0.031359674925765586)
_ERFINV32_C = (1.5014093511310715, 0.24664027674226105, -0.004177318042578073,
               -0.0012527078778638292, 0.00021825108169578578, -4.996157075714713e-06,
               -3.417409529690375e-06, 4.788011625385882e-07, 1.3782110981667457e-08,
               -1.0897168657016768e-08, 8.198350424588279e-10, 1.2861572678730156e-10,
               -2.0518409614330562e-11, -2.7960410484332195e-13)
_ERFINV32_T = (2.832976798731946, 1.00167527650183, 0.009445521900127605,
               -0.007643796919676193, 0.005685175424025618, -0.0035589022134055043,
               0.0014838862596585, -0.0001483567234177763, -0.00028413507380584927,
               0.00020443662898473645, -4.3420840144571996e-05, -2.2724223010572067e-05,
               1.785566989338426e-05, -3.817714152402427e-06)
_ERFINV32_F = (6.995086108021849, 1.0084677975260061, -0.0005097612029860134,
               9.070736712511577e-06, 5.113757149311129e-06, -1.4006633132655035e-06,
               2.6962252125184475e-07, -4.57224419042861e-08, 7.791075572001997e-09,
               -1.2264555853614817e-09, 2.4911041373630475e-11, 9.93305099378836e-12,
               2.4292659407352322e-11, -5.573976761870564e-12, -1.6447531095944514e-12,
               4.1289676039137196e-13, 5.930791411651949e-14, -1.4786014564205983e-14)


# erfinv's fit's float64 results are within ~3e-4 float32 ulp of the exact values
# (measured: docs/design.md), so they round to the float32 that the float64 path's results
# round to unless they lie within that of a rounding boundary. _float64_path_rounding
# recomputes those elements (about 3%: within 2^-6 ulp of a boundary) with an exact method
# (_erfinv32_halley, the former float32 path: the float64 path's bits for every float32), so
# the float32 results are the float64 path's rounded, bit for bit: every float32 in [-1, 1]
# checked (tests/test_special_f32.py samples it). erfc, ndtr and ndtri keep their fits'
# rounding (<= 0.502 ulp; their float64 paths cost ~0.1-0.2 ms a call even on a few
# elements, more than the fits save).
_LOW_BITS = (1 << 29) - 1  # the float64 mantissa bits below float32's 23
_NEAR_BITS = 1 << 23  # 2^-6 float32 ulp, in those bits
_F32_TINY, _F32_HALF_SUB = 2.0 ** -126, 2.0 ** -150 * (1 - 2.0 ** -6)


def _float64_path_rounding(approx: np.ndarray, x: np.ndarray,
                           exact: Callable[[np.ndarray], np.ndarray],
                           force: np.ndarray | None = None) -> np.ndarray:
    """approx (1-D float64, a fit's values at x), with the elements near a float32 rounding
    boundary (or in float32's subnormal range, whose steps are coarser), and those where
    the bool array ``force`` is set, replaced by exact(x) there, in place."""
    low = approx.view(np.int64) & _LOW_BITS
    low -= 1 << 28  # (the distance from the midpoint between two float32)
    np.abs(low, out=low)
    near = low < _NEAR_BITS
    mag = np.abs(approx)
    near |= (mag < _F32_TINY) & (mag > _F32_HALF_SUB)
    if force is not None:
        near |= force
    idx = np.flatnonzero(near)
    if idx.size:
        approx[idx] = exact(x.take(idx))
    return approx


def _erfc32_pos(a: np.ndarray) -> np.ndarray:
    """erfc(a) for a 1-D float64 a >= 0 (+inf, NaN: 0, NaN), a overwritten. Beyond the fit's
    10.5 (erfc(10.5) = 4e-50 rounds to 0 in float32) |E(t)| < 2 stays bounded for t in
    [0, 0.16], so exp(-a^2 + E(t)) < 1e-47 there also rounds to 0 (and is 0 from +inf)."""
    t = a * 0.5
    t += 1.0
    np.reciprocal(t, out=t)
    e = horner_f64(_ERFC32, t)
    a *= a
    e -= a
    np.exp(e, out=e)
    e *= t
    return e


def _erfc32_block(x: np.ndarray) -> np.ndarray:
    """erfc of a 1-D float64 array of float32 values (see above)."""
    e = _erfc32_pos(np.abs(x))
    neg = x < 0.0
    return np.where(neg, 2.0 - e, e) if neg.any() else e


def _ndtr32_block(x: np.ndarray) -> np.ndarray:
    """Phi of a 1-D float64 array of float32 values (see above)."""
    a = np.abs(x)
    a *= _R2
    e = _erfc32_pos(a)
    e *= 0.5
    pos = x > 0.0
    return np.where(pos, 1.0 - e, e) if pos.any() else e


def _erfinv32_over_y(w: np.ndarray) -> np.ndarray:
    """erfinv(y) / y given w = -log((1 - y)(1 + y)) >= 0 (a 1-D float64 array; +inf, NaN:
    garbage), each piece on its own elements."""
    out = horner_f64(_ERFINV32_C, w - 2.5)
    far = np.flatnonzero(w >= 5.0)
    if far.size:
        s = np.sqrt(w.take(far))
        v = horner_f64(_ERFINV32_T, s - 3.0)
        beyond = np.flatnonzero(s >= 4.0)
        if beyond.size:
            v[beyond] = horner_f64(_ERFINV32_F, s.take(beyond) - 7.125)
        out[far] = v
    return out


# float32 erfinv's elements near a rounding boundary (_erfinv32_block): its result needs
# ~1e-16, which Giles' single-precision fit (~1e-7) reaches in one Halley step (cubic: the
# two Newton steps of the float64 path, each with a full float64 erf, are not needed), on
# f(x) = erf(x) - |y| where Giles gives x < 1, on f(v) = erfc(v) - s, s = 1 - |y| (exact),
# beyond; with d = f / f' and f'' / f' = -2x, the step is x - d / (1 + x d). erf and erfcx are the
# float32 erf's polynomials (tgrad.backends.numpy._ERF32_SMALL / _MID): erf(x) = x P(x^2),
# erfc(v) = exp(-v^2) H(v - 5/2), so d = (x P(x^2) - |y|) sqrt(pi)/2 exp(x^2) below 1 and
# d = -sqrt(pi)/2 (H(v - 5/2) - s exp(v^2)) beyond. Every float32 gives the float64 path's
# bits (docs/performance.md: an exhaustive sweep).
def _erfinv32_halley(y: np.ndarray) -> np.ndarray:
    """erf^-1(y) for a 1-D float64 array of float32 values (see above)."""
    ay = np.abs(y)
    w = (1.0 - ay) * (1.0 + ay)
    np.log(w, out=w)
    np.negative(w, out=w)  # (|y| >= 1, NaN: w is +inf or NaN, fixed at the end)
    x = _horner(_GILES_CENTRAL, w - GILES_CENTRAL_AT)
    far = np.flatnonzero(w >= GILES_SPLIT)
    if far.size:
        x[far] = _horner(_GILES_TAIL, np.sqrt(w[far]) - GILES_TAIL_AT)
    x *= ay
    is_low = x < 1.0
    low = np.flatnonzero(is_low)
    if low.size:  # d = (erf(x) - |y|) / (2/sqrt(pi) exp(-x^2))
        xl = x[low]
        t = xl * xl
        d = horner_f64(ERF32_SMALL, t)
        d *= xl
        d -= ay[low]
        d *= np.exp(t, out=t)
        d *= _SQRT_PI / 2
        x[low] = _halley(xl, d)
    high = np.flatnonzero(~is_low & (ay < 1.0))
    if high.size:  # d = (erfc(v) - s) / (-2/sqrt(pi) exp(-v^2))
        v = x[high]
        e = np.multiply(v, v)
        np.exp(e, out=e)
        e *= 1.0 - ay[high]
        d = horner_f64(ERF32_MID, v - 2.5)
        d -= e
        d *= -_SQRT_PI / 2
        x[high] = _halley(v, d)
    edge = np.flatnonzero(~(ay < 1.0))
    if edge.size:
        x[edge] = np.where(ay[edge] == 1.0, math.inf, math.nan)
    return np.copysign(x, y, out=x)


def _halley(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Halley's step x - d / (1 + x d) for f'' / f' = -2x, d = f / f' (d overwritten)."""
    den = x * d
    den += 1.0
    np.divide(d, den, out=d)
    return np.subtract(x, d, out=d)


def _erfinv32_block(y: np.ndarray) -> np.ndarray:
    """erf^-1 of a 1-D float64 array of float32 values (see above): +-inf at +-1, NaN
    beyond and at NaN; -0.0 at -0.0."""
    ay = np.abs(y)
    w = 1.0 - ay
    ay += 1.0
    w *= ay
    np.log(w, out=w)
    np.negative(w, out=w)  # (|y| = 1: +inf; |y| > 1, NaN: NaN; fixed below)
    x = _erfinv32_over_y(w)
    x *= y
    edge = np.flatnonzero(~(w < math.inf))
    if edge.size:
        ye = y.take(edge)
        x[edge] = np.where(np.abs(ye) == 1.0, ye * math.inf, math.nan)
    return _float64_path_rounding(x, y, _erfinv32_halley)


def _ndtri32_block(p: np.ndarray) -> np.ndarray:
    """Phi^-1 of a 1-D float64 array of float32 values (see above): -inf at 0, inf at 1,
    NaN outside [0, 1] and at NaN."""
    w = 1.0 - p
    w *= p
    w *= 4.0
    np.log(w, out=w)
    np.negative(w, out=w)  # (p = 0 or 1: +inf; outside [0, 1], NaN: NaN; fixed below)
    x = _erfinv32_over_y(w)
    y = p * 2.0
    y -= 1.0
    y *= math.sqrt(2.0)
    x *= y
    edge = np.flatnonzero(~(w < math.inf))
    if edge.size:
        pe = p.take(edge)
        x[edge] = np.where(pe == 0.0, -math.inf, np.where(pe == 1.0, math.inf, math.nan))
    return x


def erfinv(y: np.ndarray) -> np.ndarray:
    """erf^-1 elementwise of a float32 / float64 array (float32 computed in float64)."""
    if y.dtype.itemsize <= 4:
        return blocked(_erfinv32_block, y, _BLOCK32)
    return blocked(_erfinv_block, y)


# ---------------------------------------------- erfc, erfcx, ndtr, log_ndtr, ndtri
# The composites of tgrad.ops.erfs on NumPy arrays in the input's own dtype (float32 stays
# float32, as the composites compute it): the same operations per element in the same order,
# each region on its own elements only, so float32 and float64 results are bit-identical to
# the composites' (tests/test_special.py compares them; NaN payloads aside), but float32
# erfc, ndtr and ndtri (computed in float64 from their own fits: _erfc32_block ...).
def blocked_native(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """fn (elementwise, on a 1-D array; it must not write to its argument) over x's elements
    in blocks of _BLOCK, in x's dtype; the result in x's dtype and memory layout (K order)."""
    if not np.may_share_memory(x.ravel(order="K"), x):  # x not dense: a dense copy
        x = np.copy(x, order="K")
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        for xb, ob in flat_blocks(x, out, _BLOCK):
            ob[...] = fn(xb)
    return out


def _exp_sq(x: np.ndarray, factor: float) -> np.ndarray:
    """exp(factor x^2) as erfs._exp_sq: |x| clamped where the result is 0 or inf already,
    h = trunc(16 x) / 16, exp(h h factor) exp((x - h)(x + h) factor)."""
    bound = math.sqrt(790.0 / abs(factor))
    x = np.clip(x, -bound, bound)
    h = np.trunc(x * 16.0) / 16.0
    return np.exp(h * h * factor) * np.exp((x - h) * (x + h) * factor)


def _erfc_block(x: np.ndarray) -> np.ndarray:
    """erfc(x) (erfs._erfc): exp(-x^2) erfcx(x) for x >= 1/2, 1 - erf(x) below (and NaN)."""
    is_big = x >= 0.5
    big = np.flatnonzero(is_big)
    if big.size == x.size:
        return _exp_sq(x, -1.0) * _erfcx_pos(x)
    out = 1.0 - _erf(x) if not big.size else np.empty_like(x)
    if big.size:
        rest = np.flatnonzero(~is_big)
        out[rest] = 1.0 - _erf(x.take(rest))
        xb = x.take(big)
        out[big] = _exp_sq(xb, -1.0) * _erfcx_pos(xb)
    return _keep_nan(x, out)


def _erfcx_block(x: np.ndarray) -> np.ndarray:
    """erfcx(x) (erfs._erfcx): erfcx_pos(|x|), 2 exp(x^2) - erfcx_pos(-x) for x < 0."""
    out = _erfcx_pos(np.abs(x))
    neg = np.flatnonzero(x < 0.0)
    if neg.size:
        xn = x.take(neg)
        out[neg] = _exp_sq(xn, 1.0) * 2.0 - out.take(neg)
    return _keep_nan(x, out)


def _keep_nan(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out with x at x's NaNs (the composites' final where(isnan(x), x, out))."""
    nan = np.flatnonzero(np.isnan(x))
    if nan.size:
        out[nan] = x.take(nan)
    return out


def _ndtr_lower(x: np.ndarray) -> np.ndarray:
    """Phi(x) = exp(-x^2/2) erfcx(-x/sqrt 2) / 2 for x <= -1 (erfs._ndtr_lower)."""
    return _exp_sq(x, -0.5) * _erfcx_pos(x * -_R2) * 0.5


def _ndtr_block(x: np.ndarray) -> np.ndarray:
    """Phi(x) (erfs._ndtr): 0.5 + 0.5 erf(x / sqrt 2) for |x| <= 1 (and NaN), _ndtr_lower
    below -1, 1 - _ndtr_lower(-x) above 1."""
    out = np.empty_like(x)
    lo, hi = np.flatnonzero(x < -1.0), np.flatnonzero(x > 1.0)
    mid = np.flatnonzero(~((x < -1.0) | (x > 1.0)))
    if mid.size:
        out[mid] = 0.5 + 0.5 * _erf(x.take(mid) * _R2)
    if lo.size:
        out[lo] = _ndtr_lower(x.take(lo))
    if hi.size:
        out[hi] = 1.0 - _ndtr_lower(-x.take(hi))
    return _keep_nan(x, out)


def _log_ndtr_block(x: np.ndarray) -> np.ndarray:
    """log Phi(x) (erfs._log_ndtr): log(erfcx(-x / sqrt 2) / 2) - (x / 2) x below -1, else
    log1p(-upper), upper = _ndtr_lower(-x) above 1, 0.5 - 0.5 erf(x / sqrt 2) between."""
    out = np.empty_like(x)
    lo, hi = np.flatnonzero(x < -1.0), np.flatnonzero(x > 1.0)
    mid = np.flatnonzero(~((x < -1.0) | (x > 1.0)))
    if mid.size:
        out[mid] = np.log1p(-(0.5 - 0.5 * _erf(x.take(mid) * _R2)))
    if lo.size:
        xl = x.take(lo)
        out[lo] = np.log(_erfcx_pos(xl * -_R2) * 0.5) - xl * 0.5 * xl
    if hi.size:
        out[hi] = np.log1p(-_ndtr_lower(-x.take(hi)))
    return _keep_nan(x, out)


def _ndtri_block(p: np.ndarray) -> np.ndarray:
    """Phi^-1(p) (erfs._ndtri): with q = min(p, 1 - p), sqrt 2 erfinv(2q - 1) for q >= 1/4,
    -sqrt 2 erfcinv(2q) below, negated for p > 1/2; -inf at 0, inf at 1, NaN elsewhere."""
    out = np.where(p == 0.0, -math.inf, np.where(p == 1.0, math.inf, math.nan)).astype(p.dtype)
    ok = np.flatnonzero((p > 0.0) & (p < 1.0))
    if not ok.size:
        return out
    po = p.take(ok)
    upper = po > 0.5
    q = np.where(upper, 1.0 - po, po)
    is_mid = q >= 0.25
    x = np.empty_like(q)
    mid = np.flatnonzero(is_mid)
    if mid.size:
        x[mid] = _erfinv_central(q.take(mid) * 2.0 - 1.0) * math.sqrt(2.0)
    tail = np.flatnonzero(~is_mid)
    if tail.size:
        x[tail] = -_erfcinv(q.take(tail) * 2.0) * math.sqrt(2.0)
    out[ok] = np.where(upper, -x, x)
    return out


def erfcx_grad_factor(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """erfcx'(x) given y = erfcx(x) (x, y float32 / float64, one shape), erfs._erfcx_grad's
    operations: 2 x y - 2/sqrt(pi), and -y / f_2 from x = 2.5 on (f_2 the continued
    fraction's tail, erfs._erfcx_fraction(x, 2)), which runs on those elements only."""
    xf, yf = x.ravel(), y.ravel()
    with np.errstate(all="ignore"):
        d = xf * yf * 2.0 - 2 / _SQRT_PI
        big = np.flatnonzero(xf >= 2.5)
        if big.size:
            d[big] = -yf.take(big) / _fraction(xf.take(big), 2)
    return d.reshape(x.shape)


def log_ndtr_grad_factor(x: np.ndarray) -> np.ndarray:
    """phi(x) / Phi(x) (float32 / float64 x), erfs._log_ndtr_grad's operations: for x < 0
    sqrt(2/pi) / erfcx(-x / sqrt 2) (a number over a tensor: its reciprocal times the number),
    else exp(-x^2/2) / sqrt(2 pi) / Phi(x); each on its own elements."""
    xf = x.ravel()
    d = np.empty_like(xf)
    with np.errstate(all="ignore"):
        is_neg = xf < 0.0
        neg, rest = np.flatnonzero(is_neg), np.flatnonzero(~is_neg)
        if neg.size:
            e = _erfcx_block(xf.take(neg) * -_R2)
            d[neg] = np.reciprocal(e) * math.sqrt(2 / math.pi)
        if rest.size:
            xr = xf.take(rest)
            d[rest] = _exp_sq(xr, -0.5) * (1 / math.sqrt(2 * math.pi)) / _ndtr_block(xr)
    return d.reshape(x.shape)


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc elementwise of a float32 / float64 array, in its dtype (float64: bit-identical to
    erfs'; float32: its fit, within 0.505 ulp of the float64 composite)."""
    if x.dtype.itemsize <= 4:  # (float32: in float64, see _BLOCK32)
        return blocked(_erfc32_block, x, _BLOCK32)
    return blocked_native(_erfc_block, x)


def erfcx(x: np.ndarray) -> np.ndarray:
    """erfcx elementwise of a float32 / float64 array, in its dtype."""
    return blocked_native(_erfcx_block, x)


def ndtr(x: np.ndarray) -> np.ndarray:
    """Phi elementwise of a float32 / float64 array, in its dtype."""
    if x.dtype.itemsize <= 4:  # (float32: in float64, see _BLOCK32)
        return blocked(_ndtr32_block, x, _BLOCK32)
    return blocked_native(_ndtr_block, x)


def log_ndtr(x: np.ndarray) -> np.ndarray:
    """log Phi elementwise of a float32 / float64 array, in its dtype."""
    return blocked_native(_log_ndtr_block, x)


def ndtri(p: np.ndarray) -> np.ndarray:
    """Phi^-1 elementwise of a float32 / float64 array, in its dtype."""
    if p.dtype.itemsize <= 4:  # (float32: in float64, see _BLOCK32)
        return blocked(_ndtri32_block, p, _BLOCK32)
    return blocked_native(_ndtri_block, p)


# ---------------------------------------------------------------------------- lgamma
def _lgamma_pos(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for x > 0 (special._lgamma_pos; other elements: garbage): Stirling's series
    from 8 on; below, lgamma(2 + z)'s Taylor series, z in [-1/2, 1/2), plus log(prod), the
    product of the recurrence lgamma(y) = log(y - 1) + lgamma(y - 1) down to y < 2.5, and
    -log1p(z) (x in [0.5, 1.5)) or -log1p(x) - log(x) (x < 0.5)."""
    out = np.empty_like(x)
    is_big = x >= LGAMMA_STIRLING_FROM
    big = np.flatnonzero(is_big)
    if big.size:  # (x - 1/2) log x - x + log(2 pi)/2 + sum_k B_2k / (2k (2k-1) x^(2k-1))
        xb = x.take(big)
        r = 1.0 / xb
        out[big] = ((xb - 0.5) * np.log(xb) - xb + 0.5 * math.log(2 * math.pi)
                    + r * _horner(_STIRLING, r * r))
    small = np.flatnonzero(~is_big)
    if small.size:
        xs = x.take(small)
        xs = np.where(xs > 0.0, xs, 1.0)
        low, mid = xs < 0.5, xs < 1.5
        prod, y = xs * 0.0 + 1.0, xs
        # The composite's where(c, a, b) as arithmetic on the mask c (0.0 / 1.0), whose
        # results are its bits (np.where and masked ufuncs on a mixed mask are 5-40x slower
        # than an operation): y - c is y - 1.0 or y exactly; (y - 1) c + 1 is y (y in
        # [1.5, 7): y - 1 and its sum with 1 exact) or 1.0; a - v c is a - v or a - (+-0.0)
        # = a (a never -0.0 there: log of prod is +0.0 at prod = 1)
        factor = np.empty_like(xs)
        for _ in range(LGAMMA_RECURRENCE_STEPS):  # 2.5 <= y < 8 down to [1.5, 2.5)
            down = y >= LGAMMA_RECURRENCE_DOWN_FROM
            if not down.any():  # (y stays; prod *= 1.0: the remaining steps change nothing)
                break
            y = y - down
            np.subtract(y, 1.0, out=factor)
            factor *= down
            factor += 1.0
            prod *= factor
        # z = xs (low: y = xs), xs - 1 (mid: y = xs), else y - 2
        z = y - (2.0 - mid.astype(np.float64) - low)
        corr = np.log(prod)
        corr -= np.log1p(z) * mid
        corr -= np.log(xs) * low
        out[small] = z * _horner(_LG2, z) + corr
    return out


def _lgamma_near_roots(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for x in (-20, -2), not an integer, about the nearer root x0 (or (-3, -2)'s
    minimum) of x's interval: d sum_j LG2_j h_j(e, e0) - sum_{k=0}^{n+1} log1p(d / (x0 + k))
    (special._lgamma_near_roots states the maths)."""
    m = np.floor(x)
    i = np.clip(-m - 3.0, 0.0, len(_LGAMMA_ROOTS) - 1.0).astype(np.int64)
    cols = [_ROOT_COLS[c][i] for c in range(4)]
    left = x < (cols[0] + cols[2]) * 0.5
    hi, lo = np.where(left, cols[0], cols[2]), np.where(left, cols[1], cols[3])
    n = np.where(left, -m, -m - 1.0)
    x0, x0_lo, a, b, _ = _LGAMMA_MIN3
    mid = (x >= a) & (x < b)
    hi, lo = np.where(mid, x0, hi), np.where(mid, x0_lo, lo)
    n = np.where(mid, 3.0, n)
    return lgamma_about_root(x, hi, lo, n, mid, np)


def _lgamma_block(x: np.ndarray) -> np.ndarray:
    """lgamma(x) (special._lgamma): _lgamma_pos(x) for x >= 0; for x < 0 the reflection
    log(pi / |sin(pi r)|) - lgamma(1 - x), r = x - round(x), and where its terms cancel
    more than 2-fold in (-20, -2), _lgamma_near_roots; +inf at the poles and +-inf."""
    is_neg = x < 0.0
    neg = np.flatnonzero(is_neg)
    if not neg.size:
        out = _lgamma_pos(x)
    else:
        xn = x.take(neg)
        out = _lgamma_pos(np.where(is_neg, 1.0 - x, x))
        lg = out.take(neg)
        r = np.where((xn == np.floor(xn)), 0.25, xn - np.round(xn))
        # log |sin(pi r)|, as log(pi) + log |r| below |r| = 2^-100 (pi r subnormal there)
        refl = np.where(np.abs(r) < LGAMMA_TINY_SINE, -np.log(np.abs(r)),
                        math.log(math.pi) - np.log(np.abs(np.sin(r * math.pi)))) - lg
        out[neg] = refl
        lo, hi = LGAMMA_ROOTS_SPAN
        near = np.flatnonzero((xn > lo) & (xn < hi) & (np.abs(refl) * 2.0 < np.abs(lg)))
        if near.size:
            out[neg.take(near)] = _lgamma_near_roots(xn.take(near))
    odd = np.flatnonzero(~np.isfinite(x) | ((x <= 0.0) & (x == np.floor(x))))
    if odd.size:  # the poles and +-inf: +inf; NaN: x
        xo = x.take(odd)
        out[odd] = np.where(np.isnan(xo), xo, math.inf)
    return out


# float32 lgamma: from ~1e-11 approximations in float64 (docs/gen_lgamma32_coefs.py), the
# elements within 2^-6 ulp of a float32 rounding boundary (~3%) and those <= 0, +inf and
# NaN recomputed by _lgamma_block (_float64_path_rounding): the float64 path's bits rounded,
# for every float32 (docs/performance.md: an exhaustive sweep). For 0 < x < 2.5, with F a
# fit of lgamma(2 + z) / z on [-1/2, 1/2] (so the roots 1, 2 keep a relative error):
#   lgamma(x) = z F(z), z = x - 2 (x >= 3/2); z F(z) - log1p(z), z = x - 1 (x >= 1/2);
#               x F(x) - log1p(x) - log(x) below (each z exact but x - 2 for
#               x < 2^-29, which rounds: caught by the rounding check);
# from 2.5 on, Stirling's series at t = x + 6 >= 8.5 (5 terms: ~1e-13) shifted back by the
# recurrence: lgamma(x) = lgamma(t) - log(x (x + 1) ... (x + 5)) (cancelling <= 34-fold).
_LGAMMA32_F = (0.42278433509979446, 0.32246703342348215, -0.06735230143541845,
               0.020580808605945723, -0.007385533260145867, 0.0028905020708028437,
               -0.0011930547241831846, 0.0005098092360640295, -0.00022086971800187408,
               9.839673778818303e-05, -5.2787416886227824e-05, 2.41548599054416e-05)
_LGAMMA32_BLOCK = _BLOCK  # (the exact path's ~35 us a call: fewer, larger gathers)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma32_low(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for a 1-D float64 x in (0, 2.5) (see above)."""
    m1 = (x < 1.5).astype(np.float64)
    m0 = x < 0.5
    z = x - 2.0
    z += m1
    z += m0  # (x, x - 1 or x - 2: exact)
    v = horner_f64(_LGAMMA32_F, z)
    v *= z
    if m1.any():
        lp = np.log1p(z)
        lp *= m1
        v -= lp
    if m0.any():
        lx = np.log(x)
        lx *= m0
        v -= lx
    return v


def _lgamma32_high(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for a 1-D float64 x >= 2.5, finite (see above)."""
    t = x + 6.0
    r = 1.0 / t
    v = horner_f64(tuple(_STIRLING[:5]), r * r)
    v *= r
    v += _HALF_LOG_2PI
    v -= t
    lt = np.log(t)
    t -= 0.5
    lt *= t
    v += lt
    prod = x + 1.0
    prod *= x
    for k in range(2, 6):
        prod *= x + float(k)
    v -= np.log(prod, out=prod)
    return v


def _lgamma32_block(x: np.ndarray) -> np.ndarray:
    """lgamma of a 1-D float64 array of float32 values (see above)."""
    is_low = x < 2.5
    odd = ~(x > 0.0) | (x == math.inf)  # (<= 0, NaN, +inf: the float64 path)
    if is_low.all():
        out = _lgamma32_low(np.where(odd, 1.0, x) if odd.any() else x)
    elif not is_low.any():
        out = _lgamma32_high(np.where(odd, 2.5, x) if odd.any() else x)
    else:
        out = np.empty_like(x)
        low = np.flatnonzero(is_low & ~odd)
        out[low] = _lgamma32_low(x.take(low))
        high = np.flatnonzero(~is_low & ~odd)
        out[high] = _lgamma32_high(x.take(high))
    return _float64_path_rounding(out, x, _lgamma_block, odd)


def lgamma(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)| elementwise of a float32 / float64 array (float32: the float64 path's
    results rounded, see _lgamma32_block)."""
    if x.dtype.itemsize <= 4:
        return blocked(_lgamma32_block, x, _LGAMMA32_BLOCK)
    return blocked(_lgamma_block, x)


# ------------------------------------------------------------------------- polygamma
def _polygamma_pos(n: int, x: np.ndarray) -> np.ndarray:
    """psi^(n)(x) for x > 0 (special._polygamma_pos; other elements: garbage): the
    recurrence psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1) up to x >= 10 + n
    (only on the elements below), then the asymptotic series; digamma on [1.25, 2.75) by
    the series of psi(2 + z); for n >= 1 past special.polygamma_scaled_from(n) every term
    scaled by b^(n+1), b = 2^min(floor(log2 x), 1023) (a block with no such x: b = 1, skipped)."""
    if n == 0:  # near psi's root: the series about 2 only (the recurrence: the others only)
        is_near = (x >= 1.25) & (x < 2.75)
        near = np.flatnonzero(is_near)
        if near.size:
            out = np.empty_like(x)
            out[near] = _horner(_PSI2, x.take(near) - 2.0)
            far = np.flatnonzero(~is_near)
            if far.size:
                out[far] = _polygamma_pos(0, x.take(far))
            return out
    top = 10.0 + n
    acc, z = x * 0.0, np.where(x > 0.0, x, 1.0)
    b = e = None
    if n:
        scaled = z > polygamma_scaled_from(n)
        if scaled.any():
            # (<= 1023: log2 of the floats just below 2^1024 rounds to 1024.0, b = inf)
            e = np.where(scaled, np.minimum(np.floor(np.log2(z)), 1023.0), 0.0)
            b = np.exp2(e)
    rec = np.flatnonzero(z < top)
    if rec.size:
        zr, ar = z.take(rec), acc.take(rec)
        step = np.empty_like(zr)
        br = None if b is None else b.take(rec)
        for _ in range(int(top)):  # acc += 1 / z or (z / b)^-(n+1), z += 1 while z < top
            up = zr < top
            if not up.any():  # (z only grows) the remaining steps add +0.0 and 0: no change
                break
            if n == 0:
                np.divide(1.0, zr, out=step)
            elif br is None:
                np.power(zr, -float(n + 1), out=step)
            else:
                np.divide(zr, br, out=step)
                np.power(step, -float(n + 1), out=step)
            # the composite's acc + where(up, step, 0.0), z + where(up, 1, 0) as arithmetic
            # on the mask (a masked ufunc on a mixed mask is ~40x slower): step * 0.0 is
            # +0.0 (step finite and >= 0) and acc is never -0.0, so the bits are the same
            step *= up
            ar += step
            zr += up
        z[rec] = zr
        acc[rec] = ar
    r = 1.0 / z
    if n == 0:  # psi(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k)
        return np.log(z) - 0.5 * r - r * r * _horner(_PSI, r * r) - acc  # (no x near 2)
    coefs, mantissa, exponent = polygamma_zeta_terms(n)
    series = 0.5 + r * _horner(coefs, r * r)
    if b is None:  # b = 1: z / b = z, b / z = r; (v m) 2^k = v (m 2^k), all normal (n <= 137)
        tail = np.power(z, -float(n)) * (1.0 / n + r * series)
        return (acc + tail) * math.ldexp(mantissa, exponent)
    tail = np.power(z / b, -float(n)) * (b / float(n) + b / z * series)
    return _times_pow2((acc + tail) * mantissa, float(exponent) - e * float(n + 1))


def _times_pow2(v: np.ndarray, k: np.ndarray) -> np.ndarray:
    """v * 2^k, the operations of special._times_pow2."""
    k = np.clip(k, -2200.0, 2200.0)
    k1 = np.clip(k, -1000.0, 1000.0)
    k2 = np.clip(k - k1, -1000.0, 1000.0)
    return v * np.exp2(k1) * np.exp2(k2) * np.exp2(k - k1 - k2)


def _polygamma_block(n: int, reflection: tuple | None, x: np.ndarray) -> np.ndarray:
    """psi^(n)(x) (special._polygamma): for x < 0 the reflection (-1)^n psi^(n)(1 - x) -
    pi^(n+1) P_n(cot(pi r)), r = x - round(x), (P_n, pi^(n+1)) = reflection (None past
    float range: special._reflection_past_range); PyTorch's values at the poles, +-0 and
    +-inf."""
    neg = np.flatnonzero(x < 0.0)
    out = _polygamma_pos(n, np.where(x < 0.0, 1.0 - x, x) if neg.size else x)
    if neg.size:
        xn = x.take(neg)
        r = np.where(xn == np.floor(xn), 0.25, xn - np.round(xn))
        # cot(pi r) as tan(pi (1/2 - |r|)) (1/2 - |r| exact) where cot is small; held at
        # +-max where 1 / tan(pi r) overflows (a subnormal r)
        far = np.abs(r) >= 0.25
        cot = np.where(far, np.tan((0.5 - np.abs(r)) * math.pi) * np.sign(r),
                       1.0 / np.tan(np.where(far, 0.25, r) * math.pi))
        top = np.finfo(np.float64).max
        cot = np.clip(cot, -top, top)
        pos = out.take(neg)
        if reflection is None:
            refl = (np.full_like(pos, math.inf) if n % 2 else
                    np.where(cot == 0.0, pos, np.where(r < 0.0, math.inf, -math.inf)))
        else:
            refl = (-1) ** n * pos - reflection[1] * _horner(reflection[0], cot)
        out[neg] = refl
    odd = np.flatnonzero(~np.isfinite(x) | ((x <= 0.0) & (x == np.floor(x))))
    if odd.size:
        xo, vo = x.take(odd), out.take(odd)
        pole = (xo <= 0.0) & (xo == np.floor(xo))
        if n == 0:  # PyTorch: -inf at +0, +inf at -0, NaN at negative integers and -inf
            vo = np.where(xo == 0.0, np.where(np.signbit(xo), math.inf, -math.inf),
                          np.where(pole, math.nan, vo))
            vo = np.where(xo == math.inf, math.inf, vo)
        else:  # (-1)^(n+1) inf at the poles, NaN at -inf, 0 at +inf
            vo = np.where(xo == -math.inf, math.nan,
                          np.where(pole, (-1) ** (n + 1) * math.inf, vo))
            vo = np.where(xo == math.inf, 0.0, vo)
        out[odd] = vo
    return out


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    """psi^(n) elementwise of a float32 / float64 array (float32 computed in float64)."""
    reflection = polygamma_reflection_terms(n)
    return blocked(lambda v: _polygamma_block(n, reflection, v), x)
