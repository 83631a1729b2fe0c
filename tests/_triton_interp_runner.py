"""Run in a subprocess with TRITON_INTERPRET=1 by tests/test_triton_ops.py: every OpSpec of
the op table on device "cuda" (Triton's interpreter over host memory) against the NumPy
backend (device "cpu"), forward and backward, float32 and float64, with the table's odd
sizes, broadcasting and non-contiguous layouts; plus runtime/DeviceArray checks.
Prints one JSON object: {"ops": {name: [failures]}, "extra": {name: [failures]},
"host_path_used": [...]}."""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
import zlib

assert os.environ.get("TRITON_INTERPRET") == "1"
sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
import op_db  # noqa: E402

import tgrad  # noqa: E402

try:
    import op_db_nn
    SPECS = list(op_db.OP_DB) + list(op_db_nn.OP_DB)
except ImportError:
    SPECS = list(op_db.OP_DB)


def _to_domain(x, domain):
    lo, hi = domain
    if lo is not None and hi is not None:
        return lo + (hi - lo) * (0.05 + 0.9 / (1.0 + np.exp(-x)))
    if lo is not None:
        return lo + np.abs(x) + 0.1
    if hi is not None:
        return hi - np.abs(x) - 0.1
    return x


def _leaf(a, lay, dtype, device, rg):
    if lay == "T":
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    elif lay == "s":
        base = np.full(a.shape[:-1] + (2 * a.shape[-1],), 7.0, a.dtype)
        base[..., ::2] = a
    else:
        base = a
    t = tgrad.tensor(base, dtype=dtype if a.dtype.kind == "f" else None, device=device)
    if rg and a.dtype.kind == "f":
        t.requires_grad_(True)
    return t


def _view(t, lay):
    return t.transpose(-1, -2) if lay == "T" else (t[..., ::2] if lay == "s" else t)


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _close(a, b, rtol, atol):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if a.dtype.kind in "biu":
        return None if np.array_equal(a, b) else "integer/bool values differ"
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True):
        return None
    return f"max abs diff {np.nanmax(np.abs(a64 - b64))}"


def run_spec(spec) -> list:
    fails = []
    rng = np.random.default_rng(zlib.crc32(spec.name.encode()))
    samples = spec.samples(rng)
    for dtype in os.environ.get("TGRAD_DTYPES", "float32,float64").split(","):
        if dtype not in spec.dtypes:
            continue
        dt = getattr(tgrad, dtype)
        rtol, atol = spec.tol(dtype)
        rtol, atol = rtol * 4, atol * 4  # two implementations of one formula, each ~1 ulp
        for s in samples:
            arrs = [_to_domain(a, spec.domain) if a.dtype.kind == "f" else a
                    for a in s.args if isinstance(a, np.ndarray)]
            lays = [s.layouts[i] if i < len(s.layouts) else "c" for i in range(len(arrs))]
            results = {}
            if os.environ.get("TGRAD_VERBOSE"):
                print("  ", dtype, s, file=sys.stderr, flush=True)
            for dev in ("cpu", "cuda"):
                leaves = [_leaf(a, lay, dt, dev, spec.differentiable)
                          for a, lay in zip(arrs, lays)]
                it = iter(_view(t, lay) for t, lay in zip(leaves, lays))
                args = tuple(next(it) if isinstance(a, np.ndarray) else a for a in s.args)
                try:
                    outs = _tuple(spec.op(*args, **s.kwargs))
                except Exception as e:  # noqa: BLE001 - both devices must agree on errors
                    results[dev] = ("error", type(e).__name__, str(e).splitlines()[0][:200])
                    continue
                fwd = [o.detach().numpy() for o in outs]
                grads = None
                diff = [t for t in leaves if t.requires_grad]
                fouts = [o for o in outs if o.requires_grad]
                if diff and fouts:
                    g_rng = np.random.default_rng(7)
                    gos = [tgrad.tensor(g_rng.standard_normal(o.shape), dtype=o.dtype,
                                        device=dev) for o in fouts]
                    try:
                        gs = tgrad.autograd.grad(fouts, diff, gos, allow_unused=True)
                        grads = [None if g is None else g.numpy() for g in gs]
                    except Exception as e:  # noqa: BLE001
                        grads = ("error", type(e).__name__, str(e)[:200])
                results[dev] = ("ok", fwd, grads)
            c, g = results["cpu"], results["cuda"]
            where = f"{dtype} {s.desc or s}"
            if c[0] != g[0]:
                fails.append(f"{where}: cpu {c[0]} {c[1:] if c[0] == 'error' else ''} "
                             f"vs cuda {g[0]} {g[1:] if g[0] == 'error' else ''}")
                continue
            if c[0] == "error":
                if c[1] != g[1]:
                    fails.append(f"{where}: cpu raised {c[1]}, cuda raised {g[1]}: {g[2]}")
                continue
            for i, (a, b) in enumerate(zip(c[1], g[1])):
                msg = _close(b, a, rtol, atol)
                if msg:
                    fails.append(f"{where}: forward output {i}: {msg}")
            if (c[2] is None) != (g[2] is None) or isinstance(g[2], tuple):
                fails.append(f"{where}: backward cpu={str(c[2])[:80]} cuda={str(g[2])[:80]}")
            elif c[2] is not None:
                for i, (a, b) in enumerate(zip(c[2], g[2])):
                    if (a is None) != (b is None):
                        fails.append(f"{where}: grad {i} None on one device only")
                    elif a is not None:
                        msg = _close(b, a, rtol, atol)
                        if msg:
                            fails.append(f"{where}: grad {i}: {msg}")
    return fails


