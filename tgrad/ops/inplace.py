"""In-place ops (``add_``, ``mul_``, ``copy_``, ``x[k] = v``, ``+=`` ...).

Each bumps the version counter shared by all views of the buffer. When the graph is being
recorded, the op is computed out of place on a snapshot of the old values (so saved tensors
stay valid) and written back; the tensor is then rebased onto the op's node, and a write
through a view re-routes the base's gradient through CopySlices.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._strides import has_internal_overlap
from tgrad.autograd import function as _function
from tgrad.autograd.copy_slices import rebase_base
from tgrad.autograd.function import _NONE_EDGE, Function, _is_in
from tgrad.autograd.grad_mode import STATE
from tgrad.autograd.hooks import move_retain_grad
from tgrad.autograd.node import AccumulateGrad, gradient_edge
from tgrad.cuda.index_errors import DeviceIndexError
from tgrad.ops import elementwise as ew
from tgrad.ops._common import backend_of, register_op, tensor_method, view_apply, wrap
from tgrad.ops.index import (
    _basic_cls,
    check_masks,
    empty_selection,
    fills_by_masked_fill,
    normalize_key,
    split_selects,
)
from tgrad.ops.movement import clone
from tgrad.ops.reduce import sum_to
from tgrad.ops.shape import ALL_DIMS
from tgrad.tensor import (
    InferenceStorage,
    Tensor,
    check_not_inference,
    custom_function_view_error,
    multi_output_view_error,
)

__all__ = ["add_into"]

_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def check_inplace(t: Tensor, op: str) -> None:
    """PyTorch's checks: no in-place on an inference tensor outside inference mode, nor, in
    grad mode, on a leaf (or a view of a leaf) that requires grad."""
    if type(t._storage) is InferenceStorage:
        check_not_inference(t)
    if not STATE.enabled:
        return
    base = t._base
    # a view made in inference mode first, as PyTorch's handle_view_on_rebase
    if t._inference_mode_view and base is not None and base._requires_grad:
        raise RuntimeError(_INFERENCE_VIEW)
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if base is not None:
        if (base._requires_grad and base._grad_fn is None) or _views_a_grad_leaf(t):
            raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being "
                               "used in an in-place operation.")


def _views_a_grad_leaf(t: Tensor) -> bool:
    """Whether a tensor between ``t`` and its base in the view chain is a leaf that requires
    grad (a view made a leaf by ``requires_grad_()``, then viewed again): the view ops' nodes
    lead from t.grad_fn to its AccumulateGrad."""
    node, chain = t._grad_fn, t._view_chain
    if node is None or not chain:
        return False
    for _ in range(len(chain)):
        edges = node.next_functions
        if not edges or edges[0][0] is None:
            return False
        node = edges[0][0]
        if type(node) is AccumulateGrad:
            return True
    return False


# an in-place op in grad mode through a view made inside inference_mode, whose base requires
# grad or with an operand that does (PyTorch's CreationMeta::INFERENCE_MODE error)
_INFERENCE_VIEW = (
    "A view was created in inference mode and is being modified inplace in normal mode. Given "
    "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the inference_mode block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked).")


def _write(t: Tensor, src_data, overlap_ok: bool = False) -> None:
    """Store ``src_data`` into ``t``'s memory; PyTorch's error when ``t`` overlaps itself,
    as PyTorch's assert_no_internal_overlap (on every backend), unless ``overlap_ok`` (a
    scalar fill: every element gets the same value). PyTorch only detects a dim of stride 0
    and size > 1 (an expanded view); tgrad also refuses overlapping unfold windows and
    as_strided views, whose write PyTorch applies several times to one element (and whose
    gradient would be wrong)."""
    if type(t._storage) is InferenceStorage:
        check_not_inference(t)
    if (not overlap_ok and t._data.size > 1 and not t._data.flags.c_contiguous  # (a
            and has_internal_overlap(t.shape, t._data.strides)):  # dense array cannot)
        raise RuntimeError(_OVERLAP)
    if STATE.mutation_ctx is not None:  # allow_mutation_on_saved_tensors: clone saved first
        STATE.mutation_ctx.before_write(t)
    backend_of(t).copy_(_writable(t), src_data)
    t._storage.version += 1


def overlapping(t: Tensor) -> bool:
    """Whether two elements of ``t`` share one memory location (an expanded view...)."""
    return (t._data.size > 1 and not t._data.flags.c_contiguous
            and has_internal_overlap(t.shape, t._data.strides))


def alias_closure(t: Tensor, sel: Tensor) -> Tensor:
    """For a fill into an overlapping ``t`` (see ``overlapping``): ``sel`` (a bool tensor
    broadcastable to t's shape, the positions written) widened to every position sharing a
    memory location with a written one, as PyTorch's masked_fill_ / index_fill_ of an
    expanded tensor leave it (each aliased element holds the value). Shape t.shape."""
    itemsize = t._data.itemsize
    offsets = np.zeros(t.shape, dtype=np.int64)  # each position's memory offset (elements)
    for d, (n, st) in enumerate(zip(t.shape, t._data.strides)):
        offsets += (np.arange(n, dtype=np.int64) * (st // itemsize)).reshape(
            (n,) + (1,) * (t.ndim - d - 1))
    offsets -= offsets.min(initial=0)
    hit = np.zeros(int(offsets.max(initial=0)) + 1, dtype=bool)
    try:
        sel_np = np.broadcast_to(sel.numpy(force=True), t.shape)
    except ValueError:  # not broadcastable: the op's own shape error follows
        return sel
    hit[offsets[sel_np]] = True
    from tgrad.ops.creation import tensor
    return tensor(hit[offsets], device=t.device)


class _Alias:
    """An array interface for NumPy: ``arr``'s memory marked writable (kept alive by it)."""

    def __init__(self, arr: np.ndarray) -> None:
        iface = dict(arr.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__, self.arr = iface, arr


def _writable(t: Tensor):
    """``t``'s backend array, writable. NumPy views of expanded (stride-0) arrays are
    read-only, and so are their slices even when they overlap nothing (``x.expand(3, 2,
    3)[0]``): having checked there is no overlap (see ``_write``), such a view is written
    through a writable alias of the same memory, provided the storage's root is writable."""
    arr = t._data
    if not isinstance(arr, np.ndarray) or arr.flags.writeable:
        return arr
    root = t._storage.root
    if not (isinstance(root, np.ndarray) and root.flags.writeable):
        raise RuntimeError(f"in-place write into read-only memory (a tensor of shape "
                           f"{list(t.shape)} over a read-only NumPy array or a cached "
                           f"constant); clone() the tensor first")
    out = np.asarray(_Alias(arr))  # (an ml_dtypes dtype, bfloat16 / float8, comes back as
    return out if out.dtype == arr.dtype else out.view(arr.dtype)  # raw bytes: re-typed)


# In-place ops whose out-of-place op does not save its first input for backward: they read
# the old values through an alias instead of a copy (the write happens after the result is
# computed). Any other op gets a copy, so that what it saves is not overwritten.
_SELF_NOT_SAVED = frozenset({"add_", "sub_", "fill_", "zero_", "copy_", "index_put_", "neg_",
                             "exp_", "tanh_", "sigmoid_", "sqrt_", "reciprocal_", "floor_",
                             "ceil_", "round_", "expm1_", "rsqrt_", "sign_", "trunc_", "exp2_",
                             "tan_"})


def _snapshot(t: Tensor, copy: bool = True) -> Tensor:
    """``t``'s values (a copy, or an alias when ``copy`` is False) carrying ``t``'s autograd
    identity (grad_fn, output_nr)."""
    if copy:
        snap = Tensor(backend_of(t).clone(t._data), None, t.device)
    else:
        snap = Tensor(t._data, t._storage, t.device)
    gf = t.grad_fn
    snap._grad_fn = gf
    snap._output_nr = t._output_nr
    snap._requires_grad = t._requires_grad
    return snap


def apply_inplace(self: Tensor, op: str, fn, *args, overlap_ok: bool = False) -> Tensor:
    """Compute ``fn(self, *args)`` and store it into ``self`` in place (``overlap_ok``: also
    into an expanded view when nothing is recorded, PyTorch's fill_(scalar) and zero_)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}: expected a Tensor")
    base = self._base
    record = STATE.enabled and (
        self._requires_grad or (base is not None and base._requires_grad)
        or _any_requires_grad(args))
    if record and self._multi_output_view:  # before the leaf checks, as PyTorch's
        raise multi_output_view_error(self)
    if record and self._custom_function_view and self._grad_fn is not None:
        raise custom_function_view_error(self)
    check_inplace(self, op)
    root = self._storage.root
    for a in args:
        if isinstance(a, Tensor) and a._storage.root is root and op not in _READ_AS_NUMBER:
            _check_operand_overlap(self, op, args)
            break
    if not record:
        res = fn(self, *args)
        _check_fits(op, res, self)
        _write(self, res._data, overlap_ok)
        # forward-mode AD (function.fw_level, inlined): the tangent, in place too
        if _function._FW_ACTIVE and STATE.fw_level is not None:
            from tgrad.autograd.forward_ad import inplace_update
            inplace_update(self, res)
        return self
    if base is not None and self._view_chain is None:
        if self._inference_mode_view:
            raise RuntimeError(_INFERENCE_VIEW)
        # PyTorch's text (CreationMeta::NO_GRAD_MODE: also a view made in a custom
        # Function's forward, which runs without grad)
        raise RuntimeError(
            f"{op}: A view was created in no_grad mode and is being modified inplace with "
            f"grad mode enabled. Given that this use case is ambiguous and error-prone, it is "
            f"forbidden. You can clarify your code by moving both the view and the inplace "
            f"either both inside the no_grad block (if you don't want the inplace to be "
            f"tracked) or both outside (if you want the inplace to be tracked).")
    view_rebase = self._base is not None
    if view_rebase:
        from tgrad.ops.layout import replay_on_base
        replayed = replay_on_base(self)
    old = _snapshot(replayed if view_rebase else self, copy=op not in _SELF_NOT_SAVED)
    fw = STATE.fw_level if _function._FW_ACTIVE else None  # function.fw_level, inlined
    if fw is not None:  # forward-mode AD: the old values' tangent
        from tgrad.autograd.forward_ad import get_tangent
        tangent = get_tangent(self)
        if tangent is not None:  # a copy: inplace_update below writes self's in place
            old.__dict__["_fw"] = (fw, tangent.clone())
    # ``x.op_(x)``: the argument is read before the write, i.e. it is the old value.
    for a in args:
        if a is self:
            args = tuple([old if a is self else a for a in args])
            break
    res = fn(old, *args)
    _check_fits(op, res, self)
    if res.dtype is not self.dtype:
        res = res.to(self.dtype)
    if not res._requires_grad:  # a non-differentiable op (heaviside_, floor_divide_...)
        if not old._requires_grad:  # only an operand required grad: nothing to record
            _write(self, res._data)
            if fw is not None:
                from tgrad.autograd.forward_ad import inplace_update
                inplace_update(self, res)
            return self
        res = CopyFrom.apply(old, res)  # the old values get gradient 0 (self stays a non-leaf)
    elif res._grad_fn is None or _is_in(res, args):
        res = clone(res)  # the written values need a node of their own
    _write(self, res._data)
    if fw is not None:
        from tgrad.autograd.forward_ad import inplace_update
        inplace_update(self, res)
    if view_rebase:
        if (fn == _COPY_APPLY and res._grad_fn._forward_cls is CopyFrom
                and res._grad_fn._edges[0][0] is not None):
            _drop_old_edge(res._grad_fn)
        rebase_base(self, gradient_edge(res))
        if base._retains_grad:
            move_retain_grad(base)
    else:
        self._grad_fn = res._grad_fn
        self._output_nr = res._output_nr
        self._requires_grad = True
    if self._retains_grad:
        move_retain_grad(self)
    return self


def _drop_old_edge(node) -> None:
    """Cut the edge of a copy_'s node (CopyBackwards) to the old values of the view it
    wrote: their gradient is 0 (overwritten), and the CopySlices over it already gives the
    base's previous history g with the region zeroed. PyTorch's CopySlices has no such
    edge either (base, src); the cut saves a zero gradient of the base's size (the view's
    SliceBackward0 scattering zeros) and its addition into the base's history."""
    node._edges = (_NONE_EDGE,) + node._edges[1:]
    node.needs_input_grad = (False,) + tuple(node.needs_input_grad[1:])


def _any_requires_grad(args: tuple) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            return True
    return False


# In-place ops whose tensor operand PyTorch reads as a number (value.item()): no overlap
# check; the others check their operands as PyTorch's TensorIterator / index ops do.
_READ_AS_NUMBER = frozenset({"fill_", "masked_fill_", "index_fill_", "masked_scatter_"})


def _check_operand_overlap(self: Tensor, op: str, args: tuple) -> None:
    """PyTorch's assert_no_partial_overlap of an in-place op's output (``self``) with each
    operand sharing its memory: ``x.add_(x)`` is fine (the same elements, read before the
    write), ``x.add_(x[0])`` or ``x[1:].copy_(x[:-1])`` raise; index / scatter ops refuse any
    overlap (assert_no_overlap). Operands not dense in memory are not checked (PyTorch's
    MemOverlap::TooHard)."""
    from tgrad._out import _check_overlap
    _check_overlap(op[:-1], self, [a for a in args if isinstance(a, Tensor)])


def check_castable(prefix: str, src: dtypes.DType, dst: dtypes.DType) -> None:
    """PyTorch's error when a result of dtype ``src`` is written into a ``dst`` tensor of a
    lower category (floating > integer > bool); ``prefix`` leads the message."""
    if src.category > dst.category:
        names = dtypes.SCALAR_TYPE_NAMES  # PyTorch's text
        raise RuntimeError(f"{prefix}result type {names[src]} can't be cast to the desired "
                           f"output type {names[dst]}")


def _check_fits(op: str, res: Tensor, self: Tensor) -> None:
    """The result must be castable to ``self``'s dtype (same or lower category) and have
    ``self``'s shape (in-place ops cannot broadcast ``self``)."""
    check_castable(f"{op}: ", res.dtype, self.dtype)
    if res.shape != self.shape:
        raise RuntimeError(f"{op}: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(res.shape)}")


_ALPHA = {"add_": ("alpha",), "sub_": ("alpha",)}


# the keyword of the second operand where PyTorch's name is not ``other``
_OTHER_NAME = {"pow_": "exponent"}
class _NotGiven:
    def __repr__(self) -> str:  # (a stable repr for the signature in docs/api.md)
        return "<required>"


_NOT_GIVEN = _NotGiven()


def _binary_inplace(name: str, fn, keywords: tuple = ()):
    """The in-place form of binary ``fn`` (``keywords`` are passed on, e.g. div_'s
    rounding_mode; add_/sub_'s ``alpha`` too, scaling other in the result's dtype with the
    out-of-place op's checks). The operand may be given by PyTorch's keyword (``other``,
    pow_'s ``exponent``)."""
    keywords = keywords + _ALPHA.get(name, ())
    other_name = _OTHER_NAME.get(name, "other")

    def method(self, other=_NOT_GIVEN, **kw) -> Tensor:
        if other is _NOT_GIVEN:
            if other_name not in kw:
                raise TypeError(f"{name}() missing 1 required positional argument: "
                                f"'{other_name}'")
            other = kw.pop(other_name)
        passed = {k: kw.pop(k) for k in keywords if k in kw} if kw else kw
        if kw:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kw)}")
        f = (lambda x, y: fn(x, y, **passed)) if passed else fn
        return apply_inplace(self, name, f, other)
    method.__name__ = method.__qualname__ = name
    return method


