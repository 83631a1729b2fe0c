"""Matrix products: matmul / @ (1-D, 2-D, batched with broadcasting), mm, bmm.

For y = a @ b (a: [..., n, k], b: [..., k, m]):
    da = sum_to(g @ b^T, a.shape)    db = sum_to(a^T @ g, b.shape)
1-D operands are unsqueezed to matrices and the extra dim squeezed away, as NumPy/PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy, cast_args
from tgrad._strides import expand_strides, view_strides
from tgrad.autograd import profiler_hooks
from tgrad.autograd.function import Function, differentiable_formula, saved_tensor_strides
from tgrad.autograd.grad_mode import STATE
from tgrad.autograd.node import AccumulateGrad
from tgrad.ops._common import (
    backend_of,
    register_op,
    require_tensor,
    same_device,
    tensor_method,
    wrap,
)
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor

__all__ = ["matmul", "mm", "bmm"]


class MatMul(Function):
    name = "matmul"
    node_name = "MmBackward0"
    # saved_tensors is (a if b needs a gradient, b if a needs one), see _save_other_operands
    saved_attributes = {"_saved_self": 0, "_saved_mat2": 1,
                        "_saved_self_sym_sizes": lambda node: node.shapes[0],
                        "_saved_mat2_sym_sizes": lambda node: node.shapes[1],
                        "_saved_self_sym_strides": lambda node: _operand_strides(node, 0),
                        "_saved_mat2_sym_strides": lambda node: _operand_strides(node, 1)}

    @staticmethod
    def flops(args: tuple, out) -> int:
        """Profiler metadata: a [..., M, K] @ b [..., K, N] costs 2*M*N*K per batch."""
        a, b = args[0], args[1]
        batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        return 2 * batch * a.shape[-2] * b.shape[-1] * a.shape[-1]

    @staticmethod
    def forward(ctx, a, b):
        _save_other_operands(ctx, a, b)
        return wrap(backend_of(a).matmul(a._data, b._data), a.device)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return _product_grads(g, a, b, need_a, need_b, *ctx.shapes)


def _product_grads(g: Tensor, a, b, need_a: bool, need_b: bool, a_shape: tuple,
                   b_shape: tuple, transposed: tuple = (False, False)) -> tuple:
    """The gradients of y = a @ b: (g @ b^H summed to a_shape, a^H @ g summed to b_shape),
    None where not needed (a / b are None where not saved). ``transposed`` (2-D a and b:
    _transposed_operands): an operand laid out as a transposed matrix gets its gradient
    computed transposed, (b g^H)^H and (g^H a)^H (PyTorch's mm_mat1/mat2_backward), so it
    has the operand's layout (linear's weight.t(): a C-contiguous .grad, kept as is)."""
    ta, tb = transposed
    if g.dtype.is_complex:  # ga = g b^H, gb = a^H g (PyTorch's convention)
        from tgrad.ops.complex_ops import conj_of
        ga = gb = None
        if need_a:
            ga = (matmul(b, conj_of(g.mT)).mH if ta else
                  _summed_product(g, conj_of(b.mT), a_shape))
        if need_b:
            gb = (matmul(conj_of(g.mT), a).mH if tb else
                  _summed_product(conj_of(a.mT), g, b_shape))
        return ga, gb
    if len(a_shape) == 2 and len(b_shape) == 2 and not differentiable_formula() \
            and profiler_hooks.ACTIVE is None:
        # A plain backward of a 2-D product (nothing recorded, nobody profiling): the two
        # products straight on the backend arrays, transposes read in place.
        be, dev = backend_of(g), g.device
        ga = gb = None
        if need_a:
            ga = wrap(be.permute(be.matmul(b._data, be.permute(g._data, _T)), _T) if ta else
                      be.matmul(g._data, be.permute(b._data, _T)), dev)
        if need_b:
            gb = wrap(be.permute(be.matmul(be.permute(g._data, _T), a._data), _T) if tb else
                      be.matmul(be.permute(a._data, _T), g._data), dev)
        return ga, gb
    if len(a_shape) > 2 and a_shape[:-2] == b_shape[:-2] and len(b_shape) == len(a_shape) \
            and not differentiable_formula() and profiler_hooks.ACTIVE is None:
        # The same for a batch of products over one batch shape (bmm, attention's 4-D
        # products): nothing is summed over a broadcast batch; the backend's batched matmul
        # of the arrays as they lie (matmul's expand + reshape views are the same matrices)
        be, dev = backend_of(g), g.device
        swap = tuple(range(len(a_shape) - 2)) + (len(a_shape) - 1, len(a_shape) - 2)
        ga = wrap(be.matmul(g._data, be.permute(b._data, swap)), dev) if need_a else None
        gb = wrap(be.matmul(be.permute(a._data, swap), g._data), dev) if need_b else None
        return ga, gb
    ga = gb = None
    if need_a:
        ga = matmul(b, g.mT).mT if ta else _summed_product(g, b.mT, a_shape)
    if need_b:
        gb = matmul(g.mT, a).mT if tb else _summed_product(a.mT, g, b_shape)
    return ga, gb


def _transposed_operands(a: Tensor, b: Tensor, need_a: bool, need_b: bool) -> tuple:
    """(a, b) each laid out as a transposed matrix and needing a gradient (2-D a and b;
    PyTorch's test: strides (1, rows))."""
    if a.ndim != 2 or b.ndim != 2:
        return _NOT_TRANSPOSED
    return (need_a and _transposed(a), need_b and _transposed(b))


def _transposed(t: Tensor) -> bool:
    rows_stride, col_stride = t._data.strides
    item = t.dtype.itemsize
    return rows_stride == item and col_stride == t._data.shape[0] * item


_NOT_TRANSPOSED = (False, False)


_T = (1, 0)


def _summed_product(x: Tensor, y: Tensor, shape: tuple) -> Tensor:
    """x @ y summed to ``shape``, an operand's shape that was broadcast over batch dims.
    float16/bfloat16 products are summed in float32 and rounded once (as PyTorch's one
    folded matmul is), not rounded per batch first."""
    dt = x.dtype
    if dt.itemsize == 2 and dt.is_floating_point and tuple(shape[:-2]) != tuple(
            np.broadcast_shapes(x.shape[:-2], y.shape[:-2])):
        return sum_to(matmul(x.float(), y.float()), shape).to(dt)
    return sum_to(matmul(x, y), shape)


def _operand_strides(node, i: int) -> tuple:
    """PyTorch's ``_saved_self/mat2_sym_strides``: operand i's strides where i needs a
    gradient (they pick its gradient's layout), else (). tgrad keeps no strides: it reads
    them from a leaf operand (its AccumulateGrad edge holds it; readable after backward,
    as PyTorch's) or from operand i when that was saved (the other one needs a gradient)."""
    need = node.needs_input_grad
    if not need[i]:
        return ()
    sink = node._edges[i][0]
    if type(sink) is AccumulateGrad:
        return tuple(sink.variable.stride())
    if need[1 - i]:
        return saved_tensor_strides(node, i)
    which = ("self", "mat2")[i]
    raise AttributeError(f"{node.name()}._saved_{which}_sym_strides: tgrad keeps neither "
                         f"{which} (only the operand the other gradient reads; {which} is not "
                         f"a leaf) nor its strides; they are known for a leaf {which} or when "
                         f"both operands require grad")


def _save_other_operands(ctx, a: Tensor, b: Tensor) -> None:
    """Each gradient reads only the other operand (da = g b^T, db = a^T g), so only those
    are saved (as PyTorch: a @ w with w not requiring grad keeps w alone)."""
    need_a, need_b = ctx.needs_input_grad
    ctx.save_for_backward(a if need_b else None, b if need_a else None)
    ctx.shapes = (a.shape, b.shape, _transposed_operands(a, b, need_a, need_b))


def _as_shape(be, arr, shape: tuple):
    """``arr`` reshaped with backend primitives (a view when the strides allow)."""
    v = be.reshape_view(arr, shape)
    return v if v is not None else be.reshape_copy(arr, shape)


class Dot(MatMul):
    """1-D @ 1-D (run as [1, K] @ [K, 1]): PyTorch's node is DotBackward0.
    y = sum_k a_k b_k;  da = g b,  db = g a (g a scalar)."""

    name = "dot"
    node_name = "DotBackward0"

    @staticmethod
    def flops(args: tuple, out) -> int:
        """Profiler metadata: a [K] . b [K] costs 2*K."""
        return 2 * args[0].shape[0]

    @staticmethod
    def forward(ctx, a, b):
        _save_other_operands(ctx, a, b)
        be = backend_of(a)
        k = a.shape[0]
        y = be.matmul(_as_shape(be, a._data, (1, k)), _as_shape(be, b._data, (k, 1)))
        return wrap(_as_shape(be, y, ()), a.device)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        from tgrad.ops.complex_ops import conj_of  # conj: complex only (identity when real)
        return (g * conj_of(b) if need_a else None), (g * conj_of(a) if need_b else None)


class Mv(MatMul):
    """y = a @ v: a (n, k), v (k,) -> (n,) (mv, and matmul of a matrix and a vector): one
    node, PyTorch's MvBackward0 (edges a, v).
        da = g v^H (an outer product, (n, k))        dv = a^H g ((k,))
    Saved as matmul's: a only if v needs a gradient, v only if a does."""

    name = "mv"
    node_name = "MvBackward0"
    saved_attributes = {"_saved_self": 0, "_saved_vec": 1}

    @staticmethod
    def flops(args: tuple, out) -> int:
        """Profiler metadata: a [n, k] @ v [k] costs 2*n*k."""
        return 2 * args[0].shape[0] * args[0].shape[1]

    # forward: MatMul's (the backend's matmul of (n, k) and (k,); so forward AD takes
    # matmul's rule)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        from tgrad.ops.complex_ops import conj_of  # conj: complex only (identity when real)
        ga = g.unsqueeze(1) * conj_of(b) if need_a else None
        gb = matmul(conj_of(a.mT), g) if need_b else None
        return ga, gb


# bmm: matmul's class under PyTorch's name for it (a batch of products; matmul's broadcast
# batches that PyTorch would copy use it too, see _batched)
Bmm = type("MatMul", (MatMul,), {"node_name": "BmmBackward0",
                                 "saved_attributes": {"_saved_self": 0, "_saved_mat2": 1}})


class Addmm(MatMul):
    """y = beta * input + alpha * (mat1 @ mat2) in one node, PyTorch's AddmmBackward0
    (edges input, mat1, mat2; addmm, and linear's input @ weight.t() + bias): mat1 (n, k),
    mat2 (k, p), input broadcast to (n, p) -> (n, p). beta == 0 ignores input's values
    (NaN/inf too) but keeps its edge (a zero gradient), as PyTorch; alpha == 0 likewise
    the product's (the mats' gradients stay alpha times the formulas below). The callers pass one
    float32/float64/complex dtype and real numbers beta, alpha (other cases: the
    composition in ops/products.py).
        d input = sum_to(beta g, input.shape)
        d mat1 = alpha g @ mat2^H        d mat2 = alpha mat1^H @ g
    Saved as matmul's: mat1 only if mat2 needs a gradient, mat2 only if mat1 does."""

    name = "addmm"
    node_name = "AddmmBackward0"
    saved_attributes = {"_saved_alpha": lambda node: node.alpha,
                        "_saved_beta": lambda node: node.beta,
                        "_saved_mat1": 0, "_saved_mat2": 1,
                        "_saved_mat1_sym_sizes": lambda node: node.shapes[0],
                        "_saved_mat2_sym_sizes": lambda node: node.shapes[1]}

    @staticmethod
    def flops(args: tuple, out) -> int:
        """Profiler metadata: mat1 [n, k] @ mat2 [k, p] costs 2*n*k*p (the sum: n*p)."""
        n, k = args[1].shape
        return 2 * n * k * args[2].shape[1] + n * args[2].shape[1]

    @staticmethod
    def forward(ctx, input, a, b, beta, alpha):  # noqa: A002
        need_a, need_b = ctx.needs_input_grad[1:3]
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.shapes = (a.shape, b.shape, _transposed_operands(a, b, need_a, need_b))
        ctx.in_shape, ctx.beta, ctx.alpha = input.shape, beta, alpha
        # alpha == 0: BLAS's (PyTorch's): the product is not read, its NaN/inf neither
        return scaled_product(input, a, b, beta, alpha, (a.shape[0], b.shape[1]), alpha == 0)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_in, need_a, need_b = ctx.needs_input_grad[:3]
        beta, alpha = ctx.beta, ctx.alpha
        gi = sum_to(g if beta == 1 else g * beta, ctx.in_shape) if need_in else None
        ga = gb = None
        if need_a or need_b:
            ga, gb = _product_grads(g, a, b, need_a, need_b, *ctx.shapes)
            if alpha != 1:
                ga = None if ga is None else ga * alpha
                gb = None if gb is None else gb * alpha
        return gi, ga, gb, None, None


def scaled_product(input: Tensor, a: Tensor, b: Tensor, beta, alpha, shape: tuple,  # noqa: A002
                   skip_product: bool) -> Tensor:
    """beta * input + alpha * (a @ b) of ``shape`` on the backend arrays (one dtype, input
    expanding to the product, real beta / alpha): the product is not computed where
    ``skip_product`` (alpha == 0 read as BLAS reads it), nor input read where beta == 0
    (its NaN/inf ignored, PyTorch's)."""
    be, kind = backend_of(a), a.dtype.np.type
    if skip_product:
        y = be.full(shape, 0, a.dtype.np)
    else:
        y = be.matmul(a._data, b._data)
        if alpha != 1:
            y = be.binary("mul", y, kind(alpha))
    if beta != 0:
        x = input._data if beta == 1 else be.binary("mul", input._data, kind(beta))
        y = be.binary("add", y, x)
    return wrap(y, a.device)


# the dtypes of Addmm's one node (halves: the composition, in float32 rounded once)
ADDMM_DTYPES = frozenset((dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128))
_REAL = (int, float)


def addmm_node(input: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1):  # noqa: A002
    """addmm as one AddmmBackward0 node where that applies (see Addmm: one dtype of
    ADDMM_DTYPES, real beta and alpha, 2-D mats whose product input expands to, one
    device, no sparse operand); None otherwise (the caller composes it)."""
    dt = mat1.dtype
    if (input.dtype is not dt or mat2.dtype is not dt or dt not in ADDMM_DTYPES
            or type(beta) not in _REAL or type(alpha) not in _REAL
            or input.ndim > 2 or mat1.ndim != 2 or mat2.ndim != 2
            or mat1.shape[1] != mat2.shape[0] or input.device is not mat1.device
            or mat2.device is not mat1.device or input._sparse or mat1._sparse
            or mat2._sparse):
        return None
    out = (mat1.shape[0], mat2.shape[1])
    if any(s != 1 and s != o for s, o in zip(input.shape[::-1], out[::-1])):
        return None
    return Addmm.apply(input, mat1, mat2, beta, alpha)


register_op(MatMul)
register_op(Dot)
register_op(Addmm)
register_op(Mv)


def _check(op: str, a: Tensor, b: Tensor) -> None:
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor arguments, got {type(t).__name__}")
    if a.device is not b.device:  # (devices are interned: one object is one device)
        same_device(op, a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, but got "
                           f"{a.dtype} and {b.dtype}")
    an, bn = a._data.ndim, b._data.ndim  # (Tensor.ndim, without the property call)
    if a.dtype is dtypes.bool_:  # PyTorch's type and the kernel its shapes reach
        kernel = ("dot" if an == bn == 1 else "addmv_impl_cpu" if bn == 1 else
                  "addmm_impl_cpu_" if bn == 2 else "bmm")
        raise NotImplementedError(f"{op}: not implemented for bool tensors; convert them with "
                                  f".int() or .float() first (\"{kernel}\" not implemented "
                                  f"for 'Bool')")
    if an == 0 or bn == 0:
        raise RuntimeError(f"{op}: both arguments to matmul need to be at least 1D, but they "
                           f"are {an}D and {bn}D")
    if a._data.shape[-1] != b._data.shape[-2 if bn > 1 else 0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({_desc(a)} and "
                           f"{_desc(b)})")


def _desc(t: Tensor) -> str:
    if t.ndim == 1:
        return f"1x{t.shape[0]}"
    return "x".join(str(s) for s in t.shape)


def _make_matmul(operator: bool):
    """matmul (``operator`` False) or ``Tensor.__matmul__`` (True, the same body): given a
    NumPy array the operator returns NotImplemented, as PyTorch's, so that NumPy computes
    ``t @ ndarray`` (a tensor by Tensor.__array_wrap__), as it does for any operand that is
    no Tensor, a number too (obj.__rmatmul__ is called; none: Python's TypeError
    "unsupported operand type(s) for @"); the function raises TypeError."""
    def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
        """Matrix product with NumPy's matmul rules (broadcast batch dims)."""
        try:
            sparse = input._sparse or other._sparse
        except AttributeError:  # (free when nothing raises) an operand that is no tensor
            if operator and not isinstance(other, Tensor):
                return NotImplemented
            for pos, (arg, t) in enumerate((("input", input), ("other", other)), 1):
                if not isinstance(t, Tensor):
                    kind = type(t).__qualname__ if type(t).__module__ == "builtins" else \
                        f"{type(t).__module__}.{type(t).__qualname__}"
                    raise TypeError(f"matmul(): argument '{arg}' (position {pos}) must be "
                                    f"Tensor, not {kind}") from None
            raise
        if sparse:  # a sparse COO operand: tgrad.sparse's kernels
            return input @ other
        if STATE.autocast is not None:  # tgrad.amp's "lower" policy, inline (the hot path)
            (input, other), _ = cast_args("lower", (input, other))  # noqa: A001
        _check("matmul", input, other)
        a, b = input, other
        an, bn = a._data.ndim, b._data.ndim
        if an == 2 and bn == 2:  # the common case first (the cases are exclusive)
            return MatMul.apply(a, b)
        if an == 1 and bn == 1:
            return Dot.apply(a, b)
        if an == 1 and bn == 2:  # squeezed in place (PyTorch's squeeze_), so the result
            y = MatMul.apply(a.unsqueeze(0), b)  # is no view of the product, as PyTorch's
            return y.squeeze_(0)
        if bn == 1 and an == 2:  # PyTorch's one MvBackward0 node
            return Mv.apply(a, b)
        # a >= 3-D operand from here
        if an == 3 and bn == 3:  # PyTorch: a batch of one that requires grad is squeezed,
            # so that the product folds into one mm (its gradient one product, no sum)
            if b.shape[0] == 1 and a.shape[0] != 1 and b.requires_grad:
                return matmul(a, b.squeeze(0))
            if a.shape[0] == 1 and b.shape[0] != 1 and a.requires_grad:
                return matmul(a.squeeze(0), b)
        if _should_fold(a, b):  # PyTorch's mm / mv of a fold
            return _folded(a, b)
        try:  # checked here, so that another ValueError (e.g. a launch's) is not reported as
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # this
        except ValueError:
            raise RuntimeError(f"matmul: batch dimensions cannot be broadcast "
                               f"({list(a.shape)} and {list(b.shape)})") from None
        return _batched(a, b, batch)
    return matmul


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """PyTorch's should_fold: a product of a >= 3-D t1 (a, or b^T when b has more dims)
    and a 1-D / 2-D t2 (the other) runs as one mm / mv of t1 folded to (rows, k) where
    t2 requires grad (so its gradient is one product, not a sum over a broadcast batch) or
    the fold is a view (t1's leading dims are one contiguous run: strides[i] ==
    strides[i+1] * shape[i+1]); a 2-D a times a >= 3-D b folds only in the first case (the
    transposed result would be copied)."""
    larger_a = a.ndim >= b.ndim
    t1 = a if larger_a else b.mT
    small = b if larger_a else a
    if t1.ndim < 3 or small.ndim > 2:
        return False
    if small.requires_grad:
        return True
    if a.ndim == 2:
        return False
    if t1.numel() == 0:
        return True
    shape, st = t1.shape, t1.stride()
    return all(st[i] == st[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


def _folded(a: Tensor, b: Tensor) -> Tensor:
    """a @ b as PyTorch folds it (see _should_fold): t1 (..., n, k) reshaped to
    (prod(...) * n, k) (ViewBackward0 where a view), times t2 by mm (t2 (k, p)) or mv (t2
    (k,)), and the product given t1's leading shape by _unsafe_view (UnsafeViewBackward0,
    no view of the product). With b the larger (a 1-D / 2-D, b >= 3-D): t1 = b^T, t2 = a^T
    (a 1-D a as is) and a matrix result transposed back and made contiguous (PyTorch's
    mT().contiguous(): TransposeBackward0 + CloneBackward0)."""
    from tgrad.ops.shape import UnsafeView
    transpose = b.ndim > a.ndim
    t1 = b.mT if transpose else a
    t2 = (a.t() if a.ndim == 2 else a) if transpose else b
    lead = t1.shape[:-1]
    folded = t1.reshape(math.prod(lead), t1.shape[-1])
    if t2.ndim == 2:
        y = UnsafeView.apply(MatMul.apply(folded, t2), lead + (t2.shape[1],))
        return y.mT.contiguous() if transpose else y
    return UnsafeView.apply(Mv.apply(folded, t2), lead)


def _flattens_in_place(t: Tensor, batch: tuple, tail: tuple) -> bool:
    """Whether ``t`` expanded to batch + tail and reshaped to (prod(batch),) + tail is a view
    (no copy): its batch dims, broadcast ones (stride 0) included, merge into one."""
    st = expand_strides(t.shape, t.stride(), batch + tail)
    return st is not None and view_strides(batch + tail, st, (math.prod(batch),) + tail) \
        is not None


def _batched(a: Tensor, b: Tensor, batch: tuple) -> Tensor:
    """a @ b with a >= 3-D operand that _should_fold did not fold. Where both operands
    expanded to the broadcast ``batch`` and reshaped to (B, n, k) / (B, k, p) are views (a
    1-D a as (B, 1, k), a 1-D b as (B, k) unsqueezed to (B, k, 1)), PyTorch's graph: one bmm
    (BmmBackward0) of those views (ExpandBackward0 / ViewBackward0 on the operands), a 1-D
    b's column squeezed, and _unsafe_view to batch + (n,) + (p,) (UnsafeViewBackward0).
    Otherwise (a batch broadcast across other batch dims, or batch dims that do not merge)
    PyTorch copies the operands to the full batch; tgrad reads them in place instead, in one
    BmmBackward0 node over the broadcast batch, its edges the operands themselves (their
    gradients summed back over the broadcast dims by sum_to). Without a graph to record
    (no_grad, or no operand requiring grad, no forward-AD level) the in-place form always:
    the same products (one GEMM per matrix either way), without the four views and the
    _unsafe_view around them (46 -> ~8 us host time at (1, 16, 16) @ (1, 16, 16))."""
    from tgrad.ops.shape import UnsafeView
    an, bn = a.ndim, b.ndim
    n = a.shape[-2] if an > 1 else 1
    k = a.shape[-1]
    p = b.shape[-1] if bn > 1 else 1
    batch = tuple(batch)
    if not ((STATE.enabled and (a.requires_grad or b.requires_grad))
            or STATE.fw_level is not None) \
            or not (_flattens_in_place(a, batch, (n, k) if an > 1 else (k,))
                    and _flattens_in_place(b, batch, (k, p) if bn > 1 else (k,))):
        if an == 1:  # a 1-D operand: squeezed in place (PyTorch's squeeze_), so the result
            y = Bmm.apply(a.unsqueeze(0), b)  # is no view of the product, as PyTorch's
            return y.squeeze_(y.ndim - 2)
        if bn == 1:
            y = Bmm.apply(a, b.unsqueeze(1))
            return y.squeeze_(y.ndim - 1)
        return Bmm.apply(a, b)
    nb = math.prod(batch)
    a3 = a.expand(batch + (n, k)).reshape(nb, n, k)
    if bn == 1:
        b3 = b.expand(batch + (k,)).reshape(nb, k).unsqueeze(2)
    else:
        b3 = b.expand(batch + (k, p)).reshape(nb, k, p)
    y = Bmm.apply(a3, b3)
    if bn == 1:
        y = y.squeeze(-1)
    return UnsafeView.apply(y, batch + ((n,) if an > 1 else ()) + ((p,) if bn > 1 else ()))


matmul = tensor_method("matmul")(_make_matmul(False))
tensor_method("__matmul__")(_make_matmul(True))


@tensor_method("__rmatmul__")
def _rmatmul(self: Tensor, other) -> Tensor:
    """``other @ self``; ``ndarray @ t`` (or 5 @ t...) is Python's TypeError, as
    PyTorch's."""
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


@tensor_method("mm")
@autocast_policy("lower")
def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("mm", input)
    if type(mat2) is not Tensor:
        require_tensor("mm", mat2, "mat2", 2)
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input._sparse or mat2._sparse:  # a sparse COO operand (tgrad.sparse)
        return input @ mat2
    return matmul(input, mat2)


@tensor_method("bmm")
@autocast_policy("lower")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    if type(input) is not Tensor:  # (a call only for others)
        require_tensor("bmm", input)
    if type(mat2) is not Tensor:
        require_tensor("bmm", mat2, "mat2", 2)
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes must match, got {input.shape[0]} and "
                           f"{mat2.shape[0]}")
    if input._sparse or mat2._sparse or STATE.autocast is not None:
        return matmul(input, mat2)
    _check("matmul", input, mat2)  # (matmul's texts)
    return Bmm.apply(input, mat2)  # (one BmmBackward0 node, PyTorch's)


def _linalg_method(name: str, module: str):
    """Tensor.<name>: the function ``name`` of tgrad/linalg/<module>.py (imported on first
    use, as the tgrad.linalg module is)."""
    def method(self, *args, **kwargs):
        import importlib
        return getattr(importlib.import_module("tgrad.linalg." + module), name)(
            self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``tgrad.{name}(self, ...)``, see tgrad.linalg."
    return method


for _name in ("inverse", "det", "logdet", "matrix_power"):
    tensor_method(_name)(_linalg_method(_name, "_lu"))
for _name in ("qr", "svd", "slogdet", "pinverse", "matrix_exp", "cholesky",
              "cholesky_inverse", "lu", "triangular_solve", "geqrf", "orgqr", "ormqr"):
    tensor_method(_name)(_linalg_method(_name, "_legacy"))
tensor_method("cholesky_solve")(_linalg_method("cholesky_solve", "_triangular"))
