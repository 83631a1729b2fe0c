"""PyTorch's out= on tgrad.linalg / tgrad.fft / tgrad.special (tgrad/_out.py's one wrapper):
the result equals the plain call (itself checked against NumPy float64), out is returned
(a named tuple of the outs for multi-output functions) and its version bumps; resize
warnings and PyTorch 2.13's dtype / device / autograd / argument errors."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tgrad
from tgrad import fft as F
from tgrad import linalg as L
from tgrad import special as S

ROOT = pathlib.Path(__file__).resolve().parent.parent
D = tgrad.float64
I32, I64, C128 = tgrad.int32, tgrad.int64, tgrad.complex128
RNG = np.random.default_rng(0)
AN = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
SN = AN @ AN.T + np.eye(3)  # symmetric positive definite
VN = RNG.standard_normal(6)
PN = RNG.uniform(0.2, 0.8, (2, 3))


def t(x, dtype=D):
    return tgrad.tensor(x, dtype=dtype)


def _np(x):
    return x.detach().numpy()


def _ldl_solve():
    ld, piv = L.ldl_factor(t(SN))
    return L.ldl_solve(ld, piv, t(AN), **_out_kw)


def _lu_solve():
    lu, piv = L.lu_factor(t(AN))
    return L.lu_solve(lu, piv, t(AN), **_out_kw)


_out_kw: dict = {}  # set by _call: the out= of the call in progress

# name -> (call, NumPy float64 reference, out dtype)
SINGLE = {
    "linalg.det": (lambda: L.det(t(AN), **_out_kw), lambda: np.linalg.det(AN), D),
    "linalg.inv": (lambda: L.inv(t(AN), **_out_kw), lambda: np.linalg.inv(AN), D),
    "linalg.solve": (lambda: L.solve(t(AN), t(SN), **_out_kw),
                     lambda: np.linalg.solve(AN, SN), D),
    "linalg.cholesky": (lambda: L.cholesky(t(SN), **_out_kw),
                        lambda: np.linalg.cholesky(SN), D),
    "linalg.eigvalsh": (lambda: L.eigvalsh(t(SN), **_out_kw),
                        lambda: np.linalg.eigvalsh(SN), D),
    "linalg.eigvals": (lambda: L.eigvals(t(SN), **_out_kw),
                       lambda: np.linalg.eigvals(SN).astype(complex),
                       tgrad.complex128),
    "linalg.svdvals": (lambda: L.svdvals(t(AN), **_out_kw),
                       lambda: np.linalg.svd(AN, compute_uv=False), D),
    "linalg.pinv": (lambda: L.pinv(t(AN), **_out_kw), lambda: np.linalg.pinv(AN), D),
    "linalg.matrix_rank": (lambda: L.matrix_rank(t(AN), **_out_kw),
                           lambda: np.linalg.matrix_rank(AN), tgrad.int64),
    "linalg.cond": (lambda: L.cond(t(AN), **_out_kw), lambda: np.linalg.cond(AN), D),
    "linalg.matrix_power": (lambda: L.matrix_power(t(AN), 3, **_out_kw),
                            lambda: np.linalg.matrix_power(AN, 3), D),
    "linalg.matrix_norm": (lambda: L.matrix_norm(t(AN), **_out_kw),
                           lambda: np.linalg.norm(AN), D),
    "linalg.vector_norm": (lambda: L.vector_norm(t(VN), 3, **_out_kw),
                           lambda: np.linalg.norm(VN, 3), D),
    "linalg.norm": (lambda: L.norm(t(AN), "nuc", **_out_kw),
                    lambda: np.linalg.norm(AN, "nuc"), D),
    "linalg.cross": (lambda: L.cross(t(AN), t(SN), **_out_kw),
                     lambda: np.cross(AN, SN), D),
    "linalg.matmul": (lambda: L.matmul(t(AN), t(SN), **_out_kw), lambda: AN @ SN, D),
    "linalg.multi_dot": (lambda: L.multi_dot([t(AN), t(SN), t(AN)], **_out_kw),
                         lambda: AN @ SN @ AN, D),
    "linalg.vecdot": (lambda: L.vecdot(t(AN), t(SN), **_out_kw),
                      lambda: (AN * SN).sum(-1), D),
    "linalg.solve_triangular": (
        lambda: L.solve_triangular(t(np.triu(SN)), t(AN), upper=True, **_out_kw),
        lambda: np.linalg.solve(np.triu(SN), AN), D),
    "linalg.lu_solve": (_lu_solve, lambda: np.linalg.solve(AN, AN), D),
    "linalg.ldl_solve": (_ldl_solve, lambda: np.linalg.solve(SN, AN), D),
    "linalg.tensorinv": (lambda: L.tensorinv(t(AN), ind=1, **_out_kw),
                         lambda: np.linalg.tensorinv(AN, ind=1), D),
    "linalg.tensorsolve": (lambda: L.tensorsolve(t(AN), t(VN[:3]), **_out_kw),
                           lambda: np.linalg.tensorsolve(AN, VN[:3]), D),
    "fft.fft": (lambda: F.fft(t(VN), **_out_kw), lambda: np.fft.fft(VN), tgrad.complex128),
    "fft.ifft": (lambda: F.ifft(t(VN), n=8, **_out_kw), lambda: np.fft.ifft(VN, 8),
                 tgrad.complex128),
    "fft.fft2": (lambda: F.fft2(t(AN), norm="ortho", **_out_kw),
                 lambda: np.fft.fft2(AN, norm="ortho"), tgrad.complex128),
    "fft.ifft2": (lambda: F.ifft2(t(AN), **_out_kw), lambda: np.fft.ifft2(AN),
                  tgrad.complex128),
    "fft.fftn": (lambda: F.fftn(t(AN), s=(2, 4), **_out_kw),
                 lambda: np.fft.fftn(AN, s=(2, 4)), tgrad.complex128),
    "fft.ifftn": (lambda: F.ifftn(t(AN), **_out_kw), lambda: np.fft.ifftn(AN),
                  tgrad.complex128),
    "fft.rfft": (lambda: F.rfft(t(VN), **_out_kw), lambda: np.fft.rfft(VN), tgrad.complex128),
    "fft.irfft": (lambda: F.irfft(t(np.fft.rfft(VN), C128), n=6, **_out_kw), lambda: VN, D),
    "fft.rfft2": (lambda: F.rfft2(t(AN), **_out_kw), lambda: np.fft.rfft2(AN),
                  tgrad.complex128),
    "fft.irfft2": (lambda: F.irfft2(t(np.fft.rfft2(AN), C128), s=(3, 3), **_out_kw),
                   lambda: AN, D),
    "fft.rfftn": (lambda: F.rfftn(t(AN), **_out_kw), lambda: np.fft.rfftn(AN),
                  tgrad.complex128),
    "fft.irfftn": (lambda: F.irfftn(t(np.fft.rfftn(AN), C128), s=(3, 3), **_out_kw),
                   lambda: AN, D),
    "fft.hfft": (lambda: F.hfft(t(VN), **_out_kw), lambda: np.fft.hfft(VN), D),
    "fft.ihfft": (lambda: F.ihfft(t(VN), **_out_kw), lambda: np.fft.ihfft(VN),
                  tgrad.complex128),
    # hfftn = irfftn of the conjugate, unnormalised (N = 3 * 4); ihfftn its inverse
    "fft.hfft2": (lambda: F.hfft2(t(AN), **_out_kw),
                  lambda: np.fft.irfftn(np.conj(AN), s=(3, 4)) * 12, D),
    "fft.hfftn": (lambda: F.hfftn(t(AN), **_out_kw),
                  lambda: np.fft.irfftn(np.conj(AN), s=(3, 4)) * 12, D),
    "fft.ihfft2": (lambda: F.ihfft2(t(AN), **_out_kw),
                   lambda: np.conj(np.fft.rfftn(AN)) / 9, tgrad.complex128),
    "fft.ihfftn": (lambda: F.ihfftn(t(AN), **_out_kw),
                   lambda: np.conj(np.fft.rfftn(AN)) / 9, tgrad.complex128),
    "fft.fftfreq": (lambda: F.fftfreq(5, 0.5, dtype=D, **_out_kw),
                    lambda: np.fft.fftfreq(5, 0.5), D),
    "fft.rfftfreq": (lambda: F.rfftfreq(6, dtype=D, **_out_kw), lambda: np.fft.rfftfreq(6), D),
    "special.expit": (lambda: S.expit(t(AN), **_out_kw), lambda: 1 / (1 + np.exp(-AN)), D),
    "special.xlog1py": (lambda: S.xlog1py(t(AN), t(PN[0]), **_out_kw),
                        lambda: AN * np.log1p(PN[0]), D),
    "special.ndtri": (lambda: S.ndtri(t(PN), **_out_kw), None, D),
    "special.logsumexp": (lambda: S.logsumexp(t(AN), 1, **_out_kw),
                          lambda: np.log(np.exp(AN).sum(1)), D),
    "special.polygamma": (lambda: S.polygamma(0, t(PN), **_out_kw), None, D),
    "special.chebyshev_polynomial_t": (
        lambda: S.chebyshev_polynomial_t(t(PN), 3, **_out_kw),
        lambda: 4 * PN ** 3 - 3 * PN, D),
    "special.gammaln": (lambda: S.gammaln(t(PN), **_out_kw), None, D),
    "special.round": (lambda: S.round(t(AN), **_out_kw), lambda: np.round(AN), D),
}


def _call(name, out=None):
    _out_kw.clear()
    if out is not None:
        _out_kw["out"] = out
    try:
        return SINGLE[name][0]()
    finally:
        _out_kw.clear()


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_output_out_is_returned_filled_and_bumped(name):
    _, ref, dt = SINGLE[name]
    plain = _call(name)
    if ref is not None:
        np.testing.assert_allclose(_np(plain), ref(), rtol=1e-10, atol=1e-12)
    out = tgrad.empty(0, dtype=dt)
    v0 = out._version
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        r = _call(name, out)
    assert r is out
    assert out._version > v0 and out.dtype is dt and out.shape == plain.shape
    np.testing.assert_array_equal(_np(out), _np(plain))


def test_references_of_the_table_without_numpy_closed_forms():
    # ndtri / digamma / lgamma against identities in float64: ndtr(ndtri(p)) = p,
    # digamma(x + 1) - digamma(x) = 1 / x, lgamma(x + 1) - lgamma(x) = log x
    x = t(PN)
    np.testing.assert_allclose(_np(S.ndtr(_call("special.ndtri"))), PN, rtol=1e-12)
    np.testing.assert_allclose(_np(S.polygamma(0, x + 1) - _call("special.polygamma")),
                               1 / PN, rtol=1e-12)
    np.testing.assert_allclose(_np(S.gammaln(x + 1) - _call("special.gammaln")), np.log(PN),
                               rtol=1e-10)


def _empties(*dts):
    return tuple(tgrad.empty(0, dtype=dt) for dt in dts)


MULTI = {
    "eigh": (lambda o: L.eigh(t(SN), out=o), (D, D)),
    "slogdet": (lambda o: L.slogdet(t(AN), out=o), (D, D)),
    "qr": (lambda o: L.qr(t(AN), out=o), (D, D)),
    "svd": (lambda o: L.svd(t(AN), out=o), (D, D, D)),
    "lu_factor": (lambda o: L.lu_factor(t(AN), out=o), (D, I32)),
    "lu_factor_ex": (lambda o: L.lu_factor_ex(t(AN), out=o), (D, I32, I32)),
    "lu": (lambda o: L.lu(t(AN), out=o), (D, D, D)),
    "lstsq": (lambda o: L.lstsq(t(AN), t(SN), out=o), (D, D, I64, D)),
    "inv_ex": (lambda o: L.inv_ex(t(AN), out=o), (D, I32)),
    "cholesky_ex": (lambda o: L.cholesky_ex(t(SN), out=o), (D, I32)),
    "solve_ex": (lambda o: L.solve_ex(t(AN), t(SN), out=o), (D, I32)),
    "eig": (lambda o: L.eig(t(SN), out=o), (C128, C128)),
    "ldl_factor": (lambda o: L.ldl_factor(t(SN), out=o), (D, I32)),
    "ldl_factor_ex": (lambda o: L.ldl_factor_ex(t(SN), out=o), (D, I32, I32)),
}


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_output_out_tuple(name):
    call, dts = MULTI[name]
    plain = call(None)
    outs = _empties(*dts)
    versions = [o._version for o in outs]
    r = call(outs)
    assert type(r) is type(plain) and r._fields == plain._fields
    assert all(a is b for a, b in zip(r, outs))  # the fields are the out tensors
    for o, p, v0 in zip(outs, plain, versions):
        assert o._version > v0 and o.dtype is p.dtype
        np.testing.assert_array_equal(_np(o), _np(p))
    r2 = call(list(_empties(*dts)))  # a list works as in PyTorch
    assert type(r2) is type(plain)


def test_multi_output_values_against_numpy():
    w, v = L.eigh(t(SN), out=_empties(D, D))
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(SN), rtol=1e-10)
    np.testing.assert_allclose(_np(v) @ np.diag(_np(w)) @ _np(v).T, SN, rtol=1e-10)
    sign, logabs = L.slogdet(t(AN), out=_empties(D, D))
    ns, nl = np.linalg.slogdet(AN)
    assert _np(sign) == ns
    np.testing.assert_allclose(_np(logabs), nl, rtol=1e-12)
    q, r = L.qr(t(AN), out=_empties(D, D))
    np.testing.assert_allclose(_np(q) @ _np(r), AN, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(q).T @ _np(q), np.eye(3), atol=1e-12)
    u, s, vh = L.svd(t(AN), out=_empties(D, D, D))
    np.testing.assert_allclose(_np(s), np.linalg.svd(AN, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(_np(u) * _np(s) @ _np(vh), AN, rtol=1e-10, atol=1e-12)
    sol = L.lstsq(t(AN), t(SN), out=_empties(D, D, I64, D)).solution
    np.testing.assert_allclose(_np(sol), np.linalg.lstsq(AN, SN, rcond=None)[0], rtol=1e-10)
    inv, info = L.inv_ex(t(AN), out=_empties(D, I32))
    np.testing.assert_allclose(_np(inv), np.linalg.inv(AN), rtol=1e-10)
    assert _np(info) == 0
    p, lo, up = L.lu(t(AN), out=_empties(D, D, D))
    np.testing.assert_allclose(_np(p) @ _np(lo) @ _np(up), AN, rtol=1e-12)
    ev = L.eig(t(SN), out=_empties(C128, C128)).eigenvalues
    np.testing.assert_allclose(np.sort(_np(ev).real), np.linalg.eigvalsh(SN), rtol=1e-10)


def test_resize_warning_and_in_storage_shrink():
    out = tgrad.empty(5, dtype=D)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized "
                      r"since it had shape \[5\], which does not match the required output "
                      r"shape \[3, 3\]"):
        L.inv(t(AN), out=out)
    np.testing.assert_allclose(_np(out), np.linalg.inv(AN), rtol=1e-10)
    w, v = tgrad.empty(2, dtype=D), tgrad.empty(2, dtype=D)
    with pytest.warns(UserWarning) as rec:
        L.eigh(t(SN), out=(w, v))
    assert len([r for r in rec if "was resized" in str(r.message)]) == 2  # one per out
    assert w.shape == (3,) and v.shape == (3, 3)
    big = tgrad.zeros(20, dtype=C128)
    with pytest.warns(UserWarning, match=r"shape \[20\].*shape \[6\]"):
        F.fft(t(VN), out=big)
    np.testing.assert_allclose(_np(big), np.fft.fft(VN), rtol=1e-12, atol=1e-12)


def test_linalg_dtype_rules():
    # most of linalg wants out's dtype exactly (PyTorch's text; float32 into double too)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got "
                                           "float instead"):
        L.det(t(AN), out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        L.inv(t(AN, tgrad.float32), out=tgrad.empty(0, dtype=D))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got "
                                           "float instead"):
        L.eigh(t(SN), out=_empties(tgrad.float32, D))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype int, but got "
                                           "long int instead"):
        L.lu_factor(t(AN), out=_empties(D, I64))
    with pytest.raises(RuntimeError, match="linalg.norm expected out tensor dtype Double but "
                                           "got: Float"):
        L.norm(t(AN), out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm expected out tensor dtype "
                                           "Double but got: Float"):
        L.matrix_norm(t(AN), out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): expected out tensor to have "
                                           "dtype double but got float"):
        L.multi_dot([t(AN), t(AN)], out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected out of dtype Double but "
                                           "found Float"):
        L.vecdot(t(AN), t(AN), out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        L.solve_triangular(t(np.triu(SN)), t(AN), upper=True, out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="torch.linalg.eigvals: Expected eigenvalues to be "
                                           "safely castable from ComplexDouble dtype, but got "
                                           "eigenvalues with dtype Double"):
        L.eigvals(t(AN), out=tgrad.empty(0, dtype=D))
    with pytest.raises(RuntimeError, match="torch.linalg.eig: Expected eigenvectors to be "
                                           "safely castable from ComplexDouble dtype, but got "
                                           "eigenvectors with dtype Double"):
        L.eig(t(AN), out=_empties(C128, D))
    # eig / eigvals cast within complex; matrix_rank, pinv, cond, ... cast as the elementwise
    ev = L.eigvals(t(SN), out=tgrad.empty(0, dtype=tgrad.complex64))
    np.testing.assert_allclose(np.sort(_np(ev).real), np.linalg.eigvalsh(SN), rtol=1e-5)
    rk = L.matrix_rank(t(AN), out=tgrad.empty(0))
    assert rk.dtype is tgrad.float32 and _np(rk) == 3.0
    pv = L.pinv(t(AN), out=tgrad.empty(0))
    np.testing.assert_allclose(_np(pv), np.linalg.pinv(AN), rtol=1e-5)


def test_fft_dtype_rules():
    with pytest.raises(RuntimeError, match="fft expects a complex output tensor, but got "
                                           "Double"):
        F.fft(t(VN), out=tgrad.empty(0, dtype=D))
    with pytest.raises(RuntimeError, match="^fftn expects a complex output tensor, but got "
                                           "Float"):
        F.ifft2(t(AN), out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="^ihfftn expects a complex output tensor, but got "
                                           "Float"):
        F.ihfft2(t(AN), out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="irfft expects a floating point output tensor, but "
                                           "got ComplexDouble"):
        F.irfft(t(VN), out=tgrad.empty(0, dtype=C128))
    with pytest.raises(RuntimeError, match="hfft expects a floating point output tensor, but "
                                           "got Long"):
        F.hfft(t(VN), out=tgrad.empty(0, dtype=I64))
    # within the category results are cast: complex128 into complex64, double into float
    o = F.fft(t(VN), out=tgrad.empty(0, dtype=tgrad.complex64))
    np.testing.assert_allclose(_np(o), np.fft.fft(VN), rtol=1e-5, atol=1e-5)
    o = F.irfft(t(np.fft.rfft(VN), C128), n=6, out=tgrad.empty(0))
    assert o.dtype is tgrad.float32
    np.testing.assert_allclose(_np(o), VN, rtol=1e-5, atol=1e-6)


def test_fftfreq_takes_outs_dtype():
    out = tgrad.empty(0)  # float32
    r = F.fftfreq(5, out=out)
    assert r is out and out.dtype is tgrad.float32
    np.testing.assert_allclose(_np(out), np.fft.fftfreq(5), rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"dtype Double does not match dtype of out "
                                           r"parameter \(Float\)"):
        F.rfftfreq(5, out=tgrad.empty(0), dtype=D)
    with pytest.raises(RuntimeError, match="rfftfreq requires a floating point or complex "
                                           "dtype"):
        F.rfftfreq(5, out=tgrad.empty(0, dtype=I64))
    # requires_grad=True is allowed with out= and set on out (PyTorch's factory rule) ...
    out = tgrad.empty(0, dtype=D)
    F.rfftfreq(6, out=out, requires_grad=True)
    assert out.requires_grad and out.is_leaf
    np.testing.assert_allclose(_np(out), np.fft.rfftfreq(6), rtol=1e-12)
    # ... but an out requiring grad is refused
    with pytest.raises(RuntimeError, match=r"^fft_rfftfreq\(\): functions with out=\.\.\. "
                                           r"arguments don't support automatic "
                                           r"differentiation, but one of the arguments "
                                           r"requires grad\."):
        F.rfftfreq(6, out=tgrad.empty(0, requires_grad=True))


def test_special_dtype_rules():
    out = tgrad.empty(0)  # double result into float: cast
    S.expit(t(AN), out=out)
    np.testing.assert_allclose(_np(out), 1 / (1 + np.exp(-AN)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired "
                                           "output type Long"):
        S.i0(t(AN), out=tgrad.empty(0, dtype=I64))


def test_autograd_error():
    a = tgrad.tensor(AN, requires_grad=True)
    msg = ("functions with out=... arguments don't support automatic differentiation, but one "
           "of the arguments requires grad.")
    # (PyTorch names the op its function calls: _linalg_det, _linalg_eigh, sigmoid)
    for call, name in [(lambda: L.det(a, out=tgrad.empty(0, dtype=D)), "_linalg_det"),
                       (lambda: L.eigh(a, out=_empties(D, D)), "_linalg_eigh"),
                       (lambda: F.fft(a, out=tgrad.empty(0, dtype=C128)), "fft_fft"),
                       (lambda: S.expit(a, out=tgrad.empty(0, dtype=D)), "sigmoid")]:
        with pytest.raises(RuntimeError) as e:
            call()
        assert str(e.value) == f"{name}(): {msg}"
    with pytest.raises(RuntimeError, match=r"^linalg_inv_ex\(\): functions with out="):
        L.inv(t(AN), out=tgrad.empty(0, dtype=D, requires_grad=True))
    with tgrad.no_grad():
        out = L.inv(a, out=tgrad.empty(0, dtype=D))
    assert not out.requires_grad
    np.testing.assert_allclose(_np(out), np.linalg.inv(AN), rtol=1e-10)


def test_bad_out_arguments():
    with pytest.raises(TypeError, match=r"^linalg_eigh\(\): argument 'out' must be tuple of "
                                        r"Tensors, not Tensor"):
        L.eigh(t(SN), out=tgrad.empty(0, dtype=D))
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 3"):
        L.slogdet(t(AN), out=_empties(D, D, D))
    with pytest.raises(TypeError, match=r"^linalg_det\(\): argument 'out' must be Tensor, not "
                                        r"tuple"):
        L.det(t(AN), out=_empties(D))
    with pytest.raises(TypeError, match=r"^special_erf\(\): argument 'out' must be Tensor, "
                                        r"not int"):
        S.erf(t(AN), out=3)


def test_out_aliasing_an_input():
    a = t(AN)
    L.inv(a, out=a)  # the same memory: read before the write, as PyTorch
    np.testing.assert_allclose(_np(a), np.linalg.inv(AN), rtol=1e-10)
    x = t(VN)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                                           "written-to tensor refer to a single memory "
                                           "location"):
        S.expit(x[:4], out=x[2:])


def test_out_view_writes_through_to_its_base():
    base = tgrad.zeros(2, 3, dtype=D)
    v0 = base._version
    S.expit(t(AN[0]), out=base[1])
    np.testing.assert_allclose(_np(base), np.stack([np.zeros(3), 1 / (1 + np.exp(-AN[0]))]),
                               rtol=1e-12)
    assert base._version > v0


def test_every_listed_function_takes_out():
    import inspect

    from tgrad._out import NAMESPACE_FUNCTIONS
    for ns, names in NAMESPACE_FUNCTIONS.items():
        module = getattr(tgrad, ns)
        for n in names:
            fn = getattr(module, n)
            assert inspect.signature(fn).parameters["out"].default is None, (ns, n)
            assert inspect.unwrap(fn) is not fn  # the wrapper around tgrad's function


def test_no_out_for_functions_pytorch_gives_none():
    import inspect
    for fn in (L.diagonal, L.matrix_exp, L.vander, F.fftshift, F.ifftshift, S.softmax,
               S.log_softmax):
        assert "out" not in inspect.signature(fn).parameters
    for fn in (L.det, L.eigh, L.lstsq, F.fft, F.fftfreq, S.expit, S.zeta):
        assert inspect.signature(fn).parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY


DEVICE_SCRIPT = textwrap.dedent(r"""
    import json
    import numpy as np
    import tgrad
    assert tgrad.cuda.is_interpreted()
    a = tgrad.tensor(np.eye(3) * 2.0, dtype=tgrad.float64)
    res = {}
    for key, call in [
            ("linalg", lambda o: tgrad.linalg.inv(a, out=o)),
            ("fft", lambda o: tgrad.fft.hfft(a, out=o)),  # complex is CPU-only
            ("special", lambda o: tgrad.special.expit(a, out=o))]:
        try:
            call(tgrad.empty(0, dtype=tgrad.float64, device="cuda"))
            res[key] = "no error"
        except RuntimeError as e:
            res[key] = str(e)
    o = tgrad.empty(0, device="cuda")  # fftfreq makes its result on out's device
    tgrad.fft.fftfreq(4, out=o)
    res["freq"] = [o.device.type, o.cpu().numpy().tolist()]
    print("RESULT" + json.dumps(res))
""")


def test_out_on_another_device():
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(next(ln for ln in proc.stdout.splitlines()
                          if ln.startswith("RESULT"))[len("RESULT"):])
    assert res["linalg"] == ("linalg_inv(): Expected out tensor to have device cpu, but got "
                             "cuda:0 instead")
    assert res["fft"] == ("fft_hfft(): Expected out tensor to have device cpu, but got cuda:0 "
                          "instead")
    assert res["special"] == ("special_expit(): Expected out tensor to have device cpu, but "
                              "got cuda:0 instead")
    assert res["freq"] == ["cuda", np.fft.fftfreq(4).tolist()]
