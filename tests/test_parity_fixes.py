"""Regression tests for differences from PyTorch found by differential audits (2026-12-03):
each asserts PyTorch's documented behaviour against a NumPy float64 reference."""

from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn


def _f64(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **kw)


# ------------------------------------------------------------------------------ indexing
def test_gather_and_scatter_take_a_0d_index_as_one_position():
    x = _f64([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x.gather(0, tgrad.tensor(2))
    assert y.shape == () and y.item() == 3.0
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0, 0.0])
    base = x.detach()
    np.testing.assert_array_equal(base.scatter(0, tgrad.tensor(2), 9.0).numpy(), [1, 2, 9, 4])
    np.testing.assert_array_equal(
        base.scatter_add(0, tgrad.tensor(2), _f64(9.0)).numpy(), [1, 2, 12, 4])
    # a 1-d src with a 0-d index writes src's first element
    np.testing.assert_array_equal(
        base.scatter(0, tgrad.tensor(1), _f64([5.0, 6.0])).numpy(), [1, 5, 3, 4])


@pytest.mark.parametrize("make", [
    lambda x: x.repeat(1, 1), lambda x: x.tile((1,)), lambda x: x.repeat(1, 3),
    lambda x: x.repeat_interleave(1), lambda x: x.repeat_interleave(1, dim=0)])
def test_repeat_tile_and_repeat_interleave_always_return_new_memory(make):
    data = np.array([[1.0], [2.0]])
    x = _f64(data)
    y = make(x)
    y.fill_(99.0)  # writes only the copy (a stride-0 view would refuse; a view would leak)
    np.testing.assert_array_equal(x.numpy(), data)
    leaf = _f64(data, requires_grad=True)
    z = make(leaf)
    z.mul_(2.0)  # an in-place op on the result of a leaf: allowed (it is not a view)
    z.sum().backward()
    assert leaf.grad.numpy().sum() == 2.0 * z.numel()


def test_an_ellipsis_of_no_dims_does_not_separate_index_arrays():
    a = np.arange(120.0).reshape(4, 5, 6)
    x = _f64(a)
    got = x[:, [0, 1], ..., [2, 3]]
    np.testing.assert_array_equal(got.numpy(), a[:, [0, 1], [2, 3]])  # dims kept in place
    assert got.shape == (4, 2)
    # an Ellipsis that covers dims still separates them: the indexed dim goes first
    np.testing.assert_array_equal(x[[0, 1], ..., [2, 3]].numpy(), a[[0, 1], ..., [2, 3]])
    y = tgrad.zeros(3, 3, 3, dtype=tgrad.float64)
    y[:, tgrad.tensor([0, 1, 2]), ..., tgrad.tensor([0, 0, 0])] = _f64(np.arange(9.0).reshape(3, 3))
    ref = np.zeros((3, 3, 3))
    ref[:, [0, 1, 2], [0, 0, 0]] = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(y.numpy(), ref)
    g = _f64(a, requires_grad=True)
    g[:, [0, 1], ..., [2, 3]].sum().backward()
    ref_g = np.zeros_like(a)
    ref_g[:, [0, 1], [2, 3]] = 1.0
    np.testing.assert_array_equal(g.grad.numpy(), ref_g)


def test_a_list_of_sequences_is_a_tuple_of_indices_with_a_warning():
    a = np.arange(20.0).reshape(4, 5)
    x = _f64(a)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        got = x[[tgrad.tensor([0, 1]), tgrad.tensor([2, 3])]]
    np.testing.assert_array_equal(got.numpy(), a[[0, 1], [2, 3]])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        np.testing.assert_array_equal(x[[0, slice(None)]].numpy(), a[0, :])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a flat list of ints is one index array, no warning
        np.testing.assert_array_equal(x[[0, 1]].numpy(), a[[0, 1]])


def test_setitem_shape_mismatch_is_a_runtime_error():
    x = tgrad.zeros(5)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[[0, 1]] = tgrad.ones(3)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[x > -1] = tgrad.ones(3)


# ------------------------------------------------------------------------------ shapes
@pytest.mark.parametrize("src,dst", [((0, 1), (2, 0)), (0, -1), ([2, 0], [0, 1]), (1, 1)])
def test_movedim_takes_ints_and_sequences(src, dst):
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tgrad.movedim(_f64(a), src, dst).numpy(),
                                  np.moveaxis(a, src, dst))
    np.testing.assert_array_equal(_f64(a).moveaxis(src, dst).numpy(), np.moveaxis(a, src, dst))


def test_shape_arguments_must_be_ints():
    x = tgrad.zeros(2, 3, 4)
    with pytest.raises(TypeError, match=r"reshape\(\): argument 'shape' must be int, not str"):
        x.reshape("a")
    with pytest.raises(TypeError, match=r"reshape\(\).*not float"):
        x.reshape(2.0, 12)
    with pytest.raises(TypeError, match=r"squeeze\(\): argument 'dim' must be int"):
        x.squeeze("a")
    with pytest.raises(TypeError, match=r"split\(\).*not float"):
        x.split(1.5)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        tgrad.zeros(1, 2).squeeze((0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.tensor(1.0).transpose(0, 2)
    with pytest.raises(RuntimeError, match="same number of dims"):
        x.movedim((0, 1), 2)
    assert tgrad.tensor(1.0).transpose(0, -1).shape == ()
    assert x.reshape(np.int64(24)).shape == (24,)
    assert x.sum(np.int64(1)).shape == (2, 4)


# ------------------------------------------------------------------------------ reductions
def test_var_mean_and_std_mean_take_unbiased_positionally():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 6.0, 9.0]])
    v, m = tgrad.var_mean(_f64(a), False)
    assert v.item() == pytest.approx(a.var()) and m.item() == pytest.approx(a.mean())
    s, m = tgrad.std_mean(_f64(a), True)
    assert s.item() == pytest.approx(a.std(ddof=1)) and m.shape == ()
    v, m = tgrad.var_mean(_f64(a), 1, correction=0, keepdim=True)
    np.testing.assert_allclose(v.numpy(), a.var(1, keepdims=True))
    np.testing.assert_allclose(m.numpy(), a.mean(1, keepdims=True))


def test_amax_amin_with_an_empty_dim_list_reduce_everything():
    a = np.array([[1.0, 5.0], [3.0, 2.0]])
    assert tgrad.amax(_f64(a), dim=[]).item() == 5.0
    assert tgrad.amin(_f64(a), []).item() == 1.0


def test_amax_gradient_is_nan_over_a_slice_whose_maximum_is_nan():
    x = _f64([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], requires_grad=True)
    x.amax(1).sum().backward()
    assert np.isnan(x.grad.numpy()[0]).all()  # not silently 0 (PyTorch: g / 0 * [x == y])
    np.testing.assert_array_equal(x.grad.numpy()[1], [0.0, 0.0, 1.0])


@pytest.mark.parametrize("call", [
    lambda: tgrad.sum(2.0), lambda: tgrad.mean([1.0]), lambda: tgrad.amax(np.float64(1.0)),
    lambda: tgrad.var(np.ones(3)), lambda: tgrad.logsumexp(1.0, 0),
    lambda: tgrad.clamp(1.0, 0, 0.5), lambda: tgrad.argmax([1.0])])
def test_reductions_of_non_tensors_raise_type_errors_naming_the_op(call):
    with pytest.raises(TypeError, match=r"\(\): argument 'input' \(position 1\) must be Tensor"):
        call()


def test_max_min_argument_checks():
    x = tgrad.ones(2, 3)
    with pytest.raises(TypeError, match="keepdim"):
        x.max(keepdim=True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.tensor(1.5).max(5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.tensor(1.5).argmax(3)
    assert tgrad.tensor(1.5).max(-1).values.item() == 1.5


def test_max_min_take_a_tensor_dim_by_keyword_and_a_tensor_other_by_position():
    # PyTorch: dim=<integer 0-d Tensor> reduces along it; a positional Tensor is the
    # other operand of maximum/minimum (dim= as a Tensor was taken for other=: a silent
    # elementwise maximum)
    a = np.array([[0.0, 5.0, 2.0], [3.0, 1.0, 4.0]])
    x = tgrad.tensor(a)
    for f, npf, arg in ((tgrad.max, np.max, np.argmax), (tgrad.min, np.min, np.argmin)):
        r = f(x, dim=tgrad.tensor(1))
        assert r.values.tolist() == npf(a, 1).tolist()
        assert r.indices.tolist() == arg(a, 1).tolist()
        out = tgrad.empty(2, 3)
        elementwise = f(x, tgrad.tensor(2.0), out=out)
        assert elementwise is out
        assert out.tolist() == (np.maximum if f is tgrad.max else np.minimum)(a, 2.0).tolist()
    assert x.max(dim=tgrad.tensor(0)).values.tolist() == a.max(0).tolist()
    assert x.min(axis=tgrad.tensor(1)).values.tolist() == a.min(1).tolist()  # (NumPy's name)
    with pytest.raises(TypeError, match=r"max\(\): argument 'dim' must be int"):
        x.max(dim=tgrad.tensor(True))
    with pytest.raises(TypeError, match=r"max\(\): argument 'dim' must be int, not a Tensor"):
        tgrad.max(x, dim=tgrad.tensor(1.0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.min(x, dim=tgrad.tensor(5))


def test_integer_dtype_arguments_of_prod_cumsum_and_nanmean():
    assert tgrad.prod(tgrad.tensor([2, 3]), dtype=tgrad.int32).dtype is tgrad.int32
    c = tgrad.cumsum(tgrad.tensor([2, 3]), 0, dtype=tgrad.int32)
    assert c.dtype is tgrad.int32 and c.tolist() == [2, 5]
    with pytest.raises(RuntimeError, match="nanmean"):
        tgrad.nanmean(tgrad.tensor([0.5]), dtype=tgrad.int64)


# ------------------------------------------------------------------------------ elementwise
@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_division_has_zero_gradients(mode):
    a, b = np.array([1.0, -7.0, 3.0]), np.array([0.0, 2.0, 0.5])
    x, y = _f64(a, requires_grad=True), _f64(b, requires_grad=True)
    with np.errstate(divide="ignore"):
        q = a / b
    ref = np.trunc(q) if mode == "trunc" else np.floor(q)
    out = tgrad.div(x, y, rounding_mode=mode)
    np.testing.assert_array_equal(out.numpy(force=True), ref)
    assert out.grad_fn is not None
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0, 0.0])


def test_python_ints_outside_an_integer_dtype_raise_a_clear_error():
    t = tgrad.tensor([1, 2], dtype=tgrad.int32)
    for call, op in ((lambda: t == 2**40, "eq"), (lambda: t + 2**31, "add"),
                     (lambda: tgrad.clamp(t, max=2**40), "clamp"),
                     (lambda: tgrad.where(t > 1, t, 2**40), "where")):
        with pytest.raises(RuntimeError, match=f"{op}: value .* without overflow"):
            call()


def test_a_number_over_a_tensor_is_the_reciprocal_times_the_number():
    # PyTorch's Tensor.__rtruediv__ is self.reciprocal() * other: for halves the reciprocal
    # is rounded to the half dtype first, then multiplied with the number in float32
    h = np.array([3.0, 8.0, 1e-5], dtype=np.float16)
    for c in (70000.0, 10, 1e-3):
        out = c / tgrad.tensor(h)
        assert out.dtype is tgrad.float16
        with np.errstate(over="ignore"):
            recip = (np.float32(1) / h.astype(np.float32)).astype(np.float16)
            want = (recip.astype(np.float32) * np.float32(c)).astype(np.float16)
        np.testing.assert_array_equal(out.numpy(), want)
    assert (10 / tgrad.tensor([3.0], dtype=tgrad.float16)).item() == 3.33203125
    assert (1e-3 / tgrad.tensor([1e-5], dtype=tgrad.float16)).item() == np.inf
    x = tgrad.tensor([2.0, -4.0], dtype=tgrad.float64, requires_grad=True)
    y = 3 / x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -3 / np.array([2.0, -4.0]) ** 2, rtol=1e-15)
    assert (2 / tgrad.tensor([4])).dtype is tgrad.float32


def test_pow_takes_the_exponent_keyword():
    a = np.array([2.0, 3.0])
    np.testing.assert_array_equal(tgrad.pow(_f64(a), exponent=2).numpy(), a**2)
    np.testing.assert_array_equal(_f64(a).pow(exponent=3).numpy(), a**3)


# ------------------------------------------------------------------------------ nn, optim, io
def test_save_and_load_keep_0d_tensors_and_batchnorm_state_round_trips():
    buf = io.BytesIO()
    tgrad.save({"a": tgrad.tensor(3), "b": tgrad.ones(2, 3)[:, 1]}, buf)
    buf.seek(0)
    back = tgrad.load(buf)
    assert back["a"].shape == () and back["a"].item() == 3
    assert back["b"].tolist() == [1.0, 1.0]
    m = nn.BatchNorm1d(3)
    m(tgrad.randn(4, 3))
    buf = io.BytesIO()
    tgrad.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = nn.BatchNorm1d(3)
    m2.load_state_dict(tgrad.load(buf))
    assert m2.num_batches_tracked.item() == 1
    np.testing.assert_array_equal(m2.running_mean.numpy(), m.running_mean.numpy())


def test_nll_loss_with_every_target_ignored_has_zero_gradient():
    x = _f64([[0.1, -0.2, 0.3], [0.5, 0.1, -1.0]], requires_grad=True)
    loss = F.nll_loss(x, tgrad.tensor([1, 1]), ignore_index=1)
    assert math.isnan(loss.item())  # 0 / 0, as PyTorch
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    x.grad = None
    loss = F.nll_loss(x, tgrad.tensor([1, 0]), ignore_index=1)
    assert loss.item() == pytest.approx(-0.5)
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0], [-1, 0, 0]])


def test_embedding_rejects_negative_indices_and_pad_rejects_overcropping():
    with pytest.raises(IndexError, match="embedding: index out of range"):
        F.embedding(tgrad.tensor([-1]), tgrad.arange(6.0).reshape(3, 2))
    for pads in ((-5, 4), (-4, 3)):
        with pytest.raises(RuntimeError, match="pad: narrow"):
            F.pad(tgrad.arange(3.0), pads)
    np.testing.assert_array_equal(F.pad(tgrad.arange(3.0), (-3, 1)).numpy(), [0.0])


def test_cross_entropy_loss_has_pytorchs_signature_and_a_weight_buffer():
    w = _f64([1.0, 2.0, 3.0])
    logits, target = _f64([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]]), tgrad.tensor([0, 2])
    z = logits.numpy()
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    ref = -(w.numpy()[[0, 2]] * logp[[0, 1], [0, 2]]).sum() / w.numpy()[[0, 2]].sum()
    crit = nn.CrossEntropyLoss(w)
    assert crit(logits, target).item() == pytest.approx(ref)
    assert list(crit.state_dict()) == ["weight"]
    smooth = nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum")(logits, target).item()
    ref_s = -(0.9 * logp[[0, 1], [0, 2]] + 0.1 / 3 * logp.sum(1)).sum()
    assert smooth == pytest.approx(ref_s)
    with pytest.warns(UserWarning):
        assert nn.MSELoss(size_average=False)(tgrad.ones(2), tgrad.zeros(2)).item() == 2.0


def test_adagrad_add_param_group_and_optimizer_steps_loaded_as_numbers():
    p = nn.Parameter(tgrad.ones(2))
    opt = tgrad.optim.Adagrad([p], lr=0.1)
    q = nn.Parameter(tgrad.ones(2))
    opt.add_param_group({"params": [q]})
    q.grad = tgrad.ones(2)
    opt.step()
    np.testing.assert_allclose(q.detach().numpy(), [0.9, 0.9], rtol=1e-6)  # 1 - 0.1 * 1 / 1
    p = nn.Parameter(_f64([1.0, 1.0]))
    opt = tgrad.optim.Adam([p], lr=0.1)
    p.grad = tgrad.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = 1  # an older checkpoint's plain number
    opt2 = tgrad.optim.Adam([p], lr=0.1)
    opt2.load_state_dict(sd)
    p.grad = tgrad.ones_like(p)
    opt2.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 0.8], rtol=1e-6)
    assert opt2.state[p]["step"].item() == 2.0


def test_group_norm_of_one_value_per_group_and_bce_weight_that_would_broadcast_up():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.group_norm(tgrad.ones(1, 4), 4)
    x, t = tgrad.full((2,), 0.5), tgrad.ones(2)
    with pytest.raises(RuntimeError, match="weight of shape"):
        F.binary_cross_entropy(x, t, weight=tgrad.ones(3, 2))
    with pytest.raises(RuntimeError, match="weight of shape"):
        F.binary_cross_entropy_with_logits(x, t, weight=tgrad.ones(3, 2))
    out = F.binary_cross_entropy(x, t, weight=tgrad.full((1,), 2.0), reduction="none")
    np.testing.assert_allclose(out.numpy(), 2.0 * np.log(2.0) * np.ones(2), rtol=1e-6)


def test_batchnorm_loads_a_legacy_state_dict_without_num_batches_tracked():
    m = nn.Sequential(nn.BatchNorm1d(3))
    sd = dict(m.state_dict())  # a plain dict: no _metadata, so a pre-version-2 state_dict
    del sd["0.num_batches_tracked"]
    result = m.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    del sd["0.running_mean"]
    with pytest.raises(RuntimeError, match='Missing key.*"0.running_mean"'):
        m.load_state_dict(sd)


def test_expand_to_the_same_shape_is_a_new_view_when_recording():
    x = tgrad.ones(2, 3, requires_grad=True)
    y = x.expand(2, 3)
    assert y is not x and y._base is x and y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))


# ------------------------------------------------------------------------------ tensor API
def test_a_view_requires_grad_once_its_base_is_written_in_place():
    x = _f64([1.0, 2.0, 3.0], requires_grad=True)
    w = tgrad.ones(3, dtype=tgrad.float64, requires_grad=True)
    buf = tgrad.zeros(2, 3, dtype=tgrad.float64)
    row, other = buf[0], buf[1]
    row.copy_(x * 2.0)  # buf (and so every view of it) now depends on x
    assert row.requires_grad and other.requires_grad
    (row * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0, 6.0])


def test_floor_divide_and_remainder_assignment_are_in_place():
    x = tgrad.tensor([5, 7, 9])
    v = x[1:]
    v //= 2
    assert x.tolist() == [5, 3, 4]
    y = tgrad.tensor([5.0, -7.0])
    alias = y
    alias %= 3.0
    np.testing.assert_array_equal(y.numpy(), np.remainder([5.0, -7.0], 3.0))
    np.testing.assert_array_equal(tgrad.tensor([5.0, -7.0]).fmod_(3.0).numpy(),
                                  np.fmod([5.0, -7.0], 3.0))
    np.testing.assert_array_equal(
        tgrad.tensor([5.0, -7.0]).div_(2.0, rounding_mode="floor").numpy(), [2.0, -4.0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_rand_never_returns_one(dtype):
    tgrad.manual_seed(0)
    u = tgrad.rand(200_000, dtype=getattr(tgrad, dtype)).float().numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01  # uniform: mean 1/2 (std of the mean ~6.5e-4)


@pytest.mark.parametrize("call", [
    lambda: tgrad.tensor(2**63), lambda: tgrad.tensor([2**40], dtype=tgrad.int32),
    lambda: tgrad.tensor(float("nan"), dtype=tgrad.int64),
    lambda: tgrad.full((2,), float("inf"), dtype=tgrad.int64),
    lambda: tgrad.tensor([1, 2]).fill_(float("nan")),
    lambda: tgrad.full((2,), 1e300)])
def test_creation_values_that_do_not_fit_the_dtype_raise(call):
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        call()
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for int"):  # PyTorch's
        tgrad.randint(0, 2**40, (3,), dtype=tgrad.int32)


def test_tensor_of_a_list_of_tensors_keeps_their_dtype():
    t = tgrad.tensor([tgrad.tensor(1.1, dtype=tgrad.float64)])
    assert t.dtype is tgrad.float64 and t.item() == 1.1
    pair = [tgrad.tensor(1, dtype=tgrad.int32), tgrad.tensor(2, dtype=tgrad.int32)]
    assert tgrad.tensor(pair).dtype is tgrad.int32


def test_as_tensor_with_another_dtype_records_the_cast_and_float_means_float64():
    x = _f64([1.0, 2.0]).float().requires_grad_()
    y = tgrad.as_tensor(x, dtype=tgrad.float64)
    assert y.dtype is tgrad.float64 and y.grad_fn is not None
    (y * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    assert tgrad.zeros(2, dtype=float).dtype is tgrad.float64
    assert tgrad.ones(2).to(float).dtype is tgrad.float64


def test_numpy_comparisons_membership_and_format():
    t = tgrad.tensor([1, 2])
    assert (t == np.array([1, 2])).tolist() == [True, True]
    assert (t != np.array([1, 3])).tolist() == [False, True]
    assert 3 in tgrad.tensor([[1, 2], [3, 4]]) and 5 not in tgrad.tensor(3)
    assert f"{tgrad.tensor(3.14159):.4f}" == "3.1416"
    assert f"{tgrad.tensor(7)}" == "7"


def test_arange_with_tensor_arguments_and_creation_errors():
    assert tgrad.arange(tgrad.tensor(5)).dtype is tgrad.int64
    assert tgrad.arange(tgrad.tensor(1), tgrad.tensor(7), tgrad.tensor(2)).tolist() == [1, 3, 5]
    for call in (lambda: tgrad.eye(-1), lambda: tgrad.linspace(0, 1, -1),
                 lambda: tgrad.arange(0, float("inf")), lambda: tgrad.arange(0, 5, -1)):
        with pytest.raises(RuntimeError):
            call()
    with pytest.raises(IndexError, match="no dimensions"):
        tgrad.zeros(()).size(0)


def test_tensor_from_ranges_and_arrays_reversed_and_bool_index():
    assert tgrad.tensor(range(3)).tolist() == [0, 1, 2]
    t = tgrad.tensor([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    assert t.dtype is tgrad.float64 and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert reversed(tgrad.tensor([1, 2, 3])).tolist() == [3, 2, 1]
    assert [10, 20][tgrad.tensor(True)] == 20
    with pytest.raises(TypeError, match="integer tensors"):
        [10, 20][tgrad.tensor(1.0)]


def test_randint_fills_a_float_dtype_with_integers():
    # torch.randint(5, (n,), dtype=torch.float32) is allowed: the integers as floats
    tgrad.manual_seed(4)
    a = tgrad.randint(-3, 5, (200,), dtype=tgrad.float32)
    v = a.numpy()
    assert a.dtype is tgrad.float32 and np.array_equal(v, np.floor(v))
    assert v.min() >= -3 and v.max() <= 4 and len(np.unique(v)) == 8
    tgrad.manual_seed(4)  # the same draws as the int64 tensor
    assert np.array_equal(tgrad.randint(-3, 5, (200,)).numpy(), v.astype(np.int64))
    assert tgrad.randint(3, (2,), dtype=tgrad.float16, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="randint: to - 1 is out of bounds for c10::Half"):
        tgrad.randint(0, 100000, (2,), dtype=tgrad.float16)


def test_number_overflow_checks_compare_the_unrounded_value():
    # PyTorch's checked conversion (c10::checked_convert) compares the number itself with
    # the dtype's largest finite value: 65510.0 and 65519.0 round to float16's 65504 but do
    # not fit, 3.4028235e38 rounds to float32's max but does not fit; 2147483647.5 does not
    # fit int32 although it truncates to its max. inf and NaN fit any float dtype.
    h = tgrad.ones(2, dtype=tgrad.float16)
    for v in (65510.0, 65519.0, -65519.0, 65505):
        with pytest.raises(RuntimeError, match=f"masked_fill: value {v} cannot be converted "
                                               f"to type float16 without overflow"):
            h.masked_fill(tgrad.tensor([True, False]), v)
        with pytest.raises(RuntimeError, match="clamp: value .* float16 without overflow"):
            h.clamp(max=v)
    assert h.masked_fill(tgrad.tensor([True, False]), 65504.0).tolist() == [65504.0, 1.0]
    assert h.masked_fill(tgrad.tensor([True, False]), -np.inf).tolist() == [-np.inf, 1.0]
    with pytest.raises(RuntimeError, match="add: value 3.39e\\+38 cannot be converted to type "
                                           "bfloat16"):
        tgrad.add(h.bfloat16(), h.bfloat16(), alpha=3.39e38)
    with pytest.raises(RuntimeError, match="full\\(\\): value 3.4028235e\\+38 cannot be "
                                           "converted to type float32"):
        tgrad.full((1,), 3.4028235e38)
    assert tgrad.full((1,), 3.4028234663852886e38).tolist() == [3.4028234663852886e38]
    for v in (2147483647.5, -2147483648.5):
        with pytest.raises(RuntimeError, match="int32 without overflow"):
            tgrad.full((1,), v, dtype=tgrad.int32)
    assert tgrad.full((1,), 2147483647.0, dtype=tgrad.int32).tolist() == [2 ** 31 - 1]
    # a Python int outside the 64-bit range of a number argument: OverflowError
    for v in (2 ** 64, -2 ** 63 - 1):
        with pytest.raises(OverflowError, match="int too big to convert"):
            tgrad.full((1,), v, dtype=tgrad.float64)
    assert tgrad.full((1,), 2 ** 63, dtype=tgrad.float64).tolist() == [2.0 ** 63]


def test_half_full_and_fill_are_checked_item_assignment_is_not():
    # PyTorch: full / fill_ of a (multi-element) float16/bfloat16 tensor check the number
    # like masked_fill; item assignment copies a 0-d tensor filled through float32, never
    # checked: values that round to the largest finite value give it, the others inf
    for dt, v, want in ((tgrad.float16, 65519.0, 65504.0), (tgrad.float16, 65520.0, np.inf),
                        (tgrad.float16, -1e39, -np.inf), (tgrad.float16, 65510, 65504.0),
                        (tgrad.bfloat16, 3.4e38, np.inf), (tgrad.bfloat16, -1e39, -np.inf)):
        with pytest.raises(RuntimeError, match=f"full\\(\\): value .* {dt.name} without"):
            tgrad.full((2,), v, dtype=dt)
        with pytest.raises(RuntimeError, match=f"fill_: value .* {dt.name} without"):
            tgrad.zeros(2, dtype=dt).fill_(v)
        x = tgrad.zeros(3, dtype=dt)
        x[1] = v
        x[tgrad.tensor([True, False, False])] = v
        assert x.tolist() == [want, want, 0.0]


_I = [[1, 2, 3], [4, 5, 7]]
_F = [[1.5, 2.0, 2.0], [3.0, 5.5, 9.0]]


@pytest.mark.parametrize("name,ref", [
    ("l1_loss", lambda d: np.abs(d)),
    ("mse_loss", lambda d: d * d),
    ("smooth_l1_loss", lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)),
])
def test_elementwise_losses_promote_an_integer_input_with_a_float_target(name, ref):
    # PyTorch computes these losses in the promoted dtype of input and target
    d = np.array(_I, np.float64) - np.array(_F, np.float64)
    fn = getattr(F, name)
    for a, b in ((tgrad.tensor(_I), tgrad.tensor(_F)), (tgrad.tensor(_F), tgrad.tensor(_I))):
        out = fn(a, b, reduction="none")
        assert out.dtype is tgrad.float32
        np.testing.assert_allclose(out.numpy(), ref(d), rtol=1e-6)
        np.testing.assert_allclose(fn(a, b).item(), ref(d).mean(), rtol=1e-6)
    # the float target's gradient flows through the promotion
    t = tgrad.tensor(_F, dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: fn(tgrad.tensor(_I), t), (t,))


def test_integer_losses_raise_like_pytorch_kernels():
    i, f = tgrad.tensor(_I), tgrad.tensor(_F)
    for name, kernel in (("mse_loss", "mse_cpu"), ("smooth_l1_loss", "smooth_l1_cpu"),
                         ("huber_loss", "huber_cpu")):
        for red in ("mean", "none"):
            with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for '
                                                          f"'Long'"):
                getattr(F, name)(i, i, reduction=red)
    # huber writes into a tensor of the input's dtype
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        F.huber_loss(i, f)
    np.testing.assert_allclose(F.huber_loss(f, i, reduction="none").numpy(),
                               F.smooth_l1_loss(f, i, reduction="none").numpy())
    # l1_loss of integers is |input - target| in integers; its mean raises mean's error
    out = F.l1_loss(i, tgrad.tensor([[0, 4, 3], [9, 5, -1]]), reduction="none")
    assert out.dtype is tgrad.int64 and out.tolist() == [[1, 2, 0], [5, 0, 8]]
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        F.l1_loss(i, i)


def test_cosine_similarity_promotes_and_needs_a_float_common_dtype():
    a, b = np.array(_I, np.float64), np.array(_F, np.float64)
    want = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    for x, y in ((tgrad.tensor(_I), tgrad.tensor(_F)), (tgrad.tensor(_F), tgrad.tensor(_I))):
        out = F.cosine_similarity(x, y)
        assert out.dtype is tgrad.float32
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet "
                                           "common dtype is Long"):
        F.cosine_similarity(tgrad.tensor(_I), tgrad.tensor(_I))


def test_bilinear_keeps_integer_dtypes_and_needs_one_dtype():
    x1, x2 = np.array([[1, 2], [-3, 0]]), np.array([[3, 4, 5], [1, -1, 2]])
    w, b = np.arange(12).reshape(2, 2, 3) - 5, np.array([1, -2])
    want = np.einsum("ni,oij,nj->no", x1, w, x2) + b
    for dt in (tgrad.int32, tgrad.int64):
        out = F.bilinear(*(tgrad.tensor(v, dtype=dt) for v in (x1, x2, w, b)))
        assert out.dtype is dt and out.tolist() == want.tolist()
    t = lambda v, dt: tgrad.tensor(v, dtype=dt)  # noqa: E731
    with pytest.raises(RuntimeError, match="All tensors must have the same dtype, got input1: "
                                           "int, input2: int, weight: float$"):
        F.bilinear(t(x1, tgrad.int32), t(x2, tgrad.int32), t(w, tgrad.float32))
    with pytest.raises(RuntimeError, match="got input1: float, input2: float, weight: float, "
                                           "bias: double"):
        F.bilinear(t(x1, tgrad.float32), t(x2, tgrad.float32), t(w, tgrad.float32),
                   t(b, tgrad.float64))
    with pytest.raises(RuntimeError, match="got input1: long int, input2: c10::Half"):
        F.bilinear(t(x1, tgrad.int64), t(x2, tgrad.float16), t(w, tgrad.float32))


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_tanh_sigmoid_and_gelu_backward_meeting_inf_do_not_warn(op):
    # d tanh = 1 - y^2 is exactly 0 at x = +inf (and d sigmoid = y (1 - y) at +-inf), so an
    # inf incoming gradient gives inf * 0 = NaN there: silently, as PyTorch (mish reaches
    # this through tanh(softplus(x)) at x = inf). Hand values: at x = 0.5 the derivative is
    # 1 - tanh(0.5)^2, sigmoid(0.5)(1 - sigmoid(0.5)).
    x = tgrad.tensor([np.inf, 0.5], dtype=tgrad.float64, requires_grad=True)
    y = getattr(x, op)()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (y * tgrad.tensor([np.inf, 1.0], dtype=tgrad.float64)).sum().backward()
        x2 = tgrad.tensor([np.inf, -np.inf], dtype=tgrad.float64, requires_grad=True)
        F.mish(x2).sum().backward()
        # gelu's d = Phi(x) + x phi(x) is exactly 0 at x = -40 and -1e308: an inf g gives
        # NaN there, silently (as PyTorch); d(0) = 1/2, d(2) = Phi(2) + 2 phi(2)
        x3 = tgrad.tensor([-1e308, -40.0, 0.0, 2.0], dtype=tgrad.float64, requires_grad=True)
        (F.gelu(x3) * np.inf).sum().backward()
        x4 = tgrad.tensor([-1e308, 0.0, 2.0], dtype=tgrad.float64, requires_grad=True)
        F.gelu(x4).sum().backward()
    d2 = 0.5 * (1 + math.erf(2 / math.sqrt(2))) + 2 * math.exp(-2) / math.sqrt(2 * math.pi)
    assert [math.isnan(v) for v in x3.grad.tolist()] == [True, True, False, False]
    assert x3.grad[2:].tolist() == [np.inf, np.inf]
    assert x4.grad[:2].tolist() == [0.0, 0.5]
    assert x4.grad[2].item() == pytest.approx(d2, rel=1e-14)
    s = 1 / (1 + math.exp(-0.5))
    want = 1 - math.tanh(0.5) ** 2 if op == "tanh" else s * (1 - s)
    assert math.isnan(x.grad[0].item())
    assert x.grad[1].item() == pytest.approx(want, rel=1e-14)
    assert all(math.isnan(v) for v in x2.grad.tolist())  # inf - inf inside mish, as PyTorch


# --------------------------------------------------- arange: float args, integer dtype
def test_arange_float_args_integer_dtype():
    # other integer dtypes: length ceil((end - start) / step) of the given numbers, values
    # trunc(start) + i * trunc(step) wrapped to the dtype (PyTorch's kernel)
    def ref(start, end, step, np_dt):
        n = max(0, math.ceil((end - start) / step))
        return (int(start) + int(step) * np.arange(n)).astype(np_dt)
    for args in ((1.8, 0, -1.41), (2.0, -1, -0.4), (0.5, 3, 0.7), (-1.5, 2, 1.2),
                 (0.5, 3.2, 1.5)):
        for dt in (tgrad.int32, tgrad.int16, tgrad.uint8, tgrad.int8):
            got = tgrad.arange(*args, dtype=dt)
            np.testing.assert_array_equal(got.numpy(), ref(*args, dt.np))
    np.testing.assert_array_equal(tgrad.arange(1.8, 0, -1.41, dtype=tgrad.int32).numpy(), [1, 0])
    np.testing.assert_array_equal(tgrad.arange(2.0, -1, -0.4, dtype=tgrad.int32).numpy(),
                                  [2] * 8)
    # int64: the numbers are truncated first
    np.testing.assert_array_equal(tgrad.arange(1.8, 0, -1.41, dtype=tgrad.int64).numpy(), [1])
    np.testing.assert_array_equal(tgrad.arange(0.5, 3.2, 1.5, dtype=tgrad.int64).numpy(),
                                  [0, 1, 2])


# --------------------------------------------------- several ellipses in an index
def test_index_with_several_ellipses():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = tgrad.tensor(a)
    np.testing.assert_array_equal(x[..., ...].numpy(), a)
    np.testing.assert_array_equal(x[..., ..., ...].numpy(), a)
    np.testing.assert_array_equal(x[..., 0, ...].numpy(), a[..., 0])
    np.testing.assert_array_equal(x[0, ..., ...].numpy(), a[0])
    np.testing.assert_array_equal(x[..., None, ...].numpy(), a[..., None])
    np.testing.assert_array_equal(x[..., 0, 1, ..., 2].numpy(), a[0, 1, 2])
    np.testing.assert_array_equal(x[[0, 1], ..., ...].numpy(), a[[0, 1]])
    with pytest.raises(IndexError, match="more than one ellipsis"):
        x[..., ..., 0]  # PyTorch indexes past the last dim here and raises
    y = tgrad.zeros(2, 3)
    y[..., 1, ...] = 5.0
    np.testing.assert_array_equal(y.numpy(), [[0, 5, 0], [0, 5, 0]])


# --------------------------------------------------- Tensor.view(dtype)
def test_view_dtype_same_itemsize_reinterprets_bytes():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = tgrad.tensor(a)
    np.testing.assert_array_equal(x.view(tgrad.int32).numpy(), a.view(np.int32))
    xt = x.t()  # any layout: same shape and strides
    v = xt.view(tgrad.int32)
    assert v.stride() == xt.stride()
    np.testing.assert_array_equal(v.numpy(), a.view(np.int32).T)
    assert tgrad.tensor(1.0).view(tgrad.int32).item() == 0x3F800000
    # shares memory and the version counter
    z = tgrad.zeros(4)
    w = z.view(tgrad.int32)
    w[0] = 1
    assert z._version == 1
    assert z[0].item() == np.array([1], np.int32).view(np.float32)[0]


def test_view_dtype_other_itemsize():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = tgrad.tensor(a)
    h = x.view(tgrad.float16)
    assert h.shape == (2, 6) and h.stride() == (6, 1)
    np.testing.assert_array_equal(h.numpy(), a.view(np.float16))
    s = x[:, 1:].view(tgrad.float16)  # offset 1 float -> 2 halves
    assert s.storage_offset() == 2 and s.stride() == (6, 1)
    np.testing.assert_array_equal(s.numpy(), a[:, 1:].copy().view(np.float16))
    c = tgrad.tensor(np.array([1.0, 2.0, 3.0, 4.0], np.float32)).view(tgrad.complex64)
    np.testing.assert_array_equal(c.numpy(), [1 + 2j, 3 + 4j])
    half = tgrad.ones(2, 2, dtype=tgrad.float16).view(tgrad.float32)
    assert half.shape == (2, 1)
    np.testing.assert_array_equal(half.numpy(), np.ones((2, 2), np.float16).view(np.float32))


def test_view_dtype_errors_are_pytorchs():
    x = tgrad.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    cases = [
        (lambda: tgrad.tensor(1.0).view(tgrad.float16),
         r"self.dim\(\) cannot be 0 to view Float as Half \(different element sizes\)"),
        (lambda: x.view(tgrad.float64), r"self.size\(-1\) must be divisible by 2 to view Float "
                                        r"as Double \(different element sizes\), but got 3"),
        (lambda: x.t().view(tgrad.float64), r"self.stride\(-1\) must be 1 to view Float as "
                                            r"Double \(different element sizes\), but got 3"),
        (lambda: x.t().view(tgrad.float16), r"self.stride\(-1\) must be 1 to view Float as Half"),
        (lambda: x[:, 1:].view(tgrad.float64), r"self.storage_offset\(\) must be divisible by "
                                               r"2 to view Float as Double .*but got 1"),
        (lambda: x[:, :2].view(tgrad.float64), r"self.stride\(0\) must be divisible by 2 to "
                                               r"view Float as Double .*but got 3"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()


def test_view_dtype_is_outside_autograd():
    y = tgrad.ones(4, requires_grad=True)
    for dt in (tgrad.int32, tgrad.float32):
        v = (y * 1).view(dt)
        assert not v.requires_grad and v.grad_fn is None


# --------------------------------------------------- gradients with an infinite upstream
def test_mish_and_softshrink_grad_with_infinite_upstream():
    xs = np.array([-30.0, -2.0, -0.3, 0.0, 0.3, 2.0, 30.0])
    # mish: dx = g (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x)); a finite nonzero
    # factor, so g = +-inf gives +-inf with the factor's sign (PyTorch's mish_backward)
    t = np.tanh(np.log1p(np.exp(xs)))
    factor = t + xs / (1 + np.exp(-xs)) * (1 - t * t)
    for up in (np.inf, -np.inf):
        x = _f64(xs, requires_grad=True)
        F.mish(x).backward(tgrad.full((7,), up, dtype=tgrad.float64))
        np.testing.assert_array_equal(x.grad.numpy(), np.sign(factor) * up)
    x = _f64(xs, requires_grad=True)
    assert tgrad.autograd.gradcheck(F.mish, (x,))
    assert tgrad.autograd.gradgradcheck(F.mish, (x,))
    # softshrink: 0 inside [-l, l] (not inf * 0), g outside
    x = _f64(xs, requires_grad=True)
    F.softshrink(x, 0.5).backward(tgrad.full((7,), np.inf, dtype=tgrad.float64))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(np.abs(xs) > 0.5, np.inf, 0.0))
    y = F.softshrink(_f64([np.nan, 0.2, 1.0]), 0.5)
    assert np.isnan(y[0].item()) and y[1].item() == 0.0 and y[2].item() == 0.5


def test_arange_argument_types():
    # a 0-d NumPy array is its number, as a 0-d tensor (an integer one gave float32);
    # non-numbers are PyTorch's TypeError naming the argument; a complex with a zero
    # imaginary part is its real part (PyTorch reads it as a double), else RuntimeError
    r = tgrad.arange(np.array(3))
    assert r.dtype is tgrad.int64 and r.tolist() == [0, 1, 2]
    assert tgrad.arange(1, np.array(6), np.array(2)).tolist() == [1, 3, 5]
    np.testing.assert_array_equal(tgrad.arange(np.array(2.5)).numpy(), [0.0, 1.0, 2.0])
    for bad, name in (("a", "end"), ([2], "end"), (np.array([2]), "end")):
        with pytest.raises(TypeError, match=f"arange\\(\\): argument '{name}' must be "
                                            f"Number, not {type(bad).__name__}"):
            tgrad.arange(bad)
    with pytest.raises(TypeError, match="argument 'step' must be Number, not str"):
        tgrad.arange(0, 3, "1")
    c = tgrad.arange(3 + 0j)
    assert c.dtype is tgrad.float32 and c.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="cannot be converted to type double"):
        tgrad.arange(3 + 1j)


def test_gelu_keeps_its_relative_precision_in_the_lower_tail():
    # x Phi(x) with Phi = 1 + erf cancelling below x ~ -5 lost every digit (gelu(-10) was 0,
    # PyTorch's too); from x = -2 down Phi is exp(-x^2/2) erfcx(-x/sqrt 2) / 2. References:
    # Python's math.erfc down to x = -8 (deeper, rounding -x/sqrt 2 alone costs it x^2 eps),
    # and mpmath's Phi(x) (40 digits) at -10, -20, -30.
    xs = np.concatenate([np.linspace(-8.0, -2.0, 241), np.linspace(-2.0, 3.0, 51)])
    ref = np.array([x * 0.5 * math.erfc(-x / math.sqrt(2.0)) for x in xs])
    np.testing.assert_allclose(F.gelu(tgrad.tensor(xs)).numpy(), ref, rtol=2e-14, atol=0)
    phi = {-10.0: 7.6198530241605260659733432516e-24, -20.0: 2.75362411860623369507562278086e-89,
           -30.0: 4.90671392714818705953380925658e-198}
    got = F.gelu(tgrad.tensor(list(phi), dtype=tgrad.float64)).numpy()
    np.testing.assert_allclose(got, [x * p for x, p in phi.items()], rtol=1e-14, atol=0)
    assert F.gelu(tgrad.tensor(-10.0, dtype=tgrad.float64)).item() == pytest.approx(
        -10.0 * phi[-10.0], rel=1e-14)  # (0-d: the same path)
    x = tgrad.tensor(xs, requires_grad=True)  # d/dx = Phi + x phi, relative too
    F.gelu(x).sum().backward()
    dref = np.array([0.5 * math.erfc(-v / math.sqrt(2.0))
                     + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in xs])
    np.testing.assert_allclose(x.grad.numpy(), dref, rtol=1e-12, atol=0)


def test_binary_ops_of_two_numbers_norm_of_a_bool_p_and_set_grad_enabled_needs_a_mode():
    # PyTorch: add(2.0, 3.0) is tensor(5.) (the first number a 0-d tensor: float32,
    # int64, complex64 by the usual rules); norm reads p=True as 1; set_grad_enabled()
    # without a mode is a TypeError (it defaulted to True)
    assert tgrad.add(2.0, 3.0).item() == 5.0 and tgrad.add(2.0, 3.0).dtype is tgrad.float32
    assert tgrad.mul(2, 3).item() == 6 and tgrad.mul(2, 3).dtype is tgrad.int64
    assert tgrad.sub(2, 3.5).item() == -1.5
    assert tgrad.add(1j, 2).item() == 2 + 1j
    x = tgrad.tensor([3.0, -4.0])
    assert tgrad.norm(x, True).item() == 7.0 and tgrad.norm(x, False).item() == 2.0
    with pytest.raises(TypeError, match="mode"):
        tgrad.set_grad_enabled()