def _inplace_dunder(name: str, op: str, fn):
    """``x op= other``: the in-place op ``op`` (x.add_(other)...) without the method's
    keyword handling (one call, as the method itself), but an operand it refuses that is not
    a Tensor or a number (a NumPy array) gives NotImplemented, as PyTorch's, so Python falls
    back to ``x = x op other`` (a new tensor: ``x += np.ones(2)`` gives float64; an object
    with __radd__: its result)."""
    def dunder(self, other) -> Tensor:
        try:
            return apply_inplace(self, op, fn, other)
        except TypeError:
            if not isinstance(other, ew.OPERANDS):
                return NotImplemented
            raise
    dunder.__name__ = dunder.__qualname__ = name
    return dunder


for _name, _fn, _dunder in (("add_", ew.add, "__iadd__"), ("sub_", ew.sub, "__isub__"),
                            ("mul_", ew.mul, "__imul__"), ("pow_", ew.pow, "__ipow__"),
                            ("floor_divide_", ew.floor_divide, "__ifloordiv__"),
                            ("remainder_", ew.remainder, "__imod__"),
                            ("bitwise_and_", ew.bitwise_and, "__iand__"),
                            ("bitwise_or_", ew.bitwise_or, "__ior__"),
                            ("bitwise_xor_", ew.bitwise_xor, "__ixor__"),
                            ("bitwise_left_shift_", ew.bitwise_left_shift, "__ilshift__"),
                            ("bitwise_right_shift_", ew.bitwise_right_shift, "__irshift__"),
                            ("gcd_", ew.gcd, None), ("lcm_", ew.lcm, None)):
    tensor_method(_name)(_binary_inplace(_name, _fn))
    if _dunder:
        tensor_method(_dunder)(_inplace_dunder(_dunder, _name, _fn))
