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


# ---------------------------------------------------------------- more ops (PyTorch 2.13's)
DENSE = _dense_ref(IDX, VAL, (2, 3))
GW = np.arange(1.0, 7.0).reshape(2, 3)  # weights of the loss sum(GW * to_dense(y))
PATTERN = [[0, 1, 1], [2, 0, 2]]  # IDX coalesced


def _s2(vals=(3.2, -4.3, 0.5, 1.1), requires_grad=False):
    return tgrad.sparse_coo_tensor(tgrad.tensor(IDX), tgrad.tensor(list(vals),
                                   dtype=tgrad.float64), (2, 3), requires_grad=requires_grad)


def _fd_grad(f, vals, eps=1e-6):
    """Central differences of sum(GW * f(dense of vals)) w.r.t. each stored value."""
    out = np.zeros(len(vals))
    for j in range(len(vals)):
        hi, lo = list(vals), list(vals)
        hi[j] += eps
        lo[j] -= eps
        out[j] = ((GW * f(_dense_ref(IDX, hi, (2, 3)))).sum()
                  - (GW * f(_dense_ref(IDX, lo, (2, 3)))).sum()) / (2 * eps)
    return out


def _grad_per_entry(s):
    """s.grad (sparse) read back at each stored entry of IDX (duplicates share one)."""
    g = s.grad.to_dense().numpy()
    return g[tuple(np.array(IDX))]


UNARY = [("neg", np.negative, False), ("abs", np.abs, True), ("sin", np.sin, True),
         ("tan", np.tan, True), ("tanh", np.tanh, True), ("sqrt", np.sqrt, True),
         ("atan", np.arctan, True), ("asin", np.arcsin, True), ("expm1", np.expm1, True),
         ("log1p", np.log1p, True), ("sign", np.sign, True), ("floor", np.floor, True),
         ("frac", lambda x: x - np.trunc(x), True), ("relu", lambda x: np.maximum(x, 0), True),
         ("square", np.square, True), ("deg2rad", np.deg2rad, True)]


@pytest.mark.parametrize("op,ref,coalesces", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values_layout_and_gradient(op, ref, coalesces):
    vals = (0.3, -0.4, 0.5, 0.1) if op in ("asin", "sqrt", "log1p") else (3.2, -4.3, 0.5, 1.1)
    if op == "sqrt":
        vals = (0.3, 0.4, 0.5, 0.1)
    s = _s2(vals, requires_grad=True)
    y = getattr(s, op)()
    assert y.is_sparse and y.is_coalesced() == coalesces  # PyTorch coalesces first but for neg
    dense = _dense_ref(IDX, vals, (2, 3))
    np.testing.assert_allclose(y.to_dense().numpy(force=True), ref(dense), rtol=1e-12)
    (y.to_dense() * tgrad.tensor(GW)).sum().backward()
    assert s.grad.is_sparse
    np.testing.assert_allclose(_grad_per_entry(s), _fd_grad(ref, vals), rtol=1e-6, atol=1e-8)


def test_unary_bool_results_and_dense_only_ops():
    s = tgrad.sparse_coo_tensor(IDX, tgrad.tensor([1.0, float("nan"), float("inf"), -2.0],
                                                  dtype=tgrad.float64), (2, 3))
    for op, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("signbit", np.signbit)):
        r = getattr(s, op)()
        assert r.dtype is tgrad.bool and r.is_coalesced()
        np.testing.assert_array_equal(r.to_dense().numpy(), ref(s.to_dense().numpy()))
    r = s.nan_to_num(posinf=9.0)
    np.testing.assert_array_equal(r.to_dense().numpy(), np.nan_to_num(
        s.to_dense().numpy(), posinf=9.0))
    for op in ("exp", "cos", "sigmoid"):  # f(0) != 0: PyTorch's error
        with pytest.raises(NotImplementedError, match=f"aten::{op}'.*SparseCPU"):
            getattr(s, op)()
    with pytest.raises(RuntimeError, match="cannot raise to zeroth power"):
        s ** 0


def test_transpose_permute_and_coalesce_gradients():
    for f in (lambda s: s.t(), lambda s: s.transpose(0, 1), lambda s: s.permute(1, 0)):
        s = _s(requires_grad=True)
        y = f(s)
        assert y.shape == (3, 2) and not y.is_coalesced()
        np.testing.assert_array_equal(y._indices().numpy(), np.array(IDX)[::-1])
        c = y.coalesce()
        np.testing.assert_array_equal(c.indices().numpy(), [[0, 2, 2], [1, 0, 1]])
        np.testing.assert_array_equal(c.to_dense().numpy(force=True), DENSE.T)
        (c.to_dense() * tgrad.tensor(GW.T)).sum().backward()
        np.testing.assert_array_equal(s.grad.to_dense().numpy(), GW * (DENSE != 0))


