"""``tgrad.nn.utils.parametrize``, as PyTorch's: a module's parameter or buffer recomputed
from unconstrained originals on every access.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``... when
``P.right_inverse`` returns a tuple), turns ``module.weight`` into a property returning
``P(original)`` (several parametrizations chain, first registered applied first), and swaps
the module's class for a subclass ``Parametrized<Class>`` holding that property (one per
module). Assigning ``module.weight = X`` stores ``right_inverse(X)`` in the originals.
``cached()`` computes each parametrized tensor once inside its block;
``remove_parametrizations`` puts a plain parameter back (the current value, or the
original). State-dict keys are PyTorch's (``parametrizations.weight.original``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.modules.container import ModuleDict, ModuleList
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "ParametrizationList", "type_before_parametrizations"]

_cache_depth = 0
_cache: dict = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside this block each parametrized tensor is computed once (on first access) and
    reused, e.g. for a weight read at every step of a recurrent loop."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_original(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _check_tensor_like(value, dtype, shape: tuple, not_tensor: str, mismatch) -> None:
    """``value`` must be a Tensor (else ValueError(not_tensor % its type's name)) of
    ``dtype`` and ``shape`` (else ValueError(mismatch(what, expected, got)), what "dtype"
    or "shape"): the one check behind PyTorch's three messages below."""
    if not isinstance(value, Tensor):
        raise ValueError(not_tensor % type(value).__name__)
    for what, want, got in (("dtype", dtype, value.dtype),
                            ("shape", tuple(shape), tuple(value.shape))):
        if got != want:
            raise ValueError(mismatch(what, want, got))


def _check_like(new, dtype, shape: tuple) -> None:
    """The parametrized tensor ``new`` must keep the unparametrized dtype and shape."""
    _check_tensor_like(
        new, dtype, shape, "A parametrization must return a tensor. Got %s.",
        lambda what, want, got: f"Registering a parametrization may not change the {what} of "
                                f"the tensor, unless `unsafe` flag is enabled.\n"
                                f"unparametrized {what}: {want}\nparametrized {what}: {got}")


def _check_appended(module: Module, name: str, parametrization: Module) -> None:
    """PyTorch's checks of a parametrization added to an already parametrized tensor Y:
    X = parametrization(Y) and, when it has one, parametrization.right_inverse(X) must be
    tensors of Y's dtype and shape."""
    y = getattr(module, name)
    x = parametrization(y)
    _check_tensor_like(
        x, y.dtype, y.shape, "A parametrization must return a tensor. Got %s.",
        lambda what, want, got: f"Registering a parametrization may not change the {what} of "
                                f"the tensor, unless the `unsafe` flag is enabled.\n"
                                f"module.{name}.{what}: {want}\n"
                                f"parametrization(module.{name}).{what}: {got}")
    if not hasattr(parametrization, "right_inverse"):
        return  # taken as the identity
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    _check_tensor_like(
        z, y.dtype, y.shape, "parametrization.right_inverse must return a tensor. Got: %s",
        lambda what, want, got: f"The tensor returned by parametrization.right_inverse must "
                                f"have the same {what} as module.{name}, unless the `unsafe` "
                                f"flag is enabled.\nmodule.{name}.{what}: {want}\n"
                                f"returned {what}: {got}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its originals: ``original`` (a tensor), or
    ``original0``, ``original1``... (right_inverse returned a tuple). ``forward()`` gives
    the parametrized tensor; ``right_inverse(value)`` stores the originals of ``value``."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        dtype, shape = original.dtype, tuple(original.shape)  # before right_inverse sets it
        with no_grad():
            new = original
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:  # taken as the identity here (PyTorch)
                        pass
        if not isinstance(new, (Tensor, tuple, list)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        if self.is_tensor:
            # One tensor: it replaces the original in place, so its dtype and device must
            # be the original's, even when unsafe (PyTorch)
            for what in ("dtype", "device"):
                if getattr(new, what) != getattr(original, what):
                    raise ValueError(f"When `right_inverse` outputs one tensor, it may not "
                                     f"change the {what}.\n"
                                     f"original.{what}: {getattr(original, what)}\n"
                                     f"right_inverse(original).{what}: {getattr(new, what)}")
            with no_grad():
                if new is not original:
                    original.data = new.detach().clone()  # the same Parameter object
            _register_original(self, "original", original)
            self.ntensors = 1
        else:
            self.ntensors = len(new)
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence "
                                     f"of tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(t).__name__}.")
                t = t.detach().clone()
                if isinstance(original, Parameter):
                    t = Parameter(t, original.requires_grad)
                _register_original(self, f"original{i}", t)
        if not unsafe:
            _check_like(self(), dtype, shape)

    def right_inverse(self, value: Tensor) -> None:
        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not "
                                       f"implement right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype is not self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                self.original.data = value.detach().clone()
            else:
                if not isinstance(value, (tuple, list)):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. "
                                     f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, t in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(t, Tensor):
                        raise ValueError(f"'right_inverse' must return a sequence of tensors. "
                                         f"Got element {i} of type {type(t).__name__}.")
                    if t.dtype is not original_i.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                         f"{t.dtype} while `original{i}` has dtype "
                                         f"{original_i.dtype}")
                    original_i.data = t.detach().clone()

    def forward(self) -> Tensor:
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name`` when given)."""
    p = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(p, ModuleDict):
        return False
    return len(p) > 0 if tensor_name is None else tensor_name in p


def type_before_parametrizations(module: Module) -> type:
    """The module's class before register_parametrization swapped it."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def _parametrized_value(module: Module, name: str) -> Tensor:
    plist = module.parametrizations[name]
    if not _cache_depth:
        return plist()
    key = (id(module), name)
    value = _cache.get(key)
    if value is None:
        value = _cache[key] = plist()
    return value


def _inject_property(module: Module, name: str) -> None:
    def get(self):
        return _parametrized_value(self, name)

    def put(self, value):
        self.parametrizations[name].right_inverse(value)
    setattr(module.__class__, name, property(get, put))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Parametrize ``module.<tensor_name>`` (a parameter, buffer or already parametrized
    tensor) by the module ``parametrization``: see the module docstring. ``unsafe`` skips
    the checks that the parametrized tensor keeps its shape and dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:  # forward and right_inverse must map module.<name>'s space to itself
            _check_appended(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = module.__class__
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations of ``tensor_name``: it becomes a plain parameter (or
    buffer) holding its current parametrized value (``leave_parametrized``) or its
    original; the module gets its own class back when nothing is parametrized."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            original.data = value.detach().clone()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name).detach().clone()
        wants_grad = plist.original0.requires_grad
        original = Parameter(value, wants_grad) if isinstance(plist.original0, Parameter) \
            else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_original(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module
