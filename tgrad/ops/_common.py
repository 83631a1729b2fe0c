"""Shared helpers of the op definitions: wrapping backend arrays, devices, dims, registry."""

from __future__ import annotations

from tgrad.autograd.grad_mode import STATE
from tgrad.backends import _BACKENDS, get_backend
from tgrad.tensor import Tensor, _wrap_dim

# name -> Function subclass of every built-in op (the profiler and `tgrad info` read it).
OPS: dict = {}


def register_op(cls):
    OPS[cls.name] = cls
    return cls


def require_tensor(op: str, value, name: str = "input", position: int | None = 1) -> None:
    """PyTorch's TypeError when an argument that must be a Tensor is not one."""
    if not isinstance(value, Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{op}(): argument '{name}'{where} must be Tensor, not "
                        f"{type(value).__name__}")


def tensor_method(*names: str):
    """Attach the decorated function to Tensor under ``names``."""
    def deco(fn):
        for n in names:
            setattr(Tensor, n, fn)
        return fn
    return deco


def backend_of(t: Tensor):
    try:
        return _BACKENDS[t.device.type]  # the hot path: one dict lookup
    except KeyError:
        return get_backend(t.device)  # raises the clear error


def wrap(arr, device) -> Tensor:
    """A new tensor owning the backend array ``arr``."""
    return Tensor(arr, None, device)


def make_view(x: Tensor, arr) -> Tensor:
    """A tensor viewing ``x``'s storage through the backend view ``arr``."""
    out = Tensor(arr, x._storage, x.device)
    out._base = x if x._base is None else x._base
    out._grad_fn_version = x._storage.version
    return out


def view_apply(cls, x: Tensor, *args) -> Tensor:
    """Run a view op and record how to replay it on the base (for in-place through views)."""
    out = cls.apply(x, *args)
    if STATE.enabled and (x._base is None or x._view_chain is not None):
        out._view_chain = (x._view_chain or ()) + ((cls.apply, args),)
    return out


def same_device(op: str, *tensors: Tensor):
    """The common device of ``tensors``; raises PyTorch's message when they differ."""
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            if dev is None:
                dev = t.device
            elif t.device != dev:
                raise RuntimeError(f"{op}: expected all tensors to be on the same device, but "
                                   f"found at least two devices, {dev} and {t.device}!")
    return dev


def normalize_dims(op: str, dim, ndim: int) -> tuple | None:
    """``dim`` (None, int or sequence, negatives allowed) as a sorted tuple, or None for all."""
    if dim is None:
        return None
    if not isinstance(dim, (tuple, list)):
        dim = (dim,)  # an int (or NumPy integer, or 0-d integer tensor)
    out = tuple(sorted({_wrap_dim(d, ndim, op) for d in dim}))
    if len(out) != len(tuple(dim)):
        raise RuntimeError(f"{op}: dim {tuple(dim)} appears multiple times in the list of dims")
    if ndim == 0:
        return None
    return out


def check_float(op: str, t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point tensor, got {t.dtype}")


def shape_str(shape) -> str:
    return str(list(shape))


def widen_halves(*ts) -> tuple:
    """(ts with float tensors widened to float32, half dtype to round the result to) when
    the tensors' promoted dtype is float16/bfloat16, else (ts, None): composite ops compute
    halves in float32 and round once at the end, as fused kernels do."""
    from tgrad import dtypes
    if not any(isinstance(t, Tensor) and t.dtype in (dtypes.float16, dtypes.bfloat16)
               for t in ts):
        return ts, None  # the common case, decided without promoting
    rt = dtypes.result_type(*[t for t in ts if isinstance(t, Tensor)])
    if rt not in (dtypes.float16, dtypes.bfloat16):
        return ts, None
    return tuple(t.float() if isinstance(t, Tensor) and t.dtype.is_floating_point else t
                 for t in ts), rt


def rounded_to(t: Tensor, half) -> Tensor:
    """``t`` rounded to ``half`` (widen_halves' second result; None: unchanged)."""
    return t if half is None else t.to(half)
