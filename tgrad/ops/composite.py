"""Ops built from other ops, with no primitive (and so no kernel) of their own: each runs on
every backend wherever its parts do, and differentiates through them.

- ``frac`` = x - trunc(x);
- masking: ``masked_fill``/``masked_fill_`` (one MaskedFill node) and ``tril``/``triu`` (and
  their in-place forms) are ``where`` over a bool mask, so their gradients are exact zeros
  where the mask closes;
  ``masked_select`` is boolean-mask indexing;
- copies: ``repeat``/``tile`` (expand, then one copying reshape; the gradient sums the
  copies back), ``flip`` (one Flip node: index_select with reversed positions), ``roll``
  (cat of slices);
- arithmetic: ``lerp`` (PyTorch's two-sided formula; its own nodes with PyTorch's
  gradient formulas), ``addcmul``, ``addcdiv``, float16/bfloat16 computed in float32 and
  rounded once (``widen_halves``);
- stacking: ``hstack``, ``vstack``, ``atleast_1d/2d``, ``meshgrid`` (expanded views);
- comparisons: ``isclose``, ``allclose``, ``equal``, ``logical_xor``, ``count_nonzero``
  (not differentiable);
- PyTorch's other names for ops tgrad has (``absolute``, ``greater``, ``swapdims``,
  ``clamp_min``...).

Gathering and scattering (index_select, gather, scatter...) are in gathering.py.

Their nodes carry the parts' names (``WhereBackward0``, ``IndexBackward0``), not PyTorch's
(``GatherBackward0``), except masked_fill's and flip's: one Function each, of PyTorch's
node name (MaskedFillBackward0/1, FlipBackward0), its backward a formula of tgrad ops.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import no_grad
from tgrad.backends import _numpy_binary as _np_bin
from tgrad.backends import _numpy_layout as _np_layout
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    backend_of,
    broadcast_or_raise,
    check_operands,
    fresh,
    int_tuple,
    register_op,
    require_tensor,
    rounded_to,
    sizes_keyword,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange
from tgrad.ops.gathering import index_select
from tgrad.ops.index import (
    AdvancedIndex,
    IndexAdd,
    _index_fwd,
    check_masks,
    normalize_key,
)
from tgrad.ops.inplace import alias_closure, apply_inplace, inplace_method, overlapping
from tgrad.ops.reduce import sum_to
from tgrad.ops.shape import _promoted, cat, narrow, transpose
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["masked_fill", "tril", "triu", "isclose",
           "allclose", "equal", "logical_xor", "absolute", "greater", "greater_equal", "less",
           "less_equal", "not_equal", "swapdims", "numel",
           "tile", "flip", "frac", "roll", "lerp", "addcmul", "addcdiv", "clamp_min",
           "clamp_max", "hstack", "vstack", "atleast_1d", "atleast_2d", "meshgrid",
           "masked_select", "count_nonzero"]


# ------------------------------------------------------------------------------ masking
def _fill_value(op: str, input: Tensor, value):  # noqa: A002
    """``value`` as ``where`` takes it so the result keeps ``input``'s dtype: a Python number
    (cast to int/bool for such inputs, as PyTorch casts it) or a 0-d tensor of input's dtype
    and device (its gradient flows back through the cast)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        if value.dtype.is_complex and not input.dtype.is_complex:
            # PyTorch reads the value as a number: a nonzero imaginary part raises (a bool
            # input takes any value), 1+0j is 1 (no "discards the imaginary part" warning)
            dtypes.check_value_fits(op, value.item(), input.dtype)
            value = value != 0 if input.dtype is dtypes.bool_ else value.real
        else:
            dtypes.check_tensor_value_fits(op, value, input.dtype)
        if value.dtype is not input.dtype or value.device != input.device:
            value = value.to(device=input.device, dtype=input.dtype)
        return value
    dtypes.check_value_fits(op, value, input.dtype)  # masked_fill(-1e9) of a half raises
    if input.dtype is dtypes.bool_:
        return bool(value)
    if isinstance(value, (complex, np.complexfloating)) and not input.dtype.is_complex:
        value = value.real  # 1+0j (a nonzero imaginary part was refused above)
    if not input.dtype.is_floating_point:
        return complex(value) if input.dtype.is_complex else int(value)
    return float(value)


