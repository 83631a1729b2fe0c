"""Run by tests/test_launch_stub_driver.py in a subprocess whose libcuda.so.1 is
tests/cuda_stub/libcuda_stub.c: tgrad's Triton driver over a stand-in runtime (device 0 with
an H200's capability, tgrad's stream STREAM), then elementwise launches through
``launch_ew`` and a softplus launch through the generic ``launch``: the first of each
specialization goes through Triton's binder (compile for sm_90, load the cubin, build
Triton's C launcher against the stub), the second through tgrad's fast path straight into
that launcher. Prints what the stub's cuLaunchKernelEx saw
as JSON after a marker."""

from __future__ import annotations

import ctypes
import json
from types import SimpleNamespace

import numpy as np
import triton

from tgrad.cuda import triton_driver
from tgrad.cuda.array import DeviceArray
from tgrad.kernels import configs
from tgrad.kernels import launch as L
from tgrad.kernels.activations import softplus_kernel
from tgrad.kernels.elementwise import f_exp, f_mul

STREAM = 0x5000


class StandInRuntime:
    """What the driver and the fast path ask of tgrad.cuda's runtime."""
    interpreted = False

    def current_device(self) -> int:
        return 0

    def set_device(self, device: int) -> None:
        assert device == 0

    def tgrad_stream(self, device: int) -> int:
        return STREAM

    def get_device_properties(self, device: int):
        return SimpleNamespace(major=9, minor=0, warp_size=32)


def array(ptr: int, shape: tuple, estrides: tuple) -> DeviceArray:
    return DeviceArray(SimpleNamespace(ptr=ptr), shape, estrides, 0, np.dtype(np.float32))


def main() -> None:
    rt = StandInRuntime()
    triton_driver.install(rt)
    L._driver_ready.append(True)
    L._hot.update(rt=rt, stream=lambda d: STREAM, knobs=triton.knobs.runtime)
    cases = {}
    # contiguous unary (1-d plan) and a strided binary with broadcasting (3-d plan)
    n = 5000
    out, a = array(0x7F0000000000, (n,), (1,)), array(0x7F0000100000, (n,), (1,))
    o3 = array(0x7F0000200000, (4, 6, 50), (300, 50, 1))
    x3 = array(0x7F0000300000, (4, 6, 50), (1, 4, 24))     # transposed
    y3 = array(0x7F0000400000, (4, 6, 50), (0, 50, 1))     # broadcast over dim 0
    for name, fn, o, ins in (("exp", f_exp, out, [a]), ("mul", f_mul, o3, [x3, y3])):
        for _ in range(2):
            L.launch_ew(fn, o, ins, False)
        contiguous = len(ins) == 1
        cfg = configs.ew_config(contiguous, False, o.size, 4)
        cases[name] = {"expected_grid": -(-o.size // cfg.block),
                       "expected_block": 32 * cfg.num_warps,
                       "pointers": [o.buffer.ptr] + [i.buffer.ptr for i in ins]}
    # a kernel through the generic ``launch`` (softplus: float64-annotated float arguments)
    lib = ctypes.CDLL("libcuda.so.1")
    lib.stub_record_words(6)   # O, G, X, N, beta, threshold (unit strides are constants)
    x, o = array(0x7F0000500000, (n,), (1,)), array(0x7F0000600000, (n,), (1,))
    blk = configs.flat_block(False)
    for _ in range(2):
        L.launch(softplus_kernel, (-(-n // blk),), o, o, x, n, 1, 1, 1, 1.5, 20.0,
                 BWD=False, UPCAST=False, BLOCK=blk, num_warps=configs.FLAT_WARPS)
    cases["softplus"] = {"expected_grid": -(-n // blk), "expected_block": 32 * configs.FLAT_WARPS,
                         "pointers": [o.buffer.ptr, o.buffer.ptr, x.buffer.ptr], "n": n,
                         "doubles": [1.5, 20.0]}
    launches = []
    buf = (ctypes.c_uint64 * 15)()
    for i in range(lib.stub_launches()):
        assert lib.stub_launch(i, buf, 6) == 0
        launches.append(list(buf))
    print("@@RESULT@@" + json.dumps({"triton": triton.__version__, "stats": L.stats,
                                     "stream": STREAM, "cases": cases,
                                     "launches": launches}))


if __name__ == "__main__":
    main()
