"""PyTorch's small APIs tgrad adds: tgrad.signal.windows, tgrad.accelerator /
get_device / get_device_module, layouts (tgrad.strided, Tensor.layout, the is_* flags,
layout= on the creation functions), storages (untyped_storage / storage), Tensor.set_,
as_subclass and to_dlpack. References: the windows' closed forms in NumPy float64 (and
NumPy's own windows), hand computations; the accelerator also on the cuda device emulated
by Triton's interpreter (a fresh process)."""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import pytest

import tgrad
from tgrad.signal import windows as W

sys.path.insert(0, os.path.dirname(__file__))
from interpreted import run_json  # noqa: E402

NO_CUDA = not tgrad.cuda.is_available()


# ------------------------------------------------------------------ signal.windows
def _n_of(m: int, sym: bool) -> float:
    return float(m - 1 if sym else m)


def _gcos(m: int, sym: bool, a) -> np.ndarray:
    if m <= 1:
        return np.ones(m)
    n, big_n = np.arange(m), _n_of(m, sym)
    return sum((-1) ** i * c * np.cos(2 * np.pi * i * n / big_n) for i, c in enumerate(a))


def _reference(name: str, m: int, sym: bool, **kw) -> np.ndarray:
    """The documented formula, in float64."""
    n = np.arange(m, dtype=np.float64)
    big_n = _n_of(m, sym)
    if name == "general_cosine":
        return _gcos(m, sym, kw["a"])
    if name == "general_hamming":
        return _gcos(m, sym, [kw["alpha"], 1 - kw["alpha"]])
    if name == "hann":
        return _gcos(m, sym, [0.5, 0.5])
    if name == "hamming":
        return _gcos(m, sym, [0.54, 0.46])
    if name == "blackman":
        return _gcos(m, sym, [0.42, 0.5, 0.08])
    if name == "nuttall":
        return _gcos(m, sym, [0.3635819, 0.4891775, 0.1365995, 0.0106411])
    if m <= 1 and name in ("bartlett", "kaiser"):
        return np.ones(m)
    if name == "bartlett":
        return 1 - np.abs(2 * n / big_n - 1)
    if name == "kaiser":
        b = kw["beta"]
        return np.i0(b * np.sqrt(1 - ((n - big_n / 2) / (big_n / 2)) ** 2)) / np.i0(b)
    k = m + 1 if not sym and m > 1 else m
    if name == "cosine":
        return np.sin(np.pi * (n + 0.5) / k)
    c = (m if not sym and m > 1 else m - 1) / 2
    if name == "gaussian":
        return np.exp(-0.5 * ((n - c) / kw["std"]) ** 2)
    if name == "exponential":
        c = kw.get("center") if kw.get("center") is not None else c
        return np.exp(-np.abs(n - c) / kw["tau"])
    raise AssertionError(name)


_KW = {"general_cosine": {"a": [0.4, 0.3, 0.2, 0.1]}, "general_hamming": {"alpha": 0.6},
       "kaiser": {"beta": 3.5}, "gaussian": {"std": 1.7}, "exponential": {"tau": 2.5}}


@pytest.mark.parametrize("name", W.__all__)
@pytest.mark.parametrize("sym", [True, False])
def test_windows_match_their_formulas(name, sym):
    for m in range(0, 8):
        got = getattr(W, name)(m, sym=sym, dtype=tgrad.float64, **_KW.get(name, {}))
        assert got.dtype is tgrad.float64 and got.shape == (m,)
        np.testing.assert_allclose(got.numpy(), _reference(name, m, sym, **_KW.get(name, {})),
                                   rtol=1e-12, atol=1e-14)
    # default dtype and the M = 0 / M = 1 edge cases
    assert getattr(W, name)(0, **_KW.get(name, {})).dtype is tgrad.get_default_dtype()
    np.testing.assert_allclose(getattr(W, name)(1, sym=sym, **_KW.get(name, {})).numpy(), [1.0])


