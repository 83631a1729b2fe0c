"""PyTorch checkpoint interop for ``tgrad.load`` / ``tgrad.save(..., format="torch")``,
without importing torch.

Reading. PyTorch's zip format (torch >= 1.6): a zip whose entries sit under one folder
``<name>/``: ``data.pkl`` (a protocol-2 pickle of the object), ``data/<key>`` (the raw
bytes of each storage), ``byteorder`` ("little" or "big"; absent: little), ``version`` and
other records. Tensors in ``data.pkl`` are ``torch._utils._rebuild_tensor_v2(storage,
storage_offset, size, stride, requires_grad, backward_hooks[, metadata])`` (``_v3`` adds the
dtype, for storages saved untyped) whose storage is a persistent id
``("storage", <torch.XStorage | torch.storage.UntypedStorage>, key, location, numel)``.
The legacy format (torch < 1.6) is a stream of pickles: magic number, protocol version,
sys_info, the object (persistent ids have a sixth field, view_metadata), the sorted storage
keys, then per key an int64 element count and the little-endian bytes.

The pickle is read as ``torch.load(weights_only=True)`` reads it: by an unpickler whose
globals come from an allow-list (the tensor / Parameter rebuild functions, the storage
classes, torch dtypes, torch.device, torch.Size, collections.OrderedDict / Counter, set,
frozenset, bytearray, complex, _codecs.encode for bytes), and whose BUILD opcode only sets
an OrderedDict's attributes (a state_dict's ``_metadata``). Any other global raises
``pickle.UnpicklingError`` naming it, so loading never runs code from the file.

Each storage is read once and becomes one tgrad storage (a root array) on the target device;
every tensor over it is a strided view of that root with the saved shape, strides and
offset, so tensors that shared a storage in PyTorch share it in tgrad (writes through one
are seen by the others), as after ``torch.load``.

Writing (``write``): the zip format with a hand-written protocol-2 pickle that uses only the
globals above (``_rebuild_tensor_v2``, ``_rebuild_parameter``, ``torch.<X>Storage``,
``collections.OrderedDict``, ``torch.<dtype>``), so ``torch.load(weights_only=True)`` reads
it. Tensors over one C-contiguous CPU root are written as views of one storage (the whole
root, as torch.save writes a view's whole storage); any other tensor is written as a
contiguous copy in a storage of its own.
"""

from __future__ import annotations

import _compat_pickle
import io
import math
import pickle
import pickletools
import struct
import zipfile
from collections import Counter, OrderedDict
from typing import Any

import numpy as np

from tgrad import dtypes
from tgrad.cuda.array import contiguous_strides
from tgrad.tensor import Size, Tensor

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

# torch dtype name -> tgrad dtype (the dtypes tgrad has).
_TGRAD_OF = {"float32": dtypes.float32, "float64": dtypes.float64, "float16": dtypes.float16,
             "bfloat16": dtypes.bfloat16, "int64": dtypes.int64, "int32": dtypes.int32,
             "int16": dtypes.int16, "int8": dtypes.int8, "uint8": dtypes.uint8,
             "bool": dtypes.bool_, "complex64": dtypes.complex64,
             "complex128": dtypes.complex128, **{d.name: d for d in dtypes.FLOAT8_DTYPES}}
