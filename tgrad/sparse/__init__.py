"""Sparse COO tensors on the CPU (PyTorch's ``torch.sparse_coo_tensor`` / ``torch.sparse``).

Design (docs/design.md, "Sparse COO tensors"): ``SparseTensor`` is a ``Tensor`` subclass
that keeps ``indices`` (an int64 NumPy array (sparse_dim, nnz)), ``values`` (a NumPy array
(nnz, *dense_shape)) and a coalesced flag. Its ``_data`` is a ``_SparseData`` placeholder
that carries shape / ndim / size / dtype (what the graph machinery reads) and raises
PyTorch's "Could not run ... 'SparseCPU' backend" error for any array operation, so a
strided op given a sparse tensor fails clearly; the strided hot path is untouched (only
gradient accumulation, ``mm`` / ``matmul``, embedding's sparse path and the optimizers /
gradient clipping test the class attribute ``Tensor._sparse``).

Supported: creation (``sparse_coo_tensor``, ``Tensor.to_sparse`` / ``to_sparse_coo``),
``to_dense``, ``indices`` / ``values`` (coalesced only) / ``_indices`` / ``_values``,
``coalesce`` (sums duplicates, sorts), ``is_coalesced``, ``_nnz``, ``sparse_dim``,
``dense_dim`` (hybrid tensors), ``to(dtype)``, ``clone``, ``detach``, ``mul`` by a number,
sparse +- sparse (PyTorch's merge), dense +- sparse (dense; ``tgrad.add`` / ``sub`` with
alpha), sparse * sparse (the coalesced patterns' intersection, or an uncoalesced
operand's entries), ``sparse.sum``, ``sparse.mm`` /
``mm`` / ``@`` with a dense or sparse matrix, ``mv`` / ``@`` a vector, the zero-preserving
unary ops of ``_UNARY_OPS`` as methods (one table), as ``tgrad.sin(s)`` ... (the public
functions route a sparse operand here when the strided op raised) and in place
(``s.sin_()``), in-place ``mul_`` / ``div_`` / ``add_`` / ``sub_``, ``t`` / ``transpose`` /
``permute``, ``mul`` by a 0-d or broadcastable
dense tensor (either order), ``div`` (``rounding_mode`` too) / ``pow`` by a number,
``sum(dim, keepdim)``,
``sparse.softmax`` / ``log_softmax`` / ``addmm``, ``index_select``, ``narrow_copy``.
Gradients flow through all of them but index_select / narrow_copy (PyTorch's raise too).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function, once_differentiable
from tgrad.autograd.grad_mode import STATE
from tgrad.device import CPU
from tgrad.tensor import Storage, Tensor

__all__ = ["SparseTensor", "sparse_coo_tensor", "sum", "mm", "addmm", "softmax", "log_softmax"]

_SUPPORTED = ("to_dense, indices/values (coalesced), _indices/_values, coalesce, "
              "zero-preserving unary methods (s.sin(), s.abs(), ...), t/transpose/permute, "
              "in-place forms (s.sin_(), s.mul_(2), ...), tgrad.sin(s) ..., mul by a number / "
              "0-d / broadcastable dense tensor / sparse tensor, div by a number "
              "(rounding_mode too), "
              "pow, + and - (sparse or dense), sum (keepdim too), tgrad.sparse.sum / softmax / "
              "log_softmax / "
              "addmm, mm / @ with a dense or sparse matrix, mv, index_select, narrow_copy, "
              "to(dtype), clone, detach")


def unsupported(op: str) -> NotImplementedError:
    """PyTorch's error for an op with no sparse COO kernel, with what tgrad supports."""
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the 'SparseCPU' backend. tgrad's "
        f"sparse COO tensors support only: {_SUPPORTED}; convert with .to_dense() first")