def test_windows_match_numpy_and_top_level_windows():
    for m in (1, 2, 5, 8):
        for name, ref in (("hann", np.hanning), ("hamming", np.hamming),
                          ("blackman", np.blackman), ("bartlett", np.bartlett)):
            np.testing.assert_allclose(getattr(W, name)(m, dtype=tgrad.float64).numpy(), ref(m),
                                       atol=1e-12)
        np.testing.assert_allclose(W.kaiser(m, beta=5.0, dtype=tgrad.float64).numpy(),
                                   np.kaiser(m, 5.0), atol=1e-12)
        # sym=False is the top-level periodic window (symmetric window of M + 1, last dropped)
        np.testing.assert_allclose(W.hann(m, sym=False, dtype=tgrad.float64).numpy(),
                                   np.hanning(m + 1)[:m] if m > 1 else [1.0], atol=1e-12)
        np.testing.assert_allclose(W.hann(m, sym=False).numpy(), tgrad.hann_window(m).numpy())


def test_windows_exponential_center_and_arguments():
    w = W.exponential(5, center=1.5, tau=2.0, sym=False, dtype=tgrad.float64)
    np.testing.assert_allclose(w.numpy(), np.exp(-np.abs(np.arange(5) - 1.5) / 2.0))
    w = W.hann(4, requires_grad=True)
    assert w.requires_grad and w.dtype is tgrad.float32 and w.device.type == "cpu"
    assert W.kaiser(4, beta=0.0).tolist() == [1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("call, exc, text", [
    (lambda: W.hann(-1), ValueError,
     "general_cosine requires non-negative window length, got M=-1"),
    (lambda: W.bartlett(-2), ValueError,
     "bartlett requires non-negative window length, got M=-2"),
    (lambda: W.blackman(3, dtype=tgrad.int32), ValueError,
     "blackman expects float32 or float64 dtypes, got: tgrad.int32"),
    (lambda: W.hamming(3, dtype=tgrad.float16), ValueError,
     "general_cosine expects float32 or float64 dtypes, got: tgrad.float16"),
    (lambda: W.cosine(3, layout=tgrad.sparse_coo), ValueError,
     "cosine is implemented for strided tensors only, got: tgrad.sparse_coo"),
    (lambda: W.kaiser(3, beta=-1), ValueError, "beta must be non-negative, got: -1 instead."),
    (lambda: W.gaussian(3, std=0), ValueError,
     "Standard deviation must be positive, got: 0 instead."),
    (lambda: W.exponential(3, tau=0), ValueError, "Tau must be positive, got: 0 instead."),
    (lambda: W.exponential(3, center=1.0), ValueError,
     "Center must be None for symmetric windows"),
    (lambda: W.general_cosine(3, a=[]), ValueError, "Coefficients cannot be empty"),
    (lambda: W.general_cosine(3, a=5), TypeError, "Coefficients must be a list/tuple"),
    (lambda: W.nuttall(2.5), TypeError, "argument 'M' (position 1) must be int, not float"),
])
def test_windows_bad_arguments(call, exc, text):
    with pytest.raises(exc, match=__import__("re").escape(text)):
        call()


# ------------------------------------------------------------------ accelerator
@pytest.mark.skipif(not NO_CUDA, reason="the no-cuda behaviour")
def test_accelerator_without_cuda():
    acc = tgrad.accelerator
    assert acc.is_available() is False and acc.current_accelerator() is None
    assert acc.device_count() == 0
    for call in (acc.current_device_index, acc.synchronize, acc.current_stream,
                 lambda: acc.set_device_index(0), lambda: acc.device_index(0).__enter__(),
                 acc.empty_cache, acc.memory_allocated):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none"):
            call()
    with acc.device_index(None):  # None: a no-op
        pass
    assert tgrad.get_device_module() is tgrad.cpu
    # PyTorch's _get_device_index: a device (or string) needs an accelerator; a negative
    # index is a no-op; None / a float are refused
    for dev in ("cpu", "cuda:0", tgrad.device("cuda", 0)):
        with pytest.raises(RuntimeError, match="^Accelerator expected$"):
            acc.set_device_index(dev)
    assert acc.set_device_index(-1) is None
    for bad in (None, 1.5):
        with pytest.raises(ValueError, match="with a specified index or an integer"):
            acc.set_device_index(bad)


@pytest.mark.skipif(not NO_CUDA, reason="the no-cuda behaviour")
def test_set_default_device_without_cuda():
    # PyTorch: an int (the accelerator's index) or "cuda" without an index raise at once;
    # an indexed cuda device only when a tensor is made on it
    try:
        with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none"):
            tgrad.set_default_device(0)
        with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
            tgrad.set_default_device(-1)
        with pytest.raises(RuntimeError, match=r"set_default_device\('cuda'\): device 'cuda' "
                                               r"is not available"):
            tgrad.set_default_device("cuda")
        assert tgrad.get_default_device() == tgrad.device("cpu")  # unchanged
        tgrad.set_default_device("cuda:1")
        assert tgrad.get_default_device() == tgrad.device("cuda", 1)
        with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
            tgrad.zeros(1)
    finally:
        tgrad.set_default_device(None)


def test_get_device_and_device_module():
    assert tgrad.get_device(tgrad.ones(2)) == -1
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        tgrad.get_device(3)
    assert tgrad.get_device_module("cpu") is tgrad.cpu
    assert tgrad.get_device_module(tgrad.device("cuda", 0)) is tgrad.cuda
    assert tgrad.get_device_module("cuda:0") is tgrad.cuda
    assert tgrad.cpu.is_available() and tgrad.cpu.device_count() == 1


def test_device_as_a_context_manager_sets_the_default_device():
    # PyTorch's ``with torch.device(d):`` - d is the default device inside, blocks nest, the
    # previous default comes back after (also on an exception); no cuda tensor is made here
    cpu, cuda = tgrad.device("cpu"), tgrad.device("cuda", 0)
    try:
        with cpu as d:
            assert d is cpu and tgrad.get_default_device() == cpu
            assert tgrad.zeros(1).device == cpu
            with cuda:
                assert tgrad.get_default_device() == cuda
                with cpu:
                    assert tgrad.get_default_device() == cpu
                assert tgrad.get_default_device() == cuda
            assert tgrad.get_default_device() == cpu
        tgrad.set_default_device(cuda)  # an indexed device: checked by its first tensor
        with pytest.raises(KeyError):
            with cpu:
                assert tgrad.get_default_device() == cpu
                raise KeyError("x")
        assert tgrad.get_default_device() == cuda
    finally:
        tgrad.set_default_device(None)
    assert tgrad.get_default_device() == cpu


def test_cuda_set_device_negative_index_and_non_cuda_device():
    # PyTorch's torch.cuda.set_device: a negative index is a no-op and a non-cuda device a
    # ValueError, both decided before cuda is touched (so also without cuda)
    tgrad.cuda.set_device(-1)
    for bad in ("cpu", tgrad.device("cpu")):
        with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
            tgrad.cuda.set_device(bad)


def test_cpu_device_module_has_pytorchs_names():
    # torch.cpu's names for device-agnostic code (tgrad.cpu.current_stream was missing)
    cpu = tgrad.cpu
    assert set(cpu.__all__) == {"is_available", "is_initialized", "synchronize",
                                "current_device", "current_stream", "stream", "set_device",
                                "device_count", "Stream", "StreamContext", "Event"}
    assert cpu.is_initialized() is True and cpu.current_device() == "cpu"
    assert cpu.synchronize() is None and cpu.synchronize("cpu") is None
    default = cpu.current_stream()
    assert isinstance(default, cpu.Stream) and cpu.current_stream("cpu") is default
    s = cpu.Stream(priority=0)
    assert s.wait_stream(default) is None and s.record_event() is None
    assert s.wait_event(cpu.Event()) is None
    with cpu.stream(s):
        assert cpu.current_stream() is s
        with cpu.StreamContext(None):  # None: a no-op
            assert cpu.current_stream() is s
    assert cpu.current_stream() is default
    e = cpu.Event()
    assert e.query() is True and e.record() is None and e.synchronize() is None
    assert e.wait() is None
    assert tgrad.get_device_module("cpu").current_stream() is default
    with pytest.raises(RuntimeError, match="Device 'meta' does not have a corresponding module"):
        tgrad.get_device_module("meta")
    with pytest.raises(RuntimeError, match="Invalid value of device '5'"):
        tgrad.get_device_module(5)


_INTERP = r"""
import json
import tgrad
acc = tgrad.accelerator
out = {"avail": acc.is_available(),
       "acc": acc.current_accelerator() == tgrad.device("cuda"),
       "count": acc.device_count(), "idx": acc.current_device_index()}
acc.set_device_index(0)
acc.set_device_index("cuda:0")
acc.set_device_index(-1)  # a no-op
try:
    acc.set_device_index("cpu")
except ValueError as e:
    out["cpu_err"] = str(e)
tgrad.set_default_device("cuda")
out["default"] = str(tgrad.get_default_device())
tgrad.set_default_device(None)
with acc.device_index(0):
    out["inside"] = acc.current_device_index()
x = tgrad.ones(3, device="cuda")
out["get_device"] = tgrad.get_device(x)
out["module"] = tgrad.get_device_module().__name__
s = tgrad.cuda.Stream()
d = acc.current_stream()
acc.set_stream(s)
out["set"] = acc.current_stream() == s and acc.current_stream(0) == s
acc.set_stream(d)
out["back"] = acc.current_stream() == d
acc.synchronize()
acc.synchronize(0)
y = x[1:]
out["share"] = y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
out["nbytes"] = x.untyped_storage().nbytes()
out["storage_dev"] = str(x.untyped_storage().device)
z = tgrad.zeros(1, device="cuda")
z.set_(y)
out["set_"] = z.tolist()
out["set_share"] = z.data_ptr() == y.data_ptr()
print(json.dumps(out))
"""


def test_accelerator_on_the_interpreted_device():
    r = run_json(_INTERP)
    assert r["avail"] is True and r["acc"] and r["count"] >= 1 and r["idx"] == 0
    assert r["inside"] == 0 and r["get_device"] == 0 and r["module"] == "tgrad.cuda"
    assert r["set"] and r["back"]
    assert r["cpu_err"] == "cpu doesn't match the current accelerator cuda."
    assert r["default"] == "cuda:0"
    assert r["share"] and r["nbytes"] == 12 and r["storage_dev"] == "cuda:0"
    assert r["set_"] == [1.0, 1.0] and r["set_share"]


# ------------------------------------------------------------------ layouts
def test_layout_objects_and_tensor_flags():
    x = tgrad.ones(2, 3)
    assert x.layout is tgrad.strided and repr(tgrad.strided) == "tgrad.strided"
    assert isinstance(tgrad.strided, tgrad.layout) and isinstance(tgrad.sparse_coo, tgrad.layout)
    assert pickle.loads(pickle.dumps(tgrad.strided)) is tgrad.strided
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested",
                 "is_mkldnn", "is_xpu", "is_mps", "is_vulkan", "is_ipu", "is_maia", "is_mtia",
                 "is_xla"):
        assert getattr(x, flag) is False, flag


