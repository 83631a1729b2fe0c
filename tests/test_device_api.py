"""Device parsing: a cuda index past the machine's devices is refused where a tensor would
be made on it (PyTorch's "invalid device ordinal"), not at ``tgrad.device(...)``."""

from __future__ import annotations

import pytest

import tgrad
from tgrad import cuda


@pytest.fixture
def one_cuda_device(monkeypatch):
    # the device count as on a one-GPU machine (or the interpreter's emulated cuda:0); the
    # tensors are then made on the CPU by the tests, so no GPU is needed
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "device_count", lambda: 1)


def test_an_index_past_the_devices_is_refused(one_cuda_device):
    from tgrad.device import as_device
    assert tgrad.device("cuda:7").index == 7  # (a device object alone is fine)
    for dev in ("cuda:5", tgrad.device("cuda", 1), 2):
        with pytest.raises(RuntimeError, match="CUDA error: invalid device ordinal"):
            as_device(dev)
    assert as_device("cuda:0") is tgrad.device("cuda:0")
    assert as_device("cpu") is tgrad.device("cpu")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        tgrad.zeros(2).to("cuda:3")
    # set_default_device takes it (PyTorch's: the first tensor made on it checks)
    tgrad.set_default_device("cuda:3")
    try:
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            tgrad.zeros(1)
    finally:
        tgrad.set_default_device("cpu")
    assert tgrad.zeros(1).device.type == "cpu"


def test_tensor_cuda_and_cpu_take_pytorchs_arguments(monkeypatch, one_cuda_device):
    # Tensor.cuda(device=None, non_blocking=False, memory_format=...) and
    # Tensor.cpu(memory_format=...): an int device is cuda:<int>; the move is Tensor.to's
    seen = []
    monkeypatch.setattr(tgrad.Tensor, "to", lambda self, *a, **k: seen.append((a, k)) or self)
    x = tgrad.ones(2)
    x.cuda(non_blocking=True)
    x.cuda(0, True)
    x.cuda("cuda:0", memory_format=tgrad.preserve_format)
    x.cpu(memory_format=tgrad.preserve_format)
    x.cpu()
    assert seen == [(("cuda",), {"non_blocking": True}),
                    (("cuda:0",), {"non_blocking": True}),
                    (("cuda:0",), {"non_blocking": False, "memory_format": tgrad.preserve_format}),
                    (("cpu",), {"memory_format": tgrad.preserve_format}),
                    (("cpu",), {})]
    monkeypatch.undo()
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "device_count", lambda: 1)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        x.cuda(5)
