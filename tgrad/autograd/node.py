"""Graph nodes: the backward functions the engine runs, and saved tensors.

A Node has ``_edges``: one ``(node, output_nr)`` edge per forward argument (``(None, 0)``
where the argument needs no gradient or is not a tensor); the engine walks these.
``next_functions`` is the public, PyTorch-shaped view of them (``Function`` nodes list only
the tensor arguments). ``apply(grads)`` takes one gradient per forward output and returns one
per forward argument.
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from collections import OrderedDict

import numpy as np

from tgrad.autograd.grad_mode import STATE
from tgrad.device import CPU

_seq = itertools.count()
_ACCUMULATE_LOCK = threading.Lock()

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook: deletes key ``id``
    from ``hooks_dict`` and from ``extra_dict`` (a dict or a list of them), as PyTorch's
    torch.utils.hooks.RemovableHandle (also tgrad.utils.hooks.RemovableHandle)."""

    _ids = itertools.count()

    def __init__(self, hooks_dict: dict, *, extra_dict: dict | list | None = None) -> None:
        self._hooks = hooks_dict
        self.id = next(RemovableHandle._ids)
        self._extra = (() if extra_dict is None else (extra_dict,)
                       if isinstance(extra_dict, dict) else tuple(extra_dict))

    def remove(self) -> None:
        self._hooks.pop(self.id, None)
        for d in self._extra:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# The instance attributes every recorded node sets, some on some paths only: recording
# (_seq ... _saved) and a backward (_released). See Node.__init_subclass__. (Names set on
# rarer paths, hooks or ctx calls, are left out: each one seeded enlarges every node's
# attribute array; a node given one late pays for its own dict.)
_NODE_FIELDS = ("needs_input_grad", "to_save", "_seq", "_edges", "_in_meta", "_out_meta",
                "_saved", "_released")


