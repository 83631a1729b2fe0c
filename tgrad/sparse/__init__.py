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
sparse + sparse (PyTorch's merge), dense + sparse (dense), ``sparse.sum``, ``sparse.mm`` /
``mm`` / ``@`` with a dense matrix. Gradients flow through ``to_dense``, ``mm``,
``sparse.mm``, ``sparse.sum`` (all dims), ``mul``, ``+`` and ``clone``.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function, once_differentiable
from tgrad.autograd.grad_mode import STATE
from tgrad.device import CPU
from tgrad.tensor import Tensor

__all__ = ["SparseTensor", "sparse_coo_tensor", "sum", "mm"]

_SUPPORTED = ("to_dense, indices/values (coalesced), _indices/_values, coalesce, mul by a "
              "number, + (sparse or dense), tgrad.sparse.sum, tgrad.sparse.mm / mm / @ "
              "with a dense matrix, to(dtype), clone, detach")


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

    def _indices(self) -> Tensor:
        return Tensor(self._sp_indices)

    def _values(self) -> Tensor:
        return Tensor(self._sp_values)

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return Tensor(self._sp_indices)

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        _no_grad_through("values", self)
        return Tensor(self._sp_values)

    # ------------------------------------------------------------------ conversions
    def coalesce(self) -> SparseTensor:
        """Duplicates summed, indices sorted (row-major); itself when already coalesced."""
        if self._coalesced:
            return self
        _no_grad_through("coalesce", self)
        idx, val = _coalesce(self._sp_indices, self._sp_values, self.shape)
        return SparseTensor(idx, val, self.shape, True)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        out = ToDense.apply(self)
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
        if isinstance(other, Tensor):
            if other.ndim != 0 or other._sparse:
                raise unsupported("mul.Tensor (sparse * tensor other than a 0-d dense one)")
            other = other.item()
        if not isinstance(other, (int, float, bool, complex, np.number)):
            raise TypeError(f"mul(): argument 'other' must be Tensor or Number, not "
                            f"{type(other).__name__}")
        return MulScalar.apply(self, other)

    __mul__ = __rmul__ = mul

    def neg(self) -> SparseTensor:
        return self.mul(-1)

    __neg__ = neg

    def zero_(self) -> SparseTensor:
        """In place: no entries (nnz 0, coalesced), same shape, as PyTorch's sparse zero_."""
        self._sp_indices = np.zeros((self.sparse_dim(), 0), np.int64)
        self._sp_values = np.zeros((0,) + self._sp_values.shape[1:], self._sp_values.dtype)
        self._coalesced = True
        return self

    def _assign(self, other: SparseTensor) -> SparseTensor:
        """In place: take ``other``'s entries (same shape; PyTorch's in-place sparse ops such
        as ``buf.mul_(m).add_(g)`` keep the object)."""
        self._sp_indices, self._sp_values = other._sp_indices, other._sp_values
        self._coalesced = other._coalesced
        return self

    def add(self, other, *, alpha=1) -> Tensor:
        if not isinstance(other, Tensor):
            raise unsupported("add.Tensor (sparse + a number)")
        if not other._sparse:
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
        if not isinstance(other, Tensor):
            raise unsupported("add.Tensor (a number + sparse)")
        return other + self.to_dense()

    def sum(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        if keepdim:
            raise unsupported("sum.dim_IntList (keepdim=True)")
        return sum(self, dim, dtype=dtype)

    def mm(self, mat2: Tensor) -> Tensor:
        return _dense_mm(self, mat2)

    matmul = __matmul__ = mm

    def __rmatmul__(self, other: Tensor) -> Tensor:
        return other @ self.to_dense()


def _no_grad_through(op: str, t: SparseTensor) -> None:
    """An op tgrad does not differentiate on sparse tensors: refuse one that would be
    recorded (rather than silently drop the gradient)."""
    if STATE.enabled and t._requires_grad:
        raise NotImplementedError(
            f"{op}: tgrad does not differentiate this op on a sparse tensor that requires "
            f"grad; differentiable sparse ops: to_dense, mm, sparse.mm, sparse.sum, mul, +, "
            f"clone (use .detach() to leave the graph)")


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
    dtype = np.result_type(a._sp_values, b._sp_values)
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


# ---------------------------------------------------------------------- differentiable ops
class ToDense(Function):
    """y = dense(S);  dS = g at S's (coalesced) pattern, a sparse tensor (PyTorch)."""

    name = "to_dense"
    node_name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, s):
        ctx.s = s.detach()
        return Tensor(_to_dense_array(s))

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return _pattern_of(ctx.s, g.numpy())


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
        vals = s._sp_values * c
        if vals.dtype != s._sp_values.dtype and not isinstance(c, (float, complex)):
            vals = vals.astype(s._sp_values.dtype)
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


class SparseDenseMM(Function):
    """y = S @ D (S sparse (m, k), D dense (k, n));
    dD = S^T @ g;  dS = g @ D^T, dense for ``tgrad.mm`` / ``@`` and masked to S's
    coalesced pattern (sparse) for ``tgrad.sparse.mm``, as PyTorch's."""

    name = "sparse_mm"
    node_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx, s, d, masked):
        ctx.s, ctx.d, ctx.masked = s.detach(), d.detach(), masked
        rows, cols = s._sp_indices
        dn = d.numpy()
        out = np.zeros((s.shape[0], d.shape[1]), np.result_type(s._sp_values, dn))
        np.add.at(out, rows, s._sp_values[:, None] * dn[cols])
        return Tensor(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        s, d, gn = ctx.s, ctx.d.numpy(), g.numpy()
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
    flat = arr.reshape(arr.shape[:sd] + (-1,)) != 0
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
    if dim is None:
        return SumAll.apply(input, dtype)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    n = input.ndim
    wrapped = set()
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {d})")
        wrapped.add(d % n)
    if len(wrapped) == n:
        return SumAll.apply(input, dtype)
    _no_grad_through("sparse.sum(dim)", input)
    sd = input.sparse_dim()
    vals = input._sp_values if dtype is None else input._sp_values.astype(dtype.np)
    dense_axes = tuple(d - sd + 1 for d in sorted(wrapped) if d >= sd)
    if dense_axes:
        vals = vals.sum(axis=dense_axes)
    keep = [d for d in range(sd) if d not in wrapped]
    shape = tuple(s for d, s in enumerate(input.shape) if d not in wrapped)
    if not keep:
        return Tensor(np.asarray(vals.sum(axis=0), vals.dtype))
    idx, out = _coalesce(input._sp_indices[keep], vals, shape)
    return SparseTensor(idx, out, shape, True)


