"""ParameterList / ParameterDict, the list operations of Sequential and ModuleList,
Embedding.from_pretrained, Dropout1d/2d/3d (F.dropout1d/2d/3d) and init.trunc_normal_ /
init.orthogonal_, checked against NumPy float64 references and closed-form statistics."""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.nn import functional as F
from tgrad.nn import init

F64 = tgrad.float64


# ===================================================================== ParameterList
def test_parameter_list_registers_under_indices():
    pl = nn.ParameterList([tgrad.ones(2), nn.Parameter(tgrad.zeros(3)), 5])
    assert len(pl) == 3 and pl[2] == 5
    assert isinstance(pl[0], nn.Parameter) and pl[0].requires_grad  # tensors are wrapped
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(tgrad.full((4,), 2.0))
    pl[-1] = tgrad.full((1,), 7.0)  # replaced in place: still named "3"
    pl += [tgrad.zeros(2, 2)]
    assert [(n, tuple(p.shape)) for n, p in pl.named_parameters()] == \
        [("0", (2,)), ("1", (3,)), ("3", (1,)), ("4", (2, 2))]
    assert [type(v).__name__ for v in pl] == ["Parameter", "Parameter", "int", "Parameter",
                                              "Parameter"]
    sub = pl[1:4:2]
    assert isinstance(sub, nn.ParameterList) and sub[0] is pl[1] and sub[1] is pl[3]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        pl[5]
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an "
                                        "iterable, but got Tensor"):
        pl.extend(tgrad.ones(2))


class _Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.plist = nn.ParameterList([tgrad.randn(2, 3), tgrad.randn(3)])
        self.pdict = nn.ParameterDict({"scale": tgrad.ones(2), "bias": tgrad.zeros(2)})

    def forward(self, x):
        h = self.lin(x @ self.plist[0].T + self.plist[1] @ self.plist[0].T)
        return h * self.pdict["scale"] + self.pdict["bias"]


def test_parameter_containers_are_seen_by_module_methods():
    tgrad.manual_seed(0)
    m = _Holder()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["lin.weight", "lin.bias", "plist.0", "plist.1", "pdict.bias",
                     "pdict.scale"]  # a plain dict's keys are added sorted, as PyTorch
    sd = m.state_dict()
    assert list(sd) == names
    # round trip into a fresh module
    tgrad.manual_seed(1)
    other = _Holder()
    assert other.load_state_dict(sd).missing_keys == []
    for (n, a), (_, b) in zip(m.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(force=True), b.numpy(force=True), err_msg=n)
    # gradients reach them; an optimizer over parameters() updates them
    x = tgrad.randn(4, 3)
    m(x).sum().backward()
    assert m.plist[0].grad.shape == (2, 3) and m.pdict["scale"].grad.shape == (2,)
    before = m.pdict["bias"].numpy(force=True).copy()
    tgrad.optim.SGD(m.parameters(), lr=0.1).step()
    np.testing.assert_allclose(m.pdict["bias"].numpy(force=True),
                               before - 0.1 * m.pdict["bias"].grad.numpy(), rtol=1e-6)
    # to() converts them in place (the same Parameter objects)
    p0 = m.plist[0]
    m.to(F64)
    assert m.plist[0] is p0 and p0.dtype is F64 and m.pdict["bias"].dtype is F64


# ===================================================================== ParameterDict
def test_parameter_dict_behaves_like_an_ordered_dict():
    pd = nn.ParameterDict(OrderedDict(b=tgrad.ones(2), a=tgrad.zeros(1)))  # order kept
    pd["c"] = "not a tensor"
    assert list(pd) == ["b", "a", "c"] and len(pd) == 3 and "a" in pd and "z" not in pd
    assert [n for n, _ in pd.named_parameters()] == ["b", "a"]
    pd.update([("z", tgrad.ones(1)), ("y", tgrad.ones(1))])
    assert list(pd.keys()) == ["b", "a", "c", "z", "y"]
    assert pd.get("nope", 3) == 3 and pd.setdefault("w", tgrad.ones(3)).shape == (3,)
    k, v = pd.popitem()
    assert k == "w" and isinstance(v, nn.Parameter) and "w" not in pd
    assert pd.pop("c") == "not a tensor" and list(reversed(pd)) == ["y", "z", "a", "b"]
    merged = pd | nn.ParameterDict({"q": tgrad.ones(1)})
    assert list(merged) == ["b", "a", "z", "y", "q"] and merged["b"] is pd["b"]
    del pd["a"]
    assert [n for n, _ in pd.named_parameters()] == ["b", "z", "y"]
    assert list(pd.fromkeys(["u", "v"])) == ["u", "v"]
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key "
                                        "as it is not a string \\(type is 'int'\\)"):
        pd[1] = tgrad.ones(1)
    with pytest.raises(ValueError, match="ParameterDict update sequence element #0 has "
                                         "length 3; 2 is required"):
        pd.update([("a", 1, 2)])
    with pytest.raises(KeyError, match=r"parameter name can.*t contain \"\.\""):
        pd["a.b"] = tgrad.ones(1)
    assert "a.b" not in pd
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)


# ===================================================================== Sequential / ModuleList
def _kinds(container):
    return [type(m).__name__ for m in container]


