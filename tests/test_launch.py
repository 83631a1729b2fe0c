# ruff: noqa: N803  (Triton convention: pointers and constexprs in capitals)
"""The fast launch path (tgrad/kernels/launch.py): cache-key logic against Triton's own
specialization, binding, the cached-launch calling convention (with a recording fake of
Triton's CompiledKernel), the fallbacks, and (marked gpu) the fast path on a real GPU."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.backends.compiler import BaseBackend
from triton.runtime.jit import JITFunction, native_specialize_impl

import tgrad
from tgrad.kernels import launch as L

INTS = [0, 1, 2, 15, 16, 17, 32, -16, -1, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16,
        2**63 - 1, 2**63, 2**64 - 16]


def triton_spec(v, specialize=True):
    return native_specialize_impl(BaseBackend, v, False, specialize, True)


@pytest.mark.parametrize("specialize", [True, False])
def test_int_key_is_at_least_as_fine_as_triton(specialize):
    # same tgrad key => same Triton specialization (type and attribute)
    seen: dict = {}
    for v in INTS:
        k = L.int_key(v, specialize)
        seen.setdefault(k, set()).add(triton_spec(v, specialize))
    for k, specs in seen.items():
        assert len(specs) == 1, (k, specs)
    # and the distinctions Triton makes are all present
    assert L.int_key(1) != L.int_key(2) != L.int_key(16)
    assert L.int_key(2**31 - 1, False) != L.int_key(2**31, False) != L.int_key(2**63, False)


class Ptr:
    """A pointer argument as Triton sees one: data_ptr() and dtype."""

    def __init__(self, addr, dtype=np.float32):
        self.addr, self.dtype = addr, np.dtype(dtype)

    def data_ptr(self):
        return self.addr


def test_pointer_key_dtype_and_alignment():
    assert L.arg_key(Ptr(256)) == L.arg_key(Ptr(512))
    assert L.arg_key(Ptr(256)) != L.arg_key(Ptr(260))          # 16-byte alignment
    assert L.arg_key(Ptr(256)) != L.arg_key(Ptr(256, np.float64))
    assert L.arg_key(Ptr(260), L.NO_SPEC) == L.arg_key(Ptr(256), L.NO_SPEC)
    assert L.arg_key(2.5) is float and L.arg_key(1.0) is float
    assert L.arg_key(True) is bool and L.arg_key(True) != L.arg_key(1)
    assert L.arg_key(7, L.CONSTEXPR) == 7


@triton.jit(do_not_specialize=["M"])
def _toy(X, Y, N, M, alpha, BLOCK: tl.constexpr, FLAG: tl.constexpr = 3):
    pass


class FakeCompiled:
    """Records calls with Triton's launcher convention."""

    def __init__(self):
        self.function, self.packed_metadata, self.calls = 1234, ("meta",), []

    def run(self, *a):
        self.calls.append(a)

    def launch_metadata(self, grid, stream, *args):
        return {"grid": grid, "stream": stream}


class RecordingJIT(JITFunction):
    """A real JITFunction whose ``kernel[grid](...)`` (Triton's binder path) is recorded."""

    def __init__(self, fn):
        super().__init__(fn.fn, do_not_specialize=fn.do_not_specialize)
        self.slow_calls, self.compiled = [], []

    def __getitem__(self, grid):
        def call(*args, **kwargs):
            self.slow_calls.append((grid, args, kwargs))
            c = FakeCompiled()
            self.compiled.append(c)
            return c
        return call


class FakeRT:
    def current_device(self):
        return 0


class Knobs:
    debug = False
    launch_enter_hook = None
    launch_exit_hook = None


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(L, "fast_path_enabled", lambda: True)
    monkeypatch.setattr(L, "_driver_ready", [True])
    L.clear_launch_cache()
    L._hot.update(rt=FakeRT(), stream=lambda d: 77, knobs=Knobs)
    yield
    L.clear_launch_cache()


