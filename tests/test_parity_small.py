"""Small PyTorch-parity checks: size-1 dims' strides, embedding_bag's scale_grad_by_freq,
complex conj and the complex ops added (lerp, silu). Expected values are PyTorch 2.13's
documented rules, written out by hand or computed in NumPy float64/complex128."""

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn
from tgrad.autograd import gradcheck


# ------------------------------------------------------------------ strides of size-1 dims
# PyTorch's rules: unsqueeze (and indexing with None, which is an unsqueeze at that point of
# the key) gives the new dim size[d] * stride[d], 1 past the last dim; view/reshape gives
# computeStride's; expand gives a new leading size-1 dim the next dim's size * stride and
# expanded dims 0. (Values below are PyTorch 2.13's, each derivable from those rules.)
def _z():
    return tgrad.arange(12.0).reshape(3, 4)


_A = np.arange(12.0).reshape(3, 4)  # _z()'s NumPy twin: the value references below

STRIDE_CASES = [  # (name, the view, its values in NumPy, PyTorch's strides)
    ("None", lambda: _z()[None], lambda: _A[None], (12, 4, 1)),
    ("None mid", lambda: _z()[:, None], lambda: _A[:, None], (4, 4, 1)),
    ("None end", lambda: _z()[..., None], lambda: _A[..., None], (4, 1, 1)),
    ("None None", lambda: _z()[None, None], lambda: _A[None, None], (12, 12, 4, 1)),
    ("None ... None", lambda: _z()[None, ..., None], lambda: _A[None, ..., None],
     (12, 4, 1, 1)),
    ("None after int", lambda: _z()[1, None], lambda: _A[1, None], (4, 1)),
    ("None then step", lambda: _z()[None, :, ::2], lambda: _A[None, :, ::2], (12, 4, 2)),
    ("mid None then step", lambda: _z()[:, None, ::2], lambda: _A[:, None, ::2], (4, 4, 2)),
    ("t None", lambda: _z().t()[None], lambda: _A.T[None], (4, 1, 4)),
    ("t None mid", lambda: _z().t()[:, None], lambda: _A.T[:, None], (1, 12, 4)),
    ("t None end", lambda: _z().t()[..., None], lambda: _A.T[..., None], (1, 4, 1)),
    ("t None slice None", lambda: _z().t()[None, 1:, None], lambda: _A.T[None, 1:, None],
     (4, 1, 12, 4)),
    ("unsqueeze 0", lambda: _z().unsqueeze(0), lambda: _A[None], (12, 4, 1)),
    ("unsqueeze end", lambda: _z().unsqueeze(2), lambda: _A[..., None], (4, 1, 1)),
    ("t unsqueeze 1", lambda: _z().t().unsqueeze(1), lambda: _A.T[:, None], (1, 12, 4)),
    ("t unsqueeze end", lambda: _z().t().unsqueeze(2), lambda: _A.T[..., None], (1, 4, 1)),
    ("step unsqueeze end", lambda: _z()[:, ::2].unsqueeze(2), lambda: _A[:, ::2, None],
     (4, 2, 1)),
    # a C-contiguous input with a size-1 dim of another stride (no reshape fast path)
    ("(4,1).t() unsqueeze 0", lambda: _z().reshape(12, 1)[:4].t().unsqueeze(0),
     lambda: _A.reshape(1, 1, 12)[..., :4], (1, 1, 1)),
    ("(4,1).t() None", lambda: _z().reshape(12, 1)[:4].t()[None],
     lambda: _A.reshape(1, 1, 12)[..., :4], (1, 1, 1)),
    ("0-d None", lambda: _z()[1, 2][None], lambda: _A[1, 2][None], (1,)),
    ("0-d unsqueeze", lambda: _z()[1, 2].unsqueeze(0), lambda: _A[1, 2][None], (1,)),
    ("t view (4,3,1)", lambda: _z().t().view(4, 3, 1), lambda: _A.T[..., None], (1, 4, 4)),
    ("t reshape (4,1,3)", lambda: _z().t().reshape(4, 1, 3), lambda: _A.T[:, None],
     (1, 12, 4)),
    ("step reshape (3,1,2)", lambda: _z()[:, ::2].reshape(3, 1, 2), lambda: _A[:, None, ::2],
     (4, 4, 2)),
    ("view (1,12)", lambda: _z().view(1, 12), lambda: _A.reshape(1, 12), (12, 1)),
    ("view of (1,1) slice", lambda: _z()[:1, ::2][:, :1].view(1, 1, 1),
     lambda: _A[:1, :1, None], (2, 2, 2)),
    ("0-d view", lambda: _z()[1, 2].view(1, 1), lambda: _A[1:2, 2:3], (1, 1)),
    ("expand new size-1", lambda: _z().expand(1, 3, 4), lambda: _A[None], (12, 4, 1)),
    ("expand new dims", lambda: _z()[:, :1].expand(2, 1, 3, 1),
     lambda: np.broadcast_to(_A[:, :1], (2, 1, 3, 1)), (0, 12, 4, 1)),
    ("expand expanded", lambda: _z().expand(2, 3, 4), lambda: np.broadcast_to(_A, (2, 3, 4)),
     (0, 4, 1)),
    ("expand size-1 kept", lambda: _z()[:, :1].expand(1, 3, 1), lambda: _A[None, :, :1],
     (12, 4, 1)),
    ("expand size-1 dim", lambda: _z()[:, :1].expand(3, 5),
     lambda: np.broadcast_to(_A[:, :1], (3, 5)), (4, 0)),
    ("expand t", lambda: _z().t().expand(1, 4, 3), lambda: _A.T[None], (4, 1, 4)),
    # expand of non-C-contiguous inputs keeps their size-1 dims' strides
    ("expand t of column", lambda: _z()[:, :1].t().expand(1, 1, 3), lambda: _A[:, :1].T[None],
     (1, 1, 4)),
    ("expand t unsqueeze", lambda: _z().t().unsqueeze(1).expand(2, 4, 1, 3),
     lambda: np.broadcast_to(_A.T[:, None], (2, 4, 1, 3)), (0, 1, 12, 4)),
    ("expand 0-d", lambda: _z()[1, 2].expand(1, 1), lambda: _A[1:2, 2:3], (0, 0)),
    ("slice keeps", lambda: _z()[:, :1], lambda: _A[:, :1], (4, 1)),
    # squeeze drops dims and keeps the other dims' strides (size-1 ones included)
    ("squeeze dim of transposed", lambda: _z().reshape(3, 1, 4).transpose(0, 1).squeeze(1),
     lambda: _A[None], (4, 4, 1)),
    ("squeeze all of transposed", lambda: _z().reshape(3, 1, 4).transpose(0, 1).squeeze(),
     lambda: _A, (4, 1)),
    ("squeeze dims", lambda: _z().reshape(1, 3, 1, 1, 4).transpose(0, 3).squeeze((0, 2)),
     lambda: _A[:, None], (4, 12, 1)),
    ("squeeze of column", lambda: _z()[:, 1:2].t().squeeze(1), lambda: _A[None, :, 1],
     (1, 4)),
]


