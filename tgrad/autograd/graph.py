"""``tgrad.autograd.graph``: hooks on saved tensors and access to graph edges (PyTorch's
``torch.autograd.graph``).

- ``saved_tensors_hooks(pack_hook, unpack_hook)``: while active, every tensor an op saves for
  backward goes through ``pack_hook(tensor) -> packed`` when the op is recorded (grad mode off
  while it runs), and ``unpack_hook(packed) -> Tensor`` on every read of it. The innermost
  pair wins; the pair active when a tensor was packed is the one that unpacks it. Nothing is
  packed where nothing is recorded (``no_grad``, inputs that need no gradient everywhere).
- ``save_on_cpu(pin_memory=False, device_type="cuda")``: the pair that parks saved GPU
  tensors in host memory and copies them back for backward.
- ``disable_saved_tensors_hooks(error_message)``: registering hooks inside raises
  ``RuntimeError(error_message)``.
- ``register_multi_grad_hook(tensors, fn, mode="all"|"any")``: one hook over several
  tensors' gradients per backward.
- ``allow_mutation_on_saved_tensors()``: inside it, a tensor saved for backward that is then
  modified in place is cloned first, so that backward still sees the saved values.
- ``Node``, ``GradientEdge``, ``get_gradient_edge(tensor)``, ``increment_version(tensor)``.

- Nodes' ``_saved_<name>`` attributes (PyTorch's names for what an op saved, from each op
  class's ``saved_attributes`` table; see tgrad/autograd/function.py) and
  ``_raw_saved_<name>`` handles (``register_hooks(pack_hook, unpack_hook)``: a hooks pair for
  one saved tensor after the fact); docs/autograd.md lists the covered ops.

The index arrays that indexing keeps for its backward as node attributes (not through
``save_for_backward``) are not packed.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from tgrad.autograd.engine import current_graph_task_id, will_execute
from tgrad.autograd.grad_mode import STATE
from tgrad.autograd.node import Node, gradient_edge

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node",
           "GradientEdge", "get_gradient_edge", "increment_version",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors"]


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager: pack/unpack hooks for the tensors saved for backward inside it.

    ``pack_hook(tensor) -> Any`` gets the tensor itself (an op's own output with its
    grad_fn) and must not modify it in place; ``unpack_hook(packed) -> Tensor`` must return a
    tensor of the saved tensor's value. A pack hook that returns its input keeps the tensor
    (and, for an op's output, its node) alive in a reference cycle, freed by the garbage
    collector rather than at once.
    """

    def __init__(self, pack_hook: Callable[[Any], Any],
                 unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._outer: list = []

    def __enter__(self) -> saved_tensors_hooks:
        if STATE.saved_tensors_hooks_disabled is not None:
            raise RuntimeError(STATE.saved_tensors_hooks_disabled)
        self._outer.append(STATE.saved_tensors_hooks)
        STATE.saved_tensors_hooks = (self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.saved_tensors_hooks = self._outer.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved tensors live in host memory between forward and backward: a GPU tensor is
    copied to the CPU when packed and back to its device when unpacked (a CPU tensor is kept
    as it is, so, as in PyTorch, an in-place change to it after the forward is seen by the
    backward). ``pin_memory`` is accepted and ignored (tgrad has no pinned host memory);
    ``device_type`` is accepted for PyTorch's signature."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            return tensor.device, tensor.detach().cpu()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)
        self.pin_memory = pin_memory
        self.device_type = device_type


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager and decorator: inside it, entering ``saved_tensors_hooks`` (or
    ``save_on_cpu``) raises ``RuntimeError(error_message)``; entering it while such hooks
    are active raises the same error."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message
        self._outer: list = []

    def __enter__(self) -> disable_saved_tensors_hooks:
        if STATE.saved_tensors_hooks is not None:
            raise RuntimeError(self.error_message)
        self._outer.append(STATE.saved_tensors_hooks_disabled)
        STATE.saved_tensors_hooks_disabled = self.error_message
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.saved_tensors_hooks_disabled = self._outer.pop()

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any):
            with self:
                return func(*args, **kwargs)

        return wrapper


class GradientEdge(NamedTuple):
    """Where a tensor's gradient goes: ``node`` (its grad_fn, or a leaf's AccumulateGrad)
    and which of that node's outputs it is."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor) -> GradientEdge:
    """The ``GradientEdge`` of a tensor that requires grad: its grad_fn and output_nr, or a
    leaf's AccumulateGrad and 0."""
    node, output_nr = gradient_edge(tensor)
    if node is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    return GradientEdge(node, output_nr)


def increment_version(tensor) -> None:
    """Bump ``tensor``'s version counter (shared by its views), as an in-place op would:
    for code that changes a tensor's memory behind autograd's back, so saved-tensor checks
    still catch it. ``tensor`` may also be an iterable of tensors (PyTorch's signature): each
    is bumped once."""
    from tgrad.tensor import Tensor
    if isinstance(tensor, Tensor):
        tensor._storage.version += 1
        return
    for t in tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"increment_version: expected a Tensor or an iterable of Tensors, "
                            f"got an element of type {type(t).__name__}")
        t._storage.version += 1