_CREATORS = [
    ("zeros", lambda **k: tgrad.zeros(2, 3, **k)), ("ones", lambda **k: tgrad.ones(2, **k)),
    ("empty", lambda **k: tgrad.empty(2, **k)), ("full", lambda **k: tgrad.full((2,), 1.5, **k)),
    ("arange", lambda **k: tgrad.arange(4, **k)), ("rand", lambda **k: tgrad.rand(2, **k)),
    ("randn", lambda **k: tgrad.randn(2, **k)),
    ("randint", lambda **k: tgrad.randint(0, 5, (2,), **k)),
    ("randperm", lambda **k: tgrad.randperm(3, **k)),
    ("linspace", lambda **k: tgrad.linspace(0, 1, 3, **k)),
    ("logspace", lambda **k: tgrad.logspace(0, 1, 3, **k)), ("eye", lambda **k: tgrad.eye(2, **k)),
    ("empty_strided", lambda **k: tgrad.empty_strided((2,), (1,), **k)),
    ("zeros_like", lambda **k: tgrad.zeros_like(tgrad.ones(2), **k)),
    ("ones_like", lambda **k: tgrad.ones_like(tgrad.ones(2), **k)),
    ("empty_like", lambda **k: tgrad.empty_like(tgrad.ones(2), **k)),
    ("full_like", lambda **k: tgrad.full_like(tgrad.ones(2), 3.0, **k)),
    ("rand_like", lambda **k: tgrad.rand_like(tgrad.ones(2), **k)),
    ("randn_like", lambda **k: tgrad.randn_like(tgrad.ones(2), **k)),
    ("randint_like", lambda **k: tgrad.randint_like(tgrad.ones(2), 3, **k)),
    ("tril_indices", lambda **k: tgrad.tril_indices(3, 3, **k)),
    ("triu_indices", lambda **k: tgrad.triu_indices(3, 3, **k)),
    ("scalar_tensor", lambda **k: tgrad.scalar_tensor(2.0, **k)),
    ("hann_window", lambda **k: tgrad.hann_window(4, **k)),
    ("kaiser_window", lambda **k: tgrad.kaiser_window(4, **k)),
    ("new_zeros", lambda **k: tgrad.ones(2).new_zeros(2, **k)),
    ("new_full", lambda **k: tgrad.ones(2).new_full((2,), 1.0, **k)),
    ("fftfreq", lambda **k: tgrad.fft.fftfreq(4, **k)),
]


