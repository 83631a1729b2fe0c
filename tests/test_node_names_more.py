"""PyTorch's autograd graphs of ops that tgrad composed from other parts: matmul / linear
of >= 3-D operands (PyTorch folds them into one mm / mv), diag, roll, vdot, kron, the
*_scatter ops, cdist, matrix_exp, vector_norm(ord=0), adaptive_avg_pool to one element.
The expected node names were read from PyTorch 2.14 (grad_fn.name() and next_functions,
float64 inputs requiring grad); values and gradients are checked against NumPy float64 and
gradcheck / gradgradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

nnf = tgrad.nn.functional


def _chain(t) -> str:
    """grad_fn's graph as Name(child, ...) down to the leaves (AccumulateGrad; None for a
    missing edge)."""
    def walk(node):
        if node is None:
            return "None"
        kids = [walk(n) for n, _ in node.next_functions]
        return node.name() + (f"({', '.join(kids)})" if kids else "")
    return walk(t.grad_fn)


def _t(a, grad=True):
    return tgrad.tensor(a, dtype=tgrad.float64, requires_grad=grad)


_R = np.random.default_rng(11)


def _n(*shape):
    return _R.standard_normal(shape)


A = "AccumulateGrad"
# (case, f building the output, PyTorch 2.14's graph)
_FOLD_CASES = [
    ("3d@2d", lambda: tgrad.matmul(_t(_n(2, 3, 4)), _t(_n(4, 5))),
     f"UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), {A}))"),
    ("4d@2d", lambda: tgrad.matmul(_t(_n(2, 2, 3, 4)), _t(_n(4, 5))),
     f"UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), {A}))"),
    ("3d@1d", lambda: tgrad.matmul(_t(_n(2, 3, 4)), _t(_n(4))),
     f"UnsafeViewBackward0(MvBackward0(ViewBackward0({A}), {A}))"),
    ("3d@2d_no_grad_b", lambda: _t(_n(2, 3, 4)) @ _t(_n(4, 5), False),
     f"UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), None))"),
    ("3d@1d_no_grad_b", lambda: _t(_n(2, 3, 4)) @ _t(_n(4), False),
     f"UnsafeViewBackward0(MvBackward0(ViewBackward0({A}), None))"),
    ("4d@2d_no_grad_a", lambda: _t(_n(2, 2, 3, 4), False) @ _t(_n(4, 5)),
     f"UnsafeViewBackward0(MmBackward0(None, {A}))"),
    ("empty", lambda: tgrad.matmul(_t(_n(2, 0, 4)), _t(_n(4, 5))),
     f"UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), {A}))"),
    ("linear_3d", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(5, 4)), _t(_n(5))),
     f"ViewBackward0(AddmmBackward0({A}, ViewBackward0({A}), TBackward0({A})))"),
    ("linear_4d", lambda: nnf.linear(_t(_n(2, 2, 3, 4)), _t(_n(5, 4)), _t(_n(5))),
     f"ViewBackward0(AddmmBackward0({A}, ViewBackward0({A}), TBackward0({A})))"),
    ("linear_3d_no_grad_bias", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(5, 4)),
                                                  _t(_n(5), False)),
     f"ViewBackward0(AddmmBackward0(None, ViewBackward0({A}), TBackward0({A})))"),
    ("linear_3d_nobias", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(5, 4))),
     f"UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), TBackward0({A})))"),
    ("linear_3d_0d_bias", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(5, 4)), _t(_n())),
     f"AddBackward0(UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), TBackward0({A}))), "
     f"{A})"),
    ("linear_4d_0d_bias", lambda: nnf.linear(_t(_n(2, 2, 3, 4)), _t(_n(5, 4)), _t(_n())),
     f"AddBackward0(UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), TBackward0({A}))), "
     f"{A})"),
    ("linear_3d_1d_weight", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(4))),
     f"UnsafeViewBackward0(MvBackward0(ViewBackward0({A}), TBackward0({A})))"),
    ("linear_3d_1d_weight_bias", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(4)), _t(_n())),
     f"AddBackward0(UnsafeViewBackward0(MvBackward0(ViewBackward0({A}), TBackward0({A}))), "
     f"{A})"),
    ("linear_2d_1d_weight", lambda: nnf.linear(_t(_n(3, 4)), _t(_n(4))),
     f"MvBackward0({A}, TBackward0({A}))"),
]


@pytest.mark.parametrize("case,f,graph", _FOLD_CASES, ids=[c[0] for c in _FOLD_CASES])
def test_matmul_and_linear_fold_as_pytorchs(case, f, graph):
    assert _chain(f()) == graph


def test_folded_matmul_and_linear_values_and_gradients():
    # a (..., n, k) @ b (k, p) folded: (rows, k) @ (k, p); da = g b^T, db = sum over the
    # batch of a^T g (one product of the folded operands); 2-D / 1-D @ >= 3-D folds b^T
    # when a requires grad (a transposed, the result transposed back)
    shapes = [((2, 3, 4), (4, 5)), ((2, 2, 3, 4), (4,)), ((4,), (2, 4, 3)),
              ((3, 4), (2, 4, 5)), ((2, 0, 4), (4, 5))]
    for sa, sb in shapes:
        a, b = _n(*sa), _n(*sb)
        ta, tb = _t(a), _t(b)
        y = tgrad.matmul(ta, tb)
        assert y.grad_fn.name() in ("UnsafeViewBackward0", "CloneBackward0")
        assert y.is_contiguous() and y._base is None
        np.testing.assert_allclose(y.detach().numpy(), np.matmul(a, b), rtol=1e-13)
        g = _n(*np.matmul(a, b).shape)
        ga, gb = tgrad.autograd.grad(y, (ta, tb), tgrad.tensor(g))
        # reference: the gradients of sum(g * (a @ b)) by NumPy's own products
        a2 = a if a.ndim > 1 else a[None]
        b2 = b if b.ndim > 1 else b[:, None]
        g2 = g.reshape(np.matmul(a2, b2).shape)
        ref_a = np.matmul(g2, np.swapaxes(b2, -1, -2))
        ref_b = np.matmul(np.swapaxes(a2, -1, -2), g2)
        ref_a = ref_a.reshape(-1, *a.shape).sum(0) if ref_a.ndim > a2.ndim else ref_a
        ref_b = ref_b.reshape(-1, *b2.shape).sum(0) if ref_b.ndim > b2.ndim else ref_b
        np.testing.assert_allclose(ga.numpy(), ref_a.reshape(a.shape), rtol=1e-13,
                                   atol=1e-14)
        np.testing.assert_allclose(gb.numpy(), ref_b.reshape(b.shape), rtol=1e-13,
                                   atol=1e-14)
        if a.size and b.size:
            assert gradcheck(tgrad.matmul, (_t(a), _t(b)))
            assert gradgradcheck(tgrad.matmul, (_t(a), _t(b)))
    x, w, bias = _n(2, 3, 4), _n(5, 4), _n(5)
    for bb in (bias, None):
        y = nnf.linear(_t(x), _t(w), None if bb is None else _t(bb))
        ref = x @ w.T + (0 if bb is None else bb)
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-13)
        args = (_t(x), _t(w)) + (() if bb is None else (_t(bb),))
        assert gradcheck(nnf.linear, args) and gradgradcheck(nnf.linear, args)
    # the folded result is a new tensor: writing into it leaves the operands alone
    ta = _t(x)
    y = nnf.linear(ta, _t(w))
    y.add_(1.0)
    np.testing.assert_array_equal(ta.detach().numpy(), x)
