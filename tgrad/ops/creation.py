"""Creation functions: tensor, zeros, ones, empty, full, *_like, rand, randn, arange,
from_numpy, manual_seed. Shapes may be given as varargs or one tuple."""

from __future__ import annotations

import math
import warnings

import numpy as np

from tgrad import dtypes
from tgrad._layout import check_layout, strided
from tgrad.backends import get_backend, numpy_backend
from tgrad.device import as_device
from tgrad.dtypes import DType
from tgrad.ops._common import int_tuple, require_tensor, require_tensor_or_number, sizes_keyword
from tgrad.ops.settings import _SETTINGS
from tgrad.tensor import Storage, Tensor, _int_arg

__all__ = ["tensor", "as_tensor", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "full_like", "empty_like", "rand", "randn", "rand_like", "randn_like", "arange",
           "linspace", "eye", "from_numpy", "manual_seed", "get_rng_state", "set_rng_state",
           "randint", "randperm", "empty_strided"]


def _shape(size: tuple, op: str = "size") -> tuple:
    """The sizes of a factory (ints, or one sequence of them) as a tuple of Python ints:
    int_tuple's element checks (PyTorch's TypeError naming ``op``: a float, a bool or a
    float tensor is refused, NumPy integers and one-element integer tensors taken), then
    PyTorch's error for a negative size."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = int_tuple(op, "size", size)
    for s in out:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(out)}")
    return out


def _finish(host: np.ndarray, device, requires_grad: bool, op: str = "tensor") -> Tensor:
    dev = as_device(device)
    if host.dtype.kind == "c":
        dtypes.check_complex_device(op, dtypes.from_numpy_dtype(host.dtype), dev)
    if host.dtype in dtypes.FLOAT8_NP:
        dtypes.check_float8_device(op, dtypes.from_numpy_dtype(host.dtype), dev)
    arr = host if dev.type == "cpu" else get_backend(dev).from_host(host)
    t = Tensor(arr, None, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def check_pin_memory(op: str, device) -> None:
    """``pin_memory=True`` of a factory asks for page-locked CPU memory, which tgrad does
    not have: as ``Tensor.pin_memory``, PyTorch's error without a GPU or for a GPU tensor,
    else an ordinary CPU tensor (False, the default, is not checked)."""
    from tgrad import cuda
    if not cuda.is_available():
        raise RuntimeError(f"{op}: Cannot access accelerator device when none is available.")
    if as_device(device).type != "cpu":
        raise RuntimeError(f"{op}: Only dense CPU tensors can be pinned")


def _check_leaves(data, typed: bool) -> bool:
    """PyTorch's element checks on nested data: numbers (Python, NumPy), NumPy arrays and,
    inside a list, one-element tensors only; None, strings and bytes are rejected (another
    object: PyTorch's TypeError with a ``typed`` dtype given, else its RuntimeError). True
    when a tensor is among the elements."""
    stack, has_tensor = [data], False
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, Tensor):
            has_tensor = True
            if x.numel() != 1:
                raise ValueError("tensor(): only one element tensors can be converted to "
                                 f"Python scalars (got an element of shape {tuple(x.shape)})")
        elif isinstance(x, (str, bytes)):
            raise TypeError(f"tensor(): invalid data type '{type(x).__name__}'; pass numbers, "
                            f"nested lists of numbers, NumPy arrays or tensors")
        elif not isinstance(x, (bool, int, float, complex, np.generic, np.ndarray)):
            what, err = ("must be real number, not", TypeError) if typed else \
                ("Could not infer dtype of", RuntimeError)
            raise err(f"tensor(): {what} {type(x).__name__}; pass numbers, nested lists of "
                      f"numbers, NumPy arrays or tensors")
    return has_tensor


def _to_bool(data):
    """Nested data with every number replaced by ``bool(number)`` (a bool tensor takes any
    magnitude, as PyTorch: ``tensor([2**64], dtype=bool)`` is [True])."""
    if isinstance(data, (list, tuple)):
        return [_to_bool(x) for x in data]
    if isinstance(data, np.ndarray):
        return data.astype(np.bool_)
    if isinstance(data, Tensor):
        return bool(data.item())
    return bool(data)


def _infer_dtype(data) -> DType:
    """dtype of nested Python data as PyTorch infers it: Python bool/int/float give bool,
    int64 and the default float; NumPy scalars and tensors keep their dtype; mixed
    elements promote (``promote_types``)."""
    dt = None
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        if isinstance(x, Tensor):
            d = x.dtype
        elif isinstance(x, (np.generic, np.ndarray)):
            d = dtypes.from_numpy_dtype(x.dtype)
        elif isinstance(x, bool):
            d = dtypes.bool_
        elif isinstance(x, int):
            d = dtypes.int64
        elif isinstance(x, float):
            d = dtypes.get_default_dtype()
        elif isinstance(x, complex):
            d = dtypes.get_default_complex_dtype()
        else:
            raise TypeError(f"tensor(): could not infer dtype of {type(x).__name__}; pass "
                            f"numbers, nested lists of numbers, NumPy arrays or tensors")
        dt = d if dt is None else dtypes.promote_types(dt, d)
    return dtypes.get_default_dtype() if dt is None else dt


def _untensor(data):
    if isinstance(data, (list, tuple)):
        return [_untensor(x) for x in data]
    return data.item() if isinstance(data, Tensor) else data


def check_numpy_array(op: str, arr: np.ndarray) -> None:
    """PyTorch's refusals of a NumPy array for tensor / as_tensor / asarray / from_numpy,
    whatever dtype is asked for: a non-native byte order (ValueError) and dates, times,
    strings, objects and records (TypeError): no number is read from those."""
    if not arr.dtype.isnative:
        raise ValueError(f"{op}: given numpy array has byte order different from the native "
                         f"byte order. Conversion between byte orders is currently not "
                         f"supported. Convert it first: "
                         f"arr.astype(arr.dtype.newbyteorder('='))")
    if arr.dtype.kind in "MmOSU" or arr.dtype.names is not None:  # (ml_dtypes' are kind V)
        raise TypeError(f"{op}: can't convert np.ndarray of type numpy."
                        f"{arr.dtype.type.__name__}. The only supported types are: "
                        f"{', '.join(x.name for x in dtypes.SUPPORTED_DTYPES)}")


def tensor(data, dtype=None, device=None, requires_grad: bool = False, *,
           pin_memory: bool = False) -> Tensor:
    """A new tensor (always a copy) from nested lists, scalars, NumPy arrays or tensors."""
    if pin_memory:
        check_pin_memory("tensor", device)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tgrad.tensor(sourceTensor).", UserWarning, stacklevel=2)
        host = np.array(data.numpy(force=True), copy=True)
        dt = dtypes.as_dtype(dtype) if dtype is not None else data.dtype
    elif isinstance(data, np.ndarray):
        check_numpy_array("tensor", data)
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.from_numpy_dtype(data.dtype)
        host = np.array(data, copy=True)
    else:
        if isinstance(data, range):
            data = list(data)
        elif isinstance(data, np.generic):  # np.datetime64(...): refused as its array
            check_numpy_array("tensor", np.asarray(data))
        has_tensor = _check_leaves(data, dtype is not None)
        dt = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
        if dt is dtypes.bool_:
            data = _to_bool(data)
        elif has_tensor:
            data = _untensor(data)  # one-element tensors to exact Python numbers
        try:
            host = np.array(data, dtype=np.float64 if dt.is_floating_point
                            else np.complex128 if dt.is_complex else None)
        except ValueError as e:
            raise ValueError(f"tensor(): data has an irregular shape ({e})") from None
        except OverflowError:  # a Python int beyond 64 bits
            raise RuntimeError(f"tensor(): value cannot be converted to type {dt.name} "
                               f"without overflow") from None
        if host.dtype == object:
            if all(isinstance(v, int) for v in host.reshape(-1)):  # ints beyond 64 bits
                raise RuntimeError(f"tensor(): value cannot be converted to type {dt.name} "
                                   f"without overflow")
            raise TypeError("tensor(): data must be numbers or nested lists of numbers")
        if host.size and not (dt.is_floating_point or dt.is_complex) and dt is not dtypes.bool_:
            for v in (host.min(), host.max()):  # ints out of range, NaN/inf: PyTorch raises
                dtypes.check_value_fits("tensor()", v.item(), dt)
    if dt in dtypes.FLOAT8_DTYPES:  # PyTorch's float8 rounding (500 is 448 in e4m3fn)
        host = np.array(numpy_backend.cast(np.asarray(host), dt.np), order="C")
    else:
        with np.errstate(over="ignore"):  # past a float dtype's range: inf, silently
            host = np.array(host, dtype=dt.np, order="C")  # (PyTorch)
    return _finish(host, device, requires_grad)


_CONSTANTS: dict = {}  # (id(array), dtype, device) -> (array, tensor); see device_constant
_MAX_CONSTANTS = 512


def device_constant(array: np.ndarray, dtype, device) -> Tensor:
    """``array`` (a cached, read-only NumPy constant: an index plan, a window table) as a
    tensor on ``device``, made once and reused, so a layer's forward does not copy it from
    the host on every call. The array is kept alive with the tensor, so its id stays its
    key. Internal: the tensor is shared, never to be written."""
    dt = dtypes.as_dtype(dtype)
    dev = as_device(device)
    key = (id(array), dt, dev)
    hit = _CONSTANTS.get(key)
    if hit is not None and hit[0] is array:
        return hit[1]
    if len(_CONSTANTS) >= _MAX_CONSTANTS:
        _CONSTANTS.clear()
    t = tensor(array, dtype=dt, device=dev)
    if t.is_inference():  # made inside inference_mode: shared, it must be a normal tensor
        t = Tensor(t._data, Storage(t._storage.root), t.device)
    _CONSTANTS[key] = (array, t)
    return t


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a matching tensor or NumPy array."""
    if isinstance(data, Tensor):  # the same tensor, or a recorded cast/copy (as PyTorch)
        if (dtype is None or dtypes.as_dtype(dtype) is data.dtype) \
                and (device is None or as_device(device) == data.device):
            return data
        return data.to(device=data.device if device is None else device,
                       dtype=data.dtype if dtype is None else dtypes.as_dtype(dtype))
    if isinstance(data, np.ndarray):
        check_numpy_array("as_tensor", data)
        if (dtype is None or dtypes.as_dtype(dtype).np == data.dtype) and \
                as_device(device).type == "cpu":
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``arr`` (writes through either are visible)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(arr).__name__})")
    check_numpy_array("from_numpy", arr)
    dtypes.from_numpy_dtype(arr.dtype)
    if any(s % arr.itemsize for s in arr.strides) or any(s < 0 for s in arr.strides):
        raise ValueError("from_numpy: arrays with negative or unaligned strides are not "
                         "supported; pass arr.copy()")
    return Tensor(arr, None, as_device("cpu"))


