"""nn.AdaptiveLogSoftmaxWithLoss against a NumPy float64 reference of the documented
algorithm (head over the shortlist and one entry per cluster; a cluster's class adds its
tail's log_softmax), gradcheck, log_prob / predict, unbatched input, PyTorch's parameter
layout and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck
from tgrad.func import functional_call

RNG = np.random.default_rng(11)
IN, N_CLASSES, CUTOFFS = 8, 12, [3, 7]  # shortlist 0..2, clusters 3..6 and 7..11


def _module(head_bias: bool = False, div_value: float = 2.0):
    tgrad.manual_seed(0)
    return tgrad.nn.AdaptiveLogSoftmaxWithLoss(IN, N_CLASSES, CUTOFFS, div_value=div_value,
                                               head_bias=head_bias, dtype=tgrad.float64)


def _np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _np_log_prob(params, x, cutoffs=CUTOFFS, n_classes=N_CLASSES):
    """(N, n_classes) log p(c | x), from the named parameters (NumPy float64)."""
    head = x @ params["head.weight"].T + params.get("head.bias", 0.0)
    head_lp = _np_log_softmax(head)
    bounds = cutoffs + [n_classes]
    cols = [head_lp[:, :cutoffs[0]]]
    for i in range(len(cutoffs)):
        tail = x @ params[f"tail.{i}.0.weight"].T @ params[f"tail.{i}.1.weight"].T
        cols.append(head_lp[:, cutoffs[0] + i:cutoffs[0] + i + 1] + _np_log_softmax(tail))
        assert cols[-1].shape[1] == bounds[i + 1] - bounds[i]
    return np.concatenate(cols, 1)


def _params(m):
    return {k: v.detach().numpy() for k, v in m.named_parameters()}


@pytest.mark.parametrize("head_bias", [False, True])
def test_forward_log_prob_predict_match_reference(head_bias):
    m = _module(head_bias)
    x = RNG.standard_normal((10, IN))
    target = np.array([0, 2, 3, 6, 7, 11, 1, 9, 4, 5])  # every part of the vocabulary
    want = _np_log_prob(_params(m), x)
    out = m(tgrad.tensor(x), tgrad.tensor(target))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    np.testing.assert_allclose(out.output.detach().numpy(), want[np.arange(10), target],
                               rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -want[np.arange(10), target].mean(),
                               rtol=1e-12)
    lp = m.log_prob(tgrad.tensor(x)).detach().numpy()
    np.testing.assert_allclose(lp, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.exp(lp).sum(1), 1.0, rtol=1e-12)
    pred = m.predict(tgrad.tensor(x))
    assert pred.dtype is tgrad.int64
    np.testing.assert_array_equal(pred.numpy(), want.argmax(1))
    np.testing.assert_array_equal(pred.numpy(), m.log_prob(tgrad.tensor(x)).argmax(1).numpy())


def test_predict_shortlist_and_tail_rows():
    m = _module()
    with tgrad.no_grad():  # rows 0..2 favour the shortlist class 1, rows 3..5 cluster 1
        m.head.weight.zero_()
        m.head.weight[1, 0] = 5.0
        m.head.weight[4, 1] = 5.0
    x = np.zeros((6, IN))
    x[:3, 0] = 1.0
    x[3:, 1] = 1.0
    x[3:, 2:] = RNG.standard_normal((3, IN - 2))
    pred = m.predict(tgrad.tensor(x)).numpy()
    want = _np_log_prob(_params(m), x).argmax(1)
    np.testing.assert_array_equal(pred, want)
    assert (pred[:3] == 1).all() and (pred[3:] >= 7).all()


def test_unbatched_input():
    m = _module()
    x = RNG.standard_normal(IN)
    out = m(tgrad.tensor(x), tgrad.tensor(8))
    want = _np_log_prob(_params(m), x[None])[0, 8]
    assert out.output.shape == () and out.loss.shape == ()
    np.testing.assert_allclose(out.output.item(), want, rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -want, rtol=1e-12)


def test_gradcheck_input_and_parameters():
    m = _module(head_bias=True)
    names = [k for k, _ in m.named_parameters()]
    target = tgrad.tensor([0, 4, 11, 2, 8])
    x = tgrad.tensor(RNG.standard_normal((5, IN)), requires_grad=True)
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]

    def loss_and_output(x, *ps):
        out = functional_call(m, dict(zip(names, ps)), (x, target))
        return out.output, out.loss

    assert gradcheck(loss_and_output, (x, *params))
    wrapped = _LogProb(m)
    assert gradcheck(lambda x, *ps: functional_call(
        wrapped, {f"m.{k}": v for k, v in zip(names, ps)}, (x,)), (x, *params))


class _LogProb(tgrad.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m.log_prob(x)


def test_parameter_layout_matches_pytorch():
    m = tgrad.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes == {"head.weight": (7, 16),  # 4 shortlist classes + 3 clusters
                      "tail.0.0.weight": (8, 16), "tail.0.1.weight": (5, 8),
                      "tail.1.0.weight": (4, 16), "tail.1.1.weight": (6, 4),
                      "tail.2.0.weight": (2, 16), "tail.2.1.weight": (5, 2)}
    assert m.cutoffs == [4, 9, 15, 20] and m.shortlist_size == 4 and m.n_clusters == 3
    assert m.head_size == 7
    assert isinstance(m.tail, tgrad.nn.ModuleList)
    assert isinstance(m.tail[0], tgrad.nn.Sequential)
    biased = tgrad.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4], head_bias=True)
    assert tuple(biased.head.bias.shape) == (5,)


def test_only_targeted_clusters_get_gradients():
    m = _module()
    m(tgrad.tensor(RNG.standard_normal((3, IN))), tgrad.tensor([0, 1, 4])).loss.backward()
    assert m.head.weight.grad is not None and m.tail[0][0].weight.grad is not None
    assert m.tail[1][0].weight.grad is None  # no target in cluster 7..11: tail not run


def test_errors():
    asm = tgrad.nn.AdaptiveLogSoftmaxWithLoss
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger"):
        asm(8, 10, [])
    for bad in ([3, 2], [3, 10], [0, 3], [3, 3], [2.5]):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, "
                                             "positive integers sorted"):
            asm(8, 10, bad)
    m = asm(8, 10, [3])
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\], but values "
                                           "in range \\[-1, 10\\] were found."):
        m(tgrad.ones(3, 8), tgrad.tensor([-1, 10, 2]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(tgrad.ones(3, 8), tgrad.tensor([0, 9]))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        m(tgrad.ones(2, 2, 8), tgrad.tensor([0, 9]))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        m(tgrad.ones(2, 8), tgrad.tensor(1))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(tgrad.ones(2, 8), tgrad.ones(2, 1, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="target must hold integer class indices"):
        m(tgrad.ones(2, 8), tgrad.tensor([0.0, 9.0]))
    with pytest.raises(RuntimeError, match="log_prob: expected a 2-D input"):
        m.log_prob(tgrad.ones(8))


def test_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad
rng = np.random.default_rng(2)
z = rng.standard_normal((5, 8))
out = {}
for dev in ("cpu", "cuda"):
    tgrad.manual_seed(0)
    m = tgrad.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, head_bias=True,
                                            dtype=tgrad.float64).to(dev)
    x = tgrad.tensor(z, device=dev, requires_grad=True)
    o = m(x, tgrad.tensor([0, 4, 11, 2, 8], device=dev))
    o.loss.backward()
    out[dev] = [o.output.detach().cpu().numpy().tolist(), x.grad.cpu().numpy().tolist(),
                m.log_prob(x).detach().cpu().numpy().tolist(), m.predict(x).cpu().tolist()]
print(json.dumps(out))
""")
    for got, want in zip(res["cuda"], res["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
