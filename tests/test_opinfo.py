"""Table-driven op tests: every OpSpec of tests/op_db.py (and tests/op_db_nn.py if present).

Per sample: forward vs the NumPy float64 reference in float64/float32/float16/bfloat16
(low precision against the reference of the same rounded inputs), gradcheck and
gradgradcheck in float64 on small samples, a finite-difference directional derivative on
the large ones, and NaN/inf propagation as NumPy does.
"""

from __future__ import annotations

import math
import warnings
import zlib

import ml_dtypes
import numpy as np
import op_db
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

try:
    import op_db_nn
except ImportError:  # another engineer's table; collected when it exists
    op_db_nn = None

SPECS = list(op_db.OP_DB) + (list(op_db_nn.OP_DB) if op_db_nn is not None else [])
assert len({s.name for s in SPECS}) == len(SPECS), "OpSpec names must be unique"
DIFF_SPECS = [s for s in SPECS if s.differentiable]
NP_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16,
             "bfloat16": ml_dtypes.bfloat16}


def _is_float(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _samples(spec: op_db.OpSpec) -> list:
    return spec.samples(np.random.default_rng(zlib.crc32(spec.name.encode())))


def _to_domain(x: np.ndarray, domain: tuple) -> np.ndarray:
    lo, hi = domain
    x = np.asarray(x)
    if lo is not None and hi is not None:
        return np.asarray(lo + (hi - lo) * (0.05 + 0.9 / (1.0 + np.exp(-x))))
    if lo is not None:
        return np.asarray(lo + np.abs(x) + 0.1)
    if hi is not None:
        return np.asarray(hi - np.abs(x) - 0.1)
    return x


class Built:
    """A sample's arguments as tgrad tensors (plus the leaves behind any views)."""

    def __init__(self, spec, sample, dtype: str, requires_grad: bool = False,
                 arrays: list | None = None) -> None:
        self.spec, self.sample = spec, sample
        np_dt = NP_DTYPES[dtype]
        arrs = arrays if arrays is not None else [
            _to_domain(a, spec.domain) if _is_float(a) else a
            for a in sample.args if isinstance(a, np.ndarray)]
        # What the reference sees: the inputs rounded to the tested dtype, in float64.
        self.ref_arrays = [a.astype(np_dt).astype(np.float64) if _is_float(a) else a
                           for a in arrs]
        self.leaves, self.layouts = [], []
        for i, a in enumerate(arrs):
            lay = sample.layouts[i] if i < len(sample.layouts) else "c"
            dt = getattr(tgrad, dtype) if _is_float(a) else None
            if lay == "T":
                base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
            elif lay == "s":
                base = np.full(a.shape[:-1] + (2 * a.shape[-1],), 7.0, a.dtype)
                base[..., ::2] = a
            else:
                base = a
            leaf = tgrad.tensor(base, dtype=dt)
            if requires_grad and _is_float(a):
                leaf.requires_grad_(True)
            self.leaves.append(leaf)
            self.layouts.append(lay)
        self.float_idx = [i for i, a in enumerate(arrs) if _is_float(a)]

    @staticmethod
    def view(leaf, lay):
        if lay == "T":
            return leaf.transpose(-1, -2)
        if lay == "s":
            return leaf[..., ::2]
        return leaf

    def args(self, leaves=None) -> tuple:
        leaves = self.leaves if leaves is None else leaves
        it = iter(self.view(t, lay) for t, lay in zip(leaves, self.layouts))
        return tuple(next(it) if isinstance(a, np.ndarray) else a for a in self.sample.args)

    def ref_args(self) -> tuple:
        it = iter(self.ref_arrays)
        return tuple(next(it) if isinstance(a, np.ndarray) else a for a in self.sample.args)

    def call(self, leaves=None):
        return self.spec.op(*self.args(leaves), **self.sample.kwargs)

    def reference(self):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's nan/inf notes
            return self.spec.ref(*self.ref_args(), **self.sample.kwargs)


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _compare(spec, sample, out, ref, dtype: str, has_float: bool) -> None:
    outs, refs = _as_tuple(out), _as_tuple(ref)
    assert len(outs) == len(refs), f"{spec.name} {sample}: {len(outs)} outputs vs {len(refs)}"
    rtol, atol = spec.tol(dtype)
    for k, (o, r) in enumerate(zip(outs, refs)):
        r = np.asarray(r)
        where = f"{spec.name} {sample} [{dtype}] output {k}"
        assert isinstance(o, tgrad.Tensor), where
        assert tuple(o.shape) == r.shape, f"{where}: shape {tuple(o.shape)} vs {r.shape}"
        got = o.detach().numpy()
        if r.dtype == np.bool_:
            assert o.dtype is tgrad.bool, f"{where}: dtype {o.dtype}, expected bool"
            np.testing.assert_array_equal(got, r, err_msg=where)
        elif r.dtype.kind in "iu":  # NumPy's integer promotion is PyTorch's (int64 sums)
            assert o.dtype.np == r.dtype, f"{where}: dtype {o.dtype}, expected {r.dtype}"
            np.testing.assert_array_equal(got, r, err_msg=where)
        else:
            if has_float:
                assert o.dtype is getattr(tgrad, dtype), f"{where}: dtype {o.dtype}"
            np.testing.assert_allclose(got.astype(np.float64), r, rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=where)


def _with_dtypes(specs: list, dts: tuple) -> list:
    """(spec, dtype) pairs for the dtypes each spec lists (no skipped parameters)."""
    return [pytest.param(s, d, id=f"{s.name}-{d}") for s in specs for d in dts
            if d in s.dtypes]


@pytest.mark.parametrize(("spec", "dtype"),
                         _with_dtypes(SPECS, ("float64", "float32", "float16", "bfloat16")))
def test_forward(spec, dtype):
    ran = 0
    for sample in _samples(spec):
        has_float = any(_is_float(a) for a in sample.args)
        if not has_float and dtype != "float64":
            continue  # bool/int-only samples do not depend on the float dtype
        b = Built(spec, sample, dtype)
        _compare(spec, sample, b.call(), b.reference(), dtype, has_float)
        ran += 1
    assert ran > 0 or dtype != "float64"


def _float_numel(sample) -> int:
    return sum(a.size for a in sample.args if _is_float(a))


def _finite_reference(b: Built) -> bool:
    return all(np.all(np.isfinite(np.asarray(r, np.float64))) for r in _as_tuple(b.reference()))


@pytest.mark.parametrize("spec", DIFF_SPECS, ids=lambda s: s.name)
def test_gradcheck(spec):
    """gradcheck + gradgradcheck in float64 on the small samples (leaves behind views)."""
    checked = 0
    for sample in _samples(spec):
        if not 0 < _float_numel(sample) <= spec.grad_max_numel:
            continue
        b = Built(spec, sample, "float64", requires_grad=True)
        if not _finite_reference(b):
            continue  # e.g. var of one element (NaN): no derivative to check
        leaves = [b.leaves[i] for i in b.float_idx]

        def func(*diff_leaves, b=b):
            ls = list(b.leaves)
            for i, t in zip(b.float_idx, diff_leaves):
                ls[i] = t
            return b.call(ls)

        assert gradcheck(func, tuple(leaves)), f"{spec.name} {sample}"
        if spec.gradgrad and sample.gradgrad:
            assert gradgradcheck(func, tuple(leaves)), f"{spec.name} {sample} (gradgrad)"
        checked += 1
    assert checked > 0, f"{spec.name}: no sample small enough for gradcheck"


def _vdot_at(b: Built, leaves: list, us: list, vs: list, step: float) -> float:
    """<v, f(x + step * u)> for the floating outputs of the sample's op."""
    ls = list(b.leaves)
    for i, t, u in zip(b.float_idx, leaves, us):
        ls[i] = tgrad.tensor(t.detach().numpy() + step * u)
    res = [o for o in _as_tuple(b.call(ls)) if o.dtype.is_floating_point]
    return sum(float(np.sum(o.numpy() * v)) for o, v in zip(res, vs))


@pytest.mark.parametrize("spec", DIFF_SPECS, ids=lambda s: s.name)
def test_backward_large_and_empty(spec):
    """Samples too big for gradcheck: <v, J u> from one backward equals the central
    difference (<v, f(x + eps u)> - <v, f(x - eps u)>) / (2 eps) in float64. Empty
    samples: backward runs and gives gradients of the input's shape."""
    rng = np.random.default_rng(1)
    eps = 1e-6
    for sample in _samples(spec):
        n = _float_numel(sample)
        if n == 0 and any(_is_float(a) for a in sample.args):
            b = Built(spec, sample, "float64", requires_grad=True)
            outs = [o for o in _as_tuple(b.call()) if o.requires_grad]
            leaves = [b.leaves[i] for i in b.float_idx]
            grads = tgrad.autograd.grad([o.sum() for o in outs], leaves, allow_unused=True)
            for g, leaf in zip(grads, leaves):
                assert g is None or g.shape == leaf.shape, f"{spec.name} {sample}"
            continue
        if n <= spec.grad_max_numel:
            continue
        b = Built(spec, sample, "float64", requires_grad=True)
        if not _finite_reference(b):
            continue
        leaves = [b.leaves[i] for i in b.float_idx]
        outs = [o for o in _as_tuple(b.call()) if o.requires_grad]
        vs = [rng.standard_normal(o.shape) for o in outs]
        grads = tgrad.autograd.grad(outs, leaves, [tgrad.tensor(v) for v in vs],
                                    allow_unused=True)
        scale = sum(float(np.sum(np.abs(v))) for v in vs)
        for _ in range(5):
            us = [rng.standard_normal(t.shape) for t in leaves]
            numeric, smooth = _directional_fd(b, leaves, us, vs, eps, scale)
            if smooth:
                break
        assert smooth, f"{spec.name} {sample}: no direction without a jump in 5 draws"
        analytic = sum(float(np.sum(g.numpy() * u)) for g, u in zip(grads, us)
                       if g is not None)
        assert abs(analytic - numeric) <= 1e-6 * scale + 1e-5 * abs(numeric), \
            f"{spec.name} {sample}: <v, J u> {analytic} vs finite difference {numeric}"


def _directional_fd(b: Built, leaves, us, vs, eps: float, scale: float) -> tuple:
    """Central difference of <v, f> along u with steps eps and eps/2. They agree where f is
    smooth along the segment; when they do not (a jump of floor/round/sign straddled, an
    O(1/eps) artefact), the caller draws another direction."""
    def fd(h):
        return (_vdot_at(b, leaves, us, vs, h) - _vdot_at(b, leaves, us, vs, -h)) / (2 * h)
    big, small = fd(eps), fd(eps / 2)
    return big, abs(big - small) <= 1e-5 * scale + 1e-5 * abs(big)


# NaN and inf propagate silently, as in PyTorch: a NumPy RuntimeWarning from tgrad fails it
@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(("spec", "dtype"),
                         _with_dtypes([s for s in SPECS if s.nan_inf], ("float64", "float16")))
def test_nan_inf_propagate(spec, dtype):
    """NaN, +inf and -inf in the first floating input give what NumPy gives (float64, and
    float16, which runs through the float32 compute path)."""
    checked = 0
    for sample in _samples(spec):
        arrs = [a for a in sample.args if isinstance(a, np.ndarray)]
        first = next((i for i, a in enumerate(arrs) if _is_float(a) and a.size >= 3), None)
        if first is None:
            continue
        arrs = [_to_domain(a, spec.domain) if _is_float(a) else a for a in arrs]
        special = arrs[first].copy()
        flat = special.reshape(-1)
        flat[0], flat[1], flat[2] = np.nan, np.inf, -np.inf
        arrs[first] = special
        b = Built(spec, sample, dtype, arrays=arrs)
        _compare(spec, sample, b.call(), b.reference(), dtype, True)
        checked += 1
    assert checked > 0


# ---------------------------------------------------------------------- targeted checks
def test_erf_matches_math_erf_to_float64_precision():
    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(-7.0, 7.0, 20001), 3.0 * rng.standard_normal(5000),
                        [0.0, -0.0, 1e-300, -5e-324, 0.99999999, 1.0, 2.5, 5.9999, 6.0]])
    got = tgrad.erf(tgrad.tensor(x, dtype=tgrad.float64)).numpy()
    ref = np.array([math.erf(v) for v in x])
    nz = ref != 0
    assert np.max(np.abs(got[nz] - ref[nz]) / np.abs(ref[nz])) < 2e-15
    np.testing.assert_array_equal(np.signbit(got[~nz]), np.signbit(x[~nz]))  # erf(-0) = -0
    special = tgrad.erf(tgrad.tensor([np.inf, -np.inf, np.nan], dtype=tgrad.float64)).numpy()
    np.testing.assert_array_equal(special, [1.0, -1.0, np.nan])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_reductions_accumulate_in_float32(dtype):
    # Accumulating in the half type itself would stall (fp16: 2048 + 1 == 2048; bf16 at 256).
    n = 4096 if dtype == "float16" else 1000
    x = tgrad.ones(n, dtype=getattr(tgrad, dtype))
    assert x.sum().item() == n and x.sum().dtype is getattr(tgrad, dtype)
    assert x.mean().item() == 1.0
    v = tgrad.tensor(np.arange(n) % 2, dtype=getattr(tgrad, dtype))
    expected = np.var(np.arange(n) % 2, ddof=1)
    assert abs(v.var().item() - expected) <= DTOL[dtype] * expected


DTOL = {"float16": 1e-3, "bfloat16": 1.6e-2}


def test_sum_dtype_argument_widens_before_summing():
    x = np.random.default_rng(4).standard_normal(1025).astype(np.float32)
    s = tgrad.sum(tgrad.tensor(x), dtype=tgrad.float64)
    assert s.dtype is tgrad.float64
    np.testing.assert_allclose(s.item(), np.sum(x.astype(np.float64)), rtol=1e-12)


def test_max_min_with_dim_return_values_indices():
    x = tgrad.tensor([[1.0, 5.0, 5.0], [7.0, -1.0, 2.0]], requires_grad=True)
    r = tgrad.max(x, 1)
    # PyTorch returns a torch.return_types.max structseq (also a values_indices here)
    assert type(r).__name__ == "max" and isinstance(r, tgrad.return_types.values_indices)
    assert r.indices.dtype is tgrad.int64
    np.testing.assert_array_equal(r.values.detach().numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(r.indices.numpy(), [1, 0])  # first of tied maxima
    r.values.sum().backward()
    # max(dim) routes the gradient to the returned index (PyTorch); amax shares ties.
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    x.grad = None
    x.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])
    lo = x.min(dim=0, keepdim=True)
    np.testing.assert_array_equal(lo.values.detach().numpy(), [[1.0, -1.0, 2.0]])
    np.testing.assert_array_equal(lo.indices.numpy(), [[0, 1, 1]])
