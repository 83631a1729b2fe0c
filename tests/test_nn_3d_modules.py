"""BatchNorm3d, InstanceNorm3d, F.lp_pool3d / LPPool3d and the Fold / Unfold modules
against NumPy float64: normalised values, running statistics, pooled powers, im2col
round trips; gradcheck of lp_pool3d."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck

F64 = tgrad.float64
RNG = np.random.default_rng(31)


def test_batch_norm_3d_training_and_eval():
    x = RNG.standard_normal((2, 3, 2, 3, 2))
    bn = nn.BatchNorm3d(3, dtype=F64)
    with tgrad.no_grad():
        bn.weight.copy_(tgrad.tensor([1.0, 2.0, 0.5], dtype=F64))
        bn.bias.copy_(tgrad.tensor([0.0, -1.0, 1.0], dtype=F64))
    y = bn(tgrad.tensor(x)).detach().numpy()
    axes = (0, 2, 3, 4)
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    w, b = np.array([1.0, 2.0, 0.5])[:, None, None, None], np.array([0.0, -1.0, 1.0])[
        :, None, None, None]
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-5) * w + b, rtol=1e-12)
    n = x.size / 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean.reshape(-1), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(),
                               0.9 + 0.1 * var.reshape(-1) * n / (n - 1), rtol=1e-12)
    bn.eval()
    rm, rv = bn.running_mean.numpy()[:, None, None, None], bn.running_var.numpy()[
        :, None, None, None]
    np.testing.assert_allclose(bn(tgrad.tensor(x)).detach().numpy(),
                               (x - rm) / np.sqrt(rv + 1e-5) * w + b, rtol=1e-12)
    with pytest.raises(ValueError, match="expected 5D input \\(got 4D input\\)"):
        bn(tgrad.zeros(2, 3, 2, 2, dtype=F64))


def test_instance_norm_3d_batched_and_unbatched():
    x = RNG.standard_normal((2, 3, 2, 2, 3))
    m = nn.InstanceNorm3d(3, dtype=F64)
    axes = (2, 3, 4)
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(m(tgrad.tensor(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(m(tgrad.tensor(x[0])).numpy(), want[0], rtol=1e-12)
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        m(tgrad.zeros(3, 2, 2, dtype=F64))


def test_lp_pool_3d():
    x = RNG.uniform(0.1, 2.0, (1, 2, 4, 4, 2))
    p = 3.0
    got = F.lp_pool3d(tgrad.tensor(x), p, 2).numpy()
    blocks = x.reshape(1, 2, 2, 2, 2, 2, 1, 2).transpose(0, 1, 2, 4, 6, 3, 5, 7)
    want = ((blocks ** p).reshape(1, 2, 2, 2, 1, 8).sum(-1)) ** (1 / p)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(nn.LPPool3d(p, 2)(tgrad.tensor(x)).numpy(), want, rtol=1e-12)
    small = tgrad.tensor(RNG.uniform(0.5, 1.5, (1, 1, 2, 2, 2)), requires_grad=True)
    assert gradcheck(lambda t: F.lp_pool3d(t, 2.0, 2), (small,))


def test_fold_unfold_modules():
    x = RNG.standard_normal((2, 3, 4, 6))
    unfold = nn.Unfold(kernel_size=2, stride=2)
    cols = unfold(tgrad.tensor(x))
    assert cols.shape == (2, 12, 6)
    # non-overlapping blocks: column l holds block l's pixels, channel-major
    blocks = x.reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 12, 6)
    np.testing.assert_array_equal(cols.numpy(), blocks)
    back = nn.Fold(output_size=(4, 6), kernel_size=2, stride=2)(cols)
    np.testing.assert_array_equal(back.numpy(), x)  # each pixel in exactly one block
    assert "output_size=(4, 6)" in repr(nn.Fold((4, 6), 2))