tensor_method("div_")(_binary_inplace("div_", ew.div, ("rounding_mode",)))
tensor_method("__itruediv__")(_inplace_dunder("__itruediv__", "div_", ew.div))
tensor_method("fmod_")(_binary_inplace("fmod_", ew.fmod))


def inplace_method(name: str, fn):
    """The in-place method ``name`` of out-of-place ``fn(x, *args, **kwargs)``: the result
    is written into self (apply_inplace records it)."""
    def method(self, *args, **kwargs) -> Tensor:
        f = (lambda x, *a: fn(x, *a, **kwargs)) if kwargs else fn
        return apply_inplace(self, name, f, *args)
    method.__name__ = method.__qualname__ = name
    return tensor_method(name)(method)


def _abs_real(x: Tensor) -> Tensor:
    """``abs`` for ``abs_``: |z| of a complex tensor is real, so PyTorch refuses it in place."""
    if x.dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return ew.abs(x)


inplace_method("abs_", _abs_real)
for _name in ("neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "sin", "cos",
              "floor", "ceil", "round", "reciprocal", "log1p", "expm1", "rsqrt", "erf",
              "square", "sign", "trunc", "log2", "log10", "exp2", "sinh", "cosh", "tan",
              "atan", "asin", "acos", "atan2"):
    inplace_method(_name + "_", getattr(ew, _name))
