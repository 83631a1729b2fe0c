"""Triton's real launch machinery, without a GPU: tgrad's driver and fast launch path
against the C helpers and kernel launcher that Triton generates, built and run over a
stand-in libcuda.so.1 (tests/cuda_stub/libcuda_stub.c) that records each cuLaunchKernelEx.

Checked with the installed Triton and, where ``TGRAD_TRITON36`` names a folder holding the
GPU machine's Triton 3.6 (.ci/run makes one), with that: the binder's first launch and the
fast path's second reach the driver with the grid, block, tgrad's stream, the loaded
function and the arrays' addresses (tests/_stub_launch_runner.py)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

triton = pytest.importorskip("triton")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import kernel_specs  # noqa: E402

TRITON36 = kernel_specs.TRITON36
FUNCTION_HANDLE = 0xF00D   # what the stub's cuModuleGetFunction hands out
MARKER = "@@RESULT@@"


def _triton_package(triton_dir: str) -> str:
    return os.path.join(triton_dir, "triton") if triton_dir else os.path.dirname(
        triton.__file__)


def _build_stub(out_dir, triton_dir: str) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in libcuda")
    include = os.path.join(_triton_package(triton_dir), "backends", "nvidia", "include")
    lib = os.path.join(out_dir, "libcuda.so.1")
    p = subprocess.run([cc, "-O1", "-shared", "-fPIC", "-Wall", "-Werror",
                        "-Wl,-soname,libcuda.so.1", "-I", include, "-o", lib,
                        os.path.join(HERE, "cuda_stub", "libcuda_stub.c")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return str(out_dir)


@pytest.mark.parametrize("which", ["installed", "3.6"])
def test_launches_reach_the_driver_through_tritons_launcher(tmp_path, which):
    if which == "3.6" and not TRITON36:
        pytest.skip(kernel_specs.NO_TRITON36)
    triton_dir = TRITON36 if which == "3.6" else ""
    stub_dir = _build_stub(tmp_path, triton_dir)
    env = kernel_specs.subprocess_env(
        triton_dir, TRITON_LIBCUDA_PATH=stub_dir, TRITON_CACHE_DIR=str(tmp_path / "cache"),
        LD_LIBRARY_PATH=os.pathsep.join(
            p for p in (stub_dir, os.environ.get("LD_LIBRARY_PATH", "")) if p))
    p = subprocess.run([sys.executable, os.path.join(HERE, "_stub_launch_runner.py")],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 0 and MARKER in p.stdout, p.stderr[-3000:]
    r = json.loads(p.stdout.split(MARKER, 1)[1])
    if which == "3.6":
        assert r["triton"].startswith("3.6."), r["triton"]
    # three specializations, each launched once by the binder and once by the fast path
    assert r["stats"] == {"first": 3, "fast": 3, "fallback": 0}
    launches = r["launches"]
    assert len(launches) == 6
    for i, name in enumerate(("exp", "exp", "mul", "mul", "softplus", "softplus")):
        c = r["cases"][name]
        grid, block = launches[i][0:3], launches[i][3:6]
        stream, function, words = launches[i][7], launches[i][8], launches[i][9:]
        assert grid == [c["expected_grid"], 1, 1], (name, i)
        assert block == [c["expected_block"], 1, 1], (name, i)
        assert stream == r["stream"] and function == FUNCTION_HANDLE
        ptrs = c["pointers"][:2] if name != "softplus" else c["pointers"]
        assert words[:len(ptrs)] == ptrs, (name, i)
        if name == "softplus":
            # N as int32, then beta and threshold as float64 (their tl.float64 annotation)
            assert words[3] & 0xFFFFFFFF == c["n"]
            assert [struct.unpack("<d", struct.pack("<Q", w))[0] for w in words[4:6]] == \
                c["doubles"], (name, i)
