"""tgrad.jit / compiler / distributed, nn.DataParallel and nn.SyncBatchNorm: PyTorch's names
for a framework without TorchScript, a compiler or collectives. Code written for PyTorch
runs unchanged and eagerly: the values are the eager ones (checked against NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import nn


def _mlp():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def test_jit_script_and_trace_return_the_same_object_which_runs_eagerly():
    model = _mlp()
    x = tgrad.tensor(np.arange(6.0).reshape(2, 3), dtype=tgrad.float32)
    assert tgrad.jit.script(model) is model and tgrad.jit.trace(model, (x,)) is model
    w1, b1 = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    w2, b2 = model[2].weight.detach().numpy(), model[2].bias.detach().numpy()
    want = np.tanh(x.numpy() @ w1.T + b1) @ w2.T + b2
    np.testing.assert_allclose(tgrad.jit.trace(model, x)(x).detach().numpy(), want, rtol=1e-6)

    @tgrad.jit.script
    def branchy(t):  # data-dependent control flow keeps working (no frozen trace)
        return t * 2 if bool(t.sum() > 0) else -t

    assert branchy(tgrad.tensor([1.0])).item() == 2.0
    assert branchy(tgrad.tensor([-1.0])).item() == 1.0
    assert not tgrad.jit.is_scripting() and not tgrad.jit.is_tracing()
    with pytest.raises(TypeError, match="expected a function or a Module"):
        tgrad.jit.trace(3)


def test_jit_decorators_leave_functions_unchanged():
    def f(t):
        return t + 1

    for deco in (tgrad.jit.ignore, tgrad.jit.ignore(drop=True), tgrad.jit.unused,
                 tgrad.jit.export, tgrad.jit.script_method, tgrad.jit.script_if_tracing,
                 tgrad.jit.interface):
        assert deco(f) is f
    assert tgrad.jit.annotate(list, [1]) == [1]
    assert tgrad.jit.wait(tgrad.jit.fork(f, tgrad.tensor(1.0))).item() == 2.0
    with pytest.raises(NotImplementedError, match="state_dict"):
        tgrad.jit.save(_mlp(), "m.pt")
    with pytest.raises(NotImplementedError, match="TorchScript"):
        tgrad.jit.load("m.pt")


def test_compiler_guards():
    c = tgrad.compiler
    assert not c.is_compiling() and not c.is_dynamo_compiling() and not c.is_exporting()

    def f(t):
        return t * 3

    assert c.disable(f) is f and c.disable(recursive=False)(f) is f
    assert c.allow_in_graph(f) is f and c.assume_constant_result(f) is f
    assert c.compile(f) is f and c.list_backends() == [] and c.reset() is None


def test_distributed_is_unavailable_with_pytorchs_answers():
    d = tgrad.distributed
    assert d.is_available() is False and d.is_initialized() is False
    assert d.is_torchelastic_launched() is False
    for call in (d.get_rank, d.get_world_size, d.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()
    with pytest.raises(RuntimeError, match="no distributed backend"):
        d.init_process_group("gloo")


def test_data_parallel_without_cuda_calls_the_module_and_keeps_pytorchs_keys():
    model = _mlp()
    dp = nn.DataParallel(model)
    assert dp.device_ids == [] and dp.module is model
    assert list(dp.state_dict()) == ["module." + k for k in model.state_dict()]
    x = tgrad.tensor(np.arange(6.0).reshape(2, 3), dtype=tgrad.float32)
    np.testing.assert_array_equal(dp(x).detach().numpy(), model(x).detach().numpy())
    fresh = nn.DataParallel(_mlp())
    fresh.load_state_dict(dp.state_dict())  # a DataParallel checkpoint loads into it
    assert nn.parallel.DataParallel is nn.DataParallel
    with pytest.raises(RuntimeError, match="needs an initialized process group"):
        nn.parallel.DistributedDataParallel(model)


def test_sync_batch_norm_is_batch_norm_in_one_process():
    # against NumPy float64 batch statistics (biased variance to normalise, unbiased for the
    # running variance), and equal to BatchNorm2d's; convert_sync_batchnorm keeps the
    # Parameters, buffers and mode of the layers it replaces
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((4, 3, 2, 2))
    sync = nn.SyncBatchNorm(3, momentum=0.5).double()
    y = sync(tgrad.tensor(xn))
    mean, var = xn.mean(axis=(0, 2, 3)), xn.var(axis=(0, 2, 3))
    want = (xn - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sync.running_mean.numpy(), 0.5 * mean, rtol=1e-12)
    np.testing.assert_allclose(sync.running_var.numpy(), 0.5 + 0.5 * var * 16 / 15, rtol=1e-12)
    assert int(sync.num_batches_tracked) == 1
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        sync(tgrad.ones(3, dtype=tgrad.float64))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(tgrad.ones(2, 0))
    net = nn.Sequential(nn.Conv2d(1, 3, 1), nn.Sequential(nn.BatchNorm2d(3)))
    net[1][0].eval()
    weight = net[1][0].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    layer = converted[1][0]
    assert type(layer) is nn.SyncBatchNorm and layer.weight is weight and not layer.training
    assert list(converted.state_dict()) == list(net.state_dict())
