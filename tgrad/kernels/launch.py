"""Thin launch wrappers: check, allocate, compute grid, launch. Strides, broadcasting and
dtype promotion are decided above (tgrad/backends/triton.py); these only collapse dims and
pick a configuration from tgrad/kernels/configs.py.

Fast launch path (``launch(kernel, grid, *args, **kwargs)``)
------------------------------------------------------------
``kernel[grid](...)`` runs Triton's binder on every call (argument binding, specialization,
cache-key hashing, option parsing). ``launch`` does that work once per *specialization*:
the first call goes through ``kernel[grid]`` (which compiles or loads the kernel and returns
its ``CompiledKernel``); the ``CompiledKernel`` is cached under a key computed here, and
later calls with the same key call Triton's compiled launcher directly::

    compiled.run(grid_x, grid_y, grid_z, stream, compiled.function, compiled.packed_metadata,
                 launch_metadata, launch_enter_hook, launch_exit_hook, *all_args)

which is the exact call ``JITFunction.run`` makes in Triton 3.6 and 3.9 (``all_args`` are
the bound arguments in parameter order, constexprs included; the launcher skips them),
except that hook chains with no hooks in them (Triton's default: ``knobs.runtime``'s
``HookChain``s are never None) are passed as None, so no launch metadata is built and the
launcher calls no Python hooks (about 3 us a launch on the H200 machine's host).
Pointer arguments are passed as ints (their ``data_ptr()``): both versions' C launchers take
an int as the address as is, skipping the ``data_ptr()`` call and the
``cuPointerGetAttribute`` check they make for objects.

The key is at least as fine as Triton's own specialization, so a cached kernel is only
reused where Triton would pick the same one:

* constexpr parameters: the value itself;
* pointer arguments (anything with ``data_ptr()``): (dtype, 16-byte aligned?);
* ints: (== 1?, divisible by 16?, i32/i64/u64 range) - only the range for parameters in
  ``do_not_specialize``; bools and floats: their type;
* launch options (``num_warps``, ``num_stages``, ...): their values; plus the device.

Interpreter mode (``TRITON_INTERPRET=1``), kernels that are not plain ``JITFunction``s
(autotuners, heuristics), kernels with pre-run hooks, Triton debug mode and
``TGRAD_FAST_LAUNCH=0`` take the normal ``kernel[grid](...)`` path.
"""

from __future__ import annotations

import inspect
import math
import os
from itertools import repeat
from operator import attrgetter, eq, itemgetter, methodcaller, mod
from typing import Any

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


class _EwPlan:
    """What ``launch_ew`` works out once per (formula, dtypes, shape, strides): the grid,
    the kernel's non-pointer arguments (collapsed sizes and strides, constexprs) and, once
    launched, the ``CompiledKernel`` per (device, pointer alignments). A plan fixes every
    int argument, so it is never coarser than Triton's own specialization."""

    __slots__ = ("grid", "ints", "constexprs", "num_warps", "compiled", "tail")

    def __init__(self, fn, out: DeviceArray, inputs: list, upcast: bool) -> None:
        n = out.size
        shape, sts = collapse(out.shape, [out.estrides] + [a.estrides for a in inputs])
        if len(shape) > MAX_DIMS:
            raise RuntimeError(f"elementwise kernel: {len(shape)} non-mergeable dims after "
                               f"collapsing (at most {MAX_DIMS} are supported); shape "
                               f"{out.shape}")
        ndim = len(shape)
        pad = MAX_DIMS - ndim
        sizes = list(reversed(shape)) + [1] * pad
        st = [list(reversed(s)) + [0] * pad for s in sts]
        while len(st) < 4:
            st.append([0] * MAX_DIMS)
        contiguous = ndim == 1 and all(s[0] in (0, 1) for s in sts)
        interp = is_interpreted()
        cfg = configs.ew_config(contiguous, interp, n, out.dtype.itemsize)
        block, inner = cfg.block, False
        if ndim > 1:  # a block inside one run of the innermost dim: no per-element div/mod
            block = configs.ew_inner_block(shape[-1], cfg.block, interp)
            inner = block > 0
            block = block or cfg.block
        self.grid = (triton_cdiv(n, block),)
        self.ints = (n, *sizes, *st[0], *st[1], *st[2], *st[3])
        self.constexprs = {"FN": fn, "ARITY": len(inputs), "NDIM": ndim, "UPCAST": upcast,
                           "IDX64": needs_int64(shape, sts), "BLOCK": block, "INNER": inner}
        self.num_warps = cfg.num_warps
        self.compiled: dict = {}
        # every argument after the 4 pointers, in parameter order (JITFunction.run's)
        c = self.constexprs
        self.tail = (*self.ints, fn, c["ARITY"], c["NDIM"], upcast, c["IDX64"], c["BLOCK"],
                     c["INNER"])


