"""``embedding_bag``: per bag of indices, the sum, mean or max of their embedding rows,
without materialising the (bags, bag size, dim) tensor of ``embedding`` followed by a
reduction.

Shape contract: input (B, N) is B bags of N indices (offsets None), or input (n,) with
offsets (B,) (bag b = input[offsets[b]:offsets[b + 1]], the last bag runs to the end; with
include_last_offset, offsets has B + 1 entries and the last is the end: entries past it
are left out; offsets must not decrease); weight
(num_embeddings, D); result (B, D). per_sample_weights (input's shape, mode 'sum' only)
scales each row. scale_grad_by_freq (modes 'sum' and 'mean') divides the gradient each
entry passes to its weight row by the count of its index in the whole input. Entries equal
to padding_idx are left out of their bag (and of mean's count); an empty bag gives zeros.
sparse=True (modes 'sum' and 'mean', CPU): weight.grad is a sparse COO tensor, as
PyTorch's: indices the flat input without padding_idx entries (uncoalesced), values the
gradient each entry's row received (its bag's gradient, times its per_sample_weight for
'sum', divided by the bag's size for 'mean'); with scale_grad_by_freq it raises
PyTorch's error at backward.
``max_norm`` first renormalises, in place and under no_grad, every weight row that input
references (as ``embedding``'s max_norm, padding row included, as PyTorch's
embedding_bag).

Composition: rows = weight[input] (its backward scatter-adds into weight), the bag id of
every entry (from the offsets: a scatter-add of ones at each bag start, then a cumsum),
and index_add (sum, mean) into (B, D); max finds each bag's first maximal entry per
column (scatter_reduce amax, then amin of the positions holding it: ties go to the first
entry, as PyTorch's running maximum; a NaN propagates) and gathers it, so the whole
gradient goes to that entry's row. Gradients are those of the parts.
float16/bfloat16 weights are gathered, scaled and reduced in float32 and rounded once.

On the CPU, 'sum' and 'mean' of a float32/float64 weight (dense gradient, no
scale_grad_by_freq, per_sample_weights without a gradient) are one node instead,
``_BagSum`` (PyTorch's EmbeddingBagBackward0): the same sums in the same order by
tgrad/backends/_numpy_bag.py without the (n, D) rows and np.add.at, forward and backward
bit-identical to the composite (4.6x faster forward, 3.8x forward + backward on (512, 16)
bags of a (1000, 64) float32 weight); create_graph differentiates the composite's
adjoints as tgrad ops. 'max' likewise (``_BagMax``, float32/float64 CPU weight, n >= 1):
_numpy_bag.segment_first_max finds the same entries, the output gathers them and the
backward np.add.at's g into their rows in bag order, bit-identical to the composite (12x
faster forward and forward + backward on (512, 16) bags of a (1000, 64) float32 weight:
7.1 ms -> 0.6 ms); create_graph runs a scatter_add of the masked g as tgrad ops.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends import _numpy_bag
from tgrad.ops import elementwise as ew
from tgrad.ops._common import wrap
from tgrad.ops.creation import arange, full, ones, zeros
from tgrad.ops.gathering import checked_on_device
from tgrad.tensor import Tensor, _int_arg

__all__ = ["embedding_bag"]

MODES = ("sum", "mean", "max")


def _bag_ids(input: Tensor, offsets, include_last_offset: bool) -> tuple:  # noqa: A002
    """(flat indices (n,), bag id of each (n,) int64, number of bags B)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets).__name__}")
        b, n = input.shape
        return input.reshape(-1), arange(b, device=input.device).repeat_interleave(n), b
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if not isinstance(offsets, Tensor) or offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if offsets.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"embedding_bag: offsets must be int64 or int32, got "
                           f"{offsets.dtype.name}")
    starts = offsets[:-1] if include_last_offset else offsets
    bags = starts.shape[0]
    n = input.shape[0]
    if offsets.numel():
        off = offsets.numpy(force=True)  # (on a GPU: one synchronizing read, as PyTorch's)
        if bags and off[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{int(off[0])}")
        if bags and off.max() > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length ({n}), "
                               f"but got offsets[-1] of {int(off.max())}")
        down = np.flatnonzero(off[1:] < off[:-1])
        if down.size:  # (PyTorch's sum / mean kernels: "Expected i < index_size")
            k = int(down[0]) + 1
            raise RuntimeError(f"embedding_bag: offsets must not decrease (bag k holds the "
                               f"entries offsets[k] to offsets[k + 1] - 1), but offsets[{k}] "
                               f"= {int(off[k])} < offsets[{k - 1}] = {int(off[k - 1])}")
        if include_last_offset and int(off[-1]) < n:  # the last bag ends at offsets[-1]:
            input = input[:int(off[-1])]  # noqa: A001 (PyTorch's 'sum' leaves the rest out)
            n = input.shape[0]
    if bags == 0:
        return input[:0], zeros(0, dtype=dtypes.int64, device=input.device), 0
    # bag id of entry i = (number of bag starts <= i) - 1: ones added at each start, cumsum
    starts_at = zeros(n + 1, dtype=dtypes.int64, device=input.device).index_add(
        0, starts.to(dtypes.int64), ones(bags, dtype=dtypes.int64, device=input.device))
    seg = starts_at[:n].cumsum(0) - 1
    return input, seg, bags


