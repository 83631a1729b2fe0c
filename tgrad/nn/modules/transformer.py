"""Transformer, TransformerEncoder/Decoder and their layers (PyTorch's modules, parameter
names and maths; no nested tensors and no fused fast path: only the one visible effect of
PyTorch's nested-tensor path, zeros at padded output positions, is reproduced).

Shapes (S source length, T target length, N batch, E = d_model): src (S, N, E), tgt
(T, N, E), or (N, S, E) / (N, T, E) with ``batch_first``, or unbatched (S, E) / (T, E);
src_mask (S, S), tgt_mask (T, T), memory_mask (T, S), or (N nhead, ., .); key padding
masks (N, S) / (N, T), or (S,) / (T,) unbatched. A bool mask's True means "may NOT
attend" (the opposite of scaled_dot_product_attention's); a float mask is added to the
attention scores. The output has tgt's shape.

Encoder layer, with SA(x) = dropout1(self_attn(x, x, x)) and
FF(x) = dropout2(linear2(dropout(activation(linear1(x))))):
    post-norm (default)   x = norm1(x + SA(x));  x = norm2(x + FF(x))
    norm_first            x = x + SA(norm1(x));  x = x + FF(norm2(x))
Decoder layer: the same with a cross-attention block CA(x) = dropout2(multihead_attn(x, m,
m)) over the memory m between the two, norm2 for CA and norm3 for FF (dropout3 after FF).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable

from tgrad.amp.autocast_mode import is_autocast_enabled
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.nn import functional as F
from tgrad.nn import init
from tgrad.nn._mha import _float_mask
from tgrad.nn.modules.activation import GELU, ReLU
from tgrad.nn.modules.attention import MultiheadAttention
from tgrad.nn.modules.container import ModuleList
from tgrad.nn.modules.dropout import Dropout
from tgrad.nn.modules.linear import Linear
from tgrad.nn.modules.module import Module
from tgrad.nn.modules.normalization import LayerNorm
from tgrad.tensor import Tensor

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]


def _get_clones(module: Module, n: int) -> ModuleList:
    """``n`` independent deep copies of ``module`` (its parameters are copied, not shared)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _hint(is_causal: bool | None) -> bool:
    """The is_causal hint passed to the layers. tgrad always applies the given mask (the hint
    never replaces it), so PyTorch's detection of a causal mask when the hint is None would
    not change any result and is skipped; None counts as False."""
    return bool(is_causal)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward network, each with a residual connection and a
    LayerNorm (after, or before with ``norm_first``); see the module docstring for the
    maths and shapes. ``activation``: "relu", "gelu" or a unary callable (a Module is
    registered as the submodule ``activation``). Parameters as PyTorch: self_attn
    (MultiheadAttention), linear1 (dim_feedforward, d_model), linear2 (d_model,
    dim_feedforward), norm1, norm2; ``bias=False`` drops every Linear and LayerNorm bias."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        # PyTorch's flag read by its fast paths: 1 relu, 2 gelu, 0 any other activation
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """src (S, N, E) / (N, S, E) / (S, E) -> the same shape."""
        src_key_padding_mask = _float_mask(src_key_padding_mask, src.dtype,
                                           "src_key_padding_mask")
        src_mask = _float_mask(src_mask, src.dtype, "src_mask")
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention over the target, cross-attention (``multihead_attn``) over the encoder
    output ``memory`` and a feed-forward network, each with a residual connection and a
    LayerNorm (norm1, norm2, norm3; after, or before with ``norm_first``). Arguments and
    parameters as TransformerEncoderLayer, plus multihead_attn, norm3 and dropout3."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """tgt (T, N, E), memory (S, N, E) (batch first or unbatched alike) -> tgt's shape."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask, key_padding_mask,
                   is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ``layers.1``, ...)
    applied in turn, then ``norm`` if given. ``use_nested_tensor`` is set as PyTorch's (False,
    with its UserWarning, when ``enable_nested_tensor`` is True but the layer rules PyTorch's
    nested-tensor path out). Where that path would run (see ``_nested_fast_path``) tgrad
    computes as usual and, as PyTorch's path does, writes 0 at the padded positions."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """src (S, N, E) / (N, S, E) / (S, E); mask (S, S) or (N nhead, S, S);
        src_key_padding_mask (N, S) or (S,) -> src's shape."""
        src_key_padding_mask = _float_mask(src_key_padding_mask, src.dtype,
                                           "src_key_padding_mask")
        mask = _float_mask(mask, src.dtype, "mask")
        pad = None
        if self._nested_fast_path(src, mask, src_key_padding_mask):
            # PyTorch drops the padded positions, the nonzero entries of the float mask
            # (N, S), (a nested tensor) and pads its result (N, S, E) back with 0: the
            # other positions attend only to each other, whatever the mask's values
            pad = src_key_padding_mask != 0
            src_key_padding_mask = _float_mask(pad, src.dtype, "src_key_padding_mask")
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=_hint(is_causal),
                         src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        if pad is not None:
            output = output.masked_fill(pad.unsqueeze(-1), 0.0)
        return output

    def _nested_fast_path(self, src: Tensor, mask, src_key_padding_mask) -> bool:
        """Whether PyTorch's TransformerEncoder.forward would take its nested-tensor (sparsity)
        fast path: use_nested_tensor, the first layer in eval mode, a batched (3-D) src, a
        key padding mask whose unpadded positions (zeros of the float mask) form a prefix of
        each sequence, no ``mask``, no autocast, and no gradient to record for src or the
        first layer's attention, norm and linear parameters."""
        if (src_key_padding_mask is None or not getattr(self, "use_nested_tensor", False)
                or mask is not None or src.ndim != 3 or self.layers[0].training
                or is_autocast_enabled(src.device.type)):
            return False
        if is_grad_enabled():
            first = self.layers[0]
            args = (src, first.self_attn.in_proj_weight, first.self_attn.in_proj_bias,
                    first.self_attn.out_proj.weight, first.self_attn.out_proj.bias,
                    first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                    first.linear1.weight, first.linear1.bias, first.linear2.weight,
                    first.linear2.bias)
            if any(a is not None and a.requires_grad for a in args):
                return False
        pad = src_key_padding_mask != 0
        # left-aligned (PyTorch's mask_check): no unpadded position after a padded one
        return not bool((pad[:, :-1] & ~pad[:, 1:]).any())


