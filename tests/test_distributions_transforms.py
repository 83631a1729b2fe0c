"""The transforms of tgrad.distributions (PyTorch's torch.distributions.transforms) and the
constraint registry (biject_to / transform_to): forward maps against NumPy float64
formulas, inverse round trips, log|det J| against the log-determinant of a central
finite-difference Jacobian, gradcheck in float64, shapes, and constraint checks."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck
from tgrad.distributions import constraints as C

F64 = tgrad.float64
RNG = np.random.default_rng(0)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _np(t):
    return t.detach().numpy()


def _fd_jacobian(fn, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the flattened fn at x: (out size, in size)."""
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        up = fn(x + e.reshape(x.shape)).ravel()
        down = fn(x - e.reshape(x.shape)).ravel()
        cols.append((up - down) / (2 * h))
    return np.stack(cols, axis=1)


def _fd_ladj(t, x: np.ndarray, out=lambda y: y) -> float:
    """log|det| of the finite-difference Jacobian of out(t(x)) for one event x."""
    jac = _fd_jacobian(lambda v: out(_np(t(_t(v)))), x)
    return float(np.linalg.slogdet(jac)[1])


@pytest.mark.parametrize("name,fn,x", [
    ("ExpTransform", np.exp, RNG.normal(size=4)),
    ("SigmoidTransform", lambda v: 1 / (1 + np.exp(-v)), RNG.normal(size=4)),
    ("TanhTransform", np.tanh, RNG.normal(size=4)),
    ("SoftplusTransform", lambda v: np.log1p(np.exp(v)), RNG.normal(size=4) * 3),
    ("AbsTransform", np.abs, RNG.normal(size=4)),
])
def test_elementwise_transforms_are_exported_and_match_numpy(name, fn, x):
    t = getattr(D, name)()
    assert getattr(D.transforms, name) is type(t) and t == getattr(D, name)()
    y = t(_t(x))
    np.testing.assert_allclose(_np(y), fn(x), rtol=1e-12)
    if name == "AbsTransform":
        return
    np.testing.assert_allclose(_np(t.inv(y)), x, rtol=1e-9, atol=1e-12)
    # elementwise: the Jacobian is diagonal, ladj_i = log|f'(x_i)|
    ladj = _np(t.log_abs_det_jacobian(_t(x), y))
    deriv = np.diag(_fd_jacobian(fn, x))
    np.testing.assert_allclose(ladj, np.log(np.abs(deriv)), rtol=1e-7, atol=1e-9)
    assert t.sign == 1 and t.bijective


def test_softplus_inverse_and_large_inputs():
    t = D.SoftplusTransform()
    y = _t([1e-8, 0.5, 30.0, 200.0])
    # x = log(expm1(y)) in float64 by hand
    np.testing.assert_allclose(_np(t.inv(y)), [np.log(np.expm1(1e-8)), np.log(np.expm1(0.5)),
                                               30.0 + np.log1p(-np.exp(-30.0)), 200.0],
                               rtol=1e-12)
    assert t.domain is C.real and t.codomain is C.positive
    assert gradcheck(lambda v: t.log_abs_det_jacobian(v, t(v)),
                     (_t([-2.0, 0.3, 4.0], requires_grad=True),))


def test_identity_and_export_names():
    assert D.identity_transform is D.transforms.identity_transform
    x = _t([1.0, 2.0])
    assert D.identity_transform(x) is x
    np.testing.assert_array_equal(_np(D.identity_transform.log_abs_det_jacobian(x, x)), 0.0)
    for name in D.transforms.__all__:
        assert getattr(D, name) is getattr(D.transforms, name)
        assert name in D.__all__


def test_independent_transform_sums_the_reinterpreted_dims():
    x = RNG.normal(size=(2, 3))
    t = D.IndependentTransform(D.ExpTransform(), 1)
    y = t(_t(x))
    np.testing.assert_allclose(_np(y), np.exp(x), rtol=1e-14)
    np.testing.assert_allclose(_np(t.log_abs_det_jacobian(_t(x), y)), x.sum(-1), rtol=1e-14)
    np.testing.assert_allclose(_np(t.inv(y)), x, rtol=1e-12)
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1 and t.sign == 1
    assert repr(t) == "IndependentTransform(ExpTransform(), 1)"
    with pytest.raises(ValueError, match="Too few dimensions"):
        t(_t(1.0))


