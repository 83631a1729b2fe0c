"""Host time of the GPU backend's advanced indexing (issue 5), measurable without a GPU:
tgrad/backends/_triton_index.py's wrappers with the kernel launch, the host-to-device
copies and the allocation replaced by no-ops, so only the host's share of the work is
timed: the device paths (gather_nd: offsets on the device; index_add / index_put_ with
host index arrays: the host sorts NB index tuples' targets) against the host-offset paths
they replace (NB * NS int64 offsets built and sorted on the host).

    python perf/bench_index_host.py          # table + perf/out/bench_index_host.json

Cases: an embedding lookup W[idx] (W 50000 x 768 float32, 4096 indices with repeats) and a
column pick X[:, idx] (X 4096 x 1024, 256 indices). The GPU's own time (the kernels and
copies) comes on top; perf/bench_gpu.py measures the gathers on a GPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
import _report  # noqa: E402
from tabulate import tabulate  # noqa: E402

from tgrad.backends import _triton_index as tix  # noqa: E402
from tgrad.cuda.array import DeviceArray, contiguous_strides  # noqa: E402


def _arr(shape: tuple, dtype=np.float32) -> DeviceArray:
    shape = tuple(shape)
    return DeviceArray(SimpleNamespace(ptr=4096), shape, contiguous_strides(shape), 0,
                       np.dtype(dtype))


class _StubBackend:
    """What the wrappers call on tgrad.backends.triton, minus the device work."""

    @staticmethod
    def empty(shape, dtype):
        return _arr(shape, dtype)

    @staticmethod
    def from_host(a):
        return _arr(np.shape(a), np.asarray(a).dtype)

    def __getattr__(self, name):
        import tgrad.backends.triton as tb  # views (basic_index, expand, permute) are host-only
        return getattr(tb, name)


def _install_stubs() -> None:
    stub = _StubBackend()
    tix._tb = lambda: stub
    tix.launch = lambda *a, **k: None
    for name in ("fill_", "copy_", "clone", "contiguous", "cast"):
        setattr(_StubBackend, name, staticmethod(lambda x, *a: x))


def _by_host_offsets(fn):
    """``fn`` run with the writers' index-tuple split refused: the host-offset path."""
    def run():
        split, tix._split = tix._split, lambda x, key: None
        try:
            return fn()
        finally:
            tix._split = split
    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = ap.parse_args(argv)
    _install_stubs()
    rng = np.random.default_rng(0)
    w, idx = _arr((50000, 768)), rng.integers(0, 50000, 4096)
    x, cols = _arr((4096, 1024)), rng.integers(0, 1024, 256)
    g_w, g_x = _arr((4096, 768)), _arr((4096, 256))
    cases = [
        ("W[idx] gather", lambda: tix.gather(w, (idx,)),
         lambda: tix._gather_offsets(w, (idx,))),
        ("W[idx] index_add (backward)", lambda: tix.index_add(w.shape, w.dtype, (idx,), g_w),
         _by_host_offsets(lambda: tix.index_add(w.shape, w.dtype, (idx,), g_w))),
        ("W[idx] = v index_put_", lambda: tix.index_put_(w, (idx,), g_w),
         _by_host_offsets(lambda: tix.index_put_(w, (idx,), g_w))),
        ("X[:, idx] gather", lambda: tix.gather(x, (slice(None), cols)),
         lambda: tix._gather_offsets(x, (slice(None), cols))),
        ("X[:, idx] index_add (backward)",
         lambda: tix.index_add(x.shape, x.dtype, (slice(None), cols), g_x),
         _by_host_offsets(lambda: tix.index_add(x.shape, x.dtype, (slice(None), cols), g_x))),
    ]
    rows = []
    for name, new, old in cases:
        t_new = [t * 1e3 for t in timeit.repeat(new, number=1, repeat=args.repeat)]
        t_old = [t * 1e3 for t in timeit.repeat(old, number=1, repeat=args.repeat)]
        rows.append({"case": name, "device_path_ms": statistics.median(t_new),
                     "host_offsets_ms": statistics.median(t_old)})
    print(tabulate([[r["case"], f"{r['device_path_ms']:.3f}", f"{r['host_offsets_ms']:.1f}",
                     f"{r['host_offsets_ms'] / r['device_path_ms']:.0f}x"] for r in rows],
                   headers=["case", "device path host ms", "host offsets ms", "ratio"]))
    command = " ".join(["python", "perf/bench_index_host.py"]
                       + (argv if argv is not None else sys.argv[1:]))
    report = dict(_report.header("tgrad-bench-index-host/1", command),
                  python=sys.version.split()[0], numpy=np.__version__, results=rows)
    _report.save(report, args.out, "bench_index_host.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
