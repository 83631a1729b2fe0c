"""tgrad.load of PyTorch checkpoints (zip and legacy formats) and tgrad.save(format="torch").

The fixtures under tests/data/ were written by torch.save (tests/data/make_torch_fixtures.py,
run by hand); their values are np.arange formulas, recomputed here in NumPy float64. No
test imports torch."""

import io
import os
import pickle
import pickletools
import struct
import sys
import zipfile
from collections import OrderedDict

import ml_dtypes
import numpy as np
import pytest

import tgrad
from tgrad import nn

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
STATE = os.path.join(DATA, "torch_state_dict.pt")


def ramp(shape, scale=0.125, shift=-1.0):
    """The fixture generator's formula: np.arange(n) * scale + shift, reshaped."""
    n = int(np.prod(shape))
    return np.arange(n, dtype=np.float64).reshape(shape) * scale + shift


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


MODEL = {"0.weight": ramp((4, 3)), "0.bias": ramp((4,), 0.25, 0.5),
         "1.weight": ramp((4,), 0.5, 1.0), "1.bias": ramp((4,), -0.25, 0.0),
         "1.running_mean": ramp((4,), 0.25, -0.5), "1.running_var": ramp((4,), 0.5, 1.0),
         "2.weight": ramp((2, 4), 0.0625, 0.25), "2.bias": ramp((2,), 1.0, -0.5)}


def test_state_dict_values_dtypes_and_metadata():
    d = tgrad.load(STATE)
    sd = d["model"]
    assert isinstance(sd, OrderedDict) and list(sd) == list(MODEL)[:6] + [
        "1.num_batches_tracked"] + list(MODEL)[6:]
    for k, want in MODEL.items():
        assert sd[k].dtype is tgrad.float32 and sd[k].shape == want.shape, k
        np.testing.assert_array_equal(f64(sd[k]), want.astype(np.float32))
        assert type(sd[k]) is tgrad.Tensor and not sd[k].requires_grad
    assert sd["1.num_batches_tracked"].dtype is tgrad.int64
    assert sd["1.num_batches_tracked"].shape == () and sd["1.num_batches_tracked"].item() == 7
    # torch pickles the state_dict's _metadata (BatchNorm is version 2)
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 2},
                            "2": {"version": 1}}
    e = d["extra"]
    cases = {"f64": (tgrad.float64, ramp((2, 3), 0.1, 0.0)),
             "i64": (tgrad.int64, np.arange(6.0).reshape(2, 3) * 3 - 5),
             "i32": (tgrad.int32, np.arange(4.0) - 2),
             "b": (tgrad.bool, (np.arange(5) % 2 == 0).astype(np.float64)),
             "f16": (tgrad.float16, ramp((3,), 0.5, -0.5)),
             "bf16": (tgrad.bfloat16, ramp((2, 2), 0.25, 1.0)),
             "scalar": (tgrad.float32, np.array(2.5)),
             "base": (tgrad.float32, np.arange(12.0).reshape(3, 4))}
    for k, (dt, want) in cases.items():
        assert e[k].dtype is dt and e[k].shape == want.shape, k
        np.testing.assert_array_equal(f64(e[k]), want)
    assert e["f64"].device == tgrad.device("cpu")


def test_views_share_one_storage_as_after_torch_load():
    e = tgrad.load(STATE)["extra"]
    base = np.arange(12.0).reshape(3, 4)
    t, row1, col2 = e["t"], e["row1"], e["col2"]
    assert t.shape == (4, 3) and t.stride() == (1, 4) and t.storage_offset() == 0
    assert row1.stride() == (1,) and row1.storage_offset() == 4
    assert col2.stride() == (4,) and col2.storage_offset() == 2
    np.testing.assert_array_equal(f64(t), base.T)
    np.testing.assert_array_equal(f64(row1), base[1])
    np.testing.assert_array_equal(f64(col2), base[:, 2])
    assert not t.is_contiguous()
    with tgrad.no_grad():
        row1.add_(100.0)  # a write through one tensor is seen by the others
    base[1] += 100
    np.testing.assert_array_equal(f64(e["base"]), base)
    np.testing.assert_array_equal(f64(t), base.T)
    np.testing.assert_array_equal(f64(col2), base[:, 2])
    # the other storages are separate
    np.testing.assert_array_equal(f64(e["f64"]), ramp((2, 3), 0.1, 0.0))


