"""CPU primitives of grid_sample (re-exported by tgrad/backends/_numpy_nn.py): the forward
``grid_sample_fwd`` and its paired backward ``grid_sample_bwd``, vectorised over every
output point (Python loops only over the <= 16 taps and, in d x, the channels). The maths
is tgrad/nn/_grid_sample.py's (see its docstring); the GPU kernels
(tgrad/kernels/grid_sample.py) compute the same taps.

Shapes: x (N, C, *sp) with k = len(sp) in (2, 3), grid (N, *osp, k) (its last axis lists x,
y[, z] = dims W, H[, D]), out and g (N, C, *osp). Every output point p has T taps
(nearest 1, bilinear 2^k, bicubic 16), each an integer pixel ``idx_d`` per dim, a weight
w = prod_d w_d and, per dim, d w / d c_d = w_d' prod_{e != d} w_e (c_d the unnormalized,
for bilinear/nearest padded, coordinate of dim d):
    out[n, :, p] = sum_t where(inside_t, x[n, :, idx_t], 0) * w_t   (nearest: no * w)
    d x[n, :, s] += g[n, :, p] w_t   for each inside tap at s (a scatter-add; np.add.at)
    d grid[n, p, k - 1 - d] = chain_d * sum_t (d w_t / d c_d) sum_c g[n, c, p] x_t[c]
with chain_d = d c_d / d grid = the unnormalize scale times the padding's derivative (0
where a clip is active, -1 where a reflection flips). float16/bfloat16 compute in float32.

Layout (_Taps): the per-dim tap indices, weights and derivatives are kept as (N, P) arrays
and combined one tap at a time; a tap's values are one row gather of a channels-last copy
of x with a zero dummy row for the outside taps (the forward accumulates channels last,
(N, P, C), and transposes once). The sums run in a fixed order: out and
d c_d over the taps in order, sum_c over the channels in order, d x per (channel, pixel) in
(n, p, t) order (one 1-D np.add.at per channel).
"""

from __future__ import annotations

import numpy as np

__all__ = ["grid_sample_fwd", "grid_sample_bwd"]

_A = -0.75  # Keys' cubic convolution coefficient (PyTorch's)


def _unnormalize(v: np.ndarray, size: int, align: bool) -> tuple:
    """(pixel coordinate, its derivative by v)."""
    if align:
        return (v + 1) * ((size - 1) / 2), (size - 1) / 2
    return ((v + 1) * size - 1) / 2, size / 2


def _reflect(c: np.ndarray, twice_low: int, twice_high: int) -> tuple:
    """PyTorch's reflect_coordinates and its derivative (+-1: the sign of c - low, flipped
    on odd reflections)."""
    if twice_low == twice_high:
        return c * 0.0, np.zeros_like(c)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    rel = c - low
    d = np.abs(rel)
    extra = np.fmod(d, span)
    even = np.fmod(np.floor(d / span), 2) == 0
    return (np.where(even, extra + low, span - extra + low),
            np.where(even, np.sign(rel), -np.sign(rel)))


def _clip(c: np.ndarray, size: int) -> tuple:
    """clamp(c, 0, size - 1) (NaN: 0, PyTorch's clip_coordinates: a NaN or infinite
    coordinate of border / reflection padding samples column 0) and its derivative: 1
    strictly inside, else 0 (NaN: 0)."""
    return (np.fmin(np.fmax(c, 0), size - 1),
            ((c > 0) & (c < size - 1)).astype(c.dtype))


def _pad(c: np.ndarray, size: int, padding: str, align: bool) -> tuple:
    """PyTorch's compute_coordinates and its derivative."""
    if padding == "zeros":
        return c, np.ones_like(c)
    der = 1.0
    if padding == "reflection":
        c, der = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
    c, clip = _clip(c, size)
    return c, der * clip


def _cubic(t: np.ndarray) -> tuple:
    """Keys' weights of the taps floor - 1 .. floor + 2 at fraction t, and d / dt."""
    a = _A

    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def d1(x):
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def d2(x):
        return (3 * a * x - 10 * a) * x + 8 * a

    return ([c2(t + 1), c1(t), c1(1 - t), c2(2 - t)],
            [d2(t + 1), d1(t), -d1(1 - t), -d2(2 - t)])


def _dim_taps(c: np.ndarray, size: int, mode: str, padding: str, align: bool) -> tuple:
    """One dim's J taps (nearest 1, bilinear 2, bicubic 4) of c (N, P): (idx [(N, P)] * J,
    w [(N, P)] * J or None for nearest, d w / d c [(N, P) or +-1.0] * J or None, chain =
    d c / d unnormalized coordinate)."""
    if mode == "bicubic":  # padding per integer tap, the weights of the unpadded fraction
        fl = np.floor(c)
        ws, dws = _cubic(c - fl)
        return [_pad(fl + (j - 1), size, padding, align)[0] for j in range(4)], ws, dws, 1.0
    c, chain = _pad(c, size, padding, align)
    if mode == "nearest":
        return [np.rint(c)], None, None, chain
    fl = np.floor(c)
    fr = c - fl
    return [fl, fl + 1], [1 - fr, fr], [-1.0, 1.0], chain  # (-1.0 w: exactly -w)


