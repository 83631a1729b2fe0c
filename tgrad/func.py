"""``tgrad.func``, PyTorch's ``torch.func`` function transforms over tgrad's tape autograd:
``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap`` and
``functional_call``. They compose (``vmap(grad(f))`` gives per-sample gradients,
``jacrev(jacrev(f))`` a Hessian) and take tensors or tuples / lists / dicts of them.

How they work (differences from PyTorch's functorch, which has its own interpreter):
- ``grad`` / ``vjp`` / ``jacrev`` run ``f`` on aliases of the inputs and call
  ``autograd.grad``; the graph is kept (create_graph) only when an input already requires
  grad (inside another transform) or ``f``'s output reaches a tensor ``f`` captured that
  requires grad (a model's parameters, an enclosing transform's input: a gradient penalty,
  grad of grad over a closure), as PyTorch's transforms lift captured tensors; otherwise
  results carry no graph. A ``.backward()`` inside ``f`` raises PyTorch's "backward()
  called inside a functorch transform" (the transform owns that graph).
- ``jacrev`` does one backward per output element; ``jvp`` / ``linearize`` / ``jacfwd`` use
  forward-mode AD (tgrad.autograd.forward_ad), jacfwd one jvp per input element.
- ``vmap`` calls ``f`` once per batch element and stacks the results (no batching rules):
  the values and gradients are those of PyTorch's vmap, the speed is a Python loop's.
  ``randomness='error'`` (the default) raises if ``f`` draws random numbers (the global
  generators' states are compared around each call), 'different' lets each element draw
  its own, 'same' replays the first element's draws for every element.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Callable

from tgrad import autograd
from tgrad.autograd.grad_mode import STATE, enable_grad, inference_mode
from tgrad.ops.shape import stack
from tgrad.tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "vmap", "functional_call", "stack_module_state", "functionalize"]


class _transform:
    """Marks a transform running ``f`` (``vmaps``: over a batch: vmap, jacfwd, hessian), for
    the checks of user autograd.Functions applied inside (PyTorch's: setup_context style,
    vmap support; autograd.function._check_in_transform)."""

    def __init__(self, vmaps: bool = False) -> None:
        self.vmaps = vmaps

    def __enter__(self) -> None:
        STATE.func_depth += 1
        if self.vmaps:
            STATE.vmap_depth += 1

    def __exit__(self, *exc) -> None:
        STATE.func_depth -= 1
        if self.vmaps:
            STATE.vmap_depth -= 1


class _differentiate:
    """The grad state of a transform differentiating ``f``: out of inference_mode (where
    torch.func still differentiates: nothing was recorded, so the gradients came out zeros)
    and, with ``grad`` (the reverse transforms), recording on. ``outer``: whether the
    caller records a graph; under no_grad / inference_mode the results keep none, as
    PyTorch's (an input requiring grad no longer makes them keep it)."""

    def __init__(self, grad: bool = True) -> None:
        self.grad = grad

    def __enter__(self) -> _differentiate:
        self.outer = STATE.enabled  # (False inside inference_mode too)
        self._modes = [inference_mode(False)] if STATE.inference else []
        if self.grad:
            self._modes.append(enable_grad())
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)


# ------------------------------------------------------------------------------- pytrees
def _flatten(tree) -> tuple:
    """(leaves, rebuild): the tensors of a tensor / tuple / list / dict tree, in order."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(t) for t in tree]
        leaves = [leaf for p in parts for leaf in p[0]]
        sizes = [len(p[0]) for p in parts]
        kind = type(tree)

        def rebuild(values):
            out, i = [], 0
            for (_, sub), n in zip(parts, sizes):
                out.append(sub(values[i:i + n]))
                i += n
            return kind(out) if kind in (tuple, list) else kind(*out)
        return leaves, rebuild
    if isinstance(tree, dict):  # (an OrderedDict, a state_dict, stays one)
        keys, kind = list(tree), OrderedDict if isinstance(tree, OrderedDict) else dict
        leaves, rebuild_values = _flatten([tree[k] for k in keys])
        return leaves, lambda values: kind(zip(keys, rebuild_values(values)))
    return [tree], lambda values: values[0]


def _spec(tree) -> str:
    """The structure of a tensor / tuple / list / dict tree as PyTorch's pytree prints it
    (``*`` for a leaf): ``(*, *)``, ``[*]``, ``{'a': *}``; equal strings, equal structures
    (dict keys in order)."""
    if isinstance(tree, (tuple, list)):
        inner = ", ".join(_spec(t) for t in tree)
        if type(tree) is list:
            return f"[{inner}]"
        if type(tree) is tuple:
            return f"({inner},)" if len(tree) == 1 else f"({inner})"
        return f"{type(tree).__name__}({inner})"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_spec(v)}" for k, v in tree.items()) + "}"
    return "*"


def _argnums_tuple(argnums, n_args: int, who: str) -> tuple:
    """``argnums`` (an int or a non-empty tuple of distinct ints) as a tuple of
    non-negative positions; PyTorch's errors (``who`` is not in them)."""
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        nums = argnums
        if not nums:
            raise RuntimeError("argnums must be non-empty")
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -n_args <= a < n_args:
            raise RuntimeError(f"Got argnum={a}, but only {n_args} positional inputs")
    result = tuple(a % n_args for a in nums)
    if len(set(result)) != len(result):  # else the later alias would hide the earlier one
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return result


