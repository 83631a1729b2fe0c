"""PyTorch's autograd graphs of ops that tgrad composed from other parts: matmul / linear
of >= 3-D operands (PyTorch folds them into one mm / mv), diag, roll, vdot, kron, the
*_scatter ops, cdist, matrix_exp, vector_norm(ord=0), adaptive_avg_pool to one element.
The expected node names were read from PyTorch 2.14 (grad_fn.name() and next_functions,
float64 inputs requiring grad); values and gradients are checked against NumPy float64 and
gradcheck / gradgradcheck."""

from __future__ import annotations

import math

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
    dt = tgrad.complex128 if np.iscomplexobj(a) else tgrad.float64
    return tgrad.tensor(a, dtype=dt, requires_grad=grad)


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
    ("3d@3d", lambda: tgrad.matmul(_t(_n(2, 3, 4)), _t(_n(2, 4, 5))),
     f"UnsafeViewBackward0(BmmBackward0(ViewBackward0(ExpandBackward0({A})), "
     f"ViewBackward0(ExpandBackward0({A}))))"),
    ("4d@4d", lambda: tgrad.matmul(_t(_n(2, 2, 3, 4)), _t(_n(2, 2, 4, 5))),
     f"UnsafeViewBackward0(BmmBackward0(ViewBackward0(ExpandBackward0({A})), "
     f"ViewBackward0(ExpandBackward0({A}))))"),
    ("3d@3d_no_grad_b", lambda: tgrad.matmul(_t(_n(2, 3, 4)), _t(_n(1, 4, 5), False)),
     f"UnsafeViewBackward0(BmmBackward0(ViewBackward0(ExpandBackward0({A})), None))"),
    ("1d@3d_no_grad_a", lambda: tgrad.matmul(_t(_n(4), False), _t(_n(2, 4, 3))),
     f"UnsafeViewBackward0(BmmBackward0(None, ViewBackward0(ExpandBackward0({A}))))"),
    ("2d@3d_no_grad_a", lambda: tgrad.matmul(_t(_n(3, 4), False), _t(_n(2, 4, 5))),
     f"UnsafeViewBackward0(BmmBackward0(None, ViewBackward0(ExpandBackward0({A}))))"),
    # a 3-D batch of one that requires grad is squeezed and folded (PyTorch 2.14)
    ("3d@3d_batch_1", lambda: tgrad.matmul(_t(_n(2, 3, 4)), _t(_n(1, 4, 5))),
     f"UnsafeViewBackward0(MmBackward0(ViewBackward0({A}), SqueezeBackward1({A})))"),
    ("3d@3d_batch_1_no_grad_a", lambda: tgrad.matmul(_t(_n(2, 3, 4), False), _t(_n(1, 4, 5))),
     f"UnsafeViewBackward0(MmBackward0(None, SqueezeBackward1({A})))"),
    ("3d_batch_1@3d_no_grad_b", lambda: tgrad.matmul(_t(_n(1, 3, 4)), _t(_n(2, 4, 5), False)),
     f"CloneBackward0(TransposeBackward0(UnsafeViewBackward0(MmBackward0(None, "
     f"TBackward0(SqueezeBackward1({A}))))))"),
    ("3d_batch_1@3d_batch_1", lambda: tgrad.matmul(_t(_n(1, 3, 4)), _t(_n(1, 4, 5))),
     f"UnsafeViewBackward0(BmmBackward0(ViewBackward0(ExpandBackward0({A})), "
     f"ViewBackward0(ExpandBackward0({A}))))"),
    ("4d@3d_batch_1", lambda: tgrad.matmul(_t(_n(2, 2, 3, 4)), _t(_n(1, 4, 5))),
     f"UnsafeViewBackward0(BmmBackward0(ViewBackward0(ExpandBackward0({A})), "
     f"ReshapeAliasBackward0(ExpandBackward0({A}))))"),
    # reshapes that copy (PyTorch: UnsafeViewBackward0 over CloneBackward0)
    ("3d_transposed@2d", lambda: tgrad.matmul(_t(_n(3, 2, 4)).transpose(0, 1), _t(_n(4, 5))),
     f"UnsafeViewBackward0(MmBackward0(UnsafeViewBackward0(CloneBackward0("
     f"TransposeBackward0({A}))), {A}))"),
    ("1d@3d", lambda: tgrad.matmul(_t(_n(4)), _t(_n(2, 4, 3))),
     f"UnsafeViewBackward0(MvBackward0(UnsafeViewBackward0(CloneBackward0("
     f"TransposeBackward0({A}))), {A}))"),
    # deliberate difference: PyTorch 2.14 copies both operands to the full batch,
    # UnsafeViewBackward0(BmmBackward0(UnsafeViewBackward0(CloneBackward0(ExpandBackward0(
    # a))), the same for b)); tgrad reads the broadcast batch in place in one bmm node
    ("4d@4d_broadcast", lambda: tgrad.matmul(_t(_n(2, 1, 3, 4)), _t(_n(1, 2, 4, 5))),
     f"BmmBackward0({A}, {A})"),
    ("3d_transposed@3d", lambda: tgrad.matmul(_t(_n(3, 2, 4)).transpose(0, 1),
                                              _t(_n(2, 4, 5))),
     f"UnsafeViewBackward0(BmmBackward0(ReshapeAliasBackward0(ExpandBackward0("
     f"TransposeBackward0({A}))), ViewBackward0(ExpandBackward0({A}))))"),
    ("linear_3d", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(5, 4)), _t(_n(5))),
     f"ViewBackward0(AddmmBackward0({A}, ViewBackward0({A}), TBackward0({A})))"),
    ("linear_4d", lambda: nnf.linear(_t(_n(2, 2, 3, 4)), _t(_n(5, 4)), _t(_n(5))),
     f"ViewBackward0(AddmmBackward0({A}, ViewBackward0({A}), TBackward0({A})))"),
    ("linear_3d_no_grad_bias", lambda: nnf.linear(_t(_n(2, 3, 4)), _t(_n(5, 4)),
                                                  _t(_n(5), False)),
     f"ViewBackward0(AddmmBackward0(None, ViewBackward0({A}), TBackward0({A})))"),
    ("linear_3d_transposed", lambda: nnf.linear(_t(_n(3, 2, 4)).transpose(0, 1),
                                                _t(_n(5, 4)), _t(_n(5))),
     f"AddBackward0(UnsafeViewBackward0(MmBackward0(UnsafeViewBackward0(CloneBackward0("
     f"TransposeBackward0({A}))), TBackward0({A}))), {A})"),
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