class _Taps:
    """The T taps of every output point, factored by dim and combined one tap at a time
    into (N, P) arrays (the forward and d grid build no (N, T, P) temporaries, whose fresh
    pages cost more than their arithmetic on this box). Taps are in np.ndindex order over
    the dims' taps (the last dim fastest); tap t = (j_0, .., j_{k-1}) has
        target  n S + the pixel's row-major offset in its image if inside, else N S (a
                dummy row): min(sum_d off_d[j_d], N S), off_0 holding n S, and each off_d
                N S where dim d's index is outside [0, size_d - 1] (inside offsets sum to
                at most N S - 1);
        weight  ((w_0 w_1) w_2) (None for nearest);
        d weight / d c_d = (w_d' w_e) w_f, the others (e < f) in dim order;
    and chains[d] (N, P) = d c_d / d grid (the unnormalize scale times the padding's
    derivative, 1 for bicubic)."""

    def __init__(self, x_shape: tuple, grid: np.ndarray, mode: str, padding: str,
                 align: bool) -> None:
        n, _, *sp = x_shape
        k = len(sp)
        s = int(np.prod(sp))
        self.n, self.p = n, int(np.prod(grid.shape[1:-1]))
        self.dummy = n * s
        g2 = grid.reshape(n, self.p, k)
        self.offs, self.ws, self.dws, self.chains = [], [], [], []
        for d in range(k):
            c, scale = _unnormalize(g2[..., k - 1 - d], sp[d], align)
            idx, w, dw, chain = _dim_taps(c, sp[d], mode, padding, align)
            stride = int(np.prod(sp[d + 1:]))
            base = (np.arange(n, dtype=np.int64) * s)[:, None] if d == 0 else 0
            self.offs.append([_offset(i, sp[d], stride, base, self.dummy) for i in idx])
            self.ws.append(w)
            self.dws.append(dw)
            self.chains.append(np.broadcast_to(chain * scale, c.shape))
        self.combos = list(np.ndindex(*(len(o) for o in self.offs)))
        self.nearest = self.ws[0] is None

    def target(self, combo: tuple, out: np.ndarray | None = None) -> np.ndarray:
        """(N, P) int64 row of tap combo in the (N S + 1)-row images."""
        t = np.add(self.offs[0][combo[0]], self.offs[1][combo[1]], out=out)
        for d in range(2, len(combo)):
            t += self.offs[d][combo[d]]
        return np.minimum(t, self.dummy, out=t)

    def weight(self, combo: tuple) -> np.ndarray:
        return _product([self.ws[d][j] for d, j in enumerate(combo)])

    def weight_grad(self, combo: tuple, d: int) -> np.ndarray:
        return _product([self.dws[d][combo[d]]]
                        + [self.ws[e][j] for e, j in enumerate(combo) if e != d])


def _offset(idx: np.ndarray, size: int, stride: int, base, dummy: int) -> np.ndarray:
    """idx stride + base where idx lies in [0, size - 1], else dummy: (N, P) int64."""
    ok = (idx >= 0) & (idx <= size - 1)
    off = np.where(ok, idx, 0).astype(np.int64)
    off *= stride
    off += base
    off[~ok] = dummy
    return off


def _product(fs: list) -> np.ndarray:
    """((f_0 f_1) f_2), left to right."""
    out = fs[0] * fs[1]
    for f in fs[2:]:
        out = out * f
    return out


def _compute(a: np.ndarray) -> np.ndarray:
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float32)


def _rows(x: np.ndarray) -> np.ndarray:
    """x (N, C, *sp) channels last, (N S + 1, C): row n S + pixel holds x[n, :, pixel], the
    last row zeros (the outside taps' dummy target)."""
    n, c = x.shape[:2]
    s = int(np.prod(x.shape[2:]))
    rows = np.zeros((n * s + 1, c), x.dtype)
    rows[:-1] = x.reshape(n, c, s).transpose(0, 2, 1).reshape(n * s, c)
    return rows