_ew_plans: dict = {}
_MAX_EW_PLANS = 4096  # distinct (formula, dtypes, shape, strides) kept; then start afresh
_EW_META = attrgetter("estrides", "dtype")


def launch_ew(fn, out: DeviceArray, inputs: list[DeviceArray], upcast: bool) -> DeviceArray:
    """out[...] = fn(*inputs) elementwise; every input already has out's shape (broadcast
    dims carry stride 0). Repeated shapes skip all shape work (``_EwPlan``); a launch whose
    plan and pointer alignments were seen before goes straight to the compiled launcher."""
    if out.size == 0:
        return out
    # id(fn), not fn: hashing a JITFunction computes its cache key (about 1 us a launch);
    # the plan's own FN must be fn (a formula freed and another made at its address)
    key = (id(fn), upcast, out.shape, out.estrides, out.dtype, *map(_EW_META, inputs))
    plan = _ew_plans.get(key)
    if plan is None or plan.constexprs["FN"] is not fn:
        if len(_ew_plans) >= _MAX_EW_PLANS:
            _ew_plans.clear()
        plan = _ew_plans[key] = _EwPlan(fn, out, inputs, upcast)
    if plan.compiled and _hot:
        addrs = [out.data_ptr(), *map(_DATA_PTR, inputs)]
        while len(addrs) < 4:
            addrs.append(addrs[1])
        hot = _hot
        knobs = hot["knobs"]
        device = hot["rt"].current_device()
        compiled = plan.compiled.get((device, addrs[0] % 16, addrs[1] % 16, addrs[2] % 16,
                                      addrs[3] % 16))
        if compiled is not None and not getattr(knobs, "debug", False):
            stream = hot["stream"](device)
            enter, leave = launch_hooks(knobs)
            args = (*addrs, *plan.tail)  # every argument, as JITFunction.run passes them
            meta = compiled.launch_metadata(plan.grid, stream, *args) if enter else None
            compiled.run(plan.grid[0], 1, 1, stream, compiled.function,
                         compiled.packed_metadata, meta, enter, leave, *args)
            stats["fast"] += 1
            return out
    # First launch of this specialization (or the interpreter / fast path off).
    ptrs = [out, *inputs]
    while len(ptrs) < 4:
        ptrs.append(ptrs[1])
    args = [KernelArg.of(p) for p in ptrs] if is_interpreted() else ptrs
    with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
        compiled = launch(ew_kernel, plan.grid, *args, *plan.ints, **plan.constexprs,
                          num_warps=plan.num_warps)
    if compiled is not None and hasattr(compiled, "packed_metadata") and fast_path_enabled():
        addrs = [p.data_ptr() for p in ptrs]
        device = (_hot or _bind_hot())["rt"].current_device()
        plan.compiled[(device, *[a % 16 for a in addrs])] = compiled
    return out


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def is_half(dt: np.dtype) -> bool:
    return dt in _HALF


# ------------------------------------------------------------------------ fast launch path
_I32_LO, _I32_HI, _I64_HI = -(2**31), 2**31, 2**63
CONSTEXPR, NO_SPEC, SPEC = 0, 1, 2  # how a parameter enters the key

