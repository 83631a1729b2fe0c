"""PyTorch's top-level names for nn.functional ops (``torch.conv2d``, ``torch.layer_norm``,
``torch.kl_div`` ...), calling tgrad.nn.functional's implementations under PyTorch's
top-level signatures, which differ from F's in places:

- losses take ``reduction`` as an int (0 = 'none', 1 = 'mean', 2 = 'sum'; a str is
  PyTorch's TypeError) and have no size_average / reduce; binary_cross_entropy_with_logits
  is (input, target, weight, pos_weight, reduction), poisson_nll_loss's arguments are all
  positional and required;
- batch_norm / instance_norm are (input, weight, bias, running_mean, running_var, training,
  momentum, eps, cudnn_enabled), all required; layer_norm / group_norm end with
  ``cudnn_enable(d)`` (ignored);
- embedding is (weight, indices, padding_idx=-1, scale_grad_by_freq, sparse): weight first,
  a negative padding_idx means none;
- pooling's ``stride=()`` (PyTorch's default) means the kernel size; adaptive_max_pool1d
  returns (values, indices), max_pool1d_with_indices too;
- dropout variants are (input, p, train) with in-place forms ``dropout_``,
  ``alpha_dropout_``, ``feature_dropout_``, ``feature_alpha_dropout_``; feature_dropout
  zeroes whole (N, C) slices (F.dropout2d's mask without its rank checks);
- rrelu / rrelu_ take ``training=False`` and a ``generator``;
- constant_pad_nd(input, pad, value=0) is F.pad's constant mode.

- embedding_bag is (weight, indices (n,), offsets, scale_grad_by_freq, mode (an int: 0 sum,
  1 mean, 2 max), sparse, per_sample_weights, include_last_offset, padding_idx) and returns
  PyTorch's internal 4-tuple (output, offset2bag, bag_size, max_indices); see its docstring.

nn.functional is imported when a function is called (tgrad.ops loads before tgrad.nn).
"""

from __future__ import annotations

from tgrad.ops._common import require_tensor
from tgrad.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "avg_pool1d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_pool1d_with_indices", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "batch_norm", "instance_norm", "group_norm", "layer_norm", "rms_norm",
           "embedding", "embedding_bag", "bilinear", "celu", "celu_", "selu", "selu_", "threshold",
           "threshold_", "hardshrink", "prelu", "rrelu", "rrelu_", "dropout_",
           "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "kl_div", "poisson_nll_loss",
           "binary_cross_entropy_with_logits", "cosine_embedding_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "ctc_loss",
           "constant_pad_nd"]

_REDUCTIONS = ("none", "mean", "sum")  # PyTorch's at::Reduction enum: 0, 1, 2


def _F():  # noqa: N802
    from tgrad.nn import functional
    return functional


def _reduction(op: str, reduction, position: int) -> str:
    """PyTorch's int reduction (0 none, 1 mean, 2 sum) as nn.functional's string."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{op}(): argument 'reduction' (position {position}) must be int, not "
                        f"{type(reduction).__name__} (0 = 'none', 1 = 'mean', 2 = 'sum'; the "
                        f"string form is tgrad.nn.functional.{op}'s)")
    if reduction not in (0, 1, 2):
        raise ValueError(f"{op}(): {reduction} is not a valid value for reduction (0 = 'none', "
                         f"1 = 'mean', 2 = 'sum')")
    return _REDUCTIONS[reduction]


def _stride(stride):
    """PyTorch's pooling default ``stride=()``: the kernel size (F's None)."""
    return None if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else stride


# ------------------------------------------------------------------ convolutions
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


# ------------------------------------------------------------------ pooling
def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0,  # noqa: A002
                            dilation=1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """(values, int64 indices into the last dim), as max_pool1d(return_indices=True)."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                           True)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:  # noqa: A002
    """(values, indices): PyTorch's top-level form always returns both."""
    return _F().adaptive_max_pool1d(input, output_size, True)


