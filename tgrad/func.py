"""``tgrad.func``, PyTorch's ``torch.func`` function transforms over tgrad's tape autograd:
``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap`` and
``functional_call``. They compose (``vmap(grad(f))`` gives per-sample gradients,
``jacrev(jacrev(f))`` a Hessian) and take tensors or tuples / lists / dicts of them.

How they work (differences from PyTorch's functorch, which has its own interpreter):
- ``grad`` / ``vjp`` / ``jacrev`` run ``f`` on aliases of the inputs and call
  ``autograd.grad``; the graph is kept (create_graph) only when an input already requires
  grad, i.e. inside another transform, so results at the outermost level carry no graph.
- ``jacrev`` does one backward per output element; ``jacfwd`` returns the same Jacobian
  through the same reverse passes (tgrad has no forward-mode AD), so it is not cheaper for
  tall Jacobians.
- ``vmap`` calls ``f`` once per batch element and stacks the results (no batching rules):
  the values and gradients are those of PyTorch's vmap, the speed is a Python loop's.
  ``randomness='error'`` (the default) raises if ``f`` draws random numbers (the global
  generators' states are compared around each call), 'different' lets each element draw
  its own, 'same' replays the first element's draws for every element.
"""

from __future__ import annotations

from typing import Callable

from tgrad import autograd
from tgrad.autograd.grad_mode import enable_grad
from tgrad.ops.shape import stack
from tgrad.tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call"]


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
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, rebuild_values = _flatten([tree[k] for k in keys])
        return leaves, lambda values: dict(zip(keys, rebuild_values(values)))
    return [tree], lambda values: values[0]


def _argnums_tuple(argnums, n_args: int, who: str) -> tuple:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{who}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"{who}: argnums must be int or Tuple[int, ...], got {argnums}")
        if not -n_args <= a < n_args:
            raise RuntimeError(f"Got argnums={argnums}, but only {n_args} positional inputs")
    return tuple(a % n_args for a in nums)


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
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"{who}: only floating point inputs can be differentiated, "
                               f"got {t.dtype}")
    outer = any(t.requires_grad for t in leaves)
    aliases = [t.view_as(t) if t.requires_grad else t.detach().requires_grad_() for t in leaves]
    rebuilt = rebuild(aliases)
    new_args = list(args)
    if isinstance(argnums, int):
        new_args[nums[0]] = rebuilt
    else:
        for i, value in zip(nums, rebuilt):
            new_args[i] = value
    return tuple(new_args), aliases, rebuild, outer


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


def _plain(t, keep: bool):
    return t if keep or not isinstance(t, Tensor) else t.detach()


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
        with enable_grad():
            new_args, aliases, rebuild, keep = _prepare(args, argnums, who)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, who)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{who}(f)(*args): Expected f(*args) to return a Tensor, "
                                   f"got {type(out).__name__}")
            if out.ndim != 0:
                raise RuntimeError(f"{who}(f)(*args): Expected f(*args) to return a scalar "
                                   f"Tensor, got tensor with {out.ndim} dims. Maybe you "
                                   f"wanted to use the vjp or jacrev APIs instead?")
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
    with enable_grad():
        new_args, aliases, rebuild, keep = _prepare(primals, tuple(range(len(primals))),
                                                    "vjp") if primals else ((), [], None, False)
        out, aux = _split_aux(func(*new_args), has_aux, "vjp")
    out_leaves, _ = _flatten(out)

    def vjp_fn(cotangents):
        cot_leaves, _ = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function "
                               f"({len(out_leaves)} tensors), got {len(cot_leaves)}")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of "
                                   f"{list(c.shape)} and output has a shape of "
                                   f"{list(o.shape)}.")
        with enable_grad():
            gs = _grads(out_leaves, aliases, cot_leaves, keep or any(
                c.requires_grad for c in cot_leaves))
        return tuple(_map(lambda g: _plain(g, keep), rebuild(gs)))
    value = _map(lambda t: _plain(t, keep), out)
    return (value, vjp_fn, _plain_aux(aux, keep)) if has_aux else (value, vjp_fn)


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None) -> Callable:
    """A function returning the Jacobian of ``func`` (each output's shape + each argument's
    shape) with respect to the arguments ``argnums``, one backward pass per output element.
    (``chunk_size`` is accepted and has no effect.)"""
    who = "jacrev"

    def wrapper(*args, **kwargs):
        with enable_grad():
            new_args, aliases, rebuild, keep = _prepare(args, argnums, who)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, who)
            out_leaves, out_rebuild = _flatten(out)
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


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian as ``jacrev`` computes it (tgrad has no forward-mode AD: same values,
    reverse passes)."""
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func: Callable, argnums=0) -> Callable:
    """The Hessian of a scalar ``func`` with respect to ``argnums`` (jacfwd(jacrev(f)))."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------------------- vmap
