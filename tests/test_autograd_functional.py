"""tgrad.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp against analytic NumPy
float64 derivatives and finite differences; tuple handling, create_graph and strict mode."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import functional as AF

D = tgrad.float64
RNG = np.random.default_rng(0)


def _t(arr, requires_grad=False):
    return tgrad.tensor(np.asarray(arr, dtype=np.float64), requires_grad=requires_grad)


def _np(t):
    return t.detach().numpy()


def _fd_jacobian(f, xs: list, eps=1e-6):
    """Central-difference Jacobian of f (NumPy in, NumPy out) w.r.t. each array in xs."""
    out = []
    for i, x in enumerate(xs):
        y0 = np.asarray(f(*xs))
        jac = np.zeros(y0.shape + x.shape)
        for idx in np.ndindex(*x.shape):
            p = [a.copy() for a in xs]
            m = [a.copy() for a in xs]
            p[i][idx] += eps
            m[i][idx] -= eps
            jac[(...,) + idx] = (np.asarray(f(*p)) - np.asarray(f(*m))) / (2 * eps)
        out.append(jac)
    return out


# f(a, b) = exp(a[:2] * b) + a^3 (vector valued) and its scalar version
def _f_np(a, b):
    return np.concatenate([np.exp(a[:2] * b), a ** 3])


def _f(a, b):
    return tgrad.cat([(a[:2] * b).exp(), a ** 3])


def _s_np(a, b):
    return float(np.sum(np.sin(a[:2]) * b ** 2) + np.sum(a ** 3))


def _s(a, b):
    return (a[:2].sin() * b * b).sum() + (a ** 3).sum()


A = RNG.standard_normal(3)
B = RNG.standard_normal(2)


def test_jacobian_tuple_inputs():
    ja, jb = AF.jacobian(_f, (_t(A), _t(B)))
    ra, rb = _fd_jacobian(_f_np, [A, B])
    assert ja.shape == (5, 3) and jb.shape == (5, 2)
    np.testing.assert_allclose(_np(ja), ra, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(jb), rb, rtol=1e-6, atol=1e-8)
    assert not ja.requires_grad


def test_jacobian_single_input_and_multi_output_shapes():
    x = _t(RNG.standard_normal((2, 3)))
    j = AF.jacobian(lambda t: t.exp(), x)
    assert j.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(_np(j).reshape(6, 6), np.diag(np.exp(_np(x)).ravel()),
                               rtol=1e-12)
    (j1, j2) = AF.jacobian(lambda t: (t.sum(), t * 2), x)
    assert j1.shape == (2, 3) and j2.shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(_np(j1), np.ones((2, 3)))
    ((j11,),) = AF.jacobian(lambda t: (t.sum(),), (x,))
    assert j11.shape == (2, 3)
    # vectorize / forward-mode accepted: same numbers
    j_v = AF.jacobian(lambda t: t.exp(), x, vectorize=True, strategy="forward-mode")
    np.testing.assert_array_equal(_np(j_v), _np(j))


def test_jacobian_unused_input_gives_zeros():
    ja, jb = AF.jacobian(lambda a, b: a * 2, (_t(A), _t(B)))
    np.testing.assert_array_equal(_np(jb), np.zeros((3, 2)))
    np.testing.assert_array_equal(_np(ja), 2 * np.eye(3))


def test_hessian_tuple_and_single():
    h = AF.hessian(_s, (_t(A), _t(B)))
    # analytic Hessian of s(a, b) = sum(sin(a[:2]) b^2) + sum(a^3)
    haa = np.diag(6 * A)
    haa[:2, :2] += np.diag(-np.sin(A[:2]) * B ** 2)
    hab = np.zeros((3, 2))
    hab[:2, :2] = np.diag(2 * np.cos(A[:2]) * B)
    hbb = np.diag(2 * np.sin(A[:2]))
    np.testing.assert_allclose(_np(h[0][0]), haa, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(h[0][1]), hab, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(h[1][0]), hab.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(h[1][1]), hbb, rtol=1e-12, atol=1e-14)
    x = _t(RNG.standard_normal((2, 2)))
    hx = AF.hessian(lambda t: (t ** 4).sum(), x)
    assert hx.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(_np(hx).reshape(4, 4), np.diag(12 * _np(x).ravel() ** 2),
                               rtol=1e-12)


def test_vjp_jvp_match_jacobian_products():
    a, b = _t(A), _t(B)
    ja, jb = (_np(j) for j in AF.jacobian(_f, (a, b)))
    v_out = RNG.standard_normal(5)
    out, (ga, gb) = AF.vjp(_f, (a, b), _t(v_out))
    np.testing.assert_allclose(_np(out), _f_np(A, B), rtol=1e-12)
    np.testing.assert_allclose(_np(ga), v_out @ ja, rtol=1e-12)
    np.testing.assert_allclose(_np(gb), v_out @ jb, rtol=1e-12)
    va, vb = RNG.standard_normal(3), RNG.standard_normal(2)
    out, jv = AF.jvp(_f, (a, b), (_t(va), _t(vb)))
    np.testing.assert_allclose(_np(jv), ja @ va + jb @ vb, rtol=1e-12)
    assert not out.requires_grad and not jv.requires_grad


def test_vjp_scalar_output_v_none_and_jvp_scalar_input():
    x = _t(RNG.standard_normal(4))
    out, g = AF.vjp(lambda t: (t * t).sum(), x)
    np.testing.assert_allclose(_np(g), 2 * _np(x), rtol=1e-12)
    out, jv = AF.jvp(lambda t: t * tgrad.arange(3, dtype=D), _t(2.0))
    np.testing.assert_allclose(_np(jv), [0.0, 1.0, 2.0])


def test_hvp_vhp_match_hessian():
    a, b = _t(A), _t(B)
    h = [[_np(x) for x in row] for row in AF.hessian(_s, (a, b))]
    va, vb = RNG.standard_normal(3), RNG.standard_normal(2)
    val, (ha, hb) = AF.hvp(_s, (a, b), (_t(va), _t(vb)))
    np.testing.assert_allclose(val.item(), _s_np(A, B), rtol=1e-12)
    np.testing.assert_allclose(_np(ha), h[0][0] @ va + h[0][1] @ vb, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(hb), h[1][0] @ va + h[1][1] @ vb, rtol=1e-12, atol=1e-14)
    val, (ha2, hb2) = AF.vhp(_s, (a, b), (_t(va), _t(vb)))
    np.testing.assert_allclose(_np(ha2), _np(ha), rtol=1e-12, atol=1e-14)  # H symmetric
    np.testing.assert_allclose(_np(hb2), _np(hb), rtol=1e-12, atol=1e-14)


def test_functional_through_nn_ops():
    """jacobian of the fused softmax equals diag(p) - p p^T; hvp through layer_norm vs FD."""
    import tgrad.nn.functional as F
    x = RNG.standard_normal(5)
    p = np.exp(x - x.max())
    p /= p.sum()
    j = AF.jacobian(lambda t: F.softmax(t, 0), _t(x))
    np.testing.assert_allclose(_np(j), np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-15)
    w = RNG.standard_normal(5)

    def g_np(t):  # gradient of sum(layer_norm(t) * w * t), computed by tgrad
        tt = _t(t, requires_grad=True)
        return _np(tgrad.autograd.grad((F.layer_norm(tt, 5) * _t(w) * tt).sum(), tt)[0])
    v = RNG.standard_normal(5)
    _, hv = AF.hvp(lambda t: (F.layer_norm(t, 5) * _t(w) * t).sum(), _t(x), _t(v))
    (fd,) = _fd_jacobian(g_np, [x])
    np.testing.assert_allclose(_np(hv), fd @ v, rtol=1e-6, atol=1e-7)


def test_create_graph_allows_higher_derivatives():
    x = _t(RNG.standard_normal(3), requires_grad=True)
    j = AF.jacobian(lambda t: t ** 3, x, create_graph=True)
    assert j.requires_grad
    (g,) = tgrad.autograd.grad(j.sum(), x)  # d/dx sum(diag(3x^2)) = 6x
    np.testing.assert_allclose(_np(g), 6 * _np(x), rtol=1e-12)
    _, hv = AF.hvp(lambda t: (t ** 4).sum(), x, tgrad.ones(3, dtype=D), create_graph=True)
    (g2,) = tgrad.autograd.grad(hv.sum(), x)  # d/dx sum(12 x^2) = 24 x
    np.testing.assert_allclose(_np(g2), 24 * _np(x), rtol=1e-12)
    _, jv = AF.jvp(lambda t: t.sin(), x, tgrad.ones(3, dtype=D), create_graph=True)
    (g3,) = tgrad.autograd.grad(jv.sum(), x)  # d/dx sum(cos x) = -sin x
    np.testing.assert_allclose(_np(g3), -np.sin(_np(x)), rtol=1e-12)
    out, vj = AF.vjp(lambda t: t.exp(), x, tgrad.ones(3, dtype=D), create_graph=True)
    assert vj.requires_grad and out.requires_grad


def test_inputs_untouched_without_create_graph():
    x = _t([1.0, 2.0], requires_grad=True)
    _, g = AF.vjp(lambda t: (t * t).sum(), x)
    assert x.grad is None and not g.requires_grad


# ---------------------------------------------------------------------- strict / errors
def test_strict_mode_errors():
    a, b = _t(A), _t(B)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                       "independent of input 1. This is not allowed in strict mode."):
        AF.jacobian(lambda x, y: x * 2, (a, b), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                       "require gradients"):
        AF.vjp(lambda x: tgrad.ones(2), a, tgrad.ones(2), strict=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                       "independent of input 1"):
        AF.vjp(lambda x, y: x * 2, (a, b), tgrad.ones(3, dtype=D), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect "
                       "to input 0 is independent of the input"):
        AF.hessian(lambda x: x.sum(), a, strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect "
                       "to input 0 is independent of the input"):
        AF.hvp(lambda x: (x * 3).sum(), a, tgrad.ones(3, dtype=D), strict=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                       "independent of input 1"):
        AF.jvp(lambda x, y: x * 2, (a, b), (tgrad.ones(3, dtype=D), tgrad.ones(2, dtype=D)),
               strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not "
                       "supported together"):
        AF.jacobian(lambda x: x, a, strict=True, vectorize=True)
    # PyTorch's order: the outputs' strict check comes before the vectorize refusal, and
    # forward-mode refuses strict before it looks at vectorize
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                       "require gradients"):
        AF.jacobian(lambda x: tgrad.ones(2), a, strict=True, vectorize=True)
    for vec in (False, True):
        with pytest.raises(RuntimeError, match='`strict=True` and `strategy="forward-mode"` '
                           'are not supported together'):
            AF.jacobian(lambda x: x, a, strict=True, vectorize=vec, strategy="forward-mode")
    # non-strict: the same calls give zeros
    _, (ga, gb) = AF.vjp(lambda x, y: x * 2, (a, b), tgrad.ones(3, dtype=D))
    np.testing.assert_array_equal(_np(gb), np.zeros(2))
    h = AF.hessian(lambda x: x.sum(), a)
    np.testing.assert_array_equal(_np(h), np.zeros((3, 3)))


def test_argument_errors():
    a = _t(A)
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor "
                       "or a tuple of Tensors"):
        AF.jacobian(lambda x: x, [a])
    with pytest.raises(TypeError, match="outputs of the user-provided function given to vjp "
                       "must be either a Tensor or a tuple of Tensors"):
        AF.vjp(lambda x: 3.0, a)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided "
                       "function returns a single Tensor with a single element."):
        AF.vjp(lambda x: x * 2, a)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                       "user-provided function is a single Tensor with a single element."):
        AF.jvp(lambda x: x * 2, a)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(3,\) but got "
                       r"\(2,\)"):
        AF.vjp(lambda x: x * 2, a, tgrad.ones(2, dtype=D))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but "
                       "got 1"):
        AF.jvp(lambda x, y: x, (a, a), (a,))
    with pytest.raises(RuntimeError, match="The function given to hessian should return a "
                       "single Tensor"):
        AF.hessian(lambda x: (x.sum(), x.sum()), a)
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hvp "
                       "should contain a single element"):
        AF.hvp(lambda x: x * x, a, a)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda x: x, a, strategy="forward-mode")
    with pytest.raises(ValueError, match="Expected strategy to be either"):
        AF.jacobian(lambda x: x, a, strategy="sideways")


def test_jacobian_strategy_hint_is_pytorchs():
    with pytest.raises(ValueError, match='Hint: If your function has more outputs than inputs, '
                                         '"forward-mode" tends to be more performant'):
        AF.jacobian(lambda x: x, tgrad.ones(2), strategy="sideways")