def test_parameter_nested_containers_dtype_and_size():
    e = tgrad.load(STATE)["extra"]
    p = e["param"]
    assert isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
    np.testing.assert_array_equal(f64(p), [3.0, 4.0])
    nested = e["nested"]
    assert nested["list"] == [1, 2.5, "s", None, True, (3, "t")]
    assert isinstance(nested["list"][5], tuple)
    np.testing.assert_array_equal(f64(nested["tensors"][0]), [0.0, 2.0, 4.0])
    assert e["dtype"] is tgrad.float16
    assert e["shape"] == (2, 3) and type(e["shape"]) is tgrad.Size  # (a torch.Size)


def test_load_state_dict_into_tgrad_module_and_forward():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    result = model.load_state_dict(tgrad.load(STATE)["model"])
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert isinstance(model[0].weight, nn.Parameter) and model[0].weight.requires_grad
    assert model[1].num_batches_tracked.item() == 7
    model.eval()
    x = ramp((5, 3), 0.3, -2.0)
    h = x @ MODEL["0.weight"].T + MODEL["0.bias"]
    h = (h - MODEL["1.running_mean"]) / np.sqrt(MODEL["1.running_var"] + 1e-5)
    h = h * MODEL["1.weight"] + MODEL["1.bias"]
    want = h @ MODEL["2.weight"].T + MODEL["2.bias"]
    out = model(tgrad.tensor(x, dtype=tgrad.float32))
    np.testing.assert_allclose(f64(out), want, rtol=1e-5, atol=1e-5)


def test_map_location_forms():
    for ml in ("cpu", tgrad.device("cpu"), {"cpu": "cpu"}, None):
        d = tgrad.load(STATE, map_location=ml)
        assert d["extra"]["f64"].device == tgrad.device("cpu")
    with pytest.raises(TypeError, match="map_location"):
        tgrad.load(STATE, map_location=lambda storage, loc: storage)


def test_legacy_format():
    t = tgrad.load(os.path.join(DATA, "torch_legacy.pt"))
    assert t.dtype is tgrad.float32
    np.testing.assert_array_equal(f64(t), np.arange(4.0))


def test_dtype_tgrad_lacks_is_named():
    with pytest.raises(RuntimeError, match="dtype torch.uint16, which tgrad does not have"):
        tgrad.load(os.path.join(DATA, "torch_uint16.pt"))


def test_complex_tensors_written_by_torch_load():
    def cx(shape):
        r = ramp(shape)
        return r - 0.5j * r
    d = tgrad.load(os.path.join(DATA, "torch_complex.pt"))
    assert d["c64"].dtype is tgrad.complex64 and d["c128"].dtype is tgrad.complex128
    np.testing.assert_array_equal(d["c64"].numpy(), cx((2, 3)).astype(np.complex64))
    np.testing.assert_array_equal(d["c128"].numpy(), cx((3,)))
    assert d["c128_t"].stride() == (1, 2)  # torch's transposed view, rebuilt as a view
    np.testing.assert_array_equal(d["c128_t"].numpy(), cx((2, 2)).T)
    f = io.BytesIO()  # and format="torch" writes them back (ComplexDoubleStorage etc.)
    tgrad.save(d, f, format="torch")
    f.seek(0)
    back = tgrad.load(f)
    for k in d:
        assert back[k].dtype is d[k].dtype and back[k].stride() == d[k].stride()
        np.testing.assert_array_equal(back[k].numpy(), d[k].numpy())


def test_lazily_conjugated_and_negated_views_load_with_their_values():
    # PyTorch saves x.conj() / x.mH as x's storage plus a conj bit, x.conj().imag as the
    # imaginary parts plus a neg bit (_rebuild_tensor_v2's metadata): tgrad, which has no
    # lazy bits, loads the values those views stand for
    r = ramp((2,))
    x = r - 0.5j * r
    d = tgrad.load(os.path.join(DATA, "torch_conj.pt"))
    np.testing.assert_array_equal(d["x"].numpy(), x)
    np.testing.assert_array_equal(d["conj"].numpy(), np.conj(x))
    np.testing.assert_array_equal(d["mH"].numpy(), np.conj(x).reshape(2, 1))
    np.testing.assert_array_equal(d["conj_imag"].numpy(), np.conj(x).imag)
    assert d["conj_imag"].dtype is tgrad.float64


