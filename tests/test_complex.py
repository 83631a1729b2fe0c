"""Complex dtypes (CPU): promotion, creation, printing, ops against NumPy complex128, and
gradients under PyTorch's convention, checked against finite differences.

Convention (PyTorch's): for a real loss L of z = x + iy, z.grad = dL/dx + i dL/dy. So a
finite-difference check perturbs x and y separately: Re z.grad ~ (L(z + h) - L(z - h)) / 2h,
Im z.grad ~ (L(z + ih) - L(z - ih)) / 2h.
"""

import warnings

import numpy as np
import pytest

import tgrad
from tgrad import Tensor, dtypes
from tgrad.autograd import gradcheck

C64, C128, F32, F64 = tgrad.complex64, tgrad.complex128, tgrad.float32, tgrad.float64


def test_dtype_objects_and_aliases():
    assert tgrad.cfloat is C64 and tgrad.cdouble is C128
    assert C64.is_complex and not C64.is_floating_point and C64.itemsize == 8
    assert dtypes.SCALAR_TYPE_NAMES[C64] == "ComplexFloat"
    assert dtypes.SCALAR_TYPE_NAMES[C128] == "ComplexDouble"
    assert dtypes.as_dtype(complex) is C128 and dtypes.as_dtype("cfloat") is C64
    assert tgrad.get_default_complex_dtype() is C64
    tgrad.set_default_dtype(F64)
    try:
        assert tgrad.get_default_complex_dtype() is C128
        assert tgrad.tensor([1j]).dtype is C128
    finally:
        tgrad.set_default_dtype(F32)


def test_dtype_to_complex_and_to_real():
    # PyTorch's torch.dtype.to_complex / to_real: the complex dtype whose parts have the
    # float's width (bfloat16's is complex64), the parts' dtype; real dtypes' to_real is
    # themselves, complex dtypes' to_complex too
    for real, cplx in ((F32, C64), (tgrad.bfloat16, C64), (F64, C128)):
        assert real.to_complex() is cplx and real.to_real() is real
    assert C64.to_real() is F32 and C128.to_real() is F64
    assert C64.to_complex() is C64 and C128.to_complex() is C128
    for d in (tgrad.bool, tgrad.uint8, tgrad.int64, tgrad.float8_e4m3fn):
        assert d.to_real() is d
    assert tgrad.float16.to_real() is tgrad.float16
    with pytest.raises(RuntimeError, match="complex32"):  # PyTorch's is complex32
        tgrad.float16.to_complex()
    for d, name in ((tgrad.int64, "Long"), (tgrad.bool, "Bool"),
                    (tgrad.float8_e5m2, "Float8_e5m2")):
        with pytest.raises(RuntimeError, match=f"^Unknown Complex ScalarType for {name}$"):
            d.to_complex()
    # itemsize / is_signed (PyTorch's values)
    assert [d.itemsize for d in (tgrad.bool, tgrad.bfloat16, C64, C128)] == [1, 2, 8, 16]
    assert [d.is_signed for d in (tgrad.bool, tgrad.uint8, tgrad.int8, F32, C64)] == \
        [False, False, True, True, True]


@pytest.mark.parametrize("a, b, want", [
    (F32, C64, C64), (F64, C64, C128), (tgrad.float16, C64, C64), (tgrad.bfloat16, C64, C64),
    (tgrad.int64, C64, C64), (tgrad.bool, C128, C128), (C64, C128, C128), (F64, C128, C128)])
def test_promote_types_table(a, b, want):
    assert tgrad.promote_types(a, b) is want and tgrad.promote_types(b, a) is want


def test_result_type_with_scalars_and_0d():
    # PyTorch: a Python complex takes the default complex dtype but keeps a float tensor's width
    assert tgrad.result_type(tgrad.ones(2), 1j) is C64
    assert tgrad.result_type(tgrad.ones(2, dtype=F64), 1j) is C128
    assert tgrad.result_type(tgrad.ones(2, dtype=tgrad.int64), 1j) is C64
    z0 = tgrad.tensor(1j, dtype=C128)
    assert tgrad.result_type(tgrad.ones(2), z0) is C64  # float32 dims + 0-d complex128
    assert tgrad.result_type(tgrad.ones(2, dtype=tgrad.int32), z0) is C128
    assert tgrad.result_type(tgrad.ones(2, dtype=C64), tgrad.tensor(1.0, dtype=F64)) is C64
    assert (tgrad.ones(2) + 1j).dtype is C64
    assert (tgrad.ones(2, dtype=F64) * 1j).dtype is C128


def test_creation():
    x = tgrad.tensor([1 + 2j, -3.5])
    assert x.dtype is C64 and x.is_complex() and not x.is_floating_point()
    np.testing.assert_array_equal(x.numpy(), np.array([1 + 2j, -3.5], np.complex64))
    assert tgrad.zeros(2, 3, dtype=C128).numpy().dtype == np.complex128
    assert tgrad.ones(2, dtype=C64).numpy().tolist() == [1, 1]
    f = tgrad.full((2,), 1 - 1j)
    assert f.dtype is C64 and f.numpy().tolist() == [1 - 1j, 1 - 1j]
    with pytest.raises(RuntimeError, match="cannot be converted"):
        tgrad.full((2,), 1j, dtype=F32)
    a = np.array([1 + 1j, 2], np.complex128)
    t = tgrad.from_numpy(a)
    a[1] = 5j
    assert t.dtype is C128 and t.numpy()[1] == 5j  # shares memory
    assert tgrad.ones(2, dtype=C64, requires_grad=True).requires_grad


def test_randn_complex_variance():
    tgrad.manual_seed(0)
    z = tgrad.randn(20000, dtype=C128).numpy()
    # each part ~ N(0, 1/2): E|z|^2 = 1
    assert abs(z.real.var() - 0.5) < 0.03 and abs(z.imag.var() - 0.5) < 0.03
    assert abs(np.mean(np.abs(z) ** 2) - 1.0) < 0.04
    u = tgrad.rand(1000, dtype=C64).numpy()
    assert u.real.min() >= 0 and u.real.max() < 1 and u.imag.min() >= 0 and u.imag.max() < 1


def test_printing_as_torch():
    # the strings PyTorch 2.13 prints for the same tensors
    assert repr(tgrad.tensor([1 + 2j, -3.5 - 0.25j, 0j])) == \
        "tensor([ 1.0000+2.0000j, -3.5000-0.2500j,  0.0000+0.0000j])"
    assert repr(tgrad.tensor(1 + 2j)) == "tensor(1.+2.j)"
    assert repr(tgrad.tensor([1 + 2j, float("nan") + 1j])) == "tensor([1.+2.j, nan+1.j])"
    assert repr(tgrad.tensor([[1e-5 + 1j, 1e5j], [1, 2]], dtype=C128)) == (
        "tensor([[1.0000e-05+1.0000e+00j, 0.0000e+00+1.0000e+05j],\n"
        "        [1.0000e+00+0.0000e+00j, 2.0000e+00+0.0000e+00j]],\n"
        "       dtype=tgrad.complex128)")
    assert repr(tgrad.zeros(2, dtype=C128, requires_grad=True)) == \
        "tensor([0.+0.j, 0.+0.j], dtype=tgrad.complex128, requires_grad=True)"


def test_save_load(tmp_path):
    x = tgrad.tensor([1 + 2j, 3 - 4j], dtype=C128)
    tgrad.save({"x": x}, tmp_path / "c.pt")
    y = tgrad.load(tmp_path / "c.pt")["x"]
    assert y.dtype is C128 and y.numpy().tolist() == [1 + 2j, 3 - 4j]


Z = np.array([[1 + 2j, -0.5 + 0.25j, 0.3 - 1.1j], [2 - 1j, -1.5 - 0.5j, 0.7 + 0.2j]])
W = np.array([[0.3 + 1j, 2.0 - 1j, -0.4 + 0.6j], [1.2 + 0.1j, -0.8 + 0.9j, 0.5 - 0.5j]])


@pytest.mark.parametrize("name, ref", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
    ("pow", np.power)])
def test_binary_values(name, ref):
    out = getattr(tgrad, name)(tgrad.tensor(Z), tgrad.tensor(W))
    assert out.dtype is C128
    np.testing.assert_allclose(out.numpy(), ref(Z, W), rtol=1e-12)


@pytest.mark.parametrize("name, ref", [
    ("neg", np.negative), ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
    ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh), ("reciprocal", lambda z: 1 / z),
    ("sigmoid", lambda z: 1 / (1 + np.exp(-z))), ("abs", np.abs), ("angle", np.angle),
    ("conj", np.conj), ("sgn", lambda z: z / np.abs(z))])
def test_unary_values(name, ref):
    out = getattr(tgrad, name)(tgrad.tensor(Z))
    want = ref(Z)
    assert out.dtype is (C128 if np.iscomplexobj(want) else F64)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)


def test_reductions_matmul_compare_where():
    z, w = tgrad.tensor(Z), tgrad.tensor(W)
    np.testing.assert_allclose(z.sum().item(), Z.sum(), rtol=1e-12)
    np.testing.assert_allclose(z.mean(1).numpy(), Z.mean(1), rtol=1e-12)
    np.testing.assert_allclose(z.prod(0).numpy(), Z.prod(0), rtol=1e-12)
    np.testing.assert_allclose((z @ w.mT).numpy(), Z @ W.T, rtol=1e-12)
    np.testing.assert_allclose(w.mH.numpy(), W.conj().T, rtol=0)
    assert (z == z).all() and not (z != z).any()
    np.testing.assert_array_equal((z == 1 + 2j).numpy(), Z == 1 + 2j)
    out = tgrad.where(z.real > 0, z, 0.5j)
    np.testing.assert_array_equal(out.numpy(), np.where(Z.real > 0, Z, 0.5j))
    np.testing.assert_array_equal(tgrad.cat([z, w]).numpy(), np.concatenate([Z, W]))
    np.testing.assert_array_equal(z[:, 1].numpy(), Z[:, 1])


def test_real_imag_views_share_storage():
    z = tgrad.tensor([1 + 2j, 3 - 4j])
    re, im = z.real, z.imag
    assert re.dtype is F32 and re.stride() == (2,) and im.storage_offset() == 1
    im[0] = 7.0
    assert z.numpy()[0] == 1 + 7j
    r = tgrad.view_as_real(z)
    assert r.shape == (2, 2) and r.stride() == (2, 1)
    r[1, 0] = -1.0
    assert z.numpy()[1] == -1 - 4j
    f = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = tgrad.view_as_complex(f)
    assert c.dtype is C64 and c.numpy().tolist() == [1 + 2j, 3 + 4j]
    c[0] = 5j
    assert f.numpy()[0].tolist() == [0.0, 5.0]
    assert not z.is_conj() and z.resolve_conj() is z


def test_real_imag_views_of_an_empty_tensor_have_doubled_strides():
    # a real view of complex storage steps two floats per element, empty or not (PyTorch)
    z = tgrad.zeros(3, 0, dtype=C128)
    assert z.real.stride() == z.imag.stride() == (2, 2)
    assert tgrad.zeros(0, dtype=C128).real.stride() == (2,)
    assert tgrad.view_as_real(z).stride() == (2, 2, 1) and tgrad.view_as_real(z).shape == (3, 0, 2)
    assert tgrad.zeros(4, 5, dtype=C64)[:, 5:].real.stride() == (10, 2)


def test_complex_polar_and_casts():
    re, im = tgrad.tensor([1.0, -2.0]), tgrad.tensor([0.5, 3.0])
    np.testing.assert_array_equal(tgrad.complex(re, im).numpy(), [1 + 0.5j, -2 + 3j])
    p = tgrad.polar(tgrad.tensor([2.0], dtype=F64), tgrad.tensor([0.5], dtype=F64))
    np.testing.assert_allclose(p.numpy(), 2 * np.exp(0.5j), rtol=1e-14)
    assert tgrad.tensor([1.5]).to(C64).numpy().tolist() == [1.5 + 0j]
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert tgrad.tensor([1 + 2j]).to(F32).numpy().tolist() == [1.0]



def test_complex_to_bool_is_nonzero_without_warning_and_0d_results_take_inplace_ops():
    z = tgrad.tensor([0.3j, 0, 1 + 0j, -2 + 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # z != 0: nothing is discarded (PyTorch: no warning)
        assert z.bool().tolist() == [True, False, True, True]
        b = tgrad.zeros(4, dtype=tgrad.bool)
        b.copy_(z)
        assert b.tolist() == [True, False, True, True]
        b0 = z[0].bool()  # a 0-d result is a tensor that in-place ops can write
        b0 &= tgrad.tensor(False)
        assert b0.item() is False
    a = tgrad.tensor(-1 + 1j, dtype=C128, requires_grad=True)
    ang = (a * 1).angle()  # 0-d complex angle, then an in-place op on it
    ang *= tgrad.tensor(2.0, dtype=F64)
    np.testing.assert_allclose(ang.item(), 2 * np.angle(-1 + 1j), rtol=1e-15)
    ang.backward()
    # d(2 angle z) = 2 i z / |z|^2 (PyTorch's convention): 2i(-1 + i) / 2 = -1 - i
    np.testing.assert_allclose(a.grad.numpy(), -1 - 1j, rtol=1e-15)

@pytest.mark.parametrize("fn, err", [
    (lambda z: z.max(), NotImplementedError), (lambda z: z.min(), NotImplementedError),
    (lambda z: z.sort(), RuntimeError), (lambda z: z.clamp(0, 1), NotImplementedError),
    (lambda z: z < 1, NotImplementedError), (lambda z: z.argmax(), RuntimeError),
    (lambda z: z.floor(), NotImplementedError), (lambda z: z.sign(), NotImplementedError),
    (lambda z: tgrad.maximum(z, z), RuntimeError),
    (lambda z: tgrad.view_as_real(z.real), RuntimeError),
    (lambda z: tgrad.complex(z.real, z.real.double()), RuntimeError),
    (lambda z: z.to("cuda"), RuntimeError)])
def test_errors(fn, err):
    with pytest.raises(err):
        fn(tgrad.tensor([1 + 2j]))


def test_cuda_creation_raises_clearly():
    with pytest.raises(RuntimeError, match="complex dtypes are CPU-only in tgrad"):
        tgrad.zeros(2, dtype=C64, device="cuda")
    with pytest.raises(RuntimeError, match="complex dtypes are CPU-only in tgrad"):
        tgrad.tensor([1j], device="cuda")


def test_real_cuda_tensor_with_a_complex_number_raises_clearly():
    # x + 1j, pow(x, 1j), where(c, x, 1j) of a real cuda tensor would be complex, which is
    # CPU-only: the op's clear error (they crashed in Triton with KeyError 'complex64');
    # real results (x + 2.0) still compute. Run on the interpreted cuda device.
    import os
    import sys
    pytest.importorskip("triton")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from interpreted import run_json
    res = run_json("""
import json, tgrad
x = tgrad.tensor([1.0, -2.0], device="cuda")
out = {}
for name, f in [("add", lambda: x + 1j), ("mul", lambda: tgrad.mul(x, 2j)),
                ("pow", lambda: tgrad.pow(x, 1 + 2j)), ("pow", lambda: (1j) ** x),
                ("sub", lambda: x - 1j), ("div", lambda: x / 1j),
                ("where", lambda: tgrad.where(x > 0, x, 1j))]:
    try:
        f()
        out[name] = "computed"
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
out["real"] = (x + 2.0).cpu().numpy().tolist()
print(json.dumps(out))
""")
    assert res.pop("real") == [3.0, 0.0]
    for name, (typ, msg) in res.items():
        assert typ == "RuntimeError" and msg.startswith(
            f"{name}: complex dtypes are CPU-only in tgrad (got tgrad.complex64 on cuda:0)"), \
            (name, typ, msg)


def test_clamp_takes_real_number_bounds_only():
    # PyTorch reads clamp's number bounds as real Scalars: 2+0j is 2.0, 1j raises (it made a
    # complex result)
    x = tgrad.tensor([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(tgrad.clamp(x, -1 + 0j, 2 + 0j).numpy(), [1.0, -1.0, 2.0])
    assert tgrad.clamp(x, max=2 + 0j).dtype is tgrad.float32
    for f in (lambda: tgrad.clamp(x, 1j), lambda: x.clip(max=1 + 1j),
              lambda: x.clone().clamp_(0, 1j)):
        with pytest.raises(RuntimeError, match="clamp: value cannot be converted to type "
                                               "double without overflow"):
            f()


def test_backward_on_complex_scalar_raises():
    z = tgrad.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * 2).sum().backward()


def _fd_grad(loss, z: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """dL/dx + i dL/dy by central differences of the real loss ``loss`` (NumPy)."""
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        for unit in (1.0, 1j):
            zp, zm = z.copy(), z.copy()
            zp[k] += h * unit
            zm[k] -= h * unit
            g[k] += unit * (loss(zp) - loss(zm)) / (2 * h)
    return g


@pytest.mark.parametrize("name, tfn, nfn", [
    ("mul", lambda z: (z * z * (2 - 1j)).abs().sum(), lambda z: np.abs(z * z * (2 - 1j)).sum()),
    ("div", lambda z: (1 / (z + 3)).real.sum(), lambda z: (1 / (z + 3)).real.sum()),
    ("exp_log", lambda z: (z.exp() + z.log()).imag.sum(),
     lambda z: (np.exp(z) + np.log(z)).imag.sum()),
    ("sqrt", lambda z: z.sqrt().abs().pow(2).sum(), lambda z: (np.abs(np.sqrt(z)) ** 2).sum()),
    ("trig", lambda z: (z.sin() * z.cos()).real.sum(),
     lambda z: (np.sin(z) * np.cos(z)).real.sum()),
    ("tanh_sigmoid", lambda z: (z.tanh() + z.sigmoid()).imag.sum(),
     lambda z: (np.tanh(z) + 1 / (1 + np.exp(-z))).imag.sum()),
    ("pow", lambda z: (z ** 3).real.sum(), lambda z: (z ** 3).real.sum()),
    ("angle", lambda z: z.angle().sum(), lambda z: np.angle(z).sum()),
    ("conj_prod", lambda z: (z.conj() * z.prod()).real.sum(),
     lambda z: (z.conj() * z.prod()).real.sum()),
    ("mean_matmul", lambda z: (z @ z.mT).mean().abs(), lambda z: np.abs((z @ z.T).mean())),
])
def test_gradient_vs_finite_differences(name, tfn, nfn):
    z = tgrad.tensor(Z, requires_grad=True)
    tfn(z).backward()
    np.testing.assert_allclose(z.grad.numpy(), _fd_grad(nfn, Z), rtol=1e-6, atol=1e-8)


def test_gradient_of_real_input_is_real():
    # L = |r z|^2 summed: dL/dr = 2 r |z|^2 (a real input gets the real part)
    r = tgrad.tensor([0.5, -2.0], dtype=F64, requires_grad=True)
    z = tgrad.tensor(Z[0, :2])
    (r * z).abs().pow(2).sum().backward()
    assert r.grad.dtype is F64
    np.testing.assert_allclose(r.grad.numpy(), 2 * np.array([0.5, -2.0]) * np.abs(Z[0, :2]) ** 2)


def test_gradcheck_complex():
    z = tgrad.tensor(Z[0], requires_grad=True)
    w = tgrad.tensor(W[0], requires_grad=True)
    r = tgrad.tensor([0.3, 2.0, -1.0], dtype=F64, requires_grad=True)
    for f in (lambda a, b: a * b, lambda a, b: a / b, lambda a, b: (a.exp() + b).sqrt(),
              lambda a, b: a.abs() + b.angle(), lambda a, b: tgrad.view_as_real(a * b.conj())):
        assert gradcheck(f, (z, w))
    assert gradcheck(lambda a, b: a * b, (z, r))
    assert gradcheck(tgrad.polar, (r.abs() + 0.1, r.detach().requires_grad_()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(lambda a: a.real * a.imag, (z,))
    assert not gradcheck(lambda a: tgrad.view_as_real(a) * 1.0 + _wrong(a), (z,),
                         raise_exception=False)


def _wrong(a):
    class Bad(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return tgrad.view_as_real(x.detach()) * 0

        @staticmethod
        def backward(ctx, g):
            return tgrad.complex(g[..., 0], g[..., 1])  # wrong: the forward is zero
    return Bad.apply(a)


# --------------------------------------------------------------- the op table, complex inputs
def _complex_table_cases():
    """(spec, sample) pairs: the first two samples of every OpSpec of tests/op_db.py and
    tests/op_db_nn.py that have a floating array and at most 200 elements per array."""
    from test_opinfo import SPECS, _samples
    cases = []
    for spec in SPECS:
        picked = [s for s in _samples(spec)
                  if any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in s.args)
                  and all(a.size <= 200 for a in s.args if isinstance(a, np.ndarray))][:2]
        cases += [pytest.param(spec, s, id=f"{spec.name}-{k}") for k, s in enumerate(picked)]
    return cases


@pytest.mark.parametrize("spec, sample", _complex_table_cases())
def test_op_table_with_complex_inputs_raises_clearly_or_matches_numpy(spec, sample):
    """No op silently accepts complex: each either raises an error that names the complex
    dtype, or returns what its NumPy reference gives for the complex128 inputs (the
    reference run in complex arithmetic; complex outputs must be complex128)."""
    from test_opinfo import Built, _to_domain
    rng = np.random.default_rng(7)
    arrs = [_to_domain(a, spec.domain) + 0.5j * rng.standard_normal(a.shape)
            if a.dtype.kind == "f" else a
            for a in sample.args if isinstance(a, np.ndarray)]
    built = Built(spec, sample, "float64", arrays=arrs)
    assert all(t.dtype is C128 for i, t in enumerate(built.leaves) if arrs[i].dtype.kind == "c")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = built.call()
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        assert "complex" in str(e).lower(), f"{spec.name}: unclear error for complex: {e!r}"
        return
    ref = built.reference()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(outs) == len(refs), spec.name
    for o, r in zip(outs, refs):
        r = np.asarray(r)
        got = o.detach().numpy()
        assert got.shape == r.shape, f"{spec.name}: shape {got.shape} vs {r.shape}"
        if r.dtype.kind == "c":
            assert o.dtype is C128, f"{spec.name}: dtype {o.dtype}, NumPy gives complex128"
        else:
            assert got.dtype.kind == r.dtype.kind, f"{spec.name}: {got.dtype} vs {r.dtype}"
        np.testing.assert_allclose(got, r, rtol=1e-12, atol=1e-12, equal_nan=True,
                                   err_msg=spec.name)


def _cx(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def test_cumprod_vdot_logsumexp_values_and_gradients():
    rng = np.random.default_rng(3)
    a, b = _cx(rng, 3, 4), _cx(rng, 5)
    got = tgrad.cumprod(tgrad.tensor(a), 1)
    assert got.dtype is C128
    np.testing.assert_allclose(got.numpy(), np.cumprod(a, 1), rtol=1e-12)
    # vdot conjugates its first argument: sum(conj(x) * y)
    x, y = tgrad.tensor(b), tgrad.tensor(b[::-1].copy())
    np.testing.assert_allclose(tgrad.vdot(x, y).item(), np.vdot(b, b[::-1]), rtol=1e-12)
    np.testing.assert_allclose(x.vdot(y).item(), np.sum(np.conj(b) * b[::-1]), rtol=1e-12)
    assert tgrad.vdot(tgrad.tensor([1.0, 2.0]), tgrad.tensor([3.0, 4.0])).item() == 11.0
    # logsumexp: the principal log of sum(exp(z)) (imaginary part in (-pi, pi])
    z = np.array([[1 + 4j, 1 + 4j], [0.2 - 1j, 3 + 0j]])
    want = np.log(np.exp(z).sum(1))
    got = tgrad.logsumexp(tgrad.tensor(z), 1)
    assert got.dtype is C128 and np.all(np.abs(want.imag) <= np.pi)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(tgrad.logsumexp(tgrad.tensor(z), (0, 1), keepdim=True).numpy(),
                               np.log(np.exp(z).sum()).reshape(1, 1), rtol=1e-12)
    # gradients against finite differences of the real and imaginary parts
    for fn, shape in ((lambda t: tgrad.cumprod(t, 1), (2, 3)),
                      (lambda t: tgrad.vdot(t, t.flip(0) * 0.5), (4,)),
                      (lambda t: tgrad.logsumexp(t, 1), (2, 3))):
        t = tgrad.tensor(_cx(rng, *shape) * 0.5, requires_grad=True)
        assert gradcheck(fn, (t,))


def test_conj_of_0d_tensor_is_a_0d_tensor():
    c = tgrad.tensor(1 + 2j, dtype=C128).conj()
    assert c.shape == () and c.unsqueeze(0).numpy().tolist() == [1 - 2j]


def test_relu_of_complex_raises_as_pytorch():
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        tgrad.nn.functional.relu(tgrad.tensor([1 + 1j]))
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        tgrad.nn.functional.max_pool1d(tgrad.ones(1, 4, dtype=C64), 2)


def test_linalg_refuses_integer_input():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        tgrad.linalg.vector_norm(tgrad.tensor([1, 3]))


# --------------------------------------------------------------- var / std / norm of complex
def test_var_std_of_complex_values():
    """var of complex z is sum |z - mean|^2 / (N - correction), a real tensor of z's float
    width (PyTorch's), against NumPy complex128."""
    rng = np.random.default_rng(11)
    a = _cx(rng, 3, 4)
    z = tgrad.tensor(a)
    for kw, npkw in (({}, {"ddof": 1}), ({"dim": 1}, {"axis": 1, "ddof": 1}),
                     ({"dim": 0, "correction": 0, "keepdim": True},
                      {"axis": 0, "ddof": 0, "keepdims": True})):
        ax, keep = npkw.get("axis"), npkw.get("keepdims", False)
        n = a.size if ax is None else a.shape[ax]
        want = np.sum(np.abs(a - a.mean(ax, keepdims=True)) ** 2, axis=ax,
                      keepdims=keep) / (n - npkw["ddof"])
        v = z.var(**kw)
        assert v.dtype is F64
        np.testing.assert_allclose(v.numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(v.numpy(), np.var(a, **npkw), rtol=1e-12)
        np.testing.assert_allclose(z.std(**kw).numpy(), np.sqrt(want), rtol=1e-12)
    v, m = tgrad.var_mean(z.to(C64), 1)
    assert v.dtype is F32 and m.dtype is C64
    np.testing.assert_allclose(v.numpy(), np.var(a, 1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(m.numpy(), a.mean(1), rtol=1e-5)
    s, m = tgrad.std_mean(z, 0, correction=0)
    assert s.dtype is F64 and m.dtype is C128
    np.testing.assert_allclose(s.numpy(), np.std(a, 0), rtol=1e-12)


def test_var_std_of_complex_gradients():
    """z.grad = g 2 (z - mean) / (N - c) for var (PyTorch's), checked by hand, then by
    gradcheck / gradgradcheck in complex128; std's is 0 at a constant slice."""
    from tgrad.autograd import gradgradcheck
    a = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j])
    z = tgrad.tensor(a, requires_grad=True)
    z.var().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * (a - a.mean()) / 2, rtol=1e-14)
    z.grad = None
    z.std(correction=0).backward()
    sd = np.sqrt(np.mean(np.abs(a - a.mean()) ** 2))
    np.testing.assert_allclose(z.grad.numpy(), (a - a.mean()) / (3 * sd), rtol=1e-14)
    c = tgrad.tensor(np.full(3, 1 + 1j), requires_grad=True)
    c.std().backward()
    assert c.grad.numpy().tolist() == [0j, 0j, 0j]
    rng = np.random.default_rng(12)
    t = tgrad.tensor(_cx(rng, 2, 3), requires_grad=True)
    for fn in (lambda x: x.var(1), lambda x: x.std(0, correction=0),
               lambda x: tgrad.var_mean(x, 1)[0] + tgrad.std_mean(x)[0]):
        assert gradcheck(fn, (t,))
        assert gradgradcheck(fn, (t,))


def test_norm_of_complex_is_vector_norm_of_abs():
    """torch.norm of a complex tensor: the real p-norm of |z|, gradient
    g d||.||/d|z| sgn(z) (computed here by hand for p = 3)."""
    from tgrad.autograd import gradgradcheck
    a = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j])
    z = tgrad.tensor(a, requires_grad=True)
    r = np.abs(a)
    for p, want in ((3, np.sum(r ** 3) ** (1 / 3)), ("fro", np.sqrt(np.sum(r ** 2))),
                    (None, np.sqrt(np.sum(r ** 2))), (float("inf"), r.max()),
                    (1, r.sum())):
        n = tgrad.norm(z, p=p)
        assert n.dtype is F64
        np.testing.assert_allclose(n.item(), want, rtol=1e-14)
    n3 = z.norm(3)
    n3.backward()
    want = r ** 2 / np.sum(r ** 3) ** (2 / 3) * a / r
    np.testing.assert_allclose(z.grad.numpy(), want, rtol=1e-13)
    m = np.array([[1 + 1j, 2], [0.5j, -1]])
    np.testing.assert_allclose(tgrad.norm(tgrad.tensor(m), "nuc").item(),
                               np.linalg.norm(m, "nuc"), rtol=1e-12)
    np.testing.assert_allclose(tgrad.norm(tgrad.tensor(m), 2, dim=1, keepdim=True).numpy(),
                               np.linalg.norm(m, axis=1, keepdims=True), rtol=1e-14)
    zero = tgrad.zeros(3, dtype=C128, requires_grad=True)
    zero.norm().backward()
    assert zero.grad.numpy().tolist() == [0j, 0j, 0j]
    t = tgrad.tensor(_cx(np.random.default_rng(13), 2, 3), requires_grad=True)
    for fn in (lambda x: x.norm(dim=1), lambda x: tgrad.norm(x, 3, dim=0)):
        assert gradcheck(fn, (t,))
        assert gradgradcheck(fn, (t,))


def test_silu_and_normalize_of_complex():
    """silu: z sigmoid(z) = z / (1 + exp(-z)) in complex128 (no derivative, PyTorch's
    error); normalize: z / max(||z||_2, eps) along dim 1, gradient by gradcheck."""
    from tgrad.nn import functional as F
    a = np.array([[1 + 1j, 2 - 1j, 0.5j], [0.3 - 2j, -1 + 0.5j, 2 + 0j]])
    np.testing.assert_allclose(F.silu(tgrad.tensor(a)).numpy(), a / (1 + np.exp(-a)),
                               rtol=1e-14)
    with pytest.raises(RuntimeError, match="silu does not support automatic differentiation "
                                           "for outputs with complex dtype"):
        F.silu(tgrad.tensor(a, requires_grad=True))
    with tgrad.no_grad():
        assert F.silu(tgrad.tensor(a, requires_grad=True)).dtype is C128
    got = F.normalize(tgrad.tensor(a))
    want = a / np.sqrt((np.abs(a) ** 2).sum(1, keepdims=True))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
    t = tgrad.tensor(a, requires_grad=True)
    assert gradcheck(lambda x: F.normalize(x, dim=0), (t,))


def test_rms_norm_conv_transpose_scatter_reduce_of_complex():
    """PyTorch 2.13 computes these for complex on the CPU: rms_norm as its composite
    z / sqrt(mean(z^2) + eps) (z^2, not |z|^2; principal root), conv_transpose3d, and
    scatter_reduce's sum/prod/mean (forward only: no complex derivative in PyTorch)."""
    from tgrad.nn import functional as F
    rng = np.random.default_rng(11)
    z, w = _cx(rng, 2, 3), _cx(rng, 3)
    eps = np.finfo(np.float64).eps
    want = z / np.sqrt((z * z).mean(-1, keepdims=True) + eps) * w
    got = F.rms_norm(tgrad.tensor(z), (3,), tgrad.tensor(w))
    assert got.dtype is C128
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    assert gradcheck(lambda a, b: F.rms_norm(a, (3,), b, eps=1e-3),
                     (tgrad.tensor(z, requires_grad=True), tgrad.tensor(w, requires_grad=True)))
    # conv_transpose3d: each input voxel times the kernel, added at i * stride + k
    x, k = _cx(rng, 1, 2, 2, 2, 2), _cx(rng, 2, 1, 2, 1, 2)
    ref = np.zeros((1, 1, 3, 2, 3), complex)
    for ci in range(2):
        for i in np.ndindex(2, 2, 2):
            for kk in np.ndindex(2, 1, 2):
                ref[(0, 0) + tuple(a + b for a, b in zip(i, kk))] += x[(0, ci) + i] * \
                    k[(ci, 0) + kk]
    got = F.conv_transpose3d(tgrad.tensor(x), tgrad.tensor(k))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13)
    assert gradcheck(F.conv_transpose3d, (tgrad.tensor(x, requires_grad=True),
                                          tgrad.tensor(k, requires_grad=True)))
    # scatter_reduce: sum / prod / mean, with and without the input's own value
    base, src, idx = _cx(rng, 3), _cx(rng, 5), np.array([0, 1, 0, 2, 1])
    for reduce, fold in (("sum", np.sum), ("prod", np.prod), ("mean", np.mean)):
        for incl in (True, False):
            want = np.array([fold(([base[t]] if incl else []) + list(src[idx == t]))
                             for t in range(3)])
            got = tgrad.tensor(base).scatter_reduce(0, tgrad.tensor(idx), tgrad.tensor(src),
                                                    reduce, include_self=incl)
            assert got.dtype is C128
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    with pytest.raises(NotImplementedError, match="scatter_gather_tensor_cpu_reduce_amax\" "
                                                  "not implemented for 'ComplexDouble'"):
        tgrad.tensor(base).scatter_reduce(0, tgrad.tensor(idx), tgrad.tensor(src), "amax")
    with pytest.raises(RuntimeError, match="scatter_reduce does not support automatic "
                                           "differentiation for outputs with complex dtype"):
        tgrad.tensor(base, requires_grad=True).scatter_reduce(
            0, tgrad.tensor(idx), tgrad.tensor(src), "sum")


def test_real_only_special_functions_refuse_complex():
    # PyTorch raises NotImplementedError for these on complex tensors; tgrad cast the input
    # to float32 and returned a real result without the imaginary part
    z = tgrad.tensor([1 + 1j])
    fns = {"i0": tgrad.i0, "erfc": tgrad.erfc, "erfinv": tgrad.erfinv, "lgamma": tgrad.lgamma,
           "digamma": tgrad.digamma, "i0e": tgrad.special.i0e, "i1": tgrad.special.i1,
           "erfcx": tgrad.special.erfcx, "ndtr": tgrad.special.ndtr,
           "ndtri": tgrad.special.ndtri, "log_ndtr": tgrad.special.log_ndtr,
           "entr": tgrad.special.entr}
    for name, fn in fns.items():
        with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for "
                                                      f"'ComplexFloat'"):
            fn(z)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexDouble'"):
        tgrad.mvlgamma(z.to(tgrad.complex128), 1)


def test_sinc_of_complex():
    # PyTorch: sin(pi z) / (pi z), 1 at 0, complex (tgrad dropped the imaginary part)
    z = np.array([1 + 1j, 0j, -2.5 + 0.1j, 3.0 + 0j])
    got = tgrad.sinc(tgrad.tensor(z))
    assert got.dtype is tgrad.complex128
    with np.errstate(all="ignore"):
        want = np.where(z == 0, 1.0, np.sin(np.pi * z) / (np.pi * z))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14, atol=1e-15)
    assert gradcheck(tgrad.sinc, (tgrad.tensor(z[[0, 2]], requires_grad=True),))


@pytest.mark.parametrize("dt,tol", [(C64, 2e-6), (tgrad.complex128, 1e-11)])
def test_sinc_of_complex_gradient_near_zero(dt, tol):
    # d sinc(z)/dz = pi (t cos t - sin t) / t^2, t = pi z, cancels near 0: composed of the
    # complex sin and division, complex64's gradient at z = 1e-8 (1 + i) was 1.57 (not
    # ~-3e-8), complex128's 10% off. Reference: the leading term -pi^2 z / 3 for tiny z
    # (relative error ~z^2), the closed form in complex128 elsewhere; gradient conj(f') g
    tiny = np.array([1e-8 + 1e-8j, -3e-9 + 2e-9j, 0j])
    rest = np.array([0.01 - 0.02j, 0.1 + 0.05j, 0.3 + 0.2j, 1.5 - 0.5j])
    t = np.pi * rest
    want = np.concatenate([-np.pi ** 2 * tiny / 3,
                           np.pi * (t * np.cos(t) - np.sin(t)) / t ** 2])
    z = tgrad.tensor(np.concatenate([tiny, rest]), dtype=dt, requires_grad=True)
    g = np.linspace(0.5, 2.0, z.numel()) - 0.7j
    tgrad.sinc(z).backward(tgrad.tensor(g, dtype=dt))
    assert z.grad.dtype is dt
    np.testing.assert_allclose(z.grad.numpy(), g * np.conj(want), rtol=tol, atol=tol * 1e-7)


def test_float_and_int_of_a_complex_tensor():
    # PyTorch: a complex value with a zero imaginary part converts; otherwise RuntimeError
    assert float(tgrad.tensor(1.5 + 0j)) == 1.5 and type(float(tgrad.tensor(0j))) is float
    assert int(tgrad.tensor(-3.7 + 0j, dtype=C64)) == -3
    with pytest.raises(RuntimeError, match="cannot be converted to type double"):
        float(tgrad.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match="cannot be converted to type int64_t"):
        int(tgrad.tensor(1 - 1j))
    assert complex(tgrad.tensor(1 + 2j)) == 1 + 2j


def test_pow_real_base_complex_exponent_gradient_at_negative_base():
    # d a^b / db = a^b log a with the real base promoted to complex first (as PyTorch):
    # log(-2) = log 2 + i pi, not NaN. Hand value for L = Re(a^b w): dL/db = conj(w a^b log a)
    a = tgrad.tensor([-2.0, 3.0], dtype=F64, requires_grad=True)
    b = tgrad.tensor([0.5 + 1j, 1.2 - 0.3j], dtype=C128, requires_grad=True)
    w = np.array([0.7 - 0.2j, -1.1 + 0.4j])
    (tgrad.pow(a, b) * tgrad.tensor(w)).real.sum().backward()
    an, bn = np.array([-2.0 + 0j, 3.0]), np.array([0.5 + 1j, 1.2 - 0.3j])
    want = np.conj(w * an ** bn * np.log(an))
    np.testing.assert_allclose(b.grad.numpy(), want, rtol=1e-12)
    assert np.all(np.isfinite(a.grad.numpy())) and a.grad.dtype is F64
    assert gradcheck(tgrad.pow, (a, b)) and tgrad.autograd.gradgradcheck(tgrad.pow, (a, b))


def test_pow_zero_base_exponent_gradient_is_zero_where_re_b_is_not_negative():
    # d 0^b / db = 0^b log 0 is 0 * -inf: PyTorch's mask gives 0 for Re b >= 0, for a number
    # base as for a tensor one, and a forward-AD tangent (linear in the direction) is 0 too
    for base in (0j, 0.0, tgrad.zeros(2, dtype=C128)):
        e = tgrad.tensor([2.0 + 0j, 3.0 - 1j], dtype=C128, requires_grad=True)
        (tgrad.pow(base, e) * tgrad.tensor([0.3 - 1j, 2.0])).real.sum().backward()
        np.testing.assert_array_equal(e.grad.numpy(), np.zeros(2, complex))
        if isinstance(base, Tensor):
            continue
        x = tgrad.tensor([2.0 + 0.5j, 1.5], dtype=C128, requires_grad=True)
        assert gradcheck(lambda t, b=base: tgrad.pow(b, t), (x,))
        assert tgrad.autograd.gradgradcheck(lambda t, b=base: tgrad.pow(b, t), (x,))
    fa = tgrad.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(tgrad.tensor([2.0 + 0j], dtype=C128), tgrad.tensor([1.0 + 1j], dtype=C128))
        for base in (0j, tgrad.zeros(1, dtype=C128)):
            t = fa.unpack_dual(tgrad.pow(base, d)).tangent
            np.testing.assert_array_equal(t.numpy(), [0j])


def test_complex_random_0d_is_0d():
    # np.ascontiguousarray makes 0-d arrays 1-d: rand/randn((), complex) were shape (1,),
    # and gradgradcheck of a function with a 0-d complex output (det, trace) failed with
    # "Mismatch in shape" (its random grad_outputs)
    for f in (tgrad.rand, tgrad.randn):
        for dt in (C64, C128):
            assert f((), dtype=dt).shape == () and f(2, 3, dtype=dt).shape == (2, 3)
    assert tgrad.randn_like(tgrad.tensor(1j, dtype=C128)).shape == ()
    x = tgrad.tensor([[1 + 1j, 2], [3, 4 - 1j]], dtype=C128, requires_grad=True)
    assert tgrad.autograd.gradgradcheck(tgrad.linalg.det, (x,))
    assert tgrad.autograd.gradgradcheck(tgrad.trace, (x,))


def test_index_add_complex_alpha():
    # a complex alpha on a complex tensor (PyTorch: kept; it raised TypeError from
    # math.trunc); on a real tensor it cannot be converted (PyTorch's overflow error)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    s = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
    want = x.copy()
    np.add.at(want, (slice(None), [0, 2]), (2 - 1j) * s)
    xt = tgrad.tensor(x, requires_grad=True)
    st = tgrad.tensor(s, requires_grad=True)
    idx = tgrad.tensor([0, 2])
    np.testing.assert_allclose(xt.index_add(1, idx, st, alpha=2 - 1j).detach().numpy(), want)
    assert gradcheck(lambda a, b: a.index_add(1, idx, b, alpha=2 - 1j), (xt, st))
    with pytest.raises(RuntimeError, match="index_add: value .* float64 without overflow"):
        tgrad.zeros(3, dtype=F64).index_add(0, idx[:1], tgrad.ones(1, dtype=F64), alpha=1j)


def test_nan_to_num_of_complex_replaces_each_part():
    # PyTorch: NaN / +inf / -inf replaced in the real and the imaginary part separately
    # (tgrad returned the input unchanged); the gradient passes where a part is finite
    big = np.finfo(np.float64).max
    z = np.array([complex(np.nan, 1), complex(np.inf, -np.inf), complex(1, np.nan), 2 - 3j])
    zt = tgrad.tensor(z, requires_grad=True)
    out = tgrad.nan_to_num(zt)
    np.testing.assert_array_equal(out.detach().numpy(),
                                  [1j, complex(big, -big), 1 + 0j, 2 - 3j])
    np.testing.assert_array_equal(
        tgrad.nan_to_num(zt.detach(), nan=2.0, posinf=5.0, neginf=-4.0).numpy(),
        [2 + 1j, 5 - 4j, 1 + 2j, 2 - 3j])
    assert tgrad.nan_to_num(zt.detach().to(C64)).dtype is C64
    w = np.array([1 + 2j, 3 - 1j, -2 + 0.5j, 0.5 + 0.25j])
    (out * tgrad.tensor(w)).real.sum().backward()
    # d Re(out w) / d Re z = Re w where Re z is finite; / d Im z = -Im w where Im z is
    want = np.where(np.isfinite(z.real), w.real, 0) - 1j * np.where(np.isfinite(z.imag), w.imag, 0)
    np.testing.assert_allclose(zt.grad.numpy(), want)
    y = tgrad.tensor(z)
    y.nan_to_num_()
    np.testing.assert_array_equal(y.numpy(), out.detach().numpy())


def _log1p_reference(z: complex) -> complex:
    """log(1 + z) from exact rational arithmetic: log|1 + z| = log1p(r) / 2 with
    r = 2x + x^2 + y^2 summed exactly (Fraction), then rounded once; atan2(y, 1 + x)."""
    import math
    from fractions import Fraction
    x, y = Fraction(z.real), Fraction(z.imag)
    r = 2 * x + x * x + y * y
    if abs(r) > 0.5:  # |1 + z| away from 1: no cancellation to fear
        real = math.log(math.hypot(float(1 + x), z.imag))
    else:
        real = math.log1p(float(r)) / 2
    return complex(real, math.atan2(z.imag, float(1 + x)))


def test_complex_log1p_is_accurate_where_one_plus_z_is_near_the_unit_circle():
    # NumPy's complex log1p computes log(1 + z): a small z, or |1 + z| near 1, kept only a
    # few digits of the real part (0.14% off at 1e-5 + 1e-5j in complex64)
    rng = np.random.default_rng(4)
    turns = rng.uniform(0.01, 3.1, 40)
    near_circle = np.exp(1j * turns) * (1 + rng.uniform(-1e-9, 1e-9, 40)) - 1
    zs = list(near_circle) + [1e-5 + 1e-5j, 1e-20 + 1e-25j, -0.5 + 0.8660254j, 0.5j, -0.3j,
                              -2 + 0j, 2 + 3j, -0.9 + 0.1j, 3e38 + 3e38j, 1e200 - 1e200j,
                              -1 + 1e-300j, -1 + 1e-20j]
    got = tgrad.tensor(zs, dtype=tgrad.complex128).log1p().numpy()
    for z, g in zip(zs, got):
        want = _log1p_reference(complex(z))
        assert abs(g.real - want.real) <= 4e-16 * abs(want.real), (z, g, want)
        assert abs(g.imag - want.imag) <= 4e-16 * abs(want.imag), (z, g, want)
    z64 = np.asarray(zs[:-4], np.complex64)  # (the rest overflow or underflow complex64)
    got = tgrad.tensor(z64).log1p().numpy()
    want = np.array([_log1p_reference(complex(z)) for z in z64], np.complex64)
    np.testing.assert_array_equal(got, want)  # complex64: computed in complex128, rounded
    # the derivative is unchanged: 1 / conj(1 + z) under the conjugate convention
    z = tgrad.tensor([0.3 - 0.2j, 1e-5j], dtype=tgrad.complex128, requires_grad=True)
    assert gradcheck(tgrad.log1p, (z,))
