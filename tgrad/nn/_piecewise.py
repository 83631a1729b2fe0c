"""``tie``: the input of a piecewise-linear nn op, so that its gradient is part of the graph
under create_graph=True, as PyTorch's is.

PyTorch's backward of leaky_relu, hardtanh/relu6, threshold, prelu, rrelu, softshrink,
hardshrink, the max/avg (and adaptive) poolings and reflect/replicate pad is a function of
the incoming gradient g *and* of the input x (its mask, slope, window or argmax come from x):
under create_graph the gradient it returns requires grad whenever x does, and a second
backward reaches x. That gradient, dx = J(x) g with J piecewise constant in x, is linear in g
and has d(dx)/dx = 0 almost everywhere, so the second backward gives x zeros (PyTorch's
``self: zeros_like(self)`` double-backward rule).

tgrad composes these ops of ``where`` with bool masks, index_select, index_add..., whose
gradients depend on g alone: with a g that needs no grad (``autograd.grad(y.sum(), x,
create_graph=True)``) the gradient would not require grad and a second backward would raise.
Each op passes its input through ``tie`` once: y = x, dx = g (the composite's gradient), made
part of x's graph: d(dx)/dg = identity, d(dx)/dx = 0; an op that is one Function of its own
(the adaptive pools, reflect/replicate pad...) instead returns ``_Attach.apply(dx, x)`` from
its backward, the same tie made there.
"""

from __future__ import annotations

from tgrad.autograd.function import Function
from tgrad.ops.creation import zeros
from tgrad.tensor import Tensor


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


class _Tie(Function):
    """y = x;  dx = attach(g, x) (g's values, in the graph through x)."""

    name = "piecewise_tie"
    node_name = "PiecewiseTieBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _Attach.apply(g, x)


def tie(x: Tensor) -> Tensor:
    """``x`` (an alias) whose gradient is tied to x's graph under create_graph (see above);
    ``x`` itself when it needs no gradient."""
    if not (isinstance(x, Tensor) and x.requires_grad):
        return x
    return _Tie.apply(x)
