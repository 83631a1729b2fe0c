"""tgrad.jit / tgrad.compiler / tgrad.distributed: PyTorch's guard and decorator names, for
a framework without TorchScript, a compiler or collectives. Code written for PyTorch runs
unchanged and eagerly: the values are the eager ones (checked against NumPy)."""

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
