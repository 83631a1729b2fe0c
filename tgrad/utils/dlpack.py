"""``tgrad.utils.dlpack``: PyTorch's ``torch.utils.dlpack`` names. ``to_dlpack(t)`` is
``t.__dlpack__()`` (a DLPack capsule sharing t's memory, consumed once), ``from_dlpack`` is
``tgrad.from_dlpack`` (an object with ``__dlpack__`` or a capsule; CPU and CUDA data). A
CPU tensor made from a bare capsule is read-only (NumPy's rule for unversioned capsules;
writing raises); one made from an object with ``__dlpack__`` (a tensor, an array) shares
writable memory."""

from __future__ import annotations

from tgrad.cuda.interop import from_dlpack, to_dlpack

__all__ = ["to_dlpack", "from_dlpack"]