def test_reshape_transform():
    t = D.ReshapeTransform((2, 3), (6,))
    x = _t(np.arange(12.0).reshape(2, 2, 3))
    y = t(x)
    assert tuple(y.shape) == (2, 6) and _np(t.inv(y)).tolist() == _np(x).tolist()
    assert tuple(t.log_abs_det_jacobian(x, y).shape) == (2,)
    assert t.forward_shape((5, 2, 3)) == (5, 6) and t.inverse_shape((5, 6)) == (5, 2, 3)
    with pytest.raises(ValueError, match="different numbers of elements"):
        D.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match="Shape mismatch"):
        t.forward_shape((3, 2))


def test_softmax_transform():
    x = RNG.normal(size=(2, 4))
    t = D.SoftmaxTransform()
    y = _np(t(_t(x)))
    want = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-13)
    # not bijective: the inverse is log, a right inverse up to a per-row constant
    np.testing.assert_allclose(_np(t(t.inv(_t(y)))), y, rtol=1e-13)
    assert not t.bijective and t.codomain is C.simplex


def test_stick_breaking_transform():
    x = RNG.normal(size=(2, 3))
    t = D.StickBreakingTransform()
    y = t(_t(x))
    # by hand: z_i = sigmoid(x_i - log(K - i)), y_i = z_i prod_{j<i} (1 - z_j)
    k = 3
    z = 1 / (1 + np.exp(-(x - np.log(k - np.arange(k)))))
    rest = np.cumprod(1 - z, axis=-1)
    want = np.concatenate([z[:, :1], z[:, 1:] * rest[:, :-1], rest[:, -1:]], axis=-1)
    np.testing.assert_allclose(_np(y), want, rtol=1e-13)
    assert bool(C.simplex.check(y).all()) and tuple(y.shape) == (2, 4)
    np.testing.assert_allclose(_np(t.inv(y)), x, rtol=1e-10, atol=1e-12)
    # the zero vector maps to the centre of the simplex
    np.testing.assert_allclose(_np(t(_t(np.zeros(3)))), np.full(4, 0.25), rtol=1e-14)
    ladj = _np(t.log_abs_det_jacobian(_t(x), y))
    for b in range(2):  # of the first K coordinates of y
        want_b = _fd_ladj(t, x[b], out=lambda v: v[:-1])
        np.testing.assert_allclose(ladj[b], want_b, rtol=1e-7)
    assert t.forward_shape((5, 3)) == (5, 4) and t.inverse_shape((5, 4)) == (5, 3)
    assert gradcheck(lambda v: t.log_abs_det_jacobian(v, t(v)) + t(v).sum(),
                     (_t(x, requires_grad=True),))


def test_lower_cholesky_and_positive_definite_transforms():
    x = RNG.normal(size=(2, 3, 3))
    t = D.LowerCholeskyTransform()
    y = _np(t(_t(x)))
    want = np.tril(x, -1) + np.stack([np.diag(np.exp(np.diag(m))) for m in x])
    np.testing.assert_allclose(y, want, rtol=1e-14)
    assert bool(C.lower_cholesky.check(_t(y)).all())
    np.testing.assert_allclose(_np(t.inv(_t(y))), np.tril(x), rtol=1e-12, atol=1e-14)
    p = D.PositiveDefiniteTransform()
    s = _np(p(_t(x)))
    np.testing.assert_allclose(s, want @ np.swapaxes(want, -1, -2), rtol=1e-13)
    assert bool(C.positive_definite.check(_t(s)).all())
    np.testing.assert_allclose(_np(p.inv(_t(s))), np.tril(x), rtol=1e-9, atol=1e-12)


def _corr_cholesky_by_hand(x: np.ndarray, d: int) -> np.ndarray:
    """Row i of the strictly lower triangle holds r = tanh(x) (filled row by row);
    y_ij = r_ij sqrt(1 - sum_{k<j} y_ik^2), y_ii = sqrt(1 - sum_{k<i} y_ik^2)."""
    r = np.zeros((d, d))
    r[np.tril_indices(d, -1)] = np.tanh(x)
    y = np.zeros((d, d))
    for i in range(d):
        for j in range(i):
            y[i, j] = r[i, j] * np.sqrt(1 - (y[i, :j] ** 2).sum())
        y[i, i] = np.sqrt(1 - (y[i, :i] ** 2).sum())
    return y


