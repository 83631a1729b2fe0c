"""BatchNorm1d/2d and InstanceNorm1d/2d (running statistics as buffers)."""

from __future__ import annotations

import warnings

from tgrad import dtypes
from tgrad.nn import functional as F
from tgrad.nn import init
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


class _NormBase(Module):
    """weight (ones) and bias (zeros) of num_features when ``affine`` (the bias None when
    the keyword-only ``bias`` is False, as PyTorch 2.13: no "bias" in the state_dict);
    buffers running_mean (zeros), running_var (ones) and num_batches_tracked (int64 0) when
    ``track_running_stats``."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        from tgrad.ops.creation import empty, ones, tensor, zeros
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device,
                                                       dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    _version = 2  # version 2 added num_batches_tracked

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        # PyTorch's _NormBase: a state_dict older than version 2 (or a plain dict, with no
        # metadata) may lack num_batches_tracked; the module then keeps its own value
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                from tgrad.ops.creation import tensor
                state_dict[key] = self.num_batches_tracked \
                    if self.num_batches_tracked is not None \
                    else tensor(0, dtype=dtypes.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        raise NotImplementedError

    def _factor(self) -> float:
        """The running statistics' momentum for this step (PyTorch's
        exponential_average_factor): ``momentum``, or 1 / batches seen when it is None."""
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                return 1.0 / float(self.num_batches_tracked.item())
        return 0.0 if self.momentum is None else self.momentum

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        factor = self._factor()
        # batch statistics in training, or when no running statistics are kept
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input,
                            self.running_mean if not self.training or self.track_running_stats
                            else None,
                            self.running_var if not self.training or self.track_running_stats
                            else None,
                            self.weight, self.bias, use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) over N (and L), per channel."""

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) over N, H, W, per channel."""

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) over N, D, H, W, per channel."""

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


class SyncBatchNorm(_BatchNorm):
    """PyTorch's SyncBatchNorm: batch normalisation of (N, C, ...) inputs whose statistics
    would be reduced across the processes of ``process_group``. tgrad runs in one process
    (tgrad.distributed is unavailable), so it normalises as ``BatchNorm{1,2,3}d`` does, as
    PyTorch's SyncBatchNorm does when no process group is initialised.
    ``convert_sync_batchnorm(module)`` swaps every BatchNorm layer of a model for one."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: object = None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim >= 2 and input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: object = None) -> Module:
        """``module`` with every BatchNorm layer (``_BatchNorm``) replaced by a SyncBatchNorm
        holding the same parameters (the same Parameter objects), running statistics and
        training mode; a BatchNorm ``module`` itself is returned converted."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        unbatched = input.ndim == self._spatial + 1
        dim = 0 if unbatched else 1  # the channels (PyTorch's texts)
        if input.shape[dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[dim]}.")
            warnings.warn(f"input's size at dim={dim} does not match num_features. You can "
                          f"silence this warning by not passing in num_features, which is not "
                          f"used because affine=False", stacklevel=2)
        x = input.unsqueeze(0) if unbatched else input
        momentum = 0.0 if self.momentum is None else self.momentum  # (no batch counting)
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) over L."""

    _spatial = 1

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) over H, W."""

    _spatial = 2

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {input.ndim}D input)")


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) over D, H, W."""

    _spatial = 3

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim not in (4, 5):
            raise ValueError(f"expected 4D or 5D input (got {input.ndim}D input)")
