"""CPU paths of three binary ops of tgrad/ops (hypot, copysign: tgrad/ops/logmath.py; lerp
with a tensor weight: tgrad/ops/composite.py): the compositions' NumPy steps run on the
arrays at once, without one tgrad op (Python, a Function, a wrapped tensor) per step. Not
a backend primitive: the cuda device keeps the compositions; the callers take these for
CPU float32/float64 arrays only (``fast_dtype``).

Bit-identity with the compositions: every arithmetic step is the composition's own NumPy
ufunc on the same operands in the same order (a Python number cast to the array's dtype
first, as tgrad's ops cast a number operand); a ``where`` only selects, so any exact
selection gives its bits (the backend's ``where``, a masked ``copyto``, or the sign bit
moved with integer operations: negation and abs only flip or clear that bit).

Every function takes C-contiguous arrays (``c_order``) of one float32/float64 dtype (any
shapes that broadcast) and returns a fresh C-contiguous array of the broadcast shape, never
a view of its inputs.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends import numpy as be
from tgrad.backends._numpy_dtypes import fast_dtype  # noqa: F401 - the callers' dtype test

# float dtype -> (its same-width signed integer, the sign bit as that integer)
_SIGN = {np.dtype(np.float32): (np.int32, np.int32(-(1 << 31))),
         np.dtype(np.float64): (np.int64, np.int64(-(1 << 63)))}


def c_order(*arrays: np.ndarray) -> bool:
    """Whether all ``arrays`` are C-contiguous: the functions here, which reuse their
    temporaries in place, then give the compositions' layouts too (C-contiguous), so
    later reductions of the results add in the same order."""
    return all(a.flags.c_contiguous for a in arrays)


def _owned(y) -> np.ndarray:
    """A ufunc's result as an array (0-d inputs give a NumPy scalar)."""
    return y if type(y) is np.ndarray else np.asarray(y)


# ------------------------------------------------------------------------------ hypot
def hypot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """logmath._hypot_value: m sqrt((n / m')^2 + 1), m = max(x, y), n = min(x, y), m' = m
    with 0 -> 1, x = |a|, y = |b| (0 where either is infinite: abs(where(inf, 0, a)) has
    the bits of where(inf, 0, abs(a))); inf where a or b is infinite. The masks are made
    only when a reduction of m finds them needed (max: inf or a NaN, which may hide an inf
    of the other operand; min: 0)."""
    t = a.dtype.type
    with be.quiet():
        x, y = _owned(np.abs(a)), _owned(np.abs(b))
        m = _owned(np.maximum(x, y))
        inf = None
        if m.size and not m.max() < t(np.inf):  # (rare: the stand-ins of the branch not taken)
            inf = _owned(np.logical_or(np.equal(x, t(np.inf)), np.equal(y, t(np.inf))))
            x, y = be.where(inf, t(0.0), x), be.where(inf, t(0.0), y)
            m = _owned(np.maximum(x, y))
        n = _owned(np.minimum(x, y))
        if m.size and not m.min() > t(0.0):  # (0 / 0 avoided: m' = 1 there; NaN: checked)
            m_den = be.where(np.equal(m, t(0.0)), t(1.0), m)
            r = _owned(np.true_divide(n, m_den, out=n))
        else:
            r = _owned(np.true_divide(n, m, out=n))
        np.multiply(r, r, out=r)
        np.add(r, t(1.0), out=r)
        np.sqrt(r, out=r)
        out = _owned(np.multiply(m, r, out=r))
        if inf is not None:
            np.copyto(out, t(np.inf), where=inf)
    return out