def _bag_max(rows: Tensor, seg: Tensor, keep: Tensor | None,
             bags: int) -> tuple[Tensor, Tensor]:
    """((bags, D) maxima, (bags, D) int64 position of each maximum among the n entries, n
    for an empty bag) of ``rows`` (n >= 1, D) per bag ``seg``, entries left out where
    ``keep`` is False, zeros for an empty bag. Ties go to the bag's first maximal entry, as
    PyTorch's running maximum (replaced only by a strictly greater value); a NaN propagates
    (the first NaN is the maximum; PyTorch's kernel keeps a NaN only as the bag's first
    entry). The value is read through that entry (a gather), so the bag's gradient goes to
    that entry's row alone."""
    n, dim = rows.shape
    dev = rows.device
    r = rows.detach()
    target = seg.unsqueeze(-1).expand(n, dim)
    kept = None if keep is None else keep.unsqueeze(-1)
    best = zeros(bags, dim, dtype=r.dtype, device=dev).scatter_reduce(
        0, target, r if kept is None else ew.where(kept, r, float("-inf")), "amax",
        include_self=False).gather(0, target)  # (n, D): the maximum of each entry's bag
    hit = (r == best) | (ew.isnan(r) & ew.isnan(best))
    if kept is not None:
        hit = hit & kept
    pos = ew.where(hit, arange(n, device=dev).unsqueeze(-1), n)
    first = full((bags, dim), n, dtype=dtypes.int64, device=dev).scatter_reduce(
        0, target, pos, "amin", include_self=True)  # n: no entry (an empty bag)
    out = rows.gather(0, first.clamp(max=n - 1))
    return ew.where(first < n, out, 0.0), first


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows (see the module docstring)."""
    return _embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq,
                          mode, sparse, per_sample_weights, include_last_offset, padding_idx)[0]


def _embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None,  # noqa: A002
                   max_norm: float | None, norm_type: float, scale_grad_by_freq: bool,
                   mode: str, sparse: bool, per_sample_weights: Tensor | None,
                   include_last_offset: bool, padding_idx: int | None) -> tuple:
    """embedding_bag's (output (B, D), flat indices (n,), bag id of each entry (n,) int64,
    B, kept-entry mask (n,) bool or None (no padding_idx), position among the n entries of
    each bag's maximum (B, D) int64, n for an empty bag (mode 'max' with n >= 1; else
    None), the entries of each bag (B,) int64 (``_bag_sizes``; mode 'mean', else None));
    torch.embedding_bag builds its offset2bag / bag_size / max_indices from them."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding_bag(): input and weight must be Tensors")
    if input.dtype.is_floating_point or input.dtype is dtypes.bool_:
        raise RuntimeError(f"embedding_bag: expected an integer index tensor (Long or Int), "
                           f"got {input.dtype.name}")
    if not weight.dtype.is_floating_point:
        raise RuntimeError(f"embedding_bag: Expected tensor for argument #1 'weight' to have "
                           f"one of the following scalar types: Half, BFloat16, Float, Double; "
                           f"but got {weight.dtype} instead")
    if weight.ndim != 2:  # [num_embeddings, embedding_dim] (PyTorch's text)
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if mode not in MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                      f"per_sample_weights is only supported for mode='sum' "
                                      f"(got mode='{mode}'). Please open a feature request on "
                                      f"GitHub.")
        if isinstance(per_sample_weights, Tensor) and per_sample_weights.dtype is not \
                weight.dtype:  # (PyTorch's text; no promotion)
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type "
                               f"as tensor for argument #1 'per_sample_weights'; but type "
                               f"{weight.type()} does not equal {per_sample_weights.type()} "
                               f"(embedding_bag: convert per_sample_weights with "
                               f".to(weight.dtype))")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape})"
                             f" is not None, then it must have the same shape as the input "
                             f"({input.shape})")
    rows_n = weight.shape[0]
    if padding_idx is not None:
        padding_idx = _int_arg("embedding_bag", "padding_idx", padding_idx, 9)
        if not -rows_n <= padding_idx < rows_n:  # PyTorch's RuntimeError (embedding's assert)
            raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                               f"{-rows_n} through {rows_n - 1}, but got {padding_idx}")
        padding_idx %= rows_n
    idx, seg, bags = _bag_ids(input, offsets, include_last_offset)
    dim = weight.shape[1]
    on_device = idx.numel() and checked_on_device("embedding_bag:", idx, rows_n, 0,
                                                  weight.shape)
    if idx.numel() and not on_device and (int(idx.min()) < 0 or int(idx.max()) >= rows_n):
        flat = idx.numpy().reshape(-1)  # PyTorch's RuntimeError, naming the first bad entry
        pos = int(np.flatnonzero((flat < 0) | (flat >= rows_n))[0])
        raise RuntimeError(f"embedding_bag: Index {pos} of input takes value {int(flat[pos])} "
                           f"which is not in the valid range [0, {rows_n})")
    if max_norm is not None:  # in place, before the rows are read (PyTorch's order)
        from tgrad.nn._composite import _embedding_renorm_
        _embedding_renorm_(weight, idx, max_norm, norm_type)
    if _fast_bag(weight, mode, sparse, scale_grad_by_freq, per_sample_weights):
        return _bag_sum_fast(weight, idx, seg, bags, mode, per_sample_weights, padding_idx)
    if mode == "max" and _fast_max(weight, idx):
        res = _bag_max_fast(weight, idx, seg, bags, padding_idx)
        if res is not None:
            return res
    half = weight.dtype if weight.dtype in (dtypes.float16, dtypes.bfloat16) else None
    if sparse:  # weight.grad: the rows' gradients at idx, padding entries left out
        from tgrad.sparse import sparse_embedding
        rows = sparse_embedding(weight, idx, padding_idx, scale_grad_by_freq)
    else:
        rows = weight[idx]  # (n, D); halves are summed and scaled in float32, rounded once
    if half is not None:
        rows = rows.to(dtypes.float32)
    if scale_grad_by_freq and rows.requires_grad and not sparse:
        # dweight[i] / the count of i among all the mini-batch's indices (padding entries
        # included; the padding row gets no gradient anyway), as PyTorch's documented rule
        # and its CUDA kernel (PyTorch 2.13's CPU kernel divides an index that sorts after a
        # repeated one by that one's count: pytorch/pytorch#190063)
        from tgrad.nn._composite import _ScaleGrad
        from tgrad.ops.searching import bincount
        counts = bincount(idx.to(dtypes.int64), minlength=rows_n)[idx]
        rows = _ScaleGrad.apply(rows, (1.0 / counts.to(rows.dtype)).unsqueeze(-1))
    if per_sample_weights is not None:
        psw = per_sample_weights.reshape(-1)[:idx.shape[0]]  # (offsets may end the bags early)
        rows = rows * psw.reshape(-1, 1).to(rows.dtype)
    keep = None if padding_idx is None else (idx != padding_idx)
    out = zeros(bags, dim, dtype=rows.dtype, device=weight.device)
    parts = (idx, seg, bags, keep)
    if mode == "max":
        first = None
        if idx.shape[0]:
            out, first = _bag_max(rows, seg, keep, bags)
        else:
            out = out + rows.sum(0)
        return (out if half is None else out.to(half),) + parts + (first, None)
    if keep is not None:
        rows = ew.where(keep.unsqueeze(-1), rows, 0.0)
    out = out.index_add(0, seg, rows)
    sizes = None
    if mode == "mean":
        sizes = _bag_sizes(seg, keep, bags)
        out = out / sizes.clamp(min=1).to(rows.dtype).unsqueeze(-1)
    return (out if half is None else out.to(half),) + parts + (None, sizes)


