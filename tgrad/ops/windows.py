"""Window functions (PyTorch's torch.hann_window ... kaiser_window), computed in float64 on
the host and returned as a constant of ``dtype`` (default: the default dtype; floating
only) on ``device``. N is window_length; ``periodic=True`` (the default) computes the
symmetric window of length N + 1 and drops its last value (for spectral analysis), so with
M = N if periodic else N - 1, for n = 0 .. N-1:

- hann:     w[n] = 0.5 - 0.5 cos(2 pi n / M)
- hamming:  w[n] = alpha - beta cos(2 pi n / M)        (alpha 0.54, beta 0.46)
- blackman: w[n] = 0.42 - 0.5 cos(2 pi n / M) + 0.08 cos(4 pi n / M)
- bartlett: w[n] = 1 - |2 n / M - 1|
- kaiser:   w[n] = I0(beta sqrt(1 - ((n - M/2) / (M/2))^2)) / I0(beta)   (beta 12)

N = 0 gives an empty tensor and N = 1 a single 1 (PyTorch's). The formulas are shared
with ``tgrad.signal.windows`` (PyTorch's torch.signal.windows).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._layout import check_layout
from tgrad.tensor import Tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def general_cosine_formula(a) -> object:
    """w[n] = sum_i (-1)^i a_i cos(2 pi i n / M) as a function of (n, M) (hann: a = (0.5,
    0.5); hamming: (alpha, beta); blackman: (0.42, 0.5, 0.08))."""
    coefs = [float(c) for c in a]

    def formula(n: np.ndarray, m: float) -> np.ndarray:
        return sum((-1) ** i * c * np.cos(2 * np.pi * i * n / m) for i, c in enumerate(coefs))
    return formula


def bartlett_formula(n: np.ndarray, m: float) -> np.ndarray:
    """w[n] = 1 - |2 n / M - 1| (a triangle)."""
    return 1.0 - np.abs(2.0 * n / m - 1.0)


def kaiser_formula(beta: float) -> object:
    """w[n] = I0(beta sqrt(1 - ((n - M/2) / (M/2))^2)) / I0(beta) as a function of (n, M)."""
    def formula(n: np.ndarray, m: float) -> np.ndarray:
        r = (n - m / 2) / (m / 2)
        return np.i0(beta * np.sqrt(np.clip(1.0 - r * r, 0.0, None))) / np.i0(beta)
    return formula


def _window(op: str, window_length: int, periodic: bool, formula, dtype, device,
            requires_grad: bool, layout=None) -> Tensor:
    from tgrad.ops.creation import tensor
    check_layout(op, layout)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dt}")
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        w = np.ones(window_length)
    else:
        m = window_length if periodic else window_length - 1
        w = formula(np.arange(window_length, dtype=np.float64), float(m))
    return tensor(w, dtype=dt, device=device, requires_grad=requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / M)."""
    return _window("hann_window", window_length, periodic, general_cosine_formula((0.5, 0.5)),
                   dtype, device, requires_grad, layout)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """alpha - beta cos(2 pi n / M)."""
    return _window("hamming_window", window_length, periodic,
                   general_cosine_formula((alpha, beta)), dtype, device, requires_grad, layout)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / M) + 0.08 cos(4 pi n / M)."""
    return _window("blackman_window", window_length, periodic,
                   general_cosine_formula((0.42, 0.5, 0.08)), dtype, device, requires_grad,
                   layout)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Tensor:
    """1 - |2 n / M - 1| (a triangle)."""
    return _window("bartlett_window", window_length, periodic, bartlett_formula, dtype, device,
                   requires_grad, layout)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - ((n - M/2) / (M/2))^2)) / I0(beta)."""
    return _window("kaiser_window", window_length, periodic, kaiser_formula(beta), dtype,
                   device, requires_grad, layout)
