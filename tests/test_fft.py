"""tgrad.fft (PyTorch's torch.fft): forwards against np.fft in float64/complex128, float32
within PyTorch's default tolerances, gradients by finite differences (gradcheck and
gradgradcheck for every transform, norm mode, odd/even n, padding and trimming), the dtype
rules and PyTorch's errors; the cuda device raises for the transforms."""

import re

import numpy as np
import pytest

import tgrad
import tgrad.fft as F
from tgrad.autograd import gradcheck, gradgradcheck

NORMS = (None, "backward", "ortho", "forward")
SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
RNG = np.random.default_rng(1234)


def _real(*shape):
    return RNG.standard_normal(shape)


def _cplx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _t(a, **kw):
    return tgrad.tensor(a, **kw)


# ---------------------------------------------------------------- forward vs np.fft
# (tgrad function, NumPy reference, input maker, keyword sets): n/s pad and trim, odd/even
ONE_D = [("fft", np.fft.fft, _cplx), ("ifft", np.fft.ifft, _cplx),
         ("rfft", np.fft.rfft, _real), ("irfft", np.fft.irfft, _cplx),
         ("hfft", np.fft.hfft, _cplx), ("ihfft", np.fft.ihfft, _real)]


@pytest.mark.parametrize("name,ref,make", ONE_D, ids=[c[0] for c in ONE_D])
@pytest.mark.parametrize("norm", NORMS)
def test_one_dim_transforms_match_numpy(name, ref, make, norm):
    x = make(3, 5, 4)
    for kw in ({}, {"n": 7}, {"n": 2}, {"n": 6}, {"n": 1}, {"dim": 1}, {"dim": -2, "n": 3},
               {"dim": 0, "n": 4}):
        got = getattr(F, name)(_t(x), norm=norm, **kw)
        want = ref(x, n=kw.get("n"), axis=kw.get("dim", -1), norm=norm)
        assert got.dtype is (tgrad.complex128 if np.iscomplexobj(want) else tgrad.float64)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


N_D = [("fftn", np.fft.fftn, _cplx), ("ifftn", np.fft.ifftn, _cplx),
       ("rfftn", np.fft.rfftn, _real), ("irfftn", np.fft.irfftn, _cplx)]
TWO_D = [("fft2", np.fft.fft2, _cplx), ("ifft2", np.fft.ifft2, _cplx),
         ("rfft2", np.fft.rfft2, _real), ("irfft2", np.fft.irfft2, _cplx)]


@pytest.mark.parametrize("name,ref,make", N_D + TWO_D, ids=[c[0] for c in N_D + TWO_D])
@pytest.mark.parametrize("norm", NORMS)
def test_n_dim_transforms_match_numpy(name, ref, make, norm):
    x = make(3, 4, 5)
    two = name.endswith("2")
    for s, dim in ((None, None), ((2, 7), None), ((5, 3), (0, 2)), (None, (2, 0)),
                   ((4,), (-2,)), ((3, 6), (-1, -3))):
        if two and dim is not None and len(dim) != 2:
            continue
        kw = {} if dim is None else {"dim": dim}
        got = getattr(F, name)(_t(x), s=s, norm=norm, **kw)
        if dim is not None:
            axes = dim
        elif two:
            axes = (-2, -1)
        else:  # fftn with s: the last len(s) dims (NumPy deprecates s with axes=None)
            axes = None if s is None else tuple(range(-len(s), 0))
        want = ref(x, s=s, axes=axes, norm=norm)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_s_entry_minus_one_keeps_the_size_and_s_alone_picks_the_last_dims():
    x = _cplx(3, 4, 5)
    np.testing.assert_allclose(F.fftn(_t(x), s=(-1, 8)).numpy(),
                               np.fft.fftn(x, s=(4, 8), axes=(1, 2)), atol=1e-12)
    np.testing.assert_allclose(F.irfftn(_t(x), s=(2, -1)).numpy(),
                               np.fft.irfftn(x, s=(2, 8), axes=(1, 2)), atol=1e-12)
    np.testing.assert_allclose(F.fftn(_t(x), s=6, dim=0).numpy(),
                               np.fft.fft(x, n=6, axis=0), atol=1e-12)
    # fftn over no dims is the input as complex, as PyTorch
    np.testing.assert_allclose(F.fftn(_t(x.real), dim=()).numpy(), x.real.astype(complex))


