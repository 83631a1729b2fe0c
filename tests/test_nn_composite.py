"""nn.functional composites (tgrad/nn/_composite.py) and their modules: edge values and
gradients PyTorch's dedicated backwards give (written out by hand here), errors, and the
module wrappers. Values and gradients in general are in the op table (tests/op_db_nn.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck


def _t(values, **kw):
    return tgrad.tensor(np.asarray(values, dtype=np.float64), **kw)


def _grad(fn, values, *args, **kw):
    x = _t(values, requires_grad=True)
    fn(x, *args, **kw).sum().backward()
    return x.grad.tolist()


def test_activation_gradients_at_edges():
    # no NaN from the branch a where does not take: elu at 1000 has gradient 1
    assert _grad(F.elu, [1000.0, 0.0, -1.0]) == [1.0, 1.0, math.exp(-1.0)]
    assert _grad(F.leaky_relu, [2.0, 0.0, -2.0], 0.2) == [1.0, 0.2, 0.2]  # the slope at 0
    # hardtanh/relu6 pass the gradient strictly inside the bounds (PyTorch's backward)
    assert _grad(F.hardtanh, [-1.0, 0.5, 1.0, 3.0]) == [0.0, 1.0, 0.0, 0.0]
    assert _grad(F.relu6, [0.0, 3.0, 6.0]) == [0.0, 1.0, 0.0]
    assert _grad(F.logsigmoid, [0.0]) == [0.5]


def test_smooth_l1_and_huber_at_infinity():
    # the quadratic branch, not taken there, must not make inf * 0 = NaN (beta = delta = 1)
    for fn in (F.smooth_l1_loss, F.huber_loss):
        x = _t([np.inf, -np.inf, 0.25], requires_grad=True)
        fn(x, _t([0.0, 0.0, 0.0]), reduction="sum").backward()
        assert x.grad.tolist() == [1.0, -1.0, 0.25]


def test_binary_cross_entropy_clamps_like_pytorch():
    x = _t([0.0, 1.0, 0.25], requires_grad=True)
    t = _t([0.5, 0.5, 1.0], requires_grad=True)
    loss = F.binary_cross_entropy(x, t, reduction="none")
    # log(0) is clamped at -100: 0.5 * 100 each; -log(0.25) for the third
    np.testing.assert_allclose(loss.detach().numpy(), [50.0, 50.0, math.log(4.0)], rtol=1e-15)
    loss.sum().backward()
    eps = float(np.float32(1e-12))  # x (1 - x) is floored at float32's 1e-12
    np.testing.assert_allclose(x.grad.numpy(), [-0.5 / eps, 0.5 / eps, -0.75 / 0.1875],
                               rtol=1e-15)
    assert t.grad.tolist()[:2] == [math.inf, -math.inf]  # log(1 - x) - log(x), unclamped
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(_t([1.5]), _t([1.0]))
    # PyTorch 2.13 checks the target's range too (NaN fails); 0 and 1 are in range
    for bad in ([2.0], [-0.1], [math.nan]):
        with pytest.raises(RuntimeError,
                           match="all elements of target should be between 0 and 1"):
            F.binary_cross_entropy(_t([0.5]), _t(bad))
    assert F.binary_cross_entropy(_t([0.5, 0.5]), _t([0.0, 1.0])).item() == \
        pytest.approx(math.log(2.0), rel=1e-15)
    with pytest.raises(ValueError, match=r"target size \(\[2\]\) that is different to the input "
                                         r"size \(\[1\]\)"):
        F.binary_cross_entropy(_t([0.5]), _t([1.0, 0.0]))


def test_bce_with_logits_matches_the_probability_form_and_is_stable():
    x = _t([-3.0, 0.0, 2.0, 800.0, -800.0], requires_grad=True)
    t = _t([0.0, 1.0, 0.3, 1.0, 0.0])
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    p = 1.0 / (1.0 + np.exp(-x.detach().numpy()[:3]))
    ref = -(t.numpy()[:3] * np.log(p) + (1 - t.numpy()[:3]) * np.log1p(-p))
    np.testing.assert_allclose(loss.detach().numpy()[:3], ref, rtol=1e-14)
    assert loss.tolist()[3:] == [0.0, 0.0]  # confident and right: no overflow
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[:3], p - t.numpy()[:3], rtol=1e-14)
    pw = _t([2.0])
    y = F.binary_cross_entropy_with_logits(_t([0.0]), _t([1.0]), pos_weight=pw)
    assert y.item() == pytest.approx(2.0 * math.log(2.0), rel=1e-15)


def test_kl_div_zero_targets_and_batchmean():
    x = _t([[math.log(0.5), math.log(0.5)], [math.log(0.25), math.log(0.75)]],
           requires_grad=True)
    t = _t([[1.0, 0.0], [0.25, 0.75]])
    loss = F.kl_div(x, t, reduction="batchmean")
    want = (1.0 * (0.0 - math.log(0.5)) + 0.0) / 2  # 0 log 0 = 0; the second row matches
    assert loss.item() == pytest.approx(want, rel=1e-15)
    loss.backward()
    assert x.grad.tolist() == [[-0.5, 0.0], [-0.125, -0.375]]  # -t / batch
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.kl_div(x, t, reduction="bogus")


def test_cosine_similarity_with_a_zero_vector_is_zero_with_finite_gradient():
    a = _t([[3.0, 4.0], [1.0, 0.0]], requires_grad=True)
    b = _t([[0.0, 0.0], [2.0, 0.0]])
    cos = F.cosine_similarity(a, b)
    assert cos.tolist() == [0.0, 1.0]
    cos.sum().backward()
    assert np.isfinite(a.grad.numpy()).all()


def test_cosine_similarity_over_an_empty_dim_is_zero():
    # PyTorch: the sum over no elements, 0 (it was amax's empty-dim IndexError)
    a = tgrad.zeros(2, 0, 3, dtype=tgrad.float64, requires_grad=True)
    cos = F.cosine_similarity(a, a)
    assert cos.shape == (2, 3) and cos.tolist() == [[0.0] * 3] * 2
    cos.sum().backward()
    assert a.grad.shape == (2, 0, 3)
    assert F.cosine_similarity(_t(np.zeros((0, 3))), _t(np.zeros((0, 3))), 0).tolist() == \
        [0.0, 0.0, 0.0]
    assert F.cosine_similarity(_t(np.zeros((0, 3))), _t(np.zeros((0, 3)))).shape == (0,)


def test_cosine_similarity_shape_and_dim_errors_name_the_op():
    # PyTorch's RuntimeError for shapes that do not broadcast (was NumPy's ValueError), and
    # its IndexError for a dim out of range (was named after amax)
    with pytest.raises(RuntimeError, match=r"cosine_similarity: The size of tensor a \(3\) "
                                           r"must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 1"):
        F.cosine_similarity(_t(np.ones((2, 3))), _t(np.ones((2, 4))))
    with pytest.raises(IndexError, match=r"cosine_similarity: Dimension out of range \(expected "
                                         r"to be in range of \[-3, 2\], but got 3\)"):
        F.cosine_similarity(_t(np.ones((2, 1, 4))), _t(np.ones((3, 4))), dim=3)
    # the broadcast shape's dims count: (2, 1, 4) with (3, 4) is (2, 3, 4), dim 2 its last
    cos = F.cosine_similarity(_t(np.ones((2, 1, 4))), _t(np.ones((3, 4))), dim=2)
    np.testing.assert_allclose(cos.numpy(), np.ones((2, 3)), rtol=1e-15)


@pytest.mark.parametrize("shape, num_classes", [((37,), 5), ((4, 9), -1), ((3, 0), 4),
                                                ((0,), 2), ((), 7), ((6, 5), 1)])
def test_one_hot_cpu_scatter_is_the_comparison(shape, num_classes):
    """one_hot's CPU scatter (_numpy_layout.one_hot): the comparison's values
    (idx[..., None] == arange(C)), C-contiguous int64, for odd, empty, 0-d and strided
    (transposed) index tensors."""
    rng = np.random.default_rng(0)
    c = num_classes if num_classes > 0 else 6
    a = rng.integers(0, max(c, 1), shape) if c else np.zeros(shape, np.int64)
    for idx in (tgrad.tensor(a), tgrad.tensor(a).T if a.ndim == 2 else tgrad.tensor(a)):
        if idx.numel() == 0 and num_classes == -1:
            continue
        y = F.one_hot(idx, num_classes)
        n = num_classes if num_classes != -1 else int(idx.numpy().max()) + 1
        want = (idx.numpy()[..., None] == np.arange(n)).astype(np.int64)
        assert y.dtype is tgrad.int64 and y.is_contiguous() and not y.requires_grad
        np.testing.assert_array_equal(y.numpy(), want)
        assert y.shape == want.shape


def test_normalize_one_hot_pad_embedding():
    assert F.normalize(_t([[3.0, 4.0]])).tolist() == [[0.6, 0.8]]
    assert F.normalize(_t([[0.0, 0.0]])).tolist() == [[0.0, 0.0]]  # eps keeps it finite
    # out=: PyTorch's torch.div(input, denom, out=out): written in place, not differentiable
    out = tgrad.empty(1, 2, dtype=tgrad.float64)
    assert F.normalize(_t([[3.0, 4.0]]), out=out) is out and out.tolist() == [[0.6, 0.8]]
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        F.normalize(_t([[3.0, 4.0]], requires_grad=True), out=out)
    oh = F.one_hot(tgrad.tensor([2, 0]))
    assert oh.dtype is tgrad.int64 and oh.tolist() == [[0, 0, 1], [1, 0, 0]]
    assert F.one_hot(tgrad.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(tgrad.tensor([-1]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(tgrad.tensor([3]), 3)
    x = _t([[1.0, 2.0]], requires_grad=True)
    y = F.pad(x, (1, 0, 0, 1), value=9.0)
    assert y.tolist() == [[9.0, 1.0, 2.0], [9.0, 9.0, 9.0]]
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0]]
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode bogus"):
        F.pad(x, (1, 1), mode="bogus")
    w = _t(np.arange(6.0).reshape(3, 2), requires_grad=True)
    out = F.embedding(tgrad.tensor([[0, 2], [2, 1]]), w, padding_idx=2)
    assert out.tolist() == [[[0.0, 1.0], [4.0, 5.0]], [[4.0, 5.0], [2.0, 3.0]]]
    out.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]  # the pad row: none


@pytest.mark.parametrize("call, err, msg", [
    (lambda: F.glu(_t([1.0, 2.0, 3.0])), RuntimeError,
     "Halving dimension must be even, but dimension 0 is size 3"),
    (lambda: F.smooth_l1_loss(_t([1.0]), _t([0.0]), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta"),
    (lambda: F.huber_loss(_t([1.0]), _t([0.0]), delta=0.0), RuntimeError,
     "huber_loss does not support non-positive values for delta"),
    (lambda: F.l1_loss(_t([1.0]), _t([0.0]), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: F.hardtanh(_t([1.0]), 2.0, 1.0), ValueError,
     "min_val cannot be greater than max_val"),
    (lambda: F.one_hot(_t([1.0])), RuntimeError,
     "one_hot is only applicable to index tensor"),
])
def test_composite_errors(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_modules_call_their_functions():
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((3, 4)))
    t = _t(rng.random((3, 4)))
    pairs = [
        (nn.LeakyReLU(0.2), F.leaky_relu(x, 0.2)), (nn.ELU(0.5), F.elu(x, 0.5)),
        (nn.SELU(), F.selu(x)), (nn.Softplus(2.0, 5.0), F.softplus(x, 2.0, 5.0)),
        (nn.Hardtanh(-0.5, 0.5), F.hardtanh(x, -0.5, 0.5)), (nn.ReLU6(), F.relu6(x)),
        (nn.LogSigmoid(), F.logsigmoid(x)), (nn.Mish(), F.mish(x)), (nn.GLU(), F.glu(x)),
        (nn.Softmin(1), F.softmin(x, 1)),
    ]
    for module, want in pairs:
        np.testing.assert_array_equal(module(x).numpy(), want.numpy(), err_msg=repr(module))
    losses = [
        (nn.L1Loss(reduction="sum"), F.l1_loss(x, t, reduction="sum")),
        (nn.SmoothL1Loss(beta=0.5), F.smooth_l1_loss(x, t, beta=0.5)),
        (nn.HuberLoss(delta=0.3), F.huber_loss(x, t, delta=0.3)),
        (nn.BCEWithLogitsLoss(pos_weight=_t([2.0])),
         F.binary_cross_entropy_with_logits(x, t, pos_weight=_t([2.0]))),
        (nn.BCELoss(), F.binary_cross_entropy(x.sigmoid(), t)),
        (nn.KLDivLoss(reduction="batchmean"), F.kl_div(x, t, reduction="batchmean")),
    ]
    for module, want in losses:
        args = (x.sigmoid(), t) if isinstance(module, nn.BCELoss) else (x, t)
        np.testing.assert_array_equal(module(*args).numpy(), want.numpy(), err_msg=repr(module))
    logp = F.log_softmax(x, 1)
    nll = nn.NLLLoss(weight=_t([1.0, 2.0, 0.5, 1.0]), ignore_index=1)
    target = tgrad.tensor([0, 1, 3])
    np.testing.assert_array_equal(
        nll(logp, target).numpy(),
        F.nll_loss(logp, target, _t([1.0, 2.0, 0.5, 1.0]), ignore_index=1).numpy())
    assert "weight" in nll.state_dict()


def test_unflatten_checks_sizes_and_keeps_them_as_given():
    # PyTorch: the constructor takes a tuple or list of ints (TypeError otherwise), repr keeps
    # the list / tuple as given, forward is Tensor.unflatten (its error names the sizes)
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found "
                                        "type int"):
        nn.Unflatten(1, 5)
    with pytest.raises(TypeError, match="found element of type float at pos 0"):
        nn.Unflatten(1, (2.0, 2))
    assert repr(nn.Unflatten(1, [5, 1])) == "Unflatten(dim=1, unflattened_size=[5, 1])"
    assert repr(nn.Unflatten(1, (5, 1))) == "Unflatten(dim=1, unflattened_size=(5, 1))"
    x = tgrad.tensor(np.arange(10.0).reshape(2, 5))
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[2, -1\] don't multiply "
                                           r"up to the size of dim 1 \(5\)"):
        nn.Unflatten(1, [2, -1])(x)
    y = nn.Unflatten(-1, [5, 1])(x)
    assert y.shape == (2, 5, 1)
    np.testing.assert_array_equal(y.numpy(), np.arange(10.0).reshape(2, 5, 1))


def test_module_constructor_errors_are_pytorchs():
    # PyTorch 2.13: nn.Hardtanh asserts max_val > min_val (equal bounds refused too),
    # nn.Embedding asserts the given _weight's shape, Bilinear refuses in1_features <= 0
    with pytest.raises(AssertionError, match=r"max_val \(0.5\) must be greater than min_val "
                                             r"\(1.0\)"):
        nn.Hardtanh(1.0, 0.5)
    with pytest.raises(AssertionError, match="must be greater than min_val"):
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings "
                                             "and embedding_dim"):
        nn.Embedding(5, 3, _weight=tgrad.zeros(4, 3))
    with pytest.raises(ValueError, match=r"in1_features must be > 0, but got "
                                         r"\(in1_features=0\)"):
        nn.Bilinear(0, 2, 3)


def test_flatten_unflatten_moduledict():
    x = tgrad.zeros(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(-1, (2, -1))(x).shape == (2, 3, 2, 2)
    d = nn.ModuleDict({"enc": nn.Linear(2, 3)})
    d.update([("dec", nn.Linear(3, 2))])
    d["act"] = nn.ReLU()
    assert list(d.keys()) == ["enc", "dec", "act"] and "dec" in d and len(d) == 3
    assert sorted(d.state_dict()) == ["dec.bias", "dec.weight", "enc.bias", "enc.weight"]
    assert len(list(d.parameters())) == 4
    del d["act"]
    assert list(d) == ["enc", "dec"]
    assert isinstance(d.pop("enc"), nn.Linear) and list(d.keys()) == ["dec"]


def test_logsigmoid_and_bce_with_logits_exact_in_float64_far_out():
    # log sigmoid(-21) = -21 - log1p(e^-21): the 7.6e-10 term must survive in float64
    want = -21.0 - math.log1p(math.exp(-21.0))
    x = _t([-21.0], requires_grad=True)
    y = F.logsigmoid(x)
    assert y.item() == pytest.approx(want, rel=1e-15) and y.item() != -21.0
    y.backward()
    assert x.grad.item() == pytest.approx(1.0 / (1.0 + math.exp(-21.0)), rel=1e-15)
    loss = F.binary_cross_entropy_with_logits(_t([-25.0]), _t([1.0]))
    assert loss.item() == pytest.approx(25.0 + math.log1p(math.exp(-25.0)), rel=1e-15)


def test_binary_cross_entropy_small_probability_keeps_log1p_precision():
    # -log(1 - p) for t = 0 is p + p^2/2 + ...: 1 - p rounded a small p away (the loss was 0;
    # PyTorch takes log1p(-p))
    p = np.array([1e-20, 1e-10, 3e-17, 0.25])
    for dt, rtol in ((tgrad.float64, 1e-15), (tgrad.float32, 1e-7)):
        pt = tgrad.tensor(p, dtype=dt)
        out = F.binary_cross_entropy(pt, tgrad.zeros(4, dtype=dt), reduction="none")
        ref = -np.log1p(-pt.numpy().astype(np.float64))
        np.testing.assert_allclose(out.numpy(), ref, rtol=rtol)
        out = F.binary_cross_entropy(1.0 - pt, tgrad.ones(4, dtype=dt), reduction="none")
        np.testing.assert_allclose(out.numpy(), -np.log((1.0 - pt).numpy().astype(np.float64)),
                                   rtol=rtol)


def test_logsigmoid_at_plus_inf_is_positive_zero():
    # log sigmoid(+inf) = log 1 = +0.0 (PyTorch's min(x, 0) - log1p(e^-|x|)); -softplus(-x)
    # gave -0.0
    for dt in (tgrad.float64, tgrad.float32):
        out = F.logsigmoid(tgrad.tensor([math.inf, 1e300 if dt is tgrad.float64 else 1e30],
                                        dtype=dt)).numpy()
        np.testing.assert_array_equal(out, [0.0, 0.0])
        assert not np.signbit(out).any()


def test_kl_div_negative_target_is_nan_and_cosine_broadcasts_before_dim():
    assert math.isnan(F.kl_div(_t([-1.0]), _t([-0.5]), reduction="sum").item())
    cos = F.cosine_similarity(_t([1.0, 2.0, 3.0]), _t(np.ones((2, 3))), dim=1)
    np.testing.assert_allclose(cos.numpy(), [6.0 / math.sqrt(14.0 * 3.0)] * 2, rtol=1e-15)


def test_cosine_similarity_is_scale_free_far_from_one():
    """cos(k a, k b) = cos(a, b) and its gradient is grad(a, b) / k, also where |k a|^2
    overflows (k = 1e200) or underflows (k = 1e-150, with |k a| still above eps = 0)."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 17)), rng.standard_normal((3, 17))
    want = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    ta = tgrad.tensor(a, requires_grad=True)
    F.cosine_similarity(ta, tgrad.tensor(b)).sum().backward()
    for k in (1e200, 1e-150):
        xa = tgrad.tensor(a * k, requires_grad=True)
        got = F.cosine_similarity(xa, tgrad.tensor(b * k), eps=0.0)
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-13)
        got.sum().backward()
        np.testing.assert_allclose(xa.grad.numpy() * k, ta.grad.numpy(), rtol=1e-12)