def test_bind_orders_arguments_and_fills_defaults():
    info = L.KernelInfo(_toy)
    full, opts = info.bind((Ptr(0), Ptr(16), 10), {"M": 5, "alpha": 1.5, "BLOCK": 64,
                                                   "num_warps": 4})
    assert [type(a) for a in full[:2]] == [Ptr, Ptr]
    assert full[2:] == [10, 5, 1.5, 64, 3]                      # FLAG's default filled in
    assert opts == (("num_warps", 4),)
    assert info.kinds == [L.SPEC, L.SPEC, L.SPEC, L.NO_SPEC, L.SPEC, L.CONSTEXPR, L.CONSTEXPR]
    with pytest.raises(TypeError, match="missing argument 'BLOCK'"):
        info.bind((Ptr(0), Ptr(16), 10, 5, 1.0), {})
    with pytest.raises(TypeError, match="multiple values for argument 'N'"):
        info.bind((Ptr(0), Ptr(16), 10), {"N": 3, "M": 1, "alpha": 1.0, "BLOCK": 8})


def test_fast_path_reuses_compiled_kernel_with_triton_convention(fast):
    k = RecordingJIT(_toy)
    x, y = Ptr(256), Ptr(512)
    first = L.launch(k, (3,), x, y, 100, 7, 0.5, BLOCK=64, num_warps=4)
    assert len(k.slow_calls) == 1 and first is k.compiled[0]
    # same key (M is do_not_specialize; N keeps its value mod 16)
    L.launch(k, (5, 2), x, y, 116, 9, 2.5, BLOCK=64, num_warps=4)
    assert len(k.slow_calls) == 1
    (call,) = first.calls
    # pointers go to the launcher as addresses (ints)
    assert call == (5, 2, 1, 77, 1234, ("meta",), None, None, None, 256, 512, 116, 9, 2.5, 64,
                    3)


@pytest.mark.parametrize("change", [
    dict(n=96),                          # N divisible by 16: new specialization
    dict(n=1),                           # N == 1 becomes a constant
    dict(x=Ptr(260)),                    # misaligned pointer
    dict(x=Ptr(256, np.float16)),        # pointer dtype
    dict(block=128),                     # constexpr value
    dict(warps=8),                       # launch option
    dict(m=2**31),                       # do_not_specialize int leaves i32
])
def test_new_specialization_takes_the_slow_path(fast, change):
    k = RecordingJIT(_toy)
    base = dict(x=Ptr(256), n=100, m=7, block=64, warps=4)

    def go(p):
        return L.launch(k, (1,), p["x"], Ptr(512), p["n"], p["m"], 0.5, BLOCK=p["block"],
                        num_warps=p["warps"])

    go(base)
    go({**base, **change})
    assert len(k.slow_calls) == 2
    go({**base, **change})
    assert len(k.slow_calls) == 2 and len(k.compiled[1].calls) == 1


def test_launch_hooks_get_launch_metadata(fast):
    k = RecordingJIT(_toy)
    args = (Ptr(0), Ptr(0), 3, 3, 1.0)
    L.launch(k, (1,), *args, BLOCK=8)

    class HookKnobs(Knobs):
        launch_enter_hook = staticmethod(lambda md: None)
    L._hot["knobs"] = HookKnobs
    L.launch(k, (2,), *args, BLOCK=8)
    call = k.compiled[0].calls[0]
    assert call[6] == {"grid": (2,), "stream": 77} and call[7] is HookKnobs.launch_enter_hook


def test_empty_hook_chains_reach_the_launcher_as_none(fast):
    # Triton >= 3.5 keeps HookChain objects in knobs.runtime even with no hook in them: the
    # launcher then gets None (no launch metadata built, no Python call per launch); a chain
    # with a hook is passed as is, with the metadata
    from triton.knobs import HookChain
    k = RecordingJIT(_toy)
    args = (Ptr(0), Ptr(0), 3, 3, 1.0)

    class ChainKnobs(Knobs):
        launch_enter_hook = HookChain()
        launch_exit_hook = HookChain(reversed=True)
    L._hot["knobs"] = ChainKnobs
    L.launch(k, (1,), *args, BLOCK=8)
    L.launch(k, (2,), *args, BLOCK=8)
    assert k.compiled[0].calls[0][6:9] == (None, None, None)
    seen = []
    ChainKnobs.launch_exit_hook.add(seen.append)
    try:
        L.launch(k, (3,), *args, BLOCK=8)
    finally:
        ChainKnobs.launch_exit_hook.remove(seen.append)
    assert k.compiled[0].calls[1][6:9] == (None, None, ChainKnobs.launch_exit_hook)
    assert L.launch_hooks(ChainKnobs) == (None, None)


