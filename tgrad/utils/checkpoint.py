"""Activation checkpointing (PyTorch's torch.utils.checkpoint): run a function without
keeping its intermediate results, and run it again during backward to get them.

``checkpoint(fn, *args)`` records one node whose backward re-runs ``fn`` on the saved
inputs with grad enabled (and, by default, the random generators' states of the forward,
so dropout draws the same mask), then backpropagates the incoming gradients through that
recomputed graph: parameters used inside ``fn`` get their ``.grad`` from it and the inputs'
gradients flow on. Memory: only ``fn``'s inputs and outputs are kept between forward and
backward. Both ``use_reentrant`` settings take this one path (a graph node is recorded even
when no input requires grad, so parameters inside ``fn`` still get gradients, as with
PyTorch's non-reentrant variant). Under ``autograd.grad`` only ``fn``'s inputs get
gradients (tensors used inside ``fn`` that are not its inputs get none, and no ``.grad`` is
written), as with PyTorch's reentrant variant. Not supported (they raise): differentiating
a checkpoint's backward again (create_graph=True), and outputs other than a Tensor or a
tuple.
"""

from __future__ import annotations

from typing import Any, Callable

from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE, enable_grad, no_grad
from tgrad.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


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
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.other_args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            out = fn(*args)
        if not isinstance(out, (Tensor, tuple)):
            raise TypeError(f"checkpoint: the function must return a Tensor or a tuple (of "
                            f"tensors and other values), got {type(out).__name__}")
        return out

    @staticmethod
    def backward(ctx, *grads):
        if STATE.enabled:
            raise RuntimeError("checkpoint: differentiating through a checkpoint's backward "
                               "(create_graph=True) is not supported in tgrad")
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
        try:
            if ctx.rng is not None:
                _set_rng_states(ctx.rng)
            with enable_grad():
                outputs = ctx.fn(*args)
        finally:
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


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with its intermediate results recomputed in backward
    instead of kept (see the module docstring)."""
    if kwargs:
        fn = function
        function = lambda *a: fn(*a, **kwargs)  # noqa: E731
    from tgrad.ops.creation import zeros
    anchor = zeros((), requires_grad=True)  # a graph node is recorded whatever the inputs
    return CheckpointFunction.apply(function, preserve_rng_state, anchor, *args)


def checkpoint_sequential(functions, segments: int, input: Tensor,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Tensor:
    """Run a Sequential (or a list of modules) in ``segments`` checkpointed chunks; the last
    chunk runs normally (as PyTorch)."""
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
                           **kwargs)
    return run(last, len(functions))(input)
