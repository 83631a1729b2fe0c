"""Thin launch wrappers: check, allocate, compute grid, launch. Strides, broadcasting and
dtype promotion are decided above (tgrad/backends/triton.py); these only collapse dims and
pick a configuration from tgrad/kernels/configs.py."""

from __future__ import annotations

import math

import numpy as np

from tgrad.cuda import is_interpreted
from tgrad.cuda.array import DeviceArray, KernelArg
from tgrad.kernels import configs
from tgrad.kernels.elementwise import ew_kernel

MAX_DIMS = 8
_I32 = 2**31 - 1
_HALF = (np.dtype(np.float16), np.dtype("bfloat16"))
_driver_ready: list = []


def ensure_driver() -> None:
    """Install tgrad's Triton driver (kernels launch on tgrad's stream) before the first
    compiled launch; interpreter mode needs none."""
    if _driver_ready or is_interpreted():
        return
    from tgrad.cuda import triton_driver
    triton_driver.activate()
    _driver_ready.append(True)


def karg(a: DeviceArray):
    """A kernel argument: the array itself on a GPU, a torch-like adapter in the interpreter."""
    return KernelArg.of(a) if is_interpreted() else a


def collapse(shape: tuple, strides: list[tuple]) -> tuple[tuple, list[tuple]]:
    """Drop size-1 dims and merge adjacent dims that are contiguous in every operand.
    Returns the shape and per-operand strides, outermost first."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    out_shape: list[int] = []
    out_st: list[list[int]] = [[] for _ in strides]
    for i in dims:
        if out_shape and all(st[-1] == s[i] * shape[i] for st, s in zip(out_st, strides)):
            out_shape[-1] *= shape[i]
            for st, s in zip(out_st, strides):
                st[-1] = s[i]
            continue
        out_shape.append(shape[i])
        for st, s in zip(out_st, strides):
            st.append(s[i])
    if not out_shape:
        out_shape = [1]
        out_st = [[1] for _ in strides]
    return tuple(out_shape), [tuple(st) for st in out_st]


def needs_int64(shape: tuple, strides: list[tuple]) -> bool:
    if math.prod(shape) > _I32:
        return True
    return any(sum((n - 1) * abs(s) for n, s in zip(shape, st)) > _I32 for st in strides)


def launch_ew(fn, out: DeviceArray, inputs: list[DeviceArray], upcast: bool) -> DeviceArray:
    """out[...] = fn(*inputs) elementwise; every input already has out's shape (broadcast
    dims carry stride 0)."""
    n = out.size
    if n == 0:
        return out
    arity = len(inputs)
    shape, sts = collapse(out.shape, [out.estrides] + [a.estrides for a in inputs])
    if len(shape) > MAX_DIMS:
        raise RuntimeError(f"elementwise kernel: {len(shape)} non-mergeable dims after "
                           f"collapsing (at most {MAX_DIMS} are supported); shape {out.shape}")
    ndim = len(shape)
    pad = MAX_DIMS - ndim
    sizes = list(reversed(shape)) + [1] * pad
    st = [list(reversed(s)) + [0] * pad for s in sts]
    while len(st) < 4:
        st.append([0] * MAX_DIMS)
    ptrs = [karg(out)] + [karg(a) for a in inputs]
    while len(ptrs) < 4:
        ptrs.append(ptrs[1])
    contiguous = ndim == 1 and all(s[0] in (0, 1) for s in sts)
    cfg = configs.ew_config(contiguous, is_interpreted())
    ensure_driver()
    grid = (triton_cdiv(n, cfg.block),)
    with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
        ew_kernel[grid](*ptrs, n, *sizes, *st[0], *st[1], *st[2], *st[3],
                        FN=fn, ARITY=arity, NDIM=ndim, UPCAST=upcast,
                        IDX64=needs_int64(shape, sts), BLOCK=cfg.block,
                        num_warps=cfg.num_warps)
    return out


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def is_half(dt: np.dtype) -> bool:
    return dt in _HALF
