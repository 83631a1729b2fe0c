"""tgrad.autograd: reverse-mode automatic differentiation with PyTorch's API."""

from __future__ import annotations

from collections.abc import Mapping

from tgrad.autograd import function as _function
from tgrad.autograd import graph
from tgrad.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from tgrad.autograd.engine import run_backward
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import (
    STATE,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from tgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from tgrad.autograd.node import AccumulateGrad, gradient_edge
from tgrad.autograd.variable import Variable

__all__ = ["backward", "grad", "Function", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "inference_mode", "is_inference_mode_enabled", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "Variable", "gradcheck", "gradgradcheck",
           "GradcheckError", "functional", "graph", "profiler", "forward_ad",
           "set_multithreading_enabled", "is_multithreading_enabled"]


def _as_tuple(x) -> tuple:
    if _function.Tensor is None:
        _function._bind_tensor()
    if x is None:
        return ()
    if isinstance(x, (_function.Tensor, graph.GradientEdge)):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, fn: str) -> tuple:
    """``inputs`` of ``grad``/``backward`` as a tuple, read once (a generator is consumed
    here): a tensor or GradientEdge, a sequence or iterable of them, or a dict (its values,
    in order; ``grad`` then returns a dict with the same keys). As PyTorch, other Mapping
    types are refused."""
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{fn}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return _as_tuple(inputs)


_create_graph_warned = False  # PyTorch warns once per process (TORCH_WARN_ONCE)


def _warn_create_graph_cycle() -> None:
    """``backward(create_graph=True)``: a leaf's .grad then depends on the leaf itself
    (x.grad = 2x -> MulBackward0 -> AccumulateGrad -> x), a reference cycle; PyTorch's
    engine warns about it once per process (``autograd.grad`` makes no cycle). The warning
    points at the first frame outside tgrad (the user's line, however many tgrad frames,
    e.g. Tensor.backward's lazily bound stub, lie between)."""
    global _create_graph_warned
    if _create_graph_warned:
        return
    _create_graph_warned = True
    import os
    import sys
    import warnings
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, stacklevel = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn("Using backward() with create_graph=True will create a reference cycle "
                  "between the parameter and its gradient which can cause a memory leak. We "
                  "recommend using autograd.grad when creating the graph to avoid this. If you "
                  "have to use this function, make sure to reset the .grad fields of your "
                  "parameters to None after use to break the cycle and avoid the leak.",
                  UserWarning, stacklevel=stacklevel)


def _make_grads(outputs: tuple, grads: tuple) -> list:
    """Check user-supplied output gradients; create implicit ones for scalar outputs."""
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients; pass one "
                           f"gradient (or None) per output tensor")
    result = []
    for i, out in enumerate(outputs):
        g = grads[i]
        if isinstance(out, graph.GradientEdge):
            result.append(_edge_grad_output(i, out, g))
            continue
        if not isinstance(out, _function.Tensor):  # PyTorch's text (an AssertionError there)
            raise TypeError(f"Expected output to be a tgrad.Tensor (or a GradientEdge), but "
                            f"output {i} is a {type(out).__name__}")
        if (type(g) is not _function.Tensor or g._data.shape != out._data.shape
                or g.device is not out.device or g.dtype is not out.dtype):
            g = _checked_grad_output(i, out, g)  # the rare cases: implicit, cast or error
        result.append(g)
    return result


def _checked_grad_output(i: int, out, g):
    if g is None:
        if out._requires_grad:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar "
                                   f"outputs but got {out.dtype}")
            from tgrad.ops.creation import ones_like
            g = ones_like(out)
        return g
    if not isinstance(g, _function.Tensor):
        raise TypeError(f"gradients can be either Tensors or None, but got "
                        f"{type(g).__name__}")
    if g.shape != out.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{tuple(g.shape)} and output[{i}] has a shape of "
                           f"{tuple(out.shape)}.")
    if g.device != out.device:
        raise RuntimeError(f"Mismatch in device: grad_output[{i}] is on {g.device} and "
                           f"output[{i}] is on {out.device}.")
    if g.dtype.is_complex != out.dtype.is_complex:  # PyTorch's _make_grads: no cast that
        # would drop an imaginary part or invent one
        raise RuntimeError(f"For complex Tensors, both grad_output and output are required "
                           f"to have the same dtype. Mismatch in dtype: grad_output[{i}] has "
                           f"a dtype of {g.dtype} and output[{i}] has a dtype of "
                           f"{out.dtype}.")
    if g.dtype is not out.dtype:
        g = g.to(out.dtype)  # as PyTorch: the gradient takes the output's dtype (even an
        # integer or bool gradient of a floating output)
    return g


