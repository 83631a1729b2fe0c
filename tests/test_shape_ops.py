"""Shape ops, views, indexing, cat/stack/split/chunk and matmul: storage sharing, version
counters, gradients (vs NumPy float64 and finite differences) and error messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

D = tgrad.float64


def _t(arr, requires_grad=False):
    return tgrad.tensor(np.asarray(arr, dtype=np.float64), requires_grad=requires_grad)


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------------- views share storage
VIEW_OPS = {
    "view": lambda x: x.view(4, 6),
    "reshape": lambda x: x.reshape(-1),
    "permute": lambda x: x.permute(2, 0, 1),
    "transpose": lambda x: x.transpose(0, 2),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "broadcast_to": lambda x: tgrad.broadcast_to(x[:1], (3, 3, 4)),
    "squeeze": lambda x: x[:1].squeeze(0),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "flatten": lambda x: x.flatten(1),
    "getitem": lambda x: x[1, ::2, None, ...],
    "narrow": lambda x: x.narrow(2, 1, 2),
    "split": lambda x: x.split(1, dim=1)[2],
    "chunk": lambda x: x.chunk(2, dim=2)[1],
    "unbind": lambda x: x.unbind(1)[1],
    "contiguous": lambda x: x.contiguous(),
    "view_as": lambda x: x.view_as(tgrad.zeros(24)),
}


@pytest.mark.parametrize("name", sorted(VIEW_OPS))
def test_views_share_storage_and_version(name):
    x = tgrad.arange(24, dtype=D).reshape(2, 3, 4)
    v = VIEW_OPS[name](x)
    assert v._storage is x._storage, f"{name} must be a view"
    before = x._version
    x.add_(1.0)  # the view sees writes to its base and shares the version counter
    assert v._version == x._version == before + 1
    ref = VIEW_OPS[name](tgrad.arange(24, dtype=D).reshape(2, 3, 4)).detach().numpy() + 1.0
    np.testing.assert_array_equal(_np(v), ref)
    if name not in ("expand", "broadcast_to"):  # (writing to an expanded view is an error)
        v.mul_(2.0)  # and the base sees writes through the view
        assert x._version == before + 2
        np.testing.assert_array_equal(_np(VIEW_OPS[name](x)), ref * 2.0)


def test_inplace_through_expanded_view_raises():
    x = tgrad.zeros(1, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.expand(2, 3).add_(1.0)


def test_reshape_of_non_viewable_copies_and_view_refuses():
    x = tgrad.arange(12, dtype=D).reshape(3, 4).t()
    y = x.reshape(12)
    assert y._storage is not x._storage
    np.testing.assert_array_equal(_np(y), np.arange(12.0).reshape(3, 4).T.reshape(12))
    with pytest.raises(RuntimeError, match="view size is not compatible.*reshape"):
        x.view(12)


def test_advanced_index_copies():
    x = tgrad.arange(6, dtype=D)
    y = x[[0, 2]]
    assert y._storage is not x._storage
    y.add_(5.0)
    np.testing.assert_array_equal(_np(x), np.arange(6.0))


def test_advanced_index_result_is_c_contiguous():
    # PyTorch allocates x[key] fresh in row-major order of its shape for a contiguous x
    # (NumPy keeps the indexed dims outermost in memory when slices come first)
    a = np.arange(24.0).reshape(2, 3, 4)
    x, i = _t(a), tgrad.tensor([0, 2])
    m = tgrad.tensor([True, False, True])
    for key, np_key in (((slice(None), None, i), (slice(None), None, [0, 2])),
                        ((slice(None), i), (slice(None), [0, 2])),
                        ((Ellipsis, i), (Ellipsis, [0, 2])),
                        ((slice(None), m), (slice(None), [True, False, True])),
                        ((slice(None), i, i), (slice(None), [0, 2], [0, 2]))):
        y = x[key]
        ref = a[np_key]
        np.testing.assert_array_equal(_np(y), ref)
        assert y.is_contiguous(), key
        strides = [st // 8 for st in np.ascontiguousarray(ref).strides]
        assert all(s == r for s, r, n in zip(y.stride(), strides, y.shape) if n > 1), key
    assert _t(np.arange(6.0).reshape(2, 3))[:, None, i].stride() == (2, 2, 1)


# ---------------------------------------------------------------------- indexing
def test_repeated_indices_scatter_add():
    x = _t(np.arange(5.0), requires_grad=True)
    y = x[tgrad.tensor([0, 3, 0, 0, 4])]
    (y * _t([1, 2, 3, 4, 5])).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [1 + 3 + 4, 0, 0, 2, 5])


def test_bool_mask_values_and_grad():
    a = np.random.default_rng(1).standard_normal((4, 5))
    x = _t(a, requires_grad=True)
    m = a > 0
    y = x[tgrad.tensor(m)]
    np.testing.assert_array_equal(_np(y), a[m])
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), m.astype(np.float64))
    assert gradcheck(lambda t: t[tgrad.tensor(m)] ** 2, (x,))


def test_getitem_mixed_keys_match_numpy():
    a = np.random.default_rng(2).standard_normal((4, 5, 6))
    x = _t(a)
    keys = [(Ellipsis, 1), (None, 2, slice(None, None, 3)), (slice(1, None, 2), None, -1),
            (slice(None), [0, 4, 4], slice(2, 5)), ([1, 3], slice(None), [5, 0]),
            (np.array([True, False, True, True]), 0), (slice(10, 20),), (-4, -5, -6)]
    for k in keys:
        np.testing.assert_array_equal(_np(x[k]), a[k], err_msg=str(k))


def test_integers_in_advanced_keys_select_first_as_pytorch():
    """PyTorch applies integers as selects before the index arrays, so the arrays' dims stay
    in place; NumPy (which counts integers as index arrays) would move them to the front:
    for a (2, 3, 4) tensor, x[1, :, [0, 2]] is (3, 2) in PyTorch and (2, 3) in NumPy."""
    a = np.random.default_rng(5).standard_normal((2, 3, 4))
    m = np.array([True, False, True, True])
    cases = [((1, slice(None), [0, 2]), a[1][:, [0, 2]], (3, 2)),
             ((1, Ellipsis, [0, 2]), a[1][..., [0, 2]], (3, 2)),
             ((None, [0, 1], Ellipsis, 1), a[:, :, 1][None][:, [0, 1]], (1, 2, 3)),
             ((0, slice(None), m), a[0][:, m], (3, 3)),
             ((1, None, slice(None), [0, 2]), a[1][None][:, :, [0, 2]], (1, 3, 2)),
             ((slice(None), 1, [0, 3]), a[:, 1][:, [0, 3]], (2, 2)),
             (([1, 0], 1, [0, 2]), a[:, 1][[1, 0], [0, 2]], (2,))]
    w = np.random.default_rng(6).standard_normal
    for key, want, shape in cases:
        assert want.shape == shape  # the reference is PyTorch's documented order
        tkey = tuple(tgrad.tensor(k) if isinstance(k, np.ndarray) else k for k in key)
        for k in (key, tkey):
            x = _t(a, requires_grad=True)
            y = x[k]
            np.testing.assert_array_equal(_np(y), want, err_msg=str(key))
            g = w(shape)
            (y * _t(g)).sum().backward()
            ref = np.zeros(a.size)  # the gradient lands where the values came from
            np.add.at(ref, _flat_positions(a.shape, key), g.ravel())
            np.testing.assert_array_equal(_np(x.grad), ref.reshape(a.shape), err_msg=str(key))
        z = tgrad.tensor(a.copy())
        z[key] = tgrad.tensor(np.arange(want.size, dtype=np.float64).reshape(shape))
        ref = a.copy()
        ref.reshape(-1)[_flat_positions(a.shape, key)] = np.arange(want.size)
        np.testing.assert_array_equal(z.numpy(), ref, err_msg=str(key))
    x = tgrad.randn(2, 3, 4, dtype=D, requires_grad=True)
    assert gradcheck(lambda t: t[1, :, [0, 2, 2]] * 2.0, (x,))


def _flat_positions(shape: tuple, key: tuple) -> np.ndarray:
    """Flat positions of x[key] in PyTorch's order: integers select first (see above)."""
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    first = tuple(k if isinstance(k, int) or k is None or k is Ellipsis
                  or isinstance(k, slice) else slice(None) for k in key)
    rest = tuple(k for k in key if not isinstance(k, int))
    rest = tuple(slice(None) if k is None else k for k in rest)
    return flat[first][rest].ravel()


