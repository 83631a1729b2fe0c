"""Forward-mode AD (tgrad.autograd.forward_ad, Function.jvp, tgrad.func.jvp / linearize /
jacfwd): tangents checked against central finite differences in float64 over the op table's
samples, and PyTorch's documented semantics (views, in-place, no_grad, errors, levels)."""

from __future__ import annotations

import numpy as np
import pytest
from test_opinfo import DIFF_SPECS, Built, _samples

import tgrad
import tgrad.autograd.forward_ad as fwAD
from tgrad import func

F64 = tgrad.float64


def _t(a) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64)


def _small_samples(spec, limit: int = 3) -> list:
    """The first ``limit`` samples whose floating inputs are non-empty and small."""
    out = []
    for s in _samples(spec):
        arrs = [a for a in s.args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        if arrs and all(a.size for a in arrs) and sum(a.size for a in arrs) <= 30:
            out.append(s)
        if len(out) == limit:
            break
    return out


def _float_outputs(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, tgrad.Tensor) and o.dtype.is_floating_point]


def _moved(spec, sample, args, tans, step) -> list:
    """The op's floating outputs at the arguments moved by ``step`` along the tangents."""
    moved = [_t(a.numpy() + step * tans[i].numpy()) if i in tans else a
             for i, a in enumerate(args)]
    return [o.numpy() for o in _float_outputs(spec.op(*moved, **sample.kwargs))]


# samples at a kink of the op (ties of the order statistics, integer-valued steps)
_FD_SKIP = {"sort_family_ties"}


@pytest.mark.parametrize("spec", [s for s in DIFF_SPECS if s.name not in _FD_SKIP],
                         ids=lambda s: s.name)
def test_jvp_matches_finite_differences(spec):
    for sample in _small_samples(spec):
        b = Built(spec, sample, "float64")
        args = list(b.args())
        rng = np.random.default_rng(0)
        fidx = [i for i, a in enumerate(args) if isinstance(a, tgrad.Tensor)
                and a.dtype.is_floating_point]
        tans = {i: _t(rng.standard_normal(args[i].shape)) for i in fidx}
        with fwAD.dual_level():
            dual_args = [fwAD.make_dual(a, tans[i]) if i in tans else a
                         for i, a in enumerate(args)]
            outs = _float_outputs(spec.op(*dual_args, **sample.kwargs))
            got = [fwAD.unpack_dual(o).tangent for o in outs]
        h = 1e-6
        plus, minus = (_moved(spec, sample, args, tans, sign * h) for sign in (1.0, -1.0))
        for g, p, m, o in zip(got, plus, minus, outs):
            want = (p - m) / (2 * h)
            assert g is not None, (spec.name, sample)
            assert g.shape == o.shape
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{spec.name} {sample}")


def test_make_unpack_and_levels():
    x = _t([0.1, 0.2, 0.3])
    t = _t([1.0, 2.0, 3.0])
    assert fwAD.unpack_dual(x) == (x, None)  # outside a level: no tangent
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        assert d._base is x  # a view of the primal
        p, tan = fwAD.unpack_dual(d)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        assert tan is t and fwAD.unpack_dual(p).tangent is None
        np.testing.assert_array_equal(p.numpy(), x.numpy())
        assert fwAD.unpack_dual(x).tangent is None  # the primal itself stays plain
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        # a tangent laid out differently is copied into the primal's layout
        s = fwAD.make_dual(x, _t(np.arange(6.0))[::2])
        assert fwAD.unpack_dual(s).tangent.stride() == x.stride()
        np.testing.assert_array_equal(fwAD.unpack_dual(s).tangent.numpy(), [0.0, 2.0, 4.0])
    assert fwAD.unpack_dual(d).tangent is None  # dropped with the level
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level(level=0)
    with pytest.raises(RuntimeError, match="not the last one"):
        fwAD.exit_dual_level(level=0)
    with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
        fwAD.exit_dual_level()


def test_make_dual_errors():
    x = _t([0.1, 0.2, 0.3])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"size \[3\] while the given forward gradient "
                                               r"is of size \[2\]"):
            fwAD.make_dual(x, _t([1.0, 2.0]))
        with pytest.raises(ValueError, match="Expected tangent to be floating point"):
            fwAD.make_dual(x, tgrad.tensor([1, 2, 3]))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(tgrad.tensor([1, 2, 3]), x)
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="already has a forward gradient"):
            fwAD.make_dual(d, x)
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwAD.make_dual(x, x, level=3)
        with pytest.raises(RuntimeError, match="Invalid level given to _fw_primal"):
            fwAD.unpack_dual(d, level=3)


def test_no_grad_integer_and_comparison_results():
    xv = np.array([0.1, -0.2, 0.3])
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(xv), tgrad.ones(3, dtype=F64))
        with tgrad.no_grad():
            y = (d * d).sin()
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(),
                                   2 * xv * np.cos(xv ** 2), rtol=1e-12)
        assert fwAD.unpack_dual(d.long()).tangent is None
        assert fwAD.unpack_dual(d > 0).tangent is None
        assert fwAD.unpack_dual(d.argmax()).tangent is None


