# ruff: noqa: N803, N806  (matrix notation: A, Q, X)
"""``tgrad.nn.utils.parametrizations``, as PyTorch's: ``orthogonal``, ``weight_norm`` and
``spectral_norm``, registered through ``parametrize``.

    orthogonal:     weight (n x k, or its transpose when n < k) with orthonormal columns:
                    'matrix_exp' / 'cayley' map the skew-symmetric (complex:
                    skew-Hermitian) A = X - X^H of the lower triangle of X (padded to
                    n x n) to exp(A) / (I - A/2)^{-1} (I + A/2) and keep k columns;
                    'householder' (real only) is the product of the reflectors below X's
                    diagonal (tau = 2 / (1 + |v|^2)), columns signed by int(X's
                    diagonal). Default: 'matrix_exp' for square or complex weights, else
                    'householder'. With ``use_trivialization`` (the default) the result is
                    multiplied on the left by a buffer ``base`` (the initial orthogonal
                    matrix: the weight itself when orthogonal, else the Q of its QR with
                    a positive diagonal), so the original starts at -I (a zero skew part).

    weight_norm:    weight = g v / ||v||, the norm over every dim but ``dim`` (all dims
                    for dim=None or -1, as PyTorch reads -1); originals original0 = g
                    (||weight|| per slice, shaped like weight with 1s except at ``dim``),
                    original1 = v (= weight).
    spectral_norm:  weight = W / sigma, sigma = u^H W_mat v from power iteration on
                    W_mat (``dim`` first, the rest flattened; complex W too); buffers
                    _u, _v start normalised normal draws refined by 15 iterations, and
                    each forward in training mode runs ``n_power_iterations`` more, in
                    place (no gradient through them, as PyTorch). A 1-D weight is just
                    normalised.
"""

from __future__ import annotations

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.nn import functional as F
from tgrad.nn.modules.module import Module
from tgrad.nn.utils import parametrize
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import eye, zeros
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A's QR with R's diagonal made positive (columns of Q times sgn(R_ii):
    the sign, or for complex A the phase d / |d|)."""
    from tgrad.linalg import qr
    Q, R = qr(A)
    d = R.diagonal(dim1=-2, dim2=-1)
    if d.dtype.is_complex:
        return Q * d.sgn().unsqueeze(-2)
    return Q * ew.where(d < 0, -1.0, 1.0).unsqueeze(-2)


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10 * n * dtypes.finfo(Q.dtype).eps
    eye_k = eye(k, dtype=Q.dtype, device=Q.device)
    return bool(((Q.mH @ Q - eye_k).abs() <= eps).all())


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, use_trivialization: bool) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = cat([X, zeros(X.shape[:-2] + (n, n - k), dtype=X.dtype,
                                  device=X.device)], -1)
            A = X - X.mH  # skew-symmetric (skew-Hermitian for complex X)
            if self.orthogonal_map == "matrix_exp":
                from tgrad.linalg import matrix_exp
                Q = matrix_exp(A)
            else:
                from tgrad.linalg import solve
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            from tgrad.linalg import householder_product
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).to(dtypes.int32).to(Q.dtype).unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            if tuple(Q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {tuple(Q.shape)}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transposed = n < k
            if transposed:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:  # no trivialization: invert the map itself
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the "
                        "Cayley parametrizations when use_trivialization=False.")
                from tgrad.linalg._qr import geqrf
                A, tau = geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                sign = ew.where(d < 0, -1.0, ew.where(d > 0, 1.0, 0.0))
                sign = ew.where(tau == 0, -sign, sign)  # LAPACK's "no reflection"
                A.diagonal(dim1=-2, dim2=-1).copy_(sign)
                return A.mT if transposed else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:  # complete to an n x n orthogonal matrix
                from tgrad.ops.creation import randn  # complex too (normal_ is real-only)
                extra = randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype,
                              device=Q.device)
                Q = _make_orthogonal(cat([Q, extra], -1))
            self.base = Q
            neg_id = zeros(Q_init.shape, dtype=Q_init.dtype, device=Q_init.device)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to orthonormal columns
    (rows when it is wide) through ``orthogonal_map`` (module docstring)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" \
            if weight.shape[-2] == weight.shape[-1] or weight.dtype.is_complex \
            else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    if orthogonal_map == "householder" and weight.dtype.is_complex:
        raise ValueError("The householder parametrization does not support complex tensors.")
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization), unsafe=True)
    return module


def _norm_except_dim(v: Tensor, dim: int | None) -> Tensor:
    """||v||_2 over every dim but ``dim`` (kept as size 1), or over all for None (a vector
    norm over any number of dims: PyTorch's norm_except_dim; torch.norm's 'fro' refuses
    more than two dims, so a Conv2d weight needs vector_norm)."""
    from tgrad.linalg import vector_norm
    if dim is None:
        return vector_norm(v)
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, 2, dims, keepdim=True) if dims else v.abs()


def check_norm_dim(weight: Tensor, dim: int | None) -> int | None:
    """weight_norm's ``dim``: None and -1 mean every dim (PyTorch's norm_except_dim);
    another negative dim counts from the end; out of range raises PyTorch's IndexError."""
    if dim is None or dim == -1:
        return None
    n = weight.ndim
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                         f"{n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as the matrix spectral norms work on: ``dim`` first, the rest flattened."""
    if dim != 0:
        weight = weight.movedim(dim, 0)
    return weight.reshape(weight.shape[0], -1)


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
    dim = check_norm_dim(getattr(module, name), dim)
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs) -> None:
        # A state dict of the old hook-based nn.utils.weight_norm (<name>_g, <name>_v) loads
        # into this form as its originals (g, v), as PyTorch's pre-hook renames them
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
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
            # complex weights: complex normal draws (normal_ takes floating dtypes only)
            from tgrad.ops.creation import randn
            u = randn(h, dtype=mat.dtype, device=mat.device)
            v = randn(w, dtype=mat.dtype, device=mat.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return weight_matrix(weight, self.dim)

    def _power_method(self, mat: Tensor, n: int) -> None:
        # u <- W v / ||W v||, v <- W^H u / ||W^H u||, written into the buffers in place
        # (as PyTorch's out=, so tensors taken from state_dict() follow them)
        with no_grad():
            mat_h = mat.mH if mat.dtype.is_complex else mat.mT
            for _ in range(n):
                self._u.copy_(F.normalize(mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mat_h @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        if u.dtype.is_complex:
            u = u.conj()
        sigma = (u * (mat @ v)).sum()  # vdot(u, W v) = u^H W v
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
