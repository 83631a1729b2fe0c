"""Checks of the GPU backend's kernels against the NumPy backend, on device "cuda": run by
tests/_triton_interp_runner.py in Triton's interpreter (CI) and by tests/test_cuda_gpu.py on
a real GPU (perf/gpu_check.sh), where compiled code can differ from the interpreter (NaN and
integer semantics, float arguments, int64 sentinels).

Each ``check_<name>()`` raises AssertionError on a mismatch."""

from __future__ import annotations

import contextlib
import math
import os

import numpy as np

import tgrad


@contextlib.contextmanager
def _no_host_reads(what: str):
    """Inside, every device-to-host copy fails: for paths that must not synchronize (and so
    can be captured into a CUDA graph)."""
    from tgrad.cuda._runtime import runtime
    rt = runtime()

    def refuse(*args, **kwargs):
        raise AssertionError(f"{what}: copied device memory to the host")
    rt.memcpy_dtoh = refuse  # an instance attribute, over the class's method
    try:
        yield
    finally:
        del rt.memcpy_dtoh


def check_grad_formulas() -> None:
    # every fused gradient formula and paired backward primitive: one kernel vs NumPy,
    # with broadcasting, a number operand and special values
    from tgrad.backends import numpy as nb
    from tgrad.backends import triton as be
    rng = np.random.default_rng(7)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])
    dts = [np.dtype(d) for d in os.environ.get("TGRAD_DTYPES", "float32,float64").split(",")]
    for dt in dts:
        g = np.concatenate([rng.standard_normal(9), special]).astype(dt).reshape(17, 1)
        x = np.concatenate([rng.uniform(0.2, 3.0, 9), special]).astype(dt)
        row = rng.uniform(0.5, 2.0, (1, 17)).astype(dt)
        binary = ("div_b", "max_share", "logsumexp", "centered", "prod", "pow_base",
                  "pow_exponent", "eq_mask", "gt_mask", "lt_mask", "atan2_a", "atan2_b")
        cases = [(n, (x.reshape(17, 1),)) for n in nb.GRAD_FORMULAS if n not in binary]
        cases += [("div_b", (x.reshape(17, 1) / row, row)), ("div_b", (x[:, None], 2.0)),
                  ("max_share", (x[:, None], row)), ("max_share", (x[:, None], 1.0)),
                  ("logsumexp", (x[:, None], row)), ("centered", (x[:, None], row)),
                  ("prod", (row, x[:, None])), ("pow_base", (x[:, None], row * 3 - 2)),
                  ("pow_base", (x[:, None], 0.0)), ("pow_exponent", (x[:, None], row)),
                  ("pow_exponent", (2.0, row)), ("eq_mask", (x[:, None], x[::-1, None])),
                  ("gt_mask", (x[:, None], 0.5)), ("lt_mask", (x[:, None], row)),
                  ("gt_mask", (x[:, None], -np.inf)), ("atan2_a", (x[:, None], row - 1)),
                  ("atan2_b", (x[:, None], row - 1)), ("atan2_a", (x[:, None], x[::-1, None])),
                  ("atan2_b", (x[:, None], x[::-1, None])), ("atan2_b", (x[:, None], 0.0)),
                  ("atan2_a", (0.0, x[:, None]))]
        for n, saved in cases:
            want = nb.grad_formula(n, g, *saved)
            got = be.to_host(be.grad_formula(n, be.from_host(g), *[
                be.from_host(s) if isinstance(s, np.ndarray) else s for s in saved]))
            assert got.dtype == want.dtype and got.shape == want.shape, (n, dt)
            np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.float32 else 1e-12,
                                       atol=0, equal_nan=True, err_msg=f"{n} {dt}")
        y = np.concatenate([rng.standard_normal(9), special]).astype(dt)
        for n in ("relu_backward", "tanh_backward", "sigmoid_backward"):
            want = getattr(nb, n)(g[:, 0], y)
            got = be.to_host(getattr(be, n)(be.from_host(g[:, 0]), be.from_host(y)))
            np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.float32 else 1e-12,
                                       atol=0, equal_nan=True, err_msg=f"{n} {dt}")

def check_floor_divide() -> None:
    # NumPy's floor division on floats (specials, signs, exact near integers) and ints
    vals = np.array([7.5, -7.5, 1.0, -1.0, 0.0, -0.0, 0.3, 1e300, np.inf, -np.inf, np.nan])
    a = np.repeat(vals, vals.size)
    b = np.tile(np.concatenate([vals[:-4], [0.1, -0.1, 3.0, 0.0]]), vals.size)[:a.size]
    for dt in (np.float32, np.float64):
        with np.errstate(all="ignore"):  # 1e300 is inf in float32; x // 0
            a_dt, b_dt = a.astype(dt), b.astype(dt)
            want = np.floor_divide(a_dt, b_dt)
        ta, tb = tgrad.tensor(a_dt, device="cuda"), tgrad.tensor(b_dt, device="cuda")
        got = (ta // tb).numpy()
        np.testing.assert_array_equal(got, want)
        num = ~np.isnan(want)  # a NaN's sign is not specified (x86 sets it, GPUs do not)
        np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))
    ia = np.array([7, -7, 7, -7, 0, 5, -5, 9], np.int64)
    ib = np.array([2, 2, -2, -2, 3, 5, 3, -4], np.int64)
    got = (tgrad.tensor(ia, device="cuda") // tgrad.tensor(ib, device="cuda")).numpy()
    np.testing.assert_array_equal(got, ia // ib)
    assert (tgrad.tensor(ia, device="cuda") // 3).tolist() == (ia // 3).tolist()
    try:
        tgrad.tensor(ia, device="cuda") // tgrad.tensor(ib * 0, device="cuda")
    except ZeroDivisionError as e:
        assert "floor_divide: integer division by zero" in str(e)
    else:
        raise AssertionError("no ZeroDivisionError")

def check_split_reductions() -> None:
    # full and few-row reductions run in two stages (partials per chunk, then rows):
    # same results as NumPy, NaN included, and really two launches
    from tgrad.kernels import reduction as red
    stages = []
    orig = red._launch

    def counting(kind, x, y, m, k, sm, sk, kc, ns, *rest):
        stages.append(ns)
        return orig(kind, x, y, m, k, sm, sk, kc, ns, *rest)
    red._launch = counting
    try:
        rng = np.random.default_rng(5)
        # long enough to split (configs.red_split: at least 16384 elements per program when
        # compiled, chunks of 256 in the interpreter)
        n = 3000 if tgrad.cuda.is_interpreted() else 40000
        for shape, dim in [((n + 2000,), None), ((3, n), 1), ((n, 2), 0)]:
            x = rng.standard_normal(shape)
            x.flat[1234] = np.nan
            for dt in (np.float32, np.float64):
                t, c = tgrad.tensor(x.astype(dt), device="cuda"), tgrad.tensor(x.astype(dt))
                # other summation orders than NumPy's: error bound eps * sum |x| (per count
                # for mean)
                eps = 1e-6 if dt == np.float32 else 1e-14
                bound = np.max(np.nansum(np.abs(x), axis=dim)) * eps
                count = x.size if dim is None else x.shape[dim]
                for op in ("sum", "mean", "amax", "amin"):
                    del stages[:]
                    got = getattr(t, op)(dim=dim).numpy()
                    np.testing.assert_allclose(got, getattr(c, op)(dim=dim).numpy(), rtol=eps,
                                               atol=bound / count if op == "mean" else bound,
                                               equal_nan=True, err_msg=op)
                    assert len(stages) == 2 and stages[0] > 1, (op, shape, stages)
                # products: each multiply rounds by at most u (relative), so against float64
                # the error stays within count * u (the order of the products is free)
                pv = (1 + x * 1e-3).astype(dt)
                u = 2.0 ** -24 if dt == np.float32 else 2.0 ** -53
                np.testing.assert_allclose(tgrad.tensor(pv, device="cuda").prod(dim=dim).numpy(),
                                           np.prod(pv.astype(np.float64), axis=dim),
                                           rtol=count * u, equal_nan=True)
                assert (t > -10).all(dim=dim).tolist() == (c > -10).all(dim=dim).tolist()
                assert (t > 3).any(dim=dim).tolist() == (c > 3).any(dim=dim).tolist()
    finally:
        red._launch = orig

def check_one_read_var_logsumexp() -> None:
    # var (per-tile Chan merge) and logsumexp (online shift) read each element once: rows
    # over many tiles against NumPy float64. var: data far from zero (mean 1e4, std 1: a
    # sum-of-squares formula would lose every digit in float32); logsumexp: rows whose max
    # grows tile after tile (a rescale each time), falls, is +inf late in the row, -inf
    # throughout, very negative, or NaN
    rng = np.random.default_rng(14)
    k = 5000 if tgrad.cuda.is_interpreted() else 20000
    noise = rng.standard_normal((3, k))
    up = np.linspace(-60.0, 60.0, k)
    rows = np.stack([1e4 + noise[0], up, up[::-1], noise[1] - 1e4, noise[2], noise[2],
                     np.full(k, -np.inf)])
    rows[4, -3] = np.inf
    rows[5, k // 2] = np.nan
    for dt, rtol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        x = rows.astype(dt)
        t = tgrad.tensor(x, device="cuda")
        x64 = x.astype(np.float64)
        with np.errstate(all="ignore"):
            want_var = np.var(x64, axis=1, ddof=1)
            mx = np.max(x64, axis=1, keepdims=True)
            sh = np.where(np.isfinite(mx), mx, 0.0)
            want_lse = np.log(np.sum(np.exp(x64 - sh), axis=1)) + sh[:, 0]
        np.testing.assert_allclose(t[:4].var(dim=1).numpy(), want_var[:4], rtol=rtol)
        got = t.var(dim=1).numpy()
        assert np.isnan(got[4:]).all(), got  # inf - inf and NaN rows
        np.testing.assert_allclose(t.logsumexp(dim=1).numpy(), want_lse, rtol=rtol,
                                   equal_nan=True)


def check_gradient_buffers() -> None:
    # AccumulateGrad keeps a gradient the backward just computed without copying it (as
    # PyTorch steals it) and copies one that anything else may hold: the user's gradient,
    # one passed to two leaves (add), one a hook kept, a retained one, a broadcast view.
    # Never aliased: each leaf's .grad has a buffer of its own.
    from tgrad.autograd import node
    clones = []
    orig = node._plain_clone

    def counting(t):
        clones.append(t)
        return orig(t)
    node._plain_clone = counting
    try:
        rng = np.random.default_rng(15)
        xv, wv, cv = (rng.standard_normal(5) for _ in range(3))

        def leaf(v):
            return tgrad.tensor(v, device="cuda", requires_grad=True)

        def buf(t):
            return t._data.buffer
        # the ownership test itself, on a fresh result and on ones something else holds
        import gc
        t = tgrad.tensor(xv, device="cuda") * 2.0
        gc.collect()  # (the interpreter leaves reference cycles to each launch's buffers)
        assert node._owned(t, False)
        held = t._data.view(t.shape, t._data.estrides)  # another array on the buffer
        assert not node._owned(t, False)
        del held
        alias = t.detach()  # another tensor on the same array
        assert not node._owned(t, False)
        del alias
        assert node._owned(t, False) and not node._owned(t[1:], False)
        x, w = leaf(xv), leaf(wv)
        (x * w).sum().backward()
        if not tgrad.cuda.is_interpreted():  # (interpreter launches keep buffers until gc)
            assert not clones, "fresh gradients were copied"
        del clones[:]
        np.testing.assert_allclose(x.grad.numpy(), wv, rtol=1e-15)
        assert buf(x.grad) is not buf(w.grad)
        (x * w).sum().backward()  # accumulates into the kept buffers
        np.testing.assert_allclose(x.grad.numpy(), 2 * wv, rtol=1e-15)
        x, w, c = leaf(xv), leaf(wv), tgrad.tensor(cv, device="cuda")
        ((x + w) * c).sum().backward()  # one tensor for both leaves: copied for one
        assert len(clones) >= 1 and buf(x.grad) is not buf(w.grad)
        x.grad.mul_(10.0)
        np.testing.assert_allclose(w.grad.numpy(), cv, rtol=1e-15)
        g = tgrad.tensor(cv, device="cuda")
        x = leaf(xv)
        (x * 1.0).backward(g)
        x2 = leaf(xv)
        x2.backward(g)
        assert buf(x.grad) is not buf(g) and buf(x2.grad) is not buf(g)
        x2.grad.add_(1.0)
        np.testing.assert_array_equal(g.numpy(), cv)
        x, seen = leaf(xv), []
        x.register_hook(seen.append)
        (x * w.detach()).sum().backward()
        assert buf(x.grad) is not buf(seen[0])
        x = leaf(xv)
        y = x * 1.0
        y.retain_grad()
        (y * c).sum().backward()
        assert buf(x.grad) is not buf(y.grad)
        x.grad.zero_()
        np.testing.assert_allclose(y.grad.numpy(), cv, rtol=1e-15)
        m = tgrad.tensor(np.ones((2, 3)), device="cuda", requires_grad=True)
        m.mean().backward()
        m.grad.add_(1.0)  # materialized, not the broadcast view
        np.testing.assert_allclose(m.grad.numpy(), np.full((2, 3), 1 + 1 / 6), rtol=1e-15)
    finally:
        node._plain_clone = orig


def check_pipelined_variants() -> None:
    # the software-pipelined variants perf/sweep_gpu.py measures (configs keep stages=1
    # until a GPU shows them faster): reductions over K in 2 and 3 stages, cross_entropy's
    # forward as persistent programs over row blocks, layer_norm's backward loop in 2
    # stages; against the NumPy backend, several row blocks/steps per program
    import tgrad.nn.functional as F
    from tgrad.kernels import configs
    red_orig, row_orig = configs.red_config, configs.row_config
    rng = np.random.default_rng(16)
    interp = tgrad.cuda.is_interpreted()
    m, k = (50, 3000) if interp else (3000, 6000)
    try:
        for stages in (2, 3):
            def red(kk, m_contig, i, kind="", rows=1 << 30, s=stages):
                c = red_orig(kk, m_contig, i, kind, rows)
                return configs.RedConfig(c.block_m, c.block_k, c.num_warps, s)
            configs.red_config = red
            x = rng.standard_normal((m, k)).astype(np.float32)
            x[1, 7] = np.nan
            t, c = tgrad.tensor(x, device="cuda"), tgrad.tensor(x)
            for op, kw in (("sum", {"dim": 1}), ("sum", {"dim": 0}), ("amax", {"dim": 1}),
                           ("var", {"dim": 1}), ("logsumexp", {"dim": 1})):
                got, want = getattr(t, op)(**kw).numpy(), getattr(c, op)(**kw).numpy()
                np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-3, equal_nan=True,
                                           err_msg=f"{op} {kw} stages={stages}")
            # a full sum (two stages) without the NaN, against float64: within 1e-6 sum |x|
            # (about 17 float32 roundings deep, as check_split_reductions allows)
            clean = np.nan_to_num(x)
            got = tgrad.tensor(clean, device="cuda").sum().item()
            bound = 1e-6 * np.abs(clean).sum(dtype=np.float64)
            assert abs(got - clean.sum(dtype=np.float64)) <= bound, (got, stages)
        configs.red_config = red_orig

        def row(n, f64, i, heavy=False, strided=False, half_rows=False):
            c = row_orig(n, f64, i, heavy, strided, half_rows)
            return configs.RowConfig(c.one_pass, c.block_m, c.block_n, c.num_warps, 2)
        configs.row_config = row
        for n in (37, 130):
            for dt in (np.float32, np.float64):
                xv = rng.standard_normal((m, n)).astype(dt)
                tv = rng.integers(0, n, m)
                tv[3] = -100
                wv, bv, gv = (rng.standard_normal(s).astype(dt) for s in (n, n, (m, n)))
                res = []
                for dev in ("cpu", "cuda"):
                    xt, wt, bt = (tgrad.tensor(v, device=dev, requires_grad=True)
                                  for v in (xv, wv, bv))
                    loss = F.cross_entropy(xt, tgrad.tensor(tv, device=dev), reduction="none")
                    y = F.layer_norm(xt, (n,), wt, bt)
                    (y * tgrad.tensor(gv, device=dev)).sum().backward()
                    res.append([loss.detach().cpu().numpy()]
                               + [v.grad.cpu().numpy() for v in (xt, wt, bt)])
                tol = 1e-4 if dt == np.float32 else 1e-10
                for a, b in zip(res[1], res[0]):
                    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    finally:
        configs.red_config, configs.row_config = red_orig, row_orig


def check_pow_specials() -> None:
    # IEEE pow on every pair of special values (NumPy's np.power), e.g. (-inf) ** 2.5 = inf
    vals = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 2.5, -2.5, 3.0, -3.0, np.inf,
                     -np.inf, np.nan])
    a, b = np.repeat(vals, vals.size), np.tile(vals, vals.size)
    for dt in (np.float32, np.float64):
        with np.errstate(all="ignore"):
            want = np.power(a.astype(dt), b.astype(dt))
        got = (tgrad.tensor(a.astype(dt), device="cuda")
               ** tgrad.tensor(b.astype(dt), device="cuda")).numpy()
        # specials exactly (inf, nan, signed zeros, exact ones); finite values within a
        # few ulps (2^(b log2 a) is not correctly rounded: 2.5 ** 1 is 1 ulp off in fp32)
        exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
        bad = exact & ~((got == want) & (np.signbit(got) == np.signbit(want))
                        | (np.isnan(got) & np.isnan(want)))
        assert not bad.any(), list(zip(a[bad], b[bad], got[bad], want[bad]))[:5]
        tol = (1.3e-6, 1e-5) if dt == np.float32 else (1e-7, 1e-7)  # PyTorch's defaults
        np.testing.assert_allclose(got[~exact], want[~exact], rtol=tol[0], atol=tol[1])

def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the last place of want (want's dtype); 0 where both are
    NaN or equal with the same sign, inf where a zero's sign or a NaN differs."""
    with np.errstate(all="ignore"):
        err = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want))
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got)
                                                                      & np.isnan(want))
    return np.where(same, 0.0, np.where(np.isnan(err) | (got == want), np.inf, err))


