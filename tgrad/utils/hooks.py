"""``tgrad.utils.hooks`` (PyTorch's torch.utils.hooks): ``RemovableHandle``, the handle
that ``register_hook`` methods return; ``RemovableHandle(hooks_dict, extra_dict=None)``
takes a fresh ``id`` and ``remove()`` deletes that key from ``hooks_dict`` and the extra
dict(s)."""

from tgrad.autograd.node import RemovableHandle

__all__ = ["RemovableHandle"]