def test_mul_dense_zero_dim_div_pow():
    s = _s(requires_grad=True)
    d = tgrad.tensor(GW + 1, requires_grad=True)
    y = s * d
    assert y.is_sparse and not y.is_coalesced()
    np.testing.assert_array_equal(y._values().numpy(force=True), np.array(VAL) * (GW + 1)[
        tuple(np.array(IDX))])
    (y.to_dense() * tgrad.tensor(GW)).sum().backward()
    np.testing.assert_array_equal(s.grad.to_dense().numpy(), GW * (GW + 1) * (DENSE != 0))
    assert d.grad.is_sparse  # PyTorch's: the dense factor's gradient is sparse too
    np.testing.assert_array_equal(d.grad.to_dense().numpy(), GW * DENSE)
    s = _s(requires_grad=True)
    c = tgrad.tensor(2.0, requires_grad=True)
    z = s * tgrad.tensor(2.0, dtype=tgrad.float32)
    assert z.is_sparse and z.dtype is tgrad.float64  # a 0-d factor does not promote
    (s * c).to_dense().sum().backward()
    assert c.grad.item() == sum(VAL) and not c.grad.is_sparse
    np.testing.assert_array_equal((s / 4).to_dense().numpy(force=True), DENSE / 4)
    np.testing.assert_array_equal((s / tgrad.tensor(4.0)).to_dense().numpy(force=True),
                                  DENSE / 4)
    i = tgrad.sparse_coo_tensor(IDX, [3, 4, 5, 1], (2, 3)) / 2
    assert i.dtype is tgrad.float32
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim "
                                           r"dense tensor divisor \(got shape \[2, 3\]"):
        s / tgrad.ones(2, 3, dtype=tgrad.float64)
    s = _s(requires_grad=True)
    p = s ** 3
    assert p.is_coalesced()
    np.testing.assert_allclose(p.to_dense().numpy(force=True), DENSE ** 3)
    p.to_dense().sum().backward()
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 3 * DENSE ** 2)


@pytest.mark.parametrize("masked", [False, True])
def test_sparse_sparse_mm(masked):
    rng = np.random.default_rng(3)
    bn = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.6)
    a = _s(requires_grad=True)
    b = tgrad.tensor(bn).to_sparse().requires_grad_(True)
    y = tgrad.sparse.mm(a, b) if masked else a @ b
    assert y.is_sparse and y.is_coalesced() and y.shape == (2, 4)
    np.testing.assert_allclose(y.to_dense().numpy(force=True), DENSE @ bn)
    gw = rng.standard_normal((2, 4))
    (y.to_dense() * tgrad.tensor(gw)).sum().backward()
    gw = gw * ((DENSE != 0) @ (bn != 0) > 0)  # to_dense's gradient: at y's pattern
    ga, gb = gw @ bn.T, DENSE.T @ gw
    if masked:  # at each operand's pattern
        ga, gb = ga * (DENSE != 0), gb * (bn != 0)
    assert a.grad.is_sparse and b.grad.is_sparse
    np.testing.assert_allclose(a.grad.to_dense().numpy(), ga, atol=1e-12)
    np.testing.assert_allclose(b.grad.to_dense().numpy(), gb, atol=1e-12)


def test_sum_dim_gradient():
    for dim in (0, 1, -1):
        s = _s(requires_grad=True)
        r = tgrad.sparse.sum(s, dim)
        np.testing.assert_array_equal(r.to_dense().numpy(force=True), DENSE.sum(dim))
        w = np.arange(1.0, 1 + DENSE.sum(dim).size)
        (r.to_dense() * tgrad.tensor(w)).sum().backward()
        ref = np.broadcast_to(np.expand_dims(w, dim % 2), (2, 3)) * (DENSE != 0)
        np.testing.assert_array_equal(s.grad.to_dense().numpy(), ref)
        np.testing.assert_array_equal(s.sum(dim).to_dense().numpy(force=True), DENSE.sum(dim))


def _softmax_ref(dense, dim, log):
    """Softmax over the stored entries along dim (others -inf, left 0 in the result)."""
    mask = dense != 0  # VAL has no zero; the pattern's entries are the non-zeros
    x = np.where(mask, dense, -np.inf)
    m = np.max(x, axis=dim, keepdims=True)
    e = np.where(mask, np.exp(x - m), 0.0)
    p = e / e.sum(axis=dim, keepdims=True)
    return np.where(mask, np.log(np.where(mask, p, 1.0)) if log else p, 0.0)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax(dim, log):
    vals = (3.0, -4.0, 0.5, 1.0)
    s = _s2(vals, requires_grad=True)
    f = tgrad.sparse.log_softmax if log else tgrad.sparse.softmax
    y = f(s, dim)
    assert y.is_sparse and y.is_coalesced()
    np.testing.assert_array_equal(y.indices().numpy(), PATTERN)
    dense = _dense_ref(IDX, vals, (2, 3))
    np.testing.assert_allclose(y.to_dense().numpy(force=True), _softmax_ref(dense, dim, log),
                               rtol=1e-12)
    (y.to_dense() * tgrad.tensor(GW)).sum().backward()
    fd = _fd_grad(lambda x: _softmax_ref(x, dim, log), vals)
    np.testing.assert_allclose(_grad_per_entry(s), fd, rtol=1e-6, atol=1e-8)