def test_sequential_list_operations():
    s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.GELU(), nn.SiLU())
    del s[1]
    assert _kinds(s) == ["ReLU", "GELU", "SiLU"] and list(s._modules) == ["0", "1", "2"]
    del s[0:2]
    assert _kinds(s) == ["SiLU"] and list(s._modules) == ["0"]
    s.insert(0, nn.Tanh()).insert(-1, nn.ReLU()).insert(3, nn.Sigmoid())
    assert _kinds(s) == ["Tanh", "ReLU", "SiLU", "Sigmoid"]
    s.extend([nn.Identity()]).append(nn.ReLU())
    assert list(s._modules) == [str(i) for i in range(6)]
    assert type(s.pop(-2)).__name__ == "Identity"
    assert _kinds(s) == ["Tanh", "ReLU", "SiLU", "Sigmoid", "ReLU"]
    s[1] = nn.Identity()
    assert _kinds(s)[1] == "Identity"
    x = np.array([-1.0, 0.5])
    t = np.tanh(x)
    u = t / (1 + np.exp(-t))  # silu
    np.testing.assert_allclose(s(tgrad.tensor(x)).numpy(), 1 / (1 + np.exp(-u)), rtol=1e-12)
    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    del named[0]
    assert list(named._modules) == ["0"]  # renamed as PyTorch does
    assert _kinds(nn.Sequential(nn.ReLU()) + nn.Sequential(nn.Tanh())) == ["ReLU", "Tanh"]
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, nn.ReLU())
    with pytest.raises(AssertionError, match="module should be of type"):
        s.insert(0, 3)
    with pytest.raises(IndexError, match="index -9 is out of range"):
        del s[-9]


def test_module_list_insert_pop_delete_keep_parameters_registered():
    lins = [nn.Linear(1, i + 1) for i in range(3)]
    ml = nn.ModuleList(lins)
    ml.insert(1, nn.Linear(1, 9))
    assert [m.out_features for m in ml] == [1, 9, 2, 3]
    assert [n for n, _ in ml.named_parameters()][:4] == ["0.weight", "0.bias", "1.weight",
                                                         "1.bias"]
    ml.insert(-1, nn.Linear(1, 8))  # list.insert semantics: before the last one
    ml.insert(100, nn.Linear(1, 7))  # past the end: appended
    assert [m.out_features for m in ml] == [1, 9, 2, 8, 3, 7]
    assert ml.pop(1).out_features == 9 and ml.pop(-1).out_features == 7
    del ml[0]
    assert [m.out_features for m in ml] == [2, 8, 3]
    assert list(ml._modules) == ["0", "1", "2"]
    assert [n for n, _ in ml.named_parameters()][::2] == ["0.weight", "1.weight", "2.weight"]
    assert ml[-1] is lins[2] and [m.out_features for m in ml[::2]] == [2, 3]
    popped = ml.pop(slice(0, 2))
    assert isinstance(popped, nn.ModuleList) and len(popped) == 2 and len(ml) == 1
    ml += [nn.ReLU()]
    ml[0] = nn.Tanh()
    assert _kinds(ml) == ["Tanh", "ReLU"] and _kinds(ml + [nn.GELU()])[-1] == "GELU"
    sd = ml.state_dict()
    assert list(sd) == []
    with pytest.raises(IndexError, match="index 2 is out of range"):
        ml.pop(2)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        ml.insert(0, 1)


# ===================================================================== Embedding
def test_embedding_from_pretrained():
    w = tgrad.tensor(np.arange(12.0).reshape(4, 3), dtype=F64)
    emb = nn.Embedding.from_pretrained(w)
    assert (emb.num_embeddings, emb.embedding_dim) == (4, 3)
    assert not emb.weight.requires_grad and emb.padding_idx is None
    idx = tgrad.tensor([[3, 0], [1, 1]])
    np.testing.assert_array_equal(emb(idx).numpy(), np.arange(12.0).reshape(4, 3)[[[3, 0],
                                                                                   [1, 1]]])
    with tgrad.no_grad():
        w[0, 0] = 100.0  # the weight shares the given tensor's storage, as PyTorch
    assert emb.weight[0, 0].item() == 100.0
    emb = nn.Embedding.from_pretrained(tgrad.ones(5, 2, dtype=F64), freeze=False,
                                       padding_idx=-1)
    assert emb.padding_idx == 4 and emb.weight.requires_grad
    out = emb(tgrad.tensor([4, 2, 2]))
    np.testing.assert_array_equal(out.numpy(force=True), np.ones((3, 2)))  # padding row kept
    (out * tgrad.tensor([[1.0], [2.0], [3.0]], dtype=F64)).sum().backward()
    want = np.zeros((5, 2))
    want[2] = 5.0  # row 4 is padding: no gradient
    np.testing.assert_array_equal(emb.weight.grad.numpy(), want)
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be "
                                             "2-dimensional"):
        nn.Embedding.from_pretrained(tgrad.ones(3))
    emb = nn.Embedding.from_pretrained(tgrad.tensor([[3.0, 4.0]], dtype=F64), max_norm=1.0)
    assert emb.max_norm == 1.0 and repr(emb) == "Embedding(1, 2, max_norm=1.0)"
    assert nn.Embedding.from_pretrained(tgrad.ones(3, 2), sparse=True).sparse is True