def _where_fill(mask: Tensor, x: Tensor, fill, fill_where: bool) -> Tensor:
    """where(mask, fill, x) (``fill_where``) or where(mask, x, fill), C-contiguous, as
    PyTorch's masked_fill / tril, whatever x's layout. ``fill``: a number of x's dtype
    (promoting to it) or a 0-d tensor. A number with a mask on x's device (ew.where's checks
    then all hold) is selected by the backend directly, without ew.where's node."""
    data = x if x.is_contiguous() else x.contiguous()
    if isinstance(fill, Tensor) or mask._device is not x._device:
        return ew.where(mask, fill, data) if fill_where else ew.where(mask, data, fill)
    be = backend_of(x)
    value = ew._operand(fill, x.dtype, be, "where")
    return wrap(be.where(mask._data, value, data._data) if fill_where
                else be.where(mask._data, data._data, value), x.device)


def _check_mask(op: str, mask) -> None:
    # PyTorch's TypeError for a non-tensor mask (the in-place methods take it first)
    require_tensor(op, mask, "mask", 1 if op.endswith("_") else 2)
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.name}")


class MaskedFill(Function):
    """y = where(mask, value, x): one node, PyTorch's MaskedFillBackward0 (a number value;
    MaskedFillBackward1, ``MaskedFillTensor``, for a 0-d tensor value, whose edges are
    (self, value)); the bool mask has no edge. Shapes: x (...), mask broadcasting with it,
    y of the broadcast shape, value a number or a 0-d tensor of x's dtype.
    dx = g where not mask (summed back to x's shape where mask enlarged it);
    dvalue = sum of g where mask. Both are where/sum of g: the backward differentiates
    again (d(dx)/dg and d(dvalue)/dg the same masking; nothing depends on x)."""

    name = "masked_fill"
    node_name = "MaskedFillBackward0"
    hidden_edges = (1,)
    saved_attributes = {"_saved_mask": 0}

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        ctx.x_shape = x.shape
        return _where_fill(mask, x, value, True)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        need_x, _, need_value = ctx.needs_input_grad
        gx = sum_to(ew.where(mask, 0.0, g), ctx.x_shape) if need_x else None
        gv = ew.where(mask, g, 0.0).sum() if need_value else None
        return gx, None, gv


register_op(MaskedFill)
MaskedFillTensor = ew.node_variant(MaskedFill, "MaskedFillBackward1",
                                   saved_attributes=MaskedFill.saved_attributes)


def _masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """MaskedFill (a number value) or MaskedFillTensor (a 0-d tensor value)."""
    cls = MaskedFillTensor if isinstance(value, Tensor) else MaskedFill
    return cls.apply(x, mask, value)


@tensor_method("masked_fill")
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:  # noqa: A002
    """``value`` where ``mask`` holds, else ``input`` (mask and input broadcast); input's dtype.
    d input = g where not mask;  d value (a 0-d tensor) = sum of g where mask (MaskedFill)."""
    require_tensor("masked_fill", input)
    _check_mask("masked_fill", mask)
    dtypes.refuse_float8("masked_fill", input.dtype)
    broadcast_or_raise("masked_fill", mask.shape, input.shape)  # PyTorch's text (not where's)
    return _masked_fill(input, mask, _fill_value("masked_fill", input, value))


@tensor_method("masked_fill_")
def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    _check_mask("masked_fill_", mask)
    broadcast_or_raise("masked_fill_", self.shape, mask.shape)  # PyTorch's text and order
    value = _fill_value("masked_fill_", self, value)
    if overlapping(self):  # an expanded tensor (rare): every alias of a filled element too
        mask = alias_closure(self, mask)  # (PyTorch's result; with grad tgrad refuses)
        return apply_inplace(self, "masked_fill_", lambda x, v: _masked_fill(x, mask, v), value,
                             overlap_ok=True)
    return apply_inplace(self, "masked_fill_", lambda x, v: _masked_fill(x, mask, v), value)


class Triangle(Function):
    """y = where(keep, x, 0): tril / triu, one node, PyTorch's TrilBackward0 (TriuBackward0:
    ``Triu``); keep is the (rows, cols) bool mask of the kept triangle, broadcast over
    x's batch dims. dx = where(keep, g, 0) (g's own triangle: PyTorch's g.tril(diagonal));
    the backward is a where of g, so it differentiates again. Saves the mask, as the where
    it replaces did."""

    name = "tril"
    node_name = "TrilBackward0"
    saved_attributes = {"_saved_diagonal": "diagonal"}

    @staticmethod
    def forward(ctx, x, spec):
        # spec: (keep, diagonal, fill), no tensor argument (the node's edge is x's only)
        keep, ctx.diagonal, fill = spec
        ctx.keep = keep
        return _where_fill(keep, x, fill, False)

    @staticmethod
    def backward(ctx, g):
        return ew.where(ctx.keep, g, 0.0), None


Triu = ew.node_variant(Triangle, "TriuBackward0", name="triu",
                       saved_attributes=Triangle.saved_attributes)


