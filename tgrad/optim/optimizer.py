"""Optimizer: the base class (param_groups, state, zero_grad, state_dict / load_state_dict,
step / state-dict hooks) and the global step hooks (``register_optimizer_step_pre_hook``,
``register_optimizer_step_post_hook``).

Subclasses implement ``step`` as ONE loop per parameter group: gather the parameters that
have a gradient and their state (``Optimizer._collect``), then make one call to a per-group
update function from ``tgrad.optim._functional`` (the seam where a fused GPU kernel per group
plugs in). Every subclass's ``step`` is wrapped (``__init_subclass__``) to run the step
hooks around it, as PyTorch's ``Optimizer.profile_hook_step``."""

from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain
from typing import Any, Callable, Iterable

from tgrad import dtypes
from tgrad.autograd.grad_mode import enable_grad
from tgrad.autograd.node import RemovableHandle
from tgrad.tensor import Tensor

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

# Hooks run around the step of every optimizer: id -> hook(optimizer, args, kwargs).
_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()

_HOOK_TABLES = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks")


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a pre hook run before the ``step`` of every optimizer:
    ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, where ``args``
    starts with the optimizer itself (as PyTorch). Global hooks run before the optimizer's
    own; ``handle.remove()`` unregisters it."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register a post hook run after the ``step`` of every optimizer:
    ``hook(optimizer, args, kwargs) -> None``. Global post hooks run after the optimizer's
    own; ``handle.remove()`` unregisters it."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _get_scalar_dtype(is_fused: bool | None = None) -> dtypes.DType:
    """The dtype of ``state["step"]`` (PyTorch's ``_get_scalar_dtype``): float64 when the
    default dtype is float64, else float32; always float32 with ``fused=True``."""
    if is_fused:
        return dtypes.float32
    return dtypes.float64 if dtypes.get_default_dtype() is dtypes.float64 else dtypes.float32