@pytest.mark.parametrize("name, make", _CREATORS, ids=[n for n, _ in _CREATORS])
def test_creation_functions_take_layout(name, make):
    plain = make()
    for layout in (None, tgrad.strided):
        t = make(layout=layout)
        assert t.layout is tgrad.strided and t.shape == plain.shape and t.dtype is plain.dtype
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): layout=tgrad.sparse_csr is not "
                                           f"supported: tgrad supports only the strided layout"):
        make(layout=tgrad.sparse_csr)
    with pytest.raises(TypeError, match="argument 'layout' must be tgrad.layout, not str"):
        make(layout="strided")


def test_layout_values_unchanged():
    np.testing.assert_array_equal(tgrad.arange(1, 7, 2, layout=tgrad.strided).numpy(), [1, 3, 5])
    np.testing.assert_array_equal(tgrad.full((2,), 1.5, layout=tgrad.strided).numpy(), [1.5, 1.5])


# ------------------------------------------------------------------ storages, set_, ...
def test_untyped_storage_shared_across_views():
    x = tgrad.arange(6.0)  # float32: 24 bytes
    s = x.untyped_storage()
    assert s.data_ptr() == x.data_ptr() and s.nbytes() == s.size() == len(s) == 24
    assert s.device == tgrad.device("cpu") and s.element_size() == 1
    for view in (x[2:], x.view(2, 3).t(), x.detach(), x.data, x[::2]):
        assert view.untyped_storage().data_ptr() == s.data_ptr()
        assert view.untyped_storage().nbytes() == 24
    assert x.clone().untyped_storage().data_ptr() != s.data_ptr()
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ts = x[3:].storage()
    assert ts.dtype is tgrad.float32 and ts.element_size() == 4 and ts.size() == len(ts) == 6
    assert ts.nbytes() == 24 and ts.untyped().data_ptr() == s.data_ptr()
    # from_numpy: the storage is the array's memory
    arr = np.arange(5, dtype=np.float64)
    assert tgrad.from_numpy(arr).untyped_storage().data_ptr() == arr.ctypes.data
    with pytest.raises(NotImplementedError, match="fixed size"):
        s.resize_(0)
    with pytest.raises(NotImplementedError, match="untyped_storage"):
        tgrad.UntypedStorage(4)


