"""The op table for tests/test_opinfo.py (in the spirit of PyTorch's OpInfo).

How to add an op (here or in tests/op_db_nn.py, whose ``OP_DB`` list the runner also
collects)::

    from op_db import OpSpec, Sample, unary_samples

    OP_DB = [OpSpec("exp", tgrad.exp, np.exp, unary_samples)]

An ``OpSpec`` pairs a tgrad callable with a NumPy float64 reference of the same signature and
a sample generator. A ``Sample`` holds the call's positional and keyword arguments:

- ``np.ndarray`` arguments become tgrad tensors. Floating arrays are cast to the dtype
  under test and require grad (they are the differentiable inputs); bool/int arrays keep
  their dtype and never require grad (masks, class indices).
- Everything else (ints, floats, tuples, None, strings) is passed through unchanged, to
  both the tgrad callable and the reference.
- ``layouts`` gives, per array argument (in order), how the tensor is built: ``"c"``
  contiguous, ``"T"`` a transposed view (last two dims swapped, ndim >= 2) or ``"s"`` a
  strided slice ``[..., ::2]`` of a twice-as-wide buffer. Missing entries mean ``"c"``.
  The array's shape is the logical shape the op sees; gradients are checked on the
  underlying leaf, through the view.
- ``gradgrad=False`` on a sample skips gradgradcheck where the first derivative jumps at
  that very point (e.g. tied maxima).

The runner applies ``OpSpec.domain`` to every floating array before use, so generators can
just draw standard normals. The reference always sees float64 arrays (for float16/bfloat16
runs: the inputs rounded to that dtype first, then widened). It returns an ndarray or a
tuple of them (ops with several outputs, e.g. ``max(x, dim)`` -> (values, indices)); bool
and integer outputs are compared exactly, floating ones with the dtype's tolerances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import tgrad

# PyTorch's default (rtol, atol) per dtype (torch.testing.assert_close).
DEFAULT_TOLS = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}
ALL_FLOAT = ("float64", "float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Sample:
    """One call: ``op(*args, **kwargs)``; see the module docstring for the conventions."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    layouts: tuple = ()
    desc: str = ""
    # False where the first derivative jumps at this very point (ties in max/min), so a
    # finite-difference second derivative is meaningless there.
    gradgrad: bool = True

    def __repr__(self) -> str:
        shapes = [a.shape if isinstance(a, np.ndarray) else a for a in self.args]
        return f"Sample({self.desc or shapes}, kwargs={self.kwargs}, layouts={self.layouts})"


@dataclass(frozen=True)
class OpSpec:
    """One op of the table.

    name:            test id (unique across op_db.py and op_db_nn.py).
    op:              the tgrad callable, ``op(*args, **kwargs)`` -> Tensor or tuple.
    ref:             NumPy float64 reference with the same signature over ndarrays.
    samples:         ``samples(rng) -> list[Sample]``; include 0-d, empty, sizes
                     1/17/1023/1025, broadcasting pairs and non-contiguous layouts.
    domain:          (lo, hi) for floating inputs (None = unbounded); the runner maps the
                     drawn normals into it (e.g. (0, None) for log: |x| + 0.1).
    differentiable:  run gradcheck/gradgradcheck (False: comparisons, argmax, all/any...).
    gradgrad:        also run gradgradcheck (second derivatives through create_graph).
    grad_max_numel:  gradcheck/gradgradcheck only samples whose array inputs have at most
                     this many elements in total (gradcheck costs O(numel) backward passes);
                     larger samples get one backward checked against a finite-difference
                     directional derivative instead.
    dtypes:          floating dtypes whose forward is checked against the reference.
    tols:            per-dtype (rtol, atol) overrides of DEFAULT_TOLS; keep them PyTorch's.
    nan_inf:         check that NaN/+inf/-inf placed in the first floating input propagate
                     as the NumPy reference says.
    """

    name: str
    op: Callable[..., Any]
    ref: Callable[..., Any]
    samples: Callable[[np.random.Generator], list]
    domain: tuple = (None, None)
    differentiable: bool = True
    gradgrad: bool = True
    grad_max_numel: int = 30
    dtypes: tuple = ALL_FLOAT
    tols: dict = field(default_factory=dict)
    nan_inf: bool = True

    def tol(self, dtype: str) -> tuple:
        return self.tols.get(dtype, DEFAULT_TOLS[dtype])

    def __repr__(self) -> str:
        return f"OpSpec({self.name})"


# ---------------------------------------------------------------------- sample helpers
SIZES = (1, 17, 1023, 1025)


def _n(rng, *shape):
    return np.asarray(rng.standard_normal(shape))


def unary_samples(rng: np.random.Generator) -> list:
    """0-d, empty, 1-D sizes 1/17/1023/1025, 2-D, transposed and sliced views."""
    s = [Sample((_n(rng),), desc="0-d"), Sample((_n(rng, 0),), desc="empty"),
         Sample((_n(rng, 2, 0, 3),), desc="empty-3d")]
    s += [Sample((_n(rng, n),), desc=f"n={n}") for n in SIZES]
    s += [Sample((_n(rng, 3, 4),), desc="2d"),
          Sample((_n(rng, 4, 3),), layouts=("T",), desc="transposed"),
          Sample((_n(rng, 3, 5),), layouts=("s",), desc="sliced"),
          Sample((_n(rng, 33, 31),), layouts=("T",), desc="transposed-large")]
    return s


def binary_samples(rng: np.random.Generator) -> list:
    """Same shapes, broadcasting pairs, 0-d with n-d, non-contiguous operands."""
    s = [Sample((_n(rng), _n(rng)), desc="0-d"),
         Sample((_n(rng, 0), _n(rng, 0)), desc="empty"),
         Sample((_n(rng, 0, 3), _n(rng, 3)), desc="empty-bcast")]
    s += [Sample((_n(rng, n), _n(rng, n)), desc=f"n={n}") for n in SIZES]
    s += [Sample((_n(rng, 3, 1), _n(rng, 1, 4)), desc="bcast-outer"),
          Sample((_n(rng, 2, 3, 4), _n(rng, 4)), desc="bcast-trailing"),
          Sample((_n(rng, 4), _n(rng, 2, 1, 4)), desc="bcast-lead"),
          Sample((_n(rng, 3, 4), _n(rng)), desc="nd-0d"),
          Sample((_n(rng), _n(rng, 3, 4)), desc="0d-nd"),
          Sample((_n(rng, 3, 4), _n(rng, 3, 4)), layouts=("T", "c"), desc="T-c"),
          Sample((_n(rng, 3, 4), _n(rng, 3, 4)), layouts=("s", "T"), desc="s-T"),
          Sample((_n(rng, 40, 33), _n(rng, 33)), layouts=("T",), desc="T-large-bcast")]
    return s


def scalar_samples(value: float) -> Callable:
    """Tensor-with-Python-scalar samples (``op(t, value)``), for reflected forms too."""
    def gen(rng):
        return [Sample((_n(rng), value), desc="0-d"), Sample((_n(rng, 0), value), desc="empty"),
                Sample((_n(rng, 17), value), desc="n=17"),
                Sample((_n(rng, 1025), value), desc="n=1025"),
                Sample((_n(rng, 4, 3), value), layouts=("T",), desc="T")]
    return gen


def reduction_samples(rng: np.random.Generator, *, allow_empty: bool = True,
                      dims: tuple = (None, 0, 1, -1, (0, 1), (0, -1))) -> list:
    """Full and per-dim reductions, keepdim both ways, 0-d and empty where defined."""
    s = [Sample((_n(rng),), desc="0-d"), Sample((_n(rng),), {"dim": 0}, desc="0-d dim0"),
         Sample((_n(rng),), {"dim": -1, "keepdim": True}, desc="0-d keepdim")]
    if allow_empty:
        s += [Sample((_n(rng, 0),), desc="empty"),
              Sample((_n(rng, 0, 3),), {"dim": 0}, desc="empty-dim0"),
              Sample((_n(rng, 0, 3),), {"dim": 1}, desc="empty-dim1-nonempty")]
    else:
        s += [Sample((_n(rng, 0, 3),), {"dim": 1}, desc="empty-dim1-nonempty")]
    s += [Sample((_n(rng, n),), desc=f"n={n}") for n in SIZES]
    s += [Sample((_n(rng, 1025),), {"dim": 0, "keepdim": True}, desc="n=1025 keepdim")]
    for d in dims:
        for keep in (False, True):
            s.append(Sample((_n(rng, 2, 3, 2),), {"dim": d, "keepdim": keep},
                            desc=f"3d dim={d} keep={keep}"))
    s += [Sample((_n(rng, 4, 3),), {"dim": 1}, layouts=("T",), desc="T dim1"),
          Sample((_n(rng, 3, 6),), {"dim": 0}, layouts=("s",), desc="s dim0"),
          Sample((_n(rng, 40, 33),), {"dim": 1}, layouts=("T",), desc="T-large dim1")]
    return s