def _triangle(op: str, input: Tensor, diagonal: int, lower: bool) -> Tensor:  # noqa: A002
    """``input`` with the elements above (tril) or below (triu) the ``diagonal``-th diagonal
    of its last two dims set to 0: the mask is column - row <= diagonal (tril) or >= (triu),
    one (rows, cols) bool tensor broadcast over the batch dims."""
    diagonal = _int_arg(op, "diagonal", diagonal, 2)  # (a float one was compared as it is)
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    rows, cols = input.shape[-2:]
    offset = arange(cols, device=input.device) - arange(rows, device=input.device).unsqueeze(1)
    keep = ew.le(offset, diagonal) if lower else ew.ge(offset, diagonal)
    # (a C-contiguous result, as PyTorch's, whatever input's layout)
    return (Triangle if lower else Triu).apply(
        input, (keep, diagonal, False if input.dtype is dtypes.bool_ else 0))


@tensor_method("tril")
def tril(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The lower triangle (on and below diagonal ``diagonal``) of the last two dims."""
    require_tensor("tril", input)
    return _triangle("tril", input, diagonal, True)


@tensor_method("triu")
def triu(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The upper triangle (on and above diagonal ``diagonal``) of the last two dims."""
    require_tensor("triu", input)
    return _triangle("triu", input, diagonal, False)


inplace_method("tril_", lambda x, diagonal=0: _triangle("tril_", x, diagonal, True))
inplace_method("triu_", lambda x, diagonal=0: _triangle("triu_", x, diagonal, False))


@tensor_method("frac")
def frac(input: Tensor) -> Tensor:  # noqa: A002
    """x - trunc(x) (the sign of x kept);  dx = g."""
    # a sparse COO tensor: its own zero-preserving op (coalesced first). Tested up front,
    # not in the shared except form (_common.route_sparse): the body below runs on the
    # sparse operators without raising (an uncoalesced s - trunc(s)). One attribute read.
    require_tensor("frac", input)
    if input._sparse:
        return input.frac()
    if not input.dtype.is_floating_point:
        raise NotImplementedError(  # PyTorch's type and kernel text, after tgrad's words
            f"frac: not implemented for {input.dtype.name} tensors; it takes floating point "
            f"tensors, as in PyTorch (\"frac_cpu\" not implemented for "
            f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}')")
    return input - ew.trunc(input)


inplace_method("frac_", frac)


@tensor_method("sum_to_size")
def sum_to_size(self: Tensor, *size) -> Tensor:
    """``self`` summed over dims so that it has ``size`` (which must expand to self.shape)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    lead = self.ndim - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    return sum_to(self, size)


# ------------------------------------------------------------------------------ copies
@tensor_method("repeat")
def repeat(input: Tensor, *sizes, repeats=None) -> Tensor:  # noqa: A002
    """``input`` tiled ``sizes[d]`` times along each dim d (leading dims added as needed;
    ints, one sequence or the keyword ``repeats``; ``()`` for a 0-d input):
    y.shape[d] = sizes[d] * x.shape[d];  dx = the sum of the gradient over the copies."""
    sizes = sizes_keyword("repeat", "repeats", sizes, repeats)
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(_int_arg("repeat", "repeats", r) for r in sizes)  # (no floats: TypeError)
    if len(sizes) < input.ndim:
        raise RuntimeError(f"repeat: Number of dimensions of repeat dims ({len(sizes)}) can "
                           f"not be smaller than number of dimensions of tensor ({input.ndim})")
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: Trying to create tensor with negative dimension: "
                           f"{list(sizes)}")
    return Repeat.apply(input, sizes)


class Repeat(Function):
    """y = x tiled ``repeats[d]`` times along each dim d (x's shape s padded with leading 1s
    to len(repeats)): one node, PyTorch's RepeatBackward0 (edge x). The forward views s as
    (1, s0, 1, s1, ...), expands it to (r0, s0, r1, s1, ...) and reshapes to (r0 s0, ...),
    a new tensor. dx = g viewed as (r0, s0, r1, s1, ...), summed over the r dims, in x's
    shape (tgrad ops: it differentiates again)."""

    name = "repeat"
    node_name = "RepeatBackward0"
    saved_attributes = {"_saved_repeats": "repeats", "_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, repeats):
        ctx.repeats, ctx.shape = repeats, x.shape
        shape = (1,) * (len(repeats) - x.ndim) + x.shape
        spread = [n for s in shape for n in (1, s)]
        ctx.wide = [n for r, s in zip(repeats, shape) for n in (r, s)]
        out = x.reshape(spread).expand(ctx.wide).reshape(
            [r * s for r, s in zip(repeats, shape)])
        return own_copy(out, x)

    @staticmethod
    def backward(ctx, g):
        if not ctx.repeats:  # (a 0-d x repeated ()): g itself
            return g.reshape(ctx.shape), None
        summed = g.reshape(ctx.wide).sum(tuple(range(0, len(ctx.wide), 2)))
        return summed.reshape(ctx.shape), None


def own_copy(out: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """``out`` as a tensor of its own: repeat/tile/repeat_interleave always return new memory
    in PyTorch, but their reshape of an expand is a view of ``input`` when nothing repeats
    (or only size-1 dims do)."""
    return out.clone() if out._storage is input._storage else out


def tile(input: Tensor, dims) -> Tensor:  # noqa: A002
    """``repeat`` with ``dims`` padded with leading 1s to input's number of dims."""
    require_tensor("tile", input)
    dims = int_tuple("tile", "dims", dims, 2)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


tensor_method("tile")(lambda self, *sizes, dims=None: tile(self, dims if dims is not None else (
    sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes)))


class Flip(Function):
    """y = x reversed along ``dims`` (wrapped, distinct; a copy, x itself copied for none or
    a 0-d x): one node, PyTorch's FlipBackward0. Its own inverse and linear:
    dx = flip(g, dims) (differentiates again through Flip)."""

    name = "flip"
    node_name = "FlipBackward0"
    saved_attributes = {"_saved_dims": "dims"}

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        if x.ndim == 0 or not dims:
            return x.clone()
        if x.device.type == "cpu":  # the reversed view, copied row-major (as the gathers)
            return wrap(np.flip(x._data, dims).copy(order="C"), x.device)
        out = x
        for d in dims:  # one index_select per dim (every backend's gather)
            out = index_select(out, d, arange(x.shape[d] - 1, -1, -1, device=x.device))
        return out

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims), None