def test_set_shares_source_geometry():
    src = tgrad.arange(6.0).view(2, 3).t()  # shape (3, 2), strides (1, 3)
    x = tgrad.zeros(1)
    v = x._version
    assert x.set_(src) is x
    assert x.shape == (3, 2) and x.stride() == (1, 3) and x.storage_offset() == 0
    assert x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert x.untyped_storage().data_ptr() == src.untyped_storage().data_ptr()
    assert x._version == v + 1
    x.add_(1)  # writes go to src's memory
    assert src.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    # an explicit geometry over source's storage: elements 1 .. 4 as (2, 2)
    y = tgrad.zeros(0).set_(tgrad.arange(6.0), 1, (2, 2), (2, 1))
    assert y.tolist() == [[1.0, 2.0], [3.0, 4.0]] and y.storage_offset() == 1
    assert tgrad.ones(3).set_().shape == (0,)


def test_set_errors():
    with pytest.raises(RuntimeError, match="Could not set tensor of type double to a tensor "
                                           "of type float"):
        tgrad.zeros(2).set_(tgrad.zeros(2, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        tgrad.zeros(2, requires_grad=True).set_(tgrad.zeros(2))
    with pytest.raises(NotImplementedError, match="does not differentiate through set_"):
        tgrad.zeros(2).set_(tgrad.ones(2, requires_grad=True))
    st = tgrad.ones(2).untyped_storage()
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        tgrad.zeros(0).set_(st, -1, (1,))
    with pytest.raises(RuntimeError, match="cannot grow a storage"):
        tgrad.zeros(0).set_(st, 1, (2,))
    with pytest.raises(TypeError, match="set_"):
        tgrad.zeros(0).set_(st, 1)


def test_storage_bytes_read_write_and_identity():
    """PyTorch's storage element API over the bytes (NumPy's view of the same memory is the
    reference); writes reach every view and, as in PyTorch, leave _version alone."""
    x = tgrad.arange(6.0)  # float32
    ref = x.numpy().view(np.uint8)
    s = x.untyped_storage()
    assert x[1:].untyped_storage() is s and x.t().untyped_storage() == s
    assert s.tolist() == list(s) == ref.tolist() and s[-1] == ref[-1] and s[7] == 63
    part = s[4:8]
    assert part.data_ptr() == s.data_ptr() + 4 and part.tolist() == ref[4:8].tolist()
    v = x._version
    s[4] = 300  # the low byte, as PyTorch: 300 % 256
    assert ref[4] == 44 and x._version == v
    s[4:8] = 0
    assert x[1].item() == 0.0
    s.fill_(-1)  # 0xff bytes: NaN floats
    assert np.isnan(x.numpy()).all()
    c = tgrad.arange(6.0).untyped_storage()
    assert s.copy_(c) is s and x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    k = s.clone()
    assert k.data_ptr() != s.data_ptr() and k.tolist() == s.tolist() and s.cpu() is s
    with pytest.raises(IndexError, match="index 24 out of range for storage of size 24"):
        s[24]
    with pytest.raises(TypeError, match="can't index"):
        s[1.0]
    with pytest.raises(RuntimeError, match="can only set storage content with a int types"):
        s[0] = 1.5
    with pytest.raises(RuntimeError, match="size does not match"):
        s.copy_(tgrad.zeros(2).untyped_storage())
    with pytest.raises(RuntimeError, match="only a step of 1"):
        s[::2]
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ts = x[2:].storage()
    assert ts[3] == 3.0 and ts.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert ts.untyped() is s and x._typed_storage().size() == 6
    ts[0] = 9.5
    assert x[0].item() == 9.5
    ts.fill_(2)
    assert x.tolist() == [2.0] * 6


def test_set_storage_round_trip():
    x = tgrad.arange(6.0)
    st = x.untyped_storage()
    y = tgrad.zeros(0).set_(st, 2, (2, 2), (1, 2))
    assert y.tolist() == [[2.0, 4.0], [3.0, 5.0]] and y.storage_offset() == 2
    assert y.stride() == (1, 2) and y.untyped_storage() is st
    y[0, 0] = 100.0
    assert x[2].item() == 100.0
    assert tgrad.zeros(0).set_(st).tolist() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0]
    # an UntypedStorage reinterprets its bytes as self's dtype (NumPy's view as reference)
    w = tgrad.zeros(0, dtype=tgrad.int32).set_(st, 1, (2,))
    assert w.tolist() == x.numpy().view(np.int32)[1:3].tolist()
    with pytest.warns(UserWarning):
        typed = x.storage()
    with pytest.raises(RuntimeError, match="Expected a Storage of type double or an "
                                           "UntypedStorage, but got type float"):
        tgrad.zeros(0, dtype=tgrad.float64).set_(typed)


def test_resize_as_and_as_subclass():
    x = tgrad.arange(6.0)
    x.resize_as_(tgrad.ones(2, 2))
    assert x.shape == (2, 2) and x.tolist() == [[0.0, 1.0], [2.0, 3.0]]

    class Sub(tgrad.Tensor):
        pass

    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a.as_subclass(Sub)
    assert type(b) is Sub and b is not a and not b.is_leaf and b.requires_grad
    assert b.data_ptr() == a.data_ptr()
    (b * b).sum().backward()  # d/da sum(a^2) = 2a, through the alias
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])
    z = tgrad.zeros(2)
    z.as_subclass(Sub).add_(1)
    assert z.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        a.as_subclass(int)