def test_corr_cholesky_transform():
    d = 4
    x = RNG.normal(size=(2, d * (d - 1) // 2))
    t = D.CorrCholeskyTransform()
    y = t(_t(x))
    for b in range(2):
        np.testing.assert_allclose(_np(y)[b], _corr_cholesky_by_hand(x[b], d), rtol=1e-12,
                                   atol=1e-15)
    assert bool(C.corr_cholesky.check(y).all())
    np.testing.assert_allclose(_np(t.inv(y)), x, rtol=1e-9, atol=1e-12)
    ladj = _np(t.log_abs_det_jacobian(_t(x), y))
    rows, cols = np.tril_indices(d, -1)
    for b in range(2):  # of x and the strictly lower part of y (PyTorch's convention)
        want_b = _fd_ladj(t, x[b], out=lambda m: m[rows, cols])
        np.testing.assert_allclose(ladj[b], want_b, rtol=1e-7)
    assert t.forward_shape((6,)) == (4, 4) and t.inverse_shape((4, 4)) == (6,)
    with pytest.raises(ValueError, match="flattened lower-diagonal"):
        t.forward_shape((5,))
    assert gradcheck(lambda v: t(v).sum() + t.log_abs_det_jacobian(v, t(v)).sum(),
                     (_t(x[0], requires_grad=True),))


def test_cat_and_stack_transforms():
    x = RNG.normal(size=(2, 5))
    t = D.CatTransform([D.ExpTransform(), D.identity_transform, D.TanhTransform()], dim=1,
                       lengths=[2, 1, 2])
    y = t(_t(x))
    want = np.concatenate([np.exp(x[:, :2]), x[:, 2:3], np.tanh(x[:, 3:])], axis=1)
    np.testing.assert_allclose(_np(y), want, rtol=1e-14)
    np.testing.assert_allclose(_np(t.inv(y)), x, rtol=1e-10, atol=1e-12)
    ladj = _np(t.log_abs_det_jacobian(_t(x), y))
    deriv = np.concatenate([np.exp(x[:, :2]), np.ones((2, 1)), 1 - np.tanh(x[:, 3:]) ** 2], 1)
    np.testing.assert_allclose(ladj, np.log(deriv), rtol=1e-10, atol=1e-12)
    assert bool(t.codomain.check(y).all()) and t.bijective
    with pytest.raises(ValueError, match="must equal the total length 5"):
        t(_t(np.zeros((2, 4))))

    s = D.StackTransform([D.ExpTransform(), D.SigmoidTransform()], dim=-1)
    x2 = RNG.normal(size=(3, 2))
    y2 = s(_t(x2))
    np.testing.assert_allclose(_np(y2), np.stack([np.exp(x2[:, 0]),
                                                  1 / (1 + np.exp(-x2[:, 1]))], -1), rtol=1e-14)
    np.testing.assert_allclose(_np(s.inv(y2)), x2, rtol=1e-10, atol=1e-12)
    sig = 1 / (1 + np.exp(-x2[:, 1]))
    np.testing.assert_allclose(_np(s.log_abs_det_jacobian(_t(x2), y2)),
                               np.stack([x2[:, 0], np.log(sig * (1 - sig))], -1), rtol=1e-10)
    assert bool(s.codomain.check(y2).all())
    assert not bool(s.codomain.check(_t([[1.0, 2.0]])).all())  # 2 is outside [0, 1]


def test_cumulative_distribution_transform():
    base = D.Normal(_t(0.5), _t(2.0))
    t = D.CumulativeDistributionTransform(base)
    x = RNG.normal(size=5)
    y = t(_t(x))
    np.testing.assert_allclose(_np(t.inv(y)), x, rtol=1e-9)
    deriv = np.diag(_fd_jacobian(lambda v: _np(base.cdf(_t(v))), x))
    np.testing.assert_allclose(_np(t.log_abs_det_jacobian(_t(x), y)), np.log(deriv), rtol=1e-7)
    assert t.domain is base.support and t.codomain.check(y).all()
    # a Gaussian copula: TransformedDistribution's log_prob through it is 0 on (0, 1)
    u = D.TransformedDistribution(D.Normal(_t(0.5), _t(2.0)), [t])
    np.testing.assert_allclose(_np(u.log_prob(_t([0.1, 0.5, 0.9]))), 0.0, atol=1e-12)


def test_compose_transform_inverse_is_cached_and_cache_size_propagates():
    c = D.ComposeTransform([D.AffineTransform(0.5, 2.0), D.ExpTransform()], cache_size=1)
    assert c.inv.inv is c and all(p._cache_size == 1 for p in c.parts)
    x = _t([0.1, 0.2])
    assert c.inv(c(x)) is x
    assert D.ExpTransform().with_cache(1)._cache_size == 1
    assert D.ExpTransform().inv == D.ExpTransform().inv


# -------------------------------------------------------------------------- constraint registry
_CONSTRAINTS = [C.real, C.positive, C.nonnegative, C.greater_than(-2.0),
                C.greater_than_eq(1.5), C.less_than(3.0), C.unit_interval,
                C.interval(-1.0, 4.0), C.half_open_interval(2.0, 3.0), C.real_vector,
                C.independent(C.positive, 1), C.simplex, C.corr_cholesky,
                C.cat([C.positive, C.real], -1, [2, 2]), C.stack([C.positive, C.unit_interval],
                                                                -1)]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("constraint", _CONSTRAINTS, ids=repr)
def test_registry_maps_reals_into_the_constraint(registry, constraint):
    t = getattr(D, registry)(constraint)
    shape = (3, 4) if constraint is not C.corr_cholesky else (3, 6)
    if isinstance(constraint, C._Stack):
        shape = (3, 2)
    x = _t(RNG.normal(size=shape))
    y = t(x)
    assert bool(constraint.check(y).all()), (constraint, _np(y))
    if registry == "biject_to":  # a bijection: the inverse recovers x
        assert t.bijective
        np.testing.assert_allclose(_np(t.inv(y)), _np(x), rtol=1e-8, atol=1e-10)
        ladj = t.log_abs_det_jacobian(x, y)
        event_dim = t.domain.event_dim
        if isinstance(constraint, C._Stack):  # PyTorch's: the slices' ladj stacked, and
            event_dim = 0                     # the stack dim counted as an event dim
        assert tuple(ladj.shape) == tuple(x.shape[:x.dim() - event_dim])


def test_registry_matrices_and_errors():
    x = _t(RNG.normal(size=(3, 3)))
    assert bool(C.lower_cholesky.check(D.transform_to(C.lower_cholesky)(x)))
    assert bool(C.positive_definite.check(D.transform_to(C.positive_definite)(x)))
    assert isinstance(D.transform_to(C.simplex), D.SoftmaxTransform)
    assert isinstance(D.biject_to(C.simplex), D.StickBreakingTransform)
    assert D.biject_to(C.unit_interval) == D.SigmoidTransform()
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(C.boolean)
    with pytest.raises(NotImplementedError, match="_LowerCholesky"):
        D.biject_to(C.lower_cholesky)  # PyTorch registers it for transform_to only
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        D.biject_to.register(int, lambda c: None)
    # a parameter's constraint gives its unconstrained parameterisation
    scale = D.transform_to(D.Normal.arg_constraints["scale"])(_t([-3.0, 0.0, 2.0]))
    np.testing.assert_allclose(_np(scale), np.exp([-3.0, 0.0, 2.0]), rtol=1e-14)


def test_new_constraints():
    assert _np(C.less_than(1.0).check(_t([0.5, 1.0]))).tolist() == [True, False]
    assert repr(C.less_than(1.0)) == "LessThan(upper_bound=1.0)"
    good = _t([[1.0, 0.0], [0.6, 0.8]])
    bad = _t([[1.0, 0.0], [0.6, 0.9]])  # second row norm != 1
    assert bool(C.corr_cholesky.check(good)) and not bool(C.corr_cholesky.check(bad))
    cat = C.cat([C.positive, C.real], dim=-1, lengths=[1, 2])
    assert _np(cat.check(_t([[-1.0, -1.0, -1.0]]))).tolist() == [[False, True, True]]
    assert cat.event_dim == 0 and C.stack([C.simplex], 0).event_dim == 1


def test_affine_transform_shapes_broadcast_as_pytorch():
    # forward_shape / inverse_shape broadcast the shape with loc's and scale's
    t = D.AffineTransform(tgrad.zeros(3), tgrad.ones(2, 1))
    assert t.forward_shape((5, 1, 1)) == (5, 2, 3) and t.inverse_shape((3,)) == (2, 3)
    assert D.AffineTransform(0.0, 1.0).forward_shape((4,)) == (4,)
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 "
                                           "at -1! Mismatching argument at index 2"):
        D.AffineTransform(0.0, tgrad.ones(3)).forward_shape((2,))


def test_power_transform_tensor_exponent_broadcasts_shapes():
    # a (2,) exponent maps a 0-d base to a (2,) batch, as PyTorch's forward_shape does
    t = D.PowerTransform(_t([0.5, 2.0]))
    assert t.forward_shape(()) == (2,) and t.inverse_shape((3, 1)) == (3, 2)
    d = D.TransformedDistribution(D.Exponential(_t(1.0)), [t])
    assert d.batch_shape == (2,) and d.sample((4,)).shape == (4, 2)
    # y = x^e, x ~ Exp(1): log p(y) = -x - log|e x^(e-1)|, x = y^(1/e)
    y = np.array([0.7, 1.9])
    x = y ** (1 / np.array([0.5, 2.0]))
    ref = -x - np.log(np.abs(np.array([0.5, 2.0]) * x ** (np.array([0.5, 2.0]) - 1)))
    np.testing.assert_allclose(_np(d.log_prob(_t(y))), ref, rtol=1e-12)


@pytest.mark.parametrize("d", [1, 2])
def test_corr_cholesky_smallest_sizes(d):
    # D = 2: one angle, y = [[1, 0], [r, sqrt(1 - r^2)]], r = tanh(x); ladj = log(1 - r^2) +
    # 1/2 sum over rows i >= 2 of log(1 - y_i1^2) (no such row here); D = 1: nothing to map
    t = D.CorrCholeskyTransform()
    x = _t(RNG.normal(size=(3, d * (d - 1) // 2)), requires_grad=True)
    y = t(x)
    assert y.shape == (3, d, d)
    np.testing.assert_allclose(_np(t.inv(y)), _np(x), rtol=1e-12)
    ladj = t.log_abs_det_jacobian(x, y)
    r = np.tanh(_np(x))[:, 0] if d == 2 else np.zeros(3)
    np.testing.assert_allclose(_np(ladj), np.log1p(-r ** 2), rtol=1e-12, atol=1e-15)
    if d == 2:
        assert gradcheck(lambda v: t.log_abs_det_jacobian(v, t(v)), (x,))


def test_transform_to_positive_semidefinite_and_integer_dtypes():
    t = D.transform_to(C.positive_semidefinite)
    assert isinstance(t, D.PositiveDefiniteTransform)
    x = RNG.normal(size=(3, 3))
    lower = np.tril(x, -1) + np.diag(np.exp(np.diag(x)))
    np.testing.assert_allclose(_np(t(_t(x))), lower @ lower.T, rtol=1e-12)
    # an integer input: PyTorch's TypeError (was NumPy's ValueError "not inexact")
    with pytest.raises(TypeError, match="finfo"):
        D.SigmoidTransform()(tgrad.tensor([0, 1]))


def test_identity_transform_ladj_is_zero_everywhere():
    x = _t([-1.0, np.inf, -np.inf, 2.0])
    ladj = D.identity_transform.log_abs_det_jacobian(x, x)
    assert ladj.shape == (4,) and ladj.dtype == F64
    np.testing.assert_array_equal(_np(ladj), np.zeros(4))
    assert not np.signbit(_np(ladj)).any()


def test_transform_reprs_are_pytorchs():
    assert repr(D.ExpTransform().inv) == "_InverseTransform(ExpTransform())"
    t = D.ComposeTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)])
    assert repr(t) == "ComposeTransform(\n    ExpTransform(),\n    AffineTransform()\n)"
    assert repr(D.identity_transform) == "ComposeTransform(\n    \n)"
