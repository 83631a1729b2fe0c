"""PyTorch's deprecated per-device amp modules, ``torch.cpu.amp`` and ``torch.cuda.amp``:
``autocast`` / ``GradScaler`` (and, for cuda, ``custom_fwd`` / ``custom_bwd``) as
``tgrad.amp``'s with the device fixed, each warning with PyTorch's FutureWarning. The module
object is made at once (``import tgrad.cuda.amp`` works) and its contents on first use, since
tgrad.amp imports the tensor machinery."""

from __future__ import annotations

import functools
import sys
import types
import warnings
from typing import Any


def _warn(device_type: str, name: str, hint: str) -> None:
    warnings.warn(f"`torch.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                  f"{hint} instead.", FutureWarning, stacklevel=3)


def _contents(module: types.ModuleType, device_type: str, default_dtype_name: str) -> dict:
    from tgrad import amp as _amp
    from tgrad import dtypes
    default_dtype = getattr(dtypes, default_dtype_name)

    class autocast(_amp.autocast):  # noqa: N801 - PyTorch's name
        __doc__ = f'``tgrad.amp.autocast("{device_type}", ...)`` (deprecated, as PyTorch\'s)'

        def __init__(self, enabled: bool = True, dtype: Any = default_dtype,
                     cache_enabled: bool = True) -> None:
            _warn(device_type, "autocast", f"`torch.amp.autocast('{device_type}', args...)`")
            super().__init__(device_type, dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    class GradScaler(_amp.GradScaler):
        __doc__ = f'``tgrad.amp.GradScaler("{device_type}", ...)`` (deprecated, as PyTorch\'s)'

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            _warn(device_type, "GradScaler",
                  f"`torch.amp.GradScaler('{device_type}', args...)`")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    found = {"autocast": autocast, "GradScaler": GradScaler}
    if "custom_fwd" in module.__all__:
        def custom_fwd(fwd=None, *, cast_inputs=None):
            """``tgrad.amp.custom_fwd(..., device_type=<this device>)`` (deprecated)."""
            _warn(device_type, "custom_fwd",
                  f"`torch.amp.custom_fwd(args..., device_type='{device_type}')`")
            return _amp.custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)

        def custom_bwd(bwd=None):
            """``tgrad.amp.custom_bwd(..., device_type=<this device>)`` (deprecated)."""
            _warn(device_type, "custom_bwd",
                  f"`torch.amp.custom_bwd(args..., device_type='{device_type}')`")
            return _amp.custom_bwd(bwd, device_type=device_type)

        found.update(custom_fwd=custom_fwd, custom_bwd=custom_bwd)
    for obj in found.values():
        obj.__module__, obj.__qualname__ = module.__name__, obj.__name__
    return found


def _getattr(module: types.ModuleType, device_type: str, default_dtype_name: str,
             name: str) -> object:
    if name in module.__all__:
        vars(module).update(_contents(module, device_type, default_dtype_name))
        return vars(module)[name]
    raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")


def device_amp_module(parent: str, device_type: str, default_dtype_name: str,
                      names: list) -> types.ModuleType:
    """The module ``<parent>.amp`` (registered in sys.modules) offering ``names``."""
    module = types.ModuleType(parent + ".amp", __doc__)
    module.__all__ = list(names)
    module.__getattr__ = functools.partial(_getattr, module, device_type, default_dtype_name)
    sys.modules[module.__name__] = module
    return module