def test_uint8_tensor_loads():
    t = tgrad.load(os.path.join(DATA, "torch_uint8.pt"))
    assert t.dtype is tgrad.uint8 and t.tolist() == [0, 1, 2, 3]


F8_NAMES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
            "float8_e8m0fnu")


def test_float8_tensors_written_by_torch_load_with_their_bits():
    """torch.save writes float8 with _rebuild_tensor_v3 over an UntypedStorage (there is no
    Float8_e4m3fnStorage); every bit pattern comes back as itself, views included."""
    d = tgrad.load(os.path.join(DATA, "torch_float8.pt"))
    for n in F8_NAMES:
        assert d[n].dtype is getattr(tgrad, n) and d[n].shape == (256,), n
        assert d[n].view(tgrad.uint8).tolist() == list(range(256)), n
    t = d["e5m2_t"]
    assert t.dtype is tgrad.float8_e5m2 and t.stride() == (1, 16)
    assert t.contiguous().view(tgrad.uint8).tolist() == \
        np.arange(256).reshape(16, 16).T.tolist()
    # torch's own casts (the generator's FLOAT8_CAST), bits by hand: e4m3fn saturates to
    # 448 (0x7e) from past 448 and for inf, NaN 0x7f; e5m2 gives inf (0x7c) from 61440
    assert d["cast_e4m3fn"].view(tgrad.uint8).tolist() == [
        0, 128, 56, 58, 126, 126, 126, 126, 126, 126, 126, 254, 127, 196, 0]
    assert d["cast_e5m2"].view(tgrad.uint8).tolist() == [
        0, 128, 60, 61, 95, 95, 96, 123, 124, 124, 124, 252, 127, 194, 20]
    x = tgrad.tensor([0.0, -0.0, 1.0625, 1.1875, 448.0, 464.0, 500.0, 57344.0, 61440.0, 1e6,
                      np.inf, -np.inf, np.nan, -3.0, 2.0 ** -10])
    for k, dt in (("cast_e4m3fn", tgrad.float8_e4m3fn), ("cast_e5m2", tgrad.float8_e5m2)):
        assert x.to(dt).view(tgrad.uint8).tolist() == d[k].view(tgrad.uint8).tolist(), k


def test_save_torch_format_float8_as_torch_writes_it():
    bits = tgrad.tensor(np.arange(256, dtype=np.uint8))
    obj = {n: bits.view(getattr(tgrad, n)).clone() for n in F8_NAMES}  # (own storages)
    obj["t"] = obj["float8_e5m2"].reshape(16, 16).t()  # a view: shares e5m2's storage
    f = io.BytesIO()
    tgrad.save(obj, f, format="torch")
    _records, globals_, _pids, storages = _read_torch_zip(f.getvalue())
    assert {"torch._utils _rebuild_tensor_v3", "torch.storage UntypedStorage"} <= globals_
    assert {f"torch {n}" for n in F8_NAMES} <= globals_
    assert list(storages.values()) == [bytes(range(256))] * 5
    f.seek(0)
    back = tgrad.load(f)
    for k, v in obj.items():
        assert back[k].dtype is v.dtype and back[k].stride() == v.stride(), k
        assert back[k].contiguous().view(tgrad.uint8).tolist() == \
            v.contiguous().view(tgrad.uint8).tolist(), k


# ---------------------------------------------------------------- hostile / broken files
class _Evil:
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def __reduce__(self):
        return self.fn, (self.arg,)


def _torch_zip(pkl: bytes, storages=None, byteorder=b"little") -> io.BytesIO:
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        z.writestr("evil/data.pkl", pkl)
        z.writestr("evil/byteorder", byteorder)
        for k, v in (storages or {}).items():
            z.writestr(f"evil/data/{k}", v)
        z.writestr("evil/version", b"3\n")
    f.seek(0)
    return f


@pytest.mark.parametrize("fn,name", [(os.system, "GLOBAL posix.system"),
                                     (eval, "GLOBAL eval"),
                                     (print, "GLOBAL print")])