def test_detach_and_detach_inplace_drop_the_tangent():
    # PyTorch: detach() and detach_() give a tensor with no forward gradient (a constant
    # for forward AD as for backward); the primal values stay
    xv = np.array([1.0, -2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(xv), _t([3.0, 4.0]))
        assert fwAD.unpack_dual(d.detach()).tangent is None
        y = d * 2
        assert y.detach_() is y and fwAD.unpack_dual(y).tangent is None
        np.testing.assert_array_equal(y.numpy(), 2 * xv)
        z = (y * d).sum()  # y a constant: d z = y . t
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.item(), (2 * xv) @ [3.0, 4.0])


def test_index_put_with_repeated_indices_writes_the_tangents_as_the_values():
    # PyTorch's rule: index_put's tangent is index_put of the tangents, so where an index
    # repeats, the tangent comes from the same (last) writer as the value; it is not the
    # sum of the writers' tangents
    xv, wv = np.arange(8.0).reshape(4, 2) + 1, np.arange(8.0).reshape(4, 2)
    idx = np.array([1, 2, 1, 2])
    want_p, want_t = xv.copy(), np.ones((4, 2))
    want_p[[1, 2]], want_t[[1, 2]] = (xv * wv)[[2, 3]], wv[[2, 3]]  # the last writers
    with fwAD.dual_level():
        for how in range(3):
            d = fwAD.make_dual(_t(xv), _t(np.ones((4, 2))))
            y, v = d * 1, d * _t(wv)  # v's tangent is wv
            if how == 0:
                y[tgrad.tensor(idx)] = v
            elif how == 1:
                y.index_put_((tgrad.tensor(idx),), v)
            else:
                y = y.index_put((tgrad.tensor(idx),), v)
            p, t = fwAD.unpack_dual(y)
            np.testing.assert_array_equal(p.numpy(), want_p)
            np.testing.assert_array_equal(t.numpy(), want_t)
        y = fwAD.make_dual(_t(xv), _t(np.ones((4, 2)))) * 1
        y[tgrad.tensor(idx)] = 5.0  # a number written: tangent 0 there
        want_t = np.ones((4, 2))
        want_t[[1, 2]] = 0.0
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), want_t)


@pytest.mark.parametrize("kw", [{}, {"scale_grad_by_freq": True}, {"padding_idx": 0}])
def test_embedding_tangent_is_the_weight_tangents_rows(kw):
    # y = weight[input] is linear in weight: ty = tweight[input]; padding_idx and
    # scale_grad_by_freq change only the backward (PyTorch's tangent keeps the pad row and
    # is not divided by the counts)
    import tgrad.nn.functional as F
    w = tgrad.tensor(np.arange(8.0).reshape(4, 2))
    tw = tgrad.tensor(np.arange(8.0).reshape(4, 2) * 0.1 + 1)
    idx = [2, 2, 1, 0]
    with fwAD.dual_level():
        y = F.embedding(tgrad.tensor(idx), fwAD.make_dual(w, tw), **kw)
        primal, tangent = fwAD.unpack_dual(y)
    np.testing.assert_array_equal(primal.numpy(), w.numpy()[idx])
    np.testing.assert_array_equal(tangent.numpy(), tw.numpy()[idx])


def test_views_and_inplace():
    x = _t([1.0, 2.0, 3.0, 4.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, _t([1.0, 1.0, 1.0, 1.0])).clone()
        v = d[1:3]
        tv = fwAD.unpack_dual(v).tangent
        td = fwAD.unpack_dual(d).tangent
        assert tv._storage is td._storage  # the tangent of a view is a view of the tangent
        v.mul_(3.0)  # in place through the view: the base's tangent changes too
        np.testing.assert_array_equal(fwAD.unpack_dual(d).tangent.numpy(), [1, 3, 3, 1])
        np.testing.assert_array_equal(d.numpy(), [1, 6, 9, 4])
        d.exp_()  # in place on the dual itself: t <- exp(x) t
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(),
                                   np.exp([1, 6, 9, 4]) * [1, 3, 3, 1], rtol=1e-12)
        # a plain base written through a view with a dual value gets a zero tangent elsewhere
        b = tgrad.zeros(5, dtype=F64)
        early = b[:2]  # a view taken before the write sees the base's new tangent
        src = fwAD.make_dual(_t([1.0, 2.0]), _t([5.0, 6.0]))
        b[1:3] = src
        np.testing.assert_array_equal(fwAD.unpack_dual(b).tangent.numpy(), [0, 5, 6, 0, 0])
        np.testing.assert_array_equal(fwAD.unpack_dual(early).tangent.numpy(), [0, 5])
        # writing a plain value over a dual zeroes that tangent
        d.zero_()
        np.testing.assert_array_equal(fwAD.unpack_dual(d).tangent.numpy(), [0, 0, 0, 0])


