"""``F.multi_head_attention_forward``: PyTorch's functional multi-head attention, which
``nn.MultiheadAttention`` calls. Inputs (L, N, E) / (S, N, kdim) / (S, N, vdim), or
unbatched (L, E); masks: bool True = may NOT attend, or float masks added to the scores.

    q, k, v = in-projections (packed in_proj_weight (3E, E), or q/k/v_proj_weight), each
              viewed as heads (L | S, N, H, hd) and permuted to (N, H, L | S, hd) (views)
    k, v += one row bias_k / bias_v per batch element (add_bias_kv), masks padded by a
            column of zeros; static_k / static_v (N H, S, E/H) replace the projected k / v
    k, v += one all-zero row per head (add_zero_attn), masks padded again
    weights = softmax(q k^T / sqrt(E/H) + attn_mask + key_padding_mask)   (N, H, L, S)
    out = out_proj(dropout(weights) v)       (N, H, L, hd) -> (L N, E): one copy

The in-projection is PyTorch's _in_projection_packed: self-attention (query is key is
value) one product (L N, E) x (E, 3E) whose q, k, v are one unbind of its (L, N, 3, H, hd)
view (their gradients stacked back in one copy); key is value one product for q and one
(S N, 2E) for k and v. (float32: OpenBLAS's product of 3E columns may round differently
from three of E columns: a few ulp, as PyTorch's one product does.)

``need_weights=True`` returns the weights (averaged over heads unless
``average_attn_weights=False``) from a plain softmax (a row with nothing to attend to gives
NaN, as PyTorch's path does); ``need_weights=False`` runs scaled_dot_product_attention.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad.nn._attention import scaled_dot_product_attention
from tgrad.ops.creation import zeros
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["multi_head_attention_forward"]


def _float_mask(mask, dtype, name: str):
    """A bool mask (True = not allowed) as an additive float mask (-inf there), PyTorch's
    _canonical_mask; float masks pass unchanged."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"multi_head_attention_forward: {name} must be a Tensor, not "
                        f"{type(mask).__name__}")
    if mask.dtype is dtypes.bool_:
        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


def _pad_column(mask):
    """One more key position that every query may attend to (a zero column)."""
    if mask is None:
        return None
    return cat([mask, zeros(mask.shape[:-1] + (1,), dtype=mask.dtype, device=mask.device)],
               -1)


def _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's _mha_shape_check: True for batched (3-D) inputs, False for unbatched."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`,"
                                 f" 2-D or 3-D but found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to "
                                 f"be 2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                     f"instead")
            if attn_mask.ndim == 3:
                want = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != want:
                    raise AssertionError(f"Expected `attn_mask` shape to be {want} but got "
                                         f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.ndim}-D query tensor")


def _pieces(t, e: int, count: int) -> tuple:
    """``t`` (in_proj_weight (3E, E) or in_proj_bias (3E)) split along dim 0 into ``count``
    pieces: E, E and the rest rows (3), or E and the rest (2: the packed key/value rows).
    One SplitWithSizesBackward0 node (its backward one cat), where slices would each
    scatter their gradient into zeros of the full shape."""
    rows = t.shape[0]
    sizes = [e] * (count - 1) + [rows - (count - 1) * e]
    if sizes[-1] < 0:  # (too few rows: the slices, as before; the product refuses them)
        return tuple(t[i * e:(i + 1) * e if i < count - 1 else rows] for i in range(count))
    return t.split(sizes)


def _as_heads(t, n_pieces: int, heads: int, head_dim: int) -> tuple:
    """A projection (L, N, n_pieces E) viewed as ``n_pieces`` tensors (L, N, H, hd): one
    view and one unbind (the pieces' gradients are stacked back in one copy)."""
    if n_pieces == 1:
        return (t.reshape(t.shape[0], t.shape[1], heads, head_dim),)
    return t.reshape(t.shape[0], t.shape[1], n_pieces, heads, head_dim).unbind(2)


def _project(x, w, b):
    """x (L, N, in) -> x W^T + b (L, N, out) as one addmm of x viewed (copied where its
    layout needs it: a batch_first input's transpose) as (L N, in): AddmmBackward0, not a
    product and a separate bias add. (For the packed projections, whose gradient is one
    contiguous stack: the bias gradient sums it in the same order as linear's would.)"""
    from tgrad.nn.functional import linear
    lead = x.shape[:-1]
    y = linear(x.reshape(lead[0] * lead[1], x.shape[-1]), w, b)
    return y.view(lead + y.shape[-1:])


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate, q_w, k_w, v_w,
                   heads: int, head_dim: int) -> tuple:
    """q (L, N, H, hd), k and v (S, N, H, hd): the in-projections viewed as heads.

    As PyTorch's _in_projection_packed: with in_proj_weight, self-attention (query is key
    is value) runs one product x W^T + b of (L N, 3E) (not three of (L N, E) on slices of
    W), and key is value one for q and one (S N, 2E) for k and v; other inputs (and
    q/k/v_proj_weight) one product each."""
    from tgrad.nn.functional import linear
    b = in_proj_bias
    if separate:
        if q_w is None or k_w is None or v_w is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
        bq, bk, bv = (None, None, None) if b is None else _pieces(b, q_w.shape[0], 3)
        return (_as_heads(linear(query, q_w, bq), 1, heads, head_dim)
                + _as_heads(linear(key, k_w, bk), 1, heads, head_dim)
                + _as_heads(linear(value, v_w, bv), 1, heads, head_dim))
    w = in_proj_weight
    if w is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    e = w.shape[0] // 3
    if query is key and key is value:
        return _as_heads(_project(query, w, b), 3, heads, head_dim)
    if key is value:
        wq, wkv = _pieces(w, e, 2)
        bq, bkv = (None, None) if b is None else _pieces(b, e, 2)
        return (_as_heads(linear(query, wq, bq), 1, heads, head_dim)
                + _as_heads(_project(key, wkv, bkv), 2, heads, head_dim))
    wq, wk, wv = _pieces(w, e, 3)
    bq, bk, bv = (None, None, None) if b is None else _pieces(b, e, 3)
    return (_as_heads(linear(query, wq, bq), 1, heads, head_dim)
            + _as_heads(linear(key, wk, bk), 1, heads, head_dim)
            + _as_heads(linear(value, wv, bv), 1, heads, head_dim))


