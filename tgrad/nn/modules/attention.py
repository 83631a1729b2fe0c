"""MultiheadAttention (PyTorch's parameters, masks and outputs), over
F.multi_head_attention_forward (tgrad/nn/_mha.py)."""

from __future__ import annotations

from tgrad.nn import init
from tgrad.nn._mha import multi_head_attention_forward
from tgrad.nn.modules.linear import NonDynamicallyQuantizableLinear
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size embed_dim / num_heads.

    Inputs (L, N, E) / (S, N, kdim) / (S, N, vdim), or (N, L, E)... with ``batch_first``,
    or unbatched (L, E); returns (attn_output like query, attn_weights (N, L, S) averaged
    over heads, (N, H, L, S) with ``average_attn_weights=False``, or None without
    ``need_weights``). ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or (N H, L, S):
    bool True = may NOT attend (the opposite of scaled_dot_product_attention's bool mask),
    or float masks added to the scores. Parameters as PyTorch: in_proj_weight (3E, E) (or
    q/k/v_proj_weight when kdim/vdim differ) xavier-uniform, in_proj_bias (3E) and
    out_proj.bias zeros, bias_k / bias_v (1, 1, E) xavier-normal with ``add_bias_kv``
    (one more key/value position per batch element); ``add_zero_attn`` adds an all-zero
    one per head."""

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
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
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
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        batched = query.ndim == 3
        if self.batch_first and batched:  # (N, L, E) -> (L, N, E), one view per distinct
            # input (query is key is value stays so: the packed in-projection reads it)
            same_kv, same_qk = key is value, query is key
            query = query.transpose(0, 1)
            key = query if same_qk else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, weights