def check_inverse_trig() -> None:
    # atan, asin, acos, atan2 (tl-only formulas: Cephes' atan) against NumPy, values from
    # subnormal to huge, +-1 and its neighbours, every pair of specials for atan2 (signed
    # zeros, +-pi, +-pi/4, +-3pi/4 as numpy.arctan2): a few ulp, specials exact
    rng = np.random.default_rng(11)
    n = 2000 if tgrad.cuda.is_interpreted() else 200000
    sign = rng.choice([-1.0, 1.0], n)
    x = np.concatenate([
        rng.standard_normal(n), rng.uniform(-1, 1, n), sign * np.exp(rng.uniform(-745, 709, n)),
        sign * (1.0 - np.exp(rng.uniform(-37, 0, n))),  # +-(1 - tiny)
        [0.0, -0.0, 1.0, -1.0, 0.66, 2.414213562373095, 0.5, 5e-324, 1e308, np.inf, -np.inf,
         np.nan, np.nextafter(1.0, 0.0), np.nextafter(-1.0, 0.0), np.nextafter(1.0, 2.0)]])
    special = np.array([0.0, -0.0, 1.0, -1.0, 1e-300, 1e300, np.inf, -np.inf, np.nan])
    ya = np.concatenate([np.repeat(special, special.size), x])
    xa = np.concatenate([np.tile(special, special.size), rng.permutation(x)])
    cases = [(tgrad.atan, np.arctan, (x,)), (tgrad.asin, np.arcsin, (x,)),
             (tgrad.acos, np.arccos, (x,)), (tgrad.atan2, np.arctan2, (ya, xa))]
    for dt, bound in ((np.float64, 4), (np.float32, 8)):
        for f, ref, args in cases:
            with np.errstate(all="ignore"):
                ins = [a.astype(dt) for a in args]
                want = ref(*[a.astype(np.float64) for a in ins]).astype(dt)
            got = f(*[tgrad.tensor(a, device="cuda") for a in ins]).numpy()
            assert got.dtype == dt
            err = _ulps(got, want)
            worst = int(np.argmax(err))
            assert err[worst] <= bound, (f.__name__, dt, [a[worst] for a in ins],
                                         got[worst], want[worst], err[worst])
            exact = ~np.isfinite(want) | (want == 0)
            if f is tgrad.atan2:  # the pairs of specials: multiples of pi/4 exactly
                exact[:special.size ** 2] = True
            assert (err[exact] == 0).all(), (f.__name__, dt, got[exact][err[exact] > 0])


def check_tanh() -> None:
    # tanh: Cephes' forms (odd polynomial/rational below |x| = 0.625, 1 - 2/(e^2|x| + 1)
    # above) against NumPy's long double tanh rounded once to the dtype (glibc's double tanh
    # is itself 1 ulp off just below saturation, e.g. at -19.015, where the GPU's answer is
    # the correctly rounded one): a few ulp, signed zeros, +-1 at +-inf and past
    # saturation, NaN; values from subnormal to past saturation, both sides of 0.625
    rng = np.random.default_rng(12)
    n = 4000 if tgrad.cuda.is_interpreted() else 400000
    sign = rng.choice([-1.0, 1.0], n)
    x = np.concatenate([rng.uniform(-10, 10, n), rng.uniform(-1, 1, n),
                        sign * np.exp(rng.uniform(-745, 4, n)),
                        [0.0, -0.0, 0.625, -0.625, np.nextafter(0.625, 0), 5e-324, 1e-45,
                         9.0, 20.0, 400.0, np.inf, -np.inf, np.nan]])
    for dt, bound in ((np.float64, 4), (np.float32, 4)):
        xs = x.astype(dt)
        want = np.tanh(xs.astype(np.longdouble)).astype(dt)
        got = tgrad.tanh(tgrad.tensor(xs, device="cuda")).numpy()
        err = _ulps(got, want)
        worst = int(np.argmax(err))
        assert err[worst] <= bound, (dt, xs[worst], got[worst], want[worst], err[worst])
        exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
        assert (err[exact] == 0).all(), (dt, xs[exact][err[exact] > 0])


