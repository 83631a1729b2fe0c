# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Stable argsort along one dim: X viewed as (O, K, INNER) with any element strides is read
as L = O * INNER independent lines of K elements; Y (int64) is written contiguous
(O, K, INNER): Y[o, :, i] is the order of X[o, :, i], ties in their original order.

Keys. Each value becomes an integer whose signed order is the sort order: floats (halves
widened to float32) by their bits, negative ones with all but the sign bit flipped (so a
larger magnitude sorts lower), after -0.0 -> +0.0 (they compare equal) and every NaN -> the
largest key (NaN sorts after +inf, as in PyTorch); integers and bools as themselves, in
int32 or int64. Descending flips every bit of the key (~k = -k - 1 reverses the order).
Sorting the pairs (key, original position) lexicographically is then a stable sort in
either direction, and the result is unique whatever network computes it (deterministic).

Stage 1 (``sort_tile_kernel``): each program sorts ROWS segments of BLOCK lanes, a segment
being a whole line of at most BLOCK elements or one BLOCK-tile of a longer line, with a
bitonic network over the tile viewed as a hypercube [2] * N_DIMS, written as Triton's own
``tl.sort`` is (triton/language/standard.py) but carrying the position and comparing
(key, position). Lanes past the end of a line get the largest key and a position past every
real one, so they sort last. A line that fits one segment is done: its order goes straight
into Y. Longer lines leave sorted runs of BLOCK (keys and positions) in a line-major (L, K)
scratch buffer. The direction (FLIP) and the destination strides are runtime arguments, so
one compiled variant serves both directions and both destinations.

Stage 2 (``merge_kernel``, log2(K / BLOCK) launches): runs of W elements are merged
pairwise into runs of 2W. Every element finds its place by ranking: an element of the left
run A at offset j goes to j + #{b in B: key_b < key}, one of the right run B to
j + #{a in A: key_a <= key} (A's positions all precede B's, so ties stay in order), each
count a binary search of STEPS = bit_length(W) loads. The last pass writes Y.

Bytes moved per element: stage 1 reads X once and writes 8 bytes (a line in one segment)
or key + 8 bytes; each merge pass reads and writes key + 8 bytes (plus ~log2(W) scattered
key loads of the binary search, mostly cached), the last one writing 8.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from tgrad.cuda import is_interpreted
from tgrad.cuda.array import DeviceArray
from tgrad.kernels import configs
from tgrad.kernels.launch import _I32, karg, launch, triton_cdiv


@triton.jit
def _sort_key(x, FLOAT: tl.constexpr, KEY64: tl.constexpr):
    # Shape contract: any shape -> the same shape of int32 (int64 when KEY64) keys with
    # key(a) < key(b) exactly when a sorts before b in ascending order.
    if FLOAT:
        if KEY64:
            f = x.to(tl.float64)
            bits = tl.where(f == 0, 0.0, f).to(tl.int64, bitcast=True)  # -0.0 -> +0.0
            key = tl.where(bits < 0, bits ^ 0x7FFFFFFFFFFFFFFF, bits)
            key = tl.where(f != f, 0x7FFFFFFFFFFFFFFF, key)  # NaN after +inf
        else:
            f = x.to(tl.float32)
            bits = tl.where(f == 0, 0.0, f).to(tl.int32, bitcast=True)
            key = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
            key = tl.where(f != f, 0x7FFFFFFF, key)
    else:
        if KEY64:
            key = x.to(tl.int64)
        else:
            key = x.to(tl.int32)
    return key


@triton.jit(do_not_specialize=["L", "INNER", "SXO", "SXI", "NT", "DO", "DI", "FLIP",
                               "STORE_KEYS"])
def sort_tile_kernel(X, KEYS, IDX, L, K, INNER, SXO, SXK, SXI, NT, DO, DK, DI, FLIP,
                     STORE_KEYS, FLOAT: tl.constexpr, KEY64: tl.constexpr,
                     IDX64: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                     N_DIMS: tl.constexpr, LOG_K: tl.constexpr):
    # Shape contract: a segment s = (l, t) = divmod(s, NT) is tile t (positions
    # t*BLOCK + [0, BLOCK)) of line l = (o, i) = divmod(l, INNER), X[o, k, i] at
    # o*SXO + k*SXK + i*SXI; program pid sorts segments pid*ROWS + [0, ROWS) and writes the
    # sorted positions k' (int64, in the line) to IDX and, if STORE_KEYS, their keys to
    # KEYS, both at o*DO + k*DK + i*DI. FLIP: 0, or -1 for descending (~key reverses the
    # order). ROWS * BLOCK = 2^N_DIMS, BLOCK = 2^LOG_K.
    pid = tl.program_id(0)
    if IDX64:
        pid = pid.to(tl.int64)
    seg = pid * ROWS + tl.arange(0, ROWS)
    lines = seg // NT
    lane = tl.arange(0, BLOCK)
    first = seg % NT * BLOCK
    pos = first[:, None] + lane[None, :]
    m = (seg < L * NT)[:, None] & (pos < K)
    o = lines // INNER
    i = lines % INNER
    x = tl.load(X + (o * SXO + i * SXI)[:, None] + pos * SXK, mask=m, other=0)
    key = _sort_key(x, FLOAT, KEY64) ^ FLIP
    if KEY64:
        key = tl.where(m, key, 0x7FFFFFFFFFFFFFFF)  # padding: after every real element
    else:
        key = tl.where(m, key, 0x7FFFFFFF)
    # Bitonic sort of the (key, lane) pairs along each segment, over the tile as a hypercube
    # [2] * N_DIMS (segment lanes along the innermost LOG_K axes): stage s merges blocks of
    # 2^s, ascending where bit s of the lane is 0 and descending where it is 1 (so pairs of
    # blocks form the bitonic sequences of the next stage), all ascending at the last stage.
    # A compare-and-swap along axis j orders the two entries whose lanes differ in bit j;
    # the partner's value is sum(pair) - own (exact in wrapping integer arithmetic; a sum
    # over 2 is a register op or a shuffle compiled, one NumPy call in the interpreter).
    hk = tl.reshape(key, [2] * N_DIMS)
    hp = tl.reshape(tl.zeros([ROWS, BLOCK], dtype=tl.int32) + lane[None, :], [2] * N_DIMS)
    for stage in tl.static_range(1, LOG_K + 1):
        if stage < LOG_K:
            flip = tl.reshape(tl.arange(0, 2), [1] * (N_DIMS - stage - 1) + [2] + [1] * stage)
        else:
            flip = 0
        for t in tl.static_range(stage):
            right = tl.reshape(tl.arange(0, 2),
                               [1] * (N_DIMS - stage + t) + [2] + [1] * (stage - 1 - t))
            ok = (tl.sum(hk, N_DIMS - stage + t, keep_dims=True) - hk).to(hk.dtype)
            op = (tl.sum(hp, N_DIMS - stage + t, keep_dims=True) - hp).to(tl.int32)
            after = (hk > ok) | ((hk == ok) & (hp > op))
            swap = after != (flip ^ right).to(tl.int1)
            hk = tl.where(swap, ok, hk)
            hp = tl.where(swap, op, hp)
    # the padding sorted last, past the stored positions
    src = first.to(tl.int64)[:, None] + tl.reshape(hp, [ROWS, BLOCK])
    dst = (o * DO + i * DI)[:, None] + pos * DK
    tl.store(IDX + dst, src, mask=m)
    if STORE_KEYS != 0:
        tl.store(KEYS + dst, tl.reshape(hk, [ROWS, BLOCK]), mask=m)


