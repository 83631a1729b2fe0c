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
