"""tgrad/ops/extras.py beyond the op table: in-place forms, index_put with accumulate,
PyTorch's edge values and errors (written out by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad


def _t(values, **kw):
    return tgrad.tensor(np.asarray(values, dtype=np.float64), **kw)


def test_nan_aware_sums_and_nan_to_num():
    x = _t([[1.0, np.nan], [np.nan, np.nan]], requires_grad=True)
    assert tgrad.nansum(x).item() == 1.0
    m = tgrad.nanmean(x, 1)
    assert m.tolist()[0] == 1.0 and math.isnan(m.tolist()[1])  # no value: NaN
    tgrad.nansum(x).backward()
    assert x.grad.tolist() == [[1.0, 0.0], [0.0, 0.0]]  # NaN elements get no gradient
    y = tgrad.nan_to_num(tgrad.tensor([np.nan, np.inf, -np.inf, 2.0]))
    big = float(np.finfo(np.float32).max)
    assert y.tolist() == [0.0, big, -big, 2.0]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((37, 19), 1), ((4, 6, 3), (0, 2)), ((0, 3), 1),
                                       ((3, 0), 1), ((), None)])
def test_nansum_cpu_path_matches_composition(dt, shape, dim):
    """The CPU NaN-to-zero copy (tgrad.backends._numpy_nan): the composition
    where(~isnan(x), x, 0).sum()'s bits and layout (a transposed input too), with and
    without NaN / inf / -0.0; dx = g where x is not NaN, else 0."""
    rng = np.random.default_rng(7)
    for special in (False, True):
        a = rng.standard_normal(shape).astype(dt)
        if special and a.size:
            flat = a.reshape(-1)
            for v in (np.nan, np.inf, -np.inf, -0.0):
                flat[rng.integers(0, flat.size, max(1, flat.size // 8))] = v
        for x in ([tgrad.tensor(a)] + ([tgrad.tensor(a.T.copy()).T] if a.ndim == 2 else [])):
            want = tgrad.where(~tgrad.isnan(x), x, 0.0).sum(dim)
            x.requires_grad_(True)
            got = tgrad.nansum(x, dim)
            assert got.stride() == want.stride()
            np.testing.assert_array_equal(got.detach().numpy(), want.numpy())
            g = rng.standard_normal(got.shape).astype(dt)
            got.backward(tgrad.tensor(g))
            gb = np.broadcast_to(g if dim is None else np.expand_dims(g, dim), shape)
            np.testing.assert_array_equal(x.grad.numpy(), np.where(np.isnan(a), 0, gb))


def test_nansum_gradcheck_forward_ad_and_create_graph():
    """With and without NaN: gradcheck / gradgradcheck in float64, forward AD's tangent
    (0 at the NaNs) and a double backward through the CPU path."""
    from tgrad.autograd import forward_ad as fwad
    from tgrad.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(8)
    for a in (rng.standard_normal((3, 4)), np.array([[1.0, np.nan, 2.0], [np.nan, 3.0, 4.0]])):
        x = tgrad.tensor(a, requires_grad=True)

        def f(x):
            return tgrad.nansum(x, 1) * tgrad.nansum(x)
        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
        t = rng.standard_normal(a.shape)
        with fwad.dual_level():
            out = tgrad.nansum(fwad.make_dual(tgrad.tensor(a), tgrad.tensor(t)), 1)
            tangent = fwad.unpack_dual(out).tangent.numpy()
        np.testing.assert_allclose(tangent, np.where(np.isnan(a), 0, t).sum(1), rtol=1e-12)
        grads = []
        for fn in (lambda x: tgrad.nansum(x * x, 1),  # against the composition
                   lambda x: tgrad.where(~tgrad.isnan(x), x * x, 0.0).sum(1)):
            x = tgrad.tensor(a, requires_grad=True)
            (g,) = tgrad.autograd.grad(fn(x).sum(), x, create_graph=True)
            assert g.requires_grad
            (g * g).sum().backward()
            grads.append((g.detach().numpy(), x.grad.numpy()))
        for got, want in zip(grads[0], grads[1]):
            np.testing.assert_array_equal(got, want)


def test_xlogy_and_logit_edges():
    assert tgrad.xlogy(_t([0.0, 0.0, 2.0]), _t([0.0, np.inf, np.e])).tolist() == [0.0, 0.0, 2.0]
    assert math.isnan(tgrad.xlogy(_t([0.0]), _t([np.nan])).item())  # NaN y wins, as PyTorch
    x = _t([0.0], requires_grad=True)
    tgrad.xlogy(x, _t([4.0])).backward()
    assert x.grad.item() == pytest.approx(math.log(4.0))  # dx = log y even at x = 0
    assert tgrad.logit(_t([0.0, 0.5]), eps=0.25).tolist() == pytest.approx(
        [math.log(1 / 3), 0.0])


def test_shape_helpers():
    x = tgrad.tensor([[1, 2, 3], [4, 5, 6]])
    assert tgrad.diff(x).tolist() == [[1, 1], [1, 1]]
    assert tgrad.diff(x, dim=0, prepend=tgrad.tensor([[0, 0, 0]])).tolist() == \
        [[1, 2, 3], [3, 3, 3]]
    assert x.repeat_interleave(2, 0).tolist() == [[1, 2, 3], [1, 2, 3], [4, 5, 6], [4, 5, 6]]
    assert x.repeat_interleave(tgrad.tensor([0, 2, 1]), 1).tolist() == [[2, 2, 3], [5, 5, 6]]
    assert tgrad.take(x, tgrad.tensor([[0, -1]])).tolist() == [[1, 6]]
    assert tgrad.inner(_t([1.0, 2.0]), _t([[3.0, 4.0], [5.0, 6.0]])).tolist() == [11.0, 17.0]
    assert x.unflatten(1, (3, 1)).shape == (2, 3, 1)
    assert tgrad.fliplr(x).tolist() == [[3, 2, 1], [6, 5, 4]]
    assert tgrad.flipud(x).tolist() == [[4, 5, 6], [1, 2, 3]]


def test_repeat_interleave_output_size_is_checked():
    # output_size (PyTorch's hint to skip a device sync) must equal the repeated length:
    # sum(repeats), or repeats * size along dim; PyTorch raises otherwise
    x = tgrad.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.repeat_interleave(2, dim=1, output_size=6).tolist() == \
        [[1, 1, 2, 2, 3, 3], [4, 4, 5, 5, 6, 6]]
    assert x.repeat_interleave(tgrad.tensor([0, 2]), dim=0, output_size=2).tolist() == \
        [[4, 5, 6], [4, 5, 6]]
    assert tgrad.repeat_interleave(tgrad.tensor([1, 2]), output_size=3).tolist() == [0, 1, 1]
    for call, want, got in [
            (lambda: x.repeat_interleave(2, dim=1, output_size=5), 6, 5),
            (lambda: x.repeat_interleave(2, output_size=5), 12, 5),
            (lambda: x.repeat_interleave(tgrad.tensor([1, 2]), dim=0, output_size=4), 3, 4),
            (lambda: x.repeat_interleave(tgrad.tensor(3), dim=0, output_size=2), 6, 2),
            (lambda: tgrad.repeat_interleave(tgrad.tensor([1, 2]), output_size=4), 3, 4)]:
        with pytest.raises(RuntimeError, match=rf"repeat_interleave: Invalid output_size, "
                                               rf"expected {want} but got {got}"):
            call()


def test_index_put_takes_only_tensor_indices():
    # PyTorch's index_put_ takes a tuple of index tensors: None, ints, slices and lists are
    # TypeErrors (a None used to be read as NumPy's newaxis and fail on the value's shape)
    x = tgrad.zeros(3, 4)
    for bad, name in [(None, "NoneType"), (0, "int"), (slice(None), "slice"), ([0, 1], "list")]:
        for acc in (False, True):
            with pytest.raises(TypeError, match=rf"index_put_\(\): expected Tensor as element 1 "
                                                rf"in argument 0 \(indices\), but got {name}"):
                x.index_put((tgrad.tensor([0]), bad), tgrad.tensor(1.0), accumulate=acc)
    assert not x.any().item()
    y = x.index_put((tgrad.tensor([0, 2]), tgrad.tensor([1, 1])), tgrad.tensor(2.0),
                    accumulate=True)
    want = np.zeros((3, 4), dtype=np.float32)
    want[[0, 2], [1, 1]] += 2.0
    np.testing.assert_array_equal(y.numpy(), want)


def test_out_of_place_index_writes_are_new_tensors_not_views():
    # index_fill/index_copy return new memory, as PyTorch's (no _base, not a view)
    x = tgrad.zeros(3, 4)
    for y in (x.index_fill(0, tgrad.tensor([1]), 2.0),
              x.index_copy(1, tgrad.tensor([3, 0]), tgrad.ones(3, 2))):
        assert y._base is None and not y._is_view() and y.is_contiguous()
        y.add_(1.0)
    assert not x.any().item()
    v = x[1:]
    assert v._is_view() and v._base is x and not x._is_view()


def test_flatten_of_a_0d_tensor_checks_its_dims():
    # a 0-d tensor flattens to shape (1,); its dims wrap as one dim: 0 and -1 only
    x = tgrad.tensor(2.5)
    for args in [(), (0,), (-1,), (0, -1), (-1, 0)]:
        assert x.flatten(*args).tolist() == [2.5]
    for args in [(1,), (0, 1), (-2,)]:
        with pytest.raises(IndexError, match=r"flatten: Dimension out of range \(expected to "
                                             r"be in range of \[-1, 0\]"):
            x.flatten(*args)


def test_diff_order_zero_is_a_copy_without_prepend_append():
    # n=0: the input itself (PyTorch's and NumPy's), not the concatenation with prepend
    x = _t([[1.0, 4.0, 9.0], [2.0, 3.0, 5.0]], requires_grad=True)
    y = tgrad.diff(x, n=0, dim=0, prepend=_t([[0.0, 0.0, 0.0]]), append=_t([[7.0, 7.0, 7.0]]))
    np.testing.assert_array_equal(y.detach().numpy(), np.diff(x.detach().numpy(), n=0, axis=0))
    assert y.shape == (2, 3) and y is not x
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match=r"input.size\(0\) = 2, but got tensor.size\(0\) = 1"):
        tgrad.diff(x, n=0, prepend=_t([[0.0]]))  # the shapes are checked all the same
    with pytest.raises(TypeError, match=r"diff\(\): argument 'prepend' must be Tensor, not float"):
        tgrad.diff(x, prepend=1.0)


@pytest.mark.parametrize("call, err, msg", [
    (lambda: tgrad.ones(3, 4).index_put_((tgrad.tensor([5]),), tgrad.tensor(1.0)), IndexError,
     r"^index_put_: index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: tgrad.ones(3, 4).index_put_((tgrad.tensor([0]), tgrad.tensor([-5])),
                                         tgrad.tensor(1.0), accumulate=True), IndexError,
     r"^index_put_: index -5 is out of bounds for dimension 1 with size 4"),
    (lambda: tgrad.ones(3, 4).index_put_((tgrad.tensor([[True, False, True, True]] * 3),),
                                         tgrad.ones(2)), RuntimeError,
     r"index_put_: shape mismatch: value tensor of shape \[2\] cannot be broadcast to "
     r"indexing result of shape \[9\]$"),
    (lambda: tgrad.take(tgrad.ones(2, 2), tgrad.tensor([4])), IndexError,
     r"take\(\): index 4 out of range for tensor of size \[2, 2\]"),
    (lambda: tgrad.ones(3).repeat_interleave(tgrad.tensor([1, 2])), RuntimeError,
     r"repeats must have the same size as input along dim"),
    (lambda: tgrad.ones(3).repeat_interleave(-1), RuntimeError, "repeats can not be negative"),
    (lambda: tgrad.repeat_interleave(tgrad.tensor(3)), RuntimeError,  # (was [0, 0, 0])
     r"repeat_interleave only accept 1D vector as repeat \(got a tensor of shape \[\]\)"),
    (lambda: tgrad.repeat_interleave(tgrad.tensor([[1, 2]])), RuntimeError,
     "repeat_interleave only accept 1D vector as repeat"),
    (lambda: tgrad.diff(tgrad.tensor(1.0)), RuntimeError,
     "diff expects input to be at least one-dimensional"),
    (lambda: tgrad.diff(tgrad.ones(3, 4), prepend=tgrad.ones(4)), RuntimeError,
     r"diff expects prepend or append to be the same dimension as input \(got prepend of "
     r"shape \[4\] for input of shape \[3, 4\]\)"),
    (lambda: tgrad.fliplr(tgrad.ones(3)), RuntimeError, "Input must be >= 2-d"),
    (lambda: tgrad.inner(tgrad.ones(2), tgrad.ones(3)), RuntimeError,
     r"inner\(\) the last dimension must match"),
    (lambda: tgrad.ones(2, 3).index_copy(1, tgrad.tensor([0]), tgrad.ones(2, 2)), IndexError,
     r"index_copy_\(\): Number of indices \(1\) should be equal to source.size\(dim\) \(2\)"),
    (lambda: tgrad.ones(2, 3).index_copy(1, tgrad.tensor([0]), tgrad.ones(3, 1)), RuntimeError,
     r"index_copy\(\): source of shape \[3, 1\] and dtype float32 must have shape \[2, 1\]"),
])
def test_extras_errors(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_indexed_writes_and_inplace_forms():
    x = _t(np.zeros((2, 3)), requires_grad=True)
    y = x.index_fill(1, tgrad.tensor([0, 2]), -1.0)
    assert y.tolist() == [[-1.0, 0.0, -1.0], [-1.0, 0.0, -1.0]]
    y.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    z = tgrad.zeros(3).index_put((tgrad.tensor([0, 0, 2]),), _t([1.0, 2.0, 3.0]).float(),
                                 accumulate=True)
    assert z.tolist() == [3.0, 0.0, 3.0]  # repeated indices add up
    w = tgrad.zeros(3)
    assert w.index_put_((tgrad.tensor([1]),), tgrad.tensor([5.0])) is w
    assert w.tolist() == [0.0, 5.0, 0.0]
    a = tgrad.ones(2, 3)
    a.index_add_(1, tgrad.tensor([0, 0]), tgrad.ones(2, 2))
    assert a.tolist() == [[3.0, 1.0, 1.0], [3.0, 1.0, 1.0]]
    b = tgrad.zeros(2, 2)
    b.scatter_(1, tgrad.tensor([[1], [0]]), tgrad.tensor([[7.0], [8.0]]))
    assert b.tolist() == [[0.0, 7.0], [8.0, 0.0]]
    c = tgrad.tensor([0.0, 10.0])
    assert c.lerp_(tgrad.tensor([10.0, 20.0]), 0.5) is c and c.tolist() == [5.0, 15.0]
    assert tgrad.tensor([1.0]).addcmul_(tgrad.tensor([2.0]), tgrad.tensor([3.0])).tolist() == \
        [7.0]
    assert tgrad.tensor([-1.0, 2.0]).clamp_min_(0.0).tolist() == [0.0, 2.0]
    # in-place through autograd: the graph records the composite
    leaf = _t([1.0, 2.0], requires_grad=True)
    h = leaf * 1.0
    h.addcmul_(leaf, leaf, value=0.5)  # h = leaf + 0.5 leaf^2
    h.sum().backward()
    assert leaf.grad.tolist() == [2.0, 3.0]


def test_second_review_edges():
    assert tgrad.xlogy(_t([0.0, 0.0]), _t([-1.0, -np.inf])).tolist() == [0.0, 0.0]
    assert tgrad.xlogy(tgrad.tensor([1.0, 2.0]), tgrad.tensor(3.0, dtype=tgrad.float64)).dtype \
        is tgrad.float32  # a 0-d other does not promote
    assert tgrad.xlogy(2.0, tgrad.tensor([1.0])).tolist() == [0.0]
    x = _t([0.0, 1.0], requires_grad=True)
    tgrad.logit(x).sum().backward()
    assert x.grad.tolist() == [math.inf, math.inf]  # 1 / (x (1 - x)), not NaN
    v = _t(3.0, requires_grad=True)
    (tgrad.index_fill(_t(np.ones((2, 4))), 1, tgrad.tensor([0, 2, 0]), v) ** 2).sum().backward()
    assert v.grad.item() == 24.0  # each filled position counted once
    assert _t([[1.0, 2.0]]).index_fill(1, tgrad.tensor([-1]), 0.0).tolist() == [[1.0, 0.0]]
    assert tgrad.lerp(tgrad.tensor([1.0]), tgrad.tensor([3.0]), _t(0.5)).tolist() == [2.0]
    assert tgrad.tensor(5.0).index_add(0, tgrad.tensor([0]), tgrad.tensor(2.0)).item() == 7.0
    for call in (lambda: tgrad.tensor(5.0).index_add(0, tgrad.tensor([0, 0]), _t([2.0, 3.0])),
                 lambda: tgrad.tensor(5.0).index_reduce(0, tgrad.tensor([0]), tgrad.ones(1),
                                                        "prod")):
        # the source of a 0-d input is 0-d (PyTorch's check; [2, 3] was summed into it)
        with pytest.raises(RuntimeError, match=r"source tensor shape must match self tensor "
                                               r"shape.*self.shape = \[\] source.shape = \["):
            call()
    assert tgrad.scatter(tgrad.tensor(1.0), 0, tgrad.tensor([0]), tgrad.tensor(5.0)).item() == 5.0
    assert tgrad.tensor(5.0).index_fill(0, tgrad.tensor([0]), 2.0).item() == 2.0
    assert tgrad.inner(tgrad.zeros(2, 0), tgrad.zeros(3, 0)).tolist() == [[0.0] * 3] * 2
    assert tgrad.repeat_interleave(tgrad.tensor([1, 2, 0])).tolist() == [0, 1, 1]
    assert tgrad.randint(high=5, size=(3,)).shape == (3,)
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        tgrad.zeros(0, 6).unflatten(1, (4, 5))
    with pytest.raises(RuntimeError, match=r"take\(\): Expected a long tensor for index"):
        tgrad.take(tgrad.ones(2), tgrad.tensor([True, False]))
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        tgrad.zeros(3, 2).index_put(tgrad.tensor([[0, 1]]), tgrad.tensor(1.0))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match"):
        tgrad.zeros(3).index_put((tgrad.tensor([0]),), _t([1.0]))


@pytest.mark.parametrize("shape, dim, sizes, want", [
    # -1 is the dim's own size over the other sizes (PyTorch's infer_size over that dim),
    # even where another dim makes the tensor empty
    ((0, 1, 1, 2), -1, (2, -1), (0, 1, 1, 2, 1)),
    ((0, 1, 1, 2), -1, (-1, 2), (0, 1, 1, 1, 2)),
    ((0, 4), 1, (2, -1), (0, 2, 2)),
    ((0, 4), 0, (2, -1), (2, 0, 4)),
    ((2, 0), 1, (3, -1), (2, 3, 0)),
    ((0,), 0, (-1,), (0,)),
    ((2, 6), 1, (-1, 3), (2, 2, 3)),
])
def test_unflatten_infers_minus_one_from_the_dim(shape, dim, sizes, want):
    x = tgrad.zeros(shape)
    assert x.unflatten(dim, sizes).shape == want
    src = np.arange(float(math.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(tgrad.tensor(src).unflatten(dim, sizes).numpy(),
                                  src.reshape(want))


def test_unflatten_ambiguous_or_wrong_sizes():
    with pytest.raises(RuntimeError, match=r"unflatten: cannot reshape tensor of 0 elements "
                                           r"into shape \[0, -1\] because the unspecified "
                                           r"dimension size -1 can be any value and is "
                                           r"ambiguous"):
        tgrad.zeros(2, 0).unflatten(1, (0, -1))
    with pytest.raises(RuntimeError, match=r"Provided sizes \[-1, 0\] don't multiply up to "
                                           r"the size of dim 1 \(4\)"):
        tgrad.zeros(0, 4).unflatten(1, (-1, 0))
    with pytest.raises(RuntimeError, match=r"Provided sizes \[3, -1\] don't multiply up"):
        tgrad.zeros(2, 4).unflatten(1, (3, -1))


def test_nanmean_logit_gradients_outside_their_domain_match_pytorch():
    # PyTorch 2.14: nansum's backward is g * (x is not NaN), so an all-NaN slice of nanmean
    # (g / 0 = inf) gives NaN there; the other slice is 1 / (its non-NaN count)
    x = _t([[np.nan, np.nan], [np.nan, 1.0], [2.0, 4.0]], requires_grad=True)
    tgrad.nanmean(x, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[np.nan, np.nan], [0.0, 1.0], [0.5, 0.5]])
    # logit: NaN gradient outside [0, 1]; with eps, 0 outside [eps, 1 - eps], the bounds in
    x = _t([-0.5, 0.0, 0.1, 0.5, 0.9, 1.0, 1.5, np.nan], requires_grad=True)
    tgrad.logit(x).sum().backward()
    xv = x.detach().numpy()
    with np.errstate(divide="ignore"):
        expected = np.where((xv < 0) | (xv > 1), np.nan, 1 / (xv * (1 - xv)))
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    x.grad = None
    tgrad.logit(x, eps=0.1).sum().backward()
    inside = (xv >= 0.1) & (xv <= 0.9)
    expected = np.where(inside | np.isnan(xv), 1 / (xv * (1 - xv)), 0.0)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)
    # eps rounded to the input's dtype first: float16 0.1 is at the (rounded) bound, inside
    h = tgrad.tensor([0.1], dtype=tgrad.float16, requires_grad=True)
    tgrad.logit(h, eps=0.1).backward()
    h32 = np.float32(np.float16(0.1))
    assert h.grad.item() == float(np.float16(1 / (h32 * (1 - h32))))
    assert tgrad.autograd.gradgradcheck(lambda t: tgrad.logit(t, eps=0.2), _t(
        [0.3, 0.5, 0.7], requires_grad=True))
    assert tgrad.autograd.gradgradcheck(lambda t: tgrad.nanmean(t, 0), _t(
        [[0.3, np.nan], [0.7, 0.2]], requires_grad=True))


def test_logit_negative_eps_is_no_eps_and_its_gradient_at_signed_zero():
    # PyTorch: eps < 0 means no clamp (NaN outside [0, 1], values and gradient), and the
    # gradient at 0 and 1 is g * inf for -0.0 too (x (1 - x) = -0.0 there, g / -0.0 = -inf)
    xv = np.array([-0.5, -0.0, 0.0, 0.25, 1.0, 1.5])
    x = _t(xv, requires_grad=True)
    y = tgrad.logit(x, eps=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(y.detach().numpy(), np.log(xv / (1 - xv)), rtol=1e-15)
    (y * _t([1, 1, 1, 1, -1, 1])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(),
                                  [np.nan, np.inf, np.inf, 1 / 0.1875, -np.inf, np.nan])
    z = _t([-0.0], requires_grad=True)
    (-tgrad.logit(z)).sum().backward()
    assert z.grad.item() == -math.inf


def test_logit_eps_past_one_half_and_one_minus_eps_in_the_input_dtype():
    # PyTorch clamps as x < eps ? eps : (x > 1 - eps ? 1 - eps : x): with eps > 1/2 (lo > hi)
    # a value below eps gives logit(eps), not logit(1 - eps) as clamp(x, lo, hi) did; and
    # 1 - eps is computed in the input's dtype (float16: 1 - 1e-6 is 1, so logit(1) = inf)
    xv = np.array([0.2, 0.9, 0.5, 0.0, 1.0, 0.3, 0.7])
    x = _t(xv, requires_grad=True)
    y = tgrad.logit(x, eps=0.7)
    lo, hi = 0.7, 1 - 0.7
    clamped = np.where(xv < lo, lo, np.where(xv > hi, hi, xv))
    np.testing.assert_allclose(y.detach().numpy(), np.log(clamped / (1 - clamped)),
                               rtol=1e-15)
    y.sum().backward()  # nothing lies inside [lo, hi]: gradient 0 everywhere, as PyTorch's
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(7))
    h = tgrad.logit(tgrad.tensor([1.0, 0.0], dtype=tgrad.float16), eps=1e-6)
    lo16 = np.float64(np.float16(1e-6))
    assert h.tolist() == [math.inf, float(np.float16(np.log(lo16 / (1 - lo16))))]
    f32 = tgrad.logit(tgrad.tensor([1.0], dtype=tgrad.float32), eps=1e-6).item()
    hi32 = np.float64(np.float32(1) - np.float32(1e-6))
    assert f32 == float(np.float32(np.log(hi32 / (1 - hi32))))


def test_advanced_index_assignment_requires_matching_dtypes_as_pytorch():
    # PyTorch's index_put_ refuses a source of another dtype ("Index put requires the source
    # and destination dtypes match"), also a 0-d one, for integer-array keys; a Python
    # number is cast. One bool mask with a one-element source is written by masked_fill_,
    # which casts (setitem and index_put_ alike); accumulate=True always checks
    msg = "Index put requires the source and destination dtypes match, got float32 for the " \
          "destination and float64 for the source"
    for src in (tgrad.ones(1, dtype=tgrad.float64), tgrad.tensor(1.0, dtype=tgrad.float64)):
        for write in (lambda x, s=src: x.__setitem__(tgrad.tensor([0]), s),
                      lambda x, s=src: x.__setitem__([0, 1], s),
                      lambda x, s=src: x[:, None].__setitem__(tgrad.tensor([0]), s),
                      lambda x, s=src: x.index_put_((tgrad.tensor([0]),), s),
                      lambda x, s=src: x.index_put_((tgrad.tensor([True, False, True]),), s,
                                                    accumulate=True)):
            x = tgrad.zeros(3)
            with pytest.raises(RuntimeError, match=msg):
                write(x)
            assert x.tolist() == [0.0, 0.0, 0.0]
    x = tgrad.zeros(3)
    x[tgrad.tensor([0, 2])] = 1.5  # a number: cast
    x[tgrad.tensor([False, True, False])] = tgrad.tensor([2], dtype=tgrad.int64)  # mask fill
    assert x.tolist() == [1.5, 2.0, 1.5] and x.dtype is tgrad.float32
    y = tgrad.zeros(3, dtype=tgrad.int64)
    y.index_put_((tgrad.tensor([True, False, True]),), tgrad.tensor(2.7, dtype=tgrad.float64))
    assert y.tolist() == [2, 0, 2]
    # the masked_fill_ path checks the value as a number (PyTorch's value.item()): no silent
    # wrap, NaN integer or dropped imaginary part
    mask = tgrad.tensor([True, False, True])
    for dst, v in ((tgrad.zeros(3, dtype=tgrad.int8), tgrad.tensor(300)),
                   (tgrad.zeros(3, dtype=tgrad.int64), tgrad.tensor(math.nan)),
                   (tgrad.zeros(3), tgrad.tensor(1 + 1j)),
                   (tgrad.zeros(3, dtype=tgrad.float16), tgrad.tensor(1e6))):
        with pytest.raises(RuntimeError, match="cannot be converted to type .* without "
                                               "overflow"):
            dst[mask] = v
        assert dst.tolist() == [0, 0, 0]
    u = tgrad.zeros(3, dtype=tgrad.uint8)
    u[mask] = tgrad.tensor(-1)  # -255..-1 wrap into uint8, as PyTorch
    assert u.tolist() == [255, 0, 255]
    with pytest.raises(RuntimeError, match="Index put requires the source"):
        y[tgrad.tensor([True, False, True])] = tgrad.tensor([1.0, 2.0])  # two elements


def test_logit_near_one_half_is_accurate_to_a_few_ulp():
    # log x - log1p(-x) cancels near x = 1/2 (both terms near -log 2, the result ~4 (x - 1/2)):
    # at x = 1/2 + 2^-30 that form lost ~8 decimal digits. Reference: the exact binary value
    # of each float64 x, ln(x / (1 - x)) in 60-digit decimal arithmetic.
    import decimal
    ctx = decimal.Context(prec=60)
    xs = [0.5 + 2.0 ** -k for k in (2, 3, 10, 30, 52)] + [0.5 - 2.0 ** -k for k in (3, 30, 53)]
    xs += [0.2500001, 0.3, 0.45, 0.55, 0.7, 0.7499999, 0.2, 0.8, 1e-300, 1 - 2.0 ** -53]
    want = [float(ctx.ln(ctx.divide(decimal.Decimal(v), ctx.subtract(1, decimal.Decimal(v)))))
            for v in xs]
    for device in ("cpu",) + (("cuda",) if tgrad.cuda.is_available() else ()):
        got = tgrad.logit(tgrad.tensor(xs, dtype=tgrad.float64, device=device)).tolist()
        for v, g, w in zip(xs, got, want):
            assert abs(g - w) <= 4 * np.spacing(abs(w)), (device, v, g, w)


@pytest.mark.parametrize("dt, n", [(tgrad.float16, 4146), (tgrad.bfloat16, 257)])
def test_nanmean_of_a_half_tensor_divides_by_the_exact_count(dt, n):
    # PyTorch divides by the int64 count (tgrad rounded it to the half dtype first: 4146
    # is 4144 in float16, 257 is 256 in bfloat16). Reference: the float64 quotient of the
    # half sum, rounded to dt.
    x = tgrad.cat([tgrad.full((n,), 0.5 if dt is tgrad.float16 else 1.0, dtype=dt),
                   tgrad.tensor([math.nan, math.nan], dtype=dt)])
    for got in (tgrad.nanmean(x), tgrad.nanmean(x.reshape(1, -1), 1)[0]):
        total = float(tgrad.nansum(x))
        assert got.dtype is dt
        assert float(got) == float(tgrad.tensor(total / n, dtype=tgrad.float64).to(dt))
        assert float(got) != float(tgrad.tensor(total / float(tgrad.tensor(n).to(dt)),
                                                dtype=tgrad.float64).to(dt))