@triton.jit(do_not_specialize=["INNER", "W", "STEPS", "NC", "DO", "DI", "STORE_KEYS"])
def merge_kernel(KIN, IIN, KOUT, IOUT, K, INNER, W, STEPS, NC, DO, DK, DI, STORE_KEYS,
                 IDX64: tl.constexpr, BLOCK: tl.constexpr):
    # Shape contract: KIN/IIN (L, K) line-major, each line sorted runs of W (the last may be
    # shorter); program pid takes positions (pid % NC)*BLOCK + [0, BLOCK) of line
    # l = pid // NC = (o, i) = divmod(l, INNER) and writes each to its place k in the merge of
    # its run pair [s, s + 2W): IOUT (and KOUT if STORE_KEYS) at o*DO + k*DK + i*DI.
    pid = tl.program_id(0)
    if IDX64:
        pid = pid.to(tl.int64)
    line = pid // NC
    p = (pid % NC) * BLOCK + tl.arange(0, BLOCK)
    m = p < K
    base = line * K
    key = tl.load(KIN + base + p, mask=m, other=0)
    idx = tl.load(IIN + base + p, mask=m, other=0)
    start = p - p % W                       # this element's run
    in_a = (p // W) % 2 == 0
    pair = start - tl.where(in_a, 0, W)     # the run pair's start s
    o_start = tl.where(in_a, start + W, pair)
    o_len = tl.where(in_a, tl.minimum(tl.maximum(K - start - W, 0), W), W)
    # rank: the lower bound of key in the other run (strict for A, <= for B); lo converges to
    # the count of the other run's elements that sort before this one
    lo = tl.zeros_like(p)
    hi = o_len
    for _ in range(STEPS):
        live = m & (lo < hi)
        mid = (lo + hi) // 2
        km = tl.load(KIN + base + o_start + mid, mask=live, other=0)
        before = tl.where(in_a, km < key, km <= key)
        lo = tl.where(live & before, mid + 1, lo)
        hi = tl.where(live & (before == 0), mid, hi)
    dst = (line // INNER) * DO + (pair + (p - start) + lo) * DK + (line % INNER) * DI
    tl.store(IOUT + dst, idx, mask=m)
    if STORE_KEYS != 0:
        tl.store(KOUT + dst, key, mask=m)


def argsort(x: DeviceArray, axis: int, descending: bool) -> DeviceArray:
    """Stable order of ``x`` (ndim >= 1) along ``axis`` as int64 (see the module doc)."""
    from tgrad.backends import triton as be
    out = DeviceArray.empty(x.shape, np.dtype(np.int64), x.device)
    if out.size == 0:
        return out
    v, (outer, k, inner) = be.line_view(x, axis)
    sxo, sxk, sxi = v.estrides
    n_lines = outer * inner
    key64 = x.dtype.itemsize == 8
    kdt = np.dtype(np.int64 if key64 else np.int32)
    cfg = configs.sort_config(k, is_interpreted())
    nt = triton_cdiv(k, cfg.block)
    span = (outer - 1) * abs(sxo) + (k - 1) * abs(sxk) + (inner - 1) * abs(sxi)
    # int64 offsets when a product may pass 2^31: X's span, the segment count L * NT, and
    # the merge's run starts (< 2K) added to l*K
    idx64 = max(span, n_lines * nt * cfg.block, 2 * out.size) > _I32
    y_strides = (k * inner, inner, 1)
    scratch = (inner * k, 1, k)  # line-major (L, K): l*K + k = o*(INNER*K) + k + i*K
    common = dict(FLOAT=x.dtype.kind == "f" or x.dtype == np.dtype("bfloat16"), KEY64=key64,
                  IDX64=idx64, ROWS=cfg.rows, BLOCK=cfg.block,
                  N_DIMS=(cfg.rows * cfg.block).bit_length() - 1,
                  LOG_K=cfg.block.bit_length() - 1, num_warps=cfg.num_warps)
    grid = (triton_cdiv(n_lines * nt, cfg.rows),)
    flip = -1 if descending else 0
    with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
        if nt == 1:  # one tile per line: sorted in registers, straight into Y
            unused = DeviceArray.empty((1,), kdt, x.device)
            launch(sort_tile_kernel, grid, karg(v), karg(unused), karg(out), n_lines, k, inner,
                   sxo, sxk, sxi, nt, *y_strides, flip, 0, **common)
            return out
        keys = [DeviceArray.empty((n_lines, k), kdt, x.device) for _ in range(2)]
        idx = [DeviceArray.empty((n_lines, k), np.dtype(np.int64), x.device) for _ in range(2)]
        launch(sort_tile_kernel, grid, karg(v), karg(keys[0]), karg(idx[0]), n_lines, k,
               inner, sxo, sxk, sxi, nt, *scratch, flip, 1, **common)
        nc = triton_cdiv(k, cfg.merge_block)
        w, src = cfg.block, 0
        while w < k:  # runs of w -> 2w; the last pass writes Y
            last = 2 * w >= k
            dst_k, dst_i = (keys[1 - src], out) if last else (keys[1 - src], idx[1 - src])
            launch(merge_kernel, (n_lines * nc,), karg(keys[src]), karg(idx[src]),
                   karg(dst_k), karg(dst_i), k, inner, w, w.bit_length(), nc,
                   *(y_strides if last else scratch), 0 if last else 1, IDX64=idx64,
                   BLOCK=cfg.merge_block, num_warps=cfg.merge_warps)
            w, src = 2 * w, 1 - src
    return out
