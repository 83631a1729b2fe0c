"""tgrad.amp: autocast regions (PyTorch's cast policies: lower precision for matmuls,
linear and convolutions, float32 for exp/log/sums/softmax/losses, the widest dtype for
mixed ops; float64 untouched; nesting and decorators; gradients through the casts) and
GradScaler (scaling, unscaling, skipped steps on inf/NaN, scale updates, state dicts),
against NumPy float64 references of the same roundings."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.amp import GradScaler, autocast

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(21)


def _bf16(x: np.ndarray) -> np.ndarray:
    """x rounded to bfloat16, back in float64."""
    return np.asarray(x, np.float32).astype(BF16).astype(np.float64)


def test_cpu_region_casts_by_policy():
    a, b = RNG.standard_normal((3, 4)).astype(np.float32), \
        RNG.standard_normal((4, 2)).astype(np.float32)
    ta, tb = tgrad.tensor(a), tgrad.tensor(b)
    assert not tgrad.is_autocast_enabled("cpu")
    with tgrad.autocast("cpu"):
        assert tgrad.is_autocast_enabled("cpu") and not tgrad.is_autocast_enabled("cuda")
        assert tgrad.get_autocast_dtype("cpu") is tgrad.bfloat16
        y = ta @ tb  # lower precision: bfloat16 operands, float32 accumulation
        assert y.dtype is tgrad.bfloat16
        np.testing.assert_allclose(y.float().numpy(), _bf16(_bf16(a) @ _bf16(b)), rtol=1e-2,
                                   atol=1e-2)
        e = y.exp()  # not on PyTorch's CPU float32 list (CUDA's): stays bfloat16
        assert e.dtype is tgrad.bfloat16
        np.testing.assert_allclose(e.float().numpy(), _bf16(np.exp(y.float().numpy())),
                                   rtol=1e-2)
        assert y.sum().dtype is tgrad.bfloat16 and F.softmax(y, -1).dtype is tgrad.bfloat16
        assert y.prod().dtype is tgrad.float32  # prod is on the CPU float32 list
        assert tgrad.stack([y, ta[:, :2]]).dtype is tgrad.float32  # promote: the widest
        d = tgrad.tensor(a.astype(np.float64))
        assert (d @ d.mT).dtype is tgrad.float64  # float64 is never cast
        lin = nn.Linear(4, 2)
        out = lin(ta)
        assert out.dtype is tgrad.bfloat16  # weight and bias cast too
        assert F.mse_loss(out, tgrad.zeros(3, 2)).dtype is tgrad.float32
        with tgrad.autocast("cpu", enabled=False):
            assert (ta @ tb).dtype is tgrad.float32
        # refused in CUDA regions only; on CPU it has the float32 policy
        assert F.binary_cross_entropy(tgrad.rand(3), tgrad.rand(3)).dtype is tgrad.float32
    assert (ta @ tb).dtype is tgrad.float32 and not tgrad.is_autocast_enabled("cpu")
    with tgrad.autocast("cuda"):  # a region for another device type leaves cpu alone
        assert (ta @ tb).dtype is tgrad.float32


def test_gradients_flow_through_the_casts_and_decorator():
    tgrad.manual_seed(0)
    lin = nn.Linear(4, 3)
    x = tgrad.tensor(RNG.standard_normal((5, 4)).astype(np.float32))

    @autocast("cpu", dtype=tgrad.float16)
    def forward(inp):
        return lin(inp)
    y = forward(x)
    assert y.dtype is tgrad.float16
    y.float().sum().backward()
    assert lin.weight.grad.dtype is tgrad.float32  # the grads come back in the leaves' dtype
    xh = x.numpy().astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.ones((5, 3)).T @ xh, rtol=2e-3)
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(3, 5.0))


def test_autocast_errors():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        autocast("tpu")
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling"):
        region = autocast("cpu", dtype=tgrad.float32)
    with region:  # PyTorch's: a warning, and the region is disabled
        assert not tgrad.is_autocast_enabled("cpu")


def _setup(lr=0.5):
    w = nn.Parameter(tgrad.tensor([1.0, -2.0]))
    return w, tgrad.optim.SGD([w], lr=lr)


def test_grad_scaler_scales_unscales_and_steps():
    w, opt = _setup()
    scaler = GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    loss = (w * tgrad.tensor([3.0, 4.0])).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == loss.item() * 1024.0
    scaled.backward()
    assert w.grad.tolist() == [3.0 * 1024, 4.0 * 1024]
    scaler.step(opt)  # unscales (exactly: a power of two), then steps
    assert w.tolist() == [1.0 - 0.5 * 3.0, -2.0 - 0.5 * 4.0]
    scaler.update()
    assert scaler.get_scale() == 1024.0  # one good step of growth_interval 2
    opt.zero_grad()
    scaler.scale((w * 2).sum()).backward()
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2048.0  # second good step: grown
    state = scaler.state_dict()
    other = GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 2048.0 and other.state_dict() == state


def test_grad_scaler_skips_inf_steps_and_backs_off():
    w, opt = _setup()
    scaler = GradScaler("cpu", init_scale=8.0)
    before = w.tolist()
    scaler.scale((w * tgrad.tensor([float("inf"), 1.0])).sum()).backward()
    assert scaler.step(opt) is None  # an inf gradient: the step is skipped
    assert w.tolist() == before
    scaler.update()
    assert scaler.get_scale() == 4.0
    scaler.update(new_scale=100.0)
    assert scaler.get_scale() == 100.0
    off = GradScaler("cpu", enabled=False)
    loss = w.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    opt.zero_grad()
    loss.backward()
    off.step(opt)  # plain step
    assert w.tolist() == [before[0] - 0.5, before[1] - 0.5]
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        GradScaler("cpu", growth_factor=1.0)


def test_custom_fwd_bwd():
    from tgrad.amp import custom_bwd, custom_fwd
    seen = {}

    class Square(tgrad.autograd.Function):
        @staticmethod
        @custom_fwd(device_type="cpu", cast_inputs=tgrad.float32)
        def forward(ctx, x):
            seen["fwd"] = (x.dtype, tgrad.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = tgrad.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = tgrad.tensor([1.5, -2.0], dtype=tgrad.bfloat16, requires_grad=True)
    with tgrad.autocast("cpu"):
        y = Square.apply(x)
    assert seen["fwd"] == (tgrad.float32, False) and y.dtype is tgrad.float32
    y.sum().backward()
    assert seen["bwd"] is False  # as the forward ran: outside autocast
    assert x.grad.dtype is tgrad.bfloat16 and x.grad.float().tolist() == [3.0, -4.0]


def test_mixed_dtype_matmuls_and_modules_inside_a_region():
    """a @ b of a float32 and a bfloat16 operand is cast first (matmul's own dtype check
    would reject the pair); attention mixes a float32 softmax with bfloat16 values."""
    a32 = tgrad.tensor(RNG.standard_normal((2, 3)).astype(np.float32))
    b16 = tgrad.tensor(RNG.standard_normal((3, 2)).astype(np.float32)).to(tgrad.bfloat16)
    with tgrad.autocast("cpu"):
        assert (a32 @ b16).dtype is tgrad.bfloat16
        assert (a32.mT.__rmatmul__(b16.mT)).dtype is tgrad.bfloat16  # b16^T @ a32^T
        mha = nn.MultiheadAttention(4, 2)
        q = tgrad.randn(3, 1, 4)
        out, w = mha(q, q, q)
        assert out.dtype is tgrad.bfloat16 and w.dtype is tgrad.bfloat16  # CPU: no fp32 softmax
        assert nn.Conv2d(2, 3, 3)(tgrad.randn(1, 2, 5, 5)).dtype is tgrad.bfloat16
    with pytest.raises(RuntimeError, match="same dtype"):
        a32 @ b16  # outside a region: PyTorch's error


# PyTorch 2.13's CPU autocast lists (aten/src/ATen/autocast_mode.cpp, KERNEL_CPU), observed
# as the output dtype of each policy-bearing op with bfloat16 / float32 inputs inside
# ``autocast("cpu")``: shorter than the CUDA lists (exp, sum, softmax, norms... keep their
# input dtype; mv and dot are not lowered).
def _t(shape, dt, pos=False, seed=0):
    r = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if pos:
        r = np.abs(r) * 0.4 + 0.1
    return tgrad.tensor(r).to(dt)


_CPU_CASES = {
    "matmul": lambda d: _t((3, 4), d) @ _t((4, 2), d),
    "mm": lambda d: tgrad.mm(_t((3, 4), d), _t((4, 2), d)),
    "bmm": lambda d: tgrad.bmm(_t((2, 3, 4), d), _t((2, 4, 2), d)),
    "addmm": lambda d: tgrad.addmm(_t((3, 2), d), _t((3, 4), d), _t((4, 2), d)),
    "baddbmm": lambda d: tgrad.baddbmm(_t((2, 3, 2), d), _t((2, 3, 4), d), _t((2, 4, 2), d)),
    "addbmm": lambda d: tgrad.addbmm(_t((3, 2), d), _t((2, 3, 4), d), _t((2, 4, 2), d)),
    "chain_matmul": lambda d: tgrad.chain_matmul(_t((3, 4), d), _t((4, 2), d), _t((2, 2), d)),
    "tensordot": lambda d: tgrad.tensordot(_t((3, 4), d), _t((4, 2), d), dims=1),
    "linear": lambda d: F.linear(_t((3, 4), d), _t((2, 4), d)),
    "conv1d": lambda d: F.conv1d(_t((1, 2, 5), d), _t((3, 2, 2), d)),
    "conv2d": lambda d: F.conv2d(_t((1, 2, 5, 5), d), _t((3, 2, 2, 2), d)),
    "conv3d": lambda d: F.conv3d(_t((1, 2, 3, 3, 3), d), _t((3, 2, 2, 2, 2), d)),
    "conv_transpose1d": lambda d: F.conv_transpose1d(_t((1, 2, 5), d), _t((2, 3, 2), d)),
    "conv_transpose2d": lambda d: F.conv_transpose2d(_t((1, 2, 5, 5), d), _t((2, 3, 2, 2), d)),
    "conv_transpose3d": lambda d: F.conv_transpose3d(_t((1, 2, 3, 3, 3), d),
                                                     _t((2, 3, 2, 2, 2), d)),
    "prelu": lambda d: F.prelu(_t((3, 4), d), _t((1,), d)),
    "sdpa": lambda d: F.scaled_dot_product_attention(_t((1, 3, 4), d), _t((1, 3, 4), d, seed=1),
                                                     _t((1, 3, 4), d, seed=2)),
    "acos": lambda d: tgrad.acos(_t((3, 4), d, pos=True)),
    "asin": lambda d: tgrad.asin(_t((3, 4), d, pos=True)),
    "cosh": lambda d: tgrad.cosh(_t((3, 4), d)),
    "sinh": lambda d: tgrad.sinh(_t((3, 4), d)),
    "tan": lambda d: tgrad.tan(_t((3, 4), d)),
    "exp": lambda d: tgrad.exp(_t((3, 4), d)),
    "exp2": lambda d: tgrad.exp2(_t((3, 4), d)),
    "expm1": lambda d: tgrad.expm1(_t((3, 4), d)),
    "log": lambda d: tgrad.log(_t((3, 4), d, pos=True)),
    "log10": lambda d: tgrad.log10(_t((3, 4), d, pos=True)),
    "log1p": lambda d: tgrad.log1p(_t((3, 4), d, pos=True)),
    "log2": lambda d: tgrad.log2(_t((3, 4), d, pos=True)),
    "pow": lambda d: tgrad.pow(_t((3, 4), d, pos=True), 2.5),
    "pow_tensor": lambda d: tgrad.pow(_t((3, 4), d, pos=True), _t((3, 4), d, seed=1)),
    "reciprocal": lambda d: tgrad.reciprocal(_t((3, 4), d, pos=True)),
    "rsqrt": lambda d: tgrad.rsqrt(_t((3, 4), d, pos=True)),
    "sum": lambda d: tgrad.sum(_t((3, 4), d)),
    "cumsum": lambda d: tgrad.cumsum(_t((3, 4), d), 0),
    "cumprod": lambda d: tgrad.cumprod(_t((3, 4), d), 0),
    "norm": lambda d: tgrad.norm(_t((3, 4), d)),
    "vector_norm": lambda d: tgrad.linalg.vector_norm(_t((3, 4), d)),
    "softmax": lambda d: F.softmax(_t((3, 4), d), -1),
    "log_softmax": lambda d: F.log_softmax(_t((3, 4), d), -1),
    "softmin": lambda d: F.softmin(_t((3, 4), d), -1),
    "layer_norm": lambda d: F.layer_norm(_t((3, 4), d), (4,)),
    "group_norm": lambda d: F.group_norm(_t((2, 4, 3), d), 2),
    "softplus": lambda d: F.softplus(_t((3, 4), d)),
    "logsumexp": lambda d: tgrad.logsumexp(_t((3, 4), d), 1),
    "atan2": lambda d: tgrad.atan2(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "dot": lambda d: tgrad.dot(_t((4,), d), _t((4,), d, seed=1)),
    "mv": lambda d: tgrad.mv(_t((3, 4), d), _t((4,), d, seed=1)),
    "addmv": lambda d: tgrad.addmv(_t((3,), d), _t((3, 4), d), _t((4,), d)),
    "addr": lambda d: tgrad.addr(_t((3, 4), d), _t((3,), d), _t((4,), d)),
    "cross": lambda d: tgrad.cross(_t((2, 3), d), _t((2, 3), d, seed=1), dim=1),
    "erfinv": lambda d: tgrad.erfinv(_t((3, 4), d, pos=True)),
    "dist": lambda d: tgrad.dist(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "renorm": lambda d: tgrad.renorm(_t((3, 4), d), 2, 0, 1.0),
    "cosine_similarity": lambda d: F.cosine_similarity(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "normalize": lambda d: F.normalize(_t((3, 4), d)),
    "bilinear": lambda d: F.bilinear(_t((3, 2), d), _t((3, 4), d), _t((5, 2, 4), d)),
    "multilabel_soft_margin_loss": lambda d: F.multilabel_soft_margin_loss(
        _t((3, 4), d), tgrad.ones(3, 4).to(d)),
    "gaussian_nll_loss": lambda d: F.gaussian_nll_loss(_t((3, 4), d), _t((3, 4), d, seed=1),
                                                       _t((3, 4), d, pos=True, seed=2)),
    "prod": lambda d: tgrad.prod(_t((3, 4), d)),
    "cross_entropy": lambda d: F.cross_entropy(_t((3, 4), d), tgrad.tensor([0, 1, 2])),
    "cat": lambda d: tgrad.cat([_t((3, 4), d), _t((3, 4), tgrad.float32, seed=1)]),
    "stack": lambda d: tgrad.stack([_t((3, 4), d), _t((3, 4), tgrad.float32, seed=1)]),
    "cdist": lambda d: tgrad.cdist(_t((3, 4), d), _t((2, 4), d)),
    "addcmul": lambda d: tgrad.addcmul(_t((3, 4), d), _t((3, 4), d, seed=1),
                                       _t((3, 4), tgrad.float32, seed=2)),
    "addcdiv": lambda d: tgrad.addcdiv(_t((3, 4), d), _t((3, 4), d, seed=1),
                                       _t((3, 4), tgrad.float32, pos=True, seed=2)),
    "l1_loss": lambda d: F.l1_loss(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "smooth_l1_loss": lambda d: F.smooth_l1_loss(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "huber_loss": lambda d: F.huber_loss(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "mse_loss": lambda d: F.mse_loss(_t((3, 4), d), _t((3, 4), d, seed=1)),
    "nll_loss": lambda d: F.nll_loss(_t((3, 4), d), tgrad.tensor([0, 1, 2])),
    "kl_div": lambda d: F.kl_div(_t((3, 4), d), _t((3, 4), d, pos=True, seed=1),
                                 reduction="batchmean"),
    "binary_cross_entropy": lambda d: F.binary_cross_entropy(_t((3, 4), d, pos=True),
                                                             _t((3, 4), d, pos=True, seed=1)),
    "bce_with_logits": lambda d: F.binary_cross_entropy_with_logits(
        _t((3, 4), d), _t((3, 4), d, pos=True, seed=1)),
    "grid_sample": lambda d: F.grid_sample(_t((1, 1, 3, 3), d), _t((1, 2, 2, 2), d, pos=True),
                                           align_corners=False),
    "margin_ranking_loss": lambda d: F.margin_ranking_loss(
        _t((3,), d), _t((3,), d, seed=1), tgrad.tensor([1.0, -1.0, 1.0]).to(d)),
    "hinge_embedding_loss": lambda d: F.hinge_embedding_loss(_t((3, 4), d),
                                                             tgrad.ones(3, 4).to(d)),
    "soft_margin_loss": lambda d: F.soft_margin_loss(_t((3, 4), d), tgrad.ones(3, 4).to(d)),
    "cosine_embedding_loss": lambda d: F.cosine_embedding_loss(
        _t((3, 4), d), _t((3, 4), d, seed=1), tgrad.tensor([1.0, -1.0, 1.0]).to(d)),
    "multi_margin_loss": lambda d: F.multi_margin_loss(_t((3, 4), d), tgrad.tensor([0, 1, 2])),
    "multilabel_margin_loss": lambda d: F.multilabel_margin_loss(
        _t((3, 4), d), tgrad.tensor([[0, 1, -1, 0]] * 3)),
    "triplet_margin_loss": lambda d: F.triplet_margin_loss(_t((3, 4), d), _t((3, 4), d, seed=1),
                                                           _t((3, 4), d, seed=2)),
    "poisson_nll_loss": lambda d: F.poisson_nll_loss(_t((3, 4), d),
                                                     _t((3, 4), d, pos=True, seed=1)),
}
# (output dtype for bfloat16 inputs, for float32 inputs), as PyTorch 2.13 gives them
_LOWER = ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "chain_matmul", "tensordot",
          "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
          "conv_transpose3d", "prelu", "sdpa")
_FP32 = ("prod", "cross_entropy", "cat", "stack", "cdist", "addcmul", "addcdiv", "l1_loss",
         "smooth_l1_loss", "huber_loss", "mse_loss", "nll_loss", "kl_div",
         "binary_cross_entropy", "bce_with_logits", "grid_sample", "margin_ranking_loss",
         "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
         "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_loss",
         "poisson_nll_loss")


@pytest.mark.parametrize("name", sorted(_CPU_CASES))
def test_cpu_autocast_dtypes_follow_pytorchs_cpu_lists(name):
    if name in _LOWER:
        want = ("bfloat16", "bfloat16")
    elif name in _FP32:
        want = ("float32", "float32")
    else:  # no CPU policy: the inputs' dtype
        want = ("bfloat16", "float32")
    with tgrad.autocast("cpu"):
        got = tuple(_CPU_CASES[name](d).dtype.name for d in (tgrad.bfloat16, tgrad.float32))
    assert got == want


def test_cpu_autocast_values_of_unlowered_and_uncast_ops():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    v = RNG.standard_normal(4).astype(np.float32)
    with tgrad.autocast("cpu"):
        mv = tgrad.mv(tgrad.tensor(a), tgrad.tensor(v))  # float32 product, not bfloat16
        dot = tgrad.dot(tgrad.tensor(v), tgrad.tensor(v))
        e = tgrad.tensor(a).to(tgrad.bfloat16).exp()
        p = np.abs(a) * 0.4 + 0.1
        bce = F.binary_cross_entropy(tgrad.tensor(p).to(tgrad.bfloat16),
                                     tgrad.tensor(p[::-1].copy()).to(tgrad.bfloat16))
    np.testing.assert_allclose(mv.numpy(), a.astype(np.float64) @ v, rtol=1e-5)
    np.testing.assert_allclose(dot.item(), float(v.astype(np.float64) @ v), rtol=1e-5)
    np.testing.assert_allclose(e.float().numpy(), _bf16(np.exp(_bf16(a))), rtol=1e-2)
    x, t = _bf16(p), _bf16(p[::-1])
    assert bce.dtype is tgrad.float32
    np.testing.assert_allclose(bce.item(), np.mean(-(t * np.log(x) + (1 - t) * np.log(1 - x))),
                               rtol=1e-5)


def test_cpu_autocast_with_float32_warns_and_disables():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast."):
        with tgrad.autocast("cpu", dtype=tgrad.float32):
            assert not tgrad.is_autocast_enabled("cpu")
            x = tgrad.tensor(RNG.standard_normal((2, 2)).astype(np.float32))
            assert (x @ x).dtype is tgrad.float32


def test_grad_scaler_pytorch_checks():
    # scale() of a half-precision loss: float32 (PyTorch's scale is a float32 tensor)
    scaler = GradScaler("cpu", init_scale=4.0)
    for dt in (tgrad.bfloat16, tgrad.float16):
        out = scaler.scale(tgrad.tensor(1.5, dtype=dt))
        assert out.dtype is tgrad.float32 and out.item() == 6.0
    assert scaler.scale(tgrad.tensor(1.5, dtype=tgrad.float64)).dtype is tgrad.float64
    # step / unscale_ / update before any scale(): PyTorch's AssertionError
    w, opt = _setup()
    w.grad = tgrad.ones(2)
    fresh = GradScaler("cpu")
    for fn in ("step", "unscale_"):
        with pytest.raises(AssertionError, match=f"Attempted {fn} but _scale is None"):
            getattr(fresh, fn)(opt)
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        fresh.update()
    assert w.tolist() == [1.0, -2.0]  # nothing stepped
    GradScaler("cpu", enabled=False).step(opt)  # disabled: a plain step
    assert w.tolist() == [0.5, -2.5]
    # float16 gradients: PyTorch refuses to unscale them (and leaves them as they are)
    wh = nn.Parameter(tgrad.tensor([1.0, 2.0], dtype=tgrad.float16))
    wh.grad = tgrad.tensor([4.0, 8.0], dtype=tgrad.float16)
    opt_h = tgrad.optim.SGD([wh], lr=0.1)
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale(tgrad.tensor(1.0))
    for fn in ("unscale_", "step"):
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            getattr(scaler, fn)(opt_h)
    assert wh.grad.tolist() == [4.0, 8.0] and wh.tolist() == [1.0, 2.0]
    wb = nn.Parameter(tgrad.tensor([1.0, 2.0], dtype=tgrad.bfloat16))  # bfloat16: allowed
    wb.grad = tgrad.tensor([4.0, 8.0], dtype=tgrad.bfloat16)
    scaler.unscale_(tgrad.optim.SGD([wb], lr=0.1))
    assert wb.grad.tolist() == [1.0, 2.0]


def test_cuda_policies_unchanged_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, tgrad, tgrad.nn.functional as F
x = tgrad.rand(3, 4, device="cuda") * 0.5 + 0.25
out = {}
with tgrad.autocast("cuda"):
    h = x.half()
    out["exp"] = h.exp().dtype.name
    out["sum"] = h.sum().dtype.name
    out["softmax"] = F.softmax(h, -1).dtype.name
    out["mv"] = tgrad.mv(x, x[0]).dtype.name
    out["matmul"] = (x @ x.mT).dtype.name
    try:
        F.binary_cross_entropy(x, x)
        out["bce"] = "ran"
    except RuntimeError as e:
        out["bce"] = "unsafe to autocast" in str(e)
    out["bce_cpu"] = F.binary_cross_entropy(x.cpu(), x.cpu()).dtype.name
print(json.dumps(out))
""")
    assert res == {"exp": "float32", "sum": "float32", "softmax": "float32", "mv": "float16",
                   "matmul": "float16", "bce": True, "bce_cpu": "float32"}


def test_cpu_lower_policy_casts_the_other_half_dtype():
    # PyTorch's cached_cast: every floating dtype but float64 goes to the region's dtype, so
    # float16 operands in a bfloat16 region (and bfloat16 in a float16 one) are cast too
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    ah, bh = a.astype(np.float16), b.astype(np.float16)
    with tgrad.autocast("cpu"):
        mm = tgrad.tensor(ah) @ tgrad.tensor(bh)
        lin = F.linear(tgrad.tensor(ah), tgrad.tensor(bh.T.copy()))
        f64 = tgrad.tensor(a.astype(np.float64)) @ tgrad.tensor(b.astype(np.float64))
    assert mm.dtype is tgrad.bfloat16 and lin.dtype is tgrad.bfloat16
    assert f64.dtype is tgrad.float64
    want = _bf16(_bf16(ah) @ _bf16(bh))  # float16 values rounded to bfloat16, then the product
    np.testing.assert_allclose(mm.float().numpy(), want, rtol=1e-2, atol=1e-2)
    with tgrad.autocast("cpu", dtype=tgrad.float16):
        assert (tgrad.tensor(a).to(tgrad.bfloat16) @ tgrad.tensor(b)).dtype is tgrad.float16


def test_autocast_dtype_defaults_to_the_enclosing_regions():
    x = tgrad.ones(2, 2)
    with autocast("cpu", dtype=tgrad.float16):
        with autocast("cpu"):  # PyTorch's default: get_autocast_dtype("cpu") now
            assert (x @ x).dtype is tgrad.float16
        with autocast("cpu", enabled=False):  # off, but the dtype stays
            assert not tgrad.is_autocast_enabled("cpu")
            assert tgrad.get_autocast_dtype("cpu") is tgrad.float16
            assert (x @ x).dtype is tgrad.float32
    assert tgrad.get_autocast_dtype("cpu") is tgrad.bfloat16
    with autocast("cpu", dtype=tgrad.float16, enabled=False):
        with autocast("cpu"):
            assert (x @ x).dtype is tgrad.float16
    region = autocast("cpu", dtype=tgrad.float16)  # one instance entered inside itself
    with region:
        with region:
            assert tgrad.is_autocast_enabled("cpu")
        assert tgrad.is_autocast_enabled("cpu")
    assert not tgrad.is_autocast_enabled("cpu")
    assert tgrad.get_autocast_dtype("cpu") is tgrad.bfloat16


