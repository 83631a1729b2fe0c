"""F.pad's 'reflect', 'replicate' and 'circular' modes (called by tgrad/nn/_composite.py's
``pad``), with PyTorch's semantics and error texts. reflect / replicate: each padded dim is
one index_select of the input with source indices computed on the host, in one node
(IndexPad), so the gradient scatter-adds back onto the input positions that were copied
(reflected and replicated borders receive the sum of their copies), and double backward
works. circular: PyTorch's slice copies into an empty output (_circular; CopySlices nodes),
or index_selects where nothing is left to wrap.

Supported as PyTorch: len(pad) = 2 for 2-D/3-D input, 4 for 3-D/4-D, 6 for 4-D/5-D.
Per padded dim of size n with pads (l, r) (negative pads crop):
- reflect:   out[o] = in[reflect(o - l)], reflect(i) = |i| for i < 0, 2 (n - 1) - i past
  the end; needs l < n and r < n;
- replicate: out[o] = in[clip(o - l, 0, n - 1)];
- circular:  negative pads crop first, then out[o] = in[(o - l) mod m] on the cropped size
  m; needs l <= n and r <= n ("wrapping around more than once"), and the positive pads
  <= m (where PyTorch raises a memory-overlap error or returns undefined values).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy, pad_cpu_policy
from tgrad.autograd.function import Function, differentiable_formula, fw_level
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.backends import _numpy_pad as _np_pad
from tgrad.nn._piecewise import _Attach
from tgrad.ops._common import wrap
from tgrad.ops.creation import tensor
from tgrad.ops.elementwise import node_variant
from tgrad.ops.gathering import index_select
from tgrad.ops.index import add_at
from tgrad.tensor import Tensor

MODES = ("reflect", "replicate", "circular")
_DIMS = ("D", "H", "W")


def _unsupported(k: int, ndim: int) -> NotImplementedError:
    return NotImplementedError(
        f"Padding size {2 * k} is not supported for {ndim}D input tensor.\n"
        "Supported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_sizes(mode: str, x: Tensor, pads: list, k: int) -> None:
    shape = list(x.shape)
    batched = x.ndim == k + 2
    if mode != "circular" and any(s == 0 for s in shape[1 if batched else 0:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{shape}")
    for i, (lo, hi) in enumerate(pads):
        d = x.ndim - 1 - i
        if mode == "reflect" and (lo >= shape[d] or hi >= shape[d]):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {d} of input {shape}")
        if mode == "circular" and (lo > shape[d] or hi > shape[d]):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "circular":
        return
    ins = shape[x.ndim - k:]
    outs = [ins[j] + sum(pads[k - 1 - j]) for j in range(k)]
    if k == 1 and outs[0] < 1:
        raise RuntimeError(f"input (W: {ins[0]}) is too small. Calculated output W: {outs[0]}")
    if mode == "replicate" and k > 1 and min(outs) < 1:
        names = _DIMS[3 - k:]
        raise RuntimeError(
            "Calculated output " + " ".join(f"{n}: {o}" for n, o in zip(names, outs))
            + " must be >= 1 in every dimension (input "
            + ", ".join(f"{n}: {s}" for n, s in zip(names, ins)) + ")")


@autocast_policy(None, cpu=pad_cpu_policy)
def pad_nonconstant(input: Tensor, pad: list, mode: str,  # noqa: A002
                    value: float | None) -> Tensor:
    """``input`` padded in ``mode`` (see the module docstring); ``pad`` already checked to
    be ints of even length at most 2 input.ndim."""
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise _unsupported(k, input.ndim)
    pads = [(pad[2 * i], pad[2 * i + 1]) for i in range(k)]  # last dim first
    _check_sizes(mode, input, pads, k)
    # circular is PyTorch's composition of slice copies (CopySlices nodes) where the
    # cropped sizes leave something to wrap (_circular); reflect / replicate are one node
    # (IndexPad)
    if mode == "circular" and _wraps_once(input.shape, pads):
        if _fast(input) and _records_nothing(input):
            # no graph to build: the same values as _circular's copies, one gather
            return wrap(_np_pad.index_pad_fwd(input._data, _circular_steps(input.shape, pads)),
                        input.device)
        return _circular(input, pads)
    x, copied, steps = input, False, []
    for i, (lo, hi) in enumerate(pads):
        d = x.ndim - 1 - i
        n = x.shape[d]
        if mode == "circular" and n + lo + hi <= 0:  # cropped away: empty, as PyTorch
            x = x.narrow(d, 0, 0)
            continue
        if mode == "circular":  # crop first, then wrap on what is left
            start, stop = max(-lo, 0), n - max(-hi, 0)
            if start or stop != n:
                x = x.narrow(d, start, max(stop - start, 0))
            lo, hi, n = max(lo, 0), max(hi, 0), max(stop - start, 0)
            if lo > n or hi > n:  # PyTorch: a memory-overlap error or undefined values
                raise RuntimeError("Padding value causes wrapping around more than once.")
        out = n + lo + hi
        if out <= 0:
            idx = np.zeros(0, np.int64)
        elif mode == "circular":
            idx = (np.arange(out) - lo) % n
        else:
            idx = np.arange(out) - lo
            if mode == "reflect":
                idx = np.abs(idx)
                idx = np.where(idx > n - 1, 2 * (n - 1) - idx, idx)
            else:
                idx = np.clip(idx, 0, n - 1)
        if out == n and lo == 0:
            continue  # nothing to pad in this dim
        if mode != "circular":
            steps.append((d, n, idx))
            continue
        x = index_select(x, d, tensor(idx, dtype=dtypes.int64, device=x.device))
        copied = True
    if mode != "circular":
        return _INDEX_PAD[mode, k].apply(input, (tuple(steps), tuple(pad)))
    # a new tensor, never a view of the input; contiguous as PyTorch's (a crop of a dim
    # after another dim's wrap leaves a narrowed view of the wrapped copy)
    return x.contiguous() if copied else x.clone()


def _wraps_once(shape: tuple, pads: list) -> bool:
    """Whether every padded dim keeps m > 0 elements after its negative pads crop and its
    positive pads are at most m (the cases PyTorch's _pad_circular computes; the others
    are pad_nonconstant's loop: an empty result, or its error)."""
    for i, (lo, hi) in enumerate(pads):
        m = shape[len(shape) - 1 - i] - max(-lo, 0) - max(-hi, 0)
        if m <= 0 or max(lo, 0) > m or max(hi, 0) > m:
            return False
    return True


def _fast(t: Tensor) -> bool:
    """Whether padding runs on ``t``'s arrays (tgrad/backends/_numpy_pad.py): on the CPU."""
    return t.device.type == "cpu"


def _records_nothing(x: Tensor) -> bool:
    """Whether an op on ``x`` records no graph: no gradient wanted of x (or grad mode off)
    and no forward-AD level whose tangents would flow through it."""
    return fw_level() is None and not (x.requires_grad and is_grad_enabled())


def _circular_steps(shape: tuple, pads: list) -> tuple:
    """_circular as index steps (dim, n, idx) for _numpy_pad.index_pad_fwd, every padded
    dim (last first): the crop then the wrap, out[o] = in[s + (o - l) mod m] with s the
    left crop, m the cropped size and l the positive left pad (_wraps_once: m > 0)."""
    steps = []
    for i, (lo, hi) in enumerate(pads):
        d = len(shape) - 1 - i
        n = shape[d]
        start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        lo, hi = max(lo, 0), max(hi, 0)
        steps.append((d, n, start + (np.arange(m + lo + hi, dtype=np.int64) - lo) % m))
    return tuple(steps)


def _circular(x: Tensor, pads: list) -> Tensor:
    """Circular padding as PyTorch's _pad_circular builds it: an empty output (x.ndim dims,
    padded dim d of size n + l + r), x's cropped interior copied into its middle, then per
    padded dim (last first) the left pad copied from the output's own last l columns before
    the right pad and the right pad from its first r columns after the left pad (corners
    written again by later dims): in-place copies into narrow views, so the graph is
    PyTorch's CopySlices over SliceBackward0s and dx gathers each copy back."""
    nd = x.ndim
    out_shape = list(x.shape)
    for i, (lo, hi) in enumerate(pads):
        out_shape[nd - 1 - i] += lo + hi
    out = x.new_empty(out_shape)
    out_slice, in_slice = out, x
    for i, (lo, hi) in enumerate(pads):
        d = nd - 1 - i
        out_slice = out_slice.narrow(d, max(lo, 0), out_shape[d] - max(lo, 0) - max(hi, 0))
        in_slice = in_slice.narrow(d, max(-lo, 0), x.shape[d] - max(-lo, 0) - max(-hi, 0))
    out_slice.copy_(in_slice)
    for i, (lo, hi) in enumerate(pads):
        d = nd - 1 - i
        n = out_shape[d]
        if lo > 0:
            out.narrow(d, 0, lo).copy_(out.narrow(d, n - lo - max(hi, 0), lo))
        if hi > 0:
            out.narrow(d, n - hi, hi).copy_(out.narrow(d, max(lo, 0), hi))
    return out


class IndexPad(Function):
    """reflect / replicate padding of the last k dims: ``spec`` = (steps, pad), steps a
    (dim, input size, source index (out,)) per padded dim (host NumPy; see the module
    docstring): y = x index-selected along each step's dim in turn. One node, PyTorch's
    ReflectionPad{1,2,3}DBackward0 / ReplicationPad{1,2,3}DBackward0 (by k; ``_INDEX_PAD``;
    _saved_padding the pad as given). dx = the adjoint, steps in reverse: g index-added
    back at each step's source positions (a border receives the sum of its copies; an
    index add, whose backward is a gather: differentiates again), attached to x's graph
    (_piecewise._Attach: d(dx)/dx = 0, PyTorch's double backward). Without a step the
    result is a copy of x (never a view)."""

    name = "reflection_pad"
    node_name = "ReflectionPad2DBackward0"
    saved_attributes = {"_saved_padding": lambda node: list(node.spec[1])}

    @staticmethod
    def forward(ctx, x, spec):
        ctx.spec = spec
        ctx.save_for_backward(x)
        ctx.indices = None
        if not spec[0]:
            return x.clone()
        if _fast(x):  # the same copies on the arrays (_numpy_pad)
            return wrap(_np_pad.index_pad_fwd(x._data, spec[0]), x.device)
        y = x
        for (d, _, _), idx in zip(spec[0], _indices(ctx, x.device)):
            y = index_select(y, d, idx)
        return y

    @staticmethod
    def backward(ctx, g):
        steps = ctx.spec[0]
        if steps and not differentiable_formula() and _fast(g) \
                and g.dtype.np in _np_pad.FAST_DTYPES:  # the same sums (_numpy_pad)
            return wrap(_np_pad.index_pad_bwd(g._data, steps), g.device), None
        (x,) = ctx.saved_tensors
        for (d, n, _), idx in zip(reversed(steps), reversed(_indices(ctx, g.device))):
            g = add_at(g, d, n, idx)
        return _Attach.apply(g, x), None


def _indices(ctx, device) -> list:
    """IndexPad's source indices as int64 tensors on ``device``, made once (the composite
    forward selects, its backward adds back at them)."""
    if ctx.indices is None:
        ctx.indices = [tensor(idx, dtype=dtypes.int64, device=device)
                       for _, _, idx in ctx.spec[0]]
    return ctx.indices


def _index_pad_classes() -> dict:
    out = {}
    for mode, base in (("reflect", "ReflectionPad"), ("replicate", "ReplicationPad")):
        for k in (1, 2, 3):
            out[mode, k] = node_variant(IndexPad, f"{base}{k}DBackward0",
                                        saved_attributes=IndexPad.saved_attributes,
                                        name=f"{base.lower()[:-3]}_pad{k}d")
    return out


_INDEX_PAD = _index_pad_classes()
