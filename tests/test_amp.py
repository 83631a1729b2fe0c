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
        e = y.exp()  # float32 policy: the bfloat16 input is widened
        assert e.dtype is tgrad.float32
        np.testing.assert_allclose(e.numpy(), np.exp(y.float().numpy()), rtol=1e-6)
        assert y.sum().dtype is tgrad.float32 and F.softmax(y, -1).dtype is tgrad.float32
        assert tgrad.stack([y, ta[:, :2]]).dtype is tgrad.float32  # promote: the widest
        d = tgrad.tensor(a.astype(np.float64))
        assert (d @ d.mT).dtype is tgrad.float64  # float64 is never cast
        lin = nn.Linear(4, 2)
        out = lin(ta)
        assert out.dtype is tgrad.bfloat16  # weight and bias cast too
        assert F.mse_loss(out, tgrad.zeros(3, 2)).dtype is tgrad.float32
        with tgrad.autocast("cpu", enabled=False):
            assert (ta @ tb).dtype is tgrad.float32
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(tgrad.rand(3), tgrad.rand(3))
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
    with pytest.raises(RuntimeError, match="target dtype is not supported"):
        autocast("cpu", dtype=tgrad.float32)


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
    (w * tgrad.tensor([float("inf"), 1.0])).sum().backward()
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
        assert out.dtype is tgrad.bfloat16 and w.dtype is tgrad.float32
        assert nn.Conv2d(2, 3, 3)(tgrad.randn(1, 2, 5, 5)).dtype is tgrad.bfloat16
    with pytest.raises(RuntimeError, match="same dtype"):
        a32 @ b16  # outside a region: PyTorch's error