def check_inner_blocks() -> None:
    # strided elementwise launches whose innermost extent is a multiple of the block
    # (configs.ew_inner_block) unravel only each block's start: broadcasting, sliced and
    # permuted operands, three inputs, against NumPy exactly; an odd extent keeps the
    # per-element path
    from tgrad.kernels import launch as L
    rng = np.random.default_rng(13)
    f32 = np.float32
    a = rng.standard_normal((64, 512)).astype(f32)
    row = rng.standard_normal((1, 512)).astype(f32)
    col = rng.standard_normal((64, 1)).astype(f32)
    big = rng.standard_normal((3, 8, 256)).astype(f32)
    perm = rng.standard_normal((256, 6, 4)).astype(f32)
    odd = rng.standard_normal((5, 257)).astype(f32)
    t = lambda v: tgrad.tensor(v, device="cuda")  # noqa: E731
    L._ew_plans.clear()
    np.testing.assert_array_equal((t(a) * t(row)).numpy(), a * row)
    np.testing.assert_array_equal((t(big)[:, ::2, :] + t(big[0, 0])).numpy(),
                                  big[:, ::2, :] + big[0, 0])
    # (abs: exact everywhere; exp would differ from NumPy's in the last place on a GPU)
    np.testing.assert_array_equal(t(perm).permute(1, 2, 0).abs().numpy(),
                                  np.abs(perm.transpose(1, 2, 0)))
    np.testing.assert_array_equal(tgrad.where(t(row) > 0, t(a), t(col)).numpy(),
                                  np.where(row > 0, a, col))
    inner = [p.constexprs["INNER"] for p in L._ew_plans.values()]
    assert sum(inner) >= 4, inner
    L._ew_plans.clear()
    np.testing.assert_array_equal((t(odd) * t(odd[:1])).numpy(), odd * odd[:1])
    assert [p.constexprs["INNER"] for p in L._ew_plans.values()] == [False]


def check_int_reductions() -> None:
    # integer and bool reductions run natively with exact int64 accumulation (values past
    # 2^24 and 2^53, where a float accumulator would round), split path included
    rng = np.random.default_rng(11)
    big = rng.integers(-2**40, 2**40, 5000)
    cases = [big, big.astype(np.int32) // 7, rng.integers(0, 2, 3000).astype(bool),
             (big % 5 + 1).reshape(50, 100)]
    for x in cases:
        t, c = tgrad.tensor(x, device="cuda"), tgrad.tensor(x)
        for op, kw in [("sum", {}), ("sum", {"dim": 0}), ("amax", {}), ("amin", {}),
                       ("argmax", {}), ("argmin", {})]:
            if op.startswith("arg") and x.dtype == bool:  # PyTorch: no bool argmax/argmin
                for u in (t, c):
                    try:
                        getattr(u, op)()
                    except RuntimeError as e:
                        assert "does not support bool input" in str(e)
                    else:
                        raise AssertionError(f"{op} of a bool tensor did not raise")
                continue
            got, want = getattr(t, op)(**kw).numpy(), getattr(c, op)(**kw).numpy()
            assert got.dtype == want.dtype and np.array_equal(got, want), (op, x.dtype)
        if x.ndim == 2:
            small = x[:, :3]  # products that fit in int64
            assert np.array_equal(tgrad.tensor(small, device="cuda").prod(dim=1).numpy(),
                                  small.prod(axis=1))
    acc = (tgrad.tensor(np.arange(10), device="cuda") > 5).sum()  # an accuracy count
    assert acc.item() == 4 and acc.dtype is tgrad.int64

def check_empty_reductions() -> None:
    # reducing nothing gives the reduction's identity on the GPU too, with no host path
    from tgrad.backends import triton as tb
    before = set(tb.host_path_used())
    for shape, dim in [((0,), None), ((0, 3), 0), ((0, 3), 1), ((2, 0), 1), ((2, 0), 0),
                       ((2, 0, 3), (0, 2))]:
        for dt in (np.float32, np.int64, np.bool_):
            x = np.zeros(shape, dt)
            t, c = tgrad.tensor(x, device="cuda"), tgrad.tensor(x)
            for op in ("sum", "prod", "mean", "var", "all", "any", "logsumexp"):
                if op in ("mean", "var", "logsumexp") and dt is not np.float32 \
                        or op == "logsumexp" and dim is None:
                    continue
                kw = {} if dim is None else {"dim": dim}
                a, b = getattr(t, op)(**kw).numpy(), getattr(c, op)(**kw).numpy()
                assert a.shape == b.shape and a.dtype == b.dtype, (shape, dim, dt, op)
                assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (op, a, b)
            if dt is np.float32:
                dims = range(len(shape)) if dim is None else (
                    dim if isinstance(dim, tuple) else (dim,))
                no_identity = any(shape[d] == 0 for d in dims)  # an empty reduced dim
                for p in (2, 1, 0, 3, -1, np.inf, -np.inf):
                    if no_identity and (p < 0 or p == np.inf):  # PyTorch's error, both
                        for u in (t, c):
                            try:
                                u.norm(p, **kw)
                            except RuntimeError as e:
                                assert "does not have an identity" in str(e)
                            else:
                                raise AssertionError(f"norm({p}) over an empty dim")
                        continue
                    a, b = t.norm(p, **kw).numpy(), c.norm(p, **kw).numpy()
                    assert a.shape == b.shape and np.array_equal(a, b), ("norm", p, a, b)
    assert set(tb.host_path_used()) == before

def check_int_bool_elementwise() -> None:
    # integer floor/ceil/round (the identity), pow (square and multiply, wrapping like
    # NumPy), bool + * max min (logic), sign of bools: kernels, same as the CPU (abs of
    # bools raises, as PyTorch)
    from tgrad.backends import triton as tb
    before = set(tb.host_path_used())
    rng = np.random.default_rng(12)
    i64 = rng.integers(-50, 50, 40)
    e = rng.integers(0, 9, 40)
    b1, b2 = rng.integers(0, 2, 40).astype(bool), rng.integers(0, 2, 40).astype(bool)

    def same(f, *xs):
        c = f(*[tgrad.tensor(x) for x in xs]).numpy()
        g = f(*[tgrad.tensor(x, device="cuda") for x in xs]).numpy()
        assert c.dtype == g.dtype and np.array_equal(c, g), (c[:5], g[:5], c.dtype)
    for x in (i64, i64.astype(np.int32)):
        for f in (tgrad.floor, tgrad.ceil, tgrad.round, tgrad.sign, lambda t: t ** 3):
            same(f, x)
        same(lambda t, u: t ** u, x, e.astype(x.dtype))
        same(lambda u: 3 ** u, e.astype(x.dtype))
    same(lambda t: t ** 40, i64)  # wraps around
    for d in (7, -7):  # Python's % (the divisor's sign) and C's fmod (the dividend's)
        same(lambda t, d=d: t % d, i64)
        same(lambda t, d=d: tgrad.fmod(t, d), i64)
    same(lambda t, u: t % u, i64, np.where(e == 0, -3, e))
    try:
        tgrad.tensor(i64, device="cuda") % tgrad.tensor(e * 0, device="cuda")
    except ZeroDivisionError as err:
        assert "remainder: integer division by zero" in str(err)
    else:
        raise AssertionError("no ZeroDivisionError")
    for f in (tgrad.add, tgrad.mul, tgrad.maximum, tgrad.minimum, tgrad.bitwise_and,
              tgrad.bitwise_or, tgrad.bitwise_xor):
        same(f, b1, b2)
    big = rng.integers(-2**40, 2**40, 40)  # bitwise ops: bool, int32, int64 and mixed
    for f in (tgrad.bitwise_and, tgrad.bitwise_or, tgrad.bitwise_xor):
        same(f, big, big[::-1])
        same(f, big.astype(np.int32), big[::-1].astype(np.int32))
        same(f, b1, big.astype(np.int32))
        same(lambda t, f=f: f(t, 6), big)
    for x in (big, big.astype(np.int32), b1):
        same(tgrad.bitwise_not, x)
    counts = np.array([0, 1, 5, 31, 32, 33, 63, 64, 65, -1, -64, 200] * 4)[:40]
    for f in (tgrad.bitwise_left_shift, tgrad.bitwise_right_shift):  # counts past the width
        same(f, big, counts)
        same(f, big.astype(np.int32), counts.astype(np.int32))
        same(f, big.astype(np.int32), counts)
        same(lambda t, f=f: f(t, 33), big.astype(np.int32))
        same(lambda t, f=f: f(3, t), counts)
    fib = [1, 1]  # gcd's slowest pairs: consecutive Fibonacci numbers (a fixed step count)
    while fib[-1] < 2**62:
        fib.append(fib[-1] + fib[-2])
    a = np.concatenate([big, [fib[-1], fib[-2], 0, 0, -12]])
    b = np.concatenate([big[::-1] % 10**6, [fib[-2], fib[-3], 0, 7, 18]])
    for f in (tgrad.gcd, tgrad.lcm):
        same(f, a if f is tgrad.gcd else a % 10**5, b)
        same(f, (a % 2**30).astype(np.int32), (b % 2**30).astype(np.int32))
    same(tgrad.sign, b1)
    for u in (tgrad.tensor(b1), tgrad.tensor(b1, device="cuda")):  # PyTorch: no bool abs
        try:
            tgrad.abs(u)
        except NotImplementedError as err:
            assert "not implemented for 'Bool'" in str(err)
        else:
            raise AssertionError("abs of a bool tensor did not raise")
    # tensors of negative integer exponents: PyTorch's 1, (-1)^e or 0 (a Python reference)
    base = [2, 1, -1, -1, 0, 3, -2, 5, 1, -1, -3]
    expo = [-1, -2, -3, -4, -1, 2, -1, 0, -63, -64, 3]
    want = [b ** x if x >= 0 else 1 if b == 1 else (-1) ** -x if b == -1 else 0
            for b, x in zip(base, expo)]
    for dt in (np.int64, np.int32, np.int8):
        got = tgrad.tensor(np.array(base, dt), device="cuda") ** tgrad.tensor(
            np.array(expo, dt), device="cuda")
        assert got.numpy().tolist() == want, (dt, got.numpy())
        same(lambda t, u: t ** u, np.array(base, dt), np.array(expo, dt))
    assert set(tb.host_path_used()) == before


