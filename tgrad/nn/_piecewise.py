"""``_Attach``: a piecewise-linear nn op's gradient made part of its input's graph under
create_graph=True, as PyTorch's is.

PyTorch's backward of leaky_relu, hardtanh/relu6, threshold, prelu, rrelu, softshrink,
hardshrink, the max/avg (and adaptive) poolings and reflect/replicate pad is a function of
the incoming gradient g *and* of the input x (its mask, slope, window or argmax come from x):
under create_graph the gradient it returns requires grad whenever x does, and a second
backward reaches x. That gradient, dx = J(x) g with J piecewise constant in x, is linear in g
and has d(dx)/dx = 0 almost everywhere, so the second backward gives x zeros (PyTorch's
``self: zeros_like(self)`` double-backward rule).

tgrad writes these backwards with ``where`` over bool masks, index_select, index_add...,
whose gradients depend on g alone: with a g that needs no grad (``autograd.grad(y.sum(), x,
create_graph=True)``) the gradient would not require grad and a second backward would raise.
Each such backward returns ``_Attach.apply(dx, x)``: dx's values, part of x's graph:
d(dx)/dg = identity, d(dx)/dx = 0."""

from __future__ import annotations

from tgrad.autograd.function import Function
from tgrad.ops.creation import zeros


class _Attach(Function):
    """out = g, with x an input of the graph only;  d(out)/dg = identity, d(out)/dx = 0
    (zeros, as PyTorch's zeros_like(self), so a leaf x gets a zero gradient, not None)."""

    name = "piecewise_attach"
    node_name = "PiecewiseAttachBackward0"

    @staticmethod
    def forward(ctx, g, x):
        ctx.x_meta = (tuple(x.shape), x.dtype, x.device)
        return g

    @staticmethod
    def backward(ctx, gg):
        shape, dtype, device = ctx.x_meta
        return gg, (zeros(shape, dtype=dtype, device=device) if ctx.needs_input_grad[1]
                    else None)
