"""``tgrad.random``: torch.random's names for the global CPU generator (``manual_seed``,
``seed``, ``initial_seed``, ``get_rng_state``, ``set_rng_state``, ``default_generator``: the
same object as ``tgrad.default_generator``) and ``fork_rng``."""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

from tgrad.generator import default_generator, initial_seed, seed
from tgrad.ops.creation import get_rng_state as _get_state
from tgrad.ops.creation import manual_seed
from tgrad.ops.creation import set_rng_state as _set_state

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "fork_rng", "default_generator"]


def get_rng_state():
    """The global CPU generator's state: a uint8 CPU tensor (tgrad's 48-byte layout, PCG64's
    state and the initial seed, tgrad.generator's doc; PyTorch's mt19937 state is 5056
    bytes)."""
    return _get_state()


def set_rng_state(new_state) -> None:
    """Restore the global CPU generator's state from ``get_rng_state``."""
    _set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Iterable[int] | None = None, enabled: bool = True,
             _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str | None = None) -> Iterator[None]:
    """Within the block the generators may be drawn from freely; on exit the CPU generator
    and the ``device_type`` ('cuda' by default) generators of ``devices`` (default: every
    device; none without cuda) are restored to their states on entry. ``enabled=False``:
    no fork. tgrad keeps one generator for all cuda devices, so forking any cuda device
    forks it. ``device_type='cpu'`` with ``devices=[]`` forks the CPU generator only (as
    PyTorch; other devices of 'cpu' raise PyTorch's AttributeError)."""
    if device_type == "meta" or not enabled:
        yield
        return
    device_type = device_type or "cuda"
    if device_type not in ("cuda", "cpu"):
        raise RuntimeError(f"tgrad has no module of `{device_type}`: fork_rng forks the cpu "
                           "generator and the 'cuda' ones")
    from tgrad import cuda
    if device_type == "cpu":
        if devices is None or list(devices):  # torch.cpu has 1 device and no get_rng_state
            raise AttributeError("module 'tgrad.cpu' has no attribute 'get_rng_state' "
                                 "(fork_rng(device_type='cpu') forks the CPU generator with "
                                 "devices=[])")
        devices = []
    devices = list(range(cuda.device_count())) if devices is None else list(devices)
    cpu_state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            cuda.set_rng_state(state, d)
