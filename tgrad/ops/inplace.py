"""In-place ops (``add_``, ``mul_``, ``copy_``, ``x[k] = v``, ``+=`` ...).

Each bumps the version counter shared by all views of the buffer. When the graph is being
recorded, the op is computed out of place on a snapshot of the old values (so saved tensors
stay valid) and written back; the tensor is then rebased onto the op's node, and a write
through a view re-routes the base's gradient through CopySlices.
"""

from __future__ import annotations

from tgrad import dtypes
from tgrad.autograd.copy_slices import rebase_base, replay_view
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE
from tgrad.autograd.node import gradient_edge
from tgrad.ops import elementwise as ew
from tgrad.ops._common import backend_of, register_op, tensor_method, wrap
from tgrad.ops.index import normalize_key
from tgrad.ops.movement import clone
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor

__all__ = ["add_into"]

_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def check_inplace(t: Tensor, op: str) -> None:
    """PyTorch's checks: no in-place on a leaf (or a view of a leaf) that requires grad."""
    if not STATE.enabled:
        return
    base = t._base
    if base is None:
        if t._requires_grad and t._grad_fn is None:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    elif base._requires_grad and base._grad_fn is None:
        raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used "
                           "in an in-place operation.")


def _write(t: Tensor, src_data) -> None:
    try:
        backend_of(t).copy_(t._data, src_data)
    except ValueError as e:
        if "read-only" in str(e):
            raise RuntimeError(_OVERLAP) from None
        raise
    t._storage.version += 1


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t``'s values carrying ``t``'s autograd identity (grad_fn, output_nr)."""
    snap = Tensor(backend_of(t).clone(t._data), None, t.device)
    gf = t.grad_fn
    snap._grad_fn = gf
    snap._output_nr = t._output_nr
    snap._requires_grad = t._requires_grad
    return snap


def apply_inplace(self: Tensor, op: str, fn, *args) -> Tensor:
    """Compute ``fn(self, *args)`` and store it into ``self`` in place."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}: expected a Tensor")
    check_inplace(self, op)
    record = STATE.enabled and (self._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in args))
    if not record:
        res = fn(self, *args)
        _check_castable(op, res, self)
        _write(self, res._data)
        return self
    view_rebase = self._base is not None and self._view_chain is not None
    old = _snapshot(replay_view(self._view_chain, self._base) if view_rebase else self)
    res = fn(old, *args)
    _check_castable(op, res, self)
    if res.dtype is not self.dtype:
        res = res.to(self.dtype)
    if res.shape != self.shape:
        raise RuntimeError(f"{op}: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(res.shape)}")
    if res._grad_fn is None or any(res is a for a in args):
        res = clone(res)  # the written values need a node of their own
    _write(self, res._data)
    if view_rebase:
        rebase_base(self, gradient_edge(res))
    else:
        self._grad_fn = res._grad_fn
        self._output_nr = res._output_nr
        self._requires_grad = True
    return self


def _check_castable(op: str, res: Tensor, self: Tensor) -> None:
    if res.dtype.category > self.dtype.category:
        raise RuntimeError(f"{op}: result type {res.dtype.name} can't be cast to the desired "
                           f"output type {self.dtype.name}")


def _binary_inplace(name: str, fn):
    def method(self, other, **kw) -> Tensor:
        alpha = kw.pop("alpha", 1)
        if kw:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kw)}")
        if alpha != 1:
            other = other * alpha
        return apply_inplace(self, name, fn, other)
    method.__name__ = name
    return method


for _name, _fn, _dunder in (("add_", ew.add, "__iadd__"), ("sub_", ew.sub, "__isub__"),
                            ("mul_", ew.mul, "__imul__"), ("div_", ew.div, "__itruediv__"),
                            ("pow_", ew.pow, "__ipow__")):
    tensor_method(_name, _dunder)(_binary_inplace(_name, _fn))


def _unary_inplace(name: str, fn):
    def method(self) -> Tensor:
        return apply_inplace(self, name, fn)
    method.__name__ = name
    return method


for _name in ("neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "sin", "cos",
              "floor", "ceil", "round", "reciprocal"):
    tensor_method(_name + "_")(_unary_inplace(_name + "_", getattr(ew, _name)))


@tensor_method("clamp_", "clip_")
def clamp_(self: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    return apply_inplace(self, "clamp_", lambda x: ew.clamp(x, min, max))


def _fill_value(x: Tensor, value):
    from tgrad.ops.creation import full
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        return value.to(x.dtype).expand(x.shape)
    return full(x.shape, value, dtype=x.dtype, device=x.device)


@tensor_method("fill_")
def fill_(self: Tensor, value) -> Tensor:
    return apply_inplace(self, "fill_", _fill_value, value)


@tensor_method("zero_")
def zero_(self: Tensor) -> Tensor:
    return apply_inplace(self, "zero_", _fill_value, 0)


def _copy_values(x: Tensor, src: Tensor) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.device != x.device:
        src = src.to(x.device)
    try:
        return src.to(x.dtype).expand(x.shape)
    except RuntimeError:
        raise RuntimeError(f"copy_: the source of shape {list(src.shape)} cannot be broadcast "
                           f"to the destination of shape {list(x.shape)}") from None


@tensor_method("copy_")
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved) into ``self``; the gradient flows to ``src``."""
    return apply_inplace(self, "copy_", _copy_values, src)


class IndexPut(Function):
    """y = x with y[key] = v;  dx = g with key positions zeroed;  dv = sum_to(g[key], v.shape)."""

    name = "index_put"
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, key, v):
        be = backend_of(x)
        out = be.clone(x._data)
        vals = v._data if isinstance(v, Tensor) else v
        try:
            be.index_put_(out, key, vals)
        except (IndexError, ValueError) as e:
            raise type(e)(f"index_put_: {e}") from None
        ctx.key = key
        ctx.v_shape = v.shape if isinstance(v, Tensor) else None
        return wrap(out, x.device)

    @staticmethod
    def backward(ctx, g):
        need_x, _, need_v = ctx.needs_input_grad
        gx = gv = None
        if need_x:
            gx = g * _mask_out(g, ctx.key)
        if need_v:
            gv = sum_to(g[ctx.key], ctx.v_shape)
        return gx, None, gv


register_op(IndexPut)


def _mask_out(like: Tensor, key) -> Tensor:
    from tgrad.ops.creation import ones
    m = ones(like.shape, dtype=like.dtype, device=like.device)
    backend_of(m).index_put_(m._data, key, 0)
    return m


@tensor_method("__setitem__")
def setitem(self: Tensor, key, value) -> None:
    """``self[key] = value``: basic keys write through a view, array keys via index_put."""
    nkey, basic = normalize_key(key)
    if isinstance(value, Tensor) and value.device != self.device:
        value = value.to(self.device)
    if isinstance(value, Tensor):
        value = value.to(self.dtype)
    if basic:
        view = self[key]
        if isinstance(value, Tensor):
            copy_(view, value)
        else:
            fill_(view, value)
        return
    apply_inplace(self, "index_put_", lambda x, v: IndexPut.apply(x, nkey, v), value)


def add_into(dst: Tensor, src: Tensor) -> None:
    """dst += src without recording (gradient accumulation)."""
    be = backend_of(dst)
    be.copy_(dst._data, be.binary("add", dst._data, be.cast(src._data, dst._data.dtype)))
    dst._storage.version += 1


_ = dtypes