def test_reverse_over_forward():
    """A tangent that requires grad is recorded: backward through the jvp works."""
    xv = np.array([0.3, -0.7, 1.1])
    tv = np.array([1.0, 2.0, -1.0])
    t = _t(tv).requires_grad_()
    x = _t(xv).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        out = (d.sin() * d).sum()  # jvp = sum((cos x * x + sin x) t)
        jt = fwAD.unpack_dual(out).tangent
        assert jt.requires_grad
        np.testing.assert_allclose(jt.detach().item(), np.sum((np.cos(xv) * xv + np.sin(xv)) * tv))
        gx, gt = tgrad.autograd.grad(jt, (x, t))
    np.testing.assert_allclose(gt.numpy(), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)
    # d/dx of (cos x * x + sin x) t = (2 cos x - x sin x) t
    np.testing.assert_allclose(gx.numpy(), (2 * np.cos(xv) - xv * np.sin(xv)) * tv,
                               rtol=1e-12)
    with fwAD.dual_level():  # a plain tangent: nothing recorded
        d = fwAD.make_dual(_t(xv), _t(tv))
        assert not fwAD.unpack_dual(d.exp().sum()).tangent.requires_grad


def test_generic_rule_records_for_reverse():
    """An op without a direct rule (vjp of the vjp) is differentiable in the primal too."""
    xv = np.array([[0.3, -0.7, 1.1]])
    x = _t(xv).requires_grad_()
    tv = np.array([[1.0, 0.5, -1.0]])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, _t(tv))
        jt = fwAD.unpack_dual(tgrad.logsumexp(d, dim=1)).tangent
        (gx,) = tgrad.autograd.grad(jt.sum(), x)
    p = np.exp(xv) / np.exp(xv).sum()
    np.testing.assert_allclose(jt.detach().numpy(), (p * tv).sum(1), rtol=1e-12)
    # d/dx (p . t) = p * t - p (p . t)
    np.testing.assert_allclose(gx.numpy(), p * tv - p * (p * tv).sum(), rtol=1e-10)


class _Scale(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_forward(x, y)
        ctx.k = k
        return x * y * k

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("not used")

    @staticmethod
    def jvp(ctx, tx, ty, tk):
        assert tk is None  # not a tensor
        x, y = ctx.saved_tensors
        return (tx * y + x * ty) * ctx.k


class _SetupStyle(tgrad.autograd.Function):
    @staticmethod
    def forward(x):
        return x.exp(), x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_forward(output[0])

    @staticmethod
    def backward(ctx, g, h):
        raise AssertionError("not used")

    @staticmethod
    def jvp(ctx, tx):
        (e,) = ctx.saved_tensors
        return e * tx, tx * 2


class _NoJvp(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp():
    xv, yv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(xv), _t([1.0, 1.0]))
        out = _Scale.apply(d, _t(yv), 3.0)  # y has no tangent: its jvp input is zeros
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), yv * 3.0)
        e, two = _SetupStyle.apply(d)
        np.testing.assert_allclose(fwAD.unpack_dual(e).tangent.numpy(), np.exp(xv))
        np.testing.assert_allclose(fwAD.unpack_dual(two).tangent.numpy(), [2.0, 2.0])
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            _NoJvp.apply(d)
        assert fwAD.unpack_dual(_NoJvp.apply(_t(xv))).tangent is None  # no tangent: fine


