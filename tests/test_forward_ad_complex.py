"""Forward-mode AD with complex tensors (PyTorch's convention): the tangent of f at z along
t is the R-linear map (df/dz) t + (df/dz̄) conj(t), i.e. the directional derivative of f
seen as a function of (Re z, Im z), which a central finite difference
(f(z + h t) - f(z - h t)) / 2h gives. Checked over the op table's samples with complex128
inputs and tangents, for dual tensors, tgrad.func.jvp / jacfwd, and against hand-computed
Wirtinger derivatives; PyTorch's errors where it refuses (jacfwd/jacrev of complex inputs or
outputs)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_complex import _complex_table_cases

import tgrad
import tgrad.autograd.forward_ad as fwAD
from tgrad import func

C128, F64 = tgrad.complex128, tgrad.float64
Z = np.array([1 + 2j, -0.5 + 0.25j, 0.3 - 1.1j])
T = np.array([0.3 - 1j, 2 + 0.1j, -0.7 + 0.4j])


def _c(a) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(a, dtype=np.complex128), dtype=C128)


def _r(a) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64)


def _diff_outputs(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, tgrad.Tensor)
            and (o.dtype.is_floating_point or o.dtype.is_complex)]


def _fd(f, zs: list, ts: list, h: float = 1e-6) -> list:
    """Central differences of ``f`` (tgrad tensors in, list of NumPy arrays out) along the
    tangents: the R-linear tangent."""
    plus = f([z + h * t for z, t in zip(zs, ts)])
    minus = f([z - h * t for z, t in zip(zs, ts)])
    return [(p - m) / (2 * h) for p, m in zip(plus, minus)]


def _call_quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# --------------------------------------------------------------- the op table, complex128
@pytest.mark.parametrize("spec, sample", _complex_table_cases())
def test_op_table_complex_tangents_match_finite_differences(spec, sample):
    """Every op of the tables that computes complex128 inputs: its tangent along random
    complex tangents equals the central finite difference. An op that takes complex inputs
    but has no complex derivative must refuse forward mode, as it refuses reverse mode,
    with an error naming the complex dtype (never a silent or a wrong tangent)."""
    from test_opinfo import Built, _to_domain
    rng = np.random.default_rng(7)
    arrs = [_to_domain(a, spec.domain) + 0.5j * rng.standard_normal(a.shape)
            if a.dtype.kind == "f" else a
            for a in sample.args if isinstance(a, np.ndarray)]
    built = Built(spec, sample, "float64", arrays=arrs)
    args = list(built.args())
    cidx = [i for i, a in enumerate(args) if isinstance(a, tgrad.Tensor) and a.dtype.is_complex]
    assert cidx, spec.name
    try:
        plain = _call_quiet(lambda: spec.op(*args, **sample.kwargs))
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        assert "complex" in str(e).lower(), f"{spec.name}: unclear error for complex: {e!r}"
        with fwAD.dual_level(), pytest.raises(type(e)):  # no different behaviour in a level
            duals = [fwAD.make_dual(a, tgrad.zeros_like(a)) if i in cidx else a
                     for i, a in enumerate(args)]
            _call_quiet(lambda: spec.op(*duals, **sample.kwargs))
        return
    tans = {i: _c(rng.standard_normal(args[i].shape) + 1j * rng.standard_normal(args[i].shape))
            for i in cidx}
    try:
        with fwAD.dual_level():
            duals = [fwAD.make_dual(a, tans[i]) if i in tans else a for i, a in enumerate(args)]
            outs = _diff_outputs(_call_quiet(lambda: spec.op(*duals, **sample.kwargs)))
            got = [fwAD.unpack_dual(o).tangent for o in outs]
    except (RuntimeError, NotImplementedError) as e:
        # no complex derivative: reverse mode must refuse as well, naming complex
        assert "complex" in str(e).lower(), f"{spec.name}: unclear error for complex: {e!r}"
        leaves = [a.detach().requires_grad_() if i in cidx else a for i, a in enumerate(args)]
        with pytest.raises((RuntimeError, NotImplementedError), match="(?i)complex"):
            for o in _diff_outputs(_call_quiet(lambda: spec.op(*leaves, **sample.kwargs))):
                if o.requires_grad:
                    tgrad.autograd.grad(o.abs().sum(), [leaves[i] for i in cidx],
                                        allow_unused=True)
        return

    def moved(zs):
        new = list(args)
        for i, z in zip(cidx, zs):
            new[i] = z
        return [o.detach().numpy() for o in
                _diff_outputs(_call_quiet(lambda: spec.op(*new, **sample.kwargs)))]
    want = _fd(moved, [args[i] for i in cidx], [tans[i] for i in cidx])
    assert len(got) == len(want) == len(_diff_outputs(plain)), spec.name
    for g, w, o in zip(got, want, outs):
        assert g is not None, (spec.name, sample)
        assert g.shape == o.shape and g.dtype is o.dtype, (spec.name, g.dtype, o.dtype)
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{spec.name} {sample}")


# --------------------------------------------------------------- dual tensors, by hand
@pytest.mark.parametrize("name, fn, tangent", [
    # holomorphic: f'(z) t
    ("exp", lambda z: z.exp(), lambda z, t: np.exp(z) * t),
    ("sin", lambda z: z.sin(), lambda z, t: np.cos(z) * t),
    ("log", lambda z: z.log(), lambda z, t: t / z),
    ("sqrt", lambda z: z.sqrt(), lambda z, t: t / (2 * np.sqrt(z))),
    ("tanh", lambda z: z.tanh(), lambda z, t: (1 - np.tanh(z) ** 2) * t),
    ("reciprocal", lambda z: z.reciprocal(), lambda z, t: -t / z ** 2),
    ("square_mul", lambda z: z.square() * z, lambda z, t: 3 * z ** 2 * t),
    ("neg", lambda z: -z, lambda z, t: -t),
    # not holomorphic: (df/dz) t + (df/dz̄) conj(t)
    ("conj", lambda z: z.conj(), lambda z, t: np.conj(t)),
    ("real", lambda z: z.real, lambda z, t: t.real),
    ("imag", lambda z: z.imag, lambda z, t: t.imag),
    ("abs", lambda z: z.abs(), lambda z, t: (np.conj(z) * t).real / np.abs(z)),
    ("angle", lambda z: z.angle(), lambda z, t: (np.conj(z) * t).imag / np.abs(z) ** 2),
    ("abs_sq", lambda z: z * z.conj(), lambda z, t: 2 * (np.conj(z) * t).real + 0j),
    ("sgn", lambda z: z.sgn(),
     lambda z, t: t / np.abs(z) - z * (np.conj(z) * t).real / np.abs(z) ** 3),
    ("view_as_real", lambda z: tgrad.view_as_real(z),
     lambda z, t: np.stack([t.real, t.imag], -1)),
])
def test_dual_tangents_against_wirtinger_derivatives(name, fn, tangent):
    z, t = _c(Z), _c(T)
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(z, t))
        got = fwAD.unpack_dual(out).tangent
    want = tangent(Z, T)
    assert got is not None and got.dtype is out.dtype
    assert got.dtype is (C128 if np.iscomplexobj(want) else F64), name
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)


def test_real_to_complex_and_back():
    # complex(x, y), polar, view_as_complex and a complex intermediate of a real function
    x, y = np.array([0.5, 1.5]), np.array([-1.0, 0.25])
    tx, ty = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    with fwAD.dual_level():
        dx, dy = fwAD.make_dual(_r(x), _r(tx)), fwAD.make_dual(_r(y), _r(ty))
        c = fwAD.unpack_dual(tgrad.complex(dx, dy)).tangent
        p = fwAD.unpack_dual(tgrad.polar(dx, dy)).tangent
        v = fwAD.unpack_dual(tgrad.view_as_complex(tgrad.stack([dx, dy], -1))).tangent
        a = fwAD.unpack_dual((dx * (1 + 2j)).abs()).tangent  # |x (1 + 2i)| = sqrt(5) |x|
    assert c.dtype is p.dtype is v.dtype is C128 and a.dtype is F64
    np.testing.assert_allclose(c.numpy(), tx + 1j * ty, rtol=1e-15)
    np.testing.assert_allclose(v.numpy(), tx + 1j * ty, rtol=1e-15)
    # d(r e^{i a}) = e^{i a} (dr + i r da)
    np.testing.assert_allclose(p.numpy(), np.exp(1j * y) * (tx + 1j * x * ty), rtol=1e-12)
    np.testing.assert_allclose(a.numpy(), np.sqrt(5.0) * np.sign(x) * tx, rtol=1e-12)


def test_make_dual_mixed_real_and_complex_as_pytorch():
    """PyTorch takes a real tangent for a complex primal (it enters ops as complex) and a
    complex tangent for a real primal (the ops linear in it keep it complex, the others drop
    its imaginary part, with a warning);
    unpack_dual returns the tangent as given."""
    x = _r([0.5, -1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(_c(Z[:2]), x)
        assert fwAD.unpack_dual(d).tangent.dtype is F64
        np.testing.assert_allclose(fwAD.unpack_dual(d.sin()).tangent.numpy(),
                                   np.cos(Z[:2]) * x.numpy(), rtol=1e-12)
        r = fwAD.make_dual(x, _c(T[:2]))
        assert fwAD.unpack_dual(r).tangent.dtype is C128
        with pytest.warns(UserWarning, match="discards the imaginary part"):
            s = fwAD.unpack_dual(r.sin()).tangent
        assert s.dtype is F64
        np.testing.assert_allclose(s.numpy(), np.cos(x.numpy()) * T[:2].real, rtol=1e-12)
        # ... but ops linear in the tangent keep it complex (PyTorch's formulas: 2 d ->
        # 2 t, d.sum() -> sum t, d * d -> 2 x t, views, cat; tgrad dropped it everywhere)
        xv, tv = x.numpy(), T[:2]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no imaginary part dropped
            for f, want in ((lambda v: v * 2, 2 * tv), (lambda v: v.sum(), tv.sum()),
                            (lambda v: v * v, 2 * xv * tv), (lambda v: v / 4 - 1, tv / 4),
                            (lambda v: v + v[:1], tv + tv[0]), (lambda v: v.mean(), tv.mean()),
                            (lambda v: v.view(2, 1), tv.reshape(2, 1)),
                            (lambda v: v.cumsum(0), np.cumsum(tv)),
                            (lambda v: tgrad.cat([v, v]), np.concatenate([tv, tv]))):
                got = fwAD.unpack_dual(f(r)).tangent
                assert got.dtype is C128
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        for f, want in ((lambda v: -v, -tv.real), (tgrad.exp, np.exp(xv) * tv.real)):
            with pytest.warns(UserWarning, match="discards the imaginary part"):
                got = fwAD.unpack_dual(f(r)).tangent
            assert got.dtype is F64
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        with pytest.raises(ValueError, match="Expected tangent to be floating point or "
                                             "complex"):
            fwAD.make_dual(_c(Z), tgrad.tensor([1, 2, 3]))


def test_generic_rule_is_r_linear_and_records_for_reverse():
    """An op without a direct rule (vjp of the vjp) gives the R-linear tangent for complex
    (cumprod: not just f'(z) t summed), and reverse over forward differentiates it."""
    zv = Z.copy()
    z = _c(zv).requires_grad_()
    with fwAD.dual_level():
        out = tgrad.cumprod(fwAD.make_dual(z, _c(T)), 0).abs().sum()
        jt = fwAD.unpack_dual(out).tangent
        assert jt.requires_grad
        (gz,) = tgrad.autograd.grad(jt, z)
    f = lambda w: np.abs(np.cumprod(w)).sum()  # noqa: E731
    h = 1e-6
    np.testing.assert_allclose(jt.item(), (f(zv + h * T) - f(zv - h * T)) / (2 * h),
                               rtol=1e-7)

    def jt_of(w):  # the tangent as a function of z, by finite differences
        return (f(w + h * T) - f(w - h * T)) / (2 * h)
    # the gradient of the real jt: d/dRe + i d/dIm (PyTorch's convention)
    want = np.zeros(3, complex)
    h2 = 1e-4
    for k in range(3):
        for unit in (1.0, 1j):
            e = np.zeros(3, complex)
            e[k] = h2 * unit
            want[k] += unit * (jt_of(zv + e) - jt_of(zv - e)) / (2 * h2)
    np.testing.assert_allclose(gz.numpy(), want, rtol=1e-4, atol=1e-6)


class _CMul(tgrad.autograd.Function):
    """z -> w z with a jvp: custom Functions get complex tangents (and zeros) too."""

    @staticmethod
    def forward(z, w):
        return z * w

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("not called")

    @staticmethod
    def jvp(ctx, tz, tw):
        z, w = ctx.saved_tensors
        return tz * w + z * tw


def test_custom_function_jvp_with_complex_tangents():
    w = _c(T)
    with fwAD.dual_level():
        out = _CMul.apply(fwAD.make_dual(_c(Z), _c(T)), w)  # w has no tangent: zeros
        got = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(got.numpy(), T * T, rtol=1e-15)


# --------------------------------------------------------------- tgrad.func
def test_func_jvp_and_linearize_of_complex_functions():
    def f(z, w):  # complex in, complex and real out
        return (z.exp() * w.conj()).sin(), (z * w).abs().sum()

    def f_np(z, w):
        return np.sin(np.exp(z) * np.conj(w)), np.abs(z * w).sum()
    w0, tw = Z[::-1].copy(), np.array([1j, 0.5, -1 + 1j])
    out, jv = func.jvp(f, (_c(Z), _c(w0)), (_c(T), _c(tw)))
    h = 1e-6
    plus, minus = f_np(Z + h * T, w0 + h * tw), f_np(Z - h * T, w0 - h * tw)
    assert jv[0].dtype is C128 and jv[1].dtype is F64
    for o, want_o in zip(out, f_np(Z, w0)):
        np.testing.assert_allclose(o.numpy(), want_o, rtol=1e-14)
    for j, p, m in zip(jv, plus, minus):
        np.testing.assert_allclose(j.numpy(), (p - m) / (2 * h), rtol=1e-6, atol=1e-8)
    _, jvp_fn = func.linearize(lambda z: z.sqrt().real, _c(Z))
    np.testing.assert_allclose(jvp_fn(_c(T)).numpy(), (T / (2 * np.sqrt(Z))).real,
                               rtol=1e-12)


def test_jacfwd_through_complex_intermediates_and_pytorch_errors():
    x = _r([1.0, -2.0, 0.5])

    def f(v):  # real -> complex -> real: J = diag(d|v e^{iv}|^2... ) written by hand below
        z = tgrad.polar(v.exp(), v) * (2 - 1j)
        return tgrad.view_as_real(z * z).sum(-1)
    xv = x.numpy()
    # z^2 = 5 e^{2v} e^{2iv} (3 - 4i) / 5 ... per element: g(v) = Re + Im of (2-i)^2 e^{2v+2iv}
    c = (2 - 1j) ** 2

    def g(v):
        w = c * np.exp(2 * v + 2j * v)
        return w.real + w.imag
    h = 1e-6
    want = np.diag((g(xv + h) - g(xv - h)) / (2 * h))
    np.testing.assert_allclose(func.jacfwd(f)(x).numpy(), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(func.jacrev(f)(x).numpy(), want, rtol=1e-7, atol=1e-9)
    for jac in (func.jacfwd, func.jacrev):
        name = jac.__name__
        with pytest.raises(RuntimeError, match=f"{name}: Expected all inputs to be real but "
                                               f"received complex tensor at flattened input "
                                               f"idx: 1"):
            jac(lambda a, b: a * b, argnums=(0, 1))(x, _c(Z))
        with pytest.raises(RuntimeError, match=f"{name}: Expected all outputs to be real but "
                                               f"received complex tensor at flattened input "
                                               f"idx: 1"):
            jac(lambda a: (a, a * 1j))(x)
    with fwAD.dual_level():  # nested in a forward level jacfwd runs reverse passes
        with pytest.raises(RuntimeError, match="jacfwd: Expected all outputs to be real"):
            func.jacfwd(lambda a: a * 1j)(x)


def test_gradcheck_forward_ad_and_forward_over_reverse_of_complex_functions():
    """gradcheck's forward-mode Jacobian (check_forward_ad, complex inputs as real pairs)
    and gradgradcheck's forward over reverse, against finite differences."""
    from tgrad.autograd import gradcheck, gradgradcheck
    z = _c(Z).requires_grad_()
    w = _c(T).requires_grad_()
    r = _r([0.3, 2.0, -1.0]).requires_grad_()
    for f in (lambda a, b: a / b, lambda a, b: (a.exp() + b).sqrt(),
              lambda a, b: a.abs() + b.angle(), lambda a, b: tgrad.view_as_real(a * b.conj()),
              lambda a, b: tgrad.cumprod(a, 0) * b.sgn()):
        assert gradcheck(f, (z, w), check_forward_ad=True, check_batched_forward_grad=True)
        assert gradgradcheck(f, (z, w), check_fwd_over_rev=True)
    assert gradcheck(lambda a, b: a * b, (z, r), check_forward_ad=True)
    assert gradcheck(tgrad.polar, (r.detach().abs().requires_grad_(), r),
                     check_forward_ad=True)


def test_inplace_ops_and_views_of_complex_duals():
    """In-place ops update complex tangents in place, also through the real / view_as_real
    views (the tangent of a view is the same view of the tangent)."""
    zv, tv = Z[:2].copy(), T[:2].copy()
    with fwAD.dual_level():
        d = fwAD.make_dual(_c(zv), _c(tv)).clone()
        d.mul_(1j)  # z' = i z, t' = i t
        zv, tv = 1j * zv, 1j * tv
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), tv, rtol=1e-15)
        d.exp_()
        zv, tv = np.exp(zv), np.exp(zv) * tv
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), tv, rtol=1e-12)
        d.real.mul_(2.0)  # doubles the real parts of value and tangent
        tv = 2 * tv.real + 1j * tv.imag
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), tv, rtol=1e-12)
        tgrad.view_as_real(d)[:, 1].zero_()
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), tv.real, rtol=1e-12)
        x = fwAD.make_dual(_r([1.0, 2.0]), _r([1.0, -1.0]))
        d.real.copy_(x)  # a dual real value written into the real parts
        np.testing.assert_array_equal(fwAD.unpack_dual(d).tangent.numpy(), [1, -1])
        # sum(d^2) with d = x + 0i: tangent 2 sum(x t)
        np.testing.assert_allclose(fwAD.unpack_dual((d * d).sum()).tangent.item(), -2.0)


