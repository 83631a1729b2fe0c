"""PyTorch module-level names scripts call at start-up: tgrad.cuda's RNG / memory / device /
stream / nvtx names, tgrad.random, tgrad.backends.{cudnn,mps,cpu,mkldnn,mkl,openmp,
opt_einsum}, tgrad.nn.attention, amp.is_autocast_available, the extra constraints and
nn.utils.skip_init. The cuda names are checked without a device (PyTorch's no-CUDA
behaviour) and on the device emulated by Triton's interpreter (a fresh process)."""

from __future__ import annotations

import os
import sys
import types

import numpy as np
import pytest

import tgrad
from tgrad.distributions import constraints as C
from tgrad.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
from interpreted import run_json  # noqa: E402

NO_CUDA = not tgrad.cuda.is_available()


# ----------------------------------------------------------------------------- tgrad.cuda
@pytest.mark.skipif(not NO_CUDA, reason="checks PyTorch's behaviour without a cuda device")
def test_cuda_without_device_matches_torch_without_cuda():
    c = tgrad.cuda
    c.manual_seed(3)  # silently ignored, as PyTorch
    c.manual_seed_all(3)
    assert c.seed() is None and c.seed_all() is None
    c.set_rng_state({"seed": 1, "offset": 0})
    assert c.default_generators == () and c.get_rng_state_all() == []
    assert c.memory_stats() == {} and c.memory_allocated() == 0
    assert c.memory_reserved() == 0 and c.max_memory_reserved() == 0
    assert not c.is_bf16_supported() and c.get_arch_list() == []
    for f in (c.initial_seed, c.get_rng_state, c.init, c.ipc_collect, c.default_stream,
              lambda: c.device(0).__enter__()):
        with pytest.raises(RuntimeError, match="not available"):
            f()
    with c.device(None), c.device(-1), c.device_of(tgrad.zeros(1)), c.StreamContext(None):
        pass
    c.set_stream(None)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        c.device("cpu")


_INTERP = r"""
import gc, json, warnings, tgrad
c = tgrad.cuda
out = {}
tgrad.manual_seed(5)
out["init_after_global"] = c.initial_seed()
c.manual_seed(123)
out["init"] = c.initial_seed()
a = tgrad.rand(6, device="cuda").cpu().numpy().tolist()
c.manual_seed_all(123)
b = tgrad.rand(6, device="cuda").cpu().numpy().tolist()
out["reseed_same"] = a == b
st = c.get_rng_state()
x = tgrad.rand(4, device="cuda").cpu().numpy().tolist()
c.set_rng_state(st)
out["restore_same"] = x == tgrad.rand(4, device="cuda").cpu().numpy().tolist()
out["n_gen"] = len(c.default_generators) == c.device_count()
tgrad.manual_seed(9)
cpu0 = tgrad.rand(3).numpy().tolist()
dev0 = tgrad.rand(3, device="cuda").cpu().numpy().tolist()
tgrad.manual_seed(9)
with tgrad.random.fork_rng():
    tgrad.rand(5); tgrad.rand(5, device="cuda")
out["fork"] = (tgrad.rand(3).numpy().tolist() == cpu0 and
               tgrad.rand(3, device="cuda").cpu().numpy().tolist() == dev0)
gc.collect()
c.reset_accumulated_memory_stats(); c.reset_peak_memory_stats()
base = c.memory_allocated()
t = tgrad.zeros(1000, device="cuda")  # 4000 bytes
s1 = c.memory_stats()
del t
gc.collect()
s2 = c.memory_stats()
out["mem"] = [s1["allocated_bytes.all.current"] - base, s1["allocated_bytes.all.allocated"],
              s2["allocated_bytes.all.freed"], s2["allocated_bytes.all.peak"] - base,
              s2["reserved_bytes.all.current"] == c.memory_reserved()]
out["summary"] = "Allocated memory (peak)" in c.memory_summary()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out["cached"] = c.memory_cached() == c.memory_reserved()
    c.reset_max_memory_allocated()
    out["warned"] = sum(issubclass(x.category, FutureWarning) for x in w)
gc.collect()
r0, p0 = c.memory_reserved(), c.max_memory_reserved()
big = tgrad.empty(1 << 20, device="cuda")  # 4 MiB
r1, p1 = c.memory_reserved(), c.max_memory_reserved()
del big
gc.collect()
r2, p2 = c.memory_reserved(), c.max_memory_reserved()
st = c.memory_stats()
c.reset_peak_memory_stats()
r3, p3 = c.memory_reserved(), c.max_memory_reserved()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    cached = c.max_memory_cached()
out["maxres"] = [r0, p0, r1, p1, r2, p2, r3, p3, st["reserved_bytes.all.peak"], cached,
                 [str(x.category.__name__) for x in w],
                 "Reserved memory (peak)" in c.memory_summary()]
with c.device(0):
    out["dev"] = c.current_device()
with c.device_of(tgrad.zeros(1, device="cuda")):
    pass
s = c.Stream()
d = c.default_stream()
with c.StreamContext(s):
    out["in_ctx"] = c.current_stream() == s
out["after_ctx"] = c.current_stream() == d
c.set_stream(s)
out["set"] = c.current_stream() == s
c.set_stream(d)
out["back"] = c.current_stream() == d
out["bf16"] = c.is_bf16_supported()
out["arch"] = c.get_arch_list()
c.init(); c.ipc_collect()
print(json.dumps(out))
"""