def test_cosine_similarity_gradient_of_tiny_inputs_below_eps():
    """|x| < eps: cos = sum((a / eps) (b / eps)), so d/da = b / eps^2 (the norm's own term,
    (a.b) a / (|a| eps^3), is ~1e-376 here). At |a| ~ 1e-200 the factors a / eps ~ 1e-192 must
    not underflow (they did: u / (eps / s) with u = a / s is ~1e-392), nor the gradient (PyTorch
    gets b / eps^2); values computed in NumPy float64."""
    a = np.array([[1.0, -3.0, 2.0], [0.5, 0.25, -4.0]]) * 1e-200
    b = np.array([[1.4, -2.1, 0.7], [-3.0, 1.0, 2.0]]) * 1e-200
    eps = 1e-8
    ta, tb = _t(a, requires_grad=True), _t(b, requires_grad=True)
    cos = F.cosine_similarity(ta, tb, eps=eps)
    np.testing.assert_array_equal(cos.detach().numpy(), [0.0, 0.0])  # ~1e-384: underflows
    cos.sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), b / eps / eps, rtol=1e-14)
    np.testing.assert_allclose(tb.grad.numpy(), a / eps / eps, rtol=1e-14)
    # subnormal entries: the gradient is b / eps^2 ~ 5e-308, not 0
    ta = _t([[5e-324, 1e-320]], requires_grad=True)
    F.cosine_similarity(ta, _t([[1e-300, 3e-300]]), eps=eps).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), [[1e-300 / eps / eps, 3e-300 / eps / eps]],
                               rtol=1e-14)