register_op(Flip)


def flip(input: Tensor, dims) -> Tensor:  # noqa: A002
    """A copy of ``input`` with the order of elements reversed along ``dims`` (Flip)."""
    require_tensor("flip", input)
    dtypes.refuse_float8("flip_cpu", input.dtype)
    dims = int_tuple("flip", "dims", dims, 2)  # (0-d integer tensors taken, bools refused)
    wrapped = tuple(_wrap_dim(d, input.ndim, "flip") for d in dims)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"flip: dims {list(dims)} has a dim appearing more than once")
    return Flip.apply(input, wrapped)


@tensor_method("flip")
def _flip_method(self: Tensor, *dims, **kwargs) -> Tensor:
    """``x.flip(0, 1)``, ``x.flip((0, 1))`` or ``x.flip(dims=(0, 1))`` (PyTorch's forms)."""
    if "dims" in kwargs and not dims:
        return flip(self, kwargs.pop("dims"), **kwargs)
    if not dims or kwargs:
        raise TypeError(f"flip() takes dims as ints, one sequence or dims=... (got "
                        f"{len(dims)} positional and {sorted(kwargs)} keyword arguments)")
    return flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


class Roll(Function):
    """y = x with its elements shifted by ``shifts`` along ``dims`` (wrapping around; dims
    () : over the flattened x, shape kept): one node, PyTorch's RollBackward0 (edge x).
        dx = roll(g, -shifts, dims)   (the inverse permutation: a roll again, so it
    differentiates again). The forward is cats of two narrows per rolled dim, a new
    C-contiguous tensor."""

    name = "roll"
    node_name = "RollBackward0"
    saved_attributes = {"_saved_dims": "dims", "_saved_shifts": "shifts"}

    @staticmethod
    def forward(ctx, x, shifts, dims, wrapped):
        ctx.shifts, ctx.dims = shifts, dims
        if x._device.type == "cpu":  # the composition's copies on the arrays at once
            a = x._data if dims else x._data.reshape(-1)
            ks = _np_layout.roll_shifts(a.shape, shifts, wrapped if dims else (0,))
            if ks:  # (nothing moves: x's clone below, in x's layout)
                return wrap(_np_layout.roll(a, ks).reshape(x.shape), x._device)
        return _rolled(x, shifts, wrapped) if dims else \
            fresh(_rolled(x.flatten(), shifts, (0,)).reshape(x.shape))

    @staticmethod
    def backward(ctx, g):
        back = tuple(-s for s in ctx.shifts)
        return roll(g, back, ctx.dims if ctx.dims else None), None, None, None


