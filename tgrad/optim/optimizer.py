"""Optimizer: the base class (param_groups, state, zero_grad, state_dict / load_state_dict).

Subclasses implement ``step`` as ONE loop per parameter group: gather the parameters that
have a gradient and their state (``Optimizer._collect``), then make one call to a per-group
update function from ``tgrad.optim._functional`` (the seam where a fused GPU kernel per group
plugs in)."""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from typing import Any, Callable, Iterable

from tgrad.autograd.grad_mode import enable_grad
from tgrad.tensor import Tensor


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Holds ``param_groups`` (a list of dicts: "params" plus hyper-parameters, defaults
    filled from ``defaults``) and ``state`` (param -> dict of per-parameter tensors)."""

    def __init__(self, params: Iterable, defaults: dict) -> None:
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict) -> None:
        """Append a group. ``"params"`` holds tensors, or (name, tensor) pairs (as
        ``named_parameters()`` yields): the names then go to ``group["param_names"]``, and
        every group must have names or none. As PyTorch, a tensor repeated within a group
        only warns (it is kept, and updated once per occurrence); one shared between groups
        raises."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        tensors, names = [], []
        for p in params:
            if isinstance(p, tuple):
                names.append(p[0])
                p = p[1]
            tensors.append(p)
        group = dict(param_group, params=tensors)
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        ids = [id(p) for p in tensors]
        if len(set(ids)) != len(ids):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          UserWarning, stacklevel=3)
        seen = set()
        for g in self.param_groups:
            seen.update(id(p) for p in g["params"])
            if ("param_names" in group) != ("param_names" in g):
                which = "with names" if "param_names" in group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if seen & set(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None, or zeros in place)."""
        from tgrad.autograd.grad_mode import no_grad
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if p._grad.grad_fn is not None:
                        p._grad = p._grad.detach()
                    with no_grad():
                        p._grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        raise NotImplementedError

    def _collect(self, group: dict, init_state: Callable[[Tensor, dict], dict] | None = None,
                 *names: str) -> tuple[list, ...]:
        """Gather one group for ``step``: ``(params, grads, *entries)``, the parameters that
        have a gradient, their gradients and, for each state name in ``names``, the list of
        those parameters' state entries. A parameter with an empty state first gets
        ``init_state(p, group)``."""
        params, grads = [], []
        for p in group["params"]:
            if p._grad is None:
                continue
            if init_state is not None:  # no entry is made for an optimizer without state
                st = self.state[p]
                if not st:
                    st.update(init_state(p, group))
            params.append(p)
            grads.append(p._grad)
        return (params, grads, *([self.state[p][n] for p in params] for n in names))

    def _eval_closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ state dict
    def state_dict(self) -> dict:
        """{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]};
        parameters are numbered in the order of the groups. Values are references (not
        copies), like PyTorch."""
        # PyTorch's numbering: a group's parameters take the indices start, start + 1, ...
        # (start = the number of entries in the groups before it); a parameter seen in an
        # earlier group keeps its index, and one repeated within a group gets the index of
        # its last occurrence.
        index: dict[int, int] = {}
        groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            index.update({id(p): i for i, p in enumerate(g["params"], start)
                          if id(p) not in index})
            packed["params"] = [index[id(p)] for p in g["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and state; tensors are copied and cast to the dtype and
        device of their parameter (``step`` stays as saved)."""
        state_dict = copy.copy(state_dict)
        groups = self.param_groups
        saved = state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {}
        for g, s in zip(groups, saved):
            for p, i in zip(g["params"], s["params"]):
                id_map[i] = p
        self.state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k)
            if k not in id_map:
                continue
            p = id_map[k]
            self.state[p] = {name: _cast_state(p, name, val) for name, val in v.items()}
        new_groups = []
        for g, s in zip(groups, saved):
            ng = {k: v for k, v in s.items() if k != "params"}
            ng["params"] = g["params"]
            if "param_names" in g and "param_names" not in ng:  # saved without names
                ng["param_names"] = g["param_names"]
            new_groups.append(ng)
        self.param_groups = new_groups

    def __repr__(self) -> str:
        out = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            out += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    out += f"\n    {k}: {g[k]}"
        return out + "\n)"


def _cast_state(p: Tensor, name: str, value):
    if name == "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
        from tgrad.ops.creation import tensor  # older checkpoints keep the count as a number
        return tensor(float(value), dtype="float32")
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if name == "step":
        return value.detach().clone()
    dt = p.dtype if value.dtype.is_floating_point else value.dtype
    return value.detach().to(p.device, dt).clone()


def check_implementation_flags(name: str, foreach=None, fused=None, capturable: bool = False,
                               differentiable: bool = False) -> None:
    """PyTorch's implementation switches, accepted for compatibility: tgrad's step is one
    multi-tensor kernel per group on the GPU (NumPy on the CPU) whatever ``foreach``,
    ``fused`` and ``capturable`` say. ``differentiable=True`` (autograd through the step)
    is not supported."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported in tgrad (the "
                                  f"update is not recorded by autograd)")


def check_adam_args(lr: float, eps: float, betas: tuple[float, float],
                    weight_decay: float) -> None:
    """The argument checks of the Adam family (Adam, AdamW, Adamax, NAdam, RAdam)."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