def _hook_step(func: Callable) -> Callable:
    """Wrap an optimizer's ``step``: global then per-optimizer pre hooks (each may return
    (new_args, new_kwargs)), the step, then per-optimizer then global post hooks. A step
    called from inside another (a subclass's ``step`` calling ``super().step()``) runs the
    hooks only once, around the outer call."""

    @functools.wraps(func)
    def step(*args, **kwargs):
        self = args[0]
        if self.__dict__.get("_in_hooked_step"):
            return func(*args, **kwargs)
        d = self.__dict__
        d["_opt_called"] = True  # LRScheduler's check that optimizer.step() ran first
        for hook in list(chain(_global_optimizer_pre_hooks.values(),
                               d.get("_optimizer_step_pre_hooks", {}).values())):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        d["_in_hooked_step"] = True
        try:
            out = func(*args, **kwargs)
        finally:
            d["_in_hooked_step"] = False
        for hook in list(chain(d.get("_optimizer_step_post_hooks", {}).values(),
                               _global_optimizer_post_hooks.values())):
            hook(self, args, kwargs)
        return out

    step.hooked = True
    return step


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Holds ``param_groups`` (a list of dicts: "params" plus hyper-parameters, defaults
    filled from ``defaults``) and ``state`` (param -> dict of per-parameter tensors)."""

    # True on the built-in optimizers that keep ``step`` as a tensor: a number ``step`` of
    # an older checkpoint becomes one at load_state_dict (PyTorch's __setstate__ of those
    # classes); a user subclass's number stays a number, as PyTorch's base class leaves it
    _tensor_step = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if callable(step) and not getattr(step, "hooked", False):
            cls.step = _hook_step(step)

    def __init__(self, params: Iterable, defaults: dict) -> None:
        self.defaults = defaults
        for table in _HOOK_TABLES:
            setattr(self, table, OrderedDict())
        step = type(self).step  # re-wrap a step assigned to the class after its creation
        if type(self) is not Optimizer and not getattr(step, "hooked", False):
            type(self).step = _hook_step(step)
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

    def __getstate__(self) -> dict:
        # hooks are not pickled / deep-copied (PyTorch keeps only defaults, state and groups)
        return {k: v for k, v in self.__dict__.items()
                if k not in _HOOK_TABLES and k != "_in_hooked_step"}

    def __setstate__(self, state: dict) -> None:
        """Restore from ``state`` (pickling, ``load_state_dict``); groups missing a key get
        it from ``defaults`` (as PyTorch's per-class ``__setstate__`` fills older
        checkpoints' groups)."""
        self.__dict__.update(state)
        for table in _HOOK_TABLES:
            if table not in self.__dict__:
                setattr(self, table, OrderedDict())
        for group in self.param_groups:
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)
        self.defaults.setdefault("differentiable", False)  # as PyTorch (not in the groups)

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, run
        before ``step`` (after the global pre hooks); ``args`` starts with the optimizer.
        ``handle.remove()`` unregisters it."""
        return _add_hook(self._optimizer_step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None``, run after ``step`` (before the
        global post hooks)."""
        return _add_hook(self._optimizer_step_post_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                     ) -> RemovableHandle:
        """Register ``hook(optimizer) -> None``, run at the start of ``state_dict()``;
        ``prepend=True`` runs it before the hooks already registered."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                      ) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None``, run on the state
        dict ``state_dict()`` built (it may edit it in place or return a new one, which is
        then passed on and returned)."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                          ) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None``, run at the start of
        ``load_state_dict`` on a shallow copy of the given dict; a returned dict is loaded
        instead."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                           ) -> RemovableHandle:
        """Register ``hook(optimizer) -> None``, run at the end of ``load_state_dict``."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _collect(self, group: dict, init_state: Callable[[Tensor, dict], dict] | None = None,
                 *names: str) -> tuple[list, ...]:
        """Gather one group for ``step``: ``(params, grads, *entries)``, the parameters that
        have a gradient, their gradients and, for each state name in ``names``, the list of
        those parameters' state entries. A parameter with an empty state first gets
        ``init_state(p, group)``. A sparse COO gradient raises PyTorch's "<name> does not
        support sparse gradients" unless the class sets ``_sparse_grads`` (SGD, Adagrad)."""
        params, grads = [], []
        for p in group["params"]:
            if p._grad is None:
                continue
            if p._grad._sparse and not self._sparse_grads:
                raise RuntimeError(self._sparse_grad_error())
            if group.get("capturable") and p.device.type not in _CAPTURABLE_DEVICES:
                raise AssertionError(_capturable_error(self, group))
            if init_state is not None:  # no entry is made for an optimizer without state
                st = self.state[p]
                if not st:
                    st.update(init_state(p, group))
            params.append(p)
            grads.append(p._grad)
        return (params, grads, *([self.state[p][n] for p in params] for n in names))

    _sparse_grads = False  # True where step takes sparse COO gradients (SGD, Adagrad)

    def _base_name(self) -> str:
        """The tgrad.optim class this optimizer is (or a user subclass derives from)."""
        return next(c.__name__ for c in type(self).__mro__
                    if c.__module__.startswith("tgrad.optim"))

    def _sparse_grad_error(self) -> str:
        """PyTorch's error for a sparse gradient, naming the tgrad optimizer class (a user
        subclass is named by the tgrad.optim class it derives from, as PyTorch's text)."""
        return f"{self._base_name()} does not support sparse gradients"

    def _eval_closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ state dict
    def state_dict(self) -> dict:
        """{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]};
        parameters are numbered in the order of the groups. Values are references (not
        copies), like PyTorch. The state-dict pre hooks run first and the post hooks last
        (a post hook may return a new dict)."""
        for pre_hook in list(self._optimizer_state_dict_pre_hooks.values()):
            pre_hook(self)
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
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in list(self._optimizer_state_dict_post_hooks.values()):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and state; tensors, also inside lists, tuples and dicts,
        are copied and cast to the device of their parameter and to its dtype when it is
        floating (``step`` stays as saved, or float32 in a group with ``fused`` /
        ``capturable``), as PyTorch's _process_value_according_to_param_policy. The
        load-state-dict pre hooks see (and may replace) a shallow copy of ``state_dict``
        first; the post hooks run last."""
        state_dict = copy.copy(state_dict)
        for pre_hook in list(self._optimizer_load_state_dict_pre_hooks.values()):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved = state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map, step_f32 = {}, {}
        for g, s in zip(groups, saved):
            for p, i in zip(g["params"], s["params"]):
                id_map[i] = p
                step_f32[i] = bool(s.get("fused") or s.get("capturable"))
        new_state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k)
            if k not in id_map:
                continue
            p = id_map[k]
            new_state[p] = {name: _cast_state(p, name, val, step_f32[k], self._tensor_step)
                            for name, val in v.items()}
        new_groups = []
        for g, s in zip(groups, saved):
            ng = {k: v for k, v in s.items() if k != "params"}
            ng["params"] = g["params"]
            if "param_names" in g and "param_names" not in ng:  # saved without names
                ng["param_names"] = g["param_names"]
            new_groups.append(ng)
        self.__setstate__({"state": new_state, "param_groups": new_groups})
        for post_hook in list(self._optimizer_load_state_dict_post_hooks.values()):
            post_hook(self)

    def __repr__(self) -> str:
        # PyTorch's text: each group opens with a newline and each entry ends with one, so
        # groups after the first are set off by a blank line
        out = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            for k in sorted(g):
                if k != "params":
                    out += f"    {k}: {g[k]}\n"
        return out + ")"


# capturable=True (state for CUDA graphs): the device types tgrad can capture on; others
# fail PyTorch's assertion at step(), whose text lists PyTorch's capturable devices. Its
# wording per optimizer: (what is checked, foreach=True's text if different) and the
# implementations whose list lacks 'xla' (PyTorch 2.13's single-tensor / foreach code).
_CAPTURABLE_DEVICES = ("cuda",)
_CAPTURABLE_WHAT = {"ASGD": ("params, mus, etas, and state_steps",),
                    "NAdam": ("params, mu_products and state_steps",
                              "params, mu_products, and state_steps")}
_CAPTURABLE_NO_XLA = {"Adadelta": (False, True), "RMSprop": (), "Rprop": ()}


def _capturable_error(opt: Optimizer, group: dict) -> str:
    """PyTorch's AssertionError text for a capturable group with a parameter elsewhere."""
    name, foreach = opt._base_name(), bool(group.get("foreach"))
    what = _CAPTURABLE_WHAT.get(name, ("params and state_steps",))
    devices = ["cuda", "xpu", "hpu", "privateuseone", "xla"]
    if foreach in _CAPTURABLE_NO_XLA.get(name, (True,)):
        devices.pop()
    return (f"If capturable=True, {what[-1] if foreach else what[0]} must be on supported "
            f"devices: {devices}.")


