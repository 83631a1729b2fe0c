"""Products and combinatorial constructions composed of existing tgrad ops (no kernel of
their own; gradients come from the parts):

- ``cross(input, other, dim)``: the 3-vector cross product along ``dim`` as three
  narrowed-slice products and a cat (inputs of equal rank broadcast);
- ``block_diag(*tensors)``: on the CPU one BlockDiagBackward0 node (PyTorch's) writing the
  blocks into zeros, else each block padded with zero blocks to its row band, bands
  concatenated (either way the gradient of each block is its window of g);
- ``cartesian_prod(*tensors)``: the 'ij' meshgrid of 1-D tensors, flattened and stacked;
- ``combinations(input, r, with_replacement)``: the lexicographic index tuples (a shape
  computation, done on the host) gathered from the 1-D input by advanced indexing;
- ``addr(input, vec1, vec2)``: beta input + alpha outer(vec1, vec2) (addmm's rules: beta = 0
  ignores the input's values, NaN included);
- ``chain_matmul(*matrices)``: the matrices multiplied in the order of fewest scalar
  multiplications (the classic O(k^3) matrix-chain dynamic programme).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, expandable
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    backend_of,
    broadcast_or_raise,
    require_tensor,
    same_device,
    tensor_method,
    wrap,
)
from tgrad.ops.composite import meshgrid
from tgrad.ops.creation import empty, tensor, zeros
from tgrad.ops.index import getitem
from tgrad.ops.matmul import matmul
from tgrad.ops.products import ADDR
from tgrad.ops.shape import _promoted, cat, narrow, stack
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["cross", "block_diag", "cartesian_prod", "combinations", "addr", "chain_matmul"]


def _tensor_list(tensors) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


# ------------------------------------------------------------------------------ cross
@tensor_method("cross")
@autocast_policy("promote", cpu=None)
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim``:
    out = (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0) along ``dim``.

    Shapes: input and other have the same number of dims, size 3 at ``dim``, the other dims
    broadcast; out has the broadcast shape. dim=None (deprecated in PyTorch) takes the first
    dim of size 3 of ``input``. d a = b x g, d b = g x a."""
    require_tensor("cross", input)
    require_tensor("cross", other, "other", 2)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use "
                      "torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning,
                      stacklevel=2)
        sizes3 = [i for i, s in enumerate(input.shape) if s == 3]
        if not sizes3:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes3[0]
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. "
                           f"Got {list(input.shape)} and {list(other.shape)}")
    d = _wrap_dim(dim, input.ndim, "cross")  # (its int check refuses a bool)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"cross: expected scalar type {input.dtype.name} but found "
                           f"{other.dtype.name} (input and other must have the same dtype)")
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    same_device("cross", input, other)
    shape = broadcast_or_raise("linalg.cross", input.shape, other.shape)
    a, b = input.expand(shape), other.expand(shape)
    a0, a1, a2 = (narrow(a, d, i, 1) for i in range(3))
    b0, b1, b2 = (narrow(b, d, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


# ------------------------------------------------------------------------------ block_diag
def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of the blocks: 0-d blocks count as (1, 1), 1-D (n,) as
    (1, n), 2-D (r, c) as they are; out is (sum r, sum c), zero off the blocks, in the
    blocks' promoted dtype. No blocks: a (1, 0) tensor (PyTorch's result)."""
    ts = _tensor_list(tensors)
    for i, t in enumerate(ts):
        require_tensor("block_diag", t, "tensors", None)
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
    if not ts:
        return empty(1, 0)
    device = same_device("block_diag", *ts)
    dt = dtypes.result_type(*ts)
    if device.type == "cpu":  # one node: the blocks written into zeros
        return BlockDiag.apply(*(t if t.dtype is dt else t.to(dt) for t in ts))
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in ts]
    width = sum(b.shape[1] for b in blocks)
    bands, left = [], 0
    for b in blocks:
        rows, cols = b.shape
        parts = [zeros(rows, left, dtype=dt, device=device), b.to(dt),
                 zeros(rows, width - left - cols, dtype=dt, device=device)]
        bands.append(cat(parts, 1))
        left += cols
    return cat(bands, 0)


def _block_windows(shapes: list) -> list:
    """(row, col, rows, cols) of each block's window in block_diag's output: 0-d blocks
    are (1, 1), 1-D (n,) are (1, n), 2-D as they are; windows run down the diagonal."""
    out, r, c = [], 0, 0
    for shape in shapes:
        rows, cols = (shape if len(shape) == 2 else (1, shape[0]) if shape else (1, 1))
        out.append((r, c, rows, cols))
        r, c = r + rows, c + cols
    return out


class BlockDiag(Function):
    """y = block_diag(*blocks) (blocks of one dtype, on the CPU): zeros (sum rows, sum cols)
    with each block (as 2-D) copied into its window (_block_windows); PyTorch's
    BlockDiagBackward0. d block_i = g's window i, reshaped to the block's shape (a view of
    g: narrows and a reshape, tgrad ops, so double backward works)."""

    name = "block_diag"
    node_name = "BlockDiagBackward0"

    @staticmethod
    def forward(ctx, *blocks):
        ctx.shapes = [tuple(b.shape) for b in blocks]
        ctx.windows = _block_windows(ctx.shapes)
        be = backend_of(blocks[0])
        r, c, rows, cols = ctx.windows[-1]
        out = be.full((r + rows, c + cols), 0, blocks[0].dtype.np)
        for b, (r, c, rows, cols) in zip(blocks, ctx.windows):
            # (a 0-d or 1-D block broadcasts into its one-row window)
            be.index_put_(out, (slice(r, r + rows), slice(c, c + cols)), b._data)
        return wrap(out, blocks[0].device)

    @staticmethod
    def backward(ctx, g):
        return tuple(narrow(narrow(g, 0, r, rows), 1, c, cols).reshape(shape) if need
                     else None for (r, c, rows, cols), shape, need
                     in zip(ctx.windows, ctx.shapes, ctx.needs_input_grad))


# ------------------------------------------------------------------------------ products of sets
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The cartesian product of 1-D tensors (n_0,), ..., (n_{k-1},): a (n_0 ... n_{k-1}, k)
    tensor whose rows are the tuples in lexicographic order (itertools.product's); one
    tensor is returned as it is (PyTorch's result)."""
    ts = _tensor_list(tensors)
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        require_tensor("cartesian_prod", t, "tensors", None)
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    if any(t.dtype is not ts[0].dtype for t in ts):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    same_device("cartesian_prod", *ts)
    return stack([g.flatten() for g in meshgrid(*ts, indexing="ij")], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-``r`` combinations of the elements of a 1-D (n,) input, as
    itertools.combinations (or combinations_with_replacement) of its positions: a (K, r)
    tensor, K = C(n, r) (or C(n + r - 1, r)); r = 0 gives an empty (0,) tensor. The
    gradient scatter-adds g back to the elements each row took."""
    require_tensor("combinations", input)
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    r = _int_arg("combinations", "r", r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return empty(0, dtype=input.dtype, device=input.device)
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    # positions: a function of the shape only, so computed on the host
    idx = np.array(list(make(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return getitem(input, tensor(idx, device=input.device))


# ------------------------------------------------------------------------------ products
@tensor_method("addr")
@autocast_policy("lower", cpu="native")  # CPU: one kernel, not lowered
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * outer(vec1, vec2): vec1 (n,), vec2 (m,), input broadcast to
    (n, m) -> (n, m). beta = 0 ignores input's values (NaN/inf too), as PyTorch; bool tensors
    give (beta and input) or (alpha and vec1 vec2^T)."""
    require_tensor("addr", input)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        require_tensor("addr", v, name, None)
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    rt = dtypes.result_type(input, vec1, vec2)
    if not (rt.is_floating_point or rt.is_complex):
        for name, s in (("beta", beta), ("alpha", alpha)):
            if isinstance(s, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not "
                                   f"be a floating point number.")
    same_device("addr", input, vec1, vec2)
    if rt == dtypes.bool_:  # PyTorch: (beta and input) or (alpha and vec1 vec2^T)
        outer = ew.logical_and(ew.logical_and(vec1.unsqueeze(1), vec2.unsqueeze(0)), bool(alpha))
        if not expandable(input.shape, outer.shape):
            raise RuntimeError(f"addr: the input of shape {list(input.shape)} can't be "
                               f"expanded to the product's shape {list(outer.shape)}")
        return ew.logical_or(outer, ew.logical_and(input, bool(beta)))
    # PyTorch's addr promotes all three first (its vec1 vec2^T is a broadcast product, and
    # beta * input is not computed in a narrower input dtype); matmul does not
    input, vec1, vec2 = _promoted([input, vec1, vec2], rt)  # noqa: A001
    return ADDR.apply(input, vec1, vec2, "addr", beta, alpha)  # (one AddrBackward0 node)


def _chain_order(dims: list) -> list:
    """split[i][j]: where the best bracketing of matrices i..j splits (dims[i] x dims[i+1] is
    matrix i), by the classic dynamic programme over chain lengths."""
    k = len(dims) - 1
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s
    return split


@autocast_policy("lower")
def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product M_0 M_1 ... M_{k-1} of 2-D matrices ((n_0, n_1), (n_1, n_2), ...) ->
    (n_0, n_k), bracketed for the fewest scalar multiplications (deprecated in PyTorch for
    linalg.multi_dot). One matrix: a copy."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two "
                  "or more tensors rather than multiple parameters.", UserWarning,
                  stacklevel=2)
    ms = _tensor_list(matrices)
    for i, m in enumerate(ms):
        require_tensor("chain_matmul", m, "matrices", None)
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected 2-dimensional tensor, but got "
                               f"{m.ndim}-dimensional tensor for argument #{i + 1} "
                               f"'matrices'")
    if not ms:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i in range(1, len(ms)):
        if ms[i].dtype is not ms[0].dtype:
            raise RuntimeError(f"chain_matmul(): all tensors must have the same dtype but "
                               f"tensor 0 is {ms[0].dtype.name} and tensor {i} "
                               f"{ms[i].dtype.name}")
        if ms[i - 1].shape[1] != ms[i].shape[0]:
            raise RuntimeError(f"chain_matmul(): tensors {i - 1} and {i} with shapes "
                               f"{list(ms[i - 1].shape)} and {list(ms[i].shape)} cannot be "
                               f"multiplied")
    same_device("chain_matmul", *ms)
    if len(ms) == 1:
        return ms[0].clone()
    split = _chain_order([ms[0].shape[0]] + [m.shape[1] for m in ms])

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return ms[i]
        s = split[i][j]
        return matmul(product(i, s), product(s + 1, j))

    return product(0, len(ms) - 1)
