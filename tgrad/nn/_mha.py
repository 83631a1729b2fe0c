"""``F.multi_head_attention_forward``: PyTorch's functional multi-head attention, which
``nn.MultiheadAttention`` calls. Inputs (L, N, E) / (S, N, kdim) / (S, N, vdim), or
unbatched (L, E); masks: bool True = may NOT attend, or float masks added to the scores.

    q, k, v = in-projections (packed in_proj_weight (3E, E), or q/k/v_proj_weight)
    k, v += one row bias_k / bias_v per batch element (add_bias_kv), masks padded by a
            column of zeros; static_k / static_v (N H, S, E/H) replace the projected k / v
    k, v += one all-zero row per head (add_zero_attn), masks padded again
    weights = softmax(q k^T / sqrt(E/H) + attn_mask + key_padding_mask)   (N H, L, S)
    out = out_proj(dropout(weights) v)

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


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate, q_w, k_w, v_w):
    from tgrad.nn.functional import linear
    if separate:
        if q_w is None or k_w is None or v_w is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
        weights = (q_w, k_w, v_w)
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        e = in_proj_weight.shape[0] // 3
        weights = (in_proj_weight[:e], in_proj_weight[e:2 * e], in_proj_weight[2 * e:])
    e = weights[0].shape[0]
    b = in_proj_bias
    biases = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
    return tuple(linear(x, w, bias) for x, w, bias in zip((query, key, value), weights, biases))


def _static(t, given, name: str, rows: int, head_dim: int):
    """(N H, S, head_dim) key/value: the projected ``t`` split into heads, or ``given``."""
    if given is None:
        return t.reshape(t.shape[0], rows, head_dim).transpose(0, 1)
    if given.shape[0] != rows:
        raise AssertionError(f"expecting {name}.size(0) of {rows}, but got {given.shape[0]}")
    if given.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{given.shape[2]}")
    return given


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn: bool,
        dropout_p: float, out_proj_weight: Tensor, out_proj_bias, training: bool = True,
        key_padding_mask=None, need_weights: bool = True, attn_mask=None,
        use_separate_proj_weight: bool = False, q_proj_weight=None, k_proj_weight=None,
        v_proj_weight=None, static_k=None, static_v=None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple:
    """(attn_output (L, N, E), attn_weights (N, L, S) / (N, H, L, S) or None): PyTorch's
    functional multi-head attention (module docstring)."""
    from tgrad.nn.functional import dropout, linear, softmax
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
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
                             v_proj_weight)
    src = key.shape[0]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt, src):
                raise RuntimeError(f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, "
                                   f"but should be {[tgt, src]}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            want = (n * num_heads, tgt, src)
            if tuple(attn_mask.shape) != want:
                raise RuntimeError(f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, "
                                   f"but should be {list(want)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = cat([k, bias_k.reshape(1, 1, embed_dim).expand(1, n, embed_dim)])
        v = cat([v, bias_v.reshape(1, 1, embed_dim).expand(1, n, embed_dim)])
        attn_mask, key_padding_mask = _pad_column(attn_mask), _pad_column(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given, or both be None")
    rows = n * num_heads
    q = q.reshape(tgt, rows, head_dim).transpose(0, 1)  # (N H, L, hd)
    k = _static(k, static_k, "static_k", rows, head_dim)
    v = _static(v, static_v, "static_v", rows, head_dim)
    if add_zero_attn:
        zero = zeros((rows, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = cat([k, zero], 1), cat([v, zero], 1)
        attn_mask, key_padding_mask = _pad_column(attn_mask), _pad_column(key_padding_mask)
    src = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (n, src):
            raise AssertionError(f"expecting key_padding_mask shape of {(n, src)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(n, 1, 1, src).expand(n, num_heads, 1, src).reshape(
            rows, 1, src)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    p = dropout_p if training else 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)  # (N H, L, S)
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, dim=-1)
        if p > 0.0:
            weights = dropout(weights, p=p)  # returned after dropout, as PyTorch's
        attn = weights @ v
        weights = weights.reshape(n, num_heads, tgt, src)
        if average_attn_weights:
            weights = weights.mean(dim=1)
    else:
        weights = None
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
                attn_mask.reshape(n, num_heads, -1, src)
        attn = scaled_dot_product_attention(
            q.reshape(n, num_heads, tgt, head_dim), k.reshape(n, num_heads, src, head_dim),
            v.reshape(n, num_heads, src, head_dim), attn_mask, p)
        attn = attn.reshape(rows, tgt, head_dim)
    out = linear(attn.transpose(0, 1).reshape(tgt, n, embed_dim), out_proj_weight,
                 out_proj_bias)
    if not batched:
        return out.squeeze(1), None if weights is None else weights.squeeze(0)
    return out, weights
