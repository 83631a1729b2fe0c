"""PyTorch's legacy tensor types and constructor: tgrad.FloatTensor(...) and friends,
tgrad.Tensor(sizes | data | tensor), isinstance checks by dtype and device, x.type(T) and
set_default_tensor_type (PyTorch 2.13's behaviour, measured)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tgrad

TYPES = {"BoolTensor": tgrad.bool, "ByteTensor": tgrad.uint8, "CharTensor": tgrad.int8,
         "ShortTensor": tgrad.int16, "IntTensor": tgrad.int32, "LongTensor": tgrad.int64,
         "HalfTensor": tgrad.float16, "BFloat16Tensor": tgrad.bfloat16,
         "FloatTensor": tgrad.float32, "DoubleTensor": tgrad.float64}


@pytest.mark.parametrize("name", sorted(TYPES))
def test_each_type_constructs_its_dtype(name):
    cls, dt = getattr(tgrad, name), TYPES[name]
    assert repr(cls) == f"<class 'tgrad.{name}'>" and cls.dtype is dt and not cls.is_cuda
    assert cls().shape == (0,) and cls().dtype is dt
    assert cls(2, 3).shape == (2, 3) and cls(tgrad.Size([4])).shape == (4,)
    data = cls([1, 0, 1])
    assert data.dtype is dt and data.device.type == "cpu"
    np.testing.assert_array_equal(data.numpy(), np.array([1, 0, 1]).astype(dt.np))
    assert isinstance(data, cls) and not issubclass(cls, tgrad.Tensor)
    others = [n for n in TYPES if n != name]
    assert not any(isinstance(data, getattr(tgrad, n)) for n in others)
    assert not isinstance(data, getattr(tgrad.cuda, name))
    assert data.type() == f"tgrad.{name}"


def test_constructor_rules():
    np.testing.assert_array_equal(tgrad.LongTensor([1.7, -1.7]).numpy(), [1, -1])  # truncated
    np.testing.assert_array_equal(tgrad.FloatTensor(np.array([1, 2])).numpy(), [1.0, 2.0])
    t = tgrad.ones(2)
    alias = tgrad.FloatTensor(t)  # an alias of a tensor of the type's dtype
    alias[0] = 5.0
    assert t[0].item() == 5.0 and alias is not t
    with pytest.raises(TypeError, match="expected a tensor of dtype tgrad.int64"):
        tgrad.LongTensor(t)
    with pytest.raises(TypeError, match=r"FloatTensor\(\): data must be a sequence \(got float\)"):
        tgrad.FloatTensor(2.5)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        tgrad.FloatTensor(-1)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        tgrad.FloatTensor(2, dtype=tgrad.float64)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but "
                                           "device type: cuda was passed"):
        tgrad.FloatTensor(2, device="cuda")
    assert tgrad.FloatTensor(2, device="cpu").shape == (2,)


def test_tensor_called_as_the_legacy_constructor_uses_the_default_dtype():
    assert tgrad.Tensor(2, 3).shape == (2, 3) and tgrad.Tensor(2, 3).dtype is tgrad.float32
    assert tgrad.Tensor(2, 3, 4, 5, 6).shape == (2, 3, 4, 5, 6)
    assert tgrad.Tensor().shape == (0,) and tgrad.Tensor(tgrad.Size([3, 1])).shape == (3, 1)
    assert tgrad.Tensor(2, device="cpu").shape == (2,)
    np.testing.assert_array_equal(tgrad.Tensor([1, 2]).numpy(), np.float32([1, 2]))
    ints = tgrad.tensor([1, 2])
    same = tgrad.Tensor(ints)  # any dtype: an alias (PyTorch's torch.Tensor(t))
    assert same.dtype is tgrad.int64 and same._storage is ints._storage
    with pytest.raises(TypeError, match="data must be a sequence"):
        tgrad.Tensor(2.0)
    tgrad.set_default_dtype(tgrad.float64)
    try:
        assert tgrad.Tensor([1]).dtype is tgrad.float64
        assert tgrad.FloatTensor([1]).dtype is tgrad.float32
    finally:
        tgrad.set_default_dtype(tgrad.float32)


def test_type_casts_to_a_tensor_type_and_set_default_tensor_type():
    x = tgrad.tensor([1.5, 2.5])
    assert x.type(tgrad.FloatTensor) is x
    y = x.type(tgrad.LongTensor)
    assert y.dtype is tgrad.int64 and y.tolist() == [1, 2]
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            tgrad.set_default_tensor_type(tgrad.DoubleTensor)
        assert tgrad.get_default_dtype() is tgrad.float64 and tgrad.Tensor(1).dtype is tgrad.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tgrad.set_default_tensor_type("torch.FloatTensor")
            assert tgrad.get_default_dtype() is tgrad.float32
            with pytest.raises(TypeError, match="only floating-point types"):
                tgrad.set_default_tensor_type(tgrad.LongTensor)
            with pytest.raises(TypeError, match="invalid type"):
                tgrad.set_default_tensor_type("torch.Nonsense")
    finally:
        tgrad.set_default_dtype(tgrad.float32)
        tgrad.set_default_device("cpu")
