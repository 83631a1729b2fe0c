"""Hypothesis fuzzing: random small op graphs (random shapes, broadcasting, views).

Each drawn graph is a list of instructions interpreted twice: with tgrad (float64, leaves
requiring grad) and with NumPy float64. The forward values must agree, and every leaf's
gradient of ``sum(w * out)`` must match central finite differences of the NumPy
evaluation (an oracle that shares no code with tgrad's autograd).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tgrad


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# name: (tgrad fn, NumPy fn). Inputs are kept in the ops' smooth domains by construction
# (log/sqrt only ever see x^2 + 1; division by y^2 + 1).
UNARY = {
    "neg": (lambda x: -x, np.negative),
    "sin": (tgrad.sin, np.sin),
    "cos": (tgrad.cos, np.cos),
    "tanh": (tgrad.tanh, np.tanh),
    "sigmoid": (tgrad.sigmoid, lambda x: 1.0 / (1.0 + np.exp(-x))),
    "erf": (tgrad.erf, _np_erf),
    "square": (tgrad.square, np.square),
    "exp_tanh": (lambda x: tgrad.exp(tgrad.tanh(x)), lambda x: np.exp(np.tanh(x))),
    "log_sq1": (lambda x: tgrad.log(x * x + 1.0), lambda x: np.log(x * x + 1.0)),
    "sqrt_sq1": (lambda x: tgrad.sqrt(tgrad.square(x) + 1), lambda x: np.sqrt(x * x + 1)),
    "rsub": (lambda x: 1.5 - x, lambda x: 1.5 - x),
    "pow3": (lambda x: x ** 3, lambda x: x ** 3),
    "clamp": (lambda x: x.clamp(-0.7, 0.9), lambda x: np.clip(x, -0.7, 0.9)),
    "sinh": (tgrad.sinh, np.sinh),
    "log2_sq1": (lambda x: tgrad.log2(x * x + 1.0), lambda x: np.log2(x * x + 1.0)),
    "atan": (tgrad.atan, np.arctan),
    "asin_tanh": (lambda x: tgrad.asin(tgrad.tanh(x) * 0.9), lambda x: np.arcsin(np.tanh(x) * 0.9)),
    "cumsum_last": (lambda x: x.cumsum(-1) if x.ndim else x,
                    lambda x: np.cumsum(x, -1) if x.ndim else x),
}
BINARY = {
    "add": (tgrad.add, np.add),
    "sub": (tgrad.sub, np.subtract),
    "mul": (tgrad.mul, np.multiply),
    "div_sq1": (lambda a, b: a / (b * b + 1.0), lambda a, b: a / (b * b + 1.0)),
    "maximum": (tgrad.maximum, np.maximum),
    "minimum": (tgrad.minimum, np.minimum),
    "pow_pos": (lambda a, b: (a * a + 0.5) ** b, lambda a, b: (a * a + 0.5) ** b),
    "where": (lambda a, b: tgrad.where(a > b, a * 2.0, b),
              lambda a, b: np.where(a > b, a * 2.0, b)),
    "lerp": (lambda a, b: tgrad.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a)),
    # b^2 + 1 > 0: away from atan2's branch cut (b < 0, a = 0) and the origin
    "atan2_sq1": (lambda a, b: tgrad.atan2(a, b * b + 1.0),
                  lambda a, b: np.arctan2(a, b * b + 1.0)),
}


def _np_lse(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCE = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda x, d, k: np.sum(x, d, keepdims=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda x, d, k: np.mean(x, d, keepdims=k)),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), lambda x, d, k: np.max(x, d, keepdims=k)),
    "prod": (lambda x, d, k: x.prod(d, keepdim=k), lambda x, d, k: np.prod(x, d, keepdims=k)),
    "logsumexp": (lambda x, d, k: tgrad.logsumexp(x, d, keepdim=k), _np_lse),
    # the vector 2-norm over any dims (torch.norm's 'fro' refuses more than two)
    "norm": (lambda x, d, k: tgrad.linalg.vector_norm(x, 2, d, keepdim=k),
             lambda x, d, k: np.sqrt(np.sum(x * x, d, keepdims=k))),
    "var": (lambda x, d, k: x.var(d, keepdim=k, correction=0),
            lambda x, d, k: np.var(x, d, keepdims=k)),
}
VIEWS = {
    "T": (lambda x: x.transpose(-1, -2), lambda x: np.swapaxes(x, -1, -2)),
    "slice": (lambda x: x[..., ::2], lambda x: x[..., ::2]),
    "unsqueeze": (lambda x: x.unsqueeze(0), lambda x: x[None]),
    "expand": (lambda x: x.expand((2,) + tuple(x.shape)),
               lambda x: np.broadcast_to(x, (2,) + x.shape)),
}


def _view_ok(kind: str, shape: tuple) -> bool:
    if kind == "T":
        return len(shape) >= 2
    if kind == "slice":
        return len(shape) >= 1 and shape[-1] >= 2
    return len(shape) < 4


def _view_shape(kind: str, shape: tuple) -> tuple:
    return VIEWS[kind][1](np.empty(shape)).shape


@st.composite
def graphs(draw):
    """(leaf arrays, instructions, weights for the final output)."""
    nd = draw(st.integers(0, 3))
    base = tuple(draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd)))
    n_leaves = draw(st.integers(1, 3))
    leaf_shapes = []
    for _ in range(n_leaves):
        # a broadcast-compatible variant of the base shape: drop leading dims, set some to 1
        drop = draw(st.integers(0, len(base)))
        shape = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else s
                      for s in base[drop:])
        leaf_shapes.append(shape)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    leaves = [rng.standard_normal(s) for s in leaf_shapes]
    shapes = list(leaf_shapes)
    prog = []
    for _ in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "view", "reduce"]))
        # mostly chain on the newest value, so that most instructions reach the output
        src = len(shapes) - 1 if draw(st.integers(0, 3)) else draw(
            st.integers(0, len(shapes) - 1))
        s = shapes[src]
        if kind == "unary":
            prog.append(("unary", draw(st.sampled_from(sorted(UNARY))), src))
            shapes.append(s)
        elif kind == "binary":
            other = draw(st.integers(0, len(shapes) - 1))
            try:
                out = np.broadcast_shapes(s, shapes[other])
            except ValueError:
                continue
            if math.prod(out) > 24:
                continue
            prog.append(("binary", draw(st.sampled_from(sorted(BINARY))), src, other))
            shapes.append(out)
        elif kind == "view":
            v = draw(st.sampled_from(sorted(VIEWS)))
            if not _view_ok(v, s) or (v == "expand" and 2 * math.prod(s) > 24):
                continue
            prog.append(("view", v, src))
            shapes.append(_view_shape(v, s))
        else:
            if not s or 0 in s:
                continue
            name = draw(st.sampled_from(sorted(REDUCE)))
            axes = sorted(draw(st.sets(st.integers(0, len(s) - 1), min_size=1)))
            dims = [d - len(s) if draw(st.booleans()) else d for d in axes]  # negatives too
            keep = draw(st.booleans())
            dim = tuple(dims) if len(dims) > 1 else dims[0]
            prog.append(("reduce", name, src, dim, keep))
            shapes.append(np.sum(np.empty(s), axis=dim, keepdims=keep).shape)
    weights = rng.standard_normal(shapes[-1])
    return leaves, prog, weights


def _run(prog, leaves, lib: int):
    """Interpret ``prog``; lib 0 = tgrad, 1 = NumPy. Returns the last value."""
    vals = list(leaves)
    for ins in prog:
        if ins[0] == "unary":
            vals.append(UNARY[ins[1]][lib](vals[ins[2]]))
        elif ins[0] == "binary":
            vals.append(BINARY[ins[1]][lib](vals[ins[2]], vals[ins[3]]))
        elif ins[0] == "view":
            vals.append(VIEWS[ins[1]][lib](vals[ins[2]]))
        else:
            _, name, src, dim, keep = ins
            vals.append(REDUCE[name][lib](vals[src], dim, keep))
    return vals[-1]


def _np_loss(prog, arrays, weights) -> float:
    return float(np.sum(weights * _run(prog, arrays, 1)))


@settings(max_examples=100, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graph_forward_and_gradients(case):
    leaves, prog, weights = case
    ts = [tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True) for a in leaves]
    out = _run(prog, ts, 0)
    with np.errstate(all="ignore"):
        ref = np.asarray(_run(prog, leaves, 1))
    assert tuple(out.shape) == ref.shape, prog
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12,
                               err_msg=str(prog))
    if not np.all(np.isfinite(ref)):
        return
    loss = (out * tgrad.tensor(weights)).sum()
    grads = tgrad.autograd.grad(loss, ts, allow_unused=True)
    eps = 1e-6
    for i, (a, g) in enumerate(zip(leaves, grads)):
        num = np.zeros(a.shape)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in leaves]
            minus = [x.copy() for x in leaves]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            num[idx] = (_np_loss(prog, plus, weights) - _np_loss(prog, minus, weights)) / (2 * eps)
        got = np.zeros(a.shape) if g is None else g.numpy()
        assert got.shape == a.shape, (prog, i)
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6,
                                   err_msg=f"gradient of leaf {i}, program {prog}")


# ------------------------------------------------------------ the same graphs on cuda
# The drawn graphs run on the cuda device emulated by Triton's interpreter (every op through
# its kernels, views read in place) and on the CPU backend: values and every leaf gradient
# must agree to float64 rounding. The CPU side is the oracle (checked against NumPy and
# finite differences above). A fresh process, since interpreter mode is read at import; its
# kernel specializations are recorded for tests/test_triton_aot_specs.py's sm_90 compiles.
CUDA_EXAMPLES = 200

_CUDA_SCRIPT = f"""
import json, sys
import numpy as np
from hypothesis import HealthCheck, given, settings
sys.path.insert(0, {__file__.rsplit('/', 1)[0]!r})
import kernel_specs
kernel_specs.record_if_asked()
import tgrad
import test_fuzz as tf

seen = []

@settings(max_examples={CUDA_EXAMPLES}, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(tf.graphs())
def check(case):
    leaves, prog, weights = case
    results = []
    for dev in ("cpu", "cuda"):
        ts = [tgrad.tensor(a, dtype=tgrad.float64, device=dev, requires_grad=True)
              for a in leaves]
        out = tf._run(prog, ts, 0)
        loss = (out * tgrad.tensor(weights, device=dev)).sum()
        grads = tgrad.autograd.grad(loss, ts, allow_unused=True)
        results.append((out.detach().cpu().numpy(),
                        [None if g is None else g.cpu().numpy() for g in grads]))
    (o_cpu, g_cpu), (o_gpu, g_gpu) = results
    assert o_gpu.shape == o_cpu.shape, prog
    np.testing.assert_allclose(o_gpu, o_cpu, rtol=1e-12, atol=1e-12, err_msg=str(prog))
    for i, (a, b) in enumerate(zip(g_gpu, g_cpu)):
        assert (a is None) == (b is None), (prog, i)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12,
                                       err_msg=f"gradient of leaf {{i}}, program {{prog}}")
    seen.append(len(prog))

with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
    check()
print(json.dumps({{"examples": len(seen), "instructions": sum(seen)}}))
"""


def test_random_graphs_on_interpreted_cuda_match_cpu():
    import pytest
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel_specs
    from interpreted import run_json
    old = os.environ.get(kernel_specs.ENV)
    os.environ[kernel_specs.ENV] = kernel_specs.recording_env({}, "fuzz_cuda")[
        kernel_specs.ENV]
    try:
        res = run_json(_CUDA_SCRIPT, timeout=900)
    finally:
        if old is None:
            os.environ.pop(kernel_specs.ENV)
        else:
            os.environ[kernel_specs.ENV] = old
    assert res["examples"] >= CUDA_EXAMPLES // 2 and res["instructions"] > 0, res
