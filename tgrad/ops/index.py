"""Indexing: ``x[key]`` with ints, slices (positive steps), None, Ellipsis (a view), and
integer-array / boolean-mask indexing (a copy). Backward scatters the gradient into zeros;
repeated indices add up."""

from __future__ import annotations

import warnings

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends import _numpy_along as _along_np
from tgrad.cuda.array import DeviceArray
from tgrad.cuda.index_errors import DeviceIndexError
from tgrad.ops._common import backend_of, make_view, register_op, tensor_method, view_apply, wrap
from tgrad.tensor import Tensor

__all__ = ["index_select_key"]


def _sequence_as_tuple(key) -> bool:
    """PyTorch's (and old NumPy's) rule: a list of fewer than 32 items holding a tensor, a
    sequence (a str too), a slice, None or ``...`` is read as a tuple of indices
    (x[[rows, cols]] is x[rows, cols]), with PyTorch 2.x's deprecation warning."""
    if type(key) is not list or len(key) >= 32:
        return False
    for k in key:
        if isinstance(k, (Tensor, list, tuple, np.ndarray, slice, str, bytes)) or k is None \
                or k is Ellipsis:
            warnings.warn("Using a non-tuple sequence for multidimensional indexing is "
                          "deprecated; use x[tuple(seq)] instead of x[seq] (PyTorch will read "
                          "it as one tensor index, x[tensor(seq)], in a later version)",
                          UserWarning, stacklevel=4)
            return True
    return False


def _drop_empty_ellipsis(key: tuple, ndim: int) -> tuple:
    """``key`` without an Ellipsis that stands for no dims: PyTorch expands ``...`` into
    slices, so an empty one does not separate two index arrays (x[:, [0, 1], ..., [0, 1]] of
    a 3-d x keeps the indexed dims in place), where NumPy would move them to the front."""
    used = 0
    for k in key:
        if k is None or k is Ellipsis:
            continue
        used += k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
    if used != ndim:
        return key
    return tuple(k for k in key if k is not Ellipsis)


def _extra_ellipses(key: tuple, ndim: int | None) -> tuple:
    """``key`` with its second and later ``...`` removed where PyTorch accepts them. PyTorch
    lets each ``...`` skip ndim - (the number of indexed dims) dims from where it stands, so
    a later one is harmless when nothing but ``...`` follows it (x[..., ...] is x,
    x[..., 0, ...] is x[..., 0]) or when the ellipses stand for no dims (x[..., 0, 1, ..., 2]
    of a 3-d x is x[0, 1, 2]); anywhere else PyTorch indexes past the last dim and raises."""
    first = key.index(Ellipsis)
    if ndim is not None:
        used = sum(k.ndim if isinstance(k, (Tensor, np.ndarray)) and k.dtype in (
            np.bool_, dtypes.bool_) else 1 for k in key if k is not None and k is not Ellipsis)
        if used == ndim:
            return tuple(k for k in key if k is not Ellipsis)
    second = key.index(Ellipsis, first + 1)
    if any(k is not Ellipsis for k in key[second:]):
        raise IndexError("index: an index with more than one ellipsis ('...') is read by "
                         "PyTorch only where the later ones come last or stand for no dims; "
                         "use a single '...'")
    return key[:second]


def normalize_key(key, device=None, ndim: int | None = None,
                  byte_fill: bool = False) -> tuple[tuple, bool]:
    """The key as a tuple of backend-ready items, and whether it is basic (a view).

    Index tensors become NumPy arrays, except integer index tensors of one or more dims on
    ``device`` (the indexed tensor's) when that is a GPU: their device arrays are copied on
    the device, so the gather reads them there (no copy to the host). Index tensors and
    arrays are always copied, so changing one in place later cannot change what a backward
    scatters to (PyTorch raises there; tgrad keeps the indices the forward used). Backend
    arrays already in ``key`` (a key normalized before, e.g. reused by a backward) are kept
    as they are. A uint8 tensor, NumPy array or list of NumPy uint8s is a boolean mask, as
    PyTorch reads it (with its deprecation warning). ``byte_fill`` (``x[key] = v`` with a v
    that fills_by_masked_fill): a key whose only tensor-like index is such a uint8 mask of
    1+ dims raises PyTorch's RuntimeError (PyTorch writes it by masked_fill_, which takes bool
    masks only; a 0-d tensor or a Python bool beside the mask is an index too, and then
    PyTorch's index_put_ takes the uint8 mask)."""
    if not isinstance(key, tuple):
        key = tuple(key) if _sequence_as_tuple(key) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        key = _extra_ellipses(key, ndim)
    out = []
    basic = True
    n_arrays = n_bytes = 0  # tensor-like indices (and bools); the uint8 masks of 1+ dims
    for k in key:
        if isinstance(k, Tensor):
            # PyTorch's index dtypes: int64, int32, uint8 (a mask) and bool; a 0-d int8/int16
            # tensor is read as a Python int there (a complex index was cast to int: wrong)
            if k.dtype.is_floating_point or k.dtype.is_complex or (
                    k.dtype in (dtypes.int8, dtypes.int16) and k.ndim):
                raise IndexError(f"tensors used as indices must be long, int, byte or bool "
                                 f"tensors (got {k.dtype})")
            n_arrays += 1
            if k.dtype is dtypes.uint8:  # PyTorch reads a uint8 index as a boolean mask
                _warn_byte_mask()
                n_bytes += k.ndim > 0
                k = k.to(dtypes.bool_)
            if (k.ndim and k.device is device and device.type != "cpu"
                    and k.dtype is not dtypes.bool_):
                out.append(backend_of(k).clone(k._data))
                basic = False
                continue
            arr = np.asarray(k.numpy(force=True))
            if arr.ndim == 0 and k.dtype is not dtypes.bool_:
                out.append(int(arr))
                continue
            out.append(arr.copy() if arr.dtype == np.bool_ else arr.astype(np.int64))
            basic = False
        elif isinstance(k, (list, tuple, range, np.ndarray)):
            arr = np.array(k)
            if arr.dtype.kind not in "iub":
                arr = _long_index_array(arr)
            if arr.ndim == 0 and arr.dtype.kind in "iu" and arr.dtype != np.uint8:
                out.append(int(arr))  # a 0-d integer array is an integer, as a 0-d tensor
                continue
            n_arrays += arr.ndim > 0
            if arr.dtype == np.uint8:  # as a uint8 tensor: a mask (t[[np.uint8(1), ...]] too)
                _warn_byte_mask()
                n_bytes += arr.ndim > 0
                arr = arr.astype(np.bool_)
            out.append(arr)
            basic = False
        elif isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(k)
        elif isinstance(k, DeviceArray):
            n_arrays += 1
            out.append(k)
            basic = False
        elif k is None or k is Ellipsis or isinstance(k, (int, np.integer)):
            if isinstance(k, bool):
                out.append(np.asarray(k))
                basic = False
                n_arrays += 1
            else:
                out.append(k)
        elif isinstance(k, (str, bytes)):  # PyTorch reads it as a sequence of data
            raise _invalid_data_type(type(k).__name__)
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")
    if byte_fill and n_bytes == 1 and n_arrays == 1:
        raise byte_mask_fill_error("x[mask] = value")
    if not basic and ndim is not None and any(k is Ellipsis for k in out):
        return _drop_empty_ellipsis(tuple(out), ndim), basic
    return tuple(out), basic


def _invalid_data_type(name: str) -> TypeError:
    return TypeError(f"new(): invalid data type '{name}' (an index holding a {name}: only "
                     f"integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices)")


def _long_index_array(arr: np.ndarray) -> np.ndarray:
    """A list (or NumPy array) index that is not integer or bool, as PyTorch's
    indexing_tensor_from_data reads it: floats truncated toward zero to int64 (x[[1.5]] is
    x[[1]]; a NaN, an inf or a value past int64 is PyTorch's overflow RuntimeError), an
    empty list an empty long index; strings and complex numbers are PyTorch's TypeErrors.
    (A float *tensor* index stays an IndexError, as in PyTorch.)"""
    kind = arr.dtype.kind
    if kind == "f":
        if arr.size and not (np.isfinite(arr).all() and np.abs(arr).max() < 2.0 ** 63):
            raise RuntimeError("value cannot be converted to type int64 without overflow "
                               "(a float in a list index is truncated to int64)")
        return arr.astype(np.int64)
    if kind in "US":
        raise _invalid_data_type("str" if kind == "U" else "bytes")
    if kind == "c":
        raise TypeError("'complex' object cannot be interpreted as an integer")
    return arr  # (an object array: the backend's IndexError)


def fills_by_masked_fill(value) -> bool:
    """The value's half of PyTorch's canDispatchToMaskedFill (``x[mask] = value`` and
    index_put_ with one mask write by masked_fill_): one element on the CPU (a number is a
    CPU tensor there; a one-element value on another device takes the index_put path)."""
    if isinstance(value, Tensor):
        return value.numel() == 1 and value.device.type == "cpu"
    return np.size(value) == 1


def byte_mask_fill_error(how: str) -> RuntimeError:
    """PyTorch's error for a uint8 mask written by masked_fill_ (see fills_by_masked_fill)."""
    return RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                        f"unsigned char ({how} with a uint8 mask and a one-element value on "
                        f"the CPU; use mask.bool())")


def _warn_byte_mask() -> None:
    warnings.warn("indexing with dtype tgrad.uint8 is now deprecated, please use a dtype "
                  "tgrad.bool instead.", UserWarning, stacklevel=5)


def check_masks(key: tuple, shape: tuple) -> None:
    """PyTorch's check of each boolean mask of a normalized ``key`` against the dims of
    ``shape`` it covers: each mask dim must equal its dim's size (NumPy reads an empty mask
    as an empty integer index, x[tensor([], dtype=bool)] of a 4-element x indexed nothing).
    An IndexError with PyTorch's text; a key indexing past the last dim is left to the
    backend's error."""
    if not any(isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim for k in key):
        return
    used = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
               for k in key if k is not None and k is not Ellipsis)
    dim = 0
    for k in key:
        if k is None:
            continue
        if k is Ellipsis:
            dim += max(len(shape) - used, 0)
        elif isinstance(k, np.ndarray) and k.dtype == np.bool_:
            for j, n in enumerate(k.shape):
                if dim + j < len(shape) and n != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{list(shape)} at index {dim + j}")
            dim += k.ndim
        else:
            dim += 1


def empty_selection(shape: tuple, key: tuple) -> tuple | None:
    """The shape of x[key] (a normalized key, x of ``shape``) when it is empty whatever the
    key's integer index arrays hold, else None. PyTorch checks an index only where it reads
    or writes, so an out-of-range index that selects nothing (x[:, [5]] of a (0, 3) x) is no
    error. An index array's own dim is not in the result: given one position here, it takes
    zeros of the array's shape."""
    used = sum(k.ndim if getattr(k, "dtype", None) == np.bool_ else 1
               for k in key if k is not None and k is not Ellipsis)
    safe, sizes, dim = [], list(shape), 0
    for k in key:
        if k is Ellipsis:
            dim += max(len(shape) - used, 0)
        elif getattr(k, "dtype", None) == np.bool_:  # a mask (its dims must match)
            dim += k.ndim
        elif isinstance(k, (np.ndarray, DeviceArray)):  # an integer index array
            if dim < len(sizes):
                sizes[dim] = max(sizes[dim], 1)
            k = np.zeros(k.shape, np.intp)
            dim += 1
        elif k is not None:
            dim += 1
        safe.append(k)
    try:
        got = np.broadcast_to(np.zeros((), np.int8), tuple(sizes))[tuple(safe)].shape
    except (IndexError, TypeError, ValueError):  # a bad integer or slice: not selecting
        return None  # nothing, the caller's error stands
    return got if 0 in got else None


def _index_error(x: Tensor, e: Exception) -> IndexError:
    msg = str(e).replace("axis", "dimension")
    return IndexError(f"index: {msg} (tensor of shape {list(x.shape)})")


def _index_fwd(ctx, x: Tensor, key, prim: str, **options):
    """backend.<prim>(x, key, **options) (basic_index or gather), IndexErrors reworded by
    ``_index_error``; x's shape and the key are kept for IndexAdd in backward."""
    try:
        arr = getattr(backend_of(x), prim)(x._data, key, **options)
    except DeviceIndexError:  # an earlier op's, found at a sync inside: as it is
        raise
    except IndexError as e:
        shape = empty_selection(x.shape, key)
        if shape is None:
            raise _index_error(x, e) from None
        arr = backend_of(x).full(shape, 0, x.dtype.np)
    ctx.shape, ctx.key = x.shape, key
    return arr


def _one_item(node, attr: str) -> tuple:
    """(dim, item) of a basic key with one effective item (ints and slices; full slices
    and ``...`` skipped): what PyTorch's one SelectBackward0 / SliceBackward0 saved. A key of
    several items is several nodes in PyTorch and one here: AttributeError."""
    key, ndim = node.key, len(node.shape)
    found = None
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += ndim - sum(1 for j in key if j is not Ellipsis)
        elif type(k) is slice and k == _FULL:
            dim += 1
        elif k is None or found is not None:
            found = None
            break
        else:
            found = (dim, k)
            dim += 1
    if found is None:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attr}': tgrad "
                             f"records x{list(key)} as one node, where PyTorch records one "
                             f"per index item; it is kept for a key of one int or slice")
    return found


def _item_field(attr: str, field):
    return lambda node: field(*_one_item(node, attr))


def _item_input_sizes(node) -> tuple:
    _one_item(node, "_saved_self_sym_sizes")  # the sizes of the one node's input
    return node.shape


_INT64_MAX = 2**63 - 1  # PyTorch's saved end of a slice without a stop

# PyTorch's names for what SliceBackward0 / SelectBackward0 saved, from tgrad's key
_SLICE_SAVED = {
    "_saved_dim": _item_field("_saved_dim", lambda d, k: d),
    "_saved_start": _item_field("_saved_start", lambda d, k: 0 if k.start is None else k.start),
    "_saved_end": _item_field("_saved_end", lambda d, k: _INT64_MAX if k.stop is None
                              else k.stop),
    "_saved_step": _item_field("_saved_step", lambda d, k: 1 if k.step is None else k.step),
    "_saved_self_sym_sizes": _item_input_sizes,
}
_SELECT_SAVED = {
    "_saved_dim": _item_field("_saved_dim", lambda d, k: d),
    "_saved_index": _item_field("_saved_index", lambda d, k: int(k)),
    "_saved_self_sym_sizes": _item_input_sizes,
}


def _saved_indices(node) -> tuple:
    """IndexBackward0's saved indices: one int64 (or bool) tensor per array item of the key,
    None for a full slice (the key's other items have no saved form here)."""
    from tgrad.ops.creation import as_tensor
    out = []
    for k in node.key:
        if type(k) is slice and k == _FULL:
            out.append(None)
        elif isinstance(k, (np.ndarray, DeviceArray)):
            out.append(wrap(k, node._out_meta[0][2]) if isinstance(k, DeviceArray)
                       else as_tensor(k))
        else:
            raise AttributeError(f"'{type(node).__name__}' object has no attribute "
                                 f"'_saved_indices': kept for keys of index arrays and full "
                                 f"slices (got x{list(node.key)})")
    return tuple(out)


class BasicIndex(Function):
    """y = x[key] (a view);  dx = zeros with g written at key."""

    name = "getitem"
    node_name = "SliceBackward0"
    saved_attributes = _SLICE_SAVED

    @staticmethod
    def forward(ctx, x, key):
        return make_view(x, _index_fwd(ctx, x, key, "basic_index"))

    @staticmethod
    def backward(ctx, g):
        return IndexAdd.apply(g, ctx.key, ctx.shape), None


class Select(BasicIndex):
    """x[i] (an integer last): PyTorch records SelectBackward0; slices keep SliceBackward0."""

    node_name = "SelectBackward0"
    saved_attributes = _SELECT_SAVED


def _last_none_dim(node) -> int:
    """UnsqueezeBackward0's saved dim: where the key's last None puts its size-1 dim in
    the result (the result dims the items before it make: a slice or None one each, an int
    none, ``...`` the dims no other item takes)."""
    key = node.key
    last = max(i for i, k in enumerate(key) if k is None)
    taken = sum(1 for k in key if k is not None and k is not Ellipsis)
    return sum(0 if isinstance(k, (int, np.integer)) else
               len(node.shape) - taken if k is Ellipsis else 1 for k in key[:last])


class UnsqueezeIndex(BasicIndex):
    """x[..., None] (a None last): PyTorch records UnsqueezeBackward0."""

    node_name = "UnsqueezeBackward0"
    saved_attributes = {"_saved_dim": _last_none_dim}


class AliasIndex(BasicIndex):
    """x[...], x[:] (no effective item): PyTorch returns an alias, AliasBackward0."""

    node_name = "AliasBackward0"
    saved_attributes = {}


_FULL = slice(None)


def _basic_cls(key: tuple):
    """PyTorch applies a key item by item (full slices and ``...`` are no-ops), so the node
    is named after the last effective item: an integer selects, None unsqueezes, a slice
    slices; with none, the result is an alias."""
    for k in reversed(key):
        if k is Ellipsis or (type(k) is slice and k == _FULL):
            continue
        if k is None:
            return UnsqueezeIndex
        return Select if isinstance(k, (int, np.integer)) else BasicIndex
    return AliasIndex


class AdvancedIndex(Function):
    """y = x[key] (a copy);  dx = zeros with g scatter-added at key."""

    name = "index"
    node_name = "IndexBackward0"
    keeps_indices = True
    saved_attributes = {"_saved_indices": _saved_indices, "_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, key):
        return wrap(_index_fwd(ctx, x, key, "gather"), x.device)

    @staticmethod
    def backward(ctx, g):
        return IndexAdd.apply(g, ctx.key, ctx.shape), None


class AlongDim(AdvancedIndex):
    """gather(x, dim, index) read through its advanced key (index at ``dim``, aranges
    elsewhere): one node, PyTorch's GatherBackward0 (edge: x);  dx = zeros with g
    scatter-added at the key (PyTorch's scatter_add of g at index). index_select's
    IndexSelectBackward0 is this class under that name (node_variant)."""

    name = "gather"
    node_name = "GatherBackward0"
    saved_attributes = {"_saved_dim": "dim", "_saved_index": "index",
                        "_saved_sparse_grad": lambda node: False,
                        "_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, key, along):
        # along: (dim, index tensor, the gather's options: on cuda the kernel's range check),
        # dim and index kept for the saved attributes (no argument that is a tensor: the
        # node's only edge is x's, PyTorch's)
        # (on the CPU a 4th item: the key's flat positions, tgrad/backends/_numpy_along.py,
        # read by np.take here and summed into by np.add.at in a plain backward)
        ctx.dim, ctx.index, options, *flat = along
        ctx.flat = flat[0] if flat else None
        if ctx.flat is not None:
            ctx.shape, ctx.key = x.shape, key
            return wrap(_along_np.take(x._data, ctx.flat), x.device)
        return wrap(_index_fwd(ctx, x, key, "gather", **options), x.device)

    @staticmethod
    def backward(ctx, g):
        if ctx.flat is not None and not differentiable_formula():
            # dx = zeros with g added at the positions (IndexAdd's sums, without its node)
            return wrap(_along_np.add_at(ctx.shape, g.dtype.np, ctx.flat, g._data),
                        g.device), None, None
        return IndexAdd.apply(g, ctx.key, ctx.shape), None, None


class IndexAdd(Function):
    """y = zeros(shape); y[key] += g (repeats add up);  dg = y_grad[key]."""

    name = "index_add"
    node_name = "IndexPutBackward0"
    keeps_indices = True

    @staticmethod
    def forward(ctx, g, key, shape):
        ctx.key = key
        be = backend_of(g)
        if g.numel() == 0:  # nothing to add (an index past a size-0 dim's neighbour is
            return wrap(be.full(shape, 0, g.dtype.np), g.device)  # never read, as PyTorch)
        return wrap(be.index_add(shape, g.dtype.np, key, g._data), g.device)

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.key], None, None


def add_at(g: Tensor, axis: int, size: int, index: Tensor) -> Tensor:
    """The adjoint of ``index_select(x, axis, index)`` for an x of ``size`` positions along
    ``axis``: zeros with g added back at ``index`` (repeats add up). One IndexAdd node, whose
    backward is the select, so it differentiates again. index: int64 (k,) on g's device."""
    shape = list(g.shape)
    shape[axis] = size
    key = normalize_key((slice(None),) * axis + (index,), g.device)[0]
    return IndexAdd.apply(g, key, tuple(shape))


for _c in (BasicIndex, AdvancedIndex, AlongDim, IndexAdd):  # Select shares BasicIndex's op name
    register_op(_c)


def split_selects(key: tuple) -> tuple | None:
    """PyTorch applies the integers of an advanced key as selects first, then the index
    arrays: ``x[1, :, [0, 2]]`` of a (2, 3, 4) tensor is (3, 2). NumPy counts integers as
    index arrays, which can move the indexed dims to the front ((2, 3) there). For a
    normalized advanced key holding integers this returns (the basic key of the integers,
    slices, None and Ellipsis, with full slices for the arrays' dims; the key of the arrays
    for the result, with full slices elsewhere), else None."""
    if not any(isinstance(k, (int, np.integer)) for k in key):
        return None
    first, rest = [], []
    for k in key:
        if isinstance(k, (int, np.integer)):
            first.append(k)
        elif k is None or isinstance(k, slice):
            first.append(k)
            rest.append(_FULL)  # the dim it left (or made) in the first result
        elif k is Ellipsis:
            first.append(k)
            rest.append(k)
        else:  # an index array (a bool mask spans one dim per mask dim)
            first.extend([_FULL] * (k.ndim if k.dtype.kind == "b" else 1))
            rest.append(k)
    return tuple(first), tuple(rest)


@tensor_method("__getitem__")
def getitem(self: Tensor, key) -> Tensor:
    key, basic = normalize_key(key, self.device, self.ndim)
    if basic:
        return view_apply(_basic_cls(key), self, key)
    check_masks(key, self.shape)
    split = split_selects(key)
    if split is not None:
        self = view_apply(_basic_cls(split[0]), self, split[0])
        key = split[1]
    return AdvancedIndex.apply(self, key)


def index_select_key(x: Tensor, key) -> Tensor:
    return getitem(x, key)
