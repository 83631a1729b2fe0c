"""MultiheadAttention (PyTorch's parameters, masks and outputs; no add_bias_kv/add_zero_attn)."""

from __future__ import annotations

from tgrad import dtypes
from tgrad.nn import functional as F
from tgrad.nn import init
from tgrad.nn._attention import scaled_dot_product_attention
from tgrad.nn.modules.linear import Linear
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


def _float_mask(mask, dtype, name: str):
    """A bool mask (True = not allowed) as an additive float mask (-inf there), PyTorch's
    _canonical_mask; float masks pass unchanged."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be a Tensor, not "
                        f"{type(mask).__name__}")
    if mask.dtype is dtypes.bool_:
        from tgrad.ops.creation import zeros
        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size embed_dim / num_heads.

    Inputs (L, N, E) / (S, N, kdim) / (S, N, vdim), or (N, L, E)... with ``batch_first``,
    or unbatched (L, E); returns (attn_output like query, attn_weights (N, L, S) averaged
    over heads, (N, H, L, S) with ``average_attn_weights=False``, or None without
    ``need_weights``). ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or (N H, L, S):
    bool True = may NOT attend (the opposite of scaled_dot_product_attention's bool mask),
    or float masks added to the scores. Parameters as PyTorch: in_proj_weight (3E, E) (or
    q/k/v_proj_weight when kdim/vdim differ) xavier-uniform, in_proj_bias (3E) and
    out_proj.bias zeros."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None,
                 dtype=None) -> None:
        from tgrad.ops.creation import empty
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported in tgrad")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self, query: Tensor, key: Tensor, value: Tensor) -> tuple:
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight[:e], self.in_proj_weight[e:2 * e], \
                self.in_proj_weight[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                               "the Transformer module method `generate_square_subsequent_mask`"
                               " to create this mask.")
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:  # (N, L, E) -> (L, N, E)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {query.shape[-1]}")
        tgt, n = query.shape[0], query.shape[1]
        src = key.shape[0]
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key shape {list(key.shape)} does not match value shape "
                                 f"{list(value.shape)}")
        h, hd = self.num_heads, self.head_dim
        q, k, v = self._projections(query, key, value)
        # (L, N, E) -> (N, H, L, hd)
        q = q.reshape(tgt, n, h, hd).permute(1, 2, 0, 3)
        k = k.reshape(src, n, h, hd).permute(1, 2, 0, 3)
        v = v.reshape(src, n, h, hd).permute(1, 2, 0, 3)
        mask = self._merged_mask(attn_mask, key_padding_mask, q.dtype, n, tgt, src)
        p = self.dropout if self.training else 0.0
        if need_weights:
            # Scores and a plain softmax (a row with nothing to attend to gives NaN, as
            # PyTorch's need_weights path does).
            scores = (q * (1.0 / hd ** 0.5)) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores, dim=-1)
            if p > 0:
                weights = F.dropout(weights, p)  # returned after dropout, as PyTorch's
            attn = weights @ v
        else:
            weights = None
            attn = scaled_dot_product_attention(q, k, v, mask, p)
        out = attn.permute(2, 0, 1, 3).reshape(tgt, n, self.embed_dim)
        out = self.out_proj(out)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if unbatched:
            return out.squeeze(1), None if weights is None else weights.squeeze(0)
        if self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _merged_mask(self, attn_mask, key_padding_mask, dtype, n: int, tgt: int, src: int):
        """One additive float mask broadcastable to (N, H, L, S), or None."""
        am = _float_mask(attn_mask, dtype, "attn_mask")
        kpm = _float_mask(key_padding_mask, dtype, "key_padding_mask")
        if am is not None:
            if am.ndim == 2:
                if tuple(am.shape) != (tgt, src):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {list(am.shape)}, but "
                                       f"should be {[tgt, src]}.")
            elif am.ndim == 3:
                if tuple(am.shape) != (n * self.num_heads, tgt, src):
                    raise RuntimeError(f"The shape of the 3D attn_mask is {list(am.shape)}, but "
                                       f"should be {[n * self.num_heads, tgt, src]}.")
                am = am.reshape(n, self.num_heads, tgt, src)
            else:
                raise RuntimeError(f"attn_mask's dimension {am.ndim} is not supported")
        if kpm is not None:
            if tuple(kpm.shape) != (n, src):
                raise AssertionError(f"expecting key_padding_mask shape of {(n, src)}, but got "
                                     f"{tuple(kpm.shape)}")
            kpm = kpm.reshape(n, 1, 1, src)
            am = kpm if am is None else am + kpm
        return am

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