def _bag_sizes(seg: Tensor, keep: Tensor | None, bags: int) -> Tensor:
    """(B,) int64: the entries of each bag, padding_idx entries (keep False) left out;
    seg (n,) int64 is each entry's bag."""
    counted = ones(seg.shape[0], dtype=dtypes.int64, device=seg.device) if keep is None \
        else keep.to(dtypes.int64)
    return zeros(bags, dtype=dtypes.int64, device=seg.device).index_add(0, seg, counted)


def _fast_bag(weight: Tensor, mode: str, sparse: bool, scale_grad_by_freq: bool,
              per_sample_weights: Tensor | None) -> bool:
    """Whether 'sum' / 'mean' run as one _BagSum node on the NumPy kernel: a CPU
    float32/float64 weight, dense gradient, no scale_grad_by_freq, per_sample_weights
    (if any) not requiring a gradient; else the composite."""
    return (mode != "max" and not sparse and not scale_grad_by_freq
            and weight.device.type == "cpu" and weight.dtype.np in _numpy_bag.FAST_DTYPES
            and (per_sample_weights is None or not per_sample_weights.requires_grad))


def _bag_sum_fast(weight: Tensor, idx: Tensor, seg: Tensor, bags: int, mode: str,
                  per_sample_weights: Tensor | None, padding_idx: int | None) -> tuple:
    """_embedding_bag's results for 'sum' / 'mean' through _BagSum (the composite's
    values bit for bit; see tgrad/backends/_numpy_bag.py)."""
    psw = None if per_sample_weights is None else \
        per_sample_weights.reshape(-1)[:idx.shape[0]].detach()
    keep = None if padding_idx is None else (idx != padding_idx)
    seg_np = seg._data.astype(np.int64, copy=False)
    lengths = np.bincount(seg_np, minlength=bags)  # entries of each bag (seg: in bag order)
    sizes = None
    if mode == "mean":  # kept entries of each bag (_bag_sizes)
        counted = seg_np if keep is None else seg_np[keep._data]
        sizes = wrap(np.bincount(counted, minlength=bags).astype(np.int64), weight.device)
    out = _BagSum.apply(weight, (idx, seg, keep, psw, sizes, lengths))
    return (out, idx, seg, bags, keep, None, sizes)


