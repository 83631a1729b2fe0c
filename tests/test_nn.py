"""tgrad.nn: Module bookkeeping, Parameter, init formulas and the layers, against NumPy
float64 references (and gradcheck for the layers' backward)."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.autograd import gradcheck
from tgrad.nn import init


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.register_buffer("count", tgrad.zeros(1))
        self.register_buffer("scratch", tgrad.zeros(2), persistent=False)
        self.scale = nn.Parameter(tgrad.ones(1))
        self.name = "block"  # a plain attribute

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.b = Block()
        self.b.fc = self.a.fc  # shared submodule: its parameters are listed once
        self.head = nn.Linear(4, 2, bias=False)

    def forward(self, x):
        return self.head(self.b(self.a(x).relu()))


# ----------------------------------------------------------------- Module bookkeeping
def test_named_parameters_buffers_and_modules():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["a.scale", "a.fc.weight", "a.fc.bias", "a.norm.weight", "a.norm.bias",
                     "b.scale", "b.norm.weight", "b.norm.bias", "head.weight"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert len(list(net.parameters(recurse=False))) == 0
    assert [n for n, _ in net.named_buffers()] == ["a.count", "a.scratch", "b.count",
                                                   "b.scratch"]
    assert [n for n, _ in net.named_children()] == ["a", "b", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "a", "a.fc", "a.norm", "b", "b.norm",
                                                   "head"]
    assert net.get_submodule("b.norm") is net.b.norm
    assert net.a.name == "block" and "name" not in net.a._parameters


def test_state_dict_keys_share_storage_and_skip_non_persistent():
    net = Net()
    sd = net.state_dict()
    # PyTorch's order: a module's own parameters, then its buffers, then its children.
    assert list(sd) == ["a.scale", "a.count", "a.fc.weight", "a.fc.bias", "a.norm.weight",
                        "a.norm.bias", "b.scale", "b.count", "b.fc.weight", "b.fc.bias",
                        "b.norm.weight", "b.norm.bias", "head.weight"]
    assert not any(v.requires_grad for v in sd.values())
    w = sd["a.fc.weight"]
    assert w.data_ptr() == net.a.fc.weight.data_ptr() and type(w) is tgrad.Tensor


def test_load_state_dict_copies_in_place_and_checks_keys():
    src, dst = Net(), Net()
    w_before = dst.a.fc.weight
    res = dst.load_state_dict(src.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    assert dst.a.fc.weight is w_before  # same Parameter object, new values
    for (n, p), (_, q) in zip(src.named_parameters(), dst.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    assert dst.a.fc.weight.is_leaf and dst.a.fc.weight.requires_grad

    sd = src.state_dict()
    del sd["head.weight"]
    sd["extra"] = tgrad.ones(1)
    with pytest.raises(RuntimeError, match=r'(?s)Error\(s\) in loading state_dict for Net.*'
                                           r'Missing key\(s\) in state_dict: "head.weight".*'
                                           r'Unexpected key\(s\) in state_dict: "extra"'):
        dst.load_state_dict(sd)
    res = dst.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["head.weight"] and res.unexpected_keys == ["extra"]

    sd = src.state_dict()
    sd["head.weight"] = tgrad.ones(3, 4)
    with pytest.raises(RuntimeError, match=r"size mismatch for head.weight: copying a param "
                                           r"with shape tgrad.Size\(\[3, 4\]\) from checkpoint, "
                                           r"the shape in current model is tgrad.Size\(\[2, 4\]\)"):
        dst.load_state_dict(sd)


def test_setattr_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'tgrad.FloatTensor' as parameter 'weight'"):
        m.weight = tgrad.ones(2, 2)
    m.bias = None
    assert m.bias is None and [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.Parameter(tgrad.zeros(3))
    assert [n for n, _ in m.named_parameters()] == ["weight", "extra"]
    del m.extra
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'p'"):
        m.register_parameter("p", _non_leaf_parameter())

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tgrad.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _non_leaf_parameter():
    p = nn.Parameter(tgrad.ones(1))
    q = nn.Parameter(tgrad.ones(1))
    q._grad_fn = (p * 2).grad_fn  # simulate a parameter that is the output of an op
    return q


def test_zero_grad_train_eval_requires_grad():
    net = Net()
    net(tgrad.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.training and net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_module_to_dtype_keeps_parameter_objects():
    m = nn.Linear(3, 2)
    w = m.weight
    m.register_buffer("idx", tgrad.arange(3))
    m.double()
    assert m.weight is w and w.dtype is tgrad.float64 and w.requires_grad
    assert m.idx.dtype is tgrad.int64  # integer buffers keep their dtype
    assert m(tgrad.ones(1, 3, dtype=tgrad.float64)).dtype is tgrad.float64


def test_repr_matches_pytorch_layout():
    m = nn.Sequential(nn.Linear(2, 8), nn.GELU(), nn.Dropout(0.1),
                      nn.Sequential(OrderedDict(norm=nn.LayerNorm(8), act=nn.ReLU())))
    assert repr(m) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=8, bias=True)\n"
        "  (1): GELU(approximate='none')\n"
        "  (2): Dropout(p=0.1, inplace=False)\n"
        "  (3): Sequential(\n"
        "    (norm): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "    (act): ReLU()\n"
        "  )\n"
        ")")
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"
    # ModuleList folds runs of equal reprs as PyTorch's: "(i-j): n x ..." (Sequential doesn't)
    ml = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.ReLU(), nn.Tanh(),
                        nn.Sequential(nn.ReLU()), nn.Sequential(nn.ReLU()), nn.ReLU()])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-2): 3 x ReLU()\n"
        "  (3): Tanh()\n"
        "  (4-5): 2 x Sequential(\n"
        "    (0): ReLU()\n"
        "  )\n"
        "  (6): ReLU()\n"
        ")")
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert repr(nn.Sequential(nn.ReLU(), nn.ReLU())) == (
        "Sequential(\n  (0): ReLU()\n  (1): ReLU()\n)")
    p = nn.Parameter(tgrad.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"


def test_parameter_basics():
    p = nn.Parameter(tgrad.zeros(2))
    assert isinstance(p, tgrad.Tensor) and p.requires_grad and p.is_leaf
    assert not nn.Parameter(tgrad.zeros(2), requires_grad=False).requires_grad
    assert type(p * 2) is tgrad.Tensor and type(p.detach()) is tgrad.Tensor


def test_forward_hooks():
    m = nn.Linear(2, 2)
    seen = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape) or out + 1)
    out = m(tgrad.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None] + 1,
                               rtol=1e-6)
    assert seen == [(1, 2)]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(m(tgrad.zeros(1, 2)).detach().numpy(),
                               m.bias.detach().numpy()[None], rtol=1e-6)


# ----------------------------------------------------------------- init
def _stats(t):
    a = np.asarray(t.detach().numpy(), np.float64)
    return a.min(), a.max(), a.mean(), a.std()


def test_linear_default_init_matches_pytorch_bounds():
    m = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform(a=sqrt 5): gain sqrt(1/3) * sqrt(3/fan_in)
    lo, hi, mean, std = _stats(m.weight)
    assert -bound <= lo and hi <= bound and hi > 0.99 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.01 * bound and abs(mean) < 0.01 * bound
    lo, hi, _, _ = _stats(m.bias)
    assert -bound <= lo and hi <= bound


@pytest.mark.parametrize("fn, kw, expected_std", [
    (init.xavier_uniform_, {"gain": 2.0}, 2.0 * math.sqrt(2.0 / (200 + 300))),
    (init.xavier_normal_, {}, math.sqrt(2.0 / (200 + 300))),
    (init.kaiming_uniform_, {"nonlinearity": "relu"}, math.sqrt(2.0) / math.sqrt(200)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"},
     math.sqrt(2.0) / math.sqrt(300)),
    (init.kaiming_normal_, {"a": 0.2}, math.sqrt(2.0 / 1.04) / math.sqrt(200)),
    (init.normal_, {"mean": 1.0, "std": 0.5}, 0.5),
    (init.uniform_, {"a": -3.0, "b": 1.0}, 4.0 / math.sqrt(12)),
])
def test_init_distributions(fn, kw, expected_std):
    w = tgrad.empty(300, 200, dtype=tgrad.float64)  # fan_in 200, fan_out 300
    assert fn(w, **kw) is w
    lo, hi, mean, std = _stats(w)
    assert abs(std - expected_std) < 0.01 * expected_std
    if fn in (init.xavier_uniform_, init.kaiming_uniform_):
        bound = expected_std * math.sqrt(3)
        assert -bound <= lo and hi <= bound
    if fn is init.uniform_:
        assert -3.0 <= lo and hi < 1.0 and abs(mean + 1.0) < 0.01


def test_init_misc_and_errors():
    w = nn.Parameter(tgrad.empty(3, 4))
    init.ones_(w)
    assert w.is_leaf and w.requires_grad and (w.detach().numpy() == 1).all()
    init.zeros_(w)
    assert not w.detach().numpy().any()
    init.constant_(w, 0.25)
    assert (w.detach().numpy() == 0.25).all()
    init.eye_(w)
    np.testing.assert_array_equal(w.detach().numpy(), np.eye(3, 4))
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tgrad.empty(5))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(tgrad.empty(2, 2), mode="fan_avg")


# ----------------------------------------------------------------- layers vs NumPy
def test_linear_forward_backward_against_numpy():
    m = nn.Linear(5, 3).double()
    x_np = np.random.default_rng(0).normal(size=(4, 2, 5))
    x = tgrad.tensor(x_np, requires_grad=True)
    y = m(x)
    w_np, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), x_np @ w_np.T + b, rtol=1e-12)
    g = np.random.default_rng(1).normal(size=(4, 2, 3))
    y.backward(tgrad.tensor(g))
    np.testing.assert_allclose(m.weight.grad.numpy(), np.einsum("abo,abi->oi", g, x_np),
                               rtol=1e-12)
    np.testing.assert_allclose(m.bias.grad.numpy(), g.sum((0, 1)), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), g @ w_np, rtol=1e-12)
    assert gradcheck(lambda x, w, b: nn.functional.linear(x, w, b),
                     (x.detach().requires_grad_(), m.weight, m.bias))


def test_layernorm_against_numpy_and_gradcheck():
    m = nn.LayerNorm((2, 3)).double()
    rng = np.random.default_rng(2)
    with tgrad.no_grad():
        m.weight.copy_(tgrad.tensor(rng.normal(size=(2, 3))))
        m.bias.copy_(tgrad.tensor(rng.normal(size=(2, 3))))
    x_np = rng.normal(size=(4, 2, 3))
    y = m(tgrad.tensor(x_np))
    mu = x_np.mean((1, 2), keepdims=True)
    var = x_np.var((1, 2), keepdims=True)
    ref = (x_np - mu) / np.sqrt(var + 1e-5) * m.weight.detach().numpy() + \
        m.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    x = tgrad.tensor(x_np, requires_grad=True)
    assert gradcheck(lambda x, w, b: nn.functional.layer_norm(x, (2, 3), w, b, 1e-5),
                     (x, m.weight, m.bias))
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None


def test_activations_against_numpy():
    x_np = np.linspace(-4, 4, 41)
    x = tgrad.tensor(x_np)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(nn.ReLU()(x).numpy(), np.maximum(x_np, 0))
    np.testing.assert_allclose(nn.GELU()(x).numpy(), 0.5 * x_np * (1 + erf(x_np / math.sqrt(2))),
                               rtol=1e-12, atol=1e-15)
    tanh_ref = 0.5 * x_np * (1 + np.tanh(math.sqrt(2 / math.pi) * (x_np + 0.044715 * x_np ** 3)))
    np.testing.assert_allclose(nn.GELU("tanh")(x).numpy(), tanh_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(nn.SiLU()(x).numpy(), x_np / (1 + np.exp(-x_np)), rtol=1e-12)
    np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh(x_np), rtol=1e-12)
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")


def test_dropout_train_and_eval():
    d = nn.Dropout(0.25)
    x = tgrad.ones(200, 100, dtype=tgrad.float64)
    y = d(x).numpy()
    kept = y != 0
    np.testing.assert_array_equal(y[kept], np.full(kept.sum(), 1 / 0.75))
    assert abs(kept.mean() - 0.75) < 0.01
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_embedding_lookup_gradient_and_padding():
    emb = nn.Embedding(6, 3, padding_idx=2).double()
    w_np = emb.weight.detach().numpy().copy()
    np.testing.assert_array_equal(w_np[2], np.zeros(3))
    idx = tgrad.tensor([[1, 2, 1], [5, 0, 1]])
    out = emb(idx)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.detach().numpy(), w_np[idx.numpy()])
    g = np.random.default_rng(3).normal(size=(2, 3, 3))
    out.backward(tgrad.tensor(g))
    ref = np.zeros((6, 3))
    np.add.at(ref, idx.numpy(), g)
    ref[2] = 0  # the padding row gets no gradient
    np.testing.assert_allclose(emb.weight.grad.numpy(), ref, rtol=1e-12)
    with pytest.raises(RuntimeError, match="integer index tensor"):
        emb(tgrad.ones(2))


def test_sequential_and_modulelist():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and seq[-1] is seq[2]
    assert [type(m).__name__ for m in seq[:2]] == ["Linear", "ReLU"]
    x = tgrad.randn(4, 2)
    np.testing.assert_array_equal(seq(x).detach().numpy(),
                                  seq[2](seq[1](seq[0](x))).detach().numpy())
    with pytest.raises(IndexError):
        seq[3]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert len(list(ml.parameters())) == 6


def test_losses_match_functional():
    logits = tgrad.randn(5, 4, dtype=tgrad.float64)
    target = tgrad.tensor([0, 3, 1, 1, 2])
    lp = logits.numpy() - np.log(np.exp(logits.numpy()).sum(1, keepdims=True))
    np.testing.assert_allclose(nn.CrossEntropyLoss()(logits, target).item(),
                               -lp[np.arange(5), target.numpy()].mean(), rtol=1e-12)
    a, b = tgrad.randn(3, dtype=tgrad.float64), tgrad.randn(3, dtype=tgrad.float64)
    np.testing.assert_allclose(nn.MSELoss(reduction="sum")(a, b).item(),
                               ((a.numpy() - b.numpy()) ** 2).sum(), rtol=1e-12)


def test_module_state_dict_save_load_round_trip(tmp_path):
    src, dst = Net(), Net()
    tgrad.save(src.state_dict(), tmp_path / "net.tg")
    dst.load_state_dict(tgrad.load(tmp_path / "net.tg"))
    x = tgrad.randn(2, 4)
    np.testing.assert_array_equal(src(x).detach().numpy(), dst(x).detach().numpy())


def test_training_a_small_regression_converges():
    # y = 3x - 1 + noise-free: a Linear layer trained with SGD recovers w, b.
    x = tgrad.linspace(-1, 1, 32, dtype=tgrad.float64).reshape(32, 1)
    y = x * 3 - 1
    m = nn.Linear(1, 1).double()
    opt = tgrad.optim.SGD(m.parameters(), lr=0.3, momentum=0.5)
    for _ in range(150):
        opt.zero_grad()
        nn.functional.mse_loss(m(x), y).backward()
        opt.step()
    assert abs(m.weight.item() - 3) < 1e-6 and abs(m.bias.item() + 1) < 1e-6


def test_deepcopy_gives_independent_parameters():
    import copy
    net = Net()
    twin = copy.deepcopy(net)
    assert isinstance(twin.a.fc.weight, nn.Parameter) and twin.a.fc.weight.requires_grad
    assert twin.b.fc is twin.a.fc  # sharing inside the copy is preserved
    np.testing.assert_array_equal(twin.a.fc.weight.detach().numpy(),
                                  net.a.fc.weight.detach().numpy())
    with tgrad.no_grad():
        twin.a.fc.weight.add_(1)
    assert not np.array_equal(twin.a.fc.weight.detach().numpy(),
                              net.a.fc.weight.detach().numpy())
    visited = []
    net.apply(lambda m: visited.append(type(m).__name__))
    # as in PyTorch, apply recurses per parent: the shared fc is visited via a and via b
    assert visited[-1] == "Net" and visited.count("Linear") == 3
