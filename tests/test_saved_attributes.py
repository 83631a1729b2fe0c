"""PyTorch's saved-tensor attributes of graph nodes: ``grad_fn._saved_<name>`` and
``grad_fn._raw_saved_<name>`` (a SavedTensor handle with ``register_hooks``).

Expectations are PyTorch 2.13's documented attributes, checked against the inputs and
outputs (identity where PyTorch returns the same tensor) or NumPy float64."""

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd.graph import saved_tensors_hooks

FREED = "Trying to backward through the graph a second time"


def _x(*shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True), a


# ------------------------------------------------------------------ elementwise
@pytest.mark.parametrize("op,attr,ref", [
    ("exp", "_saved_result", np.exp), ("tanh", "_saved_result", np.tanh),
    ("sigmoid", "_saved_result", lambda a: 1 / (1 + np.exp(-a))),
    ("sqrt", "_saved_result", np.sqrt), ("rsqrt", "_saved_result", lambda a: a ** -0.5),
    ("relu", "_saved_result", lambda a: np.maximum(a, 0)),
    ("log", "_saved_self", None), ("sin", "_saved_self", None), ("abs", "_saved_self", None),
])
def test_unary_saved_self_or_result(op, attr, ref):
    x, a = _x(3, 4, positive=True)
    h = x * 1.0  # a non-leaf input
    y = getattr(h, op)()
    v = getattr(y.grad_fn, attr)
    if ref is None:  # the input itself, as PyTorch returns it
        assert v is h
    else:  # the output: a tensor of its values whose grad_fn is the node
        assert v.grad_fn is y.grad_fn and v.requires_grad
        np.testing.assert_allclose(v.detach().numpy(), ref(a), rtol=1e-12)
    other = "_saved_self" if attr == "_saved_result" else "_saved_result"
    with pytest.raises(AttributeError, match=f"object has no attribute '{other}'"):
        getattr(y.grad_fn, other)


def test_neg_saves_nothing():
    x, _ = _x(3)
    with pytest.raises(AttributeError, match="'NegBackward0' object has no attribute"):
        (-x).grad_fn._saved_self  # noqa: B018


def test_binary_self_other():
    x, a = _x(3, 4)
    p, b = _x(3, 4, seed=1, positive=True)
    for y in (x * p, x / p, tgrad.maximum(x, p), tgrad.minimum(x, p)):
        assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is p
    # only what the backward reads is saved (PyTorch too): x * c keeps c, not x
    c = p.detach()
    y = x * c
    assert y.grad_fn._saved_self is None and y.grad_fn._saved_other is c


def test_binary_number_operand_is_a_wrapped_number():
    x, _ = _x(3)
    y = x * 2.5
    assert y.grad_fn._saved_self is None
    other = y.grad_fn._saved_other
    assert other.shape == () and other.dtype is tgrad.float64 and other.item() == 2.5
    other = (x / 3).grad_fn._saved_other
    assert other.dtype is tgrad.int64 and other.item() == 3


def test_add_sub_alpha():
    x, _ = _x(3)
    p, _ = _x(3, seed=1)
    assert (x + p).grad_fn._saved_alpha == 1
    assert (x - p).grad_fn._saved_alpha == 1
    with pytest.raises(AttributeError):
        (x + p).grad_fn._saved_self  # noqa: B018


def test_pow_overloads():
    x, a = _x(3, positive=True)
    e, b = _x(3, seed=1)
    y = x ** 2  # PowBackward0: the number exponent as given
    assert y.grad_fn.name() == "PowBackward0"
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_exponent == 2
    y = x ** e  # PowBackward1
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_exponent is e
    np.testing.assert_allclose(y.grad_fn._saved_result.detach().numpy(), a ** b, rtol=1e-12)
    y = 2 ** e  # PowBackward2: the number base as given
    assert y.grad_fn._saved_self == 2 and y.grad_fn._saved_exponent is e
    np.testing.assert_allclose(y.grad_fn._saved_result.detach().numpy(), 2.0 ** b, rtol=1e-12)


def test_mm():
    x, _ = _x(3, 4)
    w, _ = _x(4, 5, seed=1)
    gf = (x @ w).grad_fn
    assert gf.name() == "MmBackward0"
    assert gf._saved_self is x and gf._saved_mat2 is w
    assert gf._saved_self_sym_sizes == (3, 4) and gf._saved_mat2_sym_sizes == (4, 5)