class _SparseData:
    """``SparseTensor._data``: the metadata strided code reads (shape, ndim, size, dtype);
    any array operation raises ``unsupported``."""

    __slots__ = ("shape", "ndim", "size", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = shape
        self.ndim = len(shape)
        self.size = int(np.prod(shape, dtype=np.int64))
        self.dtype = dtype

    def __getattr__(self, name: str):
        raise unsupported(name)

    def __array__(self, *args, **kwargs):
        raise unsupported("to_numpy")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise unsupported(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        raise unsupported(func.__name__)

    def __getitem__(self, key):
        raise unsupported("index")

    def __setitem__(self, key, value):
        raise unsupported("index_put_")


def _data_op(name: str):
    def op(self, *args):
        raise unsupported(name)
    return op


# operators on the placeholder (looked up on the type, not through __getattr__)
for _name, _aten in (("neg", "neg"), ("pos", "positive"), ("abs", "abs"),
                     ("invert", "bitwise_not"), ("add", "add"), ("radd", "add"),
                     ("sub", "sub"), ("rsub", "sub"), ("mul", "mul"), ("rmul", "mul"),
                     ("truediv", "div"), ("rtruediv", "div"), ("pow", "pow"),
                     ("rpow", "pow"), ("matmul", "matmul"), ("rmatmul", "matmul"),
                     ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"),
                     ("floordiv", "floor_divide"), ("mod", "remainder")):
    setattr(_SparseData, f"__{_name}__", _data_op(_aten))


class _PartStorage(Storage):
    """The storage of a sparse tensor's ``_indices()`` / ``_values()`` tensors: their own
    array as root, the sparse tensor's version counter (``counter``), as PyTorch's parts
    share it. An in-place change through a part is then seen by a graph that saved the
    sparse tensor, and an in-place sparse op by one that saved a part."""

    __slots__ = ("counter",)

    def __init__(self, root, counter: Storage | None = None) -> None:
        # (not Storage.__init__: its ``version = 0`` would reset the shared counter; without
        # ``counter``, as ``type(storage)(root)`` makes for a detached alias, a fresh one)
        self.root = root
        self.counter = Storage(root) if counter is None else counter

    @property
    def version(self) -> int:
        return self.counter.version

    @version.setter
    def version(self, value: int) -> None:
        self.counter.version = value


class SparseTensor(Tensor):
    """A sparse COO tensor (layout ``tgrad.sparse_coo``); make one with
    ``tgrad.sparse_coo_tensor`` or ``Tensor.to_sparse()``."""

    __slots__ = ("_sp_indices", "_sp_values", "_coalesced")
    _sparse = True

    def __init__(self, indices: np.ndarray, values: np.ndarray, shape: tuple,
                 coalesced: bool, requires_grad: bool = False) -> None:
        # indices: int64 (sparse_dim, nnz); values: (nnz, *shape[sparse_dim:])
        Tensor.__init__(self, _SparseData(tuple(shape), values.dtype), None, CPU,
                        requires_grad)
        self._sp_indices = indices
        self._sp_values = values
        self._coalesced = bool(coalesced)

    # ------------------------------------------------------------------ metadata
    @property
    def layout(self):
        from tgrad._layout import sparse_coo
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    def sparse_dim(self) -> int:
        return self._sp_indices.shape[0]

    def dense_dim(self) -> int:
        return self._sp_values.ndim - 1

    def _nnz(self) -> int:
        return self._sp_values.shape[0]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def is_contiguous(self) -> bool:
        return False

    def stride(self, dim=None):
        raise RuntimeError("Sparse tensors do not have strides")

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def __repr__(self) -> str:
        from tgrad._tensor_str import sparse_repr
        return sparse_repr(self, self._sp_indices, self._sp_values)

    def _part(self, array: np.ndarray) -> Tensor:
        """An alias of ``array`` (the indices or the values) sharing this tensor's version
        counter."""
        return Tensor(array, _PartStorage(array, self._storage))

    def _indices(self) -> Tensor:
        return self._part(self._sp_indices)

    def _values(self) -> Tensor:
        return self._part(self._sp_values)

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._part(self._sp_indices)

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        _no_grad_through("values", self)
        return self._part(self._sp_values)

    # ------------------------------------------------------------------ conversions
    def coalesce(self) -> SparseTensor:
        """Duplicates summed, indices sorted (row-major); itself when already coalesced."""
        if self._coalesced:
            return self
        return Coalesce.apply(self)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense tensor; its gradient reaches this one masked to its pattern (a sparse
        gradient), or with ``masked_grad=False`` whole (a dense one), as PyTorch's."""
        out = ToDense.apply(self, masked_grad is not False)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim: int | None = None, *, layout=None,
                  blocksize=None, dense_dim=None) -> SparseTensor:
        _check_sparse_layout("to_sparse", layout)
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return self

    def to_sparse_coo(self) -> SparseTensor:
        return self

    def to(self, *args, **kwargs) -> Tensor:
        """``to(dtype)`` / ``to(device='cpu')``: the values cast (same indices)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("copy", None)
        for a in args:
            if isinstance(a, dtypes.DType):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            else:
                device = a
        if device is not None and str(device) != "cpu":
            raise unsupported("_to_copy (tgrad's sparse tensors are CPU-only)")
        if kwargs:
            raise TypeError(f"to(): unexpected keyword arguments {sorted(kwargs)}")
        if dtype is None or dtype is self.dtype:
            return self
        _no_grad_through("to", self)
        return SparseTensor(self._sp_indices, self._sp_values.astype(dtype.np), self.shape,
                            self._coalesced)

    def clone(self, *, memory_format=None) -> SparseTensor:
        return Clone.apply(self)

    def detach(self) -> SparseTensor:
        return SparseTensor(self._sp_indices, self._sp_values, self.shape, self._coalesced)

    # ------------------------------------------------------------------ arithmetic
    def mul(self, other) -> SparseTensor:
        """sparse * number, * a 0-d dense tensor, or * a dense tensor of the same shape: a
        sparse result with self's indices (coalesced flag kept), as PyTorch's."""
        if isinstance(other, Tensor):
            if other._sparse:
                if tuple(other.shape) != tuple(self.shape) or \
                        other.sparse_dim() != self.sparse_dim():
                    raise RuntimeError(
                        f"sparse_binary_op_intersection_cpu(): expects sparse inputs with "
                        f"equal dimensionality, number of sparse dimensions, and shape of "
                        f"sparse dimensions (mul of {list(self.shape)} (sparse_dim "
                        f"{self.sparse_dim()}) and {list(other.shape)} (sparse_dim "
                        f"{other.sparse_dim()}))")
                return MulSparse.apply(self, other)
            if other.ndim != 0 and tuple(other.shape) != tuple(self.shape):
                try:
                    fits = np.broadcast_shapes(tuple(other.shape), tuple(self.shape)) == \
                        tuple(self.shape)
                except ValueError:
                    fits = False
                if not fits:
                    raise RuntimeError(f"mul: tgrad multiplies a sparse tensor only by a "
                                       f"number, a 0-d tensor or a dense tensor that "
                                       f"broadcasts to its shape {list(self.shape)}; got "
                                       f"{list(other.shape)}")
                other = other.expand(self.shape)  # (PyTorch broadcasts the dense operand)
            if other.device.type != "cpu":
                raise RuntimeError(f"mul: expected all tensors to be on the same device, but "
                                   f"found cpu (sparse) and {other.device}")
            return MulDense.apply(self, other)
        if not isinstance(other, (int, float, bool, complex, np.number)):
            raise TypeError(f"mul(): argument 'other' must be Tensor or Number, not "
                            f"{type(other).__name__}")
        return MulScalar.apply(self, other)

    __mul__ = __rmul__ = mul

    def div(self, other, *, rounding_mode=None) -> SparseTensor:
        """sparse / a number or a 0-d tensor (values divided, same indices); with
        ``rounding_mode`` ('floor' / 'trunc') the input is coalesced first and the rounded
        quotient has a zero gradient, as PyTorch's."""
        if isinstance(other, Tensor):
            if other._sparse or other.ndim != 0:
                raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense "
                                   f"tensor divisor (got shape {list(other.shape)} for "
                                   f"divisor)")
            if other.requires_grad and STATE.enabled:
                raise NotImplementedError("div: tgrad does not differentiate a sparse "
                                          "tensor's 0-d divisor; pass divisor.detach()")
        elif not isinstance(other, (int, float, bool, complex, np.number)):
            raise TypeError(f"div(): argument 'other' must be Tensor or Number, not "
                            f"{type(other).__name__}")
        dt = dtypes.result_type(self, other)  # (a 0-d tensor's dtype promotes as its own)
        if isinstance(other, Tensor):
            other = other.item()
        if rounding_mode is not None:
            return _unary(self, "div", (other,), {"rounding_mode": rounding_mode})
        if not (dt.is_floating_point or dt.is_complex):  # true division of integers
            dt = dtypes.get_default_dtype()
        return DivScalar.apply(self, other, dt)

    __truediv__ = true_divide = divide = div

    def pow(self, exponent) -> SparseTensor:
        """sparse ** a number: coalesced, values raised (zero stays zero, so exponent 0
        raises PyTorch's error)."""
        if isinstance(exponent, Tensor):
            if exponent.ndim != 0 or exponent._sparse:
                raise unsupported("pow.Tensor_Tensor")
            exponent = exponent.item()
        if exponent == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would "
                               "make the result tensor dense")
        return _unary(self, "pow", (exponent,), {})

    __pow__ = pow  # noqa: A003

    def t(self) -> SparseTensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return self if self.ndim < 2 else self.transpose(0, 1)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        n = self.ndim
        perm = list(range(n))
        d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        if any(perm[d] != d for d in range(self.sparse_dim(), n)):
            return self.permute(*perm)  # (a hybrid tensor's dense dims: permute's error)
        return Permute.apply(self, tuple(perm), True)  # a copy of the values, as PyTorch's

    swapaxes = swapdims = transpose

    def permute(self, *dims) -> SparseTensor:
        """Sparse dims reordered among themselves (indices' rows permuted, values kept);
        the result is uncoalesced, as PyTorch's."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        n, sd = self.ndim, self.sparse_dim()
        perm = tuple(_wrap_dim(d, n) for d in dims)
        if sorted(perm) != list(range(n)):
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor "
                               f"input does not match the length of the desired ordering of "
                               f"dimensions i.e. input.dim() = {n} is not equal to "
                               f"len(dims) = {len(perm)}" if len(perm) != n else
                               "permute(): duplicate dims are not allowed.")
        if any(perm[d] != d for d in range(sd, n)):
            raise unsupported("permute (of a hybrid tensor's dense dims)")
        return Permute.apply(self, perm)

    def index_select(self, dim: int, index: Tensor) -> SparseTensor:
        """Entries whose index along ``dim`` is in ``index``, renumbered to its positions:
        for each position k, the entries at ``index[k]`` in storage order (PyTorch's order;
        uncoalesced)."""
        _no_grad_through("index_select", self)
        d = _wrap_dim(dim, self.ndim)
        idx = np.asarray(index.numpy(force=True) if isinstance(index, Tensor) else index)
        if idx.ndim > 1 or idx.dtype.kind not in "iu":
            raise IndexError("index_select(): Expected 1-D argument index of type Long or "
                             "Int")
        idx = idx.reshape(-1).astype(np.int64)
        size = self.shape[d]
        if idx.size and (idx.min() < -size or idx.max() >= size):
            raise IndexError(f"index_select(): index out of range for dim {d} of size {size}")
        idx = idx % max(size, 1)
        shape = self.shape[:d] + (len(idx),) + self.shape[d + 1:]
        sd = self.sparse_dim()
        if d >= sd:  # a dense dim: the values indexed
            return SparseTensor(self._sp_indices, np.take(self._sp_values, idx, axis=d - sd + 1),
                                shape, self._coalesced)
        hits = [np.nonzero(self._sp_indices[d] == i)[0] for i in idx.tolist()]
        take = np.concatenate(hits) if hits else np.zeros(0, np.int64)
        pos = np.repeat(np.arange(len(idx)), [len(h) for h in hits])
        new = self._sp_indices[:, take].copy()
        new[d] = pos
        return SparseTensor(new, self._sp_values[take], shape, False)

    def narrow_copy(self, dim: int, start: int, length: int) -> SparseTensor:
        """Entries with ``start <= index < start + length`` along ``dim`` (storage order),
        shifted by ``start``; uncoalesced, as PyTorch's."""
        _no_grad_through("narrow_copy", self)
        d = _wrap_dim(dim, self.ndim)
        size = self.shape[d]
        start = start + size if start < 0 else start
        if not (0 <= start <= size and 0 <= length <= size - start):
            raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size "
                             f"({size}).")
        shape = self.shape[:d] + (length,) + self.shape[d + 1:]
        sd = self.sparse_dim()
        if d >= sd:
            sl = [slice(None)] * self._sp_values.ndim
            sl[d - sd + 1] = slice(start, start + length)
            return SparseTensor(self._sp_indices, self._sp_values[tuple(sl)].copy(), shape,
                                self._coalesced)
        keep = (self._sp_indices[d] >= start) & (self._sp_indices[d] < start + length)
        new = self._sp_indices[:, keep].copy()
        new[d] -= start
        return SparseTensor(new, self._sp_values[keep], shape, False)

    def zero_(self) -> SparseTensor:
        """In place: no entries (nnz 0, coalesced), same shape, as PyTorch's sparse zero_."""
        return self._assign(SparseTensor(
            np.zeros((self.sparse_dim(), 0), np.int64),
            np.zeros((0,) + self._sp_values.shape[1:], self._sp_values.dtype), self.shape, True))

    def _assign(self, other: SparseTensor) -> SparseTensor:
        """In place: take ``other``'s entries (same shape) and, when ``other`` was recorded,
        its place in the graph; bumps the version counter. PyTorch's in-place sparse ops
        (``buf.mul_(m).add_(g)`` in the optimizers) keep the object."""
        self._sp_indices, self._sp_values = other._sp_indices, other._sp_values
        self._coalesced = other._coalesced
        if other._grad_fn is not None:  # (self may not have required grad before)
            self._grad_fn, self._output_nr = other._grad_fn, other._output_nr
            self._requires_grad = True
        self._storage.version += 1
        return self

    def _inplace(self, op: str, compute) -> SparseTensor:
        """``self`` replaced in place by ``compute(src)``, src being self's entries and
        place in the graph under a version counter of its own (PyTorch's original_self:
        what the op saves for backward stays valid); differentiable, as PyTorch's in-place
        sparse ops, but on a leaf that requires grad."""
        if self._requires_grad and STATE.enabled and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        src = SparseTensor(self._sp_indices, self._sp_values, self.shape, self._coalesced,
                           self._requires_grad)
        src._grad_fn, src._output_nr = self._grad_fn, self._output_nr
        out = compute(src)
        if out.dtype is not self.dtype:
            from tgrad.ops.inplace import check_castable
            check_castable(f"{op}: ", out.dtype, self.dtype)
            out = out.to(self.dtype)  # (PyTorch casts the result to self's dtype)
        return self._assign(out)

    def mul_(self, other) -> SparseTensor:
        return self._inplace("mul_", lambda src: src.mul(other))

    def div_(self, other, *, rounding_mode=None) -> SparseTensor:
        return self._inplace("div_", lambda src: src.div(other, rounding_mode=rounding_mode))

    def add_(self, other, *, alpha=1) -> SparseTensor:
        return self._inplace("add_", lambda src: src.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1) -> SparseTensor:
        return self._inplace("sub_", lambda src: src.sub(other, alpha=alpha))

    multiply_, divide_, true_divide_, subtract_ = mul_, div_, div_, sub_

    def add(self, other, *, alpha=1) -> Tensor:
        if not isinstance(other, Tensor) or not other._sparse:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        if other.shape != self.shape:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                               f"{list(self.shape)} != {list(other.shape)}")
        if alpha != 1:
            other = other.mul(alpha)
        return AddSparse.apply(self, other)

    __add__ = add

    def __radd__(self, other) -> Tensor:
        """dense + sparse: a dense tensor (PyTorch's add(dense, sparse))."""
        return binary("add", other, self)

    def sub(self, other, *, alpha=1) -> Tensor:
        """sparse - sparse: ``add(other, alpha=-alpha)`` (PyTorch's merge); sparse - dense
        raises PyTorch's add(sparse, dense) error."""
        _sub_check(self, other)
        return self.add(other, alpha=-alpha)

    __sub__ = subtract = sub

    def __rsub__(self, other) -> Tensor:
        """dense - sparse: a dense tensor."""
        return binary("sub", other, self)

    def __rtruediv__(self, other) -> Tensor:
        if not isinstance(other, Tensor):  # number / sparse: PyTorch's reciprocal error
            raise unsupported("reciprocal")
        return binary("div", other, self)

    def mv(self, vec: Tensor) -> Tensor:
        """sparse (n, m) @ dense vec (m,): a dense (n,) (``mm`` with a column; the sparse
        operand's gradient is dense, as PyTorch's mv)."""
        if not isinstance(vec, Tensor) or vec._sparse or self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, "
                               f"{getattr(vec, 'ndim', '?')}" + (
                                   " (tgrad: mv of a sparse matrix takes a dense vector)"
                                   if getattr(vec, "_sparse", False) else ""))
        if vec.shape[0] != self.shape[1]:
            raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat "
                               f"({self.shape[0]}x{self.shape[1]}), vec ({vec.shape[0]})")
        return _dense_mm(self, vec.unsqueeze(1)).squeeze(1)

    def sum(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """The sum over ``dim`` (default: all dims) of every element, the unspecified zeros
        included: PyTorch's dense gradient, g broadcast to every element
        (``tgrad.sparse.sum``'s is masked to the pattern)."""
        if dtype is None and not (self.dtype.is_floating_point or self.dtype.is_complex):
            dtype = dtypes.int64  # Tensor.sum of bools / integers: int64, as PyTorch's
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
        dims = _sum_dims(dims, self.ndim) if dims else tuple(range(self.ndim))
        if len(dims) == self.ndim and not keepdim:  # a full sum: a 0-d dense tensor
            return SumAllDense.apply(self, dtype)
        return SumDimDense.apply(self, dims, dtype, bool(keepdim))

    def mm(self, mat2: Tensor) -> Tensor:
        return _dense_mm(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        """sparse @ a dense vector: ``mv``; @ a matrix: ``mm``."""
        if isinstance(other, Tensor) and other.ndim == 1 and self.ndim == 2:
            return self.mv(other)
        return _dense_mm(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other: Tensor) -> Tensor:
        # dense @ sparse: PyTorch gives the sparse operand the whole dense gradient
        return other @ self.to_dense(masked_grad=False)


def _no_grad_through(op: str, t: SparseTensor) -> None:
    """An op tgrad does not differentiate on sparse tensors: refuse one that would be
    recorded (rather than silently drop the gradient)."""
    if STATE.enabled and t._requires_grad:
        raise NotImplementedError(
            f"{op}: tgrad does not differentiate this op on a sparse tensor that requires "
            f"grad; its differentiable sparse ops: {_SUPPORTED} but index_select / "
            f"narrow_copy (use .detach() to leave the graph)")


def _check_sparse_layout(op: str, layout) -> None:
    from tgrad._layout import layout as layout_type
    from tgrad._layout import sparse_coo
    if layout is not None and layout is not sparse_coo:
        if not isinstance(layout, layout_type):
            raise TypeError(f"{op}(): argument 'layout' must be tgrad.layout, not "
                            f"{type(layout).__name__}")
        raise RuntimeError(f"{op}: layout={layout!r} is not supported: tgrad has only the "
                           f"sparse_coo sparse layout")


# ---------------------------------------------------------------------- NumPy kernels
def _linear(indices: np.ndarray, sizes: tuple) -> np.ndarray:
    """Row-major linear position of each index column over the sparse ``sizes``."""
    if indices.shape[0] == 0:
        return np.zeros(indices.shape[1], np.int64)
    return np.ravel_multi_index(tuple(indices), sizes)


def _coalesce(indices: np.ndarray, values: np.ndarray, shape: tuple):
    """Sorted unique indices and the summed values of duplicates."""
    sd = indices.shape[0]
    lin = _linear(indices, shape[:sd])
    uniq, inv = np.unique(lin, return_inverse=True)
    out = np.zeros((len(uniq),) + values.shape[1:], values.dtype)
    np.add.at(out, inv.reshape(-1), values)
    idx = (np.array(np.unravel_index(uniq, shape[:sd]), dtype=np.int64).reshape(sd, -1)
           if sd else np.zeros((0, len(uniq)), np.int64))
    return idx, out


def _to_dense_array(t: SparseTensor) -> np.ndarray:
    out = np.zeros(t.shape, t._sp_values.dtype)
    if t.sparse_dim() == 0:
        if t._nnz():
            out[...] = t._sp_values.sum(axis=0)
        return out
    np.add.at(out, tuple(t._sp_indices), t._sp_values)
    return out


def _merge_add(a: SparseTensor, b: SparseTensor):
    """PyTorch's add of two sparse COO tensors -> (indices, values, coalesced flag): one pass
    over both entry lists in order, taking the smaller linear index first and summing entries
    whose indices are equal (two coalesced operands give a coalesced result; otherwise
    duplicates may remain). Values that are not contiguous (an expanded gradient, as
    sparse.sum's) take PyTorch's other kernel: a's entries then b's, uncoalesced."""
    dtype = dtypes.result_type(a, b).np  # PyTorch's promotion (NumPy: int + float32 is f64)
    if not (a._sp_values.flags.c_contiguous and b._sp_values.flags.c_contiguous):
        return (np.concatenate([a._sp_indices, b._sp_indices], axis=1),
                np.concatenate([a._sp_values.astype(dtype), b._sp_values.astype(dtype)]),
                False)
    sizes = a.shape[:a.sparse_dim()]
    la, lb = _linear(a._sp_indices, sizes).tolist(), _linear(b._sp_indices, sizes).tolist()
    va, vb = a._sp_values.astype(dtype), b._sp_values.astype(dtype)
    take_a, take_b, out_from = [], [], []  # per output entry: source positions
    i = j = 0
    na, nb = len(la), len(lb)
    while i < na or j < nb:
        if j >= nb or (i < na and la[i] < lb[j]):
            take_a.append(i), take_b.append(-1), out_from.append(la[i])
            i += 1
        elif i >= na or lb[j] < la[i]:
            take_a.append(-1), take_b.append(j), out_from.append(lb[j])
            j += 1
        else:
            take_a.append(i), take_b.append(j), out_from.append(la[i])
            i += 1
            j += 1
    ta, tb = np.array(take_a, np.int64), np.array(take_b, np.int64)
    vals = np.zeros((len(ta),) + va.shape[1:], dtype)
    vals[ta >= 0] += va[ta[ta >= 0]]
    vals[tb >= 0] += vb[tb[tb >= 0]]
    sd = a.sparse_dim()
    lin = np.array(out_from, np.int64)
    idx = (np.array(np.unravel_index(lin, sizes), dtype=np.int64).reshape(sd, -1)
           if sd else np.zeros((0, len(lin)), np.int64))
    return idx, vals, a._coalesced and b._coalesced


def add_dense_(dense: Tensor, s: SparseTensor, alpha: float = 1) -> None:
    """``dense.add_(s, alpha=alpha)`` outside autograd (optimizer updates): each entry's
    ``alpha * value`` added at its index, duplicates one after another (PyTorch's
    add(dense, sparse)); ``dense`` is a CPU tensor of ``s``'s shape."""
    if dense.device.type != "cpu":
        raise RuntimeError(f"add_: expected all tensors to be on the same device, but found "
                           f"{dense.device} (dense) and cpu (sparse)")
    if tuple(dense.shape) != tuple(s.shape):
        raise RuntimeError(f"add_: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size {list(s.shape)}")
    vals = (s._sp_values if alpha == 1 else s._sp_values * alpha).astype(dense._data.dtype,
                                                                          copy=False)
    if s.sparse_dim() == 0:
        np.add(dense._data, vals.sum(axis=0), out=dense._data)
    else:
        np.add.at(dense._data, tuple(s._sp_indices), vals)
    dense._storage.version += 1


def _pattern_indices(t: SparseTensor) -> np.ndarray:
    """t's coalesced pattern: its distinct indices, sorted."""
    return t._sp_indices if t._coalesced else _coalesce(t._sp_indices, t._sp_values,
                                                         t.shape)[0]


def _pattern_of(t: SparseTensor, dense: np.ndarray) -> SparseTensor:
    """``dense`` (t's shape) masked to t's coalesced pattern (PyTorch's gradient of a sparse
    input of to_dense / sparse.mm): distinct sorted indices, but flagged uncoalesced, as
    PyTorch's sparse_mask result."""
    idx = _pattern_indices(t)
    return SparseTensor(idx, np.ascontiguousarray(dense[tuple(idx)]), t.shape, False)


def _wrap_dim(d: int, n: int) -> int:
    if not -n <= d < max(n, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % max(n, 1)


def _values_at(g: Tensor, indices: np.ndarray, shape: tuple) -> np.ndarray:
    """The entries of a gradient ``g`` (dense, or sparse of ``shape``) at the index columns
    ``indices`` (sparse_dim, nnz): (nnz, *dense_shape); a sparse g's missing entries are 0."""
    if not g._sparse:
        return np.asarray(g.numpy())[tuple(indices)]
    gi, gv = (g._sp_indices, g._sp_values) if g._coalesced else _coalesce(
        g._sp_indices, g._sp_values, shape)
    return _entries_at(gi, gv, indices, shape[:indices.shape[0]])


def _entries_at(gi: np.ndarray, gv: np.ndarray, indices: np.ndarray,
                sizes: tuple) -> np.ndarray:
    """The values of coalesced entries (gi, gv) at the index columns ``indices`` over the
    sparse ``sizes``: (nnz, *dense_shape), 0 where there is no entry."""
    glin, want = _linear(gi, sizes), _linear(indices, sizes)
    pos = np.searchsorted(glin, want)
    hit = pos < len(glin)
    hit[hit] = glin[pos[hit]] == want[hit]
    out = np.zeros((indices.shape[1],) + gv.shape[1:], gv.dtype)
    out[hit] = gv[pos[hit]]
    return out


def _spsp(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """A @ B of two 2-D sparse matrices: a coalesced sparse (m, n) holding every (i, j) that
    some a[i, p] b[p, j] pair of stored entries reaches (PyTorch's pattern)."""
    ai, av = _coalesce(a._sp_indices, a._sp_values, a.shape)
    bi, bv = _coalesce(b._sp_indices, b._sp_values, b.shape)  # sorted by row p
    lo = np.searchsorted(bi[0], ai[1], "left")
    hi = np.searchsorted(bi[0], ai[1], "right")
    cnt = hi - lo
    rep = np.repeat(np.arange(len(ai[1])), cnt)  # A entry of each pair
    start = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt) if len(cnt) else \
        np.zeros(0, np.int64)
    bj = np.arange(len(rep)) + start  # B entry of each pair
    shape = (a.shape[0], b.shape[1])
    dtype = np.result_type(av, bv)
    idx = np.stack([ai[0][rep], bi[1][bj]]).astype(np.int64).reshape(2, -1)
    idx, vals = _coalesce(idx, (av[rep] * bv[bj]).astype(dtype), shape)
    return SparseTensor(idx, vals, shape, True)


def _as_sparse(g: Tensor) -> SparseTensor:
    """A gradient as a sparse tensor (a dense one: its non-zeros)."""
    return g if g._sparse else to_sparse(g.detach())


# ---------------------------------------------------------------------- differentiable ops
class ToDense(Function):
    """y = dense(S);  dS = g at S's (coalesced) pattern, a sparse tensor (PyTorch's
    default), or g itself, dense (``masked``=False: to_dense(masked_grad=False))."""

    name = "to_dense"
    node_name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, s, masked):
        ctx.s, ctx.masked = s.detach(), masked
        return Tensor(_to_dense_array(s))

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return (_pattern_of(ctx.s, g.numpy()) if ctx.masked else g), None


class Clone(Function):
    """y = S (a copy);  dS = g."""

    name = "clone_sparse"
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, s):
        return SparseTensor(s._sp_indices.copy(), s._sp_values.copy(), s.shape, s._coalesced)

    @staticmethod
    def backward(ctx, g):
        return g


class MulScalar(Function):
    """y = c S (values scaled, same indices);  dS = c g."""

    name = "mul_sparse"
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, s, c):
        ctx.c = c
        dt = dtypes.result_type(s, c).np  # PyTorch's promotion (bool * 2 is int64)
        vals = (s._sp_values.astype(dt, copy=False) * c).astype(dt, copy=False)
        return SparseTensor(s._sp_indices, vals, s.shape, s._coalesced)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return g * ctx.c, None