def _dtype_or_default(dtype) -> DType:
    return dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)


def full(*args, size=None, fill_value=None, dtype=None, device=None,
         requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """``full(size, fill_value)`` (or ``size=``, ``fill_value=``): dtype inferred from
    fill_value like PyTorch."""
    if pin_memory:
        check_pin_memory("full", device)
    if layout is not None:
        check_layout("full", layout)
    args = sizes_keyword("full", "size", args, size)
    if fill_value is None:
        if len(args) >= 2 and not isinstance(args[-1], (tuple, list)):
            *args, fill_value = args
        elif len(args) == 2:
            args, fill_value = (args[0],), args[1]
        else:
            raise TypeError("full() missing required argument 'fill_value'")
    shape = _shape(tuple(args), "full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if not isinstance(fill_value, (int, float, complex, bool, np.number, np.bool_)):
        raise TypeError(f"full(): argument 'fill_value' must be a Number, not "
                        f"{type(fill_value).__name__}")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.scalar_dtype(fill_value)
    dtypes.check_value_fits("full()", fill_value, dt)
    if dt is dtypes.bool_:  # any magnitude is True (2**63 too, which NumPy cannot take)
        fill_value = bool(fill_value)
    elif isinstance(fill_value, (complex, np.complexfloating)) and not dt.is_complex:
        fill_value = fill_value.real  # 1+0j (a nonzero imaginary part was refused above)
    return _filled(shape, fill_value, dt, device, requires_grad)


def _filled(shape: tuple, value, dt: DType, device, requires_grad: bool) -> Tensor:
    """A new tensor of ``shape`` (checked sizes) holding ``value`` (a number ``dt`` takes:
    full's checks done, or 0 / 1) on ``device``."""
    dev = as_device(device)
    if dev.type != "cpu":
        dtypes.check_complex_device("full", dt, dev)
        dtypes.check_float8_device("full", dt, dev)
    t = Tensor(get_backend(dev).full(shape, value, dt.np), None, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*args, size=None, dtype=None, device=None, requires_grad: bool = False,
          layout=None, pin_memory: bool = False) -> Tensor:
    _check_size_given("zeros", args, size)
    if pin_memory:
        check_pin_memory("zeros", device)
    if layout is not None:
        check_layout("zeros", layout)
    return _filled(_shape(sizes_keyword("zeros", "size", args, size), "zeros"), 0,
                   _dtype_or_default(dtype), device, requires_grad)


def ones(*args, size=None, dtype=None, device=None, requires_grad: bool = False,
         layout=None, pin_memory: bool = False) -> Tensor:
    _check_size_given("ones", args, size)
    if pin_memory:
        check_pin_memory("ones", device)
    if layout is not None:
        check_layout("ones", layout)
    return _filled(_shape(sizes_keyword("ones", "size", args, size), "ones"), 1,
                   _dtype_or_default(dtype), device, requires_grad)


def empty(*args, size=None, dtype=None, device=None, requires_grad: bool = False,
          layout=None, pin_memory: bool = False, memory_format=None) -> Tensor:
    """An uninitialised tensor (tgrad's backends may zero-fill). ``memory_format``:
    ``contiguous_format`` (row-major) or a channels-last format (PyTorch's NHWC / NDHWC
    strides); ``preserve_format`` is PyTorch's error (nothing to preserve)."""
    _check_size_given("empty", args, size)
    if pin_memory:
        check_pin_memory("empty", device)
    if layout is not None:
        check_layout("empty", layout)
    dev = as_device(device)
    dt = _dtype_or_default(dtype)
    dtypes.check_complex_device("empty", dt, dev)
    dtypes.check_float8_device("empty", dt, dev)
    shape = _shape(sizes_keyword("empty", "size", args, size), "empty")
    t = Tensor(get_backend(dev).empty(shape, dt.np), None, dev)
    if memory_format is not None:
        from tgrad.ops.movement import _check_format, laid_out, preserve_format
        if memory_format is preserve_format:
            raise RuntimeError("unsupported memory format Preserve")
        if _check_format("empty", t, memory_format):
            t = laid_out(t, memory_format)
    if _SETTINGS["deterministic"]:
        _fill_uninitialized(t)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _fill_uninitialized(t: Tensor) -> None:
    """PyTorch's fill of uninitialised memory under use_deterministic_algorithms(True) (while
    tgrad.utils.deterministic.fill_uninitialized_memory): NaN, the largest integer, True."""
    from tgrad.utils import deterministic
    if not deterministic.fill_uninitialized_memory or not t.numel():
        return
    dt = t.dtype
    if dt.is_floating_point or dt.is_complex:
        value = math.nan
    elif dt is dtypes.bool_:
        value = True
    else:
        value = int(np.iinfo(dt.np).max)
    t.fill_(value)


def _like(x: Tensor, dtype, device, op: str = "", layout=None, memory_format=None):
    """(dtype, device) of a *_like / new_* result: x's unless given (``layout``: checked
    for ``op``; ``memory_format``: PyTorch's keyword of the *_like factories, checked as
    ``clone``'s: ``preserve_format`` and ``contiguous_format`` both give a row-major result,
    a channels-last format that layout: the callers pass their result through
    ``movement.laid_out``)."""
    if layout is not None:
        check_layout(op, layout)
    if memory_format is not None:
        from tgrad.ops.movement import _check_format
        _check_format(op, x, memory_format)
    return (x.dtype if dtype is None else dtypes.as_dtype(dtype),
            x.device if device is None else as_device(device))


def _laid_out(t: Tensor, fmt) -> Tensor:
    from tgrad.ops.movement import laid_out
    return laid_out(t, fmt)


def _sparse_like(x: Tensor, op: str, dtype, device, requires_grad: bool, layout) -> Tensor:
    """``op`` (zeros_like, empty_like, ones_like, full_like, rand_like, randn_like) of a
    sparse COO tensor, layout unset or ``sparse_coo``: zeros_like / empty_like give
    PyTorch's empty sparse tensor (x's shape, sparse_dim and dense_dim, nnz 0, coalesced);
    the others raise PyTorch's error (there is no sparse fill_, uniform_ or normal_)."""
    from tgrad._layout import sparse_coo
    from tgrad.sparse import SparseTensor, unsupported
    if layout is not None and layout is not sparse_coo:  # (strided is the caller's)
        check_layout(op, layout)  # raises
    refused = {"ones_like": "fill_.Scalar", "full_like": "fill_.Scalar",
               "rand_like": "uniform_", "randn_like": "normal_"}.get(op)
    if refused is not None:  # (no sparse fill_ / uniform_ / normal_ kernel: PyTorch's error)
        raise unsupported(refused)
    dt = x.dtype if dtype is None else dtypes.as_dtype(dtype)
    if device is not None and as_device(device).type != "cpu":
        raise RuntimeError(f"{op}: tgrad's sparse COO tensors are CPU-only, got device "
                           f"{as_device(device)} (convert with .to_dense() first)")
    vals = np.zeros((0,) + tuple(x.shape[x.sparse_dim():]), dt.np)
    return SparseTensor(np.zeros((x.sparse_dim(), 0), np.int64), vals, tuple(x.shape), True,
                        requires_grad)


def zeros_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,  # noqa: A002
               layout=None, *, memory_format=None) -> Tensor:
    require_tensor("zeros_like", input)
    if input._sparse and layout is not strided:  # a sparse COO input (tgrad.sparse)
        return _sparse_like(input, "zeros_like", dtype, device, requires_grad, layout)
    dt, dev = _like(input, dtype, device, "zeros_like", layout, memory_format)
    out = _filled(input.shape, 0, dt, dev, requires_grad)
    return out if memory_format is None else _laid_out(out, memory_format)


def ones_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,  # noqa: A002
              layout=None, *, memory_format=None) -> Tensor:
    require_tensor("ones_like", input)
    if input._sparse and layout is not strided:
        return _sparse_like(input, "ones_like", dtype, device, requires_grad, layout)
    dt, dev = _like(input, dtype, device, "ones_like", layout, memory_format)
    out = _filled(input.shape, 1, dt, dev, requires_grad)
    return out if memory_format is None else _laid_out(out, memory_format)


