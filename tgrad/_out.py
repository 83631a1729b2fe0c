"""PyTorch's ``out=`` keyword on the torch-level functions (``tgrad.add(a, b, out=c)``).

One wrapper, applied by ``tgrad/__init__.py`` to the functions named in ``OUT_FUNCTIONS``
and by ``tgrad.linalg`` / ``tgrad.fft`` / ``tgrad.special`` to theirs in
``NAMESPACE_FUNCTIONS`` (Tensor methods take no ``out=``, as in PyTorch). The function is
computed as usual, then written into ``out`` with PyTorch's out semantics:

* grad mode on and an input or ``out`` requiring grad: PyTorch's error (out= is not
  differentiable), unless every result is bool / integer (comparisons, argmax, all, ...,
  not differentiable: PyTorch writes them);
* the result must be castable to ``out``'s dtype (same or lower category; a multi-output
  function's outs, and those of _EXACT_DTYPE, must have the results' dtypes exactly;
  _TORCH_RULES: ops checking it with their own texts, as abs or nonzero; the
  namespaces' rules are
  PyTorch's, see _dtype_rule), and be on ``out``'s device; sum/prod/cumsum/cumprod/nansum/
  mean/nanmean compute in ``out``'s dtype (_DTYPE_FROM_OUT);
* an ``out`` of another shape is resized (contiguous; PyTorch's UserWarning when it had
  elements), in its storage when that is big enough, else into new memory;
* an ``out`` that partly overlaps an input raises PyTorch's error (the same memory is fine);
* creation functions (zeros, arange, rand, ..., fft.fftfreq) take ``out``'s dtype and
  device when no dtype/device is given, and raise if a given dtype differs from out's;
  ``requires_grad=True`` makes ``out`` require grad, as PyTorch's factories do.

The write is an in-place write: ``out``'s version counter bumps, and ``out`` itself (the
same object; a tuple of them for multi-output functions) is returned.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings

from tgrad import dtypes
from tgrad._strides import contiguous_strides
from tgrad.autograd.grad_mode import STATE, no_grad
from tgrad.tensor import Tensor, check_not_inference

# torch.* functions taking out= (checked against PyTorch's signatures); tgrad's function of
# the same name gets the keyword.
OUT_FUNCTIONS = frozenset("""
abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin aminmax
angle any argmax argmin arccos arccosh arcsin arcsinh arctan arctan2 arctanh asin asinh atan
atan2 atanh baddbmm bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift
bitwise_xor bmm bucketize cat ceil clamp clip column_stack complex concat concatenate
conj_physical copysign cos cosh cross cummax cummin cumprod cumsum deg2rad diag digamma div
divide dot dstack eq erf erfc erfinv exp exp2 expm1 fix float_power floor floor_divide fmax
fmin fmod frac frexp gather gcd ge ger greater greater_equal gt heaviside histc hstack hypot
i0 igamma igammac index_select inner isneginf isposinf kron kthvalue lcm ldexp le lerp less
less_equal lgamma log log10 log1p log2 logaddexp logaddexp2 logcumsumexp logical_and
logical_not logical_or logical_xor logit logsumexp lt masked_select matmul max maximum mean
median min minimum mm mode msort mul multiply mv mvlgamma nan_to_num nanmean nanmedian
nanquantile nansum narrow_copy ne neg negative nextafter nonzero not_equal outer polar
polygamma pow prod quantile rad2deg reciprocal remainder renorm round row_stack rsqrt
searchsorted sgn sigmoid sign signbit sin sinc sinh sort sqrt square stack std sub subtract
sum take_along_dim tan tanh tensordot topk tril triu true_divide trunc var vdot vstack where
xlogy
argsort chain_matmul cholesky cholesky_inverse cholesky_solve clamp_max clamp_min detach_copy
diff geqrf hardshrink index_add index_copy index_reduce inverse isin log_softmax lu lu_solve
lu_unpack matrix_power norm orgqr ormqr qr scatter scatter_add scatter_reduce slice_scatter
slogdet softmax svd take threshold triangular_solve
""".split())

# reductions whose out's dtype stands in for a missing dtype= (PyTorch's sum/prod/cumsum/
# cumprod/nansum/mean/nanmean out kernels): the input is cast to it first, so a float input
# sums into an int64 out (sum([0.6, 0.6], out=long) is 0, not int(1.2)); a given dtype= must
# equal it.
_DTYPE_FROM_OUT = frozenset({"sum", "prod", "cumsum", "cumprod", "nansum", "mean", "nanmean"})
# of those, the ones computed in out's dtype only from a floating (or complex) input into a
# floating out: an integer input still raises mean's "could not infer output dtype", and an
# integer out the cast error ("result type Float can't be cast to ... Long")
_FLOAT_ONLY = frozenset({"mean", "nanmean"})


def _is_float(dt) -> bool:
    return dt.is_floating_point or dt.is_complex

# torch-level functions whose out must have the result's dtype exactly (PyTorch's
# "Expected out tensor to have dtype double, but got float instead"), as their PyTorch out
# kernels check it instead of casting: the matmul family, the index / scatter ops, argmax,
# argsort, softmax, ... (others, e.g. abs or all, check it with their own texts: not here).
_EXACT_DTYPE = frozenset("""
addmm addmv argmax argmin argsort baddbmm bmm cross detach_copy diag gather index_add
index_copy index_reduce inverse isin log_softmax lu_solve matmul matrix_power mm msort mv
norm renorm scatter scatter_add scatter_reduce slice_scatter softmax take_along_dim tril triu
""".split())

# torch-level functions whose PyTorch out kernels check out's dtype with their own texts
# (instead of casting): _TORCH_RULES[name](i, src, dst, x) raises PyTorch's error for
# result i of dtype src into an out of dtype dst (x: the first input's dtype) and returns
# True where a result that is not castable may still be written (all/any into uint8/bool).
def _found(i, src, dst, x):  # the unary / clamp family: out wants the result's dtype
    if src is not dst:
        raise RuntimeError(f"Found dtype {_N[dst]} but expected {_N[src]}")


def _abs(i, src, dst, x):  # abs of a complex input casts (its result is real)
    if x is None or not x.is_complex:
        _found(i, src, dst, x)


def _same(text):  # out wants the result's dtype, with PyTorch's text
    def check(i, src, dst, x):
        if src is not dst:
            raise RuntimeError(text.format(src=_N[src], dst=_N[dst], x=_N.get(x),
                                           src_c10=_C10_NAMES[src], dst_c10=_C10_NAMES[dst]))
    return check


def _bool_only(text):
    def check(i, src, dst, x):
        if dst is not dtypes.bool_:
            raise RuntimeError(text.format(dst=_N[dst]))
    return check


def _all_any(name):
    def check(i, src, dst, x):
        if dst not in (dtypes.bool_, dtypes.uint8):
            raise RuntimeError(f"{name} only supports bool tensor for result, got: {_N[dst]}")
        return True
    return check


def _searchsorted(i, src, dst, x):
    if src is not dst:
        raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can "
                           f"only be Int(int32) or Long(int64) depending on whether out_int32 "
                           f"flag is True, but we got output tensor's dtype {_N[dst]} and "
                           f"out_int32 flag is {src is dtypes.int32}")


def _castable(what, text="{what}: Expected result to be safely castable from {src} dtype, "
                          "but got result with dtype {dst}", error=RuntimeError):
    """out takes any dtype of the result's category or above, else PyTorch's ``text``."""
    def check(i, src, dst, x=None):
        if src.category > dst.category:
            raise error(text.format(what=what, src=_N[src], dst=_N[dst]))
        return True
    return check


def _first(check):  # a multi-output function's first out (values / mantissa)
    def first(i, src, dst, x):
        if i == 0:
            check(i, src, dst, x)
    return first


_SCALAR = "expected scalar_type {src} but found {dst}"
_TORCH_RULES = {n: _found for n in """
bitwise_not ceil clamp clamp_max clamp_min clip conj_physical fix floor frac hardshrink neg
negative round sgn sign trunc""".split()}
_TORCH_RULES.update({
    "abs": _abs, "absolute": _abs,
    "signbit": _bool_only("signbit does not support non-boolean outputs."),
    "isposinf": _bool_only("isposinf does not support non-boolean outputs."),
    "isneginf": _bool_only("isneginf does not support non-boolean outputs."),
    "all": _all_any("all"), "any": _all_any("any"),
    "nonzero": _same("nonzero: Expected out tensor to have scalar type Long but got scalar "
                     "type{dst}"),
    "nan_to_num": _same("nan_to_num: dtype of out: {dst} should be same as input: {src}"),
    "float_power": _same("the output given to float_power has dtype {dst} but the operation's "
                         "result requires dtype {src}"),
    "take": _same("take(): self and out expected to have the same dtype, but got self.dtype "
                  "= {src} and out.dtype = {dst}"),
    "index_select": _same("index_select(): self and result must have the same scalar type"),
    "masked_select": _same("masked_select(): self and result must have the same scalar type"),
    "tensordot": _same("tensordot: Expected the output tensor to have dtype {src}, but got an "
                       "output tensor with dtype {dst}"),
    "dot": _same("result dtype {dst} does not match input dtype {src}"),
    "vdot": _same("result dtype {dst} does not match input dtype {src}"),
    "ormqr": _same("torch.ormqr: Expected input and result to have the same dtype, but input "
                   "has dtype{src} and result has dtype {dst}"),
    "histc": _same("histogram: input tensor and hist tensor should have the same dtype, but "
                   "got input {src_c10} and hist {dst_c10}"),
    "searchsorted": _searchsorted, "bucketize": _searchsorted,
    "logcumsumexp": _same(_SCALAR),
    "cummax": _first(_same(_SCALAR)), "cummin": _first(_same(_SCALAR)),
    "frexp": _first(_same("frexp() expects mantissa to have dtype {src_c10} but got "
                          "{dst_c10}")),
    "narrow_copy": _same("Expected self.dtype() == output.dtype() to be true, but got false.  "
                         "(Could this error message be improved?  If so, please report an "
                         "enhancement request to PyTorch.)"),
    "quantile": _same("quantile() out tensor must be same dtype as the input tensor"),
    "nanquantile": _same("quantile() out tensor must be same dtype as the input tensor"),
    "amax": _same("Expected the dtype for input and out to match, but got {src} for input's "
                  "dtype and {dst} for out's dtype."),
    "amin": _same("Expected the dtype for input and out to match, but got {src} for input's "
                  "dtype and {dst} for out's dtype."),
    "where": _same("Expected out type to be {src} but got {dst}"),
    "polar": _same("Expected object of scalar type {src} but got scalar type {dst} for "
                   "argument 'out'"),
    "complex": _same("Expected object of scalar type {src} but got scalar type {dst} for "
                     "argument 'out'"),
    "heaviside": _same("heaviside is not yet implemented for tensors with different dtypes."),
})
# (the unary ones whose result has the input's dtype, checked before the op runs)
_CHECK_FIRST = frozenset("""
abs absolute bitwise_not ceil conj_physical fix floor frac round sgn sign trunc""".split())
_TORCH_RULES.update({n: _castable(n) for n in
                     ("cholesky", "cholesky_inverse", "cholesky_solve")})
_TORCH_RULES["orgqr"] = _castable("torch.linalg.householder_product")
_TORCH_RULES["logsumexp"] = _castable(
    "logsumexp", "logsumexp(): Expected floating point type for result tensor, but got: {dst}")
_TORCH_RULES.update({n: _castable("torch.cat", "torch.cat(): input types can't be cast to the "
                                  "desired output type {dst}", TypeError) for n in """
