"""tgrad.save / tgrad.load: round trips of tensors, nested containers and state dicts;
the file is a plain .npz readable without pickle."""

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