def test_getitem_gradgradcheck_on_strided_view():
    x = tgrad.randn(6, 5, dtype=D, requires_grad=True)
    f = lambda t: t.t()[1:, ::2][[0, 0, 2]] * t[0, 0]  # noqa: E731
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


def test_getitem_errors_name_the_op():
    x = tgrad.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 3"):
        x[3]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[tgrad.tensor([0.5])]
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        x["a"]  # PyTorch reads a str as a sequence of data
    with pytest.raises(IndexError, match="only integers, slices"):
        x[1.5]
    with pytest.raises(IndexError, match=r"index: too many indices.*\[3, 4\]"):
        x[0, 0, 0]


def test_empty_list_index():
    x = tgrad.zeros(3, 4)
    assert x[[]].shape == (0, 4)



def test_a_0d_integer_numpy_array_index_is_an_integer():
    # PyTorch reads np.array(k) as a 0-d tensor, i.e. the integer k: a view (x[k]), and
    # with a slice and a list it is no advanced index (NumPy's rule would move the
    # broadcast dim first: shape (2, 3) here instead of PyTorch's (3, 2))
    a = np.arange(24.0).reshape(2, 3, 4)
    x = _t(a)
    row = x[np.array(1)]
    assert row.shape == (3, 4) and row._base is x
    row.add_(100.0)
    np.testing.assert_array_equal(_np(x)[1], a[1] + 100.0)
    y = x[np.array(0), :, [0, 1]]
    np.testing.assert_array_equal(_np(y), a[0][:, [0, 1]])
    for k in (np.int32, np.int8, np.int64):
        np.testing.assert_array_equal(_np(x[np.array(-1, dtype=k), 2]), _np(x)[-1, 2])
    z = tgrad.zeros(2, 3, 4, dtype=D)
    z[np.array(0), :, [0, 1]] = tgrad.tensor(np.arange(6.0).reshape(3, 2), dtype=D)
    np.testing.assert_array_equal(_np(z)[0][:, [0, 1]], np.arange(6.0).reshape(3, 2))
    with pytest.raises(IndexError):
        x[np.array(2)]

def test_a_range_in_the_key_is_an_index_sequence():
    # "What is torch.nn really?": nll as -input[range(n), target].mean(); PyTorch reads a
    # range as a sequence of indices (tgrad raised IndexError 'got range')
    a = np.arange(24.0).reshape(4, 6)
    target = np.array([5, 0, 2, 1])
    x = _t(a, requires_grad=True)
    y = -x[range(4), tgrad.tensor(target)].mean()
    np.testing.assert_allclose(_np(y), -a[np.arange(4), target].mean(), rtol=1e-15)
    y.backward()
    g = np.zeros((4, 6))
    g[np.arange(4), target] = -0.25
    np.testing.assert_array_equal(_np(x.grad), g)
    np.testing.assert_array_equal(_np(x[range(1, 4, 2)]), a[[1, 3]])
    np.testing.assert_array_equal(_np(x[:, range(5, 0, -2)]), a[:, [5, 3, 1]])
    assert x[range(0)].shape == (0, 6)
    z = tgrad.zeros(4, 6, dtype=D)
    z[range(4), tgrad.tensor(target)] = 1.0
    np.testing.assert_array_equal(_np(z), (g != 0).astype(float))


def test_a_tuple_inside_the_key_is_an_index_sequence():
    # PyTorch (and NumPy): x[(2, 0), 1:] indexes dim 0 with the sequence (2, 0), as a list
    # does (tgrad raised IndexError 'got tuple')
    a = np.arange(12.0).reshape(3, 4)
    x = _t(a, requires_grad=True)
    y = x[(2, 0), 1:]
    np.testing.assert_array_equal(_np(y), a[[2, 0], 1:])
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [[0, 1, 1, 1], [0, 0, 0, 0], [0, 1, 1, 1]])
    np.testing.assert_array_equal(_np(x[:, ((0, 1), (3, 3))]), a[:, [[0, 1], [3, 3]]])
    x = _t(a)
    x[(0, 0), (1, 2)] = -1.0
    want = a.copy()
    want[[0, 0], [1, 2]] = -1.0
    np.testing.assert_array_equal(_np(x), want)


