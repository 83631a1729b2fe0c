"""``tgrad.nn.utils.stateless.functional_call``: tgrad.func.functional_call (PyTorch keeps
this older name)."""

from tgrad.func import functional_call

__all__ = ["functional_call"]
