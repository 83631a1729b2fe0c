"""Backends implement the same primitives with the same names: numpy (cpu), triton (cuda).

``get_backend(device)`` returns the module for a device; ops never contain derivative maths
in backends, and backends never contain autograd logic.
"""

from __future__ import annotations

from tgrad.backends import numpy as numpy_backend
from tgrad.device import Device

_BACKENDS = {"cpu": numpy_backend}


def register_backend(device_type: str, module) -> None:
    _BACKENDS[device_type] = module


def get_backend(device: Device):
    try:
        return _BACKENDS[device.type]
    except KeyError:
        raise RuntimeError(
            f"tgrad: no backend for device type '{device.type}'; use 'cpu' or 'cuda'") from None
import tgrad.cuda.lazy_backend  # noqa: E402,F401  registers the "cuda" backend (lazily)
from tgrad.backends import cpu, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: E402,F401
from tgrad.backends import cuda as cuda  # noqa: E402,F401  (flags; imports no Triton)