def _heads_first(t, given, name: str, n: int, heads: int, head_dim: int):
    """(N, H, S, hd) keys/values: the projection ``t`` (S, N, H, hd) permuted (a view), or
    ``given`` (static_k / static_v, (N H, S, hd)) viewed so."""
    if given is None:
        return t.permute(1, 2, 0, 3)
    if given.shape[0] != n * heads:
        raise AssertionError(f"expecting {name}.size(0) of {n * heads}, but got "
                             f"{given.shape[0]}")
    if given.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{given.shape[2]}")
    return given.reshape(n, heads, given.shape[1], head_dim)


def _checked_attn_mask(attn_mask, tgt: int, src: int, rows: int):
    """attn_mask (L, S) as (1, L, S); (N H, L, S) as is; other shapes refused."""
    if attn_mask is None:
        return None
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt, src):
            raise RuntimeError(f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, "
                               f"but should be {[tgt, src]}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.ndim == 3:
        if tuple(attn_mask.shape) != (rows, tgt, src):
            raise RuntimeError(f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, "
                               f"but should be {[rows, tgt, src]}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")


def _score_mask(attn_mask, key_padding_mask, n: int, heads: int, src: int):
    """The additive mask over the scores (N, H, L, S): attn_mask (1, L, S) as (1, 1, L, S)
    or (N H, L, S) as (N, H, L, S), plus key_padding_mask (N, S) as (N, 1, 1, S); None
    when neither is given."""
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(n, heads, attn_mask.shape[1], src)
    if key_padding_mask is None:
        return attn_mask
    if tuple(key_padding_mask.shape) != (n, src):
        raise AssertionError(f"expecting key_padding_mask shape of {(n, src)}, but got "
                             f"{tuple(key_padding_mask.shape)}")
    kpm = key_padding_mask.reshape(n, 1, 1, src)
    return kpm if attn_mask is None else attn_mask + kpm


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn: bool,
        dropout_p: float, out_proj_weight: Tensor, out_proj_bias, training: bool = True,
        key_padding_mask=None, need_weights: bool = True, attn_mask=None,
        use_separate_proj_weight: bool = False, q_proj_weight=None, k_proj_weight=None,
        v_proj_weight=None, static_k=None, static_v=None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple:
    """(attn_output (L, N, E), attn_weights (N, L, S) / (N, H, L, S) or None): PyTorch's
    functional multi-head attention (module docstring). The heads are computed as
    (N, H, L, hd) views of the projections (no copy); the output's heads are gathered back
    to (L N, E) in one copy before out_proj."""
    from tgrad.nn.functional import dropout, linear, softmax
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        same_kv, same_qk = key is value, query is key  # (packed projections, kept)
        query = query.unsqueeze(1)
        key = query if same_qk else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt, n, embed_dim = query.shape
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {list(key.shape)} does not match value shape "
                             f"{list(value.shape)}")
    dt = query.dtype
    key_padding_mask = _float_mask(key_padding_mask, dt, "key_padding_mask")
    attn_mask = _float_mask(attn_mask, dt, "attn_mask")
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias,
                             use_separate_proj_weight, q_proj_weight, k_proj_weight,
                             v_proj_weight, num_heads, head_dim)  # (L | S, N, H, hd)
    rows = n * num_heads
    attn_mask = _checked_attn_mask(attn_mask, tgt, key.shape[0], rows)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        shape = (1, n, num_heads, head_dim)
        k = cat([k, bias_k.reshape(1, 1, num_heads, head_dim).expand(shape)])
        v = cat([v, bias_v.reshape(1, 1, num_heads, head_dim).expand(shape)])
        attn_mask, key_padding_mask = _pad_column(attn_mask), _pad_column(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given, or both be None")
    q = q.permute(1, 2, 0, 3)  # (N, H, L, hd), views
    k = _heads_first(k, static_k, "static_k", n, num_heads, head_dim)
    v = _heads_first(v, static_v, "static_v", n, num_heads, head_dim)
    if add_zero_attn:
        zero = zeros((n, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = cat([k, zero], 2), cat([v, zero], 2)
        attn_mask, key_padding_mask = _pad_column(attn_mask), _pad_column(key_padding_mask)
    src = k.shape[2]
    mask = _score_mask(attn_mask, key_padding_mask, n, num_heads, src)
    p = dropout_p if training else 0.0
    weights = None
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)  # (N, H, L, S)
        if mask is not None:
            scores = scores + mask
        weights = softmax(scores, dim=-1)
        if p > 0.0:
            weights = dropout(weights, p=p)  # returned after dropout, as PyTorch's
        attn = weights @ v
        if average_attn_weights:
            weights = weights.mean(dim=1)
    else:
        attn = scaled_dot_product_attention(q, k, v, mask, p)  # (N, H, L, hd)
    attn = attn.permute(2, 0, 1, 3).reshape(tgt * n, embed_dim)  # one copy, (L N, E)
    out = linear(attn, out_proj_weight, out_proj_bias).view(tgt, n, embed_dim)
    if not batched:
        return out.squeeze(1), None if weights is None else weights.squeeze(0)
    return out, weights