def test_index_select_narrow_copy_addmm():
    s = _s()
    r = s.index_select(0, tgrad.tensor([1, 1, 0]))  # PyTorch's order: by position, then nnz
    np.testing.assert_array_equal(r._indices().numpy(), [[0, 0, 1, 1, 2, 2],
                                                          [0, 2, 0, 2, 2, 2]])
    np.testing.assert_array_equal(r._values().numpy(), [4, 5, 4, 5, 3, 1])
    np.testing.assert_array_equal(r.to_dense().numpy(), DENSE[[1, 1, 0]])
    r = s.index_select(1, tgrad.tensor([2, 0]))
    np.testing.assert_array_equal(r._indices().numpy(), [[0, 1, 0, 1], [0, 0, 0, 1]])
    np.testing.assert_array_equal(r.to_dense().numpy(), DENSE[:, [2, 0]])
    n = s.narrow_copy(1, 1, 2)
    np.testing.assert_array_equal(n._indices().numpy(), [[0, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(n.to_dense().numpy(), DENSE[:, 1:3])
    s = _s(requires_grad=True)
    rng = np.random.default_rng(4)
    mn, dn, gw = (rng.standard_normal((2, 2)), rng.standard_normal((3, 2)),
                  rng.standard_normal((2, 2)))
    m, d = tgrad.tensor(mn, requires_grad=True), tgrad.tensor(dn, requires_grad=True)
    out = tgrad.sparse.addmm(m, s, d, beta=2, alpha=3)
    np.testing.assert_allclose(out.numpy(force=True), 2 * mn + 3 * DENSE @ dn)
    (out * tgrad.tensor(gw)).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), 2 * gw)
    np.testing.assert_allclose(d.grad.numpy(), 3 * DENSE.T @ gw)
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 3 * (gw @ dn.T) * (DENSE != 0))


# ---------------------------------------------------------------- differential-hunt fixes
def test_to_sparse_of_empty_dense():
    for shape, sd in (((0, 3), None), ((0, 3), 1), ((2, 0), None), ((0,), None)):
        s = tgrad.zeros(shape, dtype=tgrad.float64).to_sparse(sd)
        assert s.shape == shape and s._nnz() == 0 and s.is_coalesced()
        assert s.to_dense().numpy().shape == shape


@pytest.mark.parametrize("fn", ["sin", "abs", "neg", "sqrt", "tanh", "square", "sign", "relu"])
def test_top_level_unary_functions_on_sparse(fn):
    s = tgrad.sparse_coo_tensor(IDX, [3.0, -4.0, 5.0, 1.0], (2, 3), dtype=tgrad.float64)
    r = getattr(tgrad, fn)(s)
    assert r.is_sparse and r.is_coalesced() == (fn != "neg")  # (neg: PyTorch's, uncoalesced)
    ref = {"relu": lambda a: np.maximum(a, 0), "neg": np.negative}.get(fn, getattr(np, fn, None))
    with np.errstate(invalid="ignore"):
        want = ref(_dense_ref(IDX, [3.0, -4.0, 5.0, 1.0], (2, 3)))
    np.testing.assert_allclose(r.to_dense().numpy(), want, rtol=1e-12, equal_nan=True)
    with pytest.raises(NotImplementedError, match="aten::exp'.*SparseCPU"):
        tgrad.exp(s)  # f(0) != 0: still PyTorch's error (the sparse method's)


def test_inplace_unary_on_sparse():
    s = _s().coalesce().clone()
    want = np.sin(_dense_ref(IDX, VAL, (2, 3)))
    assert s.sin_() is not None and np.allclose(s.to_dense().numpy(), want, rtol=1e-12)
    u = _s()  # uncoalesced: PyTorch's error, but neg_ (linear) works
    with pytest.raises(RuntimeError, match="sqrt_ requires coalesced input"):
        u.sqrt_()
    assert u.neg_() is u and np.allclose(u.to_dense().numpy(), -_dense_ref(IDX, VAL, (2, 3)))
    i = tgrad.sparse_coo_tensor([[0, 2]], [4, -9], (3,)).coalesce()
    assert i.abs_().to_dense().tolist() == [4, 0, 9]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i.sqrt_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tgrad.sparse_coo_tensor([[0, 2]], [4.0, -9.0], (3,), requires_grad=True,
                                is_coalesced=True).abs_()


def test_inplace_arithmetic_on_sparse():
    """mul_ / div_ / add_ / sub_ in place (PyTorch's sparse in-place forms): values against
    NumPy, the dtype rule of in-place ops, the leaf error, and gradients through a non-leaf
    against the closed forms."""
    dense = _dense_ref(IDX, VAL, (2, 3))
    s = _s().coalesce().clone()
    assert s.mul_(2) is s and np.allclose(s.to_dense().numpy(), 2 * dense, rtol=1e-15)
    assert s.div_(4) is s and np.allclose(s.to_dense().numpy(), dense / 2, rtol=1e-15)
    assert s.add_(_s(), alpha=3) is s
    np.testing.assert_allclose(s.to_dense().numpy(), dense / 2 + 3 * dense, rtol=1e-15)
    assert s.sub_(_s()) is s
    np.testing.assert_allclose(s.to_dense().numpy(), dense / 2 + 2 * dense, rtol=1e-15)
    i = tgrad.sparse_coo_tensor([[0, 2]], [4, -9], (3,)).coalesce()
    assert i.div_(2, rounding_mode="floor").to_dense().tolist() == [2, 0, -5]
    for bad in (lambda: i.mul_(2.5), lambda: i.div_(2)):  # float result into int64
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            bad()
    f32 = _s(dtype=tgrad.float32)
    assert f32.add_(_s()).dtype is tgrad.float32  # float64 result cast down, as PyTorch's
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        _s(requires_grad=True).mul_(2)
    t = tgrad.sparse_coo_tensor([[0, 1]], tgrad.tensor([1.0, 2.0]).double(), (3,),
                                requires_grad=True)
    u = tgrad.sparse_coo_tensor([[1, 2]], tgrad.tensor([5.0, 6.0]).double(), (3,))
    assert u.add_(t, alpha=3) is u and u.requires_grad and not u.is_leaf  # (t's graph)
    np.testing.assert_array_equal(u.to_dense().detach().numpy(), [3.0, 11.0, 6.0])
    x = tgrad.sparse_coo_tensor([[0, 1, 2]], tgrad.tensor([0.5, 1.0, 2.0], dtype=tgrad.float64),
                                (4,), requires_grad=True)
    xv = np.array([0.5, 1.0, 2.0, 0.0])
    for step, dy in ((lambda y: y.sin_().mul_(3), 3 * np.cos(xv)),
                     (lambda y: y.add_(x, alpha=2), 3.0 + 0 * xv),
                     (lambda y: y.div_(2).sub_(x).pow(2), xv / 2)):  # (x/2 - x)^2 = x^2/4
        x.grad = None
        step((x * 1).coalesce()).to_dense().sum().backward()
        np.testing.assert_allclose(x.grad.to_dense().numpy()[:3], dy[:3], rtol=1e-15)


