"""tgrad/kernels/interpreter_speedups.py: ``tl.reduce`` with a custom combine function in
Triton's interpreter (a pairwise tree over whole arrays in place of the interpreter's
element-by-element loop) gives the same results as reducing the block in order, for
combine functions that are not commutative, that return tuples, and tgrad's own NaN-propagating
max and product, over one axis, both axes (axis=None) and with keep_dims; nested device calls
do not rescan triton.language. Runs in subprocesses with TRITON_INTERPRET=1."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

pytest.importorskip("triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interpreted import run_json_file  # noqa: E402

SCRIPT = textwrap.dedent('''
    import json
    import numpy as np
    import triton
    import triton.language as tl

    import tgrad
    from tgrad.kernels.launch import karg
    from tgrad.kernels.reduction import _max_nan_combine, _mul_combine

    @triton.jit
    def _first(a, b):
        return a

    @triton.jit
    def _last(a, b):
        return b

    @triton.jit
    def _argmax_left(v1, i1, v2, i2):  # larger value; a tie keeps the earlier index
        take2 = v2 > v1
        return tl.where(take2, v2, v1), tl.where(take2, i2, i1)

    @triton.jit
    def _affine(m1, c1, m2, c2):  # compose y = m1 x + c1, then m2 y + c2: associative only
        return m1 * m2, c1 * m2 + c2

    @triton.jit
    def reduce_kernel(X, FIRST, LAST, MAX, PROD, ARG, ALL_LAST, KEEP, AFFINE, R: tl.constexpr,
                      C: tl.constexpr):
        r = tl.arange(0, R)
        c = tl.arange(0, C)
        x = tl.load(X + r[:, None] * C + c[None, :])  # (R, C)
        tl.store(FIRST + r, tl.reduce(x, 1, _first))
        tl.store(LAST + r, tl.reduce(x, 1, _last))
        tl.store(MAX + c, tl.reduce(x, 0, _max_nan_combine))
        tl.store(PROD + r, tl.reduce(x, 1, _mul_combine))
        idx = tl.zeros((R, C), tl.int32) + c[None, :]
        _, arg = tl.reduce((x, idx), 1, _argmax_left)
        tl.store(ARG + r, arg)
        tl.store(ALL_LAST, tl.reduce(x, None, _last))
        k = tl.reduce(x, 1, _last, keep_dims=True)  # (R, 1)
        tl.store(KEEP + r[:, None] + tl.zeros((R, 1), tl.int32), k)
        m = (c[None, :] % 2 + 1).to(tl.float64) + tl.zeros((R, C), tl.float64)
        _, a = tl.reduce((m, x), 1, _affine)
        tl.store(AFFINE + r, a)

    R, C = 4, 16
    rng = np.random.default_rng(3)
    # powers of two (exact products), repeated maxima (ties), a NaN in column 5
    x = 2.0 ** rng.integers(-3, 4, (R, C))
    x[1, [2, 9]] = 16.0
    x[2, 5] = np.nan
    dev = lambda a: tgrad.tensor(a, device="cuda")  # noqa: E731
    outs = {k: tgrad.empty(n, dtype=d, device="cuda") for k, n, d in (
        ("first", R, tgrad.float64), ("last", R, tgrad.float64), ("max", C, tgrad.float64),
        ("prod", R, tgrad.float64), ("arg", R, tgrad.int32), ("all_last", 1, tgrad.float64),
        ("keep", R, tgrad.float64), ("affine", R, tgrad.float64))}
    reduce_kernel[(1,)](karg(dev(x)._data), *(karg(t._data) for t in outs.values()), R=R, C=C)
    got = {k: v.cpu().numpy().tolist() for k, v in outs.items()}
    big = np.where(np.isnan(x), -np.inf, x)
    affine = np.zeros(R)  # the maps composed in column order: a = a * m_j + x_j
    for j in range(C):
        affine = affine * (j % 2 + 1) + x[:, j] if j else x[:, 0]
    want = {"first": x[:, 0], "last": x[:, -1],
            "max": np.where(np.isnan(x).any(0), np.nan, x.max(0)),
            "prod": np.prod(x, 1), "arg": np.argmax(big, 1),
            "all_last": [x[-1, -1]], "keep": x[:, -1], "affine": affine}
    bad = {k: [got[k], np.asarray(w).tolist()] for k, w in want.items()
           if not np.array_equal(np.asarray(got[k], np.float64), np.asarray(w, np.float64),
                                 equal_nan=True)}
    from triton.runtime.interpreter import interpreter_builder
    if interpreter_builder.options.sanitize_overflow:  # debug is off: the checks do nothing
        bad["sanitize_overflow"] = [True, False]
    print(json.dumps(bad))
''')


def test_custom_combine_reductions_match_the_in_order_reduction(tmp_path):
    bad = run_json_file(SCRIPT, tmp_path, "reduce_kernel.py")
    assert not bad, bad


PATCH_SCRIPT = textwrap.dedent('''
    import json
    import numpy as np
    import triton
    import triton.language as tl
    from triton.runtime import interpreter

    import inspect
    scans = []
    real_getmembers = inspect.getmembers

    def counting_getmembers(obj, *args):  # the interpreter's scan of a package
        if obj in (tl, tl.tensor, tl.math, tl.core, tl.core.tensor):
            scans.append(obj.__name__)
        return real_getmembers(obj, *args)
    builtins_before = {p.__name__: [n for n, m in inspect.getmembers(p)
                                    if tl.core.is_builtin(m)]
                       for p in (tl, tl.tensor, tl.math, tl.core)}

    import tgrad
    from tgrad.kernels.launch import karg

    @triton.jit
    def _twice(x):
        return x * 2

    @triton.jit
    def nested_kernel(X, OUT, CALLS: tl.constexpr, N: tl.constexpr):
        x = tl.load(X + tl.arange(0, N))
        acc = tl.zeros([N], tl.float64)
        for _ in tl.static_range(CALLS):  # nested device calls: _twice and tl.sum (a jit
            acc += _twice(x) + tl.sum(x, 0)  # function of triton.language.standard)
        tl.store(OUT + tl.arange(0, N), acc)

    x = np.arange(8.0)
    dev = tgrad.tensor(x, device="cuda")
    out = tgrad.empty(8, dtype=tgrad.float64, device="cuda")
    nested_kernel[(1,)](karg(dev._data), karg(out._data), CALLS=1, N=8)  # (installs)
    inspect.getmembers = counting_getmembers
    per_launch = []
    for calls in (1, 30, 30):
        scans.clear()
        nested_kernel[(1,)](karg(dev._data), karg(out._data), CALLS=calls, N=8)
        per_launch.append(len(scans))
        assert np.array_equal(out.cpu().numpy(), calls * (2 * x + x.sum())), calls
    inspect.getmembers = real_getmembers
    after = {p.__name__: [n for n, m in inspect.getmembers(p) if tl.core.is_builtin(m)]
             for p in (tl, tl.tensor, tl.math, tl.core)}
    # (tl.core stays patched: Triton itself never restores a nested call's patches)
    print(json.dumps({"scans": per_launch,
                      "restored": all(after[k] == builtins_before[k] for k in
                                      ("triton.language", "tensor", "triton.language.math"))}))
''')


def test_nested_jit_calls_scan_each_language_package_once_per_launch(tmp_path):
    """Speedup 3: no launch or nested device call (a helper, or tl.sum, itself a jit
    function) rescans triton.language's packages (their builtins are listed once; without
    it: 16 scans a launch, 248 with 30 nested calls); results are unchanged, and each
    launch's end restores triton.language's builtins."""
    r = run_json_file(PATCH_SCRIPT, tmp_path, "nested_kernel.py")
    assert r["scans"] == [0, 0, 0], r["scans"]
    assert r["restored"], r