def _rolled(x: Tensor, shifts: tuple, dims: tuple) -> Tensor:
    """x rolled by ``shifts`` along the wrapped ``dims``: per dim the last k = shift mod n
    elements moved to the front (a cat of two narrows); x's clone when nothing moves."""
    out = x
    for shift, d in zip(shifts, dims):
        n = x.shape[d] if x.ndim else 1
        k = shift % n if n else 0
        if k:
            out = cat([narrow(out, d, n - k, k), narrow(out, d, 0, n - k)], d)
    return out if out is not x else x.clone()


@tensor_method("roll")
def roll(input: Tensor, shifts, dims=None) -> Tensor:  # noqa: A002
    """A copy with the elements shifted by ``shifts`` along ``dims`` (wrapping around);
    without dims, over the flattened tensor (shape kept). One RollBackward0 node."""
    require_tensor("roll", input)
    shifts = int_tuple("roll", "shifts", shifts, 2)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts {list(shifts)} need dims when there is more "
                               f"than one")
        return Roll.apply(input, shifts, (), ())
    dims = int_tuple("roll", "dims", dims, 3)  # (0-d integer tensors taken, bools refused)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims: {len(dims)}")
    if input.ndim == 0 and dims:  # PyTorch: a 0-d tensor has no dim to roll along
        raise IndexError(f"roll: Dimension specified as {dims[0]} but tensor has no "
                         f"dimensions")
    wrapped = tuple(_wrap_dim(d, input.ndim, "roll") for d in dims)
    return Roll.apply(input, shifts, dims, wrapped)


def _lerp_value(input: Tensor, end: Tensor, weight) -> Tensor:  # noqa: A002
    """input + weight (end - input), as PyTorch evaluates it: from ``end`` back when
    |weight| >= 0.5 (exact at weight 1); a tensor weight picks the branch per element (a
    complex one by |weight|). float16/bfloat16 computed in float32, rounded once."""
    (input, end, weight), half = widen_halves(input, end, weight)  # noqa: A001
    diff = end - input
    if isinstance(weight, Tensor):
        low = ew.lt(weight.abs(), 0.5)
        out = ew.where(low, input + weight * diff, end - diff * (1.0 - weight))
    else:
        out = input + diff * weight if abs(weight) < 0.5 else end - diff * (1.0 - weight)
    return rounded_to(out, half)


def _np_lerp(input: Tensor, end: Tensor, weight: Tensor) -> bool:  # noqa: A002
    """Whether lerp's three tensors are C-contiguous CPU float32/float64 of one dtype, whose
    forward and backward may run _numpy_binary's steps (the composition's, the same bits,
    C-contiguous results as the composition's)."""
    dt = input.dtype
    return input._device.type == "cpu" and end._device.type == "cpu" \
        and weight._device.type == "cpu" and end.dtype is dt and weight.dtype is dt \
        and _np_bin.fast_dtype(dt.np) and _np_bin.c_order(input._data, end._data, weight._data)


class LerpScalar(Function):
    """y = lerp(input, end, w) for a Python number w;  d input = g (1 - conj(w)),
    d end = g conj(w) (PyTorch's formulas: w = 0 with an infinite g gives d input = inf)."""

    name = "lerp"
    node_name = "LerpBackward0"

    @staticmethod
    def forward(ctx, input, end, weight):  # noqa: A002
        ctx.weight = weight
        return _lerp_value(input, end, weight)

    @staticmethod
    def backward(ctx, g):
        w = ctx.weight.conjugate()
        return g * (1 - w), g * w, None


class LerpTensor(Function):
    """y = lerp(input, end, weight) for a tensor weight (all broadcast);  d input =
    g conj(1 - weight), d end = g conj(weight), d weight = g conj(end - input) (PyTorch's
    formulas; broadcast-shaped gradients are summed to each input's shape by the engine)."""

    name = "lerp_tensor"
    node_name = "LerpBackward1"

    @staticmethod
    def forward(ctx, input, end, weight):  # noqa: A002
        need_i, need_e, need_w = ctx.needs_input_grad
        ctx.dtype = input.dtype
        # weight for input's or end's gradient, input and end for weight's: saved only when
        # read (PyTorch's: no version error for one that no gradient reads)
        ctx.save_for_backward(input if need_w else None, end if need_w else None,
                              weight if need_i or need_e else None)
        ctx.c_order = _np_lerp(input, end, weight)
        if ctx.c_order:  # the same steps on the arrays (_numpy_binary)
            return wrap(_np_bin.lerp(input._data, end._data, weight._data), input.device)
        return _lerp_value(input, end, weight)

    @staticmethod
    def backward(ctx, g):
        input, end, weight = ctx.saved_tensors  # noqa: A001
        need_i, need_e, need_w = ctx.needs_input_grad
        if not differentiable_formula() and g._device.type == "cpu" \
                and g.dtype is ctx.dtype and _np_bin.fast_dtype(g.dtype.np) \
                and _np_bin.c_order(g._data) and ctx.c_order:
            w = weight._data if need_i or need_e else None
            gi, ge, gw = _np_bin.lerp_grads(g._data, input._data if need_w else None,
                                            end._data if need_w else None, w)
            dev = g.device
            return (wrap(gi, dev) if need_i else None, wrap(ge, dev) if need_e else None,
                    wrap(gw, dev) if need_w else None)
        return (g * (1 - weight).conj() if need_i else None,
                g * weight.conj() if need_e else None,
                g * (end - input).conj() if need_w else None)