def test_bce_with_logits_gradient_is_sigmoid_minus_target_far_out():
    # d/dx = sigmoid(x) - t exactly (PyTorch's backward), not (1 - t) - sigmoid(-x), which
    # cancels to 0 (or loses digits) for very negative x
    xs = np.array([-10.0, -17.0, -20.0, -27.6, -40.0, 35.0])
    sig = 1.0 / (1.0 + np.exp(-xs))
    for dt, rtol in ((tgrad.float32, 1e-6), (tgrad.float64, 1e-15)):
        x = tgrad.tensor(xs, dtype=dt, requires_grad=True)
        t = tgrad.zeros(6, dtype=dt)
        F.binary_cross_entropy_with_logits(x, t, reduction="sum").backward()
        np.testing.assert_allclose(x.grad.numpy(), sig, rtol=rtol)
    # with pos_weight, weight and mean: w (sigmoid(x) (1 + (pw - 1) t) - pw t) / n
    x = _t([-30.0, 0.5, 3.0], requires_grad=True)
    t, w, pw = np.array([0.0, 0.3, 1.0]), np.array([2.0, 0.5, 1.5]), np.array([3.0, 0.5, 2.0])
    F.binary_cross_entropy_with_logits(x, _t(t), _t(w), pos_weight=_t(pw)).backward()
    s = 1.0 / (1.0 + np.exp(-x.detach().numpy()))
    np.testing.assert_allclose(x.grad.numpy(), w * (s * (1 + (pw - 1) * t) - pw * t) / 3,
                               rtol=1e-15)