@pytest.mark.parametrize("norm", NORMS)
def test_hfftn_and_ihfftn(norm):
    x = _real(3, 4, 5)
    # ihfftn of a real signal is ifftn's one-sided half (NumPy float64 ifftn)
    full = np.fft.ifftn(x, s=(3, 6), axes=(0, 2), norm=norm)
    got = F.ihfftn(_t(x), s=(3, 6), dim=(0, 2), norm=norm)
    np.testing.assert_allclose(got.numpy(), full[..., :4], atol=1e-12)
    np.testing.assert_allclose(F.ihfft2(_t(x), norm=norm).numpy(),
                               np.fft.ifft2(x, norm=norm)[..., :3], atol=1e-12)
    # hfftn: the fftn of the Hermitian signal whose half is the input
    spec = np.fft.ifftn(x, norm=SWAP[norm])[..., :3]  # one-sided half of a Hermitian signal
    np.testing.assert_allclose(F.hfftn(_t(spec), s=x.shape, norm=norm).numpy(),
                               np.fft.fftn(np.fft.ifftn(x, norm=SWAP[norm]), norm=norm).real,
                               atol=1e-12)
    np.testing.assert_allclose(F.hfftn(F.ihfftn(_t(x), norm=norm), s=x.shape, norm=norm).numpy(),
                               x, atol=1e-12)
    h = _cplx(3, 4, 3)
    np.testing.assert_allclose(F.hfft2(_t(h), norm=norm).numpy(),
                               np.fft.irfft2(np.conj(h), norm=SWAP[norm]), atol=1e-12)
    np.testing.assert_allclose(F.hfftn(_t(h), dim=(2,), norm=norm).numpy(),
                               np.fft.hfft(h, norm=norm), atol=1e-12)


def test_float32_within_pytorch_default_tolerances():
    x = _real(4, 6).astype(np.float32)
    for name in ("fft", "rfft", "ihfft", "fft2", "rfftn"):
        got = getattr(F, name)(_t(x))
        assert got.dtype is tgrad.complex64
        want = getattr(np.fft, name)(x.astype(np.float64))
        np.testing.assert_allclose(got.numpy(), want, rtol=1.3e-6, atol=1e-5)
    h = _cplx(4, 4).astype(np.complex64)
    for name in ("ifft", "irfft", "hfft", "irfftn"):
        got = getattr(F, name)(_t(h))
        assert got.dtype is (tgrad.complex64 if name == "ifft" else tgrad.float32)
        want = getattr(np.fft, name)(h.astype(np.complex128))
        np.testing.assert_allclose(got.numpy(), want, rtol=1.3e-6, atol=1e-5)


def test_non_contiguous_inputs_and_n_equal_one():
    x = _cplx(6, 8)
    xt = _t(x).t()[::2]  # (4, 6) strided view
    assert not xt.is_contiguous()
    np.testing.assert_allclose(F.fft(xt).numpy(), np.fft.fft(x.T[::2]), atol=1e-12)
    r = _real(5, 6)
    rt = _t(r)[:, ::2]
    np.testing.assert_allclose(F.rfft(rt, dim=0).numpy(), np.fft.rfft(r[:, ::2], axis=0),
                               atol=1e-12)
    np.testing.assert_allclose(F.fft(_t(x), n=1).numpy(), x[:, :1], atol=0)
    np.testing.assert_allclose(F.irfft(_t(x[:, :1]), n=1).numpy(), x[:, :1].real, atol=0)
    assert F.fft(tgrad.zeros(0), n=3).shape == (3,)  # an empty signal zero-padded


def test_dtype_rules():
    i = tgrad.arange(6)
    assert F.fft(i).dtype is tgrad.complex64 and F.rfft(i).dtype is tgrad.complex64
    assert F.irfft(i).dtype is tgrad.float32 and F.hfft(i).shape == (10,)
    np.testing.assert_allclose(F.fft(i).numpy(), np.fft.fft(np.arange(6)), atol=1e-5)
    assert F.fft(tgrad.tensor([True, False])).dtype is tgrad.complex64
    tgrad.set_default_dtype(tgrad.float64)
    try:
        assert F.fft(i).dtype is tgrad.complex128 and F.irfft(i).dtype is tgrad.float64
    finally:
        tgrad.set_default_dtype(tgrad.float32)
    for dt, name in ((tgrad.float16, "Half"), (tgrad.bfloat16, "BFloat16")):
        with pytest.raises(RuntimeError, match=f"fft: Unsupported dtype {name}"):
            F.fft(tgrad.ones(4, dtype=dt))
        with pytest.raises(RuntimeError, match=f"rfft: Unsupported dtype {name}"):
            F.rfft(tgrad.ones(4, dtype=dt))
    z = tgrad.ones(4, dtype=tgrad.complex64)
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got "
                                           "ComplexFloat"):
        F.rfft(z)
    with pytest.raises(RuntimeError, match="ihfftn expects a real input tensor"):
        F.ihfftn(z)