def test_batched_matmul_without_a_graph_is_one_product():
    # nothing to record (no_grad, or no operand requiring grad): one bmm over the broadcast
    # batch, without PyTorch's views around it: the same bits as the recorded graph's
    shapes = [((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (1, 4, 5)), ((2, 2, 3, 4), (2, 2, 4, 5)),
              ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (1, 2, 4, 5)),
              ((0, 3, 4), (0, 4, 2)), ((3, 17, 9), (3, 9, 33))]
    for dt in (tgrad.float32, tgrad.float64):
        for sa, sb in shapes:
            a, b = _n(*sa), _n(*sb)
            ta = tgrad.tensor(a, dtype=dt, requires_grad=True)
            if b.ndim > 1:  # (a strided operand)
                tb = tgrad.tensor(np.swapaxes(b, -1, -2).copy(), dtype=dt,
                                  requires_grad=True).transpose(-1, -2)
            else:
                tb = tgrad.tensor(b, dtype=dt, requires_grad=True)
            recorded = tgrad.matmul(ta, tb)
            with tgrad.no_grad():
                plain = tgrad.matmul(ta, tb)
            for y in (plain, tgrad.matmul(ta.detach(), tb.detach())):
                assert y.grad_fn is None and y._base is None and y.is_contiguous()
                assert y.shape == recorded.shape and y.dtype is dt
                assert y.numpy().tobytes() == recorded.detach().numpy().tobytes(), (sa, sb)


def _np_sum_to(x: np.ndarray, shape: tuple) -> np.ndarray:
    """x summed over the dims that broadcasting added to ``shape`` (NumPy reference)."""
    x = x.sum(tuple(range(x.ndim - len(shape))))
    return x.sum(tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1),
                 keepdims=True)


def test_folded_matmul_and_linear_values_and_gradients():
    # a (..., n, k) @ b (k, p) folded: (rows, k) @ (k, p); da = g b^T, db = sum over the
    # batch of a^T g (one product of the folded operands); 2-D / 1-D @ >= 3-D folds b^T
    # when a requires grad (a transposed, the result transposed back)
    shapes = [((2, 3, 4), (4, 5)), ((2, 2, 3, 4), (4,)), ((4,), (2, 4, 3)),
              ((3, 4), (2, 4, 5)), ((2, 0, 4), (4, 5)),
              # not folded (both >= 3-D): bmm of the expanded, reshaped operands (views)...
              ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)), ((1, 3, 4), (2, 4, 5)),
              # ...or, where those would be copies, one bmm over the broadcast batch
              ((2, 1, 3, 4), (1, 2, 4, 5)), ((3, 1, 2, 4), (2, 4, 1))]
    for sa, sb in shapes:
        a, b = _n(*sa), _n(*sb)
        ta, tb = _t(a), _t(b)
        y = tgrad.matmul(ta, tb)
        in_place = sa[:-2] != sb[:-2] and 1 not in (math.prod(sa[:-2]), math.prod(sb[:-2]))
        assert y.grad_fn.name() == "BmmBackward0" if in_place else \
            y.grad_fn.name() in ("UnsafeViewBackward0", "CloneBackward0"), (sa, sb)
        assert y.grad_fn.name() == "CloneBackward0" or y._base is None
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
        ref_a, ref_b = _np_sum_to(ref_a, a2.shape), _np_sum_to(ref_b, b2.shape)
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


