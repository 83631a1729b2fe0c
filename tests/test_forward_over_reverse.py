"""Forward-over-reverse AD (as PyTorch): inside a forward_ad.dual_level, a backward pass
(autograd.grad, backward(create_graph=True)) of dual tensors gives gradients whose tangents
are Hessian-vector products; tgrad.func.jvp(grad(f)) and jacfwd(jacrev(f)) use it;
gradgradcheck(check_fwd_over_rev=True) checks it. References: float64 central
finite differences of the gradient, NumPy hand-computed Hessians."""

from __future__ import annotations

import numpy as np
import pytest
from test_forward_ad import _FD_SKIP, _float_outputs, _small_samples, _t
from test_opinfo import DIFF_SPECS, Built

import tgrad
import tgrad.autograd.forward_ad as fwAD
from tgrad import func

_H = 1e-6


def _leaves_and_call(spec, sample):
    """float64 leaves of the sample's floating inputs (requiring grad) and a function of
    new leaves giving the op's floating outputs."""
    b = Built(spec, sample, "float64")
    leaves = [b.leaves[i].detach() for i in b.float_idx]

    def call(xs):
        all_leaves = list(b.leaves)
        for i, x in zip(b.float_idx, xs):
            all_leaves[i] = x
        return _float_outputs(spec.op(*b.args(all_leaves), **sample.kwargs))
    return leaves, call


def _grad_of(call, xs, weights, create_graph: bool = False):
    """d/dxs sum_k <w_k, out_k> (zeros for an unused input)."""
    outs = call(xs)
    s = sum((o * w).sum() for o, w in zip(outs, weights) if o.requires_grad)
    if not isinstance(s, tgrad.Tensor):
        return [tgrad.zeros_like(x) for x in xs]
    gs = tgrad.autograd.grad(s, xs, create_graph=create_graph, allow_unused=True,
                             materialize_grads=True)
    return list(gs)


@pytest.mark.parametrize("spec", [s for s in DIFF_SPECS if s.name not in _FD_SKIP
                                  and s.gradgrad], ids=lambda s: s.name)
def test_hvp_by_forward_over_reverse_matches_finite_differences(spec):
    """For every differentiable op of the op tables: with f(x) = sum_k <w_k, op(x)_k>, the
    tangents of autograd.grad(f, x) for dual x (tangent v) are H v, the central finite
    difference (grad f(x + h v) - grad f(x - h v)) / 2h in float64."""
    samples = [s for s in _small_samples(spec, limit=3) if s.gradgrad][:1]
    for sample in samples:
        leaves, call = _leaves_and_call(spec, sample)
        rng = np.random.default_rng(1)
        vs = [_t(rng.standard_normal(x.shape)) for x in leaves]
        weights = [_t(rng.standard_normal(o.shape)) for o in call(leaves)]
        for create_graph in (True, False):
            ps = [x.detach().requires_grad_() for x in leaves]
            with fwAD.dual_level():
                duals = [fwAD.make_dual(p, v) for p, v in zip(ps, vs)]
                gs = _grad_of(call, duals, weights, create_graph)
                got = [fwAD.unpack_dual(g) for g in gs]
            for (primal, _), x in zip(got, leaves):
                assert primal.shape == x.shape
            plus, minus = ([_t(x.numpy() + sign * _H * v.numpy()).requires_grad_()
                            for x, v in zip(leaves, vs)] for sign in (1.0, -1.0))
            gp, gm = _grad_of(call, plus, weights), _grad_of(call, minus, weights)
            for (_, tangent), a, b_ in zip(got, gp, gm):
                want = (a.numpy() - b_.numpy()) / (2 * _H)
                t = np.zeros_like(want) if tangent is None else tangent.detach().numpy()
                np.testing.assert_allclose(t, want, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{spec.name} {sample} "
                                                   f"create_graph={create_graph}")


def _f(x):  # f(x) = sum(sin(x) x) + (sum x^2)^2 / 4
    return (x.sin() * x).sum() + (x * x).sum() ** 2 / 4


def _hess_f(xn):
    """f's Hessian by hand: diag(2 cos x - x sin x) + (sum x^2) I + 2 x x^T."""
    return (np.diag(2 * np.cos(xn) - xn * np.sin(xn)) + (xn @ xn) * np.eye(xn.size)
            + 2 * np.outer(xn, xn))