def _rng_states() -> list:
    """The global generators' states (the CPU one, and cuda's once it is in use)."""
    import tgrad
    from tgrad import cuda
    states = [tgrad.get_rng_state()]
    if cuda.is_available() and cuda.is_initialized():
        states.append(tgrad.get_rng_state("cuda"))
    return states


def _set_rng_states(states: list) -> None:
    import tgrad
    tgrad.set_rng_state(states[0])
    if len(states) > 1:
        tgrad.set_rng_state(states[1], "cuda")


def _dims_for(in_dims, args: tuple) -> list:
    """One in_dim (int or None) per leaf of ``args``."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(_flatten(args)[0])
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`: expected one entry per "
                         f"positional argument ({len(args)})")
    dims = []
    for d, a in zip(in_dims, args):
        n = len(_flatten(a)[0])
        if isinstance(d, (tuple, list, dict)):
            sub = _flatten(d)[0]
            if len(sub) != n:
                raise ValueError(f"vmap: in_dims {d} does not match its argument's structure")
            dims.extend(sub)
        else:
            dims.extend([d] * n)
    return dims


def _same_values(a: Tensor, b: Tensor) -> bool:
    """Equal shapes, dtypes and values (NaN equal to NaN)."""
    if a.shape != b.shape or a.dtype is not b.dtype:
        return False
    return bool(((a == b) | (a != a) & (b != b)).all())


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:
    """``func`` mapped over dim ``in_dims`` of its inputs (None: not mapped; a tuple: one
    per argument), outputs stacked along ``out_dims``: a loop over the batch (module
    docstring). (``chunk_size`` is accepted and has no effect.)"""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        leaves, rebuild = _flatten(args)
        dims = _dims_for(in_dims, args)
        sizes = {x.shape[d] for x, d in zip(leaves, dims)
                 if d is not None and isinstance(x, Tensor)}
        for x, d in zip(leaves, dims):
            if d is not None and not isinstance(x, Tensor):
                raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of type "
                                 f"{type(x).__name__}. We cannot vmap over non-Tensor "
                                 f"arguments, please use None as the respective in_dim")
            if d is not None and not -x.ndim <= d < x.ndim:
                raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of "
                                 f"dimension {x.ndim}")
        if not sizes:
            raise ValueError("vmap: at least one input must be mapped over (got in_dims "
                             "all None or no Tensor inputs)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
        n = sizes.pop()
        start = _rng_states() if randomness != "different" else None
        results = []
        for i in range(n):
            if randomness == "same":
                _set_rng_states(start)
            sliced = [x.select(d, i) if d is not None else x for x, d in zip(leaves, dims)]
            before = _rng_states() if randomness == "error" else None
            results.append(func(*rebuild(sliced), **kwargs))
            if before is not None and before != _rng_states():
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
        per_call = [_flatten(r) for r in results]
        out_rebuild = per_call[0][1]
        columns = list(zip(*[leaves_ for leaves_, _ in per_call]))
        odims = _flatten(out_dims)[0] if isinstance(out_dims, (tuple, list, dict)) \
            else [out_dims] * len(columns)
        outs = []
        for col, od in zip(columns, odims):
            if not isinstance(col[0], Tensor):
                raise ValueError(f"vmap: `{getattr(func, '__name__', 'func')}` must only "
                                 f"return Tensors, got type {type(col[0]).__name__}")
            if od is None:  # only an output that does not depend on the batch (PyTorch)
                if not all(c is col[0] or _same_values(c, col[0]) for c in col[1:]):
                    raise ValueError("vmap: can not return a BatchedTensor when out_dim is "
                                     "None (the output differs across the batch); give it "
                                     "an out_dim")
                outs.append(col[0])
            else:
                outs.append(stack(list(col), od))
        return out_rebuild(outs)
    return wrapper


# ----------------------------------------------------------------------- functional_call
def _resolve(module, dotted: str) -> tuple:
    *path, name = dotted.split(".")
    owner = module
    for part in path:
        owner = owner._modules.get(part) if hasattr(owner, "_modules") else None
        if owner is None:
            return None, name
    return owner, name


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the parameters and buffers named in the dict(s)
    (dotted names, as in ``named_parameters``) replaced by the given tensors for the call
    only; gradients flow to those tensors. ``tie_weights``: a tensor tied to a replaced
    one (the same Parameter under two names) is replaced too; ``strict``: every parameter
    and buffer must be given, and nothing else."""
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
            if owner is None:
                continue
            table = owner._parameters if name in owner._parameters else (
                owner._buffers if name in owner._buffers else None)
            if table is None:
                continue
            swapped.append((table, name, table[name]))
            table[name] = v
        args = () if args is None else (args if isinstance(args, tuple) else (args,))
        return module(*args, **(kwargs or {}))
    finally:
        for table, name, old in reversed(swapped):
            table[name] = old

