"""Ahead-of-time compilation for the H200 (sm_90) of every kernel specialization the
interpreter tests launch, and the GPU machine's Triton version.

The GPU machine runs Triton 3.6 (CI and development use 3.9 for its interpreter). Where
``TGRAD_TRITON36`` names a folder holding Triton 3.6 (``pip install --no-deps --target DIR
triton==3.6.0``; .ci/run makes one), the compiles below run in a subprocess with that Triton
first on the path, and so do the register-spill checks of tests/test_triton_aot.py and
tests/test_triton_nn_aot.py. Without it they use the installed Triton, and the 3.6 spill
run is skipped with that reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

pytest.importorskip("triton")
if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    pytest.skip("AOT compilation needs the compiler, not the interpreter",
                allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import background  # noqa: E402
import kernel_specs  # noqa: E402
import test_triton_nn_ops  # noqa: E402
import test_triton_ops  # noqa: E402

TRITON36 = kernel_specs.TRITON36
MARKER = "@@RESULT@@"
_env = kernel_specs.subprocess_env


SPILL_FILES = ["tests/test_triton_aot.py", "tests/test_triton_nn_aot.py"]
RUNNER_JOBS = ["op_table_" + dt for dt in test_triton_ops.DTYPES] + ["nn_kernels"]


def _compile_job() -> tuple[list[str], dict]:
    """Compile what the runners recorded (kernel_specs.py's main, on every core)."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="tgrad-specs-")
    with os.fdopen(fd, "w") as f:
        json.dump(kernel_specs.recorded(), f)
    return ([sys.executable, os.path.join(HERE, "kernel_specs.py"), path],
            dict(env=_env(TRITON36), cwd=ROOT))


def start_background() -> None:
    """The interpreter runners, the compile of the launches they record (once they exit),
    and the Triton 3.6 rerun of the spill checks (tests/background.py)."""
    test_triton_ops.start_background()
    test_triton_nn_ops.start_background()
    background.start_after("compile_sm90", RUNNER_JOBS, _compile_job)
    if TRITON36:
        background.start("spills_triton36", [sys.executable, "-m", "pytest", "-q", "-p",
                                             "no:cacheprovider", *SPILL_FILES],
                         env=_env(TRITON36), cwd=ROOT)


def _triton_version(triton_dir: str) -> str:
    p = subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__)"],
                       capture_output=True, text=True, env=_env(triton_dir))
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.strip()


def test_triton36_folder_holds_triton_36():
    if not TRITON36:
        pytest.skip(kernel_specs.NO_TRITON36)
    assert _triton_version(TRITON36).startswith("3.6."), TRITON36


_INTERPRETED_REDUCTIONS = """
import json, numpy as np, tgrad, triton
x = tgrad.arange(10., device="cuda", requires_grad=True)
(x * x).sum().backward()
print(json.dumps(dict(triton=triton.__version__, sum=(x * 2).sum().item(),
                      softmax=x.softmax(0).tolist(), cumsum=x.cumsum(0).tolist(),
                      sort=x.sort(descending=True)[0].tolist(), grad=x.grad.tolist())))
"""


def test_interpreter_runs_loops_of_runtime_bounds_with_triton36():
    # Triton 3.6's interpreter read a runtime loop bound by int() of a one-element array,
    # a TypeError since NumPy 2.4: every reduction failed (interpreter_speedups's
    # _index_of_one_element installs 3.9's definition). Values against NumPy float64.
    if not TRITON36:
        pytest.skip(kernel_specs.NO_TRITON36)
    p = subprocess.run([sys.executable, "-c", _INTERPRETED_REDUCTIONS], capture_output=True,
                       text=True, env=_env(TRITON36, TRITON_INTERPRET="1"), cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    a = np.arange(10.0)
    assert r["triton"].startswith("3.6.")
    assert r["sum"] == 90.0
    np.testing.assert_allclose(r["softmax"], np.exp(a - 9) / np.exp(a - 9).sum(), rtol=1e-6)
    assert r["cumsum"] == np.cumsum(a).tolist()
    assert r["sort"] == a[::-1].tolist()
    assert r["grad"] == (2 * a).tolist()


def test_every_recorded_specialization_compiles_for_sm90():
    start_background()
    test_triton_ops._results()       # the interpreter runs that record (cached per session)
    test_triton_nn_ops._results()
    specs = kernel_specs.recorded()
    kernels = {s["kernel"].split(":")[1] for s in specs}
    # every family the runners exercise was seen (the recorder works)
    for k in ("ew_kernel", "red_kernel", "gather_nd_kernel", "index_targets_kernel",
              "scatter_parts_kernel", "scatter_sorted_kernel", "put_sorted_kernel",
              "softmax_fwd_kernel",
              "softmax_bwd_kernel", "ce_fwd_kernel", "ce_bwd_kernel", "ln_fwd_kernel",
              "ln_bwd_kernel", "matmul_kernel", "dropout_kernel", "sgd_kernel", "adam_kernel",
              "cumsum_kernel", "sort_tile_kernel", "merge_kernel"):
        assert k in kernels, f"{k} was never launched by the interpreter runners"
    p = background.result("compile_sm90")  # the same recorded specs, compiled meanwhile
    assert p.returncode == 0 and MARKER in p.stdout, p.stderr[-3000:]
    r = json.loads(p.stdout.split(MARKER, 1)[1])
    if TRITON36:
        assert r["triton"].startswith("3.6."), r["triton"]
    assert r["compiled"] == len(specs)
    assert not r["errors"], f"{len(r['errors'])} of {len(specs)} specializations failed " \
        f"with Triton {r['triton']}:\n" + "\n".join(r["errors"][:5])


def test_spill_checks_pass_with_triton36():
    if not TRITON36:
        pytest.skip(kernel_specs.NO_TRITON36)
    start_background()
    p = background.result("spills_triton36")
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]


def test_ew_cover_keeps_every_formula_and_every_indexing_group():
    """kernel_specs.recorded() compiles each ew_kernel formula group and each indexing group
    at least once (not every pair); other kernels' variants are all kept."""
    def spec(kernel, fn, ndim, ptr):
        declared = {"FN": fn, "ARITY": 1, "UPCAST": False, "NDIM": ndim, "IDX64": False,
                    "INNER": False, "BLOCK": 16}
        return {"kernel": kernel, "variant": json.dumps([kernel, declared, {"A": ptr}, 4])}
    ew = kernel_specs._EW_KERNEL
    specs = [spec(ew, fn, ndim, ptr) for fn in ("f_exp", "f_tanh", "f_relu")
             for ndim in (1, 2, 3, 4) for ptr in ("*fp32", "*fp64")]
    others = [spec("tgrad.kernels.reduction:red_kernel", "x", ndim, "*fp32")
              for ndim in (1, 2)]
    kept = kernel_specs.cover_ew_groups(specs + others)
    kept_ew = [s for s in kept if s["kernel"] == ew]
    groups = [kernel_specs._ew_groups(s) for s in specs]
    assert {g[0] for g in groups} == {kernel_specs._ew_groups(s)[0] for s in kept_ew}  # 6 formulas
    assert {g[1] for g in groups} == {kernel_specs._ew_groups(s)[1] for s in kept_ew}  # 4 ndims
    assert len(kept_ew) <= 6 + 4 and kept[-2:] == others  # of 24