def test_errors_name_the_function():
    x = tgrad.randn(3, 4)
    z = tgrad.randn(3, 4, dtype=tgrad.complex64)
    for f, err, msg in [
            (lambda: F.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\)"),
            (lambda: F.rfft(x, n=-1), RuntimeError, r"Invalid number of data points \(-1\)"),
            (lambda: F.fft(tgrad.zeros(0)), RuntimeError,
             r"Invalid number of data points \(0\)"),
            (lambda: F.fftn(tgrad.zeros(3, 0)), RuntimeError,
             r"Invalid number of data points \(0\)"),
            (lambda: F.irfft(z[:, :1]), RuntimeError, r"Invalid number of data points \(0\)"),
            (lambda: F.fftn(x, s=(-2, 3)), RuntimeError,
             r"Invalid number of data points \(-2\)"),
            (lambda: F.fft(x, dim=2), IndexError, r"fft: Dimension out of range"),
            (lambda: F.ifft(tgrad.tensor(1.0)), IndexError,
             "ifft: Dimension specified as -1 but tensor has no dimensions"),
            (lambda: F.fft(x, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
            (lambda: F.fft(x, norm=1), TypeError, "argument 'norm' must be str, not int"),
            (lambda: F.fft2(x, dim=None), TypeError,
             r"fft_fft2\(\): argument 'dim' must be tuple of ints, not NoneType"),
            (lambda: F.irfft2(z, dim=None), TypeError,
             r"fft_irfft2\(\): argument 'dim' must be tuple of ints, not NoneType"),
            (lambda: F.fftn(x, s=tgrad.tensor([3, 5])), TypeError,
             r"fft_fftn\(\): argument 's' must be tuple of ints, not Tensor"),
            (lambda: F.fftn(x, dim=(0, -2)), RuntimeError, "fftn: FFT dims must be unique"),
            (lambda: F.fftn(x, s=(2, 3), dim=(0,)), RuntimeError,
             "fftn: When given, dim and shape arguments must have the same length"),
            (lambda: F.ifftn(x, s=(2, 3, 4)), RuntimeError,
             "ifftn: Got shape with 3 values but input tensor only has 2 dimensions"),
            (lambda: F.rfftn(x, dim=()), RuntimeError, "rfftn must transform at least one axis"),
            (lambda: F.irfftn(z, dim=()), RuntimeError,
             "irfftn must transform at least one axis"),
            (lambda: F.fft(x, dim=(0,)), TypeError, r"fft_fft\(\): argument 'dim' must be int"),
            (lambda: F.fft(x, n=2.0), TypeError, r"fft_fft\(\): argument 'n' must be int"),
            (lambda: F.fft([1.0, 2.0]), TypeError, r"fft\(\): argument 'input'"),
            (lambda: F.fftfreq(4, dtype=tgrad.int64), RuntimeError,
             "fftfreq requires a floating point or complex dtype"),
            (lambda: F.rfftfreq(-1), RuntimeError, "negative dimension -1"),
            (lambda: F.fftshift(x, dim=2), IndexError, "fftshift: Dimension out of range"),
            # a 0-d tensor: PyTorch's errors (with no dim, roll's)
            (lambda: F.fftshift(tgrad.tensor(3.0), 0), IndexError,
             "fftshift: Dimension specified as 0 but tensor has no dimensions"),
            (lambda: F.ifftshift(tgrad.tensor(3.0), dim=(-1,)), IndexError,
             "ifftshift: Dimension specified as -1 but tensor has no dimensions"),
            (lambda: F.fftshift(tgrad.tensor(3.0)), RuntimeError, "`shifts` required"),
            (lambda: F.ifftshift(tgrad.tensor(3.0)), RuntimeError, "`shifts` required"),
            (lambda: F.fftshift(x, dim=()), RuntimeError, "`shifts` required")]:
        with pytest.raises(err, match=msg):
            f()


# ---------------------------------------------------------------- fftfreq / fftshift
def test_fftfreq_rfftfreq():
    for n in (1, 4, 5):
        for d in (1.0, 0.25):
            np.testing.assert_allclose(F.fftfreq(n, d, dtype=tgrad.float64).numpy(),
                                       np.fft.fftfreq(n, d), rtol=1e-15)
            np.testing.assert_allclose(F.rfftfreq(n, d=d, dtype=tgrad.float64).numpy(),
                                       np.fft.rfftfreq(n, d), rtol=1e-15)
    f = F.fftfreq(5)
    assert f.dtype is tgrad.float32 and not f.requires_grad
    np.testing.assert_allclose(f.numpy(), np.fft.fftfreq(5), rtol=1e-6)
    g = F.rfftfreq(4, 2, dtype=tgrad.float64, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    assert F.fftfreq(0).shape == (0,)


def test_fftshift_ifftshift():
    x = _real(4, 5, 3)
    for dim in (None, 0, -2, (0, 2), [1]):
        np.testing.assert_array_equal(F.fftshift(_t(x), dim).numpy(),
                                      np.fft.fftshift(x, dim))
        np.testing.assert_array_equal(F.ifftshift(_t(x), dim=dim).numpy(),
                                      np.fft.ifftshift(x, dim))
    z = _t(_cplx(5))
    np.testing.assert_array_equal(F.ifftshift(F.fftshift(z)).numpy(), z.numpy())
    np.testing.assert_array_equal(F.fftshift(F.fftfreq(6)).numpy(),
                                  np.fft.fftshift(np.fft.fftfreq(6)).astype(np.float32))
    assert gradcheck(lambda a: F.fftshift(a, (0, 1)), (_t(_real(3, 4), requires_grad=True),))


# ---------------------------------------------------------------- gradients
# (function, input is complex, input shape, keyword sets): odd and even n, padding and
# trimming (n / s), several dims; every one at every norm.
GRAD_CASES = [
    ("fft", True, (2, 4), [{}, {"n": 3}, {"n": 5, "dim": 0}]),
    ("fft", False, (3,), [{"n": 4}]),
    ("ifft", True, (2, 5), [{}, {"n": 6}, {"n": 2, "dim": -1}]),
    ("rfft", False, (2, 4), [{}, {"n": 5}, {"n": 3}, {"dim": 0}]),
    ("rfft", False, (5,), [{}, {"n": 6}]),
    ("irfft", True, (2, 3), [{}, {"n": 5}, {"n": 4}, {"n": 7}, {"n": 2}, {"dim": 0, "n": 3}]),
    ("hfft", True, (2, 3), [{}, {"n": 5}, {"n": 3}, {"n": 7}]),
    ("ihfft", False, (2, 4), [{}, {"n": 5}, {"n": 3}]),
    ("fftn", True, (2, 3, 2), [{}, {"s": (3, 4)}, {"dim": (0, 2)}]),
    ("ifftn", True, (2, 3, 2), [{"s": (2, 2), "dim": (2, 0)}]),
    ("fft2", False, (3, 2), [{}]),
    ("ifft2", True, (2, 3), [{"s": (3, 2)}]),
    ("rfftn", False, (2, 3, 2), [{}, {"s": (3, 4)}, {"dim": (2, 0)}]),
    ("rfft2", False, (3, 3), [{"s": (2, 4)}]),
    ("irfftn", True, (2, 2, 3), [{}, {"s": (3, 5)}, {"s": (2, 4), "dim": (0, 2)}]),
    ("irfft2", True, (3, 2), [{}, {"s": (2, 3)}]),
    ("hfftn", True, (2, 3, 2), [{}, {"s": (3, 3)}]),
    ("hfft2", True, (2, 3), [{"s": (2, 5)}]),
    ("ihfftn", False, (2, 3, 2), [{}, {"s": (2, 3), "dim": (2, 1)}]),
    ("ihfft2", False, (3, 4), [{}, {"s": (2, 5)}]),
]


@pytest.mark.parametrize("name,cplx,shape,kws", GRAD_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_gradcheck_and_gradgradcheck(name, cplx, shape, kws):
    a = _cplx(*shape) if cplx else _real(*shape)
    x = _t(a, requires_grad=True)
    for kw in kws:
        for norm in ("backward", "ortho", "forward"):
            def fn(t, kw=kw, norm=norm):
                return getattr(F, name)(t, norm=norm, **kw)
            assert gradcheck(fn, (x,)), (kw, norm)
        # second order: once per keyword set (the norm only rescales)
        assert gradgradcheck(lambda t, kw=kw: getattr(F, name)(t, norm="ortho", **kw), (x,)), kw


def test_real_input_of_complex_transform_gets_a_real_gradient():
    x = _t(_real(5), requires_grad=True)
    assert gradcheck(F.fft, (x,)) and gradcheck(lambda t: F.ifftn(t, s=(7,)), (x,))
    F.fft(x).abs().sum().backward()
    assert x.grad.dtype is tgrad.float64


def test_rfft_and_irfft_gradients_by_hand():
    # L = sum_k Re(w_k rfft(x)_k): dL/dx_m = sum_k Re(w_k e^{-2 pi i k m / n})
    for n in (4, 5):
        x = _t(_real(n), requires_grad=True)
        w = _cplx(n // 2 + 1)
        tgrad.view_as_real(F.rfft(x) * _t(w))[..., 0].sum().backward()
        k, m = np.meshgrid(np.arange(n // 2 + 1), np.arange(n), indexing="ij")
        want = (w[:, None] * np.exp(-2j * np.pi * k * m / n)).real.sum(0)
        np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-12)
    # L = sum_m v_m irfft(X, n)_m, X the one-sided half: bin k's gradient is
    # c_k / n sum_m v_m e^{-2 pi i k m / n} with c_k = 1 for bin 0 and (n even) bin n/2,
    # 2 for the others (each stands for itself and its conjugate)
    for n in (4, 5):
        spec = _t(_cplx(n // 2 + 1), requires_grad=True)
        v = _real(n)
        (F.irfft(spec, n) * _t(v)).sum().backward()
        k, m = np.meshgrid(np.arange(n // 2 + 1), np.arange(n), indexing="ij")
        c = np.full(n // 2 + 1, 2.0)
        c[0] = 1.0
        if n % 2 == 0:
            c[-1] = 1.0
        want = c / n * (v[None, :] * np.exp(-2j * np.pi * k * m / n)).sum(1)
        np.testing.assert_allclose(spec.grad.numpy(), want, atol=1e-12)


# ---------------------------------------------------------------- module, devices
def test_module_import_and_attribute():
    import importlib
    assert importlib.import_module("tgrad.fft") is tgrad.fft is F
    assert sorted(F.__all__) == sorted(
        ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
         "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
         "rfftfreq", "fftshift", "ifftshift"])


def test_cuda_transforms_raise_and_helpers_work():
    from interpreted import run_json

    out = run_json("""
import json, tgrad, tgrad.fft as F
x = tgrad.arange(6, dtype=tgrad.float32, device="cuda")
msgs = []
for f in (lambda: F.fft(x), lambda: F.rfftn(x), lambda: F.irfft(x)):
    try:
        f()
        msgs.append("")
    except NotImplementedError as e:
        msgs.append(str(e))
s = F.fftshift(x)
fr = F.fftfreq(4, device="cuda")
print(json.dumps({"msgs": msgs, "shift": s.cpu().tolist(), "dev": str(s.device),
                  "freq": fr.cpu().tolist(), "fdev": str(fr.device)}))
""")
    for op, msg in zip(("fft", "rfftn", "irfft"), out["msgs"]):
        assert f"tgrad.fft.{op}: the FFTs run on the CPU only for now" in msg
    assert out["shift"] == [3.0, 4.0, 5.0, 0.0, 1.0, 2.0] and out["dev"].startswith("cuda")
    assert out["freq"] == [0.0, 0.25, -0.5, -0.25] and out["fdev"].startswith("cuda")


# ---------------------------------------------------------------- stft / istft
def _np_stft(x, n_fft, hop, w, center, onesided, normalized, pad_mode="reflect"):
    """NumPy float64 reference: frames of the (padded) signal times the window padded to
    n_fft, each transformed: (F, T)."""
    if center:
        x = np.pad(x, n_fft // 2, mode="reflect" if pad_mode == "reflect" else "constant")
    left = (n_fft - len(w)) // 2
    w = np.pad(w, (left, n_fft - len(w) - left))
    frames = np.stack([x[t:t + n_fft] * w for t in range(0, len(x) - n_fft + 1, hop)])
    spec = np.fft.fft(frames, axis=-1, norm="ortho" if normalized else None)
    return (spec[:, :n_fft // 2 + 1] if onesided else spec).T


def test_stft_matches_numpy_frames():
    x = _real(2, 21)
    w6 = np.hanning(8)[1:-1] + 0.1
    for kw, w in [({"n_fft": 8}, None), ({"n_fft": 8, "hop_length": 3}, w6),
                  ({"n_fft": 7, "hop_length": 2, "center": False}, np.hanning(7) + 0.1),
                  ({"n_fft": 8, "normalized": True, "onesided": False}, None),
                  ({"n_fft": 6, "pad_mode": "constant"}, None)]:
        win = np.ones(kw["n_fft"]) if w is None else w
        got = tgrad.stft(_t(x), window=None if w is None else _t(w),
                         win_length=None if w is None else len(w), return_complex=True, **kw)
        for b in range(2):
            want = _np_stft(x[b], kw["n_fft"], kw.get("hop_length", kw["n_fft"] // 4), win,
                            kw.get("center", True), kw.get("onesided", True),
                            kw.get("normalized", False), kw.get("pad_mode", "reflect"))
            np.testing.assert_allclose(got[b].numpy(), want, atol=1e-12)
        one = _t(x[0]).stft(kw["n_fft"], window=None if w is None else _t(w),
                            win_length=None if w is None else len(w), return_complex=True,
                            **{k: v for k, v in kw.items() if k != "n_fft"})
        np.testing.assert_allclose(one.numpy(), got[0].numpy(), atol=0)
    z = _cplx(16)  # complex input: two-sided
    got = tgrad.stft(_t(z), 8, hop_length=4, return_complex=True)
    np.testing.assert_allclose(got.numpy(), _np_stft(z, 8, 4, np.ones(8), True, False, False),
                               atol=1e-12)


def test_istft_inverts_stft_and_follows_length():
    x = _real(2, 23)
    w8 = np.hanning(10)[1:-1] + 0.2  # win_length 8 inside n_fft 10
    w10 = np.hanning(10) + 0.2  # center=False: the first sample needs a nonzero w[0]
    for kw, w in (({"n_fft": 10, "hop_length": 3}, w8),
                  ({"n_fft": 10, "hop_length": 2, "center": False}, w10),
                  ({"n_fft": 10, "hop_length": 4, "normalized": True}, w8)):
        spec = np.stack([_np_stft(x[b], kw["n_fft"], kw["hop_length"], w,
                                  kw.get("center", True), True, kw.get("normalized", False))
                         for b in range(2)])
        y = tgrad.istft(_t(spec), window=_t(w), win_length=len(w), length=23, **kw)
        n_out = min(23, kw["n_fft"] + kw["hop_length"] * (spec.shape[-1] - 1))
        np.testing.assert_allclose(y.numpy()[:, :n_out], x[:, :n_out], atol=1e-12)
        assert y.shape == (2, 23)
    spec = _np_stft(x[0], 8, 2, np.ones(8), True, True, False)
    np.testing.assert_allclose(tgrad.istft(_t(spec), 8, hop_length=2).numpy(), x[0, :22],
                               atol=1e-12)
    z = _cplx(20)  # a two-sided spectrum back to a complex signal
    spec = _np_stft(z, 8, 2, np.ones(8), True, False, False)
    np.testing.assert_allclose(tgrad.istft(_t(spec), 8, 2, return_complex=True).numpy(), z,
                               atol=1e-12)


def test_istft_complex_window_round_trip():
    """A complex window: stft frames are w * x, so istft divides the overlap-add by
    sum_t w^2 (PyTorch's window.pow(2)), not by sum_t |w|^2."""
    z = _cplx(24)
    rng = np.random.default_rng(0)
    w = rng.random(8) + 0.5 + 1j * rng.random(8)
    spec = tgrad.stft(_t(z), 8, hop_length=2, window=_t(w), return_complex=True)
    np.testing.assert_allclose(spec.numpy(), _np_stft(z, 8, 2, w, True, False, False), atol=1e-12)
    y = tgrad.istft(spec, 8, hop_length=2, window=_t(w), return_complex=True, length=24)
    np.testing.assert_allclose(y.numpy(), z, atol=1e-12)
    x = _real(20)  # a real signal through a complex window: two-sided, back as complex
    spec = tgrad.stft(_t(x), 8, hop_length=2, window=_t(w), return_complex=True)
    y = tgrad.istft(spec, 8, hop_length=2, window=_t(w), return_complex=True, length=20)
    np.testing.assert_allclose(y.numpy(), x, atol=1e-12)


def test_stft_istft_gradcheck():
    x = _t(_real(13), requires_grad=True)
    w = _t(np.hanning(6)[1:-1] + 0.1, requires_grad=True)
    for kw in ({"hop_length": 2}, {"hop_length": 3, "center": False, "normalized": True}):
        def f(a, b, kw=kw):
            return tgrad.stft(a, 6, window=b, win_length=4, return_complex=True, **kw)
        assert gradcheck(f, (x, w)) and gradgradcheck(f, (x, w)), kw
    spec = _t(_cplx(4, 5), requires_grad=True)
    wi = _t(np.hanning(6) + 0.1)

    def g(s):
        return tgrad.istft(s, 6, hop_length=2, window=wi, length=9)
    assert gradcheck(g, (spec,)) and gradgradcheck(g, (spec,))


def test_stft_istft_errors():
    x = tgrad.randn(20)
    spec = tgrad.randn(5, 11, dtype=tgrad.complex64)
    for f, err, msg in [
            (lambda: tgrad.stft(x, 8), RuntimeError,
             "stft requires the return_complex parameter be given for real inputs"),
            (lambda: tgrad.stft(x, 8, return_complex=False), NotImplementedError,
             "return_complex=False"),
            (lambda: tgrad.stft(x, 30, center=False, return_complex=True), RuntimeError,
             r"stft: expected 0 < n_fft <= 20"),
            (lambda: tgrad.stft(x, 8, hop_length=0, return_complex=True), RuntimeError,
             "expected hop_length > 0"),
            (lambda: tgrad.stft(x, 8, win_length=9, return_complex=True), RuntimeError,
             "expected 0 < win_length <= n_fft"),
            (lambda: tgrad.stft(x, 8, window=tgrad.ones(5), return_complex=True), RuntimeError,
             "expected a 1D window tensor of size equal to win_length=8"),
            (lambda: tgrad.stft(x.to(tgrad.complex64), 8, onesided=True, return_complex=True),
             RuntimeError, "Cannot have onesided output if window or input is complex"),
            (lambda: tgrad.stft(tgrad.arange(20), 8, return_complex=True), RuntimeError,
             "stft: expected a tensor of floating point or complex values"),
            (lambda: tgrad.istft(spec.real, 8), RuntimeError,
             "istft requires a complex-valued input tensor"),
            (lambda: tgrad.istft(spec, 8, return_complex=True), RuntimeError,
             "Cannot have onesided output"),
            (lambda: tgrad.istft(spec, 8, onesided=False), RuntimeError,
             "frequency dimension"),
            (lambda: tgrad.istft(spec, 8, window=tgrad.hann_window(8), center=False),
             RuntimeError, "window overlap add min")]:
        with pytest.raises(err, match=msg):
            f()


def test_istft_errors_carry_pytorch_wording():
    """PyTorch's istft prefixes its checks with the call, 'istft(CPUComplexFloatType[5, 11],
    n_fft=8, hop_length=2, win_length=8, window=None, center=1, normalized=0, onesided=None,
    length=None, return_complex=0) : ...', and checks in this order: complex input, empty
    input, dims, the frequency size, 0 < hop_length <= win_length, 0 < win_length <= n_fft,
    the window's shape; an empty output (length=0, or center=True trimming every sample of
    too few frames) fails in its min() of the envelope."""
    import re
    spec = _t(_cplx(5, 11).astype(np.complex64))
    call = ("istft(CPUComplexFloatType[5, 11], n_fft=8, hop_length=2, win_length=8, "
            "window=None, center=1, normalized=0, onesided=None, length=None, "
            "return_complex=0) : ")
    cases = [
        (lambda: tgrad.istft(spec.real, 8),
         "istft requires a complex-valued input tensor matching the output from stft with "
         "return_complex=True."),
        (lambda: tgrad.istft(spec.reshape(1, 1, 5, 11), 8),
         "istft(CPUComplexFloatType[1, 1, 5, 11], n_fft=8, hop_length=2, win_length=8, "
         "window=None, center=1, normalized=0, onesided=None, length=None, return_complex=0)"
         " : expected a tensor with 3 or 4 dimensions, but got 5"),
        (lambda: tgrad.istft(spec[:, :0], 8),
         "istft(CPUComplexFloatType[5, 0], n_fft=8, hop_length=2, win_length=8, window=None, "
         "center=1, normalized=0, onesided=None, length=None, return_complex=0) : input tensor "
         "cannot be empty."),
        (lambda: tgrad.istft(spec, 30),
         "istft(CPUComplexFloatType[5, 11], n_fft=30, hop_length=7, win_length=30, "
         "window=None, center=1, normalized=0, onesided=None, length=None, return_complex=0) "
         ": expected the frequency dimension (3rd to the last) of the input tensor to match "
         "n_fft / 2 + 1 when onesided=True, but got 5"),
        (lambda: tgrad.istft(spec, 8, onesided=False),
         call.replace("onesided=None", "onesided=0") + "expected the frequency dimension (3rd "
         "to the last) of the input tensor to match n_fft when onesided=False, but got 5"),
        (lambda: tgrad.istft(spec, 8, win_length=9),
         call.replace("win_length=8", "win_length=9") + "expected 0 < win_length <= n_fft"),
        (lambda: tgrad.istft(spec, 8, win_length=0),  # hop 2 > win 0 is checked first
         call.replace("win_length=8", "win_length=0") + "expected 0 < hop_length <= "
         "win_length"),
        (lambda: tgrad.istft(spec, 8, hop_length=0),
         call.replace("hop_length=2", "hop_length=0") + "expected 0 < hop_length <= "
         "win_length"),
        (lambda: tgrad.istft(spec, 8, hop_length=9),
         call.replace("hop_length=2", "hop_length=9") + "expected 0 < hop_length <= "
         "win_length"),
        (lambda: tgrad.istft(spec, 8, window=tgrad.ones(5)),
         call.replace("window=None", "window=tgrad.FloatTensor{[5]}") + "Invalid window "
         "shape. window has to be 1D and length of `win_length`"),
        (lambda: tgrad.istft(spec, 8, window=tgrad.ones(1, 8)),
         call.replace("window=None", "window=tgrad.FloatTensor{[1, 8]}") + "Invalid window "
         "shape. window has to be 1D and length of `win_length`"),
        (lambda: tgrad.istft(spec, 8, window=tgrad.hann_window(8), center=False),
         call.replace("window=None", "window=tgrad.FloatTensor{[8]}").replace(
             "center=1", "center=0").replace(") : ", ") ") + "window overlap add min: 1"),
        (lambda: tgrad.istft(spec, 8, length=0),
         call.replace("length=None", "length=0") + "no output samples are left"),
        (lambda: tgrad.istft(spec[:, :1], 8),  # one frame: center trims all n_fft samples
         call.replace("[5, 11]", "[5, 1]") + "no output samples are left"),
    ]
    for f, msg in cases:
        with pytest.raises(RuntimeError, match="^" + re.escape(msg)):
            f()
    # the empty-output error also names PyTorch's own failure there
    with pytest.raises(RuntimeError, match=re.escape("min(): Expected reduction dim to be "
                                                     "specified for input.numel() == 0")):
        tgrad.istft(spec, 8, length=0)
    # a length beyond the overlap-added output: zeros in the tail, with PyTorch's warning
    ones = _t(np.ones((5, 11), np.complex128))
    with pytest.warns(UserWarning, match="The length of signal is shorter than the length "
                                         "parameter. Result is being padded with zeros"):
        y = tgrad.istft(ones, 8, length=40)
    assert y.shape == (40,) and not y.numpy()[28 - 4:].any()
    # the envelope's minimum in the overlap-add error: hann(8) periodic has w[0] = 0, and
    # with center=False output sample 0 sees only w[0]
    with pytest.raises(RuntimeError, match=r"the overlap-added squared window's minimum 0 "
                                           r"< 1e-11"):
        tgrad.istft(spec, 8, window=tgrad.hann_window(8), center=False)


def test_int_arguments_take_numpy_and_0d_integer_tensors_refuse_bools():
    # PyTorch's int parser: a 0-d integer tensor or NumPy integer is an int; bool and float
    # are its TypeError (the one int check, tensor._int_arg, under the fft_<op> name)
    a = np.array([1.0, -2.0, 0.5, 3.0])
    x = tgrad.tensor(a, dtype=tgrad.float64)
    for n in (tgrad.tensor(6), np.int64(6)):
        np.testing.assert_allclose(F.fft(x, n=n).numpy(), np.fft.fft(a, 6), atol=1e-12)
        np.testing.assert_allclose(F.fftn(x, s=(n,)).numpy(), np.fft.fft(a, 6), atol=1e-12)
        np.testing.assert_allclose(F.fftfreq(n).numpy(), np.fft.fftfreq(6), atol=1e-7)
    np.testing.assert_allclose(F.fft(x, dim=tgrad.tensor(0)).numpy(), np.fft.fft(a),
                               atol=1e-12)
    for call, msg in ((lambda: F.fft(x, n=True), "fft_fft(): argument 'n' must be int, not bool"),
                      (lambda: F.fft(x, dim=False), "fft_fft(): argument 'dim' must be int, "
                                                    "not bool"),
                      (lambda: F.fftn(x, s=(None,)), "fft_fftn(): argument 's' must be int, "
                                                     "not NoneType"),
                      (lambda: F.fftfreq(4.0), "fft_fftfreq(): argument 'n' must be int, "
                                               "not float"),
                      (lambda: F.fft(x, n=tgrad.tensor(6.0)), "fft_fft(): argument 'n' must be "
                                                              "int, not Tensor")):
        with pytest.raises(TypeError, match=re.escape(msg)):
            call()
