"""The sorting ops beyond the op table (tests/op_db.py checks values, indices and gradients
against NumPy float64 on cpu and, in the interpreter, on cuda): PyTorch's errors, where the
gradient goes at ties, stability, and (marked ``gpu``) long lines and more than 2^31
elements on a real GPU."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad

OPS = {  # op -> a call with dim as its only varying argument
    "sort": lambda x, d: tgrad.sort(x, d),
    "argsort": lambda x, d: tgrad.argsort(x, d),
    "topk": lambda x, d: tgrad.topk(x, 1, d),
    "kthvalue": lambda x, d: tgrad.kthvalue(x, 1, d),
    "median": lambda x, d: tgrad.median(x, d),
    "nanmedian": lambda x, d: tgrad.nanmedian(x, d),
}


@pytest.mark.parametrize("name", OPS)
def test_dim_out_of_range_names_the_op(name):
    with pytest.raises(IndexError, match=rf"^{name}: Dimension out of range \(expected to be "
                                         rf"in range of \[-2, 1\], but got 2\)"):
        OPS[name](tgrad.ones(2, 3), 2)
    with pytest.raises(IndexError, match=rf"^{name}: .*\[-1, 0\], but got 1\)"):
        OPS[name](tgrad.tensor(5.0), 1)  # a 0-d tensor takes dim 0 or -1
    pos = 3 if name in ("topk", "kthvalue") else 2  # after k
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'dim' \(position {pos}\) must "
                                        rf"be int, not float"):
        OPS[name](tgrad.ones(3), 1.0)


@pytest.mark.parametrize("name", OPS)
def test_zero_dim_input_is_one_element(name):
    for d in (0, -1):
        out = OPS[name](tgrad.tensor(5.0), d)
        vals, idx = (None, out) if name == "argsort" else out
        assert idx.shape == () and idx.dtype is tgrad.int64 and idx.item() == 0
        assert vals is None or (vals.shape == () and vals.item() == 5.0)


def test_k_out_of_range_follows_pytorch():
    x = tgrad.tensor([1.0, 3.0, 2.0, 3.0])
    for k in (-1, 5):
        with pytest.raises(RuntimeError, match=r"^selected index k out of range \(topk\(\)"):
            tgrad.topk(x, k)
        with pytest.raises(RuntimeError, match=r"^kthvalue\(\): selected number k out of "
                                               r"range for dimension 0"):
            tgrad.kthvalue(x, k)
    with pytest.raises(RuntimeError, match="^kthvalue.*for dimension 1"):
        tgrad.kthvalue(tgrad.ones(2, 3), 0, -1)
    with pytest.raises(RuntimeError, match="^selected index k out of range"):
        tgrad.topk(tgrad.ones(0), 1)
    with pytest.raises(TypeError, match=r"^topk\(\): argument 'k' \(position 2\) must be int, "
                                        r"not bool"):
        tgrad.topk(x, True)
    # 0-d: k = 0 and k = 1 both give the element (PyTorch), k = 2 is out of range
    assert tgrad.topk(tgrad.tensor(5.0), 0).values.item() == 5.0
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tgrad.topk(tgrad.tensor(5.0), 2)


def test_empty_reduction_dims():
    for name in ("kthvalue", "median", "nanmedian"):
        with pytest.raises(IndexError, match=rf"^{name}\(\): Expected reduction dim 0 to have "
                                             rf"non-zero size\."):
            OPS[name](tgrad.ones(0), 0)
        out = OPS[name](tgrad.ones(2, 0), 0)  # the other dim empty: an empty result
        assert out.values.shape == (0,) and out.indices.shape == (0,)
    assert np.isnan(tgrad.median(tgrad.ones(0)).item())       # all elements: NaN
    assert np.isnan(tgrad.nanmedian(tgrad.ones(0, 2)).item())
    with pytest.raises(RuntimeError, match=r"^median\(\): an empty int64 tensor has no median"):
        tgrad.median(tgrad.ones(0, dtype=tgrad.int64))
    assert tgrad.sort(tgrad.ones(0, 3), 0).values.shape == (0, 3)
    assert tgrad.topk(tgrad.ones(3, 0), 0).indices.shape == (3, 0)


def test_bool_and_argument_types():
    b = tgrad.tensor([True, False, True])
    assert tgrad.sort(b).values.tolist() == [False, True, True]
    assert tgrad.argsort(b, descending=True).tolist() == [0, 2, 1]
    # PyTorch: NotImplementedError naming its CPU kernel; topk its RuntimeError
    with pytest.raises(RuntimeError, match=r"^topk\(\): topk does not support bool dtypes"):
        tgrad.topk(b, 1)
    for name, kernel, call in (("kthvalue", "kthvalue_cpu", lambda: tgrad.kthvalue(b, 1)),
                               ("median", "median_cpu", lambda: tgrad.median(b)),
                               ("nanmedian", "median_out", lambda: tgrad.nanmedian(b, 0))):
        with pytest.raises(NotImplementedError, match=rf"^{name}\(\): \"{kernel}\" not "
                                                      rf"implemented for 'Bool'"):
            call()
    with pytest.raises(TypeError, match=r"^sort\(\): argument 'descending' must be bool, not "
                                        r"int"):
        tgrad.sort(tgrad.ones(3), descending=1)
    with pytest.raises(TypeError, match=r"^argsort\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not list"):
        tgrad.argsort([3, 1])
    assert tgrad.sort(tgrad.ones(3), stable=None).indices.tolist() == [0, 1, 2]
    with pytest.raises(TypeError):
        tgrad.sort(tgrad.ones(3), 0, False, True)  # stable is keyword-only, as in PyTorch


def test_order_nan_signed_zero_and_stability():
    """PyTorch 2.13's output for this input, stable or not, ascending and descending."""
    nan, inf = float("nan"), float("inf")
    x = tgrad.tensor([3.0, nan, -0.0, 0.0, inf, 1.0, nan, -inf, 1.0, -0.0])
    for stable in (False, True):
        up = tgrad.sort(x, stable=stable)
        assert up.indices.tolist() == [7, 2, 3, 9, 5, 8, 0, 4, 1, 6]
        down = tgrad.sort(x, descending=True, stable=stable)
        assert down.indices.tolist() == [1, 6, 4, 0, 5, 8, 2, 3, 9, 7]
    v = up.values.numpy()
    assert np.signbit(v[1:4]).tolist() == [True, False, True]  # the values keep their sign
    assert tgrad.Tensor.sort is not None and x.argsort().tolist() == up.indices.tolist()


