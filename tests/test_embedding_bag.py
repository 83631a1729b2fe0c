"""embedding_bag / nn.EmbeddingBag beyond the op table (tests/op_db_nn.py checks the three
modes' values and gradients, offsets, 2-D input, padding, per_sample_weights, on the CPU and
the interpreted cuda device): the result equals embedding followed by the reduction, the
module, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

RNG = np.random.default_rng(4)


def test_matches_embedding_then_reduce_with_gradients():
    w = tgrad.tensor(RNG.standard_normal((10, 3)), requires_grad=True)
    idx = tgrad.tensor(RNG.integers(0, 10, (4, 5)))
    for mode, red in (("sum", lambda e: e.sum(1)), ("mean", lambda e: e.mean(1)),
                      ("max", lambda e: e.amax(1))):
        g = tgrad.tensor(RNG.standard_normal((4, 3)))
        out = F.embedding_bag(idx, w, mode=mode)
        (gw,) = tgrad.autograd.grad((out * g).sum(), w)
        want = red(F.embedding(idx, w))
        (gw_want,) = tgrad.autograd.grad((want * g).sum(), w)
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(gw.numpy(), gw_want.numpy(), rtol=1e-12, atol=1e-14)


def test_module_offsets_and_from_pretrained():
    bag = tgrad.nn.EmbeddingBag(10, 3, mode="sum")
    inp = tgrad.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    out = bag(inp, tgrad.tensor([0, 4]))
    w = bag.weight.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(),
                               [w[[1, 2, 4, 5]].sum(0), w[[4, 3, 2, 9]].sum(0)], rtol=1e-6)
    out.sum().backward()
    counts = np.bincount([1, 2, 4, 5, 4, 3, 2, 9], minlength=10)
    np.testing.assert_array_equal(bag.weight.grad.numpy(), np.repeat(counts[:, None], 3, 1))
    pre = tgrad.nn.EmbeddingBag.from_pretrained(tgrad.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                                mode="max", padding_idx=0)
    assert not pre.weight.requires_grad
    assert pre(tgrad.tensor([[0, 1], [0, 0]])).tolist() == [[3.0, 4.0], [0.0, 0.0]]
    assert repr(bag) == "EmbeddingBag(10, 3, mode='sum')"


def test_errors():
    w = tgrad.randn(5, 2)
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(tgrad.tensor([[1, 2]]), w, tgrad.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(tgrad.tensor([1, 2]), w)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(tgrad.tensor([1, 2]), w, tgrad.tensor([1]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(tgrad.tensor([[1]]), w, mode="prod")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for "
                                                  "mode='sum'"):
        F.embedding_bag(tgrad.tensor([[1]]), w, per_sample_weights=tgrad.ones(1, 1))
    with pytest.raises(IndexError, match="index 5 out of range"):
        F.embedding_bag(tgrad.tensor([[5]]), w)
    with pytest.raises(RuntimeError, match="expected an integer index tensor"):
        F.embedding_bag(tgrad.tensor([[1.0]]), w)


@pytest.mark.parametrize("p", [2.0, 1.0])
def test_max_norm_renormalises_the_referenced_rows_in_place(p):
    # PyTorch: embedding_renorm_ on the bags' indices first (each referenced row whose
    # p-norm exceeds max_norm scaled by max_norm / (norm + 1e-7), under no_grad), then the
    # bags of the renormalised rows; unreferenced rows are left alone.
    w0 = RNG.standard_normal((6, 3)) * 3
    w = tgrad.tensor(w0.copy(), requires_grad=True)
    inp, offsets = [0, 2, 2, 4, 5], [0, 2]
    out = F.embedding_bag(tgrad.tensor(inp), w, tgrad.tensor(offsets), max_norm=1.0,
                          norm_type=p, mode="sum")
    want = w0.copy()
    for i in sorted(set(inp)):
        norm = np.linalg.norm(want[i], ord=p)
        if norm > 1.0:
            want[i] *= 1.0 / (norm + 1e-7)
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(w.detach().numpy()[[1, 3]], w0[[1, 3]], rtol=0)
    np.testing.assert_allclose(out.detach().numpy(),
                               [want[[0, 2]].sum(0), want[[2, 4, 5]].sum(0)], rtol=1e-12)
    out.sum().backward()  # the renorm is not recorded: dw is the bags' counts
    np.testing.assert_array_equal(w.grad.numpy(), np.repeat(
        np.bincount(inp, minlength=6)[:, None], 3, 1))


def test_module_max_norm():
    w0 = np.array([[3.0, 4.0], [0.3, 0.4]])
    bag = tgrad.nn.EmbeddingBag(2, 2, max_norm=1.0, mode="mean",
                                _weight=tgrad.tensor(w0.copy()))
    assert repr(bag) == "EmbeddingBag(2, 2, max_norm=1.0, mode='mean')"
    out = bag(tgrad.tensor([[0, 1]]))
    row0 = w0[0] / (5.0 + 1e-7)
    np.testing.assert_allclose(out.detach().numpy(), [(row0 + w0[1]) / 2], rtol=1e-6)
    np.testing.assert_allclose(bag.weight.detach().numpy(), [row0, w0[1]], rtol=1e-6)
    pre = tgrad.nn.EmbeddingBag.from_pretrained(tgrad.tensor(w0.copy()), max_norm=2.0,
                                                norm_type=1.0)
    assert pre.max_norm == 2.0 and pre.norm_type == 1.0
    assert repr(pre) == "EmbeddingBag(2, 2, max_norm=2.0, norm_type=1.0, mode='mean')"
    pre(tgrad.tensor([[0]]))
    np.testing.assert_allclose(pre.weight.numpy()[0], w0[0] * 2.0 / (7.0 + 1e-7), rtol=1e-6)
