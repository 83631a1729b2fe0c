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


def test_subpackages_are_reachable_as_attributes_after_import_tgrad():
    # as torch.utils.checkpoint / torch.linalg are, without importing them explicitly
    code = ("import tgrad; "
            "print(all(callable(f) for f in (tgrad.utils.checkpoint.checkpoint, "
            "tgrad.utils.data.DataLoader, tgrad.linalg.det, tgrad.special.i0e, "
            "tgrad.distributions.Normal, tgrad.func.grad, tgrad.amp.autocast)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "True"
