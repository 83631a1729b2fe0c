# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, L, X)
"""Norms and PyTorch's other ``torch.linalg`` names that are compositions of existing ops:
vector_norm, matrix_norm, norm, cross, multi_dot, diagonal, matmul, vecdot.

Matrix norms of the singular values (ord = 'nuc': their sum, 2: the largest, -2: the
smallest) take them from ``svdvals`` (tgrad/linalg/_jacobi.py).
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.linalg._triangular import _torch_dtype_name, not_floating_error
from tgrad.ops import elementwise as ew
from tgrad.ops import mathcomposites as mc
from tgrad.ops._common import fresh, int_tuple, require_tensor
from tgrad.ops.matmul import matmul as _matmul
from tgrad.ops.reduce import Norm, _reduce_dims, check_norm_identity, scalar_order
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "multi_dot", "diagonal", "matmul",
           "vecdot"]

_SVD_ORDS = ("nuc", 2, -2)


def _float_check(op: str, x: Tensor, dtype) -> Tensor:
    """``x`` in ``dtype`` (when given): x must be floating or complex itself (an integer x
    with a float ``dtype`` raises too, as PyTorch), and ``dtype`` no narrower."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise not_floating_error(op, x.dtype)
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if dtype.is_complex != x.dtype.is_complex:  # PyTorch's check, before the narrowing
            kind = "complex" if x.dtype.is_complex else "real"
            raise RuntimeError(f"{op}: dtype should be {kind} for {kind} inputs, but got "
                               f"{_torch_dtype_name(dtype)}")
        if dtypes.promote_types(x.dtype, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({_torch_dtype_name(x.dtype)}) "
                               f"should be convertible without narrowing to the specified "
                               f"dtype ({_torch_dtype_name(dtype)})")
        x = x.to(dtype)
    return x


def vector_norm(x: Tensor, ord: float = 2, dim=None, keepdim: bool = False, *,  # noqa: A002
                dtype=None) -> Tensor:
    """The vector ord-norm of ``x`` over ``dim`` (all elements when None): ord any number,
    inf (max |x|), -inf (min |x|), 0 (the count of non-zeros: one LinalgVectorNormBackward0
    node whose gradient is undefined, as PyTorch's). inf and ord < 0 raise PyTorch's error
    over an empty reduced dim (no identity)."""
    require_tensor("linalg.vector_norm", x)
    ord = scalar_order("linalg.vector_norm", ord)  # noqa: A001
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    x = _float_check("linalg.vector_norm", x, dtype)
    if isinstance(dim, int):
        dim = (dim,)
    # one LinalgVectorNormBackward0 node on x (a complex x: the norm of |x|, gradient
    # g d||.||/d|x| sgn(x); ord 0: its gradient undefined, None), as PyTorch's
    axes = _reduce_dims("norm", dim, x.ndim)
    check_norm_identity(x.shape, float(ord), dim, axes)
    return Norm.apply(x, float(ord), axes, keepdim)


