"""Sparse COO tensors (tgrad.sparse): values against NumPy float64 scatter-adds by hand,
gradients against the dense path / hand formulas, PyTorch's errors."""

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.0]


def _dense_ref(idx, val, shape):
    out = np.zeros(shape)
    for j in range(len(val)):
        out[tuple(i[j] for i in idx)] += val[j]
    return out


def _s(requires_grad=False, dtype=tgrad.float64):
    return tgrad.sparse_coo_tensor(tgrad.tensor(IDX), tgrad.tensor(VAL, dtype=dtype), (2, 3),
                                   requires_grad=requires_grad)


def test_creation_metadata_and_to_dense():
    s = _s(dtype=tgrad.float32)
    assert s.is_sparse and s.layout is tgrad.sparse_coo and s.shape == (2, 3)
    assert s.dtype is tgrad.float32 and s._nnz() == 4 and s.sparse_dim() == 2
    assert s.dense_dim() == 0 and not s.is_coalesced()
    np.testing.assert_array_equal(s.to_dense().numpy(), _dense_ref(IDX, VAL, (2, 3)))
    inferred = tgrad.sparse_coo_tensor(IDX, VAL)
    assert inferred.shape == (2, 3) and inferred.dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    np.testing.assert_array_equal(s._indices().numpy(), IDX)


def test_coalesce_and_repr():
    c = _s(dtype=tgrad.float32).coalesce()
    assert c.is_coalesced()
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 1], [2, 0, 2]])
    np.testing.assert_array_equal(c.values().numpy(), [4.0, 4.0, 5.0])
    assert repr(c) == ("tensor(indices=tensor([[0, 1, 1],\n"
                       "                       [2, 0, 2]]),\n"
                       "       values=tensor([4., 4., 5.]),\n"
                       "       size=(2, 3), nnz=3, layout=tgrad.sparse_coo)")
    assert "dtype=tgrad.float64" in repr(_s())


def test_hybrid_and_to_sparse():
    x = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    s = tgrad.tensor(x).to_sparse()
    np.testing.assert_array_equal(s.indices().numpy(), [[0, 2], [0, 1]])
    h = tgrad.tensor(x).to_sparse(1)
    assert h.sparse_dim() == 1 and h.dense_dim() == 1
    np.testing.assert_array_equal(h.indices().numpy(), [[0, 2]])
    np.testing.assert_array_equal(h.to_dense().numpy(), x)
    assert tgrad.tensor(x).to_sparse_coo()._nnz() == 2


def test_arithmetic():
    s = _s()
    t = tgrad.sparse_coo_tensor([[1], [1]], tgrad.tensor([7.0], dtype=tgrad.float64), (2, 3))
    r = s + t  # PyTorch's merge: entries taken in order, equal indices summed
    np.testing.assert_array_equal(r._indices().numpy(), [[0, 1, 1, 1, 0], [2, 0, 1, 2, 2]])
    np.testing.assert_array_equal(r._values().numpy(), [3, 4, 7, 5, 1])
    assert not r.is_coalesced() and (s.coalesce() + t.coalesce()).is_coalesced()
    ref = _dense_ref(IDX, VAL, (2, 3))
    ref[1, 1] += 7
    np.testing.assert_array_equal(r.to_dense().numpy(), ref)
    d = tgrad.ones(2, 3, dtype=tgrad.float64) + s
    assert not d.is_sparse
    np.testing.assert_array_equal(d.numpy(), 1 + _dense_ref(IDX, VAL, (2, 3)))
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + tgrad.ones(2, 3, dtype=tgrad.float64)
    np.testing.assert_array_equal((s * 2)._values().numpy(), np.array(VAL) * 2)
    assert s.to(tgrad.float32)._values().dtype is tgrad.float32
    assert s.clone()._nnz() == 4 and s.detach().shape == (2, 3)


def test_sparse_sum():
    s = _s()
    assert tgrad.sparse.sum(s).item() == sum(VAL)
    r = tgrad.sparse.sum(s, dim=0)
    np.testing.assert_array_equal(r.to_dense().numpy(), _dense_ref(IDX, VAL, (2, 3)).sum(0))
    assert r.is_coalesced()


