# ruff: noqa: N803, N806  (PyTorch names the window length M)
"""PyTorch's torch.signal.windows: window functions of length M, computed in float64 on the
host (the formulas tgrad.ops.windows shares with ``tgrad.hann_window`` ...) and returned as
a tensor of ``dtype`` (float32 or float64; default: the default dtype) on ``device``.

``sym=True`` (the default) gives the symmetric window (filter design), ``sym=False`` the
periodic one (spectral analysis). With N = M - 1 if sym else M, for n = 0 .. M-1:

- general_cosine(a): w[n] = sum_i (-1)^i a_i cos(2 pi i n / N); M = 1 gives [1]
- general_hamming(alpha): general_cosine with a = (alpha, 1 - alpha)
- hann: general_hamming(0.5); hamming: general_hamming(0.54)
- blackman: general_cosine with a = (0.42, 0.5, 0.08)
- nuttall: general_cosine with a = (0.3635819, 0.4891775, 0.1365995, 0.0106411)
- bartlett: w[n] = 1 - |2 n / N - 1|; M = 1 gives [1]
- kaiser(beta): w[n] = I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta); M = 1 gives [1]
- cosine: w[n] = sin(pi (n + 0.5) / K), K = M + 1 if not sym and M > 1 else M
- gaussian(std): w[n] = exp(-(n - c)^2 / (2 std^2)), c = N / 2 (N = M - 1 when M = 1)
- exponential(center, tau): w[n] = exp(-|n - c| / tau), c = center, default N / 2 (as
  gaussian's); a center with sym=True raises

M = 0 gives an empty tensor. Errors are PyTorch's (ValueError for a negative M, a dtype
other than float32/float64, a layout other than strided, std / tau <= 0, beta < 0). As in
PyTorch, hann, hamming and general_hamming report errors as ``general_cosine``.

Unlike PyTorch (whose windows are computed by differentiable ops from a linspace, so
``requires_grad=True`` gives a non-leaf with a grad_fn), ``requires_grad=True`` gives a leaf
tensor that requires grad, as ``tgrad.hann_window`` and the other factories do.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tgrad import _layout, dtypes
from tgrad.ops.windows import bartlett_formula, general_cosine_formula, kaiser_formula
from tgrad.tensor import Tensor, _int_arg

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M, dtype, layout) -> tuple:
    """PyTorch's _window_function_checks: (M as an int, the dtype)."""
    M = _int_arg(name, "M", M, 1)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not _layout.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dt not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return M, dt


def _finish(w: np.ndarray, dt, device, requires_grad: bool) -> Tensor:
    from tgrad.ops.creation import tensor
    return tensor(np.asarray(w, dtype=np.float64), dtype=dt, device=device,
                  requires_grad=requires_grad)


def _sampled(M: int, sym: bool, formula, dt, device, requires_grad: bool) -> Tensor:
    """formula(n, N) at n = 0 .. M-1, N = M - 1 if sym else M; [] for M = 0, [1] for 1."""
    if M <= 1:
        return _finish(np.ones(M), dt, device, requires_grad)
    return _finish(formula(np.arange(M, dtype=np.float64), float(M - 1 if sym else M)), dt,
                   device, requires_grad)


def _center(M: int, sym: bool) -> float:
    """The default centre (M - 1) / 2, or M / 2 for a periodic window of M > 1."""
    return (M if not sym and M > 1 else M - 1) / 2.0


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None,
                   layout=_layout.strided, device=None, requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / N)."""
    M, dt = _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _finish(np.ones(M), dt, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return _sampled(M, sym, general_cosine_formula(a), dt, device, requires_grad)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=_layout.strided, device=None,
                    requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / N)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=_layout.strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """0.54 - 0.46 cos(2 pi n / N)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=_layout.strided, device=None,
         requires_grad: bool = False) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / N) = sin^2(pi n / N)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=_layout.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=_layout.strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=_layout.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """1 - |2 n / N - 1|."""
    M, dt = _checks("bartlett", M, dtype, layout)
    return _sampled(M, sym, bartlett_formula, dt, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None,
           layout=_layout.strided, device=None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta)."""
    M, dt = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _sampled(M, sym, kaiser_formula(float(beta)), dt, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=_layout.strided, device=None,
           requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 0.5) / K), K = M + 1 for a periodic window of M > 1, else M."""
    M, dt = _checks("cosine", M, dtype, layout)
    k = M + 1 if not sym and M > 1 else M
    n = np.arange(M, dtype=np.float64)
    return _finish(np.sin(np.pi * (n + 0.5) / max(k, 1)), dt, device, requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None,
             layout=_layout.strided, device=None, requires_grad: bool = False) -> Tensor:
    """exp(-(n - c)^2 / (2 std^2)), c the window's centre."""
    M, dt = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    n = np.arange(M, dtype=np.float64)
    w = np.exp(-((n - _center(M, sym)) ** 2) / (2.0 * float(std) ** 2))
    return _finish(w, dt, device, requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=_layout.strided, device=None,
                requires_grad: bool = False) -> Tensor:
    """exp(-|n - c| / tau), c = ``center`` (periodic windows only) or the window's centre."""
    M, dt = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    c = _center(M, sym) if center is None else float(center)
    n = np.arange(M, dtype=np.float64)
    return _finish(np.exp(-np.abs(n - c) / float(tau)), dt, device, requires_grad)
