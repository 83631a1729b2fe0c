"""Devices: ``cpu`` (NumPy) and ``cuda[:N]`` (the GPU backend), and the default device."""

from __future__ import annotations

import threading


class Device:
    """A device as PyTorch names it: ``device(type='cuda', index=0)``.

    Devices are interned: ``Device("cuda", 0) is as_device("cuda:0")``, so the per-op
    device checks are identity tests."""

    __slots__ = ("type", "index", "_metas")
    _interned: dict = {}

    def __new__(cls, type: str, index: int | None = None) -> Device:  # noqa: A002
        kind = type
        if isinstance(kind, Device):
            return kind
        if not isinstance(kind, str):
            raise TypeError(f"device(): expected a string like 'cpu' or 'cuda:0', got "
                            f"{kind.__class__.__name__}")
        if ":" in kind:
            kind, _, idx = kind.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{kind}:{idx}'")
            index = int(idx)
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {kind}")
        if kind == "cuda" and index is None:
            index = 0
        if kind == "cpu":
            index = None
        key = (kind, index)
        dev = cls._interned.get(key)
        if dev is None:
            dev = object.__new__(cls)
            object.__setattr__(dev, "type", kind)
            object.__setattr__(dev, "index", index)
            # (shape, dtype) -> the graph's shared (shape, dtype, device) metadata
            # (tgrad.autograd.function._meta_entry)
            object.__setattr__(dev, "_metas", {})
            cls._interned[key] = dev
        return dev

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"device objects are read-only (interned: one per device); "
                             f"make a new one with tgrad.device(...) instead of setting "
                             f"{name!r}")

    def __reduce__(self):
        return (Device, (self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = as_device(other)
            except RuntimeError:
                return False
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __enter__(self) -> Device:
        """``with tgrad.device(...)``: this device is the default device inside the block,
        the previous default after it (PyTorch's; blocks nest)."""
        _DEFAULTS.entered.append(_DEFAULTS.device)
        set_default_device(self)
        return self

    def __exit__(self, *exc) -> bool:
        set_default_device(_DEFAULTS.entered.pop())
        return False


CPU = Device("cpu")
_cache: dict = {"cpu": CPU, None: None}


class _ThreadDefaults(threading.local):
    """This thread's default device (PyTorch's is thread-local: a new thread starts on the
    CPU whatever another thread set) and the defaults that its enclosing ``with
    device(...)`` blocks replaced."""

    def __init__(self) -> None:
        self.device = CPU
        self.entered: list = []


_DEFAULTS = _ThreadDefaults()


def as_device(dev, check_ordinal: bool = True) -> Device:
    """Parse a device given as Device, string or int (an int means that CUDA device); a
    cuda index past the machine's devices raises PyTorch's "invalid device ordinal" (a
    tensor made there would be put on another device)."""
    if dev is None:
        dev = _DEFAULTS.device
    if type(dev) is Device:
        if dev.index and check_ordinal:  # (None for cpu; cuda:0 exists with cuda)
            _check_ordinal(dev)
        return dev
    d = _cache.get(dev) if isinstance(dev, str) else None
    if d is not None:
        return d
    if isinstance(dev, int):
        if dev < 0:  # (PyTorch's check; only the int form reaches here)
            raise RuntimeError("Device index must not be negative")
        d = Device("cuda", dev)
    else:
        d = Device(dev)
    if d.index and check_ordinal:
        _check_ordinal(d)
    if isinstance(dev, str):
        _cache[dev] = d
    return d


def _check_ordinal(d: Device) -> None:
    from tgrad import cuda
    if cuda.is_available() and d.index >= cuda.device_count():
        raise RuntimeError(f"CUDA error: invalid device ordinal ({d}: this machine has "
                           f"{cuda.device_count()} cuda device(s), cuda:0 to "
                           f"cuda:{cuda.device_count() - 1})")


def set_default_device(device) -> None:
    """Device used by creation functions when none is given (``tgrad.set_default_device``),
    in this thread (others keep theirs; a new thread starts on the CPU, as PyTorch's).
    As PyTorch, an int (the accelerator's index) or ``"cuda"`` with no index (the current
    device) needs CUDA at once and raises without it; a cuda device with an index is only
    checked by the first tensor made on it."""
    if device is None:
        _DEFAULTS.device = CPU
        return
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        raise RuntimeError("Device index must not be negative")
    if (device == "cuda" or isinstance(device, int)) and type(device) is not Device:
        from tgrad import cuda
        if not cuda.is_available():
            if isinstance(device, int):  # PyTorch's text for an int without an accelerator
                raise RuntimeError("Cannot access accelerator device when none is available.")
            raise RuntimeError(f"set_default_device('cuda'): device 'cuda' is not available: "
                               f"{cuda.why_unavailable()}; use 'cpu'")
    _DEFAULTS.device = as_device(device, check_ordinal=False)  # (the first tensor checks it)


def get_default_device() -> Device:
    return _DEFAULTS.device