for _name in ("atan", "asin", "acos", "atan2"):  # NumPy's names, as PyTorch has them
    inplace_method("arc" + _name[1:] + "_", getattr(ew, _name))


def _late(name: str):
    """``x.name(*args, **kwargs)``, looked up when called (ops defined in later modules)."""
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


# in-place forms of ops defined elsewhere: sinc_, igamma_, polygamma_(n), addmm_(m1, m2)...
for _name in ("sinc", "igamma", "igammac", "mvlgamma", "polygamma", "bitwise_not", "addmm",
              "addbmm", "baddbmm", "addmv", "addr"):
    inplace_method(_name + "_", _late(_name))


@tensor_method("float_power_")
def float_power_(self: Tensor, exponent) -> Tensor:
    """In-place ``float_power``: its result is float64 (complex128 when self or exponent is
    complex), so self must have that dtype."""
    cplx = self.dtype.is_complex or (exponent.dtype.is_complex if isinstance(exponent, Tensor)
                                     else isinstance(exponent, complex))
    want = dtypes.complex128 if cplx else dtypes.float64
    if self.dtype is not want:
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(f"the base given to float_power_ has dtype {names[self.dtype]} but "
                           f"the operation's result requires dtype {names[want]}")
    return apply_inplace(self, "float_power_", _late("float_power"), exponent)


