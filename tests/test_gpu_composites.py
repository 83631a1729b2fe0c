"""Real-GPU checks (marked ``gpu``) of the composite ops and layers added after the op
table's GPU run was written: each runs on cuda and on the CPU (the NumPy backend, the
oracle) in float64 and compares values and gradients. perf/gpu_check.sh runs them with
``pytest -m gpu``; they skip without a real GPU. ``python tests/test_gpu_composites.py``
runs the same checks on whatever cuda device tgrad has (the Triton interpreter with
TRITON_INTERPRET=1), which is how they were validated before a GPU was available."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn


def _real_gpu() -> bool:
    return tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not _real_gpu(), reason="needs a real CUDA GPU")]


def _both(fn, *arrays, grad: bool = True):
    """fn on the CPU and on cuda over float64 copies of ``arrays``: (outputs, grads) of
    each, the gradients those of sum(out * w) for a fixed random w."""
    results = []
    for dev in ("cpu", "cuda"):
        xs = [tgrad.tensor(a, device=dev, requires_grad=grad) for a in arrays]
        out = fn(*xs)
        grads = None
        if grad:
            w = np.random.default_rng(0).standard_normal(out.shape)
            (out * tgrad.tensor(w, device=dev)).sum().backward()
            grads = [x.grad.cpu().numpy() for x in xs]
        results.append((out.detach().cpu().numpy(), grads))
    return results


def _close(fn, *arrays, grad: bool = True) -> None:
    (o_cpu, g_cpu), (o_gpu, g_gpu) = _both(fn, *arrays, grad=grad)
    np.testing.assert_allclose(o_gpu, o_cpu, rtol=1e-10, atol=1e-12)
    for a, b in zip(g_gpu or [], g_cpu or []):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


RNG = np.random.default_rng(1)


def test_diagonal_is_a_writable_view_on_gpu():
    a = RNG.standard_normal((3, 4, 5))
    _close(lambda x: x.diagonal(1, 0, 2), a)
    x = tgrad.tensor(a, device="cuda")
    x[:, 1:3].diagonal().fill_(7.0)
    ref = a.copy()
    i = np.arange(2)  # the diagonal of x[:, 1:3]'s (3, 2) planes: x[i, 1 + i, :]
    ref[i, 1 + i, :] = 7.0
    np.testing.assert_array_equal(x.cpu().numpy(), ref)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_on_gpu(mode):
    a = RNG.standard_normal((2, 3, 5, 7))
    _close(lambda x: F.interpolate(x, scale_factor=1.7, mode=mode), a)


def test_bicubic_and_antialias_on_gpu():
    a = RNG.standard_normal((2, 3, 5, 7))
    _close(lambda x: F.interpolate(x, scale_factor=1.7, mode="bicubic"), a)
    _close(lambda x: F.interpolate(x, size=(3, 2), mode="bicubic", antialias=True), a)
    _close(lambda x: F.interpolate(x, size=(2, 4), mode="bilinear", antialias=True), a)


def test_conv_transpose2d_and_fold_on_gpu():
    x, w = RNG.standard_normal((2, 4, 5, 6)), RNG.standard_normal((4, 3, 3, 2))
    _close(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), x, w)
    cols = RNG.standard_normal((2, 3 * 2 * 2, 12))
    _close(lambda c: F.fold(c, (4, 5), (2, 2)), cols)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers_on_gpu(kind):
    tgrad.manual_seed(0)
    layer = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    params = {k: v.detach().numpy().copy() for k, v in layer.state_dict().items()}
    x = RNG.standard_normal((5, 2, 3))

    def run(inp):
        m = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
        m.load_state_dict({k: tgrad.tensor(v) for k, v in params.items()})
        return m.to(inp.device)(inp)[0]
    _close(run, x)


def test_packed_lstm_on_gpu():
    from tgrad.nn.utils.rnn import pack_padded_sequence
    tgrad.manual_seed(0)
    params = {k: v.detach().numpy().copy() for k, v in
              nn.LSTM(3, 4, num_layers=2, bidirectional=True).double().state_dict().items()}
    x = RNG.standard_normal((5, 3, 3))

    def run(inp):
        m = nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
        m.load_state_dict({k: tgrad.tensor(v) for k, v in params.items()})
        out, (h, c) = m.to(inp.device)(pack_padded_sequence(inp, [2, 5, 3],
                                                            enforce_sorted=False))
        return tgrad.cat([out.data.flatten(), h.flatten(), c.flatten()])
    _close(run, x)


def test_logmath_scans_and_searching_on_gpu():
    a, b = RNG.standard_normal((4, 9)), RNG.standard_normal((4, 9))
    _close(lambda x, y: tgrad.logaddexp(x, y) + tgrad.hypot(x, y), a, b)
    _close(lambda x: tgrad.logcumsumexp(x, 1) + tgrad.cummax(x, 1).values, a)
    seq = np.sort(RNG.standard_normal(20))
    vals = RNG.standard_normal(7)
    (o_cpu, _), (o_gpu, _) = _both(lambda s, v: tgrad.searchsorted(s, v), seq, vals,
                                   grad=False)
    np.testing.assert_array_equal(o_gpu, o_cpu)
    u = tgrad.unique(tgrad.tensor([3, 1, 3, 2, 1], device="cuda"))
    assert u.cpu().tolist() == [1, 2, 3]


def test_sampling_on_gpu():
    tgrad.manual_seed(0)
    for dt in (tgrad.float16, tgrad.bfloat16):
        u = tgrad.rand(200_000, dtype=dt, device="cuda").float().cpu().numpy()
        assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    w = tgrad.tensor([0.1, 0.0, 0.6, 0.3], dtype=tgrad.float64, device="cuda")
    s = tgrad.multinomial(w, 100_000, replacement=True).cpu().numpy()
    freq = np.bincount(s, minlength=4) / s.size
    assert freq[1] == 0.0 and np.abs(freq - [0.1, 0.0, 0.6, 0.3]).max() < 0.01
    x = tgrad.empty(100_000, device="cuda").normal_(1.0, 2.0).cpu().numpy()
    assert abs(x.mean() - 1.0) < 0.05 and abs(x.std() - 2.0) < 0.05


def test_embedding_rejects_negative_indices_on_gpu():
    # checked by the gather kernel, raised at the next synchronization (index_errors.py)
    weight = tgrad.arange(6.0).reshape(3, 2).to("cuda")
    out = F.embedding(tgrad.tensor([0, 2], device="cuda"), weight)
    assert out.cpu().tolist() == [[0.0, 1.0], [4.0, 5.0]]
    F.embedding(tgrad.tensor([-1], device="cuda"), weight)
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0 with size 3"):
        tgrad.cuda.synchronize()


def test_gather_with_a_cuda_index_is_captured_and_checked_after_each_replay():
    # x[idx] with a cuda idx no longer reads its bounds check on the host: it can be
    # captured, and a bad index copied into the static idx raises after that replay
    x = tgrad.tensor(np.arange(12.0).reshape(4, 3), device="cuda")
    idx = tgrad.tensor([3, 0, -1], device="cuda")
    x[idx] * 2.0  # warm up (compiles) outside the capture
    tgrad.cuda.synchronize()
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        y = x[idx] * 2.0
    g.replay()
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(12.0).reshape(4, 3)[[3, 0, -1]] * 2)
    idx.copy_(tgrad.tensor([1, 7, 2], device="cuda"))
    g.replay()
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 4"):
        y.cpu()
    idx.copy_(tgrad.tensor([2, 2, -4], device="cuda"))
    g.replay()
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(12.0).reshape(4, 3)[[2, 2, -4]] * 2)
    # lgamma too: its root table is such a gather, and its near-root shortcut reads nothing
    # on the host while capturing (the expansion runs on every element)
    v = np.array([-2.4570247382208006, -2.61, -3.9, -5.0082, 0.5, 7.0, -30.5])
    xs = tgrad.tensor(v, device="cuda")
    want = tgrad.lgamma(tgrad.tensor(v)).numpy()
    from tgrad.ops import special
    real = special.host_reads_ok
    special.host_reads_ok = lambda t: False  # warm up (compile) the capture path's kernels
    try:
        np.testing.assert_allclose(tgrad.lgamma(xs).cpu().numpy(), want, rtol=1e-14)
    finally:
        special.host_reads_ok = real
    g2 = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g2):
        out = tgrad.lgamma(xs)
    g2.replay()
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-14)


def test_embedding_training_step_with_a_cuda_index_is_captured():
    # the backward of w[idx] (index_add) sorts its targets on the device and reads nothing
    # back: a training step of F.embedding with repeated cuda indices can be captured;
    # each replay's summed gradient and SGD update match the NumPy reference
    rng = np.random.default_rng(4)
    w0 = rng.standard_normal((10, 5))
    batches = [rng.integers(-10, 10, 12) for _ in range(3)]
    w = tgrad.tensor(w0, device="cuda", requires_grad=True)
    opt = tgrad.optim.SGD([w], lr=0.5)
    idx = tgrad.tensor(batches[0], device="cuda")
    coef = tgrad.tensor(np.arange(1.0, 6.0), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = (w[idx] * coef).sum()
        loss.backward()
        opt.step()

    want = w0.copy()

    def reference(batch):
        grad = np.zeros_like(want)
        np.add.at(grad, batch, np.arange(1.0, 6.0))
        want[...] = want - 0.5 * grad

    step()  # warm up (compiles) eagerly
    reference(batches[0])
    tgrad.cuda.synchronize()
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        step()
    for batch in batches[1:]:
        idx.copy_(tgrad.tensor(batch, device="cuda"))
        g.replay()
        reference(batch)
        np.testing.assert_allclose(w.detach().cpu().numpy(), want, rtol=1e-13, atol=1e-13)


def test_kv_cache_update_by_index_copy_is_captured():
    # index_copy_ checks a cuda index on the device and reads nothing back: a decoding
    # step's cache write can be captured and replayed at each position
    cache = tgrad.zeros((6, 4), device="cuda")
    pos = tgrad.tensor([0], device="cuda")
    kv = tgrad.zeros((1, 4), device="cuda")
    cache.index_copy_(0, pos, kv)  # warm up (compiles) eagerly
    tgrad.cuda.synchronize()
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        cache.index_copy_(0, pos, kv)
    want = np.zeros((6, 4), np.float32)
    for step in range(6):
        pos.copy_(tgrad.tensor([step], device="cuda"))
        kv.copy_(tgrad.tensor(np.full((1, 4), step + 1.0, np.float32), device="cuda"))
        g.replay()
        want[step] = step + 1.0
    np.testing.assert_array_equal(cache.cpu().numpy(), want)


def test_save_on_cpu_parks_saved_gpu_tensors_on_the_host():
    from tgrad.autograd.graph import save_on_cpu, saved_tensors_hooks

    packed_devices = []

    def spy(hooks):
        return saved_tensors_hooks(
            lambda t: packed_devices.append(hooks.pack_hook(t)[1].device) or
            hooks.pack_hook(t), hooks.unpack_hook)

    x = tgrad.tensor(RNG.standard_normal((3, 4)), device="cuda", requires_grad=True)
    with spy(save_on_cpu()):
        y = (x.exp() * x).sum()
    y.backward()
    assert packed_devices and all(d.type == "cpu" for d in packed_devices)
    assert x.grad.device.type == "cuda"
    xv = x.detach().cpu().numpy()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(xv) * (xv + 1), rtol=1e-12)


def test_special_functions_on_gpu():
    x = np.concatenate([RNG.uniform(0.05, 12.0, 40), -RNG.uniform(0.1, 6.0, 12) - 0.05])
    x = x[np.abs(x - np.round(x)) > 0.05]
    _close(tgrad.lgamma, x)
    _close(tgrad.digamma, x)
    _close(lambda t: tgrad.polygamma(2, t), x)
    _close(lambda t: tgrad.mvlgamma(t.abs() + 2.0, 3), x)
    _close(tgrad.sinc, x)
    _close(tgrad.erfinv, np.concatenate([RNG.uniform(-0.99, 0.99, 30), [0.9995, -0.99999]]))
    _close(tgrad.special.entr, np.abs(x))
    z = np.concatenate([RNG.uniform(-8.0, 8.0, 30), [-30.0, 30.0]])
    for fn in (tgrad.erfc, tgrad.special.erfcx, tgrad.special.ndtr, tgrad.special.log_ndtr):
        _close(fn, z)
    _close(tgrad.special.ndtri, np.concatenate([RNG.uniform(0.01, 0.99, 20), [1e-30, 0.5]]))
    specials = [0.0, -1.0, np.inf, -np.inf, np.nan]
    _close(tgrad.lgamma, specials, grad=False)
    _close(tgrad.digamma, specials, grad=False)
    _close(lambda t: tgrad.polygamma(3, t), specials, grad=False)
    _close(tgrad.erfinv, [1.0, -1.0, 2.0, np.nan], grad=False)
    _close(tgrad.special.ndtri, [0.0, 1.0, 2.0, np.nan], grad=False)
    _close(tgrad.special.log_ndtr, specials, grad=False)

if __name__ == "__main__":  # the same checks on the current cuda device (e.g. interpreted)
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            params = {"test_interpolate_on_gpu": [("nearest",), ("bilinear",)],
                      "test_recurrent_layers_on_gpu": [("LSTM",), ("GRU",)]}.get(name, [()])
            for args in params:
                fn(*args)
                print("ok", name, *args)
