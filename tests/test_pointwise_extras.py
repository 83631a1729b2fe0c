"""deg2rad, rad2deg, ldexp, heaviside, isposinf/isneginf, broadcast_shapes/_tensors,
diagflat (tgrad/ops/pointwise_extras.py) and dist / renorm (distances.py): values against
NumPy float64, gradients by finite differences, PyTorch's error texts (torch 2.14)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)


def _leaf(*shape):
    return tgrad.tensor(RNG.standard_normal(shape), requires_grad=True)


@pytest.mark.parametrize("n", [1, 17, 1025])
def test_angle_conversions(n):
    x = RNG.standard_normal(n) * 400
    np.testing.assert_allclose(tgrad.deg2rad(tgrad.tensor(x)).numpy(), np.deg2rad(x),
                               rtol=1e-15)
    np.testing.assert_allclose(tgrad.tensor(x).rad2deg().numpy(), np.rad2deg(x), rtol=1e-15)
    ints = tgrad.tensor([180, -90])
    assert tgrad.deg2rad(ints).dtype is tgrad.float32
    np.testing.assert_allclose(tgrad.deg2rad(ints).numpy(), np.deg2rad([180.0, -90.0]),
                               rtol=1e-7)
    t = tgrad.tensor([180.0, 90.0], dtype=tgrad.float64)
    t.deg2rad_()
    np.testing.assert_allclose(t.numpy(), [math.pi, math.pi / 2], rtol=1e-15)
    assert gradgradcheck(tgrad.rad2deg, (_leaf(3),))


def test_ldexp():
    x, e = RNG.standard_normal((3, 4)), RNG.integers(-5, 5, (4,))
    np.testing.assert_array_equal(tgrad.ldexp(tgrad.tensor(x), tgrad.tensor(e)).numpy(),
                                  np.ldexp(x, e))
    out = tgrad.ldexp(tgrad.tensor([1, 2]), tgrad.tensor([2, -1]))
    assert out.dtype is tgrad.float32 and out.tolist() == [4.0, 1.0]
    assert gradcheck(tgrad.ldexp, (_leaf(3), _leaf(3)))
    assert gradgradcheck(tgrad.ldexp, (_leaf(2, 3), _leaf(3)))


def test_ldexp_integer_exponent_is_exact_where_two_to_the_exponent_is_not_finite():
    # x 2^e as NumPy's ldexp (C's), not x * pow(2, e): 2^e alone over- or underflows where the
    # product does not (0 2^2000 is 0, not 0 * inf = NaN; inf 2^-2000 is inf)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-1000, 2.0**1000, 1.5, 3.0,
                  1.0, -1.0, 0.75])
    e = np.array([2000, 5000, -2000, -9000, 7, 2000, -2000, -1074, 2**40, -2**62,
                  2**62, -1075])
    got = tgrad.ldexp(tgrad.tensor(x), tgrad.tensor(e)).numpy()
    with np.errstate(over="ignore"):
        want = np.ldexp(x, np.clip(e, -5000, 5000))
    np.testing.assert_array_equal(got, want)
    x32 = np.array([2.0**-10, 2.0**100, 0.0, np.inf, 1.5, 1.0], dtype=np.float32)
    e32 = np.array([130, -240, 200, -300, -149, 128], dtype=np.int16)
    out = tgrad.ldexp(tgrad.tensor(x32), tgrad.tensor(e32))
    assert out.dtype is tgrad.float32
    np.testing.assert_array_equal(out.numpy(), np.ldexp(x32, e32))  # 2^120, 2^-140, 0, ...
    h = tgrad.ldexp(tgrad.tensor([1.0, 0.0, 2.0**-20]).half(), tgrad.tensor([-24, 40, 30]))
    assert h.dtype is tgrad.float16 and h.tolist() == [2.0**-24, 0.0, 1024.0]
    # the gradient in x is 2^e (float64; PyTorch 2.13's is 0 here, an integer 2^-3)
    leaf = tgrad.tensor([1.0, -2.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.ldexp(leaf, tgrad.tensor([-3, 1030])).sum().backward()
    assert leaf.grad.tolist() == [0.125, math.inf]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ldexp_integer_exponent_cpu_path_matches_the_composite(dtype):
    # the CPU path (np.ldexp on the arrays) gives the three-product composite's bits
    from tgrad.ops.pointwise_extras import _ldexp_int
    x = (RNG.standard_normal(3001) * np.exp2(RNG.integers(-140, 130, 3001))).astype(dtype)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dtype).tiny]
    e = RNG.integers(-3000, 3000, 3001)
    e[100:2000] = RNG.integers(-300, 300, 1900)
    for xt, et in ((x, e), (x[:3000].reshape(3, 1000, 1)[:, ::2],
                            e[:3000].reshape(1000, 3)[::2].T[..., None]),
                   (x[:0], e[:0])):  # non-contiguous, empty
        got = tgrad.ldexp(tgrad.tensor(xt), tgrad.tensor(et))
        want = _ldexp_int(tgrad.tensor(xt), tgrad.tensor(et))
        assert got.dtype is want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_ldexp_integer_exponent_cpu_path_gradients():
    e = tgrad.tensor(RNG.integers(-4, 4, (2, 3)))
    assert gradcheck(lambda t: tgrad.ldexp(t, e), (_leaf(2, 3),))
    assert gradgradcheck(lambda t: tgrad.ldexp(t, e), (_leaf(2, 3),))
    assert gradcheck(lambda t: tgrad.ldexp(t, e), (_leaf(3),))  # x broadcast against e
    assert gradgradcheck(lambda t: tgrad.ldexp(t, e), (_leaf(1, 3),))
    fa = tgrad.autograd.forward_ad
    with fa.dual_level():
        x = RNG.standard_normal((2, 3))
        d = fa.make_dual(tgrad.tensor(x), tgrad.ones(2, 3, dtype=tgrad.float64))
        t = fa.unpack_dual(tgrad.ldexp(d, e)).tangent
        np.testing.assert_array_equal(t.numpy(), np.ldexp(np.ones((2, 3)), e.numpy()))


def test_heaviside_follows_numpy():
    x = np.array([-1.0, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan])
    values = np.array([0.5])
    np.testing.assert_array_equal(
        tgrad.heaviside(tgrad.tensor(x), tgrad.tensor(values)).numpy(),
        np.heaviside(x, values))  # NaN stays NaN (NumPy; PyTorch gives 0)
    ints = tgrad.tensor([-1, 0, 2])
    assert tgrad.heaviside(ints, tgrad.tensor(5)).tolist() == [0, 5, 1]
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with "
                                           "different dtypes."):
        tgrad.heaviside(tgrad.tensor([1.0]), tgrad.tensor([1]))


def test_isposinf_isneginf():
    x = np.array([np.inf, -np.inf, 1.0, np.nan, -0.0])
    assert tgrad.isposinf(tgrad.tensor(x)).tolist() == np.isposinf(x).tolist()
    assert tgrad.tensor(x).isneginf().tolist() == np.isneginf(x).tolist()
    assert tgrad.isposinf(tgrad.tensor([1, 2])).tolist() == [False, False]


def test_broadcast_shapes_and_tensors():
    assert tgrad.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert tgrad.broadcast_shapes(2, (3, 1)) == (3, 2)
    assert tgrad.broadcast_shapes() == ()
    assert tgrad.broadcast_shapes((0, 1), (4,)) == np.broadcast_shapes((0, 1), (4,))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 at "
                                           "-1! Mismatching argument at index 1 had \\(3,\\)"):
        tgrad.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative "
                                         "length!"):
        tgrad.broadcast_shapes((-1,))
    a, b = tgrad.zeros(2, 1), tgrad.arange(3.0)
    xa, xb = tgrad.broadcast_tensors(a, b)
    assert xa.shape == xb.shape == (2, 3) and xb._storage is b._storage  # views
    np.testing.assert_array_equal(xb.numpy(), np.broadcast_to(np.arange(3.0), (2, 3)))
    assert tgrad.broadcast_tensors() == ()
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size "
                                           "of tensor b \\(3\\) at non-singleton dimension 0"):
        tgrad.broadcast_tensors(tgrad.zeros(2), tgrad.zeros(3))
    leaf = _leaf(3)
    (out,) = tgrad.broadcast_tensors(leaf)
    tgrad.broadcast_tensors(leaf, tgrad.zeros(4, 1))[0].sum().backward()
    assert leaf.grad.tolist() == [4.0, 4.0, 4.0]  # each element used by 4 rows
    assert out.shape == (3,)


def test_diagflat():
    x = np.array([[1, 2], [3, 4]])
    for offset in (-2, 0, 1):
        np.testing.assert_array_equal(tgrad.diagflat(tgrad.tensor(x), offset).numpy(),
                                      np.diagflat(x, offset))
    assert gradgradcheck(lambda t: tgrad.diagflat(t, 1), (_leaf(2, 2),))


def test_dist():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    for p in (0, 1, 2, 3.5, math.inf):
        ref = np.linalg.norm((a - b).ravel(), ord=p)
        got = tgrad.dist(tgrad.tensor(a), tgrad.tensor(b), p)
        assert got.shape == ()
        np.testing.assert_allclose(got.item(), ref, rtol=1e-14)
    assert gradcheck(lambda u, v: tgrad.dist(u, v, 3), (_leaf(2, 3), _leaf(3)))
    assert gradgradcheck(lambda u, v: u.dist(v), (_leaf(2, 3), _leaf(3)))
    with pytest.raises(RuntimeError, match="dist: The size of tensor a \\(2\\) must match"):
        tgrad.dist(tgrad.zeros(2), tgrad.zeros(3))


def test_renorm():
    x = RNG.standard_normal((3, 4, 2)) * 3
    for p, dim, maxnorm in ((2, 0, 2.0), (1, 1, 1.5), (3.0, -1, 0.5)):
        axes = tuple(i for i in range(3) if i != dim % 3)
        norms = np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1 / p)
        ref = x * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
        np.testing.assert_allclose(tgrad.renorm(tgrad.tensor(x), p, dim, maxnorm).numpy(),
                                   ref, rtol=1e-14)
    t = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tgrad.float64)
    t.renorm_(2, 0, 3)
    np.testing.assert_allclose(t.numpy(), [[1.0, 2.0], [3 * 3 / (5 + 1e-7), 4 * 3 / (5 + 1e-7)]],
                               rtol=1e-15)
    assert gradcheck(lambda u: tgrad.renorm(u, 2, 0, 1.0), (_leaf(3, 4),))
    assert gradgradcheck(lambda u: tgrad.renorm(u, 2, 1, 1.0), (_leaf(3, 4),))
    # complex input: each slice's p-norm of |x|, a real factor (PyTorch's)
    z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    norms = np.sum(np.abs(z) ** 2, axis=1, keepdims=True) ** 0.5
    got = tgrad.renorm(tgrad.tensor(z), 2, 0, 1.0)
    assert got.dtype is tgrad.complex128
    np.testing.assert_allclose(got.numpy(), z * np.where(norms > 1, 1 / (norms + 1e-7), 1.0),
                               rtol=1e-14)
    assert gradcheck(lambda u: tgrad.renorm(u, 1, 1, 0.5),
                     (tgrad.tensor(z, requires_grad=True),))
    cases = [((tgrad.zeros(2, 2), -1, 0, 3.0), "renorm: non-positive-norm not supported"),
             ((tgrad.zeros(2, 2), 2, 0, -3.0), "renorm: expected maxnorm to be >= 0 but got -3"),
             ((tgrad.zeros(2), 2, 0, 3.0), "renorm: input needs at least 2 dimensions, got 1"),
             ((tgrad.zeros(2, 2, dtype=tgrad.int64), 2, 0, 3.0),
              "renorm: expected a floating point or complex tensor as input, got int64")]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            tgrad.renorm(*args)


# ------------------------------------------- elementwise parity fixes (PyTorch 2.13 diffs)
def _bf16():
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


def _half_ref(x, op, s, half):
    """op(x, s) as PyTorch's CPU kernels compute it for a half x and a one-element tensor s
    of another dtype: x widened to float32, s's own value in float32, one rounding."""
    with np.errstate(all="ignore"):
        return op(np.asarray(x, half).astype(np.float32), np.float32(s)).astype(half)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("sdtype", ["float32", "float64", "int64"])
