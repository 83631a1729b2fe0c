"""Containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable as _Iterable
from collections.abc import Mapping
from typing import Any, Iterable, Iterator

from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.ops.torch_utils import typename
from tgrad.tensor import Tensor


def _abs_index(n: int, idx) -> int:
    """``idx`` (an int, possibly negative) as a position in [0, n), or IndexError."""
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx + n if idx < 0 else idx


def _renumber(mod: Module) -> None:
    """Rename the submodules "0", "1", ... in order (after a deletion), as PyTorch."""
    mod.__dict__["_modules"] = OrderedDict(
        (str(i), m) for i, m in enumerate(mod._modules.values()))


def _delete_modules(mod: Module, idx) -> None:
    keys = list(mod._modules)
    doomed = keys[idx] if isinstance(idx, slice) else [keys[_abs_index(len(keys), idx)]]
    for k in doomed:
        del mod._modules[k]
    _renumber(mod)


class Sequential(Module):
    """Calls its modules in order, feeding each output to the next. Built from modules
    (named "0", "1", ...) or from one OrderedDict of name -> module."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):  # noqa: A002
        for m in self._modules.values():
            input = m(input)  # noqa: A001
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_abs_index(len(keys), idx)]]

    def __setitem__(self, idx: int, module: Module) -> None:
        keys = list(self._modules)
        setattr(self, keys[_abs_index(len(keys), idx)], module)

    def __delitem__(self, idx) -> None:
        """Delete one module or a slice; the rest are renamed "0", "1", ... (PyTorch)."""
        _delete_modules(self, idx)

    def pop(self, key) -> Module:
        v = self[key]
        del self[key]
        return v

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index`` (-len <= index <= len); assumes the
        names "0", "1", ... as PyTorch does."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for m in sequential:
            self.append(m)
        return self

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return self.extend(list(other))

    def __mul__(self, other: int) -> Sequential:
        """A new Sequential of the modules repeated ``other`` times (the same module
        objects, not copies, as PyTorch: the repeats share their parameters)."""
        _check_factor(self, other)
        combined = Sequential()
        for i, m in enumerate(list(self) * other):
            combined.add_module(str(i), m)
        return combined

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]  # (PyTorch's)

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:
        """Append the modules ``other - 1`` more times, in place (the same objects)."""
        _check_factor(self, other)
        mods = list(self._modules.values())
        n = len(mods)
        for i, m in enumerate(mods * (other - 1)):
            self.add_module(str(n + i), m)
        return self


def _check_factor(seq: Sequential, other) -> None:
    if not isinstance(other, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(other)}")
    if other <= 0:
        raise ValueError(f"Non-positive multiplication factor {other} for {type(seq)}")


class ModuleList(Module):
    """A list of modules whose parameters are registered (named "0", "1", ...)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, _Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``, with list.insert's rules for a
        negative or too large index (PyTorch's own handles neither)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        mods = list(self._modules.values())
        mods.insert(operator.index(index), module)
        self.__dict__["_modules"] = OrderedDict((str(i), m) for i, m in enumerate(mods))

    def pop(self, key) -> Module:
        """Remove and return the module at ``key`` (an index or a slice); the rest are
        renamed "0", "1", ..."""
        v = self[key]
        del self[key]
        return v

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        keys = list(self._modules)
        return self._modules[keys[_abs_index(len(keys), idx)]]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(len(self), idx)), module)

    def __delitem__(self, idx) -> None:
        """Delete one module or a slice; the rest are renamed "0", "1", ... (PyTorch)."""
        _delete_modules(self, idx)

    def __repr__(self) -> str:
        """PyTorch's: runs of consecutive children with equal reprs print once, as
        "(i-j): n x repr"."""
        blocks: list = []  # [first index, last index, repr]
        for i, m in enumerate(self):
            r = repr(m)
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        if not blocks:
            return type(self).__name__ + "()"
        lines = [(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}").replace(
            "\n", "\n  ") for a, b, r in blocks]
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]  # (PyTorch's)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(list(self) + list(other))


class ModuleDict(Module):
    """An ordered dict of modules whose parameters are registered under their keys."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        """Add ``modules``: a mapping, or an iterable of (key, module) pairs (PyTorch's
        errors for anything else)."""
        if not isinstance(modules, _Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for key, module in _key_value_pairs("ModuleDict", modules):
            self[key] = module


def _key_value_pairs(owner: str, pairs):
    """The (key, value) pairs of an update() sequence, with PyTorch's errors for an element
    that is not an iterable of length 2."""
    for j, pair in enumerate(pairs):
        if not isinstance(pair, _Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; "
                            f"is{type(pair).__name__}")
        if len(pair) != 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(pair)}; "
                             f"2 is required")
        yield pair[0], pair[1]


def _as_parameter(value: Any) -> Any:
    """Tensors that are not Parameters become Parameters (sharing their storage)."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value: Any, type_name: bool = False) -> str:
    """A ParameterList/ParameterDict entry as PyTorch's extra_repr shows it: the dtype, or
    (ParameterDict, ``type_name``) the tensor type's name (tgrad.FloatTensor); a GPU
    tensor's device as " (cuda:0)" (PyTorch 2.13's text)."""
    if isinstance(value, Tensor):
        size = "x".join(str(s) for s in value.shape)
        device = "" if value.device.type == "cpu" else f" ({value.device})"
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        what = typename(value) if type_name else value.dtype
        return f"{kind} containing: [{what} of size {size}{device}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters registered under the names "0", "1", ... (so parameters(),
    named_parameters(), state_dict() and to() see them). Tensors added are wrapped in
    Parameter; other objects are kept as plain attributes. Cannot be called."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(len(self), idx)))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, str(_abs_index(len(self), idx)), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Append ``value`` (a tensor becomes a Parameter named ``str(len(self))``)."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, _Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_describe(p)}" for i, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters registered under their (string) keys. Tensors added
    are wrapped in Parameter; other objects are kept as plain attributes. As PyTorch,
    ``update`` from a plain dict (and the constructor) adds its items in sorted key order,
    from an OrderedDict, a ParameterDict or (key, value) pairs in their order. Cannot be
    called."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, self._key_to_attr(key), _as_parameter(value))
        self._keys[key] = None  # after setattr, so a rejected name leaves no key behind

    def __delitem__(self, key: str) -> None:
        attr = self._key_to_attr(key)  # (checks the key's type first, as PyTorch)
        del self._keys[key]
        delattr(self, attr)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters (not copies of them)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted (key, value) pair."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add (or overwrite) entries from a mapping or an iterable of (key, value) pairs."""
        if not isinstance(parameters, _Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for k, v in parameters.items():
                self[k] = v
        elif isinstance(parameters, Mapping):
            for k, v in sorted(parameters.items()):
                self[k] = v
        else:
            for k, v in _key_value_pairs("ParameterDict", parameters):
                self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p, True)}" for k, p in self.items())

    def __call__(self, input):  # noqa: A002
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
