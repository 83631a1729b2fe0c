# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, X, U, S, V)
"""What ``torch.linalg`` builds on QR, SVD and eigh, as compositions of tgrad ops (so
differentiable to any order through them): ``pinv``, ``matrix_rank``, ``cond``, ``lstsq``,
and ``matrix_exp``, ``tensorinv``, ``tensorsolve``, ``vander``.

    pinv         V diag(1/S_i where S_i > max(atol, rtol S_1), else 0) U^H
                 (hermitian: the eigendecomposition, |L| for S); rtol defaults to
                 max(m, n) eps, or to 0 when only a positive atol is given. Its backward
                 is PyTorch's pinv_backward (in A and pinv(A) only).
    matrix_rank  the number of S_i above that same threshold.
    lstsq        'gels' (A of full rank, QR: X = R^{-1} Q^H B, or Q R^{-H} B for m < n, the
                 minimum-norm solution) and the rank-revealing 'gelsy' / 'gelsd' / 'gelss'
                 (SVD: X = pinv(A, rtol=rcond) B; on the CPU, gelsy with the default rcond
                 takes pinv = inv(A) / R^{-1} Q^H for the matrices proven of full rank,
                 _host_lapack.full_rank_pinv).
    matrix_exp   scaling and squaring: exp(A) = T(A / 2^s)^(2^s), T the degree-18 Taylor
                 polynomial (Horner), s per matrix such that ||A / 2^s||_1 <= 1/2 (the
                 remainder is below 1e-20 relative).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import no_grad
from tgrad.linalg import _host_lapack
from tgrad.linalg._jacobi import eigh, svd, svdvals
from tgrad.linalg._lu import inv, inv_ex, solve
from tgrad.linalg._qr import check_linalg_dtype, qr
from tgrad.linalg._triangular import _torch_dtype_name, host_loop, solve_triangular
from tgrad.ops import elementwise as ew
from tgrad.ops._common import broadcast_or_raise, int_tuple, require_tensor, wrap
from tgrad.ops.creation import eye, ones, zeros
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["pinv", "matrix_rank", "cond", "lstsq", "matrix_exp", "tensorinv", "tensorsolve",
           "vander"]


def _matrix_checks(op: str, A: Tensor) -> None:
    require_tensor(op, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    check_linalg_dtype(op, A.dtype)


def _threshold(S: Tensor, atol, rtol, m: int, n: int) -> Tensor:
    """max(atol, rtol * S_max) per matrix, (..., 1), with PyTorch's defaults (a tensor atol
    or rtol has the batch shape)."""
    if rtol is None:
        default = max(m, n) * dtypes.finfo(S.dtype).eps
        if isinstance(atol, Tensor):
            rtol = ew.where(atol > 0, 0.0, default)
        else:
            rtol = 0.0 if atol is not None and atol > 0 else default

    def col(t):
        return t.unsqueeze(-1) if isinstance(t, Tensor) else t
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else zeros(
        S.shape[:-1] + (1,), dtype=S.dtype, device=S.device)
    tol = smax * col(rtol)
    return tol if atol is None else ew.where(tol > col(atol), tol, col(atol))


def _pinv_value(A: Tensor, atol, rtol, hermitian: bool) -> Tensor:
    m, n = A.shape[-2], A.shape[-1]
    if hermitian:
        L, V = eigh(A)
        S = L.abs()
        tol = _threshold(S, atol, rtol, m, n)
        inv_l = ew.where(S > tol, 1.0 / ew.where(S > tol, L, 1.0), 0.0)
        return (V * inv_l.unsqueeze(-2)) @ V.mH
    U, S, Vh = svd(A, full_matrices=False)
    tol = _threshold(S, atol, rtol, m, n)
    inv_s = ew.where(S > tol, 1.0 / ew.where(S > tol, S, 1.0), 0.0)
    return (Vh.mH * inv_s.unsqueeze(-2)) @ U.mH


class LinalgPinv(Function):
    """P = pinv(A) from the SVD (or eigh); backward: PyTorch's pinv_backward, written with
    A and P only (no 1/(S_i^2 - S_j^2) terms, so repeated singular values are fine):
        m <= n: K = g^H P;  gA = -(P K)^H + K P^H - A P K P^H + P^H P (g^H - K A)
        m > n:  K = P g^H;  gA = -(K P)^H + (g^H - A K) P P^H + P^H K - P^H K P A
    (the ^H of that expression is what is returned, as PyTorch's)."""

    node_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian, value=None):
        # value: the pinv already computed on the host (lstsq's full-rank path), a NumPy
        # array; the backward reads A and P only, so it is the same node
        P = _pinv_value(A, atol, rtol, hermitian) if value is None else wrap(value, A.device)
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        m, n = A.shape[-2], A.shape[-1]
        Ph, gh = P.mH, g.mH
        if m <= n:
            K = gh @ P
            KPh = K @ Ph
            gA = -(P @ K).mH + KPh - (A @ P) @ KPh + (Ph @ P) @ (gh - K @ A)
        else:
            K = P @ gh
            PhK = Ph @ K
            gA = -(K @ P).mH + (gh - A @ K) @ P @ Ph + PhK - PhK @ P @ A
        return (gA,) + (None,) * (len(ctx.needs_input_grad) - 1)


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None,
         rtol=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (n, m) of A (..., m, n), from its SVD (hermitian:
    its eigendecomposition, reading the lower triangle); singular values at or below
    max(atol, rtol * largest) count as zero. Differentiable where the rank is constant.
    ``rcond`` (PyTorch's deprecated overload, also positional, with ``hermitian`` then
    positional too): rtol=rcond, atol=0; it cannot be combined with atol or rtol."""
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg_pinv(): received an invalid combination of arguments: "
                            "rcond (the deprecated overload) cannot be combined with atol or "
                            "rtol; pass rtol= (and atol=) alone")
        atol, rtol = 0.0, rcond
    _matrix_checks("linalg.pinv", A)
    return LinalgPinv.apply(A, atol, rtol, bool(hermitian))


@autocast_policy(None, cpu="fp32")
def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None,
                rtol=None) -> Tensor:
    """The number of singular values (hermitian: |eigenvalues|) above max(atol, rtol *
    largest), int64 per matrix. ``tol`` (PyTorch's deprecated overload, also positional):
    an absolute tolerance alone, i.e. atol=tol, rtol=0; it cannot be combined with atol or
    rtol."""
    op = "linalg.matrix_rank"
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError(f"{op}() received an invalid combination of arguments: tol "
                            f"cannot be given with atol or rtol; pass atol=tol (rtol=0) "
                            f"instead")
        atol, rtol = tol, 0.0
    _matrix_checks(op, A)
    m, n = A.shape[-2], A.shape[-1]
    with no_grad():
        S = eigh(A).eigenvalues.abs() if hermitian else svdvals(A)
        return (S > _threshold(S, atol, rtol, m, n)).sum(-1)


@autocast_policy(None, cpu="fp32")
def cond(A: Tensor, p=None) -> Tensor:
    """The condition number in the norm ``p``: None / 2 (S_max / S_min), -2 (S_min /
    S_max), or 'fro', 'nuc', 1, -1, inf, -inf (norm(A) norm(A^{-1}), square A only; inf
    for a singular A). Real (float64 for complex128 A)."""
    op = "linalg.cond"
    _matrix_checks(op, A)
    from tgrad.linalg._norms import matrix_norm
    if A.shape[-1] == 0 or A.shape[-2] == 0:  # empty matrices: 0, as PyTorch
        return zeros(A.shape[:-2], dtype=dtypes.to_real(A.dtype), device=A.device)
    if p is None or (p in (2, -2) and not isinstance(p, bool)):
        S = svdvals(A)
        big, small = S.amax(-1), S.amin(-1)
        return big / small if p != -2 else small / big
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf) or isinstance(p, bool):
        raise RuntimeError(f"{op} got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    inverse, info = inv_ex(A)  # a singular A: inf, as PyTorch
    singular = (info > 0).unsqueeze(-1).unsqueeze(-1)
    inverse = ew.where(singular, 0.0, inverse)  # (its NaNs would stop the 'nuc' norm's SVD)
    return ew.where(info > 0, math.inf, matrix_norm(A, p) * matrix_norm(inverse, p))


# ----------------------------------------------------------------------------------- lstsq
LstsqResult = return_types.linalg_lstsq  # PyTorch's torch.return_types.linalg_lstsq


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@autocast_policy(None, cpu="fp32")
def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None
          ) -> LstsqResult:
    """X minimising ||A X - B||_F, batched (batch dims broadcast; B may be a batch of
    vectors (..., m)). ``driver``: 'gels' (QR, A of full rank; the default and the only
    one on cuda, as in PyTorch) or 'gelsy' (the CPU default) / 'gelsd' / 'gelss' (SVD with
    the effective rank: singular values at or below rcond * largest, default max(m, n) eps,
    count as zero). Returns (solution, residuals: the squared residual norm per column when
    m > n and every A has full rank with 'gels'/'gelsd'/'gelss', else empty (always with
    'gelsy', the CPU default, as PyTorch); rank: 'gelsy'/'gelsd'/'gelss', else empty;
    singular_values: 'gelsd'/'gelss', else empty). Complex A and B (CPU): every driver, as
    PyTorch's; residuals and singular values are real."""
    op = "torch.linalg.lstsq"
    require_tensor(op, A, "A")
    require_tensor(op, B, "B", 2)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if not 0 <= A.ndim - B.ndim <= 1:  # (B's batch dims broadcast, but not past A's)
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1 (got A {list(A.shape)} and B "
                           f"{list(B.shape)})")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_torch_dtype_name(A.dtype)} and other's dtype "
                           f"{_torch_dtype_name(B.dtype)}")
    if A.device is not B.device:
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found "
                           f"at least two devices, {A.device} and {B.device}!")
    check_linalg_dtype(op, A.dtype)
    cuda = A.device.type == "cuda"
    if driver is None:
        driver = "gels" if cuda else "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss)")
    if cuda and driver != "gels":
        raise RuntimeError(f"{op}: `driver` other than `gels` is not supported on CUDA")
    m, n = A.shape[-2], A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        B = B.unsqueeze(-1)
    if B.shape[-2] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2) "
                           f"(got A {list(A.shape)} and B {list(B.shape)})")
    batch = broadcast_or_raise(op, A.shape[:-2], B.shape[:-2])  # (NumPy's ValueError leaked)
    A = A.expand(*batch, m, n)
    B = B.expand(*batch, m, B.shape[-1])
    empty = zeros((0,), dtype=dtypes.to_real(A.dtype), device=A.device)  # (real, as S)
    rank = zeros((0,), dtype=dtypes.int64, device=A.device)
    full_rank = True
    if driver == "gels":
        if m >= n:
            Q, R = qr(A)
            X = solve_triangular(R, Q.mH @ B, upper=True)
        else:  # the minimum-norm solution: A^H = Q R, X = Q R^{-H} B
            Q, R = qr(A.mH)
            X = Q @ solve_triangular(R.mH, B, upper=False)
        S = empty
    else:  # the minimum-norm solution pinv(A) B (pinv's backward: no 1/(S_i - S_j) terms)
        r = max(m, n) * dtypes.finfo(A.dtype).eps if rcond is None or rcond < 0 else rcond
        quick = None
        if driver == "gelsy" and rcond is None and host_loop(A):  # no S to return: a
            # full rank proven without an SVD (_host_lapack.full_rank_pinv)
            quick = _host_lapack.full_rank_pinv(A.detach().numpy(), r)
        if quick is not None:
            P, rank = _pinv_and_rank(A.detach(), r, *quick)
            X = LinalgPinv.apply(A, None, r, False, P) @ B
        else:
            X = pinv(A, rtol=r) @ B
            with no_grad():
                S = svdvals(A)
                keep = S > S.amax(-1, keepdim=True) * r if S.shape[-1] else S > 0
                rank = keep.sum(-1)
        full_rank = bool((rank == min(m, n)).all())
        if driver == "gelsy":
            S = empty
    residuals = empty
    if m > n and full_rank and driver != "gelsy":  # (PyTorch's gelsy gives none)
        res = A @ X - B
        residuals = (res.abs() if res.dtype.is_complex else res).square().sum(-2)
    if vector:
        X = X.squeeze(-1)
    return LstsqResult(X, residuals, rank, S)