def single_dim_samples(rng: np.random.Generator) -> list:
    """For ops whose ``dim`` is one int (argmax, max(x, dim)...): no empty reductions."""
    s = [Sample((_n(rng),), desc="0-d"), Sample((_n(rng),), {"dim": 0}, desc="0-d dim0")]
    s += [Sample((_n(rng, n),), desc=f"n={n}") for n in SIZES]
    s += [Sample((_n(rng, 1025),), {"dim": 0}, desc="n=1025 dim0"),
          Sample((_n(rng, 0, 3),), {"dim": 1}, desc="empty other dim")]
    for d in (0, 1, -1, 2):
        for keep in (False, True):
            s.append(Sample((_n(rng, 2, 3, 2),), {"dim": d, "keepdim": keep},
                            desc=f"3d dim={d} keep={keep}"))
    s += [Sample((_n(rng, 4, 3),), {"dim": 1}, layouts=("T",), desc="T dim1"),
          Sample((_n(rng, 3, 6),), {"dim": 0}, layouts=("s",), desc="s dim0")]
    return s


def _bool_of(rng, *shape):
    return np.asarray(rng.standard_normal(shape) > 0)


# ---------------------------------------------------------------------- references
def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if np.ndim(x) else \
        np.float64(math.erf(float(x)))


def _np_sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _np_round(x):
    return np.round(x)  # half to even, as torch.round


def _red(fn):
    """A NumPy reduction called as ``fn(x, dim=None, keepdim=False)``."""
    def ref(x, dim=None, keepdim=False):
        axis = _axis(dim, x.ndim)
        return np.asarray(fn(x, axis=axis, keepdims=keepdim))
    return ref


def _axis(dim, ndim):
    if dim is None or ndim == 0:
        return None
    return dim


def _np_max_dim(fn, argfn):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return np.asarray(fn(x))
        axis = None if x.ndim == 0 else dim
        vals = np.asarray(fn(x, axis=axis, keepdims=keepdim and x.ndim > 0))
        idx = np.asarray(argfn(x, axis=axis, keepdims=keepdim and x.ndim > 0))
        return vals, idx.astype(np.int64)
    return ref


def _np_arg(argfn):
    def ref(x, dim=None, keepdim=False):
        if dim is None or x.ndim == 0:
            return np.asarray(argfn(x)).astype(np.int64)
        return np.asarray(argfn(x, axis=dim, keepdims=keepdim)).astype(np.int64)
    return ref


def _np_var(std: bool):
    def ref(x, dim=None, keepdim=False, correction=1):
        with np.errstate(all="ignore"):
            v = np.var(x, axis=_axis(dim, x.ndim), ddof=correction, keepdims=keepdim)
            n = x.size if dim is None or x.ndim == 0 else \
                int(np.prod([x.shape[d] for d in np.atleast_1d(dim)]))
            if n - correction <= 0:  # PyTorch: nan (or inf) where NumPy warns
                v = np.full_like(np.asarray(v), np.nan)
            return np.sqrt(v) if std else np.asarray(v)
    return ref


def _np_logsumexp(x, dim=None, keepdim=False):
    axis = _axis(dim, x.ndim)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0.0)
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdim:
        out = out.reshape(np.sum(x, axis=axis).shape)
    return np.asarray(out)


def _np_norm(x, p="fro", dim=None, keepdim=False):
    axis = _axis(dim, x.ndim)
    a = np.abs(x)
    with np.errstate(all="ignore"):
        if p in ("fro", 2, 2.0):
            return np.asarray(np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim)))
        if p == math.inf:
            return np.asarray(np.max(a, axis=axis, keepdims=keepdim))
        if p == -math.inf:
            return np.asarray(np.min(a, axis=axis, keepdims=keepdim))
        if p == 0:
            return np.asarray(np.sum(a != 0, axis=axis, keepdims=keepdim), dtype=np.float64)
        return np.asarray(np.sum(a ** p, axis=axis, keepdims=keepdim) ** (1.0 / p))


def _np_clamp(x, min=None, max=None):  # noqa: A002
    y = x
    if min is not None:
        y = np.maximum(y, min)
    if max is not None:
        y = np.minimum(y, max)
    return y


# ---------------------------------------------------------------------- sample generators
def _pow_samples(rng):
    return [s for s in binary_samples(rng)] + [
        Sample((_n(rng, 17), 2.5), desc="t**2.5"), Sample((_n(rng, 3, 4), 0.5), desc="t**0.5"),
        Sample((_n(rng, 17), -1.5), desc="t**-1.5"), Sample((_n(rng), 3.0), desc="0d**3")]


def _mod_samples(rng):
    """binary_samples with divisors kept away from 0 (|b| >= 0.5, both signs) and a
    number divisor; the remainder jumps where a / b is an integer, which random values
    avoid by far more than the finite-difference step."""
    out = []
    for s in binary_samples(rng):
        a, b = s.args
        b = np.asarray(np.where(b < 0, -1.0, 1.0) * (0.5 + np.abs(b)))  # 0-d stays an array
        out.append(Sample((np.asarray(a * 3.0), b), s.kwargs, s.layouts, s.desc))
    return out + [Sample((_n(rng, 17) * 3.0, 1.25), desc="t % 1.25"),
                  Sample((_n(rng, 17) * 3.0, -0.75), desc="t % -0.75")]


def _int_pow_samples(rng):
    return [Sample((_n(rng, 17), 3), desc="t**3"), Sample((_n(rng, 17), 2), desc="t**2"),
            Sample((_n(rng, 3, 4), 0), desc="t**0"), Sample((_n(rng, 0), 2), desc="empty**2"),
            Sample((np.array([0.0, 1.5, -2.0]), 0.0), desc="zero**0"),
            Sample((np.array([0.0, 1.5, -2.0]), 2), desc="zero**2"),
            Sample((_n(rng, 4, 3), -2.0), layouts=("T",), desc="T**-2")]


def _where_samples(rng):
    return [Sample((_bool_of(rng, 17), _n(rng, 17), _n(rng, 17)), desc="n=17"),
            Sample((_bool_of(rng, 3, 1), _n(rng, 1, 4), _n(rng, 4)), desc="bcast"),
            Sample((_bool_of(rng), _n(rng), _n(rng)), desc="0-d"),
            Sample((_bool_of(rng, 0), _n(rng, 0), _n(rng, 0)), desc="empty"),
            Sample((_bool_of(rng, 1025), _n(rng, 1025), _n(rng, 1025)), desc="n=1025"),
            Sample((_bool_of(rng, 3, 4), _n(rng, 3, 4), _n(rng, 3, 4)), layouts=("c", "T", "s"),
                   desc="views")]


def _clamp_samples(rng):
    return [Sample((_n(rng, 17),), {"min": -0.5, "max": 0.5}, desc="both"),
            Sample((_n(rng, 17),), {"min": -0.3}, desc="min"),
            Sample((_n(rng, 3, 4),), {"max": 0.2}, desc="max"),
            Sample((_n(rng),), {"min": -0.5, "max": 0.5}, desc="0-d"),
            Sample((_n(rng, 0),), {"min": -0.5, "max": 0.5}, desc="empty"),
            Sample((_n(rng, 1025),), {"min": -1.0, "max": 1.0}, desc="n=1025"),
            Sample((_n(rng, 4, 3),), {"min": -1.0, "max": 0.0}, layouts=("T",), desc="T")]


def _clamp_tensor_samples(rng):
    lo, hi = -np.abs(_n(rng, 17)), np.abs(_n(rng, 17))
    return [Sample((_n(rng, 17), lo, hi), desc="tensor bounds"),
            Sample((_n(rng, 3, 4), _n(rng, 4) - 0.5, None), desc="tensor min, bcast"),
            Sample((_n(rng, 3, 4), None, _n(rng, 3, 1)), desc="tensor max, bcast")]