@tensor_method("lerp")
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:  # noqa: A002
    """input + weight (end - input), as PyTorch evaluates it: from ``end`` back when
    |weight| >= 0.5 (exact at weight 1);  d input = g conj(1 - w), d end = g conj(w),
    d w = g conj(end - input), PyTorch's formulas (nodes LerpBackward0 for a number weight,
    LerpBackward1 for a tensor). Floating and complex tensors (PyTorch's lerp kernels; a
    complex weight's branch by |weight|); integer ends with a 0-d floating or complex weight
    tensor are promoted with it first, as PyTorch's result_type."""
    require_tensor("lerp", input)
    require_tensor("lerp", end, "end", 2)
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype is not input.dtype and (name == "end" or t.ndim):
            raise RuntimeError(f"lerp: expected dtype {input.dtype.name} for `{name}` but got "
                               f"dtype {t.dtype.name}")
    if isinstance(weight, Tensor) and weight.ndim == 0 and not (
            input.dtype.is_floating_point or input.dtype.is_complex):
        # integer ends with a 0-d floating weight: PyTorch promotes all three first (the
        # ends to the default float dtype, as result_type's 0-d rule gives)
        promoted = dtypes.result_type(input, end, weight)
        if promoted.is_floating_point or promoted.is_complex:
            input, end = input.to(promoted), end.to(promoted)  # noqa: A001
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f"lerp: \"{kernel}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'; lerp takes "
                                  f"floating point or complex tensors")
    if isinstance(weight, Tensor):
        if weight.dtype is dtypes.bool_:  # (a 0-d one: PyTorch reads it as its number)
            weight = weight.to(input.dtype)
        return LerpTensor.apply(input, end, weight)
    if isinstance(weight, (complex, np.complexfloating)) and not input.dtype.is_complex:
        dtypes.check_value_fits("lerp", weight, input.dtype)  # PyTorch's error: 0.5j
        weight = weight.real  # (a zero imaginary part converts)
    return LerpScalar.apply(input, end, weight)


@tensor_method("addcmul")
@autocast_policy("promote", cpu=None)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    """input + (value * tensor1) * tensor2 (broadcast)."""
    _three_tensors("addcmul", input, tensor1, tensor2)
    value = _scalar_like("addcmul", value, input, tensor1, tensor2)
    # all three promoted at once, as PyTorch (a uint8 product in a float input's dtype: no
    # wrap-around, no rounding in a narrower dtype)
    (input, tensor1, tensor2), half = widen_halves(  # noqa: A001
        *_promoted([input, tensor1, tensor2]))
    # (value tensor1) tensor2, in this order as PyTorch's kernel: value * t1 may overflow
    prod = (tensor1 if value == 1 else tensor1 * value) * tensor2
    return rounded_to(input + prod, half)


def _three_tensors(op: str, input, tensor1, tensor2) -> None:  # noqa: A002
    """PyTorch's TypeError unless input, tensor1 and tensor2 are all tensors."""
    for pos, (name, v) in enumerate((("input", input), ("tensor1", tensor1),
                                     ("tensor2", tensor2)), 1):
        require_tensor(op, v, name, pos)


def _scalar_like(op: str, value, *tensors):
    """``value`` cast as PyTorch casts it to the result dtype: its checked conversion (into
    float32, the opmath type, for halves: "value cannot be converted to type ... without
    overflow" for NaN/inf/-1.5 into an integer dtype or a complex number into a real one),
    then truncated to an int for integer operands; no bool kernel (PyTorch's
    NotImplementedError)."""
    dt = dtypes.result_type(*tensors)
    if dt is dtypes.bool_:
        raise NotImplementedError(f"{op}: \"{op}_cpu_out\" not implemented for 'Bool' (as in "
                                  f"PyTorch); convert the tensors first, e.g. input.int()")
    dtypes.check_value_fits(op, value, dtypes.float32 if dt.itemsize == 2
                            and dt.is_floating_point else dt)
    if isinstance(value, complex) and not dt.is_complex:
        value = value.real  # a zero imaginary part (check_value_fits refused any other)
    if dt.is_floating_point or dt.is_complex:
        return value
    return int(value)