def full_like(input: Tensor, fill_value, dtype=None, device=None,  # noqa: A002
              requires_grad: bool = False, layout=None, *, memory_format=None) -> Tensor:
    require_tensor("full_like", input)
    if input._sparse and layout is not strided:
        return _sparse_like(input, "full_like", dtype, device, requires_grad, layout)
    dt, dev = _like(input, dtype, device, "full_like", layout, memory_format)
    out = full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)
    return out if memory_format is None else _laid_out(out, memory_format)


def empty_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,  # noqa: A002
               layout=None, *, memory_format=None) -> Tensor:
    require_tensor("empty_like", input)
    if input._sparse and layout is not strided:
        return _sparse_like(input, "empty_like", dtype, device, requires_grad, layout)
    dt, dev = _like(input, dtype, device, "empty_like", layout, memory_format)
    out = empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    return out if memory_format is None else _laid_out(out, memory_format)


LAST_SEED: list = [None]  # the last manual_seed value (a backend loaded later may read it)


def manual_seed(seed: int):
    """Seed tgrad's random generators: the CPU one, and every device backend that is
    available (an unavailable device, e.g. cuda without a driver, is skipped). Returns
    ``tgrad.default_generator``, as PyTorch does. Like torch.manual_seed, the seed goes
    through int() first (1.5 seeds 1, "7" seeds 7)."""
    from tgrad import backends
    from tgrad.generator import normalize_seed
    seed = normalize_seed(int(seed))
    LAST_SEED[0] = seed
    numpy_backend.manual_seed(seed)
    for b in list(backends._BACKENDS.values()):
        if b is numpy_backend:
            continue
        try:
            b.manual_seed(seed)
        except RuntimeError as e:
            if "not available" not in str(e):
                raise
    from tgrad.generator import default_generator
    return default_generator