def test_custom_fwd_cast_inputs_leaves_float64_alone():
    seen = {}

    class Fn(tgrad.autograd.Function):
        @staticmethod
        @tgrad.amp.custom_fwd(device_type="cpu", cast_inputs=tgrad.float32)
        def forward(ctx, x, y):
            seen["dtypes"] = (x.dtype, y.dtype)
            return x * 2

        @staticmethod
        @tgrad.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2, None

    x = tgrad.ones(2, dtype=tgrad.bfloat16, requires_grad=True)
    with autocast("cpu"):
        Fn.apply(x, tgrad.ones(2, dtype=tgrad.float64)).sum().backward()
    assert seen["dtypes"] == (tgrad.float32, tgrad.float64)
    assert x.grad.tolist() == [2.0, 2.0]


def test_grad_scaler_keeps_a_float32_scale():
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    scaler = GradScaler("cpu", init_scale=0.1, growth_factor=1.1, backoff_factor=0.3,
                        growth_interval=1)
    assert scaler.get_scale() == 0.1  # init_scale as given until scale() is called
    scaler.scale(tgrad.tensor(1.0))
    assert scaler.get_scale() == f32(0.1) and scaler.state_dict()["scale"] == f32(0.1)
    w, opt = _setup()
    w.grad = tgrad.tensor([1.0, 7.0])
    scaler.step(opt)
    scaler.update()  # float32(0.1) * 1.1 in float64, rounded to float32
    assert scaler.get_scale() == f32(f32(0.1) * 1.1)
    w.grad = tgrad.tensor([float("nan"), 1.0])
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == f32(f32(f32(0.1) * 1.1) * 0.3)
    scaler.update(0.7)
    assert scaler.get_scale() == f32(0.7)
    # a growth that overflows float32 is not taken (the tracker restarts)
    big = GradScaler("cpu", init_scale=2.0 ** 127, growth_interval=1)
    big.scale(tgrad.tensor(1.0))
    w, opt = _setup()
    w.grad = tgrad.tensor([1.0, 1.0])
    big.step(opt)
    big.update()
    assert big.get_scale() == 2.0 ** 127 and big.state_dict()["_growth_tracker"] == 0
    # unscale_ multiplies by float32(1 / scale), also float64 gradients
    s3 = GradScaler("cpu", init_scale=3.0)
    s3.scale(tgrad.tensor(1.0))
    wd = nn.Parameter(tgrad.tensor([1.0, 2.0], dtype=tgrad.float64))
    wd.grad = tgrad.tensor([1.0, 7.0], dtype=tgrad.float64)
    s3.unscale_(tgrad.optim.SGD([wd], lr=0.1))
    assert wd.grad.tolist() == [f32(1 / 3), 7.0 * f32(1 / 3)]


