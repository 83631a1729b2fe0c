"""tgrad.nn.utils, as ``torch.nn.utils``: gradient clipping (``clip_grad_norm_``,
its deprecated alias ``clip_grad_norm``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``, from ``clip_grad``),
``parameters_to_vector`` / ``vector_to_parameters``, the ``rnn`` submodule (``pad_sequence``,
``unpad_sequence``, ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``), ``parametrize`` (``register_parametrization``...)
``parametrizations`` (``orthogonal``, ``weight_norm``, ``spectral_norm``) and the older
hook-based ``weight_norm`` / ``spectral_norm`` with their ``remove_`` functions, ``prune``,
``fusion`` (fuse_conv_bn_eval...), ``stateless.functional_call`` and ``memory_format``
(convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format)."""

from tgrad.nn.utils import (
    fusion,
    memory_format,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from tgrad.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from tgrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tgrad.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from tgrad.nn.utils.init_skip import skip_init
from tgrad.nn.utils.memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from tgrad.nn.utils.norm_hooks import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn", "parametrize",
           "parametrizations", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm", "prune", "fusion", "stateless", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init",
           "memory_format", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format"]
