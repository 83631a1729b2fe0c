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


def test_cuda_amp_deprecated_aliases():
    # torch.cuda.amp: tgrad.amp's classes and decorators on "cuda" (float16 by default), each
    # with PyTorch's FutureWarning; tgrad.GradScaler is tgrad.amp.GradScaler (torch.GradScaler)
    import tgrad.cuda.amp as cuda_amp
    assert tgrad.GradScaler is GradScaler
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.autocast\(args...\)` is deprecated. "
                                           r"Please use `torch.amp.autocast\('cuda', args...\)`"):
        region = cuda_amp.autocast(enabled=False)
    assert isinstance(region, tgrad.amp.autocast) and region.device_type == "cuda"
    assert region.fast_dtype is tgrad.float16
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cuda', args...\)"):
        scaler = tgrad.cuda.amp.GradScaler(init_scale=4.0, enabled=False)
    assert isinstance(scaler, GradScaler) and not scaler.is_enabled()

    class Twice(tgrad.autograd.Function):
        @staticmethod
        @cuda_amp.custom_fwd
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @cuda_amp.custom_bwd
        def backward(ctx, g):
            return g * 2

    with pytest.warns(FutureWarning, match="torch.amp.custom_fwd\\(args..., device_type='cuda'\\)"):
        cuda_amp.custom_fwd(cast_inputs=tgrad.float32)
    x = tgrad.ones(3, requires_grad=True)
    Twice.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


# ---------------------------------------------------------------- CPU autocast: composites
# PyTorch runs a listed op's kernel with autocast off: an "fp32" linalg op's inner matmuls
# are not lowered, and ops that are one CPU kernel there (matrix_exp, addmv, addr,
# solve_triangular, linalg.lu_solve...) are not lowered inside either.
def _spd(n, seed):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(np.float32)


_SPD = _spd(4, 3)
_L = np.linalg.cholesky(_SPD.astype(np.float64)).astype(np.float32)
_B = np.random.default_rng(4).standard_normal((4, 3)).astype(np.float32)
_R = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)


def _expm(a):  # float64 reference: exp(A) = V diag(exp(w)) V^-1 (a diagonalizable A)
    w, v = np.linalg.eig(a)
    return (v @ np.diag(np.exp(w)) @ np.linalg.inv(v)).real


def _hh_product(a, tau):  # float64 reference: prod_i (I - tau_i v_i v_i^H), LAPACK's orgqr
    m = a.shape[0]
    q = np.eye(m)
    for i, t in enumerate(tau):
        v = np.zeros(m)
        v[i], v[i + 1:] = 1.0, a[i + 1:, i]
        q = q @ (np.eye(m) - t * np.outer(v, v))
    return q[:, :a.shape[1]]


_F64 = np.float64
_COMPOSITES = {  # name: (call on tgrad tensors, NumPy float64 reference on float64 arrays)
    "matrix_exp": (lambda a, b: tgrad.linalg.matrix_exp(a / 10), lambda a, b: _expm(a / 10)),
    "pinverse": (lambda a, b: tgrad.pinverse(b.mT), lambda a, b: np.linalg.pinv(b.T)),
    "lstsq": (lambda a, b: tgrad.linalg.lstsq(a, b).solution,
              lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0]),
    "inv": (lambda a, b: tgrad.linalg.inv(a), lambda a, b: np.linalg.inv(a)),
    "inverse": (lambda a, b: a.inverse(), lambda a, b: np.linalg.inv(a)),
    "solve": (lambda a, b: tgrad.linalg.solve(a, b), lambda a, b: np.linalg.solve(a, b)),
    "solve_ex": (lambda a, b: tgrad.linalg.solve_ex(a, b).result,
                 lambda a, b: np.linalg.solve(a, b)),
    "cholesky": (lambda a, b: tgrad.linalg.cholesky(a), lambda a, b: np.linalg.cholesky(a)),
    "cholesky_solve": (lambda a, b: tgrad.cholesky_solve(b, tgrad.linalg.cholesky(a)),
                       lambda a, b: np.linalg.solve(a, b)),
    "cholesky_inverse": (lambda a, b: tgrad.cholesky_inverse(tgrad.linalg.cholesky(a)),
                         lambda a, b: np.linalg.inv(a)),
    "triangular_solve": (lambda a, b: tgrad.triangular_solve(b, tgrad.tensor(_L),
                                                             upper=False).solution,
                         lambda a, b: np.linalg.solve(_L.astype(_F64), b)),
    "solve_triangular": (lambda a, b: tgrad.linalg.solve_triangular(tgrad.tensor(_L), b,
                                                                    upper=False),
                         lambda a, b: np.linalg.solve(_L.astype(_F64), b)),
    "lu_solve": (lambda a, b: tgrad.linalg.lu_solve(*tgrad.linalg.lu_factor(a), b),
                 lambda a, b: np.linalg.solve(a, b)),
    "lu_solve_legacy": (lambda a, b: tgrad.lu_solve(b, *tgrad.linalg.lu_factor(a)),
                        lambda a, b: np.linalg.solve(a, b)),
    "tensorinv": (lambda a, b: tgrad.linalg.tensorinv(a.reshape(4, 2, 2), ind=1),
                  lambda a, b: np.linalg.inv(a).reshape(2, 2, 4)),
    "matrix_power_-1": (lambda a, b: tgrad.linalg.matrix_power(a, -1),
                        lambda a, b: np.linalg.inv(a)),
    "cond_fro": (lambda a, b: tgrad.linalg.cond(a, "fro"),
                 lambda a, b: np.linalg.cond(a, "fro")),
    "householder_product": (lambda a, b: tgrad.linalg.householder_product(a / 10, b[:3, 0]),
                            lambda a, b: _hh_product(a / 10, b[:3, 0])),
    "addmv": (lambda a, b: tgrad.addmv(b[:, 0], a, b[:, 1]),
              lambda a, b: b[:, 0] + a @ b[:, 1]),
    "addr": (lambda a, b: tgrad.addr(a, b[:, 0], b[:, 1]),
             lambda a, b: a + np.outer(b[:, 0], b[:, 1])),
}


@pytest.mark.parametrize("region", ["bfloat16", "float16"])
def test_cpu_autocast_float32_composites_are_not_lowered_inside(region):
    a, b = tgrad.tensor(_SPD), tgrad.tensor(_B)
    outside = {n: f(a, b) for n, (f, _) in _COMPOSITES.items()}
    with tgrad.autocast("cpu", dtype=getattr(tgrad, region)):
        inside = {n: f(a, b) for n, (f, _) in _COMPOSITES.items()}
        assert tgrad.is_autocast_enabled("cpu")  # each op's exit restored the region
        assert (a @ b).dtype.name == region
    for n, (_, ref) in _COMPOSITES.items():
        got = inside[n]
        assert got.dtype is tgrad.float32, n
        np.testing.assert_array_equal(got.numpy(), outside[n].numpy(), err_msg=n)
        np.testing.assert_allclose(got.numpy(), ref(_SPD.astype(_F64), _B.astype(_F64)),
                                   rtol=1e-4, atol=1e-5, err_msg=n)


def _half(x, region):  # the half-rounded values, in float64
    return tgrad.tensor(x).to(getattr(tgrad, region)).double().numpy()


_HALF_INPUTS = {  # PyTorch's CPU fp32 list: half inputs run in float32 (they raised)
    "inverse": (lambda a, b: tgrad.inverse(a), lambda a, b: np.linalg.inv(a)),
    "linalg.inv_ex": (lambda a, b: tgrad.linalg.inv_ex(a).inverse, lambda a, b: np.linalg.inv(a)),
    "solve": (lambda a, b: tgrad.linalg.solve(a, b), lambda a, b: np.linalg.solve(a, b)),
    "lstsq": (lambda a, b: tgrad.linalg.lstsq(a, b).solution,
              lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0]),
    "pinverse": (lambda a, b: tgrad.pinverse(b), lambda a, b: np.linalg.pinv(b)),
    "cholesky": (lambda a, b: tgrad.cholesky(a), lambda a, b: np.linalg.cholesky(a)),
    "cholesky_ex": (lambda a, b: tgrad.linalg.cholesky_ex(a).L,
                    lambda a, b: np.linalg.cholesky(a)),
    "cholesky_solve": (lambda a, b: tgrad.cholesky_solve(b, a.tril()),
                       lambda a, b: np.linalg.solve(np.tril(a) @ np.tril(a).T, b)),
    "lu_solve": (lambda a, b: tgrad.lu_solve(b, *tgrad.linalg.lu_factor(a.float())),
                 lambda a, b: np.linalg.solve(a, b)),
    "triangular_solve": (lambda a, b: tgrad.triangular_solve(b, a.tril(), upper=False)[0],
                         lambda a, b: np.linalg.solve(np.tril(a), b)),
    "lu": (lambda a, b: tgrad.lu(a)[0].triu(), None),
    "qr": (lambda a, b: tgrad.linalg.qr(a).R.abs(), lambda a, b: np.abs(np.linalg.qr(a)[1])),
    "svd": (lambda a, b: tgrad.svd(a).S, lambda a, b: np.linalg.svd(a)[1]),
    "svdvals": (lambda a, b: tgrad.linalg.svdvals(a), lambda a, b: np.linalg.svd(a)[1]),
    "eigh": (lambda a, b: tgrad.linalg.eigh(a).eigenvalues, lambda a, b: np.linalg.eigh(a)[0]),
    "eigvalsh": (lambda a, b: tgrad.linalg.eigvalsh(a), lambda a, b: np.linalg.eigh(a)[0]),
    "eigvals": (lambda a, b: tgrad.linalg.eigvals(a).abs().sort().values,
                lambda a, b: np.sort(np.abs(np.linalg.eigvals(a)))),
    "cond": (lambda a, b: tgrad.linalg.cond(a), lambda a, b: np.linalg.cond(a)),
    "matrix_rank": (lambda a, b: tgrad.linalg.matrix_rank(a), lambda a, b: 4),
    "tensorsolve": (lambda a, b: tgrad.linalg.tensorsolve(a, b[:, 0]),
                    lambda a, b: np.linalg.solve(a, b[:, 0])),
    "geqrf": (lambda a, b: tgrad.geqrf(a)[0].diagonal().abs(),
              lambda a, b: np.abs(np.diag(np.linalg.qr(a)[1]))),
    "orgqr": (lambda a, b: tgrad.orgqr(*tgrad.geqrf(a)).abs(),
              lambda a, b: np.abs(np.linalg.qr(a)[0])),
    "trace": (lambda a, b: tgrad.trace(a), lambda a, b: np.trace(a)),
    "quantile": (lambda a, b: tgrad.quantile(b, 0.3), lambda a, b: np.quantile(b, 0.3)),
    "nanquantile": (lambda a, b: b.nanquantile(0.3, dim=0),
                    lambda a, b: np.nanquantile(b, 0.3, axis=0)),
    "polar": (lambda a, b: tgrad.polar(a.abs(), b[:, :1]),
              lambda a, b: np.abs(a) * np.exp(1j * b[:, :1])),
    "view_as_complex": (lambda a, b: tgrad.view_as_complex(a.reshape(4, 2, 2)),
                        lambda a, b: a.reshape(4, 2, 2) @ np.array([1, 1j])),
    "fft.fft": (lambda a, b: tgrad.fft.fft(a), lambda a, b: np.fft.fft(a)),
    "fft.rfft2": (lambda a, b: tgrad.fft.rfft2(a), lambda a, b: np.fft.rfft2(a)),
    "fft.ihfft": (lambda a, b: tgrad.fft.ihfft(a), lambda a, b: np.fft.ihfft(a)),
    "fft.irfft": (lambda a, b: tgrad.fft.irfft(a), lambda a, b: np.fft.irfft(a)),
    "stft": (lambda a, b: tgrad.stft(a.reshape(-1), 4, return_complex=True, center=False),
             lambda a, b: np.fft.rfft(np.lib.stride_tricks.sliding_window_view(
                 a.reshape(-1), 4)[::1], axis=-1).T),
}


@pytest.mark.parametrize("region", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(_HALF_INPUTS))
def test_cpu_autocast_fp32_list_runs_half_inputs_in_float32(region, name):
    f, ref = _HALF_INPUTS[name]
    half = getattr(tgrad, region)
    a, b = tgrad.tensor(_SPD).to(half), tgrad.tensor(_B).to(half)
    with tgrad.autocast("cpu", dtype=half):
        got = f(a, b)
    # the same op outside autocast on the float32 values of the half inputs: bit-identical
    want32 = f(a.float(), b.float())
    assert got.dtype is want32.dtype and got.dtype.name in ("float32", "complex64", "int64")
    np.testing.assert_array_equal(got.numpy(), want32.numpy())
    if ref is not None:
        np.testing.assert_allclose(got.numpy(), ref(_half(_SPD, region), _half(_B, region)),
                                   rtol=1e-4, atol=1e-4)


def _pool3(x, k, op):  # (N, C, D, H, W) windows k^3, stride k
    n, c, d, h, w = x.shape
    r = x[:, :, :d // k * k, :h // k * k, :w // k * k].reshape(
        n, c, d // k, k, h // k, k, w // k, k)
    return op(r, axis=(3, 5, 7))


_X5 = np.random.default_rng(6).standard_normal((1, 2, 4, 4, 6)).astype(np.float32)
_X4 = np.random.default_rng(7).standard_normal((1, 2, 4, 6)).astype(np.float32)
_X3 = np.random.default_rng(8).standard_normal((2, 3, 8)).astype(np.float32)


def _unpool(x, k, spatial):  # max_pool then max_unpool: the maxima at their places, else 0
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial]
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[spatial]
    return unpool(*pool(x.float(), k, return_indices=True), k) if x.dtype.itemsize != 2 \
        else unpool(*pool(x, k, return_indices=True), k)


_P = np.abs(_X4[0, 1]) / np.abs(_X4[0, 1]).sum(-1, keepdims=True)  # class probabilities


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


_NN_FP32 = {  # name: (call, NumPy float64 reference or None, input)
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), lambda x: _pool3(x, 2, np.mean), _X5),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2), lambda x: _pool3(x, 2, np.max), _X5),
    "MaxPool3d": (lambda x: nn.MaxPool3d(2)(x), lambda x: _pool3(x, 2, np.max), _X5),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 2, 3)),
                            lambda x: _pool3(x, 2, np.mean), _X5),
    "adaptive_max_pool3d": (lambda x: F.adaptive_max_pool3d(x, (2, 2, 3)),
                            lambda x: _pool3(x, 2, np.max), _X5),
    "adaptive_max_pool3d_idx": (lambda x: F.adaptive_max_pool3d(x, (2, 2, 3), True)[0],
                                lambda x: _pool3(x, 2, np.max), _X5),
    "fractional_max_pool2d": (lambda x: F.fractional_max_pool2d(
        x, 2, output_size=(2, 3), _random_samples=tgrad.full((1, 2, 2), 0.5)),
        lambda x: x.reshape(1, 2, 2, 2, 3, 2).max(axis=(3, 5)), _X4),
    "fractional_max_pool3d": (lambda x: F.fractional_max_pool3d(
        x, 2, output_size=(2, 2, 3), _random_samples=tgrad.full((1, 2, 3), 0.5)),
        lambda x: _pool3(x, 2, np.max), _X5),
    "max_unpool1d": (lambda x: _unpool(x, 2, 1), None, _X3),
    "max_unpool2d": (lambda x: _unpool(x, 2, 2), None, _X4),
    "max_unpool3d": (lambda x: _unpool(x, 2, 3), None, _X5),
    "reflect1d": (lambda x: F.pad(x, (2, 1), mode="reflect"),
                  lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1)), mode="reflect"), _X3),
    "reflect2d": (lambda x: nn.ReflectionPad2d(1)(x),
                  lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"), _X4),
    "replicate1d": (lambda x: F.pad(x, (1, 2), mode="replicate"),
                    lambda x: np.pad(x, ((0, 0), (0, 0), (1, 2)), mode="edge"), _X3),
    "replicate2d": (lambda x: F.pad(x, (1, 1, 2, 0), mode="replicate"),
                    lambda x: np.pad(x, ((0, 0), (0, 0), (2, 0), (1, 1)), mode="edge"), _X4),
    "replicate3d": (lambda x: nn.ReplicationPad3d(1)(x),
                    lambda x: np.pad(x, ((0, 0), (0, 0)) + ((1, 1),) * 3, mode="edge"), _X5),
    "trace": (lambda x: x[0, 0].trace(), lambda x: np.trace(x[0, 0]), _X4),
    "cross_entropy_probs": (lambda x: F.cross_entropy(x[0, 0], tgrad.tensor(_P)),
                            lambda x: -(_P * _log_softmax(x[0, 0])).sum(-1).mean(), _X4),
    "ctc_loss": (lambda x: F.ctc_loss(x.reshape(4, 2, 6), tgrad.tensor([[1, 2], [3, 3]]),
                                      [4, 4], [2, 2]), None, _X4),
}
_NN_KEEP = {  # not on PyTorch's CPU list: the input's dtype (their return_indices forms too)
    "max_pool3d_indices": lambda x: F.max_pool3d(x, 2, return_indices=True)[0],
    "max_pool3d_with_indices": lambda x: F.max_pool3d_with_indices(x, 2)[0],
    "reflect3d": lambda x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect"),
    "circular2d": lambda x: F.pad(x[0], (1, 1, 1, 1), mode="circular"),
    "constant3d": lambda x: F.pad(x, (1, 1, 1, 1, 1, 1), value=2.0),
}


@pytest.mark.parametrize("region", ["bfloat16", "float16"])
def test_cpu_autocast_fp32_list_pools_pads_and_losses(region):
    half = getattr(tgrad, region)
    for name, (f, ref, x) in _NN_FP32.items():
        t = tgrad.tensor(x).to(half)
        with tgrad.autocast("cpu", dtype=half):
            got = f(t)
        assert got.dtype is tgrad.float32, name
        np.testing.assert_array_equal(got.numpy(), f(t.float()).numpy(), err_msg=name)
        if ref is not None:
            np.testing.assert_allclose(got.numpy(), ref(_half(x, region)), rtol=1e-6,
                                       atol=1e-6, err_msg=name)
    t = tgrad.tensor(_X5).to(half)
    with tgrad.autocast("cpu", dtype=half):
        kept = {name: f(t).dtype for name, f in _NN_KEEP.items()}
    assert kept == dict.fromkeys(_NN_KEEP, half)


def test_cpu_autocast_vecdot_lowered_index_copy_promoted():
    x, y = _t((3, 4), tgrad.float32), _t((3, 4), tgrad.float32, seed=1)
    src = _t((2, 4), tgrad.bfloat16, seed=2)
    with tgrad.autocast("cpu"):
        vd = tgrad.linalg.vecdot(x, y)
        ic = tgrad.index_copy(x, 0, tgrad.tensor([2, 0]), src)
        icm = src.index_copy(0, tgrad.tensor([1]), x[:1])
        with pytest.raises(RuntimeError, match="index_copy"):  # float64: neither cast
            x.index_copy(0, tgrad.tensor([1]), x[:1].double())  # nor counted (PyTorch's)
    assert vd.dtype is tgrad.bfloat16 and ic.dtype is tgrad.float32
    assert icm.dtype is tgrad.float32
    xb, yb = _bf16(x.numpy()), _bf16(y.numpy())
    # a product and a sum: bfloat16 products, a float32 sum rounded to bfloat16
    np.testing.assert_allclose(vd.float().numpy(), _bf16(_bf16(xb * yb).sum(-1)), rtol=1e-2)
    want = x.numpy().astype(np.float64)
    want[[2, 0]] = src.double().numpy()
    np.testing.assert_array_equal(ic.numpy(), want)
    want = src.double().numpy()
    want[1] = x.numpy()[0]
    np.testing.assert_array_equal(icm.numpy(), want)


def test_cpu_autocast_region_restored_after_an_op_raises():
    with tgrad.autocast("cpu"):
        with pytest.raises(RuntimeError):
            tgrad.linalg.inv(tgrad.ones(2, 3))  # not square: raises inside the fp32 op
        assert tgrad.is_autocast_enabled("cpu")
        assert (tgrad.ones(2, 2) @ tgrad.ones(2, 2)).dtype is tgrad.bfloat16


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
def test_cpu_autocast_matrix_power_negative_half_inputs(dt):
    # PyTorch: matrix_power(A, n < 0) is inv(A) (CPU fp32 list: half A runs in float32)
    # then matmuls (lowered to the region's dtype); outside autocast a half A raises
    a = tgrad.tensor(_SPD[:3, :3] / 4).to(getattr(tgrad, dt))
    ah = a.double().numpy()
    with tgrad.autocast("cpu", dtype=tgrad.bfloat16):
        p1, p2 = tgrad.linalg.matrix_power(a, -1), tgrad.linalg.matrix_power(a, -2)
    assert p1.dtype is tgrad.float32 and p2.dtype is tgrad.bfloat16
    np.testing.assert_allclose(p1.numpy(), np.linalg.inv(ah), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p2.double().numpy(), np.linalg.matrix_power(ah, -2),
                               rtol=3e-2, atol=1e-2)
    if dt != "float32":
        with pytest.raises(RuntimeError, match=r"^linalg\.inv: Low precision dtypes not "
                                               r"supported"):
            tgrad.linalg.matrix_power(a, -1)


@pytest.mark.parametrize("lead", [(64,), (4, 16)])
def test_linear_in_a_cpu_region_rounds_once(lead):
    # PyTorch's linear runs as one bfloat16 kernel: round(x @ w^T + b). tgrad's linear cast
    # down and then ran its addmm with autocast still on, which rounded x @ w^T before
    # adding b (about 28% of these outputs were off by an ulp or more). Reference: NumPy
    # float64 on the bfloat16-rounded operands, rounded to bfloat16 once.
    x = RNG.standard_normal((*lead, 32)).astype(np.float32)
    w = RNG.standard_normal((48, 32)).astype(np.float32)
    b = RNG.standard_normal(48).astype(np.float32)
    with tgrad.autocast("cpu"):
        y = F.linear(tgrad.tensor(x), tgrad.tensor(w), tgrad.tensor(b))
    assert y.dtype is tgrad.bfloat16
    np.testing.assert_array_equal(y.float().numpy(), _bf16(_bf16(x) @ _bf16(w).T + _bf16(b)))


def test_out_forms_are_not_autocast():
    # PyTorch casts only the functional forms: mm(a, b, out=float32) computes in float32
    # (tgrad cast to bfloat16 and then refused the float32 out). Reference: NumPy float64.
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    c = RNG.standard_normal((3, 2)).astype(np.float32)
    ta, tb, tc = tgrad.tensor(a), tgrad.tensor(b), tgrad.tensor(c)
    with tgrad.autocast("cpu"):
        for fn, want in [(lambda o: tgrad.mm(ta, tb, out=o), a @ b),
                         (lambda o: tgrad.matmul(ta, tb, out=o), a @ b),
                         (lambda o: tgrad.addmm(tc, ta, tb, out=o), c + a @ b)]:
            o = tgrad.empty(3, 2)
            assert fn(o) is o and o.dtype is tgrad.float32
            np.testing.assert_allclose(o.numpy(), want.astype(np.float64), rtol=1e-5)
        o = tgrad.empty(1, 3, 2)
        tgrad.bmm(ta[None], tb[None], out=o)
        np.testing.assert_allclose(o.numpy()[0], a.astype(np.float64) @ b, rtol=1e-5)
        assert (ta @ tb).dtype is tgrad.bfloat16  # the functional form still is
