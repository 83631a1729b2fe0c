"""``tgrad.nn.utils.prune``, PyTorch's pruning: a parameter ``name`` becomes
``name + "_orig"`` (the parameter) times a buffer ``name + "_mask"``, recomputed by a
forward pre-hook into the plain attribute ``module.<name>``.

    identity             mask of ones
    random_unstructured  zero ``amount`` random entries
    l1_unstructured      zero the ``amount`` entries of smallest |importance| (the weight)
    random_structured    zero ``amount`` random channels along ``dim``
    ln_structured        zero the ``amount`` channels along ``dim`` of smallest L_n norm
    global_unstructured  l1 (or random) over several parameters at once
    custom_from_mask     a given mask

``amount``: a fraction in [0, 1] (rounded count) or a number of entries/channels. Pruning a
pruned parameter again acts on what is left (unstructured: the entries still kept;
structured: the channels not yet all zero) and multiplies the masks. ``remove`` makes it
permanent (``name`` a parameter again, orig * mask); ``is_pruned`` says whether any is.
"""

from __future__ import annotations

import numbers
from typing import Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.modules.module import Module
from tgrad.ops.creation import ones_like, rand
from tgrad.tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask",
           "identity", "random_unstructured", "l1_unstructured", "random_structured",
           "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _check_amount(amount) -> None:
    ok = isinstance(amount, numbers.Real) and not isinstance(amount, bool) and (
        (isinstance(amount, numbers.Integral) and amount >= 0)
        or (not isinstance(amount, numbers.Integral) and 0.0 <= float(amount) <= 1.0))
    if not ok:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _count(amount, size: int) -> int:
    n = int(amount) if isinstance(amount, numbers.Integral) else round(amount * size)
    if n > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={size}")
    return n


class BasePruningMethod:
    """A pruning method: ``compute_mask(t, default_mask)`` gives the new mask; as a forward
    pre-hook it sets ``module.<name>`` = orig * mask."""

    PRUNING_TYPE = "unstructured"
    _tensor_name: str

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        raise NotImplementedError

    def apply_mask(self, module: Module) -> Tensor:
        name = self._tensor_name
        return getattr(module, name + "_orig") * getattr(module, name + "_mask")

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with the mask this method computes applied (no module involved)."""
        scores = t if importance_scores is None else importance_scores
        mask = ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, mask)

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)``; returns the method
        (a PruningContainer when the parameter was pruned before)."""
        method = cls(*args, **kwargs)
        method._tensor_name = name
        key, old = _find_hook(module, name)
        if old is None:
            orig = getattr(module, name)
            if not isinstance(orig, Tensor):
                raise AttributeError(f"Parameter '{name}' of module {module} has to be pruned "
                                     f"but it is not a Tensor")
            if name not in module._parameters:  # a buffer: PyTorch's TypeError (and no KeyError)
                raise TypeError(f"prune: '{name}' of {type(module).__name__} is not a "
                                f"parameter (torch.nn.Parameter required); only parameters "
                                f"can be pruned")
            default_mask = ones_like(orig)
        else:
            current = getattr(module, name)  # orig * mask: what the new method scores
            orig = getattr(module, name + "_orig")
            default_mask = getattr(module, name + "_mask").detach().clone()
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        if importance_scores is not None:
            scores = importance_scores
        else:  # PyTorch's: the parameter as it is now (pruned entries are zeros)
            scores = orig if old is None else current
        if tuple(scores.shape) != tuple(orig.shape):
            raise ValueError(f"importance_scores should have the same shape as parameter "
                             f"{name} of {module}")
        with no_grad():
            mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        if old is None:
            del module._parameters[name]
            module.register_parameter(name + "_orig", orig)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        else:
            module._buffers[name + "_mask"] = mask
            module._forward_pre_hooks[key] = method
            setattr(module, name, method.apply_mask(module))
        return method

    def remove(self, module: Module) -> None:
        name = self._tensor_name
        with no_grad():
            weight = self.apply_mask(module)
        delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        del module._buffers[name + "_mask"]
        orig.data = weight.detach().clone()
        module.register_parameter(name, orig)


