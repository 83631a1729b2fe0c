"""Shared helpers of the op definitions: wrapping backend arrays, devices, dims, registry."""

from __future__ import annotations

import functools
import importlib
import numbers
import operator
import sys

import numpy as np

from tgrad.autograd.grad_mode import STATE
from tgrad.backends import _BACKENDS, get_backend
from tgrad.tensor import Tensor, _wrap_dim

_tensor_module = importlib.import_module("tgrad.tensor")  # (tgrad.tensor is also a function)

# name -> Function subclass of every built-in op (the profiler and `tgrad info` read it).
OPS: dict = {}


def register_op(cls):
    OPS[cls.name] = cls
    return cls


def user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel of the first caller outside tgrad, for a warning
    issued by the function calling this (PyTorch's warnings point at the user's line; a
    fixed stacklevel is off by the frames of decorators such as autocast_policy)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "tgrad":
        frame, level = frame.f_back, level + 1
    return level


def sizes_keyword(op: str, name: str, args: tuple, given) -> tuple:
    """Sizes passed positionally (ints, or one sequence) or as PyTorch's keyword ``name``
    (``given``: a sequence, or None), returned in the positional form; both at once, or a
    keyword that is not a sequence, is PyTorch's TypeError."""
    if given is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    if not isinstance(given, (tuple, list)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                        f"{type(given).__name__}")
    return (tuple(given),)


def promoted_float_dtype(op: str, input: Tensor, other: Tensor):  # noqa: A002
    """The dtype two tensors promote to (PyTorch's rules), which must be floating: two
    integer / bool tensors raise PyTorch's NotImplementedError ("<op>_cpu" not
    implemented for 'Long')."""
    from tgrad import dtypes
    require_tensor(op, input)
    require_tensor(op, other, "other", 2)
    dt = dtypes.result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(
            f"{op}: \"{op}_cpu\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dt]}': "
            f"expected floating point inputs (or one), got {input.dtype} and {other.dtype}; "
            f"convert them with .float() first")
    return dt


def _index_or_none(v):
    """``v`` as a Python int (an int, a NumPy integer, a 0-d integer tensor), or None for
    anything else (a bool too: PyTorch's parser refuses it where it wants ints)."""
    if isinstance(v, (bool, np.bool_)):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def int_tuple(op: str, name: str, value, position: int | None = None) -> tuple:
    """``value`` (an int, or a sequence of ints: Python or NumPy integers, one-element
    integer tensors) as a tuple of ints, or PyTorch's TypeError naming the op and the
    argument: '... must be tuple of ints, not float' / '..., but found element of type
    float at pos 0'. A bool is refused as PyTorch's parser does."""
    if type(value) is tuple:  # the common case: a tuple of Python ints, returned as is
        for v in value:
            if type(v) is not int:
                break
        else:
            return value
    where = f" (position {position})" if position else ""
    if isinstance(value, Tensor) and value.ndim == 1:  # a 1-D integer tensor of sizes
        value = value.tolist()
    if not isinstance(value, (tuple, list)):
        i = _index_or_none(value)
        if i is None:
            raise TypeError(f"{op}(): argument '{name}'{where} must be tuple of ints, not "
                            f"{type(value).__name__}")
        return (i,)
    out = []
    for pos, v in enumerate(value):
        i = _index_or_none(v)
        if i is None:
            raise TypeError(f"{op}(): argument '{name}'{where} must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {pos}")
        out.append(i)
    return tuple(out)


def require_tensor(op: str, value, name: str = "input", position: int | None = 1) -> None:
    """PyTorch's TypeError when an argument that must be a Tensor is not one."""
    if not isinstance(value, Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{op}(): argument '{name}'{where} must be Tensor, not "
                        f"{type(value).__name__}")


def require_tensor_or_number(op: str, value, name: str, position: int,
                             what: str = "Tensor or Number") -> None:
    """PyTorch's TypeError when an argument that must be a Tensor or a number is neither
    (``what``: PyTorch's wording for the op, "Number or Tensor" for linspace / logspace)."""
    if not isinstance(value, (Tensor, numbers.Number, np.generic)):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be {what}, "
                        f"not {type(value).__name__}")


def tensors_only(name: str, fn, other_name: str = "other"):
    """Public torch.<name> and Tensor.<name> over ``fn`` (input, other) that, as PyTorch's,
    take no number operand (tgrad's own formulas call ``fn`` itself with numbers): the
    function and the method, raising PyTorch's TypeError naming the argument (``other``
    is position 2 of the function, 1 of the method)."""
    @functools.wraps(fn)
    def function(input, other):  # noqa: A002
        require_tensor(name, input, "input", 1)
        require_tensor(name, other, other_name, 2)
        return fn(input, other)

    @functools.wraps(fn)
    def method(self, other):
        require_tensor(name, other, other_name, 1)
        return fn(self, other)
    return function, method