def test_to_dlpack_round_trip_shares_memory():
    x = tgrad.arange(4.0)
    y = tgrad.from_dlpack(tgrad.to_dlpack(x))
    assert y.data_ptr() == x.data_ptr() and y.tolist() == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(np.from_dlpack(x), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="must be Tensor"):
        tgrad.to_dlpack([1.0])


def test_a_negative_int_device_is_refused_as_pytorch():
    # PyTorch: "Device index must not be negative" wherever an int names a device
    for make in (lambda: tgrad.zeros(1).to(-1), lambda: tgrad.zeros(1, device=-1)):
        with pytest.raises(RuntimeError, match="Device index must not be negative"):
            make()
    assert tgrad.zeros(1).to(tgrad.float64).dtype is tgrad.float64  # (a dtype is no device)


def test_return_types_are_built_from_one_sequence_as_structseqs():
    # PyTorch's return types are structseqs: type(r)(sequence) rebuilds one (pytree code
    # does), with n_fields / n_sequence_fields / n_unnamed_fields
    x = tgrad.tensor([[1.0, 3.0, 2.0]])
    r = tgrad.max(x, 1)
    again = type(r)([r.values * 2, r.indices])
    assert type(again) is type(r) and again.values.tolist() == [6.0]
    assert again.indices.tolist() == [1]
    assert (r.n_fields, r.n_sequence_fields, r.n_unnamed_fields) == (2, 2, 0)
    s = tgrad.linalg.svd(tgrad.eye(2, dtype=tgrad.float64))
    assert type(s)(tuple(s)).S.tolist() == [1.0, 1.0] and s.n_fields == 3
    with pytest.raises(TypeError, match="takes a 2-sequence \\(3-sequence given\\)"):
        type(r)([1, 2, 3])


