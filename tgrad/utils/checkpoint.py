"""Activation checkpointing (PyTorch's torch.utils.checkpoint): run a function without
keeping its intermediate results, and run it again during backward to get them.

``checkpoint(fn, *args, use_reentrant=False)`` (PyTorch's recommended, non-reentrant
variant) runs ``fn`` normally, recording its graph, under a ``saved_tensors_hooks`` pair
(tgrad.autograd.graph) whose pack hook keeps a placeholder instead of each tensor an op
saves for backward. The first time backward unpacks one of them, ``fn`` is run again on the
saved inputs (with grad enabled, the forward's random generators' states when
``preserve_rng_state``, and the forward's autocast state), with its own pack hook that
collects the recomputed saved tensors, and stops as soon as all of them are there
(``early_stop``); each unpack then hands back its recomputed tensor and drops it. So
recomputation happens once per backward call however many saved tensors it unpacks, and:
tensors used inside ``fn`` that are not its inputs (closures, module parameters) get
gradients from ``.backward()`` and ``autograd.grad`` alike; any output structure (dicts,
lists, nested tuples, non-tensor values) works; double backward works; a second backward
without ``retain_graph=True`` raises PyTorch's "backward through the graph a second time"
error; under ``no_grad`` ``fn`` just runs. The recomputation is checked against the
forward (``determinism_check="default"``): a different number of saved tensors, or saved
tensors with a different shape, dtype or device, raise ``CheckpointError`` (PyTorch's
text) instead of giving wrong gradients. ``context_fn`` returns two context managers, for
the forward and for the recomputation. Memory: ``fn``'s inputs and outputs are kept
between forward and backward, as are tensors an op keeps as a node attribute instead of
saving them (the index arrays of indexing). A checkpoint inside a checkpoint works; its
inputs are saved through the outer one's hooks (PyTorch's nesting rules).

``use_reentrant=True`` records one node whose backward re-runs ``fn`` on the saved inputs
and backpropagates the incoming gradients through that recomputed graph. A graph node is
recorded even when no input requires grad, so parameters inside ``fn`` still get
``.grad`` from ``.backward()``; under ``autograd.grad`` only ``fn``'s inputs get gradients
(tensors used inside ``fn`` that are not its inputs get none, and no ``.grad`` is
written), as with PyTorch's reentrant variant. Not supported there (they raise):
differentiating a checkpoint's backward again (create_graph=True), and outputs other than
a Tensor or a tuple. ``use_reentrant=None`` (the default) warns that it should be passed
explicitly and takes the reentrant variant, as PyTorch 2.x does.

Selective checkpointing (``context_fn=functools.partial(create_selective_checkpoint_contexts,
policy_fn_or_list)``, non-reentrant only): the forward asks the policy, for each op that
autograd records, whether its output is kept (``MUST_SAVE`` / ``PREFER_SAVE``) or recomputed;
the recomputation then hands back the kept outputs by the op's call index instead of running
those ops. PyTorch's ops are ``torch.ops.aten.*`` overloads; tgrad's are its
``autograd.Function`` classes, i.e. what ``Function.apply`` runs: the ``op`` given to a policy
function is that class (``op.name`` is the op's name: ``"matmul"`` for tgrad.mm, tgrad.matmul,
``@`` and the product in F.linear; ``"sigmoid"``, ``"mul"``, ``"relu"``, ...; a custom
Function has ``name`` None and is matched by its class), and a list may hold op names,
Function classes or public functions (mapped by their ``__name__``; tgrad.mm / tgrad.bmm to
``"matmul"``). Ops a Function runs inside its own forward, and ops run under no_grad, are not
asked about (they are part of the recorded op). Where PyTorch's recomputed autograd node
re-saves the inputs of a kept op, tgrad re-saves the same tensors it saved in the forward:
the op's inputs and outputs as recomputed / kept, and any other tensor the op saved (kept
too, so it is not recomputed).

Differences from PyTorch: ``debug=True`` (operator logs in the error) is not supported
(it raises); keyword arguments for ``fn`` are accepted with ``use_reentrant=True`` too
(PyTorch raises ``ValueError`` there).
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import warnings
import weakref
from typing import Any, Callable, ContextManager

from tgrad.autograd.engine import current_graph_task_id
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE, enable_grad, no_grad
from tgrad.autograd.graph import saved_tensors_hooks
from tgrad.autograd.node import HookedSavedTensor, SavedTensor
from tgrad.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn",
           "set_checkpoint_early_stop", "CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]


def _rng_states(devices: set) -> dict:
    from tgrad.ops.creation import get_rng_state
    return {d: get_rng_state(d) for d in devices}


def _set_rng_states(states: dict) -> None:
    from tgrad.ops.creation import set_rng_state
    for d, s in states.items():
        set_rng_state(s, d)


class CheckpointFunction(Function):
    """y = fn(*args) computed without a graph;  backward: recompute fn(*args) with a graph
    and backpropagate the incoming gradients through it (returning the inputs' gradients)."""

    name = "checkpoint"
    node_name = "CheckpointFunctionBackward"

    @staticmethod
    def forward(ctx, fn, preserve_rng_state, _anchor, *args):
        ctx.fn, ctx.preserve = fn, preserve_rng_state
        devices = {"cpu"} | {str(a.device) for a in args if isinstance(a, Tensor)}
        ctx.rng = _rng_states(devices) if preserve_rng_state else None
        ctx.autocast = STATE.autocast  # the recomputation runs under the same autocast
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.other_args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            out = fn(*args)
        if not isinstance(out, (Tensor, tuple)):
            raise TypeError(f"checkpoint: the function must return a Tensor or a tuple (of "
                            f"tensors and other values), got {type(out).__name__}; "
                            f"use_reentrant=False takes any output structure")
        return out

    @staticmethod
    def backward(ctx, *grads):
        if STATE.enabled:
            raise RuntimeError("checkpoint: differentiating through a checkpoint's backward "
                               "(create_graph=True) is not supported in tgrad with "
                               "use_reentrant=True; use use_reentrant=False")
        from tgrad.autograd import backward as autograd_backward
        saved = ctx.saved_tensors
        args = list(ctx.other_args)
        inputs = []
        for pos, t in zip(ctx.tensor_positions, saved):
            d = t.detach()
            d.requires_grad_(t.requires_grad)
            args[pos] = d
            inputs.append(d)
        outer = _rng_states(set(ctx.rng)) if ctx.rng is not None else None
        outer_autocast = STATE.autocast
        try:
            if ctx.rng is not None:
                _set_rng_states(ctx.rng)
            STATE.autocast = ctx.autocast
            with enable_grad():
                outputs = ctx.fn(*args)
        finally:
            STATE.autocast = outer_autocast
            if outer is not None:
                _set_rng_states(outer)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        wanted = [d for d in inputs if d.requires_grad]
        if not pairs:
            return (None, None, None) + (None,) * len(args)
        if STATE.accumulating:  # .backward(): tensors used inside fn get their .grad too
            autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
            found = {id(d): d.grad for d in wanted}
        else:  # autograd.grad: only the inputs' gradients, no .grad written anywhere
            from tgrad.autograd import grad as autograd_grad
            got = autograd_grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                allow_unused=True) if wanted else ()
            found = {id(d): g for d, g in zip(wanted, got)}
        return (None, None, None) + tuple(
            found.get(id(d)) if isinstance(d, Tensor) else None for d in args)


