"""The backward engine: dependency counting over the graph reachable from the roots.

1. Walk the graph from the root edges (iteratively: no recursion, so a chain of 100,000
   ops is fine) and count, for each node, how many edges point at it.
2. When only some gradients are wanted (``autograd.grad`` / ``backward(inputs=...)``), mark
   the nodes that lie on a path to a wanted edge; the others are skipped.
3. Run nodes from a ready heap (latest-created first, like PyTorch; ``_seq`` is unique, so
   entries never compare nodes); a node is ready when all edges into it have delivered.
   A leaf's AccumulateGrad runs as soon as it is ready (PyTorch gives it the highest
   sequence number), in the order the accumulators became ready: x * y accumulates x, then
   y, and a leaf's hooks and post-accumulate hooks run before the rest of the backward.
   Gradients arriving on the same input are summed.
Saved tensors of every executed node are freed unless ``retain_graph``.
"""

from __future__ import annotations

import heapq
import itertools
import warnings

from tgrad.autograd import profiler_hooks
from tgrad.autograd.grad_mode import SHARED, STATE
from tgrad.autograd.node import AccumulateGrad, checked_hook_value, run_leaf_hooks

_task_ids = itertools.count()
# Ready-heap keys of leaf accumulators: below every other node's (-_seq), first in, first out
_ACC_FIRST = -(1 << 62)
_acc_order = itertools.count()


def _collect(root_nodes: list) -> dict:
    """Number of incoming edges per reachable node (a node is seen once it is a key)."""
    deps: dict = {}
    stack = []
    for n in root_nodes:
        if n not in deps:
            deps[n] = 0
            stack.append(n)
    get = deps.get
    push = stack.append
    while stack:
        for child, _ in stack.pop()._edges:
            if child is not None:
                d = get(child)
                if d is None:
                    deps[child] = 1
                    push(child)
                else:
                    deps[child] = d + 1
    return deps


def _needed(deps: dict, targets: set) -> set:
    """Nodes that must run so gradients reach ``targets`` (Kahn order, then reversed)."""
    remaining = dict(deps)
    order = []
    ready = [n for n, d in remaining.items() if d == 0]
    while ready:
        n = ready.pop()
        order.append(n)
        for child, _ in n._edges:
            if child is None:
                continue
            remaining[child] -= 1
            if remaining[child] == 0:
                ready.append(child)
    reaches = set()
    execute = set()
    for n in reversed(order):
        hit = False
        for child, _ in n._edges:
            if child is not None and child in reaches:
                hit = True
                break
        if hit:
            execute.add(n)
        if hit or n in targets:
            reaches.add(n)
    return execute


