"""``python -m tgrad info``: versions, devices and backend status."""

from __future__ import annotations

import platform

import numpy as np


def print_info() -> None:
    import tgrad
    from tgrad.ops import OPS
    print(f"tgrad {tgrad.__version__}  python {platform.python_version()}  numpy {np.__version__}")
    print("devices: cpu (NumPy backend)")
    print("cuda: not available (the GPU backend is not part of this build yet)")
    print(f"ops: {len(OPS)} registered")
