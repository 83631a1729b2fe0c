"""Module: the base class of layers. Parameters, buffers and submodules assigned as
attributes are registered (in assignment order) and found by parameters(), state_dict()..."""

from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Callable, Iterator

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.parameter import Buffer, Parameter
from tgrad.ops.torch_utils import typename
from tgrad.tensor import Size, Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


_hook_ids = itertools.count()


class _RemovableHandle:
    """Returned by the ``register_*hook`` methods: ``remove()`` (or leaving a ``with``
    block) unregisters the hook."""

    def __init__(self, hooks: dict, key: int, extra: tuple = ()) -> None:
        self._hooks, self._key, self._extra = hooks, key, extra

    @property
    def id(self) -> int:
        return self._key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)
        for table in self._extra:  # the hook's flags (with_kwargs, always_call)
            table.pop(self._key, None)

    def __enter__(self) -> _RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# Hooks common to every module (PyTorch's register_module_* functions; meant for debugging
# and profiling). ``_any_global_hook`` is the one flag Module.__call__ checks on its fast
# path; it is kept in step with the tables by _refresh_global_hooks.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = {}
_global_forward_hooks_always_called: dict = {}
_global_backward_hooks: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_any_global_hook = False


def _refresh_global_hooks() -> None:
    global _any_global_hook
    _any_global_hook = bool(_global_forward_pre_hooks or _global_forward_hooks
                            or _global_backward_hooks or _global_backward_pre_hooks)


class _GlobalHandle(_RemovableHandle):
    def remove(self) -> None:
        super().remove()
        _refresh_global_hooks()


def _add_global(table: dict, hook: Callable, extra: tuple = ()) -> _GlobalHandle:
    key = next(_hook_ids)
    table[key] = hook
    _refresh_global_hooks()
    return _GlobalHandle(table, key, extra)


