"""Shape ops and views. Views share storage (and the version counter) with their base.

Each view op's backward is the inverse view or its adjoint: permute -> inverse permute,
expand -> sum_to, reshape -> reshape back, basic indexing -> scatter into zeros.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd import profiler_hooks
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import STATE
from tgrad.backends import numpy as np_backend
from tgrad.ops._common import (
    backend_of,
    bound_apply,
    int_tuple,
    make_view,
    register_op,
    require_tensor,
    same_device,
    sizes_keyword,
    tensor_method,
    view_apply,
    wrap,
)
from tgrad.ops.index import _FULL, BasicIndex
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["reshape", "view", "permute", "transpose", "expand", "broadcast_to", "squeeze",
           "unsqueeze", "flatten", "t", "swapaxes", "movedim", "moveaxis", "cat", "concat",
           "concatenate", "stack", "split", "chunk", "narrow", "unbind"]


def _infer_shape(op: str, shape: tuple, numel: int) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple([_int_arg(op, "shape", s) for s in shape])
    if shape and min(shape) < 0:
        neg = [i for i, s in enumerate(shape) if s == -1]
        if len(neg) > 1:
            raise RuntimeError(f"{op}: only one dimension can be inferred")
        if any(s < -1 for s in shape):
            raise RuntimeError(f"{op}: invalid shape dimension {min(shape)}")
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    if math.prod(shape) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class View(Function):
    """y = x viewed with another shape (no copy);  dx = reshape(g, x.shape)."""

    name = "view"
    node_name = "ViewBackward0"
    saved_attributes = {"_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, shape):
        arr = backend_of(x).reshape_view(x._data, shape)
        if arr is None:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                f"(input shape {list(x.shape)}, strides {list(x.stride())}, requested "
                f"{list(shape)})")
        ctx.shape = x.shape
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


class UnsafeView(Function):
    """y = x with another shape, as a new tensor (no view for autograd): PyTorch's
    _unsafe_view, UnsafeViewBackward0, which its composite ops (matmul's folded products,
    kron) apply to a fresh intermediate they own, so that the result is no view of it.
    The array is x's reshaped in place where the strides allow (x is an op's own
    intermediate: nothing else holds it), else a copy. dx = reshape(g, x.shape)."""

    name = "_unsafe_view"
    node_name = "UnsafeViewBackward0"
    saved_attributes = {"_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, shape):
        be = backend_of(x)
        ctx.shape = x.shape
        arr = be.reshape_view(x._data, shape)
        return wrap(arr if arr is not None else be.reshape_copy(x._data, shape), x.device)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


@tensor_method("view")
def view(input: Tensor, *shape, size=None, dtype=None) -> Tensor:  # noqa: A002
    """A view with a new shape (``size``: PyTorch's keyword); raises when the strides do not
    allow one. ``view(dtype)``: the same bytes read as another dtype (see view_dtype)."""
    if dtype is not None or (len(shape) == 1 and isinstance(shape[0], dtypes.DType)):
        return view_dtype(input, dtype if dtype is not None else shape[0])
    if size is not None:
        shape = sizes_keyword("view", "size", shape, size)
    shape = _infer_shape("view", shape, input.numel())
    return view_apply(View, input, shape)


def view_dtype(input: Tensor, dtype) -> Tensor:  # noqa: A002
    """``input``'s memory read as ``dtype`` (PyTorch's Tensor.view(dtype)): shares the
    storage and version counter but is outside autograd (no grad_fn, requires_grad False,
    not a view for autograd; PyTorch's as well). Same element size: any layout, same shape
    and strides. Element size k times smaller: the last dim's stride must be 1; its size
    and the other strides and the storage offset are multiplied by k. k times larger: the
    last dim's stride must be 1 and its size, the storage offset and the other strides
    divisible by k, which divide them (PyTorch's checks, in its order, with its texts)."""
    new = dtypes.as_dtype(dtype)
    old = input.dtype
    dtypes.check_float8_device("view", new, input.device)
    names = dtypes.SCALAR_TYPE_NAMES
    what = f" to view {names[old]} as {names[new]} (different element sizes)"
    shape, st, off = list(input.shape), list(input.stride()), input.storage_offset()
    if new.itemsize != old.itemsize:
        if input.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0{what}")
        if st[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1{what}, but got {st[-1]}")
        if new.itemsize < old.itemsize:
            k = old.itemsize // new.itemsize
            shape[-1] *= k
            st = [s * k for s in st[:-1]] + [1]
            off *= k
        else:
            k = new.itemsize // old.itemsize
            if shape[-1] % k:
                raise RuntimeError(f"self.size(-1) must be divisible by {k}{what}, but got "
                                   f"{shape[-1]}")
            if off % k:
                raise RuntimeError(f"self.storage_offset() must be divisible by {k}{what}, "
                                   f"but got {off}")
            for d, s in enumerate(st[:-1]):
                if s % k:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {k}{what}, "
                                       f"but got {s}")
            shape[-1] //= k
            st = [s // k for s in st[:-1]] + [1]
            off //= k
    data = input._data
    if isinstance(data, np.ndarray):
        # the same bytes: a NumPy array over the storage's memory at the new geometry, its
        # first element (off - input's storage offset) elements of the new size past input's
        arr = backend_of(input).strided_memory(
            data, input._storage.root, off * new.itemsize - input.storage_offset() * old.itemsize,
            tuple(shape), new.np, tuple(s * new.itemsize for s in st)) if data.size else \
            np.empty(tuple(shape), new.np)
        if not data.flags.writeable:
            arr.flags.writeable = False
    elif hasattr(data, "buffer"):  # DeviceArray (cuda): element strides and offset
        from tgrad.cuda.array import DeviceArray
        arr = DeviceArray(data.buffer, tuple(shape), tuple(st), off, new.np)
    else:
        raise RuntimeError(f"view(dtype): not supported for tensors on {input.device}")
    return Tensor(arr, input._storage, input.device)


@tensor_method("reshape")
def reshape(input: Tensor, *sizes, shape=None) -> Tensor:  # noqa: A002
    """A view when the strides allow, else a copy (as PyTorch); the new shape as ints, one
    sequence or the keyword ``shape``."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("reshape", input)
    if shape is not None:
        sizes = sizes_keyword("reshape", "shape", sizes, shape)
    shape = _infer_shape("reshape", sizes, input.numel())
    # PyTorch's three forms: a contiguous input's view (ViewBackward0); another input's
    # view where the strides allow (_reshape_alias: ReshapeAliasBackward0; tried here
    # first, so built twice); else _unsafe_view of a contiguous clone (UnsafeViewBackward0
    # over CloneBackward0, a new tensor)
    data = input._data
    if data.flags.c_contiguous:
        return view_apply(View, input, shape)
    if backend_of(input).reshape_view(data, shape) is not None:
        return view_apply(ReshapeAlias, input, shape)
    return UnsafeView.apply(input.clone(), shape)


class Permute(Function):
    """y = x with dims reordered;  dx = permute(g, inverse)."""

    name = "permute"
    node_name = "PermuteBackward0"
    saved_attributes = {"_saved_dims": "dims"}

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return make_view(x, backend_of(x).permute(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        inverse = tuple(np.argsort(ctx.dims).tolist())
        if not (differentiable_formula() or g._sparse or profiler_hooks.ACTIVE is not None):
            # a plain backward: the permuted array as a new tensor, not a view node (the
            # engine adds gradients out of place; AccumulateGrad keeps it as .grad when
            # nothing else holds g: a linear weight's gradient is not copied). It shares
            # g's storage, so g's version counter: g may be the caller's grad_output,
            # saved elsewhere (autograd.grad returns it; PyTorch's is g.t(), a view)
            return Tensor(backend_of(g).permute(g._data, inverse), g._storage, g.device), None
        return g.permute(*inverse), None


def _named(base, name: str, node: str):
    """``base`` (View or Permute) under the op and node names PyTorch gives the view op
    (``transpose`` -> TransposeBackward0, ``squeeze(dim)`` -> SqueezeBackward1...)."""
    return type(node[:-9] + ("" if node[-1] == "0" else node[-1]), (base,),
                {"name": name, "node_name": node, "__doc__": base.__doc__})


Transpose = _named(Permute, "transpose", "TransposeBackward0")
ReshapeAlias = _named(View, "_reshape_alias", "ReshapeAliasBackward0")  # (reshape's view of
ReshapeAlias.saved_attributes = View.saved_attributes  # a non-contiguous input)


def _swapped(i: int):
    """transpose's dim0 (i = 0) or dim1 (i = 1), from the permutation it applied."""
    def dim(node) -> int:
        moved = [d for d, p in enumerate(node.dims) if d != p]
        if len(moved) != 2:  # transpose(d, d): the identity, which does not tell d
            raise AttributeError(f"'{type(node).__name__}' object has no attribute "
                                 f"'_saved_dim{i}': tgrad keeps transpose's permutation, and "
                                 f"transpose(d, d) (the identity) does not tell d")
        return moved[i]
    return dim


Transpose.saved_attributes = {"_saved_dim0": _swapped(0), "_saved_dim1": _swapped(1)}
TView = _named(Permute, "t", "TBackward0")
TAlias = _named(View, "t", "TBackward0")  # t() below 2-D: an alias of the same shape


class Squeeze(View):
    """y = x without its size-1 dims ``dims`` (a sorted tuple; a view, the other dims keep
    their strides, size-1 ones included, as PyTorch's squeeze);  dx = reshape(g, x.shape)."""

    name = "squeeze"
    node_name = "SqueezeBackward0"  # all size-1 dims
    saved_attributes = {"_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, dims):
        ctx.shape = x.shape
        return make_view(x, backend_of(x).squeeze(x._data, dims))


SqueezeDim = _named(Squeeze, "squeeze", "SqueezeBackward1")  # one dim
SqueezeDims = _named(Squeeze, "squeeze", "SqueezeBackward2")  # a tuple of dims


class Unsqueeze(View):
    """y = x with a size-1 dim at ``dim`` (a view; its stride is PyTorch's, size[dim] *
    stride[dim], 1 past the last dim);  dx = reshape(g, x.shape)."""

    name = "unsqueeze"
    node_name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.shape = x.shape
        return make_view(x, backend_of(x).unsqueeze(x._data, dim))


@tensor_method("permute")
def permute(input: Tensor, *order, dims=None) -> Tensor:  # noqa: A002
    """The view with input's dims in the order ``dims`` (ints, one sequence or the keyword
    ``dims``)."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("permute", input)
        if input._sparse:  # (tgrad.sparse's own method)
            return input.permute(*(order if dims is None else (dims,)))
    dims = sizes_keyword("permute", "dims", order, dims)
    if len(dims) == 1 and not isinstance(dims[0], Tensor):  # one sequence (or a bad value)
        dims = dims[0]
    dims = int_tuple("permute", "dims", dims, 2)  # (a float dim was truncated by int())
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}"
                           .replace("(sparse_coo)", ""))
    dims = tuple(_wrap_dim(d, input.ndim, "permute") for d in dims)  # (no floats)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"permute(): duplicate dims are not allowed (dims {list(dims)})")
    return view_apply(Permute, input, dims)


@tensor_method("transpose")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    """Swap two dims (a view)."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("transpose", input)
        if input._sparse:  # (tgrad.sparse's own method)
            return input.transpose(dim0, dim1)
    if input.ndim == 0:  # dims -1 and 0 name the one dim a 0-d tensor is treated as having
        _wrap_dim(dim0, 0, "transpose")
        _wrap_dim(dim1, 0, "transpose")
        return view_apply(Transpose, input, ())
    d0 = _wrap_dim(dim0, input.ndim, "transpose")
    d1 = _wrap_dim(dim1, input.ndim, "transpose")
    dims = list(range(input.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return view_apply(Transpose, input, tuple(dims))


@tensor_method("swapaxes")
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:  # noqa: A002
    """NumPy's name for ``transpose`` (its keywords: ``axis0``, ``axis1``)."""
    require_tensor("swapaxes", input)
    return transpose(input, axis0, axis1)


@tensor_method("t")
def t(input: Tensor) -> Tensor:  # noqa: A002
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("t", input)
        if input._sparse:  # (tgrad.sparse's own method)
            return input.t()
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    # below 2-D a new view of the same shape (an alias, as PyTorch's; never ``input`` itself)
    if input.ndim == 2:
        return view_apply(TView, input, (1, 0))
    return view_apply(TAlias, input, tuple(input.shape))


def _mT(self: Tensor) -> Tensor:  # noqa: N802
    if self.ndim == 0:  # PyTorch 2.13: deprecated, the tensor itself
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity "
                      "in these cases.", UserWarning, stacklevel=2)
        return self
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


Tensor.mT = property(_mT)


@tensor_method("movedim", "moveaxis")
def movedim(input: Tensor, source, destination) -> Tensor:  # noqa: A002
    """Move dim(s) ``source`` (an int or a sequence) to position(s) ``destination``; the
    other dims keep their order (a view)."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("movedim", input)
    srcs = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    dsts = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if len(srcs) != len(dsts):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(srcs)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dsts)} dims)")
    n = input.ndim
    srcs = [_wrap_dim(d, n, "movedim") for d in srcs]
    dsts = [_wrap_dim(d, n, "movedim") for d in dsts]
    if len(set(srcs)) != len(srcs):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(srcs)})")
    if len(set(dsts)) != len(dsts):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dsts)})")
    order = [None] * max(n, 1)
    for s, d in zip(srcs, dsts):
        order[d] = s
    rest = iter(d for d in range(n) if d not in srcs)
    order = [next(rest) if o is None else o for o in order][:n]
    return permute(input, *order)


moveaxis = movedim


def _expanded_view(x: Tensor, shape: tuple) -> Tensor:
    """A stride-0 view of ``x`` broadcast to ``shape``, or PyTorch's error."""
    try:
        arr = backend_of(x).expand(x._data, shape)
    except ValueError:
        lead = len(shape) - x.ndim  # (the first mismatch, counted from the right as PyTorch)
        bad = max((d for d in range(x.ndim) if x.shape[d] not in (1, shape[lead + d])),
                  default=None)
        which = "" if bad is None else (f" ({shape[lead + bad]}) must match the existing size "
                                        f"({x.shape[bad]}) at non-singleton dimension {lead + bad}")
        raise RuntimeError(
            f"The expanded size of the tensor{which or ' must match the existing size at '}"
            f"{'' if which else 'non-singleton dimensions'}.  Target sizes: {list(shape)}.  "
            f"Tensor sizes: {list(x.shape)}") from None
    return make_view(x, arr)


class Expand(Function):
    """y = x broadcast to ``shape`` (a view, stride 0);  dx = sum_to(g, x.shape)."""

    name = "expand"
    node_name = "ExpandBackward0"
    saved_attributes = {"_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return _expanded_view(x, shape)

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.shape), None


@tensor_method("expand")
def expand(input: Tensor, *sizes, size=None, implicit: bool = False) -> Tensor:  # noqa: A002
    """Broadcast to ``sizes`` (ints, one sequence or the keyword ``size``) without copying;
    -1 keeps a dim (not in a new leading one). ``implicit`` (PyTorch's internal flag for
    broadcasts it inserted) changes nothing."""
    if size is not None:
        sizes = sizes_keyword("expand", "size", sizes, size)
    elif not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    for s in sizes:
        if type(s) is not int:  # a float (even 2.0) is PyTorch's TypeError
            sizes = tuple(_int_arg("expand", "size", s) for s in sizes)
            break
    lead = len(sizes) - input.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({input.ndim})")
    if -1 in sizes:
        if -1 in sizes[:lead]:
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                               f"leading, non-existing dimension {sizes.index(-1)}")
        shape = tuple(input.shape[i - lead] if s == -1 else int(s)
                      for i, s in enumerate(sizes))
    else:
        shape = tuple(map(int, sizes))
    if not differentiable_formula() and profiler_hooks.ACTIVE is None:
        # Nothing to record (a backward's broadcast, or no_grad; no tangents): the view without the
        # Function machinery, which is most of its cost on small tensors; always a new view
        # (never ``input`` itself, even for its own shape: in-place view ops on the result
        # must not change ``input``)
        return _expanded_view(input, shape)
    return view_apply(Expand, input, shape)


def broadcast_to(input: Tensor, size) -> Tensor:  # noqa: A002
    """``input`` broadcast to ``size`` (a sequence of ints; -1 keeps a dim) as a view. As in
    PyTorch the function refuses a bare int size; the Tensor method also takes ints
    (``t.broadcast_to(3)``, ``t.broadcast_to(2, 3)``), as ``expand``."""
    require_tensor("broadcast_to", input)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"broadcast_to(): argument 'size' (position 2) must be tuple of ints, "
                        f"not {type(size).__name__}")
    return expand(input, int_tuple("broadcast_to", "size", size, 2))  # (int() truncated)


@tensor_method("broadcast_to")
def _broadcast_to_method(self: Tensor, *sizes, size=None) -> Tensor:
    """Tensor.broadcast_to(*sizes | size=sequence): ints, one sequence or the keyword."""
    if size is not None:
        sizes = sizes_keyword("broadcast_to", "size", sizes, size)
    elif not sizes:
        raise TypeError('broadcast_to() missing 1 required positional arguments: "size"')
    return expand(self, *sizes)
@tensor_method("expand_as")
def expand_as(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    require_tensor("expand_as", other, "other")
    return expand(input, other.shape)


class _AllDims:
    """squeeze's default ``dim``: every size-1 dim. (An explicit ``dim=None`` is PyTorch's
    TypeError: its squeeze has no None overload.)"""
    __slots__ = ()

    def __repr__(self) -> str:
        return "<all>"


ALL_DIMS = _AllDims()


@tensor_method("squeeze")
def squeeze(input: Tensor, dim=ALL_DIMS, *dims: int) -> Tensor:  # noqa: A002
    """Remove size-1 dims (all, or those in ``dim``: an int or a sequence of ints; several
    ints as PyTorch's ``x.squeeze(1, 2)``)."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("squeeze", input)
    if dims:
        dim = (dim, *dims)
    cls = Squeeze if dim is ALL_DIMS else SqueezeDims if isinstance(dim, (tuple, list)) else \
        SqueezeDim
    return view_apply(cls, input, squeeze_dims(input, dim))


def squeeze_dims(input: Tensor, dim, op: str = "squeeze") -> tuple:  # noqa: A002
    """The sorted dims ``squeeze(input, dim)`` removes: the size-1 ones (all for ALL_DIMS,
    or those in ``dim``, an int or a sequence; PyTorch's errors for None and for bad or
    repeated dims)."""
    if dim is ALL_DIMS:
        return tuple(i for i, s in enumerate(input.shape) if s == 1)
    if dim is None:  # PyTorch's squeeze has overloads (), (int dim), (tuple of ints dim)
        raise TypeError(f"{op}(): argument 'dim' must be int or tuple of ints, not NoneType "
                        f"(leave dim out to remove every size-1 dim)")
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    wrapped = [_wrap_dim(d, input.ndim, op) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        dup = next(d for d in wrapped if wrapped.count(d) > 1)
        raise RuntimeError(f"{op}: dim {dup} appears multiple times in the list of dims "
                           f"{list(set(wrapped))}")
    if not input.ndim:  # a 0-d tensor takes dim 0 / -1 (PyTorch) and has none to remove
        return ()
    return tuple(sorted(d for d in set(wrapped) if input.shape[d] == 1))


@tensor_method("unsqueeze")
def unsqueeze(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("unsqueeze", input)
    return view_apply(Unsqueeze, input, _wrap_dim(dim, input.ndim + 1, "unsqueeze"))


@tensor_method("flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:  # noqa: A002
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("flatten", input)
    if input.ndim == 0:  # its dims wrap as one dim's (0 and -1), as PyTorch's
        _wrap_dim(start_dim, 0, "flatten")
        _wrap_dim(end_dim, 0, "flatten")
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, input.ndim, "flatten")
    e = _wrap_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:  # nothing to merge: the tensor itself, as PyTorch's (x.flatten() is x, 1-D x)
        return input
    shape = input.shape[:s] + (math.prod(input.shape[s:e + 1]),) + \
        input.shape[e + 1:]
    return reshape(input, shape)


@tensor_method("view_as")
def view_as(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    require_tensor("view_as", other, "other")
    return view(input, other.shape)


@tensor_method("reshape_as")
def reshape_as(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    require_tensor("reshape_as", other, "other")
    return reshape(input, other.shape)


# ------------------------------------------------------------------ cat / stack / split
class Cat(Function):
    """y = concatenate(xs, dim) (a copy);  dx_i = g[..., off_i:off_i + n_i, ...] (a view).

    apply(dim, *xs): the dim comes first so the tensors can be variadic.
    """

    name = "cat"
    node_name = "CatBackward0"
    saved_attributes = {"_saved_dim": "dim"}

    @staticmethod
    def forward(ctx, dim, *xs):
        # legacy 1-D empty inputs are skipped (size None) but stay inputs of the node
        ctx.dim = dim
        ctx.sizes = [None if _legacy_empty(x) else x.shape[dim] for x in xs]
        arrays = [x._data for x, n in zip(xs, ctx.sizes) if n is not None]
        return wrap(backend_of(xs[0]).cat(arrays or [x._data for x in xs], dim),
                    xs[0].device)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros
        grads = [None]
        off = 0
        for n, need in zip(ctx.sizes, ctx.needs_input_grad[1:]):
            if n is None:  # a skipped empty input: an empty gradient (as PyTorch)
                grads.append(zeros(0, dtype=g.dtype, device=g.device) if need else None)
                continue
            grads.append(narrow(g, ctx.dim, off, n) if need else None)
            off += n
        return tuple(grads)


class Stack(Function):
    """y = stack(xs, dim) (a copy, xs of one shape S: y has S with len(xs) inserted at
    dim);  dx_i = g.select(dim, i) (a view). apply(dim, *xs), as Cat."""

    name = "stack"
    node_name = "StackBackward0"
    saved_attributes = {"_saved_dim": "dim"}

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        be = backend_of(xs[0])
        if be is np_backend:  # (the same copy, without a PyTorch-strided view per input)
            return wrap(np_backend._stack([x._data for x in xs], dim), xs[0].device)
        shape = xs[0].shape[:dim] + (1,) + xs[0].shape[dim:]  # a size-1 dim: always a view
        return wrap(be.cat([be.reshape_view(x._data, shape) for x in xs], dim), xs[0].device)

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad[1:]
        if not differentiable_formula():  # no graph or tangent to record: the views
            # g[..., i, ...] made directly
            be, lead = backend_of(g), (slice(None),) * ctx.dim
            return (None, *[make_view(g, be.basic_index(g._data, lead + (i,))) if need
                            else None for i, need in enumerate(needs)])
        return (None, *[g.select(ctx.dim, i) if need else None
                        for i, need in enumerate(needs)])


def _promoted(xs: list, dt=None) -> list:
    """Tensors in their promoted dtype ``dt`` (PyTorch type promotion of all at once: cat,
    stack, addcmul / addcdiv, addr)."""
    if dt is None:
        dt = dtypes.result_type(*xs) if len(xs) > 1 else xs[0].dtype
    return [x if x.dtype is dt else x.to(dt) for x in xs]


def _legacy_empty(x: Tensor) -> bool:
    return x.ndim == 1 and x.shape[0] == 0


def check_tensor_seq(op: str, tensors) -> None:
    """PyTorch's TypeError for a ``tensors`` argument that is no list or tuple (one tensor,
    a generator, an array)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__} (pass a list or tuple of tensors)")


def _tensor_list(op: str, tensors) -> list:
    check_tensor_seq(op, tensors)
    if len(tensors) == 0:  # PyTorch: cat's is a ValueError, stack's a RuntimeError
        if op == "cat":
            raise ValueError("cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(x).__name__}")
    return list(tensors)


def cat(tensors, dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Concatenate along ``dim`` (or NumPy's name, ``axis``; PyTorch type promotion; 1-D
    empty tensors are skipped, as PyTorch's legacy rule)."""
    if axis is not None:
        dim = _dim_alias("cat", dim, axis)
    xs = _tensor_list("cat", tensors)
    dt0, dev0 = xs[0]._dtype, xs[0]._device
    dt = None  # the promoted dtype; None: one dtype and one device object (nothing to do)
    for x in xs:
        if x._dtype is not dt0 or x._device is not dev0:
            same_device("cat", *xs)
            dt = dtypes.result_type(*xs)  # before the shape checks (PyTorch's error order)
            break
    full = [x for x in xs if not _legacy_empty(x)]
    ref = full[0] if full else xs[0]
    if ref.ndim == 0:
        raise RuntimeError("cat(): zero-dimensional tensor (at position 0) cannot be "
                           "concatenated")
    d = _wrap_dim(dim, ref.ndim, "cat") if full else 0
    shape = ref.shape
    head, tail = shape[:d], shape[d + 1:]  # what the others must match
    for i, x in enumerate(xs):
        s = x.shape
        if s == shape or (len(s) == 1 and not s[0]):  # (a legacy empty one is skipped)
            continue
        if len(s) != len(shape):
            raise RuntimeError(f"cat(): Tensors must have same number of dimensions: got "
                               f"{len(shape)} and {len(s)} (tensor number {i})")
        if s[:d] != head or s[d + 1:] != tail:
            k = next(k for k in range(len(s)) if k != d and s[k] != shape[k])
            raise RuntimeError(f"cat(): Sizes of tensors must match except in dimension "
                               f"{d}. Expected size {shape[k]} but got size "
                               f"{s[k]} for tensor number {i} in the list.")
    return Cat.apply(d, *(xs if dt is None else _promoted(xs, dt)))


def concat(tensors, dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Alias of ``cat``."""
    check_tensor_seq("concat", tensors)
    return cat(tensors, dim if axis is None else _dim_alias("concat", dim, axis))


def concatenate(tensors, dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Alias of ``cat`` (``axis``: NumPy's name for ``dim``, as PyTorch's concatenate)."""
    check_tensor_seq("concatenate", tensors)
    return cat(tensors, dim if axis is None else _dim_alias("concatenate", dim, axis))


def _dim_alias(op: str, dim: int, axis: int) -> int:
    """``axis`` for a ``dim`` left at its default 0 (PyTorch's argument parser takes NumPy's
    name; both given is an error)."""
    if dim != 0:
        raise TypeError(f"{op}() got multiple values for argument 'dim' (and its alias 'axis')")
    return axis


@autocast_policy("promote")
def stack(tensors, dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join equal-shaped tensors along a new dim ``dim`` (or NumPy's name, ``axis``)."""
    if axis is not None:
        dim = _dim_alias("stack", dim, axis)
    xs = _tensor_list("stack", tensors)
    shape0, dt0, dev0 = xs[0].shape, xs[0]._dtype, xs[0]._device
    uniform = True  # one dtype and one device object: nothing to check or promote
    for i, x in enumerate(xs):
        if x.shape != shape0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape0)} at entry 0 and {list(x.shape)} at entry "
                               f"{i}")
        if x._dtype is not dt0 or x._device is not dev0:
            uniform = False
    if not uniform:
        same_device("stack", *xs)
        xs = _promoted(xs)
    d = _wrap_dim(dim, xs[0].ndim + 1, "stack")
    return Stack.apply(d, *xs)


@tensor_method("narrow")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    """The view input[..., start:start + length, ...] along ``dim``."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("narrow", input)
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if isinstance(start, Tensor) and (start.ndim or start.dtype.is_floating_point
                                      or start.dtype.is_complex):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start = _int_arg("narrow", "start", start)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -size <= start <= size:  # PyTorch's IndexError; a start past the end is not
        raise IndexError(f"narrow(): start out of range (expected to be in range of "
                         f"[{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({size}) of dimension {d} (tensor of shape "
                           f"{list(input.shape)}).")
    key = (_FULL,) * d + (slice(start, start + length),)
    if type(input) is Tensor:  # (its __getitem__ with the key it would normalize to:
        return view_apply(BasicIndex, input, key)  # slices, the last one effective)
    return input[key]


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Views of consecutive pieces along ``dim``: equal pieces of ``split_size`` (the last
    may be smaller) or pieces with the listed sizes."""
    if type(tensor) is not Tensor:  # (a call only for others)
        require_tensor("split", tensor)
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor.ndim, "split")
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [_int_arg("split", "split_size_or_sections", s)
                 for s in split_size_or_sections]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    else:
        n = _int_arg("split", "split_size_or_sections", split_size_or_sections)
        if n < 0 or (n == 0 and size != 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={n}" if n < 0 else
                               f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}")
        sizes = [min(n, size - o) for o in range(0, size, n)] if size else [0]
    keys, off = [], 0
    for s in sizes:
        keys.append((slice(None),) * d + (slice(off, off + s),))
        off += s
    cls = SplitWithSizesViews if isinstance(split_size_or_sections, (list, tuple)) else \
        SplitViews
    return _pieces(cls, tensor, d, tuple(keys))


@tensor_method("split")
def _split_method(self: Tensor, split_size, dim: int = 0) -> tuple:
    """Tensor.split: torch.split with PyTorch's keyword name for the method, ``split_size``
    (an int or a list of sizes)."""
    return split(self, split_size, dim)


@tensor_method("chunk")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """At most ``chunks`` views of size ceil(n / chunks) along ``dim`` (as PyTorch)."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("chunk", input)
    chunks = _int_arg("chunk", "chunks", chunks, 2)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input.ndim, "chunk")
    size = input.shape[d]
    if size == 0:  # PyTorch: ``chunks`` empty pieces
        return split(input, [0] * chunks, d)
    return split(input, -(-size // chunks), d)


@tensor_method("unbind")
def unbind(input: Tensor, dim: int = 0) -> tuple:  # noqa: A002
    """The slices along ``dim`` with that dim removed (views)."""
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("unbind", input)
    if input.ndim == 0:
        raise IndexError("unbind: Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim, "unbind")
    keys = tuple((slice(None),) * d + (i,) for i in range(input.shape[d]))
    return _pieces(UnbindViews, input, d, keys)


class SplitViews(Function):
    """The pieces x[key_i] along one dim as views of x (split, chunk), one node for all:
    dx = cat of their gradients along the dim (zeros for a piece that got none), as
    PyTorch's SplitBackward0 (not one full-size scatter per piece)."""

    name = "split"
    node_name = "SplitBackward0"

    @staticmethod
    def forward(ctx, x, dim, keys):
        ctx.dim, ctx.keys, ctx.shape = dim, keys, x.shape
        be = backend_of(x)
        return tuple(make_view(x, be.basic_index(x._data, key)) for key in keys)

    @staticmethod
    def backward(ctx, *grads):
        return _joined(ctx, grads, cat), None, None


class SplitWithSizesViews(SplitViews):
    """split by a list of sizes: PyTorch's node is SplitWithSizesBackward0."""

    name = "split_with_sizes"
    node_name = "SplitWithSizesBackward0"


class UnbindViews(SplitViews):
    """x's slices along one dim, that dim removed (unbind): dx = their gradients stacked."""

    name = "unbind"
    node_name = "UnbindBackward0"

    @staticmethod
    def backward(ctx, *grads):
        return _joined(ctx, grads, stack), None, None


for _c in (SplitViews, SplitWithSizesViews, UnbindViews):
    _c._backward_cls.materialize_grads = False  # a piece without gradient arrives as None


def _joined(ctx, grads: tuple, join) -> Tensor | None:
    """The pieces' gradients joined along the dim (cat or stack), zeros for a piece that
    got none; when most got none (iterating over a few rows of an unbind), they are written
    into one zero tensor instead of joining many zero pieces."""
    from tgrad.ops.creation import zeros
    given = sum(g is not None for g in grads)
    if given == 0:  # no piece got a gradient: none for the input either
        return None
    g0 = next(g for g in grads if g is not None)
    if given * 4 < len(grads):
        out = zeros(ctx.shape, dtype=g0.dtype, device=g0.device)
        for key, g in zip(ctx.keys, grads):
            if g is not None:
                out[key] = g
        return out
    parts = []
    for key, g in zip(ctx.keys, grads):
        if g is None:  # the piece's shape: the base's with the key applied
            shape = list(ctx.shape)
            k = key[ctx.dim]
            if isinstance(k, slice):
                shape[ctx.dim] = k.stop - k.start
            else:
                del shape[ctx.dim]
            g = zeros(tuple(shape), dtype=g0.dtype, device=g0.device)
        parts.append(g)
    return join(parts, ctx.dim)


def _pieces(cls, x: Tensor, dim: int, keys: tuple) -> tuple:
    """Run the multi-output view op. Made in grad mode, each piece is a multi-output view
    (PyTorch's MULTI_OUTPUT_NODE: in-place on it, or on a view of it, raises; so does using
    it after its base was modified in place) and replays as its own basic index (what
    ``requires_grad`` reads when the base was made to require grad since)."""
    from tgrad.ops.index import _basic_cls
    out = cls.apply(x, dim, keys)
    out = out if isinstance(out, tuple) else (out,)
    if STATE.enabled and (x._base is None or x._view_chain is not None):
        chain = x._view_chain or ()
        replay = kind = None
        for piece, key in zip(out, keys):
            if type(key[dim]) is not kind:  # (one class per key kind)
                kind = type(key[dim])
                replay = bound_apply(_basic_cls(key))
            piece._view_chain = chain + ((replay, (key,)),)
            piece._multi_output_view = True
    return out


for _c in (View, UnsafeView, Unsqueeze, Squeeze, Permute, Expand, Cat, Stack, SplitViews,
           SplitWithSizesViews, UnbindViews):
    register_op(_c)
