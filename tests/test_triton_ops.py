"""The op table on device "cuda" in Triton's interpreter (TRITON_INTERPRET=1, host memory)
against the NumPy backend, forward and backward, float32, float64, float16 and bfloat16
(whose conversions and arithmetic tgrad/kernels/interpreter_bf16.py makes the interpreter do
as the GPU does). Runs tests/_triton_interp_runner.py once per dtype in subprocesses (the kernel
checks of tests/device_checks.py in the float32 and float64 ones), started when pytest has
collected this file so that they run beside the rest of the suite (tests/background.py); this
process never sees TRITON_INTERPRET."""

from __future__ import annotations

import json
import os
import sys

import pytest

triton = pytest.importorskip("triton")

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import background  # noqa: E402
import device_checks  # noqa: E402
import kernel_specs  # noqa: E402
import op_db  # noqa: E402
from interpreted import interpreter_env  # noqa: E402

try:
    import op_db_nn
    NAMES = [s.name for s in op_db.OP_DB] + [s.name for s in op_db_nn.OP_DB]
except ImportError:
    NAMES = [s.name for s in op_db.OP_DB]

_cache: dict = {}
DTYPES = ("float32", "float64", "float16", "bfloat16")
FULL_CHECKS = ("float32", "float64")


def start_background() -> None:
    """One runner per dtype (tests/background.py; the interpreter is slow); the kernel checks
    (device_checks) are shared out between the FULL_CHECKS ones."""
    for dt in DTYPES:
        background.start(
            "op_table_" + dt, [sys.executable, os.path.join(HERE, "_triton_interp_runner.py")],
            cwd=ROOT, env=kernel_specs.recording_env(interpreter_env(
                TGRAD_DTYPES=dt, TGRAD_EXTRA_CHECKS=str(int(dt in FULL_CHECKS)),
                TGRAD_CHECK_SHARE=f"{FULL_CHECKS.index(dt) if dt in FULL_CHECKS else 0}"
                                  f"/{len(FULL_CHECKS)}"), "op_table_" + dt))


def _results() -> dict:
    if not _cache:
        start_background()
        procs = [background.result("op_table_" + dt) for dt in DTYPES]
        marker = "@@RESULT@@"
        merged: dict = {"ops": {}, "extra": {}, "host_path_used": []}
        for p in procs:
            assert p.returncode == 0 and marker in p.stdout, \
                f"interpreter runner failed (rc={p.returncode}):\n{p.stderr[-3000:]}"
            r = json.loads(p.stdout.split(marker, 1)[1])
            for name, fails in r["ops"].items():
                merged["ops"].setdefault(name, []).extend(fails)
            for name, fails in r["extra"].items():
                merged["extra"].setdefault(name, []).extend(fails)
            merged["host_path_used"] += r["host_path_used"]
        _cache.update(merged)
    return _cache


@pytest.mark.parametrize("name", NAMES)
def test_op_on_interpreted_cuda_matches_numpy(name):
    fails = _results()["ops"].get(name)
    assert fails is not None, f"{name} was not run"
    assert not fails, "\n".join(fails[:10])


@pytest.mark.parametrize("check", ["runtime", "memory", "tensors", "interop",
                                   *device_checks.CHECKS])
def test_interpreted_runtime(check):
    fails = _results()["extra"][check]
    assert not fails, "\n".join(fails)


def test_elementwise_and_reductions_use_kernels():
    """Float elementwise ops, paired backward ops, fused gradient formulas and reductions
    (empty, integer and bool ones too) never take the temporary host path."""
    used = set(_results()["host_path_used"])
    for prim in ("tanh_backward", "sigmoid_backward", "relu_backward", "grad_formula", "where",
                 "copy_", "cast", "cat", "sum_", "prod", "mean", "amax", "all_", "any_"):
        assert prim not in used
    assert not [u for u in used if u.startswith(("unary:", "binary:"))
                and u.split(":")[1] in ("tanh", "exp", "add", "mul", "maximum")]