def run_backward(root_edges: list, root_grads: list, retain_graph: bool, create_graph: bool,
                 capture_edges: list | None = None, accumulate: bool = True) -> list | None:
    """Propagate ``root_grads`` from ``root_edges``.

    With ``capture_edges`` the gradient arriving at each of those edges is returned (in
    order; None if nothing arrived). With ``accumulate`` False, AccumulateGrad nodes do not
    run (``autograd.grad``).
    """
    # Inside a forward-AD level the level stays active (forward over reverse, as PyTorch):
    # the backward formulas are tgrad ops on the saved (dual) tensors and the gradients, so
    # every gradient gets the tangent of its formula (for autograd.grad / create_graph: the
    # gradients' tangents are Hessian-vector products). AccumulateGrad keeps it only with
    # create_graph (as PyTorch's .grad).
    if len(root_edges) == 1 and root_edges[0][0] is not None:
        # One root (Tensor.backward): what the general code below builds, made directly.
        # Its buffer is [g] for output 0 of a single-output node (_add_to_buffer's result
        # then), and it alone is ready (nothing else can point at the only root).
        node, nr = root_edges[0]
        roots = [node]
        deps = _collect(roots)
        buffers: dict = {}
        if nr == 0 and len(node._out_meta) <= 1:
            buffers[node] = [root_grads[0]]
        else:
            _add_to_buffer(buffers, node, nr, root_grads[0])
        ready = [(-node._seq, node)]
    else:
        roots = [e[0] for e in root_edges if e[0] is not None]
        deps = _collect(roots)
        buffers = {}
        for (node, nr), g in zip(root_edges, root_grads):
            if node is not None:
                _add_to_buffer(buffers, node, nr, g)
        ready = [(-n._seq, n) for n in set(roots) if deps[n] == 0]  # _seq is unique: no ties
        heapq.heapify(ready)

    capture = None
    execute = None
    if capture_edges is not None:
        capture = {}
        for i, (node, nr) in enumerate(capture_edges):
            capture.setdefault(node, []).append((nr, i))
        execute = _needed(deps, set(capture))
        if accumulate:  # backward(inputs=...): also run the wanted leaves' accumulators
            execute |= {n for n in capture if isinstance(n, AccumulateGrad)}
    captured = [None] * len(capture_edges) if capture_edges is not None else None

    prof = profiler_hooks.ACTIVE
    run_range = prof.range_start("autograd::engine::run_backward", "engine") if prof else None
    heappush, heappop = heapq.heappush, heapq.heappop
    pop_buffer, get_buffer = buffers.pop, buffers.get
    prev_mode, prev_accumulating, prev_task = STATE.enabled, STATE.accumulating, STATE.graph_task
    # create_graph records the backward's ops, except inside inference_mode (PyTorch: the
    # gradients are then inference tensors without a graph)
    STATE.enabled, STATE.accumulating = create_graph and not STATE.inference, accumulate
    STATE.graph_task = (next(_task_ids), deps, execute, capture)  # see will_execute
    plain = prof is None and not SHARED.anomaly  # no per-node instrumentation
    try:
        while ready:
            node = heappop(ready)[1]
            grads = pop_buffer(node, None)
            if grads is None:
                grads = [None] * _num_outputs(node)
            run = execute is None or node in execute
            if (node._pre_hooks is not None or node._retain_grad_refs is not None) and (
                    run or node in capture):  # not on branches the wanted grads skip
                grads = _run_tensor_prehooks(node, grads)
            if execute is not None:
                if node in capture:
                    is_acc = isinstance(node, AccumulateGrad)
                    for nr, i in capture[node]:
                        g = grads[nr] if nr < len(grads) else None
                        if g is not None and is_acc and not accumulate:
                            g = run_leaf_hooks(node.variable, g)
                        captured[i] = g
                    if is_acc and not accumulate:
                        run = False
            edges = node._edges
            if run:
                if plain and node._metadata is None and node._post_hooks is None:
                    outputs = node.apply(grads)  # the common case
                else:
                    outputs = _call_node(node, grads, prof)
                if not retain_graph and node._saved is not None:
                    node.release()
                if len(outputs) < len(edges):
                    outputs = tuple(outputs) + (None,) * (len(edges) - len(outputs))
            else:
                outputs = (None,) * len(edges)
            grads = None
            for (child, nr), g in zip(edges, outputs):
                if child is None:
                    continue
                if g is not None:
                    buf = get_buffer(child)
                    if buf is None:
                        meta = child._out_meta
                        if nr == 0 and len(meta) <= 1:
                            buffers[child] = [g]  # the common case: a single output
                        else:
                            _add_to_buffer(buffers, child, nr, g)
                    elif nr < len(buf) and buf[nr] is None:
                        buf[nr] = g
                    else:
                        _add_to_buffer(buffers, child, nr, g)
                d = deps[child] - 1
                deps[child] = d
                if d == 0:
                    heappush(ready, (_ACC_FIRST + next(_acc_order)
                                     if child.__class__ is AccumulateGrad else -child._seq,
                                     child))
            # Drop this frame's references: AccumulateGrad keeps a gradient without copying
            # it only when nothing else references it (see node._owned).
            outputs = g = buf = None
    finally:
        STATE.enabled, STATE.accumulating = prev_mode, prev_accumulating
        STATE.graph_task = prev_task
        if run_range is not None:
            prof.range_end(run_range)
    return captured


def current_graph_task_id() -> int:
    """A number identifying the backward running in this thread, -1 outside any."""
    task = STATE.graph_task
    return -1 if task is None else task[0]


def will_execute(node) -> bool:
    """Whether the backward running in this thread runs ``node`` (or captures the gradient
    arriving at it): it is reachable from the roots and, when only some gradients are
    wanted, on a path to one of them. False outside a backward."""
    task = STATE.graph_task
    if task is None:
        return False
    _, deps, execute, capture = task
    return node in deps and (execute is None or node in execute or node in capture)


def _num_outputs(node) -> int:
    meta = node._out_meta
    return len(meta) if meta else 1


def _add_to_buffer(buffers: dict, node, nr: int, g) -> None:
    buf = buffers.get(node)
    if buf is None:
        buf = [None] * max(_num_outputs(node), nr + 1)
        buffers[node] = buf
    elif nr >= len(buf):
        buf.extend([None] * (nr + 1 - len(buf)))
    old = buf[nr]
    if g is not None:  # None: an undefined root gradient (gradcheck's check_undefined_grad)
        # (a sparse gradient second: dense + sparse is the one order PyTorch's add takes; two
        # sparse ones: the new first, as PyTorch's InputBuffer, var + old_var)
        buf[nr] = g if old is None else (g + old if old._sparse else old + g)


def _run_tensor_prehooks(node, grads: list) -> list:
    """Run the tensor hooks of ``node``'s outputs, then fill retained grads. As PyTorch, a
    hook of an output that gets no gradient from this backward is called with None (so
    ``register_multi_grad_hook`` sees every tensor of a node that runs) and may not
    replace it."""
    hooks = node._pre_hooks
    if hooks:
        for nr, table in hooks.items():
            g = grads[nr] if nr < len(grads) else None
            if g is None:
                for hook in list(table.values()):
                    if hook(None) is not None:
                        raise RuntimeError("can't replace a None gradient with a non-None "
                                           "value")
                continue
            for hook in list(table.values()):
                new = hook(g)
                if new is not None:
                    g = checked_hook_value(hook, new, g)
            grads[nr] = g
    refs = node._retain_grad_refs
    if refs:
        for nr, ref in refs.items():
            t = ref()
            g = grads[nr] if nr < len(grads) else None
            if t is None or g is None:
                continue
            if t._grad is None:
                t._grad = g.clone() if STATE.enabled else g.detach().clone()
            else:
                t._grad = t._grad + g
    return grads


def _call_node(node, grads: list, prof) -> tuple:
    meta = node._metadata
    if prof is None and not meta and node._post_hooks is None and not SHARED.anomaly:
        return node.apply(grads)  # the common case
    node_pre = meta.get("_node_prehooks") if meta else None
    leaf_hooked = False
    if node_pre:
        if (type(node) is AccumulateGrad and node.variable._hooks and grads
                and grads[0] is not None):
            # PyTorch: a leaf's tensor hooks (register_hook) run before the pre-hooks of its
            # AccumulateGrad (grad_fn.register_prehook), which then see the hooked gradient
            grads = [run_leaf_hooks(node.variable, grads[0])] + list(grads[1:])
            leaf_hooked = True
        for hook in list(node_pre.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(_hook_result(hook, new, grads))
    if prof is not None:
        handle = prof.node_start(node)
    if leaf_hooked:
        node._leaf_hooks_done = True
    try:
        if SHARED.anomaly:
            outputs = _call_with_anomaly(node, grads)
        else:
            outputs = node.apply(grads)
    finally:
        if leaf_hooked:
            del node._leaf_hooks_done
        if prof is not None:
            prof.node_end(handle)
    if node._post_hooks:
        # PyTorch's grad_inputs: one per next_functions edge, so a Function node's slots for
        # non-tensor forward arguments (split's sizes, a custom Function's number) are left out
        keep = _edge_slots(node, len(outputs))
        for hook in list(node._post_hooks.values()):
            shown = tuple(outputs) if keep is None else tuple(outputs[i] for i in keep)
            new = hook(shown, tuple(grads))
            if new is not None:
                new = _hook_result(hook, new, shown)
                if keep is None:
                    outputs = new
                else:
                    full = [None] * len(outputs)
                    for i, g in zip(keep, new):
                        full[i] = g
                    outputs = tuple(full)
    return outputs


def _edge_slots(node, n: int) -> list | None:
    """The positions of ``node``'s ``n`` backward results that next_functions lists (the
    tensor arguments of a Function node), or None when it lists them all."""
    listed = getattr(node, "_listed_slots", None)
    return None if listed is None else listed(n)


def _hook_result(hook, new, old) -> tuple:
    """A node hook's replacement gradients, checked as PyTorch checks them: one value per
    gradient, and no value where the node produced None (nothing would receive it)."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        name = getattr(hook, "__name__", repr(hook))
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(new)}, but expected {len(old)})")
    for n, o in zip(new, old):
        if o is None and n is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if n is not None:
            checked_hook_value(hook, n, o)
    return new


def _call_with_anomaly(node, grads: list) -> tuple:
    try:
        outputs = node.apply(grads)
    except Exception:
        _warn_forward_trace(node)
        raise
    if SHARED.anomaly_check_nan:
        for i, g in enumerate(outputs):
            if g is not None and (g.dtype.is_floating_point or g.dtype.is_complex) and g._has_nan():
                _warn_forward_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                   f"{i}th output.")
    return outputs


def _warn_forward_trace(node) -> None:
    stack = node._metadata.get("traceback_") if node._metadata else None
    if stack:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      f"the error:\n{''.join(stack)}", UserWarning, stacklevel=3)
    else:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.",
                      UserWarning, stacklevel=3)