def _edge_meta(edge) -> tuple | None:
    """(shape, dtype, device) of the tensor whose gradient flows into ``edge``: the leaf's
    (an AccumulateGrad) or what the node recorded for that output; None if it recorded
    nothing."""
    node, nr = edge.node, edge.output_nr
    if isinstance(node, AccumulateGrad):
        v = node.variable
        return tuple(v.shape), v.dtype, v.device
    meta = node._out_meta
    if meta and nr < len(meta) and meta[nr] is not None:
        shape, dtype, device = meta[nr]
        return tuple(shape), dtype, device
    return None


def _edge_grad_output(i: int, edge, g):
    """The gradient fed into an output given as a ``GradientEdge``: ``g`` checked against
    the edge's metadata, or implicit ones for a single-element floating output (as PyTorch,
    from the node's record of that output; without one the gradient must be passed)."""
    meta = _edge_meta(edge)
    if g is None:
        if meta is None:
            raise RuntimeError(f"grad_outputs[{i}] is None but output[{i}] is a GradientEdge "
                               f"of {edge.node.name()}, whose output shape tgrad does not "
                               "record: pass its gradient explicitly")
        shape, dtype, device = meta
        if any(d != 1 for d in shape):
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not dtype.is_floating_point:
            raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                               f"but got {dtype}")
        from tgrad.ops.creation import ones
        return ones(shape, dtype=dtype, device=device)
    if not isinstance(g, _function.Tensor):
        raise TypeError(f"gradients can be either Tensors or None, but got "
                        f"{type(g).__name__}")
    if meta is not None and tuple(g.shape) != meta[0]:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{tuple(g.shape)} and output[{i}] has a shape of {meta[0]}.")
    return g


def _root_edges(outputs: tuple) -> list:
    edges = []
    for i, out in enumerate(outputs):
        if isinstance(out, graph.GradientEdge):
            edges.append((out.node, out.output_nr))
            continue
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        edges.append(gradient_edge(out))
    return edges


def _input_edge(t) -> tuple:
    """The (node, output_nr) whose arriving gradient is wanted for ``t``: a tensor that
    requires grad, or a ``GradientEdge`` (taken as it is)."""
    if isinstance(t, graph.GradientEdge):
        return (t.node, t.output_nr)
    if not isinstance(t, _function.Tensor):
        raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                           f"{type(t).__name__}")
    if not t._requires_grad:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    return gradient_edge(t)


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables=None, inputs=None) -> None:
    """Accumulate into the leaves' ``.grad`` the gradient of ``tensors`` (a vector-Jacobian
    product with ``grad_tensors``; implicit ones only for single-element outputs).
    ``tensors`` and ``inputs`` may hold ``graph.GradientEdge``s; with ``inputs`` only those
    get gradients (a non-leaf tensor there is made to retain its grad)."""
    _backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)


def _backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables,
              inputs) -> None:
    """``backward``'s work."""
    if STATE.func_depth:  # (PyTorch's error: the transform owns the graph inside f)
        raise RuntimeError("backward() called inside a functorch transform. This is not "
                           "supported, please use functorch.grad or functorch.vjp instead or "
                           "call backward() outside of functorch transforms.")
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    ins = _inputs_tuple(inputs, "backward") if inputs is not None else None
    root_grads = _make_grads(outputs, grads)
    edges = _root_edges(outputs)
    capture = None
    if inputs is not None:
        if not ins:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        capture = [_input_edge(t) for t in ins]
        # As PyTorch: a non-leaf tensor input is made to retain its grad, and its .grad is
        # filled by that retain_grad hook alone (it sees the value after the tensor's
        # hooks). Leaves accumulate through their AccumulateGrad; a GradientEdge input of a
        # non-leaf only marks where the backward may stop (no tensor gets a .grad).
        for t, (node, _) in zip(ins, capture):
            if isinstance(t, _function.Tensor) and not isinstance(node, AccumulateGrad):
                t.retain_grad()
    if create_graph and not _create_graph_warned:
        _warn_create_graph_cycle()
    run_backward(edges, root_grads, retain_graph, create_graph, capture, accumulate=True)


