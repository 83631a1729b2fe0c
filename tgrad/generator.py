"""``tgrad.Generator``: an independent random number generator, PyTorch's ``torch.Generator``.

A CPU generator is a NumPy PCG64 generator (the one ``tgrad.manual_seed`` reseeds for the
global stream, so ``Generator().manual_seed(s)`` draws what ``tgrad.manual_seed(s)`` would);
a cuda generator is a Philox (seed, offset) pair like the device's global one. Sampling
functions take ``generator=``: for the duration of the draw the backend's global state is
swapped for the generator's (``drawing_from``), so every sampler honours it without a
generator argument on each primitive, and the global stream is left untouched. (Like the
global generator, a Generator is not meant to be drawn from by two threads at once.)

States (``get_state`` / ``tgrad.get_rng_state``) are 1-D uint8 CPU tensors, as PyTorch's
ByteTensors, in tgrad's own little-endian layout: a CPU state is PCG64's 128-bit ``state``
and ``inc``, then ``has_uint32`` and ``uinteger`` as 32-bit words, then the generator's
initial seed as a 64-bit word, which ``set_state`` restores as PyTorch's does (48 bytes;
PyTorch's mt19937 state is 5056; a 40-byte state of earlier tgrad versions, without the
seed, is still taken); a cuda state is the Philox ``seed`` (the full seed, which set_state
makes initial_seed(), as PyTorch's) and ``offset`` as 64-bit words (16 bytes).
``set_state`` also takes the NumPy / (seed, offset) dict tgrad used to return.

``tgrad.default_generator`` is the global CPU generator; ``tgrad.seed()`` reseeds every
device nondeterministically, ``tgrad.initial_seed()`` is the CPU generator's seed.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

import numpy as np

from tgrad.device import as_device

__all__ = ["Generator", "default_generator", "seed", "initial_seed"]

DEFAULT_SEED = 67280421310721  # PyTorch's default seed of a new Generator
_SEED_MIN, _SEED_MAX = -0x8000_0000_0000_0000, 0xFFFF_FFFF_FFFF_FFFF


def normalize_seed(seed: Any) -> int:
    """``seed`` as PyTorch's Generator.manual_seed reads it: an int in [-2^63, 2^64),
    negatives taken modulo 2^64 (PyTorch's RuntimeError for a non-int, ValueError past the
    range). ``tgrad.manual_seed`` converts with int() first, as torch.manual_seed does."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not _SEED_MIN <= seed <= _SEED_MAX:
        raise ValueError(f"Overflow when unpacking long long (seed {seed} is outside "
                         f"[{_SEED_MIN}, {_SEED_MAX}])")
    return seed % 2 ** 64


CPU_STATE_SIZE = 48   # PCG64 state (16) | inc (16) | has_uint32 (4) | uinteger (4) | seed (8)
_CPU_STATE_SIZE_WITHOUT_SEED = 40  # the layout before the seed was kept (still accepted)
CUDA_STATE_SIZE = 16  # Philox seed (8) | offset (8)


def state_tensor(state: dict, device_type: str, initial_seed: int = 0):
    """A backend's state dict as the uint8 CPU tensor ``get_state`` returns (module doc);
    a CPU state carries ``initial_seed``."""
    from tgrad.ops.creation import from_numpy
    if device_type == "cpu":
        raw = (state["state"]["state"].to_bytes(16, "little")
               + state["state"]["inc"].to_bytes(16, "little")
               + int(state["has_uint32"]).to_bytes(4, "little")
               + int(state["uinteger"]).to_bytes(4, "little")
               + int(initial_seed).to_bytes(8, "little"))
    else:
        raw = int(state["seed"]).to_bytes(8, "little") + int(state["offset"]).to_bytes(8, "little")
    return from_numpy(np.frombuffer(raw, dtype=np.uint8).copy())