# ---------------------------------------------------------------- non-reentrant variant

class CheckpointError(RuntimeError):
    """A checkpointed function's recomputation does not match its forward."""


_MISMATCH_TIP = (
    "\nTip: the recomputation must run the same operations on tensors of the same shapes, "
    "dtypes and devices as the forward did (control flow that depends on global state, or "
    "random draws with preserve_rng_state=False, can change between the two).")


def noop_context_fn() -> tuple:
    """The default ``context_fn``: no context for the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_early_stop_override: bool | None = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Checkpoints run inside it (forward) stop their recomputation as soon as all saved
    tensors are recomputed (``True``, the default) or always run the function to its end;
    overrides the ``early_stop`` argument."""
    global _early_stop_override
    prev = _early_stop_override
    _early_stop_override = bool(enable)
    try:
        yield
    finally:
        _early_stop_override = prev


def _default_meta(t: Tensor) -> dict:
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


_META_FNS: dict = {"default": _default_meta, "none": lambda t: None}

_outside_ids = itertools.count(-2, -1)  # unpacks outside any backward: a new id each


class _Holder:
    """What the forward's pack hook stores in place of a saved tensor: per backward id,
    the recomputed tensor, None once unpacked (so it is freed even with retain_graph)."""

    __slots__ = ("recomputed", "__weakref__")

    def __init__(self) -> None:
        self.recomputed: dict = {}