def _np_renorm(w, idx, max_norm, p):
    """PyTorch's embedding_renorm_: each distinct row of idx whose p-norm exceeds max_norm is
    scaled by max_norm / (norm + 1e-7) (norm == max_norm is left alone)."""
    w = w.copy()
    for i in np.unique(idx):
        norm = np.linalg.norm(w[i], ord=p)
        if norm > max_norm:
            w[i] *= max_norm / (norm + 1e-7)
    return w


@pytest.mark.parametrize("p", [2.0, 1.0, math.inf, 0.5])
def test_embedding_max_norm_renormalises_the_referenced_rows_in_place(p):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((6, 3)) * 3
    w0[4] = [0.0, -1.5, 0.0]  # norm == max_norm for every p: left alone
    idx = np.array([[0, 2, 0], [4, 5, 2]])               # duplicates; rows 1, 3 unused
    want_w = _np_renorm(w0, idx, 1.5, p)
    assert not np.allclose(want_w[[0, 2, 5]], w0[[0, 2, 5]])  # the case renormalises
    w = tgrad.tensor(w0, dtype=F64, requires_grad=True)
    out = F.embedding(tgrad.tensor(idx), w, max_norm=1.5, norm_type=p)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-14)  # in place
    np.testing.assert_array_equal(w.detach().numpy()[[1, 3, 4]], w0[[1, 3, 4]])
    np.testing.assert_allclose(out.detach().numpy(), want_w[idx], rtol=1e-14)
    assert w.grad_fn is None and w.is_leaf  # the renormalisation is not recorded
    gy = rng.standard_normal(out.shape)
    (out * tgrad.tensor(gy)).sum().backward()
    want_g = np.zeros_like(w0)
    np.add.at(want_g, idx, gy)  # the lookup's gradient only
    np.testing.assert_allclose(w.grad.numpy(), want_g, rtol=1e-14)
    # a second call finds every referenced norm <= max_norm: nothing changes
    before = w.detach().numpy().copy()
    F.embedding(tgrad.tensor(idx), w, max_norm=1.5, norm_type=p)
    np.testing.assert_array_equal(w.detach().numpy(), before)


def test_embedding_module_max_norm_and_padding_idx():
    # as PyTorch, the padding row is renormalised too when referenced (it only gets no
    # gradient); 1e-7 is added to the norm: 3 / (5 + 1e-7), not 0.6
    w0 = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [1.0, 1.0]])
    emb = nn.Embedding(4, 2, 2, 1.0, _weight=tgrad.tensor(w0, dtype=F64))
    assert (emb.padding_idx, emb.max_norm, emb.norm_type) == (2, 1.0, 2.0)
    assert repr(emb) == "Embedding(4, 2, padding_idx=2, max_norm=1.0)"
    out = emb(tgrad.tensor([0, 2, 0, 1]))
    want = w0.copy()
    want[0] = w0[0] * (1.0 / (5 + 1e-7))  # row *= scale, as PyTorch
    want[2] = w0[2] * (1.0 / (10 + 1e-7))
    np.testing.assert_array_equal(emb.weight.detach().numpy(), want)
    np.testing.assert_array_equal(out.detach().numpy(), want[[0, 2, 0, 1]])
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy(), [[2, 2], [1, 1], [0, 0], [0, 0]])
    # float32: the norm in float32, the scale in float64 (as PyTorch), then rounded once
    w32 = tgrad.tensor([[3.0, 4.0]])
    F.embedding(tgrad.tensor([0]), w32, max_norm=1.0)
    np.testing.assert_array_equal(w32.numpy(),
                                  np.float32([[3, 4]]) * np.float32(1 / (5 + 1e-7)))


