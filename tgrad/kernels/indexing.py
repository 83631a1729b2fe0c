# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Advanced indexing on the GPU: gather, deterministic scatter-add, and put.

gather_nd (the forward of x[key]) computes every offset on the device. Shape contract: the
result has NDIM <= 8 dims (S0 innermost); each result dim r walks the sliced source view
with element stride XS_r (0 on the dims of the broadcast index shape B) and the index
buffer IDX (NIDX <= 4 int arrays, each broadcast to B, stacked as [NIDX, NB] contiguous, or
one contiguous array of shape B) with stride IS_r (0 on sliced and None dims). Index k
selects along a source dim of size N_k and stride K_k; negatives wrap once (NumPy; with
WRAP off, for embedding, they are out of range):
  out[i] = X[sum_r c_r XS_r + sum_k wrap(IDX[k NB + sum_r c_r IS_r]) K_k]
  bytes = N (2 itemsize + NIDX * 8) at most (index reads repeat from cache over sliced dims)
With CHECK, an index outside [-N_k, N_k) ([0, N_k) without WRAP) is not read: index array k
writes ERR[2k] = 1 and ERR[2k + 1] = the index as given (any bad one of it), which
tgrad/cuda/index_errors.py reads at the next synchronization; those output elements are
left unwritten.

The writers (the backward of x[key], scatter_reduce / index_reduce, and x[key] = v) split
the result into its index part b (the NB positions of B) and its slice part s (NS
positions, the sliced dims of the target collapsed to two: NS0 inner of stride ST0, outer
stride ST1), with the values V as a contiguous [NB, NS] array. Two index positions collide
exactly when they name the same index tuple, so collisions are resolved over NB targets,
never over NB * NS offsets, and entirely on the device (no host read: a backward with a
cuda index can be captured into a CUDA graph):
  index_targets:  T[b] = sum_k wrap(IDX[k NB + b]) K_k, the element offset of tuple b
                  (-1 for an out-of-range one, which CHECK reports as gather_nd does)
  argsort (tgrad/kernels/sort.py, stable): PERM, the positions b ordered by T; a run of
                  equal T in PERM is one target's positions, in index order
  scatter_parts:  PERM's positions cut into chunks of L (configs.scatter_chunk, about
                  sqrt(NB / 2)); where a run goes on into chunk c, a lane (c, s) folds
                  its part of the chunk: PART[c NS + s] (launched only when NB > L)
  scatter_sorted: a lane (r, s) at the head of a run of target t >= 0 folds the run:
                  OUT[t + off(s)] = INIT (op) V[PERM_j NS + s] over the run's j, in order
                  (sum, or the product, max or min of scatter_reduce / index_reduce),
                  value by value up to the first chunk boundary past r + L, then the
                  run's later chunks by their PART: at most 2 L + NB / L steps a lane,
                  so repeats (a padding token's row) cannot serialize a launch
  put_sorted:     a lane (r, s) at the tail of a run (NumPy: the last write wins):
                  DST[t + off(s)] = V[PERM_r NS + s]
Determinism of scatter-add (repeated indices add up): no atomics; each sum runs over its
run in index order, a fixed order, so the result is bit-identical run to run. A run of at
most L indices sums one value after another as np.add.at does (bit-identical to it); a
longer one adds its chunks' partial sums in order (another rounding, within any order's
bound n eps sum|v|).
Keys the plans above do not take (see tgrad/backends/_triton_index.py) come as int64
element offsets OFF computed on the host: gather_kernel reads out[i] = X[OFF[i]]
(bytes = N (2 itemsize + 8)), and the writers take them as T with NS = 1.
Targets are offsets from the view's base (strides are never negative), so -1 is free.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def gather_kernel(OUT, X, OFF, N, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = i < N
    off = tl.load(OFF + i, mask=mask, other=0)
    tl.store(OUT + i, tl.load(X + off, mask=mask), mask=mask)


@triton.jit
def _nd_index(IDX, ERR, oi, mask, N, CHECK: tl.constexpr, WRAP: tl.constexpr):
    """One index array's entries at ``oi`` (with WRAP, negatives wrapped once), and where
    they fall outside [0, N); with CHECK a bad entry writes ERR[0] = 1 and ERR[1] = the
    entry."""
    v = tl.load(IDX + oi, mask=mask, other=0).to(tl.int64)
    if WRAP:
        w = tl.where(v < 0, v + N, v)
    else:
        w = v
    bad = mask & ((w < 0) | (w >= N))
    if CHECK:
        tl.store(ERR + oi * 0, oi * 0 + 1, mask=bad)
        tl.store(ERR + 1 + oi * 0, v, mask=bad)
    return w, bad


@triton.jit
def _tuple_offset(IDX, ERR, oi, mask, NB, N0, N1, N2, N3, K0, K1, K2, K3,
                  NIDX: tl.constexpr, CHECK: tl.constexpr, WRAP: tl.constexpr):
    """sum_k wrap(IDX[k NB + oi]) K_k over the NIDX index arrays (each selecting along a
    dim of size N_k and stride K_k), and where any entry is out of range (with CHECK,
    array k reports at ERR[2k], as ``_nd_index``)."""
    w, bad = _nd_index(IDX, ERR, oi, mask, N0, CHECK, WRAP)
    off = w * K0
    if NIDX > 1:
        w, bad_k = _nd_index(IDX + NB, ERR + 2, oi, mask, N1, CHECK, WRAP)
        bad = bad | bad_k
        off += w * K1
    if NIDX > 2:
        w, bad_k = _nd_index(IDX + 2 * NB, ERR + 4, oi, mask, N2, CHECK, WRAP)
        bad = bad | bad_k
        off += w * K2
    if NIDX > 3:
        w, bad_k = _nd_index(IDX + 3 * NB, ERR + 6, oi, mask, N3, CHECK, WRAP)
        bad = bad | bad_k
        off += w * K3
    return off, bad


_ND_NO_SPEC = ["N", "NB"] + [f"{p}{i}" for p in ("S", "XS", "IS") for i in range(8)] + \
    [f"{p}{k}" for p in "NK" for k in range(4)]