@tensor_method("clamp_", "clip_")
def clamp_(self: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    return apply_inplace(self, "clamp_", ew.clamp, min, max)


class Fill(Function):
    """y = value everywhere (x's shape and dtype);  dx = 0 (x is overwritten)."""

    name = "fill"
    node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, x, value):
        ctx.shape = x.shape
        return wrap(backend_of(x).full(x.shape, value, x.dtype.np), x.device)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros_like
        return zeros_like(g), None


class CopyFrom(Function):
    """y = src broadcast to x's shape and cast to x's dtype;
    dx = 0 (x is overwritten);  dsrc = sum_to(g, src.shape) cast back to src's dtype."""

    name = "copy"
    node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, x, src):
        be = backend_of(x)
        ctx.src_shape, ctx.src_dtype = src.shape, src.dtype
        if src._dtype is x._dtype and ctx.src_shape == x.shape:  # (nothing to cast or expand)
            return wrap(be.clone(src._data), x.device)
        try:
            arr = be.expand(be.cast(src._data, x.dtype.np), x.shape)
        except ValueError:
            raise RuntimeError(f"copy_: the source of shape {list(src.shape)} cannot be "
                               f"broadcast to the destination of shape {list(x.shape)}") from None
        return wrap(be.clone(arr), x.device)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros_like
        need_x, need_src = ctx.needs_input_grad
        gx = zeros_like(g) if need_x else None
        gsrc = sum_to(g, ctx.src_shape).to(ctx.src_dtype) if need_src else None
        return gx, gsrc


register_op(Fill)
register_op(CopyFrom)
_COPY_APPLY = CopyFrom.apply
# PyTorch's node names of the in-place overloads: zero_, fill_(number), fill_(0-d tensor)
_ZERO = ew.node_variant(Fill, "ZeroBackward0")
_FILL_NUMBER = ew.node_variant(Fill, "FillBackward2")
_FILL_TENSOR = ew.node_variant(CopyFrom, "FillBackward3")


def _as_src(op: str, x: Tensor, src) -> Tensor:
    """``src`` as a tensor on ``x``'s device (Python numbers and nested lists accepted)."""
    if not isinstance(src, Tensor):
        from tgrad.ops.creation import tensor
        try:
            src = tensor(src, dtype=x.dtype, device=x.device)
        except (TypeError, ValueError):
            raise TypeError(f"{op}: expected a Tensor or a number as the source, got "
                            f"{type(src).__name__}") from None
    elif src.device != x.device:
        src = src.to(x.device)
    return src


