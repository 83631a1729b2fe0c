"""tgrad.func (torch.func's transforms over tape autograd): grad, grad_and_value, vjp,
jacrev, jacfwd, hessian, vmap and functional_call, against NumPy float64 closed forms and
finite differences; composition (vmap(grad), jacrev(jacrev)), pytrees, has_aux,
randomness modes and PyTorch's errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad import func as FT

F64 = tgrad.float64
RNG = np.random.default_rng(12)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **kw)


def _fd_grad(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def test_grad_argnums_aux_and_value():
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)

    def f(a, b):
        return (a.sin() * b).sum() + (a * a).sum()
    gx = FT.grad(f)(_t(x), _t(y))
    np.testing.assert_allclose(gx.numpy(), np.cos(x) * y + 2 * x, rtol=1e-13)
    assert not gx.requires_grad  # the outermost level keeps no graph
    gx2, gy2 = FT.grad(f, argnums=(0, 1))(_t(x), _t(y))
    np.testing.assert_allclose(gy2.numpy(), np.sin(x), rtol=1e-13)
    (g, (value, aux)) = FT.grad_and_value(lambda a: ((a ** 3).sum(), a.mean()),
                                          has_aux=True)(_t(x))
    np.testing.assert_allclose(g.numpy(), 3 * x ** 2, rtol=1e-13)
    assert value.item() == pytest.approx((x ** 3).sum()) and aux.item() == pytest.approx(
        x.mean())
    g_dict = FT.grad(lambda p: (p["w"] * p["b"]).sum())({"w": _t(x), "b": _t(y)})
    np.testing.assert_allclose(g_dict["w"].numpy(), y)
    np.testing.assert_allclose(g_dict["b"].numpy(), x)
    unused = FT.grad(lambda a, b: (a * 2).sum(), argnums=1)(_t(x), _t(y))
    assert not unused.numpy().any()  # an input the output does not depend on: zeros


def test_higher_order_compositions():
    x = RNG.standard_normal(3)

    def f(a):
        return (a.exp() * a).sum()
    d2 = FT.grad(lambda a: FT.grad(f)(a).sum())(_t(x))  # sum of the Hessian's rows
    np.testing.assert_allclose(d2.numpy(), (2 + x) * np.exp(x), rtol=1e-12)
    h = FT.hessian(f)(_t(x))
    np.testing.assert_allclose(h.numpy(), np.diag((2 + x) * np.exp(x)), rtol=1e-12)
    w = RNG.standard_normal((3, 3))
    h2 = FT.jacrev(FT.jacrev(lambda a: (a @ _t(w) @ a).reshape(())))(_t(x))
    np.testing.assert_allclose(h2.numpy(), w + w.T, rtol=1e-12)


def test_jacrev_jacfwd_vjp():
    x = RNG.standard_normal(4)
    a = RNG.standard_normal((3, 4))

    def f(v):
        return (_t(a) @ v).tanh()
    want = (1 - np.tanh(a @ x) ** 2)[:, None] * a
    np.testing.assert_allclose(FT.jacrev(f)(_t(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(FT.jacfwd(f)(_t(x)).numpy(), want, rtol=1e-12)
    jx, jy = FT.jacrev(lambda u, v: u * v, argnums=(0, 1))(_t(x), _t(2 * x))
    np.testing.assert_allclose(jx.numpy(), np.diag(2 * x))
    out, fn = FT.vjp(f, _t(x))
    cot = RNG.standard_normal(3)
    (gx,) = fn(_t(cot))
    np.testing.assert_allclose(out.numpy(), np.tanh(a @ x), rtol=1e-13)
    np.testing.assert_allclose(gx.numpy(), cot @ want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn(_t(np.ones(2)))


def test_vjp_cotangents_must_have_the_outputs_pytree_structure():
    # PyTorch compares the structures (dict keys in order): a dict of cotangents with the
    # keys in another order used to pair them with the wrong outputs
    out, fn = FT.vjp(lambda v: {"a": v * 2, "b": v * 3}, _t([1.0, 2.0]))
    (g,) = fn({"a": _t([1.0, 1.0]), "b": _t([0.0, 1.0])})
    assert g.tolist() == [2.0, 5.0]  # 2 * (1, 1) + 3 * (0, 1), by hand
    for cot, shown in [({"b": _t([0.0, 1.0]), "a": _t([1.0, 1.0])}, "{'b': *, 'a': *}"),
                       ((_t([1.0, 1.0]), _t([0.0, 1.0])), "(*, *)"),
                       ({"a": _t([1.0, 1.0]), "c": _t([0.0, 1.0])}, "{'a': *, 'c': *}")]:
        with pytest.raises(RuntimeError, match=re.escape(
                f"cotangents: {shown}, primal output: {{'a': *, 'b': *}}")):
            fn(cot)
    out, fn = FT.vjp(lambda v: v * 2, _t([1.0, 2.0]))
    for cot, shown in [((_t([1.0, 1.0]),), "(*,)"), ([_t([1.0, 1.0])], "[*]")]:
        with pytest.raises(RuntimeError, match=re.escape(f"cotangents: {shown}, primal")):
            fn(cot)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
        fn(3.0)


def test_jvp_tangents_must_have_the_primals_pytree_structure():
    a, b = _t([10.0, 20.0]), _t([20.0, 40.0])
    f = lambda d: d["a"] * d["b"]  # noqa: E731
    # d(a*b) = ta*b + a*tb = (1, 1) * b, by hand
    _, tan = FT.jvp(f, ({"a": a, "b": b},), ({"a": _t([1.0, 1.0]), "b": _t([0.0, 0.0])},))
    assert tan.tolist() == [20.0, 40.0]
    for tangents in [({"b": _t([0.0, 0.0]), "a": _t([1.0, 1.0])},),  # was paired by position
                     [{"a": _t([1.0, 1.0]), "b": _t([0.0, 0.0])}]]:
        with pytest.raises(RuntimeError, match="same python structure"):
            FT.jvp(f, ({"a": a, "b": b},), tangents)


def test_vmap_per_sample_gradients_and_dims():
    w = RNG.standard_normal(3)
    xs, ys = RNG.standard_normal((5, 3)), RNG.standard_normal(5)

    def loss(weights, x, y):
        return ((weights * x).sum() - y) ** 2
    per_sample = FT.vmap(FT.grad(loss), in_dims=(None, 0, 0))(_t(w), _t(xs), _t(ys))
    want = 2 * ((xs @ w) - ys)[:, None] * xs
    np.testing.assert_allclose(per_sample.numpy(), want, rtol=1e-12)
    m = RNG.standard_normal((3, 4, 2))
    out = FT.vmap(lambda t: t.sum(0), in_dims=2, out_dims=1)(_t(m))
    np.testing.assert_allclose(out.numpy(), m.sum(0), rtol=1e-14)  # (4, 2): batch at dim 1
    pair = FT.vmap(lambda t: (t * 2, t.sum()))(_t(m))
    np.testing.assert_allclose(pair[0].numpy(), 2 * m)
    np.testing.assert_allclose(pair[1].numpy(), m.reshape(3, -1).sum(1), rtol=1e-14)
    # gradients flow through the stacked results
    x = _t(m, requires_grad=True)
    FT.vmap(lambda t: (t ** 2).sum())(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * m)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        FT.vmap(lambda a, b: a + b)(_t(np.ones(2)), _t(np.ones(3)))
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        FT.vmap(lambda a: a, in_dims=(None,))(_t(np.ones(2)))


def test_vmap_randomness_modes():
    x = _t(np.zeros((4, 3)))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        FT.vmap(lambda t: t + tgrad.rand(3, dtype=F64))(x)
    tgrad.manual_seed(0)
    diff = FT.vmap(lambda t: t + tgrad.rand(3, dtype=F64), randomness="different")(x).numpy()
    assert len({tuple(r) for r in diff}) == 4
    tgrad.manual_seed(0)
    same = FT.vmap(lambda t: t + tgrad.rand(3, dtype=F64), randomness="same")(x).numpy()
    assert np.all(same == same[0])
    np.testing.assert_allclose(same[0], diff[0])  # both start from the same state


def test_functional_call_names_other_attributes_as_pytorch():
    # a plain tensor attribute is replaced for the call; a new name is set and removed; a
    # name that is a submodule or a non-tensor, or a path through one, is refused
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2, bias=False, dtype=F64)
            self.scale = _t(2.0)
            self.note = "x"

        def forward(self, x):
            return self.lin(x) * self.scale

    m = Scaled()
    x = _t(np.ones((1, 2)))
    w = m.lin.weight.detach().numpy()
    out = FT.functional_call(m, {"scale": _t(5.0)}, (x,))
    np.testing.assert_allclose(out.detach().numpy(), 5.0 * np.ones((1, 2)) @ w.T, rtol=1e-14)
    assert m.scale.item() == 2.0  # restored
    FT.functional_call(m, {"lin.extra": _t(1.0)}, (x,))
    assert not hasattr(m.lin, "extra")  # removed after the call
    with pytest.raises(TypeError, match="(?s)attribute `lin`: .* is not an instance of"):
        FT.functional_call(m, {"lin": _t(1.0)}, (x,))
    with pytest.raises(TypeError, match="attribute `note`: x is not an instance of"):
        FT.functional_call(m, {"note": _t(1.0)}, (x,))
    with pytest.raises(TypeError, match="(?s)submodule `lin.weight`: .* not an instance of"):
        FT.functional_call(m, {"lin.weight.x": _t(1.0)}, (x,))
    with pytest.raises(AttributeError, match="Scaled has no attribute `nope`"):
        FT.functional_call(m, {"nope.w": _t(1.0)}, (x,))
    assert m.scale.item() == 2.0 and isinstance(m.lin.weight, nn.Parameter)


def test_functional_call():
    tgrad.manual_seed(2)
    lin = nn.Linear(3, 2, dtype=F64)
    w, b = RNG.standard_normal((2, 3)), RNG.standard_normal(2)
    x = RNG.standard_normal((4, 3))
    tw = _t(w, requires_grad=True)
    out = FT.functional_call(lin, {"weight": tw, "bias": _t(b)}, (_t(x),))
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + b, rtol=1e-13)
    assert lin.weight is not tw and isinstance(lin.weight, nn.Parameter)  # restored
    out.sum().backward()
    np.testing.assert_allclose(tw.grad.numpy(), np.ones((4, 2)).T @ x, rtol=1e-13)
    partial = FT.functional_call(lin, ({"bias": _t(b)},), _t(x))
    np.testing.assert_allclose(partial.detach().numpy(),
                               x @ lin.weight.detach().numpy().T + b, rtol=1e-13)
    # a gradient with respect to parameters given as a dict, through grad
    params = {k: v.detach() for k, v in lin.named_parameters()}
    g = FT.grad(lambda p: FT.functional_call(lin, p, (_t(x),)).sum())(params)
    np.testing.assert_allclose(g["bias"].numpy(), [4.0, 4.0])
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        FT.functional_call(lin, {"weight": tw}, (_t(x),), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        FT.functional_call(lin, ({"bias": _t(b)}, {"bias": _t(b)}), (_t(x),))
    shared = nn.Linear(2, 2, bias=False, dtype=F64)
    net = nn.Sequential(shared, shared)  # one Parameter under two names
    new = _t(np.eye(2) * 3)
    y = FT.functional_call(net, {"0.weight": new}, (_t(np.ones((1, 2))),))
    np.testing.assert_allclose(y.numpy(), [[9.0, 9.0]])  # both uses replaced


def test_errors():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, "
                                           "got tensor with 1 dims"):
        FT.grad(lambda a: a * 2)(_t(np.ones(2)))
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        FT.grad(lambda a: a.sum(), argnums=1)(_t(np.ones(2)))
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        FT.grad(lambda a: a.sum(), has_aux=True)(_t(np.ones(2)))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        FT.vmap(lambda a: a, randomness="any")
    assert tgrad.func is FT


def test_grad_and_vjp_of_complex_inputs():
    # PyTorch's convention (as .backward()): for real f of z = x + iy the gradient is
    # df/dx + i df/dy; grad of sum |z|^2 is 2z, and vjp of z -> z^2 with cotangent v is
    # v * conj(2z). An integer input is still refused
    zv = np.array([1 + 2j, -0.5 + 0.3j])
    z = tgrad.tensor(zv)
    np.testing.assert_allclose(FT.grad(lambda a: (a * a.conj()).real.sum())(z).numpy(), 2 * zv,
                               rtol=1e-14)
    g, val = FT.grad_and_value(lambda a: (a.abs() ** 2).sum())(z)
    np.testing.assert_allclose(g.numpy(), 2 * zv, rtol=1e-14)
    np.testing.assert_allclose(val.item(), (np.abs(zv) ** 2).sum(), rtol=1e-14)
    v = np.array([0.5 - 1j, 2.0 + 0j])
    (gz,) = FT.vjp(lambda a: a * a, z)[1](tgrad.tensor(v))
    np.testing.assert_allclose(gz.numpy(), v * np.conj(2 * zv), rtol=1e-14)
    with pytest.raises(RuntimeError, match="got tgrad.int64"):
        FT.grad(lambda a: a.sum())(tgrad.tensor([1, 2]))


def test_vmap_out_dims_none_only_for_batch_independent_outputs():
    """PyTorch: out_dims=None is for outputs that do not depend on the batch; a batched
    output raises instead of silently returning the first element."""
    x = tgrad.tensor(np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        tgrad.func.vmap(lambda a: a * 2, out_dims=None)(x)
    w = tgrad.tensor([1.0, 2.0])
    y, c = tgrad.func.vmap(lambda a: (a * 2, w * 3), out_dims=(0, None))(x)
    np.testing.assert_array_equal(y.numpy(), np.arange(12.0).reshape(3, 4) * 2)
    np.testing.assert_array_equal(c.numpy(), [3.0, 6.0])


def test_functional_call_strict_with_tied_weights():
    """strict=True counts a tied twin as given (tie_weights fills it first, as PyTorch)."""
    m = tgrad.nn.Sequential(tgrad.nn.Linear(2, 2, bias=False), tgrad.nn.Linear(2, 2, bias=False))
    m[1].weight = m[0].weight
    w = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = tgrad.func.functional_call(m, {"0.weight": w}, (tgrad.ones(1, 2),), strict=True)
    # x W^T W^T with x = [1, 1]: [3, 7] then [3 + 14, 9 + 28]
    np.testing.assert_array_equal(out.detach().numpy(), [[17.0, 37.0]])
    with pytest.raises(RuntimeError, match="Missing key"):
        tgrad.func.functional_call(m, {"0.weight": w}, (tgrad.ones(1, 2),), strict=True,
                                   tie_weights=False)


# A user autograd.Function inside the transforms, as PyTorch's functorch: it must use the
# setup_context style, and under vmap (jacfwd and hessian vmap too) have a vmap rule or
# generate_vmap_rule=True (tgrad's vmap loops and never calls the vmap staticmethod).

class _CtxStyle(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _SetupStyle(tgrad.autograd.Function):
    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 2 * x


class _SetupStyleGenerated(_SetupStyle):
    generate_vmap_rule = True


class _SetupStyleVmap(_SetupStyle):
    @staticmethod
    def vmap(info, in_dims, x):
        return x * x, in_dims[0]


def test_custom_function_inside_transforms_needs_setup_context_and_vmap_support():
    x = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64)
    xs = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tgrad.float64)
    setup_msg = ("In order to use an autograd.Function with functorch transforms (vmap, grad, "
                 "jvp, jacrev, ...), it must override the setup_context staticmethod")
    for call in (lambda: FT.grad(lambda t: _CtxStyle.apply(t).sum())(x),
                 lambda: FT.grad(lambda t: (_CtxStyle.apply(tgrad.ones(3)) * t).sum())(x),
                 lambda: FT.vjp(_CtxStyle.apply, x),
                 lambda: FT.jacrev(_CtxStyle.apply)(x),
                 lambda: FT.jvp(_CtxStyle.apply, (x,), (x,)),
                 lambda: FT.vmap(_CtxStyle.apply)(xs)):
        with pytest.raises(RuntimeError, match=re.escape(setup_msg)):
            call()
    vmap_msg = ("You tried to vmap over _SetupStyle, but it does not have vmap support. Please "
                "override and implement the vmap staticmethod or set generate_vmap_rule=True.")
    for call in (lambda: FT.vmap(_SetupStyle.apply)(xs),
                 lambda: FT.jacfwd(_SetupStyle.apply)(x),
                 lambda: FT.hessian(lambda t: _SetupStyle.apply(t).sum())(x),
                 lambda: FT.vmap(FT.grad(lambda t: _SetupStyle.apply(t).sum()))(xs)):
        with pytest.raises(RuntimeError, match=re.escape(vmap_msg)):
            call()
    # the transforms that do not vmap the forward take it; values against hand derivatives
    np.testing.assert_allclose(FT.grad(lambda t: _SetupStyle.apply(t).sum())(x).numpy(),
                               2 * x.numpy())
    np.testing.assert_allclose(FT.jacrev(_SetupStyle.apply)(x).numpy(),
                               np.diag(2 * x.numpy()))
    _, t = FT.jvp(_SetupStyle.apply, (x,), (tgrad.ones(3, dtype=tgrad.float64),))
    np.testing.assert_allclose(t.numpy(), 2 * x.numpy())
    for cls in (_SetupStyleGenerated, _SetupStyleVmap):
        np.testing.assert_allclose(FT.vmap(cls.apply)(xs).numpy(), xs.numpy() ** 2)
        np.testing.assert_allclose(FT.hessian(lambda t, c=cls: c.apply(t).sum())(x).numpy(),
                                   2 * np.eye(3))
    # outside the transforms, anything goes; a transform's failure leaves no state behind
    np.testing.assert_allclose(_CtxStyle.apply(x).numpy(), 2 * x.numpy())
    with pytest.raises(NotImplementedError, match="override the vmap staticmethod"):
        _SetupStyle.vmap(None, (0,), x)


def test_stack_module_state_with_vmap_functional_call():
    from tgrad import nn
    from tgrad.func import functional_call, stack_module_state, vmap
    models = [nn.Linear(3, 2).double() for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert buffers == {}
    w = np.stack([m.weight.detach().numpy() for m in models])
    b = np.stack([m.bias.detach().numpy() for m in models])
    np.testing.assert_array_equal(params["weight"].detach().numpy(), w)
    assert params["weight"].is_leaf and params["weight"].requires_grad
    x = tgrad.tensor(np.arange(6.0).reshape(2, 3))
    out = vmap(lambda p, bf: functional_call(models[0], (p, bf), (x,)))(params, buffers)
    np.testing.assert_allclose(out.detach().numpy(), np.einsum("kc,mjc->mkj", x.numpy(), w)
                               + b[:, None, :], rtol=1e-12)
    bn = [nn.BatchNorm1d(2) for _ in range(2)]
    _, bufs = stack_module_state(bn)
    assert bufs["running_mean"].shape == (2, 2) and not bufs["running_mean"].requires_grad
    models[1].bias.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected bias from each model to have the same "
                                           ".requires_grad"):
        stack_module_state(models)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([bn[0], bn[1].eval()])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([nn.ReLU(), nn.Tanh()])


def test_functionalize_eager_values_and_input_mutation():
    from tgrad.func import functionalize

    def f(x):  # an intermediate mutated through a view: (x + 1) * 2
        y = x.clone()
        y.add_(1)
        y.view(-1).mul_(2)
        return y

    x = tgrad.ones(2)
    assert functionalize(f)(x).tolist() == [4.0, 4.0] and x.tolist() == [1.0, 1.0]

    def g(x):  # a mutated input: the caller's tensor changes, as in PyTorch
        x.add_(1)
        return x * 2
    x = tgrad.ones(2)
    assert functionalize(g, remove="mutations_and_views")(x).tolist() == [4.0, 4.0]
    assert x.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
        functionalize(g, remove="x")


def test_removable_handle_and_random_default_generator():
    from tgrad.utils.hooks import RemovableHandle
    hooks, extra = {}, [{}, {}]
    h = RemovableHandle(hooks, extra_dict=extra)
    hooks[h.id] = print
    extra[0][h.id] = extra[1][h.id] = True
    h2 = RemovableHandle(hooks)
    assert h2.id != h.id
    with h:
        pass
    assert hooks == {} and extra == [{}, {}]
    x = tgrad.ones(1, requires_grad=True)
    assert isinstance(x.register_hook(lambda g: g), RemovableHandle)
    assert tgrad.random.default_generator is tgrad.default_generator
    tgrad.random.default_generator.manual_seed(7)
    a = tgrad.rand(3)
    tgrad.manual_seed(7)
    assert a.tolist() == tgrad.rand(3).tolist()


def test_argnums_checked_as_pytorch():
    # duplicated argnums used to give a silent zero gradient for the first copy
    def f(x, y):
        return (x * x * y).sum()
    x, y = _t([1.0, 2.0]), _t([3.0, 4.0])
    for tr in (FT.grad, FT.grad_and_value, FT.jacrev, FT.jacfwd):
        with pytest.raises(RuntimeError, match=re.escape("argnums elements must be unique, "
                                                         "got (0, 0)")):
            tr(f, argnums=(0, 0))(x, y)
        for bad in ([0], 0.0):
            with pytest.raises(RuntimeError, match=re.escape(
                    f"argnums must be int or Tuple[int, ...], got: {type(bad)}")):
                tr(f, argnums=bad)(x, y)
        with pytest.raises(RuntimeError, match=re.escape("Got argnum=2, but only 2 "
                                                         "positional inputs")):
            tr(f, argnums=2)(x, y)
        with pytest.raises(RuntimeError, match="^argnums must be non-empty$"):
            tr(f, argnums=())(x, y)
    gx, gy = FT.grad(f, argnums=(0, -1))(x, y)  # 2 x y and x^2, by hand
    np.testing.assert_array_equal(gx.numpy(), [6.0, 16.0])
    np.testing.assert_array_equal(gy.numpy(), [1.0, 4.0])


def test_chunk_size_checked_and_values_unchanged():
    x = _t([[1.0, 2.0], [3.0, 4.0]])
    for bad in (0, -1):
        with pytest.raises(ValueError, match=re.escape(
                f"vmap: chunk_size should be None or greater than 0. (got {bad})")):
            FT.vmap(lambda r: r * 2, chunk_size=bad)(x)
        with pytest.raises(ValueError, match=re.escape("jacrev: `chunk_size` should be "
                                                       "greater than 0.")):
            FT.jacrev(lambda r: r * 2, chunk_size=bad)(x[0])
    np.testing.assert_array_equal(FT.vmap(lambda r: r.sum(), chunk_size=1)(x).numpy(), [3, 7])
    np.testing.assert_array_equal(FT.jacrev(lambda r: r ** 2, chunk_size=1)(x[1]).numpy(),
                                  [[6.0, 0.0], [0.0, 8.0]])


def test_vmap_in_dims_and_out_dims_checked_as_pytorch():
    x = _t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    def f(r):
        return r * 2
    for bad in ([0], None, 0.5):
        with pytest.raises(ValueError, match=re.escape(
                f"vmap(f, in_dims={bad}, ...)(<inputs>): expected `in_dims` to be int or a "
                f"(potentially nested) tuple matching the structure of inputs, got: "
                f"{type(bad)}.")):
            FT.vmap(f, in_dims=bad)(x)
    for d, t in ((2, x), (-3, x), (0, _t(1.0))):
        with pytest.raises(ValueError, match=re.escape(
                f"vmap(f, in_dims={d}, ...)(<inputs>): Got in_dim={d} for some input, but "
                f"that input is a Tensor of dimensionality {t.ndim} so expected in_dim to "
                f"satisfy -{t.ndim} <= in_dim < {t.ndim}.")):
            FT.vmap(f, in_dims=d)(t)
    with pytest.raises(ValueError, match=re.escape(
            "vmap(<lambda>, ..., out_dims=(1,))(<inputs>): out_dims is not compatible with the "
            "structure of `outputs`")):
        FT.vmap(lambda r: (r * 2, r.sum()), out_dims=(1,))(x)
    with pytest.raises(ValueError, match=re.escape(
            "vmap(<lambda>, ...): `<lambda>` must only return Tensors, got type <class "
            "'int'>. Did you "
            "mean to set out_dims= to None for output?")):
        FT.vmap(lambda r: r.shape[0])(x)


def test_vmap_over_an_empty_batch():
    # PyTorch runs f once on the empty batch: results with a mapped dim of size 0
    x = tgrad.zeros(0, 3, dtype=F64)
    a, b = FT.vmap(lambda r: (r * 2, r.sum()))(x)
    assert a.shape == (0, 3) and b.shape == (0,) and a.dtype is F64
    c = FT.vmap(lambda r, w: r * w, in_dims=(1, None), out_dims=1)(
        tgrad.zeros(3, 0, dtype=F64), _t([1.0, 2.0, 3.0]))
    assert c.shape == (3, 0)


def test_jacfwd_randomness_modes():
    x = _t([1.0, 2.0])

    def f(v):
        return v * tgrad.rand(2, dtype=F64)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in "
                                           "randomness error mode"):
        FT.jacfwd(f)(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        FT.jacfwd(f, randomness="foo")(x)
    tgrad.manual_seed(3)
    r = tgrad.rand(2, dtype=F64).numpy()
    tgrad.manual_seed(3)
    # 'same': every basis vector sees the one draw r, J = diag(r)
    np.testing.assert_array_equal(FT.jacfwd(f, randomness="same")(x).numpy(), np.diag(r))
    tgrad.manual_seed(3)
    j = FT.jacfwd(f, randomness="different")(x).numpy()
    assert j[0, 1] == 0 and j[1, 0] == 0 and j[0, 0] == r[0] and j[1, 1] != r[1]


def test_vmap_in_dims_and_out_dims_broadcast_as_pytree_prefixes():
    a, b, c = np.arange(12.0).reshape(3, 4), np.ones((3, 4)) * 2, np.arange(12.0).reshape(4, 3)
    # (0, 1) covers the pair (a, b) with 0 and c with 1 (PyTorch's prefix broadcasting)
    out = FT.vmap(lambda p: p[0][0] * p[0][1] + p[1], in_dims=((0, 1),))(
        ((_t(a), _t(b)), _t(c)))
    np.testing.assert_array_equal(out.numpy(), a * b + c.T)
    # a dict of in_dims is paired with the argument's entries by key, not by position
    out = FT.vmap(lambda d: d["a"] - d["b"], in_dims=({"b": 1, "a": 0},))(
        {"a": _t(a), "b": _t(c)})
    np.testing.assert_array_equal(out.numpy(), a - c.T)
    with pytest.raises(ValueError, match=re.escape(
            "in_dims is not compatible with the structure of `inputs`. in_dims has structure "
            "((*, *),) but inputs has structure ([*, *],).")):
        FT.vmap(lambda p: p[0], in_dims=((0, 1),))([_t(a), _t(c)])
    with pytest.raises(ValueError, match=re.escape(
            "Got in_dim=0.0 for an input but in_dim must be either an integer dimension or "
            "None.")):
        FT.vmap(lambda r: r, in_dims=(0.0,))(_t(a))
    # out_dims (1, 0): the pair of outputs goes out along dim 1, the sum along dim 0
    (p, q), s = FT.vmap(lambda r: ((r, r * 2), r.sum()), out_dims=(1, 0))(_t(a))
    np.testing.assert_array_equal(p.numpy(), a.T)
    np.testing.assert_array_equal(q.numpy(), 2 * a.T)
    np.testing.assert_array_equal(s.numpy(), a.sum(1))
    calls = []
    with pytest.raises(ValueError, match=re.escape(
            "vmap(<lambda>, ..., out_dims=('x',)): `out_dims` must be an int, None or a python "
            "collection of ints")):
        FT.vmap(lambda r: calls.append(r) or r, out_dims=("x",))(_t(a))
    assert calls == []  # checked before f runs, as PyTorch
    with pytest.raises(ValueError, match=re.escape(
            "got sizes [3, 3, 4] for the mapped dimension")):
        FT.vmap(lambda x, y, z: x)(_t(a), _t(b), _t(c))


def test_vmap_non_tensor_outputs_with_out_dims_none():
    a = np.arange(6.0).reshape(3, 2)
    t, n, s = FT.vmap(lambda r: (r * 2, 3, None), out_dims=(0, None, None))(_t(a))
    np.testing.assert_array_equal(t.numpy(), 2 * a)
    assert n == 3 and s is None
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>"):
        FT.vmap(lambda r: (r * 2, 3))(_t(a))
    with pytest.raises(ValueError, match="non-Tensor output 0.0 for one batch element"):
        FT.vmap(lambda r: float(r[0]), out_dims=None)(_t(a))


def test_vmap_data_dependent_output_shapes_and_structures_raise():
    x = _t([[1.0, -1.0], [1.0, 2.0]])
    with pytest.raises(RuntimeError, match=re.escape(
            "returned outputs of different shapes for different batch elements ([1] and "
            "[2])")):
        FT.vmap(lambda r: r[r > 0])(x)
    with pytest.raises(ValueError, match="returned outputs of different structures"):
        FT.vmap(lambda r: r if bool(r[1] < 0) else (r, r))(x)


def test_vmap_in_place_on_an_unmapped_input_raises_after_the_first_element():
    a = np.arange(6.0).reshape(3, 2)
    w = _t([10.0, 20.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "modified in place an input that is not mapped (in_dim None)")):
        FT.vmap(lambda r, v: v.add_(r), in_dims=(0, None))(_t(a), w)
    np.testing.assert_array_equal(w.numpy(), [10.0, 20.0] + a[0])  # once, not 3 times
    # in place on the mapped input writes through to it (PyTorch's vmap does too)
    x = _t(a)
    out = FT.vmap(lambda r, v: r.mul_(v), in_dims=(0, None))(x, _t([2.0, 3.0]))
    np.testing.assert_array_equal(x.numpy(), a * [2.0, 3.0])
    np.testing.assert_array_equal(out.numpy(), a * [2.0, 3.0])


def test_vmap_over_an_empty_batch_of_matrices_for_linalg():
    # zeros would be singular: the shapes come from identity stand-ins
    inv = FT.vmap(tgrad.linalg.inv)(tgrad.zeros(0, 3, 3, dtype=F64))
    assert inv.shape == (0, 3, 3) and inv.dtype is F64
    sol = FT.vmap(tgrad.linalg.solve)(tgrad.zeros(0, 3, 3, dtype=F64),
                                      tgrad.zeros(0, 3, dtype=F64))
    assert sol.shape == (0, 3)
    with pytest.raises(ValueError, match="Expected primal to be floating point or complex, "
                                         "but got: tgrad.int64"):
        FT.jacfwd(lambda r: r * 2)(tgrad.tensor([1, 2]))


def test_vjp_and_jacrev_refuse_integer_outputs():
    # PyTorch: an integer output would only get zero gradients, so vjp (and jacrev, built on
    # it) raise
    x = tgrad.tensor([1.0, 2.0, 3.0])
    msg = ("vjp\\(f, ...\\): All outputs of f must be floating-point or complex Tensors, "
           "got Tensor with dtype tgrad.int64")
    for call in (lambda: FT.vjp(lambda a: (a > 1).long(), x),
                 lambda: FT.vjp(lambda a: (a * 2, (a > 1).long()), x),
                 lambda: FT.jacrev(lambda a: (a > 1).long())(x)):
        with pytest.raises(RuntimeError, match=msg):
            call()
    np.testing.assert_array_equal(FT.jacrev(lambda a: a * 2)(x).numpy(), 2 * np.eye(3))


def test_jvp_of_jvp_gives_second_directional_derivatives():
    # torch.func nests jvp; tgrad's forward AD holds one level, so the inner jvp runs by
    # reverse passes (the double-vjp trick) inside the outer level. Reference: the
    # analytic second derivatives (NumPy float64), and finite differences of the inner jvp.
    rng = np.random.default_rng(4)
    x, v, w = (rng.standard_normal(4) for _ in range(3))
    tx, tv, tw = (tgrad.tensor(a, dtype=tgrad.float64) for a in (x, v, w))

    def f(y):  # two outputs, one not elementwise
        return y ** 3, y.sin() * y.sum()

    def inner(y):
        return FT.jvp(f, (y,), (tv,))[1]

    (d1a, d1b), (d2a, d2b) = FT.jvp(inner, (tx,), (tw,))
    np.testing.assert_allclose(d1a.numpy(), 3 * x ** 2 * v, rtol=1e-14)
    np.testing.assert_allclose(d2a.numpy(), 6 * x * v * w, rtol=1e-13)
    # d/dy [cos(y) v S + sin(y) sum(v)] along w, S = sum(y)
    s = x.sum()
    want_b = (-np.sin(x) * v * w * s + np.cos(x) * v * w.sum() + np.cos(x) * w * v.sum())
    np.testing.assert_allclose(d2b.numpy(), want_b, rtol=1e-12, atol=1e-14)
    h = 1e-6
    fd = (inner(tgrad.tensor(x + h * w, dtype=tgrad.float64))[1].numpy()
          - inner(tgrad.tensor(x - h * w, dtype=tgrad.float64))[1].numpy()) / (2 * h)
    np.testing.assert_allclose(d2b.numpy(), fd, rtol=1e-6, atol=1e-8)
    # a primal that requires grad: the nested result differentiates in reverse mode too
    xg = tgrad.tensor(x, dtype=tgrad.float64, requires_grad=True)
    _, (d2, _) = FT.jvp(inner, (xg,), (tw,))
    (g,) = tgrad.autograd.grad(d2.sum(), xg)
    np.testing.assert_allclose(g.numpy(), 6 * v * w, rtol=1e-13)


def test_captured_tensors_that_require_grad_keep_the_graph():
    # PyTorch's transforms lift tensors f captures: a gradient penalty through a model's
    # parameters, grad of grad over a closure, jacrev of grad. tgrad detached the results
    # whenever the differentiated inputs did not require grad, which dropped those terms
    # (w.grad missed the penalty; the mixed partials came out 0)
    f64 = tgrad.float64
    wv, xv = np.array([0.5, -1.0, 2.0, 0.3]), np.array([1.5, 0.2, -0.7, 1.1])
    w = tgrad.tensor(wv, dtype=f64, requires_grad=True)
    x = tgrad.tensor(xv, dtype=f64)
    g = FT.grad(lambda z: (z * w).tanh().sum())(x)  # d/dz = w sech^2(z w)
    assert g.requires_grad
    ((x * w).sum() + (g ** 2).sum()).backward()
    # d/dw of sum_i (w_i sech^2(x_i w_i))^2 = 2 w s^2 (s^2 - 2 w x s^2 tanh), s = sech(x w)
    s2 = 1 / np.cosh(xv * wv) ** 2
    want = xv + 2 * wv * s2 * (s2 - 2 * wv * xv * s2 * np.tanh(xv * wv))
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-13)
    # grad over grad of a closure: d/dw_i [x0_i cos(x0_i w_i)] = -x0_i^2 sin(x0_i w_i)
    x0 = tgrad.tensor(wv, dtype=f64)
    mixed = FT.grad(lambda v: FT.grad(lambda z: (z * v).sin().sum())(x0).sum())(
        tgrad.tensor(xv, dtype=f64))
    np.testing.assert_allclose(mixed.numpy(), np.cos(wv * xv) - wv * xv * np.sin(wv * xv),
                               rtol=1e-13)
    assert not mixed.requires_grad  # (the outermost result carries no graph)
    jac = FT.jacrev(lambda v: FT.grad(lambda z: (z * v).sin().sum())(x0))(
        tgrad.tensor(xv, dtype=f64))
    np.testing.assert_allclose(jac.numpy(), np.diag(np.cos(wv * xv) - wv * xv
                                                    * np.sin(wv * xv)), rtol=1e-13)
    out, vjp_fn = FT.vjp(lambda z: (z * w).sin(), x)
    assert out.requires_grad  # (w's graph)


def test_vjp_fn_is_differentiable_in_the_cotangent():
    # the double-vjp trick: the vjp of u -> vjp_fn(u) is J v (PyTorch's)
    f64 = tgrad.float64
    xv, vv = np.array([0.5, -1.0, 2.0, 0.3]), np.array([1.5, 0.2, -0.7, 1.1])
    f = lambda z: z.exp() * z.cumsum(0)  # noqa: E731
    _, vjp_fn = FT.vjp(f, tgrad.tensor(xv, dtype=f64))
    _, vv_fn = FT.vjp(lambda u: vjp_fn(u)[0], tgrad.zeros(4, dtype=f64))
    (jv,) = vv_fn(tgrad.tensor(vv, dtype=f64))
    # J = d f / d x: f_i = e^{x_i} c_i, c = cumsum(x); J_ij = e^{x_i} (delta_ij c_i + [j <= i])
    c = np.cumsum(xv)
    jmat = np.exp(xv)[:, None] * (np.diag(c) + np.tril(np.ones((4, 4))))
    np.testing.assert_allclose(jv.numpy(), jmat @ vv, rtol=1e-13)
    np.testing.assert_allclose(FT.jacrev(lambda u: vjp_fn(u)[0])(tgrad.tensor(vv, dtype=f64))
                               .numpy(), jmat.T, rtol=1e-13)
    assert vjp_fn(tgrad.tensor(vv, dtype=f64, requires_grad=True))[0].requires_grad


def test_backward_inside_a_transform_raises_as_pytorch():
    # the transform owns the graph of f: a .backward() there would fill .grad with a
    # gradient the transform never sees (PyTorch raises)
    w = tgrad.tensor([1.0, 2.0], requires_grad=True)

    def f(x):
        (x * w).sum().backward()
        return (x * x).sum()

    for transform in (FT.grad, FT.vmap):
        with pytest.raises(RuntimeError, match="backward\\(\\) called inside a functorch "
                                               "transform"):
            transform(f)(tgrad.ones(2) if transform is FT.grad else tgrad.ones(3, 2))
    assert w.grad is None
    (w * 2).sum().backward()  # (outside a transform, as ever)
    assert w.grad.tolist() == [2.0, 2.0]


def test_an_ordered_dict_stays_one():
    # PyTorch's pytree keeps the container type (a state_dict is an OrderedDict)
    from collections import OrderedDict
    params = OrderedDict(a=tgrad.tensor([1.0, 2.0]), b=tgrad.tensor(3.0))
    g = FT.grad(lambda p: (p["a"] ** 2).sum() * p["b"])(params)
    assert type(g) is OrderedDict and list(g) == ["a", "b"]
    assert g["a"].tolist() == [6.0, 12.0] and g["b"].item() == 5.0
    out = FT.vmap(lambda x: OrderedDict(y=x * 2))(tgrad.ones(3))
    assert type(out) is OrderedDict and out["y"].tolist() == [2.0, 2.0, 2.0]


# ----------------------------------------------------------- grad modes around a transform
def _cube_sum(x):
    return (x ** 3).sum()


def test_transforms_differentiate_inside_inference_mode():
    # PyTorch's torch.func differentiates under inference_mode too (tgrad's transforms
    # recorded nothing there: every gradient, Jacobian and tangent came out zeros)
    a = np.array([1.0, 2.0])
    x = tgrad.tensor(a)
    ones = tgrad.ones(2, dtype=tgrad.float64)
    with tgrad.inference_mode():
        np.testing.assert_array_equal(FT.grad(_cube_sum)(x).numpy(), 3 * a ** 2)
        np.testing.assert_array_equal(FT.jvp(lambda x: x ** 3, (x,), (ones,))[1].numpy(),
                                      3 * a ** 2)
        np.testing.assert_array_equal(FT.vjp(lambda x: x ** 3, x)[1](ones)[0].numpy(),
                                      3 * a ** 2)
        for jac in (FT.jacrev, FT.jacfwd):
            np.testing.assert_array_equal(jac(lambda x: x ** 3)(x).numpy(), np.diag(3 * a ** 2))
        np.testing.assert_array_equal(FT.hessian(_cube_sum)(x).numpy(), np.diag(6 * a))
        assert tgrad.is_inference_mode_enabled()  # restored after each transform


def test_transforms_under_no_grad_return_results_without_a_graph():
    # PyTorch: under no_grad the results of grad / jacrev / vjp / jvp carry no graph even
    # when the input requires grad (tgrad's kept it: g.sum().backward() filled x.grad)
    a = np.array([1.0, 2.0])
    x = tgrad.tensor(a, requires_grad=True)
    ones = tgrad.ones(2, dtype=tgrad.float64)
    with tgrad.no_grad():
        g = FT.grad(_cube_sum)(x)
        results = [g, FT.jacrev(lambda x: x ** 3)(x), FT.vjp(lambda x: x ** 3, x)[1](ones)[0],
                   FT.jvp(lambda x: x ** 3, (x,), (ones,))[1], FT.hessian(_cube_sum)(x)]
    for r in results:
        assert not r.requires_grad and r.grad_fn is None
    np.testing.assert_array_equal(g.numpy(), 3 * a ** 2)
    np.testing.assert_array_equal(results[-1].numpy(), np.diag(6 * a))
    assert FT.grad(_cube_sum)(x).requires_grad  # grad mode on: the graph is kept, as before
