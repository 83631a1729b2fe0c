"""tgrad.save / tgrad.load: round trips of tensors, nested containers and state dicts;
the file is a plain .npz readable without pickle."""

import copy
import io
import json
import math
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tgrad
from tgrad import optim


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16,
                                   tgrad.int64, tgrad.int32, tgrad.bool])
def test_tensor_round_trip_all_dtypes(tmp_path, dtype):
    src = np.random.default_rng(0).normal(size=(3, 5)) * 10
    x = tgrad.tensor(src).to(dtype)
    path = tmp_path / "x.tg"
    tgrad.save(x, path)
    y = tgrad.load(path)
    assert y.dtype is dtype and y.shape == (3, 5) and y.device == tgrad.device("cpu")
    np.testing.assert_array_equal(np.asarray(y.numpy(), np.float64),
                                  np.asarray(x.numpy(), np.float64))
    assert not path.with_suffix(".tg.npz").exists()  # the exact path is used


@pytest.mark.parametrize("dtype", [tgrad.float8_e4m3fn, tgrad.float8_e5m2,
                                   tgrad.float8_e4m3fnuz, tgrad.float8_e5m2fnuz,
                                   tgrad.float8_e8m0fnu], ids=lambda d: d.name)
def test_float8_round_trips_with_every_bit_pattern(tmp_path, dtype):
    # stored as the uint8 bits with the dtype name: NaN payloads and -0 come back as they were
    x = tgrad.tensor(np.arange(256, dtype=np.uint8)).view(dtype).reshape(16, 16).t()
    path = tmp_path / "x.tg"
    tgrad.save({"x": x}, path)
    with np.load(path, allow_pickle=False) as z:
        assert z["t0"].dtype == np.uint8  # plain NumPy: readable without ml_dtypes
    y = tgrad.load(path)["x"]
    assert y.dtype is dtype and y.shape == (16, 16)
    assert y.view(tgrad.uint8).tolist() == np.arange(256).reshape(16, 16).T.tolist()


def test_nested_structure_and_scalars(tmp_path):
    a = tgrad.arange(6).reshape(2, 3)
    obj = {"a": a, "b": [1, 2.5, True, None, "text", (a.t(), -math.inf)],
           3: OrderedDict(z=tgrad.tensor(1.5, dtype=tgrad.float64), y=float("nan")),
           "dt": tgrad.bfloat16}
    f = io.BytesIO()
    tgrad.save(obj, f)
    f.seek(0)
    out = tgrad.load(f)
    assert list(out) == ["a", "b", 3, "dt"]
    np.testing.assert_array_equal(out["a"].numpy(), np.arange(6).reshape(2, 3))
    assert out["b"][:5] == [1, 2.5, True, None, "text"]
    assert isinstance(out["b"][5], tuple) and out["b"][5][1] == -math.inf
    np.testing.assert_array_equal(out["b"][5][0].numpy(), np.arange(6).reshape(2, 3).T)
    assert isinstance(out[3], OrderedDict) and list(out[3]) == ["z", "y"]
    assert out[3]["z"].item() == 1.5 and math.isnan(out[3]["y"])
    assert out["dt"] is tgrad.bfloat16


def test_requires_grad_and_copy_semantics(tmp_path):
    x = tgrad.ones(3, requires_grad=True)
    tgrad.save({"x": x}, tmp_path / "f")
    y = tgrad.load(tmp_path / "f")["x"]
    assert y.requires_grad and y.is_leaf
    with tgrad.no_grad():
        y.add_(1)
    np.testing.assert_array_equal(x.detach().numpy(), np.ones(3, np.float32))


def test_file_is_plain_npz_without_pickles(tmp_path):
    tgrad.save({"w": tgrad.ones(2, 2), "n": 3}, tmp_path / "f")
    with zipfile.ZipFile(tmp_path / "f") as z:
        names = sorted(z.namelist())
    assert names == ["__tgrad__.npy", "t0.npy"]
    with np.load(tmp_path / "f", allow_pickle=False) as z:
        doc = json.loads(bytes(z["__tgrad__"]).decode())
        np.testing.assert_array_equal(z["t0"], np.ones((2, 2), np.float32))
    assert doc["root"]["dict"][1] == ["n", 3]


