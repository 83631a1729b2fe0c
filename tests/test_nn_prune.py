"""tgrad.nn.utils.prune against NumPy: which entries/channels each method zeroes, iterative
pruning on what is left, global pruning across layers, the forward and gradient through
orig * mask, remove, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.nn.utils import prune

F64 = tgrad.float64


def _lin(seed=0, n_in=5, n_out=4):
    tgrad.manual_seed(seed)
    return nn.Linear(n_in, n_out, dtype=F64)


def _smallest_mask(w: np.ndarray, k: int, keep: np.ndarray | None = None) -> np.ndarray:
    """Ones, with the k smallest |w| among the kept entries zeroed."""
    keep = np.ones(w.shape, bool) if keep is None else keep
    mask = keep.astype(float)
    idx = np.flatnonzero(keep)
    order = idx[np.argsort(np.abs(w.reshape(-1)[idx]), kind="stable")[:k]]
    mask.reshape(-1)[order] = 0
    return mask


def test_l1_unstructured_iterative_forward_gradient_and_remove():
    lin = _lin()
    w = lin.weight.detach().numpy().copy()
    prune.l1_unstructured(lin, "weight", amount=0.3)  # round(0.3 * 20) = 6 entries
    m1 = _smallest_mask(w, 6)
    np.testing.assert_array_equal(lin.weight_mask.numpy(), m1)
    assert sorted(lin.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert prune.is_pruned(lin) and prune.is_pruned(nn.Sequential(lin))
    prune.l1_unstructured(lin, "weight", amount=3)  # 3 more, among the 14 left
    m2 = _smallest_mask(w, 3, m1 == 1) * m1
    np.testing.assert_array_equal(lin.weight_mask.numpy(), m2)
    x = np.random.default_rng(1).standard_normal((2, 5))
    y = lin(tgrad.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), x @ (w * m2).T + lin.bias.detach().numpy(),
                               rtol=1e-13)
    y.sum().backward()
    np.testing.assert_allclose(lin.weight_orig.grad.numpy(), (np.ones((2, 4)).T @ x) * m2,
                               rtol=1e-13)
    orig = lin.weight_orig
    prune.remove(lin, "weight")
    assert lin.weight is orig and sorted(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), w * m2)
    assert not prune.is_pruned(lin)


def test_structured_random_identity_custom_and_global():
    lin = _lin(2)
    w = lin.weight.detach().numpy().copy()
    prune.ln_structured(lin, "weight", amount=0.5, n=2, dim=0)  # 2 of 4 rows
    rows = np.argsort(np.linalg.norm(w, axis=1))[:2]
    want = np.ones_like(w)
    want[rows] = 0
    np.testing.assert_array_equal(lin.weight_mask.numpy(), want)
    prune.ln_structured(lin, "weight", amount=1, n=1, dim=0)  # one of the 2 rows left
    alive = [r for r in range(4) if r not in rows]
    want[alive[int(np.argmin(np.abs(w[alive]).sum(1)))]] = 0
    np.testing.assert_array_equal(lin.weight_mask.numpy(), want)

    lin2 = _lin(3)
    prune.random_structured(lin2, "weight", amount=2, dim=1)  # 2 of 5 columns
    cols = lin2.weight_mask.numpy().sum(0)
    assert sorted(cols.tolist()) == [0, 0, 4, 4, 4]
    lin3 = _lin(4)
    prune.random_unstructured(lin3, "weight", amount=0.5)
    assert lin3.weight_mask.numpy().sum() == 10
    lin4 = _lin(5)
    prune.identity(lin4, "bias")
    np.testing.assert_array_equal(lin4.bias_mask.numpy(), np.ones(4))
    mask = (np.arange(20).reshape(4, 5) % 3 == 0).astype(float)
    prune.custom_from_mask(lin4, "weight", tgrad.tensor(mask, dtype=F64))
    np.testing.assert_array_equal(lin4.weight_mask.numpy(), mask)

    a, b = _lin(6), _lin(7, 3, 2)
    wa, wb = a.weight.detach().numpy().copy(), b.weight.detach().numpy().copy()
    prune.global_unstructured([(a, "weight"), (b, "weight")],
                              pruning_method=prune.L1Unstructured, amount=8)
    both = np.concatenate([wa.reshape(-1), wb.reshape(-1)])
    gmask = _smallest_mask(both, 8)
    np.testing.assert_array_equal(a.weight_mask.numpy().reshape(-1), gmask[:20])
    np.testing.assert_array_equal(b.weight_mask.numpy().reshape(-1), gmask[20:])


def test_prune_errors():
    with pytest.raises(ValueError, match="should either be a float in the range \\[0, 1\\] or "
                                         "a non-negative integer"):
        prune.l1_unstructured(_lin(), "weight", amount=1.5)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters to "
                                         "prune=20"):
        prune.l1_unstructured(_lin(), "weight", amount=21)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(_lin(), "weight")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(_lin(), "weight")], prune.LnStructured, amount=1, n=2,
                                  dim=0)
    # a buffer cannot be pruned: PyTorch's TypeError (was a KeyError), module unchanged
    bn = nn.BatchNorm1d(3)
    with pytest.raises(TypeError, match="'running_mean' of BatchNorm1d is not a parameter"):
        prune.l1_unstructured(bn, "running_mean", amount=1)
    assert sorted(bn.state_dict()) == ["bias", "num_batches_tracked", "running_mean",
                                       "running_var", "weight"]
    assert not bn._forward_pre_hooks


# ------------------------------------------------------------------ fusion and stateless
def test_fuse_conv_bn_and_linear_bn_match_the_pair():
    from tgrad.nn.utils import fuse_conv_bn_eval, fuse_linear_bn_eval
    tgrad.manual_seed(8)
    rng = np.random.default_rng(9)
    for conv, bn, x in (
            (nn.Conv2d(2, 3, 3, dtype=F64), nn.BatchNorm2d(3, dtype=F64),
             rng.standard_normal((2, 2, 5, 5))),
            (nn.ConvTranspose2d(2, 3, 2, dtype=F64), nn.BatchNorm2d(3, dtype=F64),
             rng.standard_normal((1, 2, 3, 3))),
            (nn.Linear(4, 3, dtype=F64), nn.BatchNorm1d(3, dtype=F64),
             rng.standard_normal((5, 4)))):
        with tgrad.no_grad():
            bn.running_mean.copy_(tgrad.tensor(rng.standard_normal(3)))
            bn.running_var.copy_(tgrad.tensor(rng.uniform(0.5, 2.0, 3)))
            bn.weight.copy_(tgrad.tensor(rng.standard_normal(3)))
            bn.bias.copy_(tgrad.tensor(rng.standard_normal(3)))
        conv.eval()
        bn.eval()
        with pytest.raises(AssertionError, match="Fusion only for eval"):
            (fuse_linear_bn_eval if isinstance(conv, nn.Linear) else fuse_conv_bn_eval)(
                conv.train(), bn)
        conv.eval()
        if isinstance(conv, nn.Linear):
            fused = fuse_linear_bn_eval(conv, bn)
        else:
            fused = fuse_conv_bn_eval(conv, bn, transpose=isinstance(conv, nn.ConvTranspose2d))
        want = bn(conv(tgrad.tensor(x))).detach().numpy()
        np.testing.assert_allclose(fused(tgrad.tensor(x)).detach().numpy(), want, rtol=1e-12,
                                   atol=1e-12)
        assert isinstance(fused.weight, nn.Parameter) and fused is not conv


def test_stateless_functional_call_is_func_s():
    from tgrad.func import functional_call
    from tgrad.nn.utils import stateless
    assert stateless.functional_call is functional_call


def test_repruning_scores_the_pruned_weight():
    """A second pruning scores orig * mask (PyTorch's): after l1 removes the 0.5, the column
    L1 norms are 5.8, 8, 6, so ln_structured drops column 0 (by hand)."""
    m = nn.Linear(3, 2)
    with tgrad.no_grad():
        m.weight.copy_(tgrad.tensor([[5.8, 4.0, 3.0], [0.5, 4.0, 3.0]]))
    prune.l1_unstructured(m, "weight", amount=1)
    prune.ln_structured(m, "weight", amount=1, n=1, dim=1)
    assert m.weight_mask.tolist() == [[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]


def test_structured_pruning_checks_dim_and_rank():
    for method in (lambda m, **kw: prune.ln_structured(m, amount=1, n=2, **kw),
                   lambda m, **kw: prune.random_structured(m, amount=1, **kw)):
        with pytest.raises(IndexError, match="Invalid index"):
            method(nn.Linear(4, 3), name="weight", dim=2)
        with pytest.raises(IndexError, match="Invalid index"):
            method(nn.Linear(4, 3), name="weight", dim=-3)
        with pytest.raises(ValueError, match="multidimensional"):
            method(nn.Linear(4, 3), name="bias", dim=0)