def test_embedding_scale_grad_by_freq():
    # dweight[i] = (sum of the output gradients where input == i) / (count of i in the input)
    rng = np.random.default_rng(4)
    idx = np.array([[0, 1, 0], [3, 0, 1]])
    gy = rng.standard_normal((2, 3, 2))
    for padding_idx in (None, 3):
        w = tgrad.tensor(rng.standard_normal((5, 2)), dtype=F64, requires_grad=True)
        out = F.embedding(tgrad.tensor(idx), w, padding_idx, scale_grad_by_freq=True)
        np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[idx])
        (out * tgrad.tensor(gy)).sum().backward()
        want = np.zeros((5, 2))
        np.add.at(want, idx, gy)
        want /= np.maximum(np.bincount(idx.ravel(), minlength=5), 1)[:, None]
        if padding_idx is not None:
            want[padding_idx] = 0
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-14)
    # the module, with a repeated index in a 1-D batch: 3 copies, each gradient / 3
    emb = nn.Embedding(3, 2, scale_grad_by_freq=True, dtype=F64)
    assert repr(emb) == "Embedding(3, 2, scale_grad_by_freq=True)"
    (emb(tgrad.tensor([1, 1, 1, 2])) * tgrad.tensor([[1.0], [2.0], [6.0], [5.0]],
                                                    dtype=F64)).sum().backward()
    np.testing.assert_allclose(emb.weight.grad.numpy(), [[0, 0], [3, 3], [5, 5]], rtol=1e-15)
    # the gradient (a weighted scatter of the output gradient) is itself differentiable
    w = tgrad.tensor(rng.standard_normal((4, 2)), dtype=F64, requires_grad=True)
    gy = tgrad.tensor(rng.standard_normal((3, 2)), dtype=F64, requires_grad=True)
    out = F.embedding(tgrad.tensor([2, 0, 2]), w, scale_grad_by_freq=True)
    (gw,) = tgrad.autograd.grad(out, w, gy, create_graph=True)
    (gw * tgrad.tensor(np.arange(8.0).reshape(4, 2))).sum().backward()
    # PyTorch's embedding double backward is the plain gather (rows 2, 0, 2 of the weights
    # arange(8).reshape(4, 2)), the 1 / count scale left out: the scale belongs to the
    # gradient's definition, so the second derivative through the weight (below) counts
    # it once, as the finite differences do
    np.testing.assert_allclose(gy.grad.numpy(), [[4, 5], [0, 1], [4, 5]], rtol=1e-15)
    idx = tgrad.tensor([1, 1, 1, 1, 0, 2])
    wn = rng.standard_normal((3, 2))
    vn = rng.standard_normal((3, 2))

    def first_grad(wv: np.ndarray, graph: bool):
        w = tgrad.tensor(wv, dtype=F64, requires_grad=True)
        out = F.embedding(idx, w, scale_grad_by_freq=True)
        (gw,) = tgrad.autograd.grad((out ** 3).sum(), w, create_graph=graph)
        return w, gw

    w, gw = first_grad(wn, True)
    (hv,) = tgrad.autograd.grad((gw * tgrad.tensor(vn)).sum(), w)  # Hessian @ v
    eps = 1e-6
    fd = (first_grad(wn + eps * vn, False)[1].numpy() -
          first_grad(wn - eps * vn, False)[1].numpy()) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), fd, rtol=1e-7, atol=1e-9)


def test_one_hot_takes_input_and_max_min_take_other():
    # PyTorch 2.13's keyword names: one_hot(input=...), max/min(input, other=...)
    oh = F.one_hot(input=tgrad.tensor([1, 0, 2]))
    np.testing.assert_array_equal(oh.numpy(), np.eye(3, dtype=np.int64)[[1, 0, 2]])
    with pytest.raises(TypeError):
        F.one_hot(tensor=tgrad.tensor([1, 0]))
    a, b = tgrad.tensor([1.0, 5.0]), tgrad.tensor([3.0, 2.0])
    assert tgrad.max(a, other=b).tolist() == [3.0, 5.0] == a.max(other=b).tolist()
    assert tgrad.min(input=a, other=b).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="other= takes a Tensor"):
        tgrad.max(a, other=1)  # (not max along dim 1)


def test_embedding_sparse_and_signature():
    w = tgrad.ones(3, 2, requires_grad=True)  # sparse=True: a sparse COO weight gradient
    F.embedding(tgrad.tensor([0]), w, sparse=True).sum().backward()
    assert w.grad.is_sparse and w.grad.to_dense().tolist() == [[1, 1], [0, 0], [0, 0]]
    # PyTorch's positional order: padding_idx, max_norm, norm_type, scale_grad_by_freq,
    # sparse, _weight, _freeze
    emb = nn.Embedding(3, 2, None, 2.0, 1.0, True, False, tgrad.ones(3, 2), True)
    assert (emb.max_norm, emb.norm_type, emb.scale_grad_by_freq, emb.sparse) == \
        (2.0, 1.0, True, False)
    assert not emb.weight.requires_grad
    assert repr(emb) == "Embedding(3, 2, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True)"
    # a bad index is reported before any row is renormalised
    w = tgrad.full((3, 2), 5.0)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(tgrad.tensor([0, -1]), w, max_norm=1.0)
    with pytest.raises(IndexError):
        F.embedding(tgrad.tensor([0, 3]), w, max_norm=1.0)
    np.testing.assert_array_equal(w.numpy(), np.full((3, 2), 5.0))


# ===================================================================== Dropout1d/2d/3d
CASES = [  # function, module, input shape, number of leading "channel" dims
    (F.dropout1d, nn.Dropout1d, (40, 100, 3), 2),
    (F.dropout1d, nn.Dropout1d, (4000, 3), 1),          # unbatched (C, L)
    (F.dropout2d, nn.Dropout2d, (50, 80, 2, 3), 2),
    (F.dropout3d, nn.Dropout3d, (20, 200, 2, 1, 3), 2),
    (F.dropout3d, nn.Dropout3d, (4000, 1, 2, 2), 1),    # unbatched (C, D, H, W)
]


@pytest.mark.parametrize("fn,mod,shape,lead", CASES)
def test_channel_dropout_statistics(fn, mod, shape, lead):
    p = 0.3
    tgrad.manual_seed(123)
    y = fn(tgrad.ones(shape, dtype=F64), p).numpy()
    channels = y.reshape(int(np.prod(shape[:lead])), -1)
    # every channel is all zeros or all 1/(1-p)
    assert (channels == channels[:, :1]).all()
    vals = channels[:, 0]
    assert set(np.unique(vals)) <= {0.0, 1.0 / (1.0 - p)}
    kept, n = (vals != 0).mean(), vals.size
    assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)  # 5 binomial std
    # the module draws the same mask for the same seed; eval mode is the identity
    m = mod(p)
    tgrad.manual_seed(123)
    np.testing.assert_array_equal(m(tgrad.ones(shape, dtype=F64)).numpy(), y)
    x = tgrad.randn(shape)
    assert m.eval()(x) is x and fn(x, p, training=False) is x and fn(x, 0.0) is x