def _why_not_nested(layer: Module) -> str:
    """PyTorch's reason (its text) why an encoder of ``layer`` cannot use nested tensors;
    "" if it can."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                f"inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not getattr(layer, "activation_relu_or_gelu", 0):
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn to tgt, each
    attending to the same ``memory``, then ``norm`` if given."""

    def __init__(self, decoder_layer: Module, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """tgt (T, N, E), memory (S, N, E) (or batch first / unbatched) -> tgt's shape."""
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=_hint(tgt_is_causal), memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder transformer ("Attention Is All You Need"): memory = encoder(src),
    out = decoder(tgt, memory). The encoder (decoder) is num_encoder_layers
    (num_decoder_layers) copies of TransformerEncoderLayer (TransformerDecoderLayer) followed
    by a final LayerNorm (``encoder.norm``, ``decoder.norm``), unless ``custom_encoder`` /
    ``custom_decoder`` is given. Every parameter with more than one dim is then re-drawn by
    ``xavier_uniform_`` (PyTorch's _reset_parameters). Shapes: see the module docstring."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """src (S, N, E), tgt (T, N, E) (batch first: (N, S, E), (N, T, E); unbatched:
        (S, E), (T, E)) -> (T, N, E) / (N, T, E) / (T, E). Masks: see the module docstring."""
        is_batched = src.ndim == 3
        bdim = 0 if self.batch_first else 1
        if is_batched and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The (sz, sz) causal float mask: 0 on and below the diagonal, -inf above it (in
        ``dtype``, default the default float dtype)."""
        from tgrad.ops.creation import full
        return full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