class PruningContainer(BasePruningMethod):
    """Successive prunings of one parameter: each new method acts on what the previous ones
    left (module docstring)."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple = ()
        for m in methods:
            self.add_pruning_method(m)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not hasattr(self, "_tensor_name"):
            self._tensor_name = method._tensor_name
        elif method._tensor_name != self._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __getitem__(self, i):
        return self._pruning_methods[i]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(t.dtype).clone()
        if method.PRUNING_TYPE == "global":
            return method.compute_mask(t, default_mask)
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            new_mask[keep] = method.compute_mask(t[keep], default_mask[keep]).to(new_mask.dtype)
            return new_mask
        dim = method.dim if method.dim >= 0 else method.dim + t.ndim
        others = tuple(d for d in range(t.ndim) if d != dim)
        alive = (default_mask.sum(others) != 0).nonzero().reshape(-1)  # channels left
        part = method.compute_mask(t.index_select(dim, alive),
                                   default_mask.index_select(dim, alive))
        return new_mask.index_copy(dim, alive, part.to(new_mask.dtype))


class Identity(BasePruningMethod):
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask


class _Unstructured(BasePruningMethod):
    """Zero ``amount`` entries: the ``_pick(t, n)`` flat indices."""

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n = _count(self.amount, t.numel())
        mask = default_mask.clone().contiguous()
        if n:
            mask.view(-1)[self._pick(t, n)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    @staticmethod
    def _pick(t: Tensor, n: int) -> Tensor:
        return rand(t.shape, device=t.device).reshape(-1).topk(n).indices


class L1Unstructured(_Unstructured):
    @staticmethod
    def _pick(t: Tensor, n: int) -> Tensor:
        return t.abs().reshape(-1).topk(n, largest=False).indices


def _structured_dim(t: Tensor, dim: int) -> int:
    """PyTorch's checks of structured pruning: a multidimensional tensor and a dim in
    range (negative counts from the end)."""
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional "
                         f"tensors. Found tensor of shape {tuple(t.shape)} with {t.ndim} dims")
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {list(t.shape)}")
    return dim % t.ndim


def _channel_mask(keep_channels: Tensor, t: Tensor, dim: int, default_mask: Tensor) -> Tensor:
    shape = [1] * t.ndim
    shape[dim] = t.shape[dim]
    return default_mask * keep_channels.reshape(shape).to(default_mask.dtype)


class RandomStructured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        dim = _structured_dim(t, self.dim)
        size = t.shape[dim]
        n = _count(self.amount, size)
        if n == 0:
            return default_mask.clone()
        prob = rand(size, device=t.device)
        threshold = prob.kthvalue(n).values
        return _channel_mask(prob > threshold, t, dim, default_mask)


class LnStructured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        dim = _structured_dim(t, self.dim)
        size = t.shape[dim]
        prune_n = _count(self.amount, size)
        if prune_n == 0:
            return default_mask.clone()
        others = tuple(d for d in range(t.ndim) if d != dim)
        norms = t.norm(p=self.n, dim=others) if others else t.abs()
        from tgrad.ops.creation import zeros
        keep = zeros(size, dtype=default_mask.dtype, device=t.device)
        keep[norms.topk(size - prune_n).indices] = 1
        return _channel_mask(keep, t, dim, default_mask)


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError("the mask must have the shape of the parameter")
        return default_mask * self.mask.to(default_mask.dtype)


def _find_hook(module: Module, name: str) -> tuple:
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            return key, hook
    return None, None


def identity(module: Module, name: str) -> Module:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount, importance_scores=None) -> Module:
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int,
                  importance_scores=None) -> Module:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable, pruning_method, importance_scores=None,
                        **kwargs) -> None:
    """Prune the (module, name) pairs together: ``pruning_method`` (L1Unstructured or
    RandomUnstructured, with its ``amount``) picks over all their entries at once."""
    params = list(parameters)
    if not params:
        raise TypeError("global_unstructured(): parameters must be a non-empty iterable of "
                        "(module, name) pairs")
    if getattr(pruning_method, "PRUNING_TYPE", None) != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type "
                        f"{getattr(pruning_method, 'PRUNING_TYPE', None)}")
    importance_scores = importance_scores or {}
    from tgrad.ops.shape import cat
    scores, masks = [], []
    for module, name in params:
        current = getattr(module, name + "_orig", None)
        if current is None:
            current = getattr(module, name)
        scores.append(importance_scores.get((module, name), current).detach().reshape(-1))
        mask = getattr(module, name + "_mask", None)
        masks.append(ones_like(current).reshape(-1) if mask is None else mask.reshape(-1))
    flat_scores, flat_mask = cat(scores), cat(masks)
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    container.add_pruning_method(method)
    with no_grad():
        final = container.compute_mask(flat_scores, flat_mask)
    start = 0
    for (module, name), s in zip(params, scores):
        n = s.numel()
        shape = getattr(module, name + "_orig", getattr(module, name)).shape
        custom_from_mask(module, name, final[start:start + n].reshape(shape))
        start += n


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: a parameter again, orig * mask."""
    key, hook = _find_hook(module, name)
    if hook is None:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                         f"pruning can be removed")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module


def is_pruned(module: Module) -> bool:
    """Whether any submodule of ``module`` has a pruned parameter."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules() for h in m._forward_pre_hooks.values())

