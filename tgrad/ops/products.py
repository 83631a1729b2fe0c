"""Products built on matmul (no primitive of their own): dot, mv, outer, the
``beta * input + alpha * product`` family (addmm, addmv, baddbmm, addbmm), and the diagonal
ops diag and trace. Gradients come from matmul's and the elementwise ops' rules, except
addmm's: one AddmmBackward0 node where one dtype of float32/64 or complex applies
(ops/matmul.py's Addmm), and addmv's / baddbmm's / addbmm's (and mathcomposites' addr's):
one node of PyTorch's name over the composition's values (_ScaledSum)."""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, expandable
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    backend_of,
    register_op,
    require_tensor,
    rounded_to,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange, zeros
from tgrad.ops.elementwise import node_variant
from tgrad.ops.index import IndexAdd, normalize_key
from tgrad.ops.matmul import (
    _REAL,
    ADDMM_DTYPES,
    _product_grads,
    addmm_node,
    matmul,
    scaled_product,
)
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor, _int_arg

__all__ = ["dot", "vdot", "mv", "outer", "ger", "addmm", "addmv", "baddbmm", "addbmm", "diag",
           "trace"]


def _dims(op: str, want: tuple, *tensors: Tensor) -> None:
    """Each tensor has the number of dims ``want`` says (PyTorch's messages)."""
    got = tuple(t.ndim for t in tensors)
    if got != want:
        raise RuntimeError(f"{op}: expected {'D and '.join(map(str, want))}D tensors, but got "
                           f"{'D and '.join(map(str, got))}D tensors")


@tensor_method("dot")
@autocast_policy(None, cpu="native")  # CPU: not lowered (PyTorch's CPU lists omit dot)
def dot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """sum(input * other) of two 1-D tensors of the same size and dtype."""
    require_tensor("dot", input)
    require_tensor("dot", other, "other", 2)
    _dims("dot", (1, 1), input, other)
    if input.shape != other.shape:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input.shape[0]}] "
                           f"and src [{other.shape[0]}] to have the same number of elements, "
                           f"but got {input.shape[0]} and {other.shape[0]} elements "
                           f"respectively")
    return matmul(input, other)