@tensor_method("fill_")
def fill_(self: Tensor, value) -> Tensor:
    """Set every element to ``value`` (a number or a 0-d tensor, whose gradient is the sum)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        return apply_inplace(self, "fill_", _FILL_TENSOR.apply, _as_src("fill_", self, value))
    if not isinstance(value, (int, float, bool, complex, np.number, np.bool_)):
        raise TypeError(f"fill_(): argument 'value' must be a Number or a 0-d Tensor, not "
                        f"{type(value).__name__}")
    dtypes.check_value_fits("fill_", value, self.dtype)
    if isinstance(value, (complex, np.complexfloating)) and not self.dtype.is_complex:
        value = value.real if self.dtype is not dtypes.bool_ else value != 0
    if self.dtype is dtypes.bool_:  # any magnitude is True (2**63 too, which NumPy cannot take)
        value = bool(value)
    return apply_inplace(self, "fill_", _FILL_NUMBER.apply, value, overlap_ok=True)


@tensor_method("zero_")
def zero_(self: Tensor) -> Tensor:
    return apply_inplace(self, "zero_", _ZERO.apply, 0, overlap_ok=True)


@tensor_method("copy_")
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved) into ``self``; the gradient flows to ``src``.
    A number is copied as PyTorch's wrapped number: a 0-d tensor of its own dtype (float64,
    int64, complex128, bool; a NumPy scalar's), cast by the copy (uint8 300 wraps to 44).
    A complex source into a real tensor warns, as PyTorch (the imaginary part is dropped)."""
    if not isinstance(src, Tensor):
        if not isinstance(src, (int, float, bool, complex, np.number, np.bool_)):
            raise TypeError(f"copy_(): argument 'src' must be Tensor, not "
                            f"{type(src).__name__}")
        if isinstance(src, int) and not -2 ** 63 <= src < 2 ** 63:
            raise OverflowError(f"copy_(): int too big to convert ({src}); PyTorch's wrapped "
                                f"numbers are int64")
        from tgrad.ops.creation import from_numpy
        src = from_numpy(np.asarray(src))
    if src.dtype.is_complex and not self.dtype.is_complex and self.dtype is not dtypes.bool_:
        import warnings  # (into bool: z != 0, no warning, as PyTorch)
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=2)
    return apply_inplace(self, "copy_", CopyFrom.apply, _as_src("copy_", self, src))


class IndexPut(Function):
    """y = x with y[key] = v;  dx = g with key positions zeroed;  dv = sum_to(g[key], v.shape)."""

    name = "index_put"
    node_name = "IndexPutBackward0"
    keeps_indices = True

    @staticmethod
    def forward(ctx, x, key, v):
        be = backend_of(x)
        out = be.clone(x._data)
        vals = v._data if isinstance(v, Tensor) else v
        try:
            be.index_put_(out, key, vals)
        except DeviceIndexError:  # an earlier op's, found at a sync inside: as it is
            raise
        except IndexError as e:
            if empty_selection(x.shape, key) is None:
                raise IndexError(f"index_put_: {str(e).replace('axis', 'dimension')}") \
                    from None  # (else nothing is written: no error, as PyTorch)
        except (ValueError, TypeError) as e:  # PyTorch: a RuntimeError naming both shapes
            if isinstance(e, TypeError) and "boolean array indexing" not in str(e):
                raise  # (NumPy's TypeError for a mask's value of too many dims only)
            got = _indexed_shape(x.shape, key)
            where = f"indexing result of shape {got}" if got is not None else \
                f"the indexed positions of tensor of shape {list(x.shape)} ({e})"
            raise RuntimeError(f"index_put_: shape mismatch: value tensor of shape "
                               f"{list(np.shape(vals))} cannot be broadcast to {where}") from None
        ctx.key = key
        ctx.v_shape = v.shape if isinstance(v, Tensor) else None
        return wrap(out, x.device)

    @staticmethod
    def backward(ctx, g):
        need_x, _, need_v = ctx.needs_input_grad
        gx = gv = None
        if need_x:  # g outside the written positions, exactly 0 inside (even a NaN g)
            gx = ew.where(_outside(g, ctx.key), g, 0.0)
        if need_v:
            gv = sum_to(g[ctx.key], ctx.v_shape)
        return gx, None, gv


register_op(IndexPut)


def _indexed_shape(shape: tuple, key) -> list | None:
    """The shape of x[key] for a host key (PyTorch's "indexing result" in errors), from a
    zero-stride view (no copy of x); None where the key does not index a NumPy array."""
    try:
        return list(np.broadcast_to(np.zeros((), np.int8), shape)[key].shape)
    except (IndexError, TypeError, ValueError):  # (a device key: the caller words it
        # without the shape)
        return None


def _outside(like: Tensor, key) -> Tensor:
    """A bool tensor of ``like``'s shape: False at the positions ``key`` writes."""
    from tgrad.ops.creation import ones
    m = ones(like.shape, dtype=dtypes.bool_, device=like.device)
    backend_of(m).index_put_(m._data, key, False)
    return m


def _half_item_value(value, dt):
    """A number assigned into a float16 / bfloat16 tensor as PyTorch writes it (a 0-d
    tensor filled through float32, unchecked): rounded to the dtype, past its range inf."""
    if dt.itemsize != 2 or not dt.is_floating_point or isinstance(value, (bool, np.bool_)) \
            or -dtypes.FLOAT16_MAX <= value <= dtypes.FLOAT16_MAX:
        return value
    with np.errstate(over="ignore"):
        return float(np.asarray(float(value), np.float32).astype(dt.np))