def _check_mm(s: SparseTensor, d: Tensor) -> None:
    if not isinstance(d, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(d).__name__}")
    if d._sparse:
        raise unsupported("mm (sparse @ sparse)")
    if s.ndim != 2 or s.sparse_dim() != 2:
        raise RuntimeError(f"addmm: matrices expected, got {s.ndim}D tensor with sparse_dim "
                           f"{s.sparse_dim()} (tgrad: a 2-D sparse matrix without dense "
                           f"dims)")
    if d.ndim != 2:
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


def _scalar_name(dt) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half",
            "bfloat16": "BFloat16", "int64": "Long", "int32": "Int"}.get(dt.name, dt.name)


def _dense_mm(s: SparseTensor, d: Tensor) -> Tensor:
    """``tgrad.mm(sparse, dense)`` / ``sparse @ dense``: a dense result; the sparse
    operand's gradient is dense (PyTorch's)."""
    _check_mm(s, d)
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
    return SparseDenseMM.apply(mat1, mat2, True)


# ---------------------------------------------------------------------- Tensor hooks
Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = lambda self: to_sparse(self)


def _dense_to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """``to_dense`` of a strided tensor: itself (or cast to ``dtype``)."""
    return self if dtype is None else self.to(dtype)


Tensor.to_dense = _dense_to_dense

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