def test_bce_with_logits_reduced_is_one_node():
    # "Automatic Differentiation with torch.autograd" prints loss.grad_fn:
    # BinaryCrossEntropyWithLogitsBackward0 (the reduction is in PyTorch's node; tgrad's
    # was MeanBackward0). Values, gradients and double backward through the fused node.
    rng = np.random.default_rng(5)
    xn, tn, pwn = rng.normal(size=(3, 4)) * 3, rng.uniform(size=(3, 4)), rng.uniform(0.5, 2, 4)
    x, t = _t(xn, requires_grad=True), _t(tn, requires_grad=True)
    pw = _t(pwn, requires_grad=True)
    per = (1 - tn) * xn + (1 + (pwn - 1) * tn) * np.logaddexp(0, -xn)
    for red, ref, scale in (("mean", per.mean(), 1 / 12), ("sum", per.sum(), 1.0)):
        loss = F.binary_cross_entropy_with_logits(x, t, reduction=red, pos_weight=pw)
        assert type(loss.grad_fn).__name__ == "BinaryCrossEntropyWithLogitsBackward0"
        assert loss.shape == ()
        np.testing.assert_allclose(loss.item(), ref, rtol=1e-14)
        (gx,) = tgrad.autograd.grad(loss, x)
        s = 1 / (1 + np.exp(-xn))
        np.testing.assert_allclose(gx.numpy(), scale * (s * (1 + (pwn - 1) * tn) - pwn * tn),
                                   rtol=1e-13)

        def fn(x, t, pw, red=red):
            return F.binary_cross_entropy_with_logits(x, t, reduction=red, pos_weight=pw)
        assert gradcheck(fn, (x, t, pw)) and gradgradcheck(fn, (x, t, pw))
    assert type(F.binary_cross_entropy_with_logits(x, t, reduction="none").grad_fn).__name__ \
        == "BinaryCrossEntropyWithLogitsBackward0"


def test_bce_with_logits_gradcheck_all_inputs():
    rng = np.random.default_rng(3)
    x = _t(rng.normal(size=(3, 4)) * 3, requires_grad=True)
    t = _t(rng.uniform(size=(3, 4)), requires_grad=True)
    w = _t(rng.uniform(0.5, 2, size=(4,)), requires_grad=True)
    pw = _t(rng.uniform(0.5, 2, size=(4,)), requires_grad=True)
    for red in ("none", "mean", "sum"):
        def fn(x, t, w, pw, red=red):
            return F.binary_cross_entropy_with_logits(x, t, w, reduction=red, pos_weight=pw)
        assert gradcheck(fn, (x, t, w, pw)) and gradgradcheck(fn, (x, t, w, pw))

        def fn2(x, t, red=red):
            return F.binary_cross_entropy_with_logits(x, t, reduction=red)
        assert gradcheck(fn2, (x, t)) and gradgradcheck(fn2, (x, t))
    # the target gradient: pw softplus(-x) - softplus(x), -x without pos_weight
    (gt,) = tgrad.autograd.grad(F.binary_cross_entropy_with_logits(
        x, t, reduction="sum", pos_weight=pw), t)
    xn, pwn = x.detach().numpy(), pw.detach().numpy()
    np.testing.assert_allclose(gt.numpy(), pwn * np.logaddexp(0, -xn) - np.logaddexp(0, xn),
                               rtol=1e-13)