def _mask_fill_key(nkey: tuple, value: Tensor) -> bool:
    """Whether PyTorch's index_put_ writes ``value`` by masked_fill_ (which casts it): a
    one-element CPU value and a key whose only index array is one boolean mask. Any other
    advanced key needs value's dtype to be the destination's (index_put_'s check)."""
    if value.numel() != 1 or value.device.type != "cpu":
        return False
    arrays = [k for k in nkey if not (k is None or k is Ellipsis or isinstance(k, (slice, int)))]
    return len(arrays) == 1 and getattr(arrays[0], "dtype", None) == np.bool_


def index_put_dtype_error(self: Tensor, value: Tensor) -> RuntimeError:
    """PyTorch's index_put_ error for a source whose dtype is not the destination's."""
    return RuntimeError(f"Index put requires the source and destination dtypes match, got "
                        f"{self.dtype.name} for the destination and {value.dtype.name} for "
                        f"the source. (convert the source with .to({self.dtype}))")


@tensor_method("__setitem__")
def setitem(self: Tensor, key, value) -> None:
    """``self[key] = value``: basic keys write through a view, array keys via index_put.
    A bare ``True`` key is PyTorch's fast path (``self[None] = value``, the value cast); a
    bare ``False`` selects nothing, so nothing is checked or written."""
    if key is False:
        return
    if key is True:
        key = None
    scalar = isinstance(value, (int, float, bool, complex, np.number, np.bool_))
    nkey, basic = normalize_key(key, self.device, self.ndim, byte_fill=(
        scalar or isinstance(value, Tensor)) and fills_by_masked_fill(value))
    if scalar:
        dtypes.check_value_fits("__setitem__", value, self.dtype)
        if isinstance(value, (complex, np.complexfloating)):
            if not self.dtype.is_complex:  # 2+0j (a nonzero imaginary part was refused)
                value = _half_item_value(value.real, self.dtype)
        else:
            value = _half_item_value(value, self.dtype)
    else:
        value = given = _as_src("__setitem__", self, value)
        lead = 0  # leading size-1 dims of the value are dropped first, as PyTorch does
        while lead < value.ndim and value.shape[lead] == 1:
            lead += 1
        if lead:
            value = value.reshape(value.shape[lead:])
    if basic:  # PyTorch's copy_to: a value of the view's shape is copied as it is (x[k] -=
        # y writes the view onto itself), a 0-d one fills (read once); the view as
        # getitem makes it (nkey is normalized already: not again)
        view = view_apply(_basic_cls(nkey), self, nkey) if type(self) is Tensor else self[nkey]
        if not isinstance(value, Tensor):
            apply_inplace(view, "fill_", Fill.apply, value)
        elif given.shape == view.shape:
            copy_(view, given)
        elif given.ndim == 0:
            apply_inplace(view, "fill_", CopyFrom.apply, given)
        else:
            copy_(view, value)
        return
    check_masks(nkey, self.shape)
    split = split_selects(nkey)
    if split is not None:  # integers select first, as in PyTorch (see split_selects)
        setitem(self[split[0]], split[1], value)
        return
    if isinstance(value, Tensor) and value.dtype is not self.dtype:
        if not _mask_fill_key(nkey, value):
            raise index_put_dtype_error(self, value)
        # PyTorch's masked_fill_ path: the value read as a number, checked, cast
        dtypes.check_tensor_value_fits("masked_fill_", value, self.dtype)
        value = value.to(self.dtype)
    elif not isinstance(value, Tensor) and self.dtype is dtypes.uint8 and value < 0:
        value = dtypes.number_as(value, self.dtype)  # -255..-1 (checked above) wrap: -1 is 255
    apply_inplace(self, "index_put_", lambda x, v: IndexPut.apply(x, nkey, v), value)


# ------------------------------------------------------------ in-place view (metadata) ops
# ``x.unsqueeze_(0)``, ``x.t_()``...: x itself is re-pointed at the view of its memory (same
# storage; the version is bumped, as PyTorch's); when recorded, x's grad_fn becomes the view
# op's node (PyTorch's names: UnsqueezeBackward1, TransposeBackward1...). A view x keeps
# its base, its chain extended by the op; views taken of a base before its shape changed
# are re-derived from the storage geometry when next used (see ``layout.replay_on_base``).
def _view_classes() -> dict:
    from tgrad.ops.layout import AsStrided
    from tgrad.ops.shape import Permute, Squeeze, Unsqueeze, View

    def sub(base, name: str, node: str):
        return type(node[:-9] + "Inplace", (base,), {"name": name, "node_name": node})
    return {"unsqueeze_": sub(Unsqueeze, "unsqueeze_", "UnsqueezeBackward1"),
            "squeeze_": sub(Squeeze, "squeeze_", "SqueezeBackward3"),
            "squeeze_dim": sub(Squeeze, "squeeze_", "SqueezeBackward4"),
            "squeeze_dims": sub(Squeeze, "squeeze_", "SqueezeBackward5"),
            "transpose_": sub(Permute, "transpose_", "TransposeBackward1"),
            "t_": sub(Permute, "t_", "TBackward1"),
            "t_view": sub(View, "t_", "TBackward1"),
            "as_strided_": sub(AsStrided, "as_strided_", "AsStridedBackward1")}