def test_cuda_names_on_the_interpreted_device():
    r = run_json(_INTERP)
    assert r["init_after_global"] == 5 and r["init"] == 123
    assert r["reseed_same"] and r["restore_same"] and r["n_gen"] and r["fork"]
    cur, total, freed, peak, reserved = r["mem"]
    # everything allocated since the reset is the new tensor (4000 bytes of data, plus any
    # small buffer the fill uses): live after creation, all freed after del, peak = it
    assert cur == total >= 4000 and freed == total and peak == total and reserved
    assert r["summary"] and r["cached"] and r["warned"] == 2
    r0, p0, r1, p1, r2, p2, r3, p3, stat_peak, cached, warned, row = r["maxres"]
    # max_memory_reserved: the peak of memory_reserved since the last reset (PyTorch's)
    assert p0 >= r0 and p1 >= r1 >= r0 + (4 << 20)  # the 4 MiB tensor grew the pool
    assert r2 <= r1 - (4 << 20) and p2 == p1          # freeing lowers current, not the peak
    assert stat_peak == p2 and row                    # memory_stats' reserved_bytes.all.peak
    assert p3 == r3 == r2                             # reset_peak_memory_stats: peak = current
    assert cached == p3 and warned == ["FutureWarning"]  # the deprecated alias
    assert r["dev"] == 0
    assert r["in_ctx"] and r["after_ctx"] and r["set"] and r["back"]
    cap = "sm_90"  # the interpreter's device reports compute capability 9.0
    assert r["bf16"] is True and r["arch"] == [cap]


def test_cuda_nvtx(monkeypatch):
    calls = []
    fake = types.SimpleNamespace(push_range=lambda m: calls.append(("push", m)),
                                 pop_range=lambda: calls.append(("pop",)),
                                 mark=lambda message: calls.append(("mark", message)),
                                 start_range=lambda message: 7,
                                 end_range=lambda rid: calls.append(("end", rid)))
    monkeypatch.setitem(sys.modules, "nvtx", fake)
    nv = tgrad.cuda.nvtx
    assert nv.range_push("a") == 0 and nv.range_push("b") == 1
    assert nv.range_pop() == 1 and nv.range_pop() == 0 and nv.range_pop() == -1
    with nv.range("step {}", 3):
        nv.mark("m")
    nv.range_end(nv.range_start("r"))
    assert calls == [("push", "a"), ("push", "b"), ("pop",), ("pop",), ("push", "step 3"),
                     ("mark", "m"), ("pop",), ("end", 7)]
    monkeypatch.setitem(sys.modules, "nvtx", None)
    with pytest.raises(ModuleNotFoundError, match="pip install nvtx"):
        nv.mark("x")