def state_dict(new_state: Any, device_type: str) -> dict:
    """The backend's state dict of a ``get_state`` tensor (or of a legacy dict; a CPU state's
    initial seed, where it has one, under the extra key ``"initial_seed"``), with PyTorch's
    errors: TypeError for a non-tensor or a tensor that is not a uint8 CPU one,
    RuntimeError for a wrong size."""
    from tgrad import dtypes
    from tgrad.tensor import Tensor
    if isinstance(new_state, dict):  # the dict tgrad's get_state used to return
        keys = {"seed", "offset"} if device_type == "cuda" else {"state", "has_uint32"}
        if not keys <= set(new_state):
            raise TypeError(f"expected a torch.ByteTensor, but got dict (a dict state needs "
                            f"the keys {sorted(keys)}; pass "
                            "the uint8 tensor get_state() returns)")
        return dict(new_state)
    if not isinstance(new_state, Tensor):
        kind = type(new_state)
        name = kind.__name__ if kind.__module__ == "builtins" else \
            f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
        raise TypeError(f"expected a torch.ByteTensor, but got {name}")
    if new_state.dtype is not dtypes.uint8 or new_state.device.type != "cpu":
        raise TypeError("RNG state must be a torch.ByteTensor")
    size = CPU_STATE_SIZE if device_type == "cpu" else CUDA_STATE_SIZE
    legacy = device_type == "cpu" and new_state.numel() == _CPU_STATE_SIZE_WITHOUT_SEED
    if new_state.numel() != size and not legacy:
        what = "CPUGeneratorImplState" if device_type == "cpu" else "PhiloxCudaState"
        raise RuntimeError(f"Expected a {what} of size {size} but found the input RNG state "
                           f"size to be {new_state.numel()} (tgrad's {device_type} generator "
                           f"state is {size} bytes)")
    raw = np.ascontiguousarray(new_state.detach().numpy()).reshape(-1).tobytes()
    if device_type == "cpu":
        state = {"bit_generator": "PCG64",
                 "state": {"state": int.from_bytes(raw[:16], "little"),
                           "inc": int.from_bytes(raw[16:32], "little")},
                 "has_uint32": int.from_bytes(raw[32:36], "little"),
                 "uinteger": int.from_bytes(raw[36:40], "little")}
        if not legacy:
            state["initial_seed"] = int.from_bytes(raw[40:48], "little")
        return state
    return {"seed": int.from_bytes(raw[:8], "little"),
            "offset": int.from_bytes(raw[8:], "little")}


def _random_seed() -> int:
    return int.from_bytes(os.urandom(8), "little") >> 1