def _pinv_and_rank(A: Tensor, r: float, p, ok) -> tuple:
    """(P, rank), NumPy arrays, of lstsq's gelsy path on the CPU: p, ok from
    ``_host_lapack.full_rank_pinv`` (a proven full rank: min(m, n)); the other matrices'
    pinv(A, rtol=r) and rank from their SVD, as the SVD path computes them."""
    m, n = A.shape[-2], A.shape[-1]
    rank = np.full(ok.shape, min(m, n), dtype=np.int64)
    if not ok.all():
        with no_grad():
            rest = wrap(A.numpy()[~ok], A.device)
            p = p.copy()
            p[~ok] = pinv(rest, rtol=r).numpy()
            S = svdvals(rest)
            rank[~ok] = (S > S.amax(-1, keepdim=True) * r).sum(-1).numpy()
    return p, wrap(rank, A.device)


# ------------------------------------------------------------------------------ matrix_exp
_TAYLOR_DEGREE = 18


@autocast_policy(None, cpu="native")  # CPU: one kernel, not listed
def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) of square matrices, batched: scaling and squaring with a Taylor polynomial
    (module docstring), one LinalgMatrixExpBackward0 node (PyTorch's backward: the exp of a
    (2n, 2n) block matrix). float16 / bfloat16 (which PyTorch takes too) compute in
    float32 and round once."""
    op = "linalg.matrix_exp"
    require_tensor(op, A, "A")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: Expected a tensor with 2 or more dimensions of shape "
                           f"(*, n, n), but got {list(A.shape)}")
    if A.dtype in (dtypes.float16, dtypes.bfloat16):
        return matrix_exp(A.float()).to(A.dtype)
    check_linalg_dtype(op, A.dtype)
    return _MatrixExp.apply(A)  # (one node, PyTorch's LinalgMatrixExpBackward0)


class _MatrixExp(Function):
    """Y = exp(A) of (..., n, n) matrices: one node, PyTorch's LinalgMatrixExpBackward0
    (edge A). The forward is _taylor_exp. Backward (PyTorch's matrix_exp differential,
    the Fréchet derivative's adjoint): with M = [[A^H, G], [0, A^H]] (..., 2n, 2n),
        dA = exp(M)[..., :n, n:]
    built of cat / narrow and this node again, so it differentiates again."""

    name = "linalg_matrix_exp"
    node_name = "LinalgMatrixExpBackward0"
    saved_attributes = {"_saved_self": 0}

    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        return _taylor_exp(A)

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        Ah = A.mH
        top = cat([Ah, g], -1)
        bottom = cat([zeros(Ah.shape, dtype=g.dtype, device=g.device), Ah], -1)
        return _MatrixExp.apply(cat([top, bottom], -2)).narrow(-2, 0, n).narrow(-1, n, n)


def _taylor_exp(A: Tensor) -> Tensor:
    """exp(A) by scaling and squaring with a degree-18 Taylor polynomial (Horner), per
    matrix as many squarings as its 1-norm asks (module docstring); a new tensor."""
    n = A.shape[-1]
    if n == 0:
        return A.clone()
    with no_grad():  # the number of squarings per matrix (a piecewise constant choice)
        norm1 = A.detach().abs().sum(-2).amax(-1)  # (...,)
        steps = ew.ceil(ew.log2(ew.where(norm1 > 0.5, norm1, 0.5) / 0.5))
        steps = ew.where(ew.isfinite(steps), steps, 0.0)
        most = int(steps.amax().item()) if steps.numel() else 0
    scaled = A / ew.pow(2.0, steps).unsqueeze(-1).unsqueeze(-1)
    if host_loop(scaled):  # CPU: the same steps on the NumPy arrays (the same bits)
        return wrap(_taylor_host(scaled.detach().numpy(), steps.numpy(), most), A.device)
    identity = eye(n, dtype=A.dtype, device=A.device)
    X = identity + scaled / _TAYLOR_DEGREE
    for k in range(_TAYLOR_DEGREE - 1, 0, -1):  # Horner: I + M/k (I + M/(k+1) (...))
        X = identity + (scaled @ X) / k
    for i in range(most):
        squared = X @ X
        X = ew.where((steps > i).unsqueeze(-1).unsqueeze(-1), squared, X)
    return X


def _taylor_host(s: np.ndarray, steps: np.ndarray, most: int) -> np.ndarray:
    """``_taylor_exp``'s Horner steps and squarings on NumPy arrays: s (..., n, n) the
    scaled matrices, steps (...,) their numbers of squarings, ``most`` the largest. The
    same operations as the tgrad ops (np.matmul, a division by the number k in s's dtype,
    the identity added), without one autograd dispatch per op; returns a new array."""
    identity = np.eye(s.shape[-1], dtype=s.dtype)
    k_as = s.dtype.type  # (a Python number operand: the tensor's scalar type)
    with np.errstate(all="ignore"):  # (NaN / inf propagate silently, as the tgrad ops)
        X = identity + s / k_as(_TAYLOR_DEGREE)
        for k in range(_TAYLOR_DEGREE - 1, 0, -1):  # Horner: I + M/k (I + M/(k+1) (...))
            X = identity + np.matmul(s, X) / k_as(k)
        for i in range(most):
            X = np.where((steps > i)[..., None, None], np.matmul(X, X), X)
    return X


# -------------------------------------------------------------------- tensorinv / tensorsolve
@autocast_policy(None, cpu="fp32")
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a matrix (prod(shape[:ind]) x prod(shape[ind:])), shaped
    shape[ind:] + shape[:ind], so that tensordot(tensorinv(A), A, ind) is the identity."""
    op = "linalg.tensorinv"
    require_tensor(op, A, "A")
    if ind <= 0:
        raise RuntimeError(f"{op}: Expected a strictly positive integer for 'ind', but got "
                           f"{ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"{op}: Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{math.prod(cols)} != {math.prod(rows)}")
    return inv(A.reshape(math.prod(rows), math.prod(cols))).reshape(tuple(cols) + tuple(rows))


@autocast_policy(None, cpu="fp32")
def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: A's dims are first B's shape, then X's (``dims``
    of A are moved to the end first)."""
    op = "linalg.tensorsolve"
    require_tensor(op, A, "A")
    require_tensor(op, B, "B", 2)
    if dims is not None:  # PyTorch's checks (d % A.ndim wrapped an out-of-range dim)
        if not isinstance(dims, (tuple, list)):
            raise TypeError(f"linalg.tensorsolve(): argument 'dims' must be tuple of ints, not "
                            f"{type(dims).__name__}")
        dims = [_wrap_dim(d, A.ndim, op) for d in int_tuple(op, "dims", dims)]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    rest = tuple(A.shape[B.ndim:])
    # PyTorch checks sizes only: A's leading dims need not be B's shape (A (2, 3, 6) with B
    # (3, 2) is a 6 x 6 system)
    if math.prod(A.shape[:B.ndim]) != B.numel() or math.prod(rest) != B.numel():
        raise RuntimeError(f"{op}: Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {math.prod(rest)} != {B.numel()}")
    return solve(A.reshape(B.numel(), math.prod(rest)), B.reshape(-1)).reshape(rest)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix (..., n, N) of x (..., n) (a 0-d x is one element): column j
    is x^j (increasing powers, unlike tgrad.vander), N > 1 columns (default n)."""
    op = "linalg.vander"
    require_tensor(op, x, "x")
    if x.dtype is dtypes.bool_:
        raise RuntimeError(f"{op} supports floating point, complex, and integer tensors, but "
                           f"got Bool")
    if x.ndim == 0:
        x = x.unsqueeze(-1)
    n = x.shape[-1] if N is None else int(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return cat([ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device), powers], -1)