class AddSparse(Function):
    """y = A + B (both sparse, same shape; PyTorch's merge);  dA = dB = g."""

    name = "add_sparse"
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b):
        idx, vals, coalesced = _merge_add(a, b)
        return SparseTensor(idx, vals, a.shape, coalesced)

    @staticmethod
    def backward(ctx, g):
        return g, g


class SumAll(Function):
    """y = sum of all values (a 0-d dense tensor);  dS = g at S's coalesced pattern."""

    name = "sparse_sum"
    node_name = "SparseSumBackward0"

    @staticmethod
    def forward(ctx, s, dtype):
        ctx.s = s.detach()
        vals = s._sp_values if dtype is None else s._sp_values.astype(dtype.np)
        return Tensor(np.asarray(vals.sum(), vals.dtype))

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        # g expanded over s's coalesced pattern: a coalesced gradient whose values are an
        # expanded (stride-0) array, as PyTorch's, so adding it to another sparse gradient
        # concatenates (_merge_add; AccumulateGrad keeps a contiguous copy)
        s = ctx.s
        idx = _pattern_indices(s)
        vals = np.broadcast_to(np.asarray(g.item(), s._sp_values.dtype),
                               (idx.shape[1],) + s._sp_values.shape[1:])
        return SparseTensor(idx, vals, s.shape, True), None


class SumAllDense(SumAll):
    """``Tensor.sum()`` of a sparse tensor (every element, the unspecified zeros too):
    y = sum of all values;  dS = g at every element, a dense gradient (PyTorch's sum
    backward expands g; ``tgrad.sparse.sum``'s is masked instead)."""

    name = "sparse_sum_dense_grad"
    node_name = "SumBackward0"

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        s = ctx.s
        return Tensor(np.full(s.shape, g.item(), s._sp_values.dtype)), None


class Coalesce(Function):
    """y = S with duplicates summed;  dS = g (each duplicate gets its index's gradient)."""

    name = "coalesce_sparse"
    node_name = "CoalesceBackward0"

    @staticmethod
    def forward(ctx, s):
        idx, val = _coalesce(s._sp_indices, s._sp_values, s.shape)
        return SparseTensor(idx, val, s.shape, True)

    @staticmethod
    def backward(ctx, g):
        return g


class Permute(Function):
    """y = S with its sparse dims reordered by ``perm`` (indices' rows; uncoalesced);
    dS = g permuted back."""

    name = "permute_sparse"
    node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, s, perm, copy=False):
        # copy: new values (transpose / t(), as PyTorch's); permute shares them
        ctx.perm = perm
        sd = s.sparse_dim()
        return SparseTensor(s._sp_indices[list(perm[:sd])],
                            s._sp_values.copy() if copy else s._sp_values,
                            tuple(s.shape[d] for d in perm), False)

    @staticmethod
    def backward(ctx, g):
        inv = tuple(int(i) for i in np.argsort(ctx.perm))
        return (g.permute(*inv) if g._sparse else g.permute(inv)), None, None