def test_bce_with_logits_pos_weight_may_not_enlarge_the_loss():
    # PyTorch 2.13 multiplies the loss by pos_weight in place: a pos_weight that broadcasts
    # the loss past input's shape is refused with its text (tgrad's mean divided the
    # gradient by input's numel, not the loss's: 2x in this repro)
    x = _t([0.1, -0.2, 0.3], requires_grad=True)
    for red in ("mean", "sum", "none"):
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                               r"broadcast shape \[2, 3\]"):
            F.binary_cross_entropy_with_logits(x, _t([1.0, 0.0, 1.0]),
                                               pos_weight=tgrad.ones(2, 3, dtype=tgrad.float64),
                                               reduction=red)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        F.binary_cross_entropy_with_logits(x, _t([1.0, 0.0, 1.0]), pos_weight=_t([1.0, 2.0]))
    # a pos_weight that broadcasts up to input's shape: 'mean' divides by input's numel
    rng = np.random.default_rng(11)
    xn, tn, pwn = rng.normal(size=(2, 3)), rng.uniform(size=(2, 3)), rng.uniform(0.5, 2, (1, 3))
    x, t, pw = _t(xn, requires_grad=True), _t(tn), _t(pwn, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, t, pos_weight=pw)
    per = (1 - tn) * xn + (1 + (pwn - 1) * tn) * np.logaddexp(0, -xn)
    np.testing.assert_allclose(loss.item(), per.mean(), rtol=1e-14)
    (gx,) = tgrad.autograd.grad(loss, x)
    s = 1 / (1 + np.exp(-xn))
    np.testing.assert_allclose(gx.numpy(), (s * (1 + (pwn - 1) * tn) - pwn * tn) / 6,
                               rtol=1e-13)

    def fn(x, pw):
        return F.binary_cross_entropy_with_logits(x, t, pos_weight=pw)
    assert gradcheck(fn, (x, pw)) and gradgradcheck(fn, (x, pw))


def _fd_jvp(f, xn, tn, eps=1e-6):
    """Central finite difference of f (NumPy in, NumPy out) along tn at xn."""
    return (f(xn + eps * tn) - f(xn - eps * tn)) / (2 * eps)


def test_pointwise_losses_are_one_node():
    # PyTorch's mse/smooth_l1/huber/binary_cross_entropy are one node with their reduction
    # (tutorials print loss.grad_fn: <MseLossBackward0>); tgrad's were MeanBackward0.
    # Values (NumPy float64), gradients (hand formulas), gradcheck + gradgradcheck.
    rng = np.random.default_rng(11)
    xn, tn = rng.normal(size=(3, 4)) * 2, rng.normal(size=(3, 4))
    dn = xn - tn
    ad = np.abs(dn)
    cases = {  # name: (fn, node, per-element loss, dl/dd)
        "mse": (F.mse_loss, "MseLossBackward0", dn ** 2, 2 * dn),
        "smooth_l1": (lambda x, t, reduction: F.smooth_l1_loss(x, t, reduction=reduction,
                                                                beta=0.7),
                      "SmoothL1LossBackward0",
                      np.where(ad < 0.7, 0.5 * dn ** 2 / 0.7, ad - 0.35),
                      np.where(ad < 0.7, dn / 0.7, np.sign(dn))),
        "huber": (lambda x, t, reduction: F.huber_loss(x, t, reduction=reduction, delta=0.8),
                  "HuberLossBackward0",
                  np.where(ad < 0.8, 0.5 * dn ** 2, 0.8 * (ad - 0.4)),
                  np.where(ad < 0.8, dn, 0.8 * np.sign(dn))),
    }
    for fn, node, per, dper in cases.values():
        for red, ref, scale in (("mean", per.mean(), 1 / 12), ("sum", per.sum(), 1.0),
                                ("none", per, 1.0)):
            x, t = _t(xn, requires_grad=True), _t(tn, requires_grad=True)
            loss = fn(x, t, reduction=red)
            assert type(loss.grad_fn).__name__ == node
            np.testing.assert_allclose(loss.detach().numpy(), ref, rtol=1e-14)
            gx, gt = tgrad.autograd.grad(loss.sum(), (x, t))
            np.testing.assert_allclose(gx.numpy(), scale * dper, rtol=1e-14)
            np.testing.assert_allclose(gt.numpy(), -scale * dper, rtol=1e-14)
            assert gradcheck(lambda x, t, red=red, fn=fn: fn(x, t, reduction=red), (x, t))
            assert gradgradcheck(lambda x, t, red=red, fn=fn: fn(x, t, reduction=red), (x, t))
    # a broadcast target: 'mean' over the broadcast numel, t's gradient summed to its shape
    x, t = _t(xn, requires_grad=True), _t(tn[0], requires_grad=True)
    with pytest.warns(UserWarning, match="target size"):
        loss = F.mse_loss(x, t)
    gx, gt = tgrad.autograd.grad(loss, (x, t))
    np.testing.assert_allclose(loss.item(), ((xn - tn[0]) ** 2).mean(), rtol=1e-14)
    np.testing.assert_allclose(gt.numpy(), (-2 * (xn - tn[0]) / 12).sum(0), rtol=1e-14)