def test_fallbacks(fast, monkeypatch):
    k = RecordingJIT(_toy)
    # Triton debug mode: always the binder path
    class Dbg(Knobs):
        debug = True
    L._hot["knobs"] = Dbg
    for _ in range(2):
        L.launch(k, (1,), Ptr(0), Ptr(0), 3, 3, 1.0, BLOCK=8)
    assert len(k.slow_calls) == 2 and not k.compiled[0].calls
    L._hot["knobs"] = Knobs
    # not a JITFunction (an autotuner, say): kernel[grid] every time
    calls = []

    class NotJit:
        def __getitem__(self, grid):
            return lambda *a, **kw: calls.append(a)
    L.launch(NotJit(), (1,), 1, 2)
    L.launch(NotJit(), (1,), 1, 2)
    assert len(calls) == 2
    # disabled by the environment
    monkeypatch.undo()
    monkeypatch.setenv("TGRAD_FAST_LAUNCH", "0")
    L.clear_launch_cache()
    assert not L.fast_path_enabled()
    monkeypatch.delenv("TGRAD_FAST_LAUNCH")
    L.clear_launch_cache()


def test_interpreter_mode_keeps_normal_path():
    # In interpreter mode fast_path_enabled() is False whatever the environment says.
    import subprocess
    import sys
    code = ("import tgrad, numpy as np\nfrom tgrad.kernels import launch as L\n"
            "assert not L.fast_path_enabled()\n"
            "a = tgrad.tensor([1.0, 2.0], device='cuda'); b = a * a + a\n"
            "assert L.stats['fallback'] > 0 and L.stats['fast'] == 0, L.stats\n"
            "print(b.cpu().numpy().tolist())")
    env = {**__import__("os").environ, "TRITON_INTERPRET": "1", "TGRAD_FAST_LAUNCH": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == str([1.0 * 1.0 + 1.0, 2.0 * 2.0 + 2.0])


def test_signature_defaults_match_inspect():
    info = L.KernelInfo(_toy)
    sig = inspect.signature(_toy.fn).parameters
    assert info.names == list(sig)


# ----------------------------------------------------------------------------- real GPU
def _real_gpu() -> bool:
    return tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real CUDA GPU")
def test_fast_path_on_gpu():
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(1000).astype(np.float32)
    b_np = rng.standard_normal(1000).astype(np.float32)
    a = tgrad.tensor(a_np, device="cuda")
    b = tgrad.tensor(b_np, device="cuda")
    (a + b).cpu()                                     # first call: binder path
    before = dict(L.stats)
    for _ in range(3):
        c = a + b
    np.testing.assert_allclose(c.cpu().numpy(), a_np.astype(np.float64) + b_np, rtol=1e-6)
    assert L.stats["fast"] - before["fast"] >= 3
    assert L.stats["first"] == before["first"]       # no new specialization
    # odd offsets (misaligned views) get their own specialization, still correct
    d = a[1:] * b[:-1]
    np.testing.assert_allclose(d.cpu().numpy(), a_np[1:].astype(np.float64) * b_np[:-1],
                               rtol=1e-6)


def test_bench_cuda_path_runs_in_interpreter_mode(tmp_path):
    # The GPU benchmark's code path (CUDA events, L2 flush, copy reference, JSON) runs in
    # interpreter mode; the numbers are meaningless there, the bookkeeping is checked.
    import json
    import os
    import subprocess
    import sys
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-m", "tgrad", "bench", "--device", "cuda", "--ops",
                          "mul,matmul", "--sizes", "64", "--reps", "2", "--out", str(tmp_path),
                          "--no-progress"], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "INTERPRETER MODE" in out.stdout and "% copy" in out.stdout
    (path,) = tmp_path.glob("bench_cuda_float32_*.json")
    rep = json.loads(path.read_text())
    assert rep["device"] == "cuda" and rep["interpreted"] is True
    mul, mm = rep["results"]
    # mul on 64 float32: reads 2 x 256 bytes, writes 256 bytes
    assert mul["op"] == "mul" and mul["size"] == 64
    assert mul["fwd_gbps"] * mul["tgrad_fwd_us"] * 1e3 == pytest.approx(3 * 64 * 4)
    assert mul["fwd_pct_copy"] == pytest.approx(100 * mul["fwd_gbps"] / mul["copy_gbps"])
    # matmul 8x8 @ 8x8: 2*8*8*8 flops
    assert mm["flops_fwd"] == 2 * 8 * 8 * 8
    assert mm["fwd_tflops"] * mm["tgrad_fwd_us"] * 1e6 == pytest.approx(1024)


