"""Module full backward hooks (PyTorch's ``register_full_backward_hook`` /
``register_full_backward_pre_hook``).

The module's tensor inputs that require grad and its tensor outputs pass through identity
nodes whose backward calls the hooks: the outputs' node runs the pre-hooks on
``grad_output`` (one entry per output, None where an output got no gradient or is not a
tensor), the inputs' node runs the hooks on ``(grad_input, grad_output)`` once the
gradients of all inputs are known (one entry per positional argument: None for numbers,
zeros for tensors that need no gradient, as PyTorch). A hook's non-None result replaces
the gradients it was given (those of the inputs that need one).
"""

from __future__ import annotations

import warnings

from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE
from tgrad.tensor import Tensor


def zeros_like(t: Tensor) -> Tensor:
    from tgrad.ops.creation import zeros_like as _zeros_like  # (import cycle)
    return _zeros_like(t)


class BackwardHookFunction(Function):
    """Identity over tensors; backward returns ``callback(grads)``."""

    name = "backward_hook"
    node_name = "BackwardHookFunctionBackward"
    returns_views = True  # PyTorch's is a Python Function: in-place on its outputs raises

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.callback(grads))


def _replaced(new, old: tuple, what: str) -> tuple:
    new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
    if len(new) != len(old):  # PyTorch's text
        raise RuntimeError(f"Backward hook returned an invalid number of {what}, got "
                           f"{len(new)}, but expected {len(old)}")
    return new


def _through_identity(callback, values: tuple, positions: list) -> list:
    """``values`` with those at ``positions`` replaced by their aliases from one
    BackwardHookFunction node, whose backward calls ``callback`` on their gradients."""
    wrapped = BackwardHookFunction.apply(callback, *[values[i] for i in positions])
    out = list(values)
    for i, t in zip(positions, wrapped):
        out[i] = t
    return out


def _is_grad_tensor(a) -> bool:
    return isinstance(a, Tensor) and a.requires_grad


class BackwardHook:
    """The identity nodes of one module call (PyTorch's torch.utils.hooks.BackwardHook):
    ``setup_input_hook(args)`` before forward, ``setup_output_hook(out)`` after the forward
    hooks (so grad_output is the gradient of the output the caller gets)."""

    def __init__(self, module, hooks: dict, pre_hooks: dict) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.args: tuple = ()
        self.wanted: list = []
        self.grad_output = None

    def setup_input_hook(self, args: tuple) -> tuple:
        """args with the tensors that require grad replaced by hooked aliases."""
        self.args = args
        self.wanted = wanted = [i for i, a in enumerate(args) if _is_grad_tensor(a)]
        if not (wanted and self.hooks and STATE.enabled):
            return args
        return tuple(_through_identity(self._on_inputs, args, wanted))

    def _on_inputs(self, grads: tuple) -> tuple:
        if self.grad_output is None:
            # the gradient reached the inputs without passing through the hooked outputs
            # (outputs in a list or dict, or a double backward): PyTorch skips the hooks
            return grads
        # one entry per positional argument: None for numbers, zeros for tensors that
        # need no gradient or got none (PyTorch's)
        wanted = self.wanted
        by_pos = dict(zip(wanted, grads))
        grad_input = tuple(zeros_like(a) if isinstance(a, Tensor) and by_pos.get(i) is None
                           else by_pos.get(i) for i, a in enumerate(self.args))
        replaced = False
        for hook in list(self.hooks.values()):
            res = hook(self.module, grad_input, self.grad_output)
            if res is not None:
                grad_input, replaced = _replaced(res, grad_input, "grad_input"), True
        # (the zeros shown for inputs that got no gradient are not passed on: their .grad
        # stays None unless a hook replaced it; PyTorch accumulates the zeros)
        return tuple(grad_input[i] for i in wanted) if replaced else grads

    def setup_output_hook(self, out):
        """out (a tensor or a tuple) with the tensors that require grad replaced by hooked
        aliases."""
        if not STATE.enabled:
            return out
        outs = out if isinstance(out, tuple) else (out,)
        out_pos = [i for i, o in enumerate(outs) if _is_grad_tensor(o)]
        if not out_pos:
            return out
        n_args, n_outs = len(self.args), len(outs)

        def on_outputs(grads: tuple) -> tuple:
            # one entry per output: None for outputs without gradient
            by_pos = dict(zip(out_pos, grads))
            grad_output = tuple(by_pos.get(i) for i in range(n_outs))
            for hook in list(self.pre_hooks.values()):
                res = hook(self.module, grad_output)
                if res is not None:
                    grad_output = _replaced(res, grad_output, "grad_output")
            self.grad_output = grad_output
            if not self.wanted and self.hooks:  # nothing upstream will call them: now
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients.",
                              UserWarning, stacklevel=2)
                for hook in list(self.hooks.values()):
                    hook(self.module, (None,) * n_args, grad_output)
            return tuple(grad_output[i] for i in out_pos)

        new = _through_identity(on_outputs, outs, out_pos)
        return tuple(new) if isinstance(out, tuple) else new[0]