class _BagSum(Function):
    """embedding_bag 'sum' / 'mean' on the CPU: weight (R, D) -> (B, D), out[b] = +0 + the
    sum over bag b's entries e, in order, of weight[idx[e]] * psw[e] (zero where
    idx[e] == padding_idx), / max(kept entries, 1) for 'mean'; parts = (idx (n,), seg (n,)
    the bag of each entry, keep (n,) bool or None, psw (n,) or None (no gradient), sizes
    (B,) int64 ('mean') or None, lengths (B,) the entries of each bag). One node,
    PyTorch's EmbeddingBagBackward0.
        d weight[r] = +0 + sum over the entries e with idx[e] = r, in order, of
                      gq[seg[e]] (zero where not kept) * psw[e],  gq = g (/ sizes)
    the composite's (index_add's gather, where's mask, mul's scale, the row gather's index
    add), summed by _numpy_bag.segment_sums in the same order (bit-identical); under
    create_graph the same steps as tgrad ops (linear in g: differentiates again)."""

    name = "embedding_bag"
    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx, weight, parts):
        idx, seg, keep, psw, sizes, lengths = parts
        ctx.parts, ctx.weight_shape = parts, tuple(weight.shape)
        w = weight._data
        out = _numpy_bag.segment_sums(
            w, idx._data.astype(np.int64, copy=False), None, lengths, lengths.shape[0], None,
            None if psw is None else psw._data, None if keep is None else keep._data, True)
        if sizes is not None:
            np.true_divide(out, np.maximum(sizes._data, 1).astype(w.dtype)[:, None], out=out)
        return wrap(out, weight.device)

    @staticmethod
    def backward(ctx, g):
        idx, seg, keep, psw, sizes, _ = ctx.parts
        if differentiable_formula():  # the composite's adjoints, as tgrad ops
            gq = g if sizes is None else g / sizes.clamp(min=1).to(g.dtype).unsqueeze(-1)
            gr = gq.index_select(0, seg)
            if keep is not None:
                gr = ew.where(keep.unsqueeze(-1), gr, 0.0)
            if psw is not None:
                gr = gr * psw.reshape(-1, 1).to(gr.dtype)
            return zeros(ctx.weight_shape, dtype=g.dtype, device=g.device).index_add(
                0, idx, gr), None
        gq = g._data
        if sizes is not None:
            gq = np.true_divide(gq, np.maximum(sizes._data, 1).astype(gq.dtype)[:, None])
        rows = idx._data.astype(np.int64, copy=False)
        # the entries of each weight row, in order (a 16-bit key sorts by radix: 15x faster)
        key = rows.astype(np.uint16) if ctx.weight_shape[0] <= 1 << 16 else rows
        order = np.argsort(key, kind="stable")
        counts = np.bincount(rows, minlength=ctx.weight_shape[0])
        target = np.flatnonzero(counts)
        dw = _numpy_bag.segment_sums(
            gq, seg._data.astype(np.int64, copy=False), order, counts[target],
            ctx.weight_shape[0], target, None if psw is None else psw._data,
            None if keep is None else keep._data, False)
        return wrap(dw, g.device), None


def _fast_max(weight: Tensor, idx: Tensor) -> bool:
    """Whether 'max' may run as one _BagMax node on the NumPy kernel: a CPU
    float32/float64 weight and at least one entry; else the composite."""
    return (weight.device.type == "cpu" and weight.dtype.np in _numpy_bag.FAST_DTYPES
            and idx.shape[0] > 0)


def _bag_max_fast(weight: Tensor, idx: Tensor, seg: Tensor, bags: int,
                  padding_idx: int | None) -> tuple | None:
    """_embedding_bag's results for 'max' through _BagMax (the composite's values bit for
    bit), or None where the kernel declines (a few very long bags)."""
    keep = None if padding_idx is None else (idx != padding_idx)
    rows = idx._data.astype(np.int64, copy=False)
    lengths = np.bincount(seg._data.astype(np.int64, copy=False), minlength=bags)
    first = _numpy_bag.segment_first_max(weight._data, rows, lengths,
                                         None if keep is None else keep._data)
    if first is None:
        return None
    n = rows.shape[0]
    found = first < n  # (B, D): False for a bag without a kept entry
    widx = rows[np.minimum(first, n - 1)]  # (B, D): the weight row of each maximum
    out = _BagMax.apply(weight, (wrap(widx, weight.device), wrap(found, weight.device)))
    return (out, idx, seg, bags, keep, wrap(first, weight.device), None)


class _BagMax(Function):
    """embedding_bag 'max' on the CPU: weight (R, D) -> (B, D), out[b, d] =
    weight[widx[b, d], d] where found[b, d], else +0; parts = (widx (B, D) int64 the
    weight row of bag b's first maximal entry in column d, found (B, D) bool). One node,
    PyTorch's EmbeddingBagBackward0.
        d weight[r, d] = +0 + the sum over the bags b with widx[b, d] = r and found, in
                         bag order, of g[b, d]
    the composite's (gather's scatter into the rows, the row gather's index_add in entry
    order: a bag's entries follow those of the bags before it), by np.add.at in the same
    order (bit-identical); under create_graph a scatter_add of the masked g (linear in g:
    differentiates again)."""

    name = "embedding_bag"
    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx, weight, parts):
        widx, found = parts
        ctx.parts, ctx.weight_shape = parts, tuple(weight.shape)
        out = np.take_along_axis(weight._data, widx._data, axis=0)
        out[~found._data] = 0
        return wrap(out, weight.device)

    @staticmethod
    def backward(ctx, g):
        widx, found = ctx.parts
        if differentiable_formula():
            return zeros(ctx.weight_shape, dtype=g.dtype, device=g.device).scatter_add(
                0, widx, ew.where(found, g, 0.0)), None
        f = found._data
        gd = g._data
        dim = ctx.weight_shape[1]
        flat = (widx._data * dim + np.arange(dim))[f]  # (b, d) row-major: bag order
        dw = np.zeros(ctx.weight_shape, gd.dtype)
        np.add.at(dw.reshape(-1), flat, np.broadcast_to(gd, f.shape)[f])
        return wrap(dw, g.device), None
