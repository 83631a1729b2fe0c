"""``tgrad.save`` / ``tgrad.load``: tensors and nested containers in one ``.npz`` file, and
PyTorch checkpoints (``torch.save``'s zip and legacy formats; see ``tgrad._torch_checkpoint``).

Format: every tensor is one array entry ("t0", "t1", ...) in an uncompressed NumPy ``.npz``
archive; the structure (dicts, lists, tuples, scalars, strings, where each tensor sits, its
dtype and flags) is a JSON document stored as the uint8 array "__tgrad__". Loading uses
``np.load(allow_pickle=False)`` and ``json``: a file can never run code. bfloat16 and the
float8 dtypes (not NumPy-native dtypes) are stored as their uint16 / uint8 bit patterns and
reinterpreted on load.
Storage sharing is kept, as by ``torch.save``: each CPU buffer (a tensor's storage root) is one
array entry, written once; a tensor that is not that whole buffer in its own layout records
``"view": [storage_offset, size, stride]`` (elements, over the flattened buffer), and
``load`` rebuilds it as a strided view of the one loaded buffer, so views saved together
share memory after loading (a write through one is seen by the others). The same tensor
object saved twice loads as one object. Device tensors are saved as contiguous copies.

PyTorch interop. ``load`` recognises PyTorch's formats by their bytes (a zip holding
``<name>/data.pkl``; a pickle stream starting with torch's legacy magic number) and reads
their pickle with an allow-list of globals, as ``torch.load(weights_only=True)``: it never
runs code from the file. ``save(obj, f, format="torch")`` writes PyTorch's zip format, which
``torch.load(weights_only=True)`` reads. The default stays ``format="tgrad"``: it holds no
pickle at all, so any NumPy can inspect it and no reader needs an allow-list; "torch" is
for handing weights to PyTorch (and tgrad.load reads it too).
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from collections import OrderedDict
from typing import Any, BinaryIO, Union

import numpy as np

from tgrad import dtypes
from tgrad.cuda.array import contiguous_strides
from tgrad.tensor import Size, Tensor

FORMAT = "tgrad.save/1"
_STRUCT_KEY = "__tgrad__"
PathOrFile = Union[str, os.PathLike, BinaryIO]

_SCALARS = (bool, int, float, str, type(None))


def save(obj: Any, f: PathOrFile, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False,
         *, format: str = "tgrad") -> None:  # noqa: A002
    """Save ``obj`` (a tensor, or dicts / lists / tuples of tensors, Python scalars, strings
    and None, e.g. a Module or Optimizer state_dict) to the path or binary file ``f``.
    ``format="tgrad"`` (default): tgrad's pickle-free ``.npz`` (a state_dict keeps its
    ``_metadata``, the modules' versions ``load_state_dict`` reads). ``format="torch"``:
    PyTorch's zip checkpoint, readable by ``torch.load(weights_only=True)`` (tensors sharing
    a CPU storage stay views of one storage; a state_dict keeps its ``_metadata``).
    PyTorch's other parameters are accepted: ``pickle_module`` (the standard ``pickle``
    only) and ``pickle_protocol`` change nothing, as tgrad writes its own records; PyTorch's
    legacy non-zip format (``_use_new_zipfile_serialization=False``) is not written."""
    _check_pickle_module("save", pickle_module)
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("tgrad.save: PyTorch's legacy (non-zip) format is not "
                                  "written; leave _use_new_zipfile_serialization=True")
    if format == "torch":
        from tgrad import _torch_checkpoint
        if isinstance(f, (str, os.PathLike)):
            with _open_for_write(f) as fh:
                _torch_checkpoint.write(obj, fh)
        else:
            _torch_checkpoint.write(obj, f)
        return
    if format != "tgrad":
        raise ValueError(f"tgrad.save: format must be 'tgrad' or 'torch', got {format!r}")
    arrays: dict[str, np.ndarray] = {}
    doc = {"format": FORMAT, "root": _encode(obj, arrays, "obj", {})}
    arrays[_STRUCT_KEY] = np.frombuffer(json.dumps(doc).encode("utf-8"), dtype=np.uint8)
    if isinstance(f, (str, os.PathLike)):
        with _open_for_write(f) as fh:  # a file object: np.savez must not append ".npz"
            np.savez(fh, **arrays)
    else:
        np.savez(f, **arrays)


def _open_for_write(path):
    """``open(path, "wb")``, but first PyTorch's error for a folder that does not exist."""
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    return open(path, "wb")  # noqa: SIM115 (the caller's with closes it)