#: counters for tests and benchmarks: compiled-kernel cache hits/misses, fallbacks
stats = {"fast": 0, "first": 0, "fallback": 0}


def int_key(v: int, specialize: bool = True) -> int:
    """The part of Triton's specialization an int argument decides: its type (i32, i64,
    u64) and, when specialized, ``v == 1`` (becomes a constant) and ``v % 16 == 0``."""
    rng = 0 if _I32_LO <= v < _I32_HI else (1 if v < _I64_HI else 2)
    if not specialize:
        return rng
    return rng * 4 + (3 if v == 1 else (1 if v % 16 == 0 else 0))


def arg_key(a: Any, kind: int = SPEC) -> Any:
    """Key of one argument (see the module docstring)."""
    if kind == CONSTEXPR:
        return a
    t = type(a)
    if t is int:
        return int_key(a, kind == SPEC)
    if t is bool or t is float or a is None:
        return t
    ptr = getattr(a, "data_ptr", None)
    if ptr is not None:
        return (a.dtype, ptr() % 16 == 0 if kind == SPEC else None)
    if isinstance(a, (int, np.integer)):
        return int_key(int(a), kind == SPEC)
    if isinstance(a, (float, np.floating)):
        return float
    return (t, a)  # tuples, strings, ...: by value (conservative)


def _getter(idx: list):
    """itemgetter that always returns a tuple."""
    if not idx:
        return lambda full: ()
    if len(idx) == 1:
        i = idx[0]
        return lambda full: (full[i],)
    return itemgetter(*idx)


