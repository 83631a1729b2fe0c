"""Module full backward hooks: arguments (PyTorch's shapes and None entries), replacement
of grad_input / grad_output, modules whose inputs need no gradient, and removal."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import nn


class Pair(nn.Module):
    def forward(self, a, b):
        return a * b, a + b


def _t(values, **kw):
    return tgrad.tensor(np.asarray(values, dtype=np.float64), **kw)


def test_hook_arguments_for_a_linear_layer():
    m = nn.Linear(3, 2).double()
    seen = []
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", mod, go)))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("post", mod, gi, go)))
    x = _t(np.ones((4, 3)), requires_grad=True)
    g = _t(np.arange(8.0).reshape(4, 2))
    m(x).backward(g)
    (pre, mod, go), (post, mod2, gi, go2) = seen
    assert pre == "pre" and post == "post" and mod is m and mod2 is m
    assert go[0].tolist() == g.tolist() and go2[0].tolist() == g.tolist()
    np.testing.assert_allclose(gi[0].numpy(), g.numpy() @ m.weight.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), gi[0].numpy())


def test_grad_input_replacement_and_none_entries():
    b = _t([3.0, 3.0])  # needs no gradient: its grad_input entry is zeros (PyTorch's)
    m = Pair()
    calls = []

    def hook(mod, gi, go):
        calls.append((gi, go))
        return gi[0] * 10, None
    m.register_full_backward_hook(hook)
    a = _t([1.0, 1.0], requires_grad=True)
    o1, o2 = m(a, b)
    (o1 * 2).sum().backward()  # o2 unused: its grad_output entry is None
    gi, go = calls[0]
    assert gi[0].tolist() == [6.0, 6.0] and gi[1].tolist() == [0.0, 0.0]
    assert go[0].tolist() == [2.0, 2.0] and go[1] is None
    assert a.grad.tolist() == [60.0, 60.0]


def test_pre_hook_replaces_grad_output():
    m = nn.Linear(2, 2).double()
    with tgrad.no_grad():
        m.weight.copy_(tgrad.eye(2, dtype=tgrad.float64))
        m.bias.zero_()
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    x = _t([[1.0, 2.0]], requires_grad=True)
    m(x).sum().backward()
    assert x.grad.tolist() == [[3.0, 3.0]]
    assert m.weight.grad.tolist() == [[3.0, 6.0], [3.0, 6.0]]


def test_hook_fires_with_none_inputs_when_no_input_requires_grad():
    m = nn.Linear(2, 1).double()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        m(_t([[1.0, 2.0]])).sum().backward()
    assert seen[0][0] == (None,) and seen[0][1][0].tolist() == [[1.0]]
    assert m.weight.grad.tolist() == [[1.0, 2.0]]


def test_removed_hooks_do_not_run_and_bad_returns_raise():
    m = nn.Linear(2, 2).double()
    calls = []
    h = m.register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    h.remove()
    x = _t([[1.0, 2.0]], requires_grad=True)
    m(x).sum().backward()
    assert calls == []
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="returned an invalid number of grad_input"):
        m(x).sum().backward()


def test_entries_for_numbers_and_outputs_without_gradient():
    class Scale(nn.Module):
        def forward(self, x, factor):
            return x * factor, 3

    m = Scale()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    x = _t([1.0, 2.0], requires_grad=True)
    y, _ = m(x, 2.0)
    y.sum().backward()
    gi, go = seen[0]
    assert len(gi) == 2 and gi[1] is None and gi[0].tolist() == [2.0, 2.0]
    assert len(go) == 2 and go[1] is None and go[0].tolist() == [1.0, 1.0]


def test_unused_input_that_needs_grad_shows_zeros_and_keeps_grad_none():
    # PyTorch: every tensor input's grad_input entry is a tensor (zeros when no gradient
    # reached it); the hook's view does not change the input's own .grad
    class First(nn.Module):
        def forward(self, a, c):
            return a * 2.0

    m = First()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    a = _t([1.0, 2.0], requires_grad=True)
    c = _t([5.0], requires_grad=True)
    m(a, c).sum().backward()
    (gi,) = seen
    assert gi[0].tolist() == [2.0, 2.0] and gi[1].tolist() == [0.0]
    assert a.grad.tolist() == [2.0, 2.0] and c.grad is None


def test_hooks_skipped_when_outputs_are_not_tensors_or_tuples():
    # a list / dict output is not hooked (PyTorch's): no grad_output, so the full backward
    # hook is not called (it was called with grad_output None)
    class AsList(nn.Module):
        def forward(self, a):
            return [a * 3.0]

    m = AsList()
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, go)))
    a = _t([1.0, 2.0], requires_grad=True)
    m(a)[0].sum().backward()
    assert calls == [] and a.grad.tolist() == [3.0, 3.0]


def test_wrong_number_of_grads_has_pytorchs_text():
    m = nn.Linear(2, 2).double()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 2, but expected 1"):
        m(_t([[1.0, 2.0]], requires_grad=True)).sum().backward()


_VIEW_ERROR = "Output 0 of BackwardHookFunction is a view and is being modified inplace"


def test_in_place_forward_on_a_hooked_input_raises():
    # PyTorch: the hooked input is a view made by a Python Function, so the in-place relu
    # inside forward raises (tgrad used to run it and leave y's old grad_fn: x.grad was
    # [3, 3] where the written y needs [0, 3])
    m = nn.ReLU(inplace=True)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    x = _t([-1.0, 2.0], requires_grad=True)
    y = x * 3
    with pytest.raises(RuntimeError, match=_VIEW_ERROR):
        m(y)


def test_in_place_on_a_hooked_output_that_views_the_input_raises():
    m = nn.Flatten(0)
    m.register_full_backward_hook(lambda *a: None)
    x = _t([[1.0, 2.0]], requires_grad=True)
    o = m(x * 1)
    with pytest.raises(RuntimeError, match=_VIEW_ERROR):
        o.mul_(5)


def test_backward_hooks_see_the_output_a_forward_hook_returned():
    # PyTorch attaches the outputs' hook node after the forward hooks ran: grad_output is
    # the gradient of the output the caller got (here 3), not of forward's own (30)
    m = nn.Linear(2, 1).double()
    with tgrad.no_grad():
        m.weight.copy_(_t([[1.0, 1.0]]))
        m.bias.zero_()
    seen = []
    m.register_forward_hook(lambda mod, args, out: out * 10)
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", go[0].tolist())))
    m.register_full_backward_hook(
        lambda mod, gi, go: seen.append(("post", gi[0].tolist(), go[0].tolist())))
    x = _t([[1.0, 2.0]], requires_grad=True)
    (m(x) * 3).sum().backward()
    assert seen == [("pre", [[3.0]]), ("post", [[30.0, 30.0]], [[3.0]])]
    np.testing.assert_array_equal(x.grad.numpy(), [[30.0, 30.0]])


def test_full_backward_hooks_prepend_runs_first_and_modules_remove_duplicate():
    # PyTorch's prepend= on the full backward (pre-)hooks; Module.modules(remove_duplicate)
    order = []
    lin = nn.Linear(2, 2)
    lin.register_full_backward_pre_hook(lambda m, go: order.append("pre-a"))
    lin.register_full_backward_pre_hook(lambda m, go: order.append("pre-b"), prepend=True)
    lin.register_full_backward_hook(lambda m, gi, go: order.append("a"))
    lin.register_full_backward_hook(lambda m, gi, go: order.append("b"), prepend=True)
    lin(tgrad.ones(1, 2, requires_grad=True)).sum().backward()
    assert order == ["pre-b", "pre-a", "b", "a"]
    twice = nn.Sequential(lin, lin)
    assert len(list(twice.modules())) == 2
    assert len(list(twice.modules(remove_duplicate=False))) == 3


def test_hardtanh_takes_pytorchs_deprecated_bound_names():
    with pytest.warns(FutureWarning, match="`min_value` is deprecated and renamed to `min_val`"):
        m = nn.Hardtanh(min_value=-2.0, max_value=2.0)
    assert (m.min_val, m.max_val) == (-2.0, 2.0)
    assert m(tgrad.tensor([-3.0, 0.5, 3.0])).tolist() == [-2.0, 0.5, 2.0]