def test_malicious_pickle_is_refused(tmp_path, fn, name):
    if fn is os.system and os.name != "posix":
        name = "GLOBAL"
    marker = tmp_path / "pwned"
    arg = f"touch {marker}" if fn is os.system else "1"
    pkl = pickle.dumps({"x": _Evil(fn, arg)}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match=f"Unsupported global: {name}"):
        tgrad.load(_torch_zip(pkl))
    assert not marker.exists()
    # the legacy stream goes through the same unpickler
    legacy = b"".join(pickle.dumps(v, protocol=2) for v in
                      (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        tgrad.load(io.BytesIO(legacy + pkl + pickle.dumps([], protocol=2)))
    assert not marker.exists()


def test_build_on_anything_but_an_ordered_dict_is_refused():
    # GLOBAL collections.Counter, EMPTY_TUPLE, REDUCE, then BUILD with {"x": 1}
    pkl = b"\x80\x02ccollections\nCounter\n)R}X\x01\x00\x00\x00xK\x01sb."
    with pytest.raises(pickle.UnpicklingError, match="can only BUILD an OrderedDict"):
        tgrad.load(_torch_zip(pkl))


def test_rebuilt_objects_state_cannot_touch_tgrad_objects():
    # _rebuild_from_type_v2(torch.device, torch.Tensor, ("cpu",), {"type": "cuda"}): the
    # rebuild must give a tensor, and its state may not overwrite attributes (here the
    # interned cpu device's type, which would break every tensor creation afterwards)
    pkl = (b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n(ctorch\ndevice\nctorch\nTensor"
           b"\nX\x03\x00\x00\x00cpu\x85}X\x04\x00\x00\x00typeX\x04\x00\x00\x00cudastR.")
    with pytest.raises(pickle.UnpicklingError, match="must rebuild a tensor"):
        tgrad.load(_torch_zip(pkl))
    assert str(tgrad.device("cpu")) == "cpu" and tgrad.zeros(2).device.type == "cpu"
    with pytest.raises(AttributeError, match="read-only"):
        tgrad.device("cpu").type = "cuda"
    # _rebuild_parameter(tensor, True, OrderedDict(), state): state may add plain attributes
    # (private ones too) but not replace the tensor's own (its dtype, data, methods)
    data = np.arange(6, dtype=np.float32).tobytes()
    tensor = _tensor_pickle((2, 3), (3, 1), 0, 6)[2:-1]  # the REDUCE expression, no PROTO/STOP
    for key in (b"dtype", b"_data", b"numpy", b"__class__"):
        pkl = (b"\x80\x02ctorch._utils\n_rebuild_parameter_with_state\n(" + tensor
               + b"\x88ccollections\nOrderedDict\n)R}X" + len(key).to_bytes(4, "little") + key
               + b"K\x01stR.")
        with pytest.raises(pickle.UnpicklingError, match="cannot set the attribute"):
            tgrad.load(_torch_zip(pkl, {"0": data}))
    pkl = (b"\x80\x02ctorch._utils\n_rebuild_parameter_with_state\n(" + tensor
           + b"\x88ccollections\nOrderedDict\n)R}(X\x04\x00\x00\x00noteK\x07X\x05\x00\x00\x00_"
           + b"privK\x03utR.")
    p = tgrad.load(_torch_zip(pkl, {"0": data}))
    assert isinstance(p, nn.Parameter) and p.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert p.note == 7 and p._priv == 3


def _tensor_pickle(size, stride, offset, numel, storage="FloatStorage") -> bytes:
    """protocol-2 opcodes of _rebuild_tensor_v2 over storage '0' (written by hand)."""
    def t(xs):
        return b"(" + b"".join(b"K" + bytes([x]) for x in xs) + b"t" if xs else b")"
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
            + f"ctorch\n{storage}\n".encode() + b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpu"
            + b"K" + bytes([numel]) + b"tQK" + bytes([offset]) + t(size) + t(stride)
            + b"\x89ccollections\nOrderedDict\n)RtR.")


def test_hand_written_pickle_and_out_of_bounds_views():
    data = np.arange(6, dtype=np.float32).tobytes()
    t = tgrad.load(_torch_zip(_tensor_pickle((2, 2), (1, 3), 1, 6), {"0": data}))
    np.testing.assert_array_equal(f64(t), [[1.0, 4.0], [2.0, 5.0]])  # storage[1 + i + 3j]
    with pytest.raises(RuntimeError, match="reaches past its storage of 6 elements"):
        tgrad.load(_torch_zip(_tensor_pickle((2, 3), (3, 1), 1, 6), {"0": data}))
    with pytest.raises(RuntimeError, match="truncated or corrupt"):
        tgrad.load(_torch_zip(_tensor_pickle((2, 3), (3, 1), 0, 6), {"0": data[:-4]}))


def test_big_endian_storages_are_swapped():
    vals = {"f32": (np.float32, ramp((2, 3))), "f64": (np.float64, ramp((3,), 0.1, 2.0)),
            "i64": (np.int64, np.array([-3.0, 5.0, 2.0**40])),
            "i32": (np.int32, np.array([-7.0, 9.0])),
            "f16": (np.float16, ramp((2,), 0.5, -1.0)),
            "bf16": (ml_dtypes.bfloat16, ramp((2,), 0.25, 3.0)),
            "b": (np.bool_, np.array([1.0, 0.0, 1.0]))}
    storages, pkl = {}, bytearray(b"\x80\x02}(")
    for i, (k, (npdt, v)) in enumerate(vals.items()):
        arr = v.astype(npdt)
        raw = arr.view(np.uint16).byteswap() if npdt is ml_dtypes.bfloat16 else arr.byteswap()
        storages[str(i)] = raw.tobytes()
        storage = {np.float32: "FloatStorage", np.float64: "DoubleStorage",
                   np.int64: "LongStorage", np.int32: "IntStorage", np.float16: "HalfStorage",
                   ml_dtypes.bfloat16: "BFloat16Storage", np.bool_: "BoolStorage"}[npdt]
        one = _tensor_pickle((arr.size,), (1,), 0, arr.size, storage)
        one = one.replace(b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x00" + str(i).encode())
        pkl += b"X" + struct.pack("<I", len(k)) + k.encode() + one[2:-1]
    pkl += b"u."
    out = tgrad.load(_torch_zip(bytes(pkl), storages, byteorder=b"big"))
    for k, (_npdt, v) in vals.items():
        np.testing.assert_array_equal(f64(out[k]).reshape(-1), v.reshape(-1))


# ---------------------------------------------------------------- writing format="torch"
# What torch.load(weights_only=True) allows (torch/_weights_only_unpickler.py), as far as
# this writer uses it.
_TORCH_ALLOWED = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2",
                  "torch._utils _rebuild_parameter", "torch FloatStorage",
                  "torch DoubleStorage", "torch HalfStorage", "torch BFloat16Storage",
                  "torch LongStorage", "torch IntStorage", "torch BoolStorage",
                  "torch ShortStorage", "torch CharStorage", "torch ByteStorage",
                  "torch float16", "torch._utils _rebuild_tensor_v3",
                  "torch.storage UntypedStorage", "torch float8_e4m3fn", "torch float8_e5m2",
                  "torch float8_e4m3fnuz", "torch float8_e5m2fnuz", "torch float8_e8m0fnu"}


def _read_torch_zip(raw: bytes):
    """An independent reader of what format="torch" wrote: the records, the globals of the
    pickle (pickletools, nothing executed) and each storage's bytes."""
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        names = z.namelist()
        prefix = names[0].split("/")[0]
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            start = info.header_offset + 30 + len(info.filename) + len(info.extra)
            assert start % 64 == 0, info.filename  # torch's storage alignment
        globals_, pids = set(), []
        stack = []
        for op, arg, _pos in pickletools.genops(z.read(f"{prefix}/data.pkl")):
            if op.name == "GLOBAL":
                globals_.add(arg)
            if op.name == "BINUNICODE":
                stack.append(arg)
            if op.name == "BINPERSID":
                pids.append(stack[-2:])  # (key, location)
        storages = {n.split("/")[-1]: z.read(n) for n in names if "/data/" in n}
        records = {n.split("/", 1)[1]: z.read(n) for n in names if "/data/" not in n}
    return records, globals_, pids, storages


def test_save_torch_format_is_readable_and_round_trips():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    base = tgrad.tensor(ramp((3, 4)), dtype=tgrad.float32)
    obj = {"sd": model.state_dict(), "base": base, "t": base.t(), "row": base[1],
           "bf": tgrad.tensor(ramp((3,), 0.5, 1.0)).to(tgrad.bfloat16),
           "h": tgrad.tensor(ramp((2,))).half(), "b": tgrad.tensor([True, False]),
           "i": tgrad.arange(3) - 1, "i32": tgrad.arange(2, dtype=tgrad.int32),
           "d": tgrad.tensor(ramp((2, 2), 0.1, 0.0), dtype=tgrad.float64),
           "p": nn.Parameter(tgrad.ones(2)), "s": tgrad.tensor(2.5),
           "nest": [1, 2.5, "x", None, (2**40, -2**70), {"k": float("inf")}],
           "dt": tgrad.float16, "empty": tgrad.zeros(0, 3),
           "u8": tgrad.tensor([0, 255, 7], dtype=tgrad.uint8),
           "i8": tgrad.tensor([-128, 5], dtype=tgrad.int8),
           "i16": tgrad.tensor([-300, 32767], dtype=tgrad.int16)}
    f = io.BytesIO()
    tgrad.save(obj, f, format="torch")
    records, globals_, pids, storages = _read_torch_zip(f.getvalue())
    assert records["byteorder"] == sys.byteorder.encode() and records["version"] == b"3\n"
    assert globals_ <= _TORCH_ALLOWED, globals_ - _TORCH_ALLOWED
    # base, t and row are views of one storage: 3 pids, one key, 12 float32 in it
    keys = [k for k, _loc in pids]
    assert len(set(keys)) == len(storages) < len(keys)
    by_bytes = {v: k for k, v in storages.items()}
    key = by_bytes[ramp((3, 4)).astype(np.float32).tobytes()]
    assert keys.count(key) == 3 and all(loc == "cpu" for _k, loc in pids)
    bf_raw = ramp((3,), 0.5, 1.0).astype(ml_dtypes.bfloat16).tobytes()
    assert bf_raw in by_bytes
    # tgrad.load reads it back: values, dtypes, sharing, Parameter, _metadata
    f.seek(0)
    back = tgrad.load(f)
    for k in ("base", "t", "row", "bf", "h", "b", "i", "i32", "d", "p", "s", "empty", "u8",
              "i8", "i16"):
        assert back[k].dtype is obj[k].dtype and back[k].shape == obj[k].shape, k
        np.testing.assert_array_equal(f64(back[k]), f64(obj[k]))
    assert back["t"].stride() == (1, 4) and back["row"].storage_offset() == 4
    with tgrad.no_grad():
        back["row"].zero_()
    assert f64(back["base"])[1].tolist() == [0.0] * 4
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["nest"] == obj["nest"] and back["dt"] is tgrad.float16
    assert back["sd"]._metadata == obj["sd"]._metadata
    restored = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    restored.load_state_dict(back["sd"])
    np.testing.assert_array_equal(f64(restored[0].weight), f64(model[0].weight))



def _saved_tensor_layouts(raw: bytes) -> dict:
    """{key: (offset, size, stride)} of each _rebuild_tensor_v2 call in the pickle that
    format="torch" wrote, read by a stand-in unpickler (no torch)."""
    class Reader(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return lambda _st, offset, size, stride, *_rest: (offset, size, stride)
            if module == "collections" and name == "OrderedDict":
                return OrderedDict
            return name  # storage classes: only named
        def persistent_load(self, pid):
            return pid

    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        return Reader(io.BytesIO(z.read(pkl))).load()


def test_save_torch_format_strides_of_empty_tensors():
    # PyTorch's strides: a slice keeps its parent's, a tensor made empty is contiguous with
    # a size-0 dim counted as 1; a tensor saved as its own contiguous copy likewise
    fortran = tgrad.from_numpy(np.zeros((3, 4), dtype=np.float32, order="F"))
    obj = {"cols": tgrad.zeros(4, 3)[:, :0], "rows": tgrad.zeros(5, 6)[1:3:2, 4:2],
           "made": tgrad.zeros(4, 0), "t": tgrad.zeros(4, 3).t()[:0],
           "own": fortran[:, :0], "own_full": fortran}
    f = io.BytesIO()
    tgrad.save(obj, f, format="torch")
    got = _saved_tensor_layouts(f.getvalue())
    assert got["cols"][1:] == ((4, 0), (3, 1)) and got["rows"][1:] == ((1, 0), (12, 1))
    assert got["made"][1:] == ((4, 0), (1, 1)) and got["t"][1:] == ((0, 4), (1, 3))
    assert got["own"] == (0, (3, 0), (1, 1)) and got["own_full"] == (0, (3, 4), (4, 1))
    f.seek(0)
    back = tgrad.load(f)
    for k in ("cols", "rows", "made", "t"):
        assert back[k].shape == obj[k].shape and back[k].stride() == obj[k].stride(), k


def test_save_torch_format_path_and_errors(tmp_path):
    path = tmp_path / "m.pt"
    tgrad.save({"w": tgrad.ones(2)}, path, format="torch")
    np.testing.assert_array_equal(f64(tgrad.load(path)["w"]), [1.0, 1.0])
    with pytest.raises(ValueError, match="format must be 'tgrad' or 'torch'"):
        tgrad.save({}, path, format="pt")
    with pytest.raises(TypeError, match=r"object of type set at obj\['s'\]"):
        tgrad.save({"s": {1}}, path, format="torch")
    # the default format is unchanged: a pickle-free .npz
    tgrad.save({"w": tgrad.ones(2)}, path)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["__tgrad__.npy", "t0.npy"]


def _relocated(location: bytes) -> io.BytesIO:
    """A format="torch" file of tgrad.ones(2) whose storage says it was saved on
    ``location`` (the BINUNICODE length prefix rewritten with it)."""
    f = io.BytesIO()
    tgrad.save(tgrad.ones(2), f, format="torch")
    with zipfile.ZipFile(f) as z:
        recs = {n: z.read(n) for n in z.namelist()}
    pkl = recs["archive/data.pkl"]
    recs["archive/data.pkl"] = pkl.replace(b"X\x03\x00\x00\x00cpu",
                                           b"X" + struct.pack("<I", len(location)) + location)
    g = io.BytesIO()
    with zipfile.ZipFile(g, "w") as z:
        for n, v in recs.items():
            z.writestr(n, v)
    g.seek(0)
    return g


def test_saved_location_and_map_location_dict():
    for ml in ("cpu", {"cuda:0": "cpu"}):
        t = tgrad.load(_relocated(b"cuda:0"), map_location=ml)
        assert t.device == tgrad.device("cpu") and f64(t).tolist() == [1.0, 1.0]
    if tgrad.cuda.is_available():
        assert tgrad.load(_relocated(b"cuda:0")).device == tgrad.device("cuda:0")
    else:
        with pytest.raises(RuntimeError, match="map_location='cpu'"):
            tgrad.load(_relocated(b"cuda:0"))
    with pytest.raises(RuntimeError, match="saved on 'mps'"):
        tgrad.load(_relocated(b"mps"))


def test_map_location_cuda_keeps_views_interpreted():
    from interpreted import run_json
    out = run_json(f"""
import json, numpy as np, tgrad
e = tgrad.load({STATE!r}, map_location="cuda")["extra"]
with tgrad.no_grad():
    e["row1"].add_(100.0)
print(json.dumps({{"dev": str(e["t"].device), "stride": list(e["t"].stride()),
                  "base": e["base"].cpu().numpy().tolist(), "t": e["t"].cpu().numpy().tolist(),
                  "bf16": e["bf16"].cpu().float().numpy().tolist(),
                  "b": e["b"].cpu().numpy().tolist()}}))
""")
    base = np.arange(12.0).reshape(3, 4)
    base[1] += 100
    assert out["dev"] == "cuda:0" and out["stride"] == [1, 4]
    assert out["base"] == base.tolist() and out["t"] == base.T.tolist()
    assert out["bf16"] == ramp((2, 2), 0.25, 1.0).tolist()
    assert out["b"] == [True, False, True, False, True]


def test_size_round_trips_as_torch_size():
    # tgrad.Size is written as PyTorch pickles a torch.Size (the global torch.Size called on
    # the tuple), and read back as a tgrad.Size; a plain tuple stays a tuple
    obj = {"s": tgrad.zeros(2, 3).size(), "e": tgrad.Size([]), "t": (1, 2)}
    for fmt in ("torch", "tgrad"):
        f = io.BytesIO()
        tgrad.save(obj, f, format=fmt)
        f.seek(0)
        back = tgrad.load(f)
        assert type(back["s"]) is tgrad.Size and back["s"] == (2, 3)
        assert type(back["e"]) is tgrad.Size and back["e"] == ()
        assert type(back["t"]) is tuple and back["t"] == (1, 2)
        if fmt == "torch":
            with zipfile.ZipFile(f) as z:
                pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
                ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read(pkl))]
            assert ("GLOBAL", "torch Size") in ops and ("REDUCE", None) in ops
