"""Attention as a composition of tgrad ops (matmuls and the fused softmax), re-exported by
tgrad.nn.functional; nn.MultiheadAttention builds on it.

scaled_dot_product_attention: q (*, L, E), k (*, S, E), v (*, S, Ev) -> (*, L, Ev),
    y = softmax(q k^T * scale + bias) v, scale = 1 / sqrt(E) by default; ``attn_mask`` is a
    bool mask (True = may attend; False adds -inf) or a float bias, broadcast to (*, L, S);
    ``is_causal`` masks j > i. Rows with nothing to attend to give 0 (PyTorch's safe
    softmax in its math path), not NaN, and no gradient.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import expandable
from tgrad.ops._common import rounded_to, widen_halves
from tgrad.ops.creation import ones
from tgrad.ops.elementwise import where
from tgrad.tensor import Tensor

__all__ = ["scaled_dot_product_attention"]

_NEG_INF = float("-inf")


def _check(q: Tensor, k: Tensor, v: Tensor) -> None:
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
    if not (q.dtype is k.dtype is v.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {q.dtype.name} key.dtype: {k.dtype.name} and "
                           f"value.dtype: {v.dtype.name} instead.")
    if not q.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected floating point query, key "
                           f"and value, got {q.dtype.name}")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value of at "
                           f"least 2 dims (*, L, E), got {list(q.shape)}, {list(k.shape)} and "
                           f"{list(v.shape)}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: query (*, L, E) {list(q.shape)}, key "
                           f"(*, S, E) {list(k.shape)} and value (*, S, Ev) {list(v.shape)} do "
                           f"not agree on E and S")


def _check_mask_shape(attn_mask: Tensor, scores: Tensor) -> None:
    """attn_mask must broadcast to the scores' shape (*, L, S) without growing it (PyTorch
    adds it in place, so a mask of more dims or larger sizes is refused)."""
    want = tuple(scores.shape)
    if not expandable(tuple(attn_mask.shape), want):
        raise RuntimeError(f"scaled_dot_product_attention: attn_mask of shape "
                           f"{list(attn_mask.shape)} does not broadcast to the attention "
                           f"weights' shape {list(want)} (*, L, S)")


def _grouped(q: Tensor, t: Tensor, enable_gqa: bool) -> Tensor:
    """Key/value heads (dim -3) repeated to the query's head count (grouped-query attention)."""
    if not enable_gqa or q.ndim < 3 or t.ndim < 3 or t.shape[-3] == q.shape[-3]:
        return t
    hq, hk = q.shape[-3], t.shape[-3]
    if hk == 0 or hq % hk:
        raise RuntimeError(f"scaled_dot_product_attention: number of heads in key/value ({hk}) "
                           f"must divide the number of heads in query ({hq})")
    return t.repeat_interleave(hq // hk, dim=-3)


def safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with rows that are all -inf giving 0 (not NaN) and no
    gradient: such rows are replaced by 0 before the softmax and their result by 0 after.
    On the CPU (reading a value there is no device sync) scores whose minimum is above -inf
    (no -inf, no NaN: no mask, or a float mask with finite values) have no such row: the
    two wheres would be identities and are skipped (the same values and gradients)."""
    from tgrad.nn.functional import softmax
    if scores.device.type == "cpu" and scores.numel() \
            and scores.detach().amin().item() > _NEG_INF:
        return softmax(scores, -1)
    empty = (scores == _NEG_INF).all(-1, keepdim=True)  # (*, L, 1); no host sync
    return where(empty, 0.0, softmax(where(empty, 0.0, scores), -1))


@autocast_policy("lower")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims (see the module docstring);
    ``dropout_p`` drops attention weights (pass 0 in evaluation, as in PyTorch)."""
    from tgrad.nn.attention import check_viable
    from tgrad.nn.functional import dropout
    _check(query, key, value)
    check_viable()  # the flags tgrad.nn.attention.sdpa_kernel sets
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    key, value = _grouped(query, key, enable_gqa), _grouped(query, value, enable_gqa)
    (q, k, v), half = widen_halves(query, key, value)  # halves: float32, rounded once
    e = q.shape[-1]
    s = (1.0 / math.sqrt(e) if e else 1.0) if scale is None else float(scale)
    scores = (q * s) @ k.transpose(-2, -1)  # (*, L, S)
    l_len, s_len = scores.shape[-2], scores.shape[-1]
    no_empty_row = False  # (known without a scan: safe_softmax's wheres are identities)
    if is_causal:
        # row i keeps columns 0..i, so no row is all -inf unless scores held -inf / NaN
        # already: on the CPU (a host read is no sync) one look at them tells
        no_empty_row = (scores.device.type == "cpu" and s_len > 0 and scores.numel() > 0
                        and scores.detach().amin().item() > _NEG_INF)
        allowed = ones(l_len, s_len, dtype=dtypes.bool_, device=q.device).tril()
        scores = scores.masked_fill(allowed.logical_not(), _NEG_INF)
    elif attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): attn_mask must be a Tensor, not "
                            f"{type(attn_mask).__name__}")
        _check_mask_shape(attn_mask, scores)
        if attn_mask.dtype is dtypes.bool_:
            scores = scores.masked_fill(attn_mask.logical_not(), _NEG_INF)
        elif attn_mask.dtype is query.dtype or attn_mask.dtype is dtypes.float32:
            # PyTorch's "float" is float32: such a mask is added to any query dtype's scores
            scores = scores + attn_mask.to(scores.dtype)
        else:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {attn_mask.dtype.name} and "
                               f"query.dtype: {query.dtype.name} instead.")
    if no_empty_row:
        from tgrad.nn.functional import softmax
        weights = softmax(scores, -1)
    else:
        weights = safe_softmax(scores)
    if dropout_p > 0.0:
        if dropout_p > 1.0:  # (PyTorch's kernel: a RuntimeError; a p <= 0 drops nothing)
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                               f"{dropout_p}")
        weights = dropout(weights, dropout_p, True)
    return rounded_to(weights @ v, half)
