"""Inference tensors: PyTorch's inference_mode semantics (docs/autograd.md).

Expected behaviour and error texts are PyTorch's (checked against PyTorch 2.13); values
are checked against NumPy float64."""

import threading

import numpy as np
import pytest

import tgrad

SAVE_MSG = (r"Inference tensors cannot be saved for backward. Please do not use Tensors "
            r"created in inference mode in computation tracked by autograd. To work around "
            r"this, you can make a clone to get a normal tensor and use it in autograd, or "
            r"use `torch.no_grad\(\)` instead of `torch.inference_mode\(\)`.")
INPLACE_MSG = (r"Inplace update to inference tensor outside InferenceMode is not allowed.You "
               r"can make a clone to get a normal tensor before doing inplace update.See "
               r"https://github.com/pytorch/rfcs/pull/17 for more details.")
RG_MSG = r"Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."

A = np.array([0.5, -1.25, 2.0])
B = np.array([1.5, 0.75, -3.0])


def _leaf(a):
    return tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)


def test_results_and_creations_inside_are_inference_tensors():
    n = tgrad.tensor(A)
    with tgrad.inference_mode():
        made = [tgrad.ones(3), tgrad.tensor([1.0]), tgrad.arange(3), tgrad.randn(2),
                tgrad.empty(2), tgrad.from_numpy(np.ones(2)), n * 2, n.exp(), n.sum(),
                n.clone()]
        # views (and detach) of a normal tensor stay normal tensors
        views = [n.view(3), n[1:], n.detach(), n.unsqueeze(0), n.t()]
        with tgrad.inference_mode(False):  # normal behaviour again inside
            assert not tgrad.is_inference_mode_enabled() and tgrad.is_grad_enabled()
            assert not tgrad.ones(2).is_inference() and not (n * 2).is_inference()
    assert all(t.is_inference() and tgrad.is_inference(t) for t in made)
    assert not any(v.is_inference() for v in views) and not n.is_inference()
    np.testing.assert_allclose(made[6].numpy(), A.astype(np.float32) * 2)
    np.testing.assert_allclose(made[7].numpy(), np.exp(A), rtol=1e-6)
    np.testing.assert_allclose(made[8].item(), A.sum(), rtol=1e-6)


def test_decorator_and_other_threads():
    @tgrad.inference_mode()
    def f():
        return tgrad.ones(2)

    assert f().is_inference() and not tgrad.ones(2).is_inference()
    seen = []
    ready, done = threading.Event(), threading.Event()

    def other():  # inference mode is per thread
        ready.wait()
        seen.append(tgrad.ones(2).is_inference())
        done.set()

    th = threading.Thread(target=other)
    th.start()
    with tgrad.inference_mode():
        ready.set()
        done.wait()
        assert tgrad.ones(2).is_inference()
    th.join()
    assert seen == [False]


def test_saving_an_inference_tensor_for_backward_raises():
    with tgrad.inference_mode():
        y = tgrad.tensor(B, dtype=tgrad.float64)
        m = tgrad.ones(3, 2, dtype=tgrad.float64)
    x = _leaf(A)
    for f in (lambda: y * x, lambda: x * y, lambda: x / y, lambda: y / x,
              lambda: x.sin() * y, lambda: x @ m):
        with pytest.raises(RuntimeError, match=SAVE_MSG):
            f()
    with tgrad.inference_mode(), tgrad.inference_mode(False):  # normal mode again
        with pytest.raises(RuntimeError, match=SAVE_MSG):
            y * x
    # ops that do not save it are fine, and their values and gradients right
    s = (y + x) * 2.0
    s.sum().backward()
    np.testing.assert_allclose(s.detach().numpy(), (B + A) * 2)
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))
    x.grad = None
    tgrad.cat([x, y]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))
    # a clone is a normal tensor: usable anywhere, gradient vs NumPy
    x.grad = None
    yc = y.clone()
    assert not yc.is_inference()
    (yc * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), B)
    # ops on inference tensors that record nothing give normal tensors with right values
    r = y * 2 + 1
    assert not r.is_inference() and not r.requires_grad
    np.testing.assert_allclose(r.numpy(), B * 2 + 1)
    with tgrad.no_grad():  # nothing is saved under no_grad
        np.testing.assert_allclose((y * x).numpy(), A * B)


def test_inplace_on_inference_tensor_outside_raises():
    with tgrad.inference_mode():
        y = tgrad.tensor(A)
        y.add_(1.0)  # allowed inside
        assert y.is_inference()
        n = tgrad.zeros(2)
    np.testing.assert_allclose(y.numpy(), (A + 1).astype(np.float32))
    before = y.numpy().copy()
    for f in (lambda: y.add_(1), lambda: y.mul_(2), lambda: y.__setitem__(0, 5.0),
              lambda: y.view(3).add_(1), lambda: y[1:].zero_(), lambda: y.copy_(y * 2),
              lambda: y.unsqueeze_(0), lambda: y.resize_(2),
              lambda: tgrad.add(y, y, out=y),
              lambda: tgrad.add(n, n, out=y[:2])):
        with pytest.raises(RuntimeError, match=INPLACE_MSG):
            f()
    with tgrad.no_grad(), pytest.raises(RuntimeError, match=INPLACE_MSG):
        y.zero_()
    np.testing.assert_array_equal(y.numpy(), before)  # tgrad raises before writing
    assert y.shape == (3,)
    c = y.clone()  # a normal tensor: in-place works
    c.mul_(2.0)
    np.testing.assert_allclose(c.numpy(), before * 2)


def test_detached_aliases_of_inference_tensors_may_be_written():
    # PyTorch: detach() and .data of an inference tensor made outside inference mode are
    # inference tensors with a version counter of their own, so in-place updates through
    # them work (tgrad refused both); a normal tensor whose .data is set to an inference
    # tensor becomes one (is_inference) and keeps its counter. Hand-computed values
    with tgrad.inference_mode():
        b = tgrad.ones(2) * 2
    d = b.detach()
    assert d.is_inference() and d._version == 0
    d.add_(1)
    np.testing.assert_array_equal(b.numpy(), [3.0, 3.0])
    assert d._version == 1
    b.data.add_(1)
    np.testing.assert_array_equal(b.numpy(), [4.0, 4.0])
    assert b.data.is_inference() and b.data._version == 0
    with pytest.raises(RuntimeError, match=INPLACE_MSG):  # b itself still refuses
        b.add_(1)
    with pytest.raises(RuntimeError, match=RG_MSG):  # still an inference tensor
        d.requires_grad_()
    x = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * d
    with tgrad.inference_mode():  # detached inside: no counter, as PyTorch's
        di, ddi = b.detach(), b.data
    for t in (di, ddi):
        with pytest.raises(RuntimeError, match=INPLACE_MSG):
            t.add_(1)
    m = tgrad.zeros(2)
    m.add_(1)
    m.data = b
    assert m.is_inference() and tgrad.is_inference(m) and m._version == 1
    m.add_(1)
    np.testing.assert_array_equal(b.numpy(), [5.0, 5.0])
    assert m._version == 2
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * m


def test_views_of_inference_tensors_and_requires_grad():
    with tgrad.inference_mode():
        y = tgrad.tensor(A)
        q = tgrad.tensor(B, dtype=tgrad.float64).requires_grad_()  # allowed inside
    assert y.view(3).is_inference() and y[1:].is_inference() and y.detach().is_inference()
    assert y.data.is_inference()
    assert y.unsqueeze(0).is_inference() and not y.clone().is_inference()
    with pytest.raises(RuntimeError, match=RG_MSG):
        y.requires_grad_()
    with pytest.raises(RuntimeError, match=RG_MSG):
        y.requires_grad = True
    assert y.requires_grad_(False) is y and not y.requires_grad
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter."):
        y._version  # noqa: B018
    # an inference tensor that requires grad is a leaf: a gradient that does not save it
    assert q.requires_grad and q.is_leaf and q.is_inference()
    (q * 3.0).sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), np.full(3, 3.0))
    with pytest.raises(RuntimeError, match=SAVE_MSG):
        q * _leaf(A)


def test_inside_inference_mode_normal_tensors():
    x = _leaf(A)
    with tgrad.inference_mode():
        assert not tgrad.is_grad_enabled()
        r = x * 2
        assert not r.requires_grad and r.grad_fn is None and r.is_inference()
        with tgrad.enable_grad():  # grad mode on, but inference mode records nothing
            assert tgrad.is_grad_enabled()
            w = x * 2
            assert not w.requires_grad and w.is_inference()
            with tgrad.inference_mode(False):  # records again
                assert (x * 2).requires_grad
            with tgrad.no_grad():
                assert not tgrad.is_grad_enabled()
            assert tgrad.is_grad_enabled()
        assert not tgrad.is_grad_enabled()
        # in-place on a normal leaf that requires grad is allowed inside (not recorded)
        x.add_(1.0)
        x[0] = 5.0
        assert x.is_leaf and x.grad_fn is None and not x.is_inference()
        v = x[1:]  # a view of a normal tensor: normal
        assert not v.is_inference()
    assert tgrad.is_grad_enabled()
    np.testing.assert_allclose(x.detach().numpy(), [5.0, A[1] + 1, A[2] + 1])
    # a view made inside inference mode, modified in place outside in grad mode: PyTorch's
    # error; under no_grad it is allowed
    with pytest.raises(RuntimeError, match="A view was created in inference mode and is being "
                                           "modified inplace in normal mode"):
        v.add_(1.0)
    with tgrad.no_grad():
        v.add_(1.0)
    np.testing.assert_allclose(x.detach().numpy(), [5.0, A[1] + 2, A[2] + 2])
    # the graph still works on x afterwards: gradient vs the hand derivative of sum(x**2)
    (x ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_internal_constants_cached_inside_stay_usable_outside():
    # interpolate's index/weight tables are cached tensors; made first inside inference
    # mode, they must not become inference tensors that a later training step saves
    interp = tgrad.nn.functional.interpolate
    x = tgrad.tensor(np.linspace(-1.0, 2.0, 10).reshape(1, 2, 5), dtype=tgrad.float64)
    with tgrad.inference_mode():
        interp(x, scale_factor=2, mode="linear")
    xr = x.clone().requires_grad_()
    assert tgrad.autograd.gradcheck(
        lambda t: interp(t, scale_factor=2, mode="linear"), (xr,))


def test_forward_ad_is_off_inside_inference_mode():
    # PyTorch's InferenceMode also turns forward-mode AD off (no_grad does not):
    # results made inside carry no tangent, and unpack_dual sees none
    fa = tgrad.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(tgrad.tensor([1.0, 2.0]), tgrad.tensor([1.0, 3.0]))
        with tgrad.inference_mode():
            assert fa.unpack_dual(d * d).tangent is None
            assert fa.unpack_dual(d).tangent is None
            with tgrad.inference_mode(False):  # on again inside
                np.testing.assert_array_equal(fa.unpack_dual(d * d).tangent.numpy(), [2.0, 12.0])
            assert fa.unpack_dual(d * 2).tangent is None
        np.testing.assert_array_equal(fa.unpack_dual(d * d).tangent.numpy(), [2.0, 12.0])
        np.testing.assert_array_equal(fa.unpack_dual(d).tangent.numpy(), [1.0, 3.0])
        with tgrad.no_grad():
            np.testing.assert_array_equal(fa.unpack_dual(d * d).tangent.numpy(), [2.0, 12.0])