# ---------------------------------------------------------------------- cat/stack/split/chunk
def test_cat_values_promotion_and_grad():
    a = _t(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = _t(np.ones((1, 3)), requires_grad=True)
    y = tgrad.cat([a, b, a], 0)
    np.testing.assert_array_equal(_np(y), np.concatenate([_np(a), _np(b), _np(a)]))
    (y * _t(np.arange(15.0).reshape(5, 3))).sum().backward()
    w = np.arange(15.0).reshape(5, 3)
    np.testing.assert_array_equal(_np(a.grad), w[0:2] + w[3:5])
    np.testing.assert_array_equal(_np(b.grad), w[2:3])
    mixed = tgrad.cat([tgrad.tensor([1, 2]), tgrad.tensor([0.5])])
    assert mixed.dtype is tgrad.float32
    np.testing.assert_array_equal(mixed.numpy(), [1.0, 2.0, 0.5])
    # legacy: 1-D empty tensors are skipped whatever the other shapes
    np.testing.assert_array_equal(tgrad.cat([tgrad.zeros(0), tgrad.ones(2, 2)]).numpy(),
                                  np.ones((2, 2)))
    assert y.grad_fn.name() == "CatBackward0"


def test_stack_is_one_node_with_pytorchs_name():
    # PyTorch: StackBackward0 (saved dim), an edge per input, d x_i = g.select(dim, i)
    rng = np.random.default_rng(2)
    a = _t(rng.standard_normal((2, 3)), requires_grad=True)
    b = tgrad.tensor([[1, 2, 3], [4, 5, 6]])  # promoted, no edge of its own
    y = tgrad.stack([a, b, a], 1)
    assert y.shape == (2, 3, 3) and y.dtype is a.dtype
    assert y.grad_fn.name() == "StackBackward0" and y.grad_fn._saved_dim == 1
    assert [type(n).__name__ if n else None for n, _ in y.grad_fn.next_functions] == \
        ["AccumulateGrad", None, "AccumulateGrad"]
    np.testing.assert_array_equal(_np(y), np.stack([_np(a), b.numpy(), _np(a)], 1))
    w = rng.standard_normal((2, 3, 3))
    (y * _t(w)).sum().backward()
    np.testing.assert_allclose(_np(a.grad), w[:, 0] + w[:, 2], rtol=1e-15)
    x, z = (_t(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(2))
    assert tgrad.autograd.gradcheck(lambda p, q: tgrad.stack([p, q * q], -1), (x, z))
    assert tgrad.autograd.gradgradcheck(lambda p, q: tgrad.stack([p * q, q], 0), (x, z))
    fa = tgrad.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(_t([1.0, 2.0]), _t([5.0, 6.0]))
        np.testing.assert_array_equal(fa.unpack_dual(tgrad.stack([d, d * 2])).tangent.numpy(),
                                      [[5.0, 6.0], [10.0, 12.0]])


def test_unbind_stack_many_views_values_layout_and_gradients():
    """The CPU's stack (each input's new dim by NumPy indexing, written into a C-contiguous
    result) of non-contiguous unbind views, 0-d and empty pieces; the backward's pieces
    (views of g made directly when no graph is recorded, select's otherwise: double
    backward and gradgradcheck)."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((5, 7)).astype(np.float32)
    for d in (0, 1, -1, -2):
        x = tgrad.tensor(w, requires_grad=True)
        y = tgrad.stack(tgrad.unbind(x, 1), d)  # columns: stride-7 views
        assert y.is_contiguous() and y.grad_fn.name() == "StackBackward0"
        np.testing.assert_array_equal(y.detach().numpy(), np.stack(list(w.T), d))
        g = rng.standard_normal(y.shape).astype(np.float32)
        y.backward(tgrad.tensor(g))
        np.testing.assert_array_equal(x.grad.numpy(), np.moveaxis(g, d, 0).T)
    pts = tgrad.unbind(tgrad.tensor(w[0]), 0)  # 0-d pieces
    np.testing.assert_array_equal(tgrad.stack(pts, 0).numpy(), w[0])
    assert tgrad.stack([tgrad.zeros(0, 3)] * 4, 1).shape == (0, 4, 3)
    x = _t(rng.standard_normal((3, 4)), requires_grad=True)
    y = tgrad.stack(tgrad.unbind(x * x, 1), 0)
    (gx,) = tgrad.autograd.grad(y.sum(), x, create_graph=True)
    assert gx.grad_fn is not None
    (ggx,) = tgrad.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(_np(ggx), np.full((3, 4), 2.0), rtol=1e-15)
    assert gradcheck(lambda p: tgrad.stack(tgrad.unbind(p, 1)[::-1], 0), (x,))
    assert gradgradcheck(lambda p: tgrad.stack(tgrad.unbind(p * p, 0), 1), (x,))


def test_cat_stack_errors():
    # PyTorch's types: cat's empty list is a ValueError, the stacking ops' a RuntimeError
    with pytest.raises(ValueError, match=r"^cat\(\): expected a non-empty list of Tensors"):
        tgrad.cat([])
    for name in ("stack", "hstack", "vstack", "dstack", "column_stack"):
        with pytest.raises(RuntimeError, match=f"^{name} expects a non-empty TensorList"):
            getattr(tgrad, name)([])
    with pytest.raises(RuntimeError, match=r"cat\(\): Sizes of tensors must match except in "
                       r"dimension 0. Expected size 3 but got size 4 for tensor number 1"):
        tgrad.cat([tgrad.zeros(2, 3), tgrad.zeros(2, 4)])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tgrad.cat([tgrad.zeros(2, 3), tgrad.zeros(3)])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        tgrad.cat([tgrad.zeros(()), tgrad.zeros(())])
    # one tensor (or a generator, an array) is no sequence of tensors: PyTorch's TypeError
    # naming the op (hstack/vstack/dstack/column_stack/row_stack took it as its rows)
    for name in ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
                 "column_stack", "row_stack"):
        for bad, kind in ((tgrad.zeros(3), "Tensor"), ((t for t in [tgrad.zeros(3)]),
                                                       "generator")):
            with pytest.raises(TypeError, match=f"^{name}\\(\\): argument 'tensors' \\(position "
                                                f"1\\) must be tuple of Tensors, not {kind}"):
                getattr(tgrad, name)(bad)
    with pytest.raises(TypeError, match="hstack\\(\\): expected Tensor as element 1 in argument "
                                        "0, but got int"):
        tgrad.hstack([tgrad.zeros(2), 1])
    assert tgrad.row_stack((tgrad.zeros(2), tgrad.ones(2))).tolist() == [[0, 0], [1, 1]]
    assert tgrad.concat((tgrad.zeros(1), tgrad.ones(1))).tolist() == [0, 1]
    with pytest.raises(IndexError, match="cat: Dimension out of range"):
        tgrad.cat([tgrad.zeros(2)], 1)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but "
                       r"got \[2\] at entry 0 and \[3\] at entry 1"):
        tgrad.stack([tgrad.zeros(2), tgrad.zeros(3)])


def test_stack_gradgradcheck():
    a = tgrad.randn(2, 3, dtype=D, requires_grad=True)
    b = tgrad.randn(2, 3, dtype=D, requires_grad=True)
    f = lambda x, y: tgrad.stack([x, y * x, y], 1)  # noqa: E731
    assert f(a, b).shape == (2, 3, 3)
    assert gradcheck(f, (a, b)) and gradgradcheck(f, (a, b))


def test_split_chunk_semantics():
    x = tgrad.arange(10, dtype=D)
    assert [p.shape[0] for p in x.split(3)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in tgrad.split(x, [2, 0, 8])] == [2, 0, 8]
    assert [p.shape[0] for p in x.chunk(4)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in x.chunk(6)] == [2, 2, 2, 2, 2]  # PyTorch: ceil-sized pieces
    assert [p.shape[0] for p in tgrad.zeros(0).chunk(3)] == [0, 0, 0]
    np.testing.assert_array_equal(_np(x.chunk(3)[2]), [8.0, 9.0])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum "
                       r"exactly to 10"):
        x.split([3, 3])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        x.chunk(0)
    with pytest.raises(RuntimeError, match="narrow.*exceeds dimension size"):
        x.narrow(0, 8, 3)
    # PyTorch: a start outside [-size, size] is an IndexError, a negative length a
    # RuntimeError; start == size gives an empty piece; a 0-d int tensor start works
    for start in (11, -11):
        with pytest.raises(IndexError, match=rf"narrow\(\): start out of range \(expected to "
                                             rf"be in range of \[-10, 10\], but got {start}\)"):
            x.narrow(0, start, 0)
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative"):
        x.narrow(0, 1, -1)
    assert x.narrow(0, 10, 0).shape == (0,)
    np.testing.assert_array_equal(_np(x.narrow(0, -10, 2)), [0.0, 1.0])
    np.testing.assert_array_equal(_np(x.narrow(0, tgrad.tensor(-2), 2)), [8.0, 9.0])
    with pytest.raises(IndexError, match=r"expected to be in range of \[0, 0\], but got -1"):
        tgrad.zeros(0, 3).narrow(0, -1, 0)


def test_diag_embed_of_a_0d_tensor_is_an_index_error():
    with pytest.raises(IndexError, match="diag_embed: input must be at least 1-dimensional"):
        tgrad.diag_embed(tgrad.tensor(1.0))


def test_split_grad_flows_to_all_pieces():
    x = tgrad.randn(7, 2, dtype=D, requires_grad=True)
    f = lambda t: tuple(p * (i + 1.0) for i, p in enumerate(t.split(3)))  # noqa: E731
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


# ---------------------------------------------------------------------- matmul
@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 2)),
                                   ((3, 5), (5, 2)), ((2, 1, 3, 5), (4, 5, 2)),
                                   ((5,), (2, 5, 3)), ((2, 3, 5), (5,))])
def test_matmul_shapes_values_grads(sa, sb):
    rng = np.random.default_rng(3)
    a_np, b_np = rng.standard_normal(sa), rng.standard_normal(sb)
    a, b = _t(a_np, True), _t(b_np, True)
    y = a @ b
    np.testing.assert_allclose(_np(y), np.matmul(a_np, b_np), rtol=1e-12, atol=1e-12)
    assert gradcheck(tgrad.matmul, (a, b)) and gradgradcheck(tgrad.matmul, (a, b))


def test_matmul_with_a_1d_operand_is_not_a_view():
    # PyTorch squeezes the product in place: the result is its own tensor (no _base), and
    # writing into it in place keeps the gradient right
    rng = np.random.default_rng(5)
    v_np, m_np, b_np = rng.standard_normal(3), rng.standard_normal((3, 4)), rng.standard_normal(
        (2, 4, 3))
    v, m, bt = _t(v_np, True), _t(m_np, True), _t(b_np, True)
    for y, ref in ((v @ m, v_np @ m_np), (m.t() @ v, m_np.T @ v_np), (bt @ v, b_np @ v_np),
                   (tgrad.nn.functional.linear(v, m.t()), v_np @ m_np)):
        assert not y._is_view() and y._base is None
        np.testing.assert_allclose(_np(y), ref, rtol=1e-12)
    y = v @ m
    y.mul_(2.0)
    y.sum().backward()
    np.testing.assert_allclose(_np(v.grad), 2 * m_np.sum(1), rtol=1e-12)
    np.testing.assert_allclose(_np(m.grad), 2 * np.outer(v_np, np.ones(4)), rtol=1e-12)


def test_matmul_non_contiguous_and_empty():
    rng = np.random.default_rng(4)
    base = rng.standard_normal((6, 8))
    a = _t(base, True)
    y = a[::2, 1::2].t() @ a[1::2, ::2]  # [4, 3] @ [3, 4], both strided views
    np.testing.assert_allclose(_np(y), base[::2, 1::2].T @ base[1::2, ::2], rtol=1e-12)
    z = tgrad.zeros(3, 0, dtype=D, requires_grad=True) @ tgrad.zeros(0, 2, dtype=D)
    np.testing.assert_array_equal(_np(z), np.zeros((3, 2)))
    z.sum().backward()


def test_mm_bmm_and_errors():
    a, b = tgrad.randn(2, 3, 4, dtype=D), tgrad.randn(2, 4, 5, dtype=D)
    np.testing.assert_allclose(_np(tgrad.bmm(a, b)), np.matmul(_np(a), _np(b)), rtol=1e-12)
    np.testing.assert_allclose(_np(a[0].mm(b[0])), _np(a[0]) @ _np(b[0]), rtol=1e-12)
    with pytest.raises(RuntimeError,
                       match=r"matmul: mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x2\)"):
        tgrad.randn(3, 4) @ tgrad.randn(5, 2)
    with pytest.raises(RuntimeError, match="batch dimensions cannot be broadcast"):
        tgrad.randn(2, 3, 4) @ tgrad.randn(3, 4, 5)
    with pytest.raises(RuntimeError, match="mm: expected 2D tensors"):
        tgrad.mm(a, b)
    with pytest.raises(RuntimeError, match="bmm: expected 3D tensors"):
        tgrad.bmm(a[0], b[0])
    with pytest.raises(RuntimeError, match="bmm: batch sizes must match"):
        tgrad.bmm(a, tgrad.randn(3, 4, 5, dtype=D))
    with pytest.raises(RuntimeError, match="need to be at least 1D"):
        tgrad.matmul(tgrad.zeros(()), tgrad.zeros(3))
    with pytest.raises(RuntimeError, match="same dtype"):
        tgrad.zeros(2, 2) @ tgrad.zeros(2, 2, dtype=D)


@pytest.mark.parametrize("k", [1023, 1025])
def test_float32_matmul_long_reduction_within_rounding_bound(k):
    """float32 accumulates in float32 (as PyTorch on the CPU): the error against float64 on
    the same inputs stays within the standard bound gamma_K * sum|a||b|, gamma_K ~ K u."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((5, k)).astype(np.float32)
    b = rng.standard_normal((k, 4)).astype(np.float32)
    got = (tgrad.from_numpy(a) @ tgrad.from_numpy(b)).numpy().astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = k * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(got - exact) <= bound)
    assert got.dtype == np.float64 and tgrad.from_numpy(a).dtype is tgrad.float32


def test_integer_matmul_is_exact():
    a = tgrad.tensor([[1, 2], [3, 4]])
    y = a @ a
    assert y.dtype is tgrad.int64
    np.testing.assert_array_equal(y.numpy(), [[7, 10], [15, 22]])


def test_view_errors():
    x = tgrad.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4, -1\]' is invalid for input of size 6"):
        x.view(4, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(3\) must match "
                       r"the existing size \(2\) at non-singleton dimension 0.  Target sizes: "
                       r"\[3, 3\].  Tensor sizes: \[2, 3\]$"):
        x.expand(3, 3)
    with pytest.raises(RuntimeError, match=r"tensor \(4\) must match the existing size \(3\) at "
                       r"non-singleton dimension 2"):
        x.expand(5, 2, 4)
    with pytest.raises(RuntimeError, match=r"^permute\(\): duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        tgrad.zeros(1, 2, 3).t()



def test_expand_without_recording_is_the_same_view():
    """Under no_grad (and in a backward) expand skips the Function machinery: the result is
    still a view of the base (shared storage and version counter), -1 keeps a dim, sizes
    may be NumPy ints, and a bad size raises PyTorch's error."""
    x = tgrad.tensor(np.arange(3.0).reshape(3, 1), requires_grad=True)
    with tgrad.no_grad():
        y = x.expand(2, -1, np.int64(4))
        with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(2\) must match "
                                               r"the existing size \(3\)"):
            x.expand(2, 2)
        same = x.expand(3, 1)  # a new view even for x's own shape, never x itself
        assert same is not x and same._base is x and same.shape == (3, 1)
    assert y.shape == (2, 3, 4) and not y.requires_grad and y.grad_fn is None
    assert y._base is x and y._storage is x._storage
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(np.arange(3.0)[:, None], (2, 3, 4)))
    with tgrad.no_grad():
        x.mul_(2.0)
    assert y._version == x._version == 1
    np.testing.assert_array_equal(y.numpy()[1, :, 3], [0.0, 2.0, 4.0])