@pytest.mark.parametrize("name,make,ref,want", STRIDE_CASES, ids=[c[0] for c in STRIDE_CASES])
def test_size1_strides_are_pytorchs(name, make, ref, want):
    t = make()
    assert t.stride() == want
    assert t.is_contiguous() == _contiguous(t.shape, want)
    np.testing.assert_array_equal(t.numpy(), ref())
    # the strides address the view's elements in its storage (arange: value == index)
    off = t.storage_offset()
    idx = [off + sum(i * s for i, s in zip(ix, want)) for ix in np.ndindex(*t.shape)]
    np.testing.assert_array_equal(t.numpy().ravel(), np.array(idx, dtype=np.float64))


def _contiguous(shape, strides) -> bool:
    """PyTorch's is_contiguous: size-1 dims' strides do not count."""
    want = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != want:
            return False
        want *= n
    return True


def test_size1_stride_views_share_and_read_the_same_elements():
    a = np.arange(12.0).reshape(3, 4)
    x = tgrad.tensor(a)
    for v, ref in ((x[None, :, ::2], a[None, :, ::2]), (x.t().unsqueeze(2), a.T[..., None]),
                   (x.t().reshape(4, 1, 3), a.T.reshape(4, 1, 3)),
                   (x.t().expand(1, 4, 3), a.T[None])):
        np.testing.assert_array_equal(v.numpy(), ref)
        assert v._base is x and v._storage is x._storage
    y = x.t()[None]
    y[0, 1, 2] = -1.0  # writes through the view
    assert x[2, 1].item() == -1.0


def test_unsqueeze_inplace_stride_and_grad():
    x = tgrad.zeros(3, 4).t()
    x.unsqueeze_(2)
    assert x.shape == (4, 3, 1) and x.stride() == (1, 4, 1)
    w = tgrad.randn(3, 4, dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t.t().unsqueeze(2) * 2.0, (w,))
    assert gradcheck(lambda t: t.t()[None, :, None] * 3.0, (w,))


