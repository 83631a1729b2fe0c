"""tgrad's NumPy backend against PyTorch eager on the CPU, op by op: ~400 cases (elementwise
and special functions, binary ops, reductions, indexing, shape ops, matmul and linalg,
activations, losses, convolutions, pooling, resizing, padding, embeddings, norms, attention)
at medium sizes, forward and forward + backward, µs per call, one thread on both sides.

    OPENBLAS_NUM_THREADS=1 /tmp/tv/bin/python perf/bench_ops_torch.py    # all 407 (~75 s)
    OPENBLAS_NUM_THREADS=1 /tmp/tv/bin/python perf/bench_ops_torch.py '^(cdist|F.pdist)$'
    OPENBLAS_NUM_THREADS=1 /tmp/tv/bin/python perf/bench_ops_torch.py '^F\\.' --json ops.json

(any Python with torch and tgrad's requirements; ``PYTHONPATH=<checkout>`` picks the tgrad
to time, this checkout otherwise). The positional regex keeps the cases whose name it matches
(``re.search``); ``--json PATH`` and ``--out DIR`` (default perf/out, ``--out ''`` for none)
write the report.

Sizes (the table SPECS below has each case's inputs): (256, 256) float32 for elementwise
ops, reductions, indexing and shape ops; (512, 128) rows for activations and losses;
(8, 32, 16, 16) images; (16, 32, 32) batches for linalg. The inputs are drawn once from
``default_rng(0)`` as the table is built, in its order, so a filtered run times the same
arrays as a full one (keep the order when adding cases: append them at the end).

Method: per case, PyTorch first and then tgrad, each on its own copies of the inputs:
forward ``fn(lib, *inputs)``, and forward + backward ``out.backward(ones_like(out))`` of the
case's first floating output with the leaves' ``.grad`` reset before each call (cases with
``bwd=False`` or no differentiable output: forward only). Each is called twice, then looped
until one loop lasts >= 4 ms (at most 65536 calls), and the best of 5 such loops
(``time.perf_counter``) is reported. One thread: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
MKL_NUM_THREADS are set to 1 before NumPy loads its BLAS, and ``torch.set_num_threads(1)``.

Output: a line per case as it runs (tgrad µs, PyTorch µs, tgrad / PyTorch; forward, then
forward + backward), a markdown table sorted by the larger of the two ratios, and FAILURES:
the cases that raised, with the library and the error (some are PyTorch's: ops or
arguments it does not have). JSON (schema ``tgrad-bench-ops-torch/1``): the common header,
versions, method, pattern, ``rows`` (name, cat, shape, tg_f, th_f, tg_fb, th_fb in µs,
ratio) and ``fails`` (name, library, error).

torch is imported only here, in ``main`` (tgrad never imports torch); building the table
and timing tgrad alone (``bench_one(tgrad, ...)``) need no torch.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # before NumPy (and torch) load their thread pools
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if not os.environ.get("PYTHONPATH"):  # PYTHONPATH=<checkout> picks the tgrad to time
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
from _report import header, save  # noqa: E402

import tgrad  # noqa: E402

rng = np.random.default_rng(0)


# ------------------------------------------------------------------ input kinds
# Each returns (kind, array, requires_grad), kind "f" (float32), "i" (int64) or "b" (bool),
# and draws from ``rng`` when the table is built.
def normal(*s):
    """N(0, 1), requires grad."""
    return ("f", rng.standard_normal(s).astype(np.float32), True)


def pos(*s):
    """|N(0, 1)| + 0.1 (positive), requires grad."""
    return ("f", (np.abs(rng.standard_normal(s)) + 0.1).astype(np.float32), True)


def unit(*s):
    """U(0.05, 0.95), requires grad."""
    return ("f", rng.uniform(0.05, 0.95, s).astype(np.float32), True)


def gt1(*s):
    """|N(0, 1)| + 1.1 (above 1), requires grad."""
    return ("f", (np.abs(rng.standard_normal(s)) + 1.1).astype(np.float32), True)


def const(*s):
    """N(0, 1), no grad."""
    return ("f", rng.standard_normal(s).astype(np.float32), False)


def const_pos(*s):
    """|N(0, 1)| + 0.1, no grad."""
    return ("f", (np.abs(rng.standard_normal(s)) + 0.1).astype(np.float32), False)


def ints(high, *s):
    """int64 in [0, high)."""
    return ("i", rng.integers(0, high, s).astype(np.int64), False)


def perm(n, k):
    """k distinct int64 in [0, n)."""
    return ("i", rng.permutation(n)[:k].astype(np.int64), False)


def mask(*s):
    """bool, half True."""
    return ("b", rng.random(s) < 0.5, False)


def spd(b, n):
    """b symmetric positive definite (n, n) matrices, A A^T + n I, requires grad."""
    a = rng.standard_normal((b, n, n))
    a = a @ a.transpose(0, 2, 1) + n * np.eye(n)
    return ("f", a.astype(np.float32), True)


def mk(lib, arr: np.ndarray, grad: bool):
    """A ``lib`` tensor (tgrad or torch) on a copy of ``arr``."""
    if lib is tgrad:
        return tgrad.tensor(arr.copy(), requires_grad=grad)
    t = lib.from_numpy(arr.copy())
    return t.requires_grad_(grad) if grad else t


# ------------------------------------------------------------------ the cases
# SPECS: (name, fn(lib, *tensors), inputs, category, time the backward); ``lib`` is the
# module (tgrad or torch), F(lib) its nn.functional. Loop variables are bound as defaults.
SPECS = []


def op(name, fn, *inputs, cat="misc", bwd=True):
    SPECS.append((name, fn, inputs, cat, bwd))


S = (256, 256)  # 65536 elements
F = lambda lib: lib.nn.functional

# ------------------------------------------------------------------ elementwise unary
for n in ["abs", "neg", "exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "sinh", "cosh",
          "tanh", "asinh", "sigmoid", "erf", "erfc", "sign", "floor", "ceil", "round", "trunc",
          "frac", "square", "relu", "sinc", "deg2rad", "rad2deg", "nan_to_num", "reciprocal",
          "sgn", "positive", "fix"]:
    op(n, lambda lib, x, n=n: getattr(lib, n)(x), normal(*S), cat="unary")
for n in ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "lgamma", "digamma", "i0"]:
    op(n, lambda lib, x, n=n: getattr(lib, n)(x), pos(*S), cat="unary")
for n in ["asin", "acos", "atanh", "erfinv", "logit"]:
    op(n, lambda lib, x, n=n: getattr(lib, n)(x), unit(*S), cat="unary")
op("acosh", lambda lib, x: lib.acosh(x), gt1(*S), cat="unary")
op("clamp", lambda lib, x: lib.clamp(x, -0.5, 0.5), normal(*S), cat="unary")
op("pow_2.5", lambda lib, x: lib.pow(x, 2.5), pos(*S), cat="unary")
op("pow_2", lambda lib, x: lib.pow(x, 2), normal(*S), cat="unary")
op("rpow", lambda lib, x: lib.pow(2.0, x), normal(*S), cat="unary")
op("polygamma1", lambda lib, x: lib.polygamma(1, x), pos(*S), cat="unary")
op("mvlgamma", lambda lib, x: lib.mvlgamma(x + 2, 3), pos(*S), cat="unary")
op("signbit", lambda lib, x: lib.signbit(x), const(*S), cat="unary", bwd=False)
op("isnan", lambda lib, x: lib.isnan(x), const(*S), cat="unary", bwd=False)
op("isfinite", lambda lib, x: lib.isfinite(x), const(*S), cat="unary", bwd=False)

# ------------------------------------------------------------------ special
for n in ["erfcx", "ndtr", "log_ndtr", "i0e", "i1", "i1e", "entr", "expit", "sinc", "exp2",
          "expm1", "log1p", "gammaln", "digamma", "psi"]:
    op("special." + n, lambda lib, x, n=n: getattr(lib.special, n)(x),
       pos(*S) if n in ("entr", "gammaln", "digamma", "psi") else normal(*S), cat="special")
op("special.ndtri", lambda lib, x: lib.special.ndtri(x), unit(*S), cat="special")
op("special.logit", lambda lib, x: lib.special.logit(x), unit(*S), cat="special")
for n in ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
          "airy_ai"]:
    op("special." + n, lambda lib, x, n=n: getattr(lib.special, n)(x),
       const_pos(*S) if ("y" in n.split("_")[-1] or "k" in n.split("_")[-1]) else const(*S),
       cat="special", bwd=False)
for n in ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "hermite_polynomial_h",
          "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]:
    op("special." + n, lambda lib, x, n=n: getattr(lib.special, n)(x, 5), const(*S),
       cat="special", bwd=False)
op("special.zeta", lambda lib, x, q: lib.special.zeta(x + 1.5, q), const_pos(*S), const_pos(*S),
   cat="special", bwd=False)
op("special.gammainc", lambda lib, a, x: lib.special.gammainc(a, x), const_pos(*S), pos(*S),
   cat="special")
op("special.gammaincc", lambda lib, a, x: lib.special.gammaincc(a, x), const_pos(*S), pos(*S),
   cat="special")
op("special.xlog1py", lambda lib, a, x: lib.special.xlog1py(a, x), normal(*S), pos(*S),
   cat="special")
op("special.xlogy", lambda lib, a, x: lib.special.xlogy(a, x), normal(*S), pos(*S), cat="special")

# ------------------------------------------------------------------ binary / ternary
for n in ["add", "sub", "mul", "div", "atan2", "maximum", "minimum", "fmax", "fmin", "hypot",
          "copysign", "logaddexp", "logaddexp2", "remainder", "fmod", "true_divide"]:
    op(n, lambda lib, x, y, n=n: getattr(lib, n)(x, y), normal(*S), normal(*S), cat="binary")
op("add_bcast", lambda lib, x, y: x + y, normal(*S), normal(256), cat="binary")
op("mul_bcast_col", lambda lib, x, y: x * y, normal(*S), normal(256, 1), cat="binary")
op("pow_tt", lambda lib, x, y: lib.pow(x, y), pos(*S), normal(*S), cat="binary")
op("xlogy", lambda lib, x, y: lib.xlogy(x, y), normal(*S), pos(*S), cat="binary")
op("lerp", lambda lib, x, y, w: lib.lerp(x, y, w), normal(*S), normal(*S), normal(*S), cat="binary")
op("addcmul", lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.5), normal(*S), normal(*S),
   normal(*S), cat="binary")
op("addcdiv", lambda lib, x, y, z: lib.addcdiv(x, y, z, value=0.5), normal(*S), normal(*S), pos(*S),
   cat="binary")
op("eq", lambda lib, x, y: lib.eq(x, y), const(*S), const(*S), cat="binary", bwd=False)
op("lt", lambda lib, x, y: lib.lt(x, y), const(*S), const(*S), cat="binary", bwd=False)
op("floor_divide", lambda lib, x, y: lib.floor_divide(x, y), const(*S), const_pos(*S), cat="binary",
   bwd=False)
op("nextafter", lambda lib, x, y: lib.nextafter(x, y), const(*S), const(*S), cat="binary",
   bwd=False)
op("heaviside", lambda lib, x, y: lib.heaviside(x, y), const(*S), const(*S), cat="binary",
   bwd=False)
op("isclose", lambda lib, x, y: lib.isclose(x, y), const(*S), const(*S), cat="binary", bwd=False)
op("ldexp", lambda lib, x, y: lib.ldexp(x, y), normal(*S), ints(4, *S), cat="binary")
op("clamp_tensor", lambda lib, x, lo, hi: lib.clamp(x, lo, hi), normal(*S), const(*S),
   const_pos(*S), cat="binary")

# ------------------------------------------------------------------ reductions
for n in ["sum", "mean", "prod", "amax", "amin", "var", "std", "logsumexp", "nansum", "nanmean",
          "cumsum", "cumprod", "logcumsumexp", "argmax", "argmin", "count_nonzero", "all", "any"]:
    op(n + "_d1", lambda lib, x, n=n: getattr(lib, n)(x, 1),
       pos(*S) if n == "cumprod" else normal(*S), cat="reduce",
       bwd=n not in ("argmax", "argmin", "count_nonzero", "all", "any"))
for n in ["sum", "mean", "amax", "var", "std", "logsumexp"]:
    op(n + "_d0", lambda lib, x, n=n: getattr(lib, n)(x, 0), normal(*S), cat="reduce")
op("sum_all", lambda lib, x: x.sum(), normal(*S), cat="reduce")
op("prod_all", lambda lib, x: (x * 0.01 + 1).prod(), normal(*S), cat="reduce")
op("max_d1", lambda lib, x: lib.max(x, 1)[0], normal(*S), cat="reduce")
op("min_d1", lambda lib, x: lib.min(x, 1)[0], normal(*S), cat="reduce")
op("max_all", lambda lib, x: lib.max(x), normal(*S), cat="reduce")
op("aminmax", lambda lib, x: lib.aminmax(x, dim=1)[0], normal(*S), cat="reduce")
op("var_mean", lambda lib, x: lib.var_mean(x, 1)[0], normal(*S), cat="reduce")
op("std_mean", lambda lib, x: lib.std_mean(x, 1)[0], normal(*S), cat="reduce")
op("norm", lambda lib, x: lib.norm(x), normal(*S), cat="reduce")
op("norm_d1", lambda lib, x: lib.norm(x, dim=1), normal(*S), cat="reduce")
op("norm_p1", lambda lib, x: lib.norm(x, p=1, dim=1), normal(*S), cat="reduce")
op("norm_p3", lambda lib, x: lib.norm(x, p=3, dim=1), normal(*S), cat="reduce")
op("norm_inf", lambda lib, x: lib.norm(x, p=float("inf"), dim=1), normal(*S), cat="reduce")
op("linalg.vector_norm", lambda lib, x: lib.linalg.vector_norm(x, dim=1), normal(*S), cat="reduce")
op("cummax", lambda lib, x: lib.cummax(x, 1)[0], normal(*S), cat="reduce")
op("cummin", lambda lib, x: lib.cummin(x, 1)[0], normal(*S), cat="reduce")
op("sort", lambda lib, x: lib.sort(x, 1)[0], normal(*S), cat="reduce")
op("argsort", lambda lib, x: lib.argsort(x, 1), normal(*S), cat="reduce", bwd=False)
op("msort", lambda lib, x: lib.msort(x), normal(*S), cat="reduce")
op("topk10", lambda lib, x: lib.topk(x, 10, 1)[0], normal(*S), cat="reduce")
op("topk128", lambda lib, x: lib.topk(x, 128, 1)[0], normal(*S), cat="reduce")
op("kthvalue", lambda lib, x: lib.kthvalue(x, 10, 1)[0], normal(*S), cat="reduce")
op("median_d1", lambda lib, x: lib.median(x, 1)[0], normal(*S), cat="reduce")
op("median_all", lambda lib, x: lib.median(x), normal(*S), cat="reduce")
op("nanmedian_d1", lambda lib, x: lib.nanmedian(x, 1)[0], normal(*S), cat="reduce")
op("quantile_d1", lambda lib, x: lib.quantile(x, 0.3, dim=1), normal(*S), cat="reduce")
op("quantile_vec", lambda lib, x, q: lib.quantile(x, q, dim=1), normal(*S),
   ("f", np.array([0.1, 0.5, 0.9], np.float32), False), cat="reduce")
op("quantile_all", lambda lib, x: lib.quantile(x, 0.3), normal(*S), cat="reduce")
op("nanquantile_d1", lambda lib, x: lib.nanquantile(x, 0.3, dim=1), normal(*S), cat="reduce")
op("mode", lambda lib, x: lib.mode(x, 1)[0], ("f", rng.integers(0, 20, S).astype(np.float32), True),
   cat="reduce")
op("diff", lambda lib, x: lib.diff(x, dim=1), normal(*S), cat="reduce")
op("trace", lambda lib, x: lib.trace(x), normal(*S), cat="reduce")
op("unique", lambda lib, x: lib.unique(x), ("f", rng.integers(0, 100, S).astype(np.float32), False),
   cat="reduce", bwd=False)
op("bincount", lambda lib, x: lib.bincount(x), ints(1000, 65536), cat="reduce", bwd=False)
op("histc", lambda lib, x: lib.histc(x, 100), const(*S), cat="reduce", bwd=False)
op("searchsorted", lambda lib, s, v: lib.searchsorted(s, v),
   ("f", np.sort(rng.standard_normal(1024)).astype(np.float32), False), const(*S), cat="reduce",
   bwd=False)

# ------------------------------------------------------------------ indexing
op("gather", lambda lib, x, i: lib.gather(x, 1, i), normal(*S), ints(256, 256, 64), cat="index")
op("scatter", lambda lib, x, i, s: lib.scatter(x, 1, i, s), normal(*S), ints(256, 256, 64),
   normal(256, 64), cat="index")
op("scatter_add", lambda lib, x, i, s: lib.scatter_add(x, 1, i, s), normal(*S), ints(256, 256, 256),
   normal(*S), cat="index")
for r in ["sum", "prod", "mean", "amax", "amin"]:
    op("scatter_reduce_" + r, lambda lib, x, i, s, r=r: lib.scatter_reduce(x, 1, i, s, r),
       normal(*S), ints(256, 256, 256), normal(*S), cat="index")
op("index_select0", lambda lib, x, i: lib.index_select(x, 0, i), normal(*S), ints(256, 512),
   cat="index")
op("index_select1", lambda lib, x, i: lib.index_select(x, 1, i), normal(*S), ints(256, 512),
   cat="index")
op("index_add", lambda lib, x, i, s: lib.index_add(x, 0, i, s), normal(*S), ints(256, 512),
   normal(512, 256), cat="index")
op("index_copy", lambda lib, x, i, s: lib.index_copy(x, 0, i, s), normal(*S), perm(256, 128),
   normal(128, 256), cat="index")
op("index_fill", lambda lib, x, i: lib.index_fill(x, 1, i, 0.5), normal(*S), ints(256, 64),
   cat="index")
op("index_put", lambda lib, x, i, v: lib.index_put(x, (i,), v, accumulate=True), normal(*S),
   ints(256, 512), normal(512, 256), cat="index")
op("masked_fill", lambda lib, x, m: lib.masked_fill(x, m, 0.0), normal(*S), mask(*S), cat="index")
op("masked_select", lambda lib, x, m: lib.masked_select(x, m), normal(*S), mask(*S), cat="index")
op("masked_scatter", lambda lib, x, m, s: lib.masked_scatter(x, m, s), normal(*S), mask(*S),
   normal(*S), cat="index")
op("take", lambda lib, x, i: lib.take(x, i), normal(*S), ints(65536, 65536), cat="index")
op("take_along_dim", lambda lib, x, i: lib.take_along_dim(x, i, 1), normal(*S), ints(256, 256, 64),
   cat="index")
op("getitem_int", lambda lib, x, i: x[i], normal(*S), ints(256, 512), cat="index")
op("getitem_2arr", lambda lib, x, i, j: x[i, j], normal(*S), ints(256, 4096), ints(256, 4096),
   cat="index")
op("getitem_bool", lambda lib, x, m: x[m], normal(*S), mask(*S), cat="index")
op("getitem_slice", lambda lib, x: x[::2, 1:-1], normal(*S), cat="index")
op("nonzero", lambda lib, m: lib.nonzero(m), mask(*S), cat="index", bwd=False)
op("put", lambda lib, x, i, s: lib.put(x, i, s, accumulate=True), normal(*S), ints(65536, 4096),
   normal(4096), cat="index")

# ------------------------------------------------------------------ shape
op("cat", lambda lib, x, y: lib.cat([x, y], 1), normal(*S), normal(*S), cat="shape")
op("cat0", lambda lib, x, y: lib.cat([x, y], 0), normal(*S), normal(*S), cat="shape")
op("stack", lambda lib, x, y: lib.stack([x, y], 1), normal(*S), normal(*S), cat="shape")
op("split", lambda lib, x: lib.split(x, 32, 1)[3], normal(*S), cat="shape")
op("chunk_all", lambda lib, x: lib.cat(lib.chunk(x, 8, 1), 0), normal(*S), cat="shape")
op("unbind_stack", lambda lib, x: lib.stack(lib.unbind(x, 1), 0), normal(*S), cat="shape")
op("flip", lambda lib, x: lib.flip(x, [1]), normal(*S), cat="shape")
op("roll", lambda lib, x: lib.roll(x, 3, 1), normal(*S), cat="shape")
op("roll2", lambda lib, x: lib.roll(x, (3, 5), (0, 1)), normal(*S), cat="shape")
op("repeat", lambda lib, x: x.repeat(2, 2), normal(128, 128), cat="shape")
op("tile", lambda lib, x: lib.tile(x, (2, 2)), normal(128, 128), cat="shape")
op("repeat_interleave", lambda lib, x: lib.repeat_interleave(x, 2, 1), normal(256, 128),
   cat="shape")
op("repeat_interleave_t", lambda lib, x, r: lib.repeat_interleave(x, r, 0), normal(*S),
   ints(3, 256), cat="shape")
op("T_contig", lambda lib, x: x.t().contiguous(), normal(*S), cat="shape")
op("permute_contig", lambda lib, x: x.permute(0, 2, 3, 1).contiguous(), normal(8, 32, 16, 16),
   cat="shape")
op("expand_contig", lambda lib, x: x.expand(256, 256).contiguous(), normal(1, 256), cat="shape")
op("narrow", lambda lib, x: lib.narrow(x, 1, 10, 100), normal(*S), cat="shape")
op("unfold", lambda lib, x: x.unfold(1, 8, 4), normal(*S), cat="shape")
op("tril", lambda lib, x: lib.tril(x), normal(*S), cat="shape")
op("triu", lambda lib, x: lib.triu(x, 1), normal(*S), cat="shape")
op("diag", lambda lib, x: lib.diag(x), normal(*S), cat="shape")
op("diag_embed", lambda lib, x: lib.diag_embed(x), normal(4, 128), cat="shape")
op("diagonal", lambda lib, x: lib.diagonal(x), normal(*S), cat="shape")
op("rot90", lambda lib, x: lib.rot90(x, 1, (0, 1)), normal(*S), cat="shape")
op("movedim", lambda lib, x: lib.movedim(x, 1, 3).contiguous(), normal(8, 32, 16, 16), cat="shape")
op("flatten", lambda lib, x: lib.flatten(x, 1), normal(8, 32, 16, 16), cat="shape")
op("hstack", lambda lib, x, y: lib.hstack([x, y]), normal(*S), normal(*S), cat="shape")
op("kron", lambda lib, x, y: lib.kron(x, y), normal(16, 16), normal(16, 16), cat="shape")
op("cross", lambda lib, x, y: lib.linalg.cross(x, y), normal(21845, 3), normal(21845, 3),
   cat="shape")
op("slice_scatter", lambda lib, x, s: lib.slice_scatter(x, s, 1, 0, 128), normal(*S),
   normal(256, 128), cat="shape")
op("select_scatter", lambda lib, x, s: lib.select_scatter(x, s, 1, 5), normal(*S), normal(256),
   cat="shape")
op("diagonal_scatter", lambda lib, x, s: lib.diagonal_scatter(x, s), normal(*S), normal(256),
   cat="shape")
op("block_diag", lambda lib, x, y: lib.block_diag(x, y), normal(128, 128), normal(128, 128),
   cat="shape")
op("cartesian_prod", lambda lib, x, y: lib.cartesian_prod(x, y), normal(256), normal(256),
   cat="shape")
op("meshgrid", lambda lib, x, y: lib.meshgrid(x, y, indexing="ij")[0], normal(256), normal(256),
   cat="shape")
op("one_hot", lambda lib, i: F(lib).one_hot(i, 100), ints(100, 4096), cat="shape", bwd=False)

# ------------------------------------------------------------------ matmul / linalg
op("mm", lambda lib, x, y: lib.mm(x, y), normal(*S), normal(*S), cat="matmul")
op("matmul_3d2d", lambda lib, x, y: lib.matmul(x, y), normal(16, 64, 64), normal(64, 64),
   cat="matmul")
op("bmm", lambda lib, x, y: lib.bmm(x, y), normal(16, 64, 64), normal(16, 64, 64), cat="matmul")
op("addmm", lambda lib, b, x, y: lib.addmm(b, x, y), normal(256), normal(*S), normal(*S),
   cat="matmul")
op("baddbmm", lambda lib, b, x, y: lib.baddbmm(b, x, y), normal(16, 64, 64), normal(16, 64, 64),
   normal(16, 64, 64), cat="matmul")
op("mv", lambda lib, x, y: lib.mv(x, y), normal(*S), normal(256), cat="matmul")
op("outer", lambda lib, x, y: lib.outer(x, y), normal(256), normal(256), cat="matmul")
op("dot", lambda lib, x, y: lib.dot(x, y), normal(65536), normal(65536), cat="matmul")
op("einsum_bij", lambda lib, x, y: lib.einsum("bij,bjk->bik", x, y), normal(16, 64, 64),
   normal(16, 64, 64), cat="matmul")
op("einsum_trace", lambda lib, x, y: lib.einsum("ij,ij->i", x, y), normal(*S), normal(*S),
   cat="matmul")
op("tensordot", lambda lib, x, y: lib.tensordot(x, y, dims=([1], [0])), normal(*S), normal(*S),
   cat="matmul")
op("linear", lambda lib, x, w, b: F(lib).linear(x, w, b), normal(512, 128), normal(128, 128),
   normal(128), cat="matmul")
op("bilinear", lambda lib, x, y, w, b: F(lib).bilinear(x, y, w, b), normal(512, 32),
   normal(512, 32), normal(16, 32, 32), normal(16), cat="matmul")
op("cdist", lambda lib, x, y: lib.cdist(x, y), normal(256, 64), normal(256, 64), cat="matmul")
op("chain_matmul3", lambda lib, x, y, z: lib.linalg.multi_dot([x, y, z]), normal(128, 128),
   normal(128, 128), normal(128, 128), cat="matmul")
op("linalg.inv", lambda lib, a: lib.linalg.inv(a), spd(16, 32), cat="linalg")
op("linalg.det", lambda lib, a: lib.linalg.det(a), spd(16, 32), cat="linalg")
op("linalg.slogdet", lambda lib, a: lib.linalg.slogdet(a)[1], spd(16, 32), cat="linalg")
op("linalg.cholesky", lambda lib, a: lib.linalg.cholesky(a), spd(16, 32), cat="linalg")
op("linalg.qr", lambda lib, a: lib.linalg.qr(a)[1], normal(16, 32, 32), cat="linalg")
op("linalg.svd", lambda lib, a: lib.linalg.svd(a, full_matrices=False)[1], normal(16, 32, 32),
   cat="linalg")
op("linalg.svdvals", lambda lib, a: lib.linalg.svdvals(a), normal(16, 32, 32), cat="linalg")
op("linalg.eigh", lambda lib, a: lib.linalg.eigh(a)[0], spd(16, 32), cat="linalg")
op("linalg.eigvalsh", lambda lib, a: lib.linalg.eigvalsh(a), spd(16, 32), cat="linalg")
op("linalg.solve", lambda lib, a, b: lib.linalg.solve(a, b), spd(16, 32), normal(16, 32, 8),
   cat="linalg")
op("linalg.matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a * 0.1), normal(16, 32, 32),
   cat="linalg")
op("linalg.pinv", lambda lib, a: lib.linalg.pinv(a), normal(16, 32, 32), cat="linalg")
op("linalg.matrix_norm", lambda lib, a: lib.linalg.matrix_norm(a), normal(16, 32, 32), cat="linalg")
op("linalg.matrix_norm_2", lambda lib, a: lib.linalg.matrix_norm(a, 2), normal(16, 32, 32),
   cat="linalg")
op("linalg.lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b)[0], normal(16, 32, 32),
   normal(16, 32, 8), cat="linalg")
op("cholesky_solve", lambda lib, b, l: lib.cholesky_solve(b, l), normal(16, 32, 8),
   ("f", np.linalg.cholesky(spd(16, 32)[1]).astype(np.float32), True), cat="linalg")
op("triangular_solve", lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False),
   ("f", np.linalg.cholesky(spd(16, 32)[1]).astype(np.float32), True), normal(16, 32, 8),
   cat="linalg")
op("linalg.matrix_power", lambda lib, a: lib.linalg.matrix_power(a * 0.2, 5), normal(16, 32, 32),
   cat="linalg")

# ------------------------------------------------------------------ nn activations
R = (512, 128)
for n in ["relu", "relu6", "elu", "selu", "celu", "silu", "mish", "softplus", "softsign",
          "softshrink", "hardshrink", "tanhshrink", "hardtanh", "hardswish", "hardsigmoid",
          "leaky_relu", "logsigmoid", "gelu", "sigmoid", "tanh"]:
    op("F." + n, lambda lib, x, n=n: getattr(F(lib), n)(x), normal(*R), cat="act")
op("F.gelu_tanh", lambda lib, x: F(lib).gelu(x, approximate="tanh"), normal(*R), cat="act")
op("F.glu", lambda lib, x: F(lib).glu(x, -1), normal(*R), cat="act")
op("F.threshold", lambda lib, x: F(lib).threshold(x, 0.1, 0.0), normal(*R), cat="act")
op("F.rrelu_eval", lambda lib, x: F(lib).rrelu(x, training=False), normal(*R), cat="act")
op("F.rrelu_train", lambda lib, x: F(lib).rrelu(x, training=True), normal(*R), cat="act")
op("F.prelu", lambda lib, x, w: F(lib).prelu(x, w), normal(8, 32, 16, 16), normal(32), cat="act")
op("F.softmin", lambda lib, x: F(lib).softmin(x, -1), normal(*R), cat="act")
op("F.softmax", lambda lib, x: F(lib).softmax(x, -1), normal(*R), cat="act")
op("F.normalize", lambda lib, x: F(lib).normalize(x, dim=-1), normal(*R), cat="act")
op("F.cosine_similarity", lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=-1), normal(*R),
   normal(*R), cat="act")
op("F.pairwise_distance", lambda lib, x, y: F(lib).pairwise_distance(x, y), normal(*R), normal(*R),
   cat="act")
op("F.pdist", lambda lib, x: F(lib).pdist(x), normal(128, 32), cat="act")
op("F.dropout_eval", lambda lib, x: F(lib).dropout(x, 0.5, training=False), normal(*R), cat="act")
op("F.alpha_dropout", lambda lib, x: F(lib).alpha_dropout(x, 0.2, training=True), normal(*R),
   cat="act")
op("F.feature_alpha_dropout", lambda lib, x: F(lib).feature_alpha_dropout(x, 0.2, training=True),
   normal(8, 32, 16, 16), cat="act")
op("F.dropout2d", lambda lib, x: F(lib).dropout2d(x, 0.2, training=True), normal(8, 32, 16, 16),
   cat="act")

# ------------------------------------------------------------------ losses
for n in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
          "multilabel_soft_margin_loss", "binary_cross_entropy_with_logits"]:
    op("F." + n, lambda lib, x, y, n=n: getattr(F(lib), n)(x, y), normal(*R),
       unit(*R) if "cross" in n or "multilabel" in n else const(*R), cat="loss")
op("F.bce", lambda lib, x, y: F(lib).binary_cross_entropy(x, y), unit(*R),
   ("f", rng.uniform(0, 1, R).astype(np.float32), False), cat="loss")
op("F.kl_div", lambda lib, x, y: F(lib).kl_div(x, y, reduction="batchmean"), normal(*R), unit(*R),
   cat="loss")
op("F.kl_div_log", lambda lib, x, y: F(lib).kl_div(x, y, reduction="batchmean", log_target=True),
   normal(*R), normal(*R), cat="loss")
op("F.nll_loss", lambda lib, x, t: F(lib).nll_loss(x, t), normal(512, 128), ints(128, 512),
   cat="loss")
op("F.poisson_nll_loss", lambda lib, x, t: F(lib).poisson_nll_loss(x, t), normal(*R), const_pos(*R),
   cat="loss")
op("F.gaussian_nll_loss", lambda lib, x, t, v: F(lib).gaussian_nll_loss(x, t, v), normal(*R),
   const(*R), pos(*R), cat="loss")
op("F.hinge_embedding_loss", lambda lib, x, t: F(lib).hinge_embedding_loss(x, t), normal(*R),
   ("f", np.sign(rng.standard_normal(R)).astype(np.float32), False), cat="loss")
op("F.margin_ranking_loss", lambda lib, x, y, t: F(lib).margin_ranking_loss(x, y, t), normal(65536),
   normal(65536), ("f", np.sign(rng.standard_normal(65536)).astype(np.float32), False), cat="loss")
op("F.cosine_embedding_loss", lambda lib, x, y, t: F(lib).cosine_embedding_loss(x, y, t),
   normal(*R), normal(*R), ("f", np.sign(rng.standard_normal(512)).astype(np.float32), False),
   cat="loss")
op("F.triplet_margin_loss", lambda lib, a, p, n: F(lib).triplet_margin_loss(a, p, n), normal(*R),
   normal(*R), normal(*R), cat="loss")
op("F.multi_margin_loss", lambda lib, x, t: F(lib).multi_margin_loss(x, t), normal(*R),
   ints(128, 512), cat="loss")
op("F.multilabel_margin_loss", lambda lib, x, t: F(lib).multilabel_margin_loss(x, t),
   normal(512, 32),
   ("i", np.where(rng.random((512, 32)) < 0.8, rng.integers(0, 32, (512, 32)), -1), False),
   cat="loss")

# ------------------------------------------------------------------ conv / pool / resize
IM = (8, 32, 16, 16)  # 65536
op("F.conv2d", lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding=1), normal(*IM),
   normal(32, 32, 3, 3), normal(32), cat="conv")
op("F.conv2d_s2", lambda lib, x, w: F(lib).conv2d(x, w, stride=2, padding=1), normal(*IM),
   normal(64, 32, 3, 3), cat="conv")
op("F.conv2d_1x1", lambda lib, x, w: F(lib).conv2d(x, w), normal(*IM), normal(64, 32, 1, 1),
   cat="conv")
op("F.conv2d_dw", lambda lib, x, w: F(lib).conv2d(x, w, padding=1, groups=32), normal(*IM),
   normal(32, 1, 3, 3), cat="conv")
op("F.conv1d", lambda lib, x, w: F(lib).conv1d(x, w, padding=2), normal(16, 32, 128),
   normal(32, 32, 5), cat="conv")
op("F.conv3d", lambda lib, x, w: F(lib).conv3d(x, w, padding=1), normal(2, 16, 8, 16, 16),
   normal(16, 16, 3, 3, 3), cat="conv")
op("F.conv_transpose2d",
   lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
   normal(*IM), normal(32, 16, 3, 3), cat="conv")
op("F.conv_transpose1d", lambda lib, x, w: F(lib).conv_transpose1d(x, w, stride=2),
   normal(16, 32, 128), normal(32, 16, 4), cat="conv")
op("F.max_pool2d", lambda lib, x: F(lib).max_pool2d(x, 2), normal(*IM), cat="pool")
op("F.max_pool2d_k3s2", lambda lib, x: F(lib).max_pool2d(x, 3, 2, 1), normal(*IM), cat="pool")
op("F.max_pool2d_idx", lambda lib, x: F(lib).max_pool2d(x, 2, return_indices=True)[0], normal(*IM),
   cat="pool")
op("F.avg_pool2d", lambda lib, x: F(lib).avg_pool2d(x, 2), normal(*IM), cat="pool")
op("F.avg_pool2d_k3s1p1", lambda lib, x: F(lib).avg_pool2d(x, 3, 1, 1), normal(*IM), cat="pool")
op("F.avg_pool2d_ceil",
   lambda lib, x: F(lib).avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
   normal(*IM), cat="pool")
op("F.adaptive_avg_pool2d", lambda lib, x: F(lib).adaptive_avg_pool2d(x, (5, 5)), normal(*IM),
   cat="pool")
op("F.adaptive_avg_pool2d_1", lambda lib, x: F(lib).adaptive_avg_pool2d(x, 1), normal(*IM),
   cat="pool")
op("F.adaptive_max_pool2d", lambda lib, x: F(lib).adaptive_max_pool2d(x, (5, 5)), normal(*IM),
   cat="pool")
op("F.lp_pool2d", lambda lib, x: F(lib).lp_pool2d(x, 2, 2), normal(*IM), cat="pool")
op("F.max_pool1d", lambda lib, x: F(lib).max_pool1d(x, 2), normal(16, 32, 128), cat="pool")
op("F.avg_pool1d", lambda lib, x: F(lib).avg_pool1d(x, 3, 2, 1), normal(16, 32, 128), cat="pool")
op("F.adaptive_avg_pool1d", lambda lib, x: F(lib).adaptive_avg_pool1d(x, 7), normal(16, 32, 128),
   cat="pool")
op("F.adaptive_max_pool1d", lambda lib, x: F(lib).adaptive_max_pool1d(x, 7), normal(16, 32, 128),
   cat="pool")
op("F.max_pool3d", lambda lib, x: F(lib).max_pool3d(x, 2), normal(2, 16, 8, 16, 16), cat="pool")
op("F.avg_pool3d", lambda lib, x: F(lib).avg_pool3d(x, 2), normal(2, 16, 8, 16, 16), cat="pool")
op("F.adaptive_avg_pool3d", lambda lib, x: F(lib).adaptive_avg_pool3d(x, 3),
   normal(2, 16, 8, 16, 16), cat="pool")
op("F.adaptive_max_pool3d", lambda lib, x: F(lib).adaptive_max_pool3d(x, 3),
   normal(2, 16, 8, 16, 16), cat="pool")
op("F.max_unpool2d",
   lambda lib, x: F(lib).max_unpool2d(*F(lib).max_pool2d(x, 2, return_indices=True), 2),
   normal(*IM), cat="pool")
op("F.fractional_max_pool2d", lambda lib, x: F(lib).fractional_max_pool2d(x, 2, output_ratio=0.5),
   normal(*IM), cat="pool")
for mode, kw in [("nearest", {}), ("bilinear", {"align_corners": False}),
                 ("bilinear_ac", {"align_corners": True}), ("bicubic", {"align_corners": False}),
                 ("nearest-exact", {})]:
    m = mode.replace("_ac", "")
    op("F.interpolate_" + mode,
       lambda lib, x, m=m, kw=kw: F(lib).interpolate(x, scale_factor=2, mode=m, **kw), normal(*IM),
       cat="resize")
op("F.interpolate_bilinear_down",
   lambda lib, x: F(lib).interpolate(x, size=(11, 11), mode="bilinear"), normal(*IM), cat="resize")
op("F.interpolate_area", lambda lib, x: F(lib).interpolate(x, size=(11, 11), mode="area"),
   normal(*IM), cat="resize")
op("F.interpolate_linear", lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="linear"),
   normal(16, 32, 128), cat="resize")
op("F.interpolate_trilinear",
   lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="trilinear"), normal(2, 16, 8, 16, 16),
   cat="resize")
op("F.interpolate_nearest3d", lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="nearest"),
   normal(2, 16, 8, 16, 16), cat="resize")
op("F.grid_sample", lambda lib, x, g: F(lib).grid_sample(x, g, align_corners=False), normal(*IM),
   ("f", rng.uniform(-1, 1, (8, 16, 16, 2)).astype(np.float32), True), cat="resize")
op("F.grid_sample_nearest",
   lambda lib, x, g: F(lib).grid_sample(x, g, mode="nearest", align_corners=False), normal(*IM),
   ("f", rng.uniform(-1, 1, (8, 16, 16, 2)).astype(np.float32), False), cat="resize")
op("F.affine_grid", lambda lib, t: F(lib).affine_grid(t, (8, 32, 64, 64), align_corners=False),
   normal(8, 2, 3), cat="resize")
op("F.pixel_shuffle", lambda lib, x: F(lib).pixel_shuffle(x, 2), normal(*IM), cat="resize")
op("F.pixel_unshuffle", lambda lib, x: F(lib).pixel_unshuffle(x, 2), normal(*IM), cat="resize")
op("F.channel_shuffle", lambda lib, x: F(lib).channel_shuffle(x, 4), normal(*IM), cat="resize")
op("F.unfold", lambda lib, x: F(lib).unfold(x, 3, padding=1), normal(8, 8, 16, 16), cat="resize")
op("F.fold", lambda lib, x: F(lib).fold(x, (16, 16), 3, padding=1), normal(8, 72, 256),
   cat="resize")
for mode in ["constant", "reflect", "replicate", "circular"]:
    op("F.pad_" + mode, lambda lib, x, mode=mode: F(lib).pad(x, (1, 2, 3, 1), mode=mode),
       normal(*IM), cat="pad")
op("F.pad_1d_reflect", lambda lib, x: F(lib).pad(x, (3, 3), mode="reflect"), normal(16, 32, 128),
   cat="pad")
op("F.pad_3d_replicate", lambda lib, x: F(lib).pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"),
   normal(2, 16, 8, 16, 16), cat="pad")

# ------------------------------------------------------------------ embedding / norms / attention
op("F.embedding", lambda lib, i, w: F(lib).embedding(i, w), ints(1000, 32, 128), normal(1000, 64),
   cat="nn")
op("F.embedding_pad", lambda lib, i, w: F(lib).embedding(i, w, padding_idx=0), ints(1000, 32, 128),
   normal(1000, 64), cat="nn")
op("F.embedding_maxnorm", lambda lib, i, w: F(lib).embedding(i, w.detach(), max_norm=1.0),
   ints(1000, 32, 128), const(1000, 64), cat="nn", bwd=False)
op("F.embedding_bag", lambda lib, i, w: F(lib).embedding_bag(i, w, mode="mean"),
   ints(1000, 512, 16), normal(1000, 64), cat="nn")
op("F.embedding_bag_max", lambda lib, i, w: F(lib).embedding_bag(i, w, mode="max"),
   ints(1000, 512, 16), normal(1000, 64), cat="nn")
op("F.batch_norm_train", lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w, b, training=True),
   normal(*IM), normal(32), normal(32), cat="norm")
op("F.batch_norm_eval",
   lambda lib, x, rm, rv, w, b: F(lib).batch_norm(x, rm, rv, w, b, training=False), normal(*IM),
   const(32), const_pos(32), normal(32), normal(32), cat="norm")
op("F.batch_norm1d_train",
   lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w, b, training=True), normal(*R),
   normal(128), normal(128), cat="norm")
op("F.group_norm", lambda lib, x, w, b: F(lib).group_norm(x, 8, w, b), normal(*IM), normal(32),
   normal(32), cat="norm")
op("F.instance_norm", lambda lib, x, w, b: F(lib).instance_norm(x, weight=w, bias=b), normal(*IM),
   normal(32), normal(32), cat="norm")
op("F.layer_norm", lambda lib, x, w, b: F(lib).layer_norm(x, (128,), w, b), normal(*R), normal(128),
   normal(128), cat="norm")
op("F.layer_norm_img", lambda lib, x: F(lib).layer_norm(x, (32, 16, 16)), normal(*IM), cat="norm")
op("F.rms_norm", lambda lib, x, w: F(lib).rms_norm(x, (128,), w), normal(*R), normal(128),
   cat="norm")
op("F.local_response_norm", lambda lib, x: F(lib).local_response_norm(x, 5), normal(*IM),
   cat="norm")
op("F.sdpa", lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v),
   normal(8, 4, 64, 32), normal(8, 4, 64, 32), normal(8, 4, 64, 32), cat="attn")
op("F.sdpa_causal",
   lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v, is_causal=True),
   normal(8, 4, 64, 32), normal(8, 4, 64, 32), normal(8, 4, 64, 32), cat="attn")
op("F.cross_entropy", lambda lib, x, t: F(lib).cross_entropy(x, t), normal(512, 128),
   ints(128, 512), cat="loss")
op("F.cross_entropy_ls", lambda lib, x, t: F(lib).cross_entropy(x, t, label_smoothing=0.1),
   normal(512, 128), ints(128, 512), cat="loss")
op("F.cross_entropy_prob", lambda lib, x, t: F(lib).cross_entropy(x, t), normal(512, 128),
   unit(512, 128), cat="loss")




# ------------------------------------------------------------------ timing
def best_us(f, budget=0.004, reps=5) -> float:
    """µs per call of ``f``: two warm-up calls, a loop grown until it lasts ``budget`` s (at
    most 65536 calls), then the best of ``reps`` such loops."""
    f()
    f()
    n, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        t = time.perf_counter() - t0
        if t >= budget or n >= 1 << 16:
            break
        n = max(n * 2, int(n * budget / max(t, 1e-7) * 1.2))
    best = t / n
    for _ in range(reps - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def first_float(out):
    """The output itself, or the first floating tensor of a tuple / list of outputs."""
    if isinstance(out, (tuple, list)):
        out = [o for o in out if o.is_floating_point()][0]
    return out


def bench_one(lib, fn, inputs, bwd) -> tuple[float, float | None]:
    """(forward µs, forward + backward µs or None) of one case in ``lib``."""
    ts = [mk(lib, a.copy(), g) for (_, a, g) in inputs]
    fwd = best_us(lambda: fn(lib, *ts))
    out = first_float(fn(lib, *ts))
    fb = None
    if bwd and out.requires_grad:
        gout = lib.ones_like(out)
        leaves = [t for t in ts if t.requires_grad]

        def step():
            for t in leaves:
                t.grad = None
            o = first_float(fn(lib, *ts))
            o.backward(gout)
        fb = best_us(step)
    return fwd, fb


def select(pattern: str | None) -> list:
    """The cases whose name ``pattern`` matches (re.search), all when None."""
    pat = re.compile(pattern) if pattern else None
    return [s for s in SPECS if pat is None or pat.search(s[0])]


def _line(name: str, gf: float, tf: float, gfb: float | None, tfb: float | None) -> str:
    s = f"{name:28s} fwd {gf:9.1f} {tf:9.1f} {gf / tf:6.1f}x"
    return s + (f"   f+b {gfb:9.1f} {tfb:9.1f} {gfb / tfb:6.1f}x" if gfb else "")


def _table(rows: list) -> str:
    out = ["| op | shape | tgrad fwd µs | torch fwd µs | fwd x | tgrad f+b µs | torch f+b µs "
           "| f+b x |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        fb = (f"{r['tg_fb']:.0f} | {r['th_fb']:.0f} | {r['tg_fb'] / r['th_fb']:.1f}"
              if r["tg_fb"] else " | | ")
        out.append(f"| {r['name']} | {r['shape']} | {r['tg_f']:.0f} | {r['th_f']:.0f} | "
                   f"{r['tg_f'] / r['th_f']:.1f} | {fb} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pattern", nargs="?", default=None,
                   help="regex: time the cases whose name it matches (re.search); all if none")
    p.add_argument("--json", metavar="PATH", default=None, help="write the report to PATH")
    p.add_argument("--out", metavar="DIR", default=str(ROOT / "perf" / "out"),
                   help="write DIR/bench_ops_torch.json ('' for none)")
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    print(f"tgrad {tgrad.__file__}, torch {torch.__version__} (one thread); µs: tgrad, torch, "
          "tgrad / torch")
    rows, fails = [], []
    for name, fn, inputs, cat, bwd in select(args.pattern):
        try:
            tf, tfb = bench_one(torch, fn, inputs, bwd)
        except Exception as e:
            fails.append((name, "torch", repr(e)[:150]))
            continue
        try:
            gf, gfb = bench_one(tgrad, fn, inputs, bwd)
        except Exception as e:
            fails.append((name, "tgrad", repr(e)[:150]))
            continue
        shp = "x".join(str(a.shape) for (_, a, _) in inputs).replace(" ", "")
        rows.append(dict(name=name, cat=cat, shape=shp, tg_f=gf, th_f=tf, tg_fb=gfb, th_fb=tfb))
        print(_line(name, gf, tf, gfb, tfb), flush=True)
    for r in rows:
        r["ratio"] = max(r["tg_f"] / r["th_f"], (r["tg_fb"] / r["th_fb"]) if r["tg_fb"] else 0)
    rows.sort(key=lambda r: -r["ratio"])
    print("\n" + _table(rows))
    print("\nFAILURES")
    for f in fails:
        print(" ", *f)
    report = header("tgrad-bench-ops-torch/1")
    report.update(
        device="cpu", pattern=args.pattern,
        tgrad_path=str(Path(tgrad.__file__).parent),
        versions={"tgrad": getattr(tgrad, "__version__", "?"),
                  "python": platform.python_version(), "numpy": np.__version__,
                  "torch": torch.__version__},
        method={"timer": "time.perf_counter", "statistic": "best of 5 loops of >= 4 ms",
                "warmup_calls": 2, "threads": 1, "backward": "out.backward(ones_like(out))"},
        rows=rows, fails=fails)
    if args.json:
        save(report, Path(args.json).parent, Path(args.json).name)
    if args.out:
        save(report, args.out, "bench_ops_torch.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
