"""CUDA graphs (tgrad/cuda/graphs.py and the capture support in driver_runtime.py).

Without a GPU: the driver runtime over a fake cuda-bindings module whose streams record
operations during capture into a graph and run them on cuGraphLaunch (so "nothing runs
during capture", staged host copies, deferred frees and capture errors are checked), the
interpreter-mode error, API errors. Marked gpu: a small MLP's forward + backward + SGD step
captured and replayed against the same steps run eagerly."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tgrad
from tgrad.cuda import _runtime, index_errors
from tgrad.cuda.runtime_api import CaptureError

sys.path.insert(0, os.path.dirname(__file__))
from test_cuda_driver_runtime import OK, FakeCudaDriver, R, real  # noqa: E402

from tgrad.cuda import driver_runtime as dr  # noqa: E402


class FakeGraphDriver(FakeCudaDriver):
    """Stream capture: while a stream captures, copies/memsets on it are recorded (not run);
    cuGraphLaunch runs the recording. Allocations are immediate (as graph memory nodes
    reserve addresses at capture)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.capturing: dict[int, list] = {}
        self.graphs: dict[int, list] = {}
        self.execs: dict[int, list] = {}
        self.pinned: dict[int, np.ndarray] = {}
        self.capture_mode = 0
        self._gid = iter(range(0x9000, 0x10000, 0x10))

    def _rec(self, s, fn):
        ops = self.capturing.get(int(s))
        if ops is None:
            return None
        ops.append(fn)
        return (OK,)

    def cuMemcpyHtoDAsync(self, dst, src, n, s):  # noqa: N802
        return self._rec(s, lambda: super(FakeGraphDriver, self).cuMemcpyHtoDAsync(
            dst, src, n, s)) or super().cuMemcpyHtoDAsync(dst, src, n, s)

    def cuMemcpyDtoDAsync(self, dst, src, n, s):  # noqa: N802
        return self._rec(s, lambda: super(FakeGraphDriver, self).cuMemcpyDtoDAsync(
            dst, src, n, s)) or super().cuMemcpyDtoDAsync(dst, src, n, s)

    def cuMemsetD8Async(self, dst, v, n, s):  # noqa: N802
        return self._rec(s, lambda: super(FakeGraphDriver, self).cuMemsetD8Async(
            dst, v, n, s)) or super().cuMemsetD8Async(dst, v, n, s)

    def cuStreamSynchronize(self, s):  # noqa: N802
        if int(s) in self.capturing:
            return (R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        return super().cuStreamSynchronize(s)

    def cuStreamBeginCapture(self, s, mode):  # noqa: N802
        self._log("cuStreamBeginCapture")
        self.capturing[int(s)] = []
        self.capture_mode = int(mode)
        return (OK,)

    def cuStreamEndCapture(self, s):  # noqa: N802
        self._log("cuStreamEndCapture")
        g = next(self._gid)
        self.graphs[g] = self.capturing.pop(int(s))
        return (OK, real.CUgraph(g))

    def cuStreamIsCapturing(self, s):  # noqa: N802
        return (OK, real.CUstreamCaptureStatus(1 if int(s) in self.capturing else 0))

    def cuGraphInstantiate(self, g, flags):  # noqa: N802
        assert flags == 1, "AUTO_FREE_ON_LAUNCH expected"
        e = next(self._gid)
        self.execs[e] = self.graphs[int(g)]
        return (OK, real.CUgraphExec(e))

    def cuGraphLaunch(self, e, s):  # noqa: N802
        self._log("cuGraphLaunch")
        for op in self.execs[int(e)]:
            assert op() == (OK,)
        return (OK,)

    def cuGraphExecDestroy(self, e):  # noqa: N802
        del self.execs[int(e)]
        return (OK,)

    def cuGraphDestroy(self, g):  # noqa: N802
        del self.graphs[int(g)]
        return (OK,)

    def cuThreadExchangeStreamCaptureMode(self, mode):  # noqa: N802
        old, self.capture_mode = self.capture_mode, int(mode)
        return (OK, real.CUstreamCaptureMode(old))

    def cuMemHostAlloc(self, n, flags):  # noqa: N802
        assert self.capture_mode == 2, "pinned allocation must run in relaxed capture mode"
        buf = np.zeros(n, np.uint8)
        self.pinned[buf.ctypes.data] = buf
        return (OK, buf.ctypes.data)

    def cuMemFreeHost(self, p):  # noqa: N802
        del self.pinned[int(p)]
        return (OK,)


@pytest.fixture
def fake(monkeypatch):
    drv = FakeGraphDriver(n_devices=1)
    rt = dr.DriverRuntime(bindings=drv)
    rt.set_device(0)
    # runtime() everywhere (graphs, streams, device buffers), index_errors' state fresh
    monkeypatch.setitem(_runtime._state, "rt", rt)
    monkeypatch.setitem(_runtime._state, "done", True)
    monkeypatch.setattr(index_errors, "_records", {})
    monkeypatch.setattr(index_errors, "_capturing", {})
    monkeypatch.setattr(index_errors, "waiting", set())
    return rt, drv


def _read(rt, ptr, n, stream):
    out = np.empty(n, np.uint8)
    rt.memcpy_dtoh(out, ptr, stream)
    return out


def test_capture_records_and_replay_runs(fake):
    rt, drv = fake
    s = rt.tgrad_stream(0)
    a = rt.malloc_async(16, s)
    rt.memset_d8(a, 0, 16, s)
    src = np.arange(16, dtype=np.uint8)
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        assert tgrad.cuda.is_current_stream_capturing()
        rt.memcpy_htod(a, src, s)              # staged: the replay copies capture-time values
        b = rt.malloc_async(16, s)             # a graph allocation that outlives the capture
        rt.memcpy_dtod(b, a, 16, s)
        rt.memset_d8(a, 7, 4, s)
    assert not tgrad.cuda.is_current_stream_capturing()
    np.testing.assert_array_equal(_read(rt, a, 16, s), np.zeros(16))   # nothing ran yet
    src[:] = 99                                 # the source buffer may change after capture
    g.replay()
    np.testing.assert_array_equal(_read(rt, b, 16, s), np.arange(16))
    np.testing.assert_array_equal(_read(rt, a, 16, s),
                                  np.r_[[7] * 4, np.arange(4, 16)])
    rt.memset_d8(b, 0, 16, s)
    g.replay()                                   # replays again, same addresses
    np.testing.assert_array_equal(_read(rt, b, 16, s), np.arange(16))
    assert len(drv.pinned) == 1
    g.reset()
    assert not drv.pinned and not drv.execs and not drv.graphs


def test_host_syncs_raise_clear_errors_and_abandon_the_capture(fake):
    rt, drv = fake
    s = rt.tgrad_stream(0)
    a = rt.malloc_async(8, s)
    g = tgrad.cuda.CUDAGraph()
    with pytest.raises(CaptureError, match=r"stream is capturing: a copy from the device to "
                                           r"the host \(\.item\(\)"):
        with tgrad.cuda.graph(g):
            rt.memset_d8(a, 1, 8, s)
            _read(rt, a, 8, s)
    assert not drv.capturing and not drv.execs
    with pytest.raises(RuntimeError, match="nothing captured"):
        g.replay()
    for sync in (lambda: rt.synchronize(0), lambda: rt.stream_synchronize(s),
                 lambda: rt.event_synchronize(rt.event_create())):
        g2 = tgrad.cuda.CUDAGraph()
        with pytest.raises(CaptureError, match="host sync"):
            with tgrad.cuda.graph(g2):
                sync()
        assert not drv.capturing


def test_frees_during_capture(fake):
    rt, drv = fake
    s = rt.tgrad_stream(0)
    old = rt.malloc_async(32, s)
    g = tgrad.cuda.CUDAGraph()
    g.capture_begin()
    tmp = rt.malloc_async(64, s)
    rt.free_async(tmp, s)                       # allocated and freed inside: a free node
    rt.free_async(old, s)                       # allocated before: kept until reset()
    g.capture_end()
    assert tmp not in drv._mem and old in drv._mem
    assert tmp not in rt._small_size            # capture allocations skip the free lists
    g.replay()
    g.reset()
    assert old not in drv._mem and old not in rt._small_size
    # a small block freed outside a capture waits on its list; a capture never takes it
    kept = rt.malloc_async(32, s)
    rt.free_async(kept, s)
    g2 = tgrad.cuda.CUDAGraph()
    g2.capture_begin()
    fresh = rt.malloc_async(32, s)
    g2.capture_end()
    assert fresh != kept and kept in drv._mem
    g2.reset()


def test_api_errors(fake):
    rt, _ = fake
    with pytest.raises(TypeError, match="expects a tgrad.cuda.CUDAGraph"):
        tgrad.cuda.graph(object())
    g = tgrad.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capture_begin was not called"):
        g.capture_end()
    with pytest.raises(ValueError, match="capture_error_mode must be one of"):
        g.capture_begin(capture_error_mode="loose")
    g.capture_begin(pool=tgrad.cuda.graph_pool_handle(), capture_error_mode="thread_local")
    with pytest.raises(RuntimeError, match="already capturing"):
        g.capture_begin()
    g.capture_end()
    with pytest.raises(RuntimeError, match="call reset"):
        g.capture_begin()
    g.reset()
    user = tgrad.cuda.Stream()
    with pytest.raises(RuntimeError, match="captures tgrad's own stream"):
        with tgrad.cuda.stream(user):
            g.capture_begin()


def test_interpreter_mode_has_no_graphs():
    code = ("import tgrad\ng = tgrad.cuda.CUDAGraph()\n"
            "try:\n    g.capture_begin()\nexcept RuntimeError as e:\n    print(e)\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CUDA graphs are not available in interpreter mode" in out.stdout


# ----------------------------------------------------------------------------- real GPU
def _real_gpu() -> bool:
    return tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()


def _mlp(seed: int):
    rng = np.random.default_rng(seed)
    layers = []
    for i in range(4):
        lin = tgrad.nn.Linear(32, 32)
        lin.weight.data = tgrad.tensor(rng.standard_normal((32, 32)).astype(np.float32) * 0.2)
        lin.bias.data = tgrad.tensor(rng.standard_normal(32).astype(np.float32) * 0.1)
        layers += [lin] + ([tgrad.nn.Tanh()] if i < 3 else [])
    return tgrad.nn.Sequential(*layers).to("cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real CUDA GPU")
def test_mlp_training_step_graph_matches_eager():
    rng = np.random.default_rng(1)
    batches = [(rng.standard_normal((16, 32)).astype(np.float32),
                rng.standard_normal((16, 32)).astype(np.float32)) for _ in range(4)]
    eager, graphed = _mlp(0), _mlp(0)
    opt_e = tgrad.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    opt_g = tgrad.optim.SGD(graphed.parameters(), lr=0.05, momentum=0.9)

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=True)
        loss = tgrad.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x_s = tgrad.tensor(batches[0][0], device="cuda")
    y_s = tgrad.tensor(batches[0][1], device="cuda")
    losses_e = [step(eager, opt_e, tgrad.tensor(x, device="cuda"),
                     tgrad.tensor(y, device="cuda")).item() for x, y in batches]
    # warm-up step eagerly (compiles kernels, creates momentum buffers), then capture
    losses_g = [step(graphed, opt_g, x_s, y_s).item()]
    tgrad.cuda.synchronize()
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        loss_s = step(graphed, opt_g, x_s, y_s)
    for x, y in batches[1:]:
        x_s.copy_(tgrad.tensor(x, device="cuda"))
        y_s.copy_(tgrad.tensor(y, device="cuda"))
        g.replay()
        losses_g.append(loss_s.item())
    np.testing.assert_allclose(losses_g, losses_e, rtol=1e-5, atol=1e-6)
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        np.testing.assert_allclose(pg.detach().cpu().numpy(), pe.detach().cpu().numpy(),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(CaptureError, match="stream is capturing"):
        with tgrad.cuda.graph(tgrad.cuda.CUDAGraph()):
            step(graphed, opt_g, x_s, y_s).item()


def test_index_checks_captured_wait_again_after_each_replay(fake):
    # A gather with a cuda index tensor captured into a graph gets its error record at
    # capture (tgrad/cuda/index_errors.py) and writes it on each replay; the record is read
    # at the next synchronization after a replay, never after the capture itself. The
    # kernel's write is played here by a copy into the record, captured like the launch.
    ie = index_errors
    rt, drv = fake
    s = rt.tgrad_stream(0)
    bad = np.array([0, 0, 1, -9, 0, 0, 0, 0], np.int64)  # index array 1: -9
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        record = ie.record_for(0, s, (4, 6), (0, 1), (4, 6))  # as gather_nd does
        rt.memcpy_htod(record.data_ptr(), bad, s)
        assert not ie.waiting                  # captured: nothing to read until a replay
    tgrad.cuda.synchronize()                   # (the capture wrote nothing)
    for _ in range(2):
        g.replay()
        assert ie.waiting == {0}
        with pytest.raises(ie.DeviceIndexError, match=r"index -9 is out of bounds for "
                           r"dimension 1 with size 6 \(tensor of shape \[4, 6\] on cuda:0\)"):
            tgrad.cuda.synchronize()
        assert not ie.waiting                  # read and cleared: the next replay writes again
    np.testing.assert_array_equal(_read(rt, record.data_ptr(), 64, s), np.zeros(64))
    # a capture that fails keeps nothing waiting
    g2 = tgrad.cuda.CUDAGraph()
    with pytest.raises(CaptureError):
        with tgrad.cuda.graph(g2):
            ie.record_for(0, s, (4, 6), (0,), (4,))
            _read(rt, record.data_ptr(), 8, s)
    assert not ie._capturing and not ie.waiting
