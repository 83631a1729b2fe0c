"""nn.MultiheadAttention against a NumPy float64 evaluation of PyTorch's formulas, its
parameters and initialisation, masks, and errors. scaled_dot_product_attention's values and
gradients are in the op table (tests/op_db_nn.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from interpreted import run_json
from test_nn_rnn_fused import graph_node_names

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F


def _np_mha(m: nn.MultiheadAttention, q, k, v, kpm=None, attn_mask=None):
    """(L, N, E) inputs -> (out (L, N, E), head-averaged weights (N, L, S)); bool masks:
    True = may not attend."""
    e, h = m.embed_dim, m.num_heads
    hd = e // h
    w = m.in_proj_weight.detach().numpy()
    b = m.in_proj_bias.detach().numpy()
    proj = [x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e] for i, x in enumerate((q, k, v))]
    tgt, n = q.shape[:2]
    qh, kh, vh = (p.reshape(p.shape[0], n, h, hd).transpose(1, 2, 0, 3) for p in proj)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(hd)  # (N, H, L, S)
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    if kpm is not None:
        scores = np.where(kpm[:, None, None, :], -np.inf, scores)
    with np.errstate(all="ignore"):
        ex = np.exp(scores - scores.max(-1, keepdims=True))
        weights = ex / ex.sum(-1, keepdims=True)
    out = (weights @ vh).transpose(2, 0, 1, 3).reshape(tgt, n, e)
    out = out @ m.out_proj.weight.detach().numpy().T + m.out_proj.bias.detach().numpy()
    return out, weights.mean(1)


def _module(**kw) -> nn.MultiheadAttention:
    tgrad.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dtype=tgrad.float64, **kw)
    with tgrad.no_grad():  # non-zero biases, so that they are checked too
        m.in_proj_bias.copy_(tgrad.tensor(np.linspace(-1, 1, 24)))
        m.out_proj.bias.copy_(tgrad.tensor(np.linspace(1, -1, 8)))
    return m


def test_forward_matches_numpy_with_masks():
    rng = np.random.default_rng(0)
    m = _module()
    q, k, v = rng.standard_normal((4, 2, 8)), rng.standard_normal((5, 2, 8)), \
        rng.standard_normal((5, 2, 8))
    kpm = np.array([[False, False, True, False, True], [False] * 5])
    am = np.triu(np.ones((4, 5), dtype=bool), 1)
    out, w = m(tgrad.tensor(q), tgrad.tensor(k), tgrad.tensor(v),
               key_padding_mask=tgrad.tensor(kpm), attn_mask=tgrad.tensor(am))
    ref_out, ref_w = _np_mha(m, q, k, v, kpm, am)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), ref_w, rtol=1e-12, atol=1e-12)
    # need_weights=False takes scaled_dot_product_attention: same output, no weights
    out2, w2 = m(tgrad.tensor(q), tgrad.tensor(k), tgrad.tensor(v), need_weights=False,
                 key_padding_mask=tgrad.tensor(kpm), attn_mask=tgrad.tensor(am))
    assert w2 is None
    np.testing.assert_allclose(out2.detach().numpy(), ref_out, rtol=1e-12, atol=1e-12)


def test_batch_first_unbatched_and_per_head_weights():
    rng = np.random.default_rng(1)
    m = _module(batch_first=True)
    x = rng.standard_normal((2, 3, 8))  # (N, L, E)
    out, w = m(tgrad.tensor(x), tgrad.tensor(x), tgrad.tensor(x), average_attn_weights=False)
    ref_out, _ = _np_mha(m, x.transpose(1, 0, 2), x.transpose(1, 0, 2), x.transpose(1, 0, 2))
    np.testing.assert_allclose(out.detach().numpy(), ref_out.transpose(1, 0, 2), rtol=1e-12)
    assert w.shape == (2, 2, 3, 3)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), np.ones((2, 2, 3)), rtol=1e-12)
    out1, w1 = m(tgrad.tensor(x[0]), tgrad.tensor(x[0]), tgrad.tensor(x[0]))
    assert out1.shape == (3, 8) and w1.shape == (3, 3)
    np.testing.assert_allclose(out1.detach().numpy(), ref_out[:, 0], rtol=1e-12)


def test_gradients_against_finite_differences():
    m = nn.MultiheadAttention(4, 2, dtype=tgrad.float64)
    rng = np.random.default_rng(2)
    q = tgrad.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)
    kv = tgrad.tensor(rng.standard_normal((2, 1, 4)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a, b: m(a, b, b)[0], (q, kv))
    assert tgrad.autograd.gradcheck(lambda a, b: m(a, b, b, need_weights=False)[0], (q, kv))


def test_parameters_and_initialisation():
    m = nn.MultiheadAttention(8, 2)
    assert [(n, p.shape) for n, p in m.named_parameters()] == [
        ("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)),
        ("out_proj.bias", (8,))]
    bound = math.sqrt(6.0 / (24 + 8))  # xavier_uniform_ on (3E, E)
    w = m.in_proj_weight.detach().numpy()
    assert 0 < np.abs(w).max() <= bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    m2 = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False)
    assert [(n, p.shape) for n, p in m2.named_parameters()] == [
        ("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 3)), ("v_proj_weight", (8, 5)),
        ("out_proj.weight", (8, 8))]


def test_a_row_with_nothing_to_attend_to():
    # PyTorch: NaN on its need_weights path (a plain softmax), 0 through
    # scaled_dot_product_attention (a safe softmax)
    m = _module()
    x = tgrad.tensor(np.random.default_rng(3).standard_normal((2, 1, 8)))
    kpm = tgrad.tensor(np.array([[True, True]]))
    out, w = m(x, x, x, key_padding_mask=kpm)
    assert np.isnan(out.detach().numpy()).all() and np.isnan(w.detach().numpy()).all()
    out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    np.testing.assert_allclose(out.detach().numpy()[0, 0], m.out_proj.bias.detach().numpy())


def test_sdpa_dropout_and_gqa():
    rng = np.random.default_rng(4)
    q = tgrad.tensor(rng.standard_normal((1, 4, 3, 2)))
    k = tgrad.tensor(rng.standard_normal((1, 2, 5, 2)))
    v = tgrad.tensor(rng.standard_normal((1, 2, 5, 2)))
    y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    ref = F.scaled_dot_product_attention(q, k.repeat_interleave(2, dim=1),
                                         v.repeat_interleave(2, dim=1))
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-15)
    # dropout_p = 1 drops every weight
    assert not F.scaled_dot_product_attention(q, k, v, dropout_p=1.0,
                                              enable_gqa=True).numpy().any()


def test_sdpa_float32_mask_with_a_float64_query():
    # PyTorch's "float" mask is float32: it is added to the scores of any query dtype
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)),
               rng.standard_normal((2, 5, 2)))
    m = rng.standard_normal((3, 5)).astype(np.float32)
    s = q @ k.transpose(0, 2, 1) / 2.0 + m.astype(np.float64)
    w = np.exp(s - s.max(-1, keepdims=True))
    ref = (w / w.sum(-1, keepdims=True)) @ v
    mt = tgrad.tensor(m, requires_grad=True)
    y = F.scaled_dot_product_attention(tgrad.tensor(q), tgrad.tensor(k), tgrad.tensor(v),
                                       attn_mask=mt)
    assert y.dtype is tgrad.float64
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-14)
    y.sum().backward()
    assert mt.grad.dtype is tgrad.float32 and mt.grad.shape == (3, 5)


@pytest.mark.parametrize("fn, exc, text", [
    (lambda: nn.MultiheadAttention(8, 3), AssertionError,
     "embed_dim must be divisible by num_heads"),
    (lambda: F.multi_head_attention_forward(
        tgrad.ones(3, 1, 8), tgrad.ones(3, 1, 8), tgrad.ones(3, 1, 8), 8, 2,
        tgrad.ones(24, 8), None, tgrad.ones(1, 1, 8), tgrad.ones(1, 1, 8), False, 0.0,
        tgrad.ones(8, 8), None, static_k=tgrad.ones(2, 3, 4)),
     AssertionError, "bias cannot be added to static key."),
    (lambda: F.multi_head_attention_forward(
        tgrad.ones(3, 1, 8), tgrad.ones(3, 1, 8), tgrad.ones(3, 1, 8), 8, 2,
        tgrad.ones(24, 8), None, None, None, False, 0.0, tgrad.ones(8, 8), None,
        static_k=tgrad.ones(3, 3, 4)),
     AssertionError, "expecting static_k.size(0) of 2, but got 3"),
    (lambda: nn.MultiheadAttention(8, 2)(tgrad.ones(3, 1, 8), tgrad.ones(3, 8),
                                         tgrad.ones(3, 8)),
     AssertionError, "For batched (3-D) `query`, expected `key` and `value` to be 3-D but "
                     "found 2-D and 2-D tensors respectively"),
    (lambda: nn.MultiheadAttention(8, 2)(tgrad.ones(1, 3, 1, 8), tgrad.ones(3, 8),
                                         tgrad.ones(3, 8)),
     AssertionError, "query should be unbatched 2D or batched 3D tensor but received 4-D"),
    (lambda: nn.MultiheadAttention(8, 2)(tgrad.ones(3, 1, 8), tgrad.ones(3, 1, 8),
                                         tgrad.ones(3, 1, 8), is_causal=True),
     RuntimeError, "Need attn_mask if specifying the is_causal hint"),
    (lambda: nn.MultiheadAttention(8, 2)(tgrad.ones(3, 1, 7), tgrad.ones(3, 1, 7),
                                         tgrad.ones(3, 1, 7)),
     AssertionError, "was expecting embedding dimension of 8, but got 7"),
    (lambda: nn.MultiheadAttention(8, 2)(tgrad.ones(3, 1, 8), tgrad.ones(3, 1, 8),
                                         tgrad.ones(3, 1, 8), attn_mask=tgrad.ones(2, 3)),
     RuntimeError, "The shape of the 2D attn_mask is [2, 3], but should be [3, 3]."),
    (lambda: F.scaled_dot_product_attention(tgrad.ones(2, 3), tgrad.ones(2, 3),
                                            tgrad.ones(2, 3), tgrad.ones(2, 2),
                                            is_causal=True),
     RuntimeError, "Explicit attn_mask should not be set when is_causal=True"),
    (lambda: F.scaled_dot_product_attention(tgrad.ones(2, 3), tgrad.ones(2, 3),
                                            tgrad.ones(2, 3), tgrad.ones(2, 2, dtype=tgrad.int64)),
     RuntimeError, "Expected attn_mask dtype to be bool or float or to match query dtype, but "
                   "got attn_mask.dtype: int64 and query.dtype: float32 instead."),
    (lambda: F.scaled_dot_product_attention(tgrad.ones(2, 3), tgrad.ones(2, 3),
                                            tgrad.ones(2, 3),
                                            tgrad.ones(2, 2, dtype=tgrad.float64)),
     RuntimeError, "Expected attn_mask dtype to be bool or float or to match query dtype, but "
                   "got attn_mask.dtype: float64 and query.dtype: float32 instead."),
    (lambda: F.scaled_dot_product_attention(tgrad.ones(2, 3, dtype=tgrad.float64),
                                            tgrad.ones(2, 3, dtype=tgrad.float64),
                                            tgrad.ones(2, 3, dtype=tgrad.float64),
                                            tgrad.ones(2, 2, dtype=tgrad.float16)),
     RuntimeError, "Expected attn_mask dtype to be bool or float or to match query dtype, but "
                   "got attn_mask.dtype: float16 and query.dtype: float64 instead."),
    (lambda: F.scaled_dot_product_attention(tgrad.ones(2, 3, dtype=tgrad.float64),
                                            tgrad.ones(2, 3), tgrad.ones(2, 3)),
     RuntimeError, "Expected query, key, and value to have the same dtype, but got "
                   "query.dtype: float64 key.dtype: float32 and value.dtype: float32 instead."),
    # a mask that would grow the (L, S) weights is refused, as PyTorch's in-place add does
    (lambda: F.scaled_dot_product_attention(tgrad.ones(3, 4), tgrad.ones(3, 4), tgrad.ones(3, 4),
                                            tgrad.ones(2, 3, 3, dtype=tgrad.bool)),
     RuntimeError, "attn_mask of shape [2, 3, 3] does not broadcast to the attention weights' "
                   "shape [3, 3]"),
    (lambda: F.scaled_dot_product_attention(tgrad.ones(2, 3, 4), tgrad.ones(2, 3, 4),
                                            tgrad.ones(2, 3, 4), tgrad.zeros(2, 2, 3, 3)),
     RuntimeError, "scaled_dot_product_attention: attn_mask of shape [2, 2, 3, 3]"),
])
def test_errors(fn, exc, text):
    with pytest.raises(exc) as info:
        fn()
    assert text in str(info.value)


def test_need_weights_returns_the_weights_after_dropout():
    tgrad.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5, dtype=tgrad.float64)
    x = tgrad.tensor(np.random.default_rng(5).standard_normal((6, 1, 8)))
    _, w = m(x, x, x, average_attn_weights=False)
    w = w.detach().numpy()
    assert (w == 0).any() and not np.allclose(w.sum(-1), 1.0)
    _, w_eval = m.eval()(x, x, x)
    np.testing.assert_allclose(w_eval.detach().numpy().sum(-1), 1.0, rtol=1e-12)


def _np_attention(q, k, v, scale_dim, mask=None):
    """softmax(q k^T / sqrt(d) + mask) v over the last two dims, and the weights."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(scale_dim)
    if mask is not None:
        scores = scores + mask
    ex = np.exp(scores - scores.max(-1, keepdims=True))
    w = ex / ex.sum(-1, keepdims=True)
    return w @ v, w