def tensor_first(name: str, fn):
    """torch.<name> over ``fn`` (input, other) taking a number only as ``other`` (its
    overloads: (Tensor, Tensor) and (Tensor, Number)), with PyTorch's TypeError for a
    number ``input``."""
    @functools.wraps(fn)
    def function(input, other):  # noqa: A002
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{name}() received an invalid combination of arguments - got "
                f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
                f" * (Tensor input, Tensor other, *, Tensor out = None)\n"
                f" * (Tensor input, Number other, *, Tensor out = None)\n")
        return fn(input, other)
    return function


def tensor_method(*names: str):
    """Attach the decorated function to Tensor under ``names``."""
    def deco(fn):
        for n in names:
            setattr(Tensor, n, fn)
        return fn
    return deco


def route_sparse(name: str, exc: BaseException, *operands, **kwargs):
    """The one sparse COO route of the public functions, called only inside their
    ``except RuntimeError as exc:`` (NotImplementedError included: the sparse placeholder
    raises it for every strided op), so the dense path pays nothing (a ``try:`` is free):

        try:
            <strided body>
        except RuntimeError as e:
            return route_sparse("sin", e, input)

    No operand sparse: ``exc`` is re-raised (a dense error stays the dense error). One
    operand: its own method ``name`` (tgrad.sparse; ``kwargs`` passed on); two: the binary
    route ``tgrad.sparse.binary(name, input, other, **kwargs)``. A sparse error raised there
    is raised without the strided error as its context."""
    if not any(getattr(x, "_sparse", False) for x in operands):
        raise exc
    try:
        if len(operands) == 1:
            return getattr(operands[0], name)(**kwargs)
        from tgrad.sparse import binary
        return binary(name, *operands, **kwargs)
    except Exception as err:
        raise err from None  # (the sparse op's own error, not chained to the strided one)


def backend_of(t: Tensor):
    try:
        return _BACKENDS[t._device.type]  # the hot path: one dict lookup
    except KeyError:
        return get_backend(t.device)  # raises the clear error


def host_reads_ok(t: Tensor) -> bool:
    """Whether a data-dependent shortcut (``if bool(mask.any()): ...``) may read ``t``'s
    values on the host: always on the CPU; on cuda unless tgrad's stream is being captured
    into a CUDA graph, where a host read would end the capture with an error (the op then
    takes its path that reads nothing)."""
    if t.device.type == "cpu":
        return True
    from tgrad.cuda import is_current_stream_capturing
    return not is_current_stream_capturing()


def wrap(arr, device) -> Tensor:
    """A new tensor owning the backend array ``arr``."""
    return Tensor(arr, None, device)


def make_view(x: Tensor, arr) -> Tensor:
    """A tensor viewing ``x``'s storage through the backend view ``arr``."""
    out = Tensor(arr, x._storage, x._device)
    out._base = x if x._base is None else x._base
    out._grad_fn_version = x._storage.version
    return out


def fresh(out: Tensor) -> Tensor:
    """``out``, a view of a temporary the op made itself (a reshape, narrow, permute... of
    an intermediate result), as the new tensor PyTorch's op returns: its ``_base`` dropped,
    so ``_is_view()`` is False and an in-place op on it is an ordinary one (no write
    through a view: no CopySlices onto the unreachable temporary). Its grad_fn (the view
    op's node) and its memory (the temporary's, nobody else's) stay. Never for a view of
    an input: that shares the caller's memory and must be cloned."""
    if out._base is not None:
        out._base = None
        out._view_chain = None
        out._multi_output_view = False
        out._inference_mode_view = False
    return out


_BOUND_APPLY: dict = {}  # view op class -> cls.apply, bound once (not one object per view)


def bound_apply(cls):
    """``cls.apply`` as one shared bound method: a view's replay chain holds it, and a
    fresh one per recorded view was one more object for the garbage collector to track."""
    fn = _BOUND_APPLY.get(cls)
    if fn is None:
        fn = _BOUND_APPLY[cls] = cls.apply
    return fn