def test_size1_stride_leaf_grad_layout():
    # the .grad layout contract: a non-overlapping dense leaf's grad gets its strides
    leaf = tgrad.zeros(3, 4).t()[None].detach().requires_grad_()
    assert leaf.stride() == (4, 1, 4)
    (leaf * tgrad.ones(1, 4, 3)).sum().backward()
    assert leaf.grad.shape == (1, 4, 3)
    assert [s for n, s in zip(leaf.shape, leaf.grad.stride()) if n != 1] == [1, 4]
    np.testing.assert_array_equal(leaf.grad.numpy(), np.ones((1, 4, 3)))


def test_size1_strides_on_interpreted_cuda():
    # the same cases on the cuda device (Triton's interpreter; views are metadata there)
    pytest.importorskip("triton")
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from interpreted import run_json
    res = run_json(f"""
import json, sys
sys.path.insert(0, {here!r})
import tgrad, test_parity_small as m
m._z = lambda: tgrad.arange(12.0, device="cuda").reshape(3, 4)
out = {{}}
for name, make, _, _ in m.STRIDE_CASES:
    t = make()
    out[name] = [t.device.type, list(t.stride()), t.cpu().numpy().tolist()]
e = tgrad.zeros(4, 4, device="cuda")[:0]
out["empty"] = [list(v.stride()) for v in (e.unsqueeze(1), e[None], e.view(0, 1, 4),
                                           e.expand(1, 0, 4))]
try:
    tgrad.zeros(3, 4, device="cuda").expand(2, -1, 3, 4)
except RuntimeError as err:
    out["lead -1"] = str(err)
print(json.dumps(out))
""")
    for name, _, ref, want in STRIDE_CASES:
        dev, stride, values = res[name]
        assert dev == "cuda" and tuple(stride) == want, name
        np.testing.assert_array_equal(np.array(values), ref(), err_msg=name)
    assert res["empty"] == [[4, 4, 1], [0, 4, 1], [4, 4, 1], [0, 4, 1]]
    assert res["lead -1"] == ("The expanded size of the tensor (-1) isn't allowed in a "
                              "leading, non-existing dimension 1")



# ------------------------------------------------- layout of elementwise results, both devices
# PyTorch's TensorIterator gives a new elementwise result its inputs' memory order (a
# transposed / permuted input keeps its stride order; a broadcast operand has no say), the
# NumPy backend's order='K' does the same, and so must the cuda backend (it made every such
# result C-contiguous: (3, 1) for x.mT + 1 below, so .view(-1) worked there and not on the CPU).
# Strides are PyTorch 2.13's for these cases.
def _layout_cases(dev):
    x = tgrad.arange(12.0, device=dev).reshape(3, 4).mT  # (4, 3), strides (1, 4)
    z = tgrad.arange(24.0, device=dev).reshape(2, 3, 4).permute(2, 0, 1)  # (1, 12, 4)
    xg = x.detach().requires_grad_(True)
    (g,) = tgrad.autograd.grad(xg.tanh(), xg, tgrad.ones(3, 4, device=dev).mT)
    return {
        "neg": (-x, -_A.T), "add number": (x + 1, _A.T + 1),
        "add broadcast": (x + tgrad.ones(3, device=dev), _A.T + 1),
        "where": (tgrad.where(x > 2, x, 0.0), np.where(_A.T > 2, _A.T, 0)),
        "gt": (x > 2, _A.T > 2), "cast": (x.to(tgrad.float32), _A.T),
        "exp of permuted": ((z * 0.1).exp(), np.exp(np.arange(24.0).reshape(2, 3, 4)
                                                    .transpose(2, 0, 1) * 0.1)),
        "tanh backward": (g, 1 - np.tanh(_A.T) ** 2),
        # cat is C-contiguous whatever its inputs' layout (PyTorch's; the CPU kept NumPy's
        # common stride order of the inputs)
        "cat": (tgrad.cat([x, x], 1), np.concatenate([_A.T, _A.T], 1)),
    }


_LAYOUT_WANT = {"neg": (1, 4), "add number": (1, 4), "add broadcast": (1, 4), "where": (1, 4),
                "gt": (1, 4), "cast": (1, 4), "exp of permuted": (1, 12, 4),
                "tanh backward": (1, 4), "cat": (6, 1)}


