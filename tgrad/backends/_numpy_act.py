"""CPU paths of the piecewise activations and losses of tgrad/nn/_composite.py and
tgrad/nn/_activations.py: the same NumPy steps as their compositions of tgrad ops (where,
clamp, comparisons, mul, add), run on the arrays at once, without one tgrad op (Python,
a Function, a wrapped tensor) per step. Not a backend primitive (the cuda backend has
no counterpart to supply: on cuda the ops stay compositions of tgrad ops); the callers
take these for CPU float32/float64 arrays only (``fast_dtype``).

Bit-identity with the compositions: a ``where`` only selects, so any exact selection
gives its bits (the backend's ``where``, or the bool-mask product ``_masked_product`` for
``where(mask, a, 0.0)``); every arithmetic step is the composition's own NumPy ufunc on
the same operands in the same order, a Python number cast to the array's dtype first (as
tgrad's ops cast a number operand). Where a shorter formula is used, its comment says why
it gives the same bits (leaky_relu's maximum, softshrink's clip). Signalling NaNs are not
considered (arithmetic never makes one).

Every function takes float32/float64 arrays (x the input, g the incoming gradient, d the
difference of a loss's operands; any shapes that broadcast, any strides) and Python
numbers, and returns a fresh array of the broadcast shape, never a view of its inputs.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends import numpy as be
from tgrad.backends._numpy_dtypes import fast_dtype  # noqa: F401 - the callers' dtype test


def _owned(y) -> np.ndarray:
    """A ufunc's result as an array (a 0-d input gives a NumPy scalar)."""
    return y if type(y) is np.ndarray else np.asarray(y)