def test_elementwise_fast_path_passes_the_binders_arguments(fast, monkeypatch):
    from types import SimpleNamespace

    from tgrad.cuda.array import DeviceArray
    from tgrad.kernels.elementwise import ew_kernel, f_exp
    k = RecordingJIT(ew_kernel)
    monkeypatch.setattr(L, "ew_kernel", k)

    def arr(shape, estrides, ptr=4096, offset=0, dt=np.float32):
        return DeviceArray(SimpleNamespace(ptr=ptr), shape, estrides, offset, np.dtype(dt))

    out, a, b = arr((3, 5), (5, 1)), arr((3, 5), (1, 3)), arr((3, 5), (0, 1), ptr=8192)
    L.launch_ew(f_exp, out, [a, b], False)
    assert len(k.slow_calls) == 1
    L.launch_ew(f_exp, out, [a, b], False)          # same key: straight to the launcher
    assert len(k.slow_calls) == 1
    grid, sargs, skw = k.slow_calls[0]
    info = L.KernelInfo(ew_kernel)
    full, opts = info.bind(sargs, skw)
    info.addresses(full)
    (call,) = k.compiled[0].calls
    assert call[:9] == (grid[0], 1, 1, 77, 1234, ("meta",), None, None, None)
    assert list(call[9:]) == full  # what Triton's binder binds, pointers as their addresses
    assert call[9:13] == (4096, 4096, 8192, 4096)
    # a misaligned view, another dtype or another innermost stride: a new specialization
    for o, x in [(arr((3, 5), (5, 1), offset=1), a), (out, arr((3, 5), (1, 3), dt=np.float64)),
                 (out, arr((3, 5), (2, 6)))]:
        L.launch_ew(f_exp, o, [x, b], False)
    assert len(k.slow_calls) == 4


def test_kernel_load_out_of_memory_empties_the_pool_and_retries(monkeypatch):
    # Triton loads a new kernel's module on its first launch; when that fails with out of
    # memory (tgrad's pool keeping freed blocks), the pool is emptied and the load retried
    # once. Other errors, and a second out of memory, propagate.
    import tgrad.cuda
    emptied = []
    monkeypatch.setattr(tgrad.cuda, "empty_cache", lambda: emptied.append(True))

    class Loader:
        def __init__(self, errors):
            self.errors, self.calls = list(errors), 0

        def __getitem__(self, grid):
            def run(*a, **kw):
                self.calls += 1
                if self.errors:
                    raise self.errors.pop(0)
                return "compiled"
            return run
    oom = RuntimeError("Triton Error [CUDA]: out of memory")
    k = Loader([oom])
    assert L._slow_launch(k, (1,), (), {}) == "compiled"
    assert k.calls == 2 and emptied == [True]
    with pytest.raises(RuntimeError, match="out of memory"):
        L._slow_launch(Loader([oom, RuntimeError("Triton Error [CUDA]: out of memory")]),
                       (1,), (), {})
    with pytest.raises(RuntimeError, match="invalid argument"):
        L._slow_launch(Loader([RuntimeError("invalid argument")]), (1,), (), {})
    assert len(emptied) == 2
