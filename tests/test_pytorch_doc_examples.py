"""Every example on PyTorch's torch.autograd page (shared/reference/torch-autograd-1.4.txt),
reproduced with tgrad. Where the page uses CUDA, the analogous op-creating cast on the CPU
(``.double()``) shows the same leaf semantics. The page builds ``torch.tensor([1],
requires_grad=True)`` from an int list; current PyTorch (and tgrad) reject integer tensors
that require grad, so ``[1.]`` is used and the rejection is tested too."""

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function


def test_integer_tensor_cannot_require_grad():
    with pytest.raises(RuntimeError, match="and complex dtype can require gradients"):
        tgrad.tensor([1], requires_grad=True)


def test_no_grad_example():
    x = tgrad.tensor([1.0], requires_grad=True)
    with tgrad.no_grad():
        y = x * 2
    assert y.requires_grad is False

    @tgrad.no_grad()
    def doubler(x):
        return x * 2

    z = doubler(x)
    assert z.requires_grad is False


def test_enable_grad_example():
    x = tgrad.tensor([1.0], requires_grad=True)
    with tgrad.no_grad():
        with tgrad.enable_grad():
            y = x * 2
    assert y.requires_grad is True
    y.backward()
    assert x.grad.tolist() == [2.0]

    @tgrad.enable_grad()
    def doubler(x):
        return x * 2

    with tgrad.no_grad():
        z = doubler(x)
    assert z.requires_grad is True


def test_set_grad_enabled_example():
    x = tgrad.tensor([1.0], requires_grad=True)
    is_train = False
    with tgrad.set_grad_enabled(is_train):
        y = x * 2
    assert y.requires_grad is False
    try:
        tgrad.set_grad_enabled(True)
        y = x * 2
        assert y.requires_grad is True
        tgrad.set_grad_enabled(False)
        y = x * 2
        assert y.requires_grad is False
    finally:
        tgrad.set_grad_enabled(True)


def test_variable_quick_guide():
    from tgrad.autograd import Variable
    t = tgrad.ones(3)
    with pytest.warns(DeprecationWarning):
        v = Variable(t)
    with pytest.warns(DeprecationWarning):
        w = Variable(tgrad.ones(3), True)
    assert isinstance(v, tgrad.Tensor) and not v.requires_grad and w.requires_grad
    assert v.data.data_ptr() == t.data.data_ptr()  # var.data is tensor.data
    autograd_tensor = tgrad.randn((2, 3, 4), requires_grad=True)
    assert autograd_tensor.shape == (2, 3, 4) and autograd_tensor.requires_grad
    for factory in (tgrad.zeros, tgrad.ones, tgrad.rand, tgrad.empty):
        assert factory((2, 3, 4), requires_grad=True).requires_grad


def test_is_leaf_examples():
    a = tgrad.rand(10, requires_grad=True)
    assert a.is_leaf is True
    b = tgrad.rand(10, requires_grad=True).double()  # created by a cast op (page: .cuda())
    assert b.is_leaf is False
    c = tgrad.rand(10, requires_grad=True) + 2
    assert c.is_leaf is False
    d = tgrad.rand(10).double()  # does not require grad: no tracked op created it
    assert d.is_leaf is True
    e = tgrad.rand(10).double().requires_grad_()
    assert e.is_leaf is True
    f = tgrad.rand(10, requires_grad=True, device="cpu")
    assert f.is_leaf is True
    # only leaves get .grad populated
    (b.sum() + c.sum() + e.sum() + f.sum()).backward()
    assert a.grad is None  # the leaf behind b was a temporary; a was unused
    np.testing.assert_array_equal(e.grad.numpy(), np.ones(10))
    np.testing.assert_array_equal(f.grad.numpy(), np.ones(10, np.float32))


def test_backward_gradient_does_not_require_grad_unless_create_graph():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    v = tgrad.tensor([3.0, 4.0], requires_grad=True)
    (x * 2).backward(v)
    assert x.grad.tolist() == [6.0, 8.0]
    assert not x.grad.requires_grad


def test_register_hook_example():
    v = tgrad.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_hook(lambda grad: grad * 2)  # double the gradient
    v.backward(tgrad.tensor([1.0, 2.0, 3.0]))
    assert v.grad.tolist() == [2.0, 4.0, 6.0]
    h.remove()  # removes the hook
    v.backward(tgrad.tensor([1.0, 2.0, 3.0]))
    assert v.grad.tolist() == [3.0, 6.0, 9.0]


def test_retain_grad_example():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]


def test_function_exp_example():
    class Exp(Function):

        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result

    x = tgrad.tensor([0.0, 1.0, -2.0], dtype=tgrad.float64, requires_grad=True)
    y = Exp.apply(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0, -2.0]), rtol=1e-12)
    assert tgrad.autograd.gradcheck(Exp.apply, (x,))


def test_gradcheck_and_gradgradcheck_documented_call():
    inputs = (tgrad.randn(3, 4, dtype=tgrad.float64, requires_grad=True),
              tgrad.randn(4, 2, dtype=tgrad.float64, requires_grad=True))
    assert tgrad.autograd.gradcheck(lambda a, b: (a @ b).tanh(), inputs, eps=1e-6, atol=1e-4)
    assert tgrad.autograd.gradgradcheck(lambda a, b: (a @ b).tanh(), inputs)


def test_profiler_example():
    x = tgrad.randn((1, 1), requires_grad=True)
    with tgrad.autograd.profiler.profile() as prof:
        for _ in range(100):  # any normal python code, really!
            y = x ** 2
            y.backward()
    counts = {e.key: e.count for e in prof.key_averages()}
    # forward pow; PowBackward0 runs d x^2 / dx as one fused op (pow's base gradient)
    assert counts["pow"] == 100 and counts["pow_base_backward"] == 100
    assert counts["PowBackward0"] == 100 and counts["AccumulateGrad"] == 100
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    assert "PowBackward0" in table
    np.testing.assert_allclose(x.grad.numpy(), 200 * x.detach().numpy(), rtol=1e-5)