class _StopRecomputationError(Exception):
    """Raised by the recomputation's pack hook once every saved tensor is recomputed."""


class _Frame:
    """One non-reentrant checkpoint call: its inputs, the placeholders its forward saved
    (weakly: a placeholder lives as long as the node that saved it) with their metadata,
    and per backward id whether the recomputation ran and how many tensors it saved."""

    def __init__(self, fn: Callable, kwargs: dict, rng: dict | None, early_stop: bool,
                 meta_fn: Callable, recompute_context: ContextManager) -> None:
        self.fn, self.kwargs, self.rng = fn, kwargs, rng
        self.autocast = STATE.autocast
        self.early_stop, self.meta_fn = early_stop, meta_fn
        self.recompute_context = recompute_context
        self.saved_args: list = []
        self.weak_holders: list = []
        self.metas: list = []
        self.counts: dict = {}  # backward id -> tensors saved by its recomputation
        self.recomputed: set = set()  # backward ids whose recomputation ran
        self.forward_completed = False
        self.ignore_mismatch = False

    def save_inputs(self, args: tuple) -> None:
        # Saved as an op saves them: version-checked, or through the hooks in force (an
        # enclosing checkpoint's, whose recomputation then gives them back).
        hooks = STATE.saved_tensors_hooks
        self.saved_args = [
            (SavedTensor(a, False) if hooks is None else HookedSavedTensor(a, False, hooks))
            if isinstance(a, Tensor) else a for a in args]

    def inputs(self) -> list:
        return [a.unpack(None) if isinstance(a, (SavedTensor, HookedSavedTensor)) else a
                for a in self.saved_args]

    # The forward's pair: a placeholder per saved tensor.
    def pack(self, t: Tensor) -> _Holder:
        holder = _Holder()
        self.weak_holders.append(weakref.ref(holder))
        self.metas.append(self.meta_fn(t))
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        gid = current_graph_task_id()
        if gid == -1:
            gid = next(_outside_ids)
        if gid not in self.recomputed:
            self.recompute(gid)
        t = holder.recomputed.get(gid)
        if t is None:
            raise CheckpointError(
                "tgrad.utils.checkpoint: Unpack is being triggered for a tensor that was "
                "already unpacked once. If you are calling ctx.saved_tensors in backward, "
                "make sure to do so only once.")
        holder.recomputed[gid] = None
        return t

    # The recomputation's pack hook: hand each recomputed saved tensor to its placeholder.
    def collect(self, gid: int, x: Tensor) -> Tensor:
        x = x.detach() if x.requires_grad else x
        idx = self.counts[gid]
        self.counts[gid] = idx + 1
        if idx >= len(self.weak_holders):
            if not self.forward_completed:  # a backward inside the function's forward
                self.ignore_mismatch = True
                return x
            raise CheckpointError(
                "tgrad.utils.checkpoint: trying to save more tensors during recomputation "
                "than during the original forward pass." + _MISMATCH_TIP)
        holder = self.weak_holders[idx]()
        if holder is not None:  # None: its node's saved tensors were already freed
            holder.recomputed[gid] = x
        if self.early_stop and idx + 1 == len(self.weak_holders):
            raise _StopRecomputationError
        return x

    def recompute(self, gid: int) -> None:
        args = self.inputs()
        self.counts[gid] = 0
        outer_rng = _rng_states(set(self.rng)) if self.rng is not None else None
        outer_autocast = STATE.autocast
        hooks = saved_tensors_hooks(lambda x: self.collect(gid, x), lambda x: x)
        # Inside a forward-AD level the forward computed tangents (saving their tensors too):
        # so does the recomputation, even when a backward formula's op triggers it with the
        # level cleared (forward over reverse).
        outer_fw = STATE.fw_level
        STATE.fw_level = STATE.fw_current
        try:
            if self.rng is not None:
                _set_rng_states(self.rng)
            STATE.autocast = self.autocast
            with hooks, enable_grad(), self.recompute_context:
                self.fn(*args, **self.kwargs)
        except _StopRecomputationError:
            pass
        finally:
            STATE.fw_level = outer_fw
            STATE.autocast = outer_autocast
            if outer_rng is not None:
                _set_rng_states(outer_rng)
        self.recomputed.add(gid)
        self.check(gid)

    def check(self, gid: int) -> None:
        """PyTorch's determinism check: as many saved tensors, with the same metadata."""
        if self.ignore_mismatch:
            return
        if len(self.weak_holders) != self.counts[gid]:
            raise CheckpointError(
                "tgrad.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.counts[gid]}."
                + _MISMATCH_TIP)
        different = ""
        for idx, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None:
                continue
            now = self.meta_fn(holder.recomputed[gid])
            if now != self.metas[idx]:
                different += (f"tensor at position {idx}:\nsaved metadata: {self.metas[idx]}\n"
                              f"recomputed metadata: {now}\n")
        if different:
            raise CheckpointError(
                "tgrad.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{different}."
                + _MISMATCH_TIP)