def _check_chunk_size(chunk_size, who: str) -> None:
    """PyTorch's check of ``chunk_size`` (None or positive; tgrad's loops ignore it)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        if who == "vmap":
            raise ValueError(f"vmap: chunk_size should be None or greater than 0. "
                             f"(got {chunk_size})")
        raise ValueError(f"{who}: `chunk_size` should be greater than 0.")


def _func_name(func) -> str:
    """How PyTorch's vmap errors name ``func``."""
    return getattr(func, "__name__", repr(func))


def _prepare(args: tuple, argnums, who: str) -> tuple:
    """(args with the differentiated ones replaced by aliases requiring grad, the alias
    leaves, their rebuild function, whether to keep the graph for an outer transform)."""
    nums = _argnums_tuple(argnums, len(args), who)
    chosen = tuple(args[i] for i in nums)
    leaves, rebuild = _flatten(chosen if not isinstance(argnums, int) else chosen[0])
    for t in leaves:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{who}: Expected the differentiated arguments to be Tensors "
                               f"(or tuples / lists / dicts of them), got "
                               f"{type(t).__name__}")
        if not (t.dtype.is_floating_point or t.dtype.is_complex):  # (PyTorch's requires_grad)
            raise RuntimeError(f"{who}: only floating point or complex inputs can be "
                               f"differentiated, got {t.dtype}")
    outer = any(t.requires_grad for t in leaves)
    aliases = _grad_aliases(leaves)
    rebuilt = rebuild(aliases)
    new_args = list(args)
    if isinstance(argnums, int):
        new_args[nums[0]] = rebuilt
    else:
        for i, value in zip(nums, rebuilt):
            new_args[i] = value
    return tuple(new_args), aliases, rebuild, outer


def _captures_grad(outputs: list) -> bool:
    """Whether ``outputs``' graph reaches a leaf that requires grad other than this
    transform's aliases and a finished inner transform's (marked with their depth, at or
    below the current one): a tensor ``f`` captured (a parameter, an enclosing transform's
    alias), whose graph an enclosing backward or transform needs, so the results must keep
    theirs. Called inside the transform's ``_transform`` block."""
    depth = STATE.func_depth
    from tgrad.autograd.node import AccumulateGrad
    seen: set = set()
    todo = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if node.variable.__dict__.get("_transform_depth", 0) < depth:
                return True
            continue
        todo.extend(n for n, _ in node.next_functions)
    return False


def _grad_aliases(leaves: list) -> list:
    """Aliases of ``leaves`` that require grad, for this transform's graph; a dual leaf
    (forward over reverse: jvp of grad, jacfwd of jacrev) keeps its tangent (view_as
    carries it; a detached alias is given it)."""
    return [t.view_as(t) if t.requires_grad else _fresh_alias(t) for t in leaves]


def _fresh_alias(t: Tensor) -> Tensor:
    """A detached leaf alias of ``t`` requiring grad, marked with the transform's depth
    (``_captures_grad`` tells it from a captured tensor)."""
    alias = _with_tangent_of(t, t.detach()).requires_grad_()
    alias.__dict__["_transform_depth"] = STATE.func_depth
    return alias


def _check_jvp_output(o) -> None:
    if not isinstance(o, Tensor):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return only "
                           f"tensors, got unsupported type {type(o).__name__}")


def _split_aux(result, has_aux: bool, who: str) -> tuple:
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{who}(f, ...)(*args): output of function f should be a tuple: "
                           f"(output, aux) if has_aux is True")
    return result


def _grads(outputs: list, inputs: list, grad_outputs, keep: bool) -> list:
    """d(outputs)/d(inputs) weighted by grad_outputs; zeros where an input is not used
    (outputs that do not depend on any input contribute nothing)."""
    live = [i for i, o in enumerate(outputs) if o.requires_grad]
    got = [None] * len(inputs)
    if live:
        got = autograd.grad([outputs[i] for i in live], inputs,
                            None if grad_outputs is None else [grad_outputs[i] for i in live],
                            retain_graph=True, create_graph=keep, allow_unused=True)
    return [g if g is not None else x.detach().new_zeros(x.shape).to(x.dtype)
            for g, x in zip(got, inputs)]


def _with_tangent_of(src, t):
    """``t`` (a detached alias of ``src``) given ``src``'s forward-AD tangent, if any."""
    if _forward_level_active():
        from tgrad.autograd import forward_ad
        tangent = forward_ad.get_tangent(src)
        if tangent is not None:
            forward_ad._set(t, tangent)
    return t


def _plain(t, keep: bool):
    """``t`` detached from this transform's graph unless ``keep``; a forward-AD tangent
    stays (the transform's result under an enclosing jvp / jacfwd)."""
    return t if keep or not isinstance(t, Tensor) else _with_tangent_of(t, t.detach())


def _plain_aux(aux, keep: bool):
    """``aux`` as torch.func returns it: every tensor leaf of the pytree detached from this
    transform's graph (kept attached only for an enclosing transform or graph, ``keep``);
    other leaves unchanged."""
    return aux if keep else _map(lambda t: _plain(t, keep), aux)


