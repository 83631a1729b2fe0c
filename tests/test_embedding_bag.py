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
    # PyTorch's CPU RuntimeError, naming the first bad entry of the flat input
    with pytest.raises(RuntimeError, match=r"Index 2 of input takes value 5 which is not in "
                                           r"the valid range \[0, 5\)"):
        F.embedding_bag(tgrad.tensor([[1, 0, 5, -1]]), w)
    with pytest.raises(RuntimeError, match="Index 1 of input takes value -1"):
        F.embedding_bag(tgrad.tensor([0, -1]), w, tgrad.tensor([0]))
    with pytest.raises(RuntimeError, match="expected an integer index tensor"):
        F.embedding_bag(tgrad.tensor([[1.0]]), w)
    # decreasing offsets would give bags overlapping others: an error in every mode
    for mode in ("sum", "mean", "max"):
        with pytest.raises(RuntimeError, match=r"offsets must not decrease .* offsets\[2\] = 1 "
                                               r"< offsets\[1\] = 3"):
            F.embedding_bag(tgrad.tensor([1, 2, 3, 4]), w, tgrad.tensor([0, 3, 1]), mode=mode)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_include_last_offset_ends_the_last_bag_there(mode):
    # bag b holds input[offsets[b]:offsets[b + 1]]; entries past offsets[-1] are in no bag
    # (PyTorch's 'sum'; its 'mean' divides by the count to the end and its 'max' reads to
    # the end). The per-sample weights and gradients follow the same entries.
    wn = np.arange(10.0).reshape(5, 2)
    w = tgrad.tensor(wn, requires_grad=True)
    idx = [1, 2, 3, 4]
    reduce = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    for offs, bags in (([0, 1, 2], [[1], [2]]), ([0, 2, 3], [[1, 2], [3]]),
                       ([0, 2, 4], [[1, 2], [3, 4]])):
        y = F.embedding_bag(tgrad.tensor(idx), w, tgrad.tensor(offs), mode=mode,
                            include_last_offset=True)
        np.testing.assert_array_equal(y.detach().numpy(),
                                      [reduce(wn[b], axis=0) for b in bags])
        w.grad = None
        y.sum().backward()
        used = np.zeros(5)
        for b in bags:
            for i in (b if mode != "max" else [b[-1]]):  # (max: the larger row, the last)
                used[i] += 1.0 / len(b) if mode == "mean" else 1.0
        np.testing.assert_allclose(w.grad.numpy(), np.repeat(used[:, None], 2, 1))
    psw = tgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=tgrad.float64)
    y = F.embedding_bag(tgrad.tensor(idx), w, tgrad.tensor([0, 1, 3]), mode="sum",
                        per_sample_weights=psw, include_last_offset=True)
    np.testing.assert_array_equal(y.detach().numpy(), [wn[1], 2 * wn[2] + 3 * wn[3]])
    # no bag at all
    y = F.embedding_bag(tgrad.tensor(idx), w, tgrad.tensor([0]), mode=mode,
                        include_last_offset=True)
    assert y.shape == (0, 2)


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


# ------------------------------------------------------------------ torch.embedding_bag
IDX = [1, 2, 4, 5, 4, 3, 2, 9, 0]
OFFS = [0, 0, 4, 6]  # bags: [], [1, 2, 4, 5], [4, 3], [2, 9, 0]


def _np_bags(idx, offs, pad=None):
    """Hand reference: each bag's kept indices (padding left out)."""
    ends = offs[1:] + [len(idx)]
    return [[i for i in idx[s:e] if i != pad] for s, e in zip(offs, ends)]


@pytest.mark.parametrize("pad", [None, 2, -8])
def test_torch_embedding_bag_internal_tuple(pad):
    w = RNG.standard_normal((10, 3))
    w[4, 1] = w[5, 1]  # a tie in bag 1: the first maximal entry (row 5 comes after 4) wins
    keep_pad = None if pad is None else pad % 10
    bags = _np_bags(IDX, OFFS, keep_pad)
    o2b = [1, 1, 1, 1, 2, 2, 3, 3, 3]
    sizes = [len(b) for b in bags]
    for mode, red in ((0, np.sum), (1, np.mean), (2, np.max)):
        out, offset2bag, bag_size, max_indices = tgrad.embedding_bag(
            tgrad.tensor(w), tgrad.tensor(IDX), tgrad.tensor(OFFS), False, mode, False, None,
            False, pad)
        want = np.stack([red(w[b], 0) if b else np.zeros(3) for b in bags])
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
        assert offset2bag.dtype is tgrad.int64 and offset2bag.tolist() == o2b  # float64: slow path
        if mode == 0:
            assert bag_size.tolist() == [0] * 4 and max_indices.tolist() == [0] * 4
        else:
            assert bag_size.tolist() == sizes
        if mode == 1:
            assert max_indices.tolist() == sizes
        if mode == 2:
            rows = [[b[int(np.argmax(w[b, c]))] if b else 0 for c in range(3)] for b in bags]
            assert max_indices.tolist() == rows