def _custom(fwd, jvp, nondiff=False):
    class Fn(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = fwd(x)
            if nondiff:
                ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    Fn.jvp = staticmethod(lambda ctx, t: jvp(t))
    return Fn


@pytest.mark.parametrize("requires_grad", [False, True])
def test_custom_jvp_tangents_of_views_and_non_differentiable_outputs(requires_grad):
    # PyTorch's checks: an output that is a view of the input (or the input as is) needs a
    # tangent that is a view of the input's tangent; a non-differentiable output needs None
    other = tgrad.zeros(4, dtype=tgrad.float64)
    bad = [
        (lambda x: x, lambda t: t, "the jvp is not returning a view"),
        (lambda x: x[:2], lambda t: t[:2].clone(), "the jvp is not returning a view"),
        (lambda x: x, lambda t: t.clone().view_as(t), "not returning a view of the given grad"),
        (lambda x: x[:2], lambda t: other[:2], "not returning a view of the given grad"),
        (lambda x: x.long(), lambda t: t, "not a differentiable Tensor"),
    ]
    good = [  # the expected tangents, by hand: tangent (1, 1, 2, 2)
        (lambda x: x, lambda t: t.view_as(t), False, [1.0, 1.0, 2.0, 2.0]),
        (lambda x: x[:2], lambda t: t[:2], False, [1.0, 1.0]),
        (lambda x: x * 2, lambda t: t[:] * 2, False, [2.0, 2.0, 4.0, 4.0]),
        (lambda x: x.long(), lambda t: None, False, None),
        (lambda x: x * 2, lambda t: None, True, None),
    ]
    with fwAD.dual_level():
        d = fwAD.make_dual(_t([1.0, 2.0, 3.0, 4.0]).requires_grad_(requires_grad),
                           _t([1.0, 1.0, 2.0, 2.0]))
        for fwd, jvp, text in bad:
            with pytest.raises(RuntimeError, match=text):
                _custom(fwd, jvp).apply(d)
        with pytest.raises(RuntimeError, match="not a differentiable Tensor"):
            _custom(lambda x: x * 3, lambda t: t * 3, nondiff=True).apply(d)
        for fwd, jvp, nondiff, want in good:
            tan = fwAD.unpack_dual(_custom(fwd, jvp, nondiff).apply(d)).tangent
            assert (tan is None) if want is None else tan.tolist() == want


def test_func_jvp_linearize_jacfwd_against_jacrev():
    rng = np.random.default_rng(1)
    x, w = _t(rng.standard_normal((2, 3))), _t(rng.standard_normal(3))

    def f(x, w):
        return (x.exp() @ w).sin(), x.sum()

    jf = func.jacfwd(f, (0, 1))(x, w)
    jr = func.jacrev(f, (0, 1))(x, w)
    for a_out, b_out in zip(jf, jr):
        for a, b in zip(a_out, b_out):
            assert a.shape == b.shape
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    tx, tw = _t(rng.standard_normal((2, 3))), _t(rng.standard_normal(3))
    (o1, o2), (j1, j2) = func.jvp(f, (x, w), (tx, tw))
    want = (np.einsum("oij,ij->o", jr[0][0].numpy(), tx.numpy())
            + jr[0][1].numpy() @ tw.numpy())
    np.testing.assert_allclose(j1.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(j2.item(), tx.numpy().sum())
    np.testing.assert_allclose(o1.numpy(), np.sin(np.exp(x.numpy()) @ w.numpy()))
    assert fwAD.unpack_dual(o1).tangent is None
    out, jvp_fn = func.linearize(lambda a: a.tanh() * 2, w)
    np.testing.assert_allclose(jvp_fn(tw).numpy(), 2 * tw.numpy() / np.cosh(w.numpy()) ** 2,
                               rtol=1e-12)
    (o, j, aux) = func.jvp(lambda a: (a.exp(), a.cos()), (w,), (tw,), has_aux=True)
    np.testing.assert_allclose(aux.numpy(), np.cos(w.numpy()))
    np.testing.assert_allclose(j.numpy(), np.exp(w.numpy()) * tw.numpy(), rtol=1e-12)
    jac, aux = func.jacfwd(lambda a: (a * a, a.sum()), has_aux=True)(w)
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * w.numpy()))
    with pytest.raises(RuntimeError, match="same python structure"):
        func.jvp(f, (x, w), (tx,))
    with pytest.raises(RuntimeError, match="same shape"):
        func.jvp(f, (x, w), (tw, tw))
    # second derivatives by forward over reverse (as PyTorch)
    cube = lambda a: (a ** 3).sum()  # noqa: E731
    for hess in (func.jacfwd(func.jacrev(cube)), func.hessian(cube)):
        np.testing.assert_allclose(hess(w).numpy(), np.diag(6 * w.numpy()), rtol=1e-12)
    g, hv = func.jvp(func.grad(cube), (w,), (tw,))
    np.testing.assert_allclose(g.numpy(), 3 * w.numpy() ** 2, rtol=1e-12)
    np.testing.assert_allclose(hv.numpy(), 6 * w.numpy() * tw.numpy(), rtol=1e-12)
    with fwAD.dual_level():
        hv2 = fwAD.unpack_dual(func.grad(cube)(fwAD.make_dual(w, tw))).tangent
        np.testing.assert_allclose(hv2.numpy(), 6 * w.numpy() * tw.numpy(), rtol=1e-12)


class _SquareBackUsesNoJvp(tgrad.autograd.Function):
    """x * x whose backward runs a custom Function without jvp on the saved (dual) x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _NoJvp.apply(x) * g  # 2 x g

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return 2 * x * tx


def test_backward_in_a_level_through_a_function_without_jvp_raises():
    """Backward passes run inside the level (forward over reverse): a custom Function
    without jvp applied to a saved dual tensor in a backward raises, as PyTorch's."""
    p = _t([1.0, 2.0]).requires_grad_()
    with fwAD.dual_level():
        x = fwAD.make_dual(p, _t([1.0, 1.0]))
        with pytest.raises(NotImplementedError, match="implement the jvp function"):
            _SquareBackUsesNoJvp.apply(x).sum().backward()