class Vdot(Function):
    """y = sum_k conj(a_k) b_k of two 1-D tensors (k,) -> 0-d: one node, PyTorch's
    VdotBackward0 (edges a, b; real tensors too).
        da = conj(g) b        db = g a
    (PyTorch's formulas; tgrad ops, so they differentiate again). Saves a only if b needs
    a gradient, b only if a does. The forward is dot's of conj(a) and b."""

    name = "vdot"
    node_name = "VdotBackward0"
    saved_attributes = {"_saved_self": 0, "_saved_other": 1}

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        from tgrad.ops.complex_ops import conj_of
        return dot(conj_of(a) if a.dtype.is_complex else a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        from tgrad.ops.complex_ops import conj_of  # conj: complex only (identity when real)
        return (conj_of(g) * b if need_a else None), (g * a if need_b else None)


@tensor_method("vdot")
def vdot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """sum(conj(input) * other) of two 1-D tensors (PyTorch's: the first argument is
    conjugated; dot's checks and texts)."""
    require_tensor("vdot", input)
    require_tensor("vdot", other, "other", 2)
    return Vdot.apply(input, other)


@tensor_method("mv")
@autocast_policy("lower", cpu="native")
def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    """Matrix (n, m) times vector (m,) -> (n,)."""
    require_tensor("mv", input)
    require_tensor("mv", vec, "vec", 2)
    _dims("mv", (2, 1), input, vec)
    return matmul(input, vec)


@tensor_method("outer", "ger")
def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """out[i, j] = input[i] * vec2[j] of two 1-D tensors."""
    require_tensor("outer", input)
    require_tensor("outer", vec2, "vec2", 2)
    _dims("outer", (1, 1), input, vec2)
    return input.unsqueeze(1) * vec2


ger = outer


def _scaled_sum(op: str, input: Tensor, a: Tensor, b: Tensor, beta, alpha,  # noqa: A002
                batch_sum: bool = False) -> Tensor:
    """beta * input + alpha * (a @ b) (summed over the batch with ``batch_sum``), input
    broadcast to the product's shape (never the other way), halves in float32 and rounded
    once; beta == 0 ignores input's values (its NaN/inf too) but keeps it in the graph
    (a zero gradient), as PyTorch, and alpha == 0 the product's (but baddbmm's, as
    PyTorch's). Integer tensors with a float beta or alpha raise addr's
    error (PyTorch's addmm & co truncate the scalar silently instead). addmm, addmv,
    baddbmm and addbmm take one dtype, as PyTorch's kernels (no promotion of input)."""
    if op != "addr" and a.dtype is b.dtype and input.dtype is not a.dtype:
        names = [dtypes.SCALAR_TYPE_NAMES[t.dtype] for t in (input, a, b)]
        raise RuntimeError({
            "addmv": f"addmv input tensors must have the same dtype, but got {names[0]}, "
                     f"{names[1]}, and {names[2]}",
            "baddbmm": f"baddbmm: Input dtypes must be the same, got: input {input.dtype.name}, "
                       f"batch1: {a.dtype.name}, batch2: {b.dtype.name}",
        }.get(op, f"{op}: self and mat2 must have the same dtype, but got {names[0]} and "
                  f"{names[2]}"))
    rt = dtypes.result_type(input, a, b)
    if not (rt.is_floating_point or rt.is_complex):
        for name, s in (("beta", beta), ("alpha", alpha)):
            if isinstance(s, float):
                raise RuntimeError(f"{op}: For integral input tensors, argument {name} must "
                                   f"not be a floating point number. (Pass an int, or "
                                   f"convert the tensors with .float().)")
    if not rt.is_complex:  # PyTorch's checked conversion of a complex beta / alpha
        for s in (beta, alpha):
            if isinstance(s, (complex, np.complexfloating)):
                dtypes.check_value_fits(op, s, rt)  # (only a zero imaginary part converts)
        beta, alpha = (s.real if isinstance(s, (complex, np.complexfloating)) else s
                       for s in (beta, alpha))
    (input, a, b), half = widen_halves(input, a, b)  # noqa: A001
    product = matmul(a, b)
    if batch_sum:
        product = product.sum(0)
    if not expandable(input.shape, product.shape):
        raise RuntimeError(f"{op}: the input of shape {list(input.shape)} can't be expanded "
                           f"to the product's shape {list(product.shape)}")
    if alpha == 0 and op != "baddbmm":  # BLAS's: the product's NaN/inf are not read (PyTorch's
        # baddbmm multiplies them by 0); a and b stay in the graph (alpha * their gradient)
        product = ew.where(zeros(product.shape, dtype=dtypes.bool_, device=product.device),
                           product, 0)
    elif alpha != 1:
        product = product * alpha
    if beta == 0:
        never = zeros(input.shape, dtype=dtypes.bool_, device=input.device)
        out = ew.where(never, input, 0) + product
    else:
        out = (input if beta == 1 else input * beta) + product
    return rounded_to(out, half)


class _ScaledSum(Function):
    """beta * input + alpha * (a @ b) (``_scaled_sum``'s values: halves in float32 rounded
    once, beta == 0 / alpha == 0 ignoring input's / the product's NaN) as one node of
    PyTorch's name (edges input, a, b): baddbmm's BaddbmmBackward0 here, addmv's / addbmm's
    / addr's by node_variant. With A, B, G the operands and g read as (batches of) matrices
    (addmv: B = b[:, None], G = g[:, None]; addr: A = a[:, None], B = b[None]; addbmm: G is
    broadcast over the batch):
        d input = sum_to(conj(beta) g, input.shape)
        d a = conj(alpha) G @ B^H (summed to A)      d b = conj(alpha) A^H @ G (summed to B)
    read back to a's / b's shapes (a product of tgrad ops: it differentiates again)."""

    name = "baddbmm"
    node_name = "BaddbmmBackward0"
    saved_attributes = {"_saved_alpha": "alpha", "_saved_beta": "beta",
                        "_saved_batch1": 0, "_saved_batch2": 1}

    @staticmethod
    def forward(ctx, input, a, b, op, beta, alpha):  # noqa: A002
        ctx.save_for_backward(a, b)
        ctx.op, ctx.beta, ctx.alpha, ctx.in_shape = op, beta, alpha, input.shape
        shape = _one_kernel_shape(op, input, a, b, beta, alpha)
        if shape is not None:  # the composition's steps on the backend arrays (its values;
            # baddbmm's alpha == 0 multiplies the product's NaN by 0, as PyTorch's)
            return scaled_product(input, a, b, beta, alpha, shape, alpha == 0 and op == "addmv")
        if op == "addr":
            return _scaled_sum(op, input, a.unsqueeze(1), b.unsqueeze(0), beta, alpha)
        return _scaled_sum(op, input, a, b, beta, alpha, batch_sum=op == "addbmm")

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_in, need_a, need_b = ctx.needs_input_grad[:3]
        op, beta, alpha = ctx.op, ctx.beta, ctx.alpha
        (g, a, b), half = widen_halves(g, a, b)
        gi = sum_to(g if beta == 1 else g * beta.conjugate(), ctx.in_shape) if need_in else None
        ga = gb = None
        if need_a or need_b:
            A, B, G = a, b, g  # noqa: N806 (the matrices of the docstring)
            if op == "addmv":
                B, G = b.unsqueeze(1), g.unsqueeze(1)  # noqa: N806
            elif op == "addr":
                A, B = a.unsqueeze(1), b.unsqueeze(0)  # noqa: N806
            ga, gb = _product_grads(G, A, B, need_a, need_b, A.shape, B.shape)
            ga, gb = (None if t is None else rounded_to(
                (t if alpha == 1 else t * alpha.conjugate()).reshape(v.shape), half)
                for t, v in ((ga, a), (gb, b)))
        return rounded_to(gi, half) if need_in else None, ga, gb, None, None, None


def _one_kernel_shape(op: str, input: Tensor, a: Tensor, b: Tensor, beta,  # noqa: A002
                      alpha) -> tuple | None:
    """The result's shape where baddbmm / addmv run straight on the backend arrays (as
    Addmm: one dtype of ADDMM_DTYPES, real beta and alpha, one device, no sparse operand,
    shapes that multiply, input expanding to the result); None otherwise (the composition,
    which raises the errors)."""
    dt = a.dtype
    if (op not in ("baddbmm", "addmv") or dt not in ADDMM_DTYPES or input.dtype is not dt
            or b.dtype is not dt or type(beta) not in _REAL or type(alpha) not in _REAL
            or input.device is not a.device or b.device is not a.device or input._sparse
            or a._sparse or b._sparse):
        return None
    if op == "addmv":
        if a.shape[1] != b.shape[0]:
            return None
        out = (a.shape[0],)
    else:
        if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            return None
        out = (a.shape[0], a.shape[1], b.shape[2])
    if input.ndim > len(out) or any(s != 1 and s != o for s, o in zip(input.shape[::-1],
                                                                       out[::-1])):
        return None
    return out


_ADDMV = node_variant(_ScaledSum, "AddmvBackward0", name="addmv", saved_attributes={
    "_saved_alpha": "alpha", "_saved_beta": "beta", "_saved_mat": 0, "_saved_vec": 1})
_ADDBMM = node_variant(_ScaledSum, "AddbmmBackward0", name="addbmm",
                       saved_attributes=_ScaledSum.saved_attributes)
ADDR = node_variant(_ScaledSum, "AddrBackward0", name="addr", saved_attributes={
    "_saved_alpha": "alpha", "_saved_beta": "beta", "_saved_vec1": 0, "_saved_vec2": 1})
for _c in (_ScaledSum, _ADDMV, _ADDBMM, ADDR):
    register_op(_c)


@tensor_method("addmm")
@autocast_policy("lower")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2), input broadcast to (n, p)."""
    require_tensor("addmm", input)
    require_tensor("addmm", mat1, "mat1", 2)
    require_tensor("addmm", mat2, "mat2", 3)
    _dims("addmm", (2, 2), mat1, mat2)
    y = addmm_node(input, mat1, mat2, beta, alpha)  # (one AddmmBackward0 node)
    if y is not None:
        return y
    return _scaled_sum("addmm", input, mat1, mat2, beta, alpha)


@tensor_method("addmv")
@autocast_policy("lower", cpu="native")  # CPU: one kernel, not lowered
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat @ vec)."""
    require_tensor("addmv", input)
    require_tensor("addmv", mat, "mat", 2)
    require_tensor("addmv", vec, "vec", 3)
    _dims("addmv", (2, 1), mat, vec)
    return _ADDMV.apply(input, mat, vec, "addmv", beta, alpha)  # (one AddmvBackward0 node)


