"""Forward-mode automatic differentiation: PyTorch's ``torch.autograd.forward_ad``.

Inside ``with dual_level():``, ``make_dual(x, t)`` gives a dual tensor: a view of ``x``
carrying the tangent ``t``. Every op run on dual tensors gives dual results whose tangent is
the Jacobian-vector product ``J t`` of the op; ``unpack_dual(y)`` returns
``(primal, tangent)``. As in PyTorch there is one level at a time (nesting raises). Levels
are per thread (``STATE.fw_current``; PyTorch's are process-wide): a level entered in one
thread is not active in another, so threads may run forward AD at the same time.

How tangents are computed (``_fw_apply``, reached from ``Function.apply`` through its check
of ``function._FW_ACTIVE`` (threads inside a level) and this thread's ``STATE.fw_level``, so
nothing costs anything while no thread is in a level):
- direct rules (``JVP_RULES``, one per op class) for the hot ops: the elementwise unary ops
  (their backward rules applied to the tangent: the Jacobian is diagonal; complex inputs
  use f'(z) itself, see _unary_rule), add / sub / mul / div, matmul, and the ops linear in
  their first tensor (views, reshape, getitem, index, expand, split, sum, mean, cumsum,
  clone, to, real, imag, view_as_real, view_as_complex, conj: the same op applied to the
  tangent, so the tangent of a view is the same view of the tangent), cat and index_put
  (the same write on the tangents: a repeated index keeps the value's writer), xlogy /
  xlog1py / logit
  (PyTorch's formulas, -inf or NaN where the vjp of the vjp would give 0);
- custom Functions: their ``jvp(ctx, *tangents)`` staticmethod (ctx shared with forward /
  setup_context; ``ctx.save_for_forward`` tensors are its ``ctx.saved_tensors``);
- every other built-in op: the vjp of the vjp, with one run of its forward. For y = f(x)
  and a dummy cotangent u, g(u) = J^T u is linear in u, and d<g(u), t>/du = J t: one
  backward with create_graph and one more backward, exact for every op that has a (twice
  differentiable) backward rule.
Complex tensors (PyTorch's convention): the tangent of f at z along t is the R-linear
(df/dz) t + (df/dz̄) conj(t), f'(z) t for holomorphic f: the directional derivative of f
as a map of (Re z, Im z) pairs. The direct rules above are C-linear or written from f'(z);
the vjp of the vjp needs no special case: PyTorch's backward convention computes J^T u with
J the real Jacobian of the (Re, Im) pairs, so its derivative in u along t is J t.
Tangent computations are recorded by reverse mode like any op (when grad mode is on and a
tangent or a primal requires grad), so reverse-over-forward works. Integer and bool results
get no tangent. An output's tangent never shares memory with an input's unless the output
is a view (_shared). In-place ops on dual tensors update the tangent in place (through a
view: the base's tangent, created as zeros when the base had none).

Forward over reverse: backward passes run inside the level like any code. A node's saved
tensors carry their tangents (a saved input is the dual tensor itself; a saved output's
alias gets the output's tangent: _attach_saved), so each backward formula, made of tgrad
ops, gives gradients whose tangents are the formula's directional derivative: inside a
level, ``autograd.grad(f(x), x)`` of a dual ``x`` has tangent H t (a Hessian-vector
product), ``tgrad.func.jvp(grad(f))`` and ``jacfwd(jacrev(f))`` work as in PyTorch
(func.hessian computes jacrev(jacrev(f)): fewer passes with tgrad's looping vmap).
"""

from __future__ import annotations

from collections import namedtuple
from threading import Lock
from typing import Any

from tgrad import dtypes
from tgrad.autograd import function as _function
from tgrad.autograd.grad_mode import STATE, _DecoratorContextManager

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "What ``unpack_dual`` returns: ``(primal, tangent)``."


class _Level:
    """An active dual level. Tangents are stored on tensors as ``(level, tangent)`` (in the
    tensor's ``__dict__``, key ``_fw``), so those of an exited level are never read again."""

    __slots__ = ("idx",)

    def __init__(self, idx: int) -> None:
        self.idx = idx

    def apply(self, cls, args: tuple, kwargs: dict):
        return _fw_apply(self, cls, args, kwargs)


# This thread's level: STATE.fw_current (entered), STATE.fw_level (what ops route to: the
# entered level, or None while _fw_apply runs an op's plain forward or a rule). Both are
# thread-local; function._FW_ACTIVE counts the threads inside a level (under _ACTIVE_LOCK).
_ACTIVE_LOCK = Lock()


def enter_dual_level() -> int:
    """Enter a new forward-AD level in this thread and return its index (0: one level at a
    time per thread)."""
    if STATE.fw_current is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    lvl = _Level(0)
    with _ACTIVE_LOCK:
        _function._FW_ACTIVE += 1
    STATE.fw_current = STATE.fw_level = lvl
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit this thread's current level; every tangent of that level is dropped."""
    cur = STATE.fw_current
    if level is None:
        level = -1 if cur is None else cur.idx
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if cur is None or level != cur.idx:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    STATE.fw_current = STATE.fw_level = None
    with _ACTIVE_LOCK:
        _function._FW_ACTIVE -= 1


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) for a forward-AD level: ``with dual_level():``."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


def _level_for(level: int | None, who: str) -> _Level:
    cur = STATE.fw_current
    if cur is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level "
                           "exists, make sure to enter_dual_level() first.")
    if level is not None and level != cur.idx:
        raise RuntimeError(f"Invalid level given to {who}")
    return cur


def make_dual(tensor, tangent, *, level: int | None = None):
    """A view of ``tensor`` carrying ``tangent`` at the current level (PyTorch's checks: both
    floating point or complex, same shape and device; a tangent laid out differently from
    ``tensor`` is copied into its layout)."""
    lvl = _level_for(level, "_make_dual")
    tensor_cls = _tensor_cls()
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, tensor_cls):
            raise TypeError(f"make_dual: expected the {name} to be a Tensor, got "
                            f"{type(t).__name__}")
        if not _differentiable(t.dtype):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: "
                             f"{t.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"make_dual: the tangent is on {tangent.device} but the primal is "
                           f"on {tensor.device}; move the tangent with .to(primal.device)")
    if get_tangent(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {lvl.idx} is not supported.")
    active, STATE.fw_level = STATE.fw_level, None  # (None inside inference_mode)
    try:
        if tangent.stride() != tensor.stride() and tensor.numel() > 1:
            tangent = _like_layout(tensor).copy_(tangent)
        dual = tensor.view_as(tensor)
    finally:
        STATE.fw_level = active
    _set(dual, tangent)
    return dual


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at the current level: the primal is a view of it
    without the tangent; outside a level, or for a tensor with no tangent, ``(tensor,
    None)``."""
    if STATE.fw_current is None or STATE.inference:  # (inference_mode: forward AD is off,
        return UnpackedDualTensor(tensor, None)  # tangents unseen, as PyTorch's)
    lvl = _level_for(level, "_fw_primal")
    tangent = get_tangent(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    active, STATE.fw_level = STATE.fw_level, None  # (None inside inference_mode)
    try:
        primal = tensor.view_as(tensor)
    finally:
        STATE.fw_level = active
    primal.__dict__["_fw"] = (lvl, None)  # no tangent (not even its base's)
    return UnpackedDualTensor(primal, tangent)


def _differentiable(dtype) -> bool:
    """Whether tensors of ``dtype`` carry tangents: floating point and complex ones."""
    return dtype.is_floating_point or dtype.is_complex


# ------------------------------------------------------------------------- tangent storage
_Tensor = None


def _tensor_cls():
    global _Tensor
    if _Tensor is None:
        from tgrad.tensor import Tensor
        _Tensor = Tensor
    return _Tensor


def _set(t, tangent) -> None:
    t.__dict__["_fw"] = (STATE.fw_current, tangent)


def get_tangent(t):
    """``t``'s tangent at the current level, or None. A view without one of its own sees
    the same view of its base's tangent (the base got one by an in-place op)."""
    lvl = STATE.fw_current
    if lvl is None:
        return None
    e = t.__dict__.get("_fw")
    if e is not None and e[0] is lvl:
        return e[1]
    base = t._base
    if base is not None:
        e = base.__dict__.get("_fw")
        if e is not None and e[0] is lvl and e[1] is not None:
            tan = _view_of(e[1], base, t)
            _set(t, tan)
            return tan
    return None


def _attach_saved(o, tangent) -> None:
    """Give ``tangent`` (``o``'s) to the alias of ``o`` that its node saved for backward,
    if any (a saved output is kept as an alias without grad_fn, so it does not see ``o``'s
    tangent): a backward pass inside the level then differentiates through it (forward
    over reverse)."""
    node = o._grad_fn
    saved = None if node is None else node._saved
    if not saved:
        return
    from tgrad.autograd.node import HookedSavedTensor, SavedTensor
    lvl = STATE.fw_current
    for s in saved:
        if type(s) is SavedTensor and s.is_output and s.output_nr == o._output_nr:
            s.tensor.__dict__["_fw"] = (lvl, tangent)
        elif type(s) is HookedSavedTensor and s.is_output and s.output_nr == o._output_nr:
            s.fw = (lvl, tangent)  # given to the unpacked alias


def _like_layout(t):
    """Zeros with ``t``'s shape, dtype, device and strides (a tangent's layout)."""
    from tgrad.ops.creation import empty_strided
    return empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).zero_()


def _view_of(base_tangent, base, view):
    """``view``'s geometry relative to ``base`` applied to ``base_tangent`` (which has
    base's layout). A view of another dtype (``z.real``, ``z.imag``, ``view_as_real`` of a
    complex base: offsets and strides in real elements) reads the tangent's real view; a
    complex view of a real base (``view_as_complex``) the tangent's complex one."""
    from tgrad.ops.layout import as_strided
    prev = STATE.fw_level
    STATE.fw_level = None
    try:
        scale = 1
        if view.dtype is not base.dtype:
            if view.dtype.is_complex and not base.dtype.is_complex:
                return _complex_view_of(base_tangent, base, view)
            if not base.dtype.is_complex:
                raise NotImplementedError(
                    f"forward AD: the tangent of a {view.dtype.name} view of a "
                    f"{base.dtype.name} tensor that got its tangent later (by an in-place "
                    f"op) is not supported; make the view after the in-place op")
            from tgrad.ops.complex_ops import view_as_real
            base_tangent, scale = view_as_real(base_tangent), 2
        off = (view.storage_offset() - scale * base.storage_offset()
               + base_tangent.storage_offset())
        return as_strided(base_tangent, view.shape, view.stride(), off)
    finally:
        STATE.fw_level = prev


def _complex_view_of(base_tangent, base, view):
    """The complex ``view`` (offset and strides in complex elements) of a real ``base``
    applied to ``base_tangent``: its (re, im) pairs, shape view.shape + (2,), strides
    doubled plus 1, read from the real tangent at the view's float offset, as complex."""
    from tgrad.ops.complex_ops import view_as_complex
    from tgrad.ops.layout import as_strided
    off = 2 * view.storage_offset() - base.storage_offset() + base_tangent.storage_offset()
    pairs = as_strided(base_tangent, (*view.shape, 2), (*(2 * s for s in view.stride()), 1),
                       off)
    return view_as_complex(pairs)


def inplace_update(self, res) -> None:
    """After an in-place op wrote ``res`` into ``self``: ``self``'s tangent becomes
    ``res``'s, written in place (so views and the base see it). Called by apply_inplace
    while a level is active."""
    _write_tangent(self, get_tangent(res))


def accumulate_grad_tangent(var_grad, grad) -> None:
    """AccumulateGrad's ``var_grad += grad`` without create_graph inside a level (an
    existing ``.grad``, written in place): var_grad's tangent becomes its own (zeros where
    it had none) plus grad's, as PyTorch's in-place add gives: d(old + g) = t_old + t_g.
    (A first ``.grad`` made without create_graph has no tangent, as PyTorch's detached one;
    with create_graph, ``old + grad`` is an ordinary op with tangents.)"""
    new = get_tangent(grad)
    if new is None:
        return  # t_old + 0: unchanged
    old = get_tangent(var_grad)
    if old is not None:
        lvl = STATE.fw_level
        STATE.fw_level = None
        try:
            new = old + new
        finally:
            STATE.fw_level = lvl
    _write_tangent(var_grad, new)


def _write_tangent(self, new) -> None:
    """``self``'s tangent becomes a copy of ``new`` (None: zeros where it had one), written
    in place (a view writes its base's, created as zeros where the base had none)."""
    lvl = STATE.fw_level
    old = get_tangent(self)
    if new is None and old is None:
        return
    STATE.fw_level = None
    try:
        if old is None:
            base = self._base
            if base is not None:
                if get_tangent(base) is None:
                    _set(base, _like_layout(base))
                old = get_tangent(self)
            else:
                old = _like_layout(self)
                _set(self, old)
        if new is None:
            old.zero_()
        else:
            old.copy_(new)
    finally:
        STATE.fw_level = lvl
    _attach_saved(self, get_tangent(self))


# ------------------------------------------------------------------------------ tangents
def _zeros_like(t):
    from tgrad.ops.creation import zeros_like
    return zeros_like(t)


def _unary_rule(name: str):
    from tgrad.ops.elementwise import COMPLEX_DERIVATIVES, UNARY_RULES
    saves, _, rule = UNARY_RULES[name]
    holo = COMPLEX_DERIVATIVES.get(name)

    def jvp(args, tangents, out):
        # real x: a diagonal Jacobian, f'(x) t: the backward rule on the tangent. Complex
        # z: the backward rule is g conj(f'(z)) (PyTorch's convention), so the tangent is
        # computed from f'(z) itself: f'(z) t for the holomorphic ops, -t for neg and, for
        # |z| (not holomorphic), d|z| = Re(conj(sgn z) t), the R-linear map.
        x, t = args[0], tangents[0]
        sx, sy = x if saves == "x" else None, out if saves == "y" else None
        if not x.dtype.is_complex:
            return rule(t, sx, sy)
        if name == "neg":
            return -t
        if name == "abs":
            from tgrad.ops.complex_ops import complex_sgn, conj_of, real
            return real(conj_of(complex_sgn(x)) * t)
        return t * holo(sx, sy)
    return jvp


def _linear_first(cls):
    """Ops linear in their first argument: the same op on its tangent (used only while the
    other arguments carry none: _FIRST_ONLY). A view's tangent is made as a recorded view
    (view_apply), as the primal is, so an in-place op through the view can write it when
    the new tangent requires grad (forward over reverse)."""
    def jvp(args, tangents, out):
        if isinstance(out, _tensor_cls()) and out._base is not None:
            from tgrad.ops._common import view_apply
            return view_apply(cls, tangents[0], *args[1:])
        return cls.apply(tangents[0], *args[1:])
    return jvp


def _is_number(x) -> bool:
    return not isinstance(x, _tensor_cls())


def _add_sub(sign: float):
    # d(a + b) = ta + tb;  d(a - b) = ta - tb (broadcast to the output's shape; a lone
    # input tangent comes back as it is or expanded, and _fw_apply copies it: see _shared)
    def jvp(args, tangents, out):
        ta, tb = tangents
        if tb is None:
            return ta.expand(out.shape)
        tb = tb if sign > 0 else -tb
        return tb.expand(out.shape) if ta is None else ta + tb
    return jvp


def _mul(args, tangents, out):
    # d(a b) = ta b + a tb (each product already has the output's shape)
    (a, b), (ta, tb) = args, tangents
    r = None if ta is None else ta * b
    s = None if tb is None else a * tb
    return s if r is None else r if s is None else r + s


def _div(args, tangents, out):
    # d(a / b) = ta / b - (a / b) tb / b
    b, (ta, tb) = args[1], tangents
    if tb is None:
        return ta / b
    num = -(out * tb) if ta is None else ta - out * tb
    return num / b


def _matmul(args, tangents, out):
    # d(a @ b) = ta @ b + a @ tb
    from tgrad.ops.matmul import matmul
    (a, b), (ta, tb) = args, tangents
    r = None if ta is None else matmul(ta, b)
    s = None if tb is None else matmul(a, tb)
    return s if r is None else r if s is None else r + s


def _cat(args, tangents, out):
    # cat / stack(dim, *xs): the tangent is the same op of the tangents (zeros where none)
    from tgrad.ops.shape import Cat, Stack
    ts = [_zeros_like(x) if t is None else t for x, t in zip(args[1:], tangents[1:])]
    return (Stack if out.ndim == args[1].ndim + 1 else Cat).apply(args[0], *ts)


def _index_put(args, tangents, out):
    # d(x with x[key] = v) = tx with tx[key] = tv (PyTorch's rule: the same write on the
    # tangents), so a repeated index keeps the primal's winner; the vjp of the vjp would
    # add every writer's tangent there (the backward gives each duplicate g[key])
    from tgrad.ops.inplace import IndexPut
    x, key, v = args
    tx, tv = tangents[0], tangents[2]
    tx = _zeros_like(x) if tx is None else tx
    if tv is None:
        tv = 0.0 if _is_number(v) else _zeros_like(v)
    return IndexPut.apply(tx, key, tv)


def _embedding(args, tangents, out):
    # d(weight[input]) = tweight[input]: padding_idx and scale_grad_by_freq shape only the
    # backward (the vjp of the vjp would carry them into the tangent)
    from tgrad.nn._composite import _Embedding
    return _Embedding.apply(tangents[0], (args[1][0], None, False))


def _xlogy_like(cls, pole: float):
    # PyTorch's formulas for xlogy (pole 0) and xlog1py (pole -1):
    # d cls(x, y) = cls(tx, y), 0 where x == 0 and y <= pole, + ty x / (y - pole); the vjp
    # of the vjp would give 0 where tx's factor log(y - pole) is -inf or NaN (cls(g, y) is
    # 0 wherever g is, as a cotangent must be)
    from tgrad.ops import elementwise as ew

    def jvp(args, tangents, out):
        (x, y), (tx, ty) = args, tangents
        r = None if tx is None else ew.where(
            ew.logical_and(ew.eq(x, 0), ew.le(y, pole)), 0.0, cls.apply(tx, y))
        s = None if ty is None else ty * x / (y - pole)
        d = s if r is None else r if s is None else r + s
        return d.expand(out.shape)
    return jvp


def _logit(args, tangents, out):
    # a diagonal Jacobian: the backward's formula on the tangent (constant NaN / 0 outside
    # the domain, where the vjp of the vjp gives 0)
    from tgrad.ops.extras import Logit
    return Logit.derivative_times(tangents[0], args[0], args[1])


def _build_rules() -> dict:
    """Rules keyed by op class (never by name: several classes share one, e.g. div and
    div with rounding_mode, round and round(decimals)). A subclass that keeps its parent's
    forward (SumAll of Sum, Select of getitem, T of view, SqueezeDim of squeeze, Transpose
    of permute) is the same op under another node name and gets the same rule."""
    from tgrad.ops import elementwise as ew
    from tgrad.ops._common import OPS
    rules = {OPS[n]: _unary_rule(n) for n in ew.UNARY_RULES}
    for name in ("view", "reshape", "unsqueeze", "squeeze", "permute", "expand", "getitem",
                 "index", "diagonal", "unfold", "as_strided", "split", "split_with_sizes",
                 "unbind", "clone", "sum", "mean", "cumsum", "sum_to", "to", "flip", "gather",
                 # R-linear in the complex input: the same op on the tangent (a view of
                 # the tangent, so an in-place op through the view reaches the base's)
                 "real", "imag", "view_as_real", "view_as_complex", "conj"):
        if name in OPS:
            for c in _same_forward(OPS[name]):
                rules[c] = _linear_first(c)
                _FIRST_ONLY.add(c)
                if name not in ("to", "real", "imag", "view_as_real", "view_as_complex",
                                "conj"):
                    _KEEPS_COMPLEX.add(c)
    for op, rule in ((OPS["add"], _add_sub(1.0)), (OPS["sub"], _add_sub(-1.0)),
                     (OPS["mul"], _mul), (OPS["div"], _div), (OPS["matmul"], _matmul),
                     (OPS["cat"], _cat), (OPS["stack"], _cat), (OPS["index_put"], _index_put)):
        for c in _same_forward(op):  # sub's RsubBackward0/1 variants too
            rules[c] = rule
            if op is not OPS["matmul"]:  # (PyTorch's matmul refuses the mixed dtypes)
                _KEEPS_COMPLEX.add(c)
    from tgrad.ops.extras import Logit, Xlogy
    from tgrad.ops.special import Xlog1py
    for cls, pole in ((Xlogy, 0.0), (Xlog1py, -1.0)):
        for c in _same_forward(cls):  # (and the number-operand node variants)
            rules[c] = _xlogy_like(cls, pole)
    rules[Logit] = _logit
    from tgrad.nn._composite import _Embedding
    rules[_Embedding] = _embedding
    _FIRST_ONLY.add(_Embedding)
    # max_unpool scatters x into zeros, a repeated index keeping one writer: linear in x
    # for its fixed indices, the same scatter of tx keeps the primal's winner (the vjp of
    # the vjp, a scatter add, would sum every writer's tangent there)
    from tgrad.nn._conv import _MAX_UNPOOL
    for c in _MAX_UNPOOL.values():
        rules[c] = _linear_first(c)
        _FIRST_ONLY.add(c)
    return rules


def _enter_tangent(cls, a, t):
    """The tangent ``t`` of ``a`` as the op ``cls`` takes it, where one of them is complex
    and the other real: a real tangent of a complex primal as complex; a complex tangent of
    a real primal as it is for the ops C-linear in their tangents (PyTorch's formulas for
    them keep it: 2 d, d.sum(), d * d, views), else real (the imaginary part dropped with
    PyTorch's warning, as PyTorch's exp, sin, neg, pow, abs, to do)."""
    global JVP_RULES
    if not t.dtype.is_complex:
        return t.to(a.dtype)
    if JVP_RULES is None:
        JVP_RULES = _build_rules()
    return t if cls in _KEEPS_COMPLEX else t.to(a.dtype)


def _same_forward(cls) -> list:
    """``cls`` and its subclasses (recursively) that do not define their own forward."""
    out, todo = [cls], list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        if "forward" not in c.__dict__:
            out.append(c)
            todo.extend(c.__subclasses__())
    return out


JVP_RULES: dict | None = None  # op class -> rule(args, tangents, out); built on first use
_FIRST_ONLY: set = set()  # classes whose rule needs the other arguments to have no tangent
# classes through which a complex tangent of a real primal stays complex (_enter_tangent)
_KEEPS_COMPLEX: set = set()


def _vjp_of_vjp(cls, args: tuple, kwargs: dict, tangents: list) -> tuple:
    """``cls``'s outputs and their tangents for the inputs' ``tangents``, from one run of its
    forward (a random op draws once: the tangent uses the primal's mask): the inputs that
    carry a tangent enter it requiring grad; with u a dummy cotangent, g(u) = J^T u (one
    backward, create_graph) and J t = d<g(u), t>/du (one more backward). None for outputs
    that are neither floating point nor complex (complex: see the module docstring). The
    double-backward trick of tgrad.autograd.functional.jvp (_double_backward_jvp)."""
    from tgrad.autograd import enable_grad
    from tgrad.autograd.functional import _double_backward_jvp
    tensor_cls = _tensor_cls()
    grad_on = STATE.enabled
    # the primal is recorded as usual when grad mode is on and an argument requires grad
    primal_grad = grad_on and any(isinstance(a, tensor_cls) and a._requires_grad
                                  for a in args)
    # the tangent is recorded when something it depends on requires grad
    record = primal_grad or (grad_on and any(t is not None and t._requires_grad
                                             for t in tangents))
    xs, ts, new_args, stand_ins = [], [], list(args), []
    with enable_grad():
        for i, (a, t) in enumerate(zip(args, tangents)):
            if t is None:
                continue
            if record and a._requires_grad:
                # an alias in a's graph, but a node of its own: the first backward stops
                # there, so an input that depends on another (op(x, exp(x))) does not
                # give that one its gradient too (its tangent would count twice)
                x = a.view_as(a)
            else:
                x = a.detach().requires_grad_()
                stand_ins.append(i)
            # x may be saved by the primal's node: it carries a's tangent for a backward
            # pass run inside the level (forward over reverse)
            x.__dict__["_fw"] = (STATE.fw_current, t)
            new_args[i] = x
            xs.append(x)
            ts.append(t if t.dtype is a.dtype else t.to(a.dtype))
        out = cls.apply(*new_args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        result = [_zeros_like(y) if isinstance(y, tensor_cls) and _differentiable(y.dtype)
                  else None for y in outs]
        diff = [k for k, y in enumerate(outs) if isinstance(y, tensor_cls) and y._requires_grad
                and _differentiable(y.dtype)]
        if diff:
            jv = _double_backward_jvp([outs[k] for k in diff], xs, ts, record)
            for k, j in zip(diff, jv):
                if j is not None:
                    result[k] = j
    if not primal_grad:  # its graph leads to the detached inputs: not the primal's
        if isinstance(out, tuple):
            out = tuple(y.detach() if isinstance(y, tensor_cls) else y for y in out)
        else:
            out = out.detach()
    elif stand_ins:  # the primal's node: no edges to the detached stand-ins (as PyTorch's)
        node = next((y._grad_fn for y in outs if isinstance(y, tensor_cls)
                     and isinstance(y._grad_fn, _function.BackwardCFunction)), None)
        if node is not None:
            edges, metas = list(node._edges), list(node._in_meta)
            for i in stand_ins:
                edges[i], metas[i] = (None, 0), None  # a gradient returned there is dropped
            node._edges, node._in_meta = tuple(edges), tuple(metas)
    return out, result


_JVP_CTX: dict = {}  # node class -> its subclass seen by jvp (see _jvp_ctx_cls)


def _jvp_ctx_cls(node_cls):
    """``node_cls`` with ``saved_tensors`` returning the ``save_for_forward`` tensors: ctx's
    class while a custom Function's jvp runs (so reverse mode's saved_tensors has no
    forward-mode check)."""
    c = _JVP_CTX.get(node_cls)
    if c is None:
        c = type(node_cls.__name__, (node_cls,), {
            "saved_tensors": property(lambda self: tuple(self.saved_for_forward))})
        _JVP_CTX[node_cls] = c
    return c


def _custom_jvp(cls, args: tuple, kwargs: dict, tangents: list):
    """Run custom Function ``cls`` and its ``jvp(ctx, *tangents)`` with the forward's ctx."""
    tensor_cls = _tensor_cls()
    orig = cls.__dict__["_run_forward"]
    fn = orig.__func__
    box = []

    def run(ctx, *a, **k):
        box.append(ctx)
        raw = fn(ctx, *a, **k)
        box.append(raw)  # the forward's own outputs (before apply aliases inputs as views)
        # (apply clears these on the node once it is wired; the jvp and its checks read them)
        box.append((ctx.dirty_tensors, ctx.non_differentiable, ctx.saved_for_forward))
        return raw
    cls._run_forward = staticmethod(run)
    try:
        out = cls.apply(*args, **kwargs)
    finally:
        cls._run_forward = orig
    ctx, raw = box[0], box[1]
    ctx.dirty_tensors, ctx.non_differentiable, ctx.saved_for_forward = box[2]
    ins = []
    for a, t in zip(args, tangents):
        if t is not None:
            ins.append(t)
        elif isinstance(a, tensor_cls) and _differentiable(a.dtype):
            ins.append(_zeros_like(a))
        else:
            ins.append(None)
    node_cls = type(ctx)
    ctx.__class__ = _jvp_ctx_cls(node_cls)  # saved_tensors: the save_for_forward tensors
    try:
        res = cls.jvp(ctx, *ins)
    finally:
        ctx.__class__ = node_cls
    outs = out if isinstance(out, tuple) else (out,)
    res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
    if len(res) != len(outs):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {len(res)})")
    raws = raw if isinstance(raw, tuple) else (raw,)
    for i, (o, t) in enumerate(zip(outs, res)):
        if t is not None and isinstance(o, tensor_cls) and t.shape != o.shape:
            raise RuntimeError(f"Function {cls.__name__}.jvp returned a tangent of shape "
                               f"{list(t.shape)} for an output of shape {list(o.shape)}")
        if t is not None and i < len(raws):
            _check_custom_tangent(ctx, args, ins, raws[i], t, i)
    ctx.dirty_tensors = ctx.non_differentiable = ctx.saved_for_forward = ()  # (as apply)
    return out, list(res)


def _check_custom_tangent(ctx, args: tuple, ins: list, o, t, i: int) -> None:
    """PyTorch's checks of the tangent ``t`` a custom jvp returned for forward output ``o``
    (number ``i``): none for an output that is not differentiable (an integer one, or one
    marked non-differentiable), the input's tangent itself (modified in place) for an
    input the forward modified in place (marked dirty), and a view of the input's tangent
    for an output that is a view of an input, or an input returned as is (not marked
    dirty), so the output's tangent stays the view of the input's tangent that in-place
    ops rely on."""
    tensor_cls = _tensor_cls()
    if not isinstance(o, tensor_cls):
        return
    if not _differentiable(o.dtype) or _function._is_in(o, ctx.non_differentiable):
        raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but the "
                           "corresponding forward output is not a differentiable Tensor. "
                           "You should return None at that position instead.")
    if ctx.dirty_tensors and _function._is_in(o, ctx.dirty_tensors):
        for a, ta in zip(args, ins):  # the modified input's tangent, modified in place
            if a is o and ta is not None and t is not ta:
                raise RuntimeError(
                    "An inplace custom Function is not modifying the forward mode gradients "
                    "inplace. If the forward is modifying an input inplace, then the jvp "
                    "function must modify the corresponding gradient inplace.")
        return
    for a, ta in zip(args, ins):
        if (ta is not None and isinstance(a, tensor_cls)
                and (o is a or (o._base is not None and o._storage is a._storage))):
            if t._base is None:
                raise RuntimeError("A custom Function's forward is returning a view (or an "
                                   "input as-is) but the jvp is not returning a view.")
            if t._storage is not ta._storage:
                raise RuntimeError("A custom Function is returning a view but the jvp is not "
                                   "returning a view of the given grad input.")
            return


def _fw_apply(lvl: _Level, cls, args: tuple, kwargs: dict):
    """``cls.apply`` while a level is active: the outputs, with tangents when an input has
    one. Runs with this thread's ``STATE.fw_level`` cleared (the forward and the rules see
    plain tensors); the op's forward runs once."""
    global JVP_RULES
    tensor_cls = _tensor_cls()
    tangents = [get_tangent(a) if isinstance(a, tensor_cls) else None for a in args]
    STATE.fw_level = None
    try:
        if all(t is None for t in tangents):
            return cls.apply(*args, **kwargs)
        # a real tangent of a complex primal enters the op as complex; a complex tangent of
        # a real primal stays complex through the ops linear in it (_keeps_complex), else
        # drops its imaginary part with PyTorch's warning (as PyTorch's)
        tangents = [t if t is None or t.dtype.is_complex == a.dtype.is_complex
                    else _enter_tangent(cls, a, t) for a, t in zip(args, tangents)]
        if cls.jvp is not _function.Function.jvp:
            out, res = _custom_jvp(cls, args, kwargs, tangents)
        elif not cls.__module__.startswith("tgrad."):
            raise NotImplementedError("You must implement the jvp function for custom "
                                      "autograd.Function to use it with forward mode AD.")
        else:
            if JVP_RULES is None:
                JVP_RULES = _build_rules()
            rule = None if kwargs else JVP_RULES.get(cls)
            if rule is not None and cls in _FIRST_ONLY and any(
                    t is not None for t in tangents[1:]):
                rule = None
            if rule is None:
                out, res = _vjp_of_vjp(cls, args, kwargs, tangents)
            else:
                out = cls.apply(*args, **kwargs)
                r = rule(args, tangents, out)
                res = list(r) if isinstance(r, tuple) else [r]
        outs = out if isinstance(out, tuple) else (out,)
        for o, t in zip(outs, res):
            if t is None or not isinstance(o, tensor_cls) or not _differentiable(o.dtype):
                continue
            if t.dtype is not o.dtype:
                t = t.to(dtypes.to_complex(o.dtype) if t.dtype.is_complex
                         and not o.dtype.is_complex and cls in _KEEPS_COMPLEX else o.dtype)
            elif _shared(t, o, args, tangents):
                t = t.clone()
            o.__dict__["_fw"] = (lvl, t)
            if o._grad_fn is not None:
                _attach_saved(o, t)
        return out
    finally:
        STATE.fw_level = lvl


def _shared(t, o, args: tuple, tangents: list) -> bool:
    """Whether ``t``, the new tangent of output ``o``, must be copied: it is (a view of) an
    input's tangent, so an in-place op on one tensor would change the other's tangent, or a
    broadcast (a zero stride: in-place ops on ``o`` could not write it), while ``o`` is not
    itself a view of an input (whose tangent is the same view of the input's tangent)."""
    st = t._storage
    if not (any(x is not None and x._storage is st for x in tangents)
            or any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape))):
        return False
    ost = o._storage
    return not any(isinstance(a, _Tensor) and a._storage is ost for a in args)