def tensor_backward(t, gradient, retain_graph: bool | None, create_graph: bool,
                    inputs) -> None:
    """``Tensor.backward``: the common case (a non-view result of an op, given a gradient
    of its shape, dtype and device, no ``inputs``) straight to the engine, with the edge and
    gradient ``backward`` would build; everything else through ``backward``."""
    if (inputs is None and type(gradient) is _function.Tensor and t._base is None
            and (not _function._FW_ACTIVE or _function.fw_level() is None)
            and t._grad_fn is not None and gradient._data.shape == t._data.shape
            and gradient.device is t.device and gradient.dtype is t.dtype):
        if create_graph and not _create_graph_warned:
            _warn_create_graph_cycle()
        run_backward([(t._grad_fn, t._output_nr)], [gradient],
                     create_graph if retain_graph is None else retain_graph, create_graph)
        return
    _backward(t, gradient, retain_graph, create_graph, None, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple | dict:
    """Return the gradients of ``outputs`` with respect to ``inputs`` (nothing is
    accumulated into ``.grad``); both may hold ``graph.GradientEdge``s, and ``inputs`` may
    be a dict (``dict(model.named_parameters())``): the result is then a dict with the same
    keys. With ``is_grads_batched`` the first dim of every grad_output indexes a batch of
    vector-Jacobian products, computed one after the other (PyTorch vectorises them with
    vmap) and stacked along a new first dim."""
    # every argument is read once: a generator or map is consumed here
    ins = _inputs_tuple(inputs, "grad")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    outs = _as_tuple(outputs)
    if grad_outputs is not None:
        grad_outputs = _as_tuple(grad_outputs)
    if is_grads_batched:
        result = _batched_grad(outs, ins, grad_outputs, retain_graph, create_graph,
                               allow_unused, materialize_grads)
        return dict(zip(inputs.keys(), result)) if type(inputs) is dict else result
    if not only_inputs:
        import warnings
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", stacklevel=2)
    if materialize_grads:
        if allow_unused is False:
            raise ValueError("Expected allow_unused to be True or not passed when "
                             "materialize_grads=True, but got: allow_unused=False.")
        allow_unused = True
    allow_unused = bool(allow_unused)
    grads = grad_outputs if grad_outputs is not None else (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    root_grads = _make_grads(outs, grads)
    edges = _root_edges(outs)
    capture = [_input_edge(t) for t in ins]
    result = run_backward(edges, root_grads, retain_graph, create_graph, capture,
                          accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(ins, result)):
        if g is None:
            if materialize_grads:
                if isinstance(t, graph.GradientEdge):  # no tensor to take the shape of
                    raise RuntimeError("materialize_grads cannot be used when the given input "
                                       "is a GradientEdge")
                from tgrad.ops.creation import zeros_like
                # as PyTorch: the zeros require grad under create_graph
                g = zeros_like(t, requires_grad=create_graph)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not "
                                   "have been used in the graph. Set allow_unused=True if this "
                                   "is the desired behavior.")
        out.append(g)
    return dict(zip(inputs.keys(), out)) if type(inputs) is dict else tuple(out)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads) -> tuple:
    outs = _as_tuple(outputs)
    if any(isinstance(o, graph.GradientEdge) for o in outs):
        raise RuntimeError("Batched grads are not supported with GradientEdge")
    gos = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    sizes = set()
    for i, (out, go) in enumerate(zip(outs, gos)):
        if go is None or tuple(go.shape[1:]) != tuple(out.shape):
            shown = None if go is None else tuple(go.shape[1:])
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {shown} and output[{i}] has a "
                f"shape of {tuple(out.shape)}.")
        sizes.add(go.shape[0])
    if len(sizes) != 1:
        raise RuntimeError(f"is_grads_batched: every grad_output needs the same batch size, "
                           f"got {sorted(sizes)}")
    from tgrad.ops.creation import zeros
    from tgrad.ops.shape import stack
    n = sizes.pop()
    keep = create_graph if retain_graph is None else retain_graph
    rows = [grad(outs, inputs, tuple(go[b] for go in gos),
                 retain_graph=True if b < n - 1 else keep, create_graph=create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize_grads)
            for b in range(n)]
    ins = _as_tuple(inputs)
    result = []
    for k, t in enumerate(ins):
        col = [r[k] for r in rows]
        if any(g is None for g in col):
            result.append(None)
        else:
            result.append(stack(col) if col else zeros((0,) + tuple(t.shape), dtype=t.dtype,
                                                       device=t.device))
    return tuple(result)


def __getattr__(name: str):
    # Submodules loaded lazily (they import the op library).
    import importlib
    if name in ("functional", "profiler", "forward_ad"):
        return importlib.import_module(f"tgrad.autograd.{name}")
    raise AttributeError(f"module 'tgrad.autograd' has no attribute '{name}'")