@pytest.mark.parametrize("how", ["mm", "sparse.mm", "matmul"])
def test_mm_values_and_gradients(how):
    s = _s(requires_grad=True)
    rng = np.random.default_rng(0)
    dn, gn = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    d = tgrad.tensor(dn, requires_grad=True)
    out = {"mm": lambda: tgrad.mm(s, d), "sparse.mm": lambda: tgrad.sparse.mm(s, d),
           "matmul": lambda: s @ d}[how]()
    sd = _dense_ref(IDX, VAL, (2, 3))
    np.testing.assert_allclose(out.numpy(force=True), sd @ dn)
    (out * tgrad.tensor(gn)).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), sd.T @ gn)
    full = gn @ dn.T
    if how == "sparse.mm":  # sparse, masked to the coalesced pattern, flagged uncoalesced
        assert s.grad.is_sparse and not s.grad.is_coalesced()  # (PyTorch's sparse_mask)
        np.testing.assert_array_equal(s.grad._indices().numpy(), [[0, 1, 1], [2, 0, 2]])
        np.testing.assert_allclose(s.grad._values().numpy(),
                                   [full[0, 2], full[1, 0], full[1, 2]])
    else:  # dense, as PyTorch's
        assert not s.grad.is_sparse
        np.testing.assert_allclose(s.grad.numpy(), full)


def test_to_dense_gradient_is_masked():
    s = _s(requires_grad=True)
    (s * 3).to_dense().sum().backward()
    assert s.grad.is_sparse and not s.grad.is_coalesced()  # (PyTorch's sparse_mask)
    np.testing.assert_array_equal(s.grad._indices().numpy(), [[0, 1, 1], [2, 0, 2]])
    np.testing.assert_array_equal(s.grad._values().numpy(), [3.0, 3.0, 3.0])


def test_errors():
    s = _s()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::exp'.*SparseCPU"):
        s.exp()
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        tgrad.exp(s)
    with pytest.raises(RuntimeError, match="same nnz"):
        tgrad.sparse_coo_tensor(IDX, VAL[:3], (2, 3))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        tgrad.sparse_coo_tensor(IDX, VAL, (2, 2))
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
        tgrad.mm(s, tgrad.ones(2, 2, dtype=tgrad.float64))
    with pytest.raises(TypeError, match="Sparse layout"):
        s.numpy()


def test_embedding_sparse_grad_and_accumulation():
    tgrad.manual_seed(0)
    emb = tgrad.nn.Embedding(5, 2, sparse=True, padding_idx=1)
    idx = np.array([[0, 1, 3], [3, 4, 0]])
    emb(tgrad.tensor(idx)).sum().backward()
    g = emb.weight.grad
    assert g.is_sparse and not g.is_coalesced()
    np.testing.assert_array_equal(g._indices().numpy(), [[0, 3, 3, 4, 0]])  # pad dropped
    emb(tgrad.tensor([2, 2])).sum().backward()  # merged as PyTorch's add
    np.testing.assert_array_equal(emb.weight.grad._indices().numpy(), [[0, 2, 2, 3, 3, 4, 0]])
    ref = np.zeros((5, 2))
    for i in list(idx.reshape(-1)) + [2, 2]:
        if i != 1:
            ref[i] += 1
    np.testing.assert_array_equal(emb.weight.grad.to_dense().numpy(), ref)
    emb.zero_grad()
    assert emb.weight.grad is None


def test_embedding_sparse_matches_dense_path_and_mixes_with_dense_grads():
    rng = np.random.default_rng(1)
    wn, gn = rng.standard_normal((5, 3)), rng.standard_normal((2, 3, 3))
    idx = tgrad.tensor([[0, 2, 2], [4, 0, 1]])
    grads = []
    for sparse in (False, True):
        w = tgrad.tensor(wn, requires_grad=True)
        (F.embedding(idx, w, sparse=sparse) * tgrad.tensor(gn)).sum().backward()
        grads.append(w.grad.to_dense().numpy())
    np.testing.assert_allclose(grads[1], grads[0])
    w = tgrad.tensor(wn, requires_grad=True)
    (F.embedding(idx, w, sparse=True) * tgrad.tensor(gn)).sum().backward()
    (w * 2).sum().backward()  # sparse .grad + dense gradient: dense
    assert not w.grad.is_sparse
    np.testing.assert_allclose(w.grad.numpy(), grads[0] + 2)
    w = tgrad.tensor(wn, requires_grad=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        F.embedding(idx, w, sparse=True, scale_grad_by_freq=True).sum().backward()


def test_like_functions_of_a_sparse_tensor_as_pytorch():
    # PyTorch: zeros_like / empty_like of a sparse COO tensor are empty sparse COO tensors
    # (same shape, sparse_dim, dense_dim; nnz 0, coalesced); ones_like / full_like have no
    # sparse fill_; layout=strided gives the dense result
    s = tgrad.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (2, 3))
    hybrid = tgrad.sparse_coo_tensor([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (2, 2))
    for fn in (tgrad.zeros_like, tgrad.empty_like):
        for x in (s, hybrid):
            z = fn(x)
            assert z.layout is tgrad.sparse_coo and z.is_sparse and z.shape == x.shape
            assert (z._nnz(), z.is_coalesced(), z.sparse_dim(), z.dense_dim()) == \
                (0, True, x.sparse_dim(), x.dense_dim())
            assert np.array_equal(z.to_dense().numpy(), np.zeros(tuple(x.shape)))
    z = tgrad.zeros_like(s, dtype=tgrad.float64, requires_grad=True)
    assert z.dtype is tgrad.float64 and z.requires_grad and z.layout is tgrad.sparse_coo
    assert tgrad.zeros_like(s, layout=tgrad.sparse_coo).layout is tgrad.sparse_coo
    d = tgrad.zeros_like(s, layout=tgrad.strided)
    assert d.layout is tgrad.strided and d.tolist() == [[0.0] * 3] * 2
    for fn in (lambda: tgrad.ones_like(s), lambda: tgrad.full_like(s, 2.0)):
        with pytest.raises(NotImplementedError, match="aten::fill_.Scalar.*'SparseCPU'"):
            fn()
    # no sparse uniform_ / normal_ either (PyTorch's error); layout=strided: a dense draw
    for fn, kernel in ((tgrad.rand_like, "uniform_"), (tgrad.randn_like, "normal_")):
        with pytest.raises(NotImplementedError, match=f"aten::{kernel}' .*'SparseCPU'"):
            fn(s)
        r = fn(s, layout=tgrad.strided)
        assert r.layout is tgrad.strided and r.shape == (2, 3)
    assert ((0 <= tgrad.rand_like(s, layout=tgrad.strided)) &
            (tgrad.rand_like(s, layout=tgrad.strided) < 1)).all().item()
    with pytest.raises(RuntimeError, match="zeros_like.*layout=tgrad.sparse_csr"):
        tgrad.zeros_like(s, layout=tgrad.sparse_csr)


def test_sparse_gradient_flags_and_accumulation_as_pytorch():
    # PyTorch 2.13: sparse.sum's gradient is coalesced (its values an expanded g), to_dense /
    # sparse.mm give the coalesced pattern flagged uncoalesced; two gradients summed in the
    # engine or in .grad concatenate when one is sparse.sum's (the new one first in the
    # engine), else merge. Hand values: S has (0,2) twice, so the pattern is 3 entries.
    def make():
        return tgrad.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], [1.0, 2.0, 3.0, 4.0],
                                       (2, 3)).requires_grad_()

    pattern = [[0, 1, 1], [2, 0, 2]]
    w = tgrad.arange(6.0).reshape(2, 3)

    def check(s, nnz, coalesced, indices, values):
        g = s.grad
        assert (g._nnz(), g.is_coalesced()) == (nnz, coalesced)
        assert g._indices().tolist() == indices and g._values().tolist() == values

    s = make()
    tgrad.sparse.sum(s).backward()
    check(s, 3, True, pattern, [1.0] * 3)
    s = make()
    (tgrad.sparse.sum(s) * 3 + tgrad.sparse.sum(s)).backward()
    check(s, 6, False, [r + r for r in pattern], [3.0] * 3 + [1.0] * 3)
    s = make()
    ((s.to_dense() * w).sum() * 2 + tgrad.sparse.sum(s)).backward()
    check(s, 6, False, [r + r for r in pattern], [4.0, 6.0, 10.0, 1.0, 1.0, 1.0])
    s = make()
    (tgrad.sparse.mm(s, tgrad.ones(3, 2)).sum() + tgrad.sparse.sum(s)).backward()
    check(s, 6, False, [r + r for r in pattern], [2.0] * 3 + [1.0] * 3)
    s = make()
    tgrad.sparse.sum(s).backward()
    tgrad.sparse.sum(s).backward()
    check(s, 6, False, [r + r for r in pattern], [1.0] * 6)
    s = make()
    (s.to_dense() * w).sum().backward()
    check(s, 3, False, pattern, [2.0, 3.0, 5.0])
    s = make()
    s.to_dense().sum().backward()
    s.to_dense().sum().backward()
    check(s, 3, False, pattern, [2.0] * 3)
    s = make()
    y = tgrad.sparse.sum(s)
    (y * 3 + y).backward()  # one SparseSumBackward node, g = 4
    check(s, 3, True, pattern, [4.0] * 3)
    s.grad.zero_()  # the kept .grad is a writable copy
    assert s.grad._nnz() == 0
