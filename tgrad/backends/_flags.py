"""Module-level flags with PyTorch's type checks (``tgrad.backends.cudnn.benchmark = 1``
raises, as PyTorch's "expects a bool"), and the ``flags(...)`` context manager that sets some
and restores them on exit."""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Iterator


class FlagModule(types.ModuleType):
    """A module whose names in ``_BOOL_FLAGS`` only take bools."""

    _BOOL_FLAGS: tuple = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._BOOL_FLAGS and not isinstance(value, bool):
            raise RuntimeError(f"{self.__name__}.{name} expects a bool, but got "
                               f"{type(value).__name__}")
        super().__setattr__(name, value)


def install(module_name: str, bool_flags: tuple) -> None:
    """Give module ``module_name`` bool-checked flags ``bool_flags``."""
    cls = type("FlagModule", (FlagModule,), {"_BOOL_FLAGS": tuple(bool_flags)})
    sys.modules[module_name].__class__ = cls


@contextlib.contextmanager
def set_flags(module: types.ModuleType, **values: Any) -> Iterator[None]:
    """Set ``module``'s flags (those not None) inside the block; restore them after."""
    saved = {k: getattr(module, k) for k, v in values.items() if v is not None}
    try:
        for k, v in values.items():
            if v is not None:
                setattr(module, k, v)
        yield
    finally:
        for k, v in saved.items():
            setattr(module, k, v)