@tensor_method("baddbmm")
@autocast_policy("lower")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1,  # noqa: A002
            alpha=1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2) for (b, n, m) @ (b, m, p)."""
    require_tensor("baddbmm", input)
    require_tensor("baddbmm", batch1, "batch1", 2)
    require_tensor("baddbmm", batch2, "batch2", 3)
    _dims("baddbmm", (3, 3), batch1, batch2)
    return _ScaledSum.apply(input, batch1, batch2, "baddbmm", beta, alpha)  # (BaddbmmBackward0)


@tensor_method("addbmm")
@autocast_policy("lower")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1,  # noqa: A002
           alpha=1) -> Tensor:
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]."""
    require_tensor("addbmm", input)
    require_tensor("addbmm", batch1, "batch1", 2)
    require_tensor("addbmm", batch2, "batch2", 3)
    _dims("addbmm", (3, 3), batch1, batch2)
    return _ADDBMM.apply(input, batch1, batch2, "addbmm", beta, alpha)  # (AddbmmBackward0)


@tensor_method("diag")
def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """1-D input: a square matrix with input on its ``diagonal``-th diagonal; 2-D input: that
    diagonal as a 1-D tensor (a copy)."""
    require_tensor("diag", input)
    diagonal = _int_arg("diag", "diagonal", diagonal, 2)
    from tgrad.ops.layout import DiagEmbed, DiagonalCopy
    if input.ndim == 1:  # PyTorch's diag_embed(input, diagonal) (DiagEmbedBackward0)
        return DiagEmbed.apply(input, diagonal, (-2, -1), (0, 1))
    if input.ndim != 2:
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got {input.ndim}-D")
    return DiagonalCopy.apply(input, diagonal, 0, 1)  # (DiagonalBackward0_copy)


