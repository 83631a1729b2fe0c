"""slice_scatter / select_scatter / diagonal_scatter / masked_scatter beyond the op table
(tests/op_db.py checks values, gradients and the interpreted cuda device): PyTorch's
documented examples, the in-place masked_scatter_ and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad


def test_pytorch_documented_examples():
    a = tgrad.zeros(8, 8)
    b = tgrad.ones(2, 8)
    out = a.slice_scatter(b, start=6)
    assert out[6:].tolist() == [[1.0] * 8] * 2 and not out[:6].any().item()
    out = a.slice_scatter(tgrad.ones(8, 2), dim=1, start=2, end=6, step=2)
    assert out[0].tolist() == [0, 0, 1, 0, 1, 0, 0, 0]
    assert tgrad.select_scatter(tgrad.zeros(2, 2), tgrad.ones(2), 0, 0).tolist() == \
        [[1.0, 1.0], [0.0, 0.0]]
    assert tgrad.diagonal_scatter(tgrad.zeros(3, 3), tgrad.ones(2), 1).tolist() == \
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    x = tgrad.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    mask = tgrad.tensor([[False, False, True, False, True], [True, True, False, True, True]])
    source = tgrad.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    assert x.masked_scatter(mask, source).tolist() == [[0, 0, 0, 0, 1], [2, 3, 0, 4, 5]]


def test_masked_scatter_inplace_gradients():
    x = tgrad.zeros(2, 3, requires_grad=True)
    src = tgrad.tensor(np.arange(1.0, 7.0, dtype=np.float32), requires_grad=True)
    y = x * 1
    y.masked_scatter_(tgrad.tensor([True, False, True]), src)
    assert y.tolist() == [[1.0, 0.0, 2.0], [3.0, 0.0, 4.0]]
    y.backward(tgrad.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)))
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 4.0, 0.0]]
    assert src.grad.tolist() == [0.0, 2.0, 3.0, 5.0, 0.0, 0.0]  # the unused tail gets 0


def test_errors():
    x = tgrad.zeros(4, 3)
    with pytest.raises(RuntimeError, match=r"slice_scatter\(\): expected src to have a size "
                                           r"equal to the slice of self\. src size = \[2, 3\], "
                                           r"slice size = \[4, 2\]"):
        x.slice_scatter(tgrad.ones(2, 3), dim=1, start=1)
    with pytest.raises(RuntimeError, match="expected src to have the same dtype"):
        x.select_scatter(tgrad.ones(3, dtype=tgrad.float64), 0, 0)
    with pytest.raises(IndexError, match=r"select_scatter\(\): index 4 out of range"):
        x.select_scatter(tgrad.ones(3), 0, 4)
    with pytest.raises(RuntimeError, match=r"diagonal_scatter\(\): expected src to have a "
                                           r"size equal to the slice of self"):
        x.diagonal_scatter(tgrad.ones(4))
    with pytest.raises(RuntimeError, match="masked_scatter only supports boolean masks"):
        x.masked_scatter(tgrad.ones(3), tgrad.ones(12))
    with pytest.raises(RuntimeError, match="expected source to have at least 3 elements"):
        tgrad.zeros(3).masked_scatter(tgrad.tensor([True] * 3), tgrad.ones(2))