def test_real_and_imag_views_see_a_tangent_their_base_gets_later():
    # z.real / z.imag made before z gets a tangent (by copy_) read it in real elements
    # (tgrad applied their strides to the complex tangent: z.real[:2] read entries 0 and
    # 2 as complex, z.imag raised); z.real.copy_(dual) writes the real parts
    fw = tgrad.autograd.forward_ad
    tan = np.array([1 + 10j, 2 + 20j, 3 + 30j, 4 + 40j])
    with fw.dual_level():
        z = tgrad.zeros(4, dtype=tgrad.complex128)
        re, im = z.real[:2], z.imag
        z.copy_(fw.make_dual(tgrad.ones(4, dtype=tgrad.complex128),
                             tgrad.tensor(tan, dtype=tgrad.complex128)))
        t_re, t_im = fw.unpack_dual(re).tangent, fw.unpack_dual(im).tangent
        assert t_re.dtype is tgrad.float64 and t_im.dtype is tgrad.float64
        np.testing.assert_array_equal(t_re.numpy(), tan.real[:2])
        np.testing.assert_array_equal(t_im.numpy(), tan.imag)
        w = tgrad.zeros(3, dtype=tgrad.complex128)
        w.real.copy_(fw.make_dual(tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64),
                                  tgrad.tensor([0.0, 1.0, 2.0], dtype=tgrad.float64)))
        np.testing.assert_array_equal(fw.unpack_dual(w).tangent.numpy(), [0, 1, 2])
        np.testing.assert_array_equal(w.numpy(), [1, 2, 3])


