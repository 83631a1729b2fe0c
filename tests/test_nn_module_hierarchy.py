"""tgrad.nn's class hierarchy answers isinstance / issubclass as PyTorch's (the expected
answers were read off torch 2.13), plus the conv attributes (transposed, output_padding,
_reversed_padding_repeated_twice), RNNBase._flat_weights and named_modules' memo."""

import pytest

import tgrad
from tgrad import nn
from tgrad.nn import functional as F
from tgrad.nn.modules import batchnorm, conv, dropout, loss, padding, pooling
from tgrad.nn.parameter import Parameter

# ------------------------------------------------------------------ isinstance / issubclass


@pytest.mark.parametrize("make, cls, expected", [
    (lambda: nn.LogSoftmax(1), nn.Softmax, False),
    (lambda: nn.Softmin(1), nn.Softmax, False),
    (lambda: nn.AvgPool3d(2), nn.AvgPool2d, False),
    (lambda: nn.Hardshrink(), nn.Softshrink, False),
    (lambda: nn.Fold(4, 2), nn.Unfold, False),
    (lambda: nn.ZeroPad2d(1), nn.ConstantPad2d, True),
    (lambda: nn.ConvTranspose2d(1, 1, 1), conv._ConvNd, True),
])
def test_audit_table(make, cls, expected):
    assert isinstance(make(), cls) is expected


# (A, B) pairs where tgrad used to answer issubclass(A, B) differently from PyTorch
SIBLINGS_NOT_SUBCLASSES = [
    ("LogSoftmax", "Softmax"), ("Softmin", "Softmax"), ("Hardshrink", "Softshrink"),
    ("Fold", "Unfold"), ("AvgPool3d", "AvgPool2d"),
    ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d"), ("AdaptiveAvgPool3d", "AdaptiveAvgPool2d"),
    ("AdaptiveMaxPool1d", "AdaptiveMaxPool2d"), ("AdaptiveMaxPool3d", "AdaptiveMaxPool2d"),
    ("LPPool1d", "LPPool2d"), ("LPPool3d", "LPPool2d"),
    ("MaxUnpool1d", "MaxUnpool2d"), ("MaxUnpool3d", "MaxUnpool2d"),
    ("FractionalMaxPool3d", "FractionalMaxPool2d"),
    ("LazyBatchNorm1d", "BatchNorm1d"), ("LazyBatchNorm2d", "BatchNorm2d"),
    ("LazyBatchNorm3d", "BatchNorm3d"), ("LazyInstanceNorm1d", "InstanceNorm1d"),
    ("LazyInstanceNorm2d", "InstanceNorm2d"), ("LazyInstanceNorm3d", "InstanceNorm3d"),
]


@pytest.mark.parametrize("a, b", SIBLINGS_NOT_SUBCLASSES)
def test_siblings_are_not_subclasses(a, b):
    assert not issubclass(getattr(nn, a), getattr(nn, b))
    assert not issubclass(getattr(nn, b), getattr(nn, a))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_zero_pad_is_a_constant_pad(k):
    zero, const = getattr(nn, f"ZeroPad{k}d"), getattr(nn, f"ConstantPad{k}d")
    assert issubclass(zero, const)
    assert issubclass(zero, padding._ConstantPadNd)
    assert not issubclass(const, zero)
    for j in {1, 2, 3} - {k}:
        assert not issubclass(zero, getattr(nn, f"ConstantPad{j}d"))