_ONE_NODE_CASES = [
    ("diag_1d", lambda: tgrad.diag(_t(_n(3))), f"DiagEmbedBackward0({A})"),
    ("diag_1d_offset", lambda: tgrad.diag(_t(_n(3)), 1), f"DiagEmbedBackward0({A})"),
    ("diag_2d", lambda: tgrad.diag(_t(_n(3, 4))), f"DiagonalBackward0_copy({A})"),
    ("diag_2d_offset", lambda: tgrad.diag(_t(_n(3, 4)), -1), f"DiagonalBackward0_copy({A})"),
    ("diag_embed", lambda: tgrad.diag_embed(_t(_n(2, 3)), 1, 0, 2), f"DiagEmbedBackward0({A})"),
    ("roll", lambda: tgrad.roll(_t(_n(3, 4)), 1, 0), f"RollBackward0({A})"),
    ("roll_flat", lambda: tgrad.roll(_t(_n(3, 4)), 2), f"RollBackward0({A})"),
    ("roll_2", lambda: tgrad.roll(_t(_n(3, 4)), (1, 2), (0, 1)), f"RollBackward0({A})"),
    ("roll_0", lambda: tgrad.roll(_t(_n(3, 4)), 0, 1), f"RollBackward0({A})"),
    ("vdot", lambda: tgrad.vdot(_t(_n(3)), _t(_n(3))), f"VdotBackward0({A}, {A})"),
    ("kron", lambda: tgrad.kron(_t(_n(2, 3)), _t(_n(3, 2))),
     f"UnsafeViewBackward0(MulBackward0(UnsafeViewBackward0({A}), UnsafeViewBackward0({A})))"),
    ("kron_1d", lambda: tgrad.kron(_t(_n(2)), _t(_n(3))),
     f"UnsafeViewBackward0(MulBackward0(UnsafeViewBackward0({A}), UnsafeViewBackward0({A})))"),
    ("kron_mixed", lambda: tgrad.kron(_t(_n(2)), _t(_n(3, 2))),
     f"UnsafeViewBackward0(MulBackward0(UnsafeViewBackward0({A}), UnsafeViewBackward0({A})))"),
    ("kron_0d", lambda: tgrad.kron(_t(_n()), _t(_n())),
     f"UnsafeViewBackward0(MulBackward0(UnsafeViewBackward0({A}), UnsafeViewBackward0({A})))"),
]


@pytest.mark.parametrize("case,f,graph", _ONE_NODE_CASES, ids=[c[0] for c in _ONE_NODE_CASES])
def test_ops_build_pytorchs_graph(case, f, graph):
    node = f().grad_fn
    assert _chain(f()) == graph
    assert type(node).__name__ == node.name()


def test_diag_roll_vdot_kron_values_gradients_and_saved_attributes():
    # diag of 1-D: diag_embed (dx = g's offset-th diagonal); of 2-D: a copy of the diagonal
    # (dx = zeros with g on it); roll: dx = roll(g, -shifts); vdot: da = conj(g) b,
    # db = g a; kron: the product of two reshapes
    v, m = _n(3), _n(3, 4)
    for k in (-2, 0, 1):
        x = _t(v)
        y = tgrad.diag(x, k)
        np.testing.assert_array_equal(y.detach().numpy(), np.diag(v, k))
        assert y.is_contiguous()
        assert (y.grad_fn._saved_offset, y.grad_fn._saved_dim1, y.grad_fn._saved_dim2) == \
            (k, -2, -1)
        g = _n(*y.shape)
        (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
        np.testing.assert_array_equal(gx.numpy(), np.diagonal(g, k))
        assert gradcheck(lambda x, k=k: tgrad.diag(x, k), (_t(v),))
        assert gradgradcheck(lambda x, k=k: tgrad.diag(x, k), (_t(v),))
        x = _t(m)
        y = tgrad.diag(x, k)
        np.testing.assert_array_equal(y.detach().numpy(), np.diag(m, k))
        assert y._base is None and y.is_contiguous()
        node = y.grad_fn
        assert (node._saved_offset, node._saved_dim1, node._saved_dim2,
                node._saved_self_sym_sizes) == (k, 0, 1, (3, 4))
        g = _n(*y.shape)
        (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
        ref = np.zeros((3, 4))
        r = np.arange(len(g)) + max(-k, 0)
        ref[r, r + k] = g
        np.testing.assert_array_equal(gx.numpy(), ref)
        assert gradcheck(lambda x, k=k: tgrad.diag(x, k), (_t(m),))
        assert gradgradcheck(lambda x, k=k: tgrad.diag(x, k), (_t(m),))
    e = _n(2, 3)
    y = tgrad.diag_embed(_t(e), 1, 0, 2)
    ref = np.zeros((4, 2, 4))
    for b in range(2):
        ref[:, b, :] = np.diag(e[b], 1)
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    assert (y.grad_fn._saved_dim1, y.grad_fn._saved_dim2, y.grad_fn._saved_offset) == (0, 2, 1)
    assert gradgradcheck(lambda x: tgrad.diag_embed(x, 1, 0, 2), (_t(e),))
    for shifts, dims in ((1, 0), (5, None), ((1, -2), (0, 1)), (0, 1), ((2, 1), (1, 1))):
        x = _t(m)
        y = tgrad.roll(x, shifts, dims)
        np.testing.assert_array_equal(y.detach().numpy(), np.roll(m, shifts, dims))
        assert y.grad_fn._saved_shifts == (shifts if isinstance(shifts, tuple) else (shifts,))
        assert y.grad_fn._saved_dims == (() if dims is None else dims if isinstance(
            dims, tuple) else (dims,))
        g = _n(3, 4)
        (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
        neg = tuple(-s for s in shifts) if isinstance(shifts, tuple) else -shifts
        np.testing.assert_array_equal(gx.numpy(), np.roll(g, neg, dims))
        assert gradgradcheck(lambda x, s=shifts, d=dims: tgrad.roll(x, s, d), (_t(m),))
    for cplx in (False, True):
        a, b = _n(4), _n(4)
        if cplx:
            a, b = a + 1j * _n(4), b + 1j * _n(4)
        ta, tb = _t(a), _t(b)
        y = tgrad.vdot(ta, tb)
        np.testing.assert_allclose(y.detach().numpy(), np.vdot(a, b), rtol=1e-14)
        assert y.grad_fn._saved_self is ta and y.grad_fn._saved_other is tb
        assert gradcheck(tgrad.vdot, (_t(a), _t(b)))
        assert gradgradcheck(tgrad.vdot, (_t(a), _t(b)))
    for sa, sb in (((2, 3), (3, 2)), ((2,), (3, 2)), ((), (3,)), ((2, 1, 2), (3,)),
                   ((2, 0), (3, 2))):
        a, b = _n(*sa), _n(*sb)
        y = tgrad.kron(_t(a), _t(b))
        np.testing.assert_array_equal(y.detach().numpy(), np.kron(a, b))
        assert y._base is None and y.is_contiguous()
        assert gradcheck(tgrad.kron, (_t(a), _t(b)))
        assert gradgradcheck(tgrad.kron, (_t(a), _t(b)))
    # a transposed operand (PyTorch refuses it: its view fails) is copied
    tt = tgrad.tensor(m).t()
    np.testing.assert_array_equal(tgrad.kron(tt, tgrad.ones(2, dtype=tgrad.float64)).numpy(),
                                  np.kron(m.T, np.ones(2)))


_SCATTER_CASES = [
    ("select_scatter", lambda: tgrad.select_scatter(_t(_n(3, 4)), _t(_n(4)), 0, 1),
     f"SelectScatterBackward0({A}, {A})", {"dim": 0, "index": 1}),
    ("select_scatter_no_grad_src",
     lambda: tgrad.select_scatter(_t(_n(3, 4)), _t(_n(3), False), -1, -1),
     f"SelectScatterBackward0({A}, None)", {"dim": -1, "index": -1}),
    ("slice_scatter", lambda: tgrad.slice_scatter(_t(_n(3, 4)), _t(_n(3, 2)), 1, 0, 4, 2),
     f"SliceScatterBackward0({A}, {A})", {"dim": 1, "start": 0, "end": 4, "step": 2}),
    ("slice_scatter_whole", lambda: tgrad.slice_scatter(_t(_n(3, 4)), _t(_n(3, 4)), 1),
     f"SliceScatterBackward0({A}, {A})", {"dim": 1, "start": None, "end": None, "step": 1}),
    ("diagonal_scatter", lambda: tgrad.diagonal_scatter(_t(_n(3, 4)), _t(_n(3))),
     f"DiagonalScatterBackward0({A}, {A})", {"dim1": 0, "dim2": 1, "offset": 0}),
    ("as_strided_scatter",
     lambda: tgrad.as_strided_scatter(_t(_n(3, 4)), _t(_n(2, 2)), (2, 2), (4, 1), 1),
     f"AsStridedScatterBackward0({A}, {A})",
     {"size": (2, 2), "stride": (4, 1), "storage_offset": 1}),
    ("as_strided_scatter_no_grad_input",
     lambda: tgrad.as_strided_scatter(_t(_n(3, 4), False), _t(_n(2, 2)), (2, 2), (4, 1)),
     f"AsStridedScatterBackward0(None, {A})",
     {"size": (2, 2), "stride": (4, 1), "storage_offset": None}),
]


@pytest.mark.parametrize("case,f,graph,saved", _SCATTER_CASES,
                         ids=[c[0] for c in _SCATTER_CASES])
def test_view_scatters_are_one_node_as_pytorchs(case, f, graph, saved):
    y = f()
    assert _chain(y) == graph and type(y.grad_fn).__name__ == y.grad_fn.name()
    for k, v in saved.items():
        assert getattr(y.grad_fn, f"_saved_{k}") == v


def test_view_scatters_values_and_gradients():
    # out = input with the view replaced by src; d input = g with the view zeroed,
    # d src = g read through the view
    def views(a):  # (op, args, NumPy view of an array a)
        return [
            (tgrad.select_scatter, (0, 1), lambda t: t[1]),
            (tgrad.select_scatter, (-1, -2), lambda t: t[..., -2]),
            (tgrad.slice_scatter, (2, 1, None, 2), lambda t: t[:, :, 1::2]),
            (tgrad.slice_scatter, (0, -1), lambda t: t[-1:]),
            (tgrad.diagonal_scatter, (1, 1, 2), lambda t: np.diagonal(t, 1, 1, 2)),
            (tgrad.diagonal_scatter, (-1, 0, 2), lambda t: np.diagonal(t, -1, 0, 2)),
            (tgrad.as_strided_scatter, ((2, 3), (5, 2), 3),
             lambda t: np.lib.stride_tricks.as_strided(
                 t.reshape(-1)[3:], (2, 3), (5 * t.itemsize, 2 * t.itemsize))),
        ]
    base = _n(2, 3, 4)
    for op, args, np_view in views(base):
        pos = np_view(np.arange(base.size).reshape(base.shape))  # the view's flat positions
        src = _n(*pos.shape)
        ti, ts = _t(base), _t(src)
        y = op(ti, ts, *args)
        ref = base.copy()
        ref.reshape(-1)[pos] = src
        np.testing.assert_array_equal(y.detach().numpy(), ref)
        assert y.is_contiguous() and y._base is None
        g = _n(*base.shape)
        gi, gs = tgrad.autograd.grad(y, (ti, ts), tgrad.tensor(g))
        ref_gi = g.copy()
        ref_gi.reshape(-1)[pos] = 0
        np.testing.assert_array_equal(gi.numpy(), ref_gi)
        np.testing.assert_array_equal(gs.numpy(), np_view(g))
        f = lambda x, s, op=op, args=args: op(x, s, *args)  # noqa: E731
        assert gradcheck(f, (_t(base), _t(src)))
        assert gradgradcheck(f, (_t(base), _t(src)))
    # src of another dtype: cast into input's (PyTorch's copy_), its gradient in src's
    ti = _t(base)
    ts = tgrad.tensor(_n(3, 4), dtype=tgrad.float32, requires_grad=True)
    y = tgrad.select_scatter(ti, ts, 0, 0)
    assert y.dtype is tgrad.float64
    y.sum().backward()
    assert ts.grad.dtype is tgrad.float32
    np.testing.assert_array_equal(ts.grad.numpy(), np.ones((3, 4)))
    # a transposed input: the copy is row-major, as_strided addresses that order
    tt = _t(base.reshape(4, 6).T.copy()).t()
    y = tgrad.as_strided_scatter(tt, _t(np.zeros(2)), (2,), (1,), 1)
    ref = base.reshape(4, 6).copy()
    ref.reshape(-1)[1:3] = 0
    np.testing.assert_array_equal(y.detach().numpy(), ref)


def test_adaptive_avg_pool_to_one_element_is_pytorchs_mean():
    # PyTorch: adaptive_avg_pool2d/3d to output 1 (each size) = input.mean(spatial dims,
    # keepdim=True), MeanBackward1; dx = g / (number of pooled elements) everywhere
    x = _n(2, 3, 4, 5)
    for f, dims, unsq in ((lambda t: nnf.adaptive_avg_pool2d(t, 1), (-1, -2), False),
                          (lambda t: nnf.adaptive_avg_pool2d(t, (1, 1)), (-1, -2), False),
                          (lambda t: nnf.adaptive_avg_pool3d(t, 1), (-1, -2, -3), False),
                          (lambda t: nnf.adaptive_avg_pool1d(t.flatten(2), 1), (-1,), True)):
        tx = _t(x)
        y = f(tx)
        xs = x.reshape(2, 3, 20) if unsq else x
        ref = xs.mean(dims, keepdims=True)
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-14)
        node = y.grad_fn.next_functions[0][0] if unsq else y.grad_fn
        assert node.name() == "MeanBackward1" and node._saved_keepdim is True
        g = _n(*ref.shape)
        (gx,) = tgrad.autograd.grad(y, tx, tgrad.tensor(g))
        n = np.prod([xs.shape[d] for d in dims])
        np.testing.assert_allclose(gx.numpy(), np.broadcast_to(g / n, xs.shape).reshape(
            x.shape), rtol=1e-14)
        assert gradgradcheck(f, (_t(x),))


def test_vector_norm_ord_0_is_one_node_without_gradient():
    # PyTorch 2.14: linalg.vector_norm(x, 0) / norm(x, 0) are LinalgVectorNormBackward0
    # (edge x) whose gradient is undefined: x.grad stays None, grad() needs allow_unused
    a = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, 0.0]])
    for dim, keep in ((None, False), (1, False), ((0, 1), True), (0, True)):
        x = _t(a)
        y = tgrad.linalg.vector_norm(x, 0, dim, keep)
        ref = np.count_nonzero(a, axis=dim)
        ref = np.asarray(ref, dtype=np.float64)
        if keep:
            ref = ref.reshape([1 if dim is None or d in np.atleast_1d(dim) else s
                               for d, s in enumerate(a.shape)])
        np.testing.assert_array_equal(y.detach().numpy(), ref)
        assert _chain(y) == f"LinalgVectorNormBackward0({A})"
        assert y.grad_fn._saved_ord == 0
        y.sum().backward()
        assert x.grad is None
        (g,) = tgrad.autograd.grad(tgrad.norm(x, 0, dim, keep).sum(), x, allow_unused=True)
        assert g is None
    y = tgrad.linalg.vector_norm(_t(a).half(), 0, 1)
    assert y.dtype is tgrad.float16 and y.tolist() == [2.0, 1.0]