def test_channel_dropout_output_and_gradient_are_x_times_the_mask():
    tgrad.manual_seed(7)
    mask = F.dropout2d(tgrad.ones(3, 5, 4, 2, dtype=F64), 0.4).numpy()
    x = tgrad.randn(3, 5, 4, 2, dtype=F64, requires_grad=True)
    g = np.random.default_rng(0).standard_normal((3, 5, 4, 2))
    tgrad.manual_seed(7)
    y = F.dropout2d(x, 0.4)
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy() * mask)
    y.backward(tgrad.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), g * mask)

    def f(t):
        tgrad.manual_seed(11)  # the same mask at every evaluation
        return F.dropout1d(t, 0.5)
    t = tgrad.randn(2, 3, 4, dtype=F64, requires_grad=True)
    assert tgrad.autograd.gradcheck(f, (t,))
    assert tgrad.autograd.gradgradcheck(f, (t,))


def test_channel_dropout_edge_cases():
    # p = 1 zeros everything multiplicatively (NaN stays NaN, as PyTorch)
    y = F.dropout1d(tgrad.tensor([[1.0, float("nan")], [2.0, 3.0]]), 1.0).numpy()
    assert np.isnan(y[0, 1]) and (y[[0, 1, 1], [0, 0, 1]] == 0).all()
    # empty batch, batch of one, odd sizes, float32
    e = tgrad.ones(0, 3, 5)
    assert F.dropout1d(e, 0.5) is e
    tgrad.manual_seed(3)
    one = F.dropout3d(tgrad.ones(1, 7, 1, 3, 5), 0.5).numpy()
    assert one.dtype == np.float32 and set(np.unique(one)) <= {0.0, 2.0}
    assert (one.reshape(7, -1) == one.reshape(7, -1)[:, :1]).all()
    # in place: the input itself holds the result
    z = tgrad.ones(2, 3, 4)
    assert F.dropout1d(z, 0.5, inplace=True) is z
    assert set(np.unique(z.numpy())) <= {0.0, 2.0}
    # repeated calls draw new masks; manual_seed replays them
    tgrad.manual_seed(5)
    a, b = (F.dropout2d(tgrad.ones(64, 8, 1, 1), 0.5).numpy() for _ in range(2))
    tgrad.manual_seed(5)
    np.testing.assert_array_equal(F.dropout2d(tgrad.ones(64, 8, 1, 1), 0.5).numpy(), a)
    assert not (a == b).all()


def test_channel_dropout_errors_and_warnings():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        F.dropout2d(tgrad.ones(1, 2, 3, 3), 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got -0.1"):
        nn.Dropout3d(-0.1)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                                           "4D input"):
        F.dropout1d(tgrad.ones(1, 2, 3, 4), 0.5)
    with pytest.raises(RuntimeError, match="dropout1d: expected a floating point input"):
        F.dropout1d(tgrad.ones(2, 3, dtype=tgrad.int64), 0.5)
    with pytest.raises(TypeError, match="dropout2d\\(\\): argument 'input' must be Tensor"):
        F.dropout2d([1.0], 0.5)
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d"):
        out = F.dropout2d(tgrad.ones(2, 3, 4), 0.5)  # read as (N, C, L)
    assert (out.numpy() == out.numpy()[:, :, :1]).all()
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input to dropout3d"):
        F.dropout3d(tgrad.ones(2, 3, 4), 0.5)
    with warnings.catch_warnings(), pytest.raises(
            RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        warnings.simplefilter("ignore")
        F.dropout2d(tgrad.ones(3), 0.5)
    assert repr(nn.Dropout2d(0.2, inplace=True)) == "Dropout2d(p=0.2, inplace=True)"


# ===================================================================== init
def _phi(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _cdf(x):
    return (1 + math.erf(x / math.sqrt(2))) / 2


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -1.0, 4.0),
                                          (0.0, 1.0, -4.0, 4.0), (0.5, 0.1, 0.45, 10.0)])