def test_view_as_complex_of_a_base_without_tangent_takes_one_in_place():
    # an in-place op with a dual writes into view_as_complex(b) of a real b that has no
    # tangent: b gets a zero tangent with the new values written through the view (tgrad
    # raised NotImplementedError); PyTorch 2.13's values, also for a strided complex view
    # at an offset and for a complex view made before its base got a tangent
    zt = np.array([1 + 1j, 2 - 1j])
    tt = np.array([0.5 + 0.5j, 1j])
    with fwAD.dual_level():
        for op in ("mul_", "copy_"):
            b = _r([[1.0, 2.0], [3.0, 4.0]])
            c = tgrad.view_as_complex(b)
            getattr(c, op)(fwAD.make_dual(_c(zt), _c(tt)))
            want = zt * (np.array([1 + 2j, 3 + 4j]) if op == "mul_" else 1)
            want_t = tt * (np.array([1 + 2j, 3 + 4j]) if op == "mul_" else 1)
            p, t = fwAD.unpack_dual(b)
            np.testing.assert_array_equal(p.numpy(), np.stack([want.real, want.imag], -1))
            np.testing.assert_array_equal(t.numpy(), np.stack([want_t.real, want_t.imag], -1))
            np.testing.assert_array_equal(fwAD.unpack_dual(c).tangent.numpy(), want_t)
        big = tgrad.zeros(12, dtype=F64)
        c = tgrad.view_as_complex(big[2:].view(5, 2))[::2]  # floats 2-3, 6-7, 10-11
        c.copy_(fwAD.make_dual(_c([1j, 2, 3]), _c([1, 2j, -1])))
        assert big.tolist() == [0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 3, 0]
        assert fwAD.unpack_dual(big).tangent.tolist() == [0, 0, 1, 0, 0, 0, 0, 2, 0, 0, -1, 0]
        assert fwAD.unpack_dual(c).tangent.tolist() == [1, 2j, -1]
        b = tgrad.zeros(2, 2, dtype=F64)
        c = tgrad.view_as_complex(b)
        b[0].copy_(fwAD.make_dual(_r([1.0, 2.0]), _r([3.0, 4.0])))
        assert fwAD.unpack_dual(c).tangent.tolist() == [3 + 4j, 0]