class KernelInfo:
    """What ``launch`` precomputes per ``JITFunction``: parameter names, kinds and defaults,
    binding plans, and the cache of ``CompiledKernel``s by key.

    Hot-path costs are kept at C speed where possible: binding uses a plan per (number of
    positional args, keyword names); the key uses a plan per tuple of argument types, then
    ``map`` over ints (``v % 16``, ``v == 1``, min/max for the i32 range) and over pointers
    (``dtype``, ``data_ptr() % 16``)."""

    __slots__ = ("kernel", "names", "kinds", "defaults", "index", "cache", "_const",
                 "_bind_plans", "_type_plans", "_ptr_plans")

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        params = list(kernel.params)
        sig = inspect.signature(kernel.fn).parameters
        self.names = [p.name for p in params]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.kinds = [CONSTEXPR if p.is_constexpr else (NO_SPEC if p.do_not_specialize
                                                        else SPEC) for p in params]
        self.defaults = [sig[n].default for n in self.names]
        self.cache: dict = {}
        self._const = _getter([i for i, k in enumerate(self.kinds) if k == CONSTEXPR])
        self._bind_plans: dict = {}
        self._type_plans: dict = {}
        self._ptr_plans: dict = {}

    def _bind_plan(self, n: int, kw: tuple) -> tuple:
        """(names taken from kwargs or defaults after the positionals, option names)."""
        names = self.names
        if n > len(names):
            raise TypeError(f"{self.kernel.__name__}() takes {len(names)} arguments "
                            f"but {n} were given")
        opts = []
        for k in kw:
            i = self.index.get(k)
            if i is None:
                opts.append(k)
            elif i < n:
                raise TypeError(f"{self.kernel.__name__}() got multiple values for "
                                f"argument '{k}'")
        tail = []
        for i in range(n, len(names)):
            if names[i] not in kw and self.defaults[i] is inspect.Parameter.empty:
                raise TypeError(f"{self.kernel.__name__}() missing argument '{names[i]}'")
            tail.append((names[i], self.defaults[i]))
        plan = (tuple(tail), tuple(opts))
        self._bind_plans[(n, kw)] = plan
        return plan

    def bind(self, args: tuple, kwargs: dict) -> tuple[list, tuple]:
        """(all arguments in parameter order, launch options) - what Triton's binder
        returns, without its specialization work. Raises TypeError like a Python call."""
        kw = tuple(kwargs)
        plan = self._bind_plans.get((len(args), kw)) or self._bind_plan(len(args), kw)
        tail, opt_names = plan
        full = [*args, *[kwargs.get(name, d) for name, d in tail]]
        return full, tuple([(k, kwargs[k]) for k in opt_names]) if opt_names else ()

    def _type_plan(self, types: tuple) -> tuple:
        """Getters splitting the arguments by (kind, type) for one tuple of argument types."""
        kinds = self.kinds

        def idx(kind: int, pred) -> list:
            return [i for i, (k, t) in enumerate(zip(kinds, types)) if k == kind and pred(t)]

        is_int = lambda t: t is int  # noqa: E731
        is_ptr = lambda t: t is not int and hasattr(t, "data_ptr")  # noqa: E731
        plan = (_getter(idx(SPEC, is_int)), _getter(idx(SPEC, is_ptr)),
                _getter(idx(SPEC, lambda t: not is_int(t) and not is_ptr(t))),
                _getter(idx(NO_SPEC, is_int)),
                _getter(idx(NO_SPEC, lambda t: not is_int(t))))
        self._type_plans[types] = plan
        return plan

    def key(self, device: int, full: list, opts: tuple) -> tuple:
        """The types of all arguments; constexpr values; for specialized ints ``v % 16`` and
        ``v == 1``, for pointers dtype and ``data_ptr() % 16`` (finer than Triton's key,
        never coarser); ``do_not_specialize`` ints only by range (True: all i32)."""
        types = tuple(map(type, full))
        gi, gp, go, gn, gno = self._type_plans.get(types) or self._type_plan(types)
        ints, ptrs, nv = gi(full), gp(full), gn(full)
        if ints and (min(ints) < _I32_LO or max(ints) >= _I32_HI):
            ik: Any = tuple([int_key(v) for v in ints])
        else:
            ik = (tuple(map(mod, ints, _R16)), tuple(map(eq, ints, _R1)))
        nk: Any = (not nv or (min(nv) >= _I32_LO and max(nv) < _I32_HI)
                   or tuple([int_key(v, False) for v in nv]))
        pk = (tuple(map(_DTYPE, ptrs)), tuple(map(mod, map(_DATA_PTR, ptrs), _R16)))
        other = go(full) + gno(full)
        ok = tuple([arg_key(a) for a in go(full)] + [arg_key(a, NO_SPEC) for a in gno(full)]
                   ) if other else ()
        return (device, opts, types, self._const(full), ik, pk, ok, nk)

    def addresses(self, full: list) -> None:
        """Replace every pointer argument in ``full`` by its address (an int): Triton's
        launcher then skips its per-pointer ``data_ptr()`` call and driver check."""
        types = tuple(map(type, full))
        idx = self._ptr_plans.get(types)
        if idx is None:
            idx = self._ptr_plans[types] = [
                i for i, t in enumerate(types)
                if t is not int and hasattr(t, "data_ptr") and self.kinds[i] != CONSTEXPR]
        for i in idx:
            full[i] = full[i].data_ptr()


_R16, _R1 = repeat(16), repeat(1)
_DTYPE, _DATA_PTR = attrgetter("dtype"), methodcaller("data_ptr")


_infos: dict[int, KernelInfo | None] = {}


def kernel_info(kernel: Any) -> KernelInfo | None:
    """The fast-path info of ``kernel``, or None when it must use ``kernel[grid](...)``."""
    kid = id(kernel)
    if kid in _infos:
        info = _infos[kid]
        if info is None or info.kernel is kernel:
            return info
    info = None
    try:
        from triton.runtime.jit import JITFunction
        if (isinstance(kernel, JITFunction) and not getattr(kernel, "pre_run_hooks", None)
                and not getattr(kernel, "debug", False)):
            info = KernelInfo(kernel)
    except Exception:  # noqa: BLE001 - unknown Triton layout: keep the normal path
        info = None
    _infos[kid] = info
    return info


_fast_state: list = []


def fast_path_enabled() -> bool:
    """False in interpreter mode or with TGRAD_FAST_LAUNCH=0 (read once; see
    ``clear_launch_cache``)."""
    if not _fast_state:
        _fast_state.append(os.environ.get("TGRAD_FAST_LAUNCH", "1") not in ("0", "")
                           and not is_interpreted())
    return _fast_state[0]