def test_generic_rule_with_dependent_inputs_while_recording():
    """The generic (vjp of vjp) rule with inputs that depend on each other and require grad
    (grad mode on: the tangent is recorded): atan2(x, exp(x)) has tangent
    (exp(x) - x exp(x)) / (x^2 + exp(2x)) t, each input's tangent counted once.
    (Forward over reverse: tests/test_forward_over_reverse.py.)"""
    xv, tv = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -1.0])
    e = np.exp(xv)
    want = (e - xv * e) / (xv ** 2 + e ** 2) * tv
    for rg in (False, True):
        with fwAD.dual_level():
            x = fwAD.make_dual(_t(xv).requires_grad_(rg), _t(tv))
            t = fwAD.unpack_dual(tgrad.atan2(x, x.exp())).tangent
            np.testing.assert_allclose(t.detach().numpy(), want, rtol=1e-12)


def test_output_tangents_do_not_share_memory_with_input_tangents():
    ones = np.ones(3)
    with fwAD.dual_level():
        x = fwAD.make_dual(_t([1.0, 2.0, 3.0]), _t(ones))
        y = x + 1
        y.mul_(3)
        np.testing.assert_array_equal(fwAD.unpack_dual(x).tangent.numpy(), ones)
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), 3 * ones)
        for z in (x + tgrad.zeros(2, 3, dtype=F64), tgrad.zeros(2, 3, dtype=F64) + x,
                  tgrad.zeros(2, 3, dtype=F64) - x):  # broadcast tangents, written in place
            z.mul_(3)
            tz = fwAD.unpack_dual(z).tangent
            assert tz.shape == (2, 3)
            np.testing.assert_array_equal(np.abs(tz.numpy()), np.full((2, 3), 3.0))
        y = x + 0
        x.mul_(2)  # x's tangent becomes 2; y's stays 1
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), ones)
        np.testing.assert_array_equal(fwAD.unpack_dual(x).tangent.numpy(), 2 * ones)
        v = x[1:]  # a view's tangent is still the view of the tangent
        x.mul_(2)
        np.testing.assert_array_equal(fwAD.unpack_dual(v).tangent.numpy(), [4.0, 4.0])


def test_generic_rule_runs_the_forward_once():
    """dropout's tangent uses the primal's mask, the generator advances once, and the
    primal requires grad exactly when an input does."""
    nnf = tgrad.nn.functional
    tgrad.manual_seed(0)
    p = tgrad.ones(64, dtype=F64, requires_grad=True)
    with fwAD.dual_level():
        y = nnf.dropout(fwAD.make_dual(p, 3 * tgrad.ones(64, dtype=F64)), 0.5)
        after = tgrad.rand(4).tolist()
        prim, tan = fwAD.unpack_dual(y)
        np.testing.assert_array_equal(tan.numpy(), 3 * prim.detach().numpy())
        assert y.requires_grad
        y.sum().backward()
        np.testing.assert_array_equal(p.grad.numpy(), prim.detach().numpy())
        assert not nnf.dropout(fwAD.make_dual(_t(np.ones(4)), _t(np.ones(4))), 0.5).requires_grad
        with tgrad.no_grad():
            assert not tgrad.logsumexp(fwAD.make_dual(p, _t(np.ones(64))), 0).requires_grad
    tgrad.manual_seed(0)
    nnf.dropout(tgrad.ones(64, dtype=F64), 0.5)
    assert tgrad.rand(4).tolist() == after
    # an input with a tangent that does not require grad gets no edge in the primal's node
    av, bv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    a = _t(av).requires_grad_()
    with fwAD.dual_level():
        y = tgrad.atan2(fwAD.make_dual(a, _t([1.0, 0.0])), fwAD.make_dual(_t(bv), _t([0.0, 1.0])))
        assert y.grad_fn.next_functions[1] == (None, 0)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.detach().numpy(),
                                   [bv[0], -av[1]] / (av ** 2 + bv ** 2), rtol=1e-12)
        y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), bv / (av ** 2 + bv ** 2), rtol=1e-12)


def test_rules_follow_the_op_class():
    """Classes sharing an op name get their own rule: div with rounding_mode and
    round(decimals) have zero derivative; select, full sum / mean, t, squeeze, unsqueeze
    and transpose are linear in their input."""
    xv = np.array([[3.0, 5.0, -2.5]])
    tv = np.array([[1.0, 2.0, -4.0]])
    with fwAD.dual_level():
        x = fwAD.make_dual(_t(xv), _t(tv))
        for out in (x.div(2.0, rounding_mode="floor"), x.div(2.0, rounding_mode="trunc"),
                    _t([2.0, 4.0, 1.0]).div(x, rounding_mode="floor"), x.round(decimals=1)):
            np.testing.assert_array_equal(fwAD.unpack_dual(out).tangent.numpy(),
                                          np.zeros(out.shape))
        cases = [(x[0], tv[0]), (x[0, 1], tv[0, 1]), (x.sum(), tv.sum()),
                 (x.mean(), tv.mean()), (x.t(), tv.T), (x.squeeze(), tv[0]),
                 (x.unsqueeze(0), tv[None]), (x.transpose(0, 1), tv.T)]
        for out, want in cases:
            np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), want,
                                       rtol=1e-15)


