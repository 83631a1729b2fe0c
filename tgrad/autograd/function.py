"""``Function``: custom differentiable operations, and the mechanism every built-in op uses.

A subclass defines ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grad_outputs)``
as staticmethods and is called through ``apply``. ``ctx`` is the graph node itself (as in
PyTorch): ``save_for_backward``/``saved_tensors``, ``mark_dirty``,
``mark_non_differentiable``, ``needs_input_grad``, ``set_materialize_grads`` and any
attribute you set on it.
"""

from __future__ import annotations

import functools
import traceback
import warnings
from typing import Any

from tgrad.autograd import profiler_hooks
from tgrad.autograd.grad_mode import SHARED, STATE
from tgrad.autograd.node import (
    FREED_MESSAGE,
    HookedSavedTensor,
    Node,
    RawSavedTensor,
    SavedTensor,
    grad_accumulator,
)
from tgrad.autograd.node import _seq as _node_seq

_NONE_EDGE = (None, 0)
_new_node = object.__new__
_new_saved = object.__new__  # SavedTensor without __init__ (_wire_graph)
# needs_input_grad of a built-in op under no_grad (its forward reads it as "recording")
_FALSES = tuple((False,) * n for n in range(9))
Tensor = None  # tgrad.tensor.Tensor, bound on first use (tensor.py imports this package)
Storage = None  # tgrad.tensor.Storage, bound with it
# How many threads are inside a forward-AD level (forward_ad.enter_dual_level /
# exit_dual_level, under their lock). Levels are per thread (STATE.fw_level, STATE.fw_current);
# this process-wide count keeps the hot path to one global read while no thread has one:
# Function.apply reads STATE.fw_level, which routes ops to forward_ad._fw_apply, only when
# it is non-zero.
_FW_ACTIVE = 0
# How many selective-checkpoint modes are entered (tgrad.utils.checkpoint): while non-zero,
# Function.apply routes the ops it records to this thread's STATE.sac, when there is one.
_SAC_ACTIVE = 0


def fw_level():
    """This thread's active forward-AD level (forward_ad._Level), or None outside one and
    while forward_ad runs an op's plain forward."""
    return STATE.fw_level if _FW_ACTIVE else None


def differentiable_formula() -> bool:
    """Whether a backward formula (or an op's no-grad fast path) must run as tgrad ops
    through ``Function.apply``: under create_graph (grad mode on), or inside a forward-AD
    level, whose tangents flow through it (forward over reverse). False: a plain backward,
    where a fused primitive on the backend arrays gives the same values faster."""
    return STATE.enabled or (_FW_ACTIVE != 0 and STATE.fw_level is not None)


def _bind_tensor() -> None:
    global Tensor, Storage
    import importlib
    module = importlib.import_module("tgrad.tensor")
    Tensor, Storage = module.Tensor, module.Storage


def _zeros(*args, **kwargs):
    global _zeros
    from tgrad.ops.creation import zeros
    _zeros = zeros  # bound on first use (the op library imports this module)
    return zeros(*args, **kwargs)


def _sum_to(g, shape):
    global _sum_to
    from tgrad.ops.reduce import sum_to
    _sum_to = sum_to  # bound on first use
    return sum_to(g, shape)

_NOT_TENSOR = "not a tensor"  # _in_meta marker: the forward argument was not a Tensor

# Interned metadata. Every recorded op keeps a (shape, dtype, device) per differentiable input
# and output. As fresh tuples these were objects the garbage collector tracks (dtype and
# device are class instances): a graph of N ops kept alive made each full collection walk
# several of them per op. Instead one shared tuple per (shape, dtype) on each device, with
# its one-output ``_out_meta`` beside it, kept in the (interned) device's ``_metas``.
_METAS_LIMIT = 4096  # shapes that never repeat: start over rather than grow


def _meta_entry(shape: tuple, dtype, device) -> tuple:
    """``(meta, (meta,))`` for ``meta = (shape, dtype, device)``, one object per distinct
    value (the hot path reads ``device._metas`` inline and calls this on a miss)."""
    metas = device._metas
    entry = metas.get((shape, dtype))
    if entry is None:
        if len(metas) >= _METAS_LIMIT:
            metas.clear()
        meta = (shape, dtype, device)
        entry = metas[(shape, dtype)] = (meta, (meta,))
    return entry


class BackwardCFunction(Node):
    """The node (and ctx) created by ``Function.apply``; one subclass per Function.

    ctx fields default to class attributes so creating a node stays cheap (hot path)."""

    _forward_cls: type = None
    _node_name: str = ""
    to_save: tuple = ()
    non_differentiable: tuple = ()
    dirty_tensors: tuple = ()
    materialize_grads: bool = True
    needs_input_grad: tuple = ()
    _in_meta: tuple = ()
    _out_meta: tuple = ()
    # True for ops whose number arguments are operands (a + 2, x * 0.5): PyTorch wraps those
    # in tensors, so they keep a (None, 0) slot in next_functions.
    _scalar_edges: bool = False
    # forward argument positions PyTorch's node has no edge for (where's condition)
    _hidden_edges: tuple = ()
    # ctx.save_for_forward: the saved_tensors of a custom jvp (forward_ad._jvp_ctx_cls)
    saved_for_forward: tuple = ()
    # Function.keeps_indices (the node class also starts with _saved = (), so it is released)
    _keeps_indices: bool = False

    def name(self) -> str:
        return self._node_name

    @property
    def next_functions(self) -> tuple:
        """One ``(node, output_nr)`` per tensor argument of forward, as PyTorch lists them
        (``_edges`` keeps one per argument for the engine and gradient validation)."""
        edges = self._edges
        if self._scalar_edges and not self._hidden_edges:
            return edges
        keep = self._listed_slots(len(edges))
        return edges if keep is None else tuple([edges[i] for i in keep])

    def _listed_slots(self, n: int) -> list | None:
        """The positions of the node's ``n`` per-argument slots that next_functions lists
        (tensor arguments, numbers too for scalar_edges ops, less hidden_edges), or None
        when it lists them all."""
        metas, hidden, numbers = self._in_meta, self._hidden_edges, self._scalar_edges
        if len(metas) != n or (not hidden and (numbers or _NOT_TENSOR not in metas)):
            return None
        return [i for i, m in enumerate(metas)
                if i not in hidden and (numbers or m is not _NOT_TENSOR)]

    @next_functions.setter
    def next_functions(self, edges) -> None:
        self._edges = tuple(edges)

    def __call__(self, *grads):
        """The node's backward on ``grads``: one gradient per next_functions edge (a Tensor
        where there is one), as PyTorch's node call; ``apply`` gives one per forward
        argument."""
        out = tuple(self.apply(list(grads)))
        n = len(self._edges)
        if len(out) < n:
            out += (None,) * (n - len(out))
        keep = self._listed_slots(len(out))
        if keep is not None:
            out = tuple([out[i] for i in keep])
        return out[0] if len(out) == 1 else out

    # ---------------------------------------------------------------- ctx API
    def save_for_backward(self, *tensors) -> None:
        """Save tensors (or None) for ``backward``; read them back as ``ctx.saved_tensors``."""
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Save tensors (or None) for ``jvp`` (forward-mode AD), where ``ctx.saved_tensors``
        returns them."""
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(FREED_MESSAGE)
            return tuple(self.to_save)
        out = []
        for s in saved:
            if s is None:
                out.append(None)
            elif (type(s) is SavedTensor and not s.is_output and s.tensor._detached_seq is None
                  and s.tensor._storage.version == s.version):
                out.append(s.tensor)  # what s.unpack(self) returns (its checks pass): hot path
            else:
                out.append(s.unpack(self))
        return tuple(out)

    @property
    def _raw_saved_tensors(self) -> tuple:
        """One RawSavedTensor handle per saved tensor (PyTorch's ``_raw_saved_tensors``)."""
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(FREED_MESSAGE)
            return ()
        return tuple([RawSavedTensor(self, i) for i in range(len(saved))])

    # PyTorch's ``_saved_<name>`` / ``_raw_saved_<name>`` attributes are properties that
    # _install_saved_attributes puts on each op's node class from its ``saved_attributes``
    # table (resolved on access only). Not a __getattr__: a class with one loses CPython's
    # specialised attribute loads, which slowed every node attribute read in backward.

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that ``forward`` modified in place (they must be returned).

        Bumps each one's version counter, as PyTorch's does: ``forward`` may have changed
        the memory behind autograd's back (through ``.numpy()``), and a graph that saved
        the old values must then refuse to backward (an in-place op inside ``forward``
        bumps it once more, as in PyTorch)."""
        self.dirty_tensors = tensors
        if Tensor is None:
            _bind_tensor()
        for t in tensors:
            if isinstance(t, Tensor):
                t._storage.version += 1

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that get no gradient (e.g. indices)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """If False, ``backward`` receives None (not zeros) for outputs without gradient."""
        self.materialize_grads = bool(value)

    # ---------------------------------------------------------------- engine API
    def apply(self, grads: list) -> tuple:
        if self._released and self._keeps_indices:
            raise RuntimeError(FREED_MESSAGE)
        if self.materialize_grads and (len(grads) != 1 or grads[0] is None):
            # (one output whose gradient came: nothing to fill, the common case)
            for i, g in enumerate(grads):
                if g is None:
                    meta = self._out_meta[i]
                    if meta is not None:
                        shape, dtype, device = meta
                        grads[i] = _zeros(shape, dtype=dtype, device=device)
        out = self._forward_cls.backward(self, *grads)
        if type(out) is not tuple:  # (a user's list is one wrong gradient, as in PyTorch)
            out = tuple(out) if isinstance(out, list) and not \
                self._forward_cls._user_function else (out,)
        return _validate_grads(self, out)


# ------------------------------------------------------------ saved-tensor attributes
# An op class may state ``saved_attributes``: PyTorch's attribute name -> where tgrad's node
# keeps that value. Only the class's own table counts (a subclass with another node name,
# e.g. SumAll of Sum, states its own or has none). Specs:
#   int i          the i-th tensor given to save_for_backward (None where None was saved);
#                  unpacked as saved_tensors unpacks it (the input itself, or an alias of an
#                  output with this node as grad_fn); freed by backward; has _raw_saved_<name>
#   SavedSlot      the same, with a value for a number operand that saved None there
#   KeptTensor(a)  a tensor the op keeps as ctx attribute ``a`` (freed with the graph as far
#                  as the user sees; it has no raw handle: saved-tensor hooks never saw it)
#   str a          the ctx attribute ``a`` as it is (dims, sizes, flags); kept after backward
#   callable f     f(node) (a value derived from what the node keeps)


class SavedSlot:
    """Saved tensor ``index``; where the operand was a number (the slot holds None),
    ``number(node)`` instead (e.g. PyTorch's wrapped-number tensor of ``x * 2.5``)."""

    __slots__ = ("index", "number")

    def __init__(self, index: int, number=None) -> None:
        self.index = index
        self.number = number


class KeptTensor:
    """A tensor the node keeps as the ctx attribute ``attr`` (not through
    save_for_backward)."""

    __slots__ = ("attr",)

    def __init__(self, attr: str) -> None:
        self.attr = attr


def saved_tensor_strides(node: BackwardCFunction, index: int) -> tuple:
    """The strides of saved tensor ``index`` (read from the tensor itself, without the
    version check: strides do not change in place); PyTorch's freed-graph error after a
    backward without retain_graph. For ``saved_attributes`` callables (``_sym_strides``)."""
    saved = node._saved
    if saved is None:
        raise RuntimeError(FREED_MESSAGE)
    slot = saved[index]
    t = slot.tensor if type(slot) is SavedTensor else slot.unpack(node)
    return tuple(t.stride())


def _saved_table(node: BackwardCFunction) -> dict:
    return node._forward_cls.__dict__.get("saved_attributes") or {}


def _slot_value(node: BackwardCFunction, index: int):
    saved = node._saved
    if saved is None:
        if node._released:
            raise RuntimeError(FREED_MESSAGE)
        return None
    slot = saved[index]
    return None if slot is None else slot.unpack(node)


def saved_attribute(node: BackwardCFunction, name: str):
    """``node._saved_<x>`` / ``node._raw_saved_<x>`` from the op's ``saved_attributes``
    table; AttributeError for names it does not state, as for any unknown attribute."""
    raw = name.startswith("_raw_saved_")
    spec = _saved_table(node).get(name[4:] if raw else name)
    kind = type(spec)
    if spec is None or (raw and kind not in (int, SavedSlot, KeptTensor)):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{name}'")
    if raw:
        if kind is KeptTensor:
            raise NotImplementedError(
                f"{node.name()}.{name}: tgrad keeps this tensor outside save_for_backward "
                f"(as ctx.{spec.attr}), so it has no SavedTensor handle and saved-tensor "
                f"hooks do not apply to it; read {name[4:]} instead")
        return RawSavedTensor(node, spec if kind is int else spec.index)
    if kind is int:
        return _slot_value(node, spec)
    if kind is SavedSlot:
        value = _slot_value(node, spec.index)
        if value is None and spec.number is not None:
            return spec.number(node)
        return value
    if kind is KeptTensor:
        if node._released:
            raise RuntimeError(FREED_MESSAGE)
        return getattr(node, spec.attr)
    if kind is str:
        return getattr(node, spec)
    return spec(node)


def _validate_grads(node: BackwardCFunction, grads: tuple) -> tuple:
    """Check the number, type, shape, dtype and device of the gradients a backward returned
    (one per forward argument; None for arguments that are not tensors)."""
    metas = node._in_meta
    n = len(metas)
    if len(grads) != n:
        if len(grads) > n and all(g is None for g in grads[n:]):
            grads = grads[:n]
        else:
            raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(grads)})")
    result = None  # a list only once some gradient is replaced
    for i, g in enumerate(grads):
        if g is None:
            continue
        meta = metas[i]
        if type(g) is Tensor and meta is not None and meta is not _NOT_TENSOR \
                and g._data.shape == meta[0] and g._dtype is meta[1] and g._device is meta[2]:
            continue  # the common case: nothing to check further
        new = _checked_grad(node, i, g, meta)
        if new is not g:
            if result is None:
                result = list(grads)
            result[i] = new
    return grads if result is None else tuple(result)


def _checked_grad(node: BackwardCFunction, i: int, g, meta):
    """Gradient ``i`` made to fit its input's (shape, dtype, device), or a clear error."""
    if meta is None:  # a tensor input that needs no gradient: drop it
        return None
    if meta is _NOT_TENSOR:
        raise RuntimeError(
            f"function {node.name()} returned a gradient different than None at position "
            f"{i + 1}, but the corresponding forward input was not a Tensor")
    if not isinstance(g, Tensor):
        raise RuntimeError(f"function {node.name()} returned a {type(g).__name__} as gradient "
                           f"{i}: expected Variable or None (got {type(g).__name__})")
    shape, dtype, device = meta
    if g.shape != shape:
        if expandable(shape, g.shape):
            g = _sum_to(g, shape)
        else:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}")
    if g.dtype is not dtype:
        if g.dtype.is_complex and not dtype.is_complex:
            if node._forward_cls._user_function:  # PyTorch's validate_outputs: an error
                raise RuntimeError(
                    f"Function {node.name()} returned an invalid gradient at index {i} - "
                    f"got a complex ({g.dtype}) gradient for a real ({dtype}) input; return "
                    f"its real part (Expected isFloatingType(grad.scalar_type()) || "
                    f"(input_is_complex == grad_is_complex) to be true, but got false.)")
            # tgrad's own ops on a real input computed in complex: the real part (what
            # PyTorch's ops do themselves, handle_r_to_c), the gradient of a real input
            from tgrad.ops.complex_ops import real
            g = real(g)
        g = g.to(dtype)
    if g.device is not device:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - expected "
            f"device {device} but got {g.device}")
    return g


def expandable(shape: tuple, to: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``to`` without enlarging it."""
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != t and s != 1:
            return False
    return True


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs) -> None:
        super().__init__(name, bases, attrs)
        if "vjp" in attrs and bases:  # PyTorch's alias: a Function may define vjp instead
            if cls.backward is not Function.backward:
                def backward(ctx, *grads):  # (PyTorch raises when the backward runs)
                    raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom "
                                       "Function is not allowed. You should only implement "
                                       "one of them.")
                cls.backward = staticmethod(backward)
            else:
                cls.backward = attrs["vjp"]
        # PyTorch's two styles: forward(ctx, *args), or forward(*args) plus
        # setup_context(ctx, inputs, output) (when a class defines setup_context)
        if not getattr(cls.setup_context, "base_setup_context", False):
            forward, setup = cls.forward, cls.setup_context

            def run_forward(ctx, *args, **kwargs):
                output = forward(*args, **kwargs)
                setup(ctx, args, output)
                return output
        else:
            run_forward = cls.forward
        # a user's Function (not one of tgrad's ops): its view outputs may not be modified in
        # place (see Tensor._custom_function_view), and inside tgrad.func's transforms it
        # must be usable there as PyTorch requires (_check_in_transform)
        cls._user_function = cls.name is None and not cls.__module__.startswith("tgrad.")
        if cls._user_function:
            unchecked = run_forward

            def run_forward(ctx, *args, **kwargs):
                if STATE.func_depth:
                    _check_in_transform(cls)
                return unchecked(ctx, *args, **kwargs)
        cls._run_forward = staticmethod(run_forward)
        cls._returns_views = cls._user_function or cls.returns_views
        node_name = attrs.get("node_name") or f"{name}Backward"
        cls._backward_cls = type(node_name, (BackwardCFunction,),
                                 {"_forward_cls": cls, "_node_name": node_name,
                                  "_scalar_edges": cls.scalar_edges,
                                  "_hidden_edges": cls.hidden_edges,
                                  "_released_attributes": cls.released_attributes,
                                  **({"_saved": (), "_keeps_indices": True}
                                     if cls.keeps_indices else {})})
        _install_saved_attributes(cls)

    def __setattr__(cls, name: str, value) -> None:
        super().__setattr__(name, value)
        if name == "saved_attributes" and "_backward_cls" in cls.__dict__:
            _install_saved_attributes(cls)  # a table stated after the class body


def _saved_property(name: str) -> property:
    return property(lambda node: saved_attribute(node, name),
                    doc=f"PyTorch's {name} of this node (see saved_attribute)")


def _install_saved_attributes(cls) -> None:
    """Properties on ``cls``'s node class for the names of its own ``saved_attributes``
    table: ``_saved_<x>``, and ``_raw_saved_<x>`` for saved tensors (the specs that have a
    slot or a kept tensor). Names no table states are ordinary missing attributes."""
    node_cls = cls._backward_cls
    for name, spec in (cls.__dict__.get("saved_attributes") or {}).items():
        setattr(node_cls, name, _saved_property(name))
        if type(spec) in (int, SavedSlot, KeptTensor):
            setattr(node_cls, "_raw" + name, _saved_property("_raw" + name))


_EXTENDING_FUNC = ("For more details, please see "
                   "https://pytorch.org/docs/main/notes/extending.func.html")


def _check_in_transform(cls) -> None:
    """PyTorch's rules for a user Function applied inside torch.func transforms: it must
    use the setup_context style, and where the transform vmaps it, have a ``vmap``
    staticmethod or ``generate_vmap_rule = True`` (tgrad's vmap loops over the batch, so
    it never calls that staticmethod)."""
    if getattr(cls.setup_context, "base_setup_context", False):
        raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                           "(vmap, grad, jvp, jacrev, ...), it must override the setup_context "
                           f"staticmethod. {_EXTENDING_FUNC}")
    if STATE.vmap_depth and not cls.generate_vmap_rule and getattr(
            cls.vmap, "base_vmap", False):
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap "
                           "support. Please override and implement the vmap staticmethod or "
                           f"set generate_vmap_rule=True. {_EXTENDING_FUNC}")


class Function(metaclass=_FunctionMeta):
    """Base class for differentiable operations; use ``MyFunction.apply(*args)``."""

    # Built-in ops set ``name`` (profiler / error messages) and ``node_name``
    # (e.g. "MulBackward0"); custom Functions get "<ClassName>Backward".
    name: str | None = None
    node_name: str | None = None
    # Built-in binary arithmetic: number operands keep a (None, 0) slot in next_functions.
    scalar_edges: bool = False
    # Forward argument positions that get no next_functions entry (PyTorch's node has no
    # edge for them: where's bool condition)
    hidden_edges: tuple = ()
    # tgrad.amp's cast policy inside an autocast region: "lower", "fp32", "promote" or None,
    # or a dict of them per device type ({"cuda": ..., "cpu": ...}; set for the built-in ops
    # by tgrad/amp/autocast_mode.py's tables)
    autocast: str | dict | None = None
    # PyTorch's ``grad_fn._saved_<name>`` attributes of this op's node: name -> where the
    # node keeps the value (the specs above saved_attribute); the class's own table only
    saved_attributes: dict | None = None
    # The op keeps index data as ctx attributes where PyTorch's node saves it as tensors
    # (gather's index, sort's indices...): its node is freed by a backward without
    # retain_graph as one that saved tensors, and a second backward raises PyTorch's error.
    keeps_indices: bool = False
    # ctx attributes that hold backward-only state other than saved tensors (the NumPy
    # workspaces of the CPU nodes: ctc_loss, logcumsumexp, the RNN layers): set to None
    # with the saved tensors by a backward without retain_graph (Node.release)
    released_attributes: tuple = ()
    # A returned input (and an output that is a view of one) is a view that may not be
    # modified in place, PyTorch's rule for custom Functions: True for every user Function,
    # and for tgrad's own Functions that stand in for PyTorch's Python ones (module hooks).
    returns_views: bool = False

    def __init__(self, *args, **kwargs) -> None:
        # PyTorch's: instantiating only warns (InplaceFunction(inplace=True) carries a flag);
        # calling the instance as a legacy Function raises
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class "
                      "itself. Instantiating an autograd function will raise an error in a "
                      "future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method, and call it through "
            f"{type(self).__name__}.apply(...)")

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward  # (PyTorch's other name for it: a subclass may define either)

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Forward-mode rule: one tangent per forward input in (zeros for a floating tensor
        without one, None for other arguments), one per output back. ``ctx`` is forward's;
        tensors saved with ``ctx.save_for_forward`` are its ``saved_tensors`` here."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        """Define it (with ``forward(*args)`` taking no ctx) to save what backward needs
        from ``inputs`` (the args of apply) and ``output``; PyTorch's second style."""
        raise NotImplementedError("setup_context is not overridden")

    setup_context.__func__.base_setup_context = True  # "not overridden" (_FunctionMeta)

    # PyTorch's vmap support declarations, checked inside tgrad.func.vmap / jacfwd /
    # hessian (_check_in_transform); tgrad's vmap runs forward per sample either way
    generate_vmap_rule: bool = False

    @staticmethod
    def vmap(info: Any, in_dims: tuple, *args: Any) -> Any:
        """PyTorch's batching rule hook; tgrad's vmap loops over the batch and never calls
        it, but a Function used under vmap must define it (or set
        ``generate_vmap_rule = True``), as in PyTorch."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    vmap.__func__.base_vmap = True  # "not overridden" (_check_in_transform)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if _FW_ACTIVE and STATE.fw_level is not None:  # forward-mode AD: tangents
            if cls._user_function and STATE.func_depth:  # before its jvp is looked for
                _check_in_transform(cls)
            return STATE.fw_level.apply(cls, args, kwargs)  # forward_ad._fw_apply
        if _SAC_ACTIVE and STATE.sac is not None and STATE.enabled:
            return STATE.sac.apply(cls, args, kwargs)  # selective checkpoint: cache or replay
        if Tensor is None:
            _bind_tensor()
        # The node doubles as ctx. It is made without __init__ (hot path); it gets its
        # sequence number only if it is wired into the graph (_wire_graph).
        ctx = _new_node(cls._backward_cls)
        state = STATE
        if state.autocast is not None and cls.autocast is not None:  # tgrad.amp's casts
            from tgrad._autocast import cast_args
            args, kwargs = cast_args(cls.autocast, args, kwargs)
        prof = profiler_hooks.ACTIVE
        if not state.enabled:  # no_grad, or inside a backward without create_graph
            if cls.name is None:  # a custom Function: as PyTorch, each input's
                # requires_grad, whatever the grad mode
                ctx.needs_input_grad = tuple([isinstance(a, Tensor) and (
                    a._requires_grad or (a._base is not None and _stale_view_requires_grad(a)))
                    for a in args])
            else:  # built-in ops read it in forward as "being recorded" (what to save)
                n = len(args)
                ctx.needs_input_grad = _FALSES[n] if n < len(_FALSES) else (False,) * n
            if prof is None:
                raw = cls._run_forward(ctx, *args, **kwargs)
            else:
                handle = prof.op_start(cls, args)
                raw = None
                try:
                    raw = cls._run_forward(ctx, *args, **kwargs)
                finally:
                    prof.op_end(handle, raw)
            if ctx.dirty_tensors:
                _plain_dirty(ctx, raw)
            return raw
        n = len(args)
        if n == 2:  # (a binary op: the comprehension below, unrolled: hot path)
            x, y = args
            needs = (isinstance(x, Tensor) and (x._requires_grad or (
                         x._base is not None and _stale_view_requires_grad(x))),
                     isinstance(y, Tensor) and (y._requires_grad or (
                         y._base is not None and _stale_view_requires_grad(y))))
        elif n == 1:  # (a unary op)
            x = args[0]
            needs = (isinstance(x, Tensor) and (x._requires_grad or (
                x._base is not None and _stale_view_requires_grad(x))),)
        else:
            needs = tuple([isinstance(a, Tensor) and (
                a._requires_grad or (a._base is not None and _stale_view_requires_grad(a)))
                for a in args])
        ctx.needs_input_grad = needs
        if prof is not None:
            handle = prof.op_start(cls, args)
        state.enabled = False  # ops inside forward are not recorded
        raw = None
        try:
            raw = cls._run_forward(ctx, *args, **kwargs)
        finally:
            state.enabled = True
            if prof is not None:
                prof.op_end(handle, raw)  # raw: the output, for the profiler's byte counts
        if True not in needs:
            if ctx.dirty_tensors:
                _plain_dirty(ctx, raw)
            return raw
        if type(raw) is tuple:
            return _wire_graph(ctx, args, raw, True)
        return _wire_graph(ctx, args, (raw,), False)


def _stale_view_requires_grad(view) -> bool:
    """A view that did not require grad does once its base was made to by an in-place op
    through another view (``buf[0].copy_(x)`` with x requiring grad): its grad_fn is then
    regenerated, as reading ``.grad_fn`` does."""
    if view._grad_fn_version != view._storage.version:
        view.grad_fn  # noqa: B018 - the property refreshes a stale view
    return view._requires_grad


def _check_dirty_returned(dirty, raw) -> None:
    outs = raw if type(raw) is tuple else (raw,)
    for t in dirty:
        if not _is_in(t, outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were "
                               "not returned as output. The inputs that are modified inplace "
                               "must all be outputs of the Function.")


def _plain_dirty(ctx, raw) -> None:
    _check_dirty_returned(ctx.dirty_tensors, raw)
    for t in ctx.dirty_tensors:
        if STATE.enabled and t._requires_grad and t._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")


def _is_in(x, seq) -> bool:
    for y in seq:
        if x is y:
            return True
    return False


def _wire_graph(ctx, args, outputs, is_tuple):
    """Connect ``ctx`` into the graph: edges to inputs, grad_fn on outputs, saved tensors.

    ``_in_meta[i]``: (shape, dtype, device) of a tensor input that requires grad, None for a
    tensor that does not, ``_NOT_TENSOR`` otherwise (used to validate returned gradients)."""
    dirty = ctx.dirty_tensors
    # The common case: one output, a new floating tensor (or a built-in op's view) that is
    # neither an input, dirty nor non-differentiable. The general output loop below would
    # take its plain branch; ``one`` takes it directly (no scan for a differentiable output,
    # no output lists).
    one = None
    if not is_tuple:
        o = outputs[0]
        if (type(o) is Tensor and o._dtype.is_floating_point
                and (o._base is None or not ctx._forward_cls._returns_views)
                and not dirty and not ctx.non_differentiable):
            one = o
            for x in args:
                if x is o:  # a returned input: the general loop makes its alias
                    one = None
                    break
    if one is None:
        for o in outputs:
            if isinstance(o, Tensor) and (o._dtype.is_floating_point or o._dtype.is_complex):
                break
        else:  # no differentiable output (comparisons, argmax): no node, and the inputs'
            # grad_fn are not read (a stale split output may still be compared, as in
            # PyTorch); a node that saves tensors still runs the saving's checks and pack
            # hooks below
            if not dirty and not ctx.to_save:
                new_outputs = [_non_differentiable_output(o, args, dirty)
                               if isinstance(o, Tensor) else o for o in outputs]
                return tuple(new_outputs) if is_tuple else new_outputs[0]
    edges = []
    in_meta = []
    in_entry = None
    for a in args:
        if isinstance(a, Tensor):
            if a._requires_grad:
                if a._base is not None:  # a view: grad_fn may need rebasing (a property)
                    gf = a.grad_fn
                    edges.append((gf, a._output_nr) if gf is not None
                                 else (grad_accumulator(a), 0))
                elif a._grad_fn is not None:
                    edges.append((a._grad_fn, a._output_nr))
                else:  # a leaf: its accumulator, alive while a graph uses it (a weakref)
                    ref = a._grad_accumulator
                    acc = ref() if ref is not None else None
                    edges.append((acc if acc is not None else grad_accumulator(a), 0))
                in_entry = (a._device._metas.get((a._data.shape, a._dtype))
                            or _meta_entry(a._data.shape, a._dtype, a._device))
                in_meta.append(in_entry[0])
            else:
                edges.append(_NONE_EDGE)
                in_meta.append(None)
        else:
            edges.append(_NONE_EDGE)
            in_meta.append(_NOT_TENSOR)
    ctx._seq = next(_node_seq)
    ctx._edges = tuple(edges)
    # one argument that requires grad (a unary op): its interned 1-tuple
    ctx._in_meta = in_entry[1] if len(args) == 1 and in_entry is not None else tuple(in_meta)
    if one is not None:  # the general loop's plain branch for output 0
        ctx._out_meta = (one._device._metas.get((one._data.shape, one._dtype))
                         or _meta_entry(one._data.shape, one._dtype, one._device))[1]
        one._grad_fn = ctx
        one._output_nr = 0
        one._requires_grad = True
        if one._base is not None:  # a view: the version its grad_fn was made at
            one._grad_fn_version = one._storage.version
        new_outputs = (one,)  # (for the saved-tensor output check below)
        result = one
    else:
        if dirty:
            _check_dirty_returned(dirty, outputs)
        nondiff = ctx.non_differentiable
        out_meta = []
        new_outputs = []
        entry = None
        i = 0
        for o in outputs:
            if not isinstance(o, Tensor):
                out_meta.append(None)
                new_outputs.append(o)
                i += 1
                continue
            if (not (o._dtype.is_floating_point or o._dtype.is_complex)
                    or (nondiff and _is_in(o, nondiff))):
                o = _non_differentiable_output(o, args, dirty)
                entry = _meta_entry(o._data.shape, o.dtype, o.device)
                out_meta.append(entry[0])
                new_outputs.append(o)
                i += 1
                continue
            if dirty and _is_in(o, dirty):
                _check_dirty(o)
                if o._base is not None and o._view_chain is not None:
                    from tgrad.autograd.copy_slices import rebase_base  # in-place on a view: rare
                    rebase_base(o, (ctx, i))
                    entry = _meta_entry(o._data.shape, o.dtype, o.device)
                    out_meta.append(entry[0])
                    new_outputs.append(o)
                    i += 1
                    continue
            else:
                for x in args:
                    if x is o:  # a returned input: a fresh alias (for a custom Function, a view
                        o = Tensor(o._data, o._storage, o.device)  # of it, as PyTorch's)
                        if ctx._forward_cls._returns_views:
                            o._base = x if x._base is None else x._base
                        break
                if o._base is not None and ctx._forward_cls._returns_views:
                    o._custom_function_view = True  # no in-place on it (as PyTorch)
            entry = (o._device._metas.get((o._data.shape, o._dtype))
                     or _meta_entry(o._data.shape, o._dtype, o._device))
            out_meta.append(entry[0])
            new_outputs.append(o)
            o._grad_fn = ctx
            o._output_nr = i
            o._requires_grad = True
            if o._base is not None:
                o._grad_fn_version = o._storage.version
            i += 1
        # one tensor output (the common case): its interned 1-tuple
        ctx._out_meta = entry[1] if len(out_meta) == 1 and entry is not None else tuple(out_meta)
        # the node drops what it held for the forward only (PyTorch sets these to None): held
        # on, an output in them and its own grad_fn (the node) made a reference cycle, freed
        # only by the garbage collector (a mark_dirty output with its whole graph)
        if dirty:
            ctx.dirty_tensors = ()
        if nondiff:
            ctx.non_differentiable = ()
        result = tuple(new_outputs) if is_tuple else new_outputs[0]
    if ctx.saved_for_forward:
        ctx.saved_for_forward = ()
    to_save = ctx.to_save
    if to_save:
        ctx.to_save = ()  # (first: a pack hook that raises leaves no output-node cycle)
        hooks = STATE.saved_tensors_hooks  # the innermost saved_tensors_hooks pair, or None
        saved = []
        for t in to_save:
            if t is None:
                saved.append(None)
            elif not isinstance(t, Tensor):
                raise TypeError(f"{ctx.name()}: save_for_backward can only save tensors (or "
                                f"None), but argument {len(saved)} is of type "
                                f"{type(t).__name__}; store other values as ctx attributes")
            else:
                if type(t._storage) is not Storage:  # an inference tensor (InferenceStorage)
                    _check_not_inference_saved(t)
                is_output = t._grad_fn is ctx and _is_in(t, new_outputs)
                if hooks is not None:
                    saved.append(HookedSavedTensor(t, is_output, hooks))
                elif is_output:
                    saved.append(SavedTensor(t, True))
                else:  # SavedTensor(t, False), inlined (hot path)
                    s = _new_saved(SavedTensor)
                    s.version = t._storage.version
                    s.is_output = False
                    s.tensor = t
                    saved.append(s)
        ctx._saved = tuple(saved)  # (a tuple of only None is one object less to track)
    if SHARED.anomaly:
        ctx.metadata["traceback_"] = traceback.format_stack()[:-2]
    return result


def _non_differentiable_output(o, args, dirty):
    """A non-differentiable output (PyTorch's set_history): no grad_fn and requires_grad
    False. An input that requires grad is returned as a detached alias (the input keeps its
    history); one that does not, unless marked dirty, as a fresh alias; a new tensor
    recorded under enable_grad is detached in place."""
    if o._requires_grad:
        if _is_in(o, args):
            return o.detach()
        if o._base is None:
            o.detach_()
    elif _is_in(o, args) and not (dirty and _is_in(o, dirty)):
        return Tensor(o._data, o._storage, o.device)
    return o


def _check_not_inference_saved(t) -> None:
    """PyTorch's error for an inference tensor saved for backward (_wire_graph runs only
    outside inference mode, where nothing is recorded)."""
    if t.is_inference():
        raise RuntimeError(
            "Inference tensors cannot be saved for backward. Please do not use Tensors "
            "created in inference mode in computation tracked by autograd. To work around "
            "this, you can make a clone to get a normal tensor and use it in autograd, or use "
            "`torch.no_grad()` instead of `torch.inference_mode()`.")


def _check_dirty(t) -> None:
    if t._grad_fn is None and t._requires_grad and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = t._base
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


class _DelayedError(Function):
    """Outputs of a @once_differentiable backward under create_graph: differentiating them
    again raises (their values are right; their graph was not recorded)."""

    node_name = "Error"  # PyTorch's name for this node

    @staticmethod
    def forward(ctx, *tensors):
        return tensors if len(tensors) > 1 else tensors[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn):
    """Decorator for a custom Function's ``backward`` that is written with non-differentiable
    code: it runs without recording, and a double backward through it raises instead of
    silently giving zero (PyTorch's ``torch.autograd.function.once_differentiable``)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = STATE.enabled
        STATE.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            STATE.enabled = prev
        if not prev or not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        marked = [o.detach().requires_grad_() if isinstance(o, Tensor) else o for o in outs]
        tensors = [o for o in marked if isinstance(o, Tensor)]
        if not tensors:
            return outputs
        wrapped = _DelayedError.apply(*tensors)
        wrapped = iter(wrapped if isinstance(wrapped, tuple) else (wrapped,))
        result = tuple(next(wrapped) if isinstance(o, Tensor) else o for o in marked)
        return result[0] if single else result
    return wrapper


# PyTorch's name for the class of ``ctx``: the node Function.apply creates (type hints such
# as ``def forward(ctx: FunctionCtx, x)``; isinstance(ctx, FunctionCtx) holds)
FunctionCtx = BackwardCFunction


class InplaceFunction(Function):
    """PyTorch's ``torch.autograd.function.InplaceFunction``: a Function whose instances
    carry an ``inplace`` flag (constructed as ``MyFn(inplace=True)``) for its subclasses to
    read; ``apply`` is Function's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace
