"""Parity fixes found by differential testing against PyTorch (nn.init, nn.utils.rnn).

References are independent of tgrad: NumPy float64 numerical integration of the truncated
normal density, NumPy's argsort, and hand-written values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.nn import init
from tgrad.nn.utils.rnn import (
    invert_permutation,
    pack_sequence,
    pad_packed_sequence,
    unpack_sequence,
)

F64 = tgrad.float64


# ============================================================ nn.init: argument errors
@pytest.mark.parametrize("fill", [
    lambda t: init.uniform_(t), lambda t: init.normal_(t), lambda t: init.trunc_normal_(t),
    lambda t: init.xavier_uniform_(t), lambda t: init.xavier_normal_(t),
    lambda t: init.kaiming_uniform_(t), lambda t: init.kaiming_normal_(t),
    lambda t: init.orthogonal_(t), lambda t: init.sparse_(t, 0.5)])
@pytest.mark.parametrize("dtype", [tgrad.int64, tgrad.int32, tgrad.bool])
def test_random_fills_reject_non_floating_tensors(fill, dtype):
    # PyTorch: NotImplementedError ("normal_kernel_cpu" not implemented for 'Long'); tgrad
    # used to fill silently (truncating the samples)
    t = tgrad.zeros((4, 4), dtype=dtype)
    with pytest.raises(NotImplementedError, match="floating dtype"):
        fill(t)
    assert t.tolist() == np.zeros((4, 4)).astype(bool if dtype is tgrad.bool else int).tolist()


def test_deterministic_fills_keep_integer_tensors():
    t = init.constant_(tgrad.zeros(3, dtype=tgrad.int64), 2.7)
    assert t.dtype is tgrad.int64 and t.tolist() == [2, 2, 2]
    assert init.eye_(tgrad.zeros((2, 3), dtype=tgrad.int64)).tolist() == [[1, 0, 0], [0, 1, 0]]


def test_uniform_and_normal_bound_checks():
    with pytest.raises(RuntimeError, match=r"\[from, to\) range, but found from=3 > to=2"):
        init.uniform_(tgrad.empty(3), 3, 2)
    with pytest.raises(RuntimeError, match="finite"):
        init.uniform_(tgrad.empty(3), 0, math.inf)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        init.normal_(tgrad.empty(3), 0, -1)
    with pytest.raises(RuntimeError, match="expects a <= b"):
        init.trunc_normal_(tgrad.empty(3), 0, 1, 2, -2)
    # degenerate but valid: a == b and std == 0 give constants
    assert init.uniform_(tgrad.empty(3, dtype=F64), 2, 2).tolist() == [2.0] * 3
    assert init.normal_(tgrad.empty(3, dtype=F64), 1.5, 0).tolist() == [1.5] * 3
    assert init.trunc_normal_(tgrad.empty(3, dtype=F64), 3, 1, 3, 3).tolist() == [3.0] * 3


@pytest.mark.parametrize("fill", [init.kaiming_uniform_, init.kaiming_normal_])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3)])
def test_kaiming_on_zero_element_tensors_is_a_warned_no_op(fill, shape):
    # PyTorch checks ``0 in tensor.shape`` first: a 1-D empty tensor, a bad mode or
    # nonlinearity do not raise there
    t = tgrad.empty(shape)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert fill(t, mode="bad", nonlinearity="bad") is t


def test_kaiming_mode_error_lists_the_modes():
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(tgrad.empty(3, 4), mode="fan_avg")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a non-empty tensor does not warn
        w = init.kaiming_uniform_(tgrad.empty(300, 400, dtype=F64), mode="fan_out")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 300)  # gain(leaky_relu, a=0) * sqrt(3 / fan)
    x = w.numpy()
    assert x.min() >= -bound and x.max() <= bound and x.max() > 0.99 * bound


# ============================================================ nn.init.trunc_normal_ tails
def _truncated_moments(alpha: float, beta: float) -> tuple[float, float, callable]:
    """Mean, variance and CDF of the standard normal truncated to [alpha, beta], by
    trapezoidal integration in float64 of exp(-(z^2 - m^2) / 2), m the point of the
    interval nearest 0 (so nothing underflows even 40 std out)."""
    z = np.linspace(alpha, beta, 400_001)
    m = min(max(0.0, alpha), beta)
    w = np.exp(-(z * z - m * m) / 2)
    dz = z[1] - z[0]
    cum = np.concatenate([[0.0], np.cumsum((w[1:] + w[:-1]) / 2 * dz)])
    total = cum[-1]
    mean = float(np.trapezoid(z * w, z) / total)
    var = float(np.trapezoid((z - mean) ** 2 * w, z) / total)
    return mean, var, lambda v: float(np.interp(v, z, cum / total))


@pytest.mark.parametrize("mean,std,a,b", [
    (0.0, 1.0, 9.0, 10.0),     # used to collapse onto b: Phi(9) rounds to 1 in float64
    (0.0, 1.0, 6.0, 7.0),
    (0.0, 1.0, -10.0, -9.0),
    (1.0, 0.5, -19.0, -15.0),  # standardized [-40, -32]: log-space path
    (0.0, 1.0, 39.0, 40.0),    # mirrored, then log-space
    (0.0, 0.02, -2.0, 2.0),    # the common ViT case, ~100 std wide
    (2.0, 3.0, 1.0, 20.0),
])
def test_trunc_normal_matches_the_truncated_law_in_the_tails(mean, std, a, b):
    n = 100_000
    tgrad.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "mean is more than 2 std from [a, b]"
        x = init.trunc_normal_(tgrad.empty(n, dtype=F64), mean, std, a, b).numpy()
    assert np.isfinite(x).all() and x.min() >= a and x.max() <= b
    alpha, beta = (a - mean) / std, (b - mean) / std
    mu, var, cdf = _truncated_moments(alpha, beta)
    z = (x - mean) / std
    assert z.std() > 0.5 * math.sqrt(var)  # not collapsed onto a bound
    assert abs(z.mean() - mu) < 6 * math.sqrt(var / n)
    assert abs(z.var() - var) < 8 * var * math.sqrt(2 / n)
    for q in (0.1, 0.5, 0.9):
        cut = np.quantile(z, q)
        assert abs(cdf(cut) - q) < 6 * math.sqrt(q * (1 - q) / n) + 1e-4


def test_trunc_normal_far_tail_hand_values():
    # [9, 10] std: mean (phi(9) - phi(10)) / (Q(9) - Q(10)) = 9.10846, Q by math.erfc (exact
    # to float64 there, unlike 1 - Phi); the old clamp of erfinv(1) gave 10.0 everywhere
    def phi(v):
        return math.exp(-v * v / 2) / math.sqrt(2 * math.pi)

    def q(v):
        return 0.5 * math.erfc(v / math.sqrt(2))
    expected = (phi(9) - phi(10)) / (q(9) - q(10))
    assert abs(expected - 9.10846) < 1e-5  # ~ 9 / (1 - 1/81 + 3/9**4 - 15/9**6), Mills
    tgrad.manual_seed(1)
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        x = init.trunc_normal_(tgrad.empty(50_000, dtype=F64), 0.0, 1.0, 9.0, 10.0).numpy()
        f32 = init.trunc_normal_(tgrad.empty(1000), 0.0, 1.0, 9.0, 10.0)
    assert abs(x.mean() - expected) < 6 * 0.107 / math.sqrt(50_000)
    assert 9.0 <= x.min() < 9.001 and x.max() < 10.0
    assert f32.dtype is tgrad.float32 and 9.0 <= f32.min().item() and f32.max().item() < 10.0


# ============================================================ nn.utils.rnn
def test_unpack_sequence_round_trips_in_the_original_order():
    a = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = tgrad.tensor([[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]], requires_grad=True)
    c = tgrad.tensor([[11.0, 12.0]], requires_grad=True)
    packed = pack_sequence([a, b, c], enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 0, 2]
    out = unpack_sequence(packed)
    assert [t.tolist() for t in out] == [a.tolist(), b.tolist(), c.tolist()]
    assert [tuple(t.shape) for t in out] == [(2, 2), (3, 2), (1, 2)]
    (out[0].sum() + 2 * out[1].sum()).backward()
    assert a.grad.tolist() == [[1.0, 1.0]] * 2 and b.grad.tolist() == [[2.0, 2.0]] * 3
    assert c.grad is None or c.grad.abs().sum().item() == 0.0
    # an already sorted batch (no sorted_indices)
    sorted_pack = pack_sequence([b.detach(), a.detach(), c.detach()])
    assert sorted_pack.sorted_indices is None
    assert [t.tolist() for t in unpack_sequence(sorted_pack)] == [b.tolist(), a.tolist(),
                                                                  c.tolist()]
    padded, lengths = pad_packed_sequence(sorted_pack, batch_first=True)
    assert lengths.tolist() == [3, 2, 1] and tuple(padded.shape) == (3, 3, 2)


def test_invert_permutation_matches_numpy_argsort():
    perm = np.random.default_rng(0).permutation(9)
    inv = invert_permutation(tgrad.tensor(perm))
    assert inv.dtype is tgrad.int64
    assert inv.tolist() == np.argsort(perm).tolist()
    assert invert_permutation(None) is None