def test_elementwise_results_keep_the_input_layout():
    for name, (t, ref) in _layout_cases("cpu").items():
        assert t.stride() == _LAYOUT_WANT[name], name
        np.testing.assert_allclose(t.detach().numpy(), ref, rtol=1e-6, atol=1e-6,
                                   err_msg=name)


def test_elementwise_results_keep_the_input_layout_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from interpreted import run_json
    res = run_json(f"""
import json, sys
sys.path.insert(0, {here!r})
import tgrad, test_parity_small as m
out = {{}}
for name, (t, _) in m._layout_cases("cuda").items():
    out[name] = [t.device.type, list(t.stride()), t.detach().cpu().numpy().tolist()]
a, b = tgrad.ones(2, 5, 1, device="cuda"), tgrad.ones(2, 1, device="cuda")
for op in ("add", "logical_or", "maximum"):
    try:
        getattr(tgrad, op)(a, b)
    except RuntimeError as err:
        out[op] = str(err)
print(json.dumps(out))
""")
    for name, (_, ref) in _layout_cases("cpu").items():
        dev, stride, values = res[name]
        assert dev == "cuda" and tuple(stride) == _LAYOUT_WANT[name], name
        np.testing.assert_allclose(np.array(values), ref, rtol=1e-6, atol=1e-6, err_msg=name)
    # a broadcast error: PyTorch's text, then both shapes, on both devices (NumPy's own
    # text, which differs between the CPU's ufunc and cuda's broadcast_shapes, no longer
    # leaks into it)
    for op in ("add", "logical_or", "maximum"):
        want = (f"{op}: The size of tensor a (5) must match the size of tensor b (2) at "
                "non-singleton dimension 1 (shapes [2, 5, 1] and [2, 1])")
        assert res[op] == want
        with pytest.raises(RuntimeError) as info:
            getattr(tgrad, op)(tgrad.ones(2, 5, 1), tgrad.ones(2, 1))
        assert str(info.value) == want

def test_empty_view_strides_are_pytorchs():
    # views that became empty keep PyTorch's rules; an array made empty (all strides 0 in
    # NumPy) reports the contiguous strides (docs/design.md: empty tensors)
    e = tgrad.zeros(4, 4)[:0]
    assert e.unsqueeze(1).stride() == (4, 4, 1)
    assert e.unsqueeze(0).stride() == (0, 4, 1)
    assert e[None].stride() == (0, 4, 1) and e[:, None].stride() == (4, 4, 1)
    assert e.view(0, 1, 4).stride() == (4, 4, 1)
    assert e.expand(1, 0, 4).stride() == (0, 4, 1)
    assert tgrad.zeros(0, 4).unsqueeze(1).stride() == (4, 4, 1)


def test_expand_errors():
    x = tgrad.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(-1\) isn't "
                       r"allowed in a leading, non-existing dimension 1$"):
        x.expand(2, -1, 3, 4)
    with pytest.raises(RuntimeError, match="non-existing dimension 0$"):
        x.expand(-1, 3, 4)
    assert x.expand(2, -1, -1).shape == (2, 3, 4)
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "size"'):
        tgrad.tensor(1.0).expand()


def _restrided_views(x):
    return {"unsqueeze": x.unsqueeze(0), "None": x[None], "expand": x.expand(1, 3, 2, 2),
            "view": x.view(1, 3, 2, 2), "reshape": x.reshape(1, 3, 2, 2)}


@pytest.mark.parametrize("how", ["unsqueeze", "None", "expand", "view", "reshape"])
def test_view_as_complex_and_view_dtype_of_restrided_views(how):
    a = np.arange(24.0).reshape(3, 4, 2)[:, ::2]
    x = tgrad.arange(24.0, dtype=tgrad.float64).reshape(3, 4, 2)[:, ::2]
    v = _restrided_views(x)[how]
    z = tgrad.view_as_complex(v)
    assert z.shape == (1, 3, 2) and z.stride() == (12, 4, 2)  # PyTorch 2.13's
    np.testing.assert_array_equal(z.numpy(), (a[..., 0] + 1j * a[..., 1])[None])
    i = v.view(tgrad.int32)
    assert i.shape == (1, 3, 2, 4) and i.stride() == (48, 16, 8, 1)
    np.testing.assert_array_equal(i.numpy(), a[None].view(np.int32))
    np.testing.assert_array_equal(v.view(tgrad.float64).numpy(), a[None])
    if how != "expand":  # (an expand is read-only)
        z[0, 2, 1] = -1 - 2j  # writes reach x's storage
        assert x[2, 1].tolist() == [-1.0, -2.0]