def get_rng_state(device=None) -> Tensor:
    """The state of tgrad's generator for ``device`` (default: the CPU one) for
    ``set_rng_state``: a 1-D uint8 CPU tensor, as PyTorch's ByteTensor, in tgrad's own layout
    (tgrad.generator's doc: 48 bytes on the CPU, 16 on cuda)."""
    return _global_generator(device).get_state()


def set_rng_state(new_state: Tensor, device=None) -> None:
    """Restore a state from ``get_rng_state`` (the same device type; PyTorch's TypeError for
    a non-ByteTensor, RuntimeError for a wrong size)."""
    _global_generator(device).set_state(new_state)


def _global_generator(device):
    from tgrad.device import as_device
    from tgrad.generator import default_generator
    dev = as_device(device or "cpu")
    if dev.type == "cpu":
        return default_generator
    if dev.type != "cuda":
        raise RuntimeError(f"get_rng_state / set_rng_state: tgrad has generators for 'cpu' "
                           f"and 'cuda', not {dev.type!r}")
    from tgrad.cuda import _gen  # (the current device for "cuda", the index checked)
    return _gen(dev)


_RANDOM_KERNELS = {"rand": "check_uniform_bounds", "randn": "normal_kernel_cpu"}


def _random(kind: str, size, dtype, device, requires_grad, generator=None) -> Tensor:
    from tgrad.generator import drawing_from
    dt = _dtype_or_default(dtype)
    dev = as_device(device)
    if dt.is_complex:
        # PyTorch's complex rand/randn: real and imaginary parts drawn independently, each
        # uniform on [0, 1) (rand) or normal with variance 1/2 (randn: E|z|^2 = 1)
        dtypes.check_complex_device(kind, dt, dev)
        part = dtypes.to_real(dt).np
        with drawing_from(generator, dev, kind):
            pair = getattr(get_backend(dev), kind)(_shape(size, kind) + (2,), part)
        if kind == "randn":
            pair = pair * part.type(math.sqrt(0.5))
        arr = np.ascontiguousarray(pair).view(dt.np)[..., 0]
        # (reshape: np.ascontiguousarray makes a 0-d array 1-d; rand((), complex) is 0-d)
        t = Tensor(np.ascontiguousarray(arr).reshape(arr.shape), None, dev)
        if requires_grad:
            t.requires_grad_(True)
        return t
    if not dt.is_floating_point:  # PyTorch's kernel error
        raise NotImplementedError(f"{kind}: \"{_RANDOM_KERNELS[kind]}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[dt]}' (expected a floating "
                                  f"point or complex dtype, got {dt.name})")
    with drawing_from(generator, dev, kind):
        arr = getattr(get_backend(dev), kind)(_shape(size, kind), dt.np)
    t = Tensor(arr, None, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _check_size_given(op: str, args: tuple, size) -> None:
    """The creation functions need a size, as PyTorch's (a TypeError in its words: rand /
    randn have several overloads, zeros / ones / empty one); ``()`` is 0-d."""
    if not args and size is None:
        hint = f"pass a size, e.g. {op}(()) for a 0-d tensor"
        if op in ("rand", "randn"):
            raise TypeError(f"{op}() received an invalid combination of arguments - got (), "
                            f"but expected (tuple of ints size, ...): {hint}")
        raise TypeError(f'{op}() missing 1 required positional arguments: "size" ({hint})')


def rand(*args, size=None, generator=None, dtype=None, device=None,
         requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """Uniform samples on [0, 1) (from ``generator``, a tgrad.Generator, if given)."""
    if pin_memory:
        check_pin_memory("rand", device)
    check_layout("rand", layout)
    _check_size_given("rand", args, size)
    shape = sizes_keyword("rand", "size", args, size)
    return _random("rand", shape, dtype, device, requires_grad, generator)


def randn(*args, size=None, generator=None, dtype=None, device=None,
          requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """Standard normal samples (from ``generator``, a tgrad.Generator, if given)."""
    if pin_memory:
        check_pin_memory("randn", device)
    check_layout("randn", layout)
    _check_size_given("randn", args, size)
    shape = sizes_keyword("randn", "size", args, size)
    return _random("randn", shape, dtype, device, requires_grad, generator)


def _random_like(op: str, draw, input: Tensor, dtype, device, requires_grad: bool,  # noqa: A002
                 layout, memory_format, generator) -> Tensor:
    """rand_like / randn_like: ``draw`` (rand / randn) of input's shape."""
    require_tensor(op, input)
    if input._sparse and layout is not strided:
        _sparse_like(input, op, dtype, device, requires_grad, layout)  # (raises)
    dt, dev = _like(input, dtype, device, op, layout, memory_format)
    out = draw(input.shape, dtype=dt, device=dev, requires_grad=requires_grad,
               generator=generator)
    return out if memory_format is None else _laid_out(out, memory_format)


def rand_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,  # noqa: A002
              layout=None, *, memory_format=None, generator=None) -> Tensor:
    return _random_like("rand_like", rand, input, dtype, device, requires_grad, layout,
                        memory_format, generator)


def randn_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,  # noqa: A002
               layout=None, *, memory_format=None, generator=None) -> Tensor:
    return _random_like("randn_like", randn, input, dtype, device, requires_grad, layout,
                        memory_format, generator)


# randperm into a float dtype: every integer below n must be exact (PyTorch's limits;
# PyTorch has none for bfloat16 and returns repeats past 257, tgrad raises)
_RANDPERM_MAX = {"float16": (2049, "2049", "Half"), "bfloat16": (257, "257", "BFloat16"),
                 "float32": (2 ** 24 + 1, "2^24+1", "Float"),
                 "float64": (2 ** 53 + 1, "2^53+1", "Double")}


# PyTorch's C type names in check_random_bounds' errors
_C_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                 "int16": "short int", "int32": "int", "int64": "long int",
                 "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                 "float64": "double"}
_FLOAT_DIGITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def check_random_bounds(op: str, from_: int, to: int, dt, to_given: bool = True) -> None:
    """PyTorch's checks of integers drawn uniformly from [from, to) into ``dt`` (randint,
    random_): both bounds are int64, from < to, and from and to - 1 lie in dt's range
    [lowest, max] (bool: [0, 1]; check_from_to_in_range); a float dtype past +-2^digits
    (where not every integer is exact) only warns; complex is refused. (``to_given``
    False: ``to`` is the dtype's max + 1, which may be 2^63.)"""
    import warnings
    for v in (from_, to) if to_given else (from_,):
        if not -2 ** 63 <= v < 2 ** 63:
            raise ValueError(f"{op}: Overflow when unpacking long long ({v} is outside the "
                             f"int64 range)")
    if to <= from_:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={from_} >= to={to}")
    to_inc = to - 1
    if dt.is_complex or dt.name not in _C_TYPE_NAMES:
        raise RuntimeError(f"{op}: check_random_bounds handles only integral, floating-point "
                           f"and boolean types (got {dt.name})")
    name = _C_TYPE_NAMES[dt.name]
    if dt.is_floating_point:
        lo, hi = float(dtypes.finfo(dt).min), float(dtypes.finfo(dt).max)
    elif dt is dtypes.bool_:
        lo, hi = 0, 1
    else:
        info = np.iinfo(dt.np)
        lo, hi = int(info.min), int(info.max)
    for value, what in ((from_, "from"), (to_inc, "to - 1")):
        if not lo <= value <= hi:
            raise RuntimeError(f"{op}: {what} is out of bounds for {name} ({value} does not "
                               f"fit {dt.name}, whose range is [{lo}, {hi}])")
    if dt.is_floating_point:
        d = _FLOAT_DIGITS[dt.name]
        for value, what in ((from_, "from"), (to_inc, "to - 1")):
            if not -2 ** d <= value <= 2 ** d:
                warnings.warn(f"{what} is out of bounds [-(2^{d}), 2^{d}]. Due to precision "
                              f"limitations {name} can support discrete uniform distribution "
                              f"only within this range.", UserWarning, stacklevel=3)


def float_draw_bounds(from_: int, to: int, dt, to_given: bool = True) -> tuple:
    """PyTorch's update_from / update_to for integers drawn into a floating dtype: an int
    that rounds (to nearest) past the bound once cast is moved in by the dtype's spacing
    there, so that the drawn values stay inside [from, to) after the cast (float16
    random_(0, 60000) never gives 60000; its to becomes 59968). ``to`` is left alone when
    not given (the [from, 2^digits] range)."""
    if not dt.is_floating_point:
        return from_, to
    digits = _FLOAT_DIGITS[dt.name]

    def cast(v: int) -> int:  # static_cast<scalar_t>(v), back to an int
        return int(np.asarray(float(v)).astype(dt.np))

    from_plus_1 = cast(from_ + 1)
    if from_plus_1 < from_:
        from_ = from_plus_1 + (1 << (abs(from_ + 1).bit_length() - 1 - digits + 1))
    if to_given:
        to_minus_1 = cast(to - 1)
        if to_minus_1 >= to:
            to = to_minus_1 - (1 << (abs(to - 1).bit_length() - 1 - digits + 1))
        if from_ >= to:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' "
                               f"casted to dtype, but got from={from_} >= to={to}")
    return from_, to


def _int64_word(value: int) -> int:
    """``value`` mod 2^64 as a signed 64-bit int (the two's complement bits)."""
    value %= 2 ** 64
    return value - 2 ** 64 if value >= 2 ** 63 else value


def random_integers(shape: tuple, from_: int, to: int, device) -> Tensor:
    """int64 integers uniform on [from, to) (to - from <= 2^64), every bit random. A span of
    at most 2^32 is floor(u span) of a float64 uniform u (53 random bits: a bias below
    2^-21); a wider one is hi 2^32 + lo of two 32-bit halves, hi uniform on [0, ceil(span /
    2^32)), with the part past span folded back by subtracting span (PyTorch also reduces
    a 64-bit word modulo the span). Sums wrap in int64 as two's complement, so from + r is
    right even where r >= 2^63."""
    span = to - from_
    if span <= 2 ** 32:
        u = rand(shape, dtype=dtypes.float64, device=device)
        return (u * float(span)).floor().to(dtypes.int64) + from_
    hi_n = -(-span // 2 ** 32)  # ceil(span / 2^32) <= 2^32
    u = rand(tuple(shape) + (2,), dtype=dtypes.float64, device=device)
    hi = (u[..., 0] * float(hi_n)).floor().to(dtypes.int64)
    lo = (u[..., 1] * 2.0 ** 32).floor().to(dtypes.int64)
    r = hi * 2 ** 32 + lo if hi_n <= 2 ** 31 else (hi - 2 ** 31) * 2 ** 32 + lo \
        + _int64_word(2 ** 63)  # (hi 2^32 wraps past 2^63: the same bits)
    span_hi, span_lo = divmod(span, 2 ** 32)
    past = (hi > span_hi) | ((hi == span_hi) & (lo >= span_lo))  # r >= span, unsigned
    from tgrad.ops import elementwise as ew
    r = ew.where(past, r + _int64_word(-span), r)
    return r + _int64_word(from_)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` means low = 0);
    int64 unless ``dtype`` says otherwise (a float dtype holds the integers, as PyTorch's).
    floor(low + u (high - low)) of float64 uniforms u in [0, 1), on the device's
    generator."""
    if pin_memory:
        check_pin_memory("randint", device)
    check_layout("randint", layout)
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high  # randint(high, size)
        pos = (None, 1)
    elif high is None:
        low, high = 0, low  # randint(high, size=size)
        pos = (None, 1)
    else:
        pos = (1, 2)
    if size is None:
        raise TypeError("randint() missing 1 required positional argument: 'size'")
    low = _int_arg("randint", "low", low, pos[0], allow_bool=False)
    high = _int_arg("randint", "high", high, pos[1], allow_bool=False)
    out_dt = dtypes.as_dtype(dtype or "int64")
    check_random_bounds("randint", low, high, out_dt)
    low, high = float_draw_bounds(low, high, out_dt)
    from tgrad.generator import drawing_from
    dev = as_device(device)
    with drawing_from(generator, dev, "randint"):
        out = random_integers(_shape(size, "randint"), low, high, dev).to(out_dt)
    if requires_grad:
        out.requires_grad_(True)
    return out


def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (int64), drawn on the host by the CPU generator that
    manual_seed seeds (or by ``generator``, which must then be a CPU tgrad.Generator),
    then copied to ``device``."""
    if pin_memory:
        check_pin_memory("randperm", device)
    from tgrad.generator import drawing_from
    check_layout("randperm", layout)
    n = _int_arg("randperm", "n", n, 1, allow_bool=False)
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    dt = dtypes.as_dtype(dtype or "int64")
    if dt is dtypes.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt.name in _RANDPERM_MAX:
        limit, text, kind = _RANDPERM_MAX[dt.name]
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {text} for {kind} type.")
    elif n:
        dtypes.check_value_fits("randperm", n - 1, dt)
    with drawing_from(generator, "cpu", "randperm"):
        perm = numpy_backend._rng.permutation(n)
    out = tensor(perm, dtype=dt, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def arange(start=None, end=None, step=1, dtype=None, device=None,
           requires_grad: bool = False, *, layout=None, pin_memory: bool = False) -> Tensor:
    """Values from start (default 0) to end (exclusive) by step; int64 for integer args.
    With dtype int64 the bounds and step are truncated to integers first (as PyTorch:
    ``arange(2.5, dtype=int64)`` is [0, 1]); with another integer dtype (as PyTorch) the
    length is ceil((end - start) / step) of the given numbers and the values are
    trunc(start) + i * trunc(step), wrapped to the dtype: ``arange(1.8, 0, -1.41,
    dtype=int32)`` is [1, 0], ``arange(2.0, -1, -0.4, dtype=int32)`` is eight 2s."""
    if type(start) is int and end is None and type(step) is int and step == 1 and \
            dtype is None and not requires_grad and layout is None and not pin_memory \
            and start >= 0:  # arange(n): the common case, without the checks below
        return _finish(np.arange(start, dtype=np.int64), device, False)
    if pin_memory:
        check_pin_memory("arange", device)
    check_layout("arange", layout)
    if end is None:
        if start is None:
            raise TypeError("arange() missing required argument 'end'")
        start, end = 0, start
    elif start is None:
        start = 0
    # a 0-d tensor or NumPy array is its number (an integer array's int: int64, not float)
    start, end, step = (v.item() if isinstance(v, Tensor) or (
        isinstance(v, np.ndarray) and v.ndim == 0) else v for v in (start, end, step))
    numbers = []
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (int, float, complex, np.number)):  # (bool is an int)
            raise TypeError(f"arange(): argument '{name}' must be Number, not "
                            f"{type(v).__name__}")
        if isinstance(v, (complex, np.complexfloating)):  # PyTorch reads it as a double
            if v.imag:
                raise RuntimeError(f"arange: value cannot be converted to type double "
                                   f"without overflow ({name} {v} has a nonzero imaginary "
                                   f"part)")
            v = float(v.real)
        numbers.append(v)
    start, end, step = numbers
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
        if dt is dtypes.bool_ or dt.is_complex:
            raise NotImplementedError(f"\"arange_cpu\" not implemented for "
                                      f"'{dtypes.SCALAR_TYPE_NAMES[dt]}'")
        dtypes.refuse_float8("arange_cpu", dt)
        if dt is dtypes.int64 and all(math.isfinite(v) for v in (start, end, step)):
            start, end, step = int(start), int(end), int(step)
    # PyTorch's checks: a NaN step is not > 0 or < 0 either; an infinite step is a valid
    # float step (ceil((end - start) / step) = 0 elements), not an integer one
    if not (step > 0 or step < 0):
        raise RuntimeError("arange: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"arange: unsupported range: {start} -> {end} (step {step}); the "
                           f"bounds must be finite")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError(f"arange: upper bound and lower bound inconsistent with step sign "
                           f"(start {start}, end {end}, step {step})")
    if dtype is not None and not dtypes.as_dtype(dtype).is_floating_point \
            and not math.isfinite(step):
        raise RuntimeError(f"arange: value {step} cannot be converted to type int64_t without "
                           f"overflow (an infinite step needs a floating dtype)")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dt = dtypes.int64 if is_int else dtypes.get_default_dtype()
    else:
        dt = dtypes.as_dtype(dtype)
    if not dt.is_floating_point and all(isinstance(v, (int, np.integer))
                                        for v in (start, end, step)):
        # exact ceil((end - start) / step): a float64 quotient drops the last element of
        # arange(0, 2**53 + 1, 2**52)
        start, end, step = int(start), int(end), int(step)
        n = max(0, -((start - end) // step))
    elif not dt.is_floating_point:  # float numbers, an integer dtype other than int64
        n = max(0, int(np.ceil((end - start) / step)))
        start, step = int(start), int(step)
    else:
        n = max(0, int(np.ceil((end - start) / step)))
    if n >= 2 ** 63:  # (PyTorch's text; NumPy's was "Maximum allowed size exceeded")
        raise RuntimeError(f"arange: invalid size, possible overflow? ({start} -> {end} in "
                           f"steps of {step} would be {n} elements)")
    host = (start + step * np.arange(n, dtype=np.float64 if dt.is_floating_point
                                     else np.int64)).astype(dt.np)
    return _finish(host, device, requires_grad)


def _bound_to(op: str, v, dt: DType) -> int:
    """PyTorch's checked conversion of a linspace/logspace bound to an integer dtype: a
    number past the dtype's range (a float is not truncated first), NaN or inf raises;
    else the value truncated toward zero. An unsigned dtype takes a negative integer down
    to -max, wrapped (two's complement, c10's ``overflows``): -5 -> 251 in uint8."""
    if isinstance(v, Tensor):
        v = v.item()
    info = np.iinfo(dt.np)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        ok = math.isfinite(v) and info.min <= v <= info.max
    else:
        v = int(v)
        ok = (-info.max if info.min == 0 else info.min) <= v <= info.max
    if not ok:
        raise RuntimeError(f"{op}: value {v} cannot be converted to type {dt.name} without "
                           f"overflow")
    return int(v) % (info.max + 1) if info.min == 0 else int(v)


def spaced_integers(op: str, start, end, steps: int, dt: DType,
                    base: float | None = None) -> np.ndarray:
    """linspace (``base`` None) or logspace into an integer dtype as PyTorch's CPU kernel
    computes it: start and end are converted to ``dt`` first (truncated), then with
    step = (end - start) / (steps - 1) in float64, element i < steps // 2 is
    start + step * i and the others end - step * (steps - 1 - i) (logspace: base to that
    power), truncated toward zero into ``dt`` (past its range: what the cast gives, as
    PyTorch's). One step is start itself (logspace: base ** start, start not truncated)."""
    if dt is dtypes.bool_:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for 'Bool'")
    if steps == 0:
        return np.empty(0, dt.np)
    if steps == 1:
        if base is None:
            return np.full(1, _bound_to(op, start, dt), dt.np)
        first = start.item() if isinstance(start, Tensor) else start
        with np.errstate(all="ignore"):
            value = float(np.power(float(base), float(first)))
        return np.full(1, _bound_to(op, value, dt), dt.np)
    lo, hi = _bound_to(op, start, dt), _bound_to(op, end, dt)
    step = (float(hi) - float(lo)) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    x = np.where(i < steps // 2, float(lo) + step * i, float(hi) - step * (steps - 1 - i))
    with np.errstate(all="ignore"):  # out of range: the cast's value, silently (PyTorch)
        if base is not None:
            x = np.power(float(base), x)
        return x.astype(dt.np)


def spaced_dtype(op: str, start, end, dtype) -> tuple[DType, bool]:
    """(the dtype of linspace/logspace, whether a bound is complex): PyTorch infers the
    default complex dtype from a complex bound (a number or tensor), else the default dtype;
    a given real dtype cannot take a complex bound."""
    for pos, (name, v) in enumerate((("start", start), ("end", end)), 1):
        require_tensor_or_number(op, v, name, pos, "Number or Tensor")
    cplx = any(v.dtype.is_complex if isinstance(v, Tensor)
               else isinstance(v, (complex, np.complexfloating)) for v in (start, end))
    if dtype is None:
        return (dtypes.get_default_complex_dtype() if cplx
                else dtypes.get_default_dtype()), cplx
    dt = dtypes.as_dtype(dtype)
    if cplx and not dt.is_complex:
        raise RuntimeError(f"torch.{op}(): inferred dtype "
                           f"{dtypes.get_default_complex_dtype().name} can't be safely cast to "
                           f"passed dtype {dt.name} (a complex start or end)")
    return dt, cplx


def linspace(start: float, end: float, steps: int, dtype=None, device=None,
             requires_grad: bool = False, *, layout=None, pin_memory: bool = False) -> Tensor:
    """``steps`` values evenly spaced from start to end (both included; complex bounds give
    the default complex dtype). An integer dtype converts start and end first, as PyTorch
    (see ``spaced_integers``)."""
    if pin_memory:
        check_pin_memory("linspace", device)
    check_layout("linspace", layout)
    dt, _ = spaced_dtype("linspace", start, end, dtype)
    steps = _int_arg("linspace", "steps", steps, 3, allow_bool=False)
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    if dt.is_complex:
        lo, hi = (complex(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
        return _finish(np.linspace(lo, hi, steps).astype(dt.np), device, requires_grad)
    if not dt.is_floating_point:
        return _finish(spaced_integers("linspace", start, end, steps, dt), device,
                       requires_grad)
    if dt in dtypes.FLOAT8_DTYPES:  # PyTorch fills 0 or 1 value (start) without a kernel;
        if steps > 1:  # it has no float8 linspace kernel
            dtypes.refuse_float8("linspace_cpu", dt)
        return _finish(dtypes.to_float8(np.linspace(start, end, steps), dt.np), device,
                       requires_grad)
    return _finish(_spaced_floats(start, end, steps, dt.np), device, requires_grad)


def _spaced_floats(start, end, steps: int, np_dtype) -> np.ndarray:
    """linspace into a floating dtype as PyTorch's CPU kernel computes it (scalar path), in
    that dtype's arithmetic: start and end rounded to it, step = (end - start) / (steps - 1),
    element i < steps // 2 is start + step * i and the others end - step * (steps - 1 - i).
    So a NaN or infinite bound gives NaN where PyTorch does (``linspace(0, inf, 3)`` is all
    NaN: 0 + inf * 0 and inf - inf), and the values match PyTorch's bit for bit (checked on
    an AVX512 build for float16, bfloat16, float32 and float64; another build's vector loop
    may differ in the last place)."""
    lo, hi = (np_dtype.type(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
    if steps <= 1:  # PyTorch fills start
        return np.full(steps, lo, np_dtype)
    # float32: PyTorch's build fuses start + step * i into one FMA (a single rounding),
    # which float64 reproduces: the float32 product is exact there
    work = np.dtype(np.float64) if np_dtype == np.float32 else np_dtype
    with np.errstate(all="ignore"):
        step = (hi - lo) / np_dtype.type(steps - 1)
        lo, hi, step = work.type(lo), work.type(hi), work.type(step)
        i = np.arange(steps).astype(work)
        back = np.arange(steps - 1, -1, -1).astype(work)  # steps - 1 - i
        out = np.where(np.arange(steps) < steps // 2, lo + step * i, hi - step * back)
        return out.astype(np_dtype)


def eye(n: int, m: int | None = None, dtype=None, device=None,
        requires_grad: bool = False, *, layout=None, pin_memory: bool = False) -> Tensor:
    if pin_memory:
        check_pin_memory("eye", device)
    check_layout("eye", layout)
    n = _int_arg("eye", "n", n, 1, allow_bool=False)  # (a str leaked a comparison error)
    m = None if m is None else _int_arg("eye", "m", m, 2, allow_bool=False)
    dt = _dtype_or_default(dtype)
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye: n and m must be >= 0, got n={n}, m={m}")
    return _finish(np.eye(n, m, dtype=dt.np), device, requires_grad)


# Tensor.new_*: a new tensor with this one's dtype and device unless given (PyTorch's
# factory methods; the data is not shared and nothing is recorded)
def _new_size(op: str, args: tuple, size) -> tuple:
    """The size of a new_* factory, given as varargs (``new_ones(2, 3)``, ``new_ones((2,
    3))``) or as the keyword ``size=`` (a tuple or list), required: PyTorch's TypeErrors."""
    if size is None:
        if not args:
            raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
        return _shape(args, op)
    if args:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not "
                        f"{type(size).__name__}")
    return _shape((size,), op)


def _new_factory(make):
    op = "new_" + make.__name__

    def method(self: Tensor, *args, size=None, dtype=None, device=None,
               requires_grad: bool = False, layout=None) -> Tensor:
        dt, dev = _like(self, dtype, device, op, layout)
        return make(_new_size(op, args, size), dtype=dt, device=dev,
                    requires_grad=requires_grad)
    method.__name__ = method.__qualname__ = op
    method.__doc__ = (f"A new tensor as ``tgrad.{make.__name__}(size)`` with self's dtype and "
                      f"device unless given; ``size`` as varargs or a tuple (also ``size=``).")
    return method


Tensor.new_zeros = _new_factory(zeros)
Tensor.new_ones = _new_factory(ones)
Tensor.new_empty = _new_factory(empty)


def empty_strided(size, stride, *, dtype=None, device=None,
                  requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of shape ``size`` with element strides ``stride`` over new
    memory just large enough for them (not a view)."""
    if pin_memory:
        check_pin_memory("empty_strided", device)
    check_layout("empty_strided", layout)
    # (int() truncated a float size or stride)
    size = int_tuple("empty_strided", "size", size, 1)
    stride = int_tuple("empty_strided", "stride", stride, 2)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided: negative sizes or strides are not allowed, got "
                           f"size {list(size)}, stride {list(stride)}")
    n = 1 + sum((a - 1) * b for a, b in zip(size, stride)) if math.prod(size) else 0
    buf = empty((n,), dtype=dtype, device=device)
    be = get_backend(buf.device)
    t = Tensor(be.as_strided(buf._data, size, stride), buf._storage, buf.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _new_empty_strided(self: Tensor, size, stride, *, dtype=None, device=None,
                       requires_grad: bool = False, layout=None) -> Tensor:
    dt, dev = _like(self, dtype, device, "new_empty_strided", layout)
    return empty_strided(size, stride, dtype=dt, device=dev, requires_grad=requires_grad)


Tensor.new_empty_strided = _new_empty_strided


def _new_full(self: Tensor, size, fill_value, *, dtype=None, device=None,
              requires_grad: bool = False, layout=None) -> Tensor:
    dt, dev = _like(self, dtype, device, "new_full", layout)
    if not isinstance(size, (tuple, list)):  # PyTorch's: no bare int
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    return full(_shape((size,), "new_full"), fill_value, dtype=dt, device=dev,
                requires_grad=requires_grad)


def _new_tensor(self: Tensor, data, *, dtype=None, device=None,
                requires_grad: bool = False, layout=None) -> Tensor:
    dt, dev = _like(self, dtype, device, "new_tensor", layout)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        data = data.detach().cpu().numpy()
    return tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)


Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor
