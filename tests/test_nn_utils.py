"""tgrad.nn.utils: gradient clipping against hand-computed values (PyTorch's formulas:
scale = min(1, max_norm / (total + 1e-6)), total = the norm of all gradient elements), the
total norm, and parameters_to_vector / vector_to_parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.nn.utils import clip_grad_norm_, clip_grad_value_


def _params(*grads):
    ps = []
    for g in grads:
        p = tgrad.zeros(np.shape(g), dtype=tgrad.float64, requires_grad=True)
        p.grad = None if g is None else tgrad.tensor(np.asarray(g, dtype=np.float64))
        ps.append(p)
    return ps


def test_clip_grad_norm_scales_every_gradient():
    a, b, c = _params([3.0, 0.0], [[4.0]], None)  # total 2-norm 5; c has no gradient
    total = clip_grad_norm_([a, b, c], max_norm=1.0)
    assert total.item() == 5.0
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(a.grad.numpy(), [3.0 * scale, 0.0], rtol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), [[4.0 * scale]], rtol=1e-15)
    assert c.grad is None


@pytest.mark.parametrize("norm_type, total",
                         [(1.0, 7.0), (math.inf, 4.0), (3, (27 + 64) ** (1 / 3))])
def test_clip_grad_norm_types(norm_type, total):
    a, b = _params([3.0, 0.0], [[-4.0]])
    got = clip_grad_norm_((p for p in (a, b)), 100.0, norm_type=norm_type)  # a generator
    assert got.item() == pytest.approx(total, rel=1e-15)
    assert a.grad.tolist() == [3.0, 0.0] and b.grad.tolist() == [[-4.0]]  # below max: kept


def test_clip_grad_norm_single_tensor_no_grads_and_nonfinite():
    (a,) = _params([0.3, 0.4])
    assert clip_grad_norm_(a, 1.0).item() == pytest.approx(0.5, rel=1e-15)
    assert clip_grad_norm_(_params(None), 1.0).item() == 0.0
    (b,) = _params([np.inf, 1.0])
    with pytest.raises(RuntimeError, match=r"The total norm of order 2.0 for gradients from "
                                           r"`parameters` is non-finite"):
        clip_grad_norm_(b, 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_(b, 1.0).item())  # scaled by 1/inf, as PyTorch
    assert b.grad.tolist()[1] == 0.0


def test_clip_grad_value_clamps_in_place():
    a, b = _params([-3.0, 0.5, 2.0], None)
    assert clip_grad_value_([a, b], 1.0) is None
    assert a.grad.tolist() == [-1.0, 0.5, 1.0] and b.grad is None


def test_clip_grad_norm_with_mixed_dtypes_uses_the_widest():
    # a float16 gradient first must not make the total norm overflow to inf in float16
    a = tgrad.zeros(2, dtype=tgrad.float16, requires_grad=True)
    b = tgrad.zeros(2, requires_grad=True)
    a.grad = tgrad.ones(2, dtype=tgrad.float16)
    b.grad = tgrad.full((2,), 1e5)
    total = clip_grad_norm_([a, b], 1.0)
    assert total.dtype is tgrad.float32
    assert total.item() == pytest.approx(math.sqrt(2 + 2e10), rel=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [1e5 / total.item()] * 2, rtol=1e-6)
    assert a.grad.dtype is tgrad.float16


def test_get_total_norm_and_clip_grads_with_norm():
    from tgrad.nn.utils import clip_grads_with_norm_, get_total_norm
    a, b = np.array([3.0, 4.0, -1.0]), np.array([[12.0, 0.5]])
    ts = [tgrad.tensor(a), tgrad.tensor(b)]
    for p in (1.0, 2.0, 3.5, math.inf):
        ref = np.linalg.norm(np.concatenate([a, b.ravel()]), ord=p)
        np.testing.assert_allclose(get_total_norm(ts, p).item(), ref, rtol=1e-14)
    assert get_total_norm([]).item() == 0.0
    assert get_total_norm([tgrad.tensor([3.0, 4.0])], "inf").item() == 4.0
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        get_total_norm([tgrad.tensor([np.inf])], error_if_nonfinite=True)
    params = [tgrad.nn.Parameter(tgrad.ones(2)), tgrad.nn.Parameter(tgrad.ones(1))]
    params[0].grad = tgrad.tensor([3.0, 4.0])
    clip_grads_with_norm_(params, 1.0, tgrad.tensor(5.0))  # the second has no grad
    np.testing.assert_allclose(params[0].grad.numpy(), np.array([3.0, 4.0]) / (5 + 1e-6),
                               rtol=1e-6)
    assert params[1].grad is None
    with pytest.raises(TypeError, match="clip_grads_with_norm_.*total_norm must be a Tensor"):
        clip_grads_with_norm_(params, 1.0, 5.0)  # PyTorch's TypeError, not AttributeError
    np.testing.assert_allclose(params[0].grad.numpy(), np.array([3.0, 4.0]) / (5 + 1e-6),
                               rtol=1e-6)  # left as it was


def test_parameters_to_vector_and_back():
    from tgrad.nn.utils import parameters_to_vector, vector_to_parameters
    w = tgrad.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = tgrad.tensor([7.0, 8.0], requires_grad=True)
    vec = parameters_to_vector([w, b])
    assert vec.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 8.0]
    (vec * tgrad.arange(8.0)).sum().backward()  # differentiable, like cat
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        parameters_to_vector([])  # PyTorch's ValueError (was cat's RuntimeError)
    assert w.grad.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and b.grad.tolist() == [6.0, 7.0]
    new = tgrad.arange(10.0, 18.0)
    vector_to_parameters(new, [w, b])
    assert w.tolist() == [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]] and b.tolist() == [16.0, 17.0]
    new[0] = -1.0  # the parameters now show the vector's memory, as in PyTorch
    assert w[0, 0].item() == -1.0 and w.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0], [w])
    with pytest.raises(RuntimeError, match="shape '\\[2\\]' is invalid for input of size 1"):
        vector_to_parameters(tgrad.arange(7.0), [w, b])


def test_clip_grad_norm_scales_half_gradients_in_float32():
    """A float16 gradient is multiplied by the float32 scale and rounded once (PyTorch's),
    not by the scale rounded to float16 first: NumPy float32 reference."""
    a = tgrad.zeros(3, dtype=tgrad.float16, requires_grad=True)
    a.grad = tgrad.tensor([3000.0, -7000.0, 36000.0], dtype=tgrad.float16)
    b = tgrad.zeros(1, requires_grad=True)
    b.grad = tgrad.tensor([1.0])
    total = tgrad.nn.utils.clip_grad_norm_([a, b], 0.5)
    g16 = np.array([3000.0, -7000.0, 36000.0], np.float16)
    # each gradient's norm in its own dtype (a's rounded to float16), then their norm
    norm_a = np.float32(np.float16(np.linalg.norm(g16.astype(np.float32))))
    np.testing.assert_allclose(total.item(), np.sqrt(norm_a ** 2 + np.float32(1)), rtol=1e-6)
    scale = np.float32(0.5) / (np.float32(total.item()) + np.float32(1e-6))
    np.testing.assert_array_equal(a.grad.numpy(), (g16.astype(np.float32) * scale)
                                  .astype(np.float16))


def test_module_to_an_integer_dtype_raises():
    lin = tgrad.nn.Linear(2, 2)
    for call in (lambda: lin.to(tgrad.int32), lambda: lin.to(dtype=tgrad.int64)):
        with pytest.raises(TypeError, match="only accepts floating point"):
            call()
    assert lin.weight.dtype is tgrad.float32


def test_total_norm_of_integer_tensors_raises_for_every_norm_type():
    # linalg.vector_norm's check (the inf norm used to return an int64 norm and zero grads)
    for norm_type in (2.0, 1.0, math.inf):
        with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor "
                                               "as input. Got Long"):
            tgrad.nn.utils.get_total_norm([tgrad.tensor([1, 2])], norm_type)


def test_convert_conv_weight_memory_format():
    # the same Parameters, their values, in channels-last strides (2-D convs, then 3-D)
    m = tgrad.nn.Sequential(tgrad.nn.Conv2d(3, 4, 3),
                            tgrad.nn.Sequential(tgrad.nn.ConvTranspose2d(4, 2, 2)),
                            tgrad.nn.Conv3d(1, 1, 1), tgrad.nn.Linear(2, 2))
    w, before = m[0].weight, m[0].weight.detach().numpy().copy()
    assert tgrad.nn.utils.convert_conv2d_weight_memory_format(m, tgrad.channels_last) is m
    assert m[0].weight is w and w.stride() == (27, 1, 9, 3)
    np.testing.assert_array_equal(w.detach().numpy(), before)
    assert m[1][0].weight.is_contiguous(memory_format=tgrad.channels_last)
    assert m[2].weight.is_contiguous() and m[3].weight.is_contiguous()
    tgrad.nn.utils.convert_conv3d_weight_memory_format(m, tgrad.channels_last_3d)
    assert m[2].weight.is_contiguous(memory_format=tgrad.channels_last_3d)