class _SavesBoth(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.cos())
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (c,) = ctx.saved_tensors
        return g * c

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return x.cos() * tx


def test_custom_jvp_and_backward_see_their_own_saved_tensors():
    xv, tv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    p = _t(xv).requires_grad_()
    with fwAD.dual_level():
        y = _SavesBoth.apply(fwAD.make_dual(p, _t(tv)))
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.detach().numpy(), np.cos(xv) * tv)
        assert type(y.grad_fn).__name__ == "_SavesBothBackward"
        y.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), np.cos(xv), rtol=1e-15)


def test_tangents_flow_through_complex_results():
    # real -> complex -> real in forward mode (PyTorch's; tgrad refused it before): the
    # tangent of |v (1 + 2i)| = sqrt(5) |v| (tests/test_forward_ad_complex.py has the rest)
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64)
    f = lambda v: (v * (1 + 2j)).abs()  # noqa: E731
    np.testing.assert_allclose(func.jacfwd(f)(x).numpy(), np.sqrt(5.0) * np.eye(2),
                               rtol=1e-12)
    out, jv = func.jvp(f, (x,), (tgrad.ones(2, dtype=tgrad.float64),))
    np.testing.assert_allclose(jv.numpy(), [np.sqrt(5.0)] * 2, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), np.sqrt(5.0) * x.numpy(), rtol=1e-12)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tgrad.ones(2, dtype=tgrad.float64))
        np.testing.assert_allclose(fwAD.unpack_dual(d * 1j).tangent.numpy(), [1j, 1j])
        np.testing.assert_allclose(fwAD.unpack_dual(tgrad.complex(d, 2 * d)).tangent.numpy(),
                                   [1 + 2j, 1 + 2j])