def test_binary_cross_entropy_is_one_node_with_weight():
    rng = np.random.default_rng(12)
    pn, tn, wn = rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(size=(3, 4)), rng.uniform(0.5, 2, 4)
    per = -wn * (tn * np.log(pn) + (1 - tn) * np.log(1 - pn))
    for w in (None, wn):
        for red, ref, scale in (("mean", per.mean(), 1 / 12), ("sum", per.sum(), 1.0)):
            ref_w = 1.0 if w is None else wn
            p, t = _t(pn, requires_grad=True), _t(tn, requires_grad=True)
            wt = None if w is None else _t(w, requires_grad=True)
            loss = F.binary_cross_entropy(p, t, wt, reduction=red)
            assert type(loss.grad_fn).__name__ == "BinaryCrossEntropyBackward0"
            assert len(loss.grad_fn.next_functions) == 2  # input, target (as PyTorch's)
            np.testing.assert_allclose(loss.item(), ref if w is not None else (per / wn).sum()
                                       * scale, rtol=1e-14)
            (gp,) = tgrad.autograd.grad(loss, p)
            np.testing.assert_allclose(gp.numpy(), scale * ref_w * (pn - tn) / (pn * (1 - pn)),
                                       rtol=1e-13)
            args = (p, t) if wt is None else (p, t, wt)

            def fn(*a, red=red):
                return F.binary_cross_entropy(a[0] * 0.5 + 0.25, *a[1:], reduction=red)
            assert gradcheck(fn, args) and gradgradcheck(fn, args)


