"""tgrad/backends/_heap.py: importing tgrad lets glibc keep freed heap memory, so a step
that frees several MiB at once does not fault its pages in again next time (counted with
getrusage's minor faults, in a fresh interpreter each; TGRAD_HEAP_PRIME=0 opts out)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

# one "step": eight 1 MiB arrays written then freed together (a heap top of 8 MiB)
PROBE = """
import resource
import numpy as np
import tgrad
def step():
    arrays = [np.empty(1 << 20, np.uint8) for _ in range(8)]
    for a in arrays:
        a.fill(1)
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                           reason="glibc's malloc thresholds (Linux)")


def _faults_per_step(**env) -> float:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, env={**os.environ, **env})
    return float(run.stdout.split()[-1])


@glibc
def test_import_keeps_the_freed_heap_for_the_next_step():
    # 8 MiB freed: over glibc's trim threshold unless tgrad raised it (2048 pages faulted
    # per step otherwise, the opt-out case below)
    assert _faults_per_step() < 16
    assert _faults_per_step(TGRAD_HEAP_PRIME="0") > 1000


def test_prime_heap_respects_the_opt_out(monkeypatch):
    from tgrad.backends import _heap
    monkeypatch.setenv("TGRAD_HEAP_PRIME", "0")
    assert _heap.prime_heap() is False
    monkeypatch.setenv("TGRAD_HEAP_PRIME", "1")
    assert _heap.prime_heap() is True