def test_mm_sym_strides_follow_which_operand_needs_a_gradient():
    # PyTorch keeps an operand's strides where it needs a gradient (they pick that
    # gradient's layout), () where it does not; the strides are the operand's own
    x, _ = _x(3, 4)
    w, _ = _x(4, 5, seed=1)
    gf = (x @ w).grad_fn
    assert (gf._saved_self_sym_strides, gf._saved_mat2_sym_strides) == ((4, 1), (5, 1))
    gf = (x @ w.detach()).grad_fn
    assert (gf._saved_self_sym_strides, gf._saved_mat2_sym_strides) == ((4, 1), ())
    gf = (x.detach() @ w).grad_fn
    assert (gf._saved_self_sym_strides, gf._saved_mat2_sym_strides) == ((), (5, 1))
    # a strided leaf: its own strides (elements), NumPy's byte strides / itemsize
    base = np.arange(10.0).reshape(2, 5)
    a = tgrad.tensor(base)[:, ::2].requires_grad_()
    gf = (a @ w.detach()[:3]).grad_fn
    assert gf._saved_self_sym_strides == tuple(s // 8 for s in base[:, ::2].strides) == (5, 2)
    # a transposed non-leaf, read from the saved operand (both need gradients)
    xt_base, _ = _x(4, 3, seed=2)
    y = xt_base.t() @ _x(4, 2, seed=3)[0]
    assert y.grad_fn._saved_self_sym_strides == (1, 3)
    assert y.grad_fn._saved_mat2_sym_strides == (2, 1)  # a leaf: kept after backward
    y.sum().backward()
    assert y.grad_fn._saved_mat2_sym_strides == (2, 1)
    with pytest.raises(RuntimeError, match=FREED):
        y.grad_fn._saved_self_sym_strides  # noqa: B018
    # a non-leaf operand that is not saved (the other needs no gradient): not kept
    with pytest.raises(AttributeError, match="_saved_self_sym_strides: tgrad keeps neither"):
        (xt_base.t() @ w.detach()[:4]).grad_fn._saved_self_sym_strides  # noqa: B018


# ------------------------------------------------------------------ reductions
def test_sum_mean():
    x, _ = _x(2, 3, 4)
    gf = x.sum(-1).grad_fn
    assert (gf._saved_dim, gf._saved_keepdim, gf._saved_self_sym_sizes) == ((2,), False,
                                                                          (2, 3, 4))
    gf = x.sum((0, 2), keepdim=True).grad_fn
    assert (gf._saved_dim, gf._saved_keepdim) == ((0, 2), True)
    gf = x.sum().grad_fn
    assert gf.name() == "SumBackward0" and gf._saved_self_sym_sizes == (2, 3, 4)
    with pytest.raises(AttributeError):
        gf._saved_dim  # noqa: B018
    gf = x.mean(0).grad_fn
    assert (gf._saved_dim, gf._saved_keepdim, gf._saved_self_sym_numel) == ((0,), False, 24)
    assert x.mean().grad_fn._saved_self_sym_numel == 24


def test_amax_and_max_dim():
    x, a = _x(3, 4)
    y = x.amax(1)
    gf = y.grad_fn
    assert gf._saved_self is x and gf._saved_dim == (1,) and gf._saved_keepdim is False
    np.testing.assert_array_equal(gf._saved_result.detach().numpy(), a.max(1))
    assert x.amax().grad_fn._saved_dim == ()
    gf = x.max(1)[0].grad_fn
    assert gf.name() == "MaxBackward0"
    assert (gf._saved_dim, gf._saved_keepdim, gf._saved_self_sym_sizes) == (1, False, (3, 4))
    np.testing.assert_array_equal(gf._saved_indices.numpy(), a.argmax(1))
    gf = x.max().grad_fn
    assert gf._saved_self is x and gf._saved_result.item() == a.max()


# ------------------------------------------------------------------ views and indexing
def test_views():
    x, _ = _x(2, 3, 4)
    assert x.view(24).grad_fn._saved_self_sym_sizes == (2, 3, 4)
    assert x.reshape(6, 4).grad_fn._saved_self_sym_sizes == (2, 3, 4)
    assert x.permute(2, 0, 1).grad_fn._saved_dims == (2, 0, 1)
    gf = x.transpose(0, 2).grad_fn
    assert (gf._saved_dim0, gf._saved_dim1) == (0, 2)
    assert x[:, :1].expand(2, 5, 4).grad_fn._saved_self_sym_sizes == (2, 1, 4)
    assert tgrad.cat([x, x], 1).grad_fn._saved_dim == 1


def test_select_and_slice():
    x, _ = _x(3, 4)
    gf = x[1].grad_fn
    assert (gf._saved_dim, gf._saved_index, gf._saved_self_sym_sizes) == (0, 1, (3, 4))
    gf = x.select(1, 2).grad_fn
    assert (gf._saved_dim, gf._saved_index) == (1, 2)
    gf = x[:, 0:4:2].grad_fn
    assert gf.name() == "SliceBackward0"
    assert (gf._saved_dim, gf._saved_start, gf._saved_end, gf._saved_step) == (1, 0, 4, 2)
    assert gf._saved_self_sym_sizes == (3, 4)
    assert x[1:].grad_fn._saved_end == 2**63 - 1  # PyTorch's end of an open slice
    with pytest.raises(AttributeError, match="one node"):  # two nodes in PyTorch
        x[1, 1:3].grad_fn._saved_dim  # noqa: B018


def test_advanced_index():
    x, _ = _x(3, 4)
    gf = x[tgrad.tensor([0, 2])].grad_fn
    (idx,) = gf._saved_indices
    np.testing.assert_array_equal(idx.numpy(), [0, 2])
    assert gf._saved_self_sym_sizes == (3, 4)
    none, idx = x[:, [0, 3]].grad_fn._saved_indices
    assert none is None and idx.tolist() == [0, 3]


# ------------------------------------------------------------------ nn ops
def test_softmax_log_softmax():
    x, a = _x(3, 4)
    e = np.exp(a - a.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    gf = x.softmax(1).grad_fn
    assert gf._saved_dim == 1
    np.testing.assert_allclose(gf._saved_result.detach().numpy(), p, rtol=1e-12)
    gf = x.log_softmax(-1).grad_fn
    assert gf._saved_dim == 1
    np.testing.assert_allclose(gf._saved_result.detach().numpy(), np.log(p), rtol=1e-12)


def test_layer_norm():
    x, a = _x(3, 4)
    w, _ = _x(4, seed=1)
    b, _ = _x(4, seed=2)
    gf = F.layer_norm(x, (4,), w, b, eps=1e-5).grad_fn
    assert gf._saved_input is x and gf._saved_weight is w
    assert gf._saved_normalized_shape == (4,)
    mean = a.mean(1, keepdims=True)
    np.testing.assert_allclose(gf._saved_result1.detach().numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(gf._saved_result2.detach().numpy(),
                               1 / np.sqrt(((a - mean) ** 2).mean(1, keepdims=True) + 1e-5),
                               rtol=1e-12)
    with pytest.raises(NotImplementedError, match="outside save_for_backward"):
        gf._raw_saved_result1  # noqa: B018
    with pytest.raises(AttributeError, match="does not keep the bias"):
        gf._saved_bias  # noqa: B018
    assert F.layer_norm(x, (4,), w).grad_fn._saved_bias is None  # PyTorch's: no bias
    assert F.layer_norm(x, (4,)).grad_fn._saved_bias is None


def test_cross_entropy():
    x, _ = _x(3, 4)
    t = tgrad.tensor([0, 3, 1])
    gf = F.cross_entropy(x, t, reduction="sum", ignore_index=2).grad_fn
    assert gf.name() == "NllLossBackward0"
    assert gf._saved_target is t
    assert (gf._saved_ignore_index, gf._saved_reduction) == (2, 2)



def test_cross_entropy_total_weight_and_weight():
    # total_weight: the number of kept rows (the sum of their class weights with weight=)
    # for "mean" and "sum", 0 for "none" (PyTorch does not compute it there)
    x, _ = _x(3, 4)
    t = tgrad.tensor([1, 2, -100])
    for red, want in (("mean", 2.0), ("sum", 2.0), ("none", 0.0)):
        gf = F.cross_entropy(x, t, reduction=red).grad_fn
        tw = gf._saved_total_weight
        assert tw.shape == () and tw.dtype is tgrad.float64 and tw.item() == want
        assert gf._saved_weight is None
    w = tgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=tgrad.float64)
    gf = F.cross_entropy(x, t, weight=w).grad_fn
    assert gf._saved_total_weight.item() == 2.0 + 3.0  # weight[1] + weight[2]; row 3 ignored
    with pytest.raises(AttributeError, match="keeps each row's class weight"):
        gf._saved_weight  # noqa: B018
    x3, _ = _x(2, 4, 5)
    t3 = tgrad.tensor([[0, 1, 2, 3, 3], [1, 1, 1, 0, 2]])
    ws = np.array([1.0, 2.0, 3.0, 4.0])[np.array([[0, 1, 2, 3, 3], [1, 1, 1, 0, 2]])].sum()
    assert F.cross_entropy(x3, t3, weight=w).grad_fn._saved_total_weight.item() == ws == 24.0
    assert F.cross_entropy(x[0], t[0]).grad_fn._saved_total_weight.item() == 1.0
    loss = F.cross_entropy(x, t)
    loss.backward()  # after it: total_weight is a freed tensor, the weight's None stays
    with pytest.raises(RuntimeError, match=FREED):
        loss.grad_fn._saved_total_weight  # noqa: B018
    assert loss.grad_fn._saved_weight is None
    y = F.layer_norm(x, (4,))
    y.sum().backward()
    assert y.grad_fn._saved_bias is None


# ------------------------------------------------------------------ lifetime and errors
def test_freed_graph_raises_for_tensors_but_keeps_other_values():
    x, _ = _x(3, 4)
    y = (x * 1.0).exp()
    s = y.sum(1)
    s.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        y.grad_fn._saved_result  # noqa: B018
    assert s.grad_fn._saved_dim == (1,)  # not a tensor: still there, as in PyTorch
    y = (x * 1.0).exp()
    y.sum().backward(retain_graph=True)
    assert y.grad_fn._saved_result.shape == (3, 4)


def test_unknown_names():
    x, _ = _x(3)
    gf = x.exp().grad_fn
    for name in ("_saved_foo", "_raw_saved_foo", "foo"):
        with pytest.raises(AttributeError, match=f"'ExpBackward0' object has no attribute "
                                                 f"'{name}'"):
            getattr(gf, name)
    with pytest.raises(AttributeError, match="_raw_saved_dim"):  # not a tensor: no handle
        x.sum(0).grad_fn._raw_saved_dim  # noqa: B018
    assert "_saved_result" in dir(gf) and "_raw_saved_result" in dir(gf)


def test_saved_input_modified_in_place():
    x, _ = _x(3)
    h = x * 1.0
    y = h.sin()
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.grad_fn._saved_self  # noqa: B018


# ------------------------------------------------------------------ _raw_saved_* hooks
def test_register_hooks_packs_now_and_unpacks_on_read():
    x, a = _x(3)
    y = (x * 1.0).exp()
    calls = []

    def pack(t):
        calls.append("pack")
        assert not tgrad.is_grad_enabled()  # pack hooks run with grad mode off
        return t * 2.0

    def unpack(p):
        calls.append("unpack")
        return p

    y.grad_fn._raw_saved_result.register_hooks(pack, unpack)
    assert calls == ["pack"]
    v = y.grad_fn._saved_result
    assert calls == ["pack", "unpack"] and v.grad_fn is y.grad_fn
    np.testing.assert_allclose(v.detach().numpy(), 2 * np.exp(a), rtol=1e-12)
    y.sum().backward()  # the backward reads the hooked (doubled) value: d exp = g * y
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(a), rtol=1e-12)


def test_register_hooks_identity_keeps_gradient_and_identity_of_graph():
    x, a = _x(3)
    h = x * 3.0
    y = h.sin()
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    assert y.grad_fn._saved_self.grad_fn is h.grad_fn
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.cos(3 * a), rtol=1e-12)


