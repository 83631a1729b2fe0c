"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled
(thread-local).

Each works as a context manager and as a decorator (with or without parentheses for the
first two), as in PyTorch. ``set_grad_enabled(mode)`` takes effect when called, so it also
works as a plain function call.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
import warnings
from typing import Any, Callable


class _GradState(threading.local):
    # True while ops record the graph. Inside inference_mode() it stays False whatever the
    # grad mode (PyTorch's inference mode records nothing even under enable_grad): there
    # the grad mode that is_grad_enabled() reports, and that no_grad / enable_grad /
    # set_grad_enabled set, is inference_grad
    enabled = True
    inference = False
    inference_grad = False
    accumulating = True  # False while autograd.grad runs (it writes no .grad)
    saved_tensors_hooks = None  # innermost (pack_hook, unpack_hook) pair (autograd.graph)
    saved_tensors_hooks_disabled = None  # error message while hooks are disabled
    graph_task = None  # (id, deps, execute, capture) of the running backward (engine.py)
    autocast = None  # {device type: lower-precision dtype} inside tgrad.autocast (amp)
    func_depth = 0  # tgrad.func transforms running (user Functions are checked)
    vmap_depth = 0  # of which vmapping the function (vmap, jacfwd, hessian)
    multithreading = True  # set_multithreading_enabled's flag (recorded; see its docstring)
    mutation_ctx = None  # the active allow_mutation_on_saved_tensors context (graph.py)
    fw_current = None  # the forward-AD level entered in this thread (forward_ad._Level)
    # the level this thread's ops route to (Function.apply): fw_current, or None while
    # forward_ad runs an op's plain forward or a tangent rule (read only when
    # function._FW_ACTIVE is non-zero)
    fw_level = None
    # the selective-checkpoint mode ops route to (tgrad.utils.checkpoint's _SACMode, read
    # only when function._SAC_ACTIVE is non-zero)
    sac = None


STATE = _GradState()


class _SharedState:
    """Autograd switches shared by every thread, as PyTorch's: anomaly detection (set in
    one thread, a backward in another checks for NaN and names the forward too)."""
    anomaly = False
    anomaly_check_nan = True


SHARED = _SharedState()


def is_grad_enabled() -> bool:
    """True when grad mode is on in this thread: operations record the autograd graph,
    except inside ``inference_mode()``, which records nothing whatever the grad mode."""
    return STATE.inference_grad if STATE.inference else STATE.enabled


def _set_grad_mode(mode: bool) -> None:
    """Set this thread's grad mode (inside inference_mode, the one is_grad_enabled reports;
    nothing records there)."""
    if STATE.inference:
        STATE.inference_grad = mode
    else:
        STATE.enabled = mode


class _DecoratorContextManager:
    """Base for grad-mode objects usable as ``with obj:`` and ``@obj`` / ``@obj()``."""

    def __new__(cls, func: Callable | None = None, *args: Any, **kwargs: Any):
        self = super().__new__(cls)
        if callable(func) and not args and not kwargs and cls._bare_decorator:
            self.__init__()
            return self(func)
        return self

    _bare_decorator = True

    def __call__(self, func: Callable) -> Callable:
        if inspect.isclass(func):  # as PyTorch: a function that makes instances in the mode
            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods.",
                          FutureWarning, stacklevel=2)
            cls = func
            func = lambda *args, **kwargs: cls(*args, **kwargs)  # noqa: E731
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func: Callable) -> Callable:
        """The mode holds while the generator body runs (also its ``finally`` blocks when it
        is closed), not while the caller runs; the generator's return value is kept (as
        PyTorch's torch.utils._contextlib)."""

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    value = gen.send(None)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:  # noqa: BLE001 - forwarded into the generator
                        with self.clone():
                            value = gen.throw(e)
                    else:
                        with self.clone():
                            value = gen.send(sent)
            except StopIteration as stop:
                return stop.value

        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_DecoratorContextManager):
    """Disable graph recording in this thread: results have ``requires_grad=False``."""

    def __enter__(self) -> None:
        # A stack, so that one instance may be entered again while active.
        # is_grad_enabled / _set_grad_mode, inlined (optimizers enter it every step)
        if STATE.inference:
            self.__dict__.setdefault("_prev", []).append(STATE.inference_grad)
            STATE.inference_grad = False
        else:
            self.__dict__.setdefault("_prev", []).append(STATE.enabled)
            STATE.enabled = False

    def __exit__(self, *exc: Any) -> None:
        if STATE.inference:
            STATE.inference_grad = self._prev.pop()
        else:
            STATE.enabled = self._prev.pop()