def test_half_times_a_0d_tensor_keeps_its_value_in_float32(dtype, sdtype):
    half = np.dtype(np.float16) if dtype == "float16" else _bf16()
    td, sd = getattr(tgrad, dtype), getattr(tgrad, sdtype)
    xv = np.array([-0.5091, 3.0, 1000.0]).astype(half)
    x = tgrad.tensor(xv.astype(np.float32), dtype=td)
    cases = ((np.multiply, tgrad.mul, 1e5), (np.multiply, tgrad.mul, 1e-8),
             (np.divide, tgrad.div, 1e5), (np.floor_divide, tgrad.floor_divide, 0.1))
    for npop, op, s in cases:
        if sdtype == "int64":
            s = 70000
        ref = _half_ref(xv, npop, np.array(s, sdtype), half)
        ys = [op(x, tgrad.tensor(s, dtype=sd))]
        if sdtype == "int64":  # one element of a lower category: also a scalar to PyTorch
            ys.append(op(x, tgrad.tensor([[s]], dtype=sd)))
        for y in ys:
            assert y.dtype is td and y.shape[-1] == 3
            np.testing.assert_array_equal(y.float().numpy().reshape(-1),
                                          ref.astype(np.float32), err_msg=f"{op} {s}")
    # the numbers: 1e5 * x is -50912 (not -inf), x / 1e5 is -5.07e-6 (not -0)
    if dtype == "float16" and sdtype == "float32":
        assert (x * tgrad.tensor(1e5)).tolist() == [-50912.0, math.inf, math.inf]
        assert (x // tgrad.tensor(0.1)).tolist() == [-6.0, 29.0, 10000.0]
        # a 0-d first operand, several elements, or a 0-d of the same dtype are rounded
        assert (tgrad.tensor(1e5) * x).tolist() == [-math.inf, math.inf, math.inf]
        assert (x * tgrad.tensor(1e5, dtype=td)).tolist()[0] == -math.inf
        assert (tgrad.tensor([0.5, 1.0], dtype=td) * tgrad.tensor([70000, 70000])).tolist() \
            == [math.inf, math.inf]
        # add / sub / remainder round it, as PyTorch (1 + (2^-11 + 2^-30) ties to 1)
        s = tgrad.tensor(2.0**-11 + 2.0**-30)
        assert (tgrad.tensor([1.0], dtype=td) + s).tolist() == [1.0]
        # two 0-d tensors promote to float32 as usual
        y = tgrad.tensor(3.0, dtype=td) * tgrad.tensor(1e5)
        assert y.dtype is tgrad.float32 and y.item() == 300000.0


def test_half_times_a_0d_tensor_gradients():
    # x (float16) * s and x / s with s a float32 0-d tensor: x's gradient is g * s and g / s
    # with s in float32 (one rounding), s's is summed in half and comes back as float32
    g = np.array([1.0, 3.0, 7.0], np.float16)
    xv = np.array([0.5, -3.0, 0.25], np.float16)
    x = tgrad.tensor(xv, requires_grad=True)
    s = tgrad.tensor(1e-5, requires_grad=True)
    (x * s).backward(tgrad.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), _half_ref(g, np.multiply, 1e-5, np.float16))
    assert x.grad.numpy()[1] != np.float16(3.0) * np.float16(1e-5)  # s not rounded first
    assert s.grad.dtype is tgrad.float32
    exact = float(np.sum(g.astype(np.float64) * xv.astype(np.float64)))
    np.testing.assert_allclose(s.grad.item(), exact, rtol=2e-3)
    x.grad = s.grad = None
    s2 = tgrad.tensor(2e-2, requires_grad=True)
    (x / s2).backward(tgrad.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), _half_ref(g, np.divide, 2e-2, np.float16))
    exact = -float(np.sum(g.astype(np.float64) * xv.astype(np.float64))) / np.float32(2e-2) ** 2
    np.testing.assert_allclose(s2.grad.item(), exact, rtol=2e-3)
    # float64: finite differences of both inputs (the rule's shape reductions)
    a = tgrad.tensor(RNG.standard_normal(4), requires_grad=True)
    b = tgrad.tensor(0.7, dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(lambda a, b: a * b / b.exp(), (a, b))


def test_round_decimals_of_halves_in_float32():
    def ref(v, d, half):  # PyTorch: nearbyint(x * 10^d) / 10^d in float32, one rounding
        x = np.asarray(v, np.float64).astype(half).astype(np.float32)
        with np.errstate(all="ignore"):
            s = np.float32(10.0 ** abs(d)) if abs(d) < 300 else np.float32(np.inf)
            y = np.rint(x * s) / s if d > 0 else np.rint(x / s) * s
        return y.astype(half).astype(np.float32)

    vals = [1.35, 12345.678, 250.0, 0.05, -2.5, 0.0, math.inf, math.nan]
    for name, half in (("float16", np.float16), ("bfloat16", _bf16())):
        x = tgrad.tensor(vals, dtype=getattr(tgrad, name))
        for d in (1, 2, 30, 38, 39, 400, -1, -4, -39, -400):
            y = tgrad.round(x, decimals=d)
            assert y.dtype is x.dtype
            np.testing.assert_array_equal(y.float().numpy(), ref(vals, d, half),
                                          err_msg=f"{name} {d}")
    x = tgrad.tensor([1.35, 12345.678, 250.0], dtype=tgrad.float16)
    assert tgrad.round(x, decimals=1).tolist() == [1.2998046875, 12344.0, 250.0]
    assert tgrad.round(tgrad.tensor([0.05], dtype=tgrad.bfloat16), decimals=1).tolist() \
        == [0.10009765625]
    # 10^d past the dtype's range: every element NaN (PyTorch's inf scale), no OverflowError
    for dt in (tgrad.float32, tgrad.float64):
        assert np.isnan(tgrad.round(tgrad.tensor([1.5, 0.0], dtype=dt), decimals=400)
                        .numpy()).all()
    assert tgrad.round(tgrad.tensor([1.35], dtype=tgrad.float64), decimals=-308).tolist() \
        == [0.0]
    # zero gradient, also where the scale is infinite
    x = tgrad.tensor([1.35, -2.5], requires_grad=True)
    y = tgrad.round(x, decimals=400)
    assert y.grad_fn.name() == "RoundBackward1"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_lerp_weight_gradient_with_an_infinite_difference():
    # d lerp / d weight = end - start, inf here; the branch not taken must not leak 0 * inf
    cases = [(5.0, math.inf, -1.0), (5.0, math.inf, 0.25), (5.0, math.inf, 0.75),
             (math.inf, 5.0, 0.25), (5.0, -math.inf, 1.0), (5.0, math.inf, 0.0)]
    for sv, ev, wv in cases:
        s, e, w = (tgrad.tensor([v], dtype=tgrad.float64, requires_grad=True)
                   for v in (sv, ev, wv))
        tgrad.lerp(s, e, w).sum().backward()
        assert w.grad.tolist() == [ev - sv], (sv, ev, wv)
        assert s.grad.tolist() == [1.0 - wv] and e.grad.tolist() == [wv]
    s, e = _leaf(5), _leaf(5)
    w = tgrad.tensor([-1.0, 0.2, 0.5, 0.7, 1.5], dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(tgrad.lerp, (s, e, w))
    assert gradgradcheck(tgrad.lerp, (s, e, w))


def test_lerp_refuses_integer_tensors():
    a, b = tgrad.tensor([1, 2]), tgrad.tensor([3, 4])
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented "
                                                  "for 'Long'"):
        tgrad.lerp(a, b, 0.5)
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_tensor\" not implemented"):
        tgrad.lerp(a, b, tgrad.tensor([1, 1]))


def test_nextafter_promotes_its_inputs():
    one = np.float64(1.0)
    y = tgrad.nextafter(tgrad.tensor([1.0], dtype=tgrad.float64), tgrad.tensor([2.0]))
    assert y.dtype is tgrad.float64 and y.tolist() == [np.nextafter(one, 2.0)]
    f32_up = float(np.nextafter(np.float32(1), np.float32(2)))
    for a, b in ((tgrad.tensor([1]), tgrad.tensor([2.0])),
                 (tgrad.tensor([1.0]), tgrad.tensor(2.0, dtype=tgrad.float64)),
                 (tgrad.tensor([1.0], dtype=tgrad.float16), tgrad.tensor([2.0])),
                 (tgrad.tensor([1.0], dtype=tgrad.float16),
                  tgrad.tensor([2.0], dtype=tgrad.bfloat16)),
                 (tgrad.tensor([True]), tgrad.tensor([2.0])),
                 (tgrad.tensor([1.0]), tgrad.tensor(2))):
        y = tgrad.nextafter(a, b)
        assert y.dtype is tgrad.float32 and y.tolist() == [f32_up], (a.dtype, b.dtype)
    y = tgrad.nextafter(tgrad.tensor([1.0], dtype=tgrad.float16), tgrad.tensor(0.0))
    assert y.dtype is tgrad.float16 and y.tolist() == [float(np.nextafter(np.float16(1),
                                                                          np.float16(0)))]
    with pytest.raises(NotImplementedError, match="\"nextafter_cpu\" not implemented for "
                                                  "'Long'"):
        tgrad.nextafter(tgrad.tensor([1]), tgrad.tensor([2]))
    # in place: the result in self's dtype
    x = tgrad.tensor([1.0])
    x.nextafter_(tgrad.tensor([2.0], dtype=tgrad.float64))
    assert x.dtype is tgrad.float32 and x.tolist() == [1.0]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        tgrad.tensor([1]).nextafter_(tgrad.tensor([2.0]))


def test_logit_of_bool_and_integer_tensors():
    y = tgrad.logit(tgrad.tensor([True, False]))
    assert y.dtype is tgrad.float32 and y.tolist() == [math.inf, -math.inf]
    y = tgrad.logit(tgrad.tensor([True, False]), eps=0.1)
    e = np.float32(0.1)
    np.testing.assert_allclose(y.numpy(), [math.log((1 - e) / e), math.log(e / (1 - e))],
                               rtol=1e-6)
    assert tgrad.logit(tgrad.tensor([1, 0])).tolist() == [math.inf, -math.inf]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_logit_of_every_integer_dtype_is_the_float_logit(dtype):
    # uint8 used to negate in uint8 (log1p(-x) with -1 wrapped to 255): logit(uint8 1) was
    # log(1) - log(256) = -5.545 instead of inf. Reference: NumPy float64 log(x / (1 - x)).
    v = np.array([0, 1, 2, 3, 7] + ([-1, -3] if dtype != "uint8" else [255, 253]))
    y = tgrad.logit(tgrad.tensor(v, dtype=getattr(tgrad, dtype)))
    with np.errstate(all="ignore"):
        want = np.log(v.astype(np.float64) / (1 - v.astype(np.float64)))
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)  # inf at 1, -inf at 0, NaN past
    ye = tgrad.logit(tgrad.tensor(v, dtype=getattr(tgrad, dtype)), eps=0.25)
    e = np.clip(v.astype(np.float64), 0.25, 0.75)
    np.testing.assert_allclose(ye.numpy(), np.log(e / (1 - e)), rtol=1e-6)


@pytest.mark.parametrize("op", ["fmod", "remainder"])
def test_fmod_remainder_second_order(op):
    # d/db = -q with q = trunc / floor(a / b): recorded (with zero gradients, PyTorch's
    # DivBackward2), so a second backward gives zeros instead of an error
    fn = getattr(tgrad, op)
    a = tgrad.tensor([5.0, -7.0, 7.5], dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor([3.0, 2.0, -2.0], dtype=tgrad.float64, requires_grad=True)
    ga, gb = tgrad.autograd.grad(fn(a, b).sum(), (a, b), create_graph=True)
    q = np.trunc if op == "fmod" else np.floor
    assert gb.tolist() == list(-q(np.array([5.0, -7.0, 7.5]) / [3.0, 2.0, -2.0]))
    assert ga.tolist() == [1.0, 1.0, 1.0] and not ga.requires_grad
    assert gb.requires_grad
    dd = tgrad.autograd.grad(gb.sum(), (a, b), allow_unused=True)
    assert [d.tolist() for d in dd] == [[0.0] * 3, [0.0] * 3]
    assert gradgradcheck(fn, (a, b))
    # b alone requires grad
    a0 = a.detach()
    (gb,) = tgrad.autograd.grad(fn(a0, b).sum(), (b,), create_graph=True)
    assert tgrad.autograd.grad(gb.sum(), (b,))[0].tolist() == [0.0] * 3


def test_bool_operands_pytorch_refuses():
    x, i, b = tgrad.tensor([1.0, 2.0]), tgrad.tensor([1, 2]), tgrad.tensor([True, False])
    one_bool = "Subtraction, the `-` operator, with a bool tensor is not supported"
    for f in (lambda: x - True, lambda: True - x, lambda: tgrad.sub(x, False),
              lambda: tgrad.rsub(x, True), lambda: x.clone().sub_(True), lambda: i - True,
              lambda: tgrad.subtract(x, True)):
        with pytest.raises(RuntimeError, match=one_bool):
            f()
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported. Use the "
                                           r"`\^` or `logical_xor\(\)` operator instead"):
        b - True
    assert (x + True).tolist() == [2.0, 3.0]  # add takes it
    for f in (lambda: tgrad.sub(x, x, alpha=True), lambda: tgrad.add(x, x, alpha=False)):
        with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean "
                                               "results"):
            f()
    assert tgrad.add(b, b, alpha=True).tolist() == [True, False]
    for f in (lambda: tgrad.abs(b), lambda: b.clone().abs_(), lambda: abs(b)):
        with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
            f()
    for f in (lambda: tgrad.relu(b), lambda: b.clone().relu_(),
              lambda: tgrad.nn.functional.relu(b)):
        with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
            f()
    assert tgrad.sign(b).tolist() == [True, False]
    assert tgrad.isinf(b).tolist() == [False, False]
    assert tgrad.isfinite(b).tolist() == [True, True]
    for f in (lambda: tgrad.ldexp(x, b), lambda: tgrad.ldexp(x, tgrad.tensor(True)),
              lambda: x.clone().ldexp_(b)):
        with pytest.raises(NotImplementedError, match="\"ldexp_cpu_exp\" not implemented for "
                                                      "'Bool'"):
            f()
    assert tgrad.ldexp(b, i).tolist() == [2.0, 0.0]  # a bool mantissa is fine
    # a bool exponent is refused for a floating point input only (PyTorch's kernel): a bool,
    # integer or complex input takes it, 2^True = 2, 2^False = 1
    assert tgrad.ldexp(b, b).tolist() == [2.0, 0.0]
    r = tgrad.ldexp(tgrad.tensor([3, 4]), b)
    assert r.dtype is tgrad.float32 and r.tolist() == [6.0, 4.0]
    r = tgrad.ldexp(tgrad.tensor([1 + 1j, 2 + 0j], dtype=tgrad.complex64), b)
    assert r.dtype is tgrad.complex64 and r.tolist() == [2 + 2j, 2 + 0j]


def test_half_overflowing_exponent_and_alpha_raise():
    h = tgrad.tensor([1.0, 2.0], dtype=tgrad.float16)
    msg = "value .* cannot be converted to type float16 without overflow"
    for f in (lambda: tgrad.pow(h, 1e5), lambda: h ** 1e5, lambda: h ** 70000,
              lambda: tgrad.pow(h, -1e5), lambda: h.clone().pow_(1e5),
              lambda: tgrad.sub(h, h, alpha=1e5), lambda: tgrad.add(h, h, alpha=1e5),
              lambda: tgrad.sub(h, 1.0, alpha=1e5),
              lambda: tgrad.sub(h, tgrad.tensor(1.0), alpha=1e5)):
        with pytest.raises(RuntimeError, match=msg):
            f()
    with pytest.raises(RuntimeError, match="bfloat16 without overflow"):
        tgrad.pow(h.to(tgrad.bfloat16), 1e39)
    # in range, infinite, a number base or a float32 result: no error
    assert tgrad.pow(h, 65504.0).tolist() == [1.0, math.inf]
    assert tgrad.pow(h, math.inf).tolist() == [1.0, math.inf]
    assert (1e5 ** h).tolist() == [math.inf, math.inf]
    assert tgrad.sub(h, h, alpha=math.inf).tolist() == [-math.inf, -math.inf]
    assert tgrad.sub(h, tgrad.tensor([1.0]), alpha=1e5).tolist() == [-99999.0, -99998.0]


def test_complex_ldexp_deg2rad():
    # PyTorch: ldexp keeps a complex operand complex (tgrad cast to float32, dropping the
    # imaginary part); deg2rad/rad2deg refuse complex tensors (tgrad dropped it too)
    got = tgrad.ldexp(tgrad.tensor([1 + 1j, 2 + 0j]), tgrad.tensor([1, -2]))
    assert got.dtype is tgrad.complex64
    np.testing.assert_array_equal(got.numpy(), [2 + 2j, 0.5 + 0j])
    np.testing.assert_allclose(tgrad.ldexp(tgrad.tensor([3.0]), tgrad.tensor([1j])).numpy(),
                               3.0 * 2.0 ** np.array([1j]), rtol=1e-6)
    for op in ("deg2rad", "rad2deg"):
        with pytest.raises(RuntimeError, match=f"{op} is not supported for complex tensors"):
            getattr(tgrad, op)(tgrad.tensor([1j]))


def test_nextafter_gradient_is_pytorchs():
    # PyTorch's NextafterBackward0: g to input (the result is input moved by one ulp), 0 to
    # other; the graph was dropped, so the first term was silently missing
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    o = tgrad.tensor([0.0, 5.0], dtype=tgrad.float64, requires_grad=True)
    y = tgrad.nextafter(x, o)
    assert y.grad_fn.name() == "NextafterBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), np.nextafter([1.0, 2.0], [0.0, 5.0]))
    gx, go = tgrad.autograd.grad((y * 3 + x).sum(), [x, o])
    assert gx.tolist() == [4.0, 4.0] and go.tolist() == [0.0, 0.0]