class Node:
    """Base class of every backward node (built-in op nodes, custom Function nodes,
    AccumulateGrad and CopySlices).

    Optional fields default to class attributes (None) so creating a node is cheap."""

    def __init_subclass__(cls, **kwargs) -> None:
        """Put _NODE_FIELDS in the class's shared attribute-key table first, through a
        throwaway instance. CPython keeps one key table per class for its instances'
        attributes; once a few dozen instances exist it takes one new name more, and an
        instance that sets another gets a dict of its own: one more object per node for the
        garbage collector and slower attribute reads. Without this, a class whose first
        nodes ran under no_grad (no _edges yet), or one released after its first backward
        (_released), paid that on every node from then on."""
        super().__init_subclass__(**kwargs)
        seed = object.__new__(cls)
        for name in _NODE_FIELDS:
            if not hasattr(type(getattr(cls, name, None)), "__set__"):  # not a property
                object.__setattr__(seed, name, None)

    _edges: tuple = ()  # one (node, output_nr) per forward argument; the engine reads this
    _out_meta: tuple = ()  # per forward output: (shape, dtype, device) or None; () = one
    _saved = None  # tuple of SavedTensor (or None); None after release
    _released = False
    _released_attributes: tuple = ()  # (Function.released_attributes)
    _pre_hooks = None  # {output_nr: OrderedDict(id -> hook)} for tensor hooks
    _post_hooks = None  # OrderedDict(id -> hook(grad_inputs, grad_outputs))
    _retain_grad_refs = None  # {output_nr: weakref to tensor}
    _metadata = None

    def __init__(self) -> None:
        self._seq = next(_seq)

    @property
    def metadata(self) -> dict:
        """Free-form per-node dict (anomaly mode keeps the forward traceback here)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        """``((node, output_nr), ...)``: where this node's gradients go (PyTorch's view)."""
        return self._edges

    @next_functions.setter
    def next_functions(self, edges) -> None:
        self._edges = tuple(edges)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return new grad_outputs."""
        hooks = self.metadata.setdefault("_node_prehooks", OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def apply(self, grads: list) -> tuple:
        raise NotImplementedError

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph), and the attributes
        its Function lists in ``released_attributes``."""
        if self._saved is not None:
            self._saved = None
            self._released = True
        for name in self._released_attributes:
            setattr(self, name, None)

    def __call__(self, *grads):
        """The node's backward on ``grads``: its input gradients, one Tensor where it has
        one input (as PyTorch's)."""
        out = self.apply(list(grads))
        return out[0] if type(out) is tuple and len(out) == 1 else out


_Tensor = None  # tgrad.tensor.Tensor, bound on first use (tensor.py imports this package)


def _tensor_cls():
    global _Tensor
    if _Tensor is None:
        from tgrad.tensor import Tensor
        _Tensor = Tensor
    return _Tensor


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An output of the node itself is stored without its grad_fn (no reference cycle) and
    re-attached on unpack, as PyTorch's SavedVariable does.
    """

    __slots__ = ("tensor", "version", "is_output", "output_nr", "requires_grad")

    def __init__(self, t, is_output: bool) -> None:
        self.version = t._storage.version
        self.is_output = is_output
        if is_output:
            alias = (_Tensor or _tensor_cls())(t._data, t._storage, t.device)
            self.output_nr = t._output_nr
            self.requires_grad = t._requires_grad
            self.tensor = alias
        else:
            self.tensor = t

    def unpack(self, node: Node):
        t = self.tensor
        if t._storage.version != self.version:
            if self.is_output:
                who = f"output {self.output_nr} of {node.name()}"
            else:
                gf = t._grad_fn
                who = (f"output {t._output_nr} of {gf.name()}" if gf is not None
                       else "a leaf Variable")
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [tgrad.{t.dtype.name} {list(t.shape)}], which is {who}, is "
                f"at version {t._storage.version}; expected version {self.version} instead. "
                "Hint: enable anomaly detection to find the operation that failed to compute "
                "its gradient, with tgrad.autograd.set_detect_anomaly(True).")
        if self.is_output:  # output_alias, inlined (backward's hot path)
            out = (_Tensor or _tensor_cls())(t._data, t._storage, t.device)
            out._grad_fn = node
            out._output_nr = self.output_nr
            out._requires_grad = self.requires_grad
            fw = t.__dict__.get("_fw")
            if fw is not None:  # the output's forward-AD tangent (forward_ad._attach_saved)
                out.__dict__["_fw"] = fw
            return out
        if t._detached_seq is not None and t._grad_fn is None and t._detached_seq > getattr(
                node, "_seq", -1):  # (rare) a non-leaf input saved, then detach_()ed
            raise RuntimeError(
                "Trying to use a saved tensor that has been detached in-place, i.e. with "
                ".detach_().This is not supported, please use out-of-place `.detach()` instead")
        return t

    def output_alias(self, node: Node):
        """A saved output of ``node`` as a tensor again: an alias with node as its grad_fn
        (``unpack`` has it inlined)."""
        t = self.tensor
        out = (_Tensor or _tensor_cls())(t._data, t._storage, t.device)
        out._grad_fn = node
        out._output_nr = self.output_nr
        out._requires_grad = self.requires_grad
        fw = t.__dict__.get("_fw")
        if fw is not None:  # the output's forward-AD tangent (forward_ad._attach_saved)
            out.__dict__["_fw"] = fw
        return out


class HookedSavedTensor:
    """A tensor saved for backward through a ``saved_tensors_hooks`` pair (graph.py).

    ``pack_hook(tensor)`` runs once, when the node is recorded, with grad mode off; whatever
    it returns is kept. ``unpack_hook(packed)`` runs on every read of ``saved_tensors`` and
    must return a Tensor: a fresh alias of it gets the saved tensor's autograd identity back
    (its grad_fn and output_nr, or the leaf's AccumulateGrad), so double backward works
    through it. As in PyTorch there is no version check: the hooks own the value. Inside a
    forward-AD level the saved tensor's tangent (its ``_fw`` entry; a saved output's is set
    by forward_ad._attach_saved) is kept and given to the unpacked alias, so backward passes
    through the hooks (checkpoint included) differentiate forward over reverse.
    """

    __slots__ = ("packed", "unpack_hook", "is_output", "output_nr", "requires_grad",
                 "grad_fn", "accumulator", "fw")

    def __init__(self, t, is_output: bool, hooks: tuple) -> None:
        pack_hook, self.unpack_hook = hooks
        self.is_output = is_output
        self.output_nr = t._output_nr
        self.requires_grad = t._requires_grad
        self.fw = t.__dict__.get("_fw")  # (level, tangent) or None
        if self.fw is None and t._base is not None:  # a view of a dual tensor: its tangent
            from tgrad.autograd import forward_ad  # is made on first read (get_tangent)
            if forward_ad.get_tangent(t) is not None:  # None outside a level
                self.fw = t.__dict__.get("_fw")
        # The producer of a saved input (an output's producer is the node itself, re-attached
        # on unpack so that no reference cycle is made), or a leaf's gradient sink.
        self.grad_fn = None if is_output else (t.grad_fn if t._base is not None
                                               else t._grad_fn)
        self.accumulator = (grad_accumulator(t) if self.grad_fn is None and not is_output
                            and t._requires_grad else None)
        version = t._storage.version
        enabled = STATE.enabled
        STATE.enabled = False  # PyTorch runs pack hooks with grad mode off
        try:
            self.packed = pack_hook(t)
        finally:
            STATE.enabled = enabled
        if t._storage.version != version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided "
                "as input to pack hook cannot be modified by in-place operations as this can "
                "lead to unexpected side-effects. Please open an issue if you need to perform "
                "in-place operations on the input to a pack hook.")

    def unpack(self, node: Node):
        tensor_cls = _Tensor or _tensor_cls()
        t = self.unpack_hook(self.packed)
        if not isinstance(t, tensor_cls):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        out = tensor_cls(t._data, t._storage, t.device)
        if self.is_output:
            out._grad_fn, out._output_nr = node, self.output_nr
        elif self.grad_fn is not None:
            out._grad_fn, out._output_nr = self.grad_fn, self.output_nr
        elif self.accumulator is not None:
            out._grad_accumulator = weakref.ref(self.accumulator)
        out._requires_grad = self.requires_grad
        if self.fw is not None:  # the saved tensor's forward-AD tangent (stale levels unread)
            out.__dict__["_fw"] = self.fw
        return out


class RawSavedTensor:
    """``node._raw_saved_<name>``: a handle on one tensor a node saved (PyTorch's
    ``torch._C._autograd.SavedTensor``). ``register_hooks(pack_hook, unpack_hook)`` gives
    that one tensor a saved_tensors_hooks pair after the fact: ``pack_hook`` runs at once
    (grad mode off) on the saved tensor, ``unpack_hook`` on every later read. As in PyTorch
    it raises on a freed graph, on a slot that saved None, and when the tensor already has
    hooks (its own, or a ``saved_tensors_hooks`` pair active when it was saved).
    ``unpack()`` reads the saved tensor (as the ``_saved_<name>`` attribute does)."""

    __slots__ = ("_node", "_index")

    def __init__(self, node: Node, index: int) -> None:
        self._node = node
        self._index = index

    def _slot(self):
        saved = self._node._saved
        if saved is None:
            if self._node._released:
                raise RuntimeError(FREED_MESSAGE)
            return None
        return saved[self._index]

    def unpack(self):
        slot = self._slot()
        return None if slot is None else slot.unpack(self._node)

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError(f"register_hooks(): pack_hook and unpack_hook must be callables "
                            f"(got {type(pack_hook).__name__} and "
                            f"{type(unpack_hook).__name__})")
        node = self._node
        if node._released:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved variables after "
                "calling backward.")
        slot = self._slot()
        if slot is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is "
                               "forbidden")
        if type(slot) is HookedSavedTensor:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed at "
                               "a time.")
        # the tensor as saved, without the version check (from now on the hooks own the
        # value, as PyTorch's: no version check on a hooked saved tensor)
        t = slot.output_alias(node) if slot.is_output else slot.tensor
        saved = list(node._saved)
        saved[self._index] = HookedSavedTensor(t, slot.is_output, (pack_hook, unpack_hook))
        node._saved = tuple(saved)

    def __repr__(self) -> str:
        return f"<SavedTensor object at {id(self):#x}>"


class AccumulateGrad(Node):
    """Sink node of a leaf tensor: sums incoming gradients into ``variable.grad``.

    PyTorch's gradient layout contract: a ``.grad`` this node creates has the leaf's strides
    when the leaf is non-overlapping and dense (a transposed leaf gets a transposed .grad),
    else is contiguous; an incoming gradient already laid out so is kept when nobody else
    holds it. Accumulating into an existing ``.grad`` keeps its object and layout (in place;
    with create_graph, ``old + new``), warning when that layout breaks the contract."""

    # True while the engine calls apply() after running the leaf's tensor hooks itself:
    # PyTorch runs them before the node's pre-hooks (engine._call_node)
    _leaf_hooks_done = False

    def __init__(self, variable) -> None:
        self._seq = next(_seq)  # Node.__init__, inlined (one is made per leaf per graph)
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads: list) -> tuple:
        grad = grads[0]
        if grad is None:
            return ()
        var = self.variable
        if var._hooks and not self._leaf_hooks_done:
            grad = run_leaf_hooks(var, grad)
        if not var._requires_grad:  # made not to require grad (requires_grad_(False),
            # detach_()) after the graph was recorded: nothing accumulates, but its
            # post-accumulate hooks still run (PyTorch)
            _run_post_accumulate_hooks(var)
            return ()
        if var._grad_fn is not None:  # detach_()ed, then written in place from a graph
            raise RuntimeError("leaf variable has been moved into the graph interior")
        if grad._sparse or var._sparse:  # a sparse COO gradient or leaf (tgrad.sparse)
            return _accumulate_sparse(var, grad)
        with _ACCUMULATE_LOCK:
            old = var._grad
            if old is None:
                if STATE.enabled:  # create_graph: a recorded copy (PyTorch's CopyBackwards),
                    var._grad = _clone_obeying_contract(grad, var)  # never a graph tensor
                elif _owned(grad, grads[0] is grad) and (
                        # the layout contract's common cases, inlined (hot path): an owned
                        # array of < 2 dims is contiguous (as a contract-obeying .grad of
                        # any leaf of < 2 dims is); else both C-contiguous
                        grad._data.ndim < 2
                        or (grad._data.flags.c_contiguous and var._data.flags.c_contiguous
                            and 0 not in grad._data.strides)
                        or _obeys_contract(grad, var)):
                    var._grad = grad  # a fresh result nobody else holds: keep it (as PyTorch)
                    if "_fw" in grad.__dict__:  # no forward-AD tangent on a .grad made
                        del grad.__dict__["_fw"]  # without create_graph (as PyTorch)
                else:
                    # Own copy: the gradient may be the user's, shared with other leaves,
                    # kept by a hook, or a view. (Not recorded: grad mode is off here.)
                    # A C-contiguous leaf gets a C-contiguous copy (the common case, inlined)
                    var._grad = (_plain_clone(grad) if var._data.flags.c_contiguous
                                 else _clone_obeying_contract(grad, var))
            elif STATE.enabled or old._sparse:  # (a sparse .grad + dense: a dense sum)
                var._grad = old + grad if not old._sparse else grad + old
            else:
                if not _obeys_contract(old, var):
                    _warn_contract(old, var)
                _add_into(old, grad)
                if STATE.fw_level is not None:  # forward AD: old's tangent += grad's
                    _accumulate_tangent(old, grad)
        if var._post_accumulate_hooks:
            _run_post_accumulate_hooks(var)
        return ()


def _run_post_accumulate_hooks(var) -> None:
    for hook in list((var._post_accumulate_hooks or {}).values()):
        if hook(var) is not None:
            raise RuntimeError("post accumulate grad hooks should return None")


def _accumulate_sparse(var, grad) -> tuple:
    """AccumulateGrad with a sparse COO gradient or leaf, as PyTorch's: the first gradient
    is kept (a sparse one stays sparse); sparse + sparse is their sparse sum (PyTorch's
    merge, uncoalesced; in place in the .grad object outside create_graph); a dense .grad
    gets a sparse gradient added in place; a sparse .grad plus a dense gradient becomes
    dense."""
    with _ACCUMULATE_LOCK:
        old = var._grad
        if old is None:  # (expanded sparse values, as sparse.sum's gradient: a copy)
            var._grad = (_plain_clone(grad) if not grad._sparse else grad.detach()
                         if grad._sp_values.flags.c_contiguous else grad.clone().detach())
            if grad._sparse and grad._sp_values.flags.c_contiguous and not STATE.enabled:
                # PyTorch's shallow copy (_sparse_coo_tensor_unsafe) infers the flag
                var._grad._coalesced = grad._nnz() <= 1
        elif old._sparse and grad._sparse and not STATE.enabled:
            old._assign(old + grad)  # in place, as PyTorch's variable_grad += new_grad
        elif old._sparse:
            var._grad = (old + grad) if grad._sparse else grad + old
        elif STATE.enabled:
            var._grad = old + grad
        else:
            dense = grad.to_dense() if grad._sparse else grad
            _add_into(old, dense)
    if var._post_accumulate_hooks:
        for hook in list(var._post_accumulate_hooks.values()):
            if hook(var) is not None:
                raise RuntimeError("post accumulate grad hooks should return None")
    return ()


# sys.getrefcount itself (no Python frame around it: _owned reads it three times per
# accumulated gradient); the _calibrate_* references below are counted through the same
# name, so every count and its calibration have the same call shape.
_refs_of = sys.getrefcount


def _calibrate_refs() -> int:
    """References to a gradient held only by AccumulateGrad.apply's local (the same call
    shape as ``_owned``), so the check does not depend on the interpreter's counting."""
    def apply(grads: list) -> int:
        grad = grads[0]
        grads[0] = None
        return _probe(grad, False)

    def _probe(grad, in_list: bool) -> int:
        return _refs_of(grad)

    return apply([object()])