_VIEW_CLS: dict = {}


def _inplace_view(self: Tensor, op: str, key: str, *args) -> Tensor:
    """Re-point ``self`` at its view by ``_VIEW_CLS[key]`` with ``args`` (see above)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}(): expected a Tensor")
    if STATE.enabled and self._multi_output_view and self._requires_grad:
        raise multi_output_view_error(self)
    check_inplace(self, op)
    if not _VIEW_CLS:
        _VIEW_CLS.update(_view_classes())
    cls = _VIEW_CLS[key]
    if key == "as_strided_":
        from tgrad.ops.layout import as_strided_view
        v = as_strided_view(cls, self, *args)
    else:
        from tgrad.ops._common import view_apply
        v = view_apply(cls, self, *args)
    self._data = v._data
    self._storage.version += 1
    self._geometry_changed = True
    fw = v.__dict__.get("_fw")
    if fw is not None:  # a forward-AD tangent: self's becomes the view's (same view op)
        self.__dict__["_fw"] = fw
    if v._grad_fn is not None:
        self._grad_fn = v._grad_fn
        self._output_nr = v._output_nr
        self._requires_grad = True
        if self._retains_grad:
            move_retain_grad(self)
    if self._base is not None:
        self._view_chain = v._view_chain
        self._grad_fn_version = self._storage.version
    return self


@tensor_method("unsqueeze_")
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place ``unsqueeze``: self gets a size-1 dim at ``dim``."""
    from tgrad.tensor import _wrap_dim
    return _inplace_view(self, "unsqueeze_", "unsqueeze_",
                         _wrap_dim(dim, self.ndim + 1, "unsqueeze_"))


@tensor_method("squeeze_")
def squeeze_(self: Tensor, dim=ALL_DIMS, *dims: int) -> Tensor:
    """In-place ``squeeze``: size-1 dims (all, or those in ``dim``, or the ints given)
    removed from self."""
    from tgrad.ops.shape import squeeze_dims
    if not isinstance(self, Tensor):
        raise TypeError("squeeze_(): expected a Tensor")
    if dims:
        dim = (dim, *dims)
    key = "squeeze_" if dim is ALL_DIMS else (
        "squeeze_dims" if isinstance(dim, (tuple, list)) else "squeeze_dim")
    return _inplace_view(self, "squeeze_", key, squeeze_dims(self, dim, "squeeze_"))


@tensor_method("transpose_", "swapdims_", "swapaxes_")
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place ``transpose``: self's dims ``dim0`` and ``dim1`` swapped."""
    from tgrad.tensor import _wrap_dim
    if self.ndim == 0:
        _wrap_dim(dim0, 0, "transpose_")
        _wrap_dim(dim1, 0, "transpose_")
        return _inplace_view(self, "transpose_", "transpose_", ())
    dims = list(range(self.ndim))
    d0, d1 = (_wrap_dim(d, self.ndim, "transpose_") for d in (dim0, dim1))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _inplace_view(self, "transpose_", "transpose_", tuple(dims))


@tensor_method("t_")
def t_(self: Tensor) -> Tensor:
    """In-place ``t``: a 2-D self transposed (below 2-D unchanged, but recorded)."""
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.ndim}D")
    if self.ndim == 2:
        return _inplace_view(self, "t_", "t_", (1, 0))
    return _inplace_view(self, "t_", "t_view", self.shape)


@tensor_method("as_strided_")
def as_strided_(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """In-place ``as_strided``: self re-pointed at that geometry of its storage."""
    from tgrad.ops.layout import check_as_strided
    args = check_as_strided("as_strided_", self, size, stride, storage_offset)
    return _inplace_view(self, "as_strided_", "as_strided_", *args)


def add_into(dst: Tensor, src: Tensor) -> None:
    """dst += src without recording (gradient accumulation)."""
    be = backend_of(dst)
    try:
        be.copy_(dst._data, be.binary("add", dst._data, be.cast(src._data, dst._data.dtype)))
    except ValueError:  # NumPy's read-only array: a .grad set to an expanded tensor
        if dst._data.size and any(st == 0 and n > 1
                                  for n, st in zip(dst.shape, dst._data.strides)):
            raise RuntimeError(_OVERLAP) from None  # PyTorch's error for `grad += new`
        raise
    dst._storage.version += 1