def test_split_chunk_unbind_are_one_node_whose_backward_concatenates():
    a = np.random.default_rng(0).standard_normal((4, 6))
    x = tgrad.tensor(a, requires_grad=True)
    pieces = x.split([1, 2, 3], 1)
    assert all(p.grad_fn is pieces[0].grad_fn for p in pieces)
    assert pieces[0].grad_fn.name() == "SplitWithSizesBackward0"  # a list of sizes (PyTorch)
    assert x.split(2, 1)[0].grad_fn.name() == "SplitBackward0"
    (pieces[2] * 3.0).sum().backward()  # the other pieces get no gradient: zeros there
    ref = np.zeros_like(a)
    ref[:, 3:] = 3.0
    np.testing.assert_array_equal(x.grad.numpy(), ref)
    rows = x.unbind(0)
    assert rows[0].grad_fn.name() == "UnbindBackward0" and rows[1]._base is x
    assert tgrad.autograd.gradcheck(lambda t: t.chunk(3, 1)[1] * t.unbind(1)[0][:, None],
                                    (x,))
    assert tgrad.autograd.gradgradcheck(lambda t: t.unbind(0)[2] ** 2, (x,))
    y = x.detach().clone().requires_grad_()
    z = y * 1.0
    with pytest.raises(RuntimeError, match="Output 1 of Split is a view and is being modified "
                       "inplace. This view is the output of a function that returns multiple "
                       "views"):  # PyTorch refuses in-place on a multi-output view
        z.chunk(2, 0)[1].mul_(5.0)


