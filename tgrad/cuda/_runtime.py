"""Which runtime backs ``tgrad.cuda``: the driver (a real GPU), the host emulation
(``TRITON_INTERPRET=1``) or none, chosen once, lazily, never raising at import."""

from __future__ import annotations

import os

from tgrad.cuda.runtime_api import DeviceRuntime

_state: dict = {"rt": None, "why": None, "done": False}


def interpret_requested() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _select() -> tuple[DeviceRuntime | None, str | None]:
    if interpret_requested():
        from tgrad.cuda.host_runtime import HostRuntime
        return HostRuntime(), None
    try:
        from tgrad.cuda import driver_runtime
    except Exception as e:  # noqa: BLE001 - any import problem means "no GPU runtime"
        return None, f"the CUDA driver runtime could not be imported ({type(e).__name__}: {e})"
    try:
        rt = driver_runtime.DriverRuntime()
        if rt.device_count() < 1:
            return None, "the CUDA driver reports no devices"
        return rt, None
    except Exception as e:  # noqa: BLE001
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return None, f"no usable CUDA driver ({msg}); set TRITON_INTERPRET=1 to emulate cuda"


def get_runtime_or_none() -> DeviceRuntime | None:
    if not _state["done"]:
        _state["rt"], _state["why"] = _select()
        _state["done"] = True
    return _state["rt"]


def why_unavailable() -> str | None:
    get_runtime_or_none()
    return _state["why"]


def runtime() -> DeviceRuntime:
    """The active runtime; raises a one-line RuntimeError when CUDA is unavailable."""
    rt = get_runtime_or_none()
    if rt is None:
        raise RuntimeError(f"tgrad.cuda is not available: {_state['why']}")
    return rt


BAD_FORK_MSG = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                "multiprocessing, you must use the 'spawn' start method")


def forbid_in_forked_child() -> None:
    """Call in a process forked from one whose GPU driver runtime had started (a
    DataLoader worker): the parent's GPU context is unusable here, so from now on cuda
    reports itself unavailable with PyTorch's "Cannot re-initialize CUDA in forked
    subprocess" reason. Nothing changes when the parent never started the driver (the
    child may start its own) or runs the host emulation (TRITON_INTERPRET=1, fork-safe)."""
    rt = _state["rt"]
    if rt is None or getattr(rt, "interpreted", False):
        return
    _state.update(rt=None, why=BAD_FORK_MSG, done=True)
    from tgrad.backends import register_backend
    from tgrad.cuda.lazy_backend import _LazyTritonBackend
    register_backend("cuda", _LazyTritonBackend())