cat concat concatenate stack hstack vstack dstack column_stack row_stack""".split()})
_TORCH_RULES["inner"] = _TORCH_RULES["tensordot"]  # (PyTorch's inner is a tensordot)

# the name PyTorch's out= autograd error gives an alias (its canonical op; the composite
# functions name the op they call): negative -> neg(), linalg.multi_dot -> mm(), ...
_ERROR_NAMES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2",
    "negative": "neg", "multiply": "mul", "divide": "div", "true_divide": "div",
    "subtract": "sub", "clip": "clamp", "fix": "trunc", "concat": "cat", "concatenate": "cat",
    "row_stack": "cat", "vstack": "cat", "hstack": "cat", "dstack": "cat",
    "column_stack": "cat", "ger": "mul", "outer": "mul", "kron": "mul", "square": "pow",
    "float_power": "pow", "diff": "sub", "take_along_dim": "gather", "chain_matmul": "mm",
    "norm": "linalg_vector_norm", "nanmean": "nansum",
    "special_expit": "sigmoid", "special_psi": "digamma", "special_digamma": "digamma",
    "special_gammaln": "lgamma", "special_multigammaln": "mvlgamma",
    "linalg_matmul": "matmul", "linalg_det": "_linalg_det", "linalg_multi_dot": "mm",
    "linalg_matrix_power": "matmul", "linalg_vecdot": "vdot", "linalg_inv": "linalg_inv_ex",
    "linalg_solve": "_linalg_solve_ex", "linalg_eigh": "_linalg_eigh",
    "linalg_eigvalsh": "_linalg_eigh",
    "linalg_svdvals": "_linalg_svd",
}
_ERROR_NAMES.update({f"special_{n}": n for n in """
erf erfc erfinv exp2 expm1 i0 log1p logit logsumexp polygamma round sinc xlogy""".split()})

# PyTorch's CompositeImplicit out= functions whose out records the copy (a CopyBackwards):
# inputs requiring grad give an out requiring grad, with their gradient (no out= error).
_COMPOSITE_GRAD = frozenset("""
inner tensordot quantile nanquantile linalg_norm linalg_matrix_norm linalg_cond
linalg_tensorinv linalg_tensorsolve special_ndtr
""".split())
# float results PyTorch writes without the out= autograd error (not differentiable)
_NOT_DIFFERENTIABLE = frozenset({"histc"})

# LAPACK-backed functions whose resized outs PyTorch makes column-major (strides (1, m) per
# matrix; values the same; nonzero too): the indices of those outs (1-D results stay
# contiguous).
_COLUMN_MAJOR = {n: (0,) for n in """
linalg_inv linalg_inv_ex linalg_cholesky linalg_cholesky_ex linalg_solve linalg_solve_ex
linalg_lu_solve linalg_lu_factor linalg_lu_factor_ex linalg_solve_triangular
linalg_householder_product linalg_ldl_factor linalg_ldl_factor_ex linalg_ldl_solve
linalg_lstsq inverse cholesky_inverse lu_solve svd geqrf orgqr ormqr nonzero
""".split()}
_COLUMN_MAJOR.update({"linalg_qr": (0, 1), "linalg_eigh": (1,), "linalg_eig": (1,),
                      "linalg_svd": (0, 2), "triangular_solve": (0, 1), "qr": (0, 1)})

# creation functions: out's dtype and device stand in for missing dtype= / device=.
CREATION_FUNCTIONS = frozenset("""
arange empty eye full linspace logspace ones rand randint randn randperm range zeros
""".split())

# tgrad.linalg / tgrad.fft / tgrad.special functions taking out= (checked against PyTorch
# 2.13's: linalg.diagonal / matrix_exp / vander, fft.fftshift / ifftshift and
# special.softmax / log_softmax take none; linalg.lstsq takes a 4-tuple); each namespace's
# module calls install(globals(), "<ns>"). Messages name them as PyTorch does: linalg_det().
NAMESPACE_FUNCTIONS = {
    "linalg": frozenset("""
cholesky cholesky_ex cond cross det eig eigh eigvals eigvalsh householder_product inv inv_ex
ldl_factor ldl_factor_ex ldl_solve lstsq lu lu_factor lu_factor_ex lu_solve matmul
matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex
solve_triangular svd svdvals tensorinv tensorsolve vecdot vector_norm
""".split()),
    "fft": frozenset("""
fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft hfft2 ihfft2
hfftn ihfftn fftfreq rfftfreq
""".split()),
    "special": frozenset("""
airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t chebyshev_polynomial_u
chebyshev_polynomial_v chebyshev_polynomial_w digamma entr erf erfc erfcx erfinv exp2 expit
expm1 gammainc gammaincc gammaln hermite_polynomial_h hermite_polynomial_he i0 i0e i1 i1e
laguerre_polynomial_l legendre_polynomial_p log1p log_ndtr logit logsumexp modified_bessel_i0
modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 multigammaln ndtr ndtri polygamma psi
round scaled_modified_bessel_k0 scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w
sinc spherical_bessel_j0 xlog1py xlogy zeta
""".split()),
}
_NAMESPACE_CREATION = frozenset({"fftfreq", "rfftfreq"})

# c10's type names, which PyTorch's "Expected out tensor to have dtype ..." uses.
_C10_NAMES = {dtypes.bool_: "bool", dtypes.uint8: "unsigned char", dtypes.int8: "signed char",
              dtypes.int16: "short int", dtypes.int32: "int", dtypes.int64: "long int",
              dtypes.float16: "c10::Half", dtypes.bfloat16: "c10::BFloat16",
              dtypes.float32: "float", dtypes.float64: "double",
              dtypes.complex64: "c10::complex<float>", dtypes.complex128: "c10::complex<double>"}

# linalg functions whose out= takes any castable dtype (as the elementwise ops), as PyTorch's
# composite ones; the rest want the result's dtype exactly.
_LINALG_CAST = frozenset("cond householder_product matrix_rank pinv tensorinv tensorsolve".split())
# PyTorch's own texts for some linalg exact-dtype checks ({src}: the result's dtype)
_LINALG_TEXTS = {
    "norm": "linalg.norm expected out tensor dtype {src} but got: {dst}",
    "matrix_norm": "linalg.matrix_norm expected out tensor dtype {src} but got: {dst}",
    "vecdot": "linalg.vecdot: Expected out of dtype {src} but found {dst}",
    "solve_triangular": "linalg.solve_triangular: expected scalar type {src} but found {dst}",
    "multi_dot": "multi_dot(): expected out tensor to have dtype {src_c10} but got {dst_c10}",
}
_N = dtypes.SCALAR_TYPE_NAMES
_EXACT_TEXT = "Expected out tensor to have dtype {src_c10}, but got {dst_c10} instead"
# the fft functions' names in PyTorch's out dtype errors (the n-d forms share one kernel)
_FFT_OP = {"fft2": "fftn", "ifft2": "fftn", "ifftn": "fftn", "rfft2": "rfftn",
           "irfft2": "irfftn", "hfft2": "hfftn", "ihfft2": "ihfftn"}


def _dtype_rule(ns: str, fn_name: str):
    """PyTorch's out= dtype rule for ``tgrad.<ns>.<fn_name>``: ``check(i, src, dst)``
    raising its error when result ``i`` (of dtype ``src``) may not be written into an out
    of dtype ``dst``; None for the torch-level rule (castable; exact for several outs).

    - fft: a complex result needs a complex out, a real one a floating out; within that
      the result is cast (complex128 into complex64 is fine); fftfreq: the creation rule;
    - linalg: the dtype exactly (_EXACT_TEXT or _LINALG_TEXTS), except _LINALG_CAST and
      eig / eigvals, whose complex results cast into any complex out;
    - special: the elementwise rule.
    """
    names = dtypes.SCALAR_TYPE_NAMES
    if ns == "fft" and fn_name not in _NAMESPACE_CREATION:
        op = _FFT_OP.get(fn_name, fn_name)

        def check(i, src, dst):
            if src.is_complex and not dst.is_complex:
                raise RuntimeError(f"{op} expects a complex output tensor, but got "
                                   f"{names[dst]}")
            if not src.is_complex and not dst.is_floating_point:
                raise RuntimeError(f"{op} expects a floating point output tensor, but got "
                                   f"{names[dst]}")
        return check
    if ns == "special" and fn_name == "round":
        return lambda i, src, dst: _found(i, src, dst, None)
    if ns == "linalg" and fn_name in ("cond", "householder_product"):
        what = "linalg.cond" if fn_name == "cond" else "torch.linalg.householder_product"
        return _castable(what)
    if ns == "special" and fn_name == "logsumexp":
        return _TORCH_RULES["logsumexp"]
    if ns != "linalg" or fn_name in _LINALG_CAST:
        return None
    if fn_name in ("eig", "eigvals"):
        def check(i, src, dst):
            if src.category > dst.category:
                what = ("eigenvalues", "eigenvectors")[i]
                raise RuntimeError(f"torch.linalg.{fn_name}: Expected {what} to be safely "
                                   f"castable from {names[src]} dtype, but got {what} with "
                                   f"dtype {names[dst]}")
        return check
    text = _LINALG_TEXTS.get(fn_name, _EXACT_TEXT)

    def check(i, src, dst):
        if src is not dst:
            raise RuntimeError(text.format(src=names[src], dst=names[dst],
                                           src_c10=_C10_NAMES[src], dst_c10=_C10_NAMES[dst]))
    return check


_PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the "
                    "written-to tensor refer to a single memory location. Please clone() the "
                    "tensor before performing the operation.")


_INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor "
                     "refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.")


def _tensors_in(values) -> list:
    """The Tensors among ``values``, looking one level into lists/tuples (cat's sequence)."""
    found = []
    for v in values:
        if isinstance(v, Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(t for t in v if isinstance(t, Tensor))
    return found


def _dense_span(t: Tensor) -> tuple | None:
    """(first byte, end byte) of ``t``'s memory when it is non-overlapping and dense (with
    non-negative strides), else None (PyTorch's MemOverlap::TooHard: not checked)."""
    if not t._data.flags.c_contiguous:  # (C-contiguous: dense, no negative stride)
        from tgrad.autograd.node import _dense
        if min(t.stride(), default=0) < 0 or not _dense(t):
            return None
    lo = t.data_ptr()
    return lo, lo + t._data.size * t.element_size()


# PyTorch out= kernels that assert_no_overlap (the out may not even be an input: they read
# the input after writing out): cat / stack, the index / scatter family, cross, nonzero, ...
_NO_OVERLAP = frozenset("""
cat concat concatenate stack hstack vstack dstack column_stack row_stack gather take_along_dim
index_select take index_add index_copy index_reduce scatter scatter_add scatter_reduce cross
linalg_cross nonzero masked_select kthvalue index_put
""".split())


# PyTorch out= kernels that check no overlap at all (not TensorIterator's): the matmul
# family, the reductions, fft / linalg (but linalg.cross), det, vdot, searchsorted, ...:
# tgrad computes the result before writing it, so an out overlapping an input is read whole.
_UNCHECKED = frozenset("""
mm matmul bmm addmm addmv addbmm baddbmm mv dot vdot inner tensordot chain_matmul sum mean
prod amax amin logsumexp special_logsumexp std var norm nansum nanmean diag bucketize
searchsorted slice_scatter histc
""".split())
_LINALG_CHECKED = frozenset({"linalg_cross", "linalg_solve_triangular"})


def _layout(t: Tensor) -> list:
    """(size, stride) of t's dims of size > 1: two dense tensors spanning the same memory
    with the same layout hold the same elements in the same order, whatever size-1 dims
    either has (x[None] = x copies x onto itself, as in PyTorch)."""
    return [(n, s) for n, s in zip(t.shape, t.stride()) if n != 1]


def _check_overlap(name: str, out: Tensor, inputs: list) -> None:
    """PyTorch's assert_no_partial_overlap (get_overlap_status): ``out`` may be an input
    (the same memory with the same strides, read before the write; not for _NO_OVERLAP)
    but not overlap one otherwise (both non-overlapping and dense; others are not checked,
    nor are _UNCHECKED functions, as in PyTorch)."""
    if (not out._data.size or name in _UNCHECKED or name.startswith("fft_")
            or (name.startswith("linalg_") and name not in _LINALG_CHECKED)):
        return
    span = None
    for t in inputs:
        if t._storage.root is not out._storage.root or not t._data.size:
            continue
        if t is out:
            full = True
        else:
            if span is None:
                span = _dense_span(out) or ()
            if not span:  # (out not dense: nothing is checked, PyTorch's TooHard)
                continue
            tspan = _dense_span(t)
            if tspan is None or not (tspan[0] < span[1] and span[0] < tspan[1]):
                continue
            full = tspan == span and _layout(t) == _layout(out)
        if not full or name in _NO_OVERLAP:
            raise RuntimeError(_PARTIAL_OVERLAP)


def _elementwise_binary() -> dict:
    """The binary elementwise ops' table (by name), imported on first use."""
    from tgrad.ops.elementwise import _BINARY
    return _BINARY


def _column_major(shape: tuple) -> tuple:
    """Strides of a batch of column-major (Fortran) matrices of ``shape`` (ndim >= 2), as
    LAPACK's results in PyTorch: (..., m, n) -> (..., 1, m), the batch dims outside."""
    m, n = shape[-2], shape[-1]
    return contiguous_strides(shape[:-2] + (m * n,))[:-1] + (1, max(m, 1))


def _resize(out: Tensor, shape: tuple, strides: tuple | None = None) -> None:
    """Give ``out`` the contiguous ``shape`` (PyTorch's resize_output; ``strides``: those
    instead, of a dense layout): in its own storage when that has room from its offset,
    else in new memory (its version counter carries on); PyTorch's UserWarning when
    ``out`` had elements."""
    if out._data.size:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{list(out.shape)}, which does not match the required output shape "
            f"{list(shape)}. This behavior is deprecated, and in a future PyTorch release "
            f"outputs will not be resized unless they have zero elements. You can explicitly "
            f"reuse an out tensor t by resizing it, inplace, to zero elements with "
            f"t.resize_(0).", UserWarning, stacklevel=4)
    from tgrad.ops.layout import _storage_span, as_strided
    n = math.prod(shape)
    out._geometry_changed = True  # (layout.replay_on_base: views made before re-derived)
    off = out.storage_offset()
    strides = contiguous_strides(shape) if strides is None else strides
    if out._data.size and off + n <= _storage_span(out)[1]:
        out._data = as_strided(out.detach(), shape, strides, off)._data
        return
    from tgrad.ops.creation import empty
    fresh = empty(shape, dtype=out.dtype, device=out.device)
    if strides != fresh.stride():
        fresh = as_strided(fresh, shape, strides, 0)
    storage = type(out._storage)(fresh._storage.root)  # (an inference tensor stays one)
    storage.version = out._storage.version
    out._data, out._storage = fresh._data, storage


def check_out_tensor(name: str, out) -> None:
    """PyTorch's TypeError for an out= that is not a tensor."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")


def check_out_grad(name: str, outs: list, inputs: list) -> None:
    """out= is not differentiable: PyTorch's error when an out or an input requires grad
    (callers test grad mode first)."""
    if any(isinstance(t, Tensor) and t.requires_grad for t in inputs + outs):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires "
                           f"grad.")


def _store(name: str, out: Tensor, res: Tensor, exact_dtype: bool, check=None,
           index: int = 0, cast_ok: bool = False, grad: bool = False) -> None:
    """Write result ``res`` (output ``index`` of the function) into ``out`` (checks, resize,
    cast, version bump); ``check``: a dtype rule of _dtype_rule, else exact_dtype says
    which torch-level rule applies; ``cast_ok``: any cast is fine (a _TORCH_RULES rule said
    so); ``grad``: a ``res`` requiring grad is copied with autograd (_COMPOSITE_GRAD)."""
    from tgrad.ops.inplace import _write, check_castable
    check_out_tensor(name, out)
    if check is not None:
        check(index, res.dtype, out.dtype)
    elif exact_dtype and res.dtype is not out.dtype:
        raise RuntimeError(_EXACT_TEXT.format(src_c10=_C10_NAMES[res.dtype],
                                              dst_c10=_C10_NAMES[out.dtype]))
    if not cast_ok:
        check_castable("", res.dtype, out.dtype)
    if res.device != out.device:
        raise RuntimeError(f"{name}(): Expected out tensor to have device {res.device}, but "
                           f"got {out.device} instead")
    check_not_inference(out)  # before a resize
    if tuple(out.shape) != tuple(res.shape):
        column = res.ndim >= 2 and index in _COLUMN_MAJOR.get(name, ())
        _resize(out, tuple(res.shape), _column_major(tuple(res.shape)) if column else None)
    if any(st == 0 and n > 1 for st, n in zip(out.stride(), out.shape)):
        raise RuntimeError(_INTERNAL_OVERLAP)  # (PyTorch's assert_no_internal_overlap)
    if grad and res.requires_grad:  # a _COMPOSITE_GRAD function with grad mode on
        out.copy_(res)
        return
    if res.dtype is not out.dtype:
        res = res.to(out.dtype)
    _write(out, res._data)


def _check_no_tangent(name: str, creation: bool, inputs: list, outs: tuple) -> None:
    """Inside a forward-AD level: PyTorch's out= functions have no forward-AD formula, so
    an input or an out with a tangent raises (tgrad dropped the tangent, or left out's
    stale one)."""
    from tgrad.autograd.forward_ad import get_tangent
    if any(get_tangent(t) is not None for t in (*inputs, *outs)):
        raise NotImplementedError(
            f"Trying to use forward AD with aten::{name} that does not support it." if creation
            else f"Trying to use forward AD with {name}_out that does not support it because "
            f"it is an out= function (call {name} without out= and copy the result)")


def _call_with_out(fn, name: str, creation: bool, args: tuple, kwargs: dict, out,
                   check=None):
    """``fn(*args, **kwargs)`` written into ``out`` (see the module docstring); ``check``:
    the dtype rule of _dtype_rule, if any."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        check_out_tensor(name, o)
    inputs = _tensors_in(list(args) + list(kwargs.values()))
    if creation:
        given = kwargs.get("dtype")
        if given is not None and given is not outs[0].dtype:
            names = dtypes.SCALAR_TYPE_NAMES
            raise RuntimeError(f"dtype {names[given]} does not match dtype of out "
                               f"parameter ({names[outs[0].dtype]})")
        kwargs["dtype"] = outs[0].dtype
        if kwargs.get("device") is None:
            kwargs["device"] = outs[0].device
    if name in _DTYPE_FROM_OUT:  # PyTorch computes these in out's dtype
        given = kwargs.get("dtype")
        if given is not None and dtypes.as_dtype(given) is not outs[0].dtype:
            raise RuntimeError(_EXACT_TEXT.format(src_c10=_C10_NAMES[dtypes.as_dtype(given)],
                                                  dst_c10=_C10_NAMES[outs[0].dtype]))
        if name not in _FLOAT_ONLY or (inputs and _is_float(inputs[0].dtype)
                                       and _is_float(outs[0].dtype)):
            kwargs["dtype"] = outs[0].dtype
    if name in _CHECK_FIRST and inputs and not inputs[0].dtype.is_complex:
        # PyTorch checks these outs before the op's own dtype errors (abs of a bool into a
        # float out: "Found dtype Float but expected Bool"); their result has the input's dtype
        _TORCH_RULES[name](0, inputs[0].dtype, outs[0].dtype, inputs[0].dtype)
    for o in outs:
        _check_overlap(name, o, inputs)
    if STATE.fw_current is not None:
        _check_no_tangent(name, creation, inputs, outs)
    if name in ("median", "nanmedian") and kwargs.get("dim") is None:  # PyTorch's out=
        # overloads all take a dim
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    if name == "argsort" and kwargs.get("stable") is None:  # PyTorch's out= overload needs it
        raise TypeError("argsort() received an invalid combination of arguments - got "
                        "out= without stable=, but expected one of: (Tensor input, *, bool "
                        "stable, int dim = -1, bool descending = False, Tensor out = None)")
    # PyTorch's composite functions record the copy into out when an input requires grad
    composite = (name in _COMPOSITE_GRAD and STATE.enabled
                 and not any(o.requires_grad for o in outs))
    region = STATE.autocast  # PyTorch's autocast lists functional forms only: an out=
    STATE.autocast = None  # form computes in its inputs' dtypes (mm(a, b, out=float32))
    try:
        if composite:
            res = fn(*args, **kwargs)
        else:
            with no_grad():
                res = fn(*args, **kwargs)
    finally:
        STATE.autocast = region
    multi = isinstance(res, tuple)
    results = res if multi else (res,)
    if not all(isinstance(r, Tensor) for r in results):
        raise TypeError(f"{name}(): out= is not supported for this call (its result is not "
                        f"Tensors)")
    # PyTorch's error only for a differentiable result: comparisons, argmax, all/any,
    # searchsorted, matrix_rank, ... (bool / integer results) take inputs requiring grad;
    # sum & co. computed in an integer out's dtype are differentiable ops all the same
    if (STATE.enabled and not composite and name not in _NOT_DIFFERENTIABLE
            and (name in _DTYPE_FROM_OUT or any(r.dtype.category >= 2 for r in results))):
        check_out_grad(_ERROR_NAMES.get(name, name), list(outs), inputs)
    if multi != isinstance(out, (tuple, list)):  # PyTorch's texts
        raise TypeError(f"{name}(): argument 'out' must be "
                        f"{'tuple of Tensors' if multi else 'Tensor'}, not "
                        f"{type(out).__name__}")
    if len(results) != len(outs):
        raise TypeError(f"{name}(): expected tuple of {len(results)} elements but got "
                        f"{len(outs)}")
    rule = _TORCH_RULES.get(name) if check is None else None
    x = inputs[0].dtype if inputs else None
    for i, (o, r) in enumerate(zip(outs, results)):
        if tuple(o.shape) != tuple(r.shape) and o.numel() and name in _elementwise_binary() \
                and any(t._storage.root is o._storage.root for t in inputs):
            # an input of a binary elementwise op as out: PyTorch's TensorIterator does not
            # resize it to the broadcast shape (it was resized, the input overwritten)
            raise RuntimeError(f"{name}(): output with shape {list(o.shape)} doesn't match "
                               f"the broadcast shape {list(r.shape)}")
        cast_ok = rule is not None and rule(i, r.dtype, o.dtype, x)
        _store(name, o, r, exact_dtype=multi or name in _EXACT_DTYPE, check=check, index=i,
               cast_ok=bool(cast_ok), grad=composite)
    if creation and kwargs.get("requires_grad"):
        outs[0].requires_grad_(True)  # PyTorch's factories set it on out too
    if not multi:
        return outs[0]
    return type(res)(*outs) if hasattr(res, "_fields") else outs


def _entry_source(name: str, sig: inspect.Signature) -> str | None:
    """Source of ``def name(<fn's parameters>, out=None)`` calling ``fn`` directly when out
    is None, else _call_with_out. Defaults are fn's own objects (``_d<i>``), so the entry
    behaves as fn for every call without out=, at the cost of one plain call (no
    ``*args, **kwargs`` packing on the hot path)."""
    params, call, pos, kw = [], [], [], []
    star_done = False
    for i, p in enumerate(sig.parameters.values()):
        default = "" if p.default is p.empty else f"=_d{i}"
        if p.kind is p.POSITIONAL_ONLY:
            return None  # rare; the generic entry keeps it simple
        if p.kind is p.POSITIONAL_OR_KEYWORD:
            params.append(p.name + default)
            call.append(p.name)
            pos.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            params.append("*" + p.name)
            call.append("*" + p.name)
            pos.append(p.name)
            star_done = True
        elif p.kind is p.KEYWORD_ONLY:
            if not star_done:
                params.append("*")
                star_done = True
            params.append(p.name + default)
            call.append(f"{p.name}={p.name}")
            kw.append(p.name)
        else:  # VAR_KEYWORD: out goes before it
            if not star_done:
                params.append("*")
                star_done = True
            params.append("out=None")
            params.append("**" + p.name)
            call.append("**" + p.name)
            kw.append("**" + p.name)
            break
    else:
        if not star_done:
            params.append("*")
        params.append("out=None")
    if not any(c.startswith("*") and not c.startswith("**") for c in call):
        kw, pos = pos + kw, []  # no *args: every parameter by name (creation sets dtype=)
    args = "".join(f"*{n}, " if f"*{n}" in call else f"{n}, " for n in pos)
    kwargs = ", ".join(f"**{k[2:]}" if k.startswith("**") else f"{k!r}: {k}"
                       for k in kw)
    kwargs = "{" + kwargs + "}" if kwargs else "{}"
    return (f"def {name}({', '.join(params)}):\n"
            f"    if out is None:\n"
            f"        return _fn({', '.join(call)})\n"
            f"    return _call_with_out(_fn, _name, _creation, ({args}), {kwargs}, out, "
            f"_check)\n")


def with_out(fn, name: str | None = None, creation: bool = False, check=None):
    """``fn`` taking PyTorch's keyword-only ``out=`` (see the module docstring); ``check``:
    a dtype rule of _dtype_rule."""
    name = name or fn.__name__

    def generic(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _call_with_out(fn, name, creation, args, kwargs, out, check)

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return functools.wraps(fn)(generic)
    # (a function that tells a keyword from a positional argument, such as max's Tensor
    # dim=, gets the generic entry: the generated one passes parameters by position)
    src = None if "out" in sig.parameters or getattr(fn, "keyword_sensitive", False) \
        else _entry_source(name, sig)
    if src is None:
        wrapper = functools.wraps(fn)(generic)
    else:
        scope = {"_fn": fn, "_name": name, "_creation": creation, "_check": check,
                 "_call_with_out": _call_with_out}
        scope.update({f"_d{i}": p.default for i, p in enumerate(sig.parameters.values())})
        exec(src, scope)  # noqa: S102 - source built above from fn's own signature
        wrapper = functools.wraps(fn)(scope[name])
    params = list(sig.parameters.values())
    if "out" not in sig.parameters:
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
        wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper


def install(namespace: dict, ns: str | None = None) -> None:
    """Give ``namespace``'s functions out=: tgrad's named in OUT_FUNCTIONS /
    CREATION_FUNCTIONS, or (``ns``: "linalg", "fft", "special") tgrad.<ns>'s named in
    NAMESPACE_FUNCTIONS[ns], called ``<ns>_<name>`` in messages as PyTorch does, with the
    namespace's dtype rule."""
    if ns is None:
        for n in OUT_FUNCTIONS | CREATION_FUNCTIONS:
            fn = namespace.get(n)
            if callable(fn) and not isinstance(fn, type):
                namespace[n] = with_out(fn, n, creation=n in CREATION_FUNCTIONS)
        return
    for n in NAMESPACE_FUNCTIONS[ns]:
        fn = namespace.get(n)
        if callable(fn) and not isinstance(fn, type):
            namespace[n] = with_out(fn, f"{ns}_{n}", creation=n in _NAMESPACE_CREATION,
                                    check=_dtype_rule(ns, n))