def test_trunc_normal_matches_the_truncated_distribution(mean, std, a, b):
    n = 100_000
    tgrad.manual_seed(0)
    t = init.trunc_normal_(tgrad.empty(n // 100, 100, dtype=F64), mean, std, a, b)
    x = t.numpy().ravel()
    assert x.min() >= a and x.max() <= b
    al, be = (a - mean) / std, (b - mean) / std
    z = _cdf(be) - _cdf(al)
    mu = mean + std * (_phi(al) - _phi(be)) / z
    var = std ** 2 * (1 + (al * _phi(al) - be * _phi(be)) / z - ((_phi(al) - _phi(be)) / z) ** 2)
    assert abs(x.mean() - mu) < 6 * math.sqrt(var / n)
    assert abs(x.var() - var) < 6 * var * math.sqrt(2 / n)  # kurtosis <= 3 when truncated
    for q in (0.1, 0.5, 0.9, 0.99):  # empirical CDF at quantiles of the truncated law
        cut = mean + std * math.sqrt(2) * _erfinv_scalar(2 * (_cdf(al) + q * z) - 1)
        assert abs((x <= cut).mean() - q) < 6 * math.sqrt(q * (1 - q) / n) + 1e-12, q
    # tgrad.manual_seed replays it; float32 tensors are filled too
    tgrad.manual_seed(0)
    again = init.trunc_normal_(tgrad.empty(n // 100, 100, dtype=F64), mean, std, a, b)
    np.testing.assert_array_equal(again.numpy().ravel(), x)
    f32 = init.trunc_normal_(tgrad.empty(3, 7), mean, std, a, b)
    assert f32.dtype is tgrad.float32 and f32.is_leaf
    assert (f32.numpy() >= np.float32(a)).all() and (f32.numpy() <= np.float32(b)).all()


def _erfinv_scalar(y: float) -> float:
    """Bisection on math.erf (a reference independent of init's erfinv)."""
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erf(mid) < y:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def test_trunc_normal_inverse_error_function_is_exact_to_float64():
    from tgrad.nn.init import _erfinv
    y = np.concatenate([np.linspace(-0.999, 0.999, 2001), [0.9966, -0.99661, 1 - 1e-10,
                                                           -(1 - 2 ** -52), 0.0]])
    x = _erfinv(tgrad.tensor(y, dtype=F64)).numpy()
    central = np.abs(y) < 0.99
    np.testing.assert_allclose([math.erf(v) for v in x[central]], y[central], rtol=0,
                               atol=1e-15)  # a few ulp
    # the tails through erfc: 1 - |y| is exact there
    tails = ~central & (y != 0)
    np.testing.assert_allclose([math.erfc(abs(v)) for v in x[tails]], 1 - np.abs(y[tails]),
                               rtol=1e-13)
    assert np.array_equal(np.sign(x), np.sign(y))
    edges = _erfinv(tgrad.tensor([1.0, -1.0], dtype=F64)).numpy()
    assert edges.tolist() == [math.inf, -math.inf]
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        init.trunc_normal_(tgrad.empty(4, dtype=F64), mean=10.0, a=-1.0, b=1.0)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3), (1, 7), (7, 1), (6, 6)])
def test_orthogonal_is_orthogonal_and_matches_numpy_qr(shape):
    gain = 1.7
    tgrad.manual_seed(42)
    w = init.orthogonal_(tgrad.empty(shape, dtype=F64), gain=gain)
    rows = shape[0]
    m = w.numpy().reshape(rows, -1)
    cols = m.shape[1]
    if rows <= cols:
        np.testing.assert_allclose(m @ m.T, gain ** 2 * np.eye(rows), rtol=0, atol=1e-12)
    else:
        np.testing.assert_allclose(m.T @ m, gain ** 2 * np.eye(cols), rtol=0, atol=1e-12)
    # PyTorch's construction from the same standard normal draws: Q of QR, column signs
    # from diag(R)
    tgrad.manual_seed(42)
    a = tgrad.randn(rows, cols, dtype=F64).numpy()
    a = a.T if rows < cols else a
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    q = q.T if rows < cols else q
    np.testing.assert_allclose(m, gain * q, rtol=0, atol=1e-12)
    assert w.is_leaf and not w.requires_grad


def test_orthogonal_edge_cases():
    p = nn.Parameter(tgrad.empty(4, 4))
    out = init.orthogonal_(p)
    assert out is p and p.requires_grad and p.grad_fn is None and p.dtype is tgrad.float32
    m = p.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(m @ m.T, np.eye(4), atol=1e-6)
    empty = tgrad.empty(0, 3)
    assert init.orthogonal_(empty) is empty
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are "
                                         "supported"):
        init.orthogonal_(tgrad.empty(3))


def test_bilinear_module_and_errors():
    import tgrad.nn.functional as F
    m = tgrad.nn.Bilinear(3, 2, 4)
    assert m.weight.shape == (4, 3, 2) and m.bias.shape == (4,)
    bound = 1 / np.sqrt(3)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    x1, x2 = tgrad.randn(5, 3), tgrad.randn(5, 2)
    want = np.einsum("ni,oij,nj->no", x1.numpy(), m.weight.detach().numpy(), x2.numpy()) \
        + m.bias.detach().numpy()
    np.testing.assert_allclose(m(x1, x2).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=2, out_features=4, bias=True)"
    with pytest.raises(RuntimeError, match=r"bilinear\(\): input batch dimensions do not "
                                           r"match: got \[5\] and \[4\]"):
        m(x1, tgrad.randn(4, 2))
    with pytest.raises(RuntimeError, match=r"input1 size does not match weight size: got 2 "
                                           r"but expected 3"):
        F.bilinear(x2, x2, m.weight)


