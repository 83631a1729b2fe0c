"""PyTorch's top-level creation and utility names that tgrad had under other forms:

- ``asarray(obj, *, dtype, device, copy, requires_grad)``: a Tensor is returned as is (or
  converted with ``.to``, in its graph; ``copy=True`` clones); a NumPy array (or any object
  with the buffer / array protocol) on the CPU with a matching dtype shares its memory
  unless ``copy=True``; other data (lists, scalars) is copied. ``copy=False`` where a copy
  is needed is PyTorch's ValueError;
- ``frombuffer(buffer, *, dtype, count=-1, offset=0)``: a 1-D CPU tensor sharing the
  buffer's memory;
- ``scalar_tensor(s)``: a 0-d tensor of the default dtype (also for an int ``s``);
- ``range(start, end, step=1)``: deprecated (warns, PyTorch's text) and end-inclusive:
  floor((end - start) / step) + 1 values of the default dtype;
- ``split_with_sizes`` and the ``unsafe_split`` / ``unsafe_chunk`` /
  ``unsafe_split_with_sizes`` forms (the same views: tgrad has no unchecked variants);
- the ``*_copy`` forms of the view ops (``view_copy``, ``permute_copy``, ``t_copy``,
  ``view_as_real_copy``, ``view_as_complex_copy``, ``split_with_sizes_copy``, ...): the
  view op then ``clone()``, so a contiguous tensor in the graph (d input = the view op's
  backward of g); the split forms (``split_copy``, ``split_with_sizes_copy``,
  ``unbind_copy``) take PyTorch's ``out=`` list (one tensor per part, each written as
  ``out=`` writes: resized, exact dtype; the call returns None, as PyTorch's; outside
  the graph);
- ``poisson(rates, generator)`` (zero gradient for ``rates``, as PyTorch's) and
  ``binomial(count, prob, generator)`` (no gradient): tgrad.distributions' samplers;
- ``typename(obj)``, ``detach(input)``, ``vmap`` (tgrad.func.vmap);
- ``cond(pred, true_fn, false_fn, operands)`` and ``while_loop(cond_fn, body_fn,
  carried_inputs)``: PyTorch's structured control flow, run eagerly (the branch taken, or
  the loop, is recorded like any Python code, so gradients flow through it);
- ``compile(model, ...)``: tgrad has no compiler; the model (or function) is returned
  unchanged.
"""

from __future__ import annotations

import builtins
import math
import numbers
import warnings

import numpy as np

from tgrad import dtypes
from tgrad._layout import check_layout
from tgrad.autograd.function import Function
from tgrad.ops._common import int_tuple, require_tensor
from tgrad.tensor import Tensor

__all__ = ["asarray", "frombuffer", "scalar_tensor", "range", "split_with_sizes",
           "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes", "view_copy",
           "permute_copy", "t_copy", "transpose_copy", "squeeze_copy", "unsqueeze_copy",
           "expand_copy", "diagonal_copy", "select_copy", "slice_copy", "split_copy",
           "unbind_copy", "unfold_copy", "detach_copy", "alias_copy", "as_strided_copy",
           "view_as_real_copy", "view_as_complex_copy", "split_with_sizes_copy",
           "poisson", "binomial", "typename", "detach", "vmap", "cond", "while_loop",
           "compile"]


# ------------------------------------------------------------------ creation
def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor, sharing memory with it when possible (see the module doc). A
    tensor ``obj`` keeps its graph unless ``requires_grad=False`` is given (then a detached
    alias, as PyTorch's result does not require grad)."""
    from tgrad.device import as_device
    from tgrad.ops.creation import check_numpy_array, from_numpy, tensor
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(obj, Tensor):
        same = (dt is None or dt is obj.dtype) and (device is None
                                                    or as_device(device) == obj.device)
        if not same and copy is False:
            what = (f"dtype '{obj.dtype}' into dtype '{dt}'" if dt not in (None, obj.dtype)
                    else f"device '{obj.device}' into device '{as_device(device)}'")
            raise ValueError(f"asarray: can't alias tensor with {what} (copy=False)")
        out = obj if same else obj.to(dtype=dt or obj.dtype, device=device or obj.device)
        if copy and out is obj:
            out = obj.clone()
        if requires_grad is False and out.requires_grad:
            return out.detach()
        return out.requires_grad_() if requires_grad else out
    array = None
    if isinstance(obj, np.ndarray):
        array = obj
    elif isinstance(obj, np.generic) and copy is False:  # no memory of its own to share
        raise RuntimeError("asarray: can't alias NumPy scalars. Either remove copy=False or "
                           "transform it in a ndarray.")
    elif hasattr(obj, "__array__") or isinstance(obj, (bytes, bytearray, memoryview)):
        array = np.asarray(obj)
    if array is not None:
        check_numpy_array("asarray", array)
        shares = (copy is not True and (device is None or as_device(device).type == "cpu")
                  and array.dtype.kind in "biufc"
                  and (dt is None or dtypes.as_dtype(array.dtype) is dt))
        if shares:
            try:
                out = from_numpy(array)
            except (TypeError, ValueError):
                out = None
            if out is not None:
                return out.requires_grad_() if requires_grad else out
        if copy is False:
            raise ValueError(f"asarray: can't alias NumPy array of dtype {array.dtype} into "
                             f"dtype {dt} on device {device} (copy=False)")
        return tensor(np.array(array), dtype=dt, device=device,
                      requires_grad=bool(requires_grad))
    if copy is False:
        raise ValueError("asarray: can't alias arbitrary sequence into a tensor (copy=False); "
                         "pass a NumPy array or a Tensor to share memory")
    return tensor(obj, dtype=dt, device=device, requires_grad=bool(requires_grad))


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor over ``count`` items of ``buffer`` from byte ``offset`` (all that
    remain for count=-1), sharing its memory."""
    from tgrad.ops.creation import from_numpy
    dt = dtypes.as_dtype(dtype)
    length = memoryview(buffer).nbytes
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    item = dt.np.itemsize
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    array = np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset)
    out = from_numpy(array)
    return out.requires_grad_() if requires_grad else out


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s`` (a 0-d tensor counts as its number), of the
    default dtype unless ``dtype`` is given. PyTorch's errors: TypeError for a non-number,
    RuntimeError for a complex ``s`` with an imaginary part into a real dtype (not bool)."""
    check_layout("scalar_tensor", layout)
    from tgrad.ops.creation import tensor
    if isinstance(s, Tensor) and s.ndim == 0:
        s = s.item()
    if not isinstance(s, numbers.Number):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(s, numbers.Complex) and not isinstance(s, numbers.Real) and \
            not dt.is_complex:
        if dt is dtypes.bool_:
            s = s != 0
        elif s.imag != 0:
            raise RuntimeError(f"scalar_tensor(): value {s} cannot be converted to type "
                               f"{dt.name} without overflow; pass a complex dtype")
        else:
            s = s.real
    return tensor(s, dtype=dt, device=device, requires_grad=requires_grad)


def range(start, end, step=1, *, dtype=None, device=None,  # noqa: A001
          requires_grad: bool = False, pin_memory: bool = False, layout=None) -> Tensor:
    """start, start + step, ... up to and including ``end`` (deprecated: use arange)."""
    check_layout("range", layout)
    from tgrad.ops.creation import tensor
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if not dt.is_floating_point:  # PyTorch computes in the output dtype: ints truncate
        start, end, step = builtins.int(start), builtins.int(end), builtins.int(step)
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(f"range: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    n = math.floor((end - start) / step) + 1
    values = start + step * np.arange(n, dtype=np.float64)
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)


# ------------------------------------------------------------------ split forms
def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:  # noqa: A002
    """Views of ``input`` along ``dim`` with the given sizes (which must sum to its size)."""
    require_tensor("split_with_sizes", input)
    return input.split_with_sizes(split_sizes, dim)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:  # noqa: A002
    require_tensor("unsafe_split", input)
    return input.split(split_size, dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    require_tensor("unsafe_chunk", input)
    return input.chunk(chunks, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:  # noqa: A002
    require_tensor("unsafe_split_with_sizes", input)
    return input.split_with_sizes(split_sizes, dim)


for _name in ("unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes"):
    setattr(Tensor, _name, globals()[_name])


# ------------------------------------------------------------------ *_copy forms
def _copy(op: str, view, out_name: str | None = None):
    """``op``: ``view`` then clone; ``out_name`` (a split form): PyTorch's ``out=`` list,
    named ``out_name`` in its count error."""
    def fn(input: Tensor, *args, **kwargs):  # noqa: A002
        require_tensor(op, input)
        dest = kwargs.pop("out", None) if out_name else None
        if dest is not None:
            return _split_out(out_name, view, input, args, kwargs, dest)
        out = view(input, *args, **kwargs)
        if isinstance(out, tuple):
            return tuple(o.clone() for o in out)
        return out.clone()
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"A contiguous copy of {op[:-5]}'s view (in the graph)."
    return fn


def _split_out(name: str, view, input: Tensor, args, kwargs, dest) -> None:  # noqa: A002
    """The parts of ``view(input, ...)`` written into the tensors of ``dest`` (out=)."""
    from tgrad._out import _store
    from tgrad.autograd.grad_mode import no_grad
    with no_grad():
        parts = view(input, *args, **kwargs)
        dest = list(dest) if isinstance(dest, (list, tuple)) else [dest]
        if len(dest) != len(parts):
            raise RuntimeError(f"{name} expected an out= argument of size {len(parts)}, got "
                               f"size {len(dest)}")
        for o, part in zip(dest, parts):
            _store(name, o, part, exact_dtype=True)
    return None


def _slice(x: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    index = [builtins.slice(None)] * x.ndim
    index[dim] = builtins.slice(start, end, step)
    return x[tuple(index)]


def _view_as_real(x: Tensor) -> Tensor:
    from tgrad.ops.complex_ops import view_as_real
    return view_as_real(x)


def _view_as_complex(x: Tensor) -> Tensor:
    from tgrad.ops.complex_ops import view_as_complex
    return view_as_complex(x)


def _expand(x: Tensor, size, *, implicit: bool = False) -> Tensor:
    return x.expand(int_tuple("expand_copy", "size", size, 2))  # (a float size truncated)


view_copy = _copy("view_copy", lambda x, *a, **k: x.view(*a, **k))
permute_copy = _copy("permute_copy", lambda x, dims: x.permute(*dims))
t_copy = _copy("t_copy", lambda x: x.t())
transpose_copy = _copy("transpose_copy", lambda x, dim0, dim1: x.transpose(dim0, dim1))
squeeze_copy = _copy("squeeze_copy", lambda x, *a, **k: x.squeeze(*a, **k))  # (None refused)
unsqueeze_copy = _copy("unsqueeze_copy", lambda x, dim: x.unsqueeze(dim))
expand_copy = _copy("expand_copy", _expand)
diagonal_copy = _copy("diagonal_copy", lambda x, offset=0, dim1=0, dim2=1:
                      x.diagonal(offset, dim1, dim2))
select_copy = _copy("select_copy", lambda x, dim, index: x.select(dim, index))
slice_copy = _copy("slice_copy", _slice)
split_copy = _copy("split_copy", lambda x, split_size, dim=0: x.split(split_size, dim),
                   "split_copy_Tensor_out()")
split_with_sizes_copy = _copy("split_with_sizes_copy", lambda x, split_sizes, dim=0:
                              x.split_with_sizes(split_sizes, dim), "split_with_sizes_copy_out")
unbind_copy = _copy("unbind_copy", lambda x, dim=0: x.unbind(dim), "unbind_copy_int_out")
unfold_copy = _copy("unfold_copy", lambda x, dimension, size, step:
                    x.unfold(dimension, size, step))
view_as_real_copy = _copy("view_as_real_copy", _view_as_real)
view_as_complex_copy = _copy("view_as_complex_copy", _view_as_complex)
alias_copy = _copy("alias_copy", lambda x: x)
as_strided_copy = _copy("as_strided_copy", lambda x, size, stride, storage_offset=None:
                        x.as_strided(size, stride, storage_offset))


def detach_copy(input: Tensor) -> Tensor:  # noqa: A002
    """A contiguous copy of ``input`` outside the graph."""
    require_tensor("detach_copy", input)
    return input.detach().clone()


def detach(input: Tensor) -> Tensor:  # noqa: A002
    """input.detach(): the same data, outside the graph."""
    require_tensor("detach", input)
    return input.detach()


# ------------------------------------------------------------------ sampling
class _ZeroGrad(Function):
    """y = a sample drawn from x's parameters;  dx = 0 (PyTorch's PoissonBackward0)."""

    node_name = "PoissonBackward0"

    @staticmethod
    def forward(ctx, x, sample):
        return sample

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros_like
        return zeros_like(g), None


def _float_param(op: str, name: str, t, position: int) -> None:
    require_tensor(op, t, name, position)
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: \"{op}_cpu\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[t.dtype]}': {name} must be a "
                                  f"floating tensor (got {t.dtype}); convert it with .float()")


def poisson(input: Tensor, generator=None) -> Tensor:  # noqa: A002
    """One Poisson(input[i]) draw per element, of input's dtype (rates must be >= 0)."""
    from tgrad.autograd.grad_mode import no_grad
    from tgrad.distributions.counts import _poisson_draw
    from tgrad.generator import drawing_from
    _float_param("poisson", "input", input, 1)
    with no_grad():
        rate = input.detach().to(dtypes.float64)
        if bool((rate < 0).any()) or bool(rate.isnan().any()):
            raise RuntimeError("poisson: invalid Poisson rate, expected rate to be "
                               "non-negative")
        with drawing_from(generator, input.device, "poisson"):
            sample = _poisson_draw(rate).to(input.dtype)
    return _ZeroGrad.apply(input, sample)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """One Binomial(count[i], prob[i]) draw per element (count, prob broadcast; float), not
    differentiable."""
    from tgrad.autograd.grad_mode import no_grad
    from tgrad.distributions.counts import _binomial_draw
    from tgrad.generator import drawing_from
    for name, t, pos in (("count", count, 1), ("prob", prob, 2)):
        require_tensor("binomial", t, name, pos)
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{dtypes.SCALAR_TYPE_NAMES[t.dtype]}")
    if prob.dtype is not count.dtype:  # PyTorch's check (it does not promote)
        raise RuntimeError(f"binomial: Found dtype {dtypes.SCALAR_TYPE_NAMES[prob.dtype]} but "
                           f"expected {dtypes.SCALAR_TYPE_NAMES[count.dtype]} (count and prob "
                           f"must share a dtype)")
    if count.dtype not in (dtypes.float32, dtypes.float64):  # PyTorch's type and kernel text
        raise NotImplementedError(f"binomial: not implemented for {count.dtype.name}; convert "
                                  f"count and prob with .float() (\"binomial_cpu\" not "
                                  f"implemented for '{dtypes.SCALAR_TYPE_NAMES[count.dtype]}')")
    with no_grad():
        n, p = (t.detach().to(dtypes.float64) for t in (count, prob))
        if bool((n < 0).any()) or bool((n != n.floor()).any()):
            raise ValueError("binomial: count must hold non-negative integers")
        if bool(((p < 0) | (p > 1) | p.isnan()).any()):
            raise ValueError("binomial: prob must be in [0, 1]")
        n, p = n.broadcast_to(np.broadcast_shapes(n.shape, p.shape)), p.expand_as(
            n.broadcast_to(np.broadcast_shapes(n.shape, p.shape)))
        with drawing_from(generator, count.device, "binomial"):
            sample = _binomial_draw(n.contiguous(), p.contiguous())
        return sample.to(count.dtype)


# ------------------------------------------------------------------ utilities
def typename(obj) -> str:
    """'torch.FloatTensor'-style names for tensors (x.type()), else module.qualname."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """tgrad.func.vmap."""
    from tgrad.func import vmap as _vmap
    return _vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


# ------------------------------------------------------------------ control flow
def _tree_leaves(tree) -> list:
    from tgrad.func import _flatten
    return _flatten(tree)[0]


def cond(pred, true_fn, false_fn, operands: tuple | list = ()):
    """PyTorch's ``torch.cond``: ``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    ``pred`` is a Python bool / int / float (then the branch is simply called), or a
    single-element tensor, in which case, as PyTorch, both branches must be callable and
    ``operands`` a tuple or list of (possibly nested dict/list/tuple of) tensors. tgrad runs
    it eagerly: only the branch taken runs (reading ``pred``'s value, a device sync on
    ``cuda``) and it is recorded like any code, so gradients flow through that branch. Unlike
    torch.compile's tracing, tgrad does not check that both branches return the same
    structure and metadata, and allows outputs that alias the operands.
    """
    if isinstance(pred, (bool, int, float)):  # PyTorch's eager case: no further checks
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not builtins.all(
            isinstance(t, Tensor) for t in _tree_leaves(list(operands))):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    return (true_fn if builtins.bool(pred.item()) else false_fn)(*operands)


def _loop_pred(value) -> bool:
    """cond_fn's result: a Python bool or a scalar (0-d, one-element) boolean tensor."""
    if isinstance(value, builtins.bool):
        return value
    if isinstance(value, Tensor) and value.numel() == 1 and value.dtype is dtypes.bool_:
        return builtins.bool(value.item())
    got = (f"a tensor of shape {list(value.shape)} and dtype {value.dtype}"
           if isinstance(value, Tensor) else type(value).__name__)
    raise RuntimeError(f"while_loop: expected cond_fn to return a boolean scalar tensor or a "
                       f"bool but got {got}")


def while_loop(cond_fn, body_fn, carried_inputs: tuple | list) -> tuple:
    """PyTorch's ``torch.while_loop``: ``val = carried_inputs; while cond_fn(*val): val =
    body_fn(*val)``, returning ``val`` as a tuple.

    ``carried_inputs`` is a tuple or list of (possibly nested dict/list/tuple of) tensors
    and ints; ``cond_fn`` returns a bool or a one-element boolean tensor; ``body_fn``
    returns as many values as it takes (a single value for a single carry is accepted), each
    tensor of the same shape, dtype and device as the carry it replaces (PyTorch's metadata
    check). tgrad runs the loop eagerly and records it like any code, so, unlike PyTorch's
    prototype (which does not support training), gradients flow through the iterations
    that ran.
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)) or not builtins.all(
            isinstance(t, (Tensor, builtins.int)) for t in _tree_leaves(list(carried_inputs))):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested "
                           "dict/list/tuple that only consists of tensor or int leaves, but "
                           f"got {carried_inputs}.")
    val = tuple(carried_inputs)
    want = _tree_leaves(list(val))
    while _loop_pred(cond_fn(*val)):
        out = body_fn(*val)
        if not isinstance(out, (tuple, list)):
            out = (out,)
        out = tuple(out)
        got = _tree_leaves(list(out))
        if len(got) != len(want) or len(out) != len(val):
            raise RuntimeError(f"while_loop: body_fn must return the same structure as "
                               f"carried_inputs ({len(val)} values, {len(want)} leaves), but "
                               f"returned {len(out)} values, {len(got)} leaves")
        for i, (a, b) in enumerate(zip(got, want)):
            if isinstance(b, Tensor):
                if not isinstance(a, Tensor) or (a.shape, a.dtype, a.device) != (
                        b.shape, b.dtype, b.device):
                    desc = (f"{tuple(a.shape)} {a.dtype} {a.device}" if isinstance(a, Tensor)
                            else type(a).__name__)
                    raise RuntimeError(
                        f"Expected body_fn_output and carried_inputs to have same metadata "
                        f"but found: pair[{i}] differ: body_fn returned {desc}, the carry is "
                        f"{tuple(b.shape)} {b.dtype} {b.device}")
            elif isinstance(a, Tensor) or not isinstance(a, builtins.int):
                raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same "
                                   f"metadata but found: pair[{i}] differ: the carry is an "
                                   f"int, body_fn returned {type(a).__name__}")
        val = out
    return val


_COMPILE_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
                  "max-autotune")


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend="inductor", mode: str | None = None, options: dict | None = None,
            name: str | None = None, disable: bool = False, recompile_limit: int | None = None,
            isolate_recompiles: bool = False, shapes_spec=None):
    """PyTorch's ``torch.compile``, accepted for compatibility: tgrad has no compiler, so
    ``model`` (a function or a Module) is returned unchanged (the same object) and runs as
    before, with no speed-up. Without ``model`` it returns a decorator doing the same
    (``@tgrad.compile(mode=...)``). PyTorch's keyword arguments are accepted and ignored,
    after PyTorch's checks on ``mode`` / ``options``."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _COMPILE_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(_COMPILE_MODES)}")
    if model is None:
        def decorator(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, name=name, disable=disable,
                           recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return decorator
    if not callable(model):
        raise TypeError(f"A callable function is expected, but {type(model)} is provided.")
    return model