def test_functional_bias_kv_zero_attn_static_and_separate_weights():
    """F.multi_head_attention_forward against NumPy: add_bias_kv's extra key/value row,
    add_zero_attn's zero row (masks padded so both may be attended), separate q/k/v
    projection weights of other widths, static_k / static_v, a float attn_mask."""
    rng = np.random.default_rng(7)
    tgt, src, n, e, h = 3, 4, 2, 6, 3
    hd = e // h
    q, k, v = rng.standard_normal((tgt, n, e)), rng.standard_normal((src, n, 5)), \
        rng.standard_normal((src, n, 7))
    wq, wk, wv = rng.standard_normal((e, e)), rng.standard_normal((e, 5)), \
        rng.standard_normal((e, 7))
    bias, bk, bv = rng.standard_normal(3 * e), rng.standard_normal((1, 1, e)), \
        rng.standard_normal((1, 1, e))
    wo, bo = rng.standard_normal((e, e)), rng.standard_normal(e)
    am = rng.standard_normal((tgt, src))
    kpm = np.zeros((n, src), dtype=bool)
    kpm[0, 1] = True
    t = tgrad.tensor
    out, w = F.multi_head_attention_forward(
        t(q), t(k), t(v), e, h, None, t(bias), t(bk), t(bv), True, 0.0, t(wo), t(bo),
        key_padding_mask=t(kpm), attn_mask=t(am), use_separate_proj_weight=True,
        q_proj_weight=t(wq), k_proj_weight=t(wk), v_proj_weight=t(wv),
        average_attn_weights=False)
    pq = q @ wq.T + bias[:e]
    pk = np.concatenate([k @ wk.T + bias[e:2 * e], np.broadcast_to(bk, (1, n, e))])
    pv = np.concatenate([v @ wv.T + bias[2 * e:], np.broadcast_to(bv, (1, n, e))])
    heads = lambda x: x.reshape(x.shape[0], n, h, hd).transpose(1, 2, 0, 3)  # noqa: E731
    qh, kh, vh = heads(pq), heads(pk), heads(pv)  # (N, H, ., hd)
    kh = np.concatenate([kh, np.zeros((n, h, 1, hd))], 2)  # add_zero_attn
    vh = np.concatenate([vh, np.zeros((n, h, 1, hd))], 2)
    mask = np.concatenate([am, np.zeros((tgt, 2))], 1)[None, None]  # (1, 1, L, S + 2)
    pad = np.concatenate([np.where(kpm, -np.inf, 0.0), np.zeros((n, 2))], 1)
    mask = mask + pad[:, None, None, :]
    attn, ref_w = _np_attention(qh, kh, vh, hd, mask)
    ref = attn.transpose(2, 0, 1, 3).reshape(tgt, n, e) @ wo.T + bo
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-12, atol=1e-12)
    out2, none = F.multi_head_attention_forward(  # the scaled_dot_product_attention path
        t(q), t(k), t(v), e, h, None, t(bias), t(bk), t(bv), True, 0.0, t(wo), t(bo),
        key_padding_mask=t(kpm), attn_mask=t(am), use_separate_proj_weight=True,
        q_proj_weight=t(wq), k_proj_weight=t(wk), v_proj_weight=t(wv), need_weights=False)
    assert none is None
    np.testing.assert_allclose(out2.numpy(), ref, rtol=1e-12, atol=1e-12)
    # static_k / static_v: given per (batch, head) keys and values replace the projections
    sk, sv = rng.standard_normal((n * h, 5, hd)), rng.standard_normal((n * h, 5, hd))
    w_in = rng.standard_normal((3 * e, e))
    out3, _ = F.multi_head_attention_forward(
        t(q), t(q), t(q), e, h, t(w_in), None, None, None, False, 0.0, t(wo), None,
        static_k=t(sk), static_v=t(sv))
    qh = (q @ w_in[:e].T).reshape(tgt, n * h, hd).transpose(1, 0, 2)
    attn, _ = _np_attention(qh, sk, sv, hd)
    ref3 = attn.transpose(1, 0, 2).reshape(tgt, n, e) @ wo.T
    np.testing.assert_allclose(out3.numpy(), ref3, rtol=1e-12, atol=1e-12)