_CDIST_CASES = [
    ("p2", lambda: tgrad.cdist(_t(_n(3, 4)), _t(_n(5, 4))), f"CdistBackward0({A}, {A})"),
    ("p1", lambda: tgrad.cdist(_t(_n(3, 4)), _t(_n(5, 4)), 1), f"CdistBackward0({A}, {A})"),
    ("pinf", lambda: tgrad.cdist(_t(_n(3, 4)), _t(_n(5, 4)), float("inf")),
     f"CdistBackward0({A}, {A})"),
    ("batched", lambda: tgrad.cdist(_t(_n(2, 3, 4)), _t(_n(1, 5, 4))),
     f"CdistBackward0({A}, {A})"),
    ("no_mm_mode", lambda: tgrad.cdist(_t(_n(30, 4)), _t(_n(5, 4)),
                                       compute_mode="donot_use_mm_for_euclid_dist"),
     f"CdistBackward0({A}, {A})"),
    ("empty", lambda: tgrad.cdist(_t(_n(0, 4)), _t(_n(30, 4))), f"CdistBackward0({A}, {A})"),
    ("mm_rows", lambda: tgrad.cdist(_t(_n(30, 4)), _t(_n(5, 4))),
     f"ViewBackward0(EuclideanDistBackward0({A}, {A}))"),
    ("mm_mode", lambda: tgrad.cdist(_t(_n(3, 4)), _t(_n(5, 4)),
                                    compute_mode="use_mm_for_euclid_dist"),
     f"ViewBackward0(EuclideanDistBackward0({A}, {A}))"),
    ("mm_one_batch", lambda: tgrad.cdist(_t(_n(1, 30, 4)), _t(_n(5, 4))),
     f"ViewBackward0(EuclideanDistBackward0({A}, {A}))"),
    ("mm_batched", lambda: tgrad.cdist(_t(_n(2, 30, 4)), _t(_n(2, 5, 4))),
     f"ViewBackward0(EuclideanDistBackward0(ViewBackward0(ExpandBackward0({A})), "
     f"ViewBackward0(ExpandBackward0({A}))))"),
]


@pytest.mark.parametrize("case,f,graph", _CDIST_CASES, ids=[c[0] for c in _CDIST_CASES])
def test_cdist_graph_is_pytorchs(case, f, graph):
    assert _chain(f()) == graph


def test_cdist_values_and_gradients():
    # out[..., i, j] = ||x1[..., i] - x2[..., j]||_p; gradients by gradcheck (finite
    # differences; distinct rows, no zero distance) and gradgradcheck, and a hand case
    for p in (2.0, 1.0, 0.5, 1.5, 3.0, float("inf"), 0.0):
        for sa, sb, mode in (((3, 4), (5, 4), None), ((2, 3, 4), (1, 5, 4), None),
                             ((30, 2), (2, 2), None), ((2, 30, 2), (2, 2), None),
                             ((3, 4), (2, 4), "use_mm_for_euclid_dist")):
            a, b = _n(*sa), _n(*sb)
            kw = {} if mode is None else {"compute_mode": mode}
            f = lambda x, y, p=p, kw=kw: tgrad.cdist(x, y, p, **kw)  # noqa: E731
            y = f(_t(a), _t(b))
            d = a[..., :, None, :] - b[..., None, :, :]
            ref = (np.count_nonzero(d, -1).astype(float) if p == 0 else
                   np.abs(d).max(-1) if p == float("inf") else
                   (np.abs(d) ** p).sum(-1) ** (1 / p))
            np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-13)
            if p != 0 and (p == 2 or a.size < 30):
                assert gradcheck(f, (_t(a), _t(b)))
                if p not in (1.0, float("inf")):  # (piecewise linear: second derivative 0)
                    assert gradgradcheck(f, (_t(a), _t(b)))
    # p = inf, by hand: x1 = [[0, 0], [1, 1]], x2 = [[0, 0], [1, 0]], g = 1. Pairs: (0, 0)
    # d = 0, distance 0: nothing; (0, 1) d = (-1, 0): dx1[0] += (-1, 0), dx2[1] -= it;
    # (1, 0) d = (1, 1), a tie, each in full (PyTorch's): dx1[1] += (1, 1), dx2[0] -= it;
    # (1, 1) d = (0, 1): dx1[1] += (0, 1), dx2[1] -= it
    x1, x2 = _t([[0.0, 0.0], [1.0, 1.0]]), _t([[0.0, 0.0], [1.0, 0.0]])
    g1, g2 = tgrad.autograd.grad(tgrad.cdist(x1, x2, float("inf")).sum(), (x1, x2))
    np.testing.assert_array_equal(g1.numpy(), [[-1.0, 0.0], [1.0, 2.0]])
    np.testing.assert_array_equal(g2.numpy(), [[-1.0, -1.0], [1.0, -1.0]])
    # a zero distance: zero gradient (p = 2, both paths), p = 0: zeros
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        x1, x2 = _t([[1.0, 2.0]]), _t([[1.0, 2.0], [1.0, 3.0]])
        g1, g2 = tgrad.autograd.grad(tgrad.cdist(x1, x2, compute_mode=mode).sum(), (x1, x2))
        np.testing.assert_array_equal(g1.numpy(), [[0.0, -1.0]])
        np.testing.assert_array_equal(g2.numpy(), [[0.0, 0.0], [0.0, 1.0]])
    x1, x2 = _t(_n(3, 2)), _t(_n(4, 2))
    y = tgrad.cdist(x1, x2, 0)
    assert y.grad_fn._saved_p == 0.0 and y.grad_fn._saved_x1 is x1
    g1, g2 = tgrad.autograd.grad(y.sum(), (x1, x2))
    assert not g1.numpy().any() and not g2.numpy().any()


def test_matrix_exp_is_one_node_with_pytorchs_backward():
    # PyTorch 2.14: LinalgMatrixExpBackward0 (edge A, _saved_self); dA = exp([[A^H, G],
    # [0, A^H]])[:n, n:]; values against NumPy's eigendecomposition V exp(w) V^-1
    for shape, scale, cplx in (((3, 3), 0.5, False), ((2, 4, 4), 3.0, False),
                               ((3, 3), 1.0, True), ((1, 1), 10.0, False)):
        a = _n(*shape) * scale
        if cplx:
            a = a + 1j * _n(*shape) * scale
        x = _t(a)
        y = tgrad.linalg.matrix_exp(x)
        assert _chain(y) == f"LinalgMatrixExpBackward0({A})" and y.grad_fn._saved_self is x
        w, v = np.linalg.eig(a)
        ref = v @ (np.exp(w)[..., None] * np.linalg.inv(v))
        np.testing.assert_allclose(y.detach().numpy(), ref if cplx else ref.real, rtol=1e-10,
                                   atol=1e-12 * np.abs(ref).max())
        if shape[-1] <= 3:
            assert gradcheck(tgrad.linalg.matrix_exp, (_t(a),))
            assert gradgradcheck(tgrad.linalg.matrix_exp, (_t(a),))
    # the gradient of sum(exp(a I)) over a scalar a times I: d/da sum(e^a I) = n e^a
    s = _t(np.eye(3) * 0.3)
    (g,) = tgrad.autograd.grad(tgrad.linalg.matrix_exp(s).sum(), s)
    np.testing.assert_allclose(np.trace(g.numpy()), 3 * np.exp(0.3), rtol=1e-14)
    e = _t(np.zeros((0, 0)))
    y = tgrad.linalg.matrix_exp(e)
    assert y.shape == (0, 0) and y.grad_fn.name() == "LinalgMatrixExpBackward0"


def _chain_pytorch_copyslices(t) -> str:
    """_chain with tgrad's CopySlices read as PyTorch's: tgrad's edges are (base, the
    in-place op's node on the view: CopyBackwards(view's old history, src)); PyTorch's
    CopySlices takes that node's edges but the first in its place (base, src)."""
    def walk(node):
        if node is None:
            return "None"
        edges = [n for n, _ in node.next_functions]
        if node.name() == "CopySlices":
            edges = edges[:1] + [n for n, _ in edges[1].next_functions][1:]
        kids = [walk(n) for n in edges]
        return node.name() + (f"({', '.join(kids)})" if kids else "")
    return walk(t.grad_fn)


def _cs(base, src):
    return f"CopySlices({base}, SliceBackward0({src}))"


_S = f"SliceBackward0({A})"
_PAD_CASES = [  # PyTorch 2.14's _pad_circular: an empty output, then slice copies
    ("no_pad", (2, 5), (0, 0), f"CopySlices(None, {_S})"),
    ("crop", (1, 2, 5), (-1, -2), f"CopySlices(None, {_S})"),
    ("left", (2, 5), (2, 0), _cs(f"CopySlices(None, {_S})", f"CopySlices(None, {_S})")),
    ("both", (1, 2, 5), (1, 2),
     _cs(_cs(f"CopySlices(None, {_S})", f"CopySlices(None, {_S})"),
         _cs(f"CopySlices(None, {_S})", f"CopySlices(None, {_S})"))),
    ("crop_2d", (1, 2, 5, 4), (-1, 2, 1, 0),
     _cs(_cs(f"CopySlices(None, SliceBackward0({_S}))", f"CopySlices(None, SliceBackward0({_S}))"),
         _cs(f"CopySlices(None, SliceBackward0({_S}))",
             f"CopySlices(None, SliceBackward0({_S}))"))),
]


@pytest.mark.parametrize("case,shape,pad,graph", _PAD_CASES, ids=[c[0] for c in _PAD_CASES])
def test_circular_pad_builds_pytorchs_slice_copies(case, shape, pad, graph):
    y = nnf.pad(_t(_n(*shape)), pad, mode="circular")
    assert _chain_pytorch_copyslices(y) == graph


def test_circular_pad_values_and_gradients():
    # out[o] = in[(o - l) mod m] per padded dim after negative pads crop to m; dx gathers
    # each copy back (a position copied k times gets k times g's sum)
    for shape, pad in (((1, 2, 5), (1, 2)), ((2, 5), (2, 0)), ((1, 2, 5, 4), (1, 2, 1, 1)),
                       ((1, 2, 5, 4), (-1, 2, 1, 0)), ((1, 1, 3, 4, 4), (1, 2, 1, 1, 1, 1)),
                       ((1, 2, 3), (3, 3)), ((1, 2, 5), (-1, -2))):
        a = _n(*shape)
        k = len(pad) // 2
        ref, src = a, np.arange(a.size).reshape(a.shape)
        for i in range(k):
            d, lo, hi = a.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]
            n = ref.shape[d]
            s, e = max(-lo, 0), n - max(-hi, 0)
            idx = [s + (o - max(lo, 0)) % (e - s) for o in range(e - s + max(lo, 0) + max(hi, 0))]
            ref, src = np.take(ref, idx, axis=d), np.take(src, idx, axis=d)
        x = _t(a)
        y = nnf.pad(x, pad, mode="circular")
        np.testing.assert_array_equal(y.detach().numpy(), ref)
        assert y.is_contiguous() and y._base is None
        g = _n(*ref.shape)
        (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
        ref_g = np.zeros(a.size)
        np.add.at(ref_g, src.reshape(-1), g.reshape(-1))
        np.testing.assert_allclose(gx.numpy(), ref_g.reshape(a.shape), rtol=1e-14)
        f = lambda t, pad=pad: nnf.pad(t, pad, mode="circular")  # noqa: E731
        assert gradgradcheck(f, (_t(a),))


def _path(y) -> list:
    """The node names from y's grad_fn along first edges down to the leaf."""
    out, node = [], y.grad_fn
    while node is not None and node.name() != "AccumulateGrad":
        out.append(node.name())
        node = node.next_functions[0][0]
    return out


def test_reshape_is_pytorchs_view_alias_or_unsafe_view_of_a_clone():
    # PyTorch 2.14: a contiguous input's reshape is view (ViewBackward0), a non-contiguous
    # one's that has a view _reshape_alias (ReshapeAliasBackward0), else _unsafe_view of a
    # contiguous clone (UnsafeViewBackward0 over CloneBackward0, no view)
    a = _n(3, 4)
    x = _t(a)
    z = _t(_n(1, 3))
    for y, path, is_view, ref in (
            (x.reshape(4, 3), ["ViewBackward0"], True, a.reshape(4, 3)),
            (x.t().reshape(4, 3), ["ReshapeAliasBackward0", "TBackward0"], True, a.T),
            (x.t().reshape(2, 2, 3), ["ReshapeAliasBackward0", "TBackward0"], True,
             a.T.reshape(2, 2, 3)),
            (x[:, :2].reshape(3, 2), ["ReshapeAliasBackward0", "SliceBackward0"], True,
             a[:, :2]),
            (x[:, :2].reshape(6), ["UnsafeViewBackward0", "CloneBackward0", "SliceBackward0"],
             False, a[:, :2].reshape(6)),
            (x[:1].reshape(4), ["ViewBackward0", "SliceBackward0"], True, a[0]),
            (x.t().flatten(), ["UnsafeViewBackward0", "CloneBackward0", "TBackward0"], False,
             a.T.reshape(12)),
            (x.expand(2, 3, 4).reshape(6, 4),
             ["UnsafeViewBackward0", "CloneBackward0", "ExpandBackward0"], False,
             np.concatenate([a, a])),
            (z.expand(2, 3).reshape(2, 3), ["ReshapeAliasBackward0", "ExpandBackward0"], True,
             None),
            (z.t().reshape(3), ["ViewBackward0", "TBackward0"], True, None)):
        assert _path(y) == path and y._is_view() is is_view
        if ref is not None:
            np.testing.assert_array_equal(y.detach().numpy(), ref)
    node = x.t().reshape(2, 2, 3).grad_fn
    assert node._saved_self_sym_sizes == (4, 3)
    # gradients: the reshape back of g, through the clone
    (g,) = tgrad.autograd.grad(x.t().reshape(12), x, tgrad.arange(12.0, dtype=tgrad.float64))
    np.testing.assert_array_equal(g.numpy(), np.arange(12.0).reshape(4, 3).T)
    assert gradgradcheck(lambda t: t.t().reshape(12) * t.t().reshape(2, 6).reshape(12),
                         (_t(a),))
    # the copy is a new tensor: writing into it leaves x alone
    y = x.detach().t().reshape(12)
    y.add_(1.0)
    np.testing.assert_array_equal(x.detach().numpy(), a)


def test_repeat_and_tile_are_one_node_as_pytorchs():
    # PyTorch 2.14: RepeatBackward0 (edge x; _saved_repeats, _saved_self_sym_sizes), tile
    # too; dx = g summed over the copies; instance_norm's repeated parameters use it
    for shape, reps in (((2, 3), (2, 1)), ((2, 3), (1, 2, 2)), ((), (3,)), ((2, 3), (1, 1)),
                        ((2, 0), (2, 2))):
        a = _n(*shape)
        x = _t(a)
        y = x.repeat(*reps)
        ref = np.tile(a, reps)
        np.testing.assert_array_equal(y.detach().numpy(), ref)
        assert _chain(y) == f"RepeatBackward0({A})" and y._base is None
        assert y.grad_fn._saved_repeats == reps and y.grad_fn._saved_self_sym_sizes == shape
        g = _n(*ref.shape)
        (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
        lead = len(reps) - len(shape)
        wide = [n for r, s in zip(reps, (1,) * lead + shape) for n in (r, s)]
        np.testing.assert_allclose(gx.numpy(), g.reshape(wide).sum(
            tuple(range(0, len(wide), 2))).reshape(shape), rtol=1e-14)
        f = lambda t, reps=reps: t.repeat(*reps)  # noqa: E731
        assert gradgradcheck(f, (_t(a),))
    assert _chain(tgrad.tile(_t(_n(2, 3)), (2,))) == f"RepeatBackward0({A})"
    x, w, b = _t(_n(2, 3, 4)), _t(_n(3)), _t(_n(3))
    node = nnf.instance_norm(x, weight=w, bias=b).grad_fn.next_functions[0][0]
    assert [e.name() for e, _ in node.next_functions] == \
        ["ViewBackward0", "RepeatBackward0", "RepeatBackward0"]


def test_complex_vector_norm_is_one_node_on_x():
    # PyTorch 2.14: LinalgVectorNormBackward0 with its edge on the complex x itself (not an
    # AbsBackward0); the norm of |x| (real); dx = d||.||/d|x| sgn(x)
    a = _n(3, 4) + 1j * _n(3, 4)
    a[0, 1] = 0
    for f, ref in ((lambda x: tgrad.linalg.vector_norm(x), np.linalg.norm(a)),
                   (lambda x: tgrad.linalg.vector_norm(x, 1, 1), np.abs(a).sum(1)),
                   (lambda x: tgrad.norm(x), np.linalg.norm(a)),
                   (lambda x: tgrad.linalg.matrix_norm(x), np.linalg.norm(a)),
                   (lambda x: x.norm(3, 0), (np.abs(a) ** 3).sum(0) ** (1 / 3))):
        x = _t(a)
        y = f(x)
        assert _chain(y) == f"LinalgVectorNormBackward0({A})" and y.grad_fn._saved_self is x
        assert y.dtype is tgrad.float64
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-13)
        assert gradcheck(f, (_t(a + 0.1),)) and gradgradcheck(f, (_t(a + 0.1),))
    x = _t(a)
    (g,) = tgrad.autograd.grad(tgrad.linalg.vector_norm(x), x)
    np.testing.assert_allclose(g.numpy(), a / np.linalg.norm(a), rtol=1e-13)


@pytest.mark.parametrize("op, node", [("erfcx", "SpecialErfcxBackward0"),
                                      ("log_ndtr", "SpecialLogNdtrBackward0"),
                                      ("ndtri", "SpecialNdtriBackward0")])
def test_special_only_ops_name_their_nodes_special(op, node):
    # PyTorch 2.13 prefixes the nodes of ops that exist only in torch.special
    x = _t(np.array([0.2, 0.7]))
    y = getattr(tgrad.special, op)(x)
    assert y.grad_fn.name() == node
    assert gradcheck(getattr(tgrad.special, op), (x,))
