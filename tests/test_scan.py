"""cumsum beyond the op table (tests/op_db.py checks values and gradients): dtypes, the
reverse-scan backward, in-place form and errors, as PyTorch documents them."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad


def test_cumsum_dtypes():
    assert tgrad.tensor([1, 2, 3], dtype=tgrad.int32).cumsum(0).dtype is tgrad.int64
    b = tgrad.tensor([True, False, True]).cumsum(0)
    assert b.dtype is tgrad.int64 and b.tolist() == [1, 1, 2]
    x = tgrad.tensor([1.5, 2.5])
    y = x.cumsum(0, dtype=tgrad.float64)  # casts the input first
    assert y.dtype is tgrad.float64 and y.tolist() == [1.5, 4.0]
    h = tgrad.full((4096,), 1.0, dtype=tgrad.float16).cumsum(0)
    assert h.tolist()[-1] == 4096.0  # float32 accumulation (float16 alone stalls at 2048)


def test_cumsum_backward_is_the_reverse_cumsum():
    x = tgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tgrad.float64,
                     requires_grad=True)
    g = tgrad.tensor([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]], dtype=tgrad.float64)
    x.cumsum(1).backward(g)
    assert x.grad.tolist() == [[111.0, 110.0, 100.0], [222.0, 220.0, 200.0]]
    assert x.cumsum(1).grad_fn.name() == "CumsumBackward0"
    z = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    (gz,) = tgrad.autograd.grad(z.cumsum(0).pow(2).sum(), z, create_graph=True)
    # d/dz_j sum_k (S_k)^2 = 2 sum_{k >= j} S_k with S = [1, 3, 6]
    assert gz.tolist() == [20.0, 18.0, 12.0]
    (ggz,) = tgrad.autograd.grad(gz.sum(), z)
    # d/dz_i of 2 sum_j sum_{k >= j} S_k = 2 sum_j sum_{k >= max(i, j)} 1
    assert ggz.tolist() == [12.0, 10.0, 6.0]


def test_cumsum_inplace_and_errors():
    a = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    assert b.cumsum_(0) is b and b.tolist() == [1.0, 3.0, 6.0]
    b.sum().backward()
    assert a.grad.tolist() == [3.0, 2.0, 1.0]
    with pytest.raises(IndexError, match=r"cumsum: Dimension out of range \(expected to be in "
                                         r"range of \[-1, 0\], but got 1\)"):
        tgrad.ones(3).cumsum(1)
    with pytest.raises(TypeError,
                       match=r"cumsum\(\): argument 'input' \(position 1\) must be Tensor"):
        tgrad.cumsum(np.ones(3), 0)