def test_asarray_requires_grad_false_detaches_and_complex_arrays_are_shared():
    # PyTorch: requires_grad=False gives a result that does not require grad (tgrad kept
    # the tensor's graph); a complex NumPy array is shared like the real ones
    t = tgrad.ones(2, requires_grad=True) * 2
    for kw in ({}, {"dtype": tgrad.float64}, {"copy": True}):
        out = tgrad.asarray(t, requires_grad=False, **kw)
        assert not out.requires_grad and out.tolist() == [2.0, 2.0]
    assert tgrad.asarray(t).requires_grad  # (unspecified: the tensor's own)
    a = np.arange(3).astype(np.complex64)
    x = tgrad.asarray(a)
    a[0] = 9
    assert x[0].item() == 9
    assert tgrad.asarray(np.ones(2, np.complex128), copy=False).dtype is tgrad.complex128


def test_a_cast_of_a_broadcast_tensor_is_row_major():
    # PyTorch's cast of an expanded tensor is contiguous (NumPy's K order put the broadcast
    # dim innermost, so .view(-1) raised)
    cases = ((tgrad.ones(1, 4).expand(3, 4), (4, 1)),
             (tgrad.ones(1, 3, 4).expand(2, 3, 4), (12, 4, 1)),
             (tgrad.ones(2, 1, 3).expand(2, 4, 3), (12, 3, 1)))
    for x, strides in cases:
        for y in (x.double(), x.int(), x.to(tgrad.float16)):
            assert y.stride() == strides and y.is_contiguous()
            np.testing.assert_array_equal(y.view(-1).numpy(), np.ones(x.numel()))
    i = tgrad.arange(4).view(1, 4).expand(3, 4)
    np.testing.assert_array_equal((i + 0.5).view(-1).numpy(),
                                  np.tile(np.arange(4) + 0.5, 3))