@autocast_policy(None, cpu="native")  # CPU: half ord 2 / 'nuc' raise, as PyTorch's
def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,  # noqa: A002
                dtype=None) -> Tensor:
    """The matrix norm over the two dims ``dim``: 'fro' (sqrt of the sum of squares),
    1 / -1 (max / min column sum of |A|), inf / -inf (max / min row sum), 'nuc' / 2 / -2
    (sum / largest / smallest singular value)."""
    op = "linalg.matrix_norm"
    require_tensor(op, A)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    A = _float_check(op, A, dtype)
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else dim
    if not isinstance(dim, tuple) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (_wrap_dim(d, A.ndim, op) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord in _SVD_ORDS and not isinstance(ord, bool):
        from tgrad.linalg._jacobi import svdvals
        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        # (an empty matrix: norms 2 and 'nuc' are 0, as PyTorch; -2 raises amin's error)
        out = S.sum(-1) if ord == "nuc" or (ord == 2 and S.shape[-1] == 0) else (
            S.amax(-1) if ord == 2 else S.amin(-1))
        # (views of the op's own temporary: new tensors, PyTorch's; also below)
        return fresh(out.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))) \
            if keepdim else out
    if ord == "fro":  # (a complex A: the vector norm's node on A itself, PyTorch's)
        return vector_norm(A, 2.0, (d0, d1), keepdim)
    if A.dtype.is_complex:  # the other norms are those of |A| (real)
        A = ew.abs(A)
    if ord not in (1, -1, math.inf, -math.inf) or isinstance(ord, bool):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    # 1: max over columns (d1) of sums over rows (d0); inf: max over rows of column sums
    summed, reduced = (d0, d1) if ord in (1, -1) else (d1, d0)
    s = ew.abs(A).sum(summed, keepdim=True)
    if ord > 0:  # (over an empty dim: 0, as PyTorch; -1 / -inf raise amin's error)
        out = s.amax(reduced, keepdim=True) if s.shape[reduced] else s.sum(reduced, True)
    else:
        out = s.amin(reduced, keepdim=True)
    return out if keepdim else fresh(out.squeeze((d0, d1)))


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *,  # noqa: A002
         dtype=None) -> Tensor:
    """torch.linalg.norm: a matrix norm when ``ord`` is a string or ``dim`` a 2-tuple (or
    dim is None, ord given and A 2-D), else a vector norm (ord=None: 2, over everything
    when dim is None)."""
    op = "linalg.norm"
    require_tensor(op, A)
    given = dim
    if dim is not None:
        dim = int_tuple(op, "dim", dim)  # (tuple(1.5) leaked "'float' object is not iterable")
        if len(dim) not in (1, 2):
            raise RuntimeError(f"{op}: If dim is specified, it must be of length 1 or 2. Got "
                               f"{list(dim)}")
    elif ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be 1D "
                           f"or 2D. Got {A.ndim}D.")
    if isinstance(ord, str):  # PyTorch: a string ord is always a matrix norm
        return matrix_norm(A, ord, (-2, -1) if dim is None else given, keepdim, dtype=dtype)
    if dim is None:
        if ord is None:
            return vector_norm(A, 2, None, keepdim, dtype=dtype)
        dim = (-2, -1) if A.ndim == 2 else None
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (default -1): ``tgrad.cross``."""
    return mc.cross(input, other, dim=dim)


def multi_dot(tensors) -> Tensor:
    """The product of a list of matrices (the first may be 1-D, a row vector, and the last
    1-D, a column vector, squeezed from the result), bracketed for the fewest scalar
    multiplications (``chain_matmul``'s order)."""
    if not isinstance(tensors, (tuple, list)):  # (a tensor was iterated over its rows)
        raise TypeError(f"linalg.multi_dot(): argument 'tensors' (position 1) must be tuple of "
                        f"Tensors, not {type(tensors).__name__}")
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for t in ts:
        require_tensor("multi_dot", t, "tensors", None)
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{ts[-1].ndim}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    ms = ([ts[0].unsqueeze(0)] if first_1d else [ts[0]]) + ts[1:-1] + (
        [ts[-1].unsqueeze(1)] if last_1d else [ts[-1]])
    for i in range(1, len(ms)):
        if ms[i - 1].shape[1] != ms[i].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes "
                               f"{list(ts[i - 1].shape)} and {list(ts[i].shape)} cannot be "
                               f"multiplied")
    split = mc._chain_order([ms[0].shape[0]] + [m.shape[1] for m in ms])

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return ms[i]
        s = split[i][j]
        return _matmul(product(i, s), product(s + 1, j))

    out = product(0, len(ms) - 1)
    if last_1d:
        out = out.squeeze(-1)
    if first_1d:
        out = out.squeeze(0)
    return out


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``tgrad.diagonal`` with the last two dims as default (a view)."""
    require_tensor("linalg.diagonal", A, "A")
    return A.diagonal(offset, dim1, dim2)


def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``tgrad.matmul``."""
    return _matmul(input, other)


@autocast_policy("lower")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum(conj(x) * y) along ``dim``, other dims broadcast (PyTorch's: x is conjugated
    when complex, as in ``vdot``; real tensors: sum(x * y)). x and y: one floating or
    complex dtype (no promotion, as PyTorch)."""
    from tgrad.ops.complex_ops import conj_of
    require_tensor("linalg.vecdot", x)
    require_tensor("linalg.vecdot", y, "y", 2)
    dim = _int_arg("linalg.vecdot", "dim", dim)  # one dim (a tuple summed over several)
    # PyTorch's checks: floating or complex, one dtype (no promotion)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {_torch_dtype_name(x.dtype)}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but "
                           f"found x of type {_torch_dtype_name(x.dtype)} and y of type "
                           f"{_torch_dtype_name(y.dtype)} instead")
    return (conj_of(x) * y).sum(dim)