def test_adaptive_max_pool_modules():
    x = tgrad.tensor(np.arange(35.0).reshape(1, 1, 5, 7), requires_grad=True)
    y, idx = tgrad.nn.AdaptiveMaxPool2d((2, 3), return_indices=True)(x)
    assert y.tolist() == [[[[16.0, 18.0, 20.0], [30.0, 32.0, 34.0]]]]
    assert idx.tolist() == [[[[16, 18, 20], [30, 32, 34]]]]
    y.sum().backward()
    assert x.grad.sum().item() == 6.0 and x.grad[0, 0, 2, 2].item() == 1.0
    m = tgrad.nn.AdaptiveMaxPool1d(3)
    assert m(tgrad.tensor([[3.0, 1, 4, 1, 5, 9, 2]])).tolist() == [[4.0, 5.0, 9.0]]
    assert repr(m) == "AdaptiveMaxPool1d(output_size=3)"
    with pytest.raises(RuntimeError, match=r"adaptive_max_pool2d\(\): Expected 3D or 4D tensor"):
        tgrad.nn.functional.adaptive_max_pool2d(tgrad.ones(3), 2)


def test_conv3d_module():
    m = tgrad.nn.Conv3d(2, 4, (2, 3, 1), stride=(1, 2, 1), padding=1, bias=True)
    assert m.weight.shape == (4, 2, 2, 3, 1)
    bound = 1 / np.sqrt(2 * 2 * 3 * 1)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    x = tgrad.randn(3, 2, 4, 5, 6)
    y = m(x)
    assert y.shape == (3, 4, 5, 3, 8)
    want = tgrad.nn.functional.conv3d(x, m.weight, m.bias, (1, 2, 1), 1)
    np.testing.assert_array_equal(y.detach().numpy(), want.detach().numpy())
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\) input "
                                           r"to conv3d"):
        m(tgrad.randn(2, 4, 5))


def test_max_unpool_round_trip_modules_and_errors():
    F = tgrad.nn.functional  # noqa: N806
    x = tgrad.tensor(np.arange(1.0, 17.0).reshape(1, 1, 4, 4))
    pool = tgrad.nn.MaxPool2d(2, stride=2, return_indices=True)
    unpool = tgrad.nn.MaxUnpool2d(2, stride=2)
    y, idx = pool(x)
    assert unpool(y, idx).tolist() == [[[[0.0, 0.0, 0.0, 0.0], [0.0, 6.0, 0.0, 8.0],
                                         [0.0, 0.0, 0.0, 0.0], [0.0, 14.0, 0.0, 16.0]]]]
    assert unpool(y, idx, output_size=x.shape).shape == (1, 1, 4, 4)
    assert unpool(y, idx, output_size=(5, 5)).shape == (1, 1, 5, 5)
    z = tgrad.rand(1, 2, 4, 6, 6) + 0.1  # positive: the unpooled zeros never win a window
    p, j = F.max_pool3d(z, 2, return_indices=True)
    np.testing.assert_array_equal(F.max_pool3d(tgrad.nn.MaxUnpool3d(2)(p, j), 2).numpy(),
                                  p.numpy())
    with pytest.raises(RuntimeError, match=r"max_unpool2d: Found an invalid max index: 20 "
                                           r"\(output volumes are of size 4x4\)"):
        F.max_unpool2d(y, idx * 0 + 20, 2)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(y, idx, 2, output_size=(7, 7))
    with pytest.raises(RuntimeError, match="elements in indices should be type int64"):
        F.max_unpool2d(y, idx.int(), 2)
    a3 = tgrad.nn.AdaptiveMaxPool3d((1, 2, 2), return_indices=True)
    v, w = a3(tgrad.tensor(np.arange(24.0).reshape(1, 2, 3, 4)))
    assert v.tolist() == [[[[17.0, 19.0], [21.0, 23.0]]]] and w.tolist() == [[[[17, 19],
                                                                              [21, 23]]]]


def test_conv_transpose3d_module_is_conv3d_adjoint():
    rng = np.random.default_rng(2)
    m = tgrad.nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0),
                                 groups=2, bias=False).double()
    g = tgrad.tensor(rng.standard_normal((2, 4, 3, 4, 2)))
    x = tgrad.tensor(rng.standard_normal((2, 6, 5, 4, 4)))
    y = m(g, output_size=(5, 4, 4))  # output_padding picked to reach the size
    assert y.shape == x.shape
    conv = tgrad.nn.functional.conv3d(x, m.weight.detach(), stride=(2, 1, 2),
                                      padding=(1, 1, 0), groups=2)
    assert conv.shape == g.shape  # <conv3d(x), g> = <x, conv_transpose3d(g)>
    assert (conv * g).sum().item() == pytest.approx((x * y.detach()).sum().item(), rel=1e-12)