def hypot_grad(g: np.ndarray, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """logmath._Hypot's backward for a: g where(off, 0, a) / where(off, 1, y), off where y
    is 0 or infinite (y = hypot(a, b), of the broadcast shape; g of y's shape)."""
    t = y.dtype.type
    with be.quiet():
        if y.size and not (y.min() > t(0.0) and y.max() < t(np.inf)):  # (rare; y >= 0
            off = _owned(np.equal(y, t(0.0)))  # or NaN: a NaN min / max checks the masks)
            np.logical_or(off, np.equal(y, t(np.inf)), out=off)
            a, y = be.where(off, t(0.0), a), be.where(off, t(1.0), y)
        out = _owned(np.multiply(g, a))  # (y's shape: g has it)
        return _owned(np.true_divide(out, y, out=out))


# ---------------------------------------------------------------------------- copysign
def copysign(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """logmath.copysign: where(signbit(b), -|a|, |a|) = a's bits with the sign bit
    replaced by b's (abs clears the bit, negation flips it; NaN payloads kept)."""
    it, sign = _SIGN[a.dtype]
    mag = _owned(np.bitwise_and(a.view(it), ~sign))
    out = np.bitwise_or(mag, np.bitwise_and(b.view(it), sign), out=mag if mag.shape ==
                        np.broadcast_shapes(a.shape, b.shape) else None)
    return _owned(out).view(a.dtype)


def sign_bits(b: np.ndarray) -> np.ndarray:
    """b's sign bits as its same-width signed integers (the sign bit alone: negative
    exactly where b's sign bit is set; a fresh array of b's shape)."""
    it, sign = _SIGN[b.dtype]
    return _owned(np.bitwise_and(b.view(it), sign))


def flip_signs(g: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """where(signbit(b), -g, g): g's bits, its sign bit flipped by b's (``bits`` =
    sign_bits(b); the broadcast shape)."""
    it, _ = _SIGN[g.dtype]
    return _owned(np.bitwise_xor(g.view(it), bits)).view(g.dtype)


def times_sign(g: np.ndarray, a: np.ndarray) -> np.ndarray:
    """abs's backward g sign(a) (g first), into a fresh array."""
    with be.quiet():
        s = _owned(np.sign(a))
        return _owned(np.multiply(g, s, out=s if s.shape == np.broadcast_shapes(
            g.shape, s.shape) and s.ndim else None))


# --------------------------------------------------------------------------------- lerp
def lerp(x: np.ndarray, e: np.ndarray, w: np.ndarray) -> np.ndarray:
    """composite._lerp_value for a tensor weight: where(|w| < 0.5, x + w d,
    e - d (1 - w)), d = e - x (the temporaries of the result's shape reused in place)."""
    t = x.dtype.type
    with be.quiet():
        d = _owned(np.subtract(e, x))
        lo = _owned(np.multiply(w, d))  # (the result's shape)
        np.add(x, lo, out=lo)
        hi = _owned(np.subtract(t(1.0), w))
        hi = _owned(np.multiply(d, hi, out=hi if hi.shape == lo.shape else None))
        np.subtract(e, hi, out=hi)
        low = _owned(np.less(np.abs(w), t(0.5)))
        if lo.ndim and lo.flags.c_contiguous and hi.flags.c_contiguous:
            return be._where_bits_into(low, lo, hi)
        return _owned(be.where(low, lo, hi))


def lerp_grads(g: np.ndarray, x: np.ndarray | None, e: np.ndarray | None,
               w: np.ndarray | None) -> tuple:
    """composite.LerpTensor's backward (real dtypes: conj is the identity): g (1 - w), g w,
    g (e - x), each None where its operand is (the gradients not wanted); of g's shape
    or the broadcast one (the engine sums them to the inputs' shapes)."""
    t = g.dtype.type
    with be.quiet():
        gi = ge = gw = None
        if w is not None:
            gi = _times(g, _owned(np.subtract(t(1.0), w)))
            ge = _owned(np.multiply(g, w))
        if x is not None:
            gw = _times(g, _owned(np.subtract(e, x)))
    return gi, ge, gw


def _times(g: np.ndarray, f: np.ndarray) -> np.ndarray:
    """g * f (g first), into f (a fresh array) when it has the product's shape."""
    return _owned(np.multiply(g, f, out=f if f.shape == g.shape and f.ndim else None))