def _check_pickle_module(op: str, pickle_module: Any) -> None:
    import pickle
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(f"tgrad.{op}: pickle_module must be the standard pickle module (tgrad "
                         f"reads and writes its records itself), got {pickle_module!r}")


def load(f: PathOrFile, map_location=None, pickle_module: Any = None, *,
         weights_only: bool = True, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load what ``save`` wrote, or a PyTorch checkpoint (``torch.save``'s zip format, or
    its legacy format). tgrad files: tensors come back on the CPU, or on ``map_location`` (a
    device or device string). PyTorch files: on the device each storage was saved on, or on
    ``map_location`` (a device, a device string, or a dict from saved location to device,
    e.g. ``{"cuda:0": "cpu"}``); tensors that shared a storage share it. ``weights_only``
    is accepted for PyTorch compatibility: either way a PyTorch pickle is read with
    ``torch.load(weights_only=True)``'s allow-list and no file ever executes code.
    ``mmap=True`` needs a file path, as in PyTorch; tgrad reads the arrays into memory
    either way (the loaded tensors are the same). ``pickle_module`` (the standard ``pickle``
    only) and ``pickle_load_args`` (``encoding``, ``errors``) are accepted as PyTorch's and
    change nothing: tgrad's reader decodes Python 2 byte strings as UTF-8."""
    _check_pickle_module("load", pickle_module)
    unknown = sorted(set(pickle_load_args) - {"encoding", "errors"})
    if unknown:
        raise TypeError(f"tgrad.load() got unexpected keyword arguments {unknown}")
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if callable(map_location) and not isinstance(map_location, dict):
        raise TypeError("tgrad.load: map_location must be a device, a device string or a "
                        "dict; a function (storage, location) is not supported (tgrad has "
                        "no storage objects)")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_file(fh, map_location, _describe(f))
    return _load_file(f, map_location, _describe(f))


def _load_file(fh: BinaryIO, map_location, describe: str) -> Any:
    """Dispatch on the first bytes: a zip (tgrad's .npz or PyTorch's zip format) or a pickle
    (PyTorch's legacy format)."""
    from tgrad import _torch_checkpoint
    start = fh.tell()
    head = fh.read(4)
    fh.seek(start)
    if head[:2] == b"PK":
        end = _zip_end(fh, start)
        total = fh.seek(0, io.SEEK_END)
        fh.seek(start)
        if end is not None and end < total:
            # more after this archive (a stream saved to twice): read this one, as
            # PyTorch's reader does (zipfile would find the last archive's directory), and
            # leave the stream after it
            part = io.BytesIO(fh.read(end - start))
            try:
                return _load_file(part, map_location, describe)
            finally:
                fh.seek(end)
        with zipfile.ZipFile(fh) as z:
            if _torch_checkpoint.is_torch_zip(z):
                return _torch_checkpoint.load_zip(z, map_location, describe)
        fh.seek(start)
    elif head[:1] == b"\x80":
        return _torch_checkpoint.load_legacy(fh.read(), map_location, describe)
    if isinstance(map_location, dict):
        map_location = map_location.get("cpu", "cpu")
    from tgrad.device import as_device
    device = as_device(map_location) if map_location is not None else as_device("cpu")
    with np.load(fh, allow_pickle=False) as z:
        if _STRUCT_KEY not in z.files:
            raise RuntimeError(f"tgrad.load: {describe} is not a file written by tgrad.save "
                               f"(no '{_STRUCT_KEY}' entry) nor a PyTorch checkpoint")
        doc = json.loads(bytes(z[_STRUCT_KEY]).decode("utf-8"))
        if doc.get("format") != FORMAT:
            raise RuntimeError(f"tgrad.load: unsupported format {doc.get('format')!r} in "
                               f"{describe} (expected {FORMAT!r})")
        return _decode(doc["root"], z, device)


def _zip_end(fh: BinaryIO, start: int) -> int | None:
    """The offset just past the zip archive that starts at ``start``, found by walking its
    local file headers to the central directory and its end record; None where the layout
    is not the plain one (sizes deferred to data descriptors, zip64, a short read)."""
    import struct
    pos = start
    try:
        while True:
            fh.seek(pos)
            sig = fh.read(4)
            if sig == b"PK\x03\x04":  # a local file header: 30 bytes, name, extra, data
                rest = fh.read(26)
                flags, csize = struct.unpack("<H", rest[2:4])[0], \
                    struct.unpack("<I", rest[14:18])[0]
                nlen, xlen = struct.unpack("<HH", rest[22:26])
                if flags & 0x08:
                    return None
                if csize == 0xFFFFFFFF:  # zip64 (np.savez's): the sizes in the extra field
                    extra = fh.read(nlen + xlen)[nlen:]
                    csize = None
                    while len(extra) >= 4:
                        hid, hlen = struct.unpack("<HH", extra[:4])
                        if hid == 1 and hlen >= 16:
                            csize = struct.unpack("<Q", extra[12:20])[0]
                        extra = extra[4 + hlen:]
                    if csize is None:
                        return None
                pos += 30 + nlen + xlen + csize
            elif sig == b"PK\x01\x02":  # a central directory entry: 46 bytes + 3 fields
                rest = fh.read(42)
                nlen, xlen, clen = struct.unpack("<HHH", rest[24:30])
                pos += 46 + nlen + xlen + clen
            elif sig == b"PK\x06\x06":  # zip64 end record, its locator, then the end
                size = struct.unpack("<Q", fh.read(8))[0]
                pos += 12 + size
            elif sig == b"PK\x06\x07":
                pos += 20
            elif sig == b"PK\x05\x06":  # the end of central directory: 22 bytes + comment
                rest = fh.read(18)
                return pos + 22 + struct.unpack("<H", rest[16:18])[0]
            else:
                return None
    except (OSError, struct.error):
        return None


def _describe(f) -> str:
    return repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the given file"


def _encode(obj: Any, arrays: dict, where: str, memo: dict):
    """The JSON record of ``obj``; tensors go to ``arrays``. ``where`` names the position
    for error messages (e.g. obj['state'][0]['exp_avg']). ``memo``: id(tensor) -> its
    record and id(buffer) -> (array key, buffer), so a buffer is written once."""
    if isinstance(obj, Tensor):
        got = memo.get(id(obj))
        if got is not None:  # the same tensor again: a reference to the first record
            return {"same": got[0]["obj"]}
        from tgrad.nn.parameter import Parameter
        rec = {"dtype": obj.dtype.name, "requires_grad": obj.requires_grad,
               "parameter": isinstance(obj, Parameter), "obj": len(memo)}
        root = obj._storage.root
        if (isinstance(root, np.ndarray) and root.flags.c_contiguous
                and root.dtype == obj._data.dtype):  # a view of a CPU buffer: share it
            key = memo.get(id(root))
            if key is None:
                key = memo[id(root)] = (f"t{len(arrays)}", root)
                arrays[key[0]] = _bits(root, obj.dtype)
            rec["tensor"] = key[0]
            layout = [obj.storage_offset(), list(obj.shape), list(obj.stride())]
            if layout != [0, list(root.shape), list(contiguous_strides(root.shape))]:
                rec["view"] = layout
        else:  # its own buffer: a contiguous host copy
            rec["tensor"] = f"t{len(arrays)}"
            host = np.array(obj.detach().numpy(), order="C")  # (keeps 0-d)
            arrays[rec["tensor"]] = _bits(host, obj.dtype)
        memo[id(obj)] = (rec, obj)  # (obj kept alive: ids stay unique during the save)
        return rec
    if isinstance(obj, _SCALARS):
        return obj if not isinstance(obj, float) or np.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return _encode(obj.item(), arrays, where, memo)
    if isinstance(obj, dtypes.DType):
        return {"dtype_obj": obj.name}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, _SCALARS):
                raise TypeError(f"tgrad.save: dict keys must be str, int, float, bool or None; "
                                f"got {type(k).__name__} at {where}")
            items.append([k, _encode(v, arrays, f"{where}[{k!r}]", memo)])
        rec = {"dict": items, "ordered": isinstance(obj, OrderedDict)}
        meta = getattr(obj, "_metadata", None)
        if isinstance(obj, OrderedDict) and meta is not None:  # a state_dict's versions
            rec["metadata"] = _encode(meta, arrays, f"{where}._metadata", memo)
        return rec
    if type(obj) in (list, tuple) or isinstance(obj, Size):  # (not a namedtuple: its type
        kind = "list" if isinstance(obj, list) else "size" if isinstance(obj, Size) else \
            "tuple"  # would be lost, a plain tuple loaded back)
        return {kind: [_encode(v, arrays, f"{where}[{i}]", memo) for i, v in enumerate(obj)]}
    raise TypeError(f"tgrad.save: cannot save an object of type {type(obj).__name__} at "
                    f"{where}; supported: Tensor, dict, list, tuple, int, float, bool, str, "
                    "None, tgrad dtypes (a namedtuple: save tuple(x) or x._asdict())")


def _bits(arr: np.ndarray, dt) -> np.ndarray:
    """bfloat16 / float8 (not NumPy-native) as their uint16 / uint8 bit patterns."""
    if dt is dtypes.bfloat16:
        return arr.view(np.uint16)
    if dt in dtypes.FLOAT8_DTYPES:
        return arr.view(np.uint8)
    return arr


def _decode(rec: Any, z, device, memo: dict | None = None):
    """``memo``: array key -> the loaded buffer's tensor, "obj" index -> loaded tensor."""
    if not isinstance(rec, dict):
        return rec
    if memo is None:
        memo = {}
    if "same" in rec:
        return memo[("obj", rec["same"])]
    if "tensor" in rec:
        t = _decode_tensor(rec, z, device, memo)
        if rec.get("parameter"):
            from tgrad.nn.parameter import Parameter
            t = Parameter(t, requires_grad=rec["requires_grad"])
        elif rec["requires_grad"]:
            t.requires_grad_(True)
        memo[("obj", rec.get("obj"))] = t
        return t
    if "float" in rec:
        return float(rec["float"])
    if "dtype_obj" in rec:
        return dtypes.as_dtype(rec["dtype_obj"])
    if "dict" in rec:
        cls = OrderedDict if rec.get("ordered") else dict
        out = cls((k, _decode(v, z, device, memo)) for k, v in rec["dict"])
        if "metadata" in rec:  # (load_state_dict reads each module's version from it)
            out._metadata = _decode(rec["metadata"], z, device, memo)
        return out
    if "list" in rec:
        return [_decode(v, z, device, memo) for v in rec["list"]]
    if "tuple" in rec:
        return tuple(_decode(v, z, device, memo) for v in rec["tuple"])
    if "size" in rec:
        return Size(rec["size"])
    raise RuntimeError(f"tgrad.load: unknown record {sorted(rec)} in the structure document")




def _decode_tensor(rec: dict, z, device, memo: dict) -> Tensor:
    """The tensor of ``rec``: its buffer (loaded once per array key, then moved to
    ``device``), or with ``"view": [offset, size, stride]`` a strided view of that buffer."""
    from tgrad.ops.creation import from_numpy
    dt = dtypes.as_dtype(rec["dtype"])
    key = rec["tensor"]
    root = memo.get(key)
    if root is None:
        arr = np.array(z[key])
        bits = dt is dtypes.bfloat16 or dt in dtypes.FLOAT8_DTYPES  # stored as their bits
        arr = arr.view(dt.np) if bits else arr.astype(dt.np, copy=False)
        root = memo[key] = from_numpy(arr) if device.type == "cpu" \
            else from_numpy(arr).to(device)
    if "view" not in rec:  # the whole buffer: its own tensor first, then new tensors on it
        if ("whole", key) in memo:
            return Tensor(root._data, root._storage, root.device)
        memo[("whole", key)] = True
        return root
    offset, size, stride = rec["view"]
    size, stride = tuple(size), tuple(stride)
    rd = root._data
    n = root.numel()
    if math.prod(size) and (offset < 0 or min(stride, default=0) < 0 or offset + sum(
            (k - 1) * s for k, s in zip(size, stride)) >= n or len(size) != len(stride)):
        raise RuntimeError(f"tgrad.load: a view with size {list(size)}, stride "
                           f"{list(stride)} and offset {offset} reaches past its buffer of "
                           f"{n} elements; the file is corrupt")
    if isinstance(rd, np.ndarray):
        flat = rd.reshape(-1)  # (the buffer is C-contiguous: a view)
        f8 = flat.dtype in dtypes.FLOAT8_NP  # (as_strided cannot take ml_dtypes' float8)
        base = flat[min(offset, n):]
        arr = np.lib.stride_tricks.as_strided(base.view(np.uint8) if f8 else base, size,
                                              tuple(s * flat.itemsize for s in stride))
        arr = arr.view(flat.dtype) if f8 else arr
    else:  # DeviceArray: element strides and an absolute element offset
        arr = rd.view(size, stride, rd.offset + offset)
    return Tensor(arr, root._storage, root.device)