def test_view_as_complex_over_strided_roots():
    a = np.arange(24.0).reshape(3, 8)
    for arr in (a[:, :4],  # a root that views a contiguous array
                np.lib.stride_tricks.as_strided(np.arange(24.0), (3, 4), (64, 8))):  # none
        t = tgrad.from_numpy(arr)
        assert t.stride() == (8, 1)
        z = tgrad.view_as_complex(t.view(3, 2, 2))
        np.testing.assert_array_equal(z.numpy(), arr[..., ::2] + 1j * arr[..., 1::2])
        np.testing.assert_array_equal(t[None].view(tgrad.int32).numpy(),
                                      np.ascontiguousarray(arr)[None].view(np.int32))


def test_view_as_complex_ignores_the_stride_of_a_size_one_dim():
    # PyTorch: an odd stride is refused only on a dim that is stepped (size > 1)
    a = tgrad.tensor([[1.0], [2.0]], dtype=tgrad.float64, requires_grad=True)
    z = tgrad.view_as_complex(a.t())  # shape (1, 2), strides (1, 1)
    assert z.tolist() == [1 + 2j]
    (z.abs() ** 2).sum().backward()  # d|z|^2 = 2 Re z, 2 Im z
    np.testing.assert_allclose(a.grad.numpy(), [[2.0], [4.0]], rtol=1e-12)
    with pytest.raises(RuntimeError, match="stride divisible by 2 for all but last"):
        tgrad.view_as_complex(tgrad.zeros(2, 3, dtype=tgrad.float64)[:, :2])

def test_squeeze_inplace_stride_and_grad():
    x = tgrad.zeros(3, 1, 4).transpose(0, 1)
    x.squeeze_(1)
    assert x.shape == (1, 3, 4) and x.stride() == (4, 4, 1)  # PyTorch's
    assert x.grad_fn is None
    w = tgrad.randn(3, 1, 4, dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t.transpose(0, 1).squeeze(1) * 2.0, (w,))
    assert gradcheck(lambda t: t.squeeze() * 2.0, (w,))
    y = w.transpose(0, 1).squeeze((0, 2))
    assert y.grad_fn.name() == "SqueezeBackward2"


def test_squeeze_of_0d_tensor_with_dim():
    # PyTorch: a 0-d tensor takes dim 0 / -1 / (0,) and stays 0-d (it raised IndexError
    # 'tuple index out of range'); dim 1 is out of range [-1, 0]
    z = tgrad.tensor(2.0 - 1.0j, dtype=tgrad.complex128, requires_grad=True)
    for d in (0, -1, (0,)):
        assert z.squeeze(d).shape == ()
    z.squeeze(0).abs().backward()
    np.testing.assert_allclose(z.grad.numpy(), (2.0 - 1.0j) / np.sqrt(5.0))
    with pytest.raises(IndexError, match="range of \\[-1, 0\\]"):
        z.squeeze(1)
    x = tgrad.tensor(3.0)
    x.squeeze_(0)
    assert x.shape == ()


# ------------------------------------------------------------------ embedding_bag freq scaling
def _bag_grad(mode, idx, offsets=None, psw=None, padding_idx=None, **kw):
    w = tgrad.ones(5, 2, dtype=tgrad.float64, requires_grad=True)
    F.embedding_bag(idx, w, offsets, mode=mode, scale_grad_by_freq=True,
                    per_sample_weights=psw, padding_idx=padding_idx, **kw).sum().backward()
    return w.grad.numpy()


def test_embedding_bag_scale_grad_by_freq_sum():
    # bags [0, 2, 2] and [1, 2, 4]: d out.sum() / d w[i] = (occurrences of i) / count(i)
    g = _bag_grad("sum", tgrad.tensor([0, 2, 2, 1, 2, 4]), tgrad.tensor([0, 3]))
    np.testing.assert_allclose(g[:, 0], [1.0, 1.0, 1.0, 0.0, 1.0])  # index 4: 1/1
    np.testing.assert_allclose(g[:, 1], g[:, 0])


def test_embedding_bag_scale_grad_by_freq_mean_and_2d():
    # bags [0, 2, 2] and [1, 2, 4] (means: 1/3 per entry); index 2: (2/3 + 1/3) / 3
    g = _bag_grad("mean", tgrad.tensor([0, 2, 2, 1, 2, 4]), tgrad.tensor([0, 3]))
    np.testing.assert_allclose(g[:, 0], [1 / 3, 1 / 3, 1 / 3, 0.0, 1 / 3])
    # 2-D input [[2, 2], [0, 2]] (PyTorch 2.13 gives the same): index 2: 1.5 / 3
    g = _bag_grad("mean", tgrad.tensor([[2, 2], [0, 2]]))
    np.testing.assert_allclose(g[:, 0], [0.5, 0.0, 0.5, 0.0, 0.0])