def test_sparse_parts_share_the_version_counter():
    """PyTorch's sparse tensor, its _indices() and its _values() share one version counter:
    an in-place change through either is seen by backward, and in-place sparse ops bump it."""
    s = tgrad.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,)).coalesce()
    v = s._values()
    assert (s._version, v._version) == (0, 0)
    s.mul_(2)
    assert (s._version, v._version) == (1, 1)
    with tgrad.no_grad():
        v.add_(1)
    assert (s._version, s._indices()._version, s.values()._version) == (2, 2, 2)
    for change in (lambda s: s._values().mul_(2), lambda s: s._indices().add_(0),
                   lambda s: s.mul_(2), lambda s: s.sin_()):
        for use in (lambda s: s.sin(), lambda s: s * s,
                    lambda s: s * tgrad.ones(2, 1, dtype=tgrad.float64),
                    lambda s: tgrad.sparse.mm(s, tgrad.ones(1, 2, dtype=tgrad.float64)),
                    lambda s: tgrad.sparse.mm(s, s.t().detach())):
            x = tgrad.sparse_coo_tensor([[0, 1], [0, 0]], tgrad.tensor([1.0, 2.0]).double(),
                                        (2, 1), requires_grad=True).coalesce()
            y = use(x)
            with tgrad.no_grad():
                change(x)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                (y.to_dense() if y.is_sparse else y).sum().backward()


def test_function_forms_route_sparse_operands():
    """tgrad.t / transpose / permute / sum of a sparse tensor: its own methods, as PyTorch's
    dispatch does."""
    s = _s().coalesce()
    dense = _dense_ref(IDX, VAL, (2, 3))
    for r in (tgrad.t(s), tgrad.transpose(s, 0, 1), tgrad.permute(s, (1, 0)),
              tgrad.permute(s, 1, 0)):
        assert r.is_sparse and np.array_equal(r.to_dense().numpy(), dense.T)
    total = tgrad.sum(s)
    assert not total.is_sparse and total.item() == dense.sum()
    rows = tgrad.sum(s, 1)
    assert rows.is_sparse and np.array_equal(rows.to_dense().numpy(), dense.sum(1))
    assert tgrad.sum(s, dim=(0, 1), keepdim=True).tolist() == [[dense.sum()]]


def test_dense_sparse_add_sub_gradients():
    d0 = np.arange(6.0).reshape(2, 3)
    sd = _dense_ref(IDX, VAL, (2, 3))
    for f, want, gs in ((lambda d, s: d.add(s), d0 + sd, 1.0),
                        (lambda d, s: tgrad.add(d, s, alpha=2.5), d0 + 2.5 * sd, 2.5),
                        (lambda d, s: d - s, d0 - sd, -1.0),
                        (lambda d, s: d.sub(s, alpha=2), d0 - 2 * sd, -2.0),
                        (lambda d, s: d + s, d0 + sd, 1.0)):
        d = tgrad.tensor(d0, requires_grad=True)
        s = _s(requires_grad=True)
        r = f(d, s)
        assert not r.is_sparse and r.dtype is tgrad.float64
        np.testing.assert_allclose(r.detach().numpy(), want, rtol=1e-12)
        w = np.random.default_rng(0).standard_normal((2, 3))
        (r * tgrad.tensor(w)).sum().backward()
        # PyTorch: both gradients dense (the sparse operand's too)
        assert not d.grad.is_sparse and not s.grad.is_sparse
        np.testing.assert_allclose(d.grad.numpy(), w, rtol=1e-12)
        np.testing.assert_allclose(s.grad.numpy(), gs * w, rtol=1e-12)
    # promotion as PyTorch's: int64 dense + float32 sparse is float32
    r = tgrad.ones(2, 3, dtype=tgrad.int64) + _s(dtype=tgrad.float32)
    assert r.dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="add: expected 'self' and 'other' to have same size"):
        tgrad.ones(3) + _s(dtype=tgrad.float32)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        _s() - tgrad.ones(2, 3, dtype=tgrad.float64)
    with pytest.raises(RuntimeError, match="Sparse division requires a scalar"):
        tgrad.ones(2, 3, dtype=tgrad.float64) / _s()