def _fd_jvp(f, xn: np.ndarray, vn: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite difference of ``f`` (NumPy in, NumPy out) along ``vn`` at ``xn``."""
    return (f(xn + eps * vn) - f(xn - eps * vn)) / (2 * eps)


def test_levels_are_per_thread_and_concurrent_use_is_correct():
    # Two threads in a dual level at once (Barrier-forced overlap at each step): each
    # thread's tangents are right, and neither sees the other's level. PyTorch's levels are
    # process-wide (a second thread's dual_level raises "Nested forward mode AD"); tgrad's
    # are per thread, so concurrent forward AD is safe.
    import threading

    def f_np(a):
        return np.exp(np.sin(a) * a) + np.tanh(a) ** 2

    def f(a):
        return (a.sin() * a).exp() + a.tanh() ** 2

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(5) for _ in range(2)]
    vs = [rng.standard_normal(5) for _ in range(2)]
    bar = threading.Barrier(2, timeout=60)
    got, errors, seen = {}, [], {}

    def work(i: int) -> None:
        try:
            x, v = _t(xs[i]), _t(vs[i])
            for _ in range(20):
                bar.wait()
                with fwAD.dual_level():
                    d = fwAD.make_dual(x, v)
                    bar.wait()  # both threads are inside a level
                    y = f(d)
                    bar.wait()
                    got.setdefault(("level", i), []).append(fwAD.unpack_dual(y).tangent)
                # tgrad.func.jvp and jacfwd (each enter a level) at the same time
                bar.wait()
                got.setdefault(("jvp", i), []).append(func.jvp(f, (x,), (v,))[1])
                got.setdefault(("jacfwd", i), []).append(func.jacfwd(f)(x) @ v)
            # a level entered here is not active in the other thread
            if i == 0:
                with fwAD.dual_level():
                    seen["dual"] = fwAD.make_dual(x, v)
                    bar.wait()  # thread 1 looks now
                    bar.wait()
            else:
                bar.wait()
                dual = seen["dual"]
                seen["unpack"] = fwAD.unpack_dual(dual).tangent
                seen["op"] = fwAD.unpack_dual(dual * 2).tangent
                with fwAD.dual_level():  # a level of its own: no "Nested" error
                    seen["own"] = fwAD.unpack_dual(dual).tangent
                bar.wait()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
            bar.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(2):
        ref = _fd_jvp(f_np, xs[i], vs[i])
        for kind in ("level", "jvp", "jacfwd"):
            assert len(got[(kind, i)]) == 20
            for t in got[(kind, i)]:
                np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6, atol=1e-8)
    assert seen["unpack"] is None and seen["op"] is None and seen["own"] is None
    assert fwAD.unpack_dual(seen["dual"]).tangent is None  # nor in the main thread
    assert not tgrad.func._forward_level_active()


def test_inplace_view_ops_carry_the_tangent():
    # squeeze_ / t_ re-point the tensor at a view: its tangent is viewed the same way
    with fwAD.dual_level():
        x = fwAD.make_dual(_t([[1.0, 2.0]]), _t([[3.0, 4.0]]))
        y = (x * 1.0).squeeze_(0)
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0, 4.0]
        z = (x * 1.0).t_()
        assert fwAD.unpack_dual(z).tangent.tolist() == [[3.0], [4.0]]
        m = fwAD.make_dual(_t([[1.0, 2.0], [3.0, 5.0]]), _t([[1.0, 0.0], [0.0, 1.0]]))
        out = _t([2.0, -1.0]) @ m  # a 1-D operand: the product squeezed in place
        assert fwAD.unpack_dual(out).tangent.tolist() == [2.0, -1.0]  # v @ I


def test_embedding_max_norm_renorm_is_not_differentiated_in_forward_ad():
    # the in-place renorm of max_norm is outside autograd (PyTorch's): the tangent is
    # tweight[input], unscaled (the transpose of the backward's scatter), and the primal
    # rows are scaled by max_norm / (norm + 1e-7)
    import tgrad.nn.functional as F
    w = np.array([[3.0, 4.0], [1.0, 0.0], [0.3, 0.4]])
    tw = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    idx = [0, 2, 0]
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(w), _t(tw)) * 1
        y = F.embedding(tgrad.tensor(idx), d, max_norm=1.0)
        primal, tangent = fwAD.unpack_dual(y)
    want = w.copy()
    want[0] *= 1.0 / (5.0 + 1e-7)
    np.testing.assert_allclose(primal.numpy(), want[idx], rtol=1e-15)
    np.testing.assert_array_equal(tangent.numpy(), tw[idx])


@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_max_unpool_tangent_with_a_repeated_index_keeps_one_writer(spatial):
    # overlapping pool windows give a repeated index; the unpool writes the (equal) value
    # once, so its tangent is written once too (finite differences: the writes are of the
    # same tangent), never the sum of the writers' tangents
    import tgrad.nn.functional as F
    x = np.array([0.1, -0.1, 0.6, 0.1, -0.5, 0.4]).reshape((1, 1) + (1,) * (spatial - 1)
                                                          + (6,))
    t = np.array([1.3, 0.2, -0.7, -1.2, 0.3, 0.04]).reshape(x.shape)
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial]
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[spatial]
    ks = (1,) * (spatial - 1) + (2,)
    st = (1,) * spatial

    def f(v):
        y, idx = pool(v, ks if spatial > 1 else 2, st if spatial > 1 else 1,
                      return_indices=True)
        return unpool(y, idx, ks if spatial > 1 else 2, st if spatial > 1 else 1,
                      output_size=x.shape[2:])

    _, tangent = tgrad.func.jvp(f, (_t(x),), (_t(t),))
    # windows (0,1) (1,2) (2,3) (3,4) (4,5) take 0, 2, 2, 3, 5: positions 0, 2, 3, 5
    want = np.zeros(6)
    want[[0, 2, 3, 5]] = t.reshape(-1)[[0, 2, 3, 5]]
    np.testing.assert_allclose(tangent.numpy().reshape(-1), want, rtol=0, atol=0)
    h = 1e-6  # and the finite difference of the function agrees
    fd = (f(_t(x + h * t)).numpy() - f(_t(x - h * t)).numpy()) / (2 * h)
    np.testing.assert_allclose(tangent.numpy(), fd, atol=1e-8)


def test_xlogy_xlog1py_and_logit_tangents_at_their_singular_points():
    # PyTorch's forward formulas: xlogy(tx, y) (0 where x == 0 and y <= 0) + ty x / y, the
    # same for xlog1py with y + 1, and logit'(x) t with NaN outside [0, 1] (the vjp of the
    # vjp gave 0 where the derivative is -inf or NaN); regular points against central
    # differences
    x = np.array([0.3, 1.0, 2.0, 0.0])
    y = np.array([0.0, -1.0, 3.0, -2.0])
    tx, ty = np.array([1.0, 1.0, 1.0, 1.0]), np.array([0.5, 0.5, 0.5, 0.5])
    cases = [(tgrad.xlogy, y, [-np.inf, np.nan, np.log(3.0) + 0.5 * 2.0 / 3.0, 0.0]),
             (tgrad.special.xlog1py, y - 1.0, [-np.inf, np.nan,
                                               np.log(3.0) + 0.5 * 2.0 / 3.0, 0.0])]
    for fn, yv, want in cases:
        with fwAD.dual_level():
            out = fn(fwAD.make_dual(_t(x), _t(tx)), _t(yv))  # (y's tangent: 0 / 0 at y = 0)
            got_x = fwAD.unpack_dual(out).tangent.numpy()
            out = fn(fwAD.make_dual(_t(x), _t(tx)), fwAD.make_dual(_t(yv), _t(ty)))
            got = fwAD.unpack_dual(out).tangent.numpy()
        np.testing.assert_allclose(got_x, want[:2] + [np.log(3.0), 0.0], rtol=1e-14)
        eps = 1e-6
        fd = (fn(_t(x[2:3] + eps * tx[2:3]), _t(yv[2:3] + eps * ty[2:3])).numpy() -
              fn(_t(x[2:3] - eps * tx[2:3]), _t(yv[2:3] - eps * ty[2:3])).numpy()) / (2 * eps)
        np.testing.assert_allclose(got[2:3], fd, rtol=1e-8)
    z = np.array([-0.5, 0.3, 1.5])
    with fwAD.dual_level():
        out = tgrad.logit(fwAD.make_dual(_t(z), _t(np.ones(3))))
        got = fwAD.unpack_dual(out).tangent.numpy()
        clamped = tgrad.logit(fwAD.make_dual(_t(z), _t(np.ones(3))), eps=0.1)
        got_eps = fwAD.unpack_dual(clamped).tangent.numpy()
    np.testing.assert_allclose(got, [np.nan, 1 / (0.3 * 0.7), np.nan], rtol=1e-14)
    np.testing.assert_allclose(got_eps, [0.0, 1 / (0.3 * 0.7), 0.0], rtol=1e-14)


def test_out_forms_and_resize_refuse_dual_tensors():
    # PyTorch's out= functions have no forward-AD formula: a tangent on an input or on out
    # raises (tgrad dropped the derivative, or left out's old tangent beside new values);
    # resize_ of a dual tensor raises (its tangent kept the old shape)
    with fwAD.dual_level():
        x = fwAD.make_dual(tgrad.tensor([0.0, 1.0]), tgrad.tensor([1.0, 1.0]))
        with pytest.raises(NotImplementedError, match="forward AD with exp_out"):
            tgrad.exp(x, out=tgrad.zeros(2))
        d = fwAD.make_dual(tgrad.zeros(2), tgrad.tensor([5.0, 5.0]))
        with pytest.raises(NotImplementedError, match="forward AD with add_out"):
            tgrad.add(tgrad.tensor([0.0, 1.0]), 1, out=d)
        with pytest.raises(NotImplementedError, match="forward AD with aten::zeros"):
            tgrad.zeros(2, out=d)
        o = tgrad.zeros(2)  # no tangent anywhere: out= works inside the level
        tgrad.exp(tgrad.tensor([0.0, 1.0]), out=o)
        np.testing.assert_allclose(o.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
        r = fwAD.make_dual(tgrad.tensor([1.0, 2.0, 3.0]), tgrad.tensor([5.0, 6.0, 7.0]))
        with pytest.raises(RuntimeError, match="cannot resize variables that has a forward "
                                               "grad"):
            r.resize_(2)
        assert fwAD.unpack_dual(r).primal.shape == (3,)


@pytest.mark.parametrize("in_place", [True, False])
def test_an_in_place_custom_function_must_modify_the_tangent_in_place(in_place):
    # PyTorch's rule for a Function that marks an input dirty: its jvp returns that input's
    # tangent, modified in place (tgrad took a new tensor silently)
    class Double(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t.mul_(2) if in_place else t * 2

    with fwAD.dual_level():
        c = fwAD.make_dual(tgrad.tensor([1.0, 2.0]), tgrad.tensor([1.0, 3.0])).clone()
        if not in_place:
            with pytest.raises(RuntimeError, match="An inplace custom Function is not "
                                                   "modifying the forward mode gradients"):
                Double.apply(c)
            return
        y = Double.apply(c)
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), [2.0, 6.0])
        np.testing.assert_array_equal(fwAD.unpack_dual(c).tangent.numpy(), [2.0, 6.0])
        np.testing.assert_array_equal(c.numpy(), [2.0, 4.0])


def test_inplace_through_a_view_as_complex_view_reaches_the_base_tangent():
    # view_as_complex's tangent is now the same view of the base's tangent, so an in-place
    # op through it updates the base's tangent (it kept the old one): z = y as complex,
    # z *= 1j maps (a, b) -> (-b, a) for the values and the tangents alike
    with fwAD.dual_level():
        x = fwAD.make_dual(tgrad.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=tgrad.float64),
                           tgrad.tensor([[10.0, 20.0], [5.0, 7.0]], dtype=tgrad.float64))
        y = x * 1
        z = tgrad.view_as_complex(y)
        z.mul_(1j)
        p, t = fwAD.unpack_dual(y)
        np.testing.assert_array_equal(p.numpy(), [[-2.0, 1.0], [1.0, 3.0]])
        np.testing.assert_array_equal(t.numpy(), [[-20.0, 10.0], [-7.0, 5.0]])
        y2 = x * 1
        tgrad.view_as_complex(y2)[1:].add_(fwAD.make_dual(
            tgrad.tensor([1 + 1j], dtype=tgrad.complex128),
            tgrad.tensor([2 + 3j], dtype=tgrad.complex128)))
        np.testing.assert_array_equal(fwAD.unpack_dual(y2).tangent.numpy(),
                                      [[10.0, 20.0], [7.0, 10.0]])
