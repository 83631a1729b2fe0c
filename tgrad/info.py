"""``python -m tgrad info``: versions, devices, whether the GPU backend works (and why not),
and which ops have no native Triton kernel."""

from __future__ import annotations

import os
import platform
from importlib import metadata

import numpy as np


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def gpu_status() -> tuple[bool, str]:
    """(works, one line why / what). The GPU backend works when tgrad.cuda has a runtime
    (a GPU, or TRITON_INTERPRET=1) and a backend for the 'cuda' device is registered."""
    from tgrad import backends
    try:
        from tgrad import cuda
    except Exception as e:  # noqa: BLE001 - info must report, not crash
        return False, f"tgrad.cuda failed to import ({type(e).__name__}: {e})"
    if not cuda.is_available():
        return False, f"no CUDA runtime: {cuda.why_unavailable()}"
    if "cuda" not in backends._BACKENDS:
        return False, ("a CUDA runtime is present but this build has no Triton backend for "
                       "the 'cuda' device yet (ops run on the CPU only)")
    mode = "Triton interpreter (TRITON_INTERPRET=1)" if cuda.is_interpreted() else \
        f"{cuda.device_count()} device(s): {cuda.get_device_name()}"
    return True, f"works: {mode}"


def ops_without_native_kernel() -> list[str]:
    """What the GPU backend still runs without its own Triton kernel: the list kept by
    ``tgrad.backends.triton.ops_without_native_kernel()`` when that backend can be imported
    (it describes the kernels that exist, GPU or not), else every registered op."""
    from tgrad.ops import OPS
    try:
        from tgrad.backends import triton as triton_backend
        return list(triton_backend.ops_without_native_kernel())
    except Exception:  # noqa: BLE001 - no Triton backend in this build / environment
        return sorted(OPS)


def info_lines() -> list[str]:
    import tgrad
    from tgrad.ops import OPS
    lines = [
        f"tgrad {tgrad.__version__} (distribution tgrad-autograd {_version('tgrad-autograd')})",
        f"python {platform.python_version()} ({platform.system()} {platform.machine()}), "
        f"numpy {np.__version__}, ml_dtypes {_version('ml_dtypes')}, "
        f"tabulate {_version('tabulate')}",
        f"triton {_version('triton')}, cuda-bindings {_version('cuda-bindings')}",
        f"devices: cpu (NumPy backend, {os.cpu_count()} cores)",
    ]
    works, why = gpu_status()
    lines.append(f"cuda: {'available' if works else 'not available'} -- {why}")
    lines.append(f"GPU backend: {'works' if works else 'does not work'}")
    lines.append(f"ops registered: {len(OPS)}")
    lines.append("ops without a native Triton kernel: "
                 + (", ".join(ops_without_native_kernel()) or "none"))
    return lines


def print_info() -> None:
    for line in info_lines():
        print(line)