# (float8 has no typed storage class: torch.save writes _rebuild_tensor_v3 over an
# UntypedStorage, and so does tgrad's writer; the bytes are the float8 bits)
_TORCH_NAME = {v: k for k, v in _TGRAD_OF.items()}
# torch's legacy storage classes -> the torch dtype name of their elements.
_STORAGE_DTYPE = {"FloatStorage": "float32", "DoubleStorage": "float64",
                  "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
                  "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
                  "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
                  "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
                  "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
                  "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_STORAGE_CLASS = {v: k for k, v in _STORAGE_DTYPE.items()}
_ITEMSIZE = {**{n: d.itemsize for n, d in _TGRAD_OF.items()}, "qint32": 4}  # others: 1 byte
# torch dtypes a file may name (torch.<name> globals) that tgrad does not have.
_OTHER_TORCH_DTYPES = frozenset(
    {"uint16", "uint32", "uint64", "complex32", "qint8", "quint8", "qint32", "quint4x2",
     "quint2x4", "float4_e2m1fn_x2",
     "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"}
    | {f"uint{i}" for i in range(1, 8)} | {f"int{i}" for i in range(1, 8)})
# torch names torch.load(weights_only=True) allows but tgrad cannot rebuild.
_TORCH_ONLY = frozenset(
    {"torch._utils._rebuild_qtensor", "torch._utils._rebuild_sparse_tensor",
     "torch._utils._rebuild_meta_tensor_no_storage", "torch._utils._rebuild_nested_tensor",
     "torch._utils._rebuild_wrapper_subclass", "torch._utils._rebuild_tensor",
     "torch._utils._rebuild_device_tensor_from_numpy",
     "torch._utils._rebuild_device_tensor_from_cpu_tensor",
     "torch.serialization._get_layout"})


class _StorageType:
    """What the file's ``torch.XStorage`` / ``torch.storage.UntypedStorage`` globals load
    as: the torch dtype name of the elements (None: untyped, bytes)."""

    def __init__(self, dtype_name: str | None) -> None:
        self.dtype_name = dtype_name


class _StorageRef:
    """A persistent id ``("storage", type, key, location, numel)``: read on first use."""

    def __init__(self, dtype_name: str | None, key: str, location: str, numel: int) -> None:
        self.dtype_name, self.key, self.location, self.numel = dtype_name, key, location, numel


class _TorchTensorType:
    """``torch.Tensor`` / ``torch.nn.parameter.Parameter`` as _rebuild_from_type_v2's type."""

    def __init__(self, parameter: bool) -> None:
        self.parameter = parameter


_TENSOR_TYPE, _PARAMETER_TYPE = _TorchTensorType(False), _TorchTensorType(True)


def _torch_size(*args):
    return Size(*args)  # (torch.Size -> tgrad.Size: a tuple subclass)


def _codecs_encode(obj, encoding="utf-8"):
    # protocol 2 pickles bytes as _codecs.encode(str, "latin1")
    if not isinstance(obj, str) or not isinstance(encoding, str):
        raise pickle.UnpicklingError("tgrad.load: _codecs.encode expects (str, encoding)")
    return obj.encode(encoding)


def _resolve_bits(t: Tensor, metadata, describe: str) -> Tensor:
    """A tensor PyTorch saved with its conj / neg bit set ({"conj": True} / {"neg": True}
    in _rebuild_tensor_v2's metadata: the storage holds the values before the lazy
    conjugation / negation): the values it stands for, as a copy (tgrad has no lazy bits,
    so it no longer shares memory with the storage's other views)."""
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"}:
        raise pickle.UnpicklingError(f"tgrad.load: a tensor in {describe} has metadata "
                                     f"{metadata!r}, which tgrad does not read")
    from tgrad.autograd.grad_mode import no_grad
    with no_grad():
        if metadata.get("conj"):
            t = t.conj_physical()
        if metadata.get("neg"):
            t = -t
    return t


class _Reader:
    """One load: the archive's storages (by key), the target device, the root tensors."""

    def __init__(self, read_storage, byteorder: str, map_location, describe: str) -> None:
        self.read_storage = read_storage  # key -> bytes
        self.byteorder = byteorder
        self.map_location = map_location
        self.describe = describe
        self.roots: dict = {}

    # ---------------------------------------------------------------- devices
    def device_for(self, location: str):
        from tgrad.device import as_device
        ml = self.map_location
        if isinstance(ml, dict):
            ml = ml.get(location, location)
        if ml is None:  # torch: the saved location
            ml = location
            if location.startswith("cuda"):
                import tgrad.cuda
                if not tgrad.cuda.is_available():
                    raise RuntimeError(
                        "Attempting to deserialize object on a CUDA device but "
                        "tgrad.cuda.is_available() is False. If you are running on a "
                        "CPU-only machine, please use tgrad.load with "
                        "map_location='cpu' to map your storages to the CPU.")
        try:
            return as_device(ml)
        except Exception as e:
            raise RuntimeError(f"tgrad.load: cannot place the storage saved on {location!r} "
                               f"on {ml!r} ({e}); pass map_location='cpu' (or a dict "
                               f"{{{location!r}: 'cpu'}})") from None

    # ---------------------------------------------------------------- tensors
    def root(self, ref: _StorageRef, dtype_name: str):
        """The root tensor (1-d, ``dtype_name`` elements) of storage ``ref``, read once."""
        cached = self.roots.get(ref.key)
        if cached is not None:
            if cached.dtype is not _TGRAD_OF[dtype_name]:
                raise RuntimeError(f"tgrad.load: storage {ref.key!r} of {self.describe} is "
                                   f"viewed as both {_TORCH_NAME[cached.dtype]} and "
                                   f"{dtype_name}; tgrad cannot share it across dtypes")
            return cached
        dt = _TGRAD_OF[dtype_name]
        raw = self.read_storage(ref.key)
        item = dt.itemsize
        want = ref.numel * (1 if ref.dtype_name is None else item)
        if len(raw) != want or len(raw) % item:
            raise RuntimeError(f"tgrad.load: storage {ref.key!r} of {self.describe} has "
                               f"{len(raw)} bytes; expected {want} ({ref.numel} elements "
                               f"of {dtype_name if ref.dtype_name else 'uint8'}): the file "
                               "is truncated or corrupt")
        end = "<" if self.byteorder == "little" else ">"
        if dt is dtypes.bool_:
            arr = np.frombuffer(raw, np.uint8) != 0
        elif dt is dtypes.bfloat16:  # no NumPy byte order for bfloat16: swap as uint16
            arr = np.frombuffer(raw, end + "u2").astype(np.uint16).view(dt.np)
        elif dt in dtypes.FLOAT8_DTYPES:  # one byte: the bits as stored
            arr = np.frombuffer(raw, np.uint8).view(dt.np)
        else:
            arr = np.frombuffer(raw, np.dtype(dt.np).newbyteorder(end)).astype(dt.np)
        from tgrad.ops.creation import from_numpy
        t = from_numpy(np.array(arr, dtype=dt.np))  # own, writable memory
        device = self.device_for(ref.location)
        if device.type != "cpu":
            t = t.to(device)
        self.roots[ref.key] = t
        return t

    def tensor(self, storage, storage_offset, size, stride, requires_grad, dtype_name,
               metadata=None):
        if not isinstance(storage, _StorageRef):
            raise pickle.UnpicklingError("tgrad.load: a tensor's storage is not a storage "
                                         "persistent id; the file is corrupt")
        if dtype_name not in _TGRAD_OF:
            raise RuntimeError(
                f"tgrad.load: {self.describe} holds a tensor of dtype torch.{dtype_name}, "
                f"which tgrad does not have (tgrad dtypes: "
                f"{', '.join('torch.' + n for n in _TGRAD_OF)}); convert it in PyTorch "
                "before saving (e.g. t.to(torch.int64) or t.float())")
        size = _int_tuple(size, "size")
        stride = _int_tuple(stride, "stride")
        offset = _int_tuple((storage_offset,), "storage_offset")[0]
        if len(size) != len(stride):
            raise RuntimeError(f"tgrad.load: a tensor in {self.describe} has size "
                               f"{list(size)} but stride {list(stride)}")
        root = self.root(storage, dtype_name)
        n = root.numel()
        if math.prod(size) and offset + sum((k - 1) * s for k, s in zip(size, stride)) >= n:
            raise RuntimeError(f"tgrad.load: a tensor in {self.describe} with size "
                               f"{list(size)}, stride {list(stride)} and storage offset "
                               f"{offset} reaches past its storage of {n} elements")
        rd = root._data
        if isinstance(rd, np.ndarray):
            f8 = rd.dtype in dtypes.FLOAT8_NP  # (NumPy's as_strided cannot take ml_dtypes'
            base = rd[min(offset, n):]            # float8: strided over its bits, then viewed)
            arr = np.lib.stride_tricks.as_strided(base.view(np.uint8) if f8 else base, size,
                                                  tuple(s * rd.itemsize for s in stride))
            arr = arr.view(rd.dtype) if f8 else arr
        else:  # DeviceArray: element strides and an absolute element offset
            arr = rd.view(size, stride, rd.offset + offset)
        t = Tensor(arr, root._storage, root.device)
        if metadata:  # PyTorch's lazy conj / neg bits (x.conj(), x.conj().imag, .mH of a
            t = _resolve_bits(t, metadata, self.describe)  # complex x) on the raw storage
        if requires_grad:
            t.requires_grad_(True)
        return t

    # ---------------------------------------------------------------- globals
    def rebuild_v2(self, storage, storage_offset, size, stride, requires_grad,
                   backward_hooks=None, metadata=None):
        name = storage.dtype_name if isinstance(storage, _StorageRef) else None
        if name is None:
            raise pickle.UnpicklingError("tgrad.load: _rebuild_tensor_v2 needs a typed "
                                         "storage; the file is corrupt")
        return self.tensor(storage, storage_offset, size, stride, requires_grad, name,
                           metadata)

    def rebuild_v3(self, storage, storage_offset, size, stride, requires_grad,
                   backward_hooks, dtype, metadata=None):
        name = dtype if isinstance(dtype, str) else _TORCH_NAME.get(dtype)
        return self.tensor(storage, storage_offset, size, stride, requires_grad, name,
                           metadata)

    @staticmethod
    def rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
        from tgrad.nn.parameter import Parameter
        p = Parameter(data, requires_grad=bool(requires_grad))
        _set_state(p, state)
        return p

    @staticmethod
    def rebuild_from_type_v2(func, new_type, args, state):
        out = func(*args)  # func: an allow-listed global, so calling it changes nothing
        if not isinstance(out, Tensor):
            raise pickle.UnpicklingError(f"tgrad.load: _rebuild_from_type_v2 must rebuild a "
                                         f"tensor, got {type(out).__name__}")
        if new_type is _PARAMETER_TYPE and not _is_parameter(out):
            out = _Reader.rebuild_parameter(out, out.requires_grad)
        elif new_type is not _TENSOR_TYPE and new_type is not _PARAMETER_TYPE:
            raise pickle.UnpicklingError(f"tgrad.load: cannot rebuild a tensor of type "
                                         f"{new_type!r}")
        _set_state(out, state)
        return out

    @staticmethod
    def torch_device(kind, index=None):
        from tgrad.device import as_device
        return as_device(kind if index is None else f"{kind}:{index}")

    def find_global(self, module: str, name: str):
        full = f"{module}.{name}"
        allowed = {
            "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
            "builtins.set": set, "builtins.frozenset": frozenset,
            "builtins.bytearray": bytearray, "builtins.complex": complex,
            "_codecs.encode": _codecs_encode, "torch.Size": _torch_size,
            "torch.device": self.torch_device,
            "torch._utils._rebuild_tensor_v2": self.rebuild_v2,
            "torch._utils._rebuild_tensor_v3": self.rebuild_v3,
            "torch._utils._rebuild_parameter": self.rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self.rebuild_parameter,
            "torch._tensor._rebuild_from_type_v2": self.rebuild_from_type_v2,
            "torch.Tensor": _TENSOR_TYPE, "torch.nn.parameter.Parameter": _PARAMETER_TYPE,
            "torch.storage.UntypedStorage": _StorageType(None),
        }
        if full in allowed:
            return allowed[full]
        if module == "torch" and name in _STORAGE_DTYPE:
            return _StorageType(_STORAGE_DTYPE[name])
        if module == "torch" and name in _TGRAD_OF:
            return _TGRAD_OF[name]
        if module == "torch" and name in _OTHER_TORCH_DTYPES:
            return name  # a dtype tgrad lacks: _rebuild_tensor_v3 names it in its error
        if full in _TORCH_ONLY:
            raise RuntimeError(f"tgrad.load: {self.describe} needs {full} (sparse, "
                               "quantized, nested, meta or subclass tensors), which tgrad "
                               "cannot rebuild")
        shown = name if module == "builtins" else full  # torch's spelling
        raise pickle.UnpicklingError(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
            "tgrad.load reads PyTorch checkpoints as torch.load(weights_only=True) does: "
            "only tensors, Parameters, dtypes, devices, torch.Size, OrderedDict and plain "
            "containers; it never runs code from the file")

    def persistent(self, pid, legacy: bool):
        n = 6 if legacy else 5
        if not isinstance(pid, tuple) or len(pid) != n or pid[0] != "storage" \
                or not isinstance(pid[1], _StorageType) or not isinstance(pid[2], str) \
                or not isinstance(pid[3], str) or type(pid[4]) is not int or pid[4] < 0:
            raise pickle.UnpicklingError(f"tgrad.load: unexpected persistent id {pid!r} in "
                                         f"{self.describe}")
        if legacy and pid[5] is not None:
            raise RuntimeError(f"tgrad.load: {self.describe} uses legacy storage views "
                               "(view_metadata), which tgrad does not read; re-save it with "
                               "a current torch.save")
        return _StorageRef(pid[1].dtype_name, pid[2], pid[3], pid[4])

    def unpickle(self, data: bytes, legacy: bool = False):
        try:
            return _RestrictedUnpickler(io.BytesIO(data), self, legacy).load()
        except (AttributeError, TypeError, IndexError, KeyError, ValueError, EOFError,
                struct.error) as e:  # opcodes that do not fit together
            raise pickle.UnpicklingError(f"tgrad.load: the pickle in {self.describe} is "
                                         f"malformed ({type(e).__name__}: {e})") from e


def _int_tuple(v, what: str) -> tuple:
    if not isinstance(v, (tuple, list)) or any(type(x) is not int or x < 0 for x in v):
        raise pickle.UnpicklingError(f"tgrad.load: a tensor's {what} must be non-negative "
                                     f"ints; got {v!r}")
    return tuple(v)


def _is_parameter(t) -> bool:
    from tgrad.nn.parameter import Parameter
    return isinstance(t, Parameter)


def _set_state(obj, state) -> None:
    """A Parameter's / tensor's Python attributes: ``state`` is a dict, or (dict, slots).
    Only new attributes: a name the object already has (dtype, _data, a method, a dunder)
    is refused, so a file cannot change how a tensor behaves; new private names are kept
    (torch.save writes e.g. ``t._note = 3``)."""
    if not state:
        return
    parts = state if isinstance(state, tuple) else (state,)
    for part in parts:
        if not isinstance(part or {}, dict):
            raise pickle.UnpicklingError(f"tgrad.load: a tensor's state must be a dict, got "
                                         f"{type(part).__name__}")
        for k, v in (part or {}).items():
            if not isinstance(k, str) or not k.isidentifier() or hasattr(obj, k):
                raise pickle.UnpicklingError(f"tgrad.load: cannot set the attribute {k!r} of "
                                             f"a loaded {type(obj).__name__}")
            setattr(obj, k, v)


class _RestrictedUnpickler(pickle._Unpickler):
    """pickle's Python unpickler with allow-listed globals and a BUILD that only sets an
    OrderedDict's attributes."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, f, reader: _Reader, legacy: bool) -> None:
        super().__init__(f, encoding="utf-8")
        self._reader, self._legacy = reader, legacy

    def find_class(self, module: str, name: str):
        # Python 2 names (protocol 2 writes builtins as __builtin__), as pickle maps them
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        return self._reader.find_global(module, name)

    def persistent_load(self, pid):
        return self._reader.persistent(pid, self._legacy)

    def _load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is OrderedDict and isinstance(state, dict):
            inst.__dict__.update(state)  # a state_dict's _metadata
            return
        raise pickle.UnpicklingError(f"tgrad.load: can only BUILD an OrderedDict, not "
                                     f"{type(inst).__name__}")

    dispatch[pickle.BUILD[0]] = _load_build


def _check_no_storages(obj, describe: str) -> None:
    if isinstance(obj, _StorageRef):
        raise RuntimeError(f"tgrad.load: {describe} holds a bare storage; tgrad has no "
                           "storage objects, only tensors")
    if isinstance(obj, dict):
        for v in obj.values():
            _check_no_storages(v, describe)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _check_no_storages(v, describe)


def is_torch_zip(z: zipfile.ZipFile) -> bool:
    return _archive_prefix(z) is not None


def _archive_prefix(z: zipfile.ZipFile) -> str | None:
    names = z.namelist()
    if not names or "/" not in names[0]:
        return None
    prefix = names[0].split("/", 1)[0] + "/"
    return prefix if prefix + "data.pkl" in names else None


def load_zip(z: zipfile.ZipFile, map_location, describe: str):
    prefix = _archive_prefix(z)
    names = set(z.namelist())
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = z.read(prefix + "byteorder").decode("ascii", "replace").strip()
        if byteorder not in ("little", "big"):
            raise RuntimeError(f"tgrad.load: unknown byteorder {byteorder!r} in {describe}")

    def read_storage(key: str) -> bytes:
        name = f"{prefix}data/{key}"
        if name not in names:
            raise RuntimeError(f"tgrad.load: {describe} has no storage record {name!r}")
        return z.read(name)

    reader = _Reader(read_storage, byteorder, map_location, describe)
    out = reader.unpickle(z.read(prefix + "data.pkl"))
    _check_no_storages(out, describe)
    return out


class _Probe(_Reader):
    """A first pass over a legacy object pickle: records each storage's persistent id (its
    element type and count, which say how many bytes it takes in the stream) and builds no
    tensors."""

    def __init__(self, describe: str) -> None:
        super().__init__(None, "little", "cpu", describe)
        self.refs: dict = {}

    def persistent(self, pid, legacy: bool):
        ref = super().persistent(pid, legacy)
        self.refs[ref.key] = ref
        return ref

    def tensor(self, *args):
        return None

    rebuild_parameter = staticmethod(lambda *args: None)
    rebuild_from_type_v2 = staticmethod(lambda *args: None)


def load_legacy(data: bytes, map_location, describe: str):
    """The legacy stream (see the module docstring). The storages follow the object's
    pickle, so a first pass over that pickle (_Probe) finds their sizes."""
    f = io.BytesIO(data)
    probe = _Probe(describe)

    def small() -> Any:  # magic, protocol, sys_info, storage keys: plain values
        return _RestrictedUnpickler(f, probe, True).load()

    if small() != LEGACY_MAGIC:
        raise RuntimeError(f"tgrad.load: {describe} is neither a tgrad.save file nor a "
                           "PyTorch checkpoint (not a zip, and no legacy magic number)")
    small()  # protocol version
    small()  # sys_info; legacy storages are little-endian whatever the machine
    start = f.tell()
    for op, _arg, _pos in pickletools.genops(f):
        if op.name == "STOP":
            break
    obj_pickle = data[start:f.tell()]
    probe.unpickle(obj_pickle, legacy=True)
    raw = {}
    for key in small():
        ref = probe.refs.get(key)
        head = f.read(8)
        if ref is None or len(head) != 8:
            raise RuntimeError(f"tgrad.load: {describe} is truncated or corrupt (storage "
                               f"{key!r})")
        numel = struct.unpack("<q", head)[0]
        raw[key] = f.read(numel * _ITEMSIZE.get(ref.dtype_name, 1))
    reader = _Reader(raw.__getitem__, "little", map_location, describe)
    out = reader.unpickle(obj_pickle, legacy=True)
    _check_no_storages(out, describe)
    return out


# ------------------------------------------------------------------------------ writing
class _Writer:
    """A protocol-2 pickle of ``obj`` in torch's layout (opcodes written by hand: the
    globals named are torch's, which torch.load(weights_only=True) allows) and the storages
    its tensors use (key -> bytes)."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")  # PROTO 2
        self.storages: dict[str, bytes] = {}
        self._by_root: dict[int, tuple] = {}  # id(root) -> (key, root): keeps root alive

    def global_(self, module: str, name: str) -> None:
        self.out += b"c" + f"{module}\n{name}\n".encode("ascii")

    def int_(self, v: int) -> None:
        if 0 <= v < 256:
            self.out += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        elif -2**31 <= v < 2**31:
            self.out += b"J" + struct.pack("<i", v)
        else:
            raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            if len(raw) > 255:
                raise ValueError(f"tgrad.save: integer {v} is too large for format='torch'")
            self.out += b"\x8a" + bytes([len(raw)]) + raw

    def str_(self, v: str) -> None:
        raw = v.encode("utf-8", "surrogatepass")
        self.out += b"X" + struct.pack("<I", len(raw)) + raw

    def tuple_(self, items, where: str) -> None:
        if not items:
            self.out += b")"
            return
        self.out += b"("
        for i, v in enumerate(items):
            self.obj(v, f"{where}[{i}]")
        self.out += b"t"

    def items_(self, items, where: str) -> None:
        """MARK k v ... SETITEMS onto the dict on the stack."""
        if not items:
            return
        self.out += b"("
        for k, v in items:
            if not isinstance(k, (bool, int, float, str, type(None))):
                raise TypeError(f"tgrad.save: dict keys must be str, int, float, bool or "
                                f"None; got {type(k).__name__} at {where}")
            self.obj(k, where)
            self.obj(v, f"{where}[{k!r}]")
        self.out += b"u"

    def empty_ordered_dict(self) -> None:
        self.global_("collections", "OrderedDict")
        self.out += b")R"

    def obj(self, v: Any, where: str) -> None:
        if isinstance(v, Tensor):
            if _is_parameter(v):
                self.global_("torch._utils", "_rebuild_parameter")
                self.out += b"("
                self.tensor(v, where)
                self.obj(bool(v.requires_grad), where)
                self.empty_ordered_dict()
                self.out += b"tR"
            else:
                self.tensor(v, where)
        elif v is None:
            self.out += b"N"
        elif isinstance(v, (bool, np.bool_)):
            self.out += b"\x88" if v else b"\x89"
        elif isinstance(v, (int, np.integer)):
            self.int_(int(v))
        elif isinstance(v, (float, np.floating)):
            self.out += b"G" + struct.pack(">d", float(v))
        elif isinstance(v, str):
            self.str_(v)
        elif isinstance(v, dtypes.DType):
            self.global_("torch", _TORCH_NAME[v])
        elif isinstance(v, OrderedDict):
            self.empty_ordered_dict()
            self.items_(list(v.items()), where)
            meta = getattr(v, "_metadata", None)
            if meta is not None:  # a state_dict's _metadata, as torch pickles it (BUILD)
                self.out += b"}"
                self.items_([("_metadata", meta)], where)
                self.out += b"b"
        elif isinstance(v, dict):
            self.out += b"}"
            self.items_(list(v.items()), where)
        elif isinstance(v, list):
            self.out += b"]"
            if v:
                self.out += b"("
                for i, x in enumerate(v):
                    self.obj(x, f"{where}[{i}]")
                self.out += b"e"
        elif isinstance(v, Size):  # torch.Size(tuple), as torch pickles one
            self.global_("torch", "Size")
            self.out += b"("
            self.tuple_(tuple(v), where)
            self.out += b"tR"
        elif type(v) is tuple:  # (a namedtuple or other subclass would lose its type)
            self.tuple_(v, where)
        else:
            raise TypeError(f"tgrad.save: cannot save an object of type {type(v).__name__} "
                            f"at {where} with format='torch'; supported: Tensor, dict, list, "
                            "tuple, int, float, bool, str, None, tgrad dtypes (a namedtuple: "
                            "save tuple(x) or x._asdict())")

    def tensor(self, t: Tensor, where: str) -> None:
        """_rebuild_tensor_v2((storage pid), offset, size, stride, requires_grad, hooks);
        float8: _rebuild_tensor_v3(..., hooks, dtype) over an UntypedStorage (torch's)."""
        root = t._storage.root
        dev = t.device
        location = "cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}"
        if (isinstance(root, np.ndarray) and root.flags.c_contiguous
                and root.dtype == t._data.dtype):
            got = self._by_root.get(id(root))
            if got is None:
                got = (str(len(self.storages)), root)
                self._by_root[id(root)] = got
                self.storages[got[0]] = root.tobytes()
            key, numel = got[0], root.size
            offset, stride = t.storage_offset(), t.stride()
        else:  # its own storage: a contiguous host copy
            host = np.array(t.detach().cpu().numpy(), order="C")  # (ascontiguousarray: 1-d)
            key, numel = str(len(self.storages)), host.size
            self.storages[key] = host.tobytes()
            offset = 0
            stride = contiguous_strides(host.shape)  # PyTorch's (a size-0 dim counted as 1)
        v3 = t.dtype in dtypes.FLOAT8_DTYPES  # torch's: no typed storage class (1-byte
        self.global_("torch._utils", "_rebuild_tensor_v3" if v3 else "_rebuild_tensor_v2")
        self.out += b"(("  # elements: the untyped storage's numel, its bytes, is the same)
        self.str_("storage")
        if v3:
            self.global_("torch.storage", "UntypedStorage")
        else:
            self.global_("torch", _STORAGE_CLASS[_TORCH_NAME[t.dtype]])
        self.str_(key)
        self.str_(location)
        self.int_(numel)
        self.out += b"tQ"  # TUPLE, BINPERSID
        self.int_(offset)
        self.tuple_(tuple(t.shape), where)
        self.tuple_(tuple(stride), where)
        self.obj(bool(t.requires_grad), where)
        self.empty_ordered_dict()
        if v3:
            self.global_("torch", _TORCH_NAME[t.dtype])
        self.out += b"tR"


def write(obj: Any, fh, archive: str = "archive") -> None:
    """``obj`` in PyTorch's zip format to the binary file ``fh`` (see the module
    docstring); storage records start on 64-byte boundaries, as torch.save writes them."""
    import sys
    w = _Writer()
    w.obj(obj, "obj")
    w.out += b"."  # STOP
    records = [("data.pkl", bytes(w.out)), ("byteorder", sys.byteorder.encode("ascii"))]
    records += [(f"data/{k}", v) for k, v in w.storages.items()]
    records += [("version", b"3\n"), (".format_version", b"1"),
                (".storage_alignment", b"64")]
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as z:
        for name, data in records:
            info = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            header = 30 + len(info.filename.encode("utf-8")) + 4  # + the extra's own header
            pad = -(z.fp.tell() + header) % 64
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            z.writestr(info, data)