def _keep(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """where(mask, x, 0.0): x's bits or +0.0 (the bool-mask product, a fresh array)."""
    return _owned(be._masked_product(x, mask))


# ---------------------------------------------------------------- piecewise activations
def leaky_relu(x: np.ndarray, slope: float) -> np.ndarray:
    """where(x > 0, x, x * s). For 0 < s < 1: max(x * s, x) in one more pass: x * s <= x
    for x >= 0 and >= x for x <= 0 (equal values have equal bits: +-0 times s keeps its
    sign), and np.maximum returns its first operand NaN (x * s, as the where)."""
    s = x.dtype.type(slope)
    with be.quiet():
        y = _owned(np.multiply(x, s))
        if 0 < s < 1:
            return _owned(np.maximum(y, x, out=y))
        return _owned(be.where(np.greater(x, 0), x, y))


def leaky_relu_grad(x: np.ndarray, g: np.ndarray, slope: float) -> np.ndarray:
    """where(x > 0, g, g * s)."""
    with be.quiet():
        return _owned(be.where(np.greater(x, 0), g, np.multiply(g, x.dtype.type(slope))))


def softshrink(x: np.ndarray, lambd: float) -> np.ndarray | None:
    """where(x > l, x - l, where(x < -l, x + l, where(x == x, 0.0, x))) as x - clip(x, -l, l)
    for 0 < l < inf (None otherwise): clip gives l above l (x - l), -l below -l
    (x - (-l) = x + l exactly), x itself in [-l, l] (x - x = +0.0, -0.0 - -0.0 too), NaN at
    NaN (NaN - NaN keeps the first, x, as the where)."""
    lam = x.dtype.type(lambd)
    if not 0 < lam < np.inf:
        return None
    with be.quiet():
        c = _owned(be._CLIP(x, -lam, lam))
        return _owned(np.subtract(x, c, out=c))


def shrink_grad(x: np.ndarray, g: np.ndarray, lambd: float) -> np.ndarray:
    """soft/hardshrink's where((x < -l) | (x > l), g, 0.0): |x| > l is the same mask (false
    at NaN; for l < 0 true elsewhere, as the pair)."""
    with be.quiet():
        return _keep(g, np.greater(np.abs(x), x.dtype.type(lambd)))


def hardshrink(x: np.ndarray, lambd: float) -> np.ndarray:
    """where((x < -l) | (x > l), x, where(x == x, 0.0, x)): x where not |x| <= l (NaN
    included), else +0.0."""
    with be.quiet():
        return _keep(x, np.logical_not(np.less_equal(np.abs(x), x.dtype.type(lambd))))


def threshold(x: np.ndarray, th: float, value: float) -> np.ndarray:
    """where(x <= th, v, x) (a +0.0 value: the bool-mask product)."""
    v = x.dtype.type(value)
    with be.quiet():
        at_most = _owned(np.less_equal(x, x.dtype.type(th)))
        if v == 0 and not np.signbit(v):
            return _keep(x, np.logical_not(at_most, out=at_most))
        return _owned(be.where(at_most, v, x))


def threshold_grad(x: np.ndarray, g: np.ndarray, th: float, value: float) -> np.ndarray:
    """where(x <= th, 0.0, g)."""
    with be.quiet():
        at_most = _owned(np.less_equal(x, x.dtype.type(th)))
        return _keep(g, np.logical_not(at_most, out=at_most))


def hardtanh(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """clamp(x, lo, hi): elementwise.Clamp's CPU step (the backend's _clamp)."""
    t = x.dtype.type
    return _owned(be._clamp(x, t(lo), t(hi)))


def hardtanh_grad(x: np.ndarray, g: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """where((x <= lo) | (x >= hi), 0.0, g) (g at NaN)."""
    t = x.dtype.type
    with be.quiet():
        out = _owned(np.logical_or(np.less_equal(x, t(lo)), np.greater_equal(x, t(hi))))
        return _keep(g, np.logical_not(out, out=out))


def _middle(x: np.ndarray) -> np.ndarray:
    """(x > -3) & (x < 3)."""
    t = x.dtype.type
    m = _owned(np.greater(x, t(-3.0)))
    return np.logical_and(m, np.less(x, t(3.0)), out=m)


def _relu6_of_shift(x: np.ndarray) -> np.ndarray:
    """clamp(x + 3, 0, 6) (a fresh array)."""
    t = x.dtype.type
    return _owned(be._clamp(_owned(np.add(x, t(3.0))), t(0.0), t(6.0)))


def hardsigmoid(x: np.ndarray) -> np.ndarray:
    """clamp(x + 3, 0, 6) / 6."""
    with be.quiet():
        c = _relu6_of_shift(x)
        return _owned(np.true_divide(c, x.dtype.type(6.0), out=c))


def hardsigmoid_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """where((x > -3) & (x < 3), g / 6, 0.0)."""
    with be.quiet():
        return _keep(_owned(np.true_divide(g, g.dtype.type(6.0))), _middle(x))


def hardswish(x: np.ndarray) -> np.ndarray:
    """x * clamp(x + 3, 0, 6) / 6 (the product first, x its first operand)."""
    with be.quiet():
        c = _relu6_of_shift(x)
        np.multiply(x, c, out=c)
        return _owned(np.true_divide(c, x.dtype.type(6.0), out=c))


def hardswish_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """where(middle, g * (x / 3 + 0.5), where(x <= -3, 0.0, g))."""
    t = x.dtype.type
    with be.quiet():
        low = _owned(np.less_equal(x, t(-3.0)))
        outer = _keep(g, np.logical_not(low, out=low))
        a = _owned(np.true_divide(x, t(3.0)))
        np.add(a, t(0.5), out=a)
        if _in_place(x) and g.shape == x.shape and g.flags.c_contiguous:
            np.multiply(g, a, out=a)  # (a fresh, C-contiguous: the where in place)
            return be._where_bits_into(_middle(x), a, outer)
        inner = _owned(np.multiply(g, a))  # (g's shape, which a may broadcast to)
        return _owned(be.where(_middle(x), inner, outer))


# ---------------------------------------------------------------- losses of d = x - t
def _quadratic_linear(d: np.ndarray, bound: float, q_scale: float, lin_scale) -> np.ndarray:
    """where(|d| < bound, dq * dq * q_scale, (|d| - 0.5 bound) (* lin_scale when given)),
    dq = clamp(d, -bound, bound): smooth_l1's and huber's forward steps. The clamp is the
    identity where the quadratic branch is taken (|d| < bound), so d * d there has dq * dq's
    bits (+-0.0 squares to +0.0 either way); elsewhere it is not selected (an inf or NaN of
    d * d there only stays in the discarded branch): one pass less."""
    t = d.dtype.type
    b = t(bound)
    with be.quiet():
        ad = _owned(np.abs(d))
        q = _owned(np.multiply(d, d))
        np.multiply(q, t(q_scale), out=q)
        inside = _owned(np.less(ad, b))
        np.subtract(ad, t(0.5 * bound), out=ad)
        if lin_scale is not None:
            np.multiply(ad, t(lin_scale), out=ad)
        if _in_place(d):  # (q and ad: fresh, C-contiguous, d's shape)
            return be._where_bits_into(inside, q, ad)
        return _owned(be.where(inside, q, ad))


def smooth_l1(d: np.ndarray, beta: float) -> np.ndarray:
    """where(|d| < beta, dq * dq * (0.5 / beta), |d| - 0.5 beta), dq = clamp(d, -b, b)."""
    return _quadratic_linear(d, beta, 0.5 / beta, None)


def smooth_l1_grad(d: np.ndarray, beta: float) -> np.ndarray:
    """where(|d| < beta, d * (1 / beta), sign(d))."""
    t = d.dtype.type
    with be.quiet():
        inside = _owned(np.less(np.abs(d), t(beta)))
        lin = _owned(np.multiply(d, t(1.0 / beta)))
        if _in_place(d) and beta > 0:
            return be._where_bits_into(inside, lin, _sign_outside(d, t(1.0)))
        return _owned(be.where(inside, lin, be.unary("sign", d)))


def huber(d: np.ndarray, delta: float) -> np.ndarray:
    """where(|d| < delta, dq * dq * 0.5, (|d| - 0.5 delta) delta), dq = clamp(d, -dl, dl)."""
    return _quadratic_linear(d, delta, 0.5, delta)


def huber_grad(d: np.ndarray, delta: float) -> np.ndarray:
    """where(|d| < delta, d, sign(d) * delta)."""
    dl = d.dtype.type(delta)
    with be.quiet():
        inside = _owned(np.less(np.abs(d), dl))
        if _in_place(d) and delta > 0:  # where(not inside, sign(d) * delta, d)
            return be._where_bits_into(np.logical_not(inside, out=inside),
                                      _sign_outside(d, dl), d)
        s = be.unary("sign", d)
        s = _owned(np.multiply(s, dl, out=s) if type(s) is np.ndarray else np.multiply(s, dl))
        return _owned(be.where(inside, d, s))


# ---------------------------------------------------------------- smooth activations
def elu(x: np.ndarray, alpha: float, s: float, scale: float | None) -> np.ndarray:
    """_composite.Elu's forward: where(x <= 0, expm1(where(x <= 0, x, 0.0) * s) * alpha, x),
    times scale (selu). A product by 1 (s or alpha of 1) is skipped: z * 1 is z's bits (z
    is never NaN: x where x <= 0, else +0.0)."""
    t = x.dtype.type
    with be.quiet():
        neg = _owned(np.less_equal(x, t(0.0)))
        z = _keep(x, neg)
        if s != 1.0:
            np.multiply(z, t(s), out=z)
        np.expm1(z, out=z)
        if alpha != 1.0:
            np.multiply(z, t(alpha), out=z)
        y = _owned(be.where(neg, z, x))
        if scale is not None:  # (y is fresh: the where's result)
            np.multiply(y, t(scale), out=y)
        return y


def elu_grad(x: np.ndarray, g: np.ndarray, alpha: float, s: float,
             scale: float | None) -> np.ndarray:
    """_composite.Elu's backward: g <- g * scale (selu), then
    where(x <= 0, g * (exp(where(x < 0, x, 0.0) * s) * (alpha s)), g) (g the first operand
    of its product, as the composition: the NaN it keeps where both are NaN). Products by
    1 skipped as in ``elu`` (w is never NaN)."""
    t = x.dtype.type
    with be.quiet():
        if scale is not None:
            g = _owned(np.multiply(g, t(scale)))
        w = _keep(x, np.less(x, t(0.0)))
        if s != 1.0:
            np.multiply(w, t(s), out=w)
        np.exp(w, out=w)
        a = t(alpha * s)
        if a != 1.0:
            np.multiply(w, a, out=w)
        r = _owned(np.multiply(g, w))  # (g's shape, which w may broadcast to)
        return _owned(be.where(np.less_equal(x, t(0.0)), r, g))


def _halves(x: np.ndarray, d: int) -> tuple:
    """x.chunk(2, d): the two halves along dim d (views)."""
    return np.split(x, 2, axis=d)


def glu(x: np.ndarray, d: int, keep: bool = False):
    """_composite.Glu's forward: a * sigmoid(b), (a, b) the halves of x along d; with
    ``keep``, (that, s = sigmoid(b)) for glu_grad (the backward then needs no exp)."""
    a, b = _halves(x, d)
    with be.quiet():
        s = be.unary("sigmoid", b)  # (a fresh array of b's shape)
        if keep:
            return _owned(np.multiply(a, s)), s
        return _owned(np.multiply(a, s, out=s))


def glu_grad(x: np.ndarray, g: np.ndarray, d: int, s: np.ndarray | None = None) -> np.ndarray:
    """_composite.Glu's backward: cat(g s, (g s) a (1 - s)) along d, s = sigmoid(b) (the
    composition's products in its order, written into the two halves of one output); g has
    the halves' shape. ``s``: glu's kept sigmoid(b) (consumed: overwritten), else computed."""
    a, b = _halves(x, d)
    t = x.dtype.type
    with be.quiet():
        if s is None:
            s = be.unary("sigmoid", b)
        out = np.empty(x.shape, x.dtype)
        ga, gb = _halves(out, d)
        np.multiply(g, s, out=ga)
        np.multiply(ga, a, out=gb)
        np.subtract(t(1.0), s, out=s)
        np.multiply(gb, s, out=gb)
        return out



# ---------------------------------------------------------------- bit-level helpers
_SIGNED = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def _in_place(d: np.ndarray) -> bool:
    """Whether d is C-contiguous with dims: the temporaries of its shape (fresh,
    C-contiguous) then take a where in place (``be._where_bits_into``), the composition's
    layout."""
    return d.ndim > 0 and d.flags.c_contiguous


def _sign_outside(d: np.ndarray, mag) -> np.ndarray:
    """sign(d) * mag (mag > 0 of d's dtype, the product's operand order) where
    |d| >= some bound > 0 or d is NaN, i.e. d != 0: there sign(d) = +-1, so the product
    is mag with d's sign bit (exact), made as bits in two integer passes (np.sign alone
    costs ~5 passes); NaN elements (found by a max reduction, which propagates NaN) get
    np.sign(d) * mag itself (its NaN, not +-mag). Elements where d = 0 get +-mag, which the
    callers never select. A fresh array of d's shape."""
    it = _SIGNED[d.dtype]
    bits = _owned(np.bitwise_and(d.view(it), it(np.iinfo(it).min)))
    np.bitwise_or(bits, np.asarray(mag, d.dtype).view(it), out=bits)
    out = bits.view(d.dtype)
    if d.size and np.isnan(d.max()):
        nan = np.isnan(d)
        out[nan] = np.multiply(be.unary("sign", d[nan]), mag)
    return out


# ---------------------------------------------------------------- prelu


def _not_positive(x: np.ndarray) -> np.ndarray:
    """not (x > 0): x <= 0 or NaN (a fresh bool array)."""
    m = _owned(np.greater(x, x.dtype.type(0.0)))
    return _owned(np.logical_not(m, out=m))


def prelu(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """_activations.PreluKernel's forward: where(x > 0, x, w * x) (w first, as the
    composition; w of shape () or (C, 1, ..., 1), broadcasting over C-contiguous x)."""
    with be.quiet():
        wx = _owned(np.multiply(w, x))  # (x's shape)
        return be._where_bits_into(_not_positive(x), wx, x)


def prelu_grads(x: np.ndarray, w: np.ndarray, g: np.ndarray, need_x: bool,
                need_w: bool) -> tuple:
    """PreluKernel's backward, its two products: dx = where(x > 0, g, w * g) (w first) and
    g x where x <= 0 or NaN, else +0.0 (the where(pos, 0.0, g * x) that the caller sums to
    w's shape); None where not needed. g and x C-contiguous, of x's shape."""
    keep = _not_positive(x)
    gx = gxw = None
    with be.quiet():
        if need_x:
            gx = be._where_bits_into(keep, _owned(np.multiply(w, g)), g)
        if need_w:
            gxw = _owned(np.multiply(g, x))
            it = _SIGNED[gxw.dtype]
            np.multiply(gxw.view(it), keep, out=gxw.view(it))  # (bits * 0: +0.0)
    return gx, gxw