# ============================================================ batch_norm dtype rule
def test_batch_norm_refuses_mixed_dtypes_as_pytorch():
    # PyTorch 2.13 CPU: a float64 input with a float32 module (weight, bias or running
    # statistics) is a RuntimeError 'mixed dtype'; a float16/bfloat16 input may take float32
    # parameters; no parameters at all is fine
    x = tgrad.tensor(np.arange(12.0).reshape(4, 3))
    bn = nn.BatchNorm1d(3)  # float32
    with pytest.raises(RuntimeError, match=r"batch_norm: mixed dtype \(CPU\): all inputs must "
                                           r"share same datatype; got input float64 and "
                                           r"weight float32"):
        bn(x)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.batch_norm(x, tgrad.zeros(3), tgrad.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean float64"):
        F.batch_norm(x.float(), tgrad.zeros(3, dtype=F64), tgrad.ones(3, dtype=F64))
    lazy = nn.LazyBatchNorm1d()
    with pytest.raises(RuntimeError, match="mixed dtype"):
        lazy(x)
    # allowed: same dtype, half input with float32 parameters, no parameters
    xn = np.arange(12.0).reshape(4, 3)
    want = (xn - xn.mean(0)) / np.sqrt(xn.var(0) + 1e-5)
    np.testing.assert_allclose(bn.to(F64)(x).detach().numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(F.batch_norm(x, None, None, training=True).numpy(), want,
                               rtol=1e-10)
    y = nn.BatchNorm1d(3)(x.to(tgrad.bfloat16))
    assert y.dtype is tgrad.bfloat16
    np.testing.assert_allclose(y.float().detach().numpy(), want, rtol=1e-2, atol=1e-2)


# ===================================================================== BatchNorm bias=
@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (4, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (4, 3, 2, 3)),
                                       (nn.BatchNorm3d, (2, 3, 2, 2, 3))])
def test_batchnorm_bias_false_keeps_the_weight(cls, shape):
    # PyTorch 2.13: keyword-only ``bias``; bias=False registers bias as None while the affine
    # weight stays; the state_dict has no "bias" key
    bn = cls(3, bias=False, dtype=F64)
    assert isinstance(bn.weight, nn.Parameter) and bn.bias is None
    assert list(bn.state_dict()) == ["weight", "running_mean", "running_var",
                                     "num_batches_tracked"]
    assert [n for n, _ in bn.named_parameters()] == ["weight"]
    assert repr(bn) == (f"{cls.__name__}(3, eps=1e-05, momentum=0.1, affine=True, "
                        f"bias=False, track_running_stats=True)")
    assert repr(cls(3)) == (f"{cls.__name__}(3, eps=1e-05, momentum=0.1, affine=True, "
                            f"bias=True, track_running_stats=True)")
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape)
    w = rng.standard_normal(3)
    with tgrad.no_grad():
        bn.weight.copy_(tgrad.tensor(w))
    xt = tgrad.tensor(x, requires_grad=True)
    y = bn(xt)
    axes = (0,) + tuple(range(2, len(shape)))
    cshape = (1, 3) + (1,) * (len(shape) - 2)
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5) \
        * w.reshape(cshape)  # no bias term
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    assert tgrad.autograd.gradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, True),
                                    (xt, bn.weight))
    # loading a bias=True state_dict into it: "bias" is unexpected
    missing, unexpected = bn.load_state_dict(cls(3, dtype=F64).state_dict(), strict=False)
    assert missing == [] and unexpected == ["bias"]
    # affine=False: neither parameter, whatever bias says
    bn = cls(3, affine=False, bias=True)
    assert bn.weight is None and bn.bias is None and "bias=False" in repr(bn)
    with pytest.raises(TypeError):
        cls(3, 1e-5, 0.1, True, True, None, None, False)  # bias is keyword-only


def test_instancenorm_bias_keyword():
    # InstanceNorm shares PyTorch's _NormBase: the same keyword-only bias
    norm = nn.InstanceNorm2d(2, affine=True, bias=False, dtype=F64)
    assert norm.weight is not None and norm.bias is None
    assert repr(norm) == ("InstanceNorm2d(2, eps=1e-05, momentum=0.1, affine=True, "
                          "bias=False, track_running_stats=False)")
    x = np.random.default_rng(0).standard_normal((2, 2, 3, 3))
    want = (x - x.mean((2, 3), keepdims=True)) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(norm(tgrad.tensor(x)).detach().numpy(), want, rtol=1e-10,
                               atol=1e-12)


def test_threshold_compares_halves_in_float32_and_dropout_refuses_nan():
    # PyTorch's threshold compares a float16/bfloat16 x with the threshold in float32: the
    # half 0.30005 (0.3 rounded) stays above 0.3, its gradient 1 (it was replaced by value)
    for dt in (tgrad.float16, tgrad.bfloat16):
        x = tgrad.tensor([0.3, 0.1, 1.0], dtype=dt, requires_grad=True)
        xf = x.detach().float().numpy().astype(np.float64)
        y = F.threshold(x, 0.3, -5.0)
        y.sum().backward()
        keep = xf > 0.3
        np.testing.assert_array_equal(y.detach().float().numpy(), np.where(keep, xf, -5.0))
        np.testing.assert_array_equal(x.grad.float().numpy(), keep.astype(np.float64))
    # a NaN probability: PyTorch's RuntimeError, also when not training (NaN compared false
    # with both bounds, so it was accepted and gave NaN outputs)
    nan = float("nan")
    for f in (lambda: F.dropout(tgrad.ones(3), nan), lambda: F.dropout(tgrad.ones(3), nan, False),
              lambda: F.alpha_dropout(tgrad.ones(3), nan, True),
              lambda: F.dropout2d(tgrad.ones(1, 2, 2, 2), nan),
              lambda: nn.Dropout(nan)(tgrad.ones(2))):
        with pytest.raises(RuntimeError, match="between 0 and 1, but got nan"):
            f()
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.dropout(tgrad.ones(2), 1.5)