_hot: dict = {}  # runtime, current_stream_handle, triton.knobs.runtime (bound on first use)


def _bind_hot() -> dict:
    if not _hot:
        from triton import knobs

        from tgrad.cuda._runtime import runtime
        from tgrad.cuda.streams import current_stream_handle
        _hot.update(rt=runtime(), stream=current_stream_handle, knobs=knobs.runtime)
    return _hot


def launch_hooks(knobs: Any) -> tuple:
    """Triton's (launch_enter_hook, launch_exit_hook), each None when unset or an empty
    ``HookChain`` (Triton >= 3.5 always holds chains; the launcher only skips None)."""
    enter, leave = knobs.launch_enter_hook, knobs.launch_exit_hook
    if enter is not None and not getattr(enter, "calls", True):
        enter = None
    if leave is not None and not getattr(leave, "calls", True):
        leave = None
    return enter, leave


def launch(kernel: Any, grid: tuple, *args: Any, **kwargs: Any) -> Any:
    """``kernel[grid](*args, **kwargs)`` through the fast path (module docstring).
    ``grid`` is a tuple of 1 to 3 ints. Returns the ``CompiledKernel`` (None in the
    interpreter)."""
    if not _driver_ready:
        ensure_driver()
    if not fast_path_enabled():
        stats["fallback"] += 1
        return _slow_launch(kernel, grid, args, kwargs)
    info = kernel_info(kernel)
    hot = _hot or _bind_hot()
    knobs = hot["knobs"]
    if info is None or getattr(knobs, "debug", False):
        stats["fallback"] += 1
        return _slow_launch(kernel, grid, args, kwargs)
    full, opts = info.bind(args, kwargs)
    device = hot["rt"].current_device()
    stream = hot["stream"](device)
    key = info.key(device, full, opts)
    try:
        compiled = info.cache.get(key)
    except TypeError:  # an unhashable constexpr value: no caching for this call
        stats["fallback"] += 1
        return _slow_launch(kernel, grid, args, kwargs)
    if compiled is None:
        compiled = _slow_launch(kernel, grid, args, kwargs)
        if compiled is not None and hasattr(compiled, "packed_metadata"):
            info.cache[key] = compiled
        stats["first"] += 1
        return compiled
    g = len(grid)
    enter, leave = launch_hooks(knobs)
    meta = compiled.launch_metadata(grid, stream, *full) if enter is not None else None
    info.addresses(full)
    compiled.run(grid[0], grid[1] if g > 1 else 1, grid[2] if g > 2 else 1, stream,
                 compiled.function, compiled.packed_metadata, meta, enter, leave, *full)
    stats["fast"] += 1
    return compiled


def compile_options() -> dict:
    """configs.COMPILE_OPTIONS on a GPU; none in the interpreter (nothing is compiled)."""
    return {} if is_interpreted() else configs.COMPILE_OPTIONS


def _slow_launch(kernel: Any, grid: tuple, args: tuple, kwargs: dict) -> Any:
    """``kernel[grid](...)`` with tgrad's compiler options (binder, specialization, and the
    compilation on a cache miss). Loading a new kernel needs device memory, which tgrad's
    pool may be holding (its release threshold keeps freed blocks): when the load fails with
    out of memory, the pool's unused memory goes back to the driver and the load is tried
    once more."""
    try:
        return kernel[grid](*args, **kwargs, **compile_options())
    except RuntimeError as e:
        if "out of memory" not in str(e):
            raise
        import tgrad.cuda
        tgrad.cuda.empty_cache()
        return kernel[grid](*args, **kwargs, **compile_options())


def clear_launch_cache() -> None:
    """Forget every cached ``CompiledKernel`` (the next launch of each goes through
    ``kernel[grid]`` again) and re-read TGRAD_FAST_LAUNCH."""
    _infos.clear()
    _ew_plans.clear()
    _fast_state.clear()
    _hot.clear()