def test_torch_embedding_bag_fast_path_last_offset_int32_and_weights():
    w = RNG.standard_normal((10, 3))
    idx, offs = tgrad.tensor(IDX), tgrad.tensor(OFFS + [9])
    # float32 sum without padding_idx: PyTorch's fast path leaves offset2bag empty
    out, o2b, size, mi = tgrad.embedding_bag(tgrad.tensor(w, dtype=tgrad.float32), idx, offs,
                                             False, 0, False, None, True)
    want = np.stack([w[b].sum(0) if b else np.zeros(3) for b in _np_bags(IDX, OFFS)])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert o2b.shape == (0,) and size.tolist() == [0] * 5 and mi.tolist() == [0] * 5
    # include_last_offset: B = 4 bags; int32 indices and offsets give int32 results
    out, o2b, size, mi = tgrad.embedding_bag(tgrad.tensor(w), idx.to(tgrad.int32),
                                             offs.to(tgrad.int32), False, 1, False, None, True)
    assert out.shape == (4, 3) and o2b.dtype is size.dtype is mi.dtype is tgrad.int32
    assert size.tolist() == [0, 4, 2, 3] and mi.tolist() == [0, 4, 2, 3]
    assert tgrad.embedding_bag(tgrad.tensor(w), idx.to(tgrad.int32), offs, False, 1)[1].dtype \
        is tgrad.int64
    # per_sample_weights scale each row of the sum; gradients reach weight and the scales
    wt = tgrad.tensor(w, requires_grad=True)
    psw = tgrad.tensor(RNG.random(9), requires_grad=True)
    out = tgrad.embedding_bag(wt, idx, tgrad.tensor(OFFS), False, 0, False, psw)[0]
    scaled = w[IDX] * psw.detach().numpy()[:, None]
    want = np.stack([np.zeros(3), scaled[0:4].sum(0), scaled[4:6].sum(0), scaled[6:].sum(0)])
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)
    assert tgrad.autograd.gradcheck(
        lambda a, s: tgrad.embedding_bag(a, idx, tgrad.tensor(OFFS), False, 0, False, s)[0],
        (wt, psw))
    assert tgrad.autograd.gradcheck(
        lambda a: tgrad.embedding_bag(a, idx, tgrad.tensor(OFFS), False, 1, False, None,
                                      False, 2)[0], (wt,))


def test_torch_embedding_bag_errors():
    w, idx, offs = tgrad.randn(10, 3), tgrad.tensor(IDX), tgrad.tensor(OFFS)
    with pytest.raises(TypeError, match="'offsets' \\(position 3\\) must be Tensor"):
        tgrad.embedding_bag(w, idx, None)
    with pytest.raises(TypeError, match="'mode' \\(position 5\\) must be int"):
        tgrad.embedding_bag(w, idx, offs, False, "sum")
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max."):
        tgrad.embedding_bag(w, idx, offs, False, 3)
    with pytest.raises(RuntimeError, match="padding_idx must be within the number of "
                                           "embeddings, -10 through 9, but got 10"):
        tgrad.embedding_bag(w, idx, offs, False, 0, False, None, False, 10)
    with pytest.raises(RuntimeError, match="per_sample_weights only supported with "
                                           "mode='sum'"):
        tgrad.embedding_bag(w, idx, offs, False, 1, False, tgrad.ones(9))
    with pytest.raises(RuntimeError, match="per_sample_weights has 8 elements"):
        tgrad.embedding_bag(w, idx, offs, False, 0, False, tgrad.ones(8))
    with pytest.raises(RuntimeError, match="same type"):
        tgrad.embedding_bag(w, idx, offs, False, 0, False, tgrad.ones(9, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar "
                                           "types: Long, Int"):
        tgrad.embedding_bag(w, idx.float(), offs)
    with pytest.raises(RuntimeError, match="indices must be 1-D"):
        tgrad.embedding_bag(w, idx.reshape(3, 3), offs)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        tgrad.embedding_bag(w, idx, tgrad.tensor([1, 3]))


def test_torch_embedding_bag_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad
w = np.random.default_rng(3).standard_normal((10, 3))
out = {}
for dev in ("cpu", "cuda"):
    got = []
    for mode in (0, 1, 2):
        r = tgrad.embedding_bag(tgrad.tensor(w, device=dev), tgrad.tensor(%r, device=dev),
                                tgrad.tensor(%r, device=dev), False, mode, False, None,
                                False, 2)
        got.append([t.cpu().numpy().tolist() for t in r])
    out[dev] = got
print(json.dumps(out))
""" % (IDX, OFFS))
    for got, want in zip(res["cuda"], res["cpu"]):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert got[1:] == want[1:]
