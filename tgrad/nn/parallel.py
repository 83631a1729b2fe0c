"""``tgrad.nn.parallel`` / ``tgrad.nn.DataParallel``: PyTorch's single-process data
parallelism, for a framework that runs on one device. Without cuda, ``DataParallel(module)``
calls ``module`` as it is (``device_ids == []``), as PyTorch's does without a GPU; with cuda
and one device it moves the module to ``device_ids[0]`` and each call's tensors there. More
than one device is not supported (tgrad does not replicate modules across GPUs).
``DistributedDataParallel`` needs a process group, which tgrad.distributed cannot make.
Either way the wrapped module is ``self.module``, so state_dict keys carry PyTorch's
``module.`` prefix and checkpoints of DataParallel models load into it."""

from __future__ import annotations

from typing import Any

from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor

__all__ = ["DataParallel", "DistributedDataParallel"]


def _cuda_index(device: Any) -> int:
    from tgrad.device import as_device
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    dev = as_device(device)
    if dev.type != "cuda":
        raise ValueError(f"DataParallel: expected a cuda device or index, got {dev}")
    return 0 if dev.index is None else dev.index


def _to_device(value: Any, device) -> Any:
    """The tensors in ``value`` (a pytree: tuples, lists, dicts...) moved to ``device``
    (PyTorch's scatter to one device); anything else as it is."""
    from tgrad.utils._pytree import tree_map_only
    return tree_map_only(Tensor, lambda t: t.to(device), value)


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)`` (module doc)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        from tgrad import cuda
        self.module = module
        if not cuda.is_available():
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        self.device_ids = [_cuda_index(d) for d in device_ids]
        if not self.device_ids:
            raise RuntimeError("DataParallel: device_ids is empty")
        if len(self.device_ids) > 1:
            raise NotImplementedError(f"DataParallel over {len(self.device_ids)} devices "
                                      f"{self.device_ids}: tgrad runs a model on one device; "
                                      f"pass device_ids=[{self.device_ids[0]}]")
        self.dim = dim
        self.output_device = _cuda_index(self.device_ids[0] if output_device is None
                                         else output_device)
        from tgrad.device import Device
        self.src_device_obj = Device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        out = self.module(*_to_device(inputs, self.src_device_obj),
                          **_to_device(kwargs, self.src_device_obj))
        if self.output_device != self.device_ids[0]:
            from tgrad.device import Device
            out = _to_device(out, Device("cuda", self.output_device))
        return out


class DistributedDataParallel(Module):
    """PyTorch's DistributedDataParallel: needs a process group (tgrad has none)."""

    def __init__(self, module: Module, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("DistributedDataParallel needs an initialized process group, and "
                           "tgrad has no distributed support (tgrad.distributed."
                           "is_available() is False); use the module itself, or "
                           "DataParallel")