def _tap_values(rows: np.ndarray, target: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """where(inside, x[n, :, pixel], 0) of one tap, (N, C, P) (a transposed view of buf
    (N, P, C)): one row gather of _rows(x) by the tap's target (N, P)."""
    return np.take(rows, target, axis=0, out=buf).transpose(0, 2, 1)


def grid_sample_fwd(x: np.ndarray, grid: np.ndarray, mode: str, padding: str,
                    align: bool) -> np.ndarray:
    """out (N, C, *osp) of x (N, C, *sp) sampled at grid (N, *osp, k):
    out = ((v_0 w_0 + v_1 w_1) + ...) + v_{T-1} w_{T-1}, summed in tap order."""
    dt = x.dtype
    x, grid = _compute(x), _compute(grid)
    n, c = x.shape[:2]
    osp = grid.shape[1:-1]
    p = int(np.prod(osp))
    with np.errstate(all="ignore"):
        taps = _Taps(x.shape, grid, mode, padding, align)
        if taps.nearest:  # the one tap: one row gather of the channels-last copy (a
            # take_along_axis of x (N, C, S) by (N, 1, P) costs ~7x as much: fancy indexing)
            out = np.take(_rows(x), taps.target(taps.combos[0]), axis=0).transpose(0, 2, 1)
        else:
            # channels last throughout (contiguous products), transposed once at the end
            rows = _rows(x)
            buf = np.empty((n, p, c), x.dtype)
            acc = np.empty((n, p, c), x.dtype)
            for t, combo in enumerate(taps.combos):
                v = np.take(rows, taps.target(combo), axis=0, out=buf)
                w = taps.weight(combo)[:, :, None]
                if t == 0:
                    np.multiply(v, w, out=acc)
                else:
                    acc += np.multiply(v, w, out=v)  # (v * w into buf, in place)
            out = acc.transpose(0, 2, 1)
    return np.ascontiguousarray(out.reshape((n, c) + osp), dtype=dt)


def _scatter_input_grad(gf: np.ndarray, taps: _Taps, x_shape: tuple) -> tuple:
    """(d x (N, C, *sp), the targets (N, P, T)): d x is the scatter-add of g w_t to each
    inside tap's pixel, gf (N, C, P). One 1-D np.add.at per channel into (N S + 1) (the
    last entry the outside taps' dummy), adding in (n, p, t) order: deterministic."""
    n, c, *sp = x_shape
    s = int(np.prod(sp))
    shape = (n, taps.p, len(taps.combos))
    tgt = np.empty(shape, np.int64)
    w = None if taps.nearest else np.empty(shape, gf.dtype)
    for t, combo in enumerate(taps.combos):
        taps.target(combo, out=tgt[:, :, t])
        if w is not None:
            w[:, :, t] = taps.weight(combo)
    flat = tgt.reshape(-1)
    dx = np.zeros((c, n * s + 1), gf.dtype)
    vals = np.empty(shape, gf.dtype)  # vals[n, p, t] = g[n, ch, p] w[n, p, t]
    for ch in range(c):
        if w is None:
            vals[...] = gf[:, ch, :, None]
        else:
            np.multiply(gf[:, ch, :, None], w, out=vals)
        np.add.at(dx[ch], flat, vals.reshape(-1))
    return dx[:, :n * s].reshape(c, n, s).transpose(1, 0, 2).reshape(x_shape), tgt


def grid_sample_bwd(g: np.ndarray, x: np.ndarray, grid: np.ndarray, mode: str, padding: str,
                    align: bool) -> tuple:
    """(d x, d grid) of out = grid_sample_fwd(x, grid) for d out = g; d x deterministic
    (_scatter_input_grad); d c_d sums the taps in order, sum_c g x_t the channels in order."""
    dt = x.dtype
    g, x, grid = _compute(g), _compute(x), _compute(grid)
    n, c, *sp = x.shape
    k = len(sp)
    p = int(np.prod(grid.shape[1:-1]))
    if n * p * c == 0:  # nothing sampled: zero gradients
        return np.zeros(x.shape, dt), np.zeros(grid.shape, dt)
    gf = g.reshape(n, c, p)
    with np.errstate(all="ignore"):
        taps = _Taps(x.shape, grid, mode, padding, align)
        dx, tgt = _scatter_input_grad(gf, taps, x.shape)
        dx = dx.astype(dt, copy=False)
        if taps.nearest:  # rounding has no gradient
            return dx, np.zeros(grid.shape, dt)
        rows = _rows(x)
        dc = [np.zeros((n, p), x.dtype) for _ in range(k)]
        buf = np.empty((n, p, c), x.dtype)
        prod = np.empty((n, c, p), x.dtype)
        for t, combo in enumerate(taps.combos):
            np.multiply(gf, _tap_values(rows, tgt[:, :, t], buf), out=prod)
            gx = prod.sum(1)  # sum_c g x_t: (N, P)
            for d in range(k):
                dc[d] += gx * taps.weight_grad(combo, d)
        # a chain of 0 (a clip) selects 0, as the composition's clamp backward does
        chains = taps.chains
        dgrid = np.stack([np.where(chains[d] == 0, 0, dc[d] * chains[d])
                          for d in range(k - 1, -1, -1)], -1)
    return dx, dgrid.reshape(grid.shape).astype(dt, copy=False)