class enable_grad(_DecoratorContextManager):
    """Enable graph recording in this thread (e.g. inside a ``no_grad`` block)."""

    def __enter__(self) -> None:
        # A stack, so that one instance may be entered again while active.
        # is_grad_enabled / _set_grad_mode, inlined (optimizers enter it every step)
        if STATE.inference:
            self.__dict__.setdefault("_prev", []).append(STATE.inference_grad)
            STATE.inference_grad = True
        else:
            self.__dict__.setdefault("_prev", []).append(STATE.enabled)
            STATE.enabled = True

    def __exit__(self, *exc: Any) -> None:
        if STATE.inference:
            STATE.inference_grad = self._prev.pop()
        else:
            STATE.enabled = self._prev.pop()


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode`` now; as a context manager, restore the previous mode on exit."""

    _bare_decorator = False

    def __init__(self, mode: bool) -> None:  # (no default: PyTorch's TypeError without it)
        if type(mode) is not bool:  # as PyTorch (0, 1, a tensor, np.bool_ are refused)
            cls = type(mode)
            name = cls.__name__ if cls.__module__ == "builtins" else \
                f"{cls.__module__.split('.')[0]}.{cls.__name__}"
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be "
                            f"bool, not {name}")
        self.prev = is_grad_enabled()
        self.mode = mode
        _set_grad_mode(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _set_grad_mode(self.prev)

    def __call__(self, func: Callable) -> Callable:
        _set_grad_mode(self.prev)  # decorating must not change the mode now
        return super().__call__(func)

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """PyTorch's ``inference_mode(mode=True)``. With ``mode`` True: no graph is recorded
    (not even under ``enable_grad``), ``is_grad_enabled()`` is False and
    ``is_inference_mode_enabled()`` True, and the tensors made inside (ops' results,
    creation functions; not views of normal tensors) are inference tensors
    (``is_inference()``). Outside inference mode an inference tensor cannot be saved for
    backward, updated in place or made to require grad (PyTorch's errors); its views are
    inference tensors and ``clone()`` gives a normal tensor. With ``mode`` False (e.g.
    nested inside): normal behaviour with grad mode on, like ``enable_grad``."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        self.__dict__.setdefault("_prev", []).append(
            (STATE.enabled, STATE.inference, STATE.inference_grad, STATE.fw_level))
        if self.mode:  # no forward-mode AD inside either (PyTorch's AutoFwGradMode(false))
            _count_inference_block(1)
            STATE.enabled = STATE.inference_grad = False
            STATE.inference = True
            STATE.fw_level = None
        else:  # inference_mode(False) records again, as PyTorch's
            if STATE.inference:
                STATE.fw_level = STATE.fw_current
            STATE.enabled = True
            STATE.inference = False

    def __exit__(self, *exc: Any) -> None:
        STATE.enabled, STATE.inference, STATE.inference_grad, STATE.fw_level = self._prev.pop()
        if self.mode:
            _count_inference_block(-1)

    def clone(self):
        return type(self)(self.mode)


_INFERENCE_LOCK = threading.Lock()


def _count_inference_block(step: int) -> None:
    """Count the entered inference_mode(True) blocks over all threads (tensor.py's
    _INFERENCE_BLOCKS). While there is one, new tensors' storages are made by
    _inference_aware_storage, which reads this thread's STATE.inference; otherwise by
    Storage itself, so creating a tensor pays nothing for inference mode."""
    tensor = importlib.import_module("tgrad.tensor")  # (tgrad.tensor is also a function)
    with _INFERENCE_LOCK:
        tensor._INFERENCE_BLOCKS += step
        tensor._new_storage = (tensor._inference_aware_storage if tensor._INFERENCE_BLOCKS
                               else tensor.Storage)


class set_multithreading_enabled(_DecoratorContextManager):
    """PyTorch's ``set_multithreading_enabled(mode)``: set this thread's multithreaded-backward
    flag to ``mode`` now; as a context manager (or decorator), restore the previous value on
    exit. ``is_multithreading_enabled()`` reads it.

    In PyTorch the flag decides whether backward runs on per-device worker threads or on the
    calling thread. tgrad's engine always runs a backward on the calling thread, one node at
    a time (whatever the device), so the flag is only recorded: setting it changes nothing
    about how or where backward runs, or its results."""

    _bare_decorator = False

    def __init__(self, mode: bool) -> None:
        if type(mode) is not bool:  # as PyTorch (0, 1, np.bool_ are refused)
            raise TypeError("set_multithreading_enabled(): argument 'enabled' (position 1) "
                            f"must be bool, not {type(mode).__name__}")
        self.prev = STATE.multithreading
        self.mode = mode
        STATE.multithreading = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        STATE.multithreading = self.prev

    def __call__(self, func: Callable) -> Callable:
        STATE.multithreading = self.prev  # decorating must not change the flag now
        return super().__call__(func)

    def clone(self):
        return type(self)(self.mode)


def is_multithreading_enabled() -> bool:
    """This thread's ``set_multithreading_enabled`` flag (True by default). tgrad's backward
    runs on the calling thread whatever its value."""
    return STATE.multithreading


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` in this thread."""
    return STATE.inference
