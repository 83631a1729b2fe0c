"""``tgrad.nn.grad`` (PyTorch's ``torch.nn.grad``, also ``nn.functional.grad``): the
gradients of a convolution with respect to its input and its weight, given the gradient of
its output.

- ``conv{1,2,3}d_input(input_size, weight, grad_output, stride, padding, dilation, groups)``:
  dL/dinput of ``y = F.conv{n}d(input, weight, None, stride, padding, dilation, groups)``
  for dL/dy = ``grad_output``; a tensor of ``input_size``.
- ``conv{1,2,3}d_weight(input, weight_size, grad_output, ...)``: dL/dweight, of
  ``weight_size``.

A convolution is linear in each of input and weight, so these are its vector-Jacobian
products: tgrad differentiates ``F.conv{n}d`` at a zero input (weight) of the given size
with ``autograd.grad``. With grad mode on and ``weight`` / ``input`` or ``grad_output``
requiring grad, the result is recorded (differentiable again), as PyTorch's
convolution_backward.
"""

from __future__ import annotations

from tgrad.autograd.grad_mode import STATE, enable_grad
from tgrad.ops._common import require_tensor
from tgrad.tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _conv_fn(spatial: int):
    from tgrad.nn import functional as F  # noqa: N812
    return (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]


def _vjp(op: str, spatial: int, fixed: Tensor, size, grad_output: Tensor, wrt_input: bool,
         stride, padding, dilation, groups: int) -> Tensor:
    """grad_output's vector-Jacobian product with conv(., fixed) (or conv(fixed, .)) at a
    zero tensor of ``size``."""
    require_tensor(op, fixed)
    require_tensor(op, grad_output)
    from tgrad.autograd import grad
    from tgrad.ops.creation import zeros
    size = tuple(int(n) for n in size)
    record = STATE.enabled and (fixed.requires_grad or grad_output.requires_grad)
    with enable_grad():
        free = zeros(size, dtype=fixed.dtype, device=fixed.device, requires_grad=True)
        args = (free, fixed) if wrt_input else (fixed, free)
        out = _conv_fn(spatial)(*args, None, stride, padding, dilation, groups)
        if out.shape != grad_output.shape:
            what = (f"an input of size {list(size)} and weight of size {list(fixed.shape)}"
                    if wrt_input else
                    f"input of size {list(fixed.shape)} and a weight of size {list(size)}")
            raise RuntimeError(f"{op}: grad_output has size {list(grad_output.shape)}, but the "
                               f"convolution of {what} (stride={stride}, padding={padding}, "
                               f"dilation={dilation}, groups={groups}) has an output of size "
                               f"{list(out.shape)}; pass the gradient of that output")
        (g,) = grad(out, free, grad_output, create_graph=record)
    return g


def conv1d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0,
                 dilation=1, groups: int = 1) -> Tensor:
    """dL/dinput of conv1d(input, weight) for an input of ``input_size`` and dL/dout =
    ``grad_output`` (a transposed convolution of grad_output with weight)."""
    return _vjp("conv1d_input", 1, weight, input_size, grad_output, True, stride, padding,
                dilation, groups)


def conv1d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1,  # noqa: A002
                  padding=0, dilation=1, groups: int = 1) -> Tensor:
    """dL/dweight of conv1d(input, weight) for a weight of ``weight_size`` and dL/dout =
    ``grad_output`` (the correlation of input with grad_output)."""
    return _vjp("conv1d_weight", 1, input, weight_size, grad_output, False, stride, padding,
                dilation, groups)


def conv2d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0,
                 dilation=1, groups: int = 1) -> Tensor:
    """dL/dinput of conv2d(input, weight); see conv1d_input."""
    return _vjp("conv2d_input", 2, weight, input_size, grad_output, True, stride, padding,
                dilation, groups)


def conv2d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1,  # noqa: A002
                  padding=0, dilation=1, groups: int = 1) -> Tensor:
    """dL/dweight of conv2d(input, weight); see conv1d_weight."""
    return _vjp("conv2d_weight", 2, input, weight_size, grad_output, False, stride, padding,
                dilation, groups)


def conv3d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0,
                 dilation=1, groups: int = 1) -> Tensor:
    """dL/dinput of conv3d(input, weight); see conv1d_input."""
    return _vjp("conv3d_input", 3, weight, input_size, grad_output, True, stride, padding,
                dilation, groups)


def conv3d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1,  # noqa: A002
                  padding=0, dilation=1, groups: int = 1) -> Tensor:
    """dL/dweight of conv3d(input, weight); see conv1d_weight."""
    return _vjp("conv3d_weight", 3, input, weight_size, grad_output, False, stride, padding,
                dilation, groups)