def extra_checks() -> dict:
    from tgrad import cuda
    from tgrad.backends import triton as be
    out = {}

    def check(name, fn):
        try:
            fn()
            out[name] = []
        except Exception:  # noqa: BLE001
            out[name] = [traceback.format_exc(limit=3)[-800:]]

    def runtime():
        assert cuda.is_available() and cuda.is_interpreted() and cuda.device_count() == 1
        assert cuda.current_device() == 0 and "interpreter" in cuda.get_device_name()
        e0, e1 = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        e0.record()
        s = cuda.Stream()
        with cuda.stream(s):
            assert cuda.current_stream() == s
        e1.record()
        e1.synchronize()
        assert e1.query() and e0.elapsed_time(e1) >= 0.0
        cuda.synchronize()

    def memory():
        cuda.reset_peak_memory_stats()
        t = tgrad.tensor(np.zeros(1000, np.float32), device="cuda")
        base = cuda.memory_allocated()
        v = t[10:20]
        del t
        assert cuda.memory_allocated() == base  # the view keeps the buffer
        del v
        assert cuda.memory_allocated() == base - 4000 and cuda.max_memory_allocated() >= base
        try:
            tgrad.empty(1 << 40, dtype=tgrad.float32, device="cuda")
        except cuda.OutOfMemoryError as e:
            assert "Tried to allocate 4.00 TiB" in str(e) or "Tried to allocate" in str(e)
            assert "allocated by tgrad tensors" in str(e) and "reserved" in str(e)
        else:
            raise AssertionError("no OutOfMemoryError")

    def tensors():
        x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        t = tgrad.tensor(x, device="cuda:0")
        assert t.device == tgrad.device("cuda", 0) and t.is_cuda
        assert np.array_equal(t.cpu().numpy(), x) and t.cpu().device.type == "cpu"
        assert np.array_equal(t.permute(2, 0, 1).numpy(), x.transpose(2, 0, 1))
        assert t[1, 2, 3].item() == 23.0
        assert np.array_equal(tgrad.ones(3, device="cuda").numpy(), np.ones(3, np.float32))
        assert tgrad.zeros(2, 2, device="cuda").to("cpu").sum().item() == 0
        c = tgrad.tensor(x).cuda()
        assert np.array_equal(tgrad.cat([c, c * 2], 1).numpy(), np.concatenate([x, x * 2], 1))
        assert np.array_equal(c.to(tgrad.int32).numpy(), x.astype(np.int32))
        assert np.array_equal((c > 5).to(tgrad.float64).numpy(), (x > 5).astype(np.float64))
        try:
            c + tgrad.tensor(x)
        except RuntimeError as e:
            assert "expected all tensors to be on the same device" in str(e)
            assert "cuda:0" in str(e) and "cpu" in str(e)
        else:
            raise AssertionError("no device mismatch error")
        # 8-dim broadcast of strided operands, read in place
        a = np.random.default_rng(0).standard_normal((2, 1, 3, 1, 2, 3, 1, 2))
        b = np.random.default_rng(1).standard_normal((1, 2, 1, 3, 2, 1, 2, 1))
        ta = tgrad.tensor(a, device="cuda").transpose(0, 7)
        tb = tgrad.tensor(b, device="cuda").transpose(2, 5)
        ref = a.swapaxes(0, 7) * b.swapaxes(2, 5)
        assert np.allclose((ta * tb).numpy(), ref)
        # sum_to un-broadcasts
        g = be.from_host(np.ones((4, 3, 5)))
        assert np.array_equal(be.to_host(be.sum_to(g, (3, 1))), np.full((3, 1), 20.0))

    def interop():
        import ctypes

        from tgrad.cuda import interop as ip
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        t = tgrad.tensor(x, device="cuda").T  # a non-contiguous view
        cai = t.__cuda_array_interface__
        assert cai["shape"] == (4, 3) and cai["typestr"] == "<f4" and cai["version"] == 3
        assert cai["strides"] == (4, 16)
        # interpreter mode: the pointer is a host address; read element [1, 2] = x[2, 1]
        addr = cai["data"][0] + 1 * 4 + 2 * 16
        assert ctypes.c_float.from_address(addr).value == x[2, 1]
        n = np.from_dlpack(t)  # exported as kDLCPU in interpreter mode
        assert np.array_equal(n, x.T) and t.__dlpack_device__() == (1, 0)
        # the kDLCUDA path: export a capsule as CUDA memory, import it without a copy
        u = tgrad.from_dlpack(ip.to_capsule(t._data, (ip.KDL_CUDA, 0)))
        assert u.device == tgrad.device("cuda:0") and u.stride() == (1, 4)
        u.add_(1)
        assert t[1, 2].item() == x[2, 1] + 1  # shared memory
        del u, n
        gc.collect()  # the interpreter's frames can hold the last launch's args in cycles
        assert not ip._LIVE  # each consumer's deleter ran when its import died
        c = tgrad.from_dlpack(np.arange(3.0))
        assert c.device.type == "cpu" and c.tolist() == [0.0, 1.0, 2.0]
        try:
            tgrad.ones(2, device="cuda", requires_grad=True).__dlpack__()
        except RuntimeError as e:
            assert "require gradient" in str(e)
        else:
            raise AssertionError("exported a tensor that requires grad")

    def grad_formulas():
        # every fused gradient formula and paired backward primitive: one kernel vs NumPy,
        # with broadcasting, a number operand and special values
        from tgrad.backends import numpy as nb
        rng = np.random.default_rng(7)
        special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])
        dts = [np.dtype(d) for d in os.environ.get("TGRAD_DTYPES", "float32,float64").split(",")]
        for dt in dts:
            g = np.concatenate([rng.standard_normal(9), special]).astype(dt).reshape(17, 1)
            x = np.concatenate([rng.uniform(0.2, 3.0, 9), special]).astype(dt)
            row = rng.uniform(0.5, 2.0, (1, 17)).astype(dt)
            binary = ("div_b", "max_share", "logsumexp", "centered", "prod", "pow_base",
                      "pow_exponent", "eq_mask")
            cases = [(n, (x.reshape(17, 1),)) for n in nb.GRAD_FORMULAS if n not in binary]
            cases += [("div_b", (x.reshape(17, 1) / row, row)), ("div_b", (x[:, None], 2.0)),
                      ("max_share", (x[:, None], row)), ("max_share", (x[:, None], 1.0)),
                      ("logsumexp", (x[:, None], row)), ("centered", (x[:, None], row)),
                      ("prod", (row, x[:, None])), ("pow_base", (x[:, None], row * 3 - 2)),
                      ("pow_base", (x[:, None], 0.0)), ("pow_exponent", (x[:, None], row)),
                      ("pow_exponent", (2.0, row)), ("eq_mask", (x[:, None], x[::-1, None]))]
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

    def floor_divide():
        # NumPy's floor division on floats (specials, signs, exact near integers) and ints
        vals = np.array([7.5, -7.5, 1.0, -1.0, 0.0, -0.0, 0.3, 1e300, np.inf, -np.inf, np.nan])
        a = np.repeat(vals, vals.size)
        b = np.tile(np.concatenate([vals[:-4], [0.1, -0.1, 3.0, 0.0]]), vals.size)[:a.size]
        for dt in (np.float32, np.float64):
            with np.errstate(all="ignore"):  # 1e300 is inf in float32; x // 0
                a_dt, b_dt = a.astype(dt), b.astype(dt)
                want = np.floor_divide(a_dt, b_dt)
            ta, tb = tgrad.tensor(a_dt, device="cuda"), tgrad.tensor(b_dt, device="cuda")
            np.testing.assert_array_equal((ta // tb).numpy(), want)
            np.testing.assert_array_equal(np.signbit((ta // tb).numpy()), np.signbit(want))
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

    def split_reductions():
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
            for shape, dim in [((5000,), None), ((3, 3000), 1), ((3000, 2), 0)]:
                x = rng.standard_normal(shape)
                x.flat[1234] = np.nan
                for dt in (np.float32, np.float64):
                    t, c = tgrad.tensor(x.astype(dt), device="cuda"), tgrad.tensor(x.astype(dt))
                    for op in ("sum", "mean", "amax", "amin"):
                        del stages[:]
                        got = getattr(t, op)(dim=dim).numpy()
                        np.testing.assert_allclose(got, getattr(c, op)(dim=dim).numpy(),
                                                   rtol=1e-5, equal_nan=True, err_msg=op)
                        assert len(stages) == 2 and stages[0] > 1, (op, shape, stages)
                    p = tgrad.tensor(1 + x.astype(dt) * 1e-3, device="cuda")
                    np.testing.assert_allclose(p.prod(dim=dim).numpy(),
                                               (1 + c * 1e-3).prod(dim=dim).numpy(),
                                               rtol=1e-5, equal_nan=True)
                    assert (t > -10).all(dim=dim).tolist() == (c > -10).all(dim=dim).tolist()
                    assert (t > 3).any(dim=dim).tolist() == (c > 3).any(dim=dim).tolist()
        finally:
            red._launch = orig

    def pow_specials():
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
            np.testing.assert_allclose(got[~exact], want[~exact],
                                       rtol=1e-6 if dt == np.float32 else 1e-14)

    def int_reductions():
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
                got, want = getattr(t, op)(**kw).numpy(), getattr(c, op)(**kw).numpy()
                assert got.dtype == want.dtype and np.array_equal(got, want), (op, x.dtype)
            if x.ndim == 2:
                small = x[:, :3]  # products that fit in int64
                assert np.array_equal(tgrad.tensor(small, device="cuda").prod(dim=1).numpy(),
                                      small.prod(axis=1))
        acc = (tgrad.tensor(np.arange(10), device="cuda") > 5).sum()  # an accuracy count
        assert acc.item() == 4 and acc.dtype is tgrad.int64

    def empty_reductions():
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
                    for p in (2, 1, 0, 3, -1, np.inf, -np.inf):
                        a, b = t.norm(p, **kw).numpy(), c.norm(p, **kw).numpy()
                        assert a.shape == b.shape and np.array_equal(a, b), ("norm", p, a, b)
        assert set(tb.host_path_used()) == before

    def int_bool_elementwise():
        # integer floor/ceil/round (the identity), pow (square and multiply, wrapping like
        # NumPy), bool + * max min (logic), sign/abs of bools: kernels, same as the CPU
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
        for f in (tgrad.add, tgrad.mul, tgrad.maximum, tgrad.minimum):
            same(f, b1, b2)
        same(tgrad.sign, b1)
        same(tgrad.abs, b1)
        try:
            tgrad.tensor(i64, device="cuda") ** tgrad.tensor(-e - 1, device="cuda")
        except RuntimeError as err:
            assert "integers to negative integer powers" in str(err)
        else:
            raise AssertionError("no error for a negative integer power")
        assert set(tb.host_path_used()) == before

    check("grad_formulas", grad_formulas)
    check("int_bool_elementwise", int_bool_elementwise)
    check("empty_reductions", empty_reductions)
    check("int_reductions", int_reductions)
    check("pow_specials", pow_specials)
    check("split_reductions", split_reductions)
    check("floor_divide", floor_divide)
    check("runtime", runtime)
    check("interop", interop)
    check("memory", memory)
    check("tensors", tensors)
    return out


def main() -> None:
    ops, times = {}, {}
    only = os.environ.get("TGRAD_OPS")
    for spec in SPECS:
        if only and spec.name not in only.split(","):
            continue
        print(spec.name, file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            ops[spec.name] = run_spec(spec)
        except Exception:  # noqa: BLE001
            ops[spec.name] = [traceback.format_exc(limit=4)[-1200:]]
        times[spec.name] = round(time.perf_counter() - t0, 3)
    from tgrad.backends import triton as be
    res = {"ops": ops, "extra": extra_checks(), "host_path_used": be.host_path_used(),
           "seconds": times}
    print("@@RESULT@@" + json.dumps(res))


if __name__ == "__main__":
    main()
