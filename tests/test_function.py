"""Custom autograd Functions: ctx API, validation of returned gradients, double backward."""

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function, gradcheck, gradgradcheck

X = np.array([0.5, -1.5, 2.0])


def leaf(arr=X):
    return tgrad.tensor(arr, dtype=tgrad.float64, requires_grad=True)


class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class ScaledMul(Function):
    """out = a * b * k (k a Python number); also counts backward calls via ctx."""

    @staticmethod
    def forward(ctx, a, b, k, *, shift=0.0):
        ctx.save_for_backward(a, None, b)
        ctx.k = k
        ctx.seen_needs = ctx.needs_input_grad
        return a * b * k + shift

    @staticmethod
    def backward(ctx, g):
        a, none, b = ctx.saved_tensors
        assert none is None
        ga = g * b * ctx.k if ctx.needs_input_grad[0] else None
        gb = g * a * ctx.k if ctx.needs_input_grad[1] else None
        return ga, gb, None


def test_exp_function_value_grad_and_node():
    x = leaf()
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), np.exp(X), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X), rtol=1e-12)
    assert gradcheck(Exp.apply, (leaf(),))
    assert gradgradcheck(Exp.apply, (leaf(),))  # backward is built from tgrad ops


def test_needs_input_grad_non_tensor_args_kwargs_and_attributes():
    a, b = leaf(), tgrad.tensor(X * 2, dtype=tgrad.float64)
    y = ScaledMul.apply(a, b, 3.0, shift=1.0)
    assert y.grad_fn.seen_needs == (True, False, False)
    assert y.grad_fn.k == 3.0
    np.testing.assert_allclose(y.detach().numpy(), X * 2 * X * 3 + 1, rtol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * X * 3, rtol=1e-12)
    assert gradcheck(lambda p, q: ScaledMul.apply(p, q, -2.0), (leaf(), leaf(X + 1)))


def test_no_graph_when_nothing_requires_grad_or_no_grad_mode():
    y = ScaledMul.apply(tgrad.ones(2), tgrad.ones(2), 2.0)
    assert y.grad_fn is None and not y.requires_grad
    x = leaf()
    with tgrad.no_grad():
        z = Exp.apply(x)
    assert z.grad_fn is None and not z.requires_grad


def test_forward_runs_without_recording():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            seen.append((tgrad.is_grad_enabled(), y.requires_grad))
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    Probe.apply(leaf())
    assert seen == [(False, False)]


def test_saved_tensors_are_version_checked():
    class SaveInput(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    a = leaf()
    b = a * 1
    y = SaveInput.apply(b)
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                           "expected version 0 instead"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    x = leaf()
    y = Exp.apply(x)
    node = y.grad_fn
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        _ = node.saved_tensors
    y2 = Exp.apply(x)
    y2.sum().backward(retain_graph=True)
    assert len(y2.grad_fn.saved_tensors) == 1


def test_saved_output_does_not_keep_a_reference_cycle():
    import gc
    import weakref
    x = leaf()
    y = Exp.apply(x)
    ref = weakref.ref(y.grad_fn)
    gc.disable()
    try:
        del y
        assert ref() is None  # freed by reference counting alone
    finally:
        gc.enable()


class MulTwoInplace(Function):
    """Doubles its input in place (mark_dirty); also used by the refcount test below."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_mark_dirty():
    a = leaf()
    b = a * 1
    c = MulTwoInplace.apply(b)
    assert c is b and b.grad_fn.name() == "MulTwoInplaceBackward"
    assert b._version == 2  # mul_ and mark_dirty each bump it, as in PyTorch
    (c * c).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 8 * X, rtol=1e-12)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        MulTwoInplace.apply(leaf())


def test_mark_dirty_bumps_the_version_of_memory_changed_behind_autograd():
    # The "Extending PyTorch" example: forward changes x through .numpy() and marks it
    # dirty; a graph that saved x before must refuse to backward (a * a saved the old a).
    class AddOneNumpy(Function):
        @staticmethod
        def forward(ctx, x):
            x_npy = x.numpy()  # shares memory with x
            x_npy += 1
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = leaf() * 1
    b = a * a
    v = a._version
    assert AddOneNumpy.apply(a) is a and a._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
    # without requires_grad too (PyTorch bumps it whenever mark_dirty is called)
    p = tgrad.tensor(X)
    AddOneNumpy.apply(p)
    assert p._version == 1
    np.testing.assert_array_equal(p.numpy(), X + 1)
    # the graph through the marked tensor is right: d/dx sum(3 * (x + 1)) = 3
    x = leaf()
    (AddOneNumpy.apply(x * 1) * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 3.0))


def test_mark_non_differentiable_and_materialized_zero_grads():
    seen = {}

    class SortValues(Function):
        @staticmethod
        def forward(ctx, x):
            idx = tgrad.tensor(np.argsort(x.detach().numpy()))
            vals = x[idx]
            flag = x * 0
            ctx.mark_non_differentiable(idx, flag)
            ctx.idx = idx
            return vals, idx, flag

        @staticmethod
        def backward(ctx, g_vals, g_idx, g_flag):
            seen["g_idx"], seen["g_flag"] = g_idx, g_flag
            out = tgrad.zeros_like(g_vals)
            out[ctx.idx] = g_vals
            return out

    x = leaf()
    vals, idx, flag = SortValues.apply(x)
    assert vals.requires_grad and not idx.requires_grad and not flag.requires_grad
    assert idx.dtype is tgrad.int64
    (vals * tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64)).sum().backward()
    order = np.argsort(X)
    expected = np.zeros(3)
    expected[order] = [1.0, 2.0, 3.0]
    np.testing.assert_allclose(x.grad.numpy(), expected)
    # non-differentiable outputs still get a (zero) gradient in backward
    assert seen["g_flag"].tolist() == [0.0, 0.0, 0.0]
    assert seen["g_idx"].shape == (3,)


def test_set_materialize_grads_false_passes_none():
    seen = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen["g2"] = g2
            return g1

    x = leaf()
    a, _ = Two.apply(x)
    a.sum().backward()
    assert seen["g2"] is None
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))


def test_returned_input_is_a_new_alias():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf()
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    assert y.data_ptr() == x.data_ptr()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0))


def test_wrong_number_of_gradients_names_function():
    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match=r"function TooFewBackward returned an incorrect "
                                           r"number of gradients \(expected 2, got 1\)"):
        TooFew.apply(leaf(), leaf()).sum().backward()

    class ExtraNones(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None  # trailing Nones are accepted

    x = leaf()
    ExtraNones.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def test_wrong_shape_of_gradient_names_function():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return tgrad.ones(5, dtype=tgrad.float64)

    with pytest.raises(RuntimeError, match=r"Function BadShapeBackward returned an invalid "
                                           r"gradient at index 0 - got \[5\] but expected shape "
                                           r"compatible with \[3\]"):
        BadShape.apply(leaf()).sum().backward()


def test_gradient_for_non_tensor_argument_must_be_none():
    class GradForScalar(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * 2, g.sum()

    with pytest.raises(RuntimeError, match="function GradForScalarBackward returned a gradient "
                                           "different than None at position 2, but the "
                                           "corresponding forward input was not a Tensor"):
        GradForScalar.apply(leaf(), 2.0).sum().backward()


def test_gradient_for_tensor_not_requiring_grad_is_dropped_and_cast():
    class Both(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g.float(), g  # float32 gradient for a float64 input is cast back

    x = leaf()
    Both.apply(x, tgrad.ones(3, dtype=tgrad.float64)).sum().backward()
    assert x.grad.dtype is tgrad.float64
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))


def test_broadcastable_gradient_is_summed_to_input_shape():
    class Broadcasts(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g.expand(2, 3)  # (2, 3) for a (3,) input: reduced over the new dim

    x = leaf()
    Broadcasts.apply(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def test_non_tensor_gradient_type_error():
    class ReturnsNumber(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return 1.0

    with pytest.raises(RuntimeError, match=r"ReturnsNumberBackward returned a float as gradient 0: "
                       r"expected Variable or None \(got float\)"):
        ReturnsNumber.apply(leaf()).sum().backward()


def test_legacy_instantiation_warns_and_calling_the_instance_is_rejected():
    # PyTorch 2.13: Exp() gives a DeprecationWarning, Exp()(x) the legacy-Function error
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        legacy = Exp()
    with pytest.raises(RuntimeError, match="non-static forward method is deprecated"):
        legacy(tgrad.ones(1))


def test_multiple_outputs_and_double_backward():
    class SinCos(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            (x,) = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    x = leaf()
    s, c = SinCos.apply(x)
    assert s.grad_fn is c.grad_fn and s.output_nr == 0 and c.output_nr == 1
    (s * 2 + c * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(X) - 3 * np.sin(X), rtol=1e-12)
    assert gradcheck(SinCos.apply, (leaf(),))
    assert gradgradcheck(SinCos.apply, (leaf(),))


def test_save_for_backward_rejects_non_tensors_and_list_grads():
    class SavesNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save tensors"):
        SavesNumber.apply(leaf())

    class ListGrads(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return [g * 2, None]

    x = leaf()  # (PyTorch 2.13: a list is one gradient, not two)
    with pytest.raises(RuntimeError, match=r"ListGradsBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        ListGrads.apply(x, tgrad.ones(3, dtype=tgrad.float64)).sum().backward()


class _ViewOut(Function):
    """Returns a view of its input made inside forward; backward scales by 5."""

    @staticmethod
    def forward(ctx, x):
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g * 5


class _AsIs(Function):
    """Returns its input as is; backward scales by 5."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 5


_DIRECT = ("is a view and is being modified inplace. This view was created inside a custom "
           r"Function \(or because an input was returned as-is\)")
_INDIRECT = ("is a view and its base or another view of its base has been modified inplace. "
             r"This view was created inside a custom Function \(or because an input was "
             r"returned as-is\)")


def test_view_output_of_custom_function_is_not_modified_in_place():
    # As PyTorch: view+inplace handling would override the custom backward (wrong
    # gradients), so an output that is a view made in forward, or an input returned as is
    # (a view of it), may not be modified in place, nor used once its base was.
    x = leaf()
    for fn, name in ((_ViewOut, "_ViewOut"), (_AsIs, "_AsIs")):
        b = x * 1
        y = fn.apply(b)
        assert y._base is b
        with pytest.raises(RuntimeError, match=f"^Output 0 of {name} {_DIRECT}"):
            y.mul_(2)
        with pytest.raises(RuntimeError, match="Slice " + _DIRECT):  # views of it too
            y[1:].mul_(2)
        b.mul_(2)  # the base changes: y's custom grad_fn no longer describes y
        with pytest.raises(RuntimeError, match=f"^Output 0 of {name} {_INDIRECT}"):
            y.grad_fn  # noqa: B018
        with pytest.raises(RuntimeError, match=_INDIRECT):
            y * 2
        b = x * 1
        y = fn.apply(b)
        y2 = y[1:]
        with tgrad.no_grad():
            b.add_(1)  # under no_grad too
        with pytest.raises(RuntimeError, match=f"^Output 0 of Slice {_INDIRECT}"):
            y2.grad_fn  # noqa: B018
    # unmodified, or cloned before the in-place op: the custom backward (5) is used
    x.grad = None
    _ViewOut.apply(x * 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 5.0))
    x.grad = None
    y = _AsIs.apply(x * 1).clone()
    y.mul_(2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 10.0))
    # nothing requires grad: no graph, no restriction
    b = tgrad.ones(3)
    y = _ViewOut.apply(b)
    b.mul_(2)
    y.mul_(2)
    assert y.grad_fn is None and y.tolist() == [4.0, 4.0, 4.0]


def test_a_complex_gradient_for_a_real_input_raises():
    # PyTorch's validate_outputs refuses it (taking the real part would hide a wrong
    # backward: d imag(r * 1j) / dr is 1, the real part of the returned g is 0)
    class Rotate(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, r):
            return r * 1j

        @staticmethod
        def backward(ctx, g):
            return g

    r = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"RotateBackward returned an invalid gradient at "
                                           r"index 0 - got a complex \(tgrad.complex64\) "
                                           r"gradient for a real \(tgrad.float32\) input"):
        Rotate.apply(r).imag.sum().backward()

    class RotateRight(Rotate):
        @staticmethod
        def backward(ctx, g):  # the conjugate Wirtinger rule: real input, real gradient
            return (g * -1j).real

    RotateRight.apply(r).imag.sum().backward()
    assert r.grad.tolist() == [1.0, 1.0]


def test_a_backward_returning_a_list_raises_as_pytorch():
    # PyTorch takes a tuple (or one tensor); a list is one value that is not a tensor
    class Twice(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return [g * 2]

    a = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got list\)"):
        Twice.apply(a).sum().backward()


def test_vjp_is_another_name_for_backward():
    # PyTorch: a custom Function may define vjp instead of backward; both is an error at
    # backward time, neither PyTorch's "either the backward or vjp" error
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def vjp(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Both(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    class Neither(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = tgrad.tensor([3.0, -0.5], dtype=tgrad.float64, requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [6.0, -1.0]
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        Both.apply(x).sum().backward()
    with pytest.raises(NotImplementedError, match="either the backward or vjp method"):
        Neither.apply(x).sum().backward()


# ------------------------------------------------ what a node holds after the forward
class _WithIndex(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        i = a.argmax().reshape(1)
        ctx.mark_non_differentiable(i)
        return a * 1, i

    @staticmethod
    def backward(ctx, g, gi):
        return g


def test_outputs_die_by_refcount_as_in_pytorch():
    # the node drops dirty_tensors, non_differentiable and to_save after the forward
    # (PyTorch sets them to None): an output held there and its own grad_fn (the node)
    # made a cycle, freed only by the garbage collector (a mark_dirty output kept its
    # whole graph; checkpoint's early-stopping pack hook left its last output so)
    import gc
    import weakref
    x = tgrad.randn(50, dtype=tgrad.float64, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        y = x * 1
        z = MulTwoInplace.apply(y)
        dirty = weakref.ref(z)
        del y, z
        _, i = _WithIndex.apply(x)
        index = weakref.ref(i)
        del i
        assert dirty() is None and index() is None

        def live_tensors() -> int:
            return sum(isinstance(o, tgrad.Tensor) for o in gc.get_objects())

        before = live_tensors()
        out = tgrad.utils.checkpoint.checkpoint(lambda a: a.sin().exp(), x, use_reentrant=False)
        out.sum().backward()
        grad = x.grad.numpy()
        x.grad = None
        del out
        assert live_tensors() == before  # (the recomputed exp's output stayed, in a cycle)
    finally:
        gc.enable()
    a = x.detach().numpy()
    np.testing.assert_allclose(grad, np.exp(np.sin(a)) * np.cos(a), rtol=1e-14)