def check_indexing_nd() -> None:
    """The device paths of advanced indexing against NumPy: gather (gather_nd_kernel: the
    offsets computed on the GPU), index_add and index_put_ (one target per index tuple,
    sorted stably: on the host for host index arrays, on the device for device ones) for
    every NumPy placement rule (adjacent arrays keep their place, separated ones go first,
    ints count as arrays, None between arrays separates them, ... between them may expand to
    nothing), masks, broadcasting, negative indices, device index arrays of int64 / int32 /
    uint8 (stacked, broadcast or read as they are), sliced and transposed sources; the host
    offset paths must not run, and the writers read nothing back. index_add sums in index
    order: bit-identical to NumPy's add.at in float32, and to the host-offset path; index_put_
    keeps the last of repeated indices. Out-of-range host indices raise NumPy's IndexError."""
    from tgrad.backends import _triton_index as tix
    from tgrad.backends import triton as tb
    rng = np.random.default_rng(11)

    def _h(a):
        return tb.from_host(np.ascontiguousarray(a))

    def _same(got, ref, what):
        got = tb.to_host(got)
        assert got.shape == ref.shape and got.dtype == ref.dtype and np.array_equal(got, ref), \
            f"{what}: got {got.shape} {got.dtype}, want {ref.shape} {ref.dtype}"

    x = rng.standard_normal((6, 7, 5)).astype(np.float32)
    i2 = np.array([[0, -1, 3], [5, 5, 2]])
    j3 = np.array([4, 0, -5])
    keys = [(i2,), (slice(None), i2), (Ellipsis, j3), (i2, j3), (i2, slice(1, 6, 2), j3),
            (slice(None), j3, None, j3), (0, slice(None), j3), (slice(None), 0, j3),
            (None, i2, j3), (j3, Ellipsis, j3), (slice(4, None), j3, 1),
            (x[:, :, 0] > 0,), (slice(None), x[0] > 0),
            (slice(None), np.arange(7) % 3 != 1, np.array([1, 1, 0, -2, 4])),
            (np.zeros(0, np.int64),), (i2, np.array([[1], [2]]), 3),
            (np.array(3), slice(None), j3)]
    y = rng.standard_normal((3, 4)).astype(np.float32)
    big = rng.standard_normal((301, 37)).astype(np.float32)  # many programs
    cases = [(x, k) for k in keys] + [(y, (np.array([2, 0]), Ellipsis, np.array([3, -4]))),
                                      (big, (rng.integers(-301, 301, 2000),)),
                                      (big, (slice(None), rng.integers(0, 37, (9, 40))))]
    real_offsets = tix._key_offsets

    def no_host_offsets(*args):
        raise AssertionError("took a host offset path")
    tix._key_offsets = no_host_offsets
    try:
        for src, key in cases:
            ref = src[key]
            for dev_idx in (False, True):
                k = tuple(_h(a) if dev_idx and isinstance(a, np.ndarray) and a.ndim and
                          a.dtype != np.bool_ else a for a in key)
                _same(tix.gather(_h(src), k), ref, f"gather_nd {key} {dev_idx}")
                v = rng.standard_normal(ref.shape).astype(np.float32)
                vd = _h(v)
                with _no_host_reads(f"index_add {key} {dev_idx}"):
                    got = tix.index_add(src.shape, src.dtype, k, vd)
                want = np.zeros_like(src)
                np.add.at(want, key, v)  # float32 sums in index order
                _same(got, want, f"index_add {key} {dev_idx}")
                for val in (v, 2.5, v[-1:] if v.ndim else v):
                    d = src.copy()
                    d[key] = val
                    dd = _h(src)
                    val = _h(val) if isinstance(val, np.ndarray) else val
                    with _no_host_reads(f"index_put_ {key} {dev_idx}"):
                        tix.index_put_(dd, k, val)
                    _same(dd, d, f"index_put_ {key} {dev_idx}")
            split, tix._split, tix._key_offsets = tix._split, lambda x, key: None, real_offsets
            try:  # the host-offset path (keys the index part does not take) sums alike
                _same(tix.index_add(src.shape, src.dtype, key, vd), want,
                      f"index_add {key} by host offsets")
            finally:
                tix._split, tix._key_offsets = split, no_host_offsets
        for dt in (np.int32, np.uint8):  # device index arrays of other integer dtypes
            idx = np.array([[1, 0], [4, 4]], dt)
            _same(tix.gather(_h(x), (slice(None), _h(idx))), x[:, idx],
                  f"gather_nd {dt.__name__} index")
        xt = tb.permute(_h(np.ascontiguousarray(x.transpose(2, 1, 0))), (2, 1, 0))
        _same(tix.gather(xt, (_h(i2), slice(None, None, 3))), x[i2, ::3],
              "gather_nd transposed source")
        xs = tb.basic_index(_h(x), (slice(1, None), slice(None, None, 2)))
        _same(tix.gather(xs, (_h(np.array([0, 4, -1])), Ellipsis, _h(j3))),
              x[1:, ::2][[0, 4, -1], ..., j3], "gather_nd sliced source")
        # through tgrad: a cuda index tensor stays on the device (normalize_key keeps its
        # device array), forward and backward on the device paths
        xt = tgrad.tensor(x.astype(np.float64), device="cuda", requires_grad=True)
        it = tgrad.tensor(i2, device="cuda")
        from tgrad.ops.index import normalize_key
        assert isinstance(normalize_key((it, 1), xt.device)[0][0], type(xt._data))
        y = xt[it, 1:]
        _same(y._data, x.astype(np.float64)[i2, 1:], "tgrad x[idx, 1:]")
        gy = rng.standard_normal(y.shape)
        y.backward(tgrad.tensor(gy, device="cuda"))
        want = np.zeros(x.shape)
        np.add.at(want, (i2, slice(1, None)), gy)
        assert np.allclose(xt.grad.numpy(), want, rtol=1e-12, atol=1e-12), "tgrad x[idx] grad"
    finally:
        tix._key_offsets = real_offsets
    for bad in (np.array([0, 6]), np.array([-7])):  # host index arrays: at once (NumPy's)
        try:
            tix.gather(_h(x), (bad,))
        except IndexError as e:
            assert "index %d is out of bounds for axis 0 with size 6" % bad[-1] in str(e), e
        else:
            raise AssertionError(f"no IndexError for {bad}")
    # (device index arrays: at the next synchronization, check_index_errors_at_sync)
    # an out-of-range index that selects nothing is no error (PyTorch checks only the
    # positions it reads or writes), host and device index arrays, forward and backward
    for shape, key, want in (((0, 3), (slice(None), [5]), (0, 1)), ((2, 0), ([5],), (1, 0)),
                             ((2, 3), (slice(0, 0), [-9, 7]), (0, 2))):
        for on_device in (False, True):
            xt = tgrad.zeros(shape, device="cuda", requires_grad=True)
            k = tuple(tgrad.tensor(i, device="cuda" if on_device else "cpu")
                      if isinstance(i, list) else i for i in key)
            y = xt[k]
            assert y.shape == want, (shape, key, y.shape)
            y.sum().backward()
            z = xt.detach().clone()
            z[k] = 1.0
            tgrad.cuda.synchronize()
            assert xt.grad.shape == shape and z.shape == shape


def check_scatter_long_runs() -> None:
    """Runs of repeated indices longer than a chunk (configs.scatter_chunk; its floor
    lowered to 4 here, so NB = 300 makes chunks of 16): folded one value at a time up to a
    chunk boundary, then by the chunk partials of scatter_parts_kernel. Against NumPy, host
    and device index arrays, NS = 1 and 3: integer sums and amax / amin (NaN included)
    exactly; float sums and products against float64 within the bound of any summation
    order, n eps sum|v| (n eps |prod| for products); index sets whose runs all fit a chunk
    stay bit-identical to add.at; nothing is read back."""
    from tgrad.backends import _triton_index as tix
    from tgrad.backends import triton as tb
    from tgrad.kernels import configs
    rng = np.random.default_rng(5)
    n = 300
    runs = np.repeat(np.arange(7), [1, 17, 40, 2, 100, 16, 124])  # short, chunk-long, long
    index_sets = {"one row": np.zeros(n, np.int64),
                  "one long run among short ones": np.r_[np.full(150, 3),
                                                          rng.integers(0, 7, 150)],
                  "runs of 1 to 124": rng.permutation(runs),
                  "negative": np.full(n, -2)}
    saved = configs.SCATTER_MIN_CHUNK
    configs.SCATTER_MIN_CHUNK = 4
    try:
        assert configs.scatter_chunk(n) == 16
        for name, ns, dev_idx in (("one row", 1, False), ("one row", 3, True),
                                  ("one long run among short ones", 3, False),
                                  ("runs of 1 to 124", 1, True), ("runs of 1 to 124", 3, True),
                                  ("negative", 1, True)):
            idx = index_sets[name]
            key = (tb.from_host(idx) if dev_idx else idx,)
            what = f"{name}, NS={ns}, {'device' if dev_idx else 'host'} index"
            _check_long_run_sums(tix, tb, rng, (7,) if ns == 1 else (7, ns), idx, key, what)
        short = rng.permutation(np.repeat(np.arange(30), 10))  # runs of 10 <= 16
        v = rng.standard_normal((n, 3)).astype(np.float32)
        want = np.zeros((30, 3), np.float32)
        np.add.at(want, short, v)
        got = tb.to_host(tix.index_add((30, 3), np.float32, (tb.from_host(short),),
                                       tb.from_host(v)))
        assert np.array_equal(got, want), "runs within a chunk: add.at's order"
    finally:
        configs.SCATTER_MIN_CHUNK = saved


def _check_long_run_sums(tix, tb, rng, shape, idx, key, what) -> None:
    vshape = (len(idx),) + shape[1:]
    for dt in (np.float32, np.float64):
        v = rng.standard_normal(vshape).astype(dt)
        with _no_host_reads(what):
            got = tix.index_add(shape, dt, key, tb.from_host(v))
        got = tb.to_host(got)
        want, bound = np.zeros(shape), np.zeros(shape)
        np.add.at(want, idx, v.astype(np.float64))
        np.add.at(bound, idx, np.abs(v.astype(np.float64)))
        assert got.dtype == dt and np.all(np.abs(got - want) <= len(idx) * np.finfo(dt).eps
                                          * bound), f"sum {dt.__name__}: {what}"
        p = rng.uniform(0.95, 1.05, vshape).astype(dt)
        got = tb.to_host(tix.index_reduce(shape, dt, key, tb.from_host(p), "prod"))
        want = np.ones(shape)
        np.multiply.at(want, idx, p.astype(np.float64))
        assert np.all(np.abs(got - want) <= len(idx) * np.finfo(dt).eps * np.abs(want)), \
            f"prod {dt.__name__}: {what}"
        m = v.copy()
        m[len(m) // 2] = np.nan  # in the middle of a long run
        for reduce, ufunc, init in (("amax", np.maximum, -np.inf), ("amin", np.minimum, np.inf)):
            got = tb.to_host(tix.index_reduce(shape, dt, key, tb.from_host(m), reduce))
            want = np.full(shape, init, dt)
            with np.errstate(invalid="ignore"):
                ufunc.at(want, idx, m)
            assert np.array_equal(got, want, equal_nan=True), f"{reduce} {dt.__name__}: {what}"
    iv = rng.integers(-2**40, 2**40, vshape)
    got = tb.to_host(tix.index_add(shape, np.int64, key, tb.from_host(iv)))
    want = np.zeros(shape, np.int64)
    np.add.at(want, idx, iv)
    assert np.array_equal(got, want), f"int64 sum: {what}"


def check_index_errors_at_sync() -> None:
    """A cuda index tensor is checked by the gather kernel (and by the writers: backward,
    x[idx] = v, index_put_) and an out-of-range index raises IndexError at the next
    synchronization (to_host, cuda.synchronize, Stream.synchronize),
    naming the index as given, its dim and size and the tensor's shape; the other launches
    waiting then are forgotten, and later ones start clean. Launches on a stream not yet
    synchronized keep waiting; more launches than records share them (both named)."""
    from tgrad.backends import _triton_index as tix
    from tgrad.backends import triton as tb
    from tgrad.cuda import index_errors as ie

    def _h(a):
        return tb.from_host(np.ascontiguousarray(a))

    def _raises(sync, *want: str) -> None:
        try:
            sync()
        except IndexError as e:
            for w in want:
                assert w in str(e), (w, str(e))
        else:
            raise AssertionError(f"no IndexError; wanted {want}")
        assert not ie.waiting  # every launch waiting on the synchronized stream is done

    x = np.arange(42.0).reshape(6, 7)
    xd = _h(x)
    good = _h(np.array([0, 5, -6]))
    # no error: values, and nothing waits after a read
    assert np.array_equal(tb.to_host(tix.gather(xd, (good,))), x[[0, 5, -6]])
    assert not ie.waiting
    # one bad index per case: the gather returns, the read raises
    cases = [((_h(np.array([0, 6, 2])),), "index 6 is out of bounds for dimension 0 with size 6"),
             ((slice(None), _h(np.array([[1], [-8]]))),
              "index -8 is out of bounds for dimension 1 with size 7"),
             ((None, good, _h(np.array([7, 0, 0], np.int32))),
              "index 7 is out of bounds for dimension 1 with size 7"),
             ((2, _h(np.array([3, 9], np.uint8))),
              "index 9 is out of bounds for dimension 1 with size 7")]
    for key, want in cases:
        out = tix.gather(xd, key)
        assert ie.waiting
        _raises(lambda out=out: tb.to_host(out), want, "tensor of shape [6, 7] on cuda:0",
                "next synchronization")
    assert np.array_equal(tb.to_host(tix.gather(xd, (good, good))), x[[0, 5, -6], [0, 5, -6]])
    # through tgrad: cuda.synchronize() raises; ops queued after the bad one are fine later
    xt = tgrad.tensor(x, device="cuda")
    y = xt[tgrad.tensor([1, 60], device="cuda")]
    z = xt[tgrad.tensor([1, 2], device="cuda")] * 2.0
    _raises(tgrad.cuda.synchronize, "index 60 is out of bounds for dimension 0 with size 6",
            "not valid")
    assert y.shape == (2, 7)
    np.testing.assert_array_equal(z.cpu().numpy(), x[[1, 2]] * 2.0)
    # two bad launches: the oldest is named, the other counted; both records are cleared
    xt[tgrad.tensor([-9], device="cuda")]
    xt[:, tgrad.tensor([8], device="cuda")]
    _raises(lambda: xt.sum().item(), "index -9 is out of bounds for dimension 0",
            "1 more indexing ops found bad indices")
    assert xt[tgrad.tensor([3], device="cuda")].sum().item() == x[3].sum()
    # the writers check on the device too, and read nothing back: the backward of a bad
    # gather (the forward's error first, the backward's counted), x[idx] = v and
    # index_put_(accumulate=True); a bad index writes nothing, the good ones are written
    xg = tgrad.tensor(x, device="cuda", requires_grad=True)
    with _no_host_reads("backward of x[cuda index]"):
        xg[tgrad.tensor([0, 6, 0], device="cuda")].sum().backward()
    _raises(tgrad.cuda.synchronize, "index 6 is out of bounds for dimension 0 with size 6",
            "1 more indexing ops found bad indices too")
    want = np.zeros_like(x)
    want[0] = 2.0
    np.testing.assert_array_equal(xg.grad.cpu().numpy(), want)
    d = tgrad.tensor(x, device="cuda")
    with _no_host_reads("x[cuda index] = v"):
        d[tgrad.tensor([1, -7], device="cuda")] = 5.0
    _raises(tgrad.cuda.synchronize, "index -7 is out of bounds for dimension 0 with size 6")
    with _no_host_reads("index_put_(accumulate=True) with a cuda index"):
        d.index_put_((tgrad.arange(6, device="cuda")[:, None],
                      tgrad.tensor([2, 2, 9], device="cuda")),
                     tgrad.tensor(1.0, dtype=tgrad.float64, device="cuda"), accumulate=True)
    _raises(lambda: d.cpu(), "index 9 is out of bounds for dimension 1 with size 7")
    want = x.copy()
    want[1] = 5.0
    want[:, 2] += 2.0
    np.testing.assert_array_equal(d.cpu().numpy(), want)
    # a launch on another stream waits until that stream is synchronized
    side = tgrad.cuda.Stream()
    with tgrad.cuda.stream(side):
        tix.gather(xd, (good,))
    tix.gather(xd, (good,))
    tb.to_host(xd)  # synchronizes tgrad's stream only: the side launch still waits
    assert ie.waiting
    side.synchronize()
    assert not ie.waiting
    # a loop of identical gathers without a synchronization: one entry per record, not one
    # per launch
    for _ in range(3 * ie.SLOTS):
        tix.gather(xd, (good,))
    assert sum(map(len, ie._records[0].waiting.values())) == ie.SLOTS
    tgrad.cuda.synchronize()
    assert not ie.waiting
    # more launches than records: a shared record names the launch its index is bad for
    for _ in range(ie.SLOTS):
        tix.gather(xd, (good,))
    tix.gather(_h(x[:2]), (_h(np.array([5])),))  # bad: record of the first good launch
    _raises(tgrad.cuda.synchronize, "index 5 is out of bounds for dimension 0 with size 2 "
            "(tensor of shape [2, 7] on cuda:0).")
    for _ in range(ie.SLOTS):
        tix.gather(xd, (good,))
    tix.gather(_h(x[:3]), (_h(np.array([-8])),))  # out of range for both of its record's
    _raises(tgrad.cuda.synchronize, "index -8 is out of bounds for dimension 0 with size 6 "
            "(tensor of shape [6, 7] on cuda:0), or of one of 1 later indexing ops that "
            "shared its error record (shape [3, 7])")
    # embedding: a negative index is out of range (the kernel does not wrap it), reported
    # as given; with max_norm the renorm's write reads the check first and writes nothing
    import tgrad.nn.functional as F
    w = tgrad.tensor(np.full((3, 2), 5.0), device="cuda")
    np.testing.assert_array_equal(F.embedding(tgrad.tensor([2, 0], device="cuda"), w)
                                  .cpu().numpy(), np.full((2, 2), 5.0))
    F.embedding(tgrad.tensor([[0], [-1]], device="cuda"), w)
    _raises(tgrad.cuda.synchronize, "index -1 is out of bounds for dimension 0 with size 3 "
            "(tensor of shape [3, 2] on cuda:0)")
    try:
        F.embedding(tgrad.tensor([0, -3], device="cuda"), w, max_norm=1.0)
    except IndexError as e:
        assert str(e).startswith("index: index -3 is out of bounds for dimension 0"), e
    else:
        raise AssertionError("no IndexError from embedding's renorm")
    np.testing.assert_array_equal(w.cpu().numpy(), np.full((3, 2), 5.0))
    # (CUDA graph capture and replay: tests/test_gpu_composites.py on a real GPU, and
    # tests/test_cuda_graphs.py over the fake driver)


def check_gather_family_checks_on_device() -> None:
    """gather, index_select and take_along_dim with a cuda index read nothing back to the
    host (the gather kernel checks the range: [0, n) for gather and index_select, [-n, n)
    for take_along_dim, whose negatives wrap once), forward and backward, against NumPy;
    nor do scatter_add, scatter_reduce, index_add, index_copy, index_fill (a number), take,
    put_ and index_reduce (a range-check launch); a bad index raises at the next
    synchronization with the op's own words."""
    from tgrad.cuda import index_errors as ie
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5, 4))
    xt = tgrad.tensor(x, device="cuda", requires_grad=True)
    g_idx = rng.integers(0, 5, (3, 2, 4))
    s_idx = np.array([4, 0, 4, 2])
    t_idx = rng.integers(-4, 4, (3, 5, 6))
    cases = [("gather", lambda i: tgrad.gather(xt, 1, i), g_idx,
              np.take_along_axis(x, g_idx, 1)),
             ("index_select", lambda i: tgrad.index_select(xt, 1, i), s_idx, x[:, s_idx]),
             ("take_along_dim", lambda i: tgrad.take_along_dim(xt, i, 2), t_idx,
              np.take_along_axis(x, t_idx, 2))]
    for name, op, idx, want in cases:
        it = tgrad.tensor(idx, device="cuda")
        gy = rng.standard_normal(want.shape)
        xt.grad = None
        with _no_host_reads(f"{name} with a cuda index"):
            y = op(it)
            y.backward(tgrad.tensor(gy, device="cuda"))
        np.testing.assert_array_equal(y.detach().cpu().numpy(), want)
        # the backward scatter-adds gy at the read positions (repeats add up)
        pos = {"gather": lambda p: np.take_along_axis(p, g_idx, 1),
               "index_select": lambda p: p[:, s_idx],
               "take_along_dim": lambda p: np.take_along_axis(p, t_idx, 2)}[name](
                   np.arange(x.size).reshape(x.shape))  # the flat position read
        grad = np.zeros(x.size)
        np.add.at(grad, pos.astype(np.int64).reshape(-1), gy.reshape(-1))
        np.testing.assert_allclose(xt.grad.cpu().numpy(), grad.reshape(x.shape), rtol=1e-14,
                                   atol=1e-14)
    assert not ie.waiting
    bad = [("gather(): index 5 is out of bounds for dimension 1 with size 5",
            lambda: tgrad.gather(xt, 1, tgrad.tensor(np.full((3, 1, 4), 5), device="cuda"))),
           ("gather(): index -1 is out of bounds for dimension 1 with size 5",
            lambda: tgrad.gather(xt, 1, tgrad.tensor(np.full((3, 1, 4), -1), device="cuda"))),
           ("index_select(): index -1 is out of bounds for dimension 2 with size 4",
            lambda: tgrad.index_select(xt, 2, tgrad.tensor([0, -1], device="cuda"))),
           ("take_along_dim(): index -5 is out of bounds for dimension 2 with size 4",
            lambda: tgrad.take_along_dim(xt, tgrad.tensor(np.full((3, 5, 1), -5),
                                                          device="cuda"), 2)),
           ("take_along_dim(): index 4 is out of bounds for dimension 2 with size 4",
            lambda: tgrad.take_along_dim(xt, tgrad.tensor(np.full((1, 1, 2), 4),
                                                          device="cuda"), 2))]

    def raises_at_sync(want: str, op) -> None:
        with _no_host_reads(want):
            op()
        try:
            tgrad.cuda.synchronize()
        except IndexError as e:
            assert want in str(e), (want, str(e))
        else:
            raise AssertionError(f"no IndexError: {want}")
    for want, op in bad:
        raises_at_sync(want, op)
    # the writers: a range-check launch each, the same deferred errors
    w_idx = rng.integers(0, 3, (2, 5, 4))
    src = rng.standard_normal((2, 5, 4))
    a_idx = np.array([2, 0, 2])
    src_a = rng.standard_normal((3, 5, 4))
    want_add = x.copy()
    np.add.at(want_add, (w_idx, np.arange(5)[:, None], np.arange(4)), src)
    want_max = x.copy()
    np.maximum.at(want_max, (w_idx, np.arange(5)[:, None], np.arange(4)), src)
    want_index_add = x.copy()
    np.add.at(want_index_add, a_idx, 2.0 * src_a)
    c_idx = np.array([2, 0])  # (KV-cache style: whole slices written)
    src_c = rng.standard_normal((2, 5, 4))
    want_copy = x.copy()
    want_copy[c_idx] = src_c
    src_cd = tgrad.tensor(src_c, device="cuda")
    f_idx = np.array([-1, 0, 2])  # (a repeat, through a negative index: [-n, n))
    want_fill = x.copy()
    want_fill[f_idx] = -7.5
    xs = tgrad.tensor(x, device="cuda")
    src_d, src_ad = tgrad.tensor(src, device="cuda"), tgrad.tensor(src_a, device="cuda")
    writers = [("scatter_add", lambda i: tgrad.scatter_add(xs, 0, i, src_d), w_idx, want_add),
               ("scatter_reduce", lambda i: tgrad.scatter_reduce(xs, 0, i, src_d, "amax"),
                w_idx, want_max),
               ("index_add", lambda i: tgrad.index_add(xs, 0, i, src_ad, alpha=2.0), a_idx,
                want_index_add),
               ("index_copy", lambda i: xs.index_copy(0, i, src_cd), c_idx, want_copy),
               ("index_fill", lambda i: xs.index_fill(0, i, -7.5), f_idx, want_fill)]
    for name, op, idx, want in writers:
        it = tgrad.tensor(idx, device="cuda")
        with _no_host_reads(f"{name} with a cuda index"):
            y = op(it)
        np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-14, atol=1e-14)
        bad_idx = idx.copy()
        bad_idx.reshape(-1)[-1] = bad_value = -4 if name == "index_fill" else -1
        raises_at_sync(f"{name}(): index {bad_value} is out of bounds for dimension 0 with "
                       "size 3", lambda op=op, b=bad_idx: op(tgrad.tensor(b, device="cuda")))
    # their gradients (input: g where nothing was written; index_copy's source: g there)
    xg = tgrad.tensor(x, device="cuda", requires_grad=True)
    srcg = tgrad.tensor(src_c, device="cuda", requires_grad=True)
    gy = rng.standard_normal(x.shape)
    with _no_host_reads("index_fill / index_copy backward with a cuda index"):
        (xg.index_fill(0, tgrad.tensor(f_idx, device="cuda"), 1.0) +
         xg.index_copy(0, tgrad.tensor(c_idx, device="cuda"), srcg)).backward(
            tgrad.tensor(gy, device="cuda"))
    want_gx = 2.0 * gy
    want_gx[f_idx] -= gy[f_idx]
    want_gx[c_idx] -= gy[c_idx]
    np.testing.assert_array_equal(xg.grad.cpu().numpy(), want_gx)
    np.testing.assert_array_equal(srcg.grad.cpu().numpy(), gy[c_idx])
    # take and put_ ([-n, n) of the flattened tensor), index_reduce: a range-check launch
    y2 = rng.standard_normal((3, 4))
    y2t = tgrad.tensor(y2, device="cuda")
    flat = np.array([[0, -1], [11, 5]])
    ones = tgrad.tensor(np.full((2, 4), 2.0), device="cuda")
    with _no_host_reads("take / put_ / index_reduce with a cuda index"):
        taken = tgrad.take(y2t, tgrad.tensor(flat, device="cuda"))
        put = y2t.clone().put_(tgrad.tensor([0, -1], device="cuda"),
                               tgrad.tensor([7.0, 9.0], dtype=tgrad.float64, device="cuda"))
        red = y2t.index_reduce(0, tgrad.tensor([2, 0, 2], device="cuda"),
                               tgrad.tensor(np.full((3, 4), 2.0), device="cuda"), "prod")
    want_put = y2.copy()
    want_put.reshape(-1)[[0, -1]] = [7.0, 9.0]
    want_red = y2.copy()
    want_red[2] *= 4.0
    want_red[0] *= 2.0
    for got, want, name in ((taken, y2.reshape(-1)[flat], "take"), (put, want_put, "put_"),
                            (red, want_red, "index_reduce")):
        np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=name)
    bad = [("take(): index 12 is out of bounds for dimension 0 with size 12",
             lambda: tgrad.take(y2t, tgrad.tensor([0, 12], device="cuda"))),
            ("take(): index -13 is out of bounds for dimension 0 with size 12",
             lambda: tgrad.take(y2t, tgrad.tensor([-13], device="cuda"))),
            ("put_(): index 12 is out of bounds for dimension 0 with size 12",
             lambda: y2t.clone().put_(tgrad.tensor([12], device="cuda"),
                                      tgrad.tensor([1.0], dtype=tgrad.float64, device="cuda"))),
            ("index_reduce(): index 3 is out of bounds for dimension 0 with size 3",
             lambda: y2t.index_reduce(0, tgrad.tensor([3, 0], device="cuda"), ones, "prod"))]
    for want, op in bad:
        raises_at_sync(want, op)
    # max_unpool: its indices checked on the device (the flat position in each output plane)
    import tgrad.nn.functional as F
    pooled, where = F.max_pool2d(tgrad.tensor(x[None], device="cuda"), 2, return_indices=True)
    with _no_host_reads("max_unpool2d with cuda indices"):
        up = F.max_unpool2d(pooled, where, 2)
    plane = np.zeros((3, 4, 4))  # x (3, 5, 4) pooled to (3, 2, 2), unpooled to (3, 4, 4)
    for c, i, j in np.ndindex(3, 2, 2):
        block = x[c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        a, b = np.unravel_index(np.argmax(block), (2, 2))
        plane[c, 2 * i + a, 2 * j + b] = block[a, b]
    np.testing.assert_array_equal(up.cpu().numpy()[0], plane)
    worse = where.clone()
    worse[0, 1, 1, 0] = 16
    raises_at_sync("max_unpool2d: index 16 is out of bounds for dimension 2 with size 16",
                   lambda: F.max_unpool2d(pooled, worse, 2))
    # embedding_bag: its indices checked on the device (its offsets are read on the host, a
    # synchronization that may raise the error already)
    try:
        F.embedding_bag(tgrad.tensor([0, 5], device="cuda"), y2t[:3].float(),
                        tgrad.tensor([0], device="cuda"))
        tgrad.cuda.synchronize()
    except IndexError as e:
        assert "embedding_bag: index 5 is out of bounds for dimension 0 with size 3" in str(e), e
    else:
        raise AssertionError("no IndexError from embedding_bag")
    # an index of more than 4 dims: a range-check launch, then the host-offset gather,
    # whose read of the index raises the error
    x5 = tgrad.zeros((2, 1, 1, 1, 3), device="cuda")
    try:
        tgrad.gather(x5, 4, tgrad.tensor(np.full((2, 1, 1, 1, 1), 3), device="cuda"))
    except IndexError as e:
        assert "gather(): index 3 is out of bounds for dimension 4 with size 3" in str(e), e
    else:
        raise AssertionError("no IndexError for a 5-d gather index")


def check_half_number_operands() -> None:
    # a Python float of a float16 mul/div stays float32 in the kernel (PyTorch: x * 70000.0
    # is 63008 for x = 0.9, not inf); the others round it to float16: same as the CPU
    from tgrad.backends import triton as tb
    before = set(tb.host_path_used())
    x = np.array([0.1, 0.9, 60000.0, -3.3, 1e-3], np.float16)
    for f in (lambda t: t * 70000.0, lambda t: t / 1e5, lambda t: 0.1 * t, lambda t: t * 0.1,
              lambda t: t - 0.1, lambda t: t + 1e-4, lambda t: 3.0 / t):
        c = f(tgrad.tensor(x)).numpy()
        g = f(tgrad.tensor(x, device="cuda")).numpy()
        assert c.dtype == g.dtype == np.float16 and np.array_equal(c, g, equal_nan=True), (c, g)
    assert set(tb.host_path_used()) == before


def check_bfloat16_casts() -> None:
    # bfloat16 stores round to nearest even, and float64/float16/int/bool convert by value,
    # bit for bit as the NumPy backend (ml_dtypes) does; the interpreter gets this from
    # tgrad.kernels.interpreter_bf16 (Triton's truncates, and converts float64 as integers)
    import ml_dtypes
    bf16 = np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(11)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, 3.39e38, 3.4e38, 2.5,
               7006.8, -0.3, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8]
    f64 = np.concatenate([special, rng.standard_normal(300) * 10.0 ** rng.integers(-8, 8, 300)])
    for src in (np.float64, np.float32, np.float16, np.int32, np.bool_):
        with np.errstate(over="ignore"):  # the float16 sources: inf past 65504
            a = f64.astype(src) if src not in (np.int32, np.bool_) else \
                np.nan_to_num(f64, posinf=0, neginf=0).clip(-2e9, 2e9).astype(src)
        got = tgrad.tensor(a, device="cuda").to(tgrad.bfloat16).cpu().numpy()
        want = tgrad.tensor(a).to(tgrad.bfloat16).numpy()
        assert got.dtype == bf16 and np.array_equal(got.view(np.uint16), want.view(np.uint16)), \
            (np.dtype(src).name, a[got.view(np.uint16) != want.view(np.uint16)][:5])
    b = f64.astype(bf16)
    finite = b[np.isfinite(b.astype(np.float32))]
    for dst in ("float64", "float32", "float16", "int32", "bool"):
        x = finite if dst == "int32" else b
        x = x[np.abs(x.astype(np.float64)) < 2e9] if dst == "int32" else x
        got = tgrad.tensor(x, device="cuda").to(getattr(tgrad, dst)).cpu().numpy()
        want = tgrad.tensor(x).to(getattr(tgrad, dst)).numpy()
        assert np.array_equal(got, want, equal_nan=True), (dst, got[:5], want[:5])
    # float32 maths rounded once to bfloat16: products, sums, number operands (not quotients:
    # compiled fp32 division may be approximate, and a 1-ulp difference can flip a rounding)
    y = (rng.standard_normal(300) * 3).astype(bf16)
    for f in (lambda p, q: p * q, lambda p, q: p + q, lambda p, q: p * 70000,
              lambda p, q: p * 70000.0, lambda p, q: 1 - q):
        got = f(tgrad.tensor(b, device="cuda"), tgrad.tensor(y[:1], device="cuda")).cpu()
        want = f(tgrad.tensor(b), tgrad.tensor(y[:1]))
        assert np.array_equal(got.numpy().view(np.uint16), want.numpy().view(np.uint16)) \
            or np.array_equal(got.numpy(), want.numpy(), equal_nan=True), f