def test_from_dlpack_of_a_tensor_or_array_shares_writable_memory():
    # PyTorch's from_dlpack writes through to the producer's memory; tgrad's CPU tensors
    # hand NumPy a versioned capsule when asked for one, so the result is writable
    from tgrad.utils.dlpack import from_dlpack, to_dlpack
    t = tgrad.tensor([1.0, 2.0])
    shared = from_dlpack(t)
    shared[0] = 5.0
    assert t.tolist() == [5.0, 2.0]
    a = np.ones(2)
    tgrad.from_dlpack(a)[1] = 3.0
    assert a.tolist() == [1.0, 3.0]
    back = np.from_dlpack(t)
    back[1] = 7.0
    assert t.tolist() == [5.0, 7.0]
    # a bare (unversioned) capsule: shared, read-only (writing raises, nothing is lost)
    ro = from_dlpack(to_dlpack(t))
    assert ro.tolist() == [5.0, 7.0]
    with pytest.raises(RuntimeError, match="read-only memory"):
        ro[0] = 1.0


def test_bfloat16_and_complex_tensors_go_through_dlpack_on_the_cpu():
    # PyTorch exchanges bfloat16 (DLPack code 4) and complex (code 5) CPU tensors; NumPy's
    # own DLPack has no bfloat16, so tgrad writes and reads those capsules itself
    import gc
    x = tgrad.arange(6.0).view(2, 3).to(tgrad.bfloat16)
    for source in (x.t(), tgrad.to_dlpack(x.t())):  # an object with __dlpack__, a capsule
        y = tgrad.from_dlpack(source)
        assert y.dtype is tgrad.bfloat16 and y.shape == (3, 2) and y.stride() == (1, 3)
        assert y.data_ptr() == x.data_ptr()
        np.testing.assert_array_equal(y.float().numpy(), np.arange(6.0).reshape(2, 3).T)
    y[2, 1] = 9.5  # writes reach the producer (PyTorch's from_dlpack shares memory)
    assert x[1, 2].item() == 9.5
    del x
    gc.collect()  # the import keeps the producer's memory alive
    assert y.float().numpy().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 9.5]]
    empty = tgrad.from_dlpack(tgrad.zeros(0, 3, dtype=tgrad.bfloat16))
    assert empty.shape == (0, 3) and empty.dtype is tgrad.bfloat16
    z = tgrad.tensor([1 + 2j, -3j])
    w = tgrad.from_dlpack(tgrad.to_dlpack(z))
    assert w.dtype is tgrad.complex64 and w.tolist() == [1 + 2j, -3j]
    assert w.data_ptr() == z.data_ptr()
