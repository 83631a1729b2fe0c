"""PyTorch's stride rules for views, shared by the NumPy and Triton backends.

Pure functions of shapes and strides (tuples of ints). The strides may be in any unit
(elements on cuda, bytes on the CPU): every rule is linear in them; where a rule needs the
stride "one element" it takes it as ``one``. Only size-1 dims' strides depend on these
rules being PyTorch's (a size-1 dim's stride never moves the data), but ``stride()``
reports them, so both backends give PyTorch's values (docs/design.md: strides).
"""

from __future__ import annotations

import math

import numpy as np


def contiguous_strides(shape: tuple) -> tuple:
    """C-contiguous element strides of ``shape`` (a size-0 dim counted as 1, as PyTorch)."""
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def view_strides(old: tuple, old_st: tuple, new: tuple):
    """Element strides for viewing (old, old_st) as ``new`` without a copy (PyTorch's
    computeStride), or None when no view exists: each chunk of old dims that is contiguous
    in memory maps to new dims. An empty tensor gets ``new``'s contiguous strides."""
    if math.prod(old) == 0:
        return contiguous_strides(new)
    if not old:  # a 0-d tensor: every new dim has size 1 and stride 1
        return (1,) * len(new)
    new_st = [0] * len(new)
    view_d = len(new) - 1
    tensor_numel = 1
    view_numel = 1
    base = old_st[-1]  # stride of the innermost dim of the current chunk
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and old_st[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                new_st[view_d] = view_numel * base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = old_st[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_st)


def new_dim_stride(shape: tuple, strides: tuple, d: int, one: int):
    """The stride of a size-1 dim inserted before dim ``d`` of (shape, strides): PyTorch's
    unsqueeze (and indexing with None, an unsqueeze at that point of the key), size[d] *
    stride[d], or ``one`` (one element) past the last dim."""
    return shape[d] * strides[d] if d < len(shape) else one


def ellipsis_dims(ndim: int, key: tuple) -> int:
    """How many dims of an ``ndim``-d array the Ellipsis of a basic-indexing ``key`` (ints,
    slices, None, at most one Ellipsis) stands for: those no other entry indexes (None
    indexes none). Negative when the key indexes more dims than there are."""
    return ndim - sum(1 for k in key if k is not None and k is not Ellipsis)


def squeeze_geometry(shape: tuple, strides: tuple, dims) -> tuple:
    """(shape, strides) without the dims ``dims`` (all of size 1): PyTorch's squeeze, the
    other dims keep their strides (size-1 ones included)."""
    keep = [i for i in range(len(shape)) if i not in dims]
    return tuple(shape[i] for i in keep), tuple(strides[i] for i in keep)


def expand_strides(shape: tuple, strides: tuple, new: tuple):
    """Strides of (shape, strides) expanded to ``new`` (PyTorch's inferExpandGeometry), or
    None when a non-singleton size differs: a dim whose size stays keeps its stride (size-1
    dims included), an expanded one gets 0, and a new leading dim 0 when expanded, else
    (size 1) the next dim's size * stride (0 as the last dim). ``new`` has no -1 (the
    caller resolves it); fewer dims than ``shape`` give None too."""
    lead = len(new) - len(shape)
    if lead < 0:  # fewer dims than the array: not a broadcast
        return None
    out = [0] * len(new)
    for i in range(len(new) - 1, -1, -1):
        n = new[i]
        if i >= lead:
            size, st = shape[i - lead], strides[i - lead]
            if size == n:
                out[i] = st
            elif size != 1:
                return None
        elif n == 1 and i + 1 < len(new):
            out[i] = new[i + 1] * out[i + 1]
    return tuple(out)


def has_internal_overlap(shape: tuple, strides: tuple) -> bool:
    """Whether two different indices of (shape, strides) reach one memory element (an
    expanded dim, overlapping unfold windows, an as_strided view). Dims sorted by stride
    that each step past all the smaller ones cannot overlap (any dense or sliced layout);
    otherwise the offsets are counted (rare)."""
    reach = 0  # the common case first: dims already in that order from the last (row-major)
    for n, st in zip(reversed(shape), reversed(strides)):
        if n == 1:
            continue
        if n == 0:
            return False
        st = abs(st)
        if st <= reach:
            break
        reach += st * (n - 1)
    else:
        return False
    dims = sorted((abs(st), n) for n, st in zip(shape, strides) if n != 1)
    if not dims or any(n == 0 for _, n in dims):
        return False
    reach = 0  # the largest offset the dims seen so far reach
    for st, n in dims:
        if st <= reach:
            break
        reach += st * (n - 1)
    else:
        return False
    if any(st == 0 for st, _ in dims):
        return True
    offsets = np.zeros(1, dtype=np.int64)
    for st, n in dims:
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
    return np.unique(offsets).size < offsets.size