def check_cpu_scalar_operands() -> None:
    # a 0-d CPU tensor joins an op on cuda as a scalar (PyTorch's CPU-scalar rule), and its
    # gradient comes back to the CPU; a CPU tensor with dims still raises the device error
    x = tgrad.tensor([1.0, -2.0, 3.0], device="cuda", requires_grad=True)
    s = tgrad.tensor(2.5, requires_grad=True)
    y = (x * s + tgrad.add(x, s, alpha=2) - s / x).sum() + tgrad.where(x > s, x, s).sum()
    y.backward()
    xv, sv = np.array([1.0, -2.0, 3.0], np.float32), np.float32(2.5)
    want = (xv * sv + xv + 2 * sv - sv / xv).sum() + np.where(xv > sv, xv, sv).sum()
    assert np.isclose(y.item(), want, rtol=1e-6), (y.item(), want)
    assert s.grad.device.type == "cpu" and x.grad.device.type == "cuda"
    g_s = (xv + 2 - 1 / xv).sum() + (xv <= sv).sum()
    assert np.isclose(s.grad.item(), g_s, rtol=1e-6), (s.grad.item(), g_s)
    np.testing.assert_allclose(x.grad.cpu().numpy(), sv + 1 + sv / xv**2 + (xv > sv),
                               rtol=1e-6)
    try:
        x + tgrad.tensor([1.0])
    except RuntimeError as e:
        assert "expected all tensors to be on the same device" in str(e), e
    else:
        raise AssertionError("no device error for a 1-element CPU tensor")