def test_gradient_goes_to_the_returned_index_at_ties():
    x = tgrad.tensor([[1.0, 2.0, 2.0, 3.0, 2.0]], requires_grad=True)
    r = tgrad.kthvalue(x, 3, 1)            # the tied 2.0s sit at sorted positions 1, 2, 3
    assert r.indices.tolist() == [2]
    r.values.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 1.0, 0.0, 0.0]]
    x.grad = None
    m = tgrad.median(x, 1)
    assert m.indices.tolist() == [2]       # stable: the second 2.0 (PyTorch may pick any)
    s = tgrad.sort(x, 1, descending=True)
    assert s.indices.tolist() == [[3, 1, 2, 4, 0]]
    (gx,) = tgrad.autograd.grad(s.values, x, tgrad.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]))
    assert gx.tolist() == [[5.0, 2.0, 3.0, 1.0, 4.0]]  # gx[indices[j]] = g[j]


def test_full_median_shares_the_gradient_like_pytorch():
    """median() without dim: evenly among the elements equal to it (PyTorch's
    evenly_distribute_backward), among the NaNs when it is NaN; nanmedian likewise."""
    x = tgrad.tensor([1.0, 2.0, 2.0, 3.0, 2.0], requires_grad=True)
    y = tgrad.median(x)
    assert y.item() == 2.0 and y.grad_fn.name() == "MedianBackward0"
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 1 / 3, 1 / 3, 0, 1 / 3])
    z = tgrad.tensor([1.0, float("nan"), 2.0, float("nan")], requires_grad=True)
    tgrad.median(z).backward()
    assert z.grad.tolist() == [0.0, 0.5, 0.0, 0.5]
    z.grad = None
    tgrad.nanmedian(z).backward()
    assert z.grad.tolist() == [1.0, 0.0, 0.0, 0.0]
    (g,) = tgrad.autograd.grad(tgrad.median(x * x), x, create_graph=True)
    (gg,) = tgrad.autograd.grad(g.sum(), x)  # d/dx of 2x/3 at the ties
    np.testing.assert_allclose(gg.numpy(), [0, 2 / 3, 2 / 3, 0, 2 / 3])