def test_module_add_bias_kv_and_zero_attn():
    tgrad.manual_seed(3)
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, dtype=tgrad.float64)
    names = [name for name, _ in m.named_parameters()]
    assert names == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                     "out_proj.bias"]
    assert m.bias_k.shape == (1, 1, 4) and m.bias_k.detach().numpy().any()
    assert nn.MultiheadAttention(4, 2).bias_k is None
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2, 4))
    out, w = m(tgrad.tensor(x), tgrad.tensor(x), tgrad.tensor(x))
    assert out.shape == (3, 2, 4) and w.shape == (2, 3, 5)  # 3 keys + bias_k + zero
    ref, _ = F.multi_head_attention_forward(
        tgrad.tensor(x), tgrad.tensor(x), tgrad.tensor(x), 4, 2, m.in_proj_weight,
        m.in_proj_bias, m.bias_k, m.bias_v, True, 0.0, m.out_proj.weight, m.out_proj.bias)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-15)
    q = tgrad.tensor(rng.standard_normal((2, 1, 4)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a: m(a, a, a)[0], (q,))
    assert tgrad.autograd.gradcheck(lambda a: m(a, a, a, need_weights=False)[0], (q,))


# ------------------------------------------- packed in-projections (query is key is value)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masks", [False, True])
def test_packed_self_attention_matches_numpy_and_the_unpacked_path(batch_first, need_weights,
                                                                   masks):
    """One tensor as query, key and value takes one (L N, 3E) in-projection (PyTorch's
    _in_projection_packed): the NumPy float64 values, and the values and gradients of three
    copies of it (three projections) up to rounding."""
    rng = np.random.default_rng(11)
    m = _module(batch_first=batch_first)
    x = rng.standard_normal((5, 3, 8))  # (L, N, E), odd sizes
    kpm = np.zeros((3, 5), dtype=bool)
    kpm[1, [1, 3]] = True  # (every query keeps key 0: no row without keys)
    am = np.triu(np.ones((5, 5), dtype=bool), 1)
    kw = {"key_padding_mask": tgrad.tensor(kpm), "attn_mask": tgrad.tensor(am)} if masks \
        else {}
    xin = x.transpose(1, 0, 2) if batch_first else x
    t = tgrad.tensor(xin, requires_grad=True)
    out, w = m(t, t, t, need_weights=need_weights, **kw)
    copies = [tgrad.tensor(xin, requires_grad=True) for _ in range(3)]
    out3, w3 = m(*copies, need_weights=need_weights, **kw)
    ref_out, ref_w = _np_mha(m, x, x, x, kpm if masks else None, am if masks else None)
    got = out.detach().numpy()
    np.testing.assert_allclose(got.transpose(1, 0, 2) if batch_first else got, ref_out,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, out3.detach().numpy(), rtol=1e-13, atol=1e-13)
    if need_weights:
        np.testing.assert_allclose(w.detach().numpy(), ref_w, rtol=1e-12, atol=1e-12)
    else:
        assert w is None and w3 is None
    g = tgrad.tensor(rng.standard_normal(out.shape))
    (gx,) = tgrad.autograd.grad(out, (t,), g)
    g3 = tgrad.autograd.grad(out3, copies, g)
    np.testing.assert_allclose(gx.numpy(), sum(c.numpy() for c in g3), rtol=1e-12,
                               atol=1e-12)


def test_packed_projections_graph():
    """Self-attention: one AddmmBackward0 for the in-projection (and one for out_proj), its
    q, k, v one UnbindBackward0 of it, no slices of in_proj_weight; key is value: one
    product for q and one for k and v, in_proj_weight / in_proj_bias split once each; the
    softmax of unmasked scores without the safe softmax's wheres (CPU)."""
    m = _module(batch_first=True)
    x = tgrad.tensor(np.random.default_rng(12).standard_normal((2, 3, 8)), requires_grad=True)
    for need_weights in (False, True):
        names = graph_node_names(m(x, x, x, need_weights=need_weights)[0])
        assert names.count("AddmmBackward0") == 2 and names.count("UnbindBackward0") == 1
        assert names.count("BmmBackward0") == 2 and names.count("CloneBackward0") == 2
        for absent in ("MmBackward0", "SliceBackward0", "WhereBackward0", "ExpandBackward0"):
            assert absent not in names
    mem = tgrad.tensor(np.random.default_rng(13).standard_normal((2, 4, 8)))
    names = graph_node_names(m(x, mem, mem, need_weights=False)[0])  # q: linear's mm + add
    assert names.count("AddmmBackward0") == 2 and names.count("MmBackward0") == 1
    assert names.count("UnbindBackward0") == 1
    assert names.count("SplitWithSizesBackward0") == 2 and "SliceBackward0" not in names


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("kind", ["self", "kv", "bias_kv_zero_attn", "unbatched"])
def test_packed_projections_gradcheck_and_gradgradcheck(kind, need_weights):
    """Gradients (and double backward: the create_graph path) of the packed projections in
    float64 w.r.t. the input(s) and in_proj_weight / in_proj_bias, with a float mask and a
    key padding mask."""
    rng = np.random.default_rng(14)
    e, h, n, tgt, src = 4, 2, 2, 3, 2

    def leaf(*shape):
        return tgrad.tensor(rng.standard_normal(shape), requires_grad=True)

    w_in, b_in, wo, bo = leaf(3 * e, e), leaf(3 * e), leaf(e, e), leaf(e)
    bk = bv = None
    if kind == "bias_kv_zero_attn":
        bk, bv = leaf(1, 1, e), leaf(1, 1, e)
    kpm = tgrad.tensor(np.array([[False, True], [False, False]]))
    masks = {}
    if kind == "kv":
        masks = {"key_padding_mask": kpm,
                 "attn_mask": tgrad.tensor(rng.standard_normal((tgt, src)))}
    elif kind == "self":
        masks = {"attn_mask": tgrad.tensor(rng.standard_normal((n * h, tgt, tgt)))}

    def mha(q, kv, w, b):
        k = q if kind != "kv" else kv
        out, weights = F.multi_head_attention_forward(
            q, k, k, e, h, w, b, bk, bv, kind == "bias_kv_zero_attn", 0.0, wo, bo,
            need_weights=need_weights, **masks)
        return out if weights is None else (out, weights)

    q = leaf(tgt, e) if kind == "unbatched" else leaf(tgt, n, e)
    kv = leaf(src, n, e)
    args = (q, kv, w_in, b_in)
    assert tgrad.autograd.gradcheck(mha, args)
    assert tgrad.autograd.gradgradcheck(mha, args)


def test_packed_self_attention_static_kv_and_empty():
    """static_k / static_v replace the packed projection's keys and values (its q is
    used); empty sequences and batches go through."""
    rng = np.random.default_rng(15)
    tgt, n, e, h = 3, 2, 6, 3
    hd = e // h
    x = tgrad.tensor(rng.standard_normal((tgt, n, e)))
    w_in, wo = rng.standard_normal((3 * e, e)), rng.standard_normal((e, e))
    sk, sv = rng.standard_normal((n * h, 4, hd)), rng.standard_normal((n * h, 4, hd))
    t = tgrad.tensor
    out, _ = F.multi_head_attention_forward(
        x, x, x, e, h, t(w_in), None, None, None, False, 0.0, t(wo), None,
        static_k=t(sk), static_v=t(sv))
    qh = (x.numpy() @ w_in[:e].T).reshape(tgt, n * h, hd).transpose(1, 0, 2)
    attn, _ = _np_attention(qh, sk, sv, hd)
    ref = attn.transpose(1, 0, 2).reshape(tgt, n, e) @ wo.T
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    m = _module(batch_first=True)
    for shape in ((0, 3, 8), (2, 0, 8)):
        z = tgrad.zeros(shape, dtype=tgrad.float64, requires_grad=True)
        for need_weights in (True, False):
            y, _ = m(z, z, z, need_weights=need_weights)
            assert y.shape == shape
            (gz,) = tgrad.autograd.grad(y.sum(), (z,))
            assert gz.shape == shape


# ------------------------------------------------- the safe softmax's wheres on the CPU
def _where_safe_softmax(scores):
    """The safe softmax written with its two wheres (the path the CPU skips when no row is
    all -inf)."""
    empty = (scores == float("-inf")).all(-1, keepdim=True)
    return tgrad.where(empty, 0.0, F.softmax(tgrad.where(empty, 0.0, scores), -1))


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_safe_softmax_without_empty_rows_is_the_where_composition_bit_for_bit(dtype):
    from tgrad.nn._attention import safe_softmax
    rng = np.random.default_rng(16)
    s = rng.standard_normal((2, 3, 5, 7))
    s[0, 1, 2, :3] = -np.inf  # some -inf, no row all -inf
    for arr in (rng.standard_normal((2, 3, 5, 7)), s):
        x = tgrad.tensor(arr, dtype=dtype, requires_grad=True)
        g = tgrad.tensor(rng.standard_normal(arr.shape), dtype=dtype)
        got, want = safe_softmax(x), _where_safe_softmax(x)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(tgrad.autograd.grad(got, (x,), g)[0].numpy(),
                                      tgrad.autograd.grad(want, (x,), g)[0].numpy())


def test_safe_softmax_rows_all_minus_inf_and_nan_keep_the_wheres():
    """A row that is all -inf gives 0 and no gradient with no mask at all (infinite
    inputs), also next to a NaN row (its NaN kept), and with a float mask of -inf."""
    from tgrad.nn._attention import safe_softmax
    s = np.random.default_rng(17).standard_normal((2, 4, 3))
    s[0, 1] = -np.inf
    s[1, 2, 0] = np.nan
    x = tgrad.tensor(s, requires_grad=True)
    y = safe_softmax(x)
    want = _where_safe_softmax(tgrad.tensor(s)).numpy()
    np.testing.assert_array_equal(y.detach().numpy(), want)
    assert not y.detach().numpy()[0, 1].any() and np.isnan(y.detach().numpy()[1, 2]).all()
    (gx,) = tgrad.autograd.grad(y, (x,), tgrad.ones(2, 4, 3, dtype=tgrad.float64))
    assert not gx.numpy()[0, 1].any()
    q = tgrad.tensor(np.ones((1, 2, 2)))
    k = tgrad.tensor(np.array([[[np.inf, 1.0], [np.inf, 1.0]]]))  # scores +inf: NaN rows
    kneg = tgrad.tensor(np.array([[[-np.inf, 1.0], [-np.inf, 1.0]]]))  # scores -inf: 0
    assert np.isnan(F.scaled_dot_product_attention(q, k, q).numpy()).all()
    assert not F.scaled_dot_product_attention(q, kneg, q).numpy().any()


def test_encoder_layer_and_packed_attention_on_interpreted_cuda():
    """The packed projections, the 4-D heads and the attention's products on the emulated
    cuda device (safe softmax with its wheres there): the CPU's values and gradients, and a
    double backward through the packed self-attention."""
    pytest.importorskip("triton")
    res = run_json("""
import json, numpy as np, tgrad, tgrad.nn as nn, tgrad.nn.functional as F
rng = np.random.default_rng(18)
x0 = rng.standard_normal((2, 3, 8))
kpm0 = np.array([[False, False, True], [False, False, False]])
out = {}
for dev in ("cpu", "cuda"):
    tgrad.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True,
                                       activation="gelu", dtype=tgrad.float64).to(dev)
    x = tgrad.tensor(x0, device=dev, requires_grad=True)
    kpm = tgrad.tensor(kpm0, device=dev)
    y = layer(x, src_key_padding_mask=kpm)
    params = [x] + list(layer.parameters())
    grads = tgrad.autograd.grad((y * y).sum(), params)
    mha = layer.self_attn
    a, w = mha(x, x, x, key_padding_mask=kpm)
    (gx,) = tgrad.autograd.grad((a * a).sum() + w.sum(), (x,), create_graph=True)
    (ggx,) = tgrad.autograd.grad((gx * gx).sum(), (x,))
    out[dev] = [t.detach().cpu().numpy().ravel().tolist() for t in (y, a, w, gx, ggx) + grads]
print(json.dumps(out))
""")
    for got, want in zip(res["cuda"], res["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_causal_sdpa_skips_the_empty_row_wheres_with_the_same_bits():
    """is_causal on the CPU: no row is all -inf (row i keeps columns 0..i) unless the scores
    held -inf / NaN already, so the plain softmax runs; values and gradients are the bits of
    the same mask given as a bool attn_mask (safe_softmax's wheres). L < S, L > S, and -inf
    keys (the safe path again)."""
    rng = np.random.default_rng(7)
    for shape_q, shape_k, inf in (((2, 3, 7, 5), (2, 3, 9, 5), False),
                                  ((2, 3, 9, 5), (2, 3, 7, 5), False),
                                  ((1, 2, 6, 4), (1, 2, 6, 4), True)):
        kv = rng.standard_normal(shape_k)
        if inf:
            kv[..., 1, :] = -np.inf
        arrays = (rng.standard_normal(shape_q), kv, rng.standard_normal(shape_k))
        g = tgrad.tensor(rng.standard_normal(shape_q[:-1] + (shape_k[-1],)).astype(np.float32))
        mask = tgrad.ones(shape_q[-2], shape_k[-2], dtype=tgrad.bool).tril()
        got = []
        for kw in ({"is_causal": True}, {"attn_mask": mask}):
            q, k, v = (tgrad.tensor(a.astype(np.float32), requires_grad=True) for a in arrays)
            y = F.scaled_dot_product_attention(q, k, v, **kw)
            y.backward(g)
            got.append([y.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()])
        for a, b in zip(*got):
            assert a.tobytes() == b.tobytes()