# ------------------------------------------------------------------ normalization
def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training,
                           momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    return _F().instance_norm(input, running_mean, running_var, weight, bias,
                              use_input_stats, momentum, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    return _F().group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    return _F().rms_norm(input, normalized_shape, weight, eps)


# ------------------------------------------------------------------ embedding, bilinear
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """weight[indices]; rows at ``padding_idx`` (when >= 0) get no gradient."""
    require_tensor("embedding", weight, "weight", 1)
    require_tensor("embedding", indices, "indices", 2)
    return _F().embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                          None, 2.0, scale_grad_by_freq, sparse)


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(output, offset2bag, bag_size, max_indices), as PyTorch 2.13's CPU kernel returns them.

    weight (num_embeddings, D), indices (n,) and offsets (B,) (or (B + 1,) with
    include_last_offset) as nn.functional.embedding_bag's 1-D form; output (B, D) is F's (the
    only differentiable one). The int tensors (int32 when indices and offsets both are, else
    int64):
    - offset2bag (n,): the bag of each entry; empty (0,) in mode sum when weight is
      float32/float16/bfloat16 and there is no padding_idx (PyTorch's fast path);
    - bag_size: mean, max: (B,) entries per bag, padding_idx entries left out; sum: zeros
      (offsets.shape[0],);
    - max_indices: max: (B, D) the weight row holding each bag's maximum per column (the
      first maximal entry; 0 for an empty bag); mean: bag_size; sum: zeros(offsets.shape[0]).
    A negative padding_idx counts from the end (-1 is the last row).
    """
    from tgrad import dtypes
    from tgrad.nn._embedding_bag import MODES, _bag_sizes, _embedding_bag
    from tgrad.ops import elementwise as ew
    from tgrad.ops.creation import zeros
    require_tensor("embedding_bag", weight, "weight", 1)
    require_tensor("embedding_bag", indices, "indices", 2)
    require_tensor("embedding_bag", offsets, "offsets", 3)
    if isinstance(mode, bool) or not isinstance(mode, int):
        raise TypeError(f"embedding_bag(): argument 'mode' (position 5) must be int, not "
                        f"{type(mode).__name__} (0 = 'sum', 1 = 'mean', 2 = 'max'; the string "
                        f"form is tgrad.nn.functional.embedding_bag's)")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    for name, t in (("indices", indices), ("offsets", offsets)):
        if t.dtype not in (dtypes.int64, dtypes.int32):
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the "
                               f"following scalar types: Long, Int; but got {t.dtype.name} "
                               f"instead (while checking arguments for embedding_bag)")
    if indices.ndim != 1:
        raise RuntimeError(f"embedding_bag: indices must be 1-D (n,) with offsets marking the "
                           f"bags, got shape {tuple(indices.shape)}; flatten it, or use "
                           f"tgrad.nn.functional.embedding_bag for (B, N) bags")
    if offsets.ndim != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                           f"{offsets.ndim}")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding_bag: weight must be 2-D (num_embeddings, D), got shape "
                           f"{tuple(weight.shape)}")
    rows_n = weight.shape[0]
    if padding_idx is not None:
        if not -rows_n <= padding_idx < rows_n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                               f"-{rows_n} through {rows_n - 1}, but got {padding_idx}")
        padding_idx %= rows_n
    if per_sample_weights is not None:
        require_tensor("embedding_bag", per_sample_weights, "per_sample_weights", 7)
        if mode != 0:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with "
                               "mode='sum'")
        if per_sample_weights.numel() != indices.numel():
            raise RuntimeError(f"embedding_bag: per_sample_weights has {per_sample_weights.numel()}"
                               f" elements, indices has {indices.numel()}: they must match")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type "
                               f"as tensor for argument #1 'per_sample_weights'; but type "
                               f"{weight.dtype.name} does not equal "
                               f"{per_sample_weights.dtype.name} (while checking arguments for "
                               f"embedding_bag)")
        per_sample_weights = per_sample_weights.reshape(indices.shape)
    out, idx, seg, bags, keep, first, sizes = _embedding_bag(
        indices, weight, offsets, None, 2.0, scale_grad_by_freq, MODES[mode], sparse,
        per_sample_weights, include_last_offset, padding_idx)
    itype = dtypes.int32 if indices.dtype is offsets.dtype is dtypes.int32 else dtypes.int64
    dev = weight.device
    n = idx.shape[0]
    fast_sum = mode == 0 and padding_idx is None and weight.dtype in (
        dtypes.float32, dtypes.float16, dtypes.bfloat16)
    offset2bag = zeros(0, dtype=itype, device=dev) if fast_sum else seg.to(itype)
    if mode == 0:
        none = zeros(offsets.shape[0], dtype=itype, device=dev)
        return out, offset2bag, none, none.clone()
    # (B,) the entries each bag counts; mode 'mean' computed them already
    bag_size = (_bag_sizes(seg, keep, bags) if sizes is None else sizes).to(itype)
    if mode == 1:
        return out, offset2bag, bag_size, bag_size.clone()
    if first is None:  # no entries: every bag is empty
        return out, offset2bag, bag_size, zeros(bags, weight.shape[1], dtype=itype, device=dev)
    rows = idx.to(dtypes.int64)[first.clamp(max=n - 1)]  # (B, D): the weight row of each max
    return out, offset2bag, bag_size, ew.where(first < n, rows, 0).to(itype)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    return _F().bilinear(input1, input2, weight, bias)


# ------------------------------------------------------------------ activations
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return _F().celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return _F().celu_(input, alpha)


def selu(input: Tensor) -> Tensor:  # noqa: A002
    return _F().selu(input)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return _F().selu_(input)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _F().threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _F().threshold_(input, threshold, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    return _F().hardshrink(input, lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    return _F().prelu(input, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, generator=None) -> Tensor:
    """Randomized leaky ReLU (slopes ~ U(lower, upper) from ``generator`` in training)."""
    from tgrad.nn._layers_extra import rrelu_impl
    return rrelu_impl(input, lower, upper, training, False, generator)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False, generator=None) -> Tensor:
    """rrelu in place."""
    from tgrad.nn._layers_extra import rrelu_impl
    return rrelu_impl(input, lower, upper, training, True, generator)


# ------------------------------------------------------------------ dropout
def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F().alpha_dropout(input, p, train, inplace=True)


def _feature(op: str, input: Tensor, p: float, train: bool, inplace: bool) -> Tensor:  # noqa: A002
    from tgrad.nn._dropout import _check_p, _feature_dropout
    require_tensor(op, input)
    _check_p(p)
    if input.ndim < 2:
        raise RuntimeError(f"{op}: Feature dropout requires at least 2 dimensions in the "
                           f"input (got shape {tuple(input.shape)})")
    return _feature_dropout(input, p, train, inplace, True, op)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """Zero whole input[n, c] slices with probability p, scale the rest by 1/(1-p)."""
    return _feature("feature_dropout", input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _feature("feature_dropout_", input, p, train, True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


# ------------------------------------------------------------------ shuffles, padding
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    return _F().channel_shuffle(input, groups)


def constant_pad_nd(input: Tensor, pad, value: float = 0) -> Tensor:  # noqa: A002
    """F.pad(input, pad, 'constant', value)."""
    return _F().pad(input, tuple(pad), "constant", value)


# ------------------------------------------------------------------ losses (int reduction)
def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,  # noqa: A002
           log_target: bool = False) -> Tensor:
    return _F().kl_div(input, target, reduction=_reduction("kl_div", reduction, 3),
                       log_target=log_target)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool,  # noqa: A002
                     eps: float, reduction: int) -> Tensor:
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction("poisson_nll_loss", reduction, 6))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 1) -> Tensor:
    if weight is not None:  # (optional; a number had no .shape)
        require_tensor("binary_cross_entropy_with_logits", weight, "weight", 3)
    r = _reduction("binary_cross_entropy_with_logits", reduction, 5)
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=r,
                                                 pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, reduction: int = 1) -> Tensor:
    return _F().cosine_embedding_loss(
        input1, input2, target, margin,
        reduction=_reduction("cosine_embedding_loss", reduction, 5))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: int = 1) -> Tensor:
    return _F().hinge_embedding_loss(
        input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction, 4))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor,
                        margin: float = 0.0, reduction: int = 1) -> Tensor:
    return _F().margin_ranking_loss(
        input1, input2, target, margin,
        reduction=_reduction("margin_ranking_loss", reduction, 5))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 1) -> Tensor:
    require_tensor("triplet_margin_loss", positive, "positive", 2)
    require_tensor("triplet_margin_loss", negative, "negative", 3)
    return _F().triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap,
        reduction=_reduction("triplet_margin_loss", reduction, 8))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _reduction("ctc_loss", reduction, 6), zero_infinity)
