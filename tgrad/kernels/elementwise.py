# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Elementwise kernels: ONE strided template for every arity (1, 2 or 3 inputs) whose scalar
formula is a ``tl.constexpr`` @triton.jit function, plus the formulas, forward and paired
backward side by side.

Shape contract of ``ew_kernel``: the output O and inputs A, B, C are views of up to 8 dims
of one logical shape (S0 innermost ... S7 outermost); each has its own element strides
(0 on broadcast dims), so inputs are read in place, never made contiguous first. Bytes moved
per element: sum of the input itemsizes + the output itemsize (broadcast inputs are read
from cache). float16/bfloat16 are computed in float32 registers (UPCAST), float64 in
float64. IDX64 switches index maths to int64 when numel or any extent passes 2^31.

Only ``tl``/``tl.math`` functions are used so the same formulas run in Triton's
interpreter; expm1/log1p/tanh use Kahan-style accurate forms. Two exceptions, behind the
``COMPILED`` constexpr (compiled code calls libdevice, the interpreter NumPy): C's fmod (LLVM
lowers ``%`` on floats to a - b trunc(a / b), inexact for large quotients and wrong for
signed zeros and infinite b) and pow's |a|^b (2^(b log2|a|) in fp32 is ~2e-5 off for large
results).

Signed zeros: Triton's unary minus is ``0 - x``, which maps +0 to +0 in compiled code, so
formulas negate with ``_neg`` (``x * -1``) and read signs with ``_signbit`` (the sign bit).
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice

from tgrad.cuda import is_interpreted
from tgrad.kernels.softmax import LOG2E, exp2_ftz

# True when kernels are compiled for a GPU, False under TRITON_INTERPRET=1 (the interpreter
# cannot call libdevice). A module-level constexpr: Triton folds the branches it guards.
COMPILED = tl.constexpr(not is_interpreted())

# Only N and the innermost strides (O0, A0, B0, C0: 1 means contiguous, which lets loads
# vectorize) are specialized on their values; the other sizes/strides are plain runtime
# ints, so new shapes do not trigger new compilations.
_NO_SPEC = [f"{p}{i}" for p in "SOABC" for i in range(8) if not (p != "S" and i == 0)]