# ----------------------------------------------------------------------------- tgrad.random
def test_random_module_and_fork_rng():
    r = tgrad.random
    r.manual_seed(11)
    assert r.initial_seed() == 11
    st = r.get_rng_state()
    a = tgrad.rand(4).numpy()
    r.set_rng_state(st)
    np.testing.assert_array_equal(tgrad.rand(4).numpy(), a)
    st = r.get_rng_state()
    with r.fork_rng(devices=[]):
        tgrad.rand(10)
    assert r.get_rng_state().tolist() == st.tolist()
    with r.fork_rng(enabled=False):
        tgrad.rand(1)
    assert r.get_rng_state().tolist() != st.tolist()
    with pytest.raises(RuntimeError, match="no module of `xpu`"):
        with r.fork_rng(device_type="xpu"):
            pass


# ----------------------------------------------------------------------------- tgrad.backends
def test_backends_flags():
    b = tgrad.backends
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32) == (
        True, False, False, True)
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    with pytest.raises(RuntimeError, match="benchmark expects a bool, but got int"):
        b.cudnn.benchmark = 1
    with b.cudnn.flags(enabled=False, benchmark=True, deterministic=True, allow_tf32=False):
        assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic) == (False, True, True)
        assert b.cuda.matmul.allow_tf32 is False  # a separate flag from cudnn.allow_tf32
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.allow_tf32) == (True, False, True)
    b.cudnn.benchmark = True
    b.cudnn.benchmark = False
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.mkldnn.is_available() is False
    assert b.cpu.get_cpu_capability() in ("AVX512", "AVX2", "SVE", "DEFAULT")
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    assert b.mkl.is_available() == ("mkl" in blas.lower())
    assert isinstance(b.openmp.is_available(), bool)
    oe = b.opt_einsum
    assert oe.enabled == oe.is_available()
    if not oe.is_available():
        assert oe.strategy is None and oe.get_opt_einsum() is None
        with pytest.raises(ValueError, match="opt_einsum is not available"):
            oe.strategy = "greedy"


# ----------------------------------------------------------------------------- nn.attention
def _sdpa_ref(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def test_sdpa_kernel():
    q = tgrad.randn(1, 2, 3, 4, dtype=tgrad.float64)
    bc = tgrad.backends.cuda
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION) as ctx:
        assert ctx == {}
        assert bc.flash_sdp_enabled() and not bc.math_sdp_enabled()
        out = tgrad.nn.functional.scaled_dot_product_attention(q, q, q)
    np.testing.assert_allclose(out.numpy(), _sdpa_ref(q.numpy(), q.numpy(), q.numpy()),
                               rtol=1e-10)
    assert bc.math_sdp_enabled() and bc.cudnn_sdp_enabled() and bc.mem_efficient_sdp_enabled()
    for bad in ([], [SDPBackend.ERROR], [SDPBackend.OVERRIDEABLE]):
        with sdpa_kernel(bad):
            with pytest.raises(RuntimeError, match="No viable backend"):
                tgrad.nn.functional.scaled_dot_product_attention(q, q, q)
    with pytest.raises(AssertionError, match="got tuple"):
        with sdpa_kernel((SDPBackend.MATH,)):
            pass
    assert int(SDPBackend.EFFICIENT_ATTENTION) == 2 and str(SDPBackend.MATH) == "SDPBackend.MATH"
    with pytest.raises(RuntimeError, match="enable_flash_sdp expects a bool, but got int"):
        bc.enable_flash_sdp(1)
    with pytest.warns(FutureWarning):
        with bc.sdp_kernel(enable_math=False):
            assert not bc.math_sdp_enabled() and bc.flash_sdp_enabled()
    assert bc.math_sdp_enabled()