def _prod_samples(rng):
    """reduction_samples plus exact zeros (one and two per slice): the special cases of
    prod's backward."""
    one = np.array([[0.0, 2.0, -1.5], [0.7, 0.0, 0.0]])
    return reduction_samples(rng) + [
        Sample((one,), {"dim": 1}, desc="zeros dim1"),
        Sample((one,), {"dim": 0, "keepdim": True}, desc="zeros dim0"),
        Sample((one,), desc="zeros all")]


def _promotion_samples(rng):
    """binary_samples plus integer/bool operands: int op float -> the float dtype, int op
    int -> int64, 0-d float with an int tensor -> the 0-d float's dtype (PyTorch)."""
    ints = np.asarray(rng.integers(1, 5, 17))
    return binary_samples(rng) + [
        Sample((ints, _n(rng, 17)), desc="int64 + float"),
        Sample((_n(rng, 3, 4), np.asarray(rng.integers(1, 5, (3, 4)))), desc="float + int64"),
        Sample((_bool_of(rng, 17), _n(rng, 17)), desc="bool + float"),
        Sample((ints, np.asarray(rng.integers(1, 5, 17))), desc="int64 + int64"),
        Sample((np.asarray(rng.integers(1, 5, (3, 4))), _n(rng)), desc="int64 + 0-d float")]


def _small_int_samples(rng):
    """_promotion_samples plus the small integer dtypes (PyTorch's promotion, which NumPy
    shares for them: uint8 with int8 -> int16; arithmetic wraps modulo 2^bits)."""
    u8 = np.asarray(rng.integers(0, 256, 17), np.uint8)
    return _promotion_samples(rng) + [
        Sample((u8, np.asarray(rng.integers(0, 256, 17), np.uint8)), desc="uint8 + uint8"),
        Sample((u8, np.asarray(rng.integers(-128, 128, 17), np.int8)), desc="uint8 + int8"),
        Sample((np.asarray(rng.integers(-128, 128, (3, 4)), np.int8),
                np.asarray(rng.integers(-2**15, 2**15, (3, 4)), np.int16)), desc="int8 + int16"),
        Sample((np.asarray(rng.integers(-2**15, 2**15, 17), np.int16), _n(rng, 17)),
               desc="int16 + float")]


def _atan2_samples(rng):
    """_promotion_samples (integers and bools promote to the default float, as PyTorch) plus
    every pair of signed zeros, infinities, +-1 and NaN (forward only: the reference has a
    NaN, so gradcheck skips it)."""
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    return _promotion_samples(rng) + [
        Sample((special.reshape(7, 1), special.reshape(1, 7)), desc="specials")]


def _logical_samples(rng):
    return [Sample((_bool_of(rng, 17), _bool_of(rng, 17)), desc="n=17"),
            Sample((_bool_of(rng, 3, 1), _bool_of(rng, 4)), desc="bcast"),
            Sample((_bool_of(rng), _bool_of(rng)), desc="0-d"),
            Sample((_bool_of(rng, 0), _bool_of(rng, 0)), desc="empty"),
            Sample((_n(rng, 17), _n(rng, 17)), desc="float n=17")]


def _logical_not_samples(rng):
    return [Sample((_bool_of(rng, 17),), desc="n=17"), Sample((_bool_of(rng),), desc="0-d"),
            Sample((_bool_of(rng, 0),), desc="empty"), Sample((_n(rng, 3, 4),), desc="float")]


def _compare_samples(rng):
    s = binary_samples(rng)
    a = np.round(_n(rng, 17))  # ties on purpose
    return s + [Sample((a, np.round(_n(rng, 17))), desc="ties")]


def _var_samples(rng):
    s = reduction_samples(rng)
    s += [Sample((_n(rng, 3, 4),), {"dim": 1, "correction": 0}, desc="correction=0"),
          Sample((_n(rng, 3, 4),), {"dim": 0, "correction": 2, "keepdim": True},
                 desc="correction=2"),
          Sample((_n(rng, 1),), {"dim": 0}, desc="n=1 -> nan")]
    return s


def _norm_samples(rng):
    s = []
    for p in ("fro", 2, 1, math.inf, -math.inf, 3.0):
        s += [Sample((_n(rng, 17),), {"p": p}, desc=f"p={p} n=17"),
              Sample((_n(rng, 3, 4),), {"p": p, "dim": 1}, desc=f"p={p} dim1"),
              Sample((_n(rng, 3, 4),), {"p": p, "dim": 0, "keepdim": True},
                     desc=f"p={p} dim0 keep")]
    s += [Sample((_n(rng),), desc="0-d"), Sample((_n(rng, 1025),), desc="n=1025"),
          Sample((_n(rng, 3, 4, 2),), {"dim": (0, 2)}, desc="dims (0, 2)"),
          Sample((_n(rng, 0),), desc="empty"),
          Sample((_n(rng, 4, 3),), {"dim": -1}, layouts=("T",), desc="T")]
    return s


def _bool_red_samples(rng):
    x = rng.standard_normal((3, 4, 2)) > -0.5
    return [Sample((x,), desc="all dims"), Sample((x,), {"dim": 1}, desc="dim1"),
            Sample((x,), {"dim": -1, "keepdim": True}, desc="dim -1 keep"),
            Sample((np.zeros((0, 3), bool),), desc="empty"),
            Sample((np.zeros((0, 3), bool),), {"dim": 0}, desc="empty dim0"),
            Sample((np.ones((), bool),), desc="0-d"),
            Sample((_n(rng, 17),), desc="float input"),
            Sample((np.ones(1025, bool),), desc="n=1025")]


def _ties_samples(rng):
    """max/min with repeated extremes: the gradient is shared evenly among ties."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
    return [Sample((x,), desc="ties all", gradgrad=False),
            Sample((x,), {"dim": 1}, desc="ties dim1", gradgrad=False),
            Sample((x,), {"dim": 0, "keepdim": True}, desc="ties dim0", gradgrad=False)]


def _fd_free(rng):
    return []


def _masked_fill_samples(rng):
    """A number or a 0-d tensor (which gets a gradient) as the value; the mask broadcasts."""
    return [Sample((_n(rng, 17), _bool_of(rng, 17), -2.5), desc="number"),
            Sample((_n(rng, 3, 4), _bool_of(rng, 4), _n(rng)), desc="0-d tensor value, bcast"),
            Sample((_n(rng, 4), _bool_of(rng, 3, 4), 1.0), desc="mask widens the result"),
            Sample((_n(rng), _bool_of(rng), _n(rng)), desc="0-d"),
            Sample((_n(rng, 0, 3), _bool_of(rng, 0, 3), 1.0), desc="empty"),
            Sample((_n(rng, 1025), _bool_of(rng, 1025), _n(rng)), desc="n=1025"),
            Sample((_n(rng, 4, 3), _bool_of(rng, 4, 3), 0.5), layouts=("T", "s"), desc="views")]


def _triangle_samples(rng):
    return [Sample((_n(rng, 4, 5),), desc="4x5"),
            Sample((_n(rng, 5, 4), 1), desc="diagonal=1"),
            Sample((_n(rng, 4, 4), -2), desc="diagonal=-2"),
            Sample((_n(rng, 3, 4), 9), desc="diagonal past the end"),
            Sample((_n(rng, 2, 3, 4), -1), desc="batched"),
            Sample((_n(rng, 1, 1),), desc="1x1"),
            Sample((_n(rng, 0, 3),), desc="empty"),
            Sample((_n(rng, 33, 31),), layouts=("T",), desc="transposed"),
            Sample((_n(rng, 3, 5),), layouts=("s",), desc="sliced")]


def _int_index(rng, high, *shape):
    return np.asarray(rng.integers(0, high, shape), dtype=np.int64)


def _index_select_samples(rng):
    return [Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 5)), desc="dim1, repeats"),
            Sample((_n(rng, 17), 0, _int_index(rng, 17, 17)), desc="n=17"),
            Sample((_n(rng, 2, 3, 4), -2, _int_index(rng, 3, 2)), desc="dim -2"),
            Sample((_n(rng, 3, 4), 0, np.zeros(0, np.int64)), desc="empty index"),
            Sample((_n(rng, 0, 4), 1, _int_index(rng, 4, 3)), desc="empty input"),
            Sample((_n(rng), 0, np.zeros((), np.int64)), desc="0-d"),
            Sample((_n(rng, 1025, 2), 0, _int_index(rng, 1025, 1023)), desc="n=1025"),
            Sample((_n(rng, 4, 3), 1, _int_index(rng, 3, 5)), layouts=("T",), desc="T")]


def _gather_samples(rng):
    return [Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 3, 2)), desc="dim1"),
            Sample((_n(rng, 3, 4), 0, _int_index(rng, 3, 5, 4)), desc="dim0, index longer"),
            Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 2, 6)), desc="index narrower"),
            Sample((_n(rng, 2, 3, 4), -1, _int_index(rng, 4, 2, 3, 4)), desc="3d dim -1"),
            Sample((_n(rng, 17), 0, _int_index(rng, 17, 17)), desc="n=17"),
            Sample((_n(rng), 0, np.zeros((), np.int64)), desc="0-d"),
            Sample((_n(rng, 3, 4), 1, np.zeros((0, 2), np.int64)), desc="empty index"),
            Sample((_n(rng, 1025), 0, _int_index(rng, 1025, 1023)), desc="n=1025"),
            Sample((_n(rng, 4, 3), 0, _int_index(rng, 4, 4, 3)), layouts=("T", "T"),
                   desc="T input and index")]


def _np_gather(x, dim, index):
    if x.ndim == 0:
        return x.copy()
    # take_along_axis needs the other dims equal: cut x down to index's extents there.
    cut = tuple(slice(None) if k == dim % x.ndim else slice(0, n)
                for k, n in enumerate(index.shape))
    return np.take_along_axis(x[cut], index, axis=dim)


def _np_index_select(x, dim, index):
    return x.copy() if x.ndim == 0 else np.take(x, index.reshape(-1), axis=dim)


def _isclose_samples(rng):
    a = _n(rng, 4, 5)
    b = a + rng.choice([0.0, 1e-9, 1e-6, 1e-3], a.shape) * rng.choice([-1, 1], a.shape)
    special = np.array([np.inf, -np.inf, np.nan, 1.0, np.inf, 0.0])
    other = np.array([np.inf, np.inf, np.nan, np.inf, np.nan, 1e-9])
    return [Sample((a, b), desc="near"), Sample((a, b), {"rtol": 1e-3, "atol": 0.0}, desc="rtol"),
            Sample((a, b[0]), desc="bcast"), Sample((special, other), desc="inf/nan"),
            Sample((special, other), {"equal_nan": True}, desc="equal_nan"),
            Sample((a, b), {"rtol": 0.0, "atol": 0.0}, desc="exact"),
            Sample((_n(rng, 0), _n(rng, 0)), desc="empty")]


def _einsum_samples(rng):
    """Products, contractions, traces/diagonals, ``...`` broadcasting, implicit output."""
    eqs = [("ij,jk->ik", (3, 4), (4, 5)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 2)),
           ("ii->i", (3, 3)), ("ii", (4, 4)), ("i,i->", (17,), (17,)), ("i,j->ij", (3,), (4,)),
           ("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2)), ("ijk->kj", (2, 3, 4)),
           ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)), ("ij,jk", (2, 3), (3, 4)),
           (",i->i", (), (3,)), ("iji->j", (3, 2, 3)), ("ij,kj->ik", (0, 3), (2, 3)),
           ("bhqd,bhkd->bhqk", (1, 2, 3, 4), (1, 2, 5, 4)), ("i->", (1025,))]
    s = [Sample((eq, *(_n(rng, *sh) for sh in shapes)), desc=eq) for eq, *shapes in eqs]
    return s + [Sample(("ij,jk->ik", _n(rng, 4, 3), _n(rng, 3, 5)), layouts=("T", "s"),
                       desc="views")]


def _repeat_samples(rng):
    return [Sample((_n(rng, 2, 3), (2, 1, 2)), desc="3 reps for 2 dims"),
            Sample((_n(rng, 17), (3,)), desc="n=17"),
            Sample((_n(rng), (2, 3)), desc="0-d"),
            Sample((_n(rng, 3, 2), (0, 2)), desc="zero reps"),
            Sample((_n(rng, 0, 2), (2, 2)), desc="empty"),
            Sample((_n(rng, 4, 3), (2, 1)), layouts=("T",), desc="T")]


def _flip_samples(rng):
    return [Sample((_n(rng, 3, 4), (0,)), desc="dim0"),
            Sample((_n(rng, 2, 3, 4), (0, -1)), desc="two dims"),
            Sample((_n(rng, 1025), (0,)), desc="n=1025"),
            Sample((_n(rng), ()), desc="0-d"),
            Sample((_n(rng, 0, 3), (1,)), desc="empty"),
            Sample((_n(rng, 4, 3), (1,)), layouts=("T",), desc="T")]


def _cumsum_samples(rng):
    s = [Sample((_n(rng), 0), desc="0-d"), Sample((_n(rng, 0), 0), desc="empty"),
         Sample((_n(rng, 0, 3), 1), desc="empty other dim")]
    s += [Sample((_n(rng, n), 0), desc=f"n={n}") for n in SIZES]
    s += [Sample((_n(rng, 3, 4), d), desc=f"2d dim={d}") for d in (0, 1, -1)]
    s += [Sample((_n(rng, 2, 5, 3), 1), desc="3d middle dim"),
          Sample((np.asarray(rng.integers(-5, 5, (3, 17))), 1), desc="int64"),
          Sample((np.asarray(rng.integers(-128, 128, (3, 17)), np.int8), 1), desc="int8"),
          Sample((np.asarray(rng.integers(0, 256, 17), np.uint8), 0), desc="uint8"),
          Sample((_bool_of(rng, 17), 0), desc="bool"),
          Sample((_n(rng, 4, 3), 0), layouts=("T",), desc="T dim0"),
          Sample((_n(rng, 3, 5), 1), layouts=("s",), desc="s dim1"),
          Sample((_n(rng, 40, 33), 0), layouts=("T",), desc="T-large")]
    return s


def _np_cumsum(x, dim, dtype=None):
    if x.ndim == 0:
        return x.copy()
    out = np.cumsum(x, axis=dim)
    return out.astype(np.int64) if out.dtype.kind in "iub" else out


# ---- sorting (tgrad/ops/sorting.py): references built on np.lexsort, independent of the
# backends' np.argsort: the order is (NaN last, value, position), descending (NaN first,
# -value, position), so ties keep their order both ways and -0.0 == +0.0.
def _np_order(x, axis, descending=False):
    xm = np.moveaxis(x, axis, -1)
    pos = np.broadcast_to(np.arange(xm.shape[-1]), xm.shape)
    nan = np.isnan(xm) if xm.dtype.kind == "f" else np.zeros(xm.shape, bool)
    v = np.where(nan, 0, xm).astype(np.float64 if xm.dtype.kind == "f" else np.int64)
    down = -v if v.dtype.kind == "f" else ~v  # ~v = -v - 1: no overflow at the int64 min
    keys = (pos, down, ~nan) if descending else (pos, v, nan)  # lexsort: the last key first
    return np.moveaxis(np.lexsort(keys, axis=-1), -1, axis).astype(np.int64)


def _np_sort(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return x.copy(), np.asarray(0, np.int64)
    o = _np_order(x, dim, descending)
    return np.take_along_axis(x, o, dim), o


def _np_argsort(x, dim=-1, descending=False, stable=False):
    return _np_sort(x, dim, descending)[1]


def _np_topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    if x.ndim == 0:
        return x.copy(), np.asarray(0, np.int64)
    o = np.take(_np_order(x, dim, largest), np.arange(k), axis=dim)
    return np.take_along_axis(x, o, dim), o


def _np_kthvalue(x, k, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.asarray(0, np.int64)
    o = np.take(_np_order(x, dim), [k - 1], axis=dim)
    v = np.take_along_axis(x, o, dim)
    return (v, o) if keepdim else (v.squeeze(dim), o.squeeze(dim))


def _np_line_median(line, ignore_nan):
    """Index of the lower median of a 1-D line: the first NaN if any (median), of the
    non-NaN values (nanmedian; 0 when all are NaN)."""
    nan = np.isnan(line) if line.dtype.kind == "f" else np.zeros(line.shape, bool)
    if nan.any() and not ignore_nan:
        return int(np.flatnonzero(nan)[0])
    ok = np.flatnonzero(~nan)
    if ok.size == 0:
        return 0
    return int(ok[np.argsort(line[ok], kind="stable")][(ok.size - 1) // 2])


def _np_median(ignore_nan):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            flat = x.reshape(-1)
            if flat.size == 0:
                return np.asarray(np.nan)
            return np.asarray(flat[_np_line_median(flat, ignore_nan)])
        if x.ndim == 0:
            return x.copy(), np.asarray(0, np.int64)
        xm = np.moveaxis(x, dim, -1)
        lines = xm.reshape(-1, xm.shape[-1])
        idx = np.array([_np_line_median(r, ignore_nan) for r in lines], np.int64)
        idx = idx.reshape(xm.shape[:-1] + (1,))
        v = np.moveaxis(np.take_along_axis(xm, idx, -1), -1, dim)
        idx = np.moveaxis(idx, -1, dim)
        return (v, idx) if keepdim else (v.squeeze(dim), idx.squeeze(dim))
    return ref


def _ties_of(rng, *shape):
    """Integer-valued floats in [-3, 3): many ties, -0.0 beside +0.0."""
    x = rng.integers(-3, 3, shape).astype(np.float64)
    return np.where((x == 0) & (rng.random(shape) < 0.5), -0.0, x)


def _sort_samples(rng):
    s = [Sample((_n(rng),), desc="0-d"),
         Sample((_n(rng), 0, True), {"stable": True}, desc="0-d dim0 desc"),
         Sample((_n(rng, 0),), desc="empty"),
         Sample((_n(rng, 2, 0, 3), 1), desc="empty dim"),
         Sample((_n(rng, 0, 3), 1), desc="empty other dim")]
    s += [Sample((_n(rng, n),), desc=f"n={n}") for n in SIZES]
    s += [Sample((_n(rng, 1025),), {"descending": True}, desc="n=1025 desc"),
          Sample((_n(rng, 3, 4), 0), desc="2d dim=0"),
          Sample((_n(rng, 3, 4), -1, True), desc="2d desc"),
          Sample((_n(rng, 2, 5, 3),), {"dim": 1, "descending": True, "stable": True},
                 desc="3d middle dim"),
          Sample((_n(rng, 3, 200), 1), desc="3 lines of 200 (merge passes)"),
          Sample((_n(rng, 130, 3), 0, True), desc="strided lines of 130, desc"),
          Sample((_n(rng, 4, 3), 0), layouts=("T",), desc="T dim0"),
          Sample((_n(rng, 3, 5), 1), layouts=("s",), desc="s dim1"),
          Sample((_n(rng, 40, 33), 0), layouts=("T",), desc="T-large"),
          Sample((np.asarray(rng.integers(-5, 5, (3, 17))), 1, True), desc="int64 desc"),
          Sample((np.asarray(rng.integers(-5, 5, 150)),), desc="int64 n=150"),
          Sample((np.asarray(rng.integers(0, 256, (3, 40)), np.uint8), 1, True),
                 desc="uint8 desc"),
          Sample((np.asarray(rng.integers(-2**15, 2**15, 150), np.int16),), desc="int16"),
          Sample((_bool_of(rng, 70),), desc="bool"),
          Sample((_bool_of(rng, 4, 9), 1, True), desc="bool desc")]
    return s


def _argsort_samples(rng):
    i64, i32 = np.iinfo(np.int64), np.iinfo(np.int32)
    ext = [i64.max, i64.min, 0, i64.min, -1, i64.max]  # the keys next to the padding's
    return [x for x in _sort_samples(rng) if x.desc.startswith(
        ("0-d", "empty", "n=1025", "2d", "s dim", "int", "bool"))] + [
        Sample((np.array(ext, np.int64),), desc="int64 extremes"),
        Sample((np.array(ext, np.int64), 0, True), desc="int64 extremes desc"),
        Sample((np.array([i32.max, i32.min, 0, i32.min, i32.max], np.int32), 0, True),
               desc="int32 extremes desc"),
        Sample((np.asarray(rng.integers(-5, 5, (3, 90)), np.int32), 1), desc="int32")]


def _topk_samples(rng):
    s = [Sample((_n(rng), 1), desc="0-d"), Sample((_n(rng), 0, 0), desc="0-d k=0"),
         Sample((_n(rng, 0), 0), desc="empty"), Sample((_n(rng, 3, 0), 0), desc="k=0 of 0"),
         Sample((_n(rng, 17), 5), desc="n=17"), Sample((_n(rng, 17), 17), desc="k=n"),
         Sample((_n(rng, 1025), 3, 0, False), desc="n=1025 smallest"),
         Sample((_n(rng, 4, 6), 2, 0), desc="dim0"),
         Sample((_n(rng, 2, 5, 3), 2, 1, True, False), desc="3d unsorted"),
         Sample((_n(rng, 3, 70), 4), desc="lines of 70"),
         Sample((_n(rng, 5, 4), 2, 1), layouts=("T",), desc="T"),
         Sample((np.asarray(rng.integers(-9, 9, (3, 17))), 4), desc="int64")]
    return s


def _kthvalue_samples(rng):
    return [Sample((_n(rng), 1), desc="0-d"), Sample((_n(rng), 1, 0, True), desc="0-d keep"),
            Sample((_n(rng, 17), 9), desc="n=17"), Sample((_n(rng, 17), 1), desc="k=1"),
            Sample((_n(rng, 17), 17), desc="k=n"),
            Sample((_n(rng, 1025), 700), desc="n=1025"),
            Sample((_n(rng, 4, 6), 2, 0, True), desc="dim0 keepdim"),
            Sample((_n(rng, 2, 0), 1, 0), desc="empty other dim"),
            Sample((_n(rng, 3, 5), 3, 1), layouts=("s",), desc="s"),
            Sample((np.asarray(rng.integers(-9, 9, (3, 17))), 4, 1), desc="int64")]


def _median_samples(rng):
    nan_rows = _n(rng, 3, 6)
    nan_rows[0, [1, 4]] = np.nan
    nan_rows[1, :] = np.nan
    return [Sample((_n(rng),), desc="0-d"), Sample((_n(rng), 0), desc="0-d dim0"),
            Sample((_n(rng, 0),), desc="empty"), Sample((_n(rng, 2, 0), 0), desc="empty dim"),
            Sample((_n(rng, 17),), desc="n=17"), Sample((_n(rng, 16),), desc="n=16 (lower)"),
            Sample((_n(rng, 1025),), desc="n=1025"), Sample((_n(rng, 1024), 0), desc="1024"),
            Sample((_n(rng, 4, 6), 1), desc="even lines"),
            Sample((_n(rng, 5, 3), 0, True), desc="dim0 keepdim"),
            Sample((_n(rng, 2, 3, 5), -2), layouts=("T",), desc="T"),
            Sample((nan_rows, 1), desc="NaN rows", gradgrad=False),
            Sample((nan_rows,), desc="NaN all"),
            Sample((np.asarray(rng.integers(-9, 9, (3, 17))), 1), desc="int64"),
            Sample((np.asarray(rng.integers(-9, 9, 8)),), desc="int64 all")]


def _sort_family(x, dim):
    """Every sorting op on one input (the tie samples: values and indices, no gradients,
    since ties are kinks)."""
    return (*tgrad.sort(x, dim), *tgrad.sort(x, dim, True), tgrad.argsort(x, dim, True),
            *tgrad.topk(x, 2, dim), *tgrad.topk(x, 3, dim, largest=False),
            *tgrad.kthvalue(x, 2, dim), *tgrad.median(x, dim), *tgrad.nanmedian(x, dim),
            tgrad.median(x), tgrad.nanmedian(x), tgrad.msort(x))


def _np_sort_family(x, dim):
    return (*_np_sort(x, dim), *_np_sort(x, dim, True), _np_argsort(x, dim, True),
            *_np_topk(x, 2, dim), *_np_topk(x, 3, dim, False), *_np_kthvalue(x, 2, dim),
            *_np_median(False)(x, dim), *_np_median(True)(x, dim), _np_median(False)(x),
            _np_median(True)(x), _np_sort(x, 0)[0])


def _sort_ties_samples(rng):
    nans = _ties_of(rng, 3, 10)
    nans[0, [2, 5, 7]] = np.nan
    nans[1, [0, 9]] = np.nan
    return [Sample((_ties_of(rng, 4, 9), 1), desc="ties"),
            Sample((_ties_of(rng, 9, 4), 0), desc="ties dim0"),
            Sample((_ties_of(rng, 130), 0), desc="ties n=130 (merge passes)"),
            Sample((_ties_of(rng, 5, 8), 1), layouts=("T",), desc="ties T"),
            Sample((nans, 1), desc="ties and NaNs"),
            Sample((np.asarray(rng.integers(-3, 3, (5, 8))), 1), desc="int64 ties")]


def _products_samples(kind):
    def gen(rng):
        if kind == "dot":
            # n=1025 is in matmul_long_k (float32's K-term accumulation error passes
            # PyTorch's elementwise tolerance; test_cuda_gpu/test_shape_ops bound it)
            return [Sample((_n(rng, n), _n(rng, n)), desc=f"n={n}") for n in (1, 17, 65)] + [
                Sample((_n(rng, 0), _n(rng, 0)), desc="empty"),
                Sample((_n(rng, 5), _n(rng, 5)), layouts=("s", "s"), desc="sliced")]
        if kind == "mv":
            return [Sample((_n(rng, 3, 4), _n(rng, 4)), desc="3x4"),
                    Sample((_n(rng, 4, 3), _n(rng, 3)), layouts=("T",), desc="T"),
                    Sample((_n(rng, 0, 2), _n(rng, 2)), desc="empty")]
        if kind == "outer":
            return [Sample((_n(rng, 3), _n(rng, 4)), desc="3x4"),
                    Sample((_n(rng, 17), _n(rng, 1)), desc="17x1"),
                    Sample((_n(rng, 0), _n(rng, 2)), desc="empty")]
        if kind == "addmm":
            return [Sample((_n(rng, 2, 2), _n(rng, 2, 3), _n(rng, 3, 2)), desc="small"),
                    Sample((_n(rng, 3, 4), _n(rng, 3, 5), _n(rng, 5, 4)), desc="plain"),
                    Sample((_n(rng, 4), _n(rng, 3, 5), _n(rng, 5, 4)), {"beta": 0.5, "alpha": 2.0},
                           desc="bcast input, beta, alpha"),
                    Sample((_n(rng, 3, 4), _n(rng, 3, 5), _n(rng, 5, 4)), {"beta": 0.0},
                           desc="beta 0"),
                    Sample((_n(rng, 3, 4), _n(rng, 3, 5), _n(rng, 5, 4)), layouts=("c", "T"),
                           desc="T")]
        if kind == "baddbmm":
            return [Sample((_n(rng, 1, 2, 2), _n(rng, 1, 2, 2), _n(rng, 1, 2, 2)), desc="small"),
                    Sample((_n(rng, 2, 3, 4), _n(rng, 2, 3, 5), _n(rng, 2, 5, 4)), desc="plain"),
                    Sample((_n(rng, 3, 4), _n(rng, 2, 3, 5), _n(rng, 2, 5, 4)),
                           {"beta": 2.0, "alpha": -1.0}, desc="bcast, beta, alpha")]
        if kind == "diag":
            return [Sample((_n(rng, 4),), desc="vector"),
                    Sample((_n(rng, 3), 1), desc="vector k=1"),
                    Sample((_n(rng, 3, 5),), desc="matrix"),
                    Sample((_n(rng, 3, 5), -1), desc="matrix k=-1"),
                    Sample((_n(rng, 3, 5), 2), desc="matrix k=2"),
                    Sample((_n(rng, 4, 3),), layouts=("T",), desc="T")]
        return [Sample((_n(rng, 3, 5),), desc="3x5"), Sample((_n(rng, 4, 4),), layouts=("T",),
                                                            desc="T")]
    return gen


def _np_addmm(inp, a, b, beta=1, alpha=1):
    return alpha * (a @ b) + (0 if beta == 0 else beta * inp)


def _np_diag(x, k=0):
    return np.diag(x, k)


def _roll_samples(rng):
    return [Sample((_n(rng, 17), 3, 0), desc="n=17"), Sample((_n(rng, 3, 4), -1, 1), desc="neg"),
            Sample((_n(rng, 3, 4), (1, 5), (0, 1)), desc="two dims"),
            Sample((_n(rng, 3, 4), 5), desc="flat"), Sample((_n(rng, 0, 3), 1, 1), desc="empty"),
            Sample((_n(rng, 4, 3), 2, 0), layouts=("T",), desc="T")]


def _np_roll(x, shifts, dims=None):
    return np.roll(x, shifts, dims)


def _lerp_samples(rng):
    return [Sample((_n(rng, 17), _n(rng, 17), 0.3), desc="w 0.3"),
            Sample((_n(rng, 17), _n(rng, 17), 0.8), desc="w 0.8"),
            Sample((_n(rng, 3, 4), _n(rng, 4), _n(rng, 3, 1)), desc="tensor weight, bcast"),
            Sample((_n(rng, 4, 3), _n(rng, 4, 3), 0.5), layouts=("T", "s"), desc="views")]


def _np_lerp(a, b, w):
    # PyTorch's formula (documented as start + weight * (end - start)): from ``end`` back
    # where |weight| >= 0.5, which keeps lerp(start, end, 1) == end and decides inf inputs
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def _addc_samples(rng):
    return [Sample((_n(rng, 3, 4), _n(rng, 3, 4), np.abs(_n(rng, 3, 4)) + 0.5), desc="plain"),
            Sample((_n(rng, 4), _n(rng, 3, 1), np.abs(_n(rng, 4)) + 0.5), {"value": -0.5},
                   desc="bcast value"),
            Sample((_n(rng, 4, 3), _n(rng, 4, 3), np.abs(_n(rng, 4, 3)) + 0.5),
                   layouts=("T", "s", "c"), desc="views")]


def _scatter_add_samples(rng):
    return [Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 3, 6), _n(rng, 3, 6)), desc="repeats"),
            Sample((_n(rng, 4, 3), 0, _int_index(rng, 4, 2, 3), _n(rng, 3, 3)),
                   desc="src larger"),
            Sample((_n(rng, 17), 0, _int_index(rng, 17, 17), _n(rng, 17)), desc="n=17")]


def _np_scatter_add(x, dim, index, src):
    out = x.copy()
    idx = list(np.indices(index.shape))
    idx[dim] = index
    np.add.at(out, tuple(idx), src[tuple(slice(0, n) for n in index.shape)])
    return out


def _scatter_reduce_samples(reduce):
    def samples(rng):
        out = []
        for incl in (True, False):
            kw = {"include_self": incl}
            out += [Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 3, 6), _n(rng, 3, 6), reduce),
                           kw, desc=f"repeats incl={incl}"),
                    Sample((_n(rng, 4, 3), -2, _int_index(rng, 4, 2, 3), _n(rng, 3, 3), reduce),
                           kw, layouts=("T",), desc=f"src larger, T incl={incl}")]
        out += [Sample((_n(rng, 17), 0, _int_index(rng, 5, 17), _n(rng, 17), reduce),
                       desc="n=17 onto 5"),
                Sample((_n(rng, 3, 2), 0, np.zeros((0, 2), np.int64), _n(rng, 1, 2), reduce),
                       desc="empty index")]
        return out
    return samples


def _np_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """Element by element: each target's values (and x's own, with include_self) folded
    with the reduction; targets that receive nothing keep x."""
    d = dim % x.ndim
    groups: dict = {}
    for j in np.ndindex(index.shape):
        t = list(j)
        t[d] = int(index[j])
        groups.setdefault(tuple(t), []).append(src[j])
    out = x.copy()
    for t, vals in groups.items():
        v = np.array(vals + ([x[t]] if include_self else []))
        out[t] = {"sum": np.sum, "prod": np.prod, "amax": np.max, "amin": np.min,
                  "mean": np.mean}[reduce](v)
    return out


def _index_reduce_samples(reduce):
    def samples(rng):
        return [Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 6), _n(rng, 3, 6), reduce),
                       desc="repeats"),
                Sample((_n(rng, 5, 2), 0, _int_index(rng, 5, 3), _n(rng, 3, 2), reduce),
                       {"include_self": False}, desc="exclusive")]
    return samples


def _np_index_reduce(x, dim, index, src, reduce, include_self=True):
    full = np.broadcast_to(index.reshape([-1 if k == dim else 1 for k in range(src.ndim)]),
                           src.shape)
    return _np_scatter_reduce(x, dim, full, src, reduce, include_self)


def _slice_scatter_samples(rng):
    return [Sample((_n(rng, 4, 6), _n(rng, 4, 3), 1, 0, 6, 2), desc="every other column"),
            Sample((_n(rng, 5, 3), _n(rng, 2, 3)), {"start": -3, "end": -1}, desc="negatives"),
            Sample((_n(rng, 17), _n(rng, 17)), desc="whole n=17"),
            Sample((_n(rng, 3, 4), _n(rng, 0, 4), 0, 2, 2), desc="empty slice"),
            Sample((_n(rng, 4, 3), _n(rng, 4, 2), -1, 1), layouts=("T", "s"), desc="views")]


def _np_slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)] = src
    return out


def _select_scatter_samples(rng):
    return [Sample((_n(rng, 4, 3), _n(rng, 3), 0, 2), desc="row"),
            Sample((_n(rng, 2, 5, 3), _n(rng, 2, 3), 1, -1), desc="middle dim, -1"),
            Sample((_n(rng, 3, 4), _n(rng, 3), 1, 0), layouts=("T",), desc="T")]


def _np_select_scatter(x, src, dim, index):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (index,)] = src
    return out


def _diagonal_scatter_samples(rng):
    return [Sample((_n(rng, 4, 4), _n(rng, 4)), desc="main"),
            Sample((_n(rng, 3, 5), _n(rng, 3), 2), desc="offset 2"),
            Sample((_n(rng, 4, 3), _n(rng, 2), -2), desc="offset -2"),
            Sample((_n(rng, 2, 3, 3), _n(rng, 2, 3), 0, 1, 2), desc="batched dims 1, 2"),
            Sample((_n(rng, 3, 3), _n(rng, 3)), layouts=("T",), desc="T")]


def _np_diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    out = np.moveaxis(x.copy(), (dim1, dim2), (-2, -1))
    i = np.arange(src.shape[-1])
    out[..., i + max(-offset, 0), i + max(offset, 0)] = src
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _masked_scatter_samples(rng):
    return [Sample((_n(rng, 3, 4), _bool_of(rng, 3, 4), _n(rng, 12)), desc="same shape"),
            Sample((_n(rng, 3, 4), _bool_of(rng, 4), _n(rng, 2, 9)), desc="broadcast mask"),
            Sample((_n(rng, 17), _bool_of(rng, 17), _n(rng, 20)), desc="longer source"),
            Sample((_n(rng, 0, 3), _bool_of(rng, 0, 3), _n(rng, 2)), desc="empty"),
            Sample((_n(rng, 4, 3), _bool_of(rng, 4, 3), _n(rng, 3, 4)), layouts=("T", "c", "T"),
                   desc="views")]


def _np_masked_scatter(x, mask, src):
    out = x.copy()
    m = np.broadcast_to(mask, x.shape)
    out[m] = src.ravel()[:int(m.sum())]
    return out


def _index_add_samples(rng):
    return [Sample((_n(rng, 3, 4), 1, _int_index(rng, 4, 6), _n(rng, 3, 6)), desc="repeats"),
            Sample((_n(rng, 5, 2), 0, _int_index(rng, 5, 3), _n(rng, 3, 2)), {"alpha": 2.0},
                   desc="alpha")]


def _np_index_add(x, dim, index, src, alpha=1):
    out = x.copy()
    key = (slice(None),) * dim + (index,)
    np.add.at(out, key, alpha * src)
    return out


def _take_along_samples(rng):
    return [Sample((_n(rng, 3, 4), _int_index(rng, 4, 3, 2), 1), desc="dim1"),
            Sample((_n(rng, 3, 4), _int_index(rng, 3, 5, 1), 0), desc="bcast index"),
            Sample((_n(rng, 3, 4), _int_index(rng, 12, 5)), desc="flat")]


def _np_take_along(x, idx, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), idx.reshape(-1), 0)
    shape = list(np.broadcast_shapes(x.shape[:dim] + (1,) + x.shape[dim + 1:],
                                     idx.shape[:dim] + (1,) + idx.shape[dim + 1:]))
    xs, ish = list(shape), list(shape)
    xs[dim], ish[dim] = x.shape[dim], idx.shape[dim]
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, ish), dim)


def _nan_red_samples(rng):
    x = _n(rng, 3, 4)
    x[0, 1] = np.nan  # one NaN: skipped by the sums (the op table's NaN check adds more)
    return [Sample((x,), desc="all"), Sample((x,), {"dim": 1}, desc="dim1"),
            Sample((x,), {"dim": 0, "keepdim": True}, desc="dim0 keep"),
            Sample((_n(rng, 17),), desc="n=17"), Sample((_n(rng, 4, 3),), {"dim": 1},
                                                       layouts=("T",), desc="T")]


def _np_nanmean(x, dim=None, keepdim=False):
    with np.errstate(all="ignore"):
        return np.asarray(np.nanmean(x, axis=dim, keepdims=keepdim))


def _diff_samples(rng):
    return [Sample((_n(rng, 17),), desc="n=17"), Sample((_n(rng, 3, 5), 2, 1), desc="n=2 dim1"),
            Sample((_n(rng, 4, 3), 1, 0), desc="dim0"),
            Sample((_n(rng, 4, 3),), layouts=("T",), desc="T")]


def _ri_samples(rng):
    return [Sample((_n(rng, 3, 2), 2, 0), desc="dim0"), Sample((_n(rng, 3, 2), 3, 1),
                                                               desc="dim1"),
            Sample((_n(rng, 2, 3), 2), desc="flat"), Sample((_n(rng, 4), 0, 0), desc="zero")]


def _np_ri(x, r, dim=None):
    return np.repeat(x, r, axis=dim)


# ---------------------------------------------------------------------- the table
def _u(name, ref, domain=(None, None), **kw):
    return OpSpec(name, getattr(tgrad, name), ref, unary_samples, domain=domain, **kw)


def _b(name, ref, samples=binary_samples, domain=(None, None), **kw):
    return OpSpec(name, getattr(tgrad, name), ref, samples, domain=domain, **kw)


POS = (0.0, None)
OP_DB: list = [
    _u("neg", np.negative),
    _u("abs", np.abs),
    _u("exp", np.exp),
    _u("log", np.log, POS),
    _u("log1p", np.log1p, (-1.0, None)),
    _u("expm1", np.expm1),
    _u("sqrt", np.sqrt, POS),
    _u("rsqrt", lambda x: 1.0 / np.sqrt(x), POS),
    _u("sin", np.sin),
    _u("cos", np.cos),
    _u("tanh", np.tanh),
    _u("sigmoid", _np_sigmoid),
    _u("erf", _np_erf),
    _u("reciprocal", lambda x: 1.0 / x, (0.0, None)),
    _u("square", np.square),
    _u("sign", np.sign),
    _u("floor", np.floor),
    _u("ceil", np.ceil),
    _u("round", _np_round),
    _u("trunc", np.trunc),
    _u("log2", np.log2, POS),
    _u("log10", np.log10, POS),
    _u("exp2", np.exp2),
    _u("sinh", np.sinh),
    _u("cosh", np.cosh),
    _u("tan", np.tan, (-1.4, 1.4)),
    _u("atan", np.arctan),
    _u("asin", np.arcsin, (-1.0, 1.0)),
    _u("acos", np.arccos, (-1.0, 1.0)),
    _u("frac", lambda x: x - np.trunc(x)),
    OpSpec("clamp", tgrad.clamp, _np_clamp, _clamp_samples),
    OpSpec("clamp_tensor", lambda x, lo, hi: tgrad.clamp(x, lo, hi), _np_clamp,
           _clamp_tensor_samples),
    OpSpec("pow_scalar", tgrad.pow, np.power, _int_pow_samples),
    OpSpec("rpow", lambda x, c: c ** x, lambda x, c: np.power(c, x), scalar_samples(2.0)),
    OpSpec("rsub", lambda x, c: c - x, lambda x, c: c - x, scalar_samples(1.0)),
    OpSpec("rtruediv", lambda x, c: c / x, lambda x, c: c / x, scalar_samples(1.5),
           domain=(0.0, None)),
    OpSpec("add_scalar", lambda x, c: x + c, lambda x, c: x + c, scalar_samples(0.5)),
    OpSpec("mul_scalar", lambda x, c: x * c, lambda x, c: x * c, scalar_samples(-3.0)),
    _b("add", np.add, _small_int_samples),
    _b("sub", np.subtract, lambda rng: [x for x in _small_int_samples(rng)
                                        if "bool" not in x.desc]),
    _b("mul", np.multiply, _small_int_samples),
    _b("div", np.divide, domain=(0.0, None)),
    _b("pow", np.power, _pow_samples, domain=(0.0, None)),
    _b("atan2", np.arctan2, _atan2_samples),
    _b("maximum", np.maximum, _small_int_samples),
    _b("minimum", np.minimum),
    _b("remainder", np.remainder, _mod_samples),
    _b("fmod", np.fmod, _mod_samples),
    OpSpec("where", tgrad.where, np.where, _where_samples),
    *[OpSpec(n, getattr(tgrad, n), f, _compare_samples, differentiable=False)
      for n, f in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                   ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal))],
    OpSpec("logical_and", tgrad.logical_and, np.logical_and, _logical_samples,
           differentiable=False),
    OpSpec("logical_or", tgrad.logical_or, np.logical_or, _logical_samples,
           differentiable=False),
    OpSpec("logical_not", tgrad.logical_not, np.logical_not, _logical_not_samples,
           differentiable=False),
    # reductions
    OpSpec("sum", tgrad.sum, _red(np.sum), reduction_samples),
    OpSpec("mean", tgrad.mean, _red(np.mean), reduction_samples),
    OpSpec("prod", tgrad.prod, _red(np.prod), _prod_samples),
    OpSpec("amax", tgrad.amax, _red(np.max),
           lambda rng: reduction_samples(rng, allow_empty=False) + _ties_samples(rng)),
    OpSpec("amin", tgrad.amin, _red(np.min),
           lambda rng: reduction_samples(rng, allow_empty=False) + _ties_samples(rng)),
    OpSpec("max", tgrad.max, _np_max_dim(np.max, np.argmax),
           lambda rng: single_dim_samples(rng) + _ties_samples(rng)[:1]),
    OpSpec("min", tgrad.min, _np_max_dim(np.min, np.argmin),
           lambda rng: single_dim_samples(rng) + _ties_samples(rng)[:1]),
    OpSpec("max_binary", tgrad.max, np.maximum, binary_samples),
    OpSpec("min_binary", tgrad.min, np.minimum, binary_samples),
    OpSpec("var_positional", lambda x, d, u, k: tgrad.var(x, d, u, k),
           lambda x, d, u, k: np.var(x, axis=d, ddof=int(u), keepdims=k),
           lambda rng: [Sample((_n(rng, 3, 4), 1, False, True), desc="biased keepdim"),
                        Sample((_n(rng, 3, 4), (0, 1), True, False), desc="unbiased")]),
    OpSpec("argmax", tgrad.argmax, _np_arg(np.argmax), single_dim_samples,
           differentiable=False),
    OpSpec("argmin", tgrad.argmin, _np_arg(np.argmin), single_dim_samples,
           differentiable=False),
    OpSpec("var", tgrad.var, _np_var(False), _var_samples),
    OpSpec("std", tgrad.std, _np_var(True), _var_samples),
    OpSpec("logsumexp", tgrad.logsumexp, _np_logsumexp,
           lambda rng: [s for s in reduction_samples(rng) if "dim" in s.kwargs]),
    OpSpec("norm", tgrad.norm, _np_norm, _norm_samples),
    OpSpec("cumsum", tgrad.cumsum, _np_cumsum, _cumsum_samples),
    OpSpec("sort", tgrad.sort, _np_sort, _sort_samples),
    OpSpec("argsort", tgrad.argsort, _np_argsort, _argsort_samples, differentiable=False),
    OpSpec("msort", tgrad.msort, lambda x: _np_sort(x, 0)[0],
           lambda rng: [Sample((_n(rng, 5, 3),), desc="2d"), Sample((_n(rng),), desc="0-d")]),
    OpSpec("topk", tgrad.topk, _np_topk, _topk_samples),
    OpSpec("kthvalue", tgrad.kthvalue, _np_kthvalue, _kthvalue_samples),
    OpSpec("median", tgrad.median, _np_median(False), _median_samples),
    OpSpec("nanmedian", tgrad.nanmedian, _np_median(True), _median_samples),
    OpSpec("sort_family_ties", _sort_family, _np_sort_family, _sort_ties_samples,
           differentiable=False),
    OpSpec("all", tgrad.all, _red(np.all), _bool_red_samples, differentiable=False),
    OpSpec("any", tgrad.any, _red(np.any), _bool_red_samples, differentiable=False),
    # composites (tgrad/ops/composite.py)
    OpSpec("masked_fill", tgrad.masked_fill, lambda x, m, v: np.where(m, v, x),
           _masked_fill_samples),
    OpSpec("tril", tgrad.tril, np.tril, _triangle_samples),
    OpSpec("triu", tgrad.triu, np.triu, _triangle_samples),
    OpSpec("index_select", tgrad.index_select, _np_index_select, _index_select_samples),
    OpSpec("gather", tgrad.gather, _np_gather, _gather_samples),
    OpSpec("isclose", tgrad.isclose, np.isclose, _isclose_samples, differentiable=False,
           nan_inf=False),
    OpSpec("logical_xor", tgrad.logical_xor, np.logical_xor, _logical_samples,
           differentiable=False),
    OpSpec("einsum", tgrad.einsum, np.einsum, _einsum_samples),
    OpSpec("dot", tgrad.dot, np.dot, _products_samples("dot")),
    OpSpec("mv", tgrad.mv, np.matmul, _products_samples("mv")),
    OpSpec("outer", tgrad.outer, np.outer, _products_samples("outer")),
    OpSpec("addmm", tgrad.addmm, _np_addmm, _products_samples("addmm")),
    OpSpec("baddbmm", tgrad.baddbmm, _np_addmm, _products_samples("baddbmm")),
    OpSpec("diag", tgrad.diag, _np_diag, _products_samples("diag")),
    OpSpec("trace", tgrad.trace, np.trace, _products_samples("trace")),
    OpSpec("roll", tgrad.roll, _np_roll, _roll_samples),
    OpSpec("lerp", tgrad.lerp, _np_lerp, _lerp_samples),
    OpSpec("addcmul", tgrad.addcmul, lambda x, a, b, value=1: x + value * a * b, _addc_samples),
    OpSpec("addcdiv", tgrad.addcdiv, lambda x, a, b, value=1: x + value * a / b, _addc_samples),
    OpSpec("scatter_add", tgrad.scatter_add, _np_scatter_add, _scatter_add_samples),
    OpSpec("index_add", tgrad.index_add, _np_index_add, _index_add_samples),
    OpSpec("slice_scatter", tgrad.slice_scatter, _np_slice_scatter, _slice_scatter_samples),
    OpSpec("select_scatter", tgrad.select_scatter, _np_select_scatter, _select_scatter_samples),
    OpSpec("diagonal_scatter", tgrad.diagonal_scatter, _np_diagonal_scatter,
           _diagonal_scatter_samples),
    OpSpec("masked_scatter", tgrad.masked_scatter, _np_masked_scatter, _masked_scatter_samples),
    *[OpSpec(f"scatter_reduce_{r}", tgrad.scatter_reduce, _np_scatter_reduce,
             _scatter_reduce_samples(r)) for r in ("sum", "prod", "mean", "amax", "amin")],
    *[OpSpec(f"index_reduce_{r}", tgrad.index_reduce, _np_index_reduce,
             _index_reduce_samples(r)) for r in ("prod", "mean", "amax", "amin")],
    OpSpec("take_along_dim", tgrad.take_along_dim, _np_take_along, _take_along_samples),
    OpSpec("nansum", tgrad.nansum, _red(np.nansum), _nan_red_samples),
    OpSpec("nanmean", tgrad.nanmean, _np_nanmean, _nan_red_samples),
    OpSpec("nan_to_num", lambda x: tgrad.nan_to_num(x, 0.5, 7.0, -7.0),
           lambda x: np.nan_to_num(x, nan=0.5, posinf=7.0, neginf=-7.0), unary_samples),
    OpSpec("xlogy", tgrad.xlogy, lambda x, y: x * np.log(y), binary_samples,
           domain=(0.0, None)),
    OpSpec("logit", tgrad.logit, lambda x: np.log(x / (1 - x)), unary_samples,
           domain=(0.0, 1.0)),
    OpSpec("diff", tgrad.diff, lambda x, n=1, dim=-1: np.diff(x, n, dim), _diff_samples),
    OpSpec("repeat_interleave", tgrad.repeat_interleave, _np_ri, _ri_samples),
    OpSpec("take", tgrad.take, lambda x, i: np.take(x, i),
           lambda rng: [Sample((_n(rng, 3, 4), _int_index(rng, 12, 2, 3)), desc="2-D index"),
                        Sample((_n(rng, 17), _int_index(rng, 17, 5)), desc="n=17")]),
    OpSpec("inner", tgrad.inner, np.inner,
           lambda rng: [Sample((_n(rng, 2, 3), _n(rng, 4, 3)), desc="2d"),
                        Sample((_n(rng, 3), _n(rng, 3)), desc="1d"),
                        Sample((_n(rng, 2, 2, 3), _n(rng, 3)), desc="3d-1d")]),
    OpSpec("repeat", lambda x, r: x.repeat(r), lambda x, r: np.tile(x, r), _repeat_samples),
    OpSpec("flip", tgrad.flip, lambda x, d: np.flip(x, d) if x.ndim else x, _flip_samples),
]