def _checkpoint_without_reentrant(function: Callable, args: tuple, kwargs: dict,
                                  preserve_rng_state: bool, context_fn: Callable,
                                  determinism_check: str, early_stop: bool) -> Any:
    if determinism_check not in _META_FNS:
        raise ValueError(f"determinism_check should be one of {list(_META_FNS)}, but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    if not STATE.enabled:  # nothing is recorded: nothing to recompute
        return function(*args, **kwargs)
    rng = None
    if preserve_rng_state:
        rng = _rng_states({"cpu"} | {str(a.device) for a in args if isinstance(a, Tensor)})
    frame = _Frame(function, kwargs, rng,
                   _early_stop_override if _early_stop_override is not None else early_stop,
                   _META_FNS[determinism_check], recompute_context)
    frame.save_inputs(args)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


# ---------------------------------------------------------------- selective checkpointing

class CheckpointPolicy(enum.Enum):
    """Whether selective checkpointing keeps an op's output (``{MUST,PREFER}_SAVE``) or
    recomputes it in backward (``{MUST,PREFER}_RECOMPUTE``). ``MUST_*`` should not be
    overridden by other subsystems (PyTorch's torch.compile); eagerly both behave alike.
    ``{MUST,PREFER}_CPU_OFFLOAD`` recompute in eager mode, as in PyTorch."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVE_POLICIES = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)


class SelectiveCheckpointContext:
    """What a policy function gets as ``ctx``: it is called during the forward only
    (``is_recompute`` is always False, deprecated as in PyTorch) with the op's output as
    ``op_output``."""

    def __init__(self, *, is_recompute: bool, op_output: Any = None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


class _VersionWrapper:
    """A kept tensor (detached) with its version, to refuse one changed in place since."""

    __slots__ = ("val", "version")

    def __init__(self, val: Tensor) -> None:
        self.val = val.detach()
        self.version = val._storage.version

    def get_val(self, allow_cache_entry_mutation: bool) -> Tensor:
        if not allow_cache_entry_mutation and self.val._storage.version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has "
                               "been mutated")
        return self.val


_RECOMPUTE = object()
_CONSUMED = object()
_SAC_MISMATCH_MSG = ("This can happen if the operations in the checkpointed region are "
                     "nondeterministic or depend on global state that changed between "
                     "forward and backward.")
_OP_ALIASES = {"mm": "matmul", "bmm": "matmul"}  # public functions that run another op


def _op_label(op) -> str:
    return op.name or op.__name__


class _SACMode:
    """One of the two contexts of create_selective_checkpoint_contexts. While entered,
    Function.apply hands it the ops it records (STATE.sac): the forward's (``caching``)
    runs each op, asks the policy and keeps the output (and what the op saved for backward,
    as references to its inputs / outputs or kept tensors) under (op class, call index); the
    recomputation's hands a kept op's output back without running it, and passes the tensors
    the op saved in the forward, now recomputed, to the saved-tensor pack hook in force (the
    checkpoint's), so the recomputation saves the same tensors as the forward."""

    def __init__(self, caching: bool, policy_fn: Callable | None, storage: dict,
                 allow_cache_entry_mutation: bool = False) -> None:
        self.caching, self.policy_fn, self.storage = caching, policy_fn, storage
        self.allow_cache_entry_mutation = allow_cache_entry_mutation
        self.counter: dict = {}
        self._outer: list = []

    def __enter__(self) -> _SACMode:
        from tgrad.autograd import function
        if not self.caching:
            self.counter = {}  # a second backward gets "backward an extra time"
        self._outer.append(STATE.sac)
        STATE.sac = self
        function._SAC_ACTIVE += 1
        return self

    def __exit__(self, *exc: object) -> None:
        from tgrad.autograd import function
        function._SAC_ACTIVE -= 1
        STATE.sac = self._outer.pop()

    def _index(self, cls) -> int:
        idx = self.counter.get(cls, 0)
        self.counter[cls] = idx + 1
        return idx

    def _run(self, cls, args: tuple, kwargs: dict) -> Any:
        STATE.sac = None  # the op itself runs as usual
        try:
            return cls.apply(*args, **kwargs)
        finally:
            STATE.sac = self

    def apply(self, cls, args: tuple, kwargs: dict) -> Any:
        return (self._cache if self.caching else self._replay)(cls, args, kwargs)

    def _cache(self, cls, args: tuple, kwargs: dict) -> Any:
        packed: list = []
        hooks = STATE.saved_tensors_hooks
        if hooks is not None:  # note what the op saves for backward, in order
            pack, unpack = hooks

            def note(t):
                packed.append(t)
                return pack(t)
            STATE.saved_tensors_hooks = (note, unpack)
        try:
            out = self._run(cls, args, kwargs)
        finally:
            if hooks is not None:
                STATE.saved_tensors_hooks = hooks
        idx = self._index(cls)
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                cls, *args, **kwargs)
        if isinstance(policy, bool):  # PyTorch's backward-compatible form
            policy = CheckpointPolicy.MUST_SAVE if policy else \
                CheckpointPolicy.PREFER_RECOMPUTE
        entries = self.storage.setdefault(cls, {})
        if policy not in _SAVE_POLICIES:
            entries[idx] = _RECOMPUTE
            return out
        outs = out if isinstance(out, tuple) else (out,)
        kept = tuple((_VersionWrapper(o), o.requires_grad) if isinstance(o, Tensor) else o
                     for o in outs)
        saved = []
        for t in packed:  # ("arg", k), ("out", j) or a kept tensor
            ref = next((("arg", k) for k, a in enumerate(args) if a is t), None) or next(
                (("out", j) for j, o in enumerate(outs) if o is t), None)
            saved.append(ref if ref is not None else _VersionWrapper(t))
        entries[idx] = (kept, isinstance(out, tuple), saved)
        return out

    def _replay(self, cls, args: tuple, kwargs: dict) -> Any:
        idx = self._index(cls)
        entries = self.storage.get(cls)
        if entries is None:
            raise RuntimeError(f"{_op_label(cls)} encountered during backward but not found "
                               f"in storage. {_SAC_MISMATCH_MSG}")
        entry = entries.get(idx)
        if entry is None:
            raise RuntimeError(f"{_op_label(cls)} invocation index {idx} encountered during "
                               f"backward but not found in storage. {_SAC_MISMATCH_MSG}")
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return self._run(cls, args, kwargs)
        entries[idx] = _CONSUMED
        kept, is_tuple, saved = entry
        allow = self.allow_cache_entry_mutation
        outs = []
        for k in kept:  # a fresh alias of each kept output, requiring grad as in the forward
            if isinstance(k, tuple):
                o = k[0].get_val(allow).detach()
                outs.append(o.requires_grad_() if k[1] else o)
            else:
                outs.append(k)
        hooks = STATE.saved_tensors_hooks
        if hooks is not None and saved:  # what the op would save: to the pack hook
            tensors = [(args[r[1]] if r[0] == "arg" else outs[r[1]]) if type(r) is tuple
                       else r.get_val(allow) for r in saved]
            STATE.enabled = False  # pack hooks run with grad mode off
            try:
                for t in tensors:
                    hooks[0](t)
            finally:
                STATE.enabled = True
        return tuple(outs) if is_tuple else outs[0]


def create_selective_checkpoint_contexts(policy_fn_or_list: Callable | list,
                                         allow_cache_entry_mutation: bool = False) -> tuple:
    """The ``context_fn`` pair of selective activation checkpointing (use it through
    ``functools.partial`` with ``checkpoint(..., use_reentrant=False, context_fn=...)``).
    ``policy_fn_or_list``: ``policy_fn(ctx, op, *args, **kwargs) -> CheckpointPolicy`` (or
    a bool: True is MUST_SAVE, False PREFER_RECOMPUTE), called once per recorded op in the
    forward with ``op`` the op's Function class; or a list of ops to save (op names such as
    ``"matmul"``, Function classes, or public functions such as ``tgrad.mm``), the others
    being recomputed. A kept tensor changed in place before backward raises unless
    ``allow_cache_entry_mutation``. A region can be backpropagated once."""
    if isinstance(policy_fn_or_list, list):
        names, classes = set(), set()
        for op in policy_fn_or_list:
            if isinstance(op, str):
                names.add(op)
            elif isinstance(op, type) and issubclass(op, Function):
                classes.add(op)
            elif callable(op) and isinstance(getattr(op, "__name__", None), str):
                names.add(_OP_ALIASES.get(op.__name__, op.__name__))
            else:
                raise ValueError(f"Expected op in `op_list` to be an op name, an "
                                 f"autograd.Function class or a tgrad function but got: {op} "
                                 f"of type {type(op)}.")

        def policy_fn(ctx, op, *args, **kwargs):
            if op in classes or (op.name is not None and op.name in names):
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict = {}
    return (_SACMode(True, policy_fn, storage),
            _SACMode(False, None, storage, allow_cache_entry_mutation))


_USE_REENTRANT_WARNING = (
    "tgrad.utils.{}: the use_reentrant parameter should be passed explicitly. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, preserve_rng_state: bool = True,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with its intermediate results recomputed in backward
    instead of kept (see the module docstring). Pass ``use_reentrant=False`` (recommended);
    ``None`` warns and takes the reentrant variant, as PyTorch."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT_WARNING.format("checkpoint"), stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            fn = function
            function = lambda *a: fn(*a, **kwargs)  # noqa: E731
        from tgrad.ops.creation import zeros
        anchor = zeros((), requires_grad=True)  # a graph node is recorded whatever the inputs
        return CheckpointFunction.apply(function, preserve_rng_state, anchor, *args)
    if debug:
        raise NotImplementedError("tgrad.utils.checkpoint: debug=True (operator logs of the "
                                  "forward and the recomputation) is not supported in tgrad; "
                                  "pass debug=False")
    return _checkpoint_without_reentrant(function, args, kwargs, preserve_rng_state,
                                         context_fn, determinism_check, early_stop)


def checkpoint_sequential(functions, segments: int, input: Tensor,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Tensor:
    """Run a Sequential (or a list of modules) in ``segments`` checkpointed chunks; the last
    chunk runs normally (as PyTorch). ``kwargs``: ``preserve_rng_state`` only.
    ``use_reentrant=None`` warns and takes the reentrant variant, as PyTorch."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT_WARNING.format("checkpoint.checkpoint_sequential"),
                      stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    segments = max(1, min(int(segments), len(functions)))
    size = len(functions) // segments

    def run(start: int, end: int):
        def forward(x):
            for f in functions[start:end]:
                x = f(x)
            return x
        return forward

    last = 0
    for start in range(0, size * (segments - 1), size):
        last = start + size
        input = checkpoint(run(start, last), input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=preserve)
    return run(last, len(functions))(input)
