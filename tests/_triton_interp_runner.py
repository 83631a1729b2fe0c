"""Run in a subprocess with TRITON_INTERPRET=1 by tests/test_triton_ops.py: every OpSpec of
the op table on device "cuda" (Triton's interpreter over host memory) against the NumPy
backend (device "cpu"), forward and backward, in the dtypes of TGRAD_DTYPES (default float32
and float64), with the table's odd
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

import device_checks  # noqa: E402
import kernel_specs  # noqa: E402
import numpy as np  # noqa: E402
import op_db  # noqa: E402

import tgrad  # noqa: E402

kernel_specs.record_if_asked()  # for tests/test_triton_aot_specs.py

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

    # TGRAD_CHECK_SHARE="i/n": this process runs every n-th kernel check from the i-th (the
    # float32 and float64 runners split them; each check fixes its own dtypes)
    share, of = (int(v) for v in os.environ.get("TGRAD_CHECK_SHARE", "0/1").split("/"))
    for k, (name, fn) in enumerate(device_checks.CHECKS.items()):
        if k % of == share:
            check(name, fn)
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
    extra = extra_checks() if os.environ.get("TGRAD_EXTRA_CHECKS", "1") != "0" else {}
    res = {"ops": ops, "extra": extra, "host_path_used": be.host_path_used(),
           "seconds": times}
    print("@@RESULT@@" + json.dumps(res))


if __name__ == "__main__":
    main()