class Trace(Function):
    """y = sum_i x[i, i] of a 2-D x (n, m) -> 0-d: one node, PyTorch's TraceBackward0.
    dx = g on the main diagonal, 0 elsewhere ((n, m)): on the CPU without a graph, g written
    through a diagonal view of zeros; otherwise g expanded to the diagonal's length and
    index-added at its key (two aranges of min(n, m)), so it differentiates again."""

    name = "trace"
    node_name = "TraceBackward0"
    saved_attributes = {"_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        be, (s0, s1) = backend_of(x), x.stride()  # the diagonal: a strided view, not copied
        diagonal = be.as_strided(x._data, (min(x.shape),), (s0 + s1,))
        return wrap(be.sum_(diagonal, (0,), False), x.device)

    @staticmethod
    def backward(ctx, g):
        if g.device.type == "cpu" and not is_grad_enabled():  # g written on a zero diagonal
            from tgrad.ops.layout import _write_diagonal
            out = np.zeros(ctx.shape, g.dtype.np)
            _write_diagonal(out, np.broadcast_to(g._data, (min(ctx.shape),)), 0, 0, 1)
            return wrap(out, g.device)
        rows = arange(min(ctx.shape), device=g.device)
        key = normalize_key((rows, rows), g.device, 2)[0]
        return IndexAdd.apply(g.expand(rows.shape), key, ctx.shape)


@tensor_method("trace")
@autocast_policy(None, cpu="fp32")
def trace(input: Tensor) -> Tensor:  # noqa: A002
    """Sum of the main diagonal of a 2-D tensor."""
    require_tensor("trace", input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype is dtypes.bool_:  # (sum takes bools; PyTorch's trace does not)
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return Trace.apply(input)