PRIVATE_BASES = [
    (conv._ConvNd, ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
                    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]),
    (conv._ConvTransposeNd, ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                             "LazyConvTranspose1d", "LazyConvTranspose2d",
                             "LazyConvTranspose3d"]),
    (pooling._MaxPoolNd, ["MaxPool1d", "MaxPool2d", "MaxPool3d"]),
    (pooling._AvgPoolNd, ["AvgPool1d", "AvgPool2d", "AvgPool3d"]),
    (pooling._AdaptiveAvgPoolNd, ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
                                  "AdaptiveAvgPool3d"]),
    (pooling._AdaptiveMaxPoolNd, ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
                                  "AdaptiveMaxPool3d"]),
    (pooling._LPPoolNd, ["LPPool1d", "LPPool2d", "LPPool3d"]),
    (pooling._MaxUnpoolNd, ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]),
    (padding._ConstantPadNd, ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
                              "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]),
    (padding._ReflectionPadNd, ["ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d"]),
    (padding._ReplicationPadNd, ["ReplicationPad1d", "ReplicationPad2d",
                                 "ReplicationPad3d"]),
    (padding._CircularPadNd, ["CircularPad1d", "CircularPad2d", "CircularPad3d"]),
    (dropout._DropoutNd, ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                          "FeatureAlphaDropout"]),
    (batchnorm._NormBase, ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d",
                           "InstanceNorm2d", "InstanceNorm3d", "LazyBatchNorm1d",
                           "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
                           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "SyncBatchNorm"]),
    (batchnorm._BatchNorm, ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d",
                            "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"]),
    (batchnorm._InstanceNorm, ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
                               "LazyInstanceNorm1d", "LazyInstanceNorm2d",
                               "LazyInstanceNorm3d"]),
    (nn.RNNBase, ["RNN", "LSTM", "GRU"]),
    (nn.RNNCellBase, ["RNNCell", "LSTMCell", "GRUCell"]),
]


def _module_classes():
    import inspect
    return {name: obj for name, obj in vars(nn).items()
            if not name.startswith("_") and inspect.isclass(obj)
            and issubclass(obj, nn.Module)}


@pytest.mark.parametrize("base, members", PRIVATE_BASES,
                         ids=[b.__name__ for b, _ in PRIVATE_BASES])
def test_private_bases_have_exactly_pytorchs_subclasses(base, members):
    got = sorted(name for name, cls in _module_classes().items()
                 if issubclass(cls, base) and cls is not base)
    assert got == sorted(members)


def test_losses_weighted_or_not():
    assert issubclass(nn.BCEWithLogitsLoss, loss._Loss)
    assert not issubclass(nn.BCEWithLogitsLoss, loss._WeightedLoss)
    for name in ("BCELoss", "CrossEntropyLoss", "NLLLoss", "MultiMarginLoss",
                 "MultiLabelSoftMarginLoss"):
        assert issubclass(getattr(nn, name), loss._WeightedLoss), name
    w, pw = tgrad.tensor([1.0, 2.0]), tgrad.tensor([3.0, 4.0])
    m = nn.BCEWithLogitsLoss(weight=w, pos_weight=pw)
    assert list(m.state_dict()) == ["weight", "pos_weight"]
    assert m.weight is w and m.pos_weight is pw
    assert list(nn.BCEWithLogitsLoss().state_dict()) == []
    x, y = tgrad.tensor([[0.5, -1.0]]), tgrad.tensor([[1.0, 0.0]])
    ref = F.binary_cross_entropy_with_logits(x, y, w, pos_weight=pw)
    assert m(x, y).item() == pytest.approx(ref.item())


