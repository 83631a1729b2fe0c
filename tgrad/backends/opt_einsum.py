"""``tgrad.backends.opt_einsum``: PyTorch's flags for contracting ``einsum`` operands with
the ``opt_einsum`` package. ``is_available()`` says whether that package is installed (as in
PyTorch); ``enabled`` defaults to it and ``strategy`` to 'auto' (None when unavailable).
tgrad's ``einsum`` does not use opt_einsum, so the flags are recorded and checked as PyTorch
checks them but do not change how tgrad contracts."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from tgrad.backends import _flags

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]


def is_available() -> bool:
    """True when the ``opt_einsum`` package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum() -> Any:
    """The opt_einsum package, or None when it is not installed."""
    if not is_available():
        return None
    import opt_einsum
    return opt_einsum


enabled: bool = is_available()
strategy: str | None = "auto" if enabled else None


class _OptEinsumModule(_flags.FlagModule):
    _BOOL_FLAGS = ("enabled",)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "strategy":
            if not is_available():
                raise ValueError(
                    f"opt_einsum is not available, so setting `strategy` to {value} will not "
                    "be meaningful. Please install opt_einsum or unset `strategy`.")
            if not self.enabled:
                raise ValueError(
                    f"opt_einsum is not enabled, so setting a `strategy` to {value} will not "
                    "be meaningful. Please set `enabled` to `True` as well or unset "
                    "`strategy`.")
            if value not in ("auto", "greedy", "optimal"):
                raise ValueError("`strategy` must be one of the following: [auto, greedy, "
                                 f"optimal] but is {value}")
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _OptEinsumModule
