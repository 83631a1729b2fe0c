"""Graph nodes: the backward functions the engine runs, and saved tensors.

A Node has ``next_functions``: one ``(node, output_nr)`` edge per differentiable input of the
forward op (``(None, 0)`` where the input needs no gradient). ``apply(grads)`` takes one
gradient per forward output and returns one per input.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict

from tgrad.autograd.grad_mode import STATE

_seq = itertools.count()
_ACCUMULATE_LOCK = threading.Lock()

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict: dict) -> None:
        self._hooks = hooks_dict
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class Node:
    """Base class of every backward node (built-in op nodes, custom Function nodes,
    AccumulateGrad and CopySlices).

    Optional fields default to class attributes (None) so creating a node is cheap."""

    next_functions: tuple = ()
    _saved = None  # list of SavedTensor; None after release
    _released = False
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
        """Free saved tensors (after a backward without retain_graph)."""
        if self._saved is not None:
            self._saved = None
            self._released = True

    def __call__(self, *grads):
        return self.apply(list(grads))


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
            from tgrad.tensor import Tensor
            alias = Tensor(t._data, t._storage, t.device)
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
        if self.is_output:
            from tgrad.tensor import Tensor
            out = Tensor(t._data, t._storage, t.device)
            out._grad_fn = node
            out._output_nr = self.output_nr
            out._requires_grad = self.requires_grad
            return out
        return t


class AccumulateGrad(Node):
    """Sink node of a leaf tensor: sums incoming gradients into ``variable.grad``."""

    def __init__(self, variable) -> None:
        super().__init__()
        self.variable = variable
        self.next_functions = ()

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads: list) -> tuple:
        grad = grads[0]
        if grad is None:
            return ()
        var = self.variable
        if var._hooks:
            from tgrad.autograd.hooks import run_leaf_hooks
            grad = run_leaf_hooks(var, grad)
        with _ACCUMULATE_LOCK:
            old = var._grad
            if old is None:
                if STATE.enabled:  # create_graph: keep the gradient's own graph
                    var._grad = grad
                else:
                    # Own copy: the incoming gradient may be shared with other leaves.
                    var._grad = grad.clone()
            elif STATE.enabled:
                var._grad = old + grad
            else:
                from tgrad.ops.inplace import add_into
                add_into(old, grad)
        return ()


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