def view_apply(cls, x: Tensor, *args) -> Tensor:
    """Run a view op and record how to replay it on the base (for in-place through views)."""
    out = cls.apply(x, *args)
    if x._custom_function_view:  # a view of a custom Function's view output is one too
        out._custom_function_view = True
    if STATE.enabled and (x._base is None or x._view_chain is not None):
        out._view_chain = (x._view_chain or ()) + ((bound_apply(cls), args),)
        if x._multi_output_view:  # a view of a split's output is one too (PyTorch)
            out._multi_output_view = True
    elif x._inference_mode_view or (_tensor_module._INFERENCE_BLOCKS and STATE.inference):
        # made in inference mode (or a view of such a view): an in-place through it outside
        # with grad mode on raises PyTorch's error for it (ops/inplace.py)
        out._inference_mode_view = True
    return out


def same_device(op: str, *tensors: Tensor):
    """The common device of ``tensors``; raises PyTorch's message when they differ."""
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            d = t._device
            if dev is None:
                dev = d
            elif d is not dev and d != dev:  # (device objects are mostly shared: `is` first)
                raise RuntimeError(f"{op}: expected all tensors to be on the same device, but "
                                   f"found at least two devices, {dev} and {d}!")
    return dev


def check_operands(op: str, *operands) -> None:
    """The device and broadcast checks of an elementwise composite, under its own name
    (its building blocks would name themselves: copysign's "where: condition ...");
    number operands are skipped."""
    tensors = [t for t in operands if isinstance(t, Tensor)]
    if len(tensors) > 1:
        same_device(op, *tensors)
        if any(t.shape != tensors[0].shape for t in tensors):  # (equal shapes: nothing to do)
            broadcast_or_raise(op, *(t.shape for t in tensors))


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
    halves in float32 and round once at the end, as fused kernels do. A tensor of another
    dtype (integer, bool, a 0-d float32/float64) is cast to the half dtype first, as PyTorch's
    promotion casts its operands (an int64 70000 is inf in float16, 65519 is 65504)."""
    from tgrad import dtypes
    if not any(isinstance(t, Tensor) and t.dtype in (dtypes.float16, dtypes.bfloat16)
               for t in ts):
        return ts, None  # the common case, decided without promoting
    rt = dtypes.result_type(*[t for t in ts if isinstance(t, Tensor)])
    if rt not in (dtypes.float16, dtypes.bfloat16):
        return ts, None
    return tuple((t if t.dtype is rt else t.to(rt)).float()
                 if isinstance(t, Tensor) else t for t in ts), rt


def rounded_to(t: Tensor, half) -> Tensor:
    """``t`` rounded to ``half`` (widen_halves' second result; None: unchanged)."""
    return t if half is None else t.to(half)


def float_input(op: str, x) -> tuple:
    """(x as a floating tensor, the half dtype to round the result to or None): an integer
    or bool x in the default float dtype (as PyTorch promotes for float ops), a
    float16/bfloat16 x widened to float32 (``widen_halves``)."""
    from tgrad import dtypes
    require_tensor(op, x)
    if x.dtype.is_complex:  # PyTorch's error (the cast below would drop the imaginary part)
        raise dtypes.kernel_not_implemented(f"{op}_cpu", x.dtype, f": {op} takes real tensors")
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.get_default_dtype())
    (x,), half = widen_halves(x)
    return x, half


def apply_float_unary(cls, op: str, input: Tensor, *args) -> Tensor:  # noqa: A002
    """``cls.apply(x, *args)`` on ``float_input``'s x, rounded back to a half input's dtype:
    the wrapper of an elementwise Function composed of float ops."""
    x, half = float_input(op, input)
    return rounded_to(cls.apply(x, *args), half)


def broadcast_or_raise(op: str | None, *shapes) -> tuple:
    """The broadcast of ``shapes``, or PyTorch's "The size of tensor a (m) must match the
    size of tensor b (n) at non-singleton dimension d" (prefixed by ``op`` when given)."""
    out: tuple = ()
    for shape in shapes:
        shape = tuple(shape)
        if shape == out:
            continue
        n = max(len(out), len(shape))
        padded_out = (1,) * (n - len(out)) + out
        padded = (1,) * (n - len(shape)) + shape
        dims = []
        for d in range(n - 1, -1, -1):  # from the last dim: the first mismatch reported there
            a, b = padded_out[d], padded[d]
            if a != b and a != 1 and b != 1:
                prefix = f"{op}: " if op else ""
                raise RuntimeError(f"{prefix}The size of tensor a ({a}) must match the size of "
                                   f"tensor b ({b}) at non-singleton dimension {d}")
            dims.append(a if b == 1 else b)
        out = tuple(dims[::-1])
    return out