class _MultiHandle:
    """The handle of a multi-grad hook: ``remove()`` removes its per-tensor hooks."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence, fn: Callable, *, mode: str = "all"):
    """One hook over the gradients of several tensors, per backward call.

    ``mode="all"``: ``fn(grads)`` runs once the gradients of all of ``tensors`` that this
    backward computes have been computed; ``grads`` has one entry per tensor, None for a
    tensor the backward does not reach (not in the graph, or not on a path to the
    ``inputs`` asked for) or that gets no gradient from a node that runs (``b`` of
    ``a, b = x.split(1)`` when only ``a`` is used). ``mode="any"``: ``fn(grad)`` runs with
    the first of those gradients computed, which, as in PyTorch, is None when the first
    hook called is that of an output without a gradient. ``fn`` must not modify its
    arguments; its return value is ignored.
    Returns a handle with ``remove()``.
    """
    modes = ("all", "any")
    if mode not in modes:
        raise ValueError(f"Expects mode to be one of {modes} but got {mode}")
    lock = threading.Lock()
    if mode == "any":
        fired: set = set()

        def first_only(grad) -> None:
            task = current_graph_task_id()
            with lock:
                if task in fired:
                    return
                fired.add(task)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(first_only) for t in tensors
                                  if t.requires_grad))

    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient (register_multi_grad_hook)")
    # Held strongly: a leaf's AccumulateGrad made here is the one its graphs will use.
    nodes = [gradient_edge(t)[0] for t in tensors]
    pending: dict = {}  # graph task id -> [gradients so far, how many still to come]

    def hook_for(index: int) -> Callable:
        def collect(grad) -> None:
            task = current_graph_task_id()
            with lock:
                state = pending.get(task)
                if state is None:
                    state = pending[task] = [[None] * len(nodes),
                                             sum(map(will_execute, nodes))]
                state[0][index] = grad
                state[1] -= 1
                done = state[1] == 0
                if done:
                    del pending[task]
            if done:
                fn(state[0])

        return collect

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))


# ---------------------------------------------------------------- allow_mutation_on_saved_tensors
# PyTorch's NOTE [Allow mutation on tensors saved for backward]: a tensor saved for backward
# inside the context is kept (as an alias) under a handle; an in-place write into a storage
# (inplace._write, which every in-place op, out= and setitem goes through) first clones
# every saved tensor still aliasing that storage; backward reads the clone if there is one,
# else the original. The GPU fused optimizer kernels write parameters directly and are not
# covered.
_mutation_enabled = False  # as PyTorch's module flag: one such context at a time

_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context "
            "in which the graph was originally recorded.")


class _Handle:
    pass


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` context (PyTorch's class):
    ``original`` (handle -> the saved tensor, not yet modified) and ``cloned`` (handle ->
    the copy made before it was modified); both emptied when the context exits."""

    def __init__(self) -> None:
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        # id(memory) -> (weakref to the memory, WeakSet of handles): keyed by the memory
        # (the storage's root array, unhashable), not the Storage: ``.data`` shares the
        # memory with a Storage (version counter) of its own
        self.storage_handles: dict = {}

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.storage_handles.clear()

    def pack(self, tensor) -> _Handle:
        # The same tensor at the same version, saved twice, shares one handle.
        tid = (id(tensor), id(tensor._storage), tensor._storage.version)
        handle = self.tid_to_weakhandle.get(tid)
        if handle is None:
            handle = self.tid_to_weakhandle[tid] = _Handle()
            # An alias without autograd identity (the saved-tensor machinery re-attaches
            # it), so that an output saved by its own node makes no reference cycle.
            self.original[handle] = type(tensor)(tensor._data, tensor._storage, tensor.device)
            root = tensor._storage.root
            entry = self.storage_handles.get(id(root))
            if entry is None or entry[0]() is not root:  # (an id of dead memory reused)
                entry = self.storage_handles[id(root)] = (weakref.ref(root), weakref.WeakSet())
            entry[1].add(handle)
        return handle

    def unpack(self, handle: _Handle):
        if not _mutation_enabled:
            raise AssertionError(_OUTSIDE)
        if handle in self.cloned:
            return self.cloned[handle]
        if handle not in self.original:
            raise AssertionError(_OUTSIDE)
        return self.original[handle]

    def before_write(self, tensor) -> None:
        """Called by in-place writes into ``tensor``'s memory, before the write."""
        root = tensor._storage.root
        entry = self.storage_handles.get(id(root))
        if entry is None or entry[0]() is not root:
            return
        del self.storage_handles[id(root)]
        handles = entry[1]
        from tgrad.ops._common import backend_of
        for handle in list(handles):
            orig = self.original.pop(handle, None)
            if orig is not None and handle not in self.cloned:
                self.cloned[handle] = type(orig)(backend_of(orig).clone(orig._data), None,
                                                 orig.device)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationOnSavedContext]:
    """Context manager under which tensors saved for backward may be modified in place.

    A saved tensor modified in place inside it is cloned just before the write, so backward
    uses the saved values instead of raising PyTorch's "modified by an inplace operation"
    error. Run both forward and backward inside the same context: reading a saved tensor
    after it exits raises ``AssertionError`` (PyTorch's text); contexts cannot be nested
    (``RuntimeError``). Yields the context's state (``_AllowMutationOnSavedContext``),
    cleared on exit. Built on ``saved_tensors_hooks``, so hooks entered inside it take over
    for the tensors saved under them.
    """
    global _mutation_enabled
    if _mutation_enabled:  # (checked first: the outer context stays intact)
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()
    with saved_tensors_hooks(ctx.pack, ctx.unpack):
        outer = STATE.mutation_ctx
        try:
            _mutation_enabled = True
            STATE.mutation_ctx = ctx
            yield ctx
        finally:
            STATE.mutation_ctx = outer
            ctx.clear()
            _mutation_enabled = False