@tensor_method("addcdiv")
@autocast_policy("promote", cpu=None)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    """input + (value * tensor1) / tensor2 (broadcast; integer division is refused)."""
    _three_tensors("addcdiv", input, tensor1, tensor2)
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point \
            and not (tensor1.dtype.is_complex or tensor2.dtype.is_complex):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 "
                           "and tensor2. Use true_divide or floor_divide instead.")
    value = _scalar_like("addcdiv", value, input, tensor1, tensor2)
    (input, tensor1, tensor2), half = widen_halves(  # noqa: A001
        *_promoted([input, tensor1, tensor2]))  # (as addcmul's)
    # (value tensor1) / tensor2, in this order as PyTorch's kernel
    q = (tensor1 if value == 1 else tensor1 * value) / tensor2
    return rounded_to(input + q, half)


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """clamp(input, min=min)."""
    return ew.clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """clamp(input, max=max)."""
    return ew.clamp(input, max=max)


tensor_method("clamp_min")(clamp_min)
tensor_method("clamp_max")(clamp_max)


def one_or_tuple(tensors: tuple, out: list):
    """The atleast_nd result: one tensor for one tensor argument, else a tuple (also for a
    sequence of one tensor, as PyTorch's)."""
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d: shape (1,)); one tensor in, one out."""
    out = [t.reshape(1) if t.ndim == 0 else t for t in _tensor_args("atleast_1d", tensors)]
    return one_or_tuple(tensors, out)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (0-d: (1, 1); 1-D (n,): (1, n))."""
    out = [t.reshape(1, -1) if t.ndim < 2 else t for t in _tensor_args("atleast_2d", tensors)]
    return one_or_tuple(tensors, out)


def _tensor_args(op: str, tensors) -> list:
    """The tensors given as separate arguments or as one sequence; anything else is
    PyTorch's TypeError ('expected Tensor as element 1 in argument 0, but got int')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def hstack(tensors) -> Tensor:
    """cat along dim 1 (dim 0 for 1-D tensors)."""
    from tgrad.ops.layout import _nonempty
    ts = [atleast_1d(t) for t in _nonempty("hstack", tensors)]
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """cat along dim 0 of the tensors made at least 2-D."""
    from tgrad.ops.layout import _nonempty
    return cat([atleast_2d(t) for t in _nonempty("vstack", tensors)], 0)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-D (or 0-d) tensors, as expanded views: 'ij' (PyTorch's
    default: grid k varies along dim k) or 'xy' (the first two dims of every grid swapped,
    NumPy's default)."""
    ts = _tensor_args("meshgrid", tensors)
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts[1:]:
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(f"meshgrid expects all tensors to have the same dtype (got "
                               f"{ts[0].dtype.name} and {t.dtype.name}); cast them with .to()")
        if t.device != ts[0].device:
            raise RuntimeError(f"meshgrid expects all tensors to have the same device (got "
                               f"{ts[0].device} and {t.device})")
    if indexing is None:
        import warnings
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                      "the indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", "
                           f"but received: {indexing}")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t.ndim}D")
    ts = list(ts)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)  # (a 0-d tensor counts as 1-D of size 1)
    # each input viewed straight to its grid's rank (one ViewBackward0, PyTorch's graph:
    # no view to 1-D first), then expanded
    grids = [t.reshape([-1 if i == k else 1 for i in range(len(ts))]).expand(shape)
             for k, t in enumerate(ts)]
    if swap:  # 'xy' is 'ij' of the first two inputs swapped, outputs swapped back
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


class _MaskedSelect(AdvancedIndex):
    """y = x broadcast to ``shape``, read where the mask (the key) holds, as a 1-D tensor:
    one node, PyTorch's MaskedSelectBackward0 (edge: x, not its expansion).
        dx = sum_to(zeros(shape) with g written where the mask holds, x.shape)"""

    name = "masked_select"
    node_name = "MaskedSelectBackward0"
    saved_attributes = {}

    @staticmethod
    def forward(ctx, x, key, shape):
        ctx.x_shape = x.shape
        src = x if tuple(x.shape) == tuple(shape) else x.expand(shape)
        return wrap(_index_fwd(ctx, src, key, "gather"), x.device)

    @staticmethod
    def backward(ctx, g):
        return sum_to(IndexAdd.apply(g, ctx.key, ctx.shape), ctx.x_shape), None, None


register_op(_MaskedSelect)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """The elements of input (broadcast with mask) where mask holds, as a 1-D tensor."""
    _check_mask("masked_select", mask)
    # PyTorch's "The size of tensor a (mask) must match the size of tensor b (input) ..."
    shape = broadcast_or_raise("masked_select", mask.shape, input.shape)
    key, _ = normalize_key((mask.expand(shape),), input.device, len(shape))
    check_masks(key, shape)
    return _MaskedSelect.apply(input, key, tuple(shape))  # (one MaskedSelectBackward0 node)


tensor_method("masked_select")(masked_select)


@tensor_method("count_nonzero")
def count_nonzero(input: Tensor, dim=None, *dims: int) -> Tensor:  # noqa: A002
    """The number of nonzero elements (over ``dim``: an int, a tuple, or several ints as
    PyTorch's ``x.count_nonzero(0, 1)``), int64."""
    if dims:
        dim = (dim, *dims)
    return ew.ne(input, 0).sum(dim)


# ------------------------------------------------------------------------------ comparisons
@tensor_method("isclose")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise (bool), as PyTorch: equal
    values (infinities included) are close; NaNs only with ``equal_nan``; an infinite
    difference never is. Integer tensors are compared in float64 (no wrap-around)."""
    require_tensor("isclose", input)
    require_tensor("isclose", other, "other", 2)
    check_operands("isclose", input, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose(): {input.dtype.name} did not match {other.dtype.name}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not tol >= 0:  # (NaN too, as PyTorch)
            raise RuntimeError(f"isclose(): {name} must be greater than or equal to zero, but "
                               f"got {tol}")
    with no_grad():
        a, b = input.detach(), other.detach()
        close = ew.eq(a, b)
        if equal_nan and (a.dtype.is_floating_point or a.dtype.is_complex):
            close = ew.logical_or(close, ew.logical_and(ew.isnan(a), ew.isnan(b)))
        if rtol == 0 and atol == 0:
            return close
        if a.dtype is dtypes.bool_:
            a, b = a.to(dtypes.float32), b.to(dtypes.float32)
        elif not (a.dtype.is_floating_point or a.dtype.is_complex):  # integers: a - b would wrap
            a, b = a.to(dtypes.float64), b.to(dtypes.float64)  # (2**62 - -2**62)
        actual = ew.abs(a - b)
        allowed = ew.abs(b * rtol) + atol
        return ew.logical_or(close, ew.logical_and(ew.isfinite(actual), ew.le(actual, allowed)))


@tensor_method("allclose")
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    """True when every element pair is ``isclose`` (shapes broadcast)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@tensor_method("equal")
def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    """True when both have the same shape and equal elements (NaN is never equal)."""
    require_tensor("equal", input)
    require_tensor("equal", other, "other", 2)
    dtypes.refuse_float8("equal_notnan_cpu", input.dtype, other.dtype)
    if input.shape != other.shape:
        return False
    with no_grad():
        return bool(ew.eq(input.detach(), other.detach()).all())


@tensor_method("logical_xor")
def logical_xor(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise xor of the truth values (nonzero, NaN included, is true); bool. ``other``
    may be a number. Two tensors are read in their promoted dtype, as PyTorch reads them (a 0-d
    int64 256 with a uint8 tensor is 0, false)."""
    check_operands("logical_xor", input, other)
    if isinstance(other, Tensor) and isinstance(input, Tensor) and input.dtype is not other.dtype:
        input, other = ew._in_common_dtype(input, other)  # noqa: A001
    return ew.ne(ew.ne(input, 0), ew.ne(other, 0) if isinstance(other, Tensor) else bool(other))


# ------------------------------------------------------------------------------ other names
absolute = ew.abs
greater, greater_equal, less, less_equal, not_equal = ew.gt, ew.ge, ew.lt, ew.le, ew.ne
swapdims = transpose
for _name, _fn in (("absolute", ew.abs), ("greater", ew.gt), ("greater_equal", ew.ge),
                   ("less", ew.lt), ("less_equal", ew.le), ("not_equal", ew.ne),
                   ("swapdims", transpose)):
    tensor_method(_name)(_fn)
tensor_method("absolute_")(lambda self: self.abs_())
@tensor_method("type_as")
def _type_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.to(other.dtype)`` (PyTorch's TypeError for a non-tensor ``other``)."""
    require_tensor("type_as", other, "other")
    return self.to(other.dtype)


def numel(input: Tensor) -> int:  # noqa: A002
    """The number of elements of ``input`` (PyTorch's TypeError for a non-tensor)."""
    require_tensor("numel", input)
    return math.prod(input.shape)
