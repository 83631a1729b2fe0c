"""F.embedding's backward on the CPU: a (B, T) index takes the NumPy backend's whole-slice
accumulation (tgrad/backends/_numpy_scatter.py ``rows_at``, its index flattened in C order),
and padding_idx zeroes the pad row of the scattered sum instead of masking the gradient
(tgrad/nn/_composite.py ``_Embedding.backward``; the mask stays for create_graph and cuda).
Against the masked path (monkeypatched in): bit-identical weight gradients, NaN / inf / -0.0
in the output gradient (at the pad positions too), negative padding_idx, a pad index absent
from the input, scale_grad_by_freq, 0-d, 1-d and empty inputs, float32 / float64; against
a float64 np.add.at reference; gradcheck and gradgradcheck in float64 (create_graph: the
mask); the backend's gather at one integer array (np.take) against NumPy's indexing."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import _composite


def _grad(idx: np.ndarray, w_np: np.ndarray, g_np: np.ndarray, **kw) -> bytes:
    w = tgrad.tensor(w_np, requires_grad=True)
    F.embedding(tgrad.tensor(idx), w, **kw).backward(tgrad.tensor(g_np))
    return w.grad.numpy().tobytes()


def _inputs(ishape: tuple, num: int, dim: int, dt, pad_hits: bool, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    idx = rng.integers(1 if not pad_hits else 0, num, ishape)
    w = rng.standard_normal((num, dim)).astype(dt)
    g = rng.standard_normal(ishape + (dim,)).astype(dt)
    flat = g.reshape(-1)
    if flat.size:
        flat[::7] = -0.0
        flat[3::29] = np.inf
        flat[5::31] = np.nan
    return idx, w, g


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("ishape, padding_idx, pad_hits, scale", [
    ((32, 128), 0, True, False), ((32, 128), None, True, False), ((32, 128), -3, True, False),
    ((7, 9), 2, True, True), ((40,), 1, False, False), ((), 0, True, False),
    ((0, 5), 0, True, False), ((300,), 4, True, True)])
def test_padding_idx_fast_path_is_the_masked_sum(monkeypatch, dt, ishape, padding_idx,
                                                 pad_hits, scale):
    num, dim = (1000, 64) if ishape == (32, 128) else (11, 5)
    idx, w, g = _inputs(ishape, num, dim, dt, pad_hits, 0)
    kw = dict(padding_idx=padding_idx, scale_grad_by_freq=scale)
    with np.errstate(all="ignore"):
        fast = _grad(idx, w, g, **kw)
        with monkeypatch.context() as m:  # the where mask before the scatter
            m.setattr(_composite, "differentiable_formula", lambda: True)
            masked = _grad(idx, w, g, **kw)
    assert fast == masked


def test_values_against_a_float64_reference():
    idx, w, g = _inputs((32, 128), 1000, 64, np.float64, True, 1)
    g = np.random.default_rng(2).standard_normal(g.shape)
    want = np.zeros_like(w)
    np.add.at(want, idx.reshape(-1), g.reshape(-1, 64))
    want[3] = 0.0
    got = np.frombuffer(_grad(idx, w, g, padding_idx=3), np.float64).reshape(w.shape)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert not got[3].any()


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_gradcheck_and_gradgradcheck_float64(padding_idx):
    # (the pad row left out of the input: its numerical derivative is not zero where read,
    # its gradient is by definition; the pad positions' bits: the test above)
    rng = np.random.default_rng(4)
    idx = tgrad.tensor(rng.choice([0, 2, 3, 4, 5], (3, 4)))
    w = tgrad.tensor(rng.standard_normal((6, 3)), requires_grad=True)

    def f(w):
        return F.embedding(idx, w, padding_idx=padding_idx) ** 2
    assert gradcheck(f, (w,))
    assert gradgradcheck(f, (w,))


def test_backend_gather_at_one_integer_array_is_numpys_indexing():
    # np.take along dim 0 (the lookup's path): NumPy's x[idx] values, shape and a
    # C-contiguous result, for n-d and negative indices, unsigned ones, a non-contiguous x,
    # the one-element tuple key; out of range: the same IndexError; an empty x: x[idx]'s
    from tgrad.backends import numpy as be
    rng = np.random.default_rng(9)
    x = rng.standard_normal((7, 5, 3)).astype(np.float32)
    for arr in (x, x.transpose(2, 0, 1), x[::2], x[:, 1]):
        for idx in (rng.integers(-arr.shape[0], arr.shape[0], (4, 6)),
                    np.array([0, 2], np.uint8), np.array([], np.int64),
                    rng.integers(0, arr.shape[0], 9).astype(np.int32)):
            for key in (idx, (idx,)):
                got = be.gather(arr, key)
                assert got.flags.c_contiguous and got.shape == arr[key].shape
                assert got.tobytes() == np.ascontiguousarray(arr[key]).tobytes()
    for bad in (np.array([7]), np.array([-8])):
        with pytest.raises(IndexError) as e_np:
            x[bad]
        with pytest.raises(IndexError) as e_be:
            be.gather(x, (bad,))
        assert str(e_be.value) == str(e_np.value)
    empty = np.zeros((0, 3), np.float32)
    with pytest.raises(IndexError, match="out of bounds"):
        be.gather(empty, (np.array([5]),))
