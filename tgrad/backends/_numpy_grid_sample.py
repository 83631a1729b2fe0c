"""CPU primitives of grid_sample (re-exported by tgrad/backends/_numpy_nn.py): the forward
``grid_sample_fwd`` and its paired backward ``grid_sample_bwd``, vectorised over every
output point (Python loops only over the <= 16 taps). The maths is tgrad/nn/_grid_sample.py's
(see its docstring); the GPU kernels (tgrad/kernels/grid_sample.py) compute the same taps.

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
    """One dim's taps: ([(idx, w, dw)] with w / dw None for nearest, chain = d c / d
    unnormalized coordinate)."""
    if mode == "bicubic":  # padding per integer tap, the weights of the unpadded fraction
        fl = np.floor(c)
        ws, dws = _cubic(c - fl)
        taps = [(_pad(fl + (j - 1), size, padding, align)[0], ws[j], dws[j])
                for j in range(4)]
        return taps, 1.0
    c, chain = _pad(c, size, padding, align)
    if mode == "nearest":
        return [(np.rint(c), None, None)], chain
    fl = np.floor(c)
    fr = c - fl
    return [(fl, 1 - fr, -np.ones_like(fr)), (fl + 1, fr, np.ones_like(fr))], chain


def _taps(x_shape: tuple, grid: np.ndarray, mode: str, padding: str, align: bool):
    """The taps of every output point, flattened to (N, P): a list of (flat, inside, w,
    [d w / d c_d]) (flat: the pixel's row-major offset in its image, 0 outside), and the
    per-dim chains (N, P)."""
    n, _, *sp = x_shape
    k = len(sp)
    g2 = grid.reshape(n, int(np.prod(grid.shape[1:-1])), k)
    strides = [int(np.prod(sp[d + 1:])) for d in range(k)]
    per_dim, chains = [], []
    for d in range(k):
        c, scale = _unnormalize(g2[..., k - 1 - d], sp[d], align)
        taps, chain = _dim_taps(c, sp[d], mode, padding, align)
        per_dim.append(taps)
        chains.append(np.broadcast_to(chain * scale, c.shape))
    out = []
    for combo in np.ndindex(*(len(t) for t in per_dim)):
        sel = [per_dim[d][j] for d, j in enumerate(combo)]
        inside = np.ones(g2.shape[:2], bool)
        for d, (idx, _, _) in enumerate(sel):
            inside &= (idx >= 0) & (idx <= sp[d] - 1)
        flat = np.zeros(g2.shape[:2], np.int64)
        for d, (idx, _, _) in enumerate(sel):
            flat += np.where(inside, idx, 0).astype(np.int64) * strides[d]
        if sel[0][1] is None:  # nearest
            out.append((flat, inside, None, None))
            continue
        w = sel[0][1]
        for _, wd, _ in sel[1:]:
            w = w * wd
        dws = []
        for d in range(k):
            dw = sel[d][2]
            for e in range(k):
                if e != d:
                    dw = dw * sel[e][1]
            dws.append(dw)
        out.append((flat, inside, w, dws))
    return out, chains


def _compute(a: np.ndarray) -> np.ndarray:
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float32)


def _values(xf: np.ndarray, flat: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """where(inside, x[n, :, flat], 0): (N, C, P) of xf (N, C, S)."""
    v = np.take_along_axis(xf, flat[:, None, :], axis=2)
    return np.where(inside[:, None, :], v, 0)


def grid_sample_fwd(x: np.ndarray, grid: np.ndarray, mode: str, padding: str,
                    align: bool) -> np.ndarray:
    """out (N, C, *osp) of x (N, C, *sp) sampled at grid (N, *osp, k)."""
    dt = x.dtype
    x, grid = _compute(x), _compute(grid)
    n, c = x.shape[:2]
    osp = grid.shape[1:-1]
    xf = x.reshape(n, c, int(np.prod(x.shape[2:])))
    with np.errstate(all="ignore"):
        taps, _ = _taps(x.shape, grid, mode, padding, align)
        out = None
        for flat, inside, w, _ in taps:
            term = _values(xf, flat, inside)
            if w is not None:
                term = term * w[:, None, :]
            out = term if out is None else out + term
    return out.reshape((n, c) + osp).astype(dt, copy=False)


def grid_sample_bwd(g: np.ndarray, x: np.ndarray, grid: np.ndarray, mode: str, padding: str,
                    align: bool) -> tuple:
    """(d x, d grid) of out = grid_sample_fwd(x, grid) for d out = g; d x deterministic
    (np.add.at adds in tap-major point order)."""
    dt = x.dtype
    g, x, grid = _compute(g), _compute(x), _compute(grid)
    n, c, *sp = x.shape
    k = len(sp)
    s = int(np.prod(sp))
    p = int(np.prod(grid.shape[1:-1]))
    gf = g.reshape(n, c, p)
    xf = x.reshape(n, c, s)
    cd = x.dtype
    if n * p * c == 0:  # nothing sampled: zero gradients
        return np.zeros(x.shape, dt), np.zeros(grid.shape, dt)
    dx = np.zeros((n * s + 1, c), cd)  # row n * s: the dummy target of outside taps
    dc = [np.zeros((n, p), cd) for _ in range(k)]
    base = (np.arange(n, dtype=np.int64) * s)[:, None]
    with np.errstate(all="ignore"):
        taps, chains = _taps(x.shape, grid, mode, padding, align)
        targets, vals = [], []
        for flat, inside, w, dws in taps:
            targets.append(np.where(inside, flat + base, n * s))
            vals.append(gf if w is None else gf * w[:, None, :])  # (N, C, P)
            if w is None:
                continue
            gx = (gf * _values(xf, flat, inside)).sum(1)  # sum_c g x_t: (N, P)
            for d in range(k):
                dc[d] += gx * dws[d]
        tgt = np.stack(targets, 2).reshape(-1)  # (N, P, T) flattened
        val = np.stack(vals, 3).transpose(0, 2, 3, 1).reshape(-1, c)  # (N P T, C)
        np.add.at(dx, tgt, val)
        # a chain of 0 (a clip) selects 0, as the composition's clamp backward does;
        # nearest: zeros (rounding has no gradient)
        dgrid = np.stack([np.where(chains[d] == 0, 0, dc[d] * chains[d])
                          for d in range(k - 1, -1, -1)], -1)
        if mode == "nearest":
            dgrid = np.zeros_like(dgrid)
    dx = dx[:n * s].reshape(n, s, c).transpose(0, 2, 1).reshape(x.shape)
    return (dx.astype(dt), dgrid.reshape(grid.shape).astype(dt))
