"""Parameter initialisation (``tgrad.nn.init``), PyTorch's formulas.

Every function fills its tensor in place without recording a graph and returns it. The
random ones take PyTorch's ``generator=`` (a tgrad.Generator of the tensor's device type).
fan_in / fan_out of a weight of shape (out, in, *kernel) are in*k and out*k, k = prod(kernel).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

from tgrad.autograd.grad_mode import no_grad
from tgrad.generator import Generator
from tgrad.ops.erfs import _erfinv  # noqa: F401  (tests import it from here)
from tgrad.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "orthogonal_", "dirac_", "sparse_"]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table; the linear ones and sigmoid
    give the int 1, as PyTorch)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {list(tensor.shape)})")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _layer_default_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and ConvNd: weight ~ kaiming_uniform_(a=sqrt(5)),
    bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (zeros when fan_in is 0)."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = _calculate_fan_in_and_fan_out(weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def _fan(tensor: Tensor, mode: str) -> int:
    """fan_in or fan_out by ``mode``, in any case ('FAN_IN' too, as PyTorch lowers it)."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of "
                         f"{['fan_in', 'fan_out']}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill_from(tensor: Tensor, values: Tensor) -> Tensor:
    with no_grad():
        tensor.copy_(values)
    return tensor


def _check_float(fn: str, tensor: Tensor, random: bool = False,
                 complex_ok: bool = False) -> None:
    """TypeError unless ``tensor`` is a Tensor; with ``random`` (the sampling fills), also
    NotImplementedError unless its dtype is floating (or, with ``complex_ok``, complex), as
    PyTorch's uniform_ / normal_ kernels (an integer or bool tensor cannot hold the
    samples)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn}: expected a Tensor, got {type(tensor).__name__}")
    dt = tensor.dtype
    if random and not (dt.is_floating_point or (complex_ok and dt.is_complex)):
        raise NotImplementedError(f"nn.init.{fn}: random initialisation is not implemented "
                                  f"for dtype {dt} (a floating dtype is needed"
                                  f"{', or a complex one' if complex_ok else ''})")


def _real_samples(kind: str, tensor: Tensor, generator: Generator | None) -> Tensor:
    """float64 samples (``kind`` 'rand' or 'randn') for each real number of ``tensor``: its
    shape, or for a complex tensor its shape + (2,) (real, imaginary: PyTorch fills
    ``view_as_real(tensor)``)."""
    from tgrad.ops import creation
    shape = tuple(tensor.shape) + ((2,) if tensor.dtype.is_complex else ())
    return getattr(creation, kind)(shape, generator=generator, dtype="float64",
                                   device=tensor.device)


def _as_tensor_dtype(tensor: Tensor, values: Tensor) -> Tensor:
    """``values`` (float64, from ``_real_samples``) as ``tensor``'s values: pairs made
    complex for a complex tensor."""
    if tensor.dtype.is_complex:
        from tgrad.ops.complex_ops import view_as_complex
        return view_as_complex(values.contiguous())
    return values


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with samples of U(a, b) (drawn from ``generator`` when given); a complex
    tensor gets independent U(a, b) real and imaginary parts, as PyTorch.

    Raises RuntimeError, as PyTorch, when a > b or a bound is not finite, and
    NotImplementedError for an integer or bool tensor."""
    _check_float("uniform_", tensor, random=True, complex_ok=True)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise RuntimeError(f"uniform_ expects finite bounds, but found from={a} and to={b}")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    with no_grad():  # (Tensor.uniform_'s sampling: a half tensor never gets b)
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with samples of N(mean, std^2) (drawn from ``generator`` when given). A complex
    tensor, as PyTorch, gets real and imaginary parts each N(mean, std^2 / 2), independent
    (so E|z - mean (1 + i)|^2 = std^2).

    Raises RuntimeError, as PyTorch, when std < 0 (checked before the dtype), and
    NotImplementedError for an integer or bool tensor."""
    if not isinstance(tensor, Tensor):
        _check_float("normal_", tensor)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if tensor.numel() != 0:  # nothing to draw: any dtype, as PyTorch's normal_ kernel
        _check_float("normal_", tensor, random=True, complex_ok=True)
    part_std = std / math.sqrt(2.0) if tensor.dtype.is_complex else std
    n = _real_samples("randn", tensor, generator)
    return _fill_from(tensor, _as_tensor_dtype(tensor, n * part_std + mean))


def constant_(tensor: Tensor, val: float) -> Tensor:
    _check_float("constant_", tensor)
    with no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones at [i, i], i < min(rows, cols))."""
    from tgrad.ops.creation import eye
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill_from(tensor, eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan).

    A tensor with a zero-size dim is returned unchanged with a UserWarning, before ``mode``
    and ``nonlinearity`` are checked (PyTorch's order)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan).

    A tensor with a zero-size dim is returned unchanged with a UserWarning, before ``mode``
    and ``nonlinearity`` are checked (PyTorch's order)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples of N(mean, std^2) truncated to [a, b] (a and b are values, not
    numbers of std), by the inverse CDF: with alpha, beta = (a - mean) / std,
    (b - mean) / std, u ~ U(Phi(alpha), Phi(beta)) and x = clamp(mean + std Phi^-1(u), a, b).
    When [alpha, beta] lies mostly above 0 the mirrored interval [-beta, -alpha] is sampled
    and negated, so Phi and Phi^-1 (``ndtri``) work where Phi is small and exact to float64:
    intervals far out in one tail (e.g. [9, 10] std) keep the right law instead of
    collapsing onto a bound; beyond ~36 std, where Phi underflows, Phi^-1 is solved in log
    space. PyTorch samples the same law by rejection; tgrad draws one float64 uniform per
    element from tgrad's generator (``tgrad.manual_seed`` replays it).

    Raises RuntimeError when a > b (as PyTorch), NotImplementedError for a non-floating
    tensor; warns when mean is more than 2 std outside [a, b]."""
    from tgrad.ops.creation import rand
    from tgrad.ops.elementwise import clamp
    from tgrad.ops.erfs import ndtri
    _check_float("trunc_normal_", tensor, random=True)
    if a > b:
        raise RuntimeError(f"trunc_normal_ expects a <= b, but found a={a} > b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    alpha, beta = (a - mean) / std, (b - mean) / std
    sign = 1.0
    if alpha + beta > 0:  # mirror into the lower half, where Phi keeps its precision
        alpha, beta, sign = -beta, -alpha, -1.0

    def cdf(x: float) -> float:  # Phi(x) via erfc: relative precision in the lower tail
        return 0.5 * math.erfc(-x / math.sqrt(2.0))
    lo, hi = cdf(alpha), cdf(beta)
    with no_grad():
        u = rand(tensor.shape, generator=generator, dtype="float64", device=tensor.device)
        if hi > 1e-290:
            z = ndtri(u * (hi - lo) + lo)
        else:  # beyond ~36 std Phi underflows: solve log Phi(z) = target in log space
            z = _deep_tail_ndtri(u, alpha, beta)
        x = clamp(z * (sign * std) + mean, a, b)
    return _fill_from(tensor, x)


def _deep_tail_ndtri(u: Tensor, alpha: float, beta: float) -> Tensor:
    """z in [alpha, beta] (beta < -36) with Phi(z) = Phi(alpha) + u (Phi(beta) - Phi(alpha)),
    in log space: target t = log Phi(beta) + log(u + (1 - u) Phi(alpha) / Phi(beta)), then
    Newton on the concave log Phi from the exponential-tail start, which converges
    monotonically (6 steps reach float64)."""
    from tgrad.ops.erfs import log_ndtr
    log_hi = _log_ndtr_scalar(beta)
    ratio = math.exp(_log_ndtr_scalar(alpha) - log_hi)
    t = (u + (1 - u) * ratio).log() + log_hi
    z = (u + (1 - u) * ratio).log() / -beta + beta  # Phi(z) ~ Phi(beta) e^{-beta (beta - z)}
    for _ in range(6):
        lz = log_ndtr(z)
        # d/dz log Phi(z) = phi(z) / Phi(z) = exp(log phi(z) - log Phi(z))
        slope = (z * z * -0.5 - 0.5 * math.log(2 * math.pi) - lz).exp()
        z = z + (t - lz) / slope
    return z.clamp(alpha, beta)


def _log_ndtr_scalar(x: float) -> float:
    """log Phi(x) of a Python float, finite far into the lower tail."""
    from tgrad.ops.creation import tensor as as_tensor
    from tgrad.ops.erfs import log_ndtr
    return float(log_ndtr(as_tensor(x, dtype="float64")).item())


def orthogonal_(tensor: Tensor, gain: float = 1.0,
                generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times ``gain``: the tensor is viewed as
    (rows, cols) = (shape[0], numel / shape[0]); its rows (rows <= cols) or columns are
    orthonormal. As PyTorch: Q of the QR decomposition of a standard normal matrix (from
    tgrad's generator, float64), its columns' signs fixed by sign(diag(R)). The QR runs on
    the host in NumPy float64; the result is copied to the tensor's device and dtype."""
    import numpy as np

    from tgrad.ops.creation import randn
    from tgrad.ops.creation import tensor as as_tensor
    _check_float("orthogonal_", tensor)
    if tensor.ndim < 2:  # (checked before the dtype, as PyTorch)
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:  # a no-op for any dtype, as PyTorch
        return tensor
    _check_float("orthogonal_", tensor, random=True)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = randn((rows, cols), generator=generator, dtype="float64",
                 device=tensor.device).cpu().numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    q = as_tensor(np.ascontiguousarray(q * gain).reshape(tuple(tensor.shape)),
                  dtype="float64", device=tensor.device)
    return _fill_from(tensor, q)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight (out, in, *kernel) with the Dirac delta, so
    the convolution is the identity on as many channels as possible: zeros except
    w[g * (out / groups) + d, d, k_1 // 2, ...] = 1 for each group g and
    d < min(out / groups, in)."""
    import numpy as np

    from tgrad.ops.creation import tensor as as_tensor
    _check_float("dirac_", tensor)
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    centre = tuple(k // 2 for k in shape[2:])
    delta = np.zeros(shape)
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            delta[(g * out_per_group + d, d) + centre] = 1.0
    return _fill_from(tensor, as_tensor(delta, dtype=tensor.dtype, device=tensor.device))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Generator | None = None) -> Tensor:
    """Fill a 2-D tensor (rows, cols) as a sparse matrix (Martens 2010, as PyTorch):
    N(0, std^2) samples, then in each column ceil(sparsity * rows) entries, the first ones
    of a random permutation of the rows, set to zero. Draws (tgrad's generator, so
    ``tgrad.manual_seed`` replays them): one float64 normal per element on the tensor's
    device (from ``generator`` when given), then one ``randperm(rows)`` per column on the
    CPU from the global generator, as PyTorch."""
    import numpy as np

    from tgrad.ops.creation import empty, randperm, zeros_like
    from tgrad.ops.creation import tensor as as_tensor
    from tgrad.ops.elementwise import where
    _check_float("sparse_", tensor)
    if tensor.ndim != 2:  # (checked before the dtype, as PyTorch)
        raise ValueError("Only tensors with 2 dimensions are supported")
    if tensor.numel() == 0:  # only PyTorch's normal_ (any dtype, a version bump)
        return normal_(tensor, 0.0, std, generator)
    _check_float("sparse_", tensor, random=True, complex_ok=True)
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    # N(0, std^2) as normal_ draws it (a complex tensor: parts N(0, std^2 / 2))
    values = normal_(empty((rows, cols), dtype=tensor.dtype if tensor.dtype.is_complex
                           else "float64", device=tensor.device), 0.0, std, generator)
    keep = np.ones((rows, cols), dtype=bool)
    for col in range(cols):
        keep[randperm(rows).numpy()[:num_zeros], col] = False
    keep_t = as_tensor(keep, device=tensor.device)
    return _fill_from(tensor, where(keep_t, values, zeros_like(values)))


def _make_deprecate(meth: Callable[..., Tensor]) -> Callable[..., Tensor]:
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = (f"{old_name}(...): deprecated alias of ``{new_name}`` (warns "
                               f"FutureWarning), as PyTorch.")
    deprecated_init.__name__ = old_name
    return deprecated_init


# PyTorch's deprecated non-underscore names (not in __all__)
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