# ----------------------------------------------------------------------------- small ones
def test_is_autocast_available():
    assert tgrad.amp.is_autocast_available("cuda") and tgrad.amp.is_autocast_available("cpu")
    assert not tgrad.amp.is_autocast_available("mps")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        tgrad.amp.is_autocast_available("foo")
    with pytest.raises(TypeError, match="must be str, not int"):
        tgrad.amp.is_autocast_available(1)


def test_constraints_extra():
    assert repr(C.positive_integer) == "IntegerGreaterThan(lower_bound=1)"
    np.testing.assert_array_equal(C.positive_integer.check(tgrad.tensor([0.0, 1, 2.5, 3])).numpy(),
                                  [False, True, False, True])
    assert C.square.check(tgrad.zeros(2, 3, 3)).numpy().tolist() == [True, True]
    assert C.square.check(tgrad.zeros(2, 3, 4)).numpy().tolist() == [False, False]
    m = tgrad.tensor([[[2.0, 1], [1, 2]], [[1.0, 2], [2, 1]], [[1.0, 2], [0, 1]]])
    assert C.symmetric.check(m).numpy().tolist() == [True, True, False]
    assert C.positive_semidefinite.check(m[:2]).numpy().tolist() == [True, False]  # eig 1,3 / -1,3
    mc = C.MixtureSameFamilyConstraint(C.positive)
    assert repr(mc) == "MixtureSameFamilyConstraint(GreaterThan(lower_bound=0.0))"
    assert mc.check(tgrad.tensor([1.0, -1.0])).numpy().tolist() == [True, False]
    mv = C.MixtureSameFamilyConstraint(C.simplex)
    assert mv.event_dim == 1 and not mv.is_discrete
    with pytest.raises(AssertionError, match="must be a Constraint"):
        C.MixtureSameFamilyConstraint(3)


def test_skip_init():
    st = tgrad.get_rng_state()
    m = tgrad.nn.utils.skip_init(tgrad.nn.Linear, 5, 2, dtype=tgrad.float64)
    assert m.weight.shape == (2, 5) and m.weight.dtype is tgrad.float64 and m.weight.requires_grad
    assert isinstance(m.weight, tgrad.nn.Parameter)
    assert tgrad.get_rng_state().tolist() == st.tolist()  # the constructor's init draws were undone
    with pytest.raises(RuntimeError, match="Expected a Module"):
        tgrad.nn.utils.skip_init(int)

    class NoDevice(tgrad.nn.Module):
        def __init__(self):
            super().__init__()

    with pytest.raises(RuntimeError, match="support a 'device' arg"):
        tgrad.nn.utils.skip_init(NoDevice)


def test_backends_cuda_preferred_libraries():
    # torch.backends.cuda.preferred_linalg_library / preferred_blas_library: tgrad's cuda
    # ops are its own kernels, so "default" is the one choice; a library it lacks raises
    bc = tgrad.backends.cuda
    assert repr(bc.preferred_linalg_library()) == "_LinalgBackend.Default"
    assert repr(bc.preferred_blas_library()) == "_BlasBackend.Default"
    assert bc.preferred_linalg_library("default") is bc.preferred_linalg_library()
    assert bc.preferred_blas_library("Default") is bc.preferred_blas_library()
    with pytest.raises(RuntimeError, match="Cannot set preferred backend to cuSOLVER"):
        bc.preferred_linalg_library("cusolver")
    with pytest.raises(RuntimeError, match="Cannot set preferred backend to cuBLASLt"):
        bc.preferred_blas_library("cublaslt")
    with pytest.raises(RuntimeError, match=r"^Unknown input value\. Choose from: default, "
                                           r"cusolver, magma\.$"):
        bc.preferred_linalg_library("bad")