@triton.jit(do_not_specialize=_NO_SPEC)
def ew_kernel(O, A, B, C, N,
              S0, S1, S2, S3, S4, S5, S6, S7,
              O0, O1, O2, O3, O4, O5, O6, O7,
              A0, A1, A2, A3, A4, A5, A6, A7,
              B0, B1, B2, B3, B4, B5, B6, B7,
              C0, C1, C2, C3, C4, C5, C6, C7,
              FN: tl.constexpr, ARITY: tl.constexpr, NDIM: tl.constexpr,
              UPCAST: tl.constexpr, IDX64: tl.constexpr, BLOCK: tl.constexpr,
              INNER: tl.constexpr = False):
    pid = tl.program_id(0)
    if IDX64:
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    else:
        offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    if NDIM == 1:
        oo = offs * O0
        oa = offs * A0
        ob = offs * B0
        oc = offs * C0
    else:
        # unravel the flat index, innermost dim first (inlined: a helper call costs a
        # re-patch of tl per call in the interpreter)
        if INNER:
            # S0 % BLOCK == 0: the block lies inside one run of the innermost dim, so only
            # its start is unravelled (scalar div/mod per program, none per element)
            if IDX64:
                start = pid.to(tl.int64) * BLOCK
            else:
                start = pid * BLOCK
            i = tl.multiple_of(start % S0, BLOCK) + tl.arange(0, BLOCK)  # aligned: loads
            rem = start // S0                                           # can vectorize
        else:
            i = offs % S0
            rem = offs // S0
        oo = i * O0
        oa = i * A0
        ob = i * B0
        oc = i * C0
        i = rem % S1
        rem = rem // S1
        oo += i * O1
        oa += i * A1
        ob += i * B1
        oc += i * C1
        if NDIM > 2:
            i = rem % S2
            rem = rem // S2
            oo += i * O2
            oa += i * A2
            ob += i * B2
            oc += i * C2
        if NDIM > 3:
            i = rem % S3
            rem = rem // S3
            oo += i * O3
            oa += i * A3
            ob += i * B3
            oc += i * C3
        if NDIM > 4:
            i = rem % S4
            rem = rem // S4
            oo += i * O4
            oa += i * A4
            ob += i * B4
            oc += i * C4
        if NDIM > 5:
            i = rem % S5
            rem = rem // S5
            oo += i * O5
            oa += i * A5
            ob += i * B5
            oc += i * C5
        if NDIM > 6:
            i = rem % S6
            rem = rem // S6
            oo += i * O6
            oa += i * A6
            ob += i * B6
            oc += i * C6
        if NDIM > 7:
            i = rem % S7
            rem = rem // S7
            oo += i * O7
            oa += i * A7
            ob += i * B7
            oc += i * C7
    a = tl.load(A + oa, mask=mask)
    if UPCAST:
        a = a.to(tl.float32)
    if ARITY == 1:
        y = FN(a)
    else:
        b = tl.load(B + ob, mask=mask)
        if UPCAST:
            b = b.to(tl.float32)
        if ARITY == 2:
            y = FN(a, b)
        else:
            c = tl.load(C + oc, mask=mask)
            if UPCAST:
                c = c.to(tl.float32)
            y = FN(a, b, c)
    tl.store(O + oo, y.to(O.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------ helpers
@triton.jit
def _expm1(x):
    # Kahan: u = e^x; (u - 1) * x / log(u) corrects the rounding of u.
    u = tl.exp(x)
    um1 = u - 1.0
    r = tl.where(um1 == -1.0, -1.0, um1 * x / tl.log(u))
    r = tl.where(u == 1.0, x, r)
    return tl.where(x > 80.0, u, r)


@triton.jit
def _log1p(x):
    u = 1.0 + x
    r = tl.log(u) * x / (u - 1.0)
    r = tl.where(u == 1.0, x, r)
    return tl.where(u == float("inf"), u, r)


@triton.jit
def _neg(x):
    # IEEE negation (the sign bit flips, so -(+0) = -0); Triton's -x is 0 - x
    if x.dtype.is_floating():
        r = x * -1.0
    else:
        r = -x
    return r


@triton.jit
def _copysign32(mag, s):
    # float32 mag's magnitude with s's sign bit: (mag & 0x7fffffff) | (s & 0x80000000)
    m = mag.to(tl.int32, bitcast=True) & 0x7FFFFFFF
    b = s.to(tl.int32, bitcast=True) & -2147483648
    return (m | b).to(tl.float32, bitcast=True)


@triton.jit
def _signbit(x):
    # x's sign bit (True for -0.0 and negative NaNs too); halves are computed in fp32
    if x.dtype == tl.float64:
        r = x.to(tl.int64, bitcast=True) < 0
    else:
        r = x.to(tl.float32).to(tl.int32, bitcast=True) < 0
    return r


@triton.jit
def _fmod(a, b):
    # C's fmod (the sign of a), exact; integers: % (truncating)
    if a.dtype.is_floating():
        if COMPILED:
            r = libdevice.fmod(a, b)
        else:
            r = a % b  # NumPy's fmod
    else:
        r = a % b
    return r


@triton.jit
def _sqrt_rn(x):
    # correctly rounded square root: tl.sqrt is sqrt.approx in fp32 (exact in fp64, where
    # tl.sqrt_rn is not defined)
    if x.dtype == tl.float64:
        r = tl.sqrt(x)
    else:
        r = tl.sqrt_rn(x)
    return r


# ------------------------------------------------------------------ unary forward
@triton.jit
def f_neg(x):
    return _neg(x)


@triton.jit
def f_abs(x):
    return tl.abs(x)  # clears the sign bit: abs(-0.0) = +0.0 (NumPy)


@triton.jit
def f_exp(x):
    return tl.exp(x)


@triton.jit
def f_log(x):
    return tl.log(x)


@triton.jit
def f_log1p(x):
    return _log1p(x)


@triton.jit
def f_logit(x):
    # log(x / (1 - x)). From x = 1/4 up, log1p((2x - 1) / (1 - x)): 2x - 1 is exact there
    # (Sterbenz), so no cancellation near 1/2, where log x - log1p(-x) loses its digits;
    # below 1/4 that form does not cancel (and keeps subnormal x finite: 1/x would overflow)
    hi = x >= 0.25
    near = _log1p((x * 2.0 - 1.0) / (1.0 - x))
    return tl.where(hi, near, tl.log(x) - _log1p(_neg(x)))


@triton.jit
def f_expm1(x):
    return _expm1(x)


@triton.jit
def f_sqrt(x):
    return _sqrt_rn(x)


@triton.jit
def f_rsqrt(x):
    return 1.0 / _sqrt_rn(x)


@triton.jit
def f_sin(x):
    return tl.sin(x)


@triton.jit
def f_cos(x):
    return tl.cos(x)


@triton.jit
def f_tanh(x):
    # Cephes' tanh/tanhf: |x| >= 0.625: 1 - 2 / (e^(2|x|) + 1), sign restored (one exp, one
    # division); below, with z = x^2, x + x z P(z)/Q(z) in float64 and x + x z P(z) in
    # float32 (halves too), odd minimax forms. Against NumPy float64 in the interpreter:
    # <= 2 ulp (tests/device_checks.py: check_tanh); the former -expm1(-2|x|) /
    # (2 + expm1(-2|x|)) was 5 ulp off in float64 and cost an exp, a log and two divisions.
    ax = tl.abs(x)
    z = x * x
    if x.dtype == tl.float64:
        big = 1.0 - 2.0 / (tl.exp(2.0 * ax) + 1.0)
        p = (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z \
            - 1.61468768441708447952e3
        q = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z \
            + 4.84406305325125486048e3
        small = tl.where(x == 0, x, x + x * (z * p / q))  # -0 stays -0
        r = tl.where(ax < 0.625, small, tl.where(x < 0, _neg(big), big))  # NaN: big's
    else:
        # e^(2|x|) = 2^(|x| 2 log2 e) >= 1 is never subnormal: ex2.ftz is exact here, and
        # big >= 0 (or NaN) takes x's sign by its bits (one logic op, not a select)
        big = 1.0 - 2.0 / (exp2_ftz(ax * (2.0 * LOG2E)) + 1.0)
        p = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
              + 1.33314422036e-1) * z - 3.33332819422e-1) * z
        small = tl.where(x == 0, x, x + x * p)  # -0 stays -0
        r = tl.where(ax < 0.625, small, _copysign32(big, x))
    return r


@triton.jit
def f_sigmoid(x):
    e = tl.exp(tl.where(x < 0, x, -x))
    return tl.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@triton.jit
def f_erf(x):
    return tl.erf(x)


@triton.jit
def f_reciprocal(x):
    return 1.0 / x


@triton.jit
def f_square(x):
    return x * x


@triton.jit
def f_sign(x):
    # NaN stays NaN (NumPy); +-inf give +-1
    s = tl.where(x > 0, 1, tl.where(x < 0, -1, 0)).to(x.dtype)
    return tl.where(x != x, x, s)


@triton.jit
def f_floor(x):
    if x.dtype.is_floating():
        r = tl.floor(x)
    else:
        r = x  # integers are their own floor, ceil and round (NumPy, PyTorch)
    return r


@triton.jit
def f_ceil(x):
    if x.dtype.is_floating():
        r = tl.ceil(x)
    else:
        r = x
    return r


@triton.jit
def f_round(x):
    # Round half to even: adding and subtracting 2^(mantissa bits) rounds in the FPU's
    # round-to-nearest-even mode; |x| beyond that is already an integer.
    if x.dtype.is_floating():
        if x.dtype == tl.float64:
            big = 4503599627370496.0
        else:
            big = 8388608.0
        neg = _signbit(x)  # (-0.0 rounds to -0.0, as NumPy and PyTorch)
        ax = tl.where(neg, -x, x)
        r = tl.where(ax < big, (ax + big) - big, ax)
        r = tl.where(neg, _neg(r), r)
    else:
        r = x
    return r


@triton.jit
def f_trunc(x):
    if x.dtype.is_floating():
        r = tl.where(x < 0, tl.ceil(x), tl.floor(x))
    else:
        r = x
    return r


@triton.jit
def f_log2(x):
    return tl.log2(x)


# Irrational constants c are written as an fp32 pair hi + lo (hi rounded toward zero, so
# lo > 0 and an infinite operand stays infinite): Python floats become fp32 constants in
# Triton, and the pair keeps float64 formulas exact to ~2^-48 (as g_erf's).
@triton.jit
def f_log10(x):
    t = tl.log2(x)
    return t * 0.3010299801826477 + t * 1.5481333548450493e-08  # log2(x) log10(2)


@triton.jit
def f_exp2(x):
    return tl.exp2(x)


@triton.jit
def _sinh_abs(ax):
    # sinh|x| = h (h + 2) / (2 (h + 1)) with h = expm1|x| (no cancellation near 0); past
    # |x| = 20, e^|x| / 2 as (e^(|x|/2) / 2) e^(|x|/2), finite up to the dtype's limit.
    h = _expm1(ax)
    e = tl.exp(ax * 0.5)
    return tl.where(ax > 20.0, (e * 0.5) * e, h * (h + 2.0) / (2.0 * (h + 1.0)))


@triton.jit
def f_sinh(x):
    s = _sinh_abs(tl.where(x < 0, -x, x))
    return tl.where(x < 0, _neg(s), tl.where(x == 0, x, s))  # odd; -0 stays -0


@triton.jit
def f_cosh(x):
    # (e^|x| + e^-|x|) / 2 with e^|x| as (e^(|x|/2))^2, finite up to the dtype's limit
    e = tl.exp(tl.where(x < 0, -x, x) * 0.5)
    return (e * 0.5) * e + 0.5 / (e * e)


@triton.jit
def f_tan(x):
    return tl.sin(x) / tl.cos(x)


# Inverse trigonometric functions. Triton has no atan/asin/acos (without libdevice), so
# atan is Cephes' (range reduction, then its rational P/Q for |u| <= 0.66, peak relative
# error ~2.6e-18), and the others go through atan2. Float literals in arithmetic with a
# float64 tensor are float64 constants (checked in the PTX of Triton 3.6 and 3.9 and in the
# interpreter), but Triton 3.6 rounds the literal of a comparison, or a where() between two
# literals, to fp32: so the branch points are fp32-exact and the multiples of pi/4 are
# k * (pi/4) with an exact k. Measured against NumPy float64 in the interpreter: atan and
# atan2 <= 1 ulp, asin and acos <= 2 ulp (float64 and float32).
@triton.jit
def _atan_parts(t):
    # atan(t) = k pi/4 + r for t >= 0 (or NaN): k = 2 and u = -1/t past ~tan(3pi/8), k = 1
    # and u = (t - 1)/(t + 1) past ~0.66 (Cephes' branch points rounded to fp32-exact
    # 2.4140625 and 0.66015625: |u| < 0.4143 either way), else k = 0 and u = t;
    # r = u + u z P(z)/Q(z) with z = u^2
    big = t > 2.4140625
    mid = (t > 0.66015625) & (t <= 2.4140625)
    u = tl.where(big, -1.0 / t, tl.where(mid, (t - 1.0) / (t + 1.0), t))
    k = tl.where(big, 2.0, tl.where(mid, 1.0, 0.0)).to(t.dtype)
    z = u * u
    p = (((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z
          - 7.500855792314704667340e1) * z - 1.228866684490136173410e2) * z \
        - 6.485021904942025371773e1
    q = ((((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z
          + 4.328810604912902668951e2) * z + 4.853903996359136964868e2) * z \
        + 1.945506571482613964425e2
    return k, u + u * (z * p / q)


@triton.jit
def _quarter_pis(k, r):
    # k pi/4 + r with pi/4 as a float64 pair (hi + lo, Cephes' MOREBITS / 2): one rounding
    return k * 0.7853981633974483 + (k * 3.061616997868383e-17 + r)


@triton.jit
def f_atan(x):
    k, r = _atan_parts(tl.abs(x))
    a = _quarter_pis(k, r)
    return tl.where(x < 0, _neg(a), tl.where(x == 0, x, a))  # odd; -0 stays -0, NaN too


@triton.jit
def f_asin(x):
    # asin x = atan2(x, sqrt(1 - x^2)); (1 - x)(1 + x) keeps 1 - x^2 exact-ish near +-1,
    # and is negative (NaN result) for |x| > 1
    return f_atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def f_acos(x):
    return f_atan2(tl.sqrt((1.0 - x) * (1.0 + x)), x)  # acos x = atan2(sqrt(1 - x^2), x)


@triton.jit
def f_logical_not(x):
    return x == 0


@triton.jit
def f_bitwise_not(x):
    if x.dtype == tl.int1:
        r = x == 0  # bool: logical not
    else:
        r = ~x
    return r


@triton.jit
def f_identity(x):
    return x


# ------------------------------------------------------------------ float8 casts
# PyTorch's float -> float8 (c10's fp8e4m3fn_from_fp32_value / fp8e5m2_from_fp32_value, the
# same function in its CPU and CUDA copy kernels): through float32 (a float64 or an integer
# is rounded to float32 first), round to nearest even, then
#   float8_e4m3fn: |x| > 448 and +-inf saturate to +-448 (bits 0x7e | sign), NaN is 0x7f | sign;
#   float8_e5m2:   |x| >= 61440 (past the midpoint of 57344 and 2^16) and +-inf are +-inf
#                  (0x7c | sign), NaN is 0x7f | sign.
# Triton's fp32 -> fp8 on sm_90 is cvt.rn.satfinite (round to nearest even, saturating
# overflow and inf to the largest finite value): right in range, so the formulas convert |x|
# in range with fp_downcast_rounding="rtne" and set the special bits themselves. They return
# the bits (int32, stored into a uint8 view of the float8 output); the sign is x's sign bit.
@triton.jit
def _float8_sign(f):
    return (f.to(tl.int32, bitcast=True) >> 24) & 0x80


@triton.jit
def f_to_float8e4nv(x):
    f = x.to(tl.float32)
    a = tl.minimum(tl.abs(f), 448.0)  # (|x| > 448 rounds to 448 or past it: saturate)
    bits = a.to(tl.float8e4nv, fp_downcast_rounding="rtne").to(tl.uint8, bitcast=True)
    bits = tl.where(f != f, 0x7F, bits.to(tl.int32))
    return bits | _float8_sign(f)


@triton.jit
def f_to_float8e5(x):
    f = x.to(tl.float32)
    a = tl.minimum(tl.abs(f), 57344.0)  # in range for the conversion; overflow set below
    bits = a.to(tl.float8e5, fp_downcast_rounding="rtne").to(tl.uint8, bitcast=True)
    bits = tl.where(tl.abs(f) >= 61440.0, 0x7C, bits.to(tl.int32))
    bits = tl.where(f != f, 0x7F, bits)
    return bits | _float8_sign(f)


@triton.jit
def f_from_float8(x):
    # float8 -> float32 is exact (inf and NaN kept); the store rounds nothing into
    # float16/bfloat16/float64 (every float8_e4m3fn/e5m2 value is one of theirs)
    return x.to(tl.float32)


# ------------------------------------------------------------------ binary forward
@triton.jit
def f_add(a, b):
    if a.dtype == tl.int1:
        r = a | b  # bool + bool is logical or (NumPy, PyTorch)
    else:
        r = a + b
    return r


@triton.jit
def f_sub(a, b):
    return a - b


@triton.jit
def f_mul(a, b):
    return a * b


@triton.jit
def f_div(a, b):
    return a / b


@triton.jit
def f_floor_divide(a, b):
    if a.dtype.is_floating():
        # NumPy's npy_divmod, exact: % is C's fmod on floats; the quotient of a - fmod(a, b)
        # is snapped to the nearest integer; b == 0 gives a / b (inf/nan).
        mod = _fmod(a, b)
        div = (a - mod) / b
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
        fl = tl.floor(div)
        fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
        q = a / b
        fl = tl.where(div == 0, q * 0.0, fl)  # a zero quotient takes the sign of a / b
        return tl.where(b == 0, q, fl)
    else:
        # // and % truncate toward zero on integers: step down when the signs differ
        q = a // b
        r = a % b
        return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def f_remainder(a, b):
    # PyTorch's a mod b: the sign of b. % is C's fmod (floats and ints alike): move a nonzero
    # result with the wrong sign by b; a zero keeps fmod's sign, a's (PyTorch; NumPy gives
    # it b's sign)
    r = _fmod(a, b)
    r = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return r


@triton.jit
def f_fmod(a, b):
    return _fmod(a, b)  # C's fmod: the sign of a


@triton.jit
def f_pow(a, b):
    if a.dtype.is_floating():
        r = _fpow(a, b)
    else:
        r = _ipow(a, b)
    return r


@triton.jit
def _ipow(a, b):
    # integer a^b: for b >= 0 square and multiply over b's bits (at most 64), wrapping on
    # overflow as NumPy does; for b < 0 PyTorch's: 1 for a = 1, (-1)^b for a = -1, else 0
    r = a * 0 + 1
    base = a
    e = b
    if b.dtype.is_int_signed():  # b < 0: the loop computes small^1 (nothing more kept live)
        small = tl.where(a == 1, 1, tl.where(a == -1, 1 - 2 * (b & 1), 0)).to(a.dtype)
        base = tl.where(b < 0, small, a)
        e = tl.where(b < 0, 1, b)
    for _ in range(64):  # (a loop, not unrolled: 64 unrolled steps spill registers)
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    return r


@triton.jit
def _fpow(a, b):
    # IEEE pow (NumPy's np.power): |a|^b (libdevice's pow when compiled, 2^(b log2|a|) in
    # the interpreter); a negative base (-0 included)
    # takes the sign (-1)^b for an integral b and is NaN for a fractional b, unless it is -0
    # or -inf; a^0 = 1 and 1^b = 1 for every b (NaN too); (-1)^(+-inf) = 1.
    aa = tl.abs(a)
    if COMPILED:
        mag = libdevice.pow(aa, b)  # a few ulp (2^(b log2|a|) is not, at large results)
    else:
        mag = tl.exp2(b * tl.log2(aa))
    neg = _signbit(a) & (a == a)
    bint = tl.floor(b) == b
    odd = bint & (tl.floor(b * 0.5) * 2.0 != b)
    frac = tl.where((a == 0) | (a == -float("inf")), mag, float("nan"))
    r = tl.where(neg, tl.where(bint, tl.where(odd, _neg(mag), mag), frac), mag)
    inf = float("inf")
    one = (b == 0) | (a == 1) | ((a == -1) & ((b == inf) | (b == -inf)))
    return tl.where(one, 1.0, r)


@triton.jit
def f_atan2(a, b):
    # atan2(a, b) as NumPy's (C99): atan(|a| / |b|) = k pi/4 + r, reflected to pi - that
    # where b's sign bit is set (-0 included), then a's sign. |a| = |b| = inf reads as 1
    # (pi/4, 3pi/4) and |a| = |b| = 0 as 0 (0, pi); a NaN operand gives NaN.
    aa = tl.abs(a)
    ab = tl.abs(b)
    t = tl.where((aa == float("inf")) & (ab == float("inf")), 1.0,
                 tl.where((aa == 0) & (ab == 0), 0.0, aa / ab))
    k, r = _atan_parts(t)
    b_neg = _signbit(b) & (b == b)
    res = _quarter_pis(tl.where(b_neg, 4.0 - k, k), tl.where(b_neg, _neg(r), r))
    a_neg = _signbit(a) & (a == a)
    return tl.where(a_neg, _neg(res), res)


@triton.jit
def f_maximum(a, b):
    # NaN propagating (NumPy maximum): a NaN in either input wins; bools: or.
    if a.dtype == tl.int1:
        r = a | b
    else:
        r = tl.where(a != a, a, tl.where(b != b, b, tl.where(a > b, a, b)))
    return r


@triton.jit
def f_minimum(a, b):
    if a.dtype == tl.int1:
        r = a & b
    else:
        r = tl.where(a != a, a, tl.where(b != b, b, tl.where(a < b, a, b)))
    return r


@triton.jit
def f_eq(a, b):
    return a == b


@triton.jit
def f_ne(a, b):
    return a != b


@triton.jit
def f_lt(a, b):
    return a < b


@triton.jit
def f_le(a, b):
    return a <= b


@triton.jit
def f_gt(a, b):
    return a > b


@triton.jit
def f_ge(a, b):
    return a >= b


@triton.jit
def f_logical_and(a, b):
    return (a != 0) & (b != 0)


@triton.jit
def f_logical_or(a, b):
    return (a != 0) | (b != 0)


@triton.jit
def f_bitwise_and(a, b):
    return a & b


@triton.jit
def f_bitwise_or(a, b):
    return a | b


@triton.jit
def f_bitwise_xor(a, b):
    return a ^ b


@triton.jit
def f_bitwise_left_shift(a, b):
    # integers of one dtype; a count outside [0, width) gives 0 (PyTorch, NumPy), where
    # the hardware shift would be undefined, so such counts are never shifted by
    ok = (b >= 0) & (b < a.dtype.primitive_bitwidth)
    return tl.where(ok, a << tl.where(ok, b, 0), 0)


@triton.jit
def f_bitwise_right_shift(a, b):
    # arithmetic for signed a; a count outside [0, width) gives a >> (width - 1): the sign
    ok = (b >= 0) & (b < a.dtype.primitive_bitwidth)
    return a >> tl.where(ok, b, a.dtype.primitive_bitwidth - 1)


@triton.jit
def f_gcd(a, b):
    # Euclid on |a| and |b| for a fixed number of steps: 1.5 x the width covers the slowest
    # pair, consecutive Fibonacci numbers (91 steps below 2^63); gcd(0, 0) = 0
    x = tl.where(a < 0, -a, a)
    y = tl.where(b < 0, -b, b)
    for _ in range(a.dtype.primitive_bitwidth * 3 // 2):
        nonzero = y != 0
        r = x % tl.where(nonzero, y, 1)
        x_next = tl.where(nonzero, y, x)
        y = tl.where(nonzero, r, 0)
        x = x_next
    return x


@triton.jit
def f_lcm(a, b):
    # |a / gcd(a, b) * b| (the division is exact); 0 when a or b is 0. PyTorch's C code
    # promotes uint8/int8/int16 to int: the absolute value comes before the wrap into the
    # dtype there (int8 lcm(100, 7) is 700 -> -68), int32/int64 wrap before it
    g = f_gcd(a, b)
    q = a // tl.where(g == 0, 1, g)
    if a.dtype.primitive_bitwidth < 32:
        p = q.to(tl.int32) * b.to(tl.int32)
        return tl.where(p < 0, -p, p).to(a.dtype)
    p = q * b
    return tl.where(p < 0, -p, p)


# ------------------------------------------------------------------ paired backward
@triton.jit
def f_tanh_backward(g, y):
    # y = tanh(x):  dx = g (1 - y^2)
    return g * (1.0 - y * y)


@triton.jit
def f_sigmoid_backward(g, y):
    # y = sigmoid(x):  dx = g y (1 - y)
    return g * y * (1.0 - y)


@triton.jit
def f_relu_backward(g, y):
    # y = relu(x) (>= 0 or NaN):  dx = g where y != 0 (PyTorch's "not y <= 0": a NaN x
    # passes g through), else exactly 0 (a NaN or inf g too)
    return tl.where(y != 0, g, 0.0)


# ------------------------------------------------------------------ fused gradient formulas
# One kernel per elementwise backward (tgrad/backends/numpy.py GRAD_FORMULAS is the same
# table on the CPU): g incoming gradient, x input, y output, a/b binary inputs.
@triton.jit
def g_abs(g, x):
    return g * f_sign(x)  # d|x| = sign(x)


@triton.jit
def g_log1p(g, x):
    return g / (x + 1.0)


@triton.jit
def g_expm1(g, y):
    return g * (y + 1.0)  # e^x = y + 1


@triton.jit
def g_sqrt(g, y):
    return g / (y * 2.0)  # 1 / (2 sqrt(x))


@triton.jit
def g_rsqrt(g, y):
    return g * (y * y * y) * -0.5  # -x^(-3/2) / 2


@triton.jit
def g_sin(g, x):
    return g * tl.cos(x)


@triton.jit
def g_cos(g, x):
    return _neg(g) * tl.sin(x)


@triton.jit
def g_erf(g, x):
    # 2/sqrt(pi) e^(-x^2); the constant as an fp32 pair (Python floats become fp32
    # constants in Triton), exact to ~2^-48 in float64.
    e = g * tl.exp(-(x * x))
    return e * 1.128379225730896 + e * -5.8635382771399236e-08


@triton.jit
def g_reciprocal(g, y):
    return _neg(g) * (y * y)  # -1/x^2


@triton.jit
def g_square(g, x):
    return g * x * 2.0


@triton.jit
def g_log2(g, x):
    return g / (x * 0.6931471228599548 + x * 5.769998878690785e-08)  # 1 / (x ln 2)


@triton.jit
def g_log10(g, x):
    return g / (x * 2.3025848865509033 + x * 2.064431470216732e-07)  # 1 / (x ln 10)


@triton.jit
def g_exp2(g, y):
    t = g * y
    return t * 0.6931471228599548 + t * 5.769998878690785e-08  # g 2^x ln 2


@triton.jit
def g_sinh(g, x):
    return g * f_cosh(x)


@triton.jit
def g_cosh(g, x):
    return g * f_sinh(x)


@triton.jit
def g_tan(g, y):
    return g * (1.0 + y * y)  # 1 / cos^2 = 1 + tan^2


@triton.jit
def g_atan(g, x):
    return g / (1.0 + x * x)  # 1 / (1 + x^2)


@triton.jit
def g_asin(g, x):
    return g / tl.sqrt((1.0 - x) * (1.0 + x))  # 1 / sqrt(1 - x^2): inf at +-1, NaN past


@triton.jit
def g_acos(g, x):
    return _neg(g) / tl.sqrt((1.0 - x) * (1.0 + x))  # -1 / sqrt(1 - x^2)


@triton.jit
def _atan2_recip(a, b):
    # 1 / (a^2 + b^2), and 0 where a^2 + b^2 == 0 (PyTorch's mask: zero gradient there)
    d = a * a + b * b
    return tl.where(d == 0, 0.0, 1.0 / d)


@triton.jit
def g_atan2_a(g, a, b):
    return g * b * _atan2_recip(a, b)  # d atan2(a, b)/da = b / (a^2 + b^2)


@triton.jit
def g_atan2_b(g, a, b):
    return g * _neg(a) * _atan2_recip(a, b)  # d atan2(a, b)/db = -a / (a^2 + b^2)


@triton.jit
def g_div_b(q, a, b):
    return _neg(q * a) / b  # d(a/b)/db = -a/b^2, with q = g / b


@triton.jit
def g_max_share(g, p, q):
    # maximum's gradient share of p: 1 - [p < q] - [p == q] / 2 (PyTorch's rule: 1 where p
    # wins, 1/2 on ties, 1 for both where a NaN makes every comparison false, and exactly 0,
    # whatever g is, where p loses)
    return tl.where(p < q, 0.0, g * (1.0 - (p == q).to(g.dtype) * 0.5))


# Reductions' backward, with the reduced values broadcast back (stride-0 inputs).
@triton.jit
def g_logsumexp(g, x, y):
    return g * tl.exp(x - y)  # softmax


@triton.jit
def g_centered(g, x, m):
    return g * (x - m)  # var/std, the constant factor folded into g


@triton.jit
def g_prod(g, y, x):
    return g * y / x  # prod / x, no zero in x


@triton.jit
def g_pow_base(g, a, b):
    return g * tl.where(b == 0, 0.0, b * f_pow(a, b - 1.0))  # b a^(b-1), 0 where b == 0


@triton.jit
def g_pow_exponent(g, a, b):
    # a^b log a, 0 where a == 0 and b >= 0
    return g * tl.where((a == 0) & (b >= 0), 0.0, f_pow(a, b) * tl.log(a))


@triton.jit
def g_eq_mask(g, x, y):
    return tl.where(x == y, g, 0.0)  # amax/amin: g where x == y, else exactly 0


@triton.jit
def g_gt_mask(g, x, lo):
    return tl.where(x > lo, g, 0.0)  # clamp(min=lo): g where x > lo, else exactly 0


@triton.jit
def g_lt_mask(g, x, hi):
    return tl.where(x < hi, g, 0.0)  # clamp(max=hi): g where x < hi, else exactly 0


GRAD_FORMULAS = {n: globals()["g_" + n] for n in (
    "pow_base", "pow_exponent", "eq_mask", "logsumexp", "centered", "prod",
    "abs", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "erf", "reciprocal", "square",
    "div_b", "max_share", "gt_mask", "lt_mask", "log2", "log10", "exp2", "sinh", "cosh",
    "tan", "atan", "asin", "acos", "atan2_a", "atan2_b")}


# ------------------------------------------------------------------ ternary
@triton.jit
def f_where(c, a, b):
    return tl.where(c != 0, a, b)


UNARY = {n: globals()["f_" + n] for n in (
    "neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
    "sigmoid", "erf", "reciprocal", "square", "sign", "floor", "ceil", "round", "trunc",
    "log2", "log10", "exp2", "sinh", "cosh", "tan", "atan", "asin", "acos", "logical_not",
    "bitwise_not", "logit")}
# ops whose formula needs a floating input (integer inputs take the host path)
FLOAT_ONLY = {"exp", "log", "log1p", "logit", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
              "sigmoid", "erf", "reciprocal", "div", "log2", "log10", "exp2", "sinh", "cosh",
              "tan", "atan", "asin", "acos", "atan2"}
BINARY = {n: globals()["f_" + n] for n in (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2",
    "maximum", "minimum", "eq", "ne", "lt",
    "le", "gt",
    "ge", "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
    "tanh_backward", "sigmoid_backward", "relu_backward")}
