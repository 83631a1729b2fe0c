"""``tgrad.nn.utils.parametrizations``, as PyTorch's: ``weight_norm`` and ``spectral_norm``
registered through ``parametrize``.

    weight_norm:    weight = g v / ||v||, the norm over every dim but ``dim`` (all dims
                    for dim=None or -1, as PyTorch reads -1); originals original0 = g
                    (||weight|| per slice, shaped like weight with 1s except at ``dim``),
                    original1 = v (= weight).
    spectral_norm:  weight = W / sigma, sigma = u^T W_mat v from power iteration on
                    W_mat (``dim`` first, the rest flattened); buffers _u, _v start
                    normalised normal draws refined by 15 iterations, and each forward in
                    training mode runs ``n_power_iterations`` more (no gradient through
                    them, as PyTorch). A 1-D weight is just normalised.
"""

from __future__ import annotations

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn import functional as F
from tgrad.nn.modules.module import Module
from tgrad.nn.utils import parametrize
from tgrad.tensor import Tensor

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v: Tensor, dim: int | None) -> Tensor:
    """||v|| over every dim but ``dim`` (kept as size 1), or over all for None."""
    if dim is None:
        return v.norm()
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return v.norm(dim=dims, keepdim=True) if dims else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim: int | None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as g v / ||v|| (module docstring)."""
    weight = getattr(module, name)
    if dim == -1:  # PyTorch's norm_except_dim reads -1 as "every dim", as None
        dim = None
    elif dim is not None and dim < 0:
        dim += weight.ndim
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = mat.new_empty(h).normal_(0, 1)
            v = mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with no_grad():
            for _ in range(n):
                self._u = F.normalize(mat @ self._v, dim=0, eps=self.eps)
                self._v = F.normalize(mat.mT @ self._u, dim=0, eps=self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as W / sigma(W) (module docstring); ``dim`` defaults
    to 1 for the transposed convolutions (their output channels) and 0 otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from tgrad.nn.modules import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