class MulDense(Function):
    """y = S * D (D dense: S's shape, or 0-d), a sparse tensor with S's indices and values
    v * D[idx];  dS = g[idx] * D[idx] (sparse, S's indices);  dD = g[idx] * v at S's indices
    (a sparse gradient for a leaf D, as PyTorch's; dense otherwise), summed for a 0-d D."""

    name = "mul_sparse_dense"
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, s, d):
        ctx.save_for_backward(s, d)  # (version-checked: an in-place change raises)
        dn = np.asarray(d.detach().numpy())
        dv = dn if d.ndim == 0 else dn[tuple(s._sp_indices)]
        # PyTorch's promotion (a 0-d operand does not promote within its category; NumPy
        # would make int * float32 float64)
        vals = (s._sp_values * dv).astype(dtypes.result_type(s, d).np, copy=False)
        return SparseTensor(s._sp_indices, vals, s.shape, s._coalesced)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        s, d = ctx.saved_tensors
        d = d.detach()
        idx = s._sp_indices
        gv = _values_at(g, idx, s.shape)
        dn = np.asarray(d.numpy())
        ds = dd = None
        if ctx.needs_input_grad[0]:  # at S's coalesced pattern (a duplicate counts once)
            cidx = idx if s._coalesced else _coalesce(idx, s._sp_values, s.shape)[0]
            cg = _values_at(g, cidx, s.shape)
            ds = SparseTensor(cidx, (cg * (dn if d.ndim == 0 else dn[tuple(cidx)])).astype(
                s._sp_values.dtype, copy=False), s.shape, True)
        if ctx.needs_input_grad[1]:
            prod = (gv * s._sp_values).astype(dn.dtype, copy=False)
            if d.ndim == 0:
                dd = Tensor(np.asarray(prod.sum(), dn.dtype))
            else:
                from tgrad.autograd.node import AccumulateGrad
                sp = SparseTensor(idx, prod, s.shape, s._coalesced)
                dd = sp if isinstance(ctx._edges[1][0], AccumulateGrad) else Tensor(
                    _to_dense_array(sp))
        return ds, dd


class DivScalar(Function):
    """y = S / c (values divided; integers give the default float dtype);  dS = g / c."""

    name = "div_sparse"
    node_name = "DivBackward0"

    @staticmethod
    def forward(ctx, s, c, dt):
        # dt: the result dtype (PyTorch's promotion of the values and the divisor, a
        # floating or complex one)
        ctx.c = c
        vals = (s._sp_values.astype(dt.np) / c).astype(dt.np, copy=False)
        return SparseTensor(s._sp_indices, vals, s.shape, s._coalesced)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return g.div(ctx.c) if g._sparse else g / ctx.c, None, None


def _mul_entries(xi: np.ndarray, xv: np.ndarray, xc: bool, yi: np.ndarray,
                 yv: np.ndarray, yc: bool, shape: tuple):
    """sparse * sparse's entries as PyTorch's sparse_binary_op_intersection ->
    (indices, values, coalesced flag); xv and yv already of the result dtype. Both
    coalesced: the patterns' intersection (coalesced). Otherwise the result keeps every entry
    of the uncoalesced operand (of the one with fewer entries when both are, the second on
    a tie), each times the other's coalesced value there (0 where it has none, kept), flagged
    uncoalesced. An operand without entries gives an empty coalesced result."""
    sd = xi.shape[0]
    sizes = shape[:sd]
    if not (xi.shape[1] and yi.shape[1]):
        return xi[:, :0], (xv[:0] * yv[:0]), True
    if xc and yc:
        _, pa, pb = np.intersect1d(_linear(xi, sizes), _linear(yi, sizes),
                                   assume_unique=True, return_indices=True)
        return xi[:, pa], xv[pa] * yv[pb], True
    u_is_x = (not xc) if (xc or yc) else xi.shape[1] < yi.shape[1]
    (ui, uv), (si, sv) = ((xi, xv), (yi, yv)) if u_is_x else ((yi, yv), (xi, xv))
    if not (yc if u_is_x else xc):
        si, sv = _coalesce(si, sv, shape)
    return ui, uv * _entries_at(si, sv, ui, sizes), False


class MulSparse(Function):
    """y = A * B (both sparse, same shape), PyTorch's entries (see ``_mul_entries``: the
    coalesced intersection of two coalesced operands, else an uncoalesced operand's pattern);
    dA = g * conj(B), dB = g * conj(A) by the same rule (a sparse g taken coalesced, as
    to_dense's masked gradient; a dense g: the operand's own pattern, its values times g
    there), cast to each input's dtype."""

    name = "mul_sparse_sparse"
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, a, b):
        dt = dtypes.result_type(a, b).np
        ctx.a = (a._sp_indices, a._sp_values.astype(dt, copy=False), a._coalesced)
        ctx.b = (b._sp_indices, b._sp_values.astype(dt, copy=False), b._coalesced)
        ctx.shape, ctx.dts = a.shape, (a._sp_values.dtype, b._sp_values.dtype)
        ctx.save_for_backward(a, b)  # (version-checked: an in-place change raises)
        idx, vals, coalesced = _mul_entries(*ctx.a, *ctx.b, a.shape)
        return SparseTensor(idx, vals, a.shape, coalesced)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        ctx.saved_tensors  # noqa: B018  (the version check)
        shape = ctx.shape

        def times_g(other, dt):  # g * conj(other), other's entries (oi, ov, coalesced flag)
            oi, ov, oc = other
            ov = np.conj(ov)
            if not g._sparse:  # dense g: other's pattern
                gv = _values_at(g, oi, shape)
                return SparseTensor(oi, (ov * gv).astype(dt, copy=False), shape, oc)
            gi, gv = (g._sp_indices, g._sp_values) if g._coalesced else _coalesce(
                g._sp_indices, g._sp_values, shape)
            idx, vals, coalesced = _mul_entries(gi, gv, True, oi, ov, oc, shape)
            return SparseTensor(idx, vals.astype(dt, copy=False), shape, coalesced)

        da = times_g(ctx.b, ctx.dts[0]) if ctx.needs_input_grad[0] else None
        db = times_g(ctx.a, ctx.dts[1]) if ctx.needs_input_grad[1] else None
        return da, db


class AddDenseSparse(Function):
    """y = D + alpha S (D dense, S sparse, same shape; a dense result, PyTorch's
    add(dense, sparse)); dD = g, dS = alpha g, both dense (PyTorch's layouts)."""

    name = "add_dense_sparse"
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, d, s, alpha):
        ctx.alpha = alpha
        dt = dtypes.result_type(d, s).np
        out = np.array(d.numpy(), dtype=dt, copy=True)
        vals = s._sp_values.astype(dt, copy=False)
        if alpha != 1:
            vals = (vals * alpha).astype(dt, copy=False)
        if s.sparse_dim() == 0:
            out += vals.sum(axis=0)
        else:
            np.add.at(out, tuple(s._sp_indices), vals)
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha), None


class SparseUnary(Function):
    """y = f(S) for a zero-preserving elementwise f (``_UNARY_OPS``): S coalesced first
    (except for the ops linear in S), f applied to the values by the dense op;
    dS = g[idx] * f'(v) at S's coalesced indices, f' from the dense op's own backward."""

    name = "sparse_unary"
    node_name = "SparseUnaryBackward0"

    @staticmethod
    def forward(ctx, s, op, args, kwargs):
        cidx, cv = (s._sp_indices, s._sp_values) if s._coalesced else _coalesce(
            s._sp_indices, s._sp_values, s.shape)
        ctx.idx, ctx.v, ctx.op, ctx.args, ctx.kwargs = cidx, cv, op, args, kwargs
        ctx.save_for_backward(s)  # (version-checked: an in-place change of S raises)
        idx, v = (cidx, cv) if _UNARY_OPS[op] else (s._sp_indices, s._sp_values)
        out = getattr(Tensor(v), op)(*args, **kwargs)
        return SparseTensor(idx, np.asarray(out.numpy()), s.shape,
                            s._coalesced or _UNARY_OPS[op])

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        from tgrad.autograd import grad as autograd_grad
        from tgrad.autograd.grad_mode import enable_grad
        ctx.saved_tensors  # noqa: B018  (the version check)
        shape = ctx._in_meta[0][0]
        if ctx.op in _ZERO_GRAD_OPS and ctx.v.dtype.kind != "c":  # piecewise constant: no
            return SparseTensor(np.zeros((len(ctx.idx), 0), np.int64),  # entries (PyTorch's
                                np.zeros((0,) + ctx.v.shape[1:], ctx.v.dtype),  # zeros_like)
                                shape, True), None, None, None
        gv = _values_at(g, ctx.idx, shape)
        with enable_grad():
            x = Tensor(ctx.v, requires_grad=True)
            y = getattr(x, ctx.op)(*ctx.args, **ctx.kwargs)
            (dv,) = autograd_grad(y, x, Tensor(gv.astype(ctx.v.dtype, copy=False)),
                                  allow_unused=True)
        dv = np.zeros_like(ctx.v) if dv is None else np.asarray(dv.numpy())
        return SparseTensor(ctx.idx, dv, shape, True), None, None, None


# ops whose gradient is PyTorch's zeros_like(grad): a sparse gradient without entries
_ZERO_GRAD_OPS = frozenset(("sign", "sgn", "floor", "ceil", "round", "trunc", "fix", "div"))


def _unary(s: SparseTensor, op: str, args: tuple, kwargs: dict) -> SparseTensor:
    out = SparseUnary.apply(s, op, args, kwargs)
    if not out.dtype.is_floating_point and not out.dtype.is_complex and out.requires_grad:
        out = out.detach()  # bool / integer results (isnan, signbit, ...) have no gradient
    return out