def test_embedding_bag_scale_grad_by_freq_per_sample_weights_and_padding():
    psw = tgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=tgrad.float64)
    g = _bag_grad("sum", tgrad.tensor([0, 2, 2, 1, 2, 4]), tgrad.tensor([0, 3]), psw=psw)
    np.testing.assert_allclose(g[:, 0], [1.0, 4.0, 10 / 3, 0.0, 6.0])
    # padding entries count towards nothing that matters: the pad row gets no gradient
    g = _bag_grad("sum", tgrad.tensor([[1, 1, 3], [3, 1, 0]]), padding_idx=3)
    np.testing.assert_allclose(g[:, 0], [1.0, 1.0, 0.0, 0.0, 0.0])


def test_embedding_bag_scale_grad_by_freq_vs_unscaled_and_module():
    idx, off = tgrad.tensor([0, 2, 2, 1, 2, 4, 4]), tgrad.tensor([0, 3, 5])
    w = tgrad.randn(5, 3, dtype=tgrad.float64, requires_grad=True)
    # scaled gradient = unscaled gradient / count(i), row by row
    for mode in ("sum", "mean"):
        w.grad = None
        F.embedding_bag(idx, w, off, mode=mode).pow(2).sum().backward()
        plain = w.grad.numpy().copy()
        w.grad = None
        F.embedding_bag(idx, w, off, mode=mode, scale_grad_by_freq=True).pow(2).sum().backward()
        counts = np.bincount(idx.numpy(), minlength=5).clip(min=1)[:, None]
        np.testing.assert_allclose(w.grad.numpy(), plain / counts, rtol=1e-12)
    bag = nn.EmbeddingBag(5, 3, mode="sum", scale_grad_by_freq=True)
    assert "scale_grad_by_freq=True" in repr(bag)
    bag(tgrad.tensor([[1, 1]])).sum().backward()
    np.testing.assert_allclose(bag.weight.grad.numpy()[1], [1.0, 1.0, 1.0])