def test_autograd_grad_and_backward_on_dual_inputs():
    """autograd.grad (with or without create_graph) returns dual gradients with tangent
    H v; backward(create_graph=True) gives a dual .grad, a plain backward a .grad without
    tangent (as PyTorch's); dual grad_outputs contribute their tangents (J^T dg)."""
    xn, vn = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -1.0])
    hv = _hess_f(xn) @ vn
    p = _t(xn).requires_grad_()
    with fwAD.dual_level():
        x = fwAD.make_dual(p, _t(vn))
        for cg in (False, True):
            for wrt in (p, x):
                (g,) = tgrad.autograd.grad(_f(x), wrt, create_graph=cg)
                primal, tangent = fwAD.unpack_dual(g)
                np.testing.assert_allclose(primal.detach().numpy(), xn * np.cos(xn) + np.sin(xn)
                                           + (xn @ xn) * xn, rtol=1e-12)
                np.testing.assert_allclose(tangent.detach().numpy(), hv, rtol=1e-12)
        _f(x).backward(create_graph=True)
        np.testing.assert_allclose(fwAD.unpack_dual(p.grad).tangent.detach().numpy(), hv,
                                   rtol=1e-12)
        p.grad = None
        _f(x).backward()
        assert fwAD.unpack_dual(p.grad).tangent is None
        # y = w * 3 with a dual grad_output (tangent dg): d(J^T g) = J^T dg = 3 dg
        w = _t(xn).requires_grad_()
        go = fwAD.make_dual(_t([1.0, 1.0, 1.0]), _t(vn))
        (g,) = tgrad.autograd.grad(w * 3.0, w, go)
        np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(), 3 * vn)


def test_fused_backward_primitives_have_tangents():
    """Ops whose backward is a fused primitive (tanh_backward, sigmoid_backward,
    relu_backward, the fused unary formulas, the 2-D matmul and reduction fast paths):
    hvp of sum(w * op(x)) against the hand-computed second derivative."""
    xn = np.array([[0.3, -0.7], [1.1, 0.2]])
    vn = np.array([[1.0, 2.0], [-1.0, 0.5]])
    wn = np.array([[0.5, -1.5], [2.0, 1.0]])
    th, sg = np.tanh(xn), 1 / (1 + np.exp(-xn))
    cases = [  # op, d^2 op / dx^2 (elementwise)
        (tgrad.tanh, -2 * th * (1 - th ** 2)),
        (tgrad.sigmoid, sg * (1 - sg) * (1 - 2 * sg)),
        (tgrad.relu, np.zeros_like(xn)),
        (tgrad.sin, -np.sin(xn)),
        (tgrad.atan, -2 * xn / (1 + xn ** 2) ** 2),
        (tgrad.square, 2 * np.ones_like(xn)),
    ]
    for op, d2 in cases:
        p = _t(xn).requires_grad_()
        with fwAD.dual_level():
            (g,) = tgrad.autograd.grad((op(fwAD.make_dual(p, _t(vn))) * _t(wn)).sum(), p)
            np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(), wn * d2 * vn,
                                       rtol=1e-12, atol=1e-15, err_msg=op.__name__)
    # f(A) = sum(w * (A @ A)) / mean: the Hessian of the 2-D product is bilinear
    a = _t(xn).requires_grad_()
    with fwAD.dual_level():
        ad = fwAD.make_dual(a, _t(vn))
        (g,) = tgrad.autograd.grad((ad @ ad * _t(wn)).mean(), a)
        tangent = fwAD.unpack_dual(g).tangent.numpy()
    # d/dA <w, A A> / 4 = (w A^T + A^T w) / 4; its derivative along V: (w V^T + V^T w) / 4
    np.testing.assert_allclose(tangent, (wn @ vn.T + vn.T @ wn) / 4, rtol=1e-12)


