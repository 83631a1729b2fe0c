"""``tgrad.jit``: the parts of PyTorch's ``torch.jit`` that model code calls at import or
run time, so such code runs unchanged. tgrad has no TorchScript compiler: ``script`` and
``trace`` return what they are given (the same object), which then runs eagerly, with the
same results and no speed-up; ``is_scripting()`` / ``is_tracing()`` are always False, and
the decorators (``ignore``, ``unused``, ``export``, ``script_method``, ``script_if_tracing``,
``interface``) leave the function as it is. ``save`` / ``load`` of TorchScript archives
raise NotImplementedError: save a state_dict with ``tgrad.save`` instead."""

from __future__ import annotations

from typing import Any, Callable, Final, TypeVar

__all__ = ["is_scripting", "is_tracing", "script", "trace", "ignore", "unused", "export",
           "script_method", "script_if_tracing", "interface", "annotate", "Final", "save",
           "load", "fork", "wait"]

_F = TypeVar("_F", bound=Callable)


def is_scripting() -> bool:
    """False: tgrad never runs code as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: tgrad never traces."""
    return False


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``obj`` itself (a function, Module or class), run eagerly (no TorchScript)."""
    return obj


def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
          example_kwarg_inputs: Any = None, **kwargs: Any) -> Any:
    """``func`` itself (a function or Module), run eagerly. Unlike a TorchScript trace it
    keeps its data-dependent control flow, so it gives the eager results for every input."""
    if not callable(func):
        raise TypeError(f"trace(): expected a function or a Module, got {type(func).__name__}")
    return func


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Decorator (``@ignore`` or ``@ignore(drop=...)``): the function unchanged."""
    if callable(drop):
        return drop
    return unchanged


def unchanged(fn: _F) -> _F:
    """Decorator: the function, method or class unchanged (what ``unused``, ``export``,
    ``script_method``, ``script_if_tracing`` and ``interface`` are here, and
    tgrad.compiler's ``allow_in_graph`` / ``assume_constant_result``)."""
    return fn


unused = export = script_method = script_if_tracing = interface = unchanged


def annotate(the_type: Any, the_value: Any) -> Any:
    """``the_value`` (a type hint for the TorchScript compiler, which tgrad does not have)."""
    return the_value


class _Future:
    """What ``fork`` returns: the call's result, already computed."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value


def fork(func: Callable, *args: Any, **kwargs: Any) -> _Future:
    """Runs ``func(*args, **kwargs)`` at once (eagerly, not in parallel); ``wait`` on the
    result gives its value."""
    return _Future(func(*args, **kwargs))


def wait(future: _Future) -> Any:
    """The value of a ``fork``."""
    return future.wait()


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    raise NotImplementedError("tgrad.jit.save: tgrad has no TorchScript; save the module's "
                              "state_dict() with tgrad.save instead")


def load(f: Any, map_location: Any = None, _extra_files: Any = None) -> Any:
    raise NotImplementedError("tgrad.jit.load: tgrad cannot read TorchScript archives; load a "
                              "saved state_dict with tgrad.load instead")
