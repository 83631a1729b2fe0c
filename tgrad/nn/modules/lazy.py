"""Lazy modules (PyTorch's LazyModuleMixin): layers whose input size is inferred on the
first forward.

A lazy module holds UninitializedParameter / UninitializedBuffer placeholders (dtype and
device known, shape not; ``Module.to`` converts them). A forward pre-hook calls
``initialize_parameters(input)`` on the first call: it reads the input size (in_features =
input.shape[-1]; in_channels = input.shape[1], or shape[0] unbatched; num_features =
input.shape[1]), materializes the placeholders in place (optimizers built before keep
working on the same objects), runs the regular ``reset_parameters`` (so the values are
those of the eager layer: the same init and the same generator draws), removes the hooks
and turns the module into its eager class (LazyLinear -> Linear, ...).

state_dict: placeholders are saved as they are; loading a state with real tensors into a
lazy module materializes them first (a load pre-hook), so a saved initialized module loads
into a fresh lazy one.
"""

from __future__ import annotations

from tgrad.nn.modules.batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _BatchNorm,
    _InstanceNorm,
    _NormBase,
)
from tgrad.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from tgrad.nn.modules.linear import Linear
from tgrad.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from tgrad.tensor import Tensor

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Shape inference on the first forward (module doc). ``cls_to_become``: the eager class
    the module turns into once initialized."""

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._register_lazy_hooks()

    def _register_lazy_hooks(self) -> None:
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if (is_lazy(p) or keep_vars) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if (is_lazy(b) or keep_vars) else b.detach()

    def _lazy_load_hook(self, state_dict: dict, prefix: str, local_metadata: dict,
                        strict: bool, missing_keys: list, unexpected_keys: list,
                        error_msgs: list) -> None:
        """Materialize each placeholder that the state_dict has a real tensor for."""
        for name, p in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if key in state_dict and p is not None and is_lazy(p) \
                    and not is_lazy(state_dict[key]):
                p.materialize(state_dict[key].shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """True while any of this module's parameters or buffers is a placeholder."""
        return any(is_lazy(t) for t in list(self._parameters.values())
                   + list(self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook
        del module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


# ------------------------------------------------------------------ Linear
class LazyLinear(LazyModuleMixin, Linear):
    """Linear with in_features = input.shape[-1] on the first forward."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)  # a 0 x 0 weight, replaced below
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


# ------------------------------------------------------------------ convolutions
class _LazyConvXdMixin(LazyModuleMixin):
    def _lazy_init(self, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:  # noqa: A002
        no_batch = self._spatial + 1
        if input.ndim not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        return input.shape[1] if input.ndim == no_batch + 1 else input.shape[0]

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name: str, base: type, spatial: int, transposed: bool) -> type:
    if transposed:
        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0,  # noqa: N807
                     output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                     padding_mode: str = "zeros", device=None, dtype=None) -> None:
            base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups,
                          False, dilation, padding_mode, device, dtype)
            self.out_channels = out_channels
            self._lazy_init(bias, device, dtype)
            self._register_lazy_hooks()
    else:
        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0,  # noqa: N807
                     dilation=1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device=None, dtype=None) -> None:
            base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                          padding_mode, device, dtype)
            self.out_channels = out_channels
            self._lazy_init(bias, device, dtype)
            self._register_lazy_hooks()
    doc = (f"{base.__name__} with in_channels = input.shape[1] (shape[0] unbatched) on the "
           f"first forward.")
    return type(name, (_LazyConvXdMixin, base), {
        "__init__": __init__, "cls_to_become": base, "_spatial": spatial, "__doc__": doc,
        "__module__": __name__})


# The generated __init__s build the eager layer with 0 channels (base.__init__), then put
# the placeholders and hooks in (LazyModuleMixin.__init__'s cooperative chain would pass
# the lazy signature's arguments to the base).
LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1, False)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2, False)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3, False)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2, True)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3, True)


# ------------------------------------------------------------------ norms
class _LazyNormBase(LazyModuleMixin, _NormBase):
    def _lazy_init(self, affine: bool, track_running_stats: bool, bias: bool, device,
                   dtype) -> None:
        from tgrad import dtypes
        from tgrad.ops.creation import tensor
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dtypes.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name: str, base: type, affine_default: bool, track_default: bool) -> type:
    # As PyTorch's, the lazy class derives from base's parent (_BatchNorm or _InstanceNorm),
    # not from base: a LazyBatchNorm1d is a BatchNorm1d only once materialised (it then
    # becomes one, cls_to_become). base's own members (the input check, _spatial) are
    # copied in.
    parent = _InstanceNorm if issubclass(base, _InstanceNorm) else _BatchNorm

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1,  # noqa: N807
                 affine: bool = affine_default, track_running_stats: bool = track_default,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        # num_features 0, no affine / running stats: placeholders replace them below
        parent.__init__(self, 0, eps, momentum, False, False, device, dtype, bias=False)
        self._lazy_init(affine, track_running_stats, bias, device, dtype)
        self._register_lazy_hooks()
    kind = "InstanceNorm" if parent is _InstanceNorm else "BatchNorm"
    own = {k: v for k, v in vars(base).items() if not k.startswith("__")}
    return type(name, (_LazyNormBase, parent), {
        **own, "__init__": __init__, "cls_to_become": base, "__module__": __name__,
        "__doc__": f"{base.__name__} with num_features = input.shape[1] on the first forward "
                   f"({kind}; affine={affine_default}, track_running_stats={track_default} "
                   f"by default, as PyTorch's)."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, True, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, True, True)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True, True)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True, True)