def test_register_hooks_errors():
    x, _ = _x(3)
    y = (x * 1.0).exp()
    raw = y.grad_fn._raw_saved_result
    raw.register_hooks(lambda t: t, lambda t: t)
    msg = "whose hooks have already been set"
    with pytest.raises(RuntimeError, match=msg):  # also through a new handle
        y.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        z = (x * 1.0).exp()
    with pytest.raises(RuntimeError, match=msg):
        z.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="with value None is forbidden"):
        (x * 2.5).grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    w = (x * 1.0).exp()
    with pytest.raises(TypeError, match="must be callables"):
        w.grad_fn._raw_saved_result.register_hooks(1, 2)
    w.sum().backward()
    with pytest.raises(RuntimeError, match="after it has been freed"):
        w.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match=FREED):
        w.grad_fn._raw_saved_result.unpack()
    h = x * 1.0
    s = h.sin()
    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        s.grad_fn._raw_saved_self.register_hooks(lambda t: t.add_(1.0), lambda t: t)
    s2 = (x * 1.0).exp()
    s2.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: 5)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        s2.grad_fn._saved_result  # noqa: B018


# ------------------------------------------------------------------ custom Functions
class _Double(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * 2.0

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 2.0


def test_custom_function_saved_tensors():
    x, _ = _x(3)
    y = _Double.apply(x)
    assert y.grad_fn.saved_tensors[0] is x
    (raw,) = y.grad_fn._raw_saved_tensors
    assert raw.unpack() is x
    with pytest.raises(AttributeError):
        y.grad_fn._saved_self  # noqa: B018
    y.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        y.grad_fn.saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match=FREED):
        y.grad_fn._raw_saved_tensors  # noqa: B018
