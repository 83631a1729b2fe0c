"""`import tgrad` must never import torch (checked in a fresh interpreter)."""

import subprocess
import sys


def test_import_does_not_load_torch():
    code = ("import sys, tgrad, tgrad.autograd, tgrad.ops; "
            "bad = [m for m in ('torch', 'cupy', 'jax') if m in sys.modules]; "
            "print(','.join(bad) or 'clean')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "clean"