def test_unbind_backward_when_few_pieces_get_a_gradient():
    a = np.random.default_rng(1).standard_normal((9, 3))
    x = tgrad.tensor(a, requires_grad=True)
    rows = x.unbind(0)
    (rows[2] * rows[7]).sum().backward()  # 2 of 9 pieces: written into one zero tensor
    ref = np.zeros_like(a)
    ref[2], ref[7] = a[7], a[2]
    np.testing.assert_array_equal(x.grad.numpy(), ref)
    assert tgrad.autograd.gradgradcheck(lambda t: t.unbind(0)[4] ** 3, (x,))


def test_unfold_is_a_view_with_pytorch_errors():
    base = np.arange(12.0).reshape(3, 4)
    x = tgrad.tensor(base.copy())
    w = x.unfold(1, 2, 1)  # (3, 3, 2): overlapping windows share elements
    assert w.shape == (3, 3, 2) and w._base is x
    np.testing.assert_array_equal(w.numpy()[1, 2], base[1, 2:4])
    x[1, 3] = -1.0  # the view sees writes to its base
    assert w[1, 2, 1].item() == -1.0
    leaf = tgrad.tensor(base, requires_grad=True)
    leaf.unfold(1, 3, 1).sum().backward()  # element k of a row lies in min(k+1, 3, 4-k) windows
    np.testing.assert_array_equal(leaf.grad.numpy(), np.tile([1.0, 2.0, 2.0, 1.0], (3, 1)))
    for args, msg in (((1, 5, 1), "maximum size for tensor at dimension 1 is 4 but size is 5"),
                      ((1, 2, 0), "step is 0 but must be > 0"),
                      ((0, -1, 1), "size is -1 but must be >= 0")):
        with pytest.raises(RuntimeError, match=f"^unfold: {msg}$"):
            x.unfold(*args)
    with pytest.raises(IndexError):
        x.unfold(2, 1, 1)


def test_matmul_plain_backward_matches_numpy_and_composite():
    """A plain backward of a 2-D product runs the products on the backend arrays; it must
    give what the composite (create_graph=True) and NumPy float64 give, for transposed
    (non-contiguous) operands and float16 too."""
    rng = np.random.default_rng(7)
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5), (np.float16, 2e-2)):
        a_np = rng.standard_normal((17, 5)).astype(dtype)
        b_np = rng.standard_normal((3, 17)).astype(dtype).T  # 17x3 after .T, taken as view
        g_np = rng.standard_normal((5, 3)).astype(dtype)
        grads = []
        for create_graph in (False, True):
            a = tgrad.tensor(a_np, requires_grad=True).t()  # [5, 17], a transposed view
            b = tgrad.tensor(np.ascontiguousarray(b_np.T), requires_grad=True)
            y = a @ b.t()
            ga, gb = tgrad.autograd.grad(y, (a, b), tgrad.tensor(g_np),
                                         create_graph=create_graph)
            grads.append((ga.detach().numpy().astype(np.float64),
                          gb.detach().numpy().astype(np.float64)))
        a64, b64, g64 = (x.astype(np.float64) for x in (a_np.T, b_np, g_np))
        want_a, want_b = g64 @ b64.T, (a64.T @ g64).T  # b's grad is of b = (b^T)^T
        for ga, gb in grads:
            np.testing.assert_allclose(ga, want_a, rtol=rtol, atol=rtol)
            np.testing.assert_allclose(gb, want_b, rtol=rtol, atol=rtol)
        np.testing.assert_array_equal(grads[0][0], grads[1][0])



@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("case", ["bmm", "4d_views", "broadcast", "empty"])
def test_batched_matmul_plain_backward_matches_composite(case, dtype):
    """A plain backward of a batched product over one batch shape (bmm, attention's 4-D
    products of permuted views) runs the backend's batched matmul on the arrays: bit for bit
    what the composite (create_graph=True) gives, and NumPy float64's values; a broadcast
    batch keeps the composite (its gradient summed over the broadcast dims)."""
    rng = np.random.default_rng(8)
    rtol = {np.float64: 1e-12, np.float32: 1e-5, np.float16: 2e-2}[dtype]
    if case == "bmm":
        a_np, b_np = rng.standard_normal((3, 5, 7)), rng.standard_normal((3, 7, 2))
    elif case == "4d_views":  # (N, H, L, hd) heads of a (L, N, 3, H, hd) projection
        proj = rng.standard_normal((5, 2, 3, 3, 4))
        a_np, b_np = proj[:, :, 0].transpose(1, 2, 0, 3), proj[:, :, 1].transpose(1, 2, 3, 0)
    elif case == "broadcast":
        a_np, b_np = rng.standard_normal((2, 1, 5, 3)), rng.standard_normal((1, 3, 3, 4))
    else:
        a_np, b_np = rng.standard_normal((0, 3, 5, 7)), rng.standard_normal((0, 3, 7, 2))
    a_np, b_np = a_np.astype(dtype), b_np.astype(dtype)
    g_np = rng.standard_normal(np.matmul(a_np, b_np).shape).astype(dtype)
    grads = []
    for create_graph in (False, True):
        if case == "4d_views":  # the operands read in place: permuted views of one leaf
            base = tgrad.tensor(proj.astype(dtype), requires_grad=True)
            a, b = base[:, :, 0].permute(1, 2, 0, 3), base[:, :, 1].permute(1, 2, 3, 0)
            assert not a.is_contiguous() and not b.is_contiguous()
        else:
            a = tgrad.tensor(a_np, requires_grad=True)
            b = tgrad.tensor(b_np, requires_grad=True)
        ga, gb = tgrad.autograd.grad(a @ b, (a, b), tgrad.tensor(g_np),
                                     create_graph=create_graph)
        grads.append([x.detach().numpy() for x in (ga, gb)])
    a64, b64, g64 = (x.astype(np.float64) for x in (a_np, b_np, g_np))
    want_a = np.matmul(g64, np.swapaxes(b64, -1, -2))
    want_b = np.matmul(np.swapaxes(a64, -1, -2), g64)
    if case == "broadcast":
        want_a, want_b = want_a.sum(1, keepdims=True), want_b.sum(0, keepdims=True)
    for ga, gb in grads:
        assert ga.shape == a_np.shape and gb.shape == b_np.shape
        np.testing.assert_allclose(ga.astype(np.float64), want_a, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(gb.astype(np.float64), want_b, rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])

# ------------------------------------------------- differential-test fixes (PyTorch 2.13)
def test_same_shape_expand_under_no_grad_is_a_new_view():
    x = tgrad.zeros(2, 3)
    with tgrad.no_grad():
        y = x.expand(2, 3)
        y.unsqueeze_(0)  # re-points y only
        z = x.broadcast_to((2, 3))
    assert y is not x and z is not x
    assert x.shape == (2, 3) and y.shape == (1, 2, 3)
    assert z._storage is x._storage