def check_argsort() -> None:
    # the sort kernels (tile sort + merge passes) vs np.argsort(kind="stable"): NaN, +-inf,
    # -0.0/+0.0 and ties, both directions, lines that take merge passes in the interpreter and
    # compiled (2 tiles of 1024), lines strided in memory, int64 offsets forced on
    from tgrad.backends import numpy as nb
    from tgrad.backends import triton as tb
    from tgrad.kernels import sort as ks
    rng = np.random.default_rng(3)
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan, 1.0, -0.0]
    dts = [np.dtype(d) for d in os.environ.get("TGRAD_DTYPES", "float32,float64").split(",")]
    cases = []
    for dt in dts:
        a = rng.integers(-50, 50, (2, 1500)).astype(dt)
        a[:, rng.integers(0, 1500, 40)] = rng.choice(special, (2, 40))
        cases += [(a, 1, False), (a[:, :70].T, 0, False), (a, 1, True)]
    i64 = np.iinfo(np.int64)
    cases += [(rng.integers(-3, 3, (3, 300)).astype(np.int32), 1, False),
              (np.array([i64.max, i64.min, 0, i64.min, -1, i64.max] * 3), 0, False)]
    saved = ks._I32
    try:
        for a, axis, idx64 in cases:
            ks._I32 = 10 if idx64 else saved
            for desc in (False, True):
                got = tb.argsort(tb.from_host(np.ascontiguousarray(a)), axis, desc).to_host()
                assert np.array_equal(got, nb.argsort(a, axis, desc)), (a.dtype, a.shape, desc)
    finally:
        ks._I32 = saved


def check_linalg_lu() -> None:
    # solve / inv / det / slogdet / logdet / lu_solve / lu (LU with partial pivoting: argmax,
    # row gathers, in-place updates of views, triangular solves; a rectangular lu too) on
    # cuda against the CPU: values, gradients, the singular status, float32 and float64
    from tgrad import linalg as LA
    rng = np.random.default_rng(21)
    a = rng.standard_normal((2, 5, 5)) + 3 * np.eye(5)
    a[0, 0, 0] = 0.0  # a zero leading pivot: needs the row exchange
    b = rng.standard_normal((2, 5, 3))
    sing = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]]])
    fns = (lambda x, y: LA.solve(x, y), lambda x, y: LA.solve(x, y[..., 0]),
           lambda x, y: LA.inv(x) @ y, lambda x, y: LA.det(x), lambda x, y: tgrad.logdet(x),
           lambda x, y: LA.slogdet(x).logabsdet * LA.slogdet(x).sign,
           lambda x, y: LA.lu_solve(*LA.lu_factor(x), y, adjoint=True),
           lambda x, y: LA.lu(x).U + LA.lu(x[..., :3].detach()).L.sum())
    for dt in (np.float32, np.float64):
        for f in fns if dt is np.float64 else fns[:1]:
            out = []
            for dev in ("cpu", "cuda"):
                x = tgrad.tensor(a.astype(dt), device=dev, requires_grad=True)
                y = tgrad.tensor(b.astype(dt), device=dev, requires_grad=True)
                r = f(x, y)
                r.sum().backward() if not r.isnan().any().item() else None
                out.append((r.detach().cpu().numpy(),
                            None if x.grad is None else x.grad.cpu().numpy(),
                            None if y.grad is None else y.grad.cpu().numpy()))
            tol = 1e-4 if dt is np.float32 else 1e-11
            for c, g in zip(out[0], out[1]):
                assert (c is None) == (g is None)
                if c is not None:
                    np.testing.assert_allclose(g, c, rtol=tol, atol=tol)
        info = LA.solve_ex(tgrad.tensor(sing.astype(dt), device="cuda"),
                           tgrad.tensor(np.ones((2, 2), dt), device="cuda")).info
        assert info.device.type == "cuda" and info.cpu().tolist() == [2, 1]
        sg = LA.slogdet(tgrad.tensor(sing.astype(dt), device="cuda"))
        assert sg.sign.cpu().tolist() == [0.0, 0.0]
        assert np.isneginf(sg.logabsdet.cpu().numpy()).all()


def check_int_scatter() -> None:
    # scatter-adds and scatter reductions of integers accumulate in the integer dtype on the
    # device (they went through float32 once: 2**40 + 1 lost its low bits), in both kernels
    # (index tuples; host offsets, which a 5-d target's five index arrays take), against
    # the CPU
    rng = np.random.default_rng(5)
    for dt in (np.int64, np.int32):
        hi = 2**45 if dt is np.int64 else 2**20
        for shape, ishape in (((4, 6), (5, 6)), ((3, 2, 1, 2, 2), (4, 2, 1, 2, 2))):
            x = rng.integers(-hi, hi, shape).astype(dt)
            src = rng.integers(-hi, hi, ishape).astype(dt)
            idx = rng.integers(0, shape[0], ishape)
            for r in ("sum", "prod", "mean", "amax", "amin"):
                for incl in (True, False):
                    got, want = (tgrad.tensor(x, device=d).scatter_reduce(
                        0, tgrad.tensor(idx, device=d), tgrad.tensor(src, device=d), r,
                        include_self=incl).cpu().numpy() for d in ("cuda", "cpu"))
                    assert got.dtype == want.dtype and np.array_equal(got, want), \
                        (dt, shape, r, incl)
            got, want = (tgrad.tensor(x, device=d).index_add(
                0, tgrad.tensor(idx[:, 0, ...].reshape(-1)[:ishape[0]], device=d),
                tgrad.tensor(src, device=d)).cpu().numpy() for d in ("cuda", "cpu"))
            assert np.array_equal(got, want), (dt, shape, "index_add")
    idx = np.array([0, 0, 2, 3, 3, 3])  # bools: a repeated True stays True ("any")
    vals = np.array([True, True, False, True, False, True])
    got, want = [], []
    for d, out in (("cuda", got), ("cpu", want)):
        b = tgrad.zeros(4, dtype=tgrad.bool, device=d)
        b.index_put_((tgrad.tensor(idx, device=d),), tgrad.tensor(vals, device=d),
                     accumulate=True)
        out.extend(b.cpu().tolist())
    assert got == want == [True, False, False, True], (got, want)


def check_linalg_decompositions() -> None:
    # qr (Householder), eigh and svd (parallel Jacobi: index_select rotations, argsort,
    # one host read per sweep), pinv, lstsq ('gels', cuda's driver) and matrix_exp on cuda
    # against the CPU: values and gradients, float32 and float64; singular vectors compared
    # through gauge-free functions (U diag(S) Vh, V diag(L) V^T, sign-fixed columns)
    from tgrad import linalg as LA
    rng = np.random.default_rng(22)
    a = rng.standard_normal((2, 4, 3))
    sq = rng.standard_normal((2, 3, 3))

    def eigh_fixed(x, s):
        vals, vecs = LA.eigh(s + s.mT)
        return vecs * tgrad.sign(vecs[..., :1, :]) * vals.unsqueeze(-2)

    def svd_fixed(x, s):
        u, sv, _ = LA.svd(x, full_matrices=False)
        return u * tgrad.sign(u[..., :1, :]) * sv.unsqueeze(-2)
    fns = (lambda x, s: LA.qr(x).Q * LA.qr(x).R.diagonal(dim1=-2, dim2=-1).unsqueeze(-2),
           lambda x, s: LA.eigh(s + s.mT).eigenvalues, eigh_fixed, svd_fixed,
           lambda x, s: LA.pinv(x),
           lambda x, s: LA.lstsq(x, (x[..., :1] + 1.0).exp(), driver="gels").solution,
           lambda x, s: LA.matrix_exp(s))
    for dt in (np.float32, np.float64):
        for f in fns if dt is np.float64 else fns[:4]:
            out = []
            for dev in ("cpu", "cuda"):
                x = tgrad.tensor(a.astype(dt), device=dev, requires_grad=True)
                s = tgrad.tensor(sq.astype(dt), device=dev, requires_grad=True)
                r = f(x, s)
                (r * r).sum().backward()
                out.append((r.detach().cpu().numpy(),
                            None if x.grad is None else x.grad.cpu().numpy(),
                            None if s.grad is None else s.grad.cpu().numpy()))
            tol = 2e-4 if dt is np.float32 else 1e-10
            for c, g in zip(out[0], out[1]):
                assert (c is None) == (g is None)
                if c is not None:
                    np.testing.assert_allclose(g, c, rtol=tol, atol=tol)

def check_autocast() -> None:
    # tgrad.autocast("cuda"): float16 linear / matmul, float32 softmax and loss, and the
    # gradients through the recorded casts, against the same region on the CPU
    import tgrad.nn.functional as F
    rng = np.random.default_rng(23)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (4, 5), (4,)))
    out = []
    for dev in ("cpu", "cuda"):
        tx = tgrad.tensor(x, device=dev)
        tw = tgrad.tensor(w, device=dev, requires_grad=True)
        tb = tgrad.tensor(b, device=dev, requires_grad=True)
        with tgrad.autocast(dev, dtype=tgrad.float16):
            y = F.linear(tx, tw, tb)
            z = y @ y.mT  # CPU's autocast lists keep softmax in float16: widen it there
            p = F.softmax(z.float() if dev == "cpu" else z, -1)
            loss = F.mse_loss(p, tgrad.zeros(6, 6, device=dev))
        assert y.dtype is tgrad.float16 and p.dtype is tgrad.float32, (y.dtype, p.dtype)
        loss.backward()
        out.append([t.detach().float().cpu().numpy() for t in (y, p, loss, tw.grad, tb.grad)])
    for c, g in zip(*out):
        np.testing.assert_allclose(g, c, rtol=2e-3, atol=2e-3)