class SumDim(Function):
    """y = S summed over ``dims`` (sparse while sparse dims remain, else dense);
    dS = g broadcast back over the summed dims, at S's coalesced pattern."""

    name = "sparse_sum_dim"
    node_name = "SparseSumBackward0"

    @staticmethod
    def forward(ctx, s, dims, dtype):
        ctx.s, ctx.dims = s.detach(), dims
        sd = s.sparse_dim()
        vals = s._sp_values if dtype is None else s._sp_values.astype(dtype.np)
        dense_axes = tuple(d - sd + 1 for d in dims if d >= sd)
        if dense_axes:
            vals = vals.sum(axis=dense_axes)
        keep = [d for d in range(sd) if d not in dims]
        shape = tuple(n for d, n in enumerate(s.shape) if d not in dims)
        if not keep:
            return Tensor(np.asarray(vals.sum(axis=0), vals.dtype))
        idx, out = _coalesce(s._sp_indices[keep], vals, shape)
        return SparseTensor(idx, out, shape, True)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return _pattern_of(ctx.s, _summed_grad(ctx, g, True)), None, None


def _summed_grad(ctx, g, expand: bool) -> np.ndarray:
    """The gradient of a sum of sparse ``ctx.s`` over ``ctx.dims``: g (dense or sparse) as a
    dense array in s's dtype broadcast back to s's shape (``expand``: the summed dims were
    dropped, so they are put back first). A read-only broadcast view."""
    s = ctx.s
    gd = _to_dense_array(g) if g._sparse else np.asarray(g.numpy())
    if expand:
        gd = np.expand_dims(gd, tuple(ctx.dims))
    return np.broadcast_to(gd.astype(s._sp_values.dtype, copy=False), s.shape)


class SumDimDense(Function):
    """``Tensor.sum(dims, keepdim)`` of a sparse tensor: y = ``SumDim``'s sum, with keepdim
    the summed dims kept as size 1 (index 0 in the indices, a values axis of 1; a sparse
    result flagged uncoalesced, as PyTorch's);  dS = g broadcast back over the summed dims
    to every element, dense (PyTorch's SumBackward1 expands g; for a sparse result its
    backward raises, having no sparse expand)."""

    name = "sparse_sum_dim_dense_grad"
    node_name = "SumBackward1"

    @staticmethod
    def forward(ctx, s, dims, dtype, keepdim):
        out = SumDim.forward(ctx, s, dims, dtype)
        ctx.keepdim = keepdim
        if not keepdim:
            return out
        if not out._sparse:
            return Tensor(np.expand_dims(np.asarray(out.numpy()), dims))
        sd = s.sparse_dim()
        kept = [d for d in range(sd) if d not in dims]  # rows of out's indices, in order
        idx = np.zeros((sd, out._nnz()), np.int64)
        idx[kept] = out._sp_indices
        vals = np.expand_dims(out._sp_values, tuple(d - sd + 1 for d in dims if d >= sd))
        shape = tuple(1 if d in dims else n for d, n in enumerate(s.shape))
        return SparseTensor(idx, vals, shape, False)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return Tensor(np.array(_summed_grad(ctx, g, not ctx.keepdim))), None, None, None


class SparseSparseMM(Function):
    """y = A @ B (both sparse 2-D; a coalesced sparse result);  dA = g @ B^T,
    dB = A^T @ g, sparse products (masked to the operand's coalesced pattern for
    ``tgrad.sparse.mm``, as PyTorch's)."""

    name = "sparse_sparse_mm"
    node_name = "SparseSparseMatmulBackward0"

    @staticmethod
    def forward(ctx, a, b, masked):
        ctx.save_for_backward(a, b)  # (version-checked: an in-place change raises)
        ctx.masked = masked
        return _spsp(a, b)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        gs = _as_sparse(g)
        da = db = None
        if ctx.needs_input_grad[0]:
            da = _spsp(gs, _t(b))
            if ctx.masked:
                da = _mask_like_grad(a, da)
        if ctx.needs_input_grad[1]:
            db = _spsp(_t(a), gs)
            if ctx.masked:
                db = _mask_like_grad(b, db)
        return da, db, None


def _t(s: SparseTensor) -> SparseTensor:
    return SparseTensor(s._sp_indices[::-1].copy(), s._sp_values, s.shape[::-1], False)


def _mask_like_grad(x: SparseTensor, gx: SparseTensor) -> SparseTensor:
    """The coalesced gradient ``gx`` masked to x's pattern in PyTorch's layout
    (sparse_mask_like_grad): for a coalesced x with fewer entries than gx, x's indices
    (gx.sparse_mask(x): flagged uncoalesced); otherwise gx's indices, zero where x has no
    entry (gx._sparse_mask_projection(x)). The same values either way."""
    if x._coalesced and x._nnz() < gx._nnz():
        return SparseTensor(x._sp_indices, _values_at(gx, x._sp_indices, x.shape), x.shape,
                            False)
    sizes = x.shape[:x.sparse_dim()]
    hit = np.isin(_linear(gx._sp_indices, sizes), _linear(_pattern_indices(x), sizes))
    vals = gx._sp_values * hit.reshape((-1,) + (1,) * (gx._sp_values.ndim - 1))
    return SparseTensor(gx._sp_indices, vals.astype(gx._sp_values.dtype, copy=False), x.shape,
                        True)


class Softmax(Function):
    """y = softmax (or log_softmax) of S's stored entries along ``dim``, the implicit zeros
    left out (PyTorch's sparse softmax; coalesced). With e = entries sharing the other
    indices: softmax dS = y (g - sum_e g y);  log_softmax dS = g - exp(y) sum_e g."""

    name = "sparse_softmax"
    node_name = "SparseSoftmaxBackward0"

    @staticmethod
    def forward(ctx, s, dim, log):
        idx, v = (s._sp_indices, s._sp_values) if s._coalesced else _coalesce(
            s._sp_indices, s._sp_values, s.shape)
        sd = s.sparse_dim()
        ctx.idx, ctx.log, ctx.dim = idx, log, dim
        if dim >= sd:  # a dense dim: an ordinary softmax of each entry's values
            ax = dim - sd + 1
            m = v.max(axis=ax, keepdims=True) if v.size else v
            z = v - m
            lse = np.log(np.exp(z).sum(axis=ax, keepdims=True))
            y = z - lse if log else np.exp(z - lse)
        else:
            others = [d for d in range(sd) if d != dim]
            key = _linear(idx[others], tuple(s.shape[d] for d in others))
            _, grp = np.unique(key, return_inverse=True)
            ctx.grp = grp = grp.reshape(-1)
            ng = int(grp.max()) + 1 if len(grp) else 0
            m = np.full((ng,) + v.shape[1:], -np.inf, v.dtype)
            np.maximum.at(m, grp, v)
            z = v - m[grp]
            tot = np.zeros_like(m)
            np.add.at(tot, grp, np.exp(z))
            y = z - np.log(tot)[grp] if log else np.exp(z) / tot[grp]
        ctx.y = y
        return SparseTensor(idx, y, s.shape, True)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        shape = ctx._in_meta[0][0]
        sd = len(ctx.idx)
        gv = _values_at(g, ctx.idx, shape)
        y = ctx.y
        if ctx.dim >= sd:
            ax = ctx.dim - sd + 1
            if ctx.log:
                dv = gv - np.exp(y) * gv.sum(axis=ax, keepdims=True)
            else:
                dv = y * (gv - (gv * y).sum(axis=ax, keepdims=True))
        else:
            grp = ctx.grp
            ng = int(grp.max()) + 1 if len(grp) else 0
            acc = np.zeros((ng,) + y.shape[1:], y.dtype)
            np.add.at(acc, grp, gv if ctx.log else gv * y)
            dv = gv - np.exp(y) * acc[grp] if ctx.log else y * (gv - acc[grp])
        return SparseTensor(ctx.idx, dv, shape, True), None, None


class SparseDenseMM(Function):
    """y = S @ D (S sparse (m, k), D dense (k, n));
    dD = S^T @ g;  dS = g @ D^T, dense for ``tgrad.mm`` / ``@`` and masked to S's
    coalesced pattern (sparse) for ``tgrad.sparse.mm``, as PyTorch's."""

    name = "sparse_mm"
    node_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx, s, d, masked):
        ctx.masked = masked
        ctx.save_for_backward(s, d)  # (version-checked: an in-place change raises)
        rows, cols = s._sp_indices
        dn = d.detach().numpy()
        out = np.zeros((s.shape[0], d.shape[1]), np.result_type(s._sp_values, dn))
        np.add.at(out, rows, s._sp_values[:, None] * dn[cols])
        return Tensor(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        s, d = ctx.saved_tensors
        d, gn = d.detach().numpy(), g.numpy()
        ds = dd = None
        if ctx.needs_input_grad[0]:
            full = gn @ d.T
            ds = _pattern_of(s, full) if ctx.masked else Tensor(full)
        if ctx.needs_input_grad[1]:
            rows, cols = s._sp_indices
            acc = np.zeros(d.shape, gn.dtype)
            np.add.at(acc, cols, s._sp_values[:, None] * gn[rows])
            dd = Tensor(acc)
        return ds, dd, None


class SparseEmbedding(Function):
    """y = weight[input] (rows);  dweight: a sparse COO tensor, uncoalesced as PyTorch's:
    indices = input flattened (positions equal to ``padding_idx`` left out), values = the
    matching rows of g (nnz, embedding_dim). A weight that is not a leaf gets the same
    gradient dense (tgrad's dense ops take no sparse gradient)."""

    name = "embedding_sparse"
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, input, padding_idx, scale_grad_by_freq):  # noqa: A002
        ctx.input = input.numpy(force=True).reshape(-1).astype(np.int64)
        ctx.padding_idx, ctx.scale = padding_idx, scale_grad_by_freq
        return weight[input]

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        if ctx.scale:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                               "sparse gradients")
        from tgrad.autograd.node import AccumulateGrad
        shape = ctx._in_meta[0][0]
        idx = ctx.input
        vals = np.ascontiguousarray(g.numpy(force=True).reshape(-1, shape[1]))
        if ctx.padding_idx is not None:
            keep = idx != ctx.padding_idx
            idx, vals = idx[keep], vals[keep]
        grad = SparseTensor(idx.reshape(1, -1), vals, shape, len(idx) <= 1)
        if not isinstance(ctx._edges[0][0], AccumulateGrad):
            return Tensor(_to_dense_array(grad)), None, None, None
        return grad, None, None, None