def test_activations_are_one_node():
    # PyTorch's HardtanhBackward0 (hardtanh, relu6), LeakyReluBackward0, ThresholdBackward0,
    # HardsigmoidBackward0, GluBackward0, LogSigmoidBackward0, EluBackward0 (selu),
    # CeluBackward0; values against NumPy float64, gradcheck + gradgradcheck away from kinks
    rng = np.random.default_rng(13)
    xn = rng.uniform(0.1, 4, (3, 4)) * rng.choice([-1, 1], (3, 4))
    sa, ss = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    cases = {
        "HardtanhBackward0": (lambda x: F.hardtanh(x, -2.0, 3.0), np.clip(xn, -2, 3)),
        "HardtanhBackward0 relu6": (F.relu6, np.clip(xn, 0, 6)),
        "LeakyReluBackward0": (lambda x: F.leaky_relu(x, 0.2), np.where(xn > 0, xn, 0.2 * xn)),
        "ThresholdBackward0": (lambda x: F.threshold(x, 0.05, -7.0),
                               np.where(xn <= 0.05, -7.0, xn)),
        "HardsigmoidBackward0": (F.hardsigmoid, np.clip(xn + 3, 0, 6) / 6),
        "GluBackward0": (lambda x: F.glu(x, 1),
                         xn[:, :2] / (1 + np.exp(-xn[:, 2:]))),
        "LogSigmoidBackward0": (F.logsigmoid, -np.logaddexp(0, -xn)),
        "EluBackward0": (F.selu, ss * np.where(xn > 0, xn, sa * np.expm1(xn))),
        "CeluBackward0": (lambda x: F.celu(x, 0.5), np.where(xn > 0, xn,
                                                             0.5 * np.expm1(xn / 0.5))),
        "SoftshrinkBackward0": (lambda x: F.softshrink(x, 0.5),
                                np.where(np.abs(xn) > 0.5, xn - 0.5 * np.sign(xn), 0.0)),
        "HardshrinkBackward0": (lambda x: F.hardshrink(x, 0.5),
                                np.where(np.abs(xn) > 0.5, xn, 0.0)),
    }
    for node, (fn, ref) in cases.items():
        x = _t(xn, requires_grad=True)
        y = fn(x)
        assert type(y.grad_fn).__name__ == node.split()[0], node
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-14, err_msg=node)
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,)), node
    # a piecewise node's gradient stays in x's graph under create_graph (zero 2nd derivative)
    x = _t(xn, requires_grad=True)
    (g,) = tgrad.autograd.grad(F.leaky_relu(x, 0.2).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = tgrad.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(gg.numpy(), np.zeros((3, 4)))
    # hardtanh_backward zeroes x <= lo or x >= hi only: a NaN input passes g (PyTorch's)
    x = _t([np.nan, -1.0, 0.5, 1.0, -3.0], requires_grad=True)
    F.hardtanh(x).backward(_t([2.0, 2.0, 2.0, 2.0, 2.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 2.0, 0.0, 0.0])


def test_softshrink_hardshrink_nodes_nan_inf_and_halves():
    # hand values: NaN stays NaN, +-inf shift to +-inf; dx = g strictly outside [-l, l], 0 at
    # the kinks and for NaN (PyTorch's vectorized loop), in x's graph under create_graph
    x = _t([np.nan, np.inf, -np.inf, 0.5, -0.5, 0.7, 0.0], requires_grad=True)
    for fn, want in ((F.softshrink, [np.nan, np.inf, -np.inf, 0.0, 0.0, 0.7 - 0.5, 0.0]),
                     (F.hardshrink, [np.nan, np.inf, -np.inf, 0.0, 0.0, 0.7, 0.0])):
        y = fn(x, 0.5)
        np.testing.assert_array_equal(y.detach().numpy(), want)
        (g,) = tgrad.autograd.grad(y, x, _t([3.0] * 7), create_graph=True)
        np.testing.assert_array_equal(g.detach().numpy(), [0, 3, 3, 0, 0, 3, 0])
        assert g.requires_grad
    # float16/bfloat16 softshrink compares and shifts in float32, rounded once (PyTorch's
    # opmath): bfloat16(0.3) = 0.30078125 > 0.3 gives 0.30078125 - 0.3 rounded, not 0
    for dt in (tgrad.bfloat16, tgrad.float16):
        xh = tgrad.tensor([0.3, -0.3, 1.0], dtype=dt)
        xs = xh.to(tgrad.float64).numpy()
        want = np.where(np.abs(xs) > 0.3, xs - 0.3 * np.sign(xs), 0.0)
        y = F.softshrink(xh, 0.3)
        assert y.dtype is dt
        np.testing.assert_array_equal(y.to(tgrad.float64).numpy(),
                                      tgrad.tensor(want).to(dt).to(tgrad.float64).numpy())
        xr = xh.clone().requires_grad_()
        assert type(F.softshrink(xr, 0.3).grad_fn).__name__ == "SoftshrinkBackward0"


def test_one_node_losses_forward_ad():
    # forward-mode AD through the new nodes (their vjp of the vjp) against finite differences
    import tgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(14)
    xn, tn = rng.uniform(0.2, 0.8, (2, 3)), rng.uniform(0.2, 0.8, (2, 3))
    un = rng.normal(size=(2, 3))
    fns = {
        "mse": (lambda x: F.mse_loss(x, _t(tn)), lambda a: ((a - tn) ** 2).mean()),
        "huber": (lambda x: F.huber_loss(x * 4, _t(tn), reduction="sum"),
                  lambda a: np.where(np.abs(4 * a - tn) < 1, 0.5 * (4 * a - tn) ** 2,
                                     np.abs(4 * a - tn) - 0.5).sum()),
        "bce": (lambda x: F.binary_cross_entropy(x, _t(tn)),
                lambda a: -(tn * np.log(a) + (1 - tn) * np.log(1 - a)).mean()),
        "leaky_relu": (lambda x: F.leaky_relu(x - 0.5, 0.1),
                       lambda a: np.where(a > 0.5, a - 0.5, 0.1 * (a - 0.5))),
        "glu": (lambda x: F.glu(x, 0), lambda a: a[:1] / (1 + np.exp(-a[1:]))),
        "logsigmoid": (F.logsigmoid, lambda a: -np.logaddexp(0, -a)),
        "softshrink": (lambda x: F.softshrink(x, 0.4),
                       lambda a: np.where(np.abs(a) > 0.4, a - 0.4 * np.sign(a), 0.0)),
        "hardshrink": (lambda x: F.hardshrink(x, 0.4),
                       lambda a: np.where(np.abs(a) > 0.4, a, 0.0)),
    }
    for name, (fn, ref) in fns.items():
        with fwAD.dual_level():
            y = fn(fwAD.make_dual(_t(xn), _t(un)))
            tangent = fwAD.unpack_dual(y).tangent
        np.testing.assert_allclose(tangent.numpy(), _fd_jvp(ref, xn, un), rtol=1e-7,
                                   atol=1e-9, err_msg=name)


def test_one_node_loss_on_cuda_interpreter():
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad, tgrad.nn.functional as F
z = np.array([[0.5, -1.5, 2.0], [0.25, 3.0, -0.75]])
out = {}
for dev in ("cpu", "cuda"):
    x = tgrad.tensor(z, device=dev, requires_grad=True)
    loss = F.mse_loss(x, tgrad.zeros(2, 3, dtype=tgrad.float64, device=dev))
    loss.backward()
    out[dev] = [type(loss.grad_fn).__name__, loss.item(), x.grad.cpu().numpy().ravel().tolist()]
print(json.dumps(out))
""")
    z = np.array([[0.5, -1.5, 2.0], [0.25, 3.0, -0.75]])
    assert res["cuda"][0] == "MseLossBackward0"
    assert res["cuda"][1] == pytest.approx((z ** 2).mean(), rel=1e-14)
    np.testing.assert_allclose(res["cuda"][2], (2 * z / 6).ravel(), rtol=1e-14)