def test_grad_scaler_scale_dtypes_and_checks():
    scaler = GradScaler("cpu", init_scale=4.0)
    # times a 0-dim float32 tensor: n-d half outputs keep their dtype, 0-dim ones do not
    out = scaler.scale(tgrad.tensor([1.5, 2.0], dtype=tgrad.float16))
    assert out.dtype is tgrad.float16 and out.tolist() == [6.0, 8.0]
    assert scaler.scale(tgrad.tensor(1.5, dtype=tgrad.bfloat16)).dtype is tgrad.float32
    assert scaler.scale(tgrad.tensor([3])).dtype is tgrad.float32
    # update(new_scale) with a tensor: one element, no grad (PyTorch's AssertionError)
    for bad in (tgrad.tensor([1.0, 2.0]), tgrad.tensor(2.0, requires_grad=True)):
        with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
            scaler.update(bad)
    scaler.update(tgrad.tensor(16.0))
    assert scaler.get_scale() == 16.0
    # no gradient at all: no inf check was recorded
    w, opt = _setup()
    w.grad = None
    scaler.scale(tgrad.tensor(1.0))
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
        scaler.step(opt)
    s2 = GradScaler("cpu")
    s2.scale(tgrad.tensor(1.0))
    s2.unscale_(opt)
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        s2.update()
    # a disabled scaler does not check its factors
    assert not GradScaler("cpu", growth_factor=0.5, enabled=False).is_enabled()


def test_cpu_amp_deprecated_aliases():
    from tgrad.cpu.amp import GradScaler as CpuScaler
    x = tgrad.ones(2, 2)
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = tgrad.cpu.amp.autocast(dtype=tgrad.float16)
    with region:
        assert (x @ x).dtype is tgrad.float16
    with pytest.warns(FutureWarning):
        with tgrad.cpu.amp.autocast():
            assert (x @ x).dtype is tgrad.bfloat16
    with pytest.warns(FutureWarning, match="torch.amp.GradScaler\\('cpu', args...\\)"):
        scaler = CpuScaler(init_scale=8.0)
    assert isinstance(scaler, GradScaler) and scaler.scale(tgrad.tensor(1.0)).item() == 8.0