@triton.jit(do_not_specialize=_ND_NO_SPEC)
def gather_nd_kernel(OUT, X, IDX, ERR, N, NB,
                     S0, S1, S2, S3, S4, S5, S6, S7,
                     XS0, XS1, XS2, XS3, XS4, XS5, XS6, XS7,
                     IS0, IS1, IS2, IS3, IS4, IS5, IS6, IS7,
                     N0, N1, N2, N3, K0, K1, K2, K3,
                     NDIM: tl.constexpr, NIDX: tl.constexpr, CHECK: tl.constexpr,
                     WRAP: tl.constexpr,
                     BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = i < N
    # unravel the flat result index, innermost dim first (inlined, as in ew_kernel)
    c = i % S0
    rem = i // S0
    ox = c * XS0
    oi = c * IS0
    if NDIM > 1:
        c = rem % S1
        rem = rem // S1
        ox += c * XS1
        oi += c * IS1
    if NDIM > 2:
        c = rem % S2
        rem = rem // S2
        ox += c * XS2
        oi += c * IS2
    if NDIM > 3:
        c = rem % S3
        rem = rem // S3
        ox += c * XS3
        oi += c * IS3
    if NDIM > 4:
        c = rem % S4
        rem = rem // S4
        ox += c * XS4
        oi += c * IS4
    if NDIM > 5:
        c = rem % S5
        rem = rem // S5
        ox += c * XS5
        oi += c * IS5
    if NDIM > 6:
        c = rem % S6
        rem = rem // S6
        ox += c * XS6
        oi += c * IS6
    if NDIM > 7:
        c = rem % S7
        ox += c * XS7
        oi += c * IS7
    off, bad = _tuple_offset(IDX, ERR, oi, mask, NB, N0, N1, N2, N3, K0, K1, K2, K3, NIDX,
                             CHECK, WRAP)
    ox += off
    if CHECK:
        mask = mask & (bad == 0)
    tl.store(OUT + i, tl.load(X + ox, mask=mask), mask=mask)


# scatter reductions (REDUCE): 0 sum, 1 prod, 2 amax, 3 amin; amax/amin propagate NaN.
# Accumulator (ACC): 0 float32 (float32 and halves), 1 float64, 2 the output's own dtype
# (integers: exact, wrapping like the host). INIT is the reduction's identity (0, 1, -inf or
# the dtype's lowest, +inf or its highest), which a target with no values keeps.
SUM, PROD, AMAX, AMIN = 0, 1, 2, 3


@triton.jit
def _acc_zeros(OUT, ACC: tl.constexpr, INIT: tl.constexpr, BLOCK: tl.constexpr):
    if ACC == 1:
        acc = tl.full([BLOCK], INIT, tl.float64)
    elif ACC == 2:
        acc = tl.full([BLOCK], INIT, OUT.dtype.element_ty)
    else:
        acc = tl.full([BLOCK], INIT, tl.float32)
    return acc


@triton.jit
def _combine(acc, v, m, REDUCE: tl.constexpr):
    """acc (op) v where m, acc elsewhere; v already in acc's dtype."""
    if REDUCE == 0:
        r = acc + v
    elif REDUCE == 1:
        r = acc * v
    elif REDUCE == 2:
        r = tl.where((v > acc) | (v != v), v, acc)  # a NaN, once in, stays (v > NaN: False)
    else:
        r = tl.where((v < acc) | (v != v), v, acc)
    return tl.where(m, r, acc)


@triton.jit
def _slice_offset(s, NS0, ST1, ST0):
    """Element offset of slice position s in a target whose sliced dims collapse to two
    (NS0 inner positions of stride ST0, outer stride ST1)."""
    return (s // NS0) * ST1 + (s % NS0) * ST0


_WRITER_NO_SPEC = ["NB", "NS", "NS0", "ST1", "ST0"]


@triton.jit(do_not_specialize=["NB"] + [f"{p}{k}" for p in "NK" for k in range(4)])
def index_targets_kernel(T, IDX, ERR, NB, N0, N1, N2, N3, K0, K1, K2, K3,
                         NIDX: tl.constexpr, BLOCK: tl.constexpr):
    # T[b] = sum_k wrap(IDX[k NB + b]) K_k for b < NB (IDX: [NIDX, NB] contiguous, or one
    # contiguous array); -1 where an index is outside [-N_k, N_k), reported in ERR
    b = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = b < NB
    t, bad = _tuple_offset(IDX, ERR, b, mask, NB, N0, N1, N2, N3, K0, K1, K2, K3, NIDX, True,
                           True)
    tl.store(T + b, tl.where(bad, -1, t), mask=mask)


@triton.jit(do_not_specialize=["N", "SIZE"])
def range_check_kernel(IDX, ERR, N, SIZE, NEGATIVES: tl.constexpr, BLOCK: tl.constexpr):
    # ERR = (1, any IDX[i] outside [0, SIZE), or [-SIZE, SIZE) with NEGATIVES) if there is
    # one, for i < N (IDX contiguous): the range check of ops whose kernels do not check
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    _nd_index(IDX, ERR, i, i < N, SIZE, True, NEGATIVES)


@triton.jit
def _sorted_target(PERM, T, r, mask):
    """The target of sorted position r (-1 where masked off) and its index position."""
    b = tl.load(PERM + r, mask=mask, other=0)
    return tl.load(T + b, mask=mask, other=-1), b


@triton.jit
def _fold_run(acc, V, PERM, T, t, r, b, s, live, END, NS, REDUCE: tl.constexpr):
    """acc (op) V[PERM_r NS + s] over sorted positions r, r + 1, ... of target t (b = PERM_r),
    in order, for the ``live`` lanes, until the run ends or r reaches END; returns acc and
    each lane's first position not folded."""
    while tl.max(live.to(tl.int32), axis=0) > 0:  # until this program's runs have ended
        v = tl.load(V + b * NS + s, mask=live, other=0)
        acc = _combine(acc, v.to(acc.dtype), live, REDUCE)
        r = tl.where(live, r + 1, r)
        live = live & (r < END)
        nxt, b = _sorted_target(PERM, T, r, live)
        live = live & (nxt == t)
    return acc, r


@triton.jit(do_not_specialize=["NB", "NS", "L"])
def scatter_parts_kernel(PART, V, PERM, T, NB, NS, L, REDUCE: tl.constexpr, ACC: tl.constexpr,
                         INIT: tl.constexpr, BLOCK: tl.constexpr):
    # item = c NS + s for chunk c >= 1 of L sorted positions [c L, c L + L): where the run of
    # a target t >= 0 goes on into chunk c (positions c L - 1 and c L share t),
    # PART[c NS + s] = INIT (op) V[PERM_j NS + s] over the run's positions j in the chunk
    item = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    c = item // NS
    s = item % NS
    mask = (c > 0) & (c * L < NB)
    r = c * L
    t, b = _sorted_target(PERM, T, r, mask)
    prev, _ = _sorted_target(PERM, T, r - 1, mask)
    live = mask & (t >= 0) & (prev == t)
    acc = _acc_zeros(PART, ACC, INIT, BLOCK)
    acc, _ = _fold_run(acc, V, PERM, T, t, r, b, s, live, tl.minimum(r + L, NB), NS, REDUCE)
    tl.store(PART + item, acc, mask=live)


@triton.jit(do_not_specialize=_WRITER_NO_SPEC + ["L"])
def scatter_sorted_kernel(OUT, V, PERM, T, PART, NB, NS, NS0, ST1, ST0, L,
                          REDUCE: tl.constexpr, ACC: tl.constexpr, INIT: tl.constexpr,
                          BLOCK: tl.constexpr):
    # item = r NS + s, r a position of PERM (T's stable order): the head lane of a run of
    # target t >= 0 writes OUT[t + off(s)] = INIT (op) V[PERM_j NS + s] over the run's j: it
    # folds the values one by one up to the chunk boundary STOP = (r // L + 2) L (past r + L:
    # a run of at most L positions is folded whole, in index order), then the run's
    # remaining chunks' PART (scatter_parts_kernel) in order: at most 2 L + NB / L steps
    item = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = item < NB * NS
    r = item // NS
    s = item % NS
    t, b = _sorted_target(PERM, T, r, mask)
    prev, _ = _sorted_target(PERM, T, r - 1, mask & (r > 0))
    head = mask & (t >= 0) & (prev != t)  # prev: -1 before the first
    acc = _acc_zeros(OUT, ACC, INIT, BLOCK)
    stop = tl.minimum((r // L + 2) * L, NB)
    acc, r = _fold_run(acc, V, PERM, T, t, r, b, s, head, stop, NS, REDUCE)
    live = head & (r == stop) & (r < NB)
    nxt, _ = _sorted_target(PERM, T, r, live)
    live = live & (nxt == t)
    while tl.max(live.to(tl.int32), axis=0) > 0:  # the long runs: a chunk a step
        part = tl.load(PART + (r // L) * NS + s, mask=live, other=0)
        acc = _combine(acc, part.to(acc.dtype), live, REDUCE)
        r = tl.where(live, r + L, r)
        live = live & (r < NB)
        nxt, _ = _sorted_target(PERM, T, r, live)
        live = live & (nxt == t)
    tl.store(OUT + t + _slice_offset(s, NS0, ST1, ST0), acc.to(OUT.dtype.element_ty),
             mask=head)


@triton.jit(do_not_specialize=_WRITER_NO_SPEC)
def put_sorted_kernel(DST, V, PERM, T, NB, NS, NS0, ST1, ST0, BLOCK: tl.constexpr):
    # item = r NS + s: the tail lane of a run of target t >= 0 (the run's last index
    # position, NumPy's winner) writes DST[t + off(s)] = V[PERM_r NS + s]
    item = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = item < NB * NS
    r = item // NS
    s = item % NS
    t, b = _sorted_target(PERM, T, r, mask)
    nxt, _ = _sorted_target(PERM, T, r + 1, mask & (r + 1 < NB))
    tail = mask & (t >= 0) & (nxt != t)  # nxt: -1 after the last
    v = tl.load(V + b * NS + s, mask=tail)
    tl.store(DST + t + _slice_offset(s, NS0, ST1, ST0), v.to(DST.dtype.element_ty), mask=tail)


__all__ = ["gather_nd_kernel", "gather_kernel", "index_targets_kernel", "range_check_kernel",
           "scatter_parts_kernel", "scatter_sorted_kernel", "put_sorted_kernel",
           "triton"]