_BASE_REFS = _calibrate_refs()
def _calibrate_attr_refs() -> int:
    """References counted by ``_refs_of(obj.attr)`` when one attribute holds ``obj``."""
    class Holder:
        __slots__ = ("x",)
    h = Holder()
    h.x = object()
    return _refs_of(h.x)


_BASE_STORAGE_REFS = _calibrate_attr_refs()


def _calibrate_view_refs() -> int:
    """References counted by ``_refs_of(view.base)`` when only ``view`` holds its base."""
    view = np.zeros(4).reshape(2, 2)
    return _refs_of(view.base)


_BASE_VIEW_REFS = _calibrate_view_refs()
_np_array = np.array


def _plain_clone(t):
    """A C-contiguous copy of ``t`` outside the graph (what ``t.clone()`` gives in no_grad)."""
    if t.device is CPU:  # the NumPy backend's clone, without the backend lookup
        return type(t)(_np_array(t._data, copy=True, order="C"), None, CPU)
    return type(t)(_get_backend(t.device).clone(t._data), None, t.device)


def _dense(t) -> bool:
    """PyTorch's is_non_overlapping_and_dense: ``t``'s elements fill numel consecutive
    memory slots (its strides are a permutation of a contiguous layout's; dims of size < 2
    do not count)."""
    want = 1
    for st, n in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n > 1):
        if st != want:
            return False
        want *= n
    return True


def _obeys_contract(grad, var) -> bool:
    """PyTorch's obeys_layout_contract: ``grad`` has ``var``'s strides (but for size-1 dims,
    where only stride 0 is refused) when var is non-overlapping and dense, else is
    contiguous."""
    gd = grad._data  # the common case first, from the arrays' flags and byte strides
    if var._data.flags.c_contiguous and gd.flags.c_contiguous and 0 not in gd.strides:
        return True
    if not _dense(var):
        return grad.is_contiguous()
    return all((gs == vs) if n != 1 else gs != 0
               for n, gs, vs in zip(var.shape, grad.stride(), var.stride()))


def _clone_obeying_contract(grad, var):
    """A copy of ``grad`` (recorded in grad mode: CopyBackwards) laid out by the contract:
    with ``var``'s exact strides when var is non-overlapping and dense, else contiguous."""
    if (var.is_contiguous() and not STATE.enabled) or not _dense(var):
        return grad.clone() if STATE.enabled else _plain_clone(grad)
    from tgrad.tensor import Storage, Tensor
    be = _get_backend(grad.device)
    buf = be.empty((var.numel(),), grad._data.dtype)
    out = Tensor(be.as_strided(buf, var.shape, var.stride()), Storage(buf), grad.device)
    if STATE.enabled:
        return out.copy_(grad)
    be.copy_(out._data, grad._data)
    return out


def _warn_contract(grad, var) -> None:
    import warnings
    warnings.warn(f"grad and param do not obey the gradient layout contract. This is not an "
                  f"error, but may impair performance.\ngrad.sizes() = {list(grad.shape)}, "
                  f"strides() = {list(grad.stride())}\nparam.sizes() = {list(var.shape)}, "
                  f"strides() = {list(var.stride())}", UserWarning, stacklevel=2)


def _get_backend(device):
    global _get_backend
    from tgrad.backends import get_backend
    _get_backend = get_backend  # bound on first use (import cycle)
    return get_backend(device)


def _add_into(dst, src) -> None:
    global _add_into
    from tgrad.ops.inplace import add_into
    _add_into = add_into  # bound on first use (import cycle)
    add_into(dst, src)


def _accumulate_tangent(var_grad, grad) -> None:
    global _accumulate_tangent
    from tgrad.autograd.forward_ad import accumulate_grad_tangent
    _accumulate_tangent = accumulate_grad_tangent  # bound on first use (import cycle)
    accumulate_grad_tangent(var_grad, grad)


def _owned(grad, in_list: bool) -> bool:
    """True when ``grad`` and its buffer are referenced by nobody but the engine (its grads
    list, when ``in_list``) and AccumulateGrad: a result the backward just computed, not the
    user's gradient, a saved tensor, another leaf's gradient, one a hook kept, or a view.
    NumPy arrays that own their memory; device arrays that cover a buffer tgrad allocated,
    which no other array holds."""
    if grad._base is not None:
        return False
    if grad.device.type == "cpu":
        if grad._data.base is not None and not _whole_view_of_private_array(grad._data,
                                                                            grad._storage):
            return False
    elif not _whole_private_buffer(grad._data, grad._storage):
        return False
    # grad._data and grad._storage.root hold the array; grad._storage holds the storage.
    # (No local names for them here: each would count as one more reference.)
    return (_refs_of(grad) <= _BASE_REFS + in_list
            and _refs_of(grad._storage) <= _BASE_STORAGE_REFS
            and _refs_of(grad._data) <= _BASE_STORAGE_REFS + 1)


def _whole_view_of_private_array(data, storage) -> bool:
    """``data`` (an ndarray) is a contiguous view of all of its base, an array that owns
    its memory and that nothing but ``data`` (and the root of ``storage``, data's tensor's
    storage: Permute's plain backward shares g's) holds: a reshape or transpose of a fresh
    result (SumTo's keepdims sum as a bias gradient, a product computed transposed), as
    private as the base itself. (Any other view of that memory would hold the base; any
    other tensor of the storage, the storage: _owned checks that.)"""
    if _refs_of(data.base) > _BASE_VIEW_REFS + _root_holds_base(storage, data.base):
        return False
    base = data.base
    return (type(base) is np.ndarray and base.base is None and data.nbytes == base.nbytes
            and (data.flags.c_contiguous or data.flags.f_contiguous))


def _root_holds_base(storage, base) -> bool:
    """The root of ``storage`` holds ``base``: is it, or is a view of it that nothing but
    the storage holds (one reference more to the base than the gradient's own view)."""
    if storage.root is base:
        return True
    return (type(storage.root) is np.ndarray and storage.root.base is base
            and _refs_of(storage.root) <= _BASE_STORAGE_REFS)


def _whole_private_buffer(data, storage) -> bool:
    """``data`` (a DeviceArray) starts at its buffer's start and spans all of it, tgrad
    allocated the buffer (no external owner) and no other array holds it (but the root
    of ``storage``, data's tensor's storage, where only that storage holds the root:
    Permute's plain backward shares g's storage)."""
    buf = getattr(data, "buffer", None)
    if (buf is None or buf.owner is not None or data.offset
            or data.size * data.dtype.itemsize != buf.nbytes):
        return False
    del buf
    return _refs_of(data.buffer) <= _BASE_STORAGE_REFS + (
        storage.root is not data and getattr(storage.root, "buffer", None) is data.buffer
        and _refs_of(storage.root) <= _BASE_STORAGE_REFS)


def run_leaf_hooks(t, grad):
    """Run a leaf's tensor hooks on ``grad``; a hook's non-None result replaces it."""
    if t._hooks:
        for hook in list(t._hooks.values()):
            new = hook(grad)
            if new is not None:
                grad = checked_hook_value(hook, new, grad)
    return grad


def checked_hook_value(hook, new, old):
    """A hook's replacement gradient, checked as PyTorch checks it: a tensor of the
    replaced one's shape, dtype and device."""
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(new, _Tensor or _tensor_cls()):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if new.shape != old.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {old.dtype} got "
                           f"{new.dtype})")
    if new.device != old.device:
        raise RuntimeError(f"hook '{name}' has changed the device of value (was {old.device} "
                           f"got {new.device})")
    return new


def gradient_edge(t) -> tuple:
    """The edge that receives ``t``'s gradient: its grad_fn, or its AccumulateGrad."""
    gf = t.grad_fn if t._base is not None else t._grad_fn
    if gf is not None:
        return (gf, t._output_nr)
    if not t._requires_grad:
        return (None, 0)
    return (grad_accumulator(t), 0)


def grad_accumulator(t) -> AccumulateGrad:
    ref = t._grad_accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._grad_accumulator = weakref.ref(acc)
    return acc