def check_distributions_more() -> None:
    # the newer distributions (tan/atan, erfinv, lgamma, logsumexp, transforms) on cuda:
    # log_prob, cdf and their parameter gradients against the CPU; rsample's shape, support
    # and gradient
    import tgrad.distributions as D
    from tgrad.distributions import transforms as T
    x = np.array([0.4, 1.3, 2.5])

    def families(dev):
        t = lambda v: tgrad.tensor(np.asarray(v, dtype=np.float64), device=dev,  # noqa: E731
                                   requires_grad=True)
        a, b = t(0.3), t(1.2)
        return [(D.Cauchy(a, b), (a, b)), (D.Gumbel(a, b), (a, b)),
                (D.LogNormal(a, b), (a, b)), (D.Weibull(b, t(1.5)), (b,)),
                (D.HalfNormal(b), (b,)),
                (D.TransformedDistribution(D.Normal(a, b), [T.SigmoidTransform()]), (a, b)),
                (D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])),
                                     D.Normal(t([-1.0, 2.0]), t([0.5, 1.0]))), ()),
                (D.Gamma(b, t(0.7)), (b,)), (D.Beta(b, t(2.0)), (b,))]
    out = []
    for dev in ("cpu", "cuda"):
        res = []
        for d, params in families(dev):
            v = tgrad.tensor(x / 3.0 if isinstance(d, (D.TransformedDistribution, D.Beta))
                             else x, dtype=tgrad.float64, device=dev)
            lp = d.log_prob(v)
            lp.sum().backward()
            res.append(lp.detach().cpu().numpy())
            # copies: on the CPU .numpy() shares the .grad that later families add into
            res.extend(p.grad.cpu().numpy().copy() for p in params)
            if d.has_rsample:  # (gamma draws: the forward only; its backward loops are long)
                draw = d.sample((4,))
                assert draw.shape == (4,) and draw.device.type == dev
        out.append(res)
    for c, g in zip(*out):
        np.testing.assert_allclose(g, c, rtol=1e-11, atol=1e-12)

def check_distributions_counts() -> None:
    # the count families, StudentT, FisherSnedecor and VonMises on cuda: log_prob and its parameter
    # gradients against the CPU; draws of the right shape, device and support (the samplers'
    # rejection loops run on the device)
    import tgrad.distributions as D

    def families(dev):
        t = lambda v: tgrad.tensor(np.asarray(v, dtype=np.float64), device=dev,  # noqa: E731
                                   requires_grad=True)
        r, p, df = t([0.7, 14.0]), t([0.3, 0.8]), t([2.5, 6.0])
        return [(D.Poisson(r), (r,), [1.0, 12.0]),
                (D.Binomial(t([4.0, 40.0]).detach(), p), (p,), [1.0, 33.0]),
                (D.NegativeBinomial(t([1.5, 3.0]).detach(), p), (p,), [2.0, 5.0]),
                (D.Multinomial(5, probs=p), (p,), [2.0, 3.0]),
                (D.StudentT(df, r, p), (df, r, p), [0.4, 9.0]),
                (D.FisherSnedecor(df, r), (df, r), [0.4, 2.0]),
                (D.VonMises(p, df), (p, df), [0.4, -2.0])]
    out = []
    for dev in ("cpu", "cuda"):
        res = []
        for d, params, v in families(dev):
            lp = d.log_prob(tgrad.tensor(v, dtype=tgrad.float64, device=dev))
            lp.sum().backward()
            res.append(lp.detach().cpu().numpy())
            res.extend(q.grad.cpu().numpy().copy() for q in params)
            draw = d.sample((3,)).cpu().numpy()
            assert draw.shape == (3,) + d.batch_shape + d.event_shape
            if d.support.is_discrete:
                assert (draw == np.floor(draw)).all() and (draw >= 0).all()
        out.append(res)
    for c, g in zip(*out):
        np.testing.assert_allclose(g, c, rtol=1e-11, atol=1e-12)


def check_grid_sample_non_finite_points() -> None:
    # border / reflection padding clips a NaN (or, after reflecting, an infinite)
    # coordinate to 0, as PyTorch's clip_coordinates: column 0 is sampled, on the kernel as
    # on the CPU (values read from PyTorch 2.13 for this 4x4 image)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    want = {("bilinear", (math.nan, 0.0)): 6.0, ("nearest", (math.nan, 0.0)): 8.0,
            ("bilinear", (-math.inf, 0.5)): 10.0, ("nearest", (-math.inf, 0.5)): 8.0}
    for (mode, pt), value in want.items():
        for pm in ("border", "reflection") if math.isnan(pt[0]) else ("reflection",):
            g = np.array(pt).reshape(1, 1, 1, 2)
            for dev in ("cpu", "cuda"):
                r = tgrad.nn.functional.grid_sample(
                    tgrad.tensor(x, device=dev), tgrad.tensor(g, device=dev), mode=mode,
                    padding_mode=pm, align_corners=False)
                assert r.item() == value, (mode, pm, pt, dev, r.item())


def check_round_zero_and_var_past_the_count() -> None:
    # round(-0.0) keeps the sign (the kernel tested x < 0); var / std with a correction
    # above the count divide by max(N - correction, 0) (the kernel gave -2.33 and NaN)
    for dt in (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16):
        x = np.array([-0.0, -0.4, 0.3, -2.5, 2.5])
        for dec in (0, 1):
            g = tgrad.tensor(x, dtype=dt, device="cuda").round(decimals=dec)
            assert np.signbit(g.float().numpy()).tolist() == [True, True, False, True, False]
            assert g.float().numpy().tolist() == tgrad.tensor(x, dtype=dt).round(
                decimals=dec).float().numpy().tolist()
    x = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    for f in (tgrad.var, tgrad.std):
        for c in (3, 5):
            got = f(tgrad.tensor(x, device="cuda"), 1, correction=c).numpy()
            want = f(tgrad.tensor(x), 1, correction=c).numpy()
            assert np.array_equal(got, want, equal_nan=True), (got, want)
            assert np.isinf(got[0]) and np.isnan(got[1])


def check_integer_matmul_is_exact() -> None:
    # integer products summed exactly in int64 (they went through float64: 2^60 + 1 lost
    # its last bit), wrapping in the result dtype as the CPU (int32 2^30 * 2 * 2 is 0)
    big = np.array([[2**60 + 1, 3], [2**53 + 1, -1]])
    eye = np.eye(2, dtype=np.int64)
    rng = np.random.default_rng(5)
    ops = (lambda a, b: a @ b, tgrad.mm, lambda a, b: tgrad.einsum("ij,jk->ik", a, b),
           lambda a, b: tgrad.addmm(a, a, b), lambda a, b: tgrad.mv(a, b[:, 0]),
           lambda a, b: tgrad.bmm(a[None], b[None]), lambda a, b: tgrad.tensordot(a, b, 1))
    for f in ops:
        assert np.array_equal(f(tgrad.tensor(big, device="cuda"),
                                tgrad.tensor(eye, device="cuda")).numpy(),
                              f(tgrad.tensor(big), tgrad.tensor(eye)).numpy())
    for dt in (np.int64, np.int32, np.int8, np.uint8):
        a = rng.integers(-90, 90, (2, 17, 33)).astype(dt)
        b = rng.integers(-90, 90, (33, 5)).astype(dt)
        got = (tgrad.tensor(a, device="cuda") @ tgrad.tensor(b, device="cuda")).numpy()
        assert got.dtype == dt and np.array_equal(got, (tgrad.tensor(a) @ tgrad.tensor(b))
                                                  .numpy())
    w = tgrad.tensor([[2**30, 2**30]], dtype=tgrad.int32)
    assert (w.cuda() @ w.cuda().mT).numpy().tolist() == (w @ w.mT).numpy().tolist()
    x = tgrad.tensor([[[1, 3]]])
    k = tgrad.tensor([[[2**53 + 1]]])
    assert tgrad.nn.functional.conv1d(x.cuda(), k.cuda()).numpy().tolist() == \
        [[[2**53 + 1, 3 * (2**53 + 1)]]]


def check_float64_random_resolution() -> None:
    # float64 draws carry 53 random bits (they were float32 draws: every value on the 2^-24
    # grid), uniforms in [0, 1), normals with the standard moments (seeded: deterministic)
    tgrad.manual_seed(3)
    u = tgrad.rand(20000, dtype=tgrad.float64, device="cuda").numpy()
    n = tgrad.randn(20000, dtype=tgrad.float64, device="cuda").numpy()
    for a in (u, n):
        assert a.dtype == np.float64 and np.mean(a.astype(np.float32) == a) < 0.01
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    assert abs(n.mean()) < 0.03 and abs(n.var() - 1.0) < 0.05
    v = tgrad.empty(5000, dtype=tgrad.float64, device="cuda").uniform_(2.0, 3.0).numpy()
    assert 2.0 <= v.min() and v.max() < 3.0 and np.mean(v.astype(np.float32) == v) < 0.01


def check_data_parallel_and_legacy_cuda_types() -> None:
    # DataParallel on the one cuda device: the module moves to cuda:0, CPU inputs (nested)
    # follow it, and the result is the plain module's; a second device is refused.
    # tgrad.cuda.FloatTensor is the legacy constructor on cuda and an isinstance test
    tgrad.manual_seed(4)
    lin = tgrad.nn.Linear(3, 2)
    x = tgrad.randn(5, 3)
    want = lin(x).detach().numpy()
    dp = tgrad.nn.DataParallel(lin)
    assert dp.device_ids == [0] and lin.weight.device.type == "cuda"
    got = dp(x)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-6, atol=1e-7)
    got.sum().backward()
    np.testing.assert_allclose(lin.bias.grad.cpu().numpy(), [5.0, 5.0])
    try:
        tgrad.nn.DataParallel(tgrad.nn.Linear(1, 1), device_ids=[0, 1])
    except NotImplementedError as e:
        assert "tgrad runs a model on one device" in str(e), e
    else:
        raise AssertionError("no error for two devices")
    t = tgrad.cuda.FloatTensor([1, 2])
    assert t.device.type == "cuda" and t.dtype is tgrad.float32 and t.cpu().tolist() == [1, 2]
    assert isinstance(t, tgrad.cuda.FloatTensor) and not isinstance(t, tgrad.FloatTensor)
    assert t.type() == "tgrad.cuda.FloatTensor" and tgrad.cuda.LongTensor(2, 3).shape == (2, 3)


def check_channels_last() -> None:
    # a channels-last copy on the device: PyTorch's NHWC strides, the values unchanged, and a
    # conv reading it (and a channels-last weight) gives the row-major conv's values
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    x = tgrad.tensor(a, device="cuda")
    y = x.contiguous(memory_format=tgrad.channels_last)
    assert y.device.type == "cuda" and y.stride() == (60, 1, 12, 3)
    np.testing.assert_array_equal(y.cpu().numpy(), a)
    conv = tgrad.nn.Conv2d(3, 2, 3).cuda()
    want = conv(x).detach().cpu().numpy()
    conv.to(memory_format=tgrad.channels_last)
    assert conv.weight.is_contiguous(memory_format=tgrad.channels_last)
    np.testing.assert_allclose(conv(y).detach().cpu().numpy(), want, rtol=1e-5, atol=1e-6)


CHECKS = {n: globals()["check_" + n] for n in (
    "grad_formulas", "floor_divide", "split_reductions", "pow_specials", "inverse_trig",
    "tanh", "inner_blocks", "int_reductions", "one_read_var_logsumexp", "gradient_buffers",
    "pipelined_variants",
    "empty_reductions", "int_bool_elementwise", "indexing_nd", "scatter_long_runs",
    "index_errors_at_sync",
    "gather_family_checks_on_device", "half_number_operands",
    "bfloat16_casts", "cpu_scalar_operands", "argsort", "linalg_lu", "int_scatter",
    "linalg_decompositions", "autocast", "distributions_more", "distributions_counts",
    "grid_sample_non_finite_points", "round_zero_and_var_past_the_count",
    "integer_matmul_is_exact", "float64_random_resolution",
    "data_parallel_and_legacy_cuda_types", "channels_last")}