def register_module_forward_pre_hook(hook: Callable) -> _RemovableHandle:
    """A forward pre-hook ``hook(module, args)`` for every module, run before the module's
    own pre-hooks; a non-None result replaces args (a non-tuple is wrapped in one)."""
    return _add_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> _RemovableHandle:
    """A forward hook ``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
    with ``with_kwargs``) for every module, run before the module's own forward hooks; a
    non-None result replaces output. ``always_call``: run even if forward raised."""
    h = _add_global(_global_forward_hooks, hook,
                    (_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    if with_kwargs:
        _global_forward_hooks_with_kwargs[h.id] = True
    if always_call:
        _global_forward_hooks_always_called[h.id] = True
    return h


def register_module_full_backward_hook(hook: Callable) -> _RemovableHandle:
    """A full backward hook ``hook(module, grad_input, grad_output)`` for every module, run
    before the module's own (see ``Module.register_full_backward_hook``)."""
    return _add_global(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> _RemovableHandle:
    """A backward pre-hook ``hook(module, grad_output)`` for every module, run before the
    module's own (see ``Module.register_full_backward_pre_hook``)."""
    return _add_global(_global_backward_pre_hooks, hook)


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class Module:
    """Base class of all layers; subclasses define ``forward`` and assign their parameters
    and submodules as attributes in ``__init__`` (after ``super().__init__()``)."""

    training: bool

    def __init__(self) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        # PyTorch's Module._call_impl: pre-hooks, forward, forward hooks; if any of them
        # raises, the always_call forward hooks not yet run are run (their own errors only
        # warn) and the error propagates. Global hooks (register_module_*) run first.
        d = self.__dict__
        if not (_any_global_hook or self._forward_pre_hooks or self._forward_hooks
                or d.get("_backward_hooks") or d.get("_backward_pre_hooks")):
            return self.forward(*args, **kwargs)
        out = None
        called = set()
        own_kw, own_always = d.get("_forward_hooks_with_kwargs", ()), \
            d.get("_forward_hooks_always_called", ())
        if _any_global_hook:
            kw = {**_global_forward_hooks_with_kwargs, **dict.fromkeys(own_kw, True)}
            always = {**_global_forward_hooks_always_called,
                      **dict.fromkeys(own_always, True)}
        else:
            kw, always = own_kw, own_always

        def fwd_hooks() -> list:
            if _any_global_hook:
                return [*_global_forward_hooks.items(), *self._forward_hooks.items()]
            return list(self._forward_hooks.items())
        try:
            pre_kw = d.get("_forward_pre_hooks_with_kwargs", ())
            pre_hooks = list(self._forward_pre_hooks.items())
            if _any_global_hook:
                pre_hooks = list(_global_forward_pre_hooks.items()) + pre_hooks
            for key, hook in pre_hooks:
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
            non_full = None
            if bw and d.get("_is_full_backward_hook") is False:
                non_full, bw = list(bw.values()), None  # register_backward_hook's
            if _any_global_hook and (_global_backward_hooks or _global_backward_pre_hooks):
                bw = OrderedDict([*_global_backward_hooks.items(), *(bw or {}).items()])
                bw_pre = OrderedDict([*_global_backward_pre_hooks.items(),
                                      *(bw_pre or {}).items()])
            bw_hook = None
            if bw or bw_pre:  # (PyTorch's order: the inputs' node before forward, the
                # outputs' after the forward hooks, so it sees the output the caller gets)
                from tgrad.nn.modules._backward_hooks import BackwardHook
                bw_hook = BackwardHook(self, bw or {}, bw_pre or {})
                args = bw_hook.setup_input_hook(args)
            out = self.forward(*args, **kwargs)
            for key, hook in fwd_hooks():
                if key in always:
                    called.add(key)
                res = hook(self, args, kwargs, out) if key in kw else hook(self, args, out)
                if res is not None:
                    out = res
            if bw_hook is not None:
                out = bw_hook.setup_output_hook(out)
            if non_full:
                _register_non_full_backward_hooks(self, out, non_full)
            return out
        except Exception:
            if always:
                for key, hook in fwd_hooks():
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

    def _claim_backward_hook_kind(self, full: bool) -> None:
        """A module takes full or regular (deprecated) backward hooks, never both."""
        if self.__dict__.get("_is_full_backward_hook") is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = full

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> _RemovableHandle:
        """``hook(module, grad_input, grad_output)`` once the gradients of the module's
        tensor inputs are computed (None for inputs without one); a non-None result replaces
        grad_input. ``prepend``: run before the hooks already registered."""
        self._claim_backward_hook_kind(full=True)
        return self._add_backward_hook("_backward_hooks", hook, prepend)

    def register_backward_hook(self, hook: Callable) -> _RemovableHandle:
        """Deprecated (use ``register_full_backward_hook``): ``hook(module, grad_input,
        grad_output)`` registered, as PyTorch does, on the autograd node that made the
        module's (first) output, so ``grad_input`` is that node's input gradients. Right
        only for a module whose forward is a single op."""
        self._claim_backward_hook_kind(full=False)
        return self._add_backward_hook("_backward_hooks", hook)

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> _RemovableHandle:
        """``hook(module, grad_output)`` when the gradients of the module's outputs arrive;
        a non-None result replaces grad_output. ``prepend``: run before the hooks already
        registered."""
        return self._add_backward_hook("_backward_pre_hooks", hook, prepend)

    def _add_backward_hook(self, table: str, hook: Callable,
                           prepend: bool = False) -> _RemovableHandle:
        hooks = self.__dict__.get(table)
        if hooks is None:
            hooks = self.__dict__[table] = OrderedDict()
        key = next(_hook_ids)
        hooks[key] = hook
        if prepend:
            hooks.move_to_end(key, last=False)
        return _RemovableHandle(hooks, key)

    # ------------------------------------------------------------------ registration
    def _check_ready(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_ready("parameter")
        _check_name(name, self, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter "
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
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer "
                            f"'{name}' (tgrad Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

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
                raise TypeError(f"cannot assign '{typename(value)}' as parameter "
                                f"'{name}' (tgrad.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            self._check_ready("module")
            _remove_from(d, name, keep="_modules")
            self._modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module "
                                f"'{name}' (tgrad.nn.Module or None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Buffer):  # nn.Buffer(t, persistent=...): register it
            self.register_buffer(name, value, value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(tgrad.nn.Buffer, tgrad.Tensor or None expected)")
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
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        # memo: a set of modules, as PyTorch's (those in it are skipped, the visited ones
        # added when remove_duplicate)
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                       remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
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
        """The submodule at the dotted path ``target`` ("" is self); AttributeError
        otherwise."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Set the submodule at the dotted path ``target`` to ``module``: replaces an existing
        child, or adds one under an existing parent unless ``strict`` (PyTorch's errors:
        ValueError for an empty target or a non-Module, AttributeError for a bad path)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if hasattr(parent, name):
            if not isinstance(getattr(parent, name), Module):
                raise AttributeError(f"`{name}` is not an nn.Module")
        elif strict:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        setattr(parent, name, module)

    def _attribute_at(self, target: str) -> tuple:
        """(module, name, value) of the attribute at the dotted path ``target``;
        PyTorch's AttributeError when the path is invalid."""
        modpath, _, name = target.rpartition(".")
        mod = self.get_submodule(modpath)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        return mod, name, getattr(mod, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target`` (e.g. "net.0.weight");
        AttributeError if the path is invalid or does not name a Parameter."""
        mod, name, param = self._attribute_at(target)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` (e.g. "bn.running_mean");
        AttributeError if the path is invalid or does not name a buffer."""
        mod, name, buf = self._attribute_at(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buf

    def get_extra_state(self) -> Any:
        """Override (with ``set_extra_state``) to save extra state in ``state_dict`` under
        the key ``prefix + "_extra_state"``; the base method is never called."""
        raise RuntimeError("Module.get_extra_state() is only called when a subclass "
                           "overrides it")

    def set_extra_state(self, state: Any) -> None:
        """Override (with ``get_extra_state``) to restore what ``get_extra_state``
        returned, from ``load_state_dict``; the base method is never called."""
        raise RuntimeError("Module.set_extra_state() is only called when a subclass "
                           "overrides it")

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
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Convert every parameter (and its grad) and buffer with ``fn``, keeping the
        Parameter objects (optimizers holding them stay valid)."""
        for m in (self.modules() if recurse else (self,)):
            for p in m._parameters.values():
                if p is None:
                    continue
                if getattr(p, "_is_uninitialized", False):  # a lazy module's: convert its
                    p._set_placeholder(fn(p._placeholder()))  # placeholder, stay lazy
                    continue
                with no_grad():
                    new = fn(p)
                    p.data = new
                    g = p._grad
                    if g is not None:
                        new_g = fn(g)
                        if type(g) is Tensor and type(new_g) is Tensor:
                            g.data = new_g  # in place, as PyTorch (the same object)
                        else:  # (a sparse grad: replaced)
                            p._grad = new_g
            for name, b in m._buffers.items():
                if getattr(b, "_is_uninitialized", False):
                    b._set_placeholder(fn(b._placeholder()))
                elif b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)`` or ``to(device, dtype)``; dtype changes apply to
        floating point and complex parameters and buffers only (a floating point or complex
        dtype, as PyTorch). ``memory_format`` is passed to the 4-D and 5-D ones only (as
        PyTorch; Tensor.to refuses the channels-last formats)."""
        from tgrad import dtypes as _dt

        fmt = kwargs.pop("memory_format", None)
        # to(tensor): that tensor's device and dtype (PyTorch's _parse_to)
        args = tuple(y for x in args for y in ((x.device, x.dtype) if isinstance(x, Tensor)
                                               else (x,)))
        for want in [x for x in args if isinstance(x, _dt.DType)] + (
                [_dt.as_dtype(kwargs["dtype"])] if kwargs.get("dtype") is not None else []):
            if not (want.is_floating_point or want.is_complex):  # PyTorch's check
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={want}")

        def conv(t: Tensor) -> Tensor:
            keep = not (t.dtype.is_floating_point or t.dtype.is_complex)  # integer / bool
            a = [x for x in args if not (isinstance(x, _dt.DType) and keep)]
            kw = {k: v for k, v in kwargs.items() if not (k == "dtype" and keep)}
            if fmt is not None and t.ndim in (4, 5):
                kw["memory_format"] = fmt
            return t.to(*a, **kw) if (a or kw) else t
        return self._apply(conv)

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer (integer ones included, as PyTorch) to
        ``dst_type`` (a dtype or its name)."""
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Replace every parameter and buffer by an uninitialised tensor of the same shape
        and dtype on ``device`` (the Parameter objects are kept); ``recurse=False``: this
        module's own only."""
        from tgrad.ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> Module:
        """Returns self. PyTorch moves the tensors to shared memory for
        ``torch.multiprocessing``; tgrad has no such sharing, so this is a no-op (an
        uninitialised parameter or buffer of a lazy module raises, as PyTorch)."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            if getattr(t, "_is_uninitialized", False):
                t.share_memory_()  # PyTorch's RuntimeError
        return self

    def compile(self, *args, **kwargs) -> None:
        """PyTorch's ``Module.compile``: ``tgrad.compile``'s arguments (checked as it checks
        them), returns None. tgrad has no compiler: the module runs as before."""
        from tgrad.ops.torch_utils import compile as _compile
        _compile(self, *args, **kwargs)

    def _float_cast(self, name: str) -> Module:
        """The floating point parameters and buffers cast to ``name``'s dtype; complex and
        integer ones are left as they are (PyTorch's ``float()``, ``double()``...; ``to(dtype)``
        casts complex ones too)."""
        from tgrad import dtypes
        dt = getattr(dtypes, name)
        return self._apply(lambda t: t.to(dt) if t.dtype.is_floating_point else t)

    def float(self) -> Module:
        return self._float_cast("float32")

    def double(self) -> Module:
        return self._float_cast("float64")

    def half(self) -> Module:
        return self._float_cast("float16")

    def bfloat16(self) -> Module:
        return self._float_cast("bfloat16")

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        return self.to("cuda" if device is None else device)

    # ------------------------------------------------------------------ state dict
    _version: int = 1  # saved in state_dict()._metadata; bump it when the state's layout changes

    def _hook_table(self, name: str) -> OrderedDict:
        table = self.__dict__.get(name)
        if table is None:
            table = self.__dict__[name] = OrderedDict()
        return table

    def _register_state_dict_hook(self, hook: Callable) -> _RemovableHandle:
        """PyTorch's private state_dict post-hook: ``hook(module, state_dict, prefix,
        local_metadata)``; a non-None result replaces the state_dict (only at the root)."""
        key = next(_hook_ids)
        self._hook_table("_state_dict_hooks")[key] = hook
        return _RemovableHandle(self._state_dict_hooks, key,
                                (self._flag_table("_state_dict_hooks_public"),))

    def register_state_dict_post_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` after this module (and its
        submodules) wrote their entries; it may change ``state_dict`` in place and must
        return None."""
        handle = self._register_state_dict_hook(hook)
        self._state_dict_hooks_public[handle.id] = True
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before this module writes its entries."""
        key = next(_hook_ids)
        self._hook_table("_state_dict_pre_hooks")[key] = hook
        return _RemovableHandle(self._state_dict_pre_hooks, key)

    def _register_load_state_dict_pre_hook(self, hook: Callable,
                                           with_module: bool = False) -> _RemovableHandle:
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries (with
        ``with_module``: the module is passed first)."""
        key = next(_hook_ids)
        self._hook_table("_load_state_dict_pre_hooks")[key] = \
            functools.partial(hook, self) if with_module else hook
        return _RemovableHandle(self._load_state_dict_pre_hooks, key)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(module, incompatible_keys)`` once this module and its submodules are
        loaded; it may edit ``incompatible_keys.missing_keys`` / ``unexpected_keys`` in
        place (which ``strict`` then sees) and must return None."""
        key = next(_hook_ids)
        self._hook_table("_load_state_dict_post_hooks")[key] = hook
        return _RemovableHandle(self._load_state_dict_post_hooks, key)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Write this module's own parameters, persistent buffers and extra state (not its
        submodules') into ``destination``."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name; values are detached tensors
        sharing storage with the module's (unless ``keep_vars``). The returned OrderedDict
        has PyTorch's ``_metadata`` attribute: module path -> ``{"version": _version}``."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        d = self.__dict__
        for hook in list(d.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        public = d.get("_state_dict_hooks_public", ())
        for key, hook in list(d.get("_state_dict_hooks", {}).items()):
            res = hook(self, destination, prefix, local_metadata)
            if key in public:
                if res is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Load this module's own entries (not its submodules') from ``state_dict`` (a copy
        that may be modified); ``local_metadata`` is what ``state_dict()`` saved for this
        module (``{}`` for a plain dict), so subclasses can convert older versions."""
        for hook in list(self.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if getattr(param, "_is_uninitialized", False):
                continue  # still lazy: the state has a placeholder too (nothing to copy)
            if not isinstance(src, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "tgrad.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(src)}")
                continue
            if param.ndim == 0 and src.shape == (1,):  # PyTorch 0.3's 1-element tensors
                src = src[0]
            if src.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{_size(src.shape)} from checkpoint, the shape in current "
                                  f"model is {_size(param.shape)}.")
                continue
            try:
                with no_grad():
                    if not assign:
                        param.copy_(src)
                    elif isinstance(param, Parameter):
                        if isinstance(src, Parameter):
                            src.requires_grad_(param.requires_grad)
                        else:
                            src = Parameter(src.detach(), requires_grad=param.requires_grad)
                        self._parameters[name] = src
                    else:
                        self._buffers[name] = src
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {_size(param.shape)} and whose "
                                  f"dimensions in the checkpoint are {_size(src.shape)}, an "
                                  f"exception occurred : {ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if (head not in self._modules) if dot else (head not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: dict, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into parameters and buffers (in place, without
        recording a graph; with ``assign`` the state_dict's tensors replace them). With
        ``strict`` missing or unexpected keys raise (after the other entries are loaded,
        as PyTorch). Each module's ``_load_from_state_dict`` gets its entry of the
        state_dict's ``_metadata`` (``{}`` if there is none)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # a copy _load_from_state_dict may change
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module: Module, local: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, local_metadata, True, missing,
                                         unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local.items()  # noqa: F821 - (del below)
                                 if k.startswith(child_prefix)}, child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict)
        del load  # (the nested function refers to itself: a cycle, as PyTorch's `del load`)
        if strict:  # missing keys are listed first, as PyTorch lists them
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def __setstate__(self, state: dict) -> None:
        # a module pickled before the non-persistent set took PyTorch's name
        if "_non_persistent_buffers_set" not in state:
            state["_non_persistent_buffers_set"] = state.pop("_non_persistent_buffers", set())
        self.__dict__.update(state)

    # ------------------------------------------------------------------ printing
    def _get_name(self) -> str:
        """The class name, which ``repr`` starts with (PyTorch's; libraries read it)."""
        return type(self).__name__

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
        head = self._get_name() + "("
        if not lines:
            return head + ")"
        if len(lines) == 1 and not self._modules:
            return head + lines[0] + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _register_non_full_backward_hooks(module: Module, out: Any, hooks: list) -> None:
    """PyTorch's non-full backward hooks: each is a post-hook of the node that made the
    first tensor of ``out`` (a tensor, or nested tuples / lists / dicts of them)."""
    var = out
    while not isinstance(var, Tensor):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, Tensor))
        else:
            var = var[0]
    node = var.grad_fn
    if node is None:
        return
    for hook in hooks:
        node.register_hook(lambda gi, go, hook=hook: hook(module, gi, go))


def _size(shape) -> str:
    return repr(Size(shape))  # (PyTorch's message prints a torch.Size)


def _check_name(name: str, mod: Module, what: str, table: dict) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
    if "." in name:  # (PyTorch's texts: only add_module's shows the name)
        raise KeyError(f'{what} name can\'t contain "."'
                       + (f", got: {name}" if what == "module" else ""))
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
