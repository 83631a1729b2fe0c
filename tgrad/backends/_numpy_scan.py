"""CPU (NumPy) forms of the log2(n)-step Hillis-Steele scans of tgrad.ops.scan (cumprod's
backward) and tgrad.ops.logmath (logcumsumexp's forward and backward): the same steps, with
the same floating-point operations in the same order on each element, so the same bits as
the composites of tgrad ops (which stay the GPU's and the create_graph path's), without a
graph node, a narrow and a cat per step.

Layout: the operand, made C-contiguous, is read as a flat array of N = P n Q elements: P the
product of the dims before the scan dim (size n), Q of those after, so row r of the (P, n Q)
view is one block of P, and the element k along the scan dim sits at column k Q of its row.
A step that pairs element j with j + s along the dim is then one NumPy call on two flat
slices shifted by s Q (contiguous: NumPy's fastest loops; the slices of the (P, n Q) view
that stop at each row's end run at about half the speed). The positions where the shifted
slice crosses into the next row compute garbage, which the step then overwrites with what
it keeps there (the few columns at a row's start or end, a strided copy).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

__all__ = ["cum_extreme_values", "cumprod_backward", "infinite_ties", "logcumsumexp",
           "logcumsumexp_backward"]


def _flat(x: np.ndarray, axis: int) -> tuple:
    """(x as a C-contiguous flat array, P, n, Q) for the scan along ``axis``."""
    shape = x.shape
    p, q = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    return np.ascontiguousarray(x).reshape(-1), p, shape[axis], q


class _Rows:
    """The (P, n Q) rows of the flat arrays, and one reused buffer for the columns a step
    keeps at the rows' ends (the span columns that a shifted flat call fills with garbage)."""

    def __init__(self, p: int, n: int, q: int, dt: np.dtype):
        self.p, self.nq = p, n * q
        widest = (1 << (max(n - 1, 1).bit_length() - 1)) * q  # the largest span's columns
        self.buf = np.empty((p - 1) * widest, dt) if p > 1 else None

    def of(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(self.p, self.nq)

    def copy_head(self, src: np.ndarray, dst: np.ndarray, cols: int) -> None:
        """dst's first ``cols`` columns of each row = src's."""
        np.copyto(self.of(dst)[:, :cols], self.of(src)[:, :cols])

    def copy_tail(self, src: np.ndarray, dst: np.ndarray, cols: int) -> None:
        """dst's last ``cols`` columns of each row = src's."""
        np.copyto(self.of(dst)[:, self.nq - cols:], self.of(src)[:, self.nq - cols:])

    @contextlib.contextmanager
    def keeping_tail(self, flat: np.ndarray, cols: int):
        """The last ``cols`` columns of each row as they were before the block (the flat
        call of the block stops before the last row's)."""
        if self.buf is None:  # one row (or none): no garbage
            yield
            return
        rows = self.of(flat)[:-1, self.nq - cols:]
        saved = self.buf[:rows.size].reshape(rows.shape)
        np.copyto(saved, rows)
        yield
        np.copyto(rows, saved)


def cumprod_backward(x: np.ndarray, y: np.ndarray, g: np.ndarray, axis: int) -> np.ndarray:
    """dx for y = cumprod(x) along ``axis`` (n >= 2) and the gradient g of y, PyTorch's rule
    without create_graph (a term with a zero factor x_i left out), in x's dtype (the caller
    widens float32 / complex64); x, y, g of one shape.

    dx_j = conj(y_{j-1}) s_j (y_{-1} = 1; 0 where some x_i == 0, i < j), with
    s_j = sum_{k >= j} g_k conj(prod_{j < i <= k} x_i) by the Hillis-Steele recurrence of
    tgrad.ops.scan.Cumprod: a_j = conj(x_{j+1}) (a_{n-1} = 1); for span h = 1, 2, 4, ...:
    s_j += a_j s_{j+h} (j < n - h; the term dropped where z_j: a zero among a_j's factors),
    then a_j = a_j a_{j+h}, z_j |= z_{j+h} (j < n - h)."""
    xf, p, n, q = _flat(x, axis)
    size, dt = xf.size, x.dtype
    rows = _Rows(p, n, q, dt)
    with np.errstate(all="ignore"):  # inf * 0 and the garbage at the rows' ends
        iszero = xf == 0
        zeros = bool(iszero.any())
        # three large buffers (each fresh one costs page faults): s, and a ping-ponging
        # with b, which also holds each step's terms before the update of a
        s = np.empty(size, dt)
        np.copyto(s.reshape(x.shape), g)
        a, b = np.empty(size, dt), np.empty(size, dt)
        np.conjugate(xf[q:], out=a[:size - q])
        rows.of(a)[:, rows.nq - q:] = 1
        if zeros:  # z_j: a zero among the factors of a_j
            z, z_next = np.empty(size, np.bool_), np.empty(size, np.bool_)
            z[:size - q] = iszero[q:]
            rows.of(z)[:, rows.nq - q:] = False
        span = 1
        while span < n:
            sh, m = span * q, size - span * q
            t = np.multiply(a[:m], s[sh:], out=b[:m])
            if zeros:
                np.copyto(t, 0, where=z[:m])
            with rows.keeping_tail(s, sh):  # the last span elements of each row
                np.add(s[:m], t, out=s[:m])
            if 2 * span < n:  # (out of place: in place, NumPy copies the overlapping input)
                np.multiply(a[:m], a[sh:], out=b[:m])
                rows.copy_tail(a, b, sh)
                a, b = b, a
                if zeros:
                    np.logical_or(z[:m], z[sh:], out=z_next[:m])
                    rows.copy_tail(z, z_next, sh)
                    z, z_next = z_next, z
            span *= 2
        # dx_j = before_j s_j, before = [1, conj(y_0), ..., conj(y_{n-2})]: the product taken
        # with an explicit 1 (a complex 1 * s is not s where s has an infinite part)
        yf = np.ascontiguousarray(y).reshape(-1)
        if dt.kind == "c":
            yf = np.conjugate(yf[:size - q], out=a[:size - q])
        gx = b
        np.multiply(yf[:size - q], s[q:], out=gx[q:])
        np.multiply(np.ones((p, q), dt), rows.of(s)[:, :q], out=rows.of(gx)[:, :q])
        if zeros:  # a zero among x_i, i < j: dx_j = 0
            before = np.zeros((p, n, q), np.bool_)
            before[:, 1:] = iszero.reshape(p, n, q)[:, :n - 1]
            np.logical_or.accumulate(before, axis=1, out=before)
            np.copyto(gx, 0, where=before.reshape(-1))
    return gx.reshape(x.shape)


def infinite_ties(x: np.ndarray, axis: int) -> np.ndarray:
    """Bool, x's shape: where logcumsumexp's dx_j = sum_{k >= j} g_k e^(x_j - out_k) has an
    e^(inf - inf) term, NaN whatever g (PyTorch's): x_j = +inf, or x_j = -inf with x_i = -inf
    for all i <= j; NaN x_j too (tgrad.ops.logmath._infinite_ties in NumPy)."""
    with np.errstate(invalid="ignore"):
        all_neg_inf = ~np.logical_or.accumulate(x != -np.inf, axis=axis)
        return (x == np.inf) | np.isnan(x) | all_neg_inf


def logcumsumexp(x: np.ndarray, axis: int, keep: bool) -> tuple:
    """(out, steps, ties): out_k = log sum_{j <= k} exp(x_j) along ``axis`` (n >= 2; float32 or
    float64, computed in x's dtype), by tgrad.ops.logmath's scan: for span h = 1, 2, 4, ...
    y_j = logaddexp(y_j, y_{j-h}) (j >= h), with logaddexp(a, b) = max(a, b) + log1p(e),
    e = exp(-|a - b|), a - b read as 0 where a == b (equal infinities; only an infinite x
    can make them: the scan of finite values stays finite, max + log1p(e) <= max + ln 2).
    ``steps`` (when ``keep``): per step (span, e, a >= b) for logcumsumexp_backward, flat
    arrays of N - h Q elements aligned with the later operand a (flat positions h Q on).
    ``ties`` (when ``keep`` and x holds an infinity, else None): ``infinite_ties(x, axis)``,
    where logcumsumexp_backward's caller sets dx to NaN (the scan shares a tie's gradient)."""
    xf, p, n, q = _flat(x, axis)
    size, dt = xf.size, x.dtype
    rows = _Rows(p, n, q, dt)
    nsteps = max(n - 1, 1).bit_length()
    # y ping-pongs between two buffers; e and a >= b of all steps in one block each (a
    # few large arrays, not a few per step: each fresh one costs page faults)
    bufs = (np.empty(size, dt), np.empty(size, dt))
    t = np.empty(size, dt)
    es = np.empty((nsteps, size) if keep else (1, size), dt)
    poss = np.empty((nsteps, size), np.bool_) if keep else None
    steps, yf = [], xf
    with np.errstate(all="ignore"):  # inf - inf, NaN, and the garbage at the rows' starts
        ties = bool(np.isinf(xf).any())
        span, i = 1, 0
        while span < n:
            sh, m = span * q, size - span * q
            a, b = yf[sh:], yf[:m]  # later, earlier
            d = np.subtract(a, b, out=t[:m])
            if ties:
                np.copyto(d, 0.0, where=np.equal(a, b))
            np.abs(d, out=d)
            np.negative(d, out=d)
            e = np.exp(d, out=es[i if keep else 0, :m])
            out = bufs[i % 2]
            tail = np.log1p(e, out=out[sh:])
            mx = np.maximum(a, b, out=t[:m])
            np.add(mx, tail, out=tail)  # max + log1p(e), in that order
            rows.copy_head(yf, out, sh)  # the first span elements of each row: kept
            if keep:
                steps.append((span, e, np.greater_equal(a, b, out=poss[i, :m])))
            yf = out
            span, i = span * 2, i + 1
    return yf.reshape(x.shape), steps, (infinite_ties(x, axis) if keep and ties else None)


def logcumsumexp_backward(g: np.ndarray, steps: list, axis: int) -> np.ndarray:
    """dx of logcumsumexp (``steps`` from its forward) for the gradient g of out: the steps'
    chain rule in reverse, in the composite's operations. A step's output
    y'_j = logaddexp(a, b) (a = y_j, b = y_{j-h}, j >= h; y'_j = y_j for j < h) sends
    G'_j sa to y_j and G'_j sb to y_{j-h}, where (sa, sb) = (sigmoid(a - b), sigmoid(b - a))
    = (p, q) if a >= b else (q, p), p = 1 / (1 + e), q = e p (tgrad.ops.logmath's
    _SigmoidPair); G_j = the sum of what reaches y_j. The composite's gradient adds the zero
    padding of each narrow's backward too (x + 0: -0.0 becomes +0.0, nothing else changes),
    done once at the end (a zero's sign is all it changes, and a later step cannot turn
    that into more)."""
    gf, p, n, q = _flat(g, axis)
    size, dt = gf.size, g.dtype
    rows = _Rows(p, n, q, dt)
    bits = np.dtype(f"i{dt.itemsize}")  # (p, q) chosen by their bits: NumPy's where
    # branches per element, 5x slower than these integer passes on a random a >= b
    bufs = (np.empty(size, dt), np.empty(size, dt))
    pp, qq, w = (np.empty(size, dt) for _ in range(3))
    with np.errstate(all="ignore"):
        for i, (span, e, pos) in enumerate(reversed(steps)):
            sh, m = span * q, size - span * q
            gt = gf[sh:]  # the gradient of the step's outputs (garbage at the rows' starts)
            p_ = np.add(e, 1.0, out=pp[:m])
            np.divide(1.0, p_, out=p_)
            q_ = np.multiply(e, p_, out=qq[:m])
            # w = (p ^ q) pos; where(pos, p, q) = q ^ w, where(pos, q, p) = p ^ w
            pv, qv, wv = p_.view(bits), q_.view(bits), w[:m].view(bits)
            np.bitwise_xor(pv, qv, out=wv)
            np.multiply(wv, pos.view(np.uint8), out=wv, dtype=bits)
            sa = np.bitwise_xor(wv, qv, out=qv).view(dt)
            sb = np.bitwise_xor(wv, pv, out=pv).view(dt)
            new = bufs[i % 2]
            np.multiply(gt, sa, out=new[sh:])  # to a = y_j
            rows.copy_head(gf, new, sh)  # y_j = y'_j for j < span
            with rows.keeping_tail(new, sh):  # no b = y_j there
                np.add(new[:m], np.multiply(gt, sb, out=sb), out=new[:m])  # to b = y_{j-h}
            gf = new
        np.add(gf, 0.0, out=gf)
    return gf.reshape(g.shape)


def cum_extreme_values(a: np.ndarray, m: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """cummax / cummin's values a[.., idx, ..] along ``axis`` (a's shape, C-contiguous) from
    the running extreme m (np.maximum / np.minimum scanned, a's dtype) without a gather:
    m equals a at idx as a number, so m's bits are the values' except where m is 0 (the
    zero's sign is the taken element's, which m need not carry) or NaN (the payload of the
    latest NaN, idx's, where m may keep another): only those positions q (flat, C order)
    are read from a, at q + (idx[q] - k) Q (k = q's position along the axis, Q the size of
    the dims after it)."""
    af, _, n, q = _flat(a, axis)
    out = np.array(m, order="C", copy=True)
    if a.dtype.kind != "f":
        return out
    of = out.reshape(-1)
    fix = np.flatnonzero((of == 0) | np.isnan(of))
    if fix.size:
        k = (fix // q) % n
        of[fix] = af[fix + (np.ascontiguousarray(idx).reshape(-1)[fix] - k) * q]
    return out
