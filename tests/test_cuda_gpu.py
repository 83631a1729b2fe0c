"""Real-GPU tests (marked ``gpu``; skipped cleanly without a CUDA driver or in interpreter
mode). perf/gpu_check.sh runs them with ``pytest -m gpu``; the op table is sharded over
processes with TGRAD_GPU_SHARD=i/n so kernel compilation uses several CPU cores.

- the whole op table on cuda against the NumPy float64 reference, float16/bfloat16 included
  (tests/test_opinfo.py's forward and large-sample backward checks, default device cuda);
- one numel > 2^31 case per kernel family (elementwise, reduction, scan) with int64 indexing;
- memory returns to its start after 1000 forward/backward iterations;
- the kernel checks of tests/device_checks.py (CI runs them in the interpreter).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import tgrad


def _real_gpu() -> bool:
    return tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()


_WHY = tgrad.cuda.why_unavailable() or "the cuda device is emulated by the Triton interpreter"
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _real_gpu(), reason=f"needs a real CUDA GPU ({_WHY})")]

_SHARD = os.environ.get("TGRAD_GPU_SHARD", "0/1")
_I, _N = (int(v) for v in _SHARD.split("/"))


def _mine(k: int) -> bool:
    return k % _N == _I


if _real_gpu():
    import test_opinfo as oi
    SPECS = [s for k, s in enumerate(oi.SPECS) if _mine(k)]
    DIFF = [s for s in SPECS if s.differentiable]
else:
    SPECS, DIFF = [], []


@pytest.fixture
def on_cuda():
    prev = tgrad.get_default_device()
    tgrad.set_default_device("cuda")
    yield
    tgrad.set_default_device(prev)


@pytest.mark.parametrize(("spec", "dtype"),  # the dtypes each spec lists, as on the CPU
                         oi._with_dtypes(SPECS, ("float64", "float32", "float16", "bfloat16"))
                         if SPECS else [])
def test_op_table_forward_on_gpu(spec, dtype, on_cuda):
    oi.test_forward(spec, dtype)


@pytest.mark.parametrize("spec", DIFF, ids=lambda s: s.name)
def test_op_table_backward_on_gpu(spec, on_cuda):
    oi.test_backward_large_and_empty(spec)


@pytest.mark.skipif(_I != 0, reason="runs in shard 0")
def test_elementwise_and_reduction_past_2_31_elements():
    n = 2**31 + 1000
    x = tgrad.full((n,), 1.0, dtype=tgrad.float16, device="cuda")
    x[n - 3] = 3.0
    y = x * 2.0                                        # elementwise, int64 offsets
    tail = y[n - 5:].numpy()
    assert tail.tolist() == [2.0, 2.0, 6.0, 2.0, 2.0]
    assert y.amax().item() == 6.0                      # full reduction over > 2^31
    assert y.argmax().item() == n - 3                  # an index past 2^31
    c = (y > 4.0).cumsum(0)                            # a scan past 2^31 (int64 out)
    assert c[n - 5:].numpy().tolist() == [0, 0, 1, 1, 1]
    del x, y, c
    # row reduction, each row past 2^30 (offsets past 2^31 in row 1); sparse values keep
    # every float32 partial sum exact (2^30 + 8 ones would round to 2^30 in float32)
    z = tgrad.zeros(2, 2**30 + 8, dtype=tgrad.float16, device="cuda")
    z[0, 0], z[0, 2**30 + 7], z[1, 2**30 + 3] = 1.0, 2048.0, 4.0
    s = z.float().sum(dim=1)
    assert s.numpy().tolist() == [2049.0, 4.0]


@pytest.mark.skipif(_I != 0, reason="runs in shard 0")
def test_memory_returns_to_start_after_1000_iterations():
    w = tgrad.randn(256, 64, device="cuda", requires_grad=True)
    x = tgrad.randn(64, 256, device="cuda")
    for _ in range(3):  # warm-up: compile every kernel once
        ((w.tanh() * 2).sum() + (w - x.T).sigmoid().mean()).backward()
    w.grad = None
    tgrad.cuda.synchronize()
    start = tgrad.cuda.memory_allocated()
    for _ in range(1000):
        loss = (w.tanh() * 2).sum() + (w - x.T).sigmoid().mean()
        loss.backward()
        w.grad = None
    del loss  # the last loss (a 4-byte scalar) is not part of the start's state
    tgrad.cuda.synchronize()
    assert tgrad.cuda.memory_allocated() == start


@pytest.mark.skipif(_I != 0, reason="runs in shard 0")
def test_max_memory_reserved_tracks_the_pools_peak():
    c = tgrad.cuda
    c.synchronize()
    c.empty_cache()
    c.reset_peak_memory_stats()
    r0, p0 = c.memory_reserved(), c.max_memory_reserved()
    assert p0 == r0  # reset: the peak is the current reservation
    big = tgrad.empty(16 << 20, device="cuda")  # 64 MiB of float32
    assert c.max_memory_reserved() >= c.memory_reserved() >= r0 + (64 << 20)
    del big
    c.synchronize()
    c.empty_cache()
    assert c.memory_reserved() < r0 + (64 << 20) <= c.max_memory_reserved()
    assert c.memory_stats()["reserved_bytes.all.peak"] == c.max_memory_reserved()
    c.reset_peak_memory_stats()
    assert c.max_memory_reserved() == c.memory_reserved()


@pytest.mark.skipif(_I != 0, reason="runs in shard 0")
@pytest.mark.parametrize("k", [1025, 4096])
def test_float32_matmul_long_reduction_within_rounding_bound_on_gpu(k):
    """float32 matmul/dot accumulate K products in float32 (tl.dot, ieee): the error against
    float64 stays within the standard bound gamma_K * sum|a||b|, gamma_K ~ K 2^-24."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((5, k)).astype(np.float32)
    b = rng.standard_normal((k, 4)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = k * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    ta, tb = tgrad.tensor(a, device="cuda"), tgrad.tensor(b, device="cuda")
    got = (ta @ tb).numpy().astype(np.float64)
    assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / bound)
    d = tgrad.dot(ta[0], tb[:, 0]).item()
    assert abs(d - exact[0, 0]) <= bound[0, 0]


@pytest.mark.skipif(_I != 0, reason="runs in shard 0")
def test_events_time_gpu_work():
    a = tgrad.randn(4096, 4096, device="cuda")
    e0, e1 = tgrad.cuda.Event(enable_timing=True), tgrad.cuda.Event(enable_timing=True)
    e0.record()
    b = a.tanh()
    e1.record()
    e1.synchronize()
    assert e1.query() and e0.elapsed_time(e1) > 0.0
    assert np.allclose(b.numpy(), np.tanh(a.numpy()), rtol=1e-5, atol=1e-6)


if _real_gpu():
    import device_checks
    DEVICE_CHECKS = [n for k, n in enumerate(device_checks.CHECKS) if _mine(k)]
else:
    DEVICE_CHECKS = []


@pytest.mark.parametrize("name", DEVICE_CHECKS)
def test_device_check_on_gpu(name):
    """The interpreter's kernel checks (fused gradient formulas, floor_divide, split /
    integer / empty reductions, pow on special values, integer and bool elementwise),
    compiled: the GPU's NaN, integer and float-argument handling can differ."""
    device_checks.CHECKS[name]()
