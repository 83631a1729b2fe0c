"""Module: the base class of layers. Parameters, buffers and submodules assigned as
attributes are registered (in assignment order) and found by parameters(), state_dict()..."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


_hook_ids = itertools.count()


class _RemovableHandle:
    def __init__(self, hooks: dict, key: int, extra: tuple = ()) -> None:
        self._hooks, self._key, self._extra = hooks, key, extra

    def remove(self) -> None:
        self._hooks.pop(self._key, None)
        for table in self._extra:  # the hook's flags (with_kwargs, always_call)
            table.pop(self._key, None)


class Module:
    """Base class of all layers; subclasses define ``forward`` and assign their parameters
    and submodules as attributes in ``__init__`` (after ``super().__init__()``)."""

    training: bool

    def __init__(self) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        # PyTorch's Module._call_impl: pre-hooks, forward, forward hooks; if any of them
        # raises, the always_call forward hooks not yet run are run (their own errors only
        # warn) and the error propagates.
        d = self.__dict__
        if not (self._forward_pre_hooks or self._forward_hooks or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")):
            return self.forward(*args, **kwargs)
        out = None
        called = set()
        try:
            pre_kw = d.get("_forward_pre_hooks_with_kwargs", ())
            for key, hook in list(self._forward_pre_hooks.items()):
                if key in pre_kw:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw, bw_pre = d.get("_backward_hooks"), d.get("_backward_pre_hooks")
            if bw or bw_pre:
                from tgrad.nn.modules._backward_hooks import run_with_backward_hooks
                out = run_with_backward_hooks(self, args, kwargs, bw or {}, bw_pre or {})
            else:
                out = self.forward(*args, **kwargs)
            kw, always = d.get("_forward_hooks_with_kwargs", ()), \
                d.get("_forward_hooks_always_called", ())
            for key, hook in list(self._forward_hooks.items()):
                if key in always:
                    called.add(key)
                res = hook(self, args, kwargs, out) if key in kw else hook(self, args, out)
                if res is not None:
                    out = res
            return out
        except Exception:
            always = d.get("_forward_hooks_always_called")
            if always:
                kw = d.get("_forward_hooks_with_kwargs", ())
                for key, hook in list(self._forward_hooks.items()):
                    if key not in always or key in called:
                        continue
                    try:
                        res = hook(self, args, kwargs, out) if key in kw \
                            else hook(self, args, out)
                        if res is not None:
                            out = res
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {e}", stacklevel=2)
            raise

    def _flag_table(self, name: str) -> dict:
        table = self.__dict__.get(name)
        if table is None:
            table = self.__dict__[name] = {}
        return table

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> _RemovableHandle:
        """``hook(module, args, output)`` after forward (``hook(module, args, kwargs, output)``
        with ``with_kwargs``); a non-None result replaces output. ``prepend``: run before
        the hooks already registered; ``always_call``: run even if forward (or a hook)
        raised, before the error propagates."""
        key = next(_hook_ids)
        kw = self._flag_table("_forward_hooks_with_kwargs")
        always = self._flag_table("_forward_hooks_always_called")
        self._forward_hooks[key] = hook
        if with_kwargs:
            kw[key] = True
        if always_call:
            always[key] = True
        if prepend:
            self._forward_hooks.move_to_end(key, last=False)
        return _RemovableHandle(self._forward_hooks, key, (kw, always))

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> _RemovableHandle:
        """``hook(module, args)`` before forward; a non-None result replaces args (a
        non-tuple is wrapped in one). With ``with_kwargs``: ``hook(module, args, kwargs)``,
        returning None or a tuple ``(args, kwargs)``. ``prepend``: run before the hooks
        already registered."""
        key = next(_hook_ids)
        kw = self._flag_table("_forward_pre_hooks_with_kwargs")
        self._forward_pre_hooks[key] = hook
        if with_kwargs:
            kw[key] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(key, last=False)
        return _RemovableHandle(self._forward_pre_hooks, key, (kw,))

    def register_full_backward_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, grad_input, grad_output)`` once the gradients of the module's
        tensor inputs are computed (None for inputs without one); a non-None result replaces
        grad_input."""
        return self._add_backward_hook("_backward_hooks", hook)

    def register_full_backward_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, grad_output)`` when the gradients of the module's outputs arrive;
        a non-None result replaces grad_output."""
        return self._add_backward_hook("_backward_pre_hooks", hook)

    def _add_backward_hook(self, table: str, hook: Callable) -> _RemovableHandle:
        hooks = self.__dict__.get(table)
        if hooks is None:
            hooks = self.__dict__[table] = OrderedDict()
        key = next(_hook_ids)
        hooks[key] = hook
        return _RemovableHandle(hooks, key)

    # ------------------------------------------------------------------ registration
    def _check_ready(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_ready("parameter")
        _check_name(name, self, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (tgrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is part of the state (state_dict) but not a parameter."""
        self._check_ready("buffer")
        _check_name(name, self, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (tgrad Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        self._check_ready("module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(name, self, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            self._check_ready("parameters")
            _remove_from(d, name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (tgrad.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            self._check_ready("module")
            _remove_from(d, name, keep="_modules")
            self._modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (tgrad.nn.Module or None expected)")
            d["_modules"][name] = None
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(tgrad Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            t = d.get(table)
            if t is not None and name in t:
                return t[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            t = self.__dict__.get(table)
            if t is not None and name in t:
                del t[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                       remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, v in getattr(m, table).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mprefix}.{name}" if mprefix else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(name, parameter) pairs, names dotted by submodule ("0.weight"); shared
        parameters are listed once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules or mod._modules[item] is None:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None, or to zeros in place)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g = g.detach()
                    p.grad = g
                with no_grad():
                    g.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ dtype / device
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Convert every parameter (and its grad) and buffer with ``fn``, keeping the
        Parameter objects (optimizers holding them stay valid)."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is None:
                    continue
                with no_grad():
                    new = fn(p)
                    p.data = new
                    if p._grad is not None:
                        p._grad = fn(p._grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)`` or ``to(device, dtype)``; dtype changes apply to
        floating point parameters and buffers only."""
        from tgrad import dtypes as _dt

        def conv(t: Tensor) -> Tensor:
            a = [x for x in args if not (isinstance(x, _dt.DType) and not t.is_floating_point())]
            kw = {k: v for k, v in kwargs.items()
                  if not (k == "dtype" and not t.is_floating_point())}
            return t.to(*a, **kw) if (a or kw) else t
        return self._apply(conv)

    def float(self) -> Module:
        from tgrad import dtypes
        return self.to(dtypes.float32)

    def double(self) -> Module:
        from tgrad import dtypes
        return self.to(dtypes.float64)

    def half(self) -> Module:
        from tgrad import dtypes
        return self.to(dtypes.float16)

    def bfloat16(self) -> Module:
        from tgrad import dtypes
        return self.to(dtypes.bfloat16)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        return self.to("cuda" if device is None else device)

    # ------------------------------------------------------------------ state dict
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name; values are detached tensors
        sharing storage with the module's (unless ``keep_vars``)."""
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict: dict, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into parameters and buffers (in place, without
        recording a graph). With ``strict`` missing or unexpected keys raise."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict and not self._legacy_optional(k)]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:  # missing keys are listed first, as PyTorch lists them
            if missing:
                errors.append("Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ". ")
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ". ")
        todo = []
        for key, dst in own.items():
            if key not in state_dict:
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected a Tensor '
                              f"in the state_dict but got {type(src).__name__}.")
            elif src.shape != dst.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{_size(src.shape)} from checkpoint, the shape in current model "
                              f"is {_size(dst.shape)}.")
            else:
                todo.append((key, dst, src))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        for key, dst, src in todo:
            with no_grad():
                if assign:
                    self._assign(key, dst, src)
                else:
                    dst.copy_(src)
        return _IncompatibleKeys(missing, unexpected)

    def _legacy_optional(self, key: str) -> bool:
        """Keys older state_dicts may lack: a norm layer's ``num_batches_tracked`` (PyTorch
        keeps the module's own value, as its _NormBase does for pre-1.0 checkpoints)."""
        modname, _, name = key.rpartition(".")
        return (name == "num_batches_tracked"
                and hasattr(self.get_submodule(modname), "track_running_stats"))

    def _assign(self, key: str, dst: Tensor, src: Tensor) -> None:
        modname, _, name = key.rpartition(".")
        mod = self.get_submodule(modname)
        if isinstance(dst, Parameter):
            mod._parameters[name] = src if isinstance(src, Parameter) else Parameter(
                src.detach(), requires_grad=dst.requires_grad)
        else:
            mod._buffers[name] = src

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        head = type(self).__name__ + "("
        if not lines:
            return head + ")"
        if len(lines) == 1 and not self._modules:
            return head + lines[0] + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _size(shape) -> str:
    return f"tgrad.Size({list(shape)})"


def _check_name(name: str, mod: Module, what: str, table: dict) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{what} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')
    # PyTorch's rule: any existing attribute (a class attribute, an instance attribute, or a
    # parameter, buffer or submodule) that is not already one of this kind
    if name not in table and hasattr(mod, name):
        raise KeyError(f"attribute '{name}' already exists")


def _remove_from(d: dict, name: str, keep: str) -> None:
    """Forget ``name`` everywhere but in the table ``keep`` (whose order is kept)."""
    for table in ("_parameters", "_buffers", "_modules"):
        t = d.get(table)
        if table != keep and t is not None and name in t:
            del t[name]
    d.pop(name, None)