def sparse_embedding(weight: Tensor, input: Tensor, padding_idx: int | None,  # noqa: A002
                     scale_grad_by_freq: bool) -> Tensor:
    """F.embedding(..., sparse=True) (padding_idx already wrapped to [0, rows))."""
    if weight.device.type != "cpu":
        raise NotImplementedError("embedding: sparse=True is CPU-only in tgrad (its sparse "
                                  "tensors are); use sparse=False on cuda")
    return SparseEmbedding.apply(weight, input, padding_idx, scale_grad_by_freq)


# ---------------------------------------------------------------------- public functions
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with ``values[j]`` at ``indices[:, j]`` (duplicates are summed
    by ``coalesce`` / ``to_dense``). ``indices``: integer (sparse_dim, nnz); ``values``:
    (nnz, *dense_shape); ``size``: inferred as each sparse dim's max index + 1 (and the
    values' dense shape) when None. tgrad always checks that indices are in range and
    non-negative (PyTorch only with ``check_invariants=True``)."""
    if device is not None and str(device) != "cpu":
        raise NotImplementedError("sparse_coo_tensor: tgrad's sparse tensors are CPU-only "
                                  f"(got device={device!r})")
    idx_t = indices if isinstance(indices, Tensor) else None
    val_t = values if isinstance(values, Tensor) else None
    for name, t in (("indices", idx_t), ("values", val_t)):
        if t is not None and t._sparse:
            raise TypeError(f"sparse_coo_tensor(): argument '{name}' must be a dense tensor")
    if val_t is not None and val_t.requires_grad and STATE.enabled:
        raise NotImplementedError(
            "sparse_coo_tensor: tgrad does not differentiate through 'values'; pass "
            "values.detach() and requires_grad=True to make a sparse leaf")
    idx = np.asarray(idx_t.numpy(force=True) if idx_t is not None else indices)
    if val_t is not None:
        val = np.asarray(val_t.numpy(force=True))
    else:
        from tgrad import tensor as _tensor
        val = _tensor(values).numpy()
    if idx.dtype.kind not in "iu":
        if idx.size == 0:
            idx = idx.astype(np.int64)
        else:
            raise RuntimeError(f"indices must be an int64 tensor (got {idx.dtype})")
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if idx.ndim != 2:
        if idx.ndim == 1 and idx.size == 0:
            idx = idx.reshape(1, 0)
        else:
            raise RuntimeError(f"indices must be sparse_dim x nnz, but got: "
                               f"{list(idx.shape)}")
    if val.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz, *dense_shape)")
    if idx.shape[1] != val.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{idx.shape[1]}, nnz from values: {val.shape[0]}")
    sd = idx.shape[0]
    if size is None:
        if idx.shape[1] == 0 and sd:
            sizes = (0,) * sd
        else:
            sizes = tuple(int(m) + 1 for m in idx.max(axis=1)) if sd else ()
        shape = sizes + tuple(val.shape[1:])
    else:
        shape = tuple(int(s) for s in (size if isinstance(size, (tuple, list)) else
                                      tuple(size)))
        if len(shape) != sd + val.ndim - 1:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(shape)}, sparse_dim = {sd}, dense_dim = "
                               f"{val.ndim - 1}")
        if tuple(val.shape[1:]) != shape[sd:]:
            raise RuntimeError(f"values has incorrect size, expected "
                               f"{[val.shape[0], *shape[sd:]]}, got {list(val.shape)}")
    if idx.size:
        if idx.min() < 0:
            raise RuntimeError(f"found negative index {int(idx.min())} for dim "
                               f"{int(np.argmin(idx.min(axis=1)))}")
        for d in range(sd):
            m = int(idx[d].max())
            if m >= shape[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{shape[d]} but found index {m}")
    if dtype is not None:
        val = val.astype(dtypes.as_dtype(dtype).np)
    elif val.dtype == np.float64 and val_t is None and not isinstance(values, np.ndarray):
        val = val.astype(dtypes.get_default_dtype().np)
    coalesced = bool(is_coalesced) if is_coalesced is not None else idx.shape[1] <= 1
    out = SparseTensor(idx, np.ascontiguousarray(val), shape, coalesced)
    if requires_grad:
        out.requires_grad_(True)
    return out


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim=None) -> SparseTensor:
    """``Tensor.to_sparse``: the entries of a dense tensor whose first ``sparse_dim`` dims
    (default all) index a non-zero (a dense slice with any non-zero element), coalesced."""
    if self._sparse:
        return self.to_sparse(sparse_dim, layout=layout)
    _check_sparse_layout("to_sparse", layout)
    if self.requires_grad and STATE.enabled:
        raise NotImplementedError("to_sparse: tgrad does not differentiate the conversion "
                                  "of a tensor that requires grad; use .detach() first")
    arr = np.asarray(self.numpy(force=True))
    sd = arr.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= arr.ndim:
        raise RuntimeError(f"sparse_dim must be in [0, {arr.ndim}], got {sd}")
    if sd == 0:
        return SparseTensor(np.zeros((0, 1), np.int64), arr[None].copy(), arr.shape, True)
    # (an explicit trailing size: -1 is ambiguous when the tensor is empty)
    flat = arr.reshape(arr.shape[:sd] + (int(np.prod(arr.shape[sd:], dtype=np.int64)),)) != 0
    mask = flat.any(axis=-1)
    idx = np.array(np.nonzero(mask), dtype=np.int64).reshape(sd, -1)
    return SparseTensor(idx, np.ascontiguousarray(arr[tuple(idx)]), arr.shape, True)


def sum(input: SparseTensor, dim=None, dtype=None) -> Tensor:  # noqa: A001,A002
    """``tgrad.sparse.sum``: all elements (a 0-d dense tensor), or over ``dim`` (an int or
    a tuple): a coalesced sparse tensor while sparse dims remain, else dense."""
    if not isinstance(input, Tensor) or not input._sparse:
        raise RuntimeError("coalesce expected sparse coordinate tensor layout but got Strided")
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    integral = dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex)
    if dim is None:  # (a full sum of bools / integers is int64, as PyTorch's; a sum over
        return SumAll.apply(input, dtypes.int64 if integral else dtype)  # dims keeps them)
    wrapped = _sum_dims((dim,) if isinstance(dim, int) else tuple(dim), input.ndim)
    if len(wrapped) == input.ndim:
        return SumAll.apply(input, dtypes.int64 if integral else dtype)
    if integral and set(wrapped).issuperset(range(input.sparse_dim())):  # a dense result
        dtype = dtypes.int64
    return SumDim.apply(input, wrapped, dtype)


def _sum_dims(dims: tuple, n: int) -> tuple:
    """``dims`` wrapped to [0, n) and sorted, with PyTorch's range / duplicate errors."""
    wrapped = set()
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {d})")
        if d % n in wrapped:
            raise RuntimeError(f"dim {d % n} appears multiple times in the list of dims")
        wrapped.add(d % n)
    return tuple(sorted(wrapped))


def _sub_check(a, b) -> None:
    """PyTorch's refusal of a bool operand in sub."""
    bools = [getattr(t, "dtype", None) is dtypes.bool_ for t in (a, b)]
    if all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


def binary(name: str, input, other, alpha=1, rounding_mode=None) -> Tensor:  # noqa: A002
    """The public binary functions' route when an operand is sparse (``tgrad.add`` / ``sub``
    / ``mul`` / ``div`` and the dense tensor's operators and methods call it when the
    strided op raised on the sparse placeholder), PyTorch's layouts: dense +- sparse is
    dense (same shape), sparse +- sparse and anything * sparse sparse, x / sparse an error."""
    in_sp, other_sp = getattr(input, "_sparse", False), getattr(other, "_sparse", False)
    if name in ("add", "sub"):
        if name == "sub":
            _sub_check(input, other)
            alpha = -alpha
        if in_sp:
            return input.add(other, alpha=alpha)
        if not isinstance(input, Tensor) or tuple(input.shape) != tuple(other.shape):
            shape = list(input.shape) if isinstance(input, Tensor) else []
            raise RuntimeError(f"{name}: expected 'self' and 'other' to have same size, but "
                               f"self has size {shape} while other has size "
                               f"{list(other.shape)} (FYI: dense-sparse addition does not "
                               f"currently support broadcasting)")
        if input.device.type != "cpu":
            raise RuntimeError(f"{name}: expected all tensors to be on the same device, but "
                               f"found {input.device} (dense) and cpu (sparse)")
        return AddDenseSparse.apply(input, other, alpha)
    if name == "mul":
        return input.mul(other) if in_sp else other.mul(input)  # (commutes)
    if name == "div" and other_sp:
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor "
                           f"divisor (got shape {list(other.shape)} for divisor)")
    if name == "div":
        return input.div(other, rounding_mode=rounding_mode)
    raise unsupported(name)


def _check_mm(s: SparseTensor, d: Tensor) -> None:
    if not isinstance(d, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(d).__name__}")
    if s.ndim != 2 or s.sparse_dim() != 2:
        raise RuntimeError(f"addmm: matrices expected, got {s.ndim}D tensor with sparse_dim "
                           f"{s.sparse_dim()} (tgrad: a 2-D sparse matrix without dense "
                           f"dims)")
    if d.ndim != 2 or (d._sparse and d.sparse_dim() != 2):
        raise RuntimeError(f"addmm: matrices expected, got {d.ndim}D tensor")
    if d.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, "
                           f"got {d.shape[0]}")
    if d.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(s.dtype)} but found "
                           f"{_scalar_name(d.dtype)}")
    if d.device.type != "cpu":
        raise RuntimeError(f"mm: expected all tensors to be on the same device, but found "
                           f"cpu (sparse) and {d.device}")


def softmax(input: SparseTensor, dim: int, dtype=None) -> SparseTensor:  # noqa: A002
    """``tgrad.sparse.softmax``: softmax along ``dim`` over the stored entries only (the
    unspecified ones count as -inf, so they stay unspecified), a coalesced sparse tensor;
    ``dtype`` casts the input first."""
    return _softmax("softmax", input, dim, dtype, False)


def log_softmax(input: SparseTensor, dim: int, dtype=None) -> SparseTensor:  # noqa: A002
    """``tgrad.sparse.log_softmax``: log of ``softmax`` over the stored entries."""
    return _softmax("log_softmax", input, dim, dtype, True)


def _softmax(op: str, input, dim, dtype, log: bool) -> SparseTensor:  # noqa: A002
    if not isinstance(input, Tensor) or not input._sparse:
        raise RuntimeError(f"{op}: expected a sparse COO tensor (got a strided one); use "
                           f"tgrad.{op} for dense tensors")
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"{op}: expected a floating point tensor, got {input.dtype}")
    return Softmax.apply(input, _wrap_dim(dim, input.ndim), log)


def _scalar_name(dt) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half",
            "bfloat16": "BFloat16", "int64": "Long", "int32": "Int"}.get(dt.name, dt.name)


def _dense_mm(s: SparseTensor, d: Tensor) -> Tensor:
    """``tgrad.mm(sparse, dense)`` / ``sparse @ dense``: a dense result; the sparse
    operand's gradient is dense (PyTorch's)."""
    _check_mm(s, d)
    if d._sparse:  # sparse @ sparse: a sparse result
        return SparseSparseMM.apply(s, d, False)
    return SparseDenseMM.apply(s, d, False)


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``tgrad.sparse.mm(sparse, dense)``: a dense result; the sparse operand's gradient is
    sparse, masked to its coalesced pattern (PyTorch's). Two dense matrices: ``tgrad.mm``."""
    if not mat1._sparse:
        if mat2._sparse:
            raise unsupported("mm (dense @ sparse in sparse.mm)")
        from tgrad.ops.matmul import mm as dense_mm
        return dense_mm(mat1, mat2)
    _check_mm(mat1, mat2)
    if mat2._sparse:
        return SparseSparseMM.apply(mat1, mat2, True)
    return SparseDenseMM.apply(mat1, mat2, True)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``tgrad.sparse.addmm``: beta * mat + alpha * (mat1 @ mat2), mat1 sparse, mat2 and
    mat dense (a dense result); mat1's gradient is sparse, masked to its coalesced pattern
    (``sparse.mm``'s), as PyTorch's."""
    if not isinstance(mat1, Tensor) or not mat1._sparse:
        raise RuntimeError("sparse.addmm: expected mat1 to be a sparse COO tensor (got a "
                           "strided one); use tgrad.addmm for dense matrices")
    if mat._sparse or mat2._sparse:
        raise unsupported("addmm (sparse mat or mat2 in sparse.addmm)")
    prod = mm(mat1, mat2)
    if tuple(mat.shape) != tuple(prod.shape):
        mat = mat.expand(prod.shape)
    out = prod if alpha == 1 else prod * alpha
    return out + (mat if beta == 1 else mat * beta) if beta != 0 else out


# ---------------------------------------------------------------------- Tensor hooks
Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = lambda self: to_sparse(self)


def _dense_to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """``to_dense`` of a strided tensor: itself (or cast to ``dtype``)."""
    return self if dtype is None else self.to(dtype)


Tensor.to_dense = _dense_to_dense

# Zero-preserving elementwise ops with a sparse kernel in PyTorch: name -> whether the
# input is coalesced first (every op but the ones linear in the values, as PyTorch's).
# Values come from the dense op on the values tensor, gradients from its backward
# (SparseUnary). exp, cos, sigmoid, ... (f(0) != 0) keep PyTorch's SparseCPU error.
_UNARY_OPS = {
    "neg": False, "negative": False, "positive": False, "conj": False, "conj_physical": False,
    "abs": True, "absolute": True, "sgn": True, "sign": True, "signbit": True,
    "sin": True, "sinh": True, "tan": True, "tanh": True, "asin": True, "arcsin": True,
    "asinh": True, "arcsinh": True, "atan": True, "arctan": True, "atanh": True,
    "arctanh": True, "sqrt": True, "square": True, "expm1": True, "log1p": True,
    "erf": True, "erfinv": True, "relu": True, "ceil": True, "floor": True, "round": True,
    "trunc": True, "fix": True, "frac": True, "deg2rad": True, "rad2deg": True,
    "isnan": True, "isinf": True, "isposinf": True, "isneginf": True, "nan_to_num": True,
    "pow": True, "div": True,  # (div with a rounding mode; both have their own method)
}


def _unary_method(op: str):
    def method(self, *args, **kwargs):
        return _unary(self, op, args, kwargs)
    method.__name__ = op
    method.__doc__ = f"Elementwise {op} of the stored values (zero-preserving; sparse)."
    return method


for _op in _UNARY_OPS:
    if _op not in ("pow", "div"):
        setattr(SparseTensor, _op, _unary_method(_op))
# PyTorch's in-place forms of the zero-preserving ops (not signbit / square / the
# predicates / positive / conj): the values replaced in place, the input coalesced (an
# uncoalesced one raises PyTorch's "requires coalesced input" but for neg_)
_INPLACE_OPS = tuple(op for op in _UNARY_OPS if op not in (
    "signbit", "square", "isnan", "isinf", "isposinf", "isneginf", "positive", "conj",
    "conj_physical", "pow", "div"))


def _inplace_method(op: str):
    def method(self, *args, **kwargs):
        if _UNARY_OPS[op] and not self._coalesced:
            raise RuntimeError(f"{op}_ requires coalesced input")
        return self._inplace(op + "_", lambda src: _unary(src, op, args, kwargs))
    method.__name__ = op + "_"
    method.__doc__ = f"In-place {op} of the stored values (zero-preserving; sparse)."
    return method


for _op in _INPLACE_OPS:
    setattr(SparseTensor, _op + "_", _inplace_method(_op))
SparseTensor.__neg__ = SparseTensor.neg
SparseTensor.__abs__ = SparseTensor.abs
SparseTensor.positive = SparseTensor.__pos__ = lambda self: self  # PyTorch: the same tensor

# Every other Tensor method raises PyTorch's "no SparseCPU kernel" error on a sparse tensor.
_KEEP = {"size", "dim", "numel", "nelement", "element_size", "requires_grad_",
         "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad",
         "detach_", "type", "is_floating_point", "is_complex", "get_device", "ndimension",
         "is_signed", "is_inference", "float", "double", "half", "bfloat16", "long", "int",
         "short", "char", "byte", "bool", "cfloat", "cdouble", "cpu", "cuda",
         "is_shared", "share_memory_", "is_pinned", "__len__", "__hash__", "__eq_shape__"}


def _stub(name: str):
    def method(self, *args, **kwargs):
        raise unsupported(name.strip("_") or name)
    method.__name__ = name
    return method


def _install_stubs() -> None:
    own = set(SparseTensor.__dict__)
    for name in dir(Tensor):
        if name in own or name in _KEEP or name in ("__init__", "__new__", "__class__",
                                                   "__getattribute__", "__setattr__",
                                                   "__delattr__", "__init_subclass__",
                                                   "__subclasshook__", "__reduce__",
                                                   "__dir__", "__sizeof__", "__repr__",
                                                   "__str__", "__format__", "__weakref__",
                                                   "__dict__", "__slots__", "__module__",
                                                   "__doc__", "__array_priority__"):
            continue
        attr = Tensor.__dict__.get(name)
        if attr is None:
            for klass in Tensor.__mro__:
                if name in klass.__dict__:
                    attr = klass.__dict__[name]
                    break
        if callable(attr) and not isinstance(attr, (type, staticmethod, classmethod)):
            setattr(SparseTensor, name, _stub(name))


_install_stubs()