def test_func_jvp_of_grad_and_hessian():
    """func.jvp(func.grad(f), (x,), (v,)) gives (grad f(x), H v); func.hessian (PyTorch's
    jacfwd of jacrev, computed as jacrev of jacrev) and jacfwd(jacrev(f)) give H; jacfwd of
    a grad with two args."""
    xn, vn = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -1.0])
    x, v = _t(xn), _t(vn)
    g, hv = func.jvp(func.grad(_f), (x,), (v,))
    np.testing.assert_allclose(g.numpy(), xn * np.cos(xn) + np.sin(xn) + (xn @ xn) * xn,
                               rtol=1e-12)
    np.testing.assert_allclose(hv.numpy(), _hess_f(xn) @ vn, rtol=1e-12)
    np.testing.assert_allclose(func.hessian(_f)(x).numpy(), _hess_f(xn), rtol=1e-12)
    np.testing.assert_allclose(func.jacfwd(func.jacrev(_f))(x).numpy(), _hess_f(xn),
                               rtol=1e-12)
    # g(x, y) = sum(x^2 y): d/dx d/dy = 2 diag(x)
    yn = np.array([2.0, -1.0, 0.5])
    h = func.jacfwd(func.grad(lambda a, b: (a * a * b).sum(), argnums=1))(x, _t(yn))
    np.testing.assert_allclose(h.numpy(), 2 * np.diag(xn), rtol=1e-12)
    # the gradient's graph for an outer reverse pass: d/dx sum(hvp) by reverse over
    # forward over reverse, against the hand-computed third derivative of sum(sin(x) x)
    xr = _t(xn).requires_grad_()
    _, hv2 = func.jvp(func.grad(lambda t: (t.sin() * t).sum()), (xr,), (v,))
    (d,) = tgrad.autograd.grad(hv2.sum(), xr)
    np.testing.assert_allclose(d.numpy(), (-3 * np.sin(xn) - xn * np.cos(xn)) * vn,
                               rtol=1e-12)


def test_gradgradcheck_fwd_over_rev():
    """gradgradcheck(check_fwd_over_rev=True) runs (PyTorch's check: the forward-mode
    derivatives of the gradient function against finite differences)."""
    x = _t([0.3, -0.7, 1.1]).requires_grad_()
    w = _t([[0.5, 1.0, -0.5], [1.5, -1.0, 0.25]]).requires_grad_()
    for fn in (lambda a: a.tanh() * a.exp(), lambda a: tgrad.nn.functional.layer_norm(a, (3,)),
               lambda a: (w @ a).sigmoid()):
        assert tgrad.autograd.gradgradcheck(fn, (x,), check_fwd_over_rev=True,
                                            check_rev_over_rev=False,
                                            check_undefined_grad=False)
        assert tgrad.autograd.gradgradcheck(fn, (x,), check_fwd_over_rev=True)

    def wrong(a):  # a Function whose backward ignores a: its second derivative is wrong
        return _Square.apply(a)
    with pytest.raises(tgrad.autograd.GradcheckError):
        tgrad.autograd.gradgradcheck(wrong, (x,), check_fwd_over_rev=True,
                                     check_rev_over_rev=False, check_undefined_grad=False)


class _Square(tgrad.autograd.Function):
    """x^2 with a backward that detaches x: right first derivative, zero second."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x.detach() * g

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return 2 * x * tx


def _check_hvp_fd(f, xn, vn, what: str) -> None:
    """H v of the scalar f at xn along vn by forward over reverse (func.jvp(func.grad(f))
    and autograd.grad of dual inputs) against the float64 central finite difference of the
    gradient, (grad f(x + h v) - grad f(x - h v)) / 2h."""
    def grad_at(xa):
        p = _t(xa).requires_grad_()
        (g,) = tgrad.autograd.grad(f(p), p)
        return g.numpy()
    want = (grad_at(xn + _H * vn) - grad_at(xn - _H * vn)) / (2 * _H)
    _, hv = func.jvp(func.grad(f), (_t(xn),), (_t(vn),))
    np.testing.assert_allclose(hv.numpy(), want, rtol=1e-5, atol=1e-6,
                               err_msg=f"{what}: func.jvp(grad)")
    p = _t(xn).requires_grad_()
    with fwAD.dual_level():
        (g,) = tgrad.autograd.grad(f(fwAD.make_dual(p, _t(vn))), p)
        tangent = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-5, atol=1e-6,
                               err_msg=f"{what}: autograd.grad in a level")


def test_hvp_through_inplace_ops_matches_finite_differences():
    """In-place ops that save their input (mul_, div_, sin_, pow_) inside a level: the
    backward reads the old value's tangent, not the one the op wrote in place."""
    xn = np.array([0.5, -1.0, 2.0])
    vn = np.array([1.0, -0.5, 0.25])
    cases = {
        "mul_": lambda x: (x * 1).mul_(x).exp_().sum(),
        "div_": lambda x: (x * 1).div_(x.exp()).sum(),
        "sin_": lambda x: (x * 1).sin_().sum(),
        "pow_": lambda x: (x * 1).pow_(3).sum(),
        "mul_ other": lambda x: (x * 1).mul_(x.sin()).pow(2).sum(),
    }
    for name, f in cases.items():
        _check_hvp_fd(f, xn, vn, name)
    # hessian of sum(x^3) via pow_: diag(6 x)
    np.testing.assert_allclose(
        func.hessian(lambda x: (x * 1).pow_(3).sum())(_t(xn)).numpy(), np.diag(6 * xn),
        rtol=1e-12)
    np.testing.assert_allclose(
        func.jacfwd(func.jacrev(lambda x: (x * 1).pow_(3).sum()))(_t(xn)).numpy(),
        np.diag(6 * xn), rtol=1e-12)