def _add_hook(table: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(table)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def _cast_state(p: Tensor, name, value, step_f32: bool = False, tensor_step: bool = False):
    """One state value for parameter ``p`` (``name``: its key, None inside a list)."""
    if isinstance(value, Tensor):
        if name == "step":
            value = value.detach().clone()
            return value.to(dtypes.float32) if step_f32 else value
        if p.dtype.is_floating_point:
            return value.detach().to(p.device, p.dtype).clone()
        return value.detach().to(p.device).clone()
    if isinstance(value, dict):  # (LBFGS's lists of tensors, a user's dicts)
        return {k: _cast_state(p, k, v, step_f32, tensor_step) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)([_cast_state(p, None, v, step_f32, tensor_step) for v in value])
    if (name == "step" and tensor_step and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        from tgrad.ops.creation import tensor  # older checkpoints keep the count as a number
        return tensor(float(value), dtype=dtypes.float32 if step_f32 else _get_scalar_dtype())
    return copy.deepcopy(value)


def check_tensor_lr(lr, foreach: bool | None = None, capturable: bool = False) -> None:
    """PyTorch's first check on a Tensor ``lr``: it must hold one element (a longer one
    would reach the ``lr < 0`` check as an ambiguous truth value). Adam / AdamW pass
    ``foreach`` and ``capturable``: their Tensor lr is refused with ``foreach=True`` unless
    ``capturable=True``, as PyTorch's."""
    if isinstance(lr, Tensor):
        if foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")


def check_implementation_flags(name: str, foreach=None, fused=None, capturable: bool = False,
                               differentiable: bool = False) -> None:
    """PyTorch's implementation switches, kept in the groups for compatibility: tgrad's step
    is one multi-tensor kernel per group on the GPU (NumPy on the CPU) whatever ``foreach``,
    ``fused`` and ``capturable`` say, and gives the same update (but ``capturable=True``
    with a parameter off the GPU fails PyTorch's assertion at ``step``). ``fused`` with ``foreach``
    or ``differentiable`` raises as in PyTorch; ``differentiable=True`` (autograd through
    the step) is not supported."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported in tgrad (the "
                                  f"update is not recorded by autograd)")


_FUSED_DEVICES = ("cuda", "cpu")  # tgrad's devices, all of which accept fused=True


def check_fused_param(p: Tensor) -> None:
    """``fused=True`` takes floating-point parameters only (PyTorch's
    ``_device_dtype_check_for_fused``): a complex parameter raises PyTorch's RuntimeError."""
    if not (p.dtype.is_floating_point and p.device.type in _FUSED_DEVICES):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: {list(_FUSED_DEVICES)} but {p.dtype} and "
                           f"{p.device.type}")


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