# ---------------------------------------------------------------------------------- grad
def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning (gradient of ``func``'s scalar output with respect to the
    arguments ``argnums``, that output) (with has_aux: ((gradient, (output, aux)))."""
    who = "grad_and_value"

    def wrapper(*args, **kwargs):
        with _differentiate() as mode, _transform():
            new_args, aliases, rebuild, keep = _prepare(args, argnums, who)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, who)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{who}(f)(*args): Expected f(*args) to return a Tensor, "
                                   f"got {type(out).__name__}")
            if out.ndim != 0:
                raise RuntimeError(f"{who}(f)(*args): Expected f(*args) to return a scalar "
                                   f"Tensor, got tensor with {out.ndim} dims. Maybe you "
                                   f"wanted to use the vjp or jacrev APIs instead?")
            keep = mode.outer and (keep or _captures_grad([out]))
            grads = rebuild(_grads([out], aliases, None, keep))
        grads = _map(lambda g: _plain(g, keep), grads)
        value = _plain(out, keep)
        return (grads, (value, _plain_aux(aux, keep))) if has_aux else (grads, value)
    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of ``func``'s scalar output with respect to the
    arguments ``argnums`` (an int, or a tuple giving a tuple of gradients); with has_aux,
    func returns (output, aux) and the function (gradient, aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def _map(fn, tree):
    leaves, rebuild = _flatten(tree)
    return rebuild([fn(x) for x in leaves])


def vjp(func: Callable, *primals, has_aux: bool = False) -> tuple:
    """(func(*primals), vjp_fn): ``vjp_fn(cotangents)`` gives the vector-Jacobian products
    with respect to every primal (a tuple); with has_aux a third element, aux."""
    with _differentiate() as mode, _transform():
        new_args, aliases, rebuild, keep = _prepare(primals, tuple(range(len(primals))),
                                                    "vjp") if primals else ((), [], None, False)
        out, aux = _split_aux(func(*new_args), has_aux, "vjp")
        out_leaves, _ = _flatten(out)
        _check_differentiable_outputs(out_leaves)
        keep = mode.outer and (keep or _captures_grad(out_leaves))
    out_spec = _spec(out)

    def vjp_fn(cotangents):
        cot_leaves, _ = _flatten(cotangents)
        cot_spec = _spec(cotangents)
        if cot_spec != out_spec:  # (a dict's keys in another order would pair them wrongly)
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{cot_spec}, primal output: {out_spec}")
        for c in cot_leaves:
            if not isinstance(c, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got "
                                f"{type(c).__name__}")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of "
                                   f"{list(c.shape)} and output has a shape of "
                                   f"{list(o.shape)}.")
        # a cotangent that requires grad keeps the graph too (a vjp of vjp_fn: its
        # derivative in the cotangent is the Jacobian)
        with _differentiate() as mode:
            keep_c = keep or (mode.outer and any(c.requires_grad for c in cot_leaves))
            gs = _grads(out_leaves, aliases, cot_leaves, keep_c)
        return tuple(_map(lambda g: _plain(g, keep_c), rebuild(gs)))
    value = _map(lambda t: _plain(t, keep), out)
    return (value, vjp_fn, _plain_aux(aux, keep)) if has_aux else (value, vjp_fn)


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None) -> Callable:
    """A function returning the Jacobian of ``func`` (each output's shape + each argument's
    shape) with respect to the arguments ``argnums``, one backward pass per output element.
    Inputs and outputs must be real (PyTorch's errors; complex intermediates are fine).
    (``chunk_size``, None or positive, is checked and has no effect.)"""
    _check_chunk_size(chunk_size, "jacrev")
    return _jacrev(func, argnums, has_aux, "jacrev")


def _jacrev(func: Callable, argnums, has_aux: bool, who: str) -> Callable:
    """jacrev's function; ``who`` names the transform in errors (jacfwd nested in a
    forward transform computes its Jacobian here)."""
    def wrapper(*args, **kwargs):
        with _differentiate() as mode, _transform():
            nums = _argnums_tuple(argnums, len(args), who)
            _check_real(_flatten(tuple(args[i] for i in nums))[0], who, "inputs")
            new_args, aliases, rebuild, keep = _prepare(args, argnums, who)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, who)
            out_leaves, out_rebuild = _flatten(out)
            _check_differentiable_outputs(out_leaves)
            _check_real(out_leaves, who, "outputs")
            keep = mode.outer and (keep or _captures_grad(out_leaves))
            jacs = []
            for o in out_leaves:
                flat = o.reshape(-1)
                rows = [_grads([flat[i]], aliases, None, keep) for i in range(flat.shape[0])]
                per_input = []
                for k, x in enumerate(aliases):
                    if rows:
                        j = stack([r[k] for r in rows])
                    else:
                        j = x.new_zeros((0,) + tuple(x.shape))
                    per_input.append(_plain(j.reshape(tuple(o.shape) + tuple(x.shape)), keep))
                jacs.append(rebuild(per_input))
        result = out_rebuild(jacs)
        return (result, _plain_aux(aux, keep)) if has_aux else result
    return wrapper




def _forward_level_active() -> bool:
    """Whether this thread is inside a forward-AD level."""
    return STATE.fw_current is not None


def _check_primals(who: str, primals, tangents) -> tuple:
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{who}(f, primals, tangents): Expected primals to be a tuple. "
                           f"E.g. it should be valid to call f(*primals).")
    p_leaves, _ = _flatten(primals)
    t_leaves, _ = _flatten(tangents)
    p_spec, t_spec = _spec(primals), _spec(tangents)
    if p_spec != t_spec:  # as PyTorch (dict keys in order: else pairs would be mismatched)
        raise RuntimeError(f"{who}(f, primals, tangents): Expected primals and tangents to "
                           f"have the same python structure. For example, if primals is a "
                           f"tuple of 3 tensors, tangents also must be. Got primals with "
                           f"structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(f"{who}: Expected primals and tangents to be Tensors (or "
                               f"tuples / lists / dicts of them)")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{who}(f, primals, tangents): Expected primals and tangents "
                               f"to have the same shape, got {list(p.shape)} and "
                               f"{list(t.shape)}")
        if not (p.dtype.is_floating_point or p.dtype.is_complex):
            raise RuntimeError(f"{who}: only floating point or complex primals can be "
                               f"differentiated, got {p.dtype}")
    return p_leaves, t_leaves


def jvp(func: Callable, primals, tangents, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """(func(*primals), the Jacobian-vector product J @ tangents) by forward-mode AD (one
    pass; tangents as primals: a tuple of tensors or pytrees of them); with has_aux, func
    returns (output, aux) and a third element aux is returned. Complex primals, outputs and
    intermediates are PyTorch's: the tangent of f at z along t is the R-linear
    (df/dz) t + (df/dz̄) conj(t). Nested in another forward transform (jvp of jvp), where
    tgrad's one dual level is taken, it computes J @ tangents by reverse passes
    (``_jvp_by_reverse``; real primals only)."""
    p_leaves, t_leaves = _check_primals("jvp", primals, tangents)
    _, rebuild = _flatten(primals)
    with _differentiate(grad=False), _transform():
        if _forward_level_active():  # nested in a forward transform: one level only here
            return _jvp_by_reverse(func, p_leaves, t_leaves, rebuild, has_aux)
        return _jvp_forward(func, p_leaves, t_leaves, rebuild, has_aux)


def _jvp_by_reverse(func: Callable, p_leaves: list, t_leaves: list, rebuild, has_aux: bool):
    """jvp inside an active dual level (jvp of jvp: tgrad's forward AD holds one level) by
    two reverse passes, the double-vjp trick: u -> J^T u is linear in u, so
        J t = d/du <J^T u, t>   (u: a cotangent of the outputs, any value; zeros here)
    Every op runs in the outer level, so the result carries the outer tangents (forward
    over reverse). Real primals and outputs only (complex ones raise, as before)."""
    with _differentiate() as mode:
        if any(p.dtype.is_complex for p in p_leaves):
            raise RuntimeError("Nested forward mode AD is not supported at the moment "
                               "(tgrad computes a nested jvp by reverse passes, for real "
                               "primals only)")
        keep = mode.outer and any(p.requires_grad for p in p_leaves)
        aliases = _grad_aliases(p_leaves)
        out, aux = _split_aux(func(*rebuild(aliases)), has_aux, "jvp")
        out_leaves, out_rebuild = _flatten(out)
        for o in out_leaves:
            _check_jvp_output(o)
            if o.dtype.is_complex:
                raise RuntimeError("Nested forward mode AD is not supported at the moment "
                                   "(tgrad computes a nested jvp by reverse passes, for "
                                   "real outputs only)")
        live = [o for o in out_leaves if o.requires_grad and o.dtype.is_floating_point]
        jvps = {}
        if live:
            us = [o.detach().new_zeros(o.shape).requires_grad_() for o in live]
            vjps = autograd.grad(live, aliases, us, create_graph=True, allow_unused=True)
            dots = [(g * t).sum() for g, t in zip(vjps, t_leaves) if g is not None]
            if dots:
                inner = dots[0]
                for d in dots[1:]:
                    inner = inner + d
                if inner.requires_grad:
                    got = autograd.grad(inner, us, create_graph=keep, allow_unused=True)
                    jvps = {id(o): g for o, g in zip(live, got) if g is not None}
        values = [_plain(o, keep) for o in out_leaves]
        tangents = [_plain(jvps[id(o)], keep) if id(o) in jvps
                    else o.detach().new_zeros(o.shape) for o in out_leaves]
    result = (out_rebuild(values), out_rebuild(tangents))
    return result + (_plain_aux(aux, keep),) if has_aux else result


def _jvp_forward(func: Callable, p_leaves: list, t_leaves: list, rebuild, has_aux: bool):
    from tgrad.autograd import forward_ad as fwad
    with fwad.dual_level():
        duals = [fwad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux(func(*rebuild(duals)), has_aux, "jvp")
        out_leaves, out_rebuild = _flatten(out)
        values, jvps = [], []
        for o in out_leaves:
            _check_jvp_output(o)
            primal, tangent = fwad.unpack_dual(o)
            values.append(primal.view_as(primal) if tangent is not None else o)
            jvps.append(tangent if tangent is not None else o.detach().new_zeros(o.shape))
        aux = _map(lambda t: fwad.unpack_dual(t).primal if isinstance(t, Tensor) else t,
                   aux) if has_aux else None
    result = (out_rebuild(values), out_rebuild(jvps))
    return result + (aux,) if has_aux else result


def linearize(func: Callable, *primals) -> tuple:
    """(func(*primals), jvp_fn): ``jvp_fn(*tangents)`` gives J @ tangents at ``primals``.
    (tgrad re-runs func under forward-mode AD on each call, where PyTorch traces it once.)"""
    with _transform():
        out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """A function returning the Jacobian of ``func`` (each output's shape + each argument's
    shape) with respect to the arguments ``argnums`` by forward-mode AD: one jvp per input
    element (cheaper than jacrev for wide Jacobians; ``randomness`` rules the random draws
    of those calls as vmap's does its elements'). Inputs and outputs must be real
    (PyTorch's errors; complex intermediates are fine). Inside an active dual level (a
    nested forward transform, which tgrad's single level cannot hold) it computes the same
    Jacobian with jacrev's reverse passes."""
    who = "jacfwd"
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        # (PyTorch's jacfwd vmaps f over the basis)
        with _differentiate(grad=False), _transform(vmaps=True):
            if _forward_level_active():
                return _jacrev(func, argnums, has_aux, who)(*args, **kwargs)
            return _jacfwd(func, argnums, has_aux, who, args, kwargs, randomness)
    return wrapper


def _check_differentiable_outputs(leaves: list) -> None:
    """PyTorch's vjp error (jacrev's too) for an output that is no floating-point or complex
    tensor: it would get zero gradients, silently."""
    for t in leaves:
        if isinstance(t, Tensor) and not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                               f"complex Tensors, got Tensor with dtype {t.dtype}")


def _check_real(leaves: list, who: str, what: str) -> None:
    """PyTorch's error for a complex input or output of jacfwd (its Jacobian is of real
    functions only; PyTorch's text says "input idx" for outputs too)."""
    for k, t in enumerate(leaves):
        if isinstance(t, Tensor) and t.dtype.is_complex:
            raise RuntimeError(f"{who}: Expected all {what} to be real but received complex "
                               f"tensor at flattened input idx: {k}")


def _jacfwd(func: Callable, argnums, has_aux: bool, who: str, args: tuple, kwargs: dict,
            randomness: str = "error"):
    """jacfwd's forward-mode Jacobian (see jacfwd): one jvp per basis vector, the random
    draws ruled by ``randomness`` as vmap's over the basis."""
    from tgrad.autograd import forward_ad as fwad
    nums = _argnums_tuple(argnums, len(args), who)
    chosen = tuple(args[i] for i in nums)
    leaves, rebuild = _flatten(chosen[0] if isinstance(argnums, int) else chosen)
    _check_real(leaves, who, "inputs")
    for t in leaves:
        if isinstance(t, Tensor) and not t.dtype.is_floating_point:  # PyTorch's make_dual
            raise ValueError(f"{who}: Expected primal to be floating point or complex, but "
                             f"got: {t.dtype}")
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{who}: Expected the differentiated arguments to be "
                               f"floating point Tensors (or tuples / lists / dicts of "
                               f"them), got {type(t).__name__}")

    def call(values):
        new_args = list(args)
        rebuilt = rebuild(values)
        if isinstance(argnums, int):
            new_args[nums[0]] = rebuilt
        else:
            for i, v in zip(nums, rebuilt):
                new_args[i] = v
        return func(*new_args, **kwargs)

    columns = []  # per (input leaf, element): the flattened output tangents
    out = aux = None
    start = _rng_states() if randomness != "different" else None
    for k, x in enumerate(leaves):
        for e in range(x.numel()):
            basis = [t.detach().new_zeros(t.shape) for t in leaves]
            basis[k].reshape(-1)[e] = 1.0
            if randomness == "same":  # every basis vector sees the first one's draws
                _set_rng_states(start)
            with fwad.dual_level():
                res = call([fwad.make_dual(t, b) for t, b in zip(leaves, basis)])
                if randomness == "error" and _rng_states() != start:
                    raise RuntimeError(_RANDOM_ERROR)
                res_out, res_aux = _split_aux(res, has_aux, who)
                o_leaves, o_rebuild = _flatten(res_out)
                _check_real(o_leaves, who, "outputs")
                unpacked = [fwad.unpack_dual(o) for o in o_leaves]
                columns.append([u.tangent if u.tangent is not None else
                                o.detach().new_zeros(o.shape)
                                for u, o in zip(unpacked, o_leaves)])
                if out is None:
                    out = (o_leaves, o_rebuild)
                    aux = res_aux
    if out is None:  # no input elements: evaluate once for the output structure
        res_out, aux = _split_aux(call(list(leaves)), has_aux, who)
        out = _flatten(res_out)
    o_leaves, o_rebuild = out
    col = 0
    per_out = [[] for _ in o_leaves]
    for x in leaves:
        n = x.numel()
        for j, o in enumerate(o_leaves):
            if n:
                cols = stack([columns[col + e][j].reshape(-1) for e in range(n)], dim=1)
            else:
                cols = o.detach().new_zeros((o.numel(), 0))
            per_out[j].append(cols.reshape(tuple(o.shape) + tuple(x.shape)))
        col += n
    jacs = [rebuild(p) for p in per_out]
    result = o_rebuild(jacs)
    return (result, aux) if has_aux else result


def hessian(func: Callable, argnums=0) -> Callable:
    """The Hessian of a scalar ``func`` with respect to ``argnums``: PyTorch's
    jacfwd(jacrev(f)) (same values and errors), computed here as jacrev(jacrev(f)): tgrad's
    vmap is a loop, so forward over reverse would cost one full forward-and-backward pass
    per input element, while the outer reverse pass reuses one graph. jacfwd(jacrev(f))
    written out runs forward over reverse."""
    h = jacrev(jacrev(func, argnums), argnums)

    def wrapper(*args, **kwargs):
        with _transform(vmaps=True):  # PyTorch's outer jacfwd vmaps f
            return h(*args, **kwargs)
    return wrapper


# ---------------------------------------------------------------------------------- vmap
_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please "
                 "either use the 'same' or 'different' randomness flags on vmap or perform "
                 "the randomness operation out of vmap")


def _rng_states() -> list:
    """The global generators' states (the CPU one, and cuda's once it is in use)."""
    import tgrad
    from tgrad import cuda
    states = [tgrad.get_rng_state()]
    if cuda.is_available() and cuda.is_initialized():
        states.append(tgrad.get_rng_state("cuda"))
    return [_StateBytes(s) for s in states]


class _StateBytes(bytes):
    """A generator state (a uint8 tensor) as bytes, so states compare with == / !=."""

    def __new__(cls, state):
        self = super().__new__(cls, state.numpy().tobytes())
        self.tensor = state
        return self


def _set_rng_states(states: list) -> None:
    import tgrad
    tgrad.set_rng_state(states[0].tensor)
    if len(states) > 1:
        tgrad.set_rng_state(states[1].tensor, "cuda")


def _broadcast_prefix(prefix, tree):
    """One entry of ``prefix`` per leaf of ``tree`` (PyTorch's pytree prefix broadcasting for
    in_dims / out_dims): an entry that is not a tuple / list / dict stands for the whole
    subtree at its place; a container must match ``tree``'s (same type and length; a dict
    the same keys, paired by key). None where they do not match."""
    if not isinstance(prefix, (tuple, list, dict)):
        return [prefix] * len(_flatten(tree)[0])
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            return None
        pairs = [(prefix[k], tree[k]) for k in tree]
    else:
        if type(prefix) is not type(tree) or len(prefix) != len(tree):
            return None
        pairs = list(zip(prefix, tree))
    out = []
    for p, t in pairs:
        sub = _broadcast_prefix(p, t)
        if sub is None:
            return None
        out.extend(sub)
    return out


def _dims_for(func, in_dims, args: tuple) -> list:
    """One in_dim (int or None) per leaf of ``args`` (PyTorch's structure errors)."""
    name = _func_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                         f"to be int or a (potentially nested) tuple matching the structure "
                         f"of inputs, got: {type(in_dims)}.")
    dims = _broadcast_prefix(in_dims, args)
    if dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{_spec(in_dims)} but inputs has structure {_spec(args)}.")
    return dims


def _check_out_dims(func, out_dims) -> None:
    """PyTorch's check, before ``func`` runs, that out_dims is an int / None tree."""
    bad = [d for d in _flatten(out_dims)[0]
           if d is not None and (not isinstance(d, int) or isinstance(d, bool))]
    if bad:
        raise ValueError(f"vmap({_func_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                         f"be an int, None or a python collection of ints representing where "
                         f"in the outputs the vmapped dimension should appear.")


def _same_values(a: Tensor, b: Tensor) -> bool:
    """Equal shapes, dtypes and values (NaN equal to NaN)."""
    if a.shape != b.shape or a.dtype is not b.dtype:
        return False
    return bool(((a == b) | (a != a) & (b != b)).all())


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:
    """``func`` mapped over dim ``in_dims`` of its inputs (None: not mapped; a tuple: one
    per argument), outputs stacked along ``out_dims``: a loop over the batch (module
    docstring). (``chunk_size``, None or positive, is checked and has no effect.)"""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")

    _check_chunk_size(chunk_size, "vmap")

    def wrapper(*args, **kwargs):
        name = _func_name(func)
        _check_out_dims(func, out_dims)
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             f"inputs, or you are trying to vmap over a function with no "
                             f"inputs. The latter is unsupported.")
        leaves, rebuild = _flatten(args)
        dims = _dims_for(func, in_dims, args)
        for x, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but in_dim must be either an "
                                 f"integer dimension or None.")
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, "
                                 f"please use None as the respective in_dim")
            if not -x.ndim <= d < x.ndim:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.ndim} so expected in_dim to satisfy "
                                 f"-{x.ndim} <= in_dim < {x.ndim}.")
        sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        n = sizes[0]
        with _transform(vmaps=True):
            results = _vmap_calls(func, leaves, dims, rebuild, kwargs, n, randomness)
        return _vmap_stack(func, results, out_dims, empty=n == 0)
    return wrapper


def _vmap_calls(func, leaves, dims, rebuild, kwargs, n: int, randomness: str) -> list:
    """vmap's loop: ``func`` on each batch element, under the ``randomness`` rule."""
    start = _rng_states() if randomness != "different" else None
    if n == 0:  # an empty batch: f runs once, on stand-ins of an element's shape
        result = _vmap_empty_call(func, leaves, dims, rebuild, kwargs)
        if randomness == "error" and start != _rng_states():
            raise RuntimeError(_RANDOM_ERROR)
        return [result]
    results = []
    for i in range(n):
        if randomness == "same":
            _set_rng_states(start)
        sliced = [x if d is None else x.select(d, i) for x, d in zip(leaves, dims)]
        before = _rng_states() if randomness == "error" else None
        versions = _unmapped_versions(leaves, dims) if i == 0 and n > 1 else None
        results.append(func(*rebuild(sliced), **kwargs))
        if before is not None and before != _rng_states():
            raise RuntimeError(_RANDOM_ERROR)
        if versions and versions != _unmapped_versions(leaves, dims):
            name = _func_name(func)
            raise RuntimeError(
                f"vmap({name}, ...): `{name}` modified in place an input that is not mapped "
                f"(in_dim None). tgrad's vmap calls `{name}` once per batch element, so the "
                f"change would be made {n} times where PyTorch makes it once (or raises 'vmap: "
                f"inplace arithmetic(self, *extra_args) is not possible' when the value "
                f"written is mapped); it was made for the first element only. Use "
                f"out-of-place operators, or clone the input inside `{name}`.")
    return results


def _vmap_empty_call(func, leaves: list, dims: list, rebuild, kwargs):
    """``func``'s output on stand-ins for one element of an empty batch (only its structure,
    shapes and dtypes are used): zeros, as PyTorch's kernels see no values; where ``func``
    raises on zeros (a singular matrix: linalg.inv, solve), identity matrices in the last
    two dims of floating point inputs, else the first error."""
    def stand_ins(eye: bool) -> list:
        out = []
        for x, d in zip(leaves, dims):
            if d is None:
                out.append(x)
                continue
            shape = x.shape[:d % x.ndim] + x.shape[d % x.ndim + 1:]
            z = x.detach().new_zeros(shape)
            if eye and len(shape) >= 2 and (x.dtype.is_floating_point or x.dtype.is_complex):
                from tgrad.ops.creation import eye as _eye
                z = z + _eye(shape[-2], shape[-1], dtype=x.dtype, device=x.device)
            out.append(z)
        return out
    try:
        return func(*rebuild(stand_ins(False)), **kwargs)
    except Exception as first:
        try:
            return func(*rebuild(stand_ins(True)), **kwargs)
        except Exception:
            raise first from None


def _unmapped_versions(leaves: list, dims: list) -> list:
    """The version counters of the unmapped (in_dim None) tensor inputs whose storage no
    mapped input shares (an in-place op on a mapped slice bumps its storage's counter)."""
    mapped = {id(x._storage) for x, d in zip(leaves, dims) if d is not None}
    return [getattr(x._storage, "version", None) for x, d in zip(leaves, dims)
            if d is None and isinstance(x, Tensor) and id(x._storage) not in mapped]


def _vmap_stack(func, results: list, out_dims, empty: bool = False):
    """vmap's result: the per-element outputs stacked along ``out_dims`` (an int, None or a
    prefix of the outputs' tree, as PyTorch broadcasts it; ``empty``: the batch has size 0
    and ``results`` holds f's output on zeros, giving only shapes). An output with out_dim
    None is returned once: a tensor only if it does not depend on the batch (PyTorch), any
    other value as it is."""
    name = _func_name(func)
    per_call = [_flatten(r) for r in results]
    out_rebuild = per_call[0][1]
    spec = _spec(results[0])
    for r in results[1:]:  # data-dependent structure (PyTorch cannot trace it and raises)
        if _spec(r) != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different "
                             f"structures for different batch elements ({spec} and "
                             f"{_spec(r)}); vmap needs one output structure for the batch")
    columns = list(zip(*[leaves_ for leaves_, _ in per_call]))
    if isinstance(results[0], Tensor):  # PyTorch's edge case: a 1-tuple fits one tensor
        ok = (isinstance(out_dims, int) or out_dims is None
              or (isinstance(out_dims, tuple) and len(out_dims) == 1
                  and not isinstance(out_dims[0], (tuple, list, dict))))
        odims = _flatten(out_dims)[0] if ok else None
    else:
        odims = _broadcast_prefix(out_dims, results[0])
    if odims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{_spec(out_dims)} but outputs has structure {spec}.")
    outs = []
    for col, od in zip(columns, odims):
        if od is None and not isinstance(col[0], Tensor):
            if not all(c is col[0] or _equal_objects(c, col[0]) for c in col[1:]):
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `{name}` returned "
                                 f"the non-Tensor output {col[0]!r} for one batch element and "
                                 f"another value for another; an output with out_dim None "
                                 f"must not depend on the batch")
            outs.append(col[0])
            continue
        if not isinstance(col[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(col[0])}. Did you mean to set out_dims= to None for "
                             f"output?")
        if od is None:  # only an output that does not depend on the batch (PyTorch)
            if not all(c is col[0] or _same_values(c, col[0]) for c in col[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a "
                                 f"BatchedTensor when out_dim is None")
            outs.append(col[0])
            continue
        for c in col[1:]:  # a data-dependent shape (PyTorch cannot batch it and raises)
            if not isinstance(c, Tensor) or c.shape != col[0].shape:
                got = list(c.shape) if isinstance(c, Tensor) else type(c)
                raise RuntimeError(f"vmap({name}, ...): `{name}` returned outputs of different "
                                   f"shapes for different batch elements ({list(col[0].shape)} "
                                   f"and {got}); vmap stacks them, so they must have one shape "
                                   f"(PyTorch's vmap does not support operators with "
                                   f"data-dependent output shapes)")
        out = stack(list(col), od)
        outs.append(out.narrow(od, 0, 0) if empty else out)
    return out_rebuild(outs)


def _equal_objects(a, b) -> bool:
    """Whether two non-Tensor outputs are equal (False where == does not give a bool)."""
    try:
        return bool(a == b)
    except Exception:
        return False


# ----------------------------------------------------------------------- functional_call
_MISSING = object()  # an attribute functional_call set that the module did not have


def _resolve(module, dotted: str) -> tuple:
    """(owning module, attribute name) of a dotted name, with PyTorch's errors: a missing
    path element is an AttributeError, one that is not a Module a TypeError."""
    from tgrad.nn.modules.module import Module
    *path, name = dotted.split(".")
    owner = module
    for i, part in enumerate(path):
        if not hasattr(owner, part):
            raise AttributeError(f"{type(owner).__name__} has no attribute `{part}`")
        owner = getattr(owner, part)
        if not isinstance(owner, Module):
            raise TypeError(f"submodule `{'.'.join(path[:i + 1])}`: {owner} is not an "
                            f"instance of tgrad.nn.Module")
    return owner, name


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the parameters and buffers named in the dict(s)
    (dotted names, as in ``named_parameters``) replaced by the given tensors for the call
    only; gradients flow to those tensors. ``tie_weights``: a tensor tied to a replaced
    one (the same Parameter under two names) is replaced too; ``strict``: every parameter
    and buffer must be given, and nothing else. A parametrized tensor's name (``weight``
    of a module with ``register_parametrization``) is set through its property, as
    PyTorch's: right_inverse stores the originals for the call (no graph to the value) and
    they are put back after."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        values = dict(dicts)
    else:
        values = {}
        for d in dicts:
            for k, v in d.items():
                if k in values:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                     f"functional call is ambiguous")
                values[k] = v
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(dict(module.named_buffers(remove_duplicate=False)))
    if tie_weights:
        by_id: dict = {}
        for k, t in named.items():
            by_id.setdefault(id(t), []).append(k)
        for k in list(values):
            if k in named:
                for other in by_id[id(named[k])]:
                    if other in values and values[other] is not values[k]:
                        raise ValueError(f"functional_call got multiple values for keys "
                                         f"{sorted(by_id[id(named[k])])}, which are tied. "
                                         f"Consider using tie_weights=False")
                    values.setdefault(other, values[k])
    if strict:  # after the tied names are filled in (PyTorch's order)
        missing = sorted(set(named) - set(values))
        unexpected = sorted(set(values) - set(named))
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected))
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing))
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(parts))
    swapped = []
    try:
        for k, v in values.items():
            owner, name = _resolve(module, k)
            table = owner._parameters if name in owner._parameters else (
                owner._buffers if name in owner._buffers else None)
            if table is not None:
                swapped.append((table, name, table[name]))
                table[name] = v
                continue
            if _is_parametrized(owner, name):  # PyTorch's: through the property's setter
                # (right_inverse, without a graph to v), the originals restored after
                plist = owner.parametrizations[name]
                kept = [(t, t.data) for t in list(plist._parameters.values())
                        + list(plist._buffers.values()) if t is not None]
                setattr(owner, name, v)
                swapped.append((None, kept, None))
                continue
            # any other attribute (PyTorch's accessor): a tensor attribute is replaced for
            # the call, a missing one set and removed after; anything else is refused
            old = owner._modules[name] if name in owner._modules else \
                owner.__dict__.get(name, _MISSING)
            if old is not _MISSING and not isinstance(old, Tensor):
                raise TypeError(f"attribute `{name}`: {old} is not an instance of "
                                f"tgrad.Tensor")
            swapped.append((owner.__dict__, name, old))
            owner.__dict__[name] = v
        args = () if args is None else (args if isinstance(args, tuple) else (args,))
        return module(*args, **(kwargs or {}))
    finally:
        for table, name, old in reversed(swapped):
            if table is None:  # a parametrized tensor's originals: their data put back
                for t, data in name:
                    t.data = data
            elif old is _MISSING:
                del table[name]
            else:
                table[name] = old


def _is_parametrized(owner, name: str) -> bool:
    from tgrad.nn.utils.parametrize import is_parametrized
    return is_parametrized(owner, name)



def stack_module_state(models) -> tuple[dict, dict]:
    """``(params, buffers)``: each parameter / buffer name of ``models`` (modules of one
    class, all in training or all in eval mode) to the stack of its tensors along a new
    dim 0 (for ``vmap`` over ``functional_call``). Tensors that require grad are stacked
    into new leaves that require grad (detached from the models), as PyTorch's."""
    from tgrad.ops.shape import stack
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def leaf(tensors: tuple, name: str):
        needs = [t.requires_grad for t in tensors]
        if any(needs) and not all(needs):
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               f".requires_grad")
        result = stack(tensors)
        return result.detach().requires_grad_() if all(needs) else result

    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    return ({k: leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]},
            {k: leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]})


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """PyTorch's functionalize, eagerly: tgrad has no graph capture for it to rewrite, so
    the returned function runs ``func`` itself and gives the same values; mutations of the
    inputs reach the caller's tensors, as PyTorch copies them back. ``remove`` is checked
    ('mutations' or 'mutations_and_views'); outputs may alias inputs (PyTorch's
    'mutations_and_views' returns copies)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are:\n     remove='mutations': all inplace and "
            "out= operators will be removed from the program, and replaced with their "
            "out-of-place equivalents.\n     remove='mutations_and_views': In addition to "
            "the above, all aliasing operators {view} will be replaced with their "
            "non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapped
