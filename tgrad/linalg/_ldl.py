# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, LD)
"""LDL^T of real or complex symmetric matrices (LDL^H of Hermitian ones with
``hermitian=True``) with Bunch-Kaufman pivoting: ``ldl_factor`` / ``ldl_factor_ex`` and
``ldl_solve`` in PyTorch's format (LAPACK's sytrf / sytrs, or hetrf / hetrs for complex
with ``hermitian=True``, uplo='L'), batched over leading dims.

    A = L D L^T,  L = P(1) L(1) P(2) L(2) ...  (k up in steps s = 1 or 2, per D's block)
    P(k) swaps rows/columns k + s - 1 and |pivots[k]| (1-based) of the trailing A(k:, k:)
    only (earlier columns of L are not permuted), L(k) is the identity with column(s) k of
    LD below the block; D is block diagonal, 1x1 and 2x2 blocks on LD's diagonal (a 2x2
    block's off-diagonal entry at LD[k + 1, k]). pivots[k] > 0: a 1x1 block; a pair of
    equal negative entries: a 2x2 block. LD's strict upper triangle is 0; only A's lower
    triangle is read.

The pivot choice is dsytf2's (alpha = (1 + sqrt(17)) / 8): column k's largest
off-diagonal |entry| colmax in row imax; 1x1 without interchange if |a_kk| >= alpha
colmax (or >= alpha colmax^2 / rowmax, rowmax the largest off-diagonal |entry| of row
imax), 1x1 with imax if |a_imax,imax| >= alpha rowmax, else the 2x2 block (k, imax). A zero
column (colmax = |a_kk| = 0) is left as it is and its 1-based index is ``info`` (the
first such k): D is singular, the factorisation still completes, as LAPACK. Complex
(zsytf2 / zhetf2): |.| is CABS1 = |Re| + |Im| (izamax's); Hermitian A = L D L^H reads
|Re a_kk| for the diagonal and keeps D's diagonal real (A's imaginary diagonal is never
read), its 2x2 blocks are [[d0, conj(e)], [e, d1]].

The factorisation runs on the host as NumPy vector steps per matrix (n steps, O(n^3)):
its data-dependent 1x1 / 2x2 choices have no batched tgrad-op form here, so the cuda
device raises (factor on the CPU). No derivatives, as in PyTorch 2.13 (backward raises
"derivative for aten::linalg_ldl_factor_ex is not implemented"; same for ldl_solve).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad.autograd.function import Function
from tgrad.linalg._lu import _raise_singular
from tgrad.linalg._triangular import _torch_dtype_name, check_same_dtype, not_floating_error
from tgrad.ops._common import broadcast_or_raise, require_tensor
from tgrad.ops.creation import tensor
from tgrad.tensor import Tensor

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0  # Bunch-Kaufman's growth bound


LDLFactor = return_types.linalg_ldl_factor  # PyTorch's torch.return_types.linalg_ldl_factor


LDLFactorEx = return_types.linalg_ldl_factor_ex  # PyTorch's torch.return_types.linalg_ldl_factor_ex


def _abs1(x):
    """LAPACK's |x| for pivoting: |x| for real x, CABS1 = |Re x| + |Im x| for complex
    (izamax's and zsytf2's / zhetf2's measure)."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def _idamax(x: np.ndarray) -> int:
    """BLAS idamax / izamax (0-based): the first index of the largest _abs1(x_i), NaNs
    never chosen unless x_0 is one (the reference loop's strict '>')."""
    ax = _abs1(x)
    if np.isnan(ax[0]):
        return 0
    return int(np.argmax(np.where(np.isnan(ax), -1.0, ax)))


def _fmax(x, y):
    """Fortran MAX as compiled to maxsd: y unless x > y (so MAX(NaN, y) is y)."""
    return x if x > y else y


def _real_diagonal(a: np.ndarray, lo: int) -> None:
    """zhetf2 keeps the trailing diagonal a[lo:, lo:] real (zher drops its imaginary part)."""
    i = np.arange(lo, a.shape[0])
    a[i, i] = a[i, i].real


def _sytf2(a: np.ndarray, hermitian: bool = False) -> tuple:
    """LAPACK's dsytf2 / zsytf2 (uplo='L'), or zhetf2 for complex a with ``hermitian``, on
    one n x n matrix whose lower triangle holds A (the rest 0), in place: (pivots (n,) int32
    1-based, info). Each step's arithmetic is LAPACK's in the same order (dsyr's a + x_i
    (-d11 x_j), the 2x2 block's w's). complex symmetric (zsytf2): the real steps with
    complex numbers and CABS1 for |.|. Hermitian (zhetf2): A = L D L^H, |Re a_kk| for the
    diagonal's size, D's diagonal real (A's imaginary diagonal is never read), the
    interchange conjugates the entries it moves across the diagonal, the updates subtract
    x (x / d)^H, and the 2x2 block [[d0, conj(e)], [e, d1]] is inverted as zhetf2 does (d0,
    d1 real; scaled by |e|)."""
    n = a.shape[0]
    dt, rdt = a.dtype.type, a.real.dtype.type  # rdt: LAPACK's real scalars (alpha, |.|)
    herm = hermitian and np.iscomplexobj(a)
    alpha, one = rdt(_ALPHA), dt(1)
    if herm:
        _real_diagonal(a, 0)
    piv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k].real) if herm else _abs1(a[k, k])
        if k < n - 1:
            imax = k + 1 + _idamax(a[k + 1:, k])
            colmax = _abs1(a[imax, k])
        else:
            imax, colmax = k, rdt(0)
        if _fmax(absakk, colmax) == 0:  # column k is zero: D[k, k] = 0, nothing to eliminate
            info = info or k + 1
            kp = k
        else:
            if absakk >= alpha * colmax:
                kp = k
            else:
                # rowmax: the largest off-diagonal |entry| of row (and column) imax
                rowmax = _abs1(a[imax, k + _idamax(a[imax, k:imax])])
                if imax < n - 1:
                    rowmax = _fmax(rowmax, _abs1(a[imax + 1 + _idamax(a[imax + 1:, imax]),
                                                   imax]))
                if absakk >= alpha * colmax * (colmax / rowmax):
                    kp = k
                elif (abs(a[imax, imax].real) if herm else _abs1(a[imax, imax])) >= \
                        alpha * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:  # interchange rows and columns kk and kp of the trailing A(k:, k:)
                a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                t = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                a[kp, kk + 1:kp] = t
                if herm:  # the moved entries cross the diagonal: (A^H)_ij = conj(A_ji)
                    a[kk + 1:kp, kk] = a[kk + 1:kp, kk].conj()
                    a[kp, kk + 1:kp] = a[kp, kk + 1:kp].conj()
                    a[kp, kk] = a[kp, kk].conj()
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:  # A22 -= x x^T / d (x^H: hermitian; lower triangle); L = x / d
                    d11 = rdt(1) / a[k, k].real if herm else one / a[k, k]
                    x = a[k + 1:, k]
                    a[k + 1:, k + 1:] += np.tril(np.outer(x, -d11 * (x.conj() if herm else x)))
                    a[k + 1:, k] = d11 * x
            elif k < n - 2 and herm:  # zhetf2's 2x2 step: A22 -= [x0 x1] D^{-1} [x0 x1]^H
                d = np.hypot(a[k + 1, k].real, a[k + 1, k].imag)
                d11 = a[k + 1, k + 1].real / d
                d22 = a[k, k].real / d
                tt = rdt(1) / (d11 * d22 - rdt(1))
                d21 = a[k + 1, k] / d
                d = tt / d
                x0, x1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d * (d11 * x0 - d21 * x1)
                wkp1 = d * (d22 * x1 - d21.conj() * x0)
                a[k + 2:, k + 2:] -= np.tril(np.outer(x0, wk.conj()))
                a[k + 2:, k + 2:] -= np.tril(np.outer(x1, wkp1.conj()))
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
            elif k < n - 2:  # A22 -= [x0 x1] D^{-1} [x0 x1]^T; L's columns: [x0 x1] D^{-1}
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = one / (d11 * d22 - one)
                d21 = t / d21
                x0, x1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d21 * (d11 * x0 - x1)
                wkp1 = d21 * (d22 * x1 - x0)
                a[k + 2:, k + 2:] -= np.tril(np.outer(x0, wk))
                a[k + 2:, k + 2:] -= np.tril(np.outer(x1, wkp1))
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
            if herm:
                _real_diagonal(a, k)
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return piv, info


def _sytrs(a: np.ndarray, piv: np.ndarray, b: np.ndarray, hermitian: bool = False) -> None:
    """LAPACK's dsytrs / zsytrs (uplo='L'), or zhetrs for complex a with ``hermitian``: b
    (n, nrhs) <- A^{-1} b in place, from _sytf2's a and piv: L D y = b forwards (swaps,
    L(k)^{-1}, D(k)^{-1}), then L^T x = y (L^H: hermitian) backwards."""
    n = a.shape[0]
    herm = hermitian and np.iscomplexobj(a)
    lh = a.conj() if herm else a  # L^H's rows are conj(L)'s columns
    k = 0
    while k < n:
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] += np.outer(a[k + 1:, k], -b[k])
            b[k] *= 1 / (a[k, k].real if herm else a[k, k])
            k += 1
        else:
            if k == n - 1 or piv[k + 1] != piv[k]:
                raise RuntimeError(f"torch.linalg.ldl_solve: pivots must be ldl_factor's: "
                                   f"the negative pivot {piv[k]} at {k} is not one of an "
                                   f"equal pair (a 2x2 block)")
            kp = -piv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            if k < n - 2:
                b[k + 2:] += np.outer(a[k + 2:, k], -b[k])
                b[k + 2:] += np.outer(a[k + 2:, k + 1], -b[k + 1])
            # D's block [[d0, e], [e, d1]] ([[d0, conj(e)], [e, d1]]: hermitian) solved as
            # dsytrs / zhetrs do
            akm1k = a[k + 1, k]
            ekm1 = akm1k.conj() if herm else akm1k
            akm1 = a[k, k] / ekm1
            ak = a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / ekm1, b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:
        if piv[k] > 0:
            b[k] -= lh[k + 1:, k] @ b[k + 1:]
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= lh[k + 1:, k] @ b[k + 1:]
            b[k - 1] -= lh[k + 1:, k - 1] @ b[k + 1:]
            kp = -piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2


def _host_only(op: str, *ts: Tensor) -> None:
    if any(t.device.type != "cpu" for t in ts):
        raise NotImplementedError(
            f"{op}: not implemented on the {ts[0].device.type} device in tgrad (Bunch-Kaufman "
            f"pivoting runs on the host only); call it on CPU tensors, e.g. with A.cpu(), "
            f"and move the results back with .to(device)")


def _check_dtype(op: str, kernel: str, dt) -> None:
    if not (dt.is_floating_point or dt.is_complex):
        raise not_floating_error(op, dt)
    if dt.itemsize < 4:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_torch_dtype_name(dt)}'; convert with .float() or "
                                  f".double()")


class LinalgLDLFactor(Function):
    node_name = "NotImplemented"  # PyTorch's grad_fn for ops without a derivative

    @staticmethod
    def forward(ctx, A, hermitian):
        a = np.tril(A.detach().numpy())  # sytrf with uplo='L' reads the lower triangle
        batch, n = a.shape[:-2], a.shape[-1]
        a = np.ascontiguousarray(a.reshape((math.prod(batch), n, n)))
        piv = np.empty(a.shape[:-1], np.int32)
        info = np.zeros(a.shape[0], np.int32)
        with np.errstate(all="ignore"):  # a singular D gives inf/NaN, as LAPACK
            for i in range(a.shape[0]):
                piv[i], info[i] = _sytf2(a[i], hermitian)
        LD, pivots, info = (tensor(a.reshape(A.shape)), tensor(piv.reshape(batch + (n,))),
                            tensor(info.reshape(batch)))
        ctx.mark_non_differentiable(pivots, info)
        return LD, pivots, info

    @staticmethod
    def backward(ctx, gLD, _gpivots, _ginfo):
        raise NotImplementedError("derivative for aten::linalg_ldl_factor_ex is not "
                                  "implemented")


class LinalgLDLSolve(Function):
    node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, LD, pivots, B, hermitian):
        ld, piv, b = LD.detach().numpy(), pivots.numpy(), B.detach().numpy()
        n, nrhs = b.shape[-2], b.shape[-1]
        batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
        m = math.prod(batch)
        ld = np.broadcast_to(ld, batch + (n, n)).reshape((m, n, n))
        piv = np.broadcast_to(piv, batch + (n,)).reshape((m, n))
        x = np.array(np.broadcast_to(b, batch + (n, nrhs)).reshape((m, n, nrhs)))
        with np.errstate(all="ignore"):
            for i in range(x.shape[0]):
                _sytrs(ld[i], piv[i], x[i], hermitian)
        return tensor(x.reshape(batch + (n, nrhs)))

    @staticmethod
    def backward(ctx, gX):
        raise NotImplementedError("derivative for aten::linalg_ldl_solve is not implemented")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False,
                  check_errors: bool = False) -> LDLFactorEx:
    """(LD, pivots, info): LAPACK's sytrf (uplo='L', Bunch-Kaufman pivoting) of real or
    complex symmetric matrices A (..., n, n) (A = L D L^T), or for complex A with
    ``hermitian`` hetrf of Hermitian ones (A = L D L^H, D's diagonal real), reading A's
    lower triangle: L (unit diagonal not stored) below LD's diagonal, D's 1x1 / 2x2 blocks
    on it; pivots (int32, 1-based, a 2x2 block as two equal negative entries); info 0, or
    the first k with D[k, k] = 0 (1-based; the factorisation is complete, D singular).
    ``hermitian`` is the same for real A. CPU only; no derivative (PyTorch's)."""
    op = "torch.linalg.ldl_factor_ex"
    require_tensor(op, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    _check_dtype(op, "ldl_factor_kernel_cpu", A.dtype)
    _host_only(op, A)
    LD, pivots, info = LinalgLDLFactor.apply(A, bool(hermitian))
    if check_errors:
        _raise_singular(op, info, _SINGULAR)
    return LDLFactorEx(LD, pivots, info)


# PyTorch 2.13 raises an internal assert ("Unknown error code") here: a clear text instead
_SINGULAR = ("The factorization has been completed, but the block diagonal matrix D is "
             "exactly singular: its diagonal element {k} is zero. Use "
             "torch.linalg.ldl_factor_ex to get the factors with info")


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactor:
    """(LD, pivots) of ``ldl_factor_ex``; raises where D is singular (one host read)."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular("torch.linalg.ldl_factor", info, _SINGULAR)
    return LDLFactor(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """X with A X = B from A's ``ldl_factor`` (LAPACK's sytrs, uplo='L'; hetrs for complex
    LD with ``hermitian``, which must match the factorisation's): B (..., n, k), batch dims
    of LD, pivots and B broadcast. ``hermitian`` is the same for real LD. A singular D
    gives inf/NaN. CPU only; no derivative (PyTorch's)."""
    op = "torch.linalg.ldl_solve"
    require_tensor(op, LD, "LD")
    require_tensor(op, pivots, "pivots", 2)
    require_tensor(op, B, "B", 3)
    if LD.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor LD must have at least 2 dimensions.")
    n = LD.shape[-1]
    if LD.shape[-2] != n:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{LD.shape[-2]} by {n} matrices")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots.shape)} instead")
    if pivots.dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got "
                           f"{_torch_dtype_name(pivots.dtype)}")
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions "
                           f"(a column vector b as b.unsqueeze(-1)). Got {list(B.shape)}")
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} "
                           f"but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    _check_dtype(op, "ldl_solve_kernel_cpu", LD.dtype)
    check_same_dtype(op, "b", B, "A", LD, ".")
    _host_only(op, LD, pivots, B)
    broadcast_or_raise(op, LD.shape[:-2], B.shape[:-2])  # (NumPy's ValueError leaked)
    p = pivots.numpy()
    if p.size and not ((p != 0) & (np.abs(p) <= n)).all():
        raise RuntimeError(f"{op}: pivots must be ldl_factor's: 1-based, nonzero and at most "
                           f"{n} in absolute value")
    return LinalgLDLSolve.apply(LD, pivots.to(dtypes.int32), B, bool(hermitian))