def test_inplace_through_expanded_views_that_do_not_overlap():
    """PyTorch refuses a write only when the written tensor has a dim of stride 0 and size
    > 1; an expand that adds size-1 dims, or one row of an expanded tensor, is writable."""
    x = tgrad.zeros(2, 3)
    x.expand(2, 3).add_(1)
    x.expand(3, 2, 3)[0].add_(1)
    assert x.sum().item() == 12.0
    x.expand(1, 2, 3).fill_(3)
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 3.0))
    x.broadcast_to(x.shape).mul_(2)
    x.expand(3, 2, 3)[0] = 5
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 5.0))
    x.expand(3, 2, 3)[1].copy_(tgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    x.expand(3, 2, 3)[2][tgrad.tensor([0])] = 7.0
    x.expand(4, 2, 3)[3].masked_fill_(tgrad.tensor([[False, True, False]] * 2), 9.0)
    x.expand(4, 2, 3)[3].index_put_((tgrad.tensor([1]), tgrad.tensor([2])), tgrad.tensor(8.0))
    np.testing.assert_array_equal(x.numpy(), [[7.0, 9.0, 7.0], [4.0, 9.0, 8.0]])
    # recorded: the gradient flows through the write into the base
    a = tgrad.tensor(np.ones((2, 3)), requires_grad=True)
    w = tgrad.tensor(np.arange(3.0), requires_grad=True)
    b = a * 2
    b.expand(4, 2, 3)[1][0].mul_(w)
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0.0, 2.0, 4.0], [2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_inplace_into_an_overlapping_view_raises_pytorch_error():
    x = tgrad.zeros(2, 3)
    msg = "more than one element of the written-to tensor refers to a single memory location"
    writes = [lambda: x.expand(3, 2, 3).add_(1),
              lambda: x[0:1].expand(2, 3).copy_(tgrad.ones(2, 3)),
              lambda: x.expand(3, 2, 3)[:, 0].add_(1),
              lambda: x[:, :1].expand(2, 3).__setitem__((slice(None), slice(None)),
                                                        tgrad.ones(2, 3)),
              lambda: x[0:1].expand(2, 3).fill_(tgrad.tensor(1.0)),
              lambda: x[0:1].expand(2, 3).index_put_((tgrad.tensor([0]),), tgrad.tensor(1.0)),
              lambda: x.as_strided((2, 2), (0, 1)).add_(1)]
    for write in writes:
        with pytest.raises(RuntimeError, match=msg):
            write()
    assert not x.any().item()  # nothing was written
    # PyTorch's fill_(number) and zero_ skip the check: every element gets the same value
    x[0:1].expand(2, 3).fill_(4.0)
    np.testing.assert_array_equal(x.numpy(), [[4.0] * 3, [0.0] * 3])
    x[0:1].expand(2, 3).zero_()
    assert not x.any().item()
    # so do masked_fill_ and index_fill_ (each filled element's aliases hold the value too)
    x[0:1].expand(2, 3).masked_fill_(tgrad.tensor(True), 1.0)
    np.testing.assert_array_equal(x.numpy(), [[1.0] * 3, [0.0] * 3])
    x.zero_()
    # an empty expanded view has nothing to write
    assert tgrad.zeros(1, 0).expand(3, 0).add_(1).shape == (3, 0)


def test_inplace_operand_partly_overlapping_the_output_raises_pytorch_error():
    # PyTorch's assert_no_partial_overlap: an operand sharing some (not exactly all) of the
    # written elements would be read after part of it was overwritten
    msg = "some elements of the input tensor and the written-to tensor refer to a single"

    def fresh():
        return tgrad.tensor([2.0, 4.0, 8.0, 16.0])

    writes = [lambda a: a.__itruediv__(a[1]), lambda a: a.add_(a[0]),
              lambda a: a[1:].copy_(a[:-1]), lambda a: a[1:].__iadd__(a[:-1]),
              lambda a: a.__setitem__(slice(1, None), a[:-1]),
              lambda a: a.view(2, 2).add_(a.view(2, 2).t()), lambda a: a.clamp_(min=a[0]),
              lambda a: a.lerp_(a[0], 0.5),
              lambda a: a.lt_(a[1]),
              lambda a: a.view(2, 2).addcmul_(a.view(2, 2)[0], a.view(2, 2)[1]),
              # index / scatter ops refuse any overlap with their source (assert_no_overlap)
              lambda a: a.index_add_(0, tgrad.tensor([0, 1, 2, 3]), a),
              lambda a: a.index_add_(0, tgrad.tensor([0, 1]), a[2:]),
              lambda a: a.scatter_(0, tgrad.tensor([0, 1]), a[2:]),
              lambda a: a.index_copy_(0, tgrad.tensor([0, 1]), a[2:]),
              lambda a: a.__setitem__(tgrad.tensor([0, 1]), a[2:]),
              # x[idx] = x: index_put_ refuses any overlap with its value too
              lambda a: a.__setitem__(tgrad.tensor([3, 2, 1, 0]), a),
              lambda a: a.__setitem__(tgrad.tensor([True, False, True, False]), a[:2])]
    for write in writes:
        a = fresh()
        with pytest.raises(RuntimeError, match=msg):
            write(a)
        np.testing.assert_array_equal(a.numpy(), [2.0, 4.0, 8.0, 16.0])  # nothing written
    # recorded for autograd too
    w = tgrad.tensor([2.0, 4.0, 8.0, 16.0], requires_grad=True)
    (w * 1).add_((w * 1)[0])  # (different storages: fine)
    b = w * 1
    with pytest.raises(RuntimeError, match=msg):
        b[1:].mul_(b[:-1])
    # allowed: the same elements (read before the write), disjoint parts, values read as
    # numbers (fill_, masked_fill_), operands not dense in memory (PyTorch cannot tell)
    a = fresh()
    a.add_(a)
    a.copy_(a)
    a[None] = a  # (the same elements in the same order, whatever size-1 dims: PyTorch's too)
    a[None, :] = a
    a.view(4, 1)[:, 0] = a
    a.mul_(a.view(2, 2).view(4))
    a[:2].copy_(a[2:])
    np.testing.assert_array_equal(a.numpy(), [256.0, 1024.0, 256.0, 1024.0])
    a = fresh()
    a.masked_fill_(a > 3, a[0])
    a.fill_(a[1])
    np.testing.assert_array_equal(a.numpy(), [2.0] * 4)
    m = tgrad.arange(9.0).reshape(3, 3)
    m[::2].add_(m[1])
    np.testing.assert_array_equal(m.numpy(), [[3, 5, 7], [3, 4, 5], [9, 11, 13]])
    # x[k] op= y writes the updated view onto itself; a 0-d value fills (PyTorch's copy_to)
    m = tgrad.ones(2, 2)
    m[1:, 1:] -= 1
    np.testing.assert_array_equal(m.numpy(), [[1, 1], [1, 0]])
    m = tgrad.arange(6.0).reshape(2, 3)
    m[0:1] *= 2
    np.testing.assert_array_equal(m.numpy(), [[0, 2, 4], [3, 4, 5]])
    v = tgrad.arange(4.0)
    v[1:3] = v[0]
    np.testing.assert_array_equal(v.numpy(), [0, 0, 0, 3])


def test_inplace_into_a_self_overlapping_strided_view_raises():
    # unfold windows that overlap (step < size) and as_strided views with overlapping
    # strides reach one memory element from two indices: an in-place write there would be
    # ambiguous and its gradient wrong (PyTorch only detects stride-0 dims: it multiplies
    # such an element twice), so tgrad gives PyTorch's overlap error for these too
    msg = "more than one element of the written-to tensor refers to a single memory location"
    a = tgrad.tensor(np.arange(1.0, 7.0), requires_grad=True)
    b = a * 1
    for write in (lambda: b.unfold(0, 2, 1).mul_(3.0),
                  lambda: b.as_strided((2, 3), (1, 1)).add_(1.0),
                  lambda: b.as_strided((2, 2, 2), (2, 1, 1)).copy_(tgrad.zeros(2, 2, 2, dtype=D)),
                  lambda: b.detach().unfold(0, 3, 2).add_(1)):
        with pytest.raises(RuntimeError, match=msg):
            write()
    np.testing.assert_array_equal(b.detach().numpy(), np.arange(1.0, 7.0))  # nothing written
    # views that do not overlap themselves still take in-place writes: windows with
    # step >= size, strides that interleave without a shared element, zero_ (one value)
    b.unfold(0, 2, 2).mul_(3.0)
    b.as_strided((2, 2), (1, 2), 1)[:, 1].add_(1.0)  # elements 3 and 4 (0-based)
    b.sum().backward()
    np.testing.assert_array_equal(b.detach().numpy(), [3.0, 6.0, 9.0, 13.0, 16.0, 18.0])
    np.testing.assert_array_equal(a.grad.numpy(), [3.0] * 6)
    x = tgrad.zeros(6)
    x.unfold(0, 3, 1).zero_()
    x.as_strided((3, 2), (1, 1)).fill_(2.0)
    np.testing.assert_array_equal(x.numpy(), [2.0] * 4 + [0.0] * 2)
    y = tgrad.zeros(11)
    y.as_strided((3, 3), (3, 2)).add_(1.0)  # offsets 0 2 4 3 5 7 6 8 10: all different
    np.testing.assert_array_equal(y.numpy(), [1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1])


def test_repeat_and_tile_with_empty_sizes_on_0d():
    x = tgrad.tensor(3.0, dtype=D, requires_grad=True)
    for y in (x.repeat(()), x.repeat([]), x.tile(()), tgrad.tile(x, ())):
        assert y.shape == () and y.item() == 3.0
    assert tgrad.tensor([3.0]).tile(()).tolist() == [3.0]
    with pytest.raises(TypeError, match="repeats"):
        x.repeat()
    with pytest.raises(RuntimeError, match="can not be smaller than number of dimensions"):
        tgrad.tensor([3.0]).repeat(())
    out = x.repeat(())
    out.backward()
    assert x.grad.item() == 1.0
    assert out._storage is not x._storage  # a copy, as PyTorch's repeat


def test_repeat_interleave_repeats_only_keeps_int_dtype():
    for dt in (tgrad.int32, tgrad.int64):
        out = tgrad.repeat_interleave(tgrad.tensor([1, 0, 2], dtype=dt))
        assert out.dtype is dt and out.tolist() == np.repeat(np.arange(3), [1, 0, 2]).tolist()


def test_roll_and_repeat_interleave_0d_with_a_dim_raise_index_error():
    x = tgrad.tensor(2.0)
    for dim in (0, -1):
        with pytest.raises(IndexError, match="roll: Dimension specified as .* but tensor has "
                                             "no dimensions"):
            x.roll(1, dim)
        with pytest.raises(IndexError, match="repeat_interleave: Dimension specified as"):
            x.repeat_interleave(3, dim)
        with pytest.raises(IndexError, match="repeat_interleave: Dimension specified as"):
            x.repeat_interleave(tgrad.tensor([3]), dim)
    assert x.roll(1).item() == 2.0  # without dims: the flattened tensor
    assert x.repeat_interleave(3).tolist() == [2.0] * 3


def test_pytorch_keyword_names_of_shape_ops():
    x = tgrad.tensor(np.arange(6.0).reshape(2, 3))
    ref = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(x.expand(size=(2, 2, 3)).numpy(), np.broadcast_to(ref, (2, 2, 3)))
    np.testing.assert_array_equal(x.reshape(shape=(3, 2)).numpy(), ref.reshape(3, 2))
    np.testing.assert_array_equal(tgrad.reshape(x, shape=[-1]).numpy(), ref.reshape(-1))
    np.testing.assert_array_equal(x.view(size=(3, 2)).numpy(), ref.reshape(3, 2))
    np.testing.assert_array_equal(x.permute(dims=(1, 0)).numpy(), ref.T)
    np.testing.assert_array_equal(tgrad.permute(x, dims=[1, 0]).numpy(), ref.T)
    np.testing.assert_array_equal(x.swapaxes(axis0=0, axis1=1).numpy(), ref.T)
    np.testing.assert_array_equal(tgrad.swapaxes(x, axis0=1, axis1=0).numpy(), ref.T)
    np.testing.assert_array_equal(x.repeat(repeats=(2, 1)).numpy(), np.tile(ref, (2, 1)))
    np.testing.assert_array_equal(x.tile(dims=(2,)).numpy(), np.tile(ref, (1, 2)))
    assert [p.tolist() for p in x.split(split_size=1)] == [[ref[0].tolist()], [ref[1].tolist()]]
    assert [p.shape for p in tgrad.split(x, split_size_or_sections=[1, 2], dim=1)] == \
        [(2, 1), (2, 2)]
    assert [p.shape for p in x.tensor_split(sections=2)] == [(1, 3), (1, 3)]
    assert [p.shape for p in x.tensor_split(indices=[1], dim=1)] == [(2, 1), (2, 2)]
    assert [p.shape for p in tgrad.tensor_split(x, tensor_indices_or_sections=tgrad.tensor(3),
                                                dim=1)] == [(2, 1)] * 3
    # the keyword takes a sequence (PyTorch's TypeError otherwise); not with positional sizes
    for call in (lambda: x.reshape(shape=6), lambda: x.expand(size=3), lambda: x.view(6, size=(6,)),
                 lambda: x.permute(dims=1), lambda: x.repeat(repeats=2),
                 lambda: x.tensor_split(2, sections=2), lambda: x.tensor_split(sections=[1]),
                 lambda: x.split(split_size_or_sections=1)):
        with pytest.raises(TypeError):
            call()
    # the keyword forms record the same gradients
    a = tgrad.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert gradcheck(lambda t: t.permute(dims=(1, 0)).reshape(shape=(6,)).expand(size=(2, 6)),
                     (a,))


def test_broadcast_to_method_takes_ints_the_function_a_sequence():
    """Tensor.broadcast_to takes sizes as expand does (ints, one sequence or size=); the
    function torch.broadcast_to refuses a bare int size with PyTorch's TypeError."""
    x = tgrad.tensor(1.0)
    assert x.broadcast_to(0).shape == (0,) and x.broadcast_to(3).tolist() == [1.0] * 3
    y = tgrad.tensor([1.0, 2.0])
    ref = np.broadcast_to([1.0, 2.0], (3, 2))
    for got in (y.broadcast_to(3, 2), y.broadcast_to((3, 2)), y.broadcast_to(size=[3, -1]),
                tgrad.broadcast_to(y, (3, 2)), tgrad.broadcast_to(y, size=[3, 2])):
        np.testing.assert_array_equal(got.numpy(), ref)
    with pytest.raises(TypeError, match=r"broadcast_to\(\): argument 'size' \(position 2\) must "
                                        r"be tuple of ints, not int"):
        tgrad.broadcast_to(y, 2)
    for call in (lambda: y.broadcast_to(size=2), lambda: y.broadcast_to(),
                 lambda: y.broadcast_to(2, size=(2,))):
        with pytest.raises(TypeError, match="broadcast_to"):
            call()
    a = tgrad.tensor([[1.0], [2.0]], dtype=D, requires_grad=True)
    assert gradcheck(lambda t: t.broadcast_to(3, 2, 4), (a,))


def test_squeeze_refuses_dim_none_as_pytorch():
    # PyTorch's squeeze overloads are (), (int dim) and (tuple of ints dim): no None
    x = tgrad.zeros(2, 1, 3, 1)
    assert x.squeeze().shape == (2, 3) and tgrad.squeeze(x).shape == (2, 3)
    assert x.clone().squeeze_().shape == (2, 3) and tgrad.squeeze_copy(x).shape == (2, 3)
    assert x.squeeze(1).shape == (2, 3, 1) and x.squeeze(dim=(1, 3)).shape == (2, 3)
    assert tgrad.squeeze_copy(x, dim=3).shape == (2, 1, 3)
    for call in (lambda: x.squeeze(None), lambda: tgrad.squeeze(x, dim=None),
                 lambda: x.clone().squeeze_(None), lambda: tgrad.squeeze_copy(x, None)):
        with pytest.raises(TypeError, match=r"squeeze_?\(\): argument 'dim' must be int or "
                                            r"tuple of ints, not NoneType"):
            call()


def test_index_with_str_is_pytorchs_type_error():
    # PyTorch reads a str (or bytes) as a sequence of data for an index tensor:
    # TypeError "new(): invalid data type 'str'", also inside a tuple or a list key
    x = tgrad.arange(6.0).reshape(2, 3)
    for key in ("a", "ab", ("a",), (0, "a"), (None, "a"), [0, "a"], ["a"], [[0, "a"]], b"a"):
        name = "bytes" if key == b"a" else "str"
        with pytest.raises(TypeError, match=rf"new\(\): invalid data type '{name}'"):
            x[key]
        with pytest.raises(TypeError, match=rf"new\(\): invalid data type '{name}'"):
            x.clone()[key] = 1.0
    # a float, an object or a dict (not a sequence) stays PyTorch's IndexError
    for key in (1.5, (0, 1.5), (..., 1.5), object(), {}, [1.5, "a"]):
        with pytest.raises(IndexError, match=r"only integers, slices \(`:`\), ellipsis "
                                             r"\(`...`\), None and long or byte Variables "
                                             r"are valid indices \(got "):
            x[key]
        with pytest.raises(IndexError, match="are valid indices"):
            x.clone()[key] = 1.0


def test_float_list_index_truncates_as_pytorch():
    # PyTorch converts a list (or NumPy array) index to an int64 tensor: floats truncate
    # toward zero (x[[1.5]] is x[[1]], x[[-1.5]] is x[[-1]]); NaN / inf / past int64 is its
    # overflow RuntimeError. A float *tensor* index stays an IndexError.
    a = np.arange(6.0).reshape(3, 2)
    x = tgrad.tensor(a)
    for key, want in (([1.5], a[[1]]), ([-1.5], a[[-1]]), ([0.5, 2.9], a[[0, 2]]),
                      ([True, 1.5], a[[1, 1]]), (np.array([1.5]), a[[1]]),
                      ((slice(None), [1.5]), a[:, [1]]), (([1.5], [0.2]), a[[1], [0]]),
                      ([[0.5, 1.5]], a[[0, 1]])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # (the non-tuple sequence warning)
            np.testing.assert_array_equal(x[key].numpy(), want)
            y = x.clone()
            y[key] = -1.0
        b = a.copy()
        b[tuple(np.trunc(np.asarray(k)).astype(np.int64) if isinstance(k, (list, np.ndarray))
                else k for k in (key if isinstance(key, tuple) else (key,)))] = -1.0
        np.testing.assert_array_equal(y.numpy(), b)
    for bad in ([float("nan")], [1e30], [float("inf")]):
        with pytest.raises(RuntimeError, match="cannot be converted to type int64 without "
                                               "overflow"):
            x[bad]
    with pytest.raises(TypeError, match="'complex' object cannot be interpreted as an integer"):
        x[[1 + 0j]]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[tgrad.tensor([1.5])]


def test_backward_of_an_index_into_an_empty_tensor_reads_no_index():
    # x[:, [5]] of a (0, 3) x selects nothing, so neither PyTorch's forward nor its
    # backward looks at the 5: the gradient is zeros of x's shape
    x = _t(np.zeros((0, 3)), requires_grad=True)
    y = x[:, [5]]
    assert y.shape == (0, 1)
    y.sum().backward()
    assert x.grad.shape == (0, 3)
    x = _t(np.zeros((2, 0)), requires_grad=True)
    x[[1, 1]].sum().backward()
    assert x.grad.shape == (2, 0)


# (shape, key, PyTorch's x[key] shape or None where it raises IndexError): an index is
# checked only where it reads or writes, so an out-of-range index selecting nothing is fine
_EMPTY_SELECTIONS = [
    ((0, 3), (slice(None), [5]), (0, 1)), ((2, 0), ([5],), (1, 0)),
    ((0, 3), ([5],), None), ((2, 3), (slice(0, 0), [5]), (0, 1)),
    ((2, 0), ([5], slice(None)), (1, 0)), ((0, 3), ([0], [5]), None),
    ((2, 3), ([5], slice(0, 0)), (1, 0)), ((2, 3), ([1], [5]), None),
    ((2, 3), (slice(0, 0), [-9, 7]), (0, 2)), ((2, 0), (5, [0]), None)]


@pytest.mark.parametrize("shape, key, want", _EMPTY_SELECTIONS)
def test_an_out_of_range_index_that_selects_nothing_is_no_error(shape, key, want):
    x = tgrad.zeros(shape, requires_grad=True)
    if want is None:
        with pytest.raises(IndexError, match="out of bounds"):
            x[key]
        with pytest.raises(IndexError, match="out of bounds for dimension"):
            x.detach()[key] = 1.0
        return
    y = x[key]
    assert y.shape == want
    y.sum().backward()
    assert x.grad.shape == shape
    z = x.detach().clone()
    z[key] = 1.0  # writes nothing
    z[key] = tgrad.ones(())
    assert z.shape == shape and z.sum().item() == 0
    idx = tuple(tgrad.tensor(k) if isinstance(k, list) else k for k in key)
    if all(isinstance(k, tgrad.Tensor) for k in idx):
        z.index_put_(idx, tgrad.tensor(1.0), accumulate=True)
        assert z.shape == shape


def test_flatten_of_nothing_to_merge_is_the_tensor_itself():
    # PyTorch: start_dim == end_dim returns self (x.flatten() of a 1-D x); a 0-d x becomes
    # a 1-element view
    x = tgrad.zeros(3)
    assert x.flatten() is x
    m = tgrad.zeros(2, 3)
    assert m.flatten(1, 1) is m and m.flatten(-1, 1) is m
    assert m.flatten().shape == (6,) and m.flatten()._base is m
    s = tgrad.tensor(2.0)
    assert s.flatten().shape == (1,)


def test_resize_to_the_same_shape_keeps_the_values_and_strides():
    # PyTorch: resize_ to the current sizes returns self untouched, whatever its strides
    # (tgrad re-laid a transposed or strided tensor out row-major: other values)
    x = tgrad.arange(6.0).view(2, 3).t()
    want = x.numpy().copy()
    assert x.resize_(3, 2) is x and x.stride() == (1, 3)
    np.testing.assert_array_equal(x.numpy(), want)
    s = tgrad.arange(12.0).view(3, 4)[:, ::2]
    np.testing.assert_array_equal(s.resize_as_(tgrad.zeros(3, 2)).numpy(),
                                  np.arange(12.0).reshape(3, 4)[:, ::2])
    e = tgrad.arange(3.0).expand(2, 3)  # (no storage to grow: it stays as it is)
    np.testing.assert_array_equal(e.resize_(2, 3).numpy(), np.tile(np.arange(3.0), (2, 1)))


def test_flip_keyword_and_atleast_nd_of_a_sequence():
    x = tgrad.arange(6.0).view(2, 3)
    xn = np.arange(6.0).reshape(2, 3)
    for got, axes in ((x.flip(dims=[0]), 0), (x.flip(0, 1), (0, 1)), (x.flip((1,)), 1)):
        np.testing.assert_array_equal(got.numpy(), np.flip(xn, axes))
    with pytest.raises(TypeError):
        x.flip()  # (PyTorch: dims is required)
    # a sequence of one tensor gives a tuple of one, a tensor gives a tensor (PyTorch's)
    for fn, shape in ((tgrad.atleast_1d, (1,)), (tgrad.atleast_2d, (1, 1)),
                      (tgrad.atleast_3d, (1, 1, 1))):
        one = fn([tgrad.tensor(1.0)])
        assert isinstance(one, tuple) and len(one) == 1 and one[0].shape == shape
        assert isinstance(fn(tgrad.tensor(1.0)), tgrad.Tensor)
        assert len(fn(tgrad.tensor(1.0), tgrad.tensor(2.0))) == 2
