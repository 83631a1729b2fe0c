"""``skip_init``: build a module whose parameters and buffers are left uninitialised."""

from __future__ import annotations

import inspect
from typing import Any


def skip_init(module_cls: type, *args: Any, **kwargs: Any):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters / buffers (as
    ``tgrad.empty``) on ``device`` (default 'cpu'). The class must take a ``device``
    argument. tgrad has no 'meta' device, so the constructor's initialisation does run
    (then its values are replaced by empty tensors) inside ``tgrad.random.fork_rng``: the
    random streams are left as they were, as in PyTorch."""
    from tgrad.nn.modules.module import Module
    from tgrad.random import fork_rng
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    with fork_rng():
        module = module_cls(*args, device=final_device, **kwargs)
    return module.to_empty(device=final_device)