class Generator:
    """An independent random stream for ``device`` ('cpu' or 'cuda'), seeded with PyTorch's
    default seed until ``manual_seed`` or ``seed`` is called."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = as_device(device)
        if self.device.type not in ("cpu", "cuda"):
            raise RuntimeError(f"Generator: unsupported device {self.device}")
        self._reset(DEFAULT_SEED)

    def _reset(self, seed: int) -> None:
        self._initial = seed
        if self.device.type == "cpu":
            self._np = np.random.default_rng(seed)
        else:
            self._philox = {"seed": seed, "offset": 0}  # (the kernels mask it)

    def manual_seed(self, seed: int) -> Generator:
        """Reseed (PyTorch's seed range and wrap-around of negatives); returns self."""
        self._reset(normalize_seed(seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        s = _random_seed()
        self._reset(s)
        return s

    def initial_seed(self) -> int:
        """The seed of the last ``manual_seed`` / ``seed`` / ``set_state`` (PyTorch's default
        seed before)."""
        return self._initial

    def _set_initial_seed(self, seed: int) -> None:
        self._initial = seed

    def get_state(self):
        """The generator's state for ``set_state``: a 1-D uint8 CPU tensor (module doc)."""
        if self.device.type == "cpu":
            return state_tensor(self._np.bit_generator.state, "cpu", self.initial_seed())
        return state_tensor(self._philox, "cuda")

    def set_state(self, new_state) -> Generator:
        """Restore a state from ``get_state`` of a generator of the same device type; it
        restores ``initial_seed()`` too, as PyTorch's (a cuda state's seed is it)."""
        state = state_dict(new_state, self.device.type)
        if self.device.type == "cpu":
            if "initial_seed" in state:
                self._set_initial_seed(state.pop("initial_seed"))
            self._np.bit_generator.state = state
        else:
            self._philox = state
            self._set_initial_seed(state["seed"])
        return self

    def __repr__(self) -> str:
        return f"<tgrad.Generator object at {id(self):#x} (device={self.device})>"


class _DefaultGenerator(Generator):
    """The global CPU generator (its state is the NumPy backend's, which manual_seed
    reseeds)."""

    def __init__(self) -> None:
        self.device = as_device("cpu")

    @property
    def _np(self) -> np.random.Generator:
        from tgrad.backends import numpy as numpy_backend
        return numpy_backend._rng

    def _reset(self, seed: int) -> None:
        from tgrad.backends import numpy as numpy_backend
        numpy_backend.manual_seed(seed)

    def initial_seed(self) -> int:
        from tgrad.backends import numpy as numpy_backend
        return numpy_backend._initial_seed

    def _set_initial_seed(self, seed: int) -> None:
        from tgrad.backends import numpy as numpy_backend
        numpy_backend._initial_seed = seed


default_generator = _DefaultGenerator()


class _DefaultCudaGenerator(Generator):
    """``tgrad.cuda.default_generators[i]``: the cuda backend's global Philox generator.
    tgrad keeps one Philox state for all cuda devices, so every entry views the same state
    (seeding one seeds them all)."""

    def __init__(self, index: int) -> None:
        from tgrad.device import Device
        self.device = Device("cuda", index)

    @staticmethod
    def _triton_nn():
        from tgrad.backends import get_backend
        get_backend(as_device("cuda")).get_rng_state()  # loads the backend (or raises)
        from tgrad.backends import _triton_nn
        return _triton_nn

    def _reset(self, seed: int) -> None:
        self._triton_nn().manual_seed(seed)

    def initial_seed(self) -> int:
        nn = self._triton_nn()
        nn.ensure_seeded()
        return nn._INITIAL_SEED[0]

    def get_state(self):
        nn = self._triton_nn()
        nn.ensure_seeded()
        return state_tensor(nn.get_rng_state(), "cuda")

    def set_state(self, new_state) -> Generator:
        self._triton_nn().set_rng_state(state_dict(new_state, "cuda"))
        return self


def seed() -> int:
    """Seed every device's global generator from the operating system's entropy (as
    ``tgrad.manual_seed`` would); returns the seed."""
    from tgrad.ops.creation import manual_seed
    s = _random_seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the global CPU generator."""
    return default_generator.initial_seed()


@contextlib.contextmanager
def drawing_from(generator: Generator | None, device: Any, op: str) -> Iterator[None]:
    """Within the block, draws on ``device`` come from ``generator`` (None: the global
    stream). The generator's device type must match, as in PyTorch."""
    if generator is None:
        yield
        return
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be tgrad.Generator, not "
                        f"{type(generator).__name__}")
    dev = as_device(device)
    if generator.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    if isinstance(generator, (_DefaultGenerator, _DefaultCudaGenerator)):
        yield
        return
    from tgrad.backends import get_backend
    from tgrad.backends import numpy as numpy_backend
    if dev.type == "cpu":
        previous = numpy_backend._swap_generator(generator._np)
        try:
            yield
        finally:
            numpy_backend._swap_generator(previous)
        return
    backend = get_backend(dev)
    saved = backend.get_rng_state()
    backend.set_rng_state(generator._philox)
    try:
        yield
    finally:
        generator._philox = backend.get_rng_state()
        backend.set_rng_state(saved)