def test_object_arrays_are_refused(tmp_path):
    # An .npz holding a pickled object array must not be unpickled by load.
    np.savez(tmp_path / "evil.npz", __tgrad__=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle"):
        tgrad.load(tmp_path / "evil.npz")


def test_foreign_npz_gets_a_clear_error(tmp_path):
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(RuntimeError, match="not a file written by tgrad.save"):
        tgrad.load(tmp_path / "plain.npz")


def test_unsupported_object_names_its_position(tmp_path):
    with pytest.raises(TypeError, match=r"type set at obj\['a'\]\[1\]"):
        tgrad.save({"a": [1, {2}]}, tmp_path / "f")


def test_optimizer_state_dict_round_trip(tmp_path):
    p = tgrad.tensor([1.0, -2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    opt = optim.Adam([p], lr=0.1, amsgrad=True)
    for _ in range(2):
        opt.zero_grad()
        (p ** 2).sum().backward()
        opt.step()
    tgrad.save(opt.state_dict(), tmp_path / "opt")
    sd = tgrad.load(tmp_path / "opt")
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sd["param_groups"][0]["params"] == [0]
    ref = opt.state_dict()["state"][0]
    for k in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        assert sd["state"][0][k].dtype is ref[k].dtype
        np.testing.assert_array_equal(sd["state"][0][k].numpy(), ref[k].numpy())
    q = tgrad.tensor(p.detach().numpy(), requires_grad=True)
    opt2 = optim.Adam([q])
    opt2.load_state_dict(sd)
    for o, t in ((opt, p), (opt2, q)):
        o.zero_grad()
        (t ** 2).sum().backward()
        o.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


# ------------------------------------------------------------ pickle and copy.deepcopy
_SRC = np.arange(24.0).reshape(2, 3, 4) - 7.5
# (view-producing op, the same op in NumPy as the independent reference)
_VIEW_OPS = [
    ("t", lambda x: x[0].t(), lambda a: a[0].T),
    ("T", lambda x: x.T, lambda a: a.transpose(2, 1, 0)),
    ("mT", lambda x: x.mT, lambda a: a.swapaxes(-1, -2)),
    ("squeeze_dim", lambda x: x[:1].squeeze(0), lambda a: a[0]),
    ("squeeze", lambda x: x[:, :1].squeeze(), lambda a: a[:, 0]),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
    ("permute", lambda x: x.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
    ("view", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    ("expand", lambda x: x[:1].expand(3, 3, 4), lambda a: np.broadcast_to(a[:1], (3, 3, 4))),
    ("slice", lambda x: x[:, 1:, ::2], lambda a: a[:, 1:, ::2]),
    ("select", lambda x: x[1, 2], lambda a: a[1, 2]),
    ("diagonal", lambda x: x.diagonal(0, 1, 2), lambda a: a.diagonal(0, 1, 2)),
    ("unfold", lambda x: x.unfold(2, 2, 1), lambda a: np.stack([a[..., i:i + 2]
                                                                for i in range(3)], 2)),
    ("split", lambda x: x.split(1, 1)[2], lambda a: a[:, 2:3]),
    ("unbind", lambda x: x.unbind(2)[1], lambda a: a[:, :, 1]),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("as_strided", lambda x: x.as_strided((2, 2), (5, 1), 1),
     lambda a: np.array([[a.flat[1], a.flat[2]], [a.flat[6], a.flat[7]]])),
    ("mul", lambda x: x * 2, lambda a: a * 2),
]


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name,op,ref", _VIEW_OPS, ids=[c[0] for c in _VIEW_OPS])
def test_pickle_views_and_results_as_pytorch(name, op, ref, requires_grad, tmp_path):
    # PyTorch pickles the values, dtype and requires_grad, never the graph: the copy is a
    # leaf (a non-leaf that required grad comes back as a leaf that requires grad) with its
    # own storage. The view Functions (t's T, squeeze(dim)'s Squeeze1, the backward nodes)
    # are classes made at run time, which pickle could not find by name
    import pickle
    x = tgrad.tensor(_SRC, dtype=tgrad.float64, requires_grad=requires_grad)
    v = op(x)
    assert (v.grad_fn is not None) == requires_grad
    for y in (pickle.loads(pickle.dumps(v)), pickle.loads(pickle.dumps(v, protocol=2))):
        assert type(y) is tgrad.Tensor and y.dtype is tgrad.float64
        assert y.grad_fn is None and y.is_leaf and y.requires_grad is requires_grad
        np.testing.assert_array_equal(y.detach().numpy(), ref(_SRC))
        with tgrad.no_grad():
            y.add_(1)  # its own storage: the source does not change
        np.testing.assert_array_equal(x.detach().numpy(), _SRC)
    tgrad.save(v, tmp_path / "v.tg")
    y = tgrad.load(tmp_path / "v.tg")
    assert y.requires_grad is requires_grad and y.is_leaf
    np.testing.assert_array_equal(y.detach().numpy(), ref(_SRC))
    if requires_grad:  # PyTorch's deepcopy takes graph leaves only
        with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user "
                                               r"\(graph leaves\) support the deepcopy"):
            copy.deepcopy(v)
    else:
        y = copy.deepcopy(v)
        assert y.is_leaf and not y.requires_grad and y._base is None
        np.testing.assert_array_equal(y.numpy(), ref(_SRC))


def test_pickle_and_deepcopy_keep_what_pytorch_keeps():
    import pickle
    # a transpose keeps its column-major strides (PyTorch's pickle keeps the strides)
    t = tgrad.tensor(_SRC[0]).t()
    assert pickle.loads(pickle.dumps(t)).stride() == (1, 4) == copy.deepcopy(t).stride()
    # pickle drops .grad, deepcopy copies it; both keep the Python attributes
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    a.grad = tgrad.tensor([3.0, 4.0])
    a.tag = "w"
    p = pickle.loads(pickle.dumps(a))
    assert p.grad is None and p.requires_grad and p.tag == "w"
    d = copy.deepcopy(a)
    np.testing.assert_array_equal(d.grad.numpy(), [3.0, 4.0])
    assert d.grad is not a.grad and d.requires_grad and d.tag == "w"
    # one tensor pickled twice in one object stays one tensor
    lst = pickle.loads(pickle.dumps([a, a]))
    assert lst[0] is lst[1]
    # a Parameter (and a view of one) round-trips with its class and requires_grad
    w = tgrad.nn.Parameter(tgrad.tensor(_SRC[0]))
    q = pickle.loads(pickle.dumps(w))
    assert type(q) is tgrad.nn.Parameter and q.requires_grad and q.is_leaf
    np.testing.assert_array_equal(q.detach().numpy(), _SRC[0])
    q = pickle.loads(pickle.dumps(w.t()))
    assert type(q) is tgrad.Tensor and q.requires_grad and q.is_leaf
    np.testing.assert_array_equal(q.detach().numpy(), _SRC[0].T)
    # a module holding a transposed weight view (a non-leaf) pickles as in PyTorch
    lin = tgrad.nn.Linear(4, 3)
    lin.wt = lin.weight.t()
    lin2 = pickle.loads(pickle.dumps(lin))
    np.testing.assert_array_equal(lin2.wt.detach().numpy(), lin.weight.detach().numpy().T)
    assert lin2.wt.is_leaf and lin2.wt.requires_grad


def test_views_sharing_a_storage_stay_shared(tmp_path):
    # As torch.save / torch.load: one storage per buffer, each tensor a strided view of it
    # (PyTorch keeps storage_offset and strides), so a write through one is seen by the rest.
    ref = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = tgrad.tensor(ref.copy())
    p = tgrad.nn.Parameter(tgrad.arange(6.0, dtype=tgrad.bfloat16))
    objs = [x, x[1:], x.t(), x[:, ::2], {"p": p, "pv": p[2:4]}, x[0, 1]]
    tgrad.save(objs, tmp_path / "f")
    with zipfile.ZipFile(tmp_path / "f") as z:  # one array per storage, not per tensor
        assert sorted(z.namelist()) == ["__tgrad__.npy", "t0.npy", "t1.npy"]
    a, b, c, d, sd, e = tgrad.load(tmp_path / "f")
    for t, want, off, st in [(a, ref, 0, (4, 1)), (b, ref[1:], 4, (4, 1)),
                             (c, ref.T, 0, (1, 4)), (d, ref[:, ::2], 0, (4, 2)),
                             (e, ref[0, 1], 1, ())]:
        np.testing.assert_array_equal(t.numpy(), want)
        assert (t.storage_offset(), t.stride(), t.dtype) == (off, st, tgrad.float64)
    a[1, 2] = -1.0  # the element at flat index 6
    assert b[0, 2].item() == -1.0 and c[2, 1].item() == -1.0 and d[1, 1].item() == -1.0
    assert isinstance(sd["p"], tgrad.nn.Parameter) and sd["p"].requires_grad
    assert sd["pv"].dtype is tgrad.bfloat16 and sd["pv"].storage_offset() == 2
    with tgrad.no_grad():
        sd["p"][3] = 40.0
    np.testing.assert_array_equal(sd["pv"].detach().float().numpy(), [2.0, 40.0])


def test_the_same_tensor_twice_loads_as_one_object(tmp_path):
    x = tgrad.ones(2)
    tgrad.save({"a": x, "b": [x]}, tmp_path / "f")
    out = tgrad.load(tmp_path / "f")
    assert out["a"] is out["b"][0]  # as pickle's memo in torch.save


def test_load_mmap_argument(tmp_path):
    # torch.load(mmap=True) needs a path; tgrad reads the arrays either way.
    tgrad.save([tgrad.arange(3)], tmp_path / "f")
    np.testing.assert_array_equal(tgrad.load(tmp_path / "f", mmap=True)[0].numpy(), [0, 1, 2])
    with open(tmp_path / "f", "rb") as fh, pytest.raises(ValueError, match="file path"):
        tgrad.load(fh, mmap=True)


def test_state_dict_metadata_survives_the_tgrad_format(tmp_path):
    # a state_dict's _metadata holds each module's version, which load_state_dict reads
    # (PyTorch's pickle keeps it): without it BatchNorm takes the dict for an old version
    # and fills a missing num_batches_tracked silently
    sd = tgrad.nn.BatchNorm1d(2).state_dict()
    path = tmp_path / "sd.npz"
    tgrad.save(sd, path)
    back = tgrad.load(path)
    assert back._metadata == sd._metadata == {"": {"version": 2}}
    del back["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                       '"num_batches_tracked"'):
        tgrad.nn.BatchNorm1d(2).load_state_dict(back)


def test_a_stream_saved_to_twice_loads_in_order():
    # PyTorch reads the archive at the stream's position; zipfile found the last one's
    # directory, so the first load gave the second object
    import io
    buf = io.BytesIO()
    tgrad.save(tgrad.ones(2), buf)
    first_end = buf.tell()
    tgrad.save({"z": tgrad.zeros(3)}, buf)
    buf.seek(0)
    assert tgrad.load(buf).tolist() == [1.0, 1.0]
    assert buf.tell() == first_end  # (left after the first archive)
    assert tgrad.load(buf)["z"].tolist() == [0.0, 0.0, 0.0]


def test_a_namedtuple_is_refused_not_turned_into_a_tuple():
    import collections
    import io
    pair = collections.namedtuple("Pair", "a b")
    for kwargs in ({}, {"format": "torch"}):
        with pytest.raises(TypeError, match="cannot save an object of type Pair.*namedtuple"):
            tgrad.save(pair(tgrad.ones(1), 2), io.BytesIO(), **kwargs)
    buf = io.BytesIO()
    tgrad.save((tgrad.ones(1), [2, (3,)], tgrad.Size([2, 3])), buf)
    buf.seek(0)
    out = tgrad.load(buf)
    assert type(out) is tuple and out[1] == [2, (3,)] and out[2] == (2, 3)


def test_save_and_load_take_pytorchs_pickle_arguments(tmp_path):
    # torch.save(obj, f, pickle_module=pickle, pickle_protocol=...) and torch.load(f,
    # map_location, pickle_module, encoding=...) calls run unchanged (tgrad writes and
    # reads its own records, so they change nothing); another pickle module is refused
    import pickle
    state = {"w": tgrad.tensor([[1.0, 2.0]]), "step": 3}
    for fmt in ("tgrad", "torch"):
        path = tmp_path / f"ck_{fmt}.pt"
        tgrad.save(state, path, pickle_module=pickle, pickle_protocol=4, format=fmt)
        back = tgrad.load(path, "cpu", pickle, encoding="latin1")
        assert back["step"] == 3 and back["w"].tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match="pickle_module must be the standard pickle"):
        tgrad.save(state, tmp_path / "x.pt", pickle_module=object())
    with pytest.raises(NotImplementedError, match="legacy"):
        tgrad.save(state, tmp_path / "x.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['bogus'\\]"):
        tgrad.load(tmp_path / "ck_tgrad.pt", bogus=1)
