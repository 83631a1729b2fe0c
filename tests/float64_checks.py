"""Helpers shared by the composite-op test files (test_more_ops.py,
test_math_composites.py): float64 tensors from NumPy data, a shape-and-value comparison
against a NumPy reference, and gradcheck + gradgradcheck in one call."""

from __future__ import annotations

import numpy as np

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck


def t(values, **kw) -> tgrad.Tensor:
    """A tensor of ``values``: float data as float64, other kinds as they are."""
    a = np.asarray(values)
    return tgrad.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a, **kw)


def to_numpy(x: tgrad.Tensor) -> np.ndarray:
    return np.asarray(x.detach().numpy())


def same(got: tgrad.Tensor, want, rtol: float = 1e-12, atol: float = 1e-300) -> None:
    """Equal shapes; integer/bool values exactly, floats within rtol/atol (NaN == NaN)."""
    want = np.asarray(want)
    g = to_numpy(got)
    assert g.shape == want.shape, (g.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(g, want)
    else:
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)


def leaf(a) -> tgrad.Tensor:
    """A float64 leaf that requires grad."""
    return tgrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def checks(fn, *inputs) -> None:
    """gradcheck and gradgradcheck of fn at ``inputs`` (float64 leaves)."""
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)