def test_methods_and_return_type():
    x = tgrad.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    r = x.sort(1)
    # PyTorch's torch.return_types.sort: one named tuple type per op
    assert type(r) is tgrad.return_types.sort and r._fields == ("values", "indices")
    assert isinstance(r, tgrad.return_types.values_indices)
    assert x.topk(2).indices.tolist() == [[0, 2], [1, 2]]
    assert x.msort().tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 4.0]]
    assert x.kthvalue(2, 0, True).values.tolist() == [[3.0, 5.0, 4.0]]
    assert x.median().item() == 2.0 and x.nanmedian(1).values.tolist() == [2.0, 4.0]
    assert x.median(dim=1, keepdim=True).indices.tolist() == [[2], [2]]
    assert "argsort" in tgrad.ops.OPS and "median" in tgrad.ops.OPS


# ------------------------------------------------------------------------ real GPU only
def _real_gpu() -> bool:
    return tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()


needs_gpu = pytest.mark.skipif(not _real_gpu(), reason="needs a real CUDA GPU")


def _np_stable(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    rev = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return a.shape[axis] - 1 - np.flip(rev, axis)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(("dtype", "shape", "dim"), [
    ("float32", (1 << 20,), 0), ("int64", (1 << 20,), 0),   # 1M: ten merge passes
    ("bfloat16", (3, 300001), 1), ("float64", (70001, 3), 0)])  # lines strided in memory
def test_long_lines_on_gpu(dtype, shape, dim):
    """Long lines with ties and NaNs against NumPy's stable argsort, both directions, and
    the values (the gather) with them. One compiled tile variant per case: ~10 s each."""
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, shape).astype(np.float64)  # many ties
    if dtype != "int64":
        a.reshape(-1)[rng.integers(0, a.size, 50)] = np.nan
    t = tgrad.tensor(a, dtype=getattr(tgrad, dtype), device="cuda")
    host = t.float().numpy() if dtype == "bfloat16" else t.numpy()
    for descending in (False, True):
        r = tgrad.sort(t, dim, descending)
        idx = r.indices.numpy()
        np.testing.assert_array_equal(idx, _np_stable(host, dim, descending))
        got = r.values.float().numpy() if dtype == "bfloat16" else r.values.numpy()
        np.testing.assert_array_equal(got, np.take_along_axis(host, idx, dim))


@pytest.mark.gpu
@needs_gpu
def test_argsort_past_2_31_elements_on_gpu():
    """2^31 + 16384 float16 elements as rows of 2048 (two tiles and one merge pass each):
    int64 offsets in both kernels; about 68 GB of device memory with the scratch runs."""
    rows = (1 << 20) + 8
    x = tgrad.arange(2048, dtype=tgrad.float16, device="cuda").flip(0).expand(rows, 2048)
    x = x.contiguous()
    x[rows - 1, 5] = float("nan")
    idx = tgrad.argsort(x, 1)
    tail = idx[rows - 2:].numpy()
    expect = np.arange(2047, -1, -1)
    np.testing.assert_array_equal(tail[0], expect)
    last = np.concatenate([expect[expect != 5], [5]])  # the NaN sorts last
    np.testing.assert_array_equal(tail[1], last)
    del x, idx


def _np_mode(line: np.ndarray) -> tuple:
    """The most frequent value (the smallest at ties) and its last index: PyTorch's mode."""
    values, counts = np.unique(line, return_counts=True)
    best = values[np.argmax(counts)]
    return best, int(np.flatnonzero(line == best)[-1])


@pytest.mark.parametrize("n", [1, 17, 33])
def test_mode_matches_a_numpy_reference(n):
    x = np.random.default_rng(n).integers(0, 5, (4, n)).astype(np.float64)
    for t, lines, dim in ((tgrad.tensor(x), x, 1), (tgrad.tensor(x.T.copy()).t(), x, 1),
                          (tgrad.tensor(x.T), x, 0)):
        values, indices = tgrad.mode(t, dim)
        ref = [_np_mode(line) for line in lines]
        assert values.tolist() == [v for v, _ in ref]
        assert indices.tolist() == [i for _, i in ref]
    values, indices = tgrad.tensor(x).mode(1, keepdim=True)
    assert values.shape == indices.shape == (4, 1)
    ints = tgrad.tensor([[3, 1, 3, 1, 2]])
    assert tgrad.mode(ints).values.tolist() == [1] and tgrad.mode(ints).indices.tolist() == [3]
    assert tgrad.mode(tgrad.tensor([True, False])).values.item() is False


def test_mode_gradient_edges_and_errors():
    x = tgrad.tensor([1.0, 2.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.mode(x).values.backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0]  # the last 2
    values, indices = tgrad.mode(tgrad.tensor(5.0))
    assert values.shape == () and values.item() == 5.0 and indices.item() == 0
    empty = tgrad.zeros(0, 3)
    assert tgrad.mode(empty, 1).values.shape == (0,)
    with pytest.raises(IndexError, match="mode\\(\\): Expected reduction dim 0 to have "
                                         "non-zero size."):
        tgrad.mode(empty, 0)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_median_values_and_indices_are_contiguous(keepdim):
    # PyTorch's are new contiguous tensors; kthvalue's indices were a strided narrow of
    # the argsort
    a = np.array([[4.0, 1.0, 3.0, 2.0], [0.5, 2.5, 1.5, 3.5], [9.0, 7.0, 8.0, 6.0]])
    for d in (0, 1):
        for r, k in ((tgrad.kthvalue(tgrad.tensor(a), 2, d, keepdim), 2),
                     (tgrad.median(tgrad.tensor(a), d, keepdim), (a.shape[d] + 1) // 2),
                     (tgrad.nanmedian(tgrad.tensor(a), d, keepdim), (a.shape[d] + 1) // 2)):
            assert r.values.is_contiguous() and r.indices.is_contiguous()
            want_i = np.argsort(a, axis=d, kind="stable").take([k - 1], axis=d)
            want_v = np.take_along_axis(a, want_i, axis=d)
            if not keepdim:
                want_i, want_v = want_i.squeeze(d), want_v.squeeze(d)
            np.testing.assert_array_equal(r.indices.numpy(), want_i)
            np.testing.assert_array_equal(r.values.numpy(), want_v)


def _stable_order(a: np.ndarray, descending: bool) -> np.ndarray:
    """PyTorch's stable order of each row (NaN largest; ties by position), by np.lexsort
    (the last key sorts first)."""
    nan = np.isnan(a)
    v = np.where(nan, 0.0, a)
    pos = np.broadcast_to(np.arange(a.shape[-1]), a.shape)
    keys = (pos, -v, ~nan) if descending else (pos, v, nan)
    return np.stack([np.lexsort(tuple(k[i] for k in keys)) for i in range(a.shape[0])])


@pytest.mark.parametrize("seed", range(4))
def test_cpu_selection_matches_the_stable_order_with_ties_and_nans(seed):
    # topk (4k <= n), kthvalue and median pick by np.partition on the CPU: the same
    # positions as the first entries of the stable sort, ties and NaN included
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (6, 41)).astype(np.float64)  # many ties
    a[rng.random(a.shape) < 0.1] = np.nan
    a[0] = np.nan if seed % 2 else 1.0  # a row of NaNs / of equal values
    x = tgrad.tensor(a)
    for k in (1, 3, 10):
        for largest in (True, False):
            want = _stable_order(a, largest)[:, :k]
            got = x.topk(k, 1, largest=largest)
            np.testing.assert_array_equal(got.indices.numpy(), want)
            np.testing.assert_array_equal(got.values.numpy(), np.take_along_axis(a, want, 1))
        kth = x.kthvalue(k, 1)
        np.testing.assert_array_equal(kth.indices.numpy(), _stable_order(a, False)[:, k - 1])
    b = np.where(np.isnan(a), 0.0, a)  # median: a line with a NaN gives its first NaN
    med = tgrad.tensor(b).median(1)
    np.testing.assert_array_equal(med.indices.numpy(), _stable_order(b, False)[:, 20])
