"""nn.Transformer and its encoder/decoder layers and stacks against an independent NumPy
float64 implementation (multi-head attention, layer norm and feed-forward written here from
the weights read out of the modules), gradients against finite differences, dropout,
PyTorch's parameter names and error texts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F

E, H, FF = 8, 2, 12  # d_model, nhead, dim_feedforward of the forward checks
_erf = np.vectorize(math.erf)


# --- the NumPy reference (sequence-first (L, N, E) layout) ---------------------------------

def _params(m: nn.Module, seed: int = 0) -> dict:
    """Give every parameter random values (norm weights near 1) and return them as NumPy."""
    rng = np.random.default_rng(seed)
    with tgrad.no_grad():
        for name, p in m.named_parameters():
            v = 0.4 * rng.standard_normal(p.shape)
            if "norm" in name and name.endswith("weight"):
                v = 1.0 + 0.2 * v
            p.copy_(tgrad.tensor(v, dtype=p.dtype))
    return {n: p.detach().numpy().copy() for n, p in m.named_parameters()}


def _lin(x, p, name):
    y = x @ p[name + ".weight"].T
    return y + p[name + ".bias"] if name + ".bias" in p else y


def _ln(x, p, name, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * p[name + ".weight"]
    return y + p[name + ".bias"] if name + ".bias" in p else y


def _act(x, kind):
    if kind == "relu":
        return np.maximum(x, 0.0)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))  # exact gelu


def _mha(xq, xkv, p, name, h, mask=None, kpm=None):
    """softmax(q k^T / sqrt(hd) + mask, -inf where kpm) v per head, then out_proj.
    xq (L, N, E), xkv (S, N, E); mask (L, S) additive float; kpm (N, S) bool True = pad."""
    e = xq.shape[-1]
    hd = e // h
    w = p[name + ".in_proj_weight"]
    b = p.get(name + ".in_proj_bias", np.zeros(3 * e))
    q, k, v = (x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]
               for i, x in enumerate((xq, xkv, xkv)))
    n = xq.shape[1]
    q, k, v = (t.reshape(t.shape[0], n, h, hd).transpose(1, 2, 0, 3) for t in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)  # (N, H, L, S)
    if mask is not None:
        s = s + mask
    if kpm is not None:
        s = np.where(kpm[:, None, None, :], -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    o = (a @ v).transpose(2, 0, 1, 3).reshape(xq.shape[0], n, e)
    return _lin(o, p, name + ".out_proj")


def _ffn(x, p, pre, act):
    return _lin(_act(_lin(x, p, pre + "linear1"), act), p, pre + "linear2")


def _np_encoder_layer(x, p, pre, norm_first, act, mask=None, kpm=None, h=H):
    sa = lambda y: _mha(y, y, p, pre + "self_attn", h, mask, kpm)
    if norm_first:
        x = x + sa(_ln(x, p, pre + "norm1"))
        return x + _ffn(_ln(x, p, pre + "norm2"), p, pre, act)
    x = _ln(x + sa(x), p, pre + "norm1")
    return _ln(x + _ffn(x, p, pre, act), p, pre + "norm2")


def _np_decoder_layer(x, mem, p, pre, norm_first, act, tmask=None, tkpm=None, mmask=None,
                      mkpm=None, h=H):
    sa = lambda y: _mha(y, y, p, pre + "self_attn", h, tmask, tkpm)
    ca = lambda y: _mha(y, mem, p, pre + "multihead_attn", h, mmask, mkpm)
    if norm_first:
        x = x + sa(_ln(x, p, pre + "norm1"))
        x = x + ca(_ln(x, p, pre + "norm2"))
        return x + _ffn(_ln(x, p, pre + "norm3"), p, pre, act)
    x = _ln(x + sa(x), p, pre + "norm1")
    x = _ln(x + ca(x), p, pre + "norm2")
    return _ln(x + _ffn(x, p, pre, act), p, pre + "norm3")


def _causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


def _t(a):
    return None if a is None else tgrad.tensor(a)


def _seq_first(y, batch_first):
    return y.transpose(1, 0, 2) if batch_first else y


def _check(out, ref, batch_first=False):
    got = _seq_first(out.detach().numpy(), batch_first)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


_KPM_SRC = np.array([[False, False, True, False, False], [False, False, False, False, True]])
_KPM_TGT = np.array([[False, False, True, False], [False, False, False, False]])
_MEM_BIAS = np.random.default_rng(9).standard_normal((4, 5))  # finite float memory_mask


# --- forward against NumPy ----------------------------------------------------------------

@pytest.mark.parametrize("masks", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_numpy(norm_first, act, batch_first, masks):
    layer = nn.TransformerEncoderLayer(E, H, FF, dropout=0.3, activation=act,
                                       batch_first=batch_first, norm_first=norm_first,
                                       dtype=tgrad.float64).eval()
    p = _params(layer)
    x = np.random.default_rng(1).standard_normal((5, 2, E))
    mask, kpm = (_causal(5), _KPM_SRC) if masks else (None, None)
    out = layer(tgrad.tensor(_seq_first(x, batch_first)), src_mask=_t(mask),
                src_key_padding_mask=_t(kpm))
    assert out.shape == _seq_first(x, batch_first).shape
    _check(out, _np_encoder_layer(x, p, "", norm_first, act, mask, kpm), batch_first)


@pytest.mark.parametrize("masks", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_numpy(norm_first, act, batch_first, masks):
    layer = nn.TransformerDecoderLayer(E, H, FF, dropout=0.3, activation=act,
                                       batch_first=batch_first, norm_first=norm_first,
                                       dtype=tgrad.float64).eval()
    p = _params(layer)
    rng = np.random.default_rng(2)
    x, mem = rng.standard_normal((4, 2, E)), rng.standard_normal((5, 2, E))
    tm, tk, mm, mk = (_causal(4), _KPM_TGT, _MEM_BIAS, _KPM_SRC) if masks else (None,) * 4
    tx, tmem = (tgrad.tensor(_seq_first(a, batch_first)) for a in (x, mem))
    out = layer(tx, tmem, tgt_mask=_t(tm), memory_mask=_t(mm), tgt_key_padding_mask=_t(tk),
                memory_key_padding_mask=_t(mk))
    _check(out, _np_decoder_layer(x, mem, p, "", norm_first, act, tm, tk, mm, mk), batch_first)


@pytest.mark.parametrize("batch_first, norm_first, act", [(False, False, "relu"),
                                                          (True, True, "gelu")])
def test_transformer_matches_numpy(batch_first, norm_first, act):
    tgrad.manual_seed(0)
    model = nn.Transformer(E, H, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=FF, activation=act, batch_first=batch_first,
                           norm_first=norm_first, dtype=tgrad.float64).eval()
    p = _params(model, seed=3)
    rng = np.random.default_rng(4)
    src, tgt = rng.standard_normal((5, 2, E)), rng.standard_normal((4, 2, E))
    tmask = nn.Transformer.generate_square_subsequent_mask(4, dtype=tgrad.float64)
    tsrc, ttgt = (tgrad.tensor(_seq_first(a, batch_first)) for a in (src, tgt))
    out = model(tsrc, ttgt, tgt_mask=tmask, src_key_padding_mask=_t(_KPM_SRC),
                memory_key_padding_mask=_t(_KPM_SRC), tgt_is_causal=True)
    mem = src
    for i in range(2):
        mem = _np_encoder_layer(mem, p, f"encoder.layers.{i}.", norm_first, act, None, _KPM_SRC)
    mem = _ln(mem, p, "encoder.norm")
    y = tgt
    for i in range(2):
        y = _np_decoder_layer(y, mem, p, f"decoder.layers.{i}.", norm_first, act, _causal(4),
                              None, None, _KPM_SRC)
    _check(out, _ln(y, p, "decoder.norm"), batch_first)


def test_masks_bool_float_and_hints_agree():
    layer = nn.TransformerEncoderLayer(E, H, FF, dtype=tgrad.float64).eval()
    p = _params(layer)
    x = np.random.default_rng(5).standard_normal((5, 2, E))
    ref = _np_encoder_layer(x, p, "", False, "relu", _causal(5), _KPM_SRC)
    fkpm = np.where(_KPM_SRC, -np.inf, 0.0)
    bmask = np.isinf(_causal(5))
    for m, k in ((_causal(5), fkpm), (bmask, _KPM_SRC), (bmask, fkpm)):
        _check(layer(tgrad.tensor(x), src_mask=_t(m), src_key_padding_mask=_t(k),
                     is_causal=True), ref)
    enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    for hint in (None, True, False):
        _check(enc(tgrad.tensor(x), mask=_t(_causal(5)), src_key_padding_mask=_t(fkpm),
                   is_causal=hint), ref)


def test_unbatched_inputs_and_callable_activation():
    layer = nn.TransformerDecoderLayer(E, H, FF, activation=nn.Tanh(), dtype=tgrad.float64)
    layer.eval()
    assert isinstance(layer.activation, nn.Tanh)
    assert "activation" in dict(layer.named_modules())
    p = _params(layer)
    rng = np.random.default_rng(6)
    x, mem = rng.standard_normal((4, E)), rng.standard_normal((3, E))
    out = layer(tgrad.tensor(x), tgrad.tensor(mem), tgt_mask=_t(_causal(4)),
                memory_key_padding_mask=_t(np.array([False, True, False])))
    assert out.shape == (4, E)
    # reference: tanh feed-forward, written out
    sa = _mha(x[:, None], x[:, None], p, "self_attn", H, _causal(4))
    y = _ln(x[:, None] + sa, p, "norm1")
    y = _ln(y + _mha(y, mem[:, None], p, "multihead_attn", H, None,
                     np.array([[False, True, False]])), p, "norm2")
    y = _ln(y + _lin(np.tanh(_lin(y, p, "linear1")), p, "linear2"), p, "norm3")
    _check(out, y[:, 0])


def test_bias_false_and_layer_norm_eps():
    layer = nn.TransformerEncoderLayer(E, H, FF, layer_norm_eps=0.5, bias=False,
                                       dtype=tgrad.float64).eval()
    assert [n for n, _ in layer.named_parameters()] == [
        "self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight",
        "linear2.weight", "norm1.weight", "norm2.weight"]
    assert layer.norm1.eps == 0.5 and layer.norm2.eps == 0.5
    p = _params(layer)
    x = np.random.default_rng(7).standard_normal((3, 2, E))
    out = layer(tgrad.tensor(x))
    sa = _mha(x, x, p, "self_attn", H)
    y = _ln(x + sa, p, "norm1", eps=0.5)
    _check(out, _ln(y + _ffn(y, p, "", "relu"), p, "norm2", eps=0.5))


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype is tgrad.float32 and m.shape == (4, 4)
    np.testing.assert_array_equal(m.numpy(), _causal(4).astype(np.float32))
    m64 = nn.Transformer.generate_square_subsequent_mask(3, dtype=tgrad.float64)
    assert m64.dtype is tgrad.float64
    np.testing.assert_array_equal(m64.numpy(), _causal(3))


# --- stacks: independent copies -----------------------------------------------------------

def test_encoder_stack_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(E, H, FF, dtype=tgrad.float64)
    p = _params(layer)
    x = np.random.default_rng(8).standard_normal((5, 2, E))
    one = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    two = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(E, dtype=tgrad.float64)).eval()
    assert len(two.layers) == 2 and two.num_layers == 2
    assert two.layers[0] is not layer and two.layers[0] is not two.layers[1]
    w0, w1 = two.layers[0].linear1.weight, two.layers[1].linear1.weight
    assert w0 is not w1 and w0 is not layer.linear1.weight
    # copies start equal: 2 layers = the 1-layer encoder applied twice, then the final norm
    y1 = one(tgrad.tensor(x))
    _check(y1, _np_encoder_layer(x, p, "", False, "relu"))
    y2 = two(tgrad.tensor(x))
    pn = {"n.weight": np.ones(E), "n.bias": np.zeros(E)}
    _check(y2, _ln(_np_encoder_layer(_np_encoder_layer(x, p, "", False, "relu"), p, "", False,
                                     "relu"), pn, "n"))
    # changing one copy changes neither the other nor the original layer
    with tgrad.no_grad():
        w1.mul_(2.0)
    np.testing.assert_array_equal(w0.detach().numpy(), p["linear1.weight"])
    np.testing.assert_array_equal(layer.linear1.weight.detach().numpy(), p["linear1.weight"])
    p1 = {n: q.detach().numpy() for n, q in two.named_parameters()}
    x1 = _np_encoder_layer(x, p1, "layers.0.", False, "relu")
    _check(two(tgrad.tensor(x)), _ln(_np_encoder_layer(x1, p1, "layers.1.", False, "relu"),
                                     p1, "norm"))


def test_decoder_stack_matches_numpy():
    layer = nn.TransformerDecoderLayer(E, H, FF, norm_first=True, dtype=tgrad.float64)
    dec = nn.TransformerDecoder(layer, 2).eval()
    assert dec.norm is None
    p = _params(dec, seed=11)
    rng = np.random.default_rng(12)
    x, mem = rng.standard_normal((4, 2, E)), rng.standard_normal((5, 2, E))
    out = dec(tgrad.tensor(x), tgrad.tensor(mem), tgt_mask=_t(_causal(4)),
              tgt_key_padding_mask=_t(_KPM_TGT), memory_mask=_t(_MEM_BIAS))
    y = x
    for i in range(2):
        y = _np_decoder_layer(y, mem, p, f"layers.{i}.", True, "relu", _causal(4), _KPM_TGT,
                              _MEM_BIAS)
    _check(out, y)


# --- gradients -----------------------------------------------------------------------------

def _tiny(cls, **kw):
    tgrad.manual_seed(0)
    return cls(4, 2, 6, dropout=0.0, dtype=tgrad.float64, **kw)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradcheck(norm_first):
    layer = _tiny(nn.TransformerEncoderLayer, norm_first=norm_first, activation="gelu")
    _params(layer, seed=13)
    x = tgrad.tensor(np.random.default_rng(14).standard_normal((3, 2, 4)), requires_grad=True)
    mask = tgrad.tensor(_causal(3))
    fn = lambda a: layer(a, src_mask=mask)
    assert tgrad.autograd.gradcheck(fn, (x,))
    assert tgrad.autograd.gradgradcheck(fn, (x,))
    # parameter gradients exist and agree with a finite difference of one weight entry
    layer(x, src_mask=mask).pow(2).sum().backward()
    w = layer.linear1.weight
    g, base = w.grad.numpy()[1, 2], w.detach().numpy().copy()

    def loss_at(delta):
        bumped = base.copy()
        bumped[1, 2] += delta
        with tgrad.no_grad():
            w.copy_(tgrad.tensor(bumped))
            return layer(x, src_mask=mask).pow(2).sum().item()

    fd = (loss_at(1e-6) - loss_at(-1e-6)) / 2e-6
    loss_at(0.0)
    assert abs(g - fd) < 1e-6 * max(1.0, abs(g))


def test_decoder_layer_gradcheck():
    layer = _tiny(nn.TransformerDecoderLayer)
    _params(layer, seed=15)
    rng = np.random.default_rng(16)
    x = tgrad.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    mem = tgrad.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    mask = tgrad.tensor(_causal(3))
    kpm = tgrad.tensor(np.array([[False, True, False], [False, False, False]]))
    assert tgrad.autograd.gradcheck(
        lambda a, m: layer(a, m, tgt_mask=mask, memory_key_padding_mask=kpm), (x, mem))


# --- dropout ---------------------------------------------------------------------------------

def test_training_dropout_is_random_and_reproducible():
    tgrad.manual_seed(0)
    model = nn.Transformer(E, H, 1, 1, FF, dropout=0.5, dtype=tgrad.float64)
    rng = np.random.default_rng(17)
    src, tgt = tgrad.tensor(rng.standard_normal((5, 2, E))), \
        tgrad.tensor(rng.standard_normal((4, 2, E)))

    def run(seed):
        tgrad.manual_seed(seed)
        return model(src, tgt).detach().numpy()

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    model.eval()
    e1, e2 = run(1), run(2)
    np.testing.assert_array_equal(e1, e2)
    assert not np.allclose(a, e1)
    assert all(not m.training for m in model.modules())


# --- parameters, state_dict, initialisation ------------------------------------------------

_TORCH_TRANSFORMER_KEYS = [  # list(torch.nn.Transformer(4, 2, 2, 1, 6).state_dict())
    'encoder.layers.0.self_attn.in_proj_weight', 'encoder.layers.0.self_attn.in_proj_bias',
    'encoder.layers.0.self_attn.out_proj.weight', 'encoder.layers.0.self_attn.out_proj.bias',
    'encoder.layers.0.linear1.weight', 'encoder.layers.0.linear1.bias',
    'encoder.layers.0.linear2.weight', 'encoder.layers.0.linear2.bias',
    'encoder.layers.0.norm1.weight', 'encoder.layers.0.norm1.bias',
    'encoder.layers.0.norm2.weight', 'encoder.layers.0.norm2.bias',
    'encoder.layers.1.self_attn.in_proj_weight', 'encoder.layers.1.self_attn.in_proj_bias',
    'encoder.layers.1.self_attn.out_proj.weight', 'encoder.layers.1.self_attn.out_proj.bias',
    'encoder.layers.1.linear1.weight', 'encoder.layers.1.linear1.bias',
    'encoder.layers.1.linear2.weight', 'encoder.layers.1.linear2.bias',
    'encoder.layers.1.norm1.weight', 'encoder.layers.1.norm1.bias',
    'encoder.layers.1.norm2.weight', 'encoder.layers.1.norm2.bias',
    'encoder.norm.weight', 'encoder.norm.bias',
    'decoder.layers.0.self_attn.in_proj_weight', 'decoder.layers.0.self_attn.in_proj_bias',
    'decoder.layers.0.self_attn.out_proj.weight', 'decoder.layers.0.self_attn.out_proj.bias',
    'decoder.layers.0.multihead_attn.in_proj_weight',
    'decoder.layers.0.multihead_attn.in_proj_bias',
    'decoder.layers.0.multihead_attn.out_proj.weight',
    'decoder.layers.0.multihead_attn.out_proj.bias',
    'decoder.layers.0.linear1.weight', 'decoder.layers.0.linear1.bias',
    'decoder.layers.0.linear2.weight', 'decoder.layers.0.linear2.bias',
    'decoder.layers.0.norm1.weight', 'decoder.layers.0.norm1.bias',
    'decoder.layers.0.norm2.weight', 'decoder.layers.0.norm2.bias',
    'decoder.layers.0.norm3.weight', 'decoder.layers.0.norm3.bias',
    'decoder.norm.weight', 'decoder.norm.bias']

_TORCH_DECODER_LAYER_PARAMS = [  # torch.nn.TransformerDecoderLayer(4, 2, 6).named_parameters()
    ('self_attn.in_proj_weight', (12, 4)), ('self_attn.in_proj_bias', (12,)),
    ('self_attn.out_proj.weight', (4, 4)), ('self_attn.out_proj.bias', (4,)),
    ('multihead_attn.in_proj_weight', (12, 4)), ('multihead_attn.in_proj_bias', (12,)),
    ('multihead_attn.out_proj.weight', (4, 4)), ('multihead_attn.out_proj.bias', (4,)),
    ('linear1.weight', (6, 4)), ('linear1.bias', (6,)), ('linear2.weight', (4, 6)),
    ('linear2.bias', (4,)), ('norm1.weight', (4,)), ('norm1.bias', (4,)),
    ('norm2.weight', (4,)), ('norm2.bias', (4,)), ('norm3.weight', (4,)), ('norm3.bias', (4,))]

_TORCH_ENCODER_LAYER_MODULES = [  # [n for n, _ in TransformerEncoderLayer(4, 2, 6).named_modules()]
    '', 'self_attn', 'self_attn.out_proj', 'linear1', 'dropout', 'linear2', 'norm1', 'norm2',
    'dropout1', 'dropout2']


def test_state_dict_keys_and_shapes_match_pytorch():
    model = nn.Transformer(4, 2, 2, 1, 6)
    sd = model.state_dict()
    assert list(sd) == _TORCH_TRANSFORMER_KEYS
    dl = nn.TransformerDecoderLayer(4, 2, 6)
    assert [(n, tuple(q.shape)) for n, q in dl.named_parameters()] == _TORCH_DECODER_LAYER_PARAMS
    enc = nn.TransformerEncoderLayer(4, 2, 6)
    assert [n for n, _ in enc.named_modules()] == _TORCH_ENCODER_LAYER_MODULES
    # a state_dict round trip into a differently initialised model
    tgrad.manual_seed(1)
    other = nn.Transformer(4, 2, 2, 1, 6)
    other.load_state_dict(sd)
    for (n, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=n)


def test_transformer_initialisation_is_xavier_for_matrices():
    tgrad.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, 16)
    l1 = model.encoder.layers[0].linear1
    bound = math.sqrt(6.0 / (8 + 16))  # xavier_uniform_ on (16, 8), not Linear's default
    w = l1.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 1 / math.sqrt(8)
    assert np.abs(l1.bias.detach().numpy()).max() <= 1 / math.sqrt(8)  # biases keep their init
    assert (model.encoder.norm.weight.detach().numpy() == 1).all()
    assert model.d_model == 8 and model.nhead == 2 and model.batch_first is False
    a, b = model.encoder.layers[0].linear1.weight, model.decoder.layers[0].linear1.weight
    assert not np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_custom_encoder_and_decoder():
    class PassMasks(nn.Module):  # an encoder with the same call signature
        def forward(self, x, mask=None, src_key_padding_mask=None, is_causal=None):
            return x

    enc, dec = PassMasks(), nn.TransformerDecoder(
        nn.TransformerDecoderLayer(E, H, FF, dtype=tgrad.float64), 1)
    model = nn.Transformer(E, H, custom_encoder=enc, custom_decoder=dec).eval()
    assert model.encoder is enc and model.decoder is dec
    p = _params(model, seed=18)
    rng = np.random.default_rng(19)
    src, tgt = rng.standard_normal((5, 1, E)), rng.standard_normal((3, 1, E))
    out = model(tgrad.tensor(src), tgrad.tensor(tgt))
    _check(out, _np_decoder_layer(tgt, src, p, "decoder.layers.0.", False, "relu"))


# --- errors ----------------------------------------------------------------------------------

_x = lambda *s: tgrad.ones(*s)


@pytest.mark.parametrize("fn, exc, text", [
    (lambda: nn.TransformerEncoderLayer(8, 3), AssertionError,
     "embed_dim must be divisible by num_heads"),
    (lambda: nn.TransformerDecoderLayer(8, 3), AssertionError,
     "embed_dim must be divisible by num_heads"),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), RuntimeError,
     "activation should be relu/gelu, not tanh"),
    (lambda: nn.TransformerDecoderLayer(8, 2, activation="silu"), RuntimeError,
     "activation should be relu/gelu, not silu"),
    (lambda: nn.Transformer(4, 2, 1, 1, 6)(_x(3, 2, 4), _x(3, 1, 4)), RuntimeError,
     "the batch number of src and tgt must be equal"),
    (lambda: nn.Transformer(4, 2, 1, 1, 6, batch_first=True)(_x(2, 3, 4), _x(1, 3, 4)),
     RuntimeError, "the batch number of src and tgt must be equal"),
    (lambda: nn.Transformer(4, 2, 1, 1, 6)(_x(3, 2, 5), _x(3, 2, 4)), RuntimeError,
     "the feature number of src and tgt must be equal to d_model"),
    (lambda: nn.TransformerEncoderLayer(4, 2, 6)(_x(3, 2, 4), is_causal=True), RuntimeError,
     "Need attn_mask if specifying the is_causal hint"),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 6), 1)(
        _x(3, 2, 4), is_causal=True), RuntimeError,
     "Need attn_mask if specifying the is_causal hint"),
    (lambda: nn.TransformerEncoderLayer(4, 2, 6)(
        _x(3, 2, 4), src_key_padding_mask=tgrad.ones(2, 3, dtype=tgrad.int64)), AssertionError,
     "only bool and floating types of src_key_padding_mask are supported"),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 6), 1)(
        _x(3, 2, 4), mask=tgrad.ones(3, 3, dtype=tgrad.int64)), AssertionError,
     "only bool and floating types of mask are supported"),
])
def test_errors(fn, exc, text):
    with pytest.raises(exc) as info:
        fn()
    assert text in str(info.value)


def test_exported():
    for name in ("Transformer", "TransformerEncoder", "TransformerDecoder",
                 "TransformerEncoderLayer", "TransformerDecoderLayer"):
        assert name in nn.__all__ and hasattr(nn, name)
    assert F.relu is nn.TransformerEncoderLayer(4, 2, 6).activation
    assert F.gelu is nn.TransformerDecoderLayer(4, 2, 6, activation="gelu").activation


# --- PyTorch's sparsity fast path: eval, no grad, batch_first, left-aligned padding --------

def _fast_encoder(norm_first=False, heads=2, enable=True, **kw):
    tgrad.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, heads, 6, dropout=0.0, batch_first=True,
                                       norm_first=norm_first, dtype=tgrad.float64, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4, dtype=tgrad.float64),
                                    enable_nested_tensor=enable)
    p = _params(enc, seed=13)
    return enc.eval(), p


def _np_encoder_stack(x, p, kpm, norm_first=False, act="relu", h=2):
    for i in range(2):
        x = _np_encoder_layer(x, p, f"layers.{i}.", norm_first, act, None, kpm, h)
    return _ln(x, p, "norm")


_KPM_LEFT = np.array([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])


def test_encoder_nested_fast_path_zeroes_padded_positions():
    # PyTorch's TransformerEncoder in eval without grad, with a left-aligned padding mask,
    # runs on a nested tensor: the padded positions of its output are 0; the others are the
    # masked computation's values
    enc, p = _fast_encoder()
    assert enc.use_nested_tensor
    x = np.random.default_rng(14).standard_normal((3, 5, 4))
    ref = _np_encoder_stack(x.transpose(1, 0, 2), p, _KPM_LEFT).transpose(1, 0, 2)
    ref[_KPM_LEFT] = 0.0
    # a float mask's nonzero entries are padding, dropped whatever their value (-3 here)
    for kpm in (_t(_KPM_LEFT), tgrad.zeros(3, 5, dtype=tgrad.float64).masked_fill(
            _t(_KPM_LEFT), float("-inf")), tgrad.zeros(3, 5, dtype=tgrad.float64).masked_fill(
            _t(_KPM_LEFT), -3.0)):
        with tgrad.no_grad():
            out = enc(tgrad.tensor(x), src_key_padding_mask=kpm)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    # a fully padded sequence: zeros (the masked computation alone gives NaN there)
    full = _KPM_LEFT.copy()
    full[2] = True
    with tgrad.no_grad():
        out = enc(tgrad.tensor(x), src_key_padding_mask=_t(full)).numpy()
    np.testing.assert_array_equal(out[2], 0.0)
    np.testing.assert_allclose(out[:2], ref[:2], rtol=1e-12, atol=1e-12)


def test_encoder_without_fast_path_keeps_padded_positions():
    x = np.random.default_rng(14).standard_normal((3, 5, 4))
    right = np.array([[False] * 5, [True] + [False] * 4, [False] * 5])  # not left-aligned
    for norm_first, heads, enable, kpm in [(True, 2, True, _KPM_LEFT), (False, 1, True, _KPM_LEFT),
                                           (False, 2, False, _KPM_LEFT), (False, 2, True, right)]:
        enc, p = _fast_encoder(norm_first, heads, enable)
        assert enc.use_nested_tensor == (enable and not norm_first and heads == 2)
        ref = _np_encoder_stack(x.transpose(1, 0, 2), p, kpm, norm_first,
                                h=heads).transpose(1, 0, 2)
        with tgrad.no_grad():
            out = enc(tgrad.tensor(x), src_key_padding_mask=_t(kpm))
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    # training mode, grad enabled with parameters requiring grad, or a mask given as well
    enc, p = _fast_encoder()
    ref = _np_encoder_stack(x.transpose(1, 0, 2), p, _KPM_LEFT).transpose(1, 0, 2)
    out = enc(tgrad.tensor(x), src_key_padding_mask=_t(_KPM_LEFT))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    with tgrad.no_grad():
        out = enc(tgrad.tensor(x), src_key_padding_mask=_t(_KPM_LEFT),
                  mask=tgrad.zeros(5, 5, dtype=tgrad.float64))
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
        out = enc.train()(tgrad.tensor(x), src_key_padding_mask=_t(_KPM_LEFT))
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_encoder_nested_tensor_warning():
    # PyTorch's UserWarning when enable_nested_tensor is True but the layer rules it out
    layer = nn.TransformerEncoderLayer(4, 2, 6, batch_first=True, norm_first=True)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but "
                      "self.use_nested_tensor is False because encoder_layer.norm_first "
                      "was True"):
        enc = nn.TransformerEncoder(layer, 1)
    assert enc.enable_nested_tensor and not enc.use_nested_tensor
    assert nn.TransformerEncoderLayer(4, 2, 6).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(4, 2, 6, activation="gelu").activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(4, 2, 6, activation=nn.Tanh()).activation_relu_or_gelu == 0