def test_embedding_bag_scale_grad_by_freq_max_and_sparse_errors():
    w = tgrad.ones(5, 2, requires_grad=True)
    idx = tgrad.tensor([[0, 1]])
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        F.embedding_bag(idx, w, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(idx, w, mode="max", sparse=True)
    # sparse=True in modes sum / mean: a sparse weight gradient (tests/test_optim_sparse.py)
    F.embedding_bag(idx, w, mode="sum", sparse=True).sum().backward()
    assert w.grad.is_sparse and w.grad.to_dense().tolist() == [[1, 1], [1, 1], [0, 0],
                                                                [0, 0], [0, 0]]


def test_embedding_scale_grad_by_freq():
    e = nn.Embedding(5, 2, scale_grad_by_freq=True)
    e(tgrad.tensor([[0, 2, 2], [2, 4, 0]])).sum().backward()
    np.testing.assert_allclose(e.weight.grad.numpy()[:, 0], [1.0, 0.0, 1.0, 0.0, 1.0])


# ------------------------------------------------------------------ complex: conj, lerp, silu
def _cx(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def test_conj_is_a_materialised_copy_with_the_conj_api():
    a = np.array([1 + 2j, 3 - 1j])
    z = tgrad.tensor(a)
    c = z.conj()
    np.testing.assert_array_equal(c.numpy(), np.conj(a))
    # documented difference: no lazy conjugate bit (PyTorch: c.is_conj() is True and c
    # shares z's storage); here c is a copy, so writes to it do not reach z
    assert not c.is_conj() and not z.is_conj()
    np.testing.assert_array_equal(c.resolve_conj().numpy(), np.conj(a))
    np.testing.assert_array_equal(z.conj_physical().numpy(), np.conj(a))
    c[0] = 0
    np.testing.assert_array_equal(z.numpy(), a)
    r = tgrad.tensor([1.0, 2.0])
    assert r.conj() is r and r.resolve_conj() is r


def test_lerp_complex_values_and_gradients():
    rng = np.random.default_rng(5)
    a, b, w = _cx(rng, 4), _cx(rng, 4), _cx(rng, 4) * 0.6
    ta, tb, tw = (tgrad.tensor(v, requires_grad=True) for v in (a, b, w))
    got = tgrad.lerp(ta, tb, tw)
    assert got.dtype is tgrad.complex128
    np.testing.assert_allclose(got.detach().numpy(), a + w * (b - a), rtol=1e-13)
    np.testing.assert_allclose(tgrad.lerp(ta, tb, 0.7 + 0.2j).detach().numpy(),
                               a + (0.7 + 0.2j) * (b - a), rtol=1e-13)
    assert gradcheck(tgrad.lerp, (ta, tb, tw))
    assert gradcheck(lambda x, y: tgrad.lerp(x, y, 0.3 - 0.1j), (ta, tb))
    # PyTorch's convention by hand: L = Re sum(c * lerp): dL/dw* gives c* conj(b - a)
    c = np.arange(4) + 1j
    (tgrad.lerp(ta, tb, tw) * tgrad.tensor(c)).real.sum().backward()
    np.testing.assert_allclose(tw.grad.numpy(), np.conj(c * (b - a)), rtol=1e-13)
    np.testing.assert_allclose(ta.grad.numpy(), np.conj(c * (1 - w)), rtol=1e-13)
    with pytest.raises(RuntimeError, match="expected dtype complex128 for `weight`"):
        tgrad.lerp(ta, tb, tgrad.rand(4, dtype=tgrad.float64))


@pytest.mark.parametrize("w", [0.0, 1.0, 0.25, 0.75, -2.0])
def test_lerp_scalar_weight_gradients_are_pytorch_formulas(w):
    # PyTorch: d input = (1 - w) g, d end = w g (so w = 0 with an infinite g gives inf for
    # input and 0 * inf = NaN for end, never NaN from the two-branch forward)
    a, b = np.array([1.0, -2.0, 3.0]), np.array([3.0, 4.0, -5.0])
    g = np.array([np.inf, -np.inf, 2.0])
    ta, tb = (tgrad.tensor(v, requires_grad=True) for v in (a, b))
    out = tgrad.lerp(ta, tb, w)
    assert out.grad_fn.name() == "LerpBackward0"
    out.backward(tgrad.tensor(g))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(ta.grad.numpy(), (1 - w) * g)
        np.testing.assert_array_equal(tb.grad.numpy(), w * g)
    assert gradcheck(lambda x, y: tgrad.lerp(x, y, w), (ta, tb))


def test_lerp_tensor_weight_gradients_are_pytorch_formulas():
    a, b, w = np.array([1.0, 2.0]), np.array([3.0, np.inf]), np.array([0.0, 1.0])
    g = np.array([np.inf, 1.0])
    ta, tb, tw = (tgrad.tensor(v, requires_grad=True) for v in (a, b, w))
    out = tgrad.lerp(ta, tb, tw)
    assert out.grad_fn.name() == "LerpBackward1"
    out.backward(tgrad.tensor(g))
    with np.errstate(invalid="ignore"):  # PyTorch: [inf, 0], [nan, 1], [inf, inf]
        np.testing.assert_array_equal(ta.grad.numpy(), (1 - w) * g)
        np.testing.assert_array_equal(tb.grad.numpy(), w * g)
        np.testing.assert_array_equal(tw.grad.numpy(), (b - a) * g)
    # broadcast weight (a column) and a 0-d weight: gradients summed to each shape
    rng = np.random.default_rng(7)
    a, b, w = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.uniform(-1, 2, (2, 1))
    ta, tb, tw = (tgrad.tensor(v, requires_grad=True) for v in (a, b, w))
    np.testing.assert_allclose(tgrad.lerp(ta, tb, tw).detach().numpy(), a + w * (b - a),
                               rtol=1e-13)
    assert gradcheck(tgrad.lerp, (ta, tb, tw))
    assert tgrad.autograd.gradgradcheck(tgrad.lerp, (ta, tb, tw))
    t0 = tgrad.tensor(0.3, dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(tgrad.lerp, (ta, tb, t0))
    h = tgrad.lerp(tgrad.tensor([1.0, 2.0], dtype=tgrad.float16, requires_grad=True),
                   tgrad.tensor([3.0, 6.0], dtype=tgrad.float16), 0.5)
    assert h.dtype is tgrad.float16 and h.tolist() == [2.0, 4.0]


def test_silu_complex_forward_only_as_pytorch():
    rng = np.random.default_rng(6)
    a = _cx(rng, 5)
    got = F.silu(tgrad.tensor(a))
    assert got.dtype is tgrad.complex128
    np.testing.assert_allclose(got.numpy(), a / (1 + np.exp(-a)), rtol=1e-13)
    with pytest.raises(RuntimeError, match="silu does not support automatic differentiation"):
        F.silu(tgrad.tensor(a, requires_grad=True))


# ------------------------------------------------------------------ node names: pow, rsub
def _x():
    return tgrad.tensor([1.5, 2.0], dtype=tgrad.float64, requires_grad=True)


NODE_NAME_CASES = [  # PyTorch 2.13's grad_fn.name() of each expression
    ("x ** 2", lambda x: x ** 2, "PowBackward0"),
    ("pow(x, 2)", lambda x: tgrad.pow(x, 2), "PowBackward0"),
    ("x ** x", lambda x: x ** x, "PowBackward1"),
    ("pow(x, x)", lambda x: tgrad.pow(x, x), "PowBackward1"),
    ("x.pow(tensor)", lambda x: x.pow(tgrad.tensor([2.0, 3.0], dtype=tgrad.float64)),
     "PowBackward1"),
    ("x ** tensor(2.)", lambda x: x ** tgrad.tensor(2.0, dtype=tgrad.float64), "PowBackward1"),
    ("pow(tensor(2.), x)", lambda x: tgrad.pow(tgrad.tensor(2.0, dtype=tgrad.float64), x),
     "PowBackward1"),
    ("2 ** x", lambda x: 2 ** x, "PowBackward2"),
    ("pow(2, x)", lambda x: tgrad.pow(2, x), "PowBackward2"),
    ("x.__rpow__(2)", lambda x: x.__rpow__(2), "PowBackward2"),
    ("x - 1", lambda x: x - 1, "SubBackward0"),
    ("x - x", lambda x: x - x, "SubBackward0"),
    ("sub(1, x)", lambda x: tgrad.sub(1, x), "SubBackward0"),
    ("tensor - x", lambda x: tgrad.tensor([1.0, 2.0], dtype=tgrad.float64) - x,
     "SubBackward0"),
    ("1 - x", lambda x: 1 - x, "RsubBackward1"),
    ("2.5 - x", lambda x: 2.5 - x, "RsubBackward1"),
    ("x.__rsub__(1)", lambda x: x.__rsub__(1), "RsubBackward1"),
    ("rsub(x, 1)", lambda x: tgrad.rsub(x, 1), "RsubBackward1"),
    ("rsub(x, 1, alpha=2)", lambda x: tgrad.rsub(x, 1, alpha=2), "RsubBackward1"),
    ("rsub(x, x)", lambda x: tgrad.rsub(x, x), "RsubBackward0"),
    ("rsub(x, x, alpha=2)", lambda x: tgrad.rsub(x, x, alpha=2), "RsubBackward0"),
]


@pytest.mark.parametrize("expr, fn, node", NODE_NAME_CASES, ids=[c[0] for c in NODE_NAME_CASES])
def test_pow_and_rsub_node_names_as_pytorch(expr, fn, node):
    y = fn(_x())
    assert y.grad_fn.name() == node
    assert type(y.grad_fn).__name__ == node


def test_pow_and_rsub_gradients_under_their_node_names():
    a = np.array([1.5, 2.0])
    x = _x()
    (2 ** x).sum().backward()  # d 2^x = 2^x ln 2
    np.testing.assert_allclose(x.grad.numpy(), 2 ** a * np.log(2), rtol=1e-14)
    x = _x()
    (x ** x).sum().backward()  # d x^x = x^x (ln x + 1)
    np.testing.assert_allclose(x.grad.numpy(), a ** a * (np.log(a) + 1), rtol=1e-14)
    x = _x()
    (tgrad.rsub(x, 1, alpha=2) + (3 - x) + tgrad.rsub(x, x * x)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -2 - 1 + (2 * a - 1), rtol=1e-14)
    assert (1 - tgrad.tensor([1.0, 2.0])).tolist() == [0.0, -1.0]
    assert tgrad.rsub(tgrad.tensor([1, 2]), 5).tolist() == [4, 3]
    assert gradcheck(lambda t: 1.5 - t, (_x(),))
    assert gradcheck(lambda t: 1.5 ** t, (_x(),))
    assert gradcheck(lambda t: t ** t, (_x(),))
    assert tgrad.autograd.gradgradcheck(lambda t: tgrad.rsub(t, t * t, alpha=3), (_x(),))
    assert tgrad.autograd.gradgradcheck(lambda t: 1.5 ** t, (_x(),))
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        True - tgrad.tensor([True])  # PyTorch's text