def test_hvp_through_checkpoint_and_saved_tensors_hooks():
    """Saved tensors packed by saved_tensors_hooks (identity and clone pairs) and by
    checkpoint(use_reentrant=False) keep their tangents: forward over reverse through them
    gives H v (it gave zeros), and func.hessian the Hessian."""
    from tgrad.utils.checkpoint import checkpoint
    xn, vn = np.array([0.3, -0.5, 0.7]), np.array([1.0, 0.5, -2.0])

    def with_hooks(pack):
        def f(x):
            with tgrad.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                return _f(x.tanh())
        return f
    cases = {
        "identity hooks": with_hooks(lambda t: t),
        "clone hooks": with_hooks(lambda t: t.clone()),
        "checkpoint": lambda x: checkpoint(lambda a: _f(a.tanh()), x, use_reentrant=False),
    }
    for name, f in cases.items():
        _check_hvp_fd(f, xn, vn, name)
    np.testing.assert_allclose(
        func.hessian(lambda x: checkpoint(_f, x, use_reentrant=False))(_t(xn)).numpy(),
        _hess_f(xn), rtol=1e-12)


def test_hessian_runs_f_once_and_jacfwd_of_jacrev_per_element():
    """func.hessian has PyTorch's jacfwd(jacrev(f)) values but runs reverse over reverse:
    f is called once (tgrad's vmap is a loop: forward over reverse would run f once per
    input element); jacfwd(jacrev(f)) written out runs forward over reverse."""
    xn = np.array([0.3, -0.7, 1.1, 0.4])
    calls = []

    def f(x):
        calls.append(x.shape)
        return _f(x)
    np.testing.assert_allclose(func.hessian(f)(_t(xn)).numpy(), _hess_f(xn), rtol=1e-12)
    assert len(calls) == 1
    calls.clear()
    np.testing.assert_allclose(func.jacfwd(func.jacrev(f))(_t(xn)).numpy(), _hess_f(xn),
                               rtol=1e-12)
    assert len(calls) == xn.size


def test_hvp_through_inplace_ops_on_views_matches_finite_differences():
    """An in-place op on a view of a tensor inside a level (y[0].mul_(x[1]), setitem,
    a transposed view): the view's tangent is a recorded view of the base's, so the op
    writes it (it raised "a view created in no_grad mode"); H v vs finite differences."""
    xn = np.array([[0.3, -0.5, 0.8], [0.2, 0.1, -0.4]])
    vn = np.array([[1.0, 0.5, -0.3], [0.2, 0.3, 0.7]])

    def row_mul(x):
        y = x.clone()
        y[0].mul_(x[1])
        return (y * y).sum()

    def setitem(x):
        y = x * 1
        y[1] = x[0] ** 2
        return (y ** 2).sum()

    def transposed(x):
        y = x.sin()
        y.t()[1:].mul_(x.t()[:2].exp())
        return (y ** 3).sum()
    for name, f in (("row mul_", row_mul), ("setitem", setitem), ("t() mul_", transposed)):
        _check_hvp_fd(f, xn, vn, name)
    h = func.jacfwd(func.jacrev(row_mul))(_t(xn)).numpy().reshape(6, 6)
    np.testing.assert_allclose(h, func.hessian(row_mul)(_t(xn)).numpy().reshape(6, 6),
                               rtol=1e-12)


def test_once_differentiable_backward_computes_tangents():
    """As PyTorch: a @once_differentiable backward runs with grad mode off, but its ops
    still compute tangents in a level, so forward over reverse gives H v (d^2 x^3 = 6 x)."""
    class Cube(tgrad.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        @tgrad.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t
    xn, vn = np.array([0.3, -0.5, 0.7]), np.array([1.0, 0.5, -2.0])
    _, hv = func.jvp(func.grad(lambda x: Cube.apply(x).sum()), (_t(xn),), (_t(vn),))
    np.testing.assert_allclose(hv.numpy(), 6 * xn * vn, rtol=1e-12)


def _fd_grad_dir(xn, vn, scale: float = 1.0):
    """Central finite difference, along vn, of scale * grad f (grad f by autograd at
    shifted points, float64): the reference for the tangent of an accumulated .grad."""
    def grad_at(a):
        p = _t(a).requires_grad_()
        _f(p).backward()
        return p.grad.numpy()
    return scale * (grad_at(xn + _H * vn) - grad_at(xn - _H * vn)) / (2 * _H)


def test_accumulated_grad_keeps_its_tangent():
    """Accumulating into an existing .grad inside a level (as PyTorch): with create_graph,
    .grad = old + new (tangents add); without, old += new in place adds new's tangent to
    old's (zeros where it had none); a first .grad made without create_graph has none."""
    xn, vn = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -1.0])
    fd1, fd2 = _fd_grad_dir(xn, vn), _fd_grad_dir(xn, vn, 2.0)
    np.testing.assert_allclose(fd1, _hess_f(xn) @ vn, rtol=1e-6)  # the reference itself

    def tangent(p):
        return fwAD.unpack_dual(p.grad).tangent.detach().numpy()

    for first_cg, second_cg in ((True, True), (True, False), (False, False)):
        p = _t(xn).requires_grad_()
        with fwAD.dual_level():
            x = fwAD.make_dual(p, _t(vn))
            _f(x).backward(create_graph=first_cg)
            if first_cg:
                np.testing.assert_allclose(tangent(p), fd1, rtol=1e-6)
            else:
                assert fwAD.unpack_dual(p.grad).tangent is None  # as PyTorch's
            _f(x).backward(create_graph=second_cg)
            # the first .grad's tangent is kept (PyTorch: 2 H v), or was none (H v)
            np.testing.assert_allclose(tangent(p), fd2 if first_cg else fd1, rtol=1e-6)
    # two paths into one leaf are summed before accumulation; then += a third
    p = _t(xn).requires_grad_()
    p.grad = tgrad.zeros(3, dtype=tgrad.float64)  # an existing plain .grad (zero_grad)
    with fwAD.dual_level():
        x = fwAD.make_dual(p, _t(vn))
        (_f(x) + _f(x)).backward()
        np.testing.assert_allclose(tangent(p), fd2, rtol=1e-6)
        _f(x).backward()
        np.testing.assert_allclose(tangent(p), _fd_grad_dir(xn, vn, 3.0), rtol=1e-6)
        np.testing.assert_allclose(p.grad.detach().numpy(),
                                   3 * (xn * np.cos(xn) + np.sin(xn) + (xn @ xn) * xn),
                                   rtol=1e-12)
        # a plain (tangent-free) gradient accumulated in place leaves the tangent as it is
        (p * 2.0).sum().backward()
        np.testing.assert_allclose(tangent(p), _fd_grad_dir(xn, vn, 3.0), rtol=1e-6)


def test_a_dual_grad_output_carries_its_tangent_through_cpu_fast_backwards():
    # The backward of stack (g's views made directly) and of cholesky_solve (LAPACK on the
    # CPU) have plain NumPy paths for when nothing is recorded; a dual grad_output inside a
    # dual_level is recorded (forward AD of the backward): the gradient's tangent is the
    # backward applied to the tangent (the vjp is linear in g), as with tgrad ops
    rng = np.random.default_rng(3)
    a = _t(rng.standard_normal((4, 4)))
    spd = a @ a.mT + 4 * tgrad.eye(4, dtype=tgrad.float64)
    low = tgrad.linalg.cholesky(spd).requires_grad_()
    b = _t(rng.standard_normal((4, 2))).requires_grad_()
    xs = [_t(rng.standard_normal(3)).requires_grad_() for _ in range(2)]
    cases = [(lambda: tgrad.cholesky_solve(b, low), [b, low], (4, 2)),
             (lambda: tgrad.stack(xs, 1), xs, (3, 2))]
    for fn, inputs, shape in cases:
        g, tangent = _t(rng.standard_normal(shape)), _t(rng.standard_normal(shape))
        want = tgrad.autograd.grad(fn(), inputs, tangent)
        with fwAD.dual_level():
            got = tgrad.autograd.grad(fn(), inputs, fwAD.make_dual(g, tangent))
            tangents = [fwAD.unpack_dual(x).tangent for x in got]
        for t, w in zip(tangents, want):
            assert t is not None
            np.testing.assert_allclose(t.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
