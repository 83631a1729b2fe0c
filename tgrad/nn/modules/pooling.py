"""Max, average and adaptive average pooling (1-d and 2-d)."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn._ntuple import _ntuple
from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """Max over windows of (N, C, H, W) or (C, H, W); see F.max_pool2d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """Max over windows of (N, C, L) or (C, L); see F.max_pool1d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """Max over windows of (N, C, D, H, W) or (C, D, H, W); see F.max_pool3d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class _AvgPoolNd(Module):
    # AvgPool2d's and AvgPool3d's __init__ (AvgPool1d has its own: 1-tuples, no
    # divisor_override) and the repr
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over windows of (N, C, H, W) or (C, H, W); see F.avg_pool2d."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    """Mean over windows of (N, C, D, H, W) or (C, D, H, W); see F.avg_pool3d."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad, self.divisor_override)


class AvgPool1d(_AvgPoolNd):
    """Mean over windows of (N, C, L) or (C, L); see F.avg_pool1d."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        Module.__init__(self)  # (not _AvgPoolNd's: no divisor_override here)
        # 1-tuples, as PyTorch's (its repr shows kernel_size=(3,))
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding, self.ceil_mode = _ntuple(padding, 1), ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad)


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean over adaptive windows to an (oh, ow) output; see F.adaptive_avg_pool2d."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean over adaptive windows of the last dim; see F.adaptive_avg_pool1d."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max over adaptive windows to an (oh, ow) output; see F.adaptive_max_pool2d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over adaptive windows of the last dim; see F.adaptive_max_pool1d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool2d(_LPPoolNd):
    """Power-average pooling (sum of x^p over kh x kw windows)^(1/p) (F.lp_pool2d)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """Power-average pooling over windows of the last dim (F.lp_pool1d)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over kd x kh x kw windows (F.lp_pool3d)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.lp_pool3d(input, self.norm_type, self.kernel_size, self.stride,
                           self.ceil_mode)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mean over adaptive windows to an (od, oh, ow) output; see F.adaptive_avg_pool3d."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max over adaptive windows to an (od, oh, ow) output; see F.adaptive_max_pool3d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    # kernel_size, stride and padding are n-tuples, as PyTorch's (and its repr); forward
    # calls F.max_unpool{n}d
    _fn = "max_unpool2d"
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _ntuple(padding, self._n)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:  # noqa: A002
        return getattr(F, self._fn)(input, indices, self.kernel_size, self.stride,
                                    self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool2d(_MaxUnpoolNd):
    """Undo MaxPool2d from its indices (F.max_unpool2d); forward(input, indices,
    output_size=None)."""


class MaxUnpool1d(_MaxUnpoolNd):
    """Undo MaxPool1d from its indices (F.max_unpool1d)."""

    _fn = "max_unpool1d"
    _n = 1


class MaxUnpool3d(_MaxUnpoolNd):
    """Undo MaxPool3d from its indices (F.max_unpool3d)."""

    _fn = "max_unpool3d"
    _n = 3


class _FractionalMaxPoolNd(Module):
    # FractionalMaxPool2d's and 3d's code (siblings, as PyTorch's, which has no such base)
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name, n = type(self).__name__, self._n
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):  # noqa: A002
        return getattr(F, f"fractional_max_pool{self._n}d")(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) to ``output_size`` (or
    int(size * output_ratio)); see F.fractional_max_pool2d. ``_random_samples`` (N, C, 2),
    a buffer, fixes the window placement."""


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, T, H, W) or (C, T, H, W); see
    F.fractional_max_pool3d (``_random_samples`` (N, C, 3))."""

    _n = 3
