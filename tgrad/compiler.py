"""``tgrad.compiler``: PyTorch's ``torch.compiler`` names that model code calls, for a
framework without a compiler (``tgrad.compile`` returns its argument unchanged): nothing is
ever being compiled or exported, and the decorators leave functions as they are."""

from __future__ import annotations

from typing import Any

from tgrad.jit import unchanged

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable",
           "allow_in_graph", "assume_constant_result", "reset", "list_backends"]


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001
    """``tgrad.compile``."""
    from tgrad.ops.torch_utils import compile as _compile
    return _compile(*args, **kwargs)


def is_compiling() -> bool:
    """False: tgrad never compiles."""
    return False


def is_dynamo_compiling() -> bool:
    """False: tgrad never compiles."""
    return False


def is_exporting() -> bool:
    """False: tgrad never exports."""
    return False


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Decorator (``@disable`` or ``@disable(recursive=...)``): the function unchanged."""
    return unchanged if fn is None else fn


allow_in_graph = assume_constant_result = unchanged


def reset() -> None:
    """Nothing to reset (no compiled code is cached)."""


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list:
    """[]: tgrad has no compiler backends."""
    return []
