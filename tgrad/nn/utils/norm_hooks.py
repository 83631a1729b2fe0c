"""PyTorch's older hook-based ``nn.utils.weight_norm`` / ``remove_weight_norm`` and
``nn.utils.spectral_norm`` / ``remove_spectral_norm`` (the parametrizations module has the
newer forms). A forward pre-hook recomputes ``module.<name>`` (a plain tensor attribute)
before every call:

    weight_norm:    weight = <name>_v * <name>_g / ||<name>_v|| (norm over every dim but
                    ``dim``; None / -1: all), parameters <name>_g and <name>_v.
    spectral_norm:  weight = <name>_orig / sigma, sigma = u^H W_mat v with buffers <name>_u,
                    <name>_v (random unit vectors at first), refined in training mode by
                    ``n_power_iterations`` steps (v first, then u, as PyTorch's), without
                    gradient. A complex weight uses W^H and conj(u), so sigma is its
                    spectral norm (PyTorch's hook uses W^T and u^T there, which is not).
"""

from __future__ import annotations

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn import functional as F
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.nn.utils.parametrizations import _norm_except_dim, check_norm_dim, weight_matrix
from tgrad.tensor import Tensor

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def _find(module: Module, kind: type, name: str):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key, hook
    return None, None


class WeightNorm:
    """The forward pre-hook of ``weight_norm``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into a magnitude <name>_g and a direction <name>_v."""
    if _find(module, WeightNorm, name)[1] is not None:
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                           f"{name}")
    weight = getattr(module, name)
    dim = check_norm_dim(weight, dim)
    fn = WeightNorm(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Put ``module.<name>`` back as one parameter (its current value)."""
    key, fn = _find(module, WeightNorm, name)
    if fn is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    with no_grad():
        weight = fn.compute_weight(module)
    del module._forward_pre_hooks[key]
    delattr(module, name)
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    module.register_parameter(name, Parameter(weight.detach()))
    return module


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = \
            name, n_power_iterations, dim, eps

    def matrix(self, weight: Tensor) -> Tensor:
        return weight_matrix(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            with no_grad():  # the buffers updated in place (PyTorch's normalize(out=u)), so
                m = mat.detach()  # a state_dict or a reference taken earlier follows them
                m_h = m.mH if m.dtype.is_complex else m.mT
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(m_h @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(m @ v, dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        if u.dtype.is_complex:  # sigma = u^H W v
            u = u.conj()
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm before every call (module docstring);
    ``dim`` defaults to 1 for the transposed convolutions and 0 otherwise."""
    if _find(module, SpectralNorm, name)[1] is not None:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                           f"{name}")
    if dim is None:
        from tgrad.nn.modules import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    weight = getattr(module, name)
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    with no_grad():
        mat = fn.matrix(weight)
        h, w = mat.shape
        from tgrad.ops.creation import randn  # complex too (normal_ refuses complex)
        u = F.normalize(randn(h, dtype=mat.dtype, device=mat.device), dim=0, eps=eps)
        v = F.normalize(randn(w, dtype=mat.dtype, device=mat.device), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Put ``module.<name>`` back as one parameter (the current normalised value)."""
    key, fn = _find(module, SpectralNorm, name)
    if fn is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    with no_grad():
        weight = fn.compute_weight(module, do_power_iteration=False)
    del module._forward_pre_hooks[key]
    delattr(module, name)
    del module._parameters[name + "_orig"]
    del module._buffers[name + "_u"], module._buffers[name + "_v"]
    module.register_parameter(name, Parameter(weight.detach()))
    return module