def test_sparse_sub_and_mul_of_two_sparse():
    a_idx, a_val = [[0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0]
    b_idx, b_val = [[0, 0, 1, 1], [0, 1, 2, 2]], [5.0, 7.0, 1.0, 2.0]  # uncoalesced
    a = tgrad.sparse_coo_tensor(a_idx, a_val, (2, 3), dtype=tgrad.float64,
                                requires_grad=True)
    b = tgrad.sparse_coo_tensor(b_idx, b_val, (2, 3), dtype=tgrad.float64,
                                requires_grad=True)
    ad, bd = _dense_ref(a_idx, a_val, (2, 3)), _dense_ref(b_idx, b_val, (2, 3))
    r = a - b
    assert r.is_sparse
    np.testing.assert_allclose(r.to_dense().detach().numpy(), ad - bd, rtol=1e-12)
    np.testing.assert_allclose(a.sub(b, alpha=3).to_dense().detach().numpy(), ad - 3 * bd)
    # both uncoalesced: PyTorch keeps the entries of the one with fewer (a), each times b's
    # coalesced value there (0 kept), flagged uncoalesced
    p = a * b
    assert p.is_sparse and not p.is_coalesced()
    assert p._indices().numpy().tolist() == a_idx
    np.testing.assert_allclose(p._values().detach().numpy(), [1.0 * 7, 2.0 * 0, 3.0 * 3])
    np.testing.assert_allclose(p.to_dense().detach().numpy(), ad * bd, rtol=1e-12)
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (p.to_dense() * tgrad.tensor(w)).sum().backward()
    assert a.grad.is_sparse and b.grad.is_sparse
    # to_dense's gradient is w on p's pattern (a's); times the other operand: dense
    # w * bd there for a, and w * ad there for b (reaching (1, 0), outside b's entries)
    mask = _dense_ref(a_idx, [1.0, 1.0, 1.0], (2, 3)) != 0
    np.testing.assert_allclose(a.grad.to_dense().numpy(), w * bd * mask, rtol=1e-12)
    np.testing.assert_allclose(b.grad.to_dense().numpy(), w * ad * mask, rtol=1e-12)
    assert b.grad.to_dense().numpy()[1, 0] == 8.0
    # promotion: float32 + int64 sparse is float32 (NumPy would give float64)
    i = tgrad.sparse_coo_tensor(a_idx, [1, 2, 3], (2, 3))
    assert (_s(dtype=tgrad.float32) + i).dtype is tgrad.float32
    assert (_s(dtype=tgrad.float32) * i).dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        i - i.to(tgrad.bool)
    with pytest.raises(RuntimeError, match="equal dimensionality"):
        a * tgrad.sparse_coo_tensor([[0]], [1.0], (4,), dtype=tgrad.float64)


def test_sparse_times_sparse_with_an_uncoalesced_operand_keeps_its_entries():
    # PyTorch's sparse_binary_op_intersection: the uncoalesced operand's entries (in either
    # order), each times the other's coalesced value there, zeros kept, flagged uncoalesced
    a = tgrad.sparse_coo_tensor([[2, 0, 2, 1, 3]], [1.0, 2, 3, 4, 7], (5,),
                                dtype=tgrad.float64, requires_grad=True)
    b = tgrad.sparse_coo_tensor([[2, 1, 4]], [10.0, 0, 5], (5,), dtype=tgrad.float64)
    b = b.coalesce().detach().requires_grad_()
    w = np.arange(1.0, 6.0)
    for p in (a * b, b * a):
        assert not p.is_coalesced() and p._nnz() == 5
        assert p._indices().numpy().tolist() == [[2, 0, 2, 1, 3]]
        np.testing.assert_allclose(p._values().detach().numpy(), [10.0, 0, 30, 0, 0])
    (p.to_dense() * tgrad.tensor(w)).sum().backward()
    # g = w on p's (coalesced) pattern {0, 1, 2, 3}: da = g * b, both coalesced: their
    # intersection {1, 2}; db = g * a: a's entries, a_i * w[i] (index 0, 3 outside b's)
    # (.grad's coalesced flag is AccumulateGrad's, see docs/design.md: not checked here)
    assert a.grad._indices().numpy().tolist() == [[1, 2]]
    np.testing.assert_allclose(a.grad._values().numpy(), [0.0 * 2, 10.0 * 3])
    assert b.grad._indices().numpy().tolist() == [[2, 0, 2, 1, 3]]
    np.testing.assert_allclose(b.grad._values().numpy(), [1.0 * 3, 2 * 1, 3 * 3, 4 * 2, 7 * 4])
    # both uncoalesced with as many entries: the second's; hybrid values multiply per entry
    h = tgrad.sparse_coo_tensor([[1, 0, 1]], [[1.0, 2], [3, 4], [5, 6]], (3, 2))
    k = tgrad.sparse_coo_tensor([[2, 1, 1]], [[2.0, 3], [4, 5], [1, 1]], (3, 2))
    p = h * k
    assert p._indices().numpy().tolist() == [[2, 1, 1]] and not p.is_coalesced()
    np.testing.assert_allclose(p._values().numpy(), [[0.0, 0], [4 * 6, 5 * 8], [6, 8]])
    p = tgrad.sparse_coo_tensor(tgrad.zeros(1, 0, dtype=tgrad.int64), tgrad.zeros(0), (5,)) * a
    assert p._nnz() == 0 and p.is_coalesced()


def test_dense_times_sparse_broadcast_and_promotion():
    sd = _dense_ref(IDX, VAL, (2, 3))
    v = np.array([2.0, -1.0, 0.5])
    for r in (tgrad.tensor(v) * _s(), _s() * tgrad.tensor(v), tgrad.tensor(v).mul(_s())):
        assert r.is_sparse
        np.testing.assert_allclose(r.to_dense().numpy(), sd * v, rtol=1e-12)
    i = tgrad.sparse_coo_tensor(IDX, [1, 2, 3, 4], (2, 3))
    r = i * tgrad.ones(2, 3, dtype=tgrad.float32)
    assert r.is_sparse and r.dtype is tgrad.float32


def test_mv_and_matmul_vector():
    v = np.array([1.0, -2.0, 0.5])
    sd = _dense_ref(IDX, VAL, (2, 3))
    for f in (lambda s, x: s.mv(x), lambda s, x: tgrad.mv(s, x), lambda s, x: s @ x):
        s = _s(requires_grad=True)
        x = tgrad.tensor(v, requires_grad=True)
        r = f(s, x)
        assert not r.is_sparse and r.shape == (2,)
        np.testing.assert_allclose(r.detach().numpy(), sd @ v, rtol=1e-12)
        r.backward(tgrad.tensor([1.0, 3.0]))
        # PyTorch's mv: the sparse matrix's gradient dense (outer(g, v))
        assert not s.grad.is_sparse
        np.testing.assert_allclose(s.grad.numpy(), np.outer([1.0, 3.0], v), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), sd.T @ [1.0, 3.0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="size mismatch"):
        _s().mv(tgrad.ones(4, dtype=tgrad.float64))


def test_sum_dtypes_duplicate_dims_and_full_sum_gradient():
    b = tgrad.sparse_coo_tensor(IDX, [True, True, False, True], (2, 3))
    assert b.sum().dtype is tgrad.int64 and b.sum().item() == 3
    assert tgrad.sparse.sum(b).dtype is tgrad.int64
    assert b.sum(0).dtype is tgrad.int64  # Tensor.sum promotes; sparse.sum over a dim keeps
    assert tgrad.sparse.sum(b, 0).dtype is tgrad.bool
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        tgrad.sparse.sum(_s(), (0, 0))
    # Tensor.sum() counts every element: PyTorch's gradient is dense, g everywhere;
    # tgrad.sparse.sum's stays masked to the pattern
    for f in (lambda s: s.sum(), lambda s: s.sum((0, 1))):
        s = _s(requires_grad=True)
        (f(s) * 3.0).backward()
        assert not s.grad.is_sparse
        np.testing.assert_array_equal(s.grad.numpy(), np.full((2, 3), 3.0))


# ---------------------------------------------------------------- follow-ups (PyTorch 2.13's)
UNC_IDX, UNC_VAL = [[1, 0, 1, 0], [0, 2, 0, 1]], [0.25, 0.5, 0.5, -0.75]  # (1, 0) twice


def test_public_unary_functions_route_sparse():
    # every zero-preserving public function gives the method's result: the input coalesced
    # first, f of the summed values (NumPy float64 reference)
    s = tgrad.sparse_coo_tensor(tgrad.tensor(UNC_IDX), tgrad.tensor(UNC_VAL, dtype=tgrad.float64),
                                (2, 3))
    dense = _dense_ref(UNC_IDX, UNC_VAL, (2, 3))  # (1, 0) holds 0.75
    refs = {"isnan": np.isnan, "isinf": np.isinf, "isposinf": np.isposinf,
            "isneginf": np.isneginf, "signbit": np.signbit, "asinh": np.arcsinh,
            "arcsinh": np.arcsinh, "atanh": np.arctanh, "arctanh": np.arctanh,
            "nan_to_num": np.nan_to_num, "sgn": np.sign, "conj": np.conj,
            "conj_physical": np.conj, "frac": lambda x: x - np.trunc(x),
            "deg2rad": np.deg2rad, "rad2deg": np.rad2deg}
    for name, ref in refs.items():
        r = getattr(tgrad, name)(s)
        assert r.is_sparse and r.shape == (2, 3), name
        assert r.is_coalesced() == (name not in ("conj", "conj_physical")), name
        np.testing.assert_allclose(r.to_dense().numpy(), ref(dense), rtol=1e-14, err_msg=name)
    r = tgrad.erfinv(s)
    assert r.is_coalesced() and r._nnz() == 3
    assert abs(r.to_dense().numpy()[1, 0] - 0.8134198475976185) < 1e-12  # erfinv(0.75)
    z = tgrad.sparse_coo_tensor([[0, 1]], tgrad.tensor([3 + 4j, -2j]), (3,))
    np.testing.assert_allclose(tgrad.sgn(z).to_dense().numpy(), [0.6 + 0.8j, -1j, 0])
    np.testing.assert_allclose(tgrad.conj(z).to_dense().numpy(), [3 - 4j, 2j, 0])
    # the dense path is unchanged, and a sparse input without a kernel keeps a clear error
    np.testing.assert_array_equal(tgrad.isnan(tgrad.tensor([1.0, np.nan])).numpy(), [0, 1])
    with pytest.raises(RuntimeError, match="isposinf does not support complex"):
        tgrad.isposinf(z)


def test_route_sparse_one_rule():
    # the one route of the public functions (tgrad.ops._common.route_sparse): a dense
    # operand's error is re-raised unchanged (the same exception object), a sparse operand
    # goes to its method (one operand) or tgrad.sparse.binary (two), and a sparse error
    # raised there is not chained to the strided one
    from tgrad.ops._common import route_sparse
    err = RuntimeError("dense error")
    with pytest.raises(RuntimeError) as info:
        route_sparse("sin", err, tgrad.ones(2), 3.0)
    assert info.value is err
    s = tgrad.sparse_coo_tensor([[0, 2]], tgrad.tensor([0.5, -2.0], dtype=tgrad.float64), (3,))
    r = route_sparse("nan_to_num", err, s, nan=1.0, posinf=None, neginf=None)
    np.testing.assert_array_equal(r.to_dense().numpy(), [0.5, 0.0, -2.0])
    r = route_sparse("add", err, tgrad.ones(3, dtype=tgrad.float64), s, alpha=2)
    np.testing.assert_array_equal(r.numpy(), [2.0, 1.0, -3.0])  # 1 + 2 * s, dense
    for call in (lambda: tgrad.exp(s), lambda: tgrad.atan2(s, s),
                 lambda: tgrad.add(tgrad.ones(2), s)):
        with pytest.raises(RuntimeError) as info:
            call()
        assert info.value.__suppress_context__ and info.value.__cause__ is None
    # the dense functions keep their own errors (nothing sparse to route)
    with pytest.raises(RuntimeError, match="isposinf does not support complex"):
        tgrad.isposinf(tgrad.tensor([1j]))
    with pytest.raises(RuntimeError, match="frac"):
        tgrad.frac(tgrad.tensor([1, 2]))


def test_sum_keepdim_and_dense_gradient():
    # Tensor.sum(dim, keepdim=True): summed dims kept as size 1 (a sparse result flagged
    # uncoalesced); the gradient is g broadcast to every element, dense (PyTorch's)
    for dim in (0, 1, -1, (0, 1)):
        s = _s(requires_grad=True)
        r = s.sum(dim, keepdim=True)
        ref = DENSE.sum(dim, keepdims=True)
        assert r.shape == ref.shape and r.is_sparse == (dim != (0, 1))
        if r.is_sparse:
            assert not r.is_coalesced()
        np.testing.assert_array_equal(r.to_dense().numpy(force=True), ref)
        w = np.arange(1.0, 1 + ref.size).reshape(ref.shape)
        (r.to_dense() * tgrad.tensor(w)).sum().backward()
        assert not s.grad.is_sparse  # (to_dense passes g on at r's pattern only)
        seen = (DENSE != 0).any(axis=dim, keepdims=True) if r.is_sparse else 1.0
        np.testing.assert_array_equal(s.grad.numpy(), np.broadcast_to(w * seen, (2, 3)))
    # hybrid: every sparse dim summed gives a dense result; its gradient reaches the
    # unspecified rows too (PyTorch's SumBackward1 expands g)
    d = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    h = tgrad.tensor(d).to_sparse(1).requires_grad_()
    r = h.sum(0)
    assert not r.is_sparse
    (r * tgrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), np.tile([1.0, 2.0, 3.0], (3, 1)))
    assert tgrad.tensor([[0, 1], [2, 0]]).to_sparse().sum(0, keepdim=True).dtype is tgrad.int64


def test_div_dense_by_sparse_and_rounding_mode():
    s = _s()
    for f in (lambda: tgrad.div(tgrad.ones(2, 3), s), lambda: tgrad.ones(2, 3).div(s),
              lambda: tgrad.true_divide(tgrad.ones(2, 3), s),
              lambda: tgrad.div(tgrad.ones(2, 3), s, rounding_mode="floor")):
        with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim "
                                               r"dense tensor divisor \(got shape \[2, 3\]"):
            f()
    u = tgrad.sparse_coo_tensor([[0, 0, 1]], tgrad.tensor([0.75, 0.75, -2.5]), (3,),
                                requires_grad=True)
    for mode, ref in (("floor", [1.0, -2.0, 0.0]), ("trunc", [1.0, -1.0, 0.0])):
        r = tgrad.div(u, 1.5, rounding_mode=mode)  # coalesced first: 1.5 / 1.5, -2.5 / 1.5
        assert r.is_coalesced() and r._nnz() == 2
        np.testing.assert_array_equal(r.to_dense().numpy(force=True), ref)
    tgrad.div(u, 2, rounding_mode="floor").to_dense().sum().backward()
    assert u.grad._nnz() == 0 and u.grad.is_coalesced()  # zero gradient, no entries
    i = tgrad.sparse_coo_tensor([[0, 1]], tgrad.tensor([7, -7]), (2,))
    np.testing.assert_array_equal(tgrad.div(i, 2, rounding_mode="floor").to_dense().numpy(),
                                  [3, -4])


def test_piecewise_constant_gradient_has_no_entries():
    for op in ("sign", "sgn", "floor", "ceil", "round", "trunc", "fix"):
        s = _s(requires_grad=True)
        getattr(s, op)().to_dense().sum().backward()
        assert s.grad.is_sparse and s.grad._nnz() == 0 and s.grad.is_coalesced(), op
        assert s.grad.shape == (2, 3)


def test_sparse_mm_gradient_patterns():
    # sparse.mm(A, B), both sparse: each gradient is the product g @ B^T / A^T @ g masked
    # to the operand's pattern (hand-computed), stored as PyTorch's sparse_mask_like_grad:
    # the operand's indices when it is coalesced with fewer entries than the product, else
    # the product's indices with zeros outside the operand's pattern
    a = tgrad.tensor([[1.0, 0, 2], [0, 0, 3]]).to_sparse().requires_grad_()
    b = tgrad.tensor([[0.0, 1], [4, 0], [0, 5]]).to_sparse().requires_grad_()
    c = tgrad.sparse.mm(a, b)  # [[0, 11], [0, 15]]: pattern (0, 1), (1, 1)
    (c.to_dense() * tgrad.tensor([[1.0, 2], [3, 4]])).sum().backward()
    # g = [[0, 2], [0, 4]] (c's pattern); g @ B^T = [[2, 0, 10], [4, 0, 20]] (4 entries)
    assert a.grad._indices().tolist() == [[0, 0, 1], [0, 2, 2]]  # A's 3 < 4: A's indices
    assert a.grad._values().tolist() == [2.0, 10.0, 20.0]
    # A^T @ g = [[0, 2], [0, 0], [0, 16]]: 2 entries <= B's 3: the product's indices
    assert b.grad._indices().tolist() == [[0, 2], [1, 1]]
    assert b.grad._values().tolist() == [2.0, 16.0]
    assert not a.grad.is_coalesced() and not b.grad.is_coalesced()  # nnz > 1 (PyTorch's)
    # an empty product: gradients without entries
    a = tgrad.tensor([[1.0, 0], [0, 0]]).to_sparse().requires_grad_()
    b = tgrad.tensor([[0.0, 0], [2, 0]]).to_sparse().requires_grad_()
    tgrad.sparse.mm(a, b).to_dense().sum().backward()
    assert a.grad._nnz() == 0 and b.grad._nnz() == 0


def test_dense_at_sparse_and_unmasked_to_dense_give_dense_gradients():
    # PyTorch: dense @ sparse (and to_dense(masked_grad=False)) give the sparse operand the
    # whole dense gradient, not one masked to its pattern. Reference: NumPy, d(sum(a @ S))
    # / dS = a^T @ ones, and ones for to_dense.
    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    for product in (lambda x, s: x @ s, lambda x, s: tgrad.mm(x, s)):
        s = tgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2),
                                    dtype=tgrad.float64, requires_grad=True)
        x = tgrad.tensor(a, requires_grad=True)
        product(x, s).sum().backward()
        assert not s.grad.is_sparse
        np.testing.assert_array_equal(s.grad.numpy(), a.T @ np.ones((2, 2)))
        np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)) @ np.array(
            [[0.0, 1.0], [2.0, 0.0]]).T)
    s = tgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), requires_grad=True)
    s.to_dense(masked_grad=False).backward(tgrad.ones(2, 2))
    assert not s.grad.is_sparse and s.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    s2 = tgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), requires_grad=True)
    s2.to_dense().backward(tgrad.ones(2, 2))  # the default: masked, sparse
    assert s2.grad.is_sparse and s2.grad.to_dense().tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_sparse_times_and_over_a_number_promote_as_pytorch():
    i = tgrad.sparse_coo_tensor([[0, 2]], [1, 2], (3,))
    b = tgrad.sparse_coo_tensor([[0, 2]], [True, True], (3,))
    r = b * 2
    assert r.dtype is tgrad.int64 and r.to_dense().tolist() == [2, 0, 2]
    assert (i * 2.5).dtype is tgrad.float32 and (i * 2.5).to_dense().tolist() == [2.5, 0, 5.0]
    assert (i * 1j).dtype is tgrad.complex64
    q = i / tgrad.tensor(2.0, dtype=tgrad.float64)
    assert q.dtype is tgrad.float64 and q.to_dense().tolist() == [0.5, 0.0, 1.0]
    c = tgrad.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,)) / (2 + 1j)
    assert c.dtype is tgrad.complex64
    np.testing.assert_allclose(c.to_dense().numpy(), np.array([1, 0, 2]) / (2 + 1j),
                               rtol=1e-6)


def test_sparse_transpose_copies_values_and_permute_shares_them():
    s = tgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    s.t()._values().mul_(10)
    s.transpose(0, 0)._values().mul_(10)
    assert s._values().tolist() == [1.0, 2.0]
    s.permute(1, 0)._values().mul_(10)  # PyTorch's permute shares them
    assert s._values().tolist() == [10.0, 20.0]


def test_sparse_mm_checks_its_dense_operand_version():
    s = tgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), requires_grad=True)
    d = tgrad.ones(2, 2, requires_grad=True)
    o = tgrad.sparse.mm(s, d)
    with tgrad.no_grad():
        d.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        o.sum().backward()
    d2 = tgrad.ones(2, requires_grad=True)
    o2 = s * d2.expand(2, 2)
    with tgrad.no_grad():
        d2.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        o2.to_dense().sum().backward()
