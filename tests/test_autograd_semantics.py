"""Autograd semantics where a differential audit against PyTorch 2.13 found tgrad
different (the expected values and messages below are PyTorch's): .grad under
create_graph, masks changed after use, hooks that change a gradient's size or type,
``.data`` assignment and version counters, retain_grad on views, hooks on branches a
partial backward skips, mark_dirty, inference_mode and the optimizers' implementation
switches."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad


def _leaf(values):
    return tgrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# ----------------------------------------------------------- .grad under create_graph
def test_create_graph_grad_is_a_copy_not_an_alias():
    x = _leaf([1.0, 2.0])
    x.sum().backward(create_graph=True)
    x.sum().backward()  # accumulates into the first .grad (was a read-only alias)
    assert x.grad.tolist() == [2.0, 2.0]

    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    (a + b).backward(tgrad.ones(2, dtype=tgrad.float64), create_graph=True)
    assert a.grad is not b.grad
    with tgrad.no_grad():
        a.grad.mul_(3)
    assert b.grad.tolist() == [1.0, 1.0]

    g = tgrad.ones(2, dtype=tgrad.float64)
    c = _leaf([1.0, 2.0])
    c.backward(g, create_graph=True)
    g.mul_(5)
    assert c.grad.tolist() == [1.0, 1.0]


def test_create_graph_grad_still_differentiates():
    x = _leaf([1.0, 2.0])
    (x * x * x).sum().backward(create_graph=True)  # x.grad = 3 x^2, recorded
    assert x.grad.requires_grad
    (gx,) = tgrad.autograd.grad(x.grad.sum(), x)
    assert gx.tolist() == [6.0, 12.0]


def test_gradient_clipping_after_create_graph():
    w = tgrad.nn.Parameter(tgrad.tensor([3.0, 4.0], dtype=tgrad.float64))
    (w * 2).sum().backward(create_graph=True)
    total = tgrad.nn.utils.clip_grad_norm_([w], 1.0)
    assert abs(total.item() - 8.0 ** 0.5) < 1e-12
    np.testing.assert_allclose(w.grad.detach().numpy(), [2 / 8 ** 0.5] * 2, rtol=1e-6)


# ----------------------------------------------------------- masks changed after use
def test_changing_a_where_mask_after_use_raises():
    a = _leaf([1.0, 2.0])
    c = tgrad.tensor([True, False])
    y = tgrad.where(c, a, a * 3).sum()
    c.fill_(True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_changing_a_masked_fill_mask_after_use_raises():
    a = _leaf([1.0, 2.0])
    m = tgrad.tensor([True, False])
    y = a.masked_fill(m, 0.0).sum()
    m[1] = True
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_changing_an_index_after_use_keeps_the_forward_indices():
    # PyTorch raises here; tgrad keeps the indices the forward used (a copy), so the
    # gradient is that of the function actually computed
    a = _leaf([1.0, 2.0, 3.0])
    m = tgrad.tensor([True, False, False])
    z = a[m]
    m[1] = True
    z.sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 0.0]
    b = _leaf([1.0, 2.0, 3.0])
    idx = tgrad.tensor([0, 2])
    y = b[idx]
    idx[0] = 1
    (y * tgrad.tensor([5.0, 7.0], dtype=tgrad.float64)).sum().backward()
    assert b.grad.tolist() == [5.0, 0.0, 7.0]


# ----------------------------------------------------------- hooks
@pytest.mark.parametrize("hook, exc, text", [
    (lambda g: g.sum(), RuntimeError, "hook '<lambda>' has changed the size of value"),
    (lambda g: g.float(), RuntimeError,
     "hook '<lambda>' has changed the type of value (was tgrad.float64 got tgrad.float32)"),
    (lambda g: 3, TypeError, "expected Variable, but hook returned 'int'"),
])
def test_hooks_may_not_change_size_or_type(hook, exc, text):
    for make in (lambda a: a, lambda a: a * 2):  # on a leaf, and on a non-leaf
        a = _leaf([1.0, 2.0])
        t = make(a)
        t.register_hook(hook)
        with pytest.raises(exc) as info:
            (t * 2).sum().backward()
        assert text in str(info.value)


def test_node_prehook_may_not_change_type():
    a = _leaf([1.0, 2.0])
    b = a * 2
    b.grad_fn.register_prehook(lambda go: (go[0].float(),))
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        (b * 2).sum().backward()


@pytest.mark.parametrize("drop", ["requires_grad_", "detach_"])
def test_leaf_made_not_to_require_grad_after_recording_gets_no_grad(drop):
    # PyTorch's AccumulateGrad accumulates nothing into a leaf that no longer requires grad
    # (its tensor and post-accumulate hooks still run); the other leaf is unaffected:
    # d/db sum(3 a b) = 3 a = [3, 6]
    a, b = _leaf([1.0, 2.0]), _leaf([1.0, 1.0])
    log = []
    a.register_hook(lambda g: log.append(g.tolist()))
    a.register_post_accumulate_grad_hook(lambda t: log.append("post"))
    y = (a * b * 3).sum()
    a.requires_grad_(False) if drop == "requires_grad_" else a.detach_()
    y.backward()
    assert a.grad is None and b.grad.tolist() == [3.0, 6.0]
    assert log == [[3.0, 3.0], "post"]


def test_saved_input_detached_in_place_raises_in_backward():
    # PyTorch: a non-leaf saved as an input (sin saves y) and then detach_()ed raises on
    # unpack; a saved output (exp's) or a tensor detached before being saved does not
    x = _leaf([1.0, 2.0])
    y = x * 1
    z = y.sin()
    y.detach_()
    with pytest.raises(RuntimeError, match=r"^Trying to use a saved tensor that has been "
                                           r"detached in-place, i\.e\. with \.detach_\(\)"):
        z.sum().backward()
    x = _leaf([1.0, 2.0])
    y = x.exp()
    z = y * 2.0  # (a number: y not saved by the mul)
    y.detach_()
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-12)
    x = _leaf([1.0, 2.0])
    y = x * 1
    y.detach_()
    y.requires_grad_()
    y.sin().sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.cos([1.0, 2.0]), rtol=1e-12)

def test_leaf_tensor_hooks_run_before_its_accumulate_grad_prehooks():
    # PyTorch's order for a leaf: tensor hooks, then AccumulateGrad's pre-hooks (which see
    # the hooked gradient), then accumulation, then post-accumulate-grad hooks.
    # d/dx sum(2x) = 2; tensor hook: +1 -> 3; node pre-hook: *10 -> 30
    x = _leaf([1.0, 2.0])
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    log = []
    x.register_hook(lambda g: log.append(("tensor", g.tolist())) or g + 1)
    acc.register_prehook(lambda go: log.append(("pre", go[0].tolist())) or (go[0] * 10,))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
    y.sum().backward(retain_graph=True)
    assert log == [("tensor", [2.0, 2.0]), ("pre", [3.0, 3.0]), ("post", [30.0, 30.0])]
    assert x.grad.tolist() == [30.0, 30.0]
    y.sum().backward()  # the hooks run once per backward, not twice
    assert x.grad.tolist() == [60.0, 60.0] and len(log) == 6


def test_accumulating_into_an_expanded_grad_raises_pytorchs_overlap_error():
    x = _leaf([1.0, 2.0])
    x.grad = tgrad.tensor([1.0], dtype=tgrad.float64).expand(2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        (x * 2).sum().backward()


def test_hooks_on_branches_a_partial_backward_skips_do_not_run():
    w, x = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    h = w * 2
    calls = []
    h.register_hook(lambda g: calls.append(g))
    (gx,) = tgrad.autograd.grad((x * h).sum(), x)
    assert gx.tolist() == [2.0, 4.0] and calls == []
    (x * h).sum().backward(inputs=[x])
    assert calls == [] and w.grad is None


def test_retain_grad_on_a_view_follows_in_place_changes_of_the_base():
    a = _leaf([1.0, 2.0, 3.0])
    b = a * 1
    v = b[:2]
    v.retain_grad()
    b.mul_(2)
    (v * tgrad.tensor([1.0, 10.0], dtype=tgrad.float64)).sum().backward()
    assert v.grad.tolist() == [1.0, 10.0]
    assert a.grad.tolist() == [2.0, 20.0, 0.0]


# ----------------------------------------------------------- .data and versions
def test_data_assignment_keeps_the_version_counter():
    w = _leaf([1.0, 2.0])
    y = (w * w).sum()
    w.data -= 0.1  # not an in-place op on w as far as autograd is concerned
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.8, 3.8])  # saved w is the new value
    w2 = _leaf([1.0, 2.0])
    with tgrad.no_grad():
        v = w2[:1]
    w2.data -= 0.1
    with tgrad.no_grad():
        w2.mul_(2)
    assert w2._version == v._version == 1  # still one counter
    w3 = tgrad.arange(6.0)
    v3 = w3[2:]
    w3.data = tgrad.zeros(3)  # other memory: the old view keeps its own
    assert v3.storage_offset() == 2 and w3.tolist() == [0.0] * 3


# ----------------------------------------------------------- custom Function
def test_mark_dirty_on_an_input_not_returned_raises():
    class Bad(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            x.add_(1)
            ctx.mark_dirty(x)
            return y * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    text = "Some elements marked as dirty during the forward method were not returned"
    a = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=text):
        Bad.apply(a * 1, _leaf([1.0, 1.0]))
    with tgrad.no_grad(), pytest.raises(RuntimeError, match=text):
        Bad.apply(tgrad.ones(2), tgrad.ones(2))


# ----------------------------------------------------------- inference_mode, optimizers
def test_inference_mode():
    x = _leaf([1.0])
    assert not tgrad.is_inference_mode_enabled()
    with tgrad.inference_mode():
        assert tgrad.is_inference_mode_enabled() and not (x * 2).requires_grad
    with tgrad.inference_mode(False):
        assert (x * 2).requires_grad
    with tgrad.no_grad(), tgrad.inference_mode(False):  # mode False records again
        assert (x * 2).requires_grad

    @tgrad.inference_mode
    def f():
        return (x * 2).requires_grad, tgrad.autograd.is_inference_mode_enabled()
    assert f() == (False, True) and tgrad.is_grad_enabled()


def test_optimizers_accept_pytorchs_implementation_switches():
    p = tgrad.nn.Parameter(tgrad.ones(2))
    tgrad.optim.SGD([p], lr=0.1, foreach=True, fused=False)
    tgrad.optim.Adam([p], foreach=False, fused=True, capturable=True)
    tgrad.optim.AdamW([p], foreach=True)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        tgrad.optim.Adam([p], differentiable=True)


def test_autograd_exposes_forward_ad():
    # forward-mode AD exists (tests/test_forward_ad.py), as torch.autograd.forward_ad
    assert callable(tgrad.autograd.forward_ad.dual_level)


def test_grad_with_batched_grad_outputs():
    x = _leaf([1.0, 2.0, 3.0])
    y = x ** 2
    (jac,) = tgrad.autograd.grad(y, x, tgrad.eye(3, dtype=tgrad.float64), is_grads_batched=True)
    assert jac.tolist() == [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]]
    (rows,) = tgrad.autograd.grad(x.sum() * 2, x, tgrad.tensor([1.0, 2.0], dtype=tgrad.float64),
                                  is_grads_batched=True)
    assert rows.tolist() == [[2.0] * 3, [4.0] * 3]
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] has a shape of \\(\\)"):
        tgrad.autograd.grad(y, x, tgrad.ones(3, dtype=tgrad.float64), is_grads_batched=True)


def test_a_leaf_moved_into_the_graph_interior_raises_in_backward():
    # PyTorch: x used in the graph (y = 2x), then detach_()ed and written in place from
    # that graph (x is no longer a leaf): the backward reaching x's accumulator raises
    # (tgrad's wrote a .grad onto the non-leaf)
    x = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    y = x * 2
    x.detach_()
    x[1:] = y[:2]
    assert x.requires_grad and not x.is_leaf
    with pytest.raises(RuntimeError, match="^leaf variable has been moved into the graph "
                                           "interior$"):
        x.sum().backward()