@pytest.mark.parametrize("lazy, eager, x", [
    ("LazyBatchNorm1d", "BatchNorm1d", (4, 3)),
    ("LazyBatchNorm2d", "BatchNorm2d", (2, 3, 2, 2)),
    ("LazyBatchNorm3d", "BatchNorm3d", (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", "InstanceNorm1d", (2, 3, 4)),
    ("LazyInstanceNorm2d", "InstanceNorm2d", (2, 3, 2, 2)),
    ("LazyInstanceNorm3d", "InstanceNorm3d", (2, 3, 2, 2, 2)),
])
def test_lazy_norm_becomes_its_eager_class(lazy, eager, x):
    m = getattr(nn, lazy)()
    assert not isinstance(m, getattr(nn, eager))  # as PyTorch: only after materialising
    assert isinstance(m, nn.modules.lazy.LazyModuleMixin)
    tgrad.manual_seed(0)
    y = m(tgrad.randn(*x))
    assert type(m) is getattr(nn, eager)
    assert m.num_features == 3
    assert tuple(y.shape) == x
    with pytest.raises(ValueError):  # the eager class's input check, before and after
        getattr(nn, lazy)()(tgrad.randn(*((3,) * (len(x) + 2))))


def test_lazy_norm_checks_its_input_rank():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.LazyBatchNorm2d()(tgrad.randn(2, 3))


def test_dropout_is_dropout_nd():
    m = nn.Dropout(0.25, inplace=True)
    assert (m.p, m.inplace) == (0.25, True)
    assert repr(m) == "Dropout(p=0.25, inplace=True)"
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout(1.5)
    m.eval()
    x = tgrad.randn(3, 4)
    assert m(x) is x or tgrad.equal(m(x), x)


# ------------------------------------------------------------------ behaviour kept


@pytest.mark.parametrize("make, text", [
    (lambda: nn.LogSoftmax(1), "LogSoftmax(dim=1)"),
    (lambda: nn.Softmin(0), "Softmin(dim=0)"),
    (lambda: nn.Softmax(-1), "Softmax(dim=-1)"),
    (lambda: nn.Hardshrink(), "Hardshrink(0.5)"),
    (lambda: nn.Softshrink(0.3), "Softshrink(0.3)"),
    (lambda: nn.Fold(4, 2),
     "Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=1)"),
    (lambda: nn.Unfold(2, padding=1), "Unfold(kernel_size=2, dilation=1, padding=1, stride=1)"),
    (lambda: nn.ZeroPad2d(1), "ZeroPad2d((1, 1, 1, 1))"),
    (lambda: nn.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
    (lambda: nn.ReflectionPad2d(1), "ReflectionPad2d((1, 1, 1, 1))"),
    (lambda: nn.ReplicationPad3d(1), "ReplicationPad3d((1, 1, 1, 1, 1, 1))"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (lambda: nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (lambda: nn.AvgPool3d(2, stride=1), "AvgPool3d(kernel_size=2, stride=1, padding=0)"),
    (lambda: nn.AdaptiveAvgPool1d(3), "AdaptiveAvgPool1d(output_size=3)"),
    (lambda: nn.AdaptiveAvgPool3d(2), "AdaptiveAvgPool3d(output_size=2)"),
    (lambda: nn.AdaptiveMaxPool1d(2), "AdaptiveMaxPool1d(output_size=2)"),
    (lambda: nn.AdaptiveMaxPool2d((2, 3), return_indices=True),
     "AdaptiveMaxPool2d(output_size=(2, 3))"),
    (lambda: nn.LPPool1d(2, 3), "LPPool1d(norm_type=2, kernel_size=3, stride=None, "
                                "ceil_mode=False)"),
    (lambda: nn.LPPool2d(1.5, 2, stride=1), "LPPool2d(norm_type=1.5, kernel_size=2, stride=1, "
                                            "ceil_mode=False)"),
    (lambda: nn.MaxUnpool1d(2), "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"),
    (lambda: nn.MaxUnpool3d(3), "MaxUnpool3d(kernel_size=(3, 3, 3), stride=(3, 3, 3), "
                                "padding=(0, 0, 0))"),
    (lambda: nn.FractionalMaxPool3d(2, output_ratio=0.5), "FractionalMaxPool3d()"),
    (lambda: nn.ConvTranspose3d(2, 2, 3, output_padding=1, stride=2),
     "ConvTranspose3d(2, 2, kernel_size=(3, 3, 3), stride=(2, 2, 2), "
     "output_padding=(1, 1, 1))"),
    (lambda: nn.Conv2d(1, 1, (3, 4), padding="same", dilation=(1, 2)),
     "Conv2d(1, 1, kernel_size=(3, 4), stride=(1, 1), padding=same, dilation=(1, 2))"),
])
def test_reprs_are_pytorchs(make, text):
    assert repr(make()) == text


def test_refactored_forwards():
    tgrad.manual_seed(0)
    x = tgrad.randn(2, 3, 4, 4)
    x3 = x[0]
    cases = [
        (nn.Softmax(1), x, F.softmax(x, 1)), (nn.LogSoftmax(1), x, F.log_softmax(x, 1)),
        (nn.Softmin(1), x, F.softmin(x, 1)), (nn.Softshrink(0.3), x, F.softshrink(x, 0.3)),
        (nn.Hardshrink(0.3), x, F.hardshrink(x, 0.3)), (nn.Unfold(2), x, F.unfold(x, 2)),
        (nn.AvgPool1d(2), x3, F.avg_pool1d(x3, 2)), (nn.AvgPool2d(2), x, F.avg_pool2d(x, 2)),
        (nn.AvgPool3d(2), x, F.avg_pool3d(x, 2)),
        (nn.AvgPool2d(2, divisor_override=3), x, F.avg_pool2d(x, 2, divisor_override=3)),
        (nn.AdaptiveAvgPool1d(2), x3, F.adaptive_avg_pool1d(x3, 2)),
        (nn.AdaptiveAvgPool2d(2), x, F.adaptive_avg_pool2d(x, 2)),
        (nn.AdaptiveAvgPool3d(2), x, F.adaptive_avg_pool3d(x, 2)),
        (nn.AdaptiveMaxPool1d(2), x3, F.adaptive_max_pool1d(x3, 2)),
        (nn.AdaptiveMaxPool2d(2), x, F.adaptive_max_pool2d(x, 2)),
        (nn.AdaptiveMaxPool3d(2), x, F.adaptive_max_pool3d(x, 2)),
        (nn.LPPool1d(2, 2), x3, F.lp_pool1d(x3, 2, 2)),
        (nn.LPPool2d(2, 2), x, F.lp_pool2d(x, 2, 2)),
        (nn.LPPool3d(2, 2), x, F.lp_pool3d(x, 2, 2)),
        (nn.ZeroPad2d(1), x, F.pad(x, (1, 1, 1, 1))),
        (nn.ConstantPad2d(1, 2.0), x, F.pad(x, (1, 1, 1, 1), value=2.0)),
        (nn.ReflectionPad2d(1), x, F.pad(x, (1, 1, 1, 1), "reflect")),
        (nn.ReplicationPad2d(1), x, F.pad(x, (1, 1, 1, 1), "replicate")),
    ]
    for m, inp, ref in cases:
        assert tgrad.allclose(m(inp), ref), type(m).__name__
    y, idx = nn.AdaptiveMaxPool2d(2, return_indices=True)(x)
    assert tgrad.equal(idx, F.adaptive_max_pool2d(x, 2, return_indices=True)[1])
    cols = F.unfold(x, 2)
    assert tgrad.allclose(nn.Fold(4, 2)(cols), F.fold(cols, 4, 2))
    y, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert tgrad.allclose(nn.MaxUnpool2d(2)(y, idx), F.max_unpool2d(y, idx, 2))
    y, idx = nn.MaxPool1d(2, return_indices=True)(x[0])
    assert tgrad.allclose(nn.MaxUnpool1d(2)(y, idx), F.max_unpool1d(y, idx, 2))
    assert tuple(nn.FractionalMaxPool2d(2, output_size=2)(x).shape) == (2, 3, 2, 2)
    assert tuple(nn.FractionalMaxPool3d(2, output_size=2)(x).shape) == (2, 2, 2, 2)
    with pytest.raises(ValueError, match="requires specifying"):
        nn.FractionalMaxPool3d(2)


# ------------------------------------------------------------------ conv attributes


@pytest.mark.parametrize("k", [1, 2, 3])
def test_conv_transposed_and_output_padding(k):
    c = getattr(nn, f"Conv{k}d")(2, 2, 3)
    assert c.transposed is False
    assert c.output_padding == (0,) * k
    t = getattr(nn, f"ConvTranspose{k}d")(2, 2, 3, stride=2, output_padding=1)
    assert t.transposed is True
    assert t.output_padding == (1,) * k
    assert isinstance(t, conv._ConvNd) and isinstance(t, conv._ConvTransposeNd)
    assert not isinstance(c, conv._ConvTransposeNd)
    lazy_t = getattr(nn, f"LazyConvTranspose{k}d")(2, 3)
    assert lazy_t.transposed is True and isinstance(lazy_t, conv._ConvNd)
    assert getattr(nn, f"LazyConv{k}d")(2, 3).transposed is False


@pytest.mark.parametrize("make, expected", [
    (lambda: nn.Conv2d(1, 1, 3, padding=(1, 2)), (2, 2, 1, 1)),
    (lambda: nn.ConvTranspose2d(1, 1, 3, padding=(1, 2)), (2, 2, 1, 1)),
    (lambda: nn.Conv2d(1, 1, (3, 4), padding="same", dilation=(1, 2)), [3, 3, 1, 1]),
    (lambda: nn.Conv1d(1, 1, 3, padding="valid"), [0, 0]),
    (lambda: nn.ConvTranspose3d(2, 2, 3, output_padding=1, stride=2), (0,) * 6),
    (lambda: nn.Conv3d(1, 1, 2, padding=1), (1,) * 6),
    (lambda: nn.ConvTranspose1d(1, 1, 2), (0, 0)),
    (lambda: nn.Conv3d(1, 1, (2, 3, 4), padding=(1, 2, 3)), (3, 3, 2, 2, 1, 1)),
])
def test_reversed_padding_repeated_twice(make, expected):
    got = make()._reversed_padding_repeated_twice
    assert type(got) is type(expected)  # a tuple, or for string padding a list (PyTorch's)
    assert got == expected


def test_conv_transpose_keeps_its_checks_and_forward():
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(1, 1, 2, padding_mode="reflect")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.ConvTranspose2d(3, 2, 2, groups=2)
    with pytest.raises(ValueError):
        nn.ConvTranspose2d(1, 1, 2, padding="same")
    tgrad.manual_seed(0)
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    assert tuple(m.weight.shape) == (2, 3, 3, 3)
    assert list(m.state_dict()) == ["weight", "bias"]
    x = tgrad.randn(1, 2, 4, 4)
    assert tuple(m(x).shape) == (1, 3, 7, 7)
    assert tuple(m(x, output_size=(8, 8)).shape) == (1, 3, 8, 8)
    ref = F.conv_transpose2d(x, m.weight, m.bias, 2, 1)
    assert tgrad.allclose(m(x), ref)


def test_conv_padding_modes_still_work():
    tgrad.manual_seed(0)
    m = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular")
    x = tgrad.randn(1, 1, 4, 4)
    ref = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"),
                               m.weight, m.bias)
    assert tgrad.allclose(m(x), ref)


# ------------------------------------------------------------------ RNN _flat_weights


@pytest.mark.parametrize("make", [
    lambda: nn.RNN(2, 3, num_layers=2),
    lambda: nn.GRU(2, 3, bias=False, bidirectional=True),
    lambda: nn.LSTM(2, 3, num_layers=2, bidirectional=True, proj_size=1),
])
def test_flat_weights_follow_the_names(make):
    m = make()
    flat = m._flat_weights
    assert isinstance(flat, list)
    assert len(flat) == len(m._flat_weights_names)
    for name, w in zip(m._flat_weights_names, flat):
        assert w is getattr(m, name)
    assert [id(w) for w in flat] == [id(p) for p in m.parameters()]
    # reassigning a parameter is seen, as PyTorch's __setattr__ keeps the list in sync
    new = Parameter(tgrad.zeros(*m.weight_hh_l0.shape))
    m.weight_hh_l0 = new
    assert m._flat_weights[m._flat_weights_names.index("weight_hh_l0")] is new
    m.double()
    for name, w in zip(m._flat_weights_names, m._flat_weights):
        assert w is getattr(m, name) and w.dtype is tgrad.float64


# ------------------------------------------------------------------ named_modules memo


def _tree():
    inner = nn.Sequential(nn.ReLU(), nn.Tanh())
    return nn.Sequential(nn.Linear(1, 1), inner), inner


def test_named_modules_memo_is_a_set_of_modules():
    outer, inner = _tree()
    memo = {inner}
    assert [n for n, _ in outer.named_modules(memo)] == ["", "0"]
    assert len(memo) == 3 and all(isinstance(m, nn.Module) for m in memo)
    assert outer in memo and outer[0] in memo and inner in memo
    # a second walk with the same memo yields nothing
    assert list(outer.named_modules(memo)) == []


def test_named_modules_memo_without_remove_duplicate():
    outer, inner = _tree()
    memo = {inner}
    assert [n for n, _ in outer.named_modules(memo, remove_duplicate=False)] == ["", "0"]
    assert memo == {inner}  # skipped, but nothing added


def test_named_modules_default_and_prefix():
    r = nn.ReLU()
    s = nn.Sequential(r, r, nn.Sequential(r))
    assert [n for n, _ in s.named_modules()] == ["", "0", "2"]
    assert [n for n, _ in s.named_modules(remove_duplicate=False)] == ["", "0", "1", "2", "2.0"]
    memo = set()
    assert [n for n, _ in s.named_modules(memo, "p")] == ["p", "p.0", "p.2"]
    assert memo == {s, r, s[2]}
    assert list(s.modules()) == [s, r, s[2]]
