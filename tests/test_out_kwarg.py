"""PyTorch's out= keyword on torch-level functions (tgrad/_out.py): the result is written
into out (resized, cast), out itself is returned and its version bumps; PyTorch's errors."""

import warnings

import numpy as np
import pytest

import tgrad

A = np.arange(6.0).reshape(2, 3)
B = np.linspace(-1.0, 2.0, 6).reshape(2, 3)


def t(x, **kw):
    return tgrad.tensor(x, **kw)


def test_elementwise_out_is_returned_and_written():
    out = tgrad.empty(2, 3)
    v0 = out._version
    r = tgrad.add(t(A), t(B), alpha=2, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), A + 2 * B, rtol=1e-6)
    assert out._version > v0
    tgrad.exp(t(B), out=out)
    np.testing.assert_allclose(out.numpy(), np.exp(B), rtol=1e-6)


def test_empty_out_is_resized_without_warning():
    out = tgrad.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tgrad.mul(t(A), t(B), out=out)
    assert out.shape == (2, 3) and out.is_contiguous()
    np.testing.assert_allclose(out.numpy(), A * B, rtol=1e-6)


def test_out_with_elements_is_resized_with_pytorchs_warning():
    out = tgrad.empty(5)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized "
                      r"since it had shape \[5\], which does not match the required output "
                      r"shape \[2, 3\]"):
        tgrad.sub(t(A), t(B), out=out)
    np.testing.assert_allclose(out.numpy(), A - B, rtol=1e-6)
    big = tgrad.zeros(10)  # shrinking stays in the same storage
    with pytest.warns(UserWarning):
        tgrad.sub(t(A), t(B), out=big)
    assert big.shape == (2, 3)


def test_noncontiguous_out_of_the_right_shape_keeps_its_strides():
    out = tgrad.zeros(3, 2).t()
    tgrad.add(t(A), 1.0, out=out)
    assert out.stride() == (1, 2)
    np.testing.assert_allclose(out.numpy(), A + 1)


def test_dtype_rules():
    out = tgrad.empty(2, 3, dtype=tgrad.float64)  # float -> double: cast
    tgrad.add(t(A, dtype=tgrad.float32), t(B, dtype=tgrad.float32), out=out)
    assert out.dtype is tgrad.float64
    np.testing.assert_allclose(out.numpy(), A + B, rtol=1e-6)
    outf = tgrad.empty(2)  # long -> float: cast
    tgrad.add(t([1, 2]), t([3, 4]), out=outf)
    np.testing.assert_array_equal(outf.numpy(), [4.0, 6.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        tgrad.add(t(A, dtype=tgrad.float32), 1, out=tgrad.empty(2, 3, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Bool"):
        tgrad.add(t(A, dtype=tgrad.float32), 1, out=tgrad.empty(2, 3, dtype=tgrad.bool))
    outb = tgrad.empty(2, 3, dtype=tgrad.float32)  # bool result into float
    tgrad.gt(t(A), 2.5, out=outb)
    np.testing.assert_array_equal(outb.numpy(), (A > 2.5).astype(np.float32))


def test_autograd_error():
    a = t(A, requires_grad=True)
    msg = (r"add\(\): functions with out=... arguments don't support automatic "
           r"differentiation, but one of the arguments requires grad.")
    with pytest.raises(RuntimeError, match=msg):
        tgrad.add(a, a, out=tgrad.empty(2, 3))
    with pytest.raises(RuntimeError, match=msg):
        tgrad.add(t(A), t(B), out=tgrad.empty(2, 3, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"^sum\(\): functions with out="):
        tgrad.sum(a, 0, out=tgrad.empty(3))
    # computed in an integer out's dtype: still a differentiable op (PyTorch's error); it
    # had been written into out
    for name in ("sum", "prod", "cumsum", "cumprod", "nansum"):
        with pytest.raises(RuntimeError, match=rf"^{name}\(\): functions with out="):
            getattr(tgrad, name)(a, 0, out=tgrad.empty(0, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match=r"^cat\(\): functions with out="):
        tgrad.cat([t(A), a], out=tgrad.empty(4, 3))
    with tgrad.no_grad():
        out = tgrad.add(a, a, out=tgrad.empty(2, 3))
    assert not out.requires_grad
    np.testing.assert_allclose(out.numpy(), 2 * A)


def test_reductions():
    out = tgrad.empty(0)
    tgrad.sum(t(A), 1, out=out)
    np.testing.assert_allclose(out.numpy(), A.sum(1))
    tgrad.mean(t(A), 0, keepdim=True, out=out)
    np.testing.assert_allclose(out.numpy(), A.mean(0, keepdims=True))
    tgrad.prod(t(A + 1), 1, out=out)
    np.testing.assert_allclose(out.numpy(), (A + 1).prod(1))
    tgrad.cumsum(t(A), 1, out=out)
    np.testing.assert_allclose(out.numpy(), A.cumsum(1))
    outi = tgrad.empty(0, dtype=tgrad.int32)  # long result into int: same category
    tgrad.sum(t([[1, 2], [3, 4]]), 0, out=outi)
    assert outi.dtype is tgrad.int32
    np.testing.assert_array_equal(outi.numpy(), [4, 6])


def test_sum_prod_cumsum_cumprod_compute_in_outs_dtype():
    # PyTorch's sum/prod/cumsum/cumprod/nansum take out's dtype as their dtype=: the input is
    # cast first, so a float input goes into an integer out (no "can't be cast" error)
    x = t([[0.6, 1.7, 2.5]])
    expect = {"sum": [3], "prod": [0], "cumsum": [[0, 1, 3]], "cumprod": [[0, 0, 0]],
              "nansum": [3]}  # from the truncated values [0, 1, 2]
    for name, ref in expect.items():
        out = tgrad.empty(0, dtype=tgrad.int64)
        res = getattr(tgrad, name)(x, 1, out=out)
        assert res is out and out.dtype is tgrad.int64
        np.testing.assert_array_equal(out.numpy(), ref)
    out = tgrad.empty(0, dtype=tgrad.int32)  # bool input, int32 out: counts
    tgrad.sum(t([[True, True, False]]), 1, out=out)
    np.testing.assert_array_equal(out.numpy(), [2])
    out = tgrad.empty(0)  # float64 input summed in float32
    tgrad.sum(t([[0.1, 0.2]]), 1, out=out)
    assert out.dtype is tgrad.float32
    np.testing.assert_array_equal(out.numpy(), np.array([0.1, 0.2], np.float32).sum(keepdims=True))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got "
                                           "float instead"):
        tgrad.sum(x, 1, dtype=tgrad.float64, out=tgrad.empty(0))


@pytest.mark.parametrize("name", ["mean", "nanmean"])
def test_mean_computes_in_a_floating_outs_dtype(name):
    # PyTorch's mean/nanmean out kernels: a float16 input averaged into a float64 out is
    # averaged in float64 (the float16 sum would round 1001.4 to 1001.5 first); an integer
    # input still has no dtype to infer, an integer out is the cast error, and a dtype= other
    # than out's the exact-dtype error
    vals = [0.1, 0.2, 0.3, 1000.7, 0.1]
    out = tgrad.empty((), dtype=tgrad.float64)
    res = getattr(tgrad, name)(tgrad.tensor(vals, dtype=tgrad.float16), 0, out=out)
    assert res is out and out.dtype is tgrad.float64
    assert out.item() == np.array(vals, np.float16).astype(np.float64).mean()
    with pytest.raises(RuntimeError, match="could not infer output dtype" if name == "mean"
                       else "expected input to have floating point"):
        getattr(tgrad, name)(t([1, 2]), 0, out=tgrad.empty((), dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        getattr(tgrad, name)(t([1.0, 2.0]), 0, out=tgrad.empty((), dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got "
                                           "float instead"):
        getattr(tgrad, name)(t([1.0, 2.0]), 0, dtype=tgrad.float64, out=tgrad.empty(()))


def test_multi_output_out_tuple():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], dtype=np.float32)
    v, i = tgrad.empty(0), tgrad.empty(0, dtype=tgrad.int64)
    r = tgrad.max(t(x), 1, out=(v, i))
    assert r[0] is v and r[1] is i and r.values is v and r.indices is i
    np.testing.assert_array_equal(v.numpy(), x.max(1))
    np.testing.assert_array_equal(i.numpy(), x.argmax(1))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int, but "
                                           "got float instead"):
        tgrad.max(t(x), 1, out=(tgrad.empty(0), tgrad.empty(0)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        tgrad.sort(t(x, dtype=tgrad.float32), 1,
                   out=(tgrad.empty(0, dtype=tgrad.float64), tgrad.empty(0, dtype=tgrad.int64)))


def test_matmul_family_and_cat_stack():
    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = tgrad.empty(1, dtype=tgrad.float64)  # (mm's out wants the exact dtype)
    with pytest.warns(UserWarning):
        tgrad.matmul(t(x), t(y), out=out)
    np.testing.assert_allclose(out.numpy(), x @ y)
    tgrad.mm(t(x), t(y), out=out)
    np.testing.assert_allclose(out.numpy(), x @ y)
    out = tgrad.empty(0)
    tgrad.cat([t(x), t(x)], 1, out=out)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([x, x], 1))
    tgrad.stack([t(x), t(x)], out=out)
    np.testing.assert_array_equal(out.numpy(), np.stack([x, x]))


def test_creation_takes_outs_dtype():
    out = tgrad.empty(1, dtype=tgrad.int64)
    tgrad.zeros(2, 3, out=out)
    assert out.dtype is tgrad.int64 and out.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))
    outd = tgrad.empty(0, dtype=tgrad.float64)
    tgrad.arange(5, out=outd)
    assert outd.dtype is tgrad.float64
    np.testing.assert_array_equal(outd.numpy(), np.arange(5.0))
    tgrad.full((2,), 7.0, out=outd)
    np.testing.assert_array_equal(outd.numpy(), [7.0, 7.0])
    with pytest.raises(RuntimeError, match=r"dtype Long does not match dtype of out "
                                           r"parameter \(Float\)"):
        tgrad.zeros(2, out=tgrad.empty(1), dtype=tgrad.int64)


def test_out_aliasing_an_input():
    x = tgrad.ones(3)
    tgrad.add(x, x, out=x)  # the same memory: allowed
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0, 2.0])
    y = tgrad.ones(3)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                                           "written-to tensor refer to a single memory "
                                           "location"):
        tgrad.mul(y[:2], 2, out=y[1:])


def test_out_writes_through_a_view_and_bumps_the_shared_version():
    base = tgrad.zeros(2, 3)
    row = base[1]
    v0 = base._version
    tgrad.add(t(A[0]), 1.0, out=row)
    np.testing.assert_array_equal(base.numpy(), np.stack([np.zeros(3), A[0] + 1]))
    assert base._version > v0


def test_bad_out_argument():
    with pytest.raises(TypeError, match=r"add\(\): argument 'out' must be Tensor, not int"):
        tgrad.add(t(A), 1, out=3)


def test_signature_lists_out():
    import inspect
    assert inspect.signature(tgrad.sum).parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "out" in inspect.signature(tgrad.zeros).parameters


def test_non_differentiable_results_take_inputs_requiring_grad():
    # comparisons, argmax, all, searchsorted, ... give bool / integer results: PyTorch
    # writes them even when an input requires grad (only differentiable ones raise)
    a = t(A, requires_grad=True)
    mask = tgrad.empty(0, dtype=tgrad.bool)
    assert tgrad.gt(a, 2.5, out=mask) is mask
    np.testing.assert_array_equal(mask.numpy(), A > 2.5)
    idx = tgrad.empty(0, dtype=tgrad.int64)
    tgrad.argmax(a, 1, out=idx)
    np.testing.assert_array_equal(idx.numpy(), [2, 2])
    tgrad.searchsorted(t([0.5, 3.5], requires_grad=True), a, out=idx)
    np.testing.assert_array_equal(idx.numpy(), np.searchsorted([0.5, 3.5], A))
    with pytest.raises(RuntimeError, match=r"^max\(\): functions with out=\.\.\. arguments "
                       r"don't support automatic differentiation"):
        tgrad.max(a, 1, out=(tgrad.empty(0, dtype=tgrad.float64), idx))  # values: float


def test_exact_dtype_functions():
    # PyTorch's mm / argmax / gather / softmax / ... out kernels want the result's dtype
    x = t(A)
    with pytest.raises(RuntimeError, match=r"^Expected out tensor to have dtype double, but "
                       r"got float instead$"):
        tgrad.mm(x, x.T, out=tgrad.empty(0))
    with pytest.raises(RuntimeError, match="dtype long int, but got int instead"):
        tgrad.argmax(x, out=tgrad.empty(0, dtype=tgrad.int32))
    with pytest.raises(RuntimeError, match="dtype double, but got float instead"):
        tgrad.softmax(x, 1, out=tgrad.empty(0))
    out = tgrad.empty(0, dtype=tgrad.float64)
    tgrad.gather(x, 1, t(np.array([[2, 0], [1, 1]])), out=out)
    np.testing.assert_array_equal(out.numpy(), [[2.0, 0.0], [4.0, 4.0]])


def test_out_on_more_torch_functions():
    # torch.softmax / take / isin / clamp_min / diff / index_add / scatter_add / inverse /
    # cholesky / qr / svd / slogdet / lu_unpack / ... take out= (hand / NumPy values)
    x = t(A)
    out = tgrad.empty(0, dtype=tgrad.float64)
    assert tgrad.softmax(x, 1, out=out) is out
    e = np.exp(A - A.max(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    tgrad.log_softmax(x, 1, out=out)
    np.testing.assert_allclose(out.numpy(), np.log(e / e.sum(1, keepdims=True)), rtol=1e-12)
    tgrad.take(x, t(np.array([5, 0])), out=out)
    np.testing.assert_array_equal(out.numpy(), [5.0, 0.0])
    tgrad.clamp_min(x, 2.0, out=out)
    np.testing.assert_array_equal(out.numpy(), np.maximum(A, 2.0))
    tgrad.diff(x, dim=1, out=out)
    np.testing.assert_array_equal(out.numpy(), np.diff(A, axis=1))
    tgrad.index_add(x, 1, t(np.array([0, 0])), t(np.ones((2, 2))), alpha=3, out=out)
    np.testing.assert_array_equal(out.numpy(), A + [[6, 0, 0], [6, 0, 0]])
    mask = tgrad.empty(0, dtype=tgrad.bool)
    tgrad.isin(x, t([1.0, 4.0]), out=mask)
    np.testing.assert_array_equal(mask.numpy(), np.isin(A, [1.0, 4.0]))
    m = np.array([[4.0, 2.0], [2.0, 3.0]])  # SPD: inverse [[3, -2], [-2, 4]] / 8
    out = tgrad.empty(5, dtype=tgrad.float64)
    with pytest.warns(UserWarning, match=r"had shape \[5\], which does not match the required "
                      r"output shape \[2, 2\]"):
        assert tgrad.inverse(t(m), out=out) is out
    np.testing.assert_allclose(out.numpy(), np.array([[3, -2], [-2, 4]]) / 8, rtol=1e-12)
    tgrad.cholesky(t(m), out=out)
    np.testing.assert_allclose(out.numpy(), [[2, 0], [1, np.sqrt(2)]], rtol=1e-12)
    sign, logabs = tgrad.empty(0, dtype=tgrad.float64), tgrad.empty(0, dtype=tgrad.float64)
    r = tgrad.slogdet(t(m), out=(sign, logabs))
    assert r[0] is sign and r[1] is logabs and r.logabsdet is logabs
    assert sign.item() == 1.0 and abs(logabs.item() - np.log(8.0)) < 1e-12
    q, rr = tgrad.empty(0, dtype=tgrad.float64), tgrad.empty(0, dtype=tgrad.float64)
    tgrad.qr(t(m), out=(q, rr))
    np.testing.assert_allclose((q @ rr).numpy(), m, rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"^inverse\(\): functions with out=\.\.\."):
        tgrad.inverse(t(m, requires_grad=True), out=out)
    with tgrad.no_grad():
        tgrad.inverse(t(m, requires_grad=True), out=out)
    np.testing.assert_allclose(out.numpy(), np.array([[3, -2], [-2, 4]]) / 8, rtol=1e-12)


def test_unary_and_index_ops_want_their_own_dtype_with_pytorchs_texts():
    x = t(np.array([0.5, -1.5, 2.0]))  # float64
    f32 = tgrad.empty(0)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        tgrad.abs(x, out=f32)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Long"):
        tgrad.neg(t(np.array([1, 2])), out=tgrad.empty(0, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        tgrad.clamp_min(x, 0.0, out=f32)
    with pytest.raises(RuntimeError, match="signbit does not support non-boolean outputs"):
        tgrad.signbit(x, out=f32)
    with pytest.raises(RuntimeError, match="all only supports bool tensor for result, got: "
                                           "Float"):
        tgrad.all(x, out=f32)
    with pytest.raises(RuntimeError, match="nonzero: Expected out tensor to have scalar type "
                                           "Long"):
        tgrad.nonzero(x, out=f32)
    with pytest.raises(RuntimeError, match=r"take\(\): self and out expected to have the same "
                                           r"dtype, but got self.dtype = Double and out.dtype "
                                           r"= Float"):
        tgrad.take(x, t(np.array([0])), out=f32)
    with pytest.raises(RuntimeError, match="tensordot: Expected the output tensor to have "
                                           "dtype Double"):
        tgrad.inner(x, x, out=f32)
    with pytest.raises(RuntimeError, match="output tensor's dtype is wrong"):
        tgrad.searchsorted(t(np.array([0.0, 1.0])), x, out=f32)
    with pytest.raises(RuntimeError, match="nan_to_num: dtype of out: Float should be same "
                                           "as input: Double"):
        tgrad.nan_to_num(x, out=f32)
    assert f32.shape == (0,)  # untouched by the refused writes
    # still allowed: sin(int) into float, abs(complex) into a real out, all(uint8) into bool
    r = tgrad.sin(t(np.array([1, 2])), out=tgrad.empty(0, dtype=tgrad.float64))
    np.testing.assert_allclose(r.numpy(), np.sin([1.0, 2.0]), rtol=1e-6)  # (in float32)
    r = tgrad.abs(t(np.array([3 + 4j])), out=tgrad.empty(0, dtype=tgrad.float32))
    np.testing.assert_array_equal(r.numpy(), [5.0])
    r = tgrad.all(t(np.array([1, 2], dtype=np.uint8)), out=tgrad.empty(0, dtype=tgrad.bool))
    assert r.item() is True
    r = tgrad.abs(x, out=tgrad.empty(0, dtype=tgrad.float64))
    np.testing.assert_array_equal(r.numpy(), [0.5, 1.5, 2.0])


def test_composite_out_functions_record_the_copy():
    # PyTorch's composite inner / quantile / linalg.cond write a result requiring grad into
    # out (a CopyBackwards) instead of raising the out= autograd error
    a = t(np.array([1.0, 2.0, 4.0]), requires_grad=True)
    out = tgrad.empty(0, dtype=tgrad.float64)
    assert tgrad.inner(a, a, out=out) is out
    assert out.requires_grad and out.item() == 21.0
    (3 * out).backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 12.0, 24.0])  # d(3 a.a) = 6 a
    a.grad = None
    out = tgrad.empty(0, dtype=tgrad.float64)
    tgrad.quantile(a, 0.5, out=out)
    out.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 1.0, 0.0])  # the median picks a[1]
    with pytest.raises(RuntimeError, match=r"inner\(\): functions with out=... arguments"):
        tgrad.inner(a, a, out=tgrad.empty(0, dtype=tgrad.float64, requires_grad=True))
    # aliases name the canonical op, histc (not differentiable) writes
    with pytest.raises(RuntimeError, match=r"^neg\(\): functions with out="):
        tgrad.negative(a, out=tgrad.empty(0, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match=r"^abs\(\): functions with out="):
        tgrad.absolute(a, out=tgrad.empty(0, dtype=tgrad.float64))
    h = tgrad.histc(a, 3, min=1, max=4, out=tgrad.empty(0, dtype=tgrad.float64))
    np.testing.assert_array_equal(h.numpy(), [1.0, 1.0, 1.0])  # bins [1,2) [2,3) [3,4]
    assert not h.requires_grad


def test_argsort_out_needs_stable_and_linalg_outs_are_column_major():
    x = t(np.array([[3.0, 1.0, 2.0]]))
    with pytest.raises(TypeError, match=r"argsort\(\) received an invalid combination"):
        tgrad.argsort(x, out=tgrad.empty(0, dtype=tgrad.int64))
    r = tgrad.argsort(x, stable=True, out=tgrad.empty(0, dtype=tgrad.int64))
    np.testing.assert_array_equal(r.numpy(), [[1, 2, 0]])
    m = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 4.0]])
    out = tgrad.linalg.inv(t(m), out=tgrad.empty(0, dtype=tgrad.float64))
    assert out.stride() == (1, 3)  # LAPACK's layout, as PyTorch's resized out
    np.testing.assert_allclose(out.numpy() @ m, np.eye(3), atol=1e-14)
    batch = tgrad.linalg.inv(t(np.stack([m, 2 * m])), out=tgrad.empty(0, dtype=tgrad.float64))
    assert batch.stride() == (9, 1, 3)
    np.testing.assert_allclose(batch.numpy()[1] @ (2 * m), np.eye(3), atol=1e-14)
    kept = tgrad.empty(3, 3, dtype=tgrad.float64)  # an out of the right shape keeps its own
    assert tgrad.linalg.inv(t(m), out=kept).stride() == (3, 1)
    nz = tgrad.nonzero(t(np.array([[0, 1], [2, 0]])), out=tgrad.empty(0, dtype=tgrad.int64))
    assert nz.stride() == (1, 2)
    np.testing.assert_array_equal(nz.numpy(), [[0, 1], [1, 0]])


_OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single"


def test_out_overlap_follows_pytorchs_overlap_status():
    """PyTorch's get_overlap_status: the same memory with other strides (out=x, input x.t())
    is a partial overlap; cat / gather / index ops / cross refuse even out=input; an out
    repeating an element (stride 0) is refused; mm / reductions / fft check nothing (tgrad
    reads the input whole before writing)."""
    x = t(A[:, :2].reshape(2, 2).copy())  # [[0, 1], [3, 4]]
    for call in (lambda: tgrad.add(x.t(), 1, out=x), lambda: tgrad.neg(x.t(), out=x),
                 lambda: tgrad.cumsum(x.t(), 0, out=x),
                 lambda: tgrad.cat([x, x], out=x), lambda: tgrad.index_select(
                     x, 0, tgrad.tensor([1, 0]), out=x),
                 lambda: tgrad.gather(x, 1, tgrad.tensor([[1, 0], [1, 0]]), out=x)):
        with pytest.raises(RuntimeError, match=_OVERLAP):
            call()
    np.testing.assert_array_equal(x.numpy(), [[0.0, 1.0], [3.0, 4.0]])  # nothing written
    v = t([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        tgrad.cross(v, t([[0.0, 1.0, 0.0]] * 2), dim=1, out=v)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        tgrad.add(t([1.0, 2.0]), 1, out=tgrad.zeros(1).expand(2))
    tgrad.sub(x, x.t().t(), out=x)  # the same memory and strides: fine
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 2)))
    m = t([[1.0, 2.0], [3.0, 4.0]])
    tgrad.mm(m.t(), t([[1.0, 0.0], [1.0, 1.0]]), out=m)  # m^T [[1, 0], [1, 1]]
    np.testing.assert_array_equal(m.numpy(), [[4.0, 3.0], [6.0, 4.0]])
    s = t([[1.0, 2.0], [3.0, 4.0]])
    tgrad.sum(s, 0, out=s[0])  # column sums of the original [[1, 2], [3, 4]]
    np.testing.assert_array_equal(s.numpy(), [[4.0, 6.0], [3.0, 4.0]])


def test_out_dtype_checked_before_the_op():
    """PyTorch checks these outs first: abs / ceil / frac of a bool or int input into an out
    of another dtype is its 'Found dtype ... but expected ...', not the op's own error."""
    b, i = t([True, False]), t([1, 2])
    for fn, x, o in ((tgrad.abs, b, tgrad.float32), (tgrad.ceil, b, tgrad.int64),
                     (tgrad.frac, i, tgrad.float64), (tgrad.bitwise_not, t([1.5]),
                                                      tgrad.int64)):
        want = {tgrad.float32: "Float", tgrad.int64: "Long", tgrad.float64: "Double"}[o]
        have = {tgrad.bool: "Bool", tgrad.int64: "Long", tgrad.float32: "Float"}[x.dtype]
        with pytest.raises(RuntimeError, match=f"Found dtype {want} but expected {have}"):
            fn(x, out=tgrad.empty(x.shape, dtype=o))
    np.testing.assert_array_equal(tgrad.abs(t([-2, 3]), out=tgrad.empty(2, dtype=tgrad.int64))
                                  .numpy(), [2, 3])


def test_out_castability_texts():
    """PyTorch's own texts for a floating result into an integer out."""
    spd = t([[4.0, 1.0], [1.0, 3.0]], dtype=tgrad.float64)
    long_out = tgrad.empty(2, 2, dtype=tgrad.int64)
    for fn, args in ((tgrad.cholesky, (spd,)), (tgrad.cholesky_inverse, (spd,)),
                     (tgrad.cholesky_solve, (spd, spd))):
        with pytest.raises(RuntimeError, match=f"{fn.__name__}: Expected result to be safely "
                                               f"castable from Double dtype, but got result "
                                               f"with dtype Long"):
            fn(*args, out=long_out)
    for fn in (tgrad.orgqr, tgrad.linalg.householder_product):
        with pytest.raises(RuntimeError, match="householder_product: Expected result to be "
                                               "safely castable from Double"):
            fn(spd, t([1.0], dtype=tgrad.float64), out=long_out)
    with pytest.raises(RuntimeError, match="linalg.cond: Expected result to be safely"):
        tgrad.linalg.cond(spd, out=tgrad.empty((), dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="logsumexp\\(\\): Expected floating point type for "
                                           "result tensor, but got: Long"):
        tgrad.logsumexp(spd, 0, out=tgrad.empty(2, dtype=tgrad.int64))
    for fn in (tgrad.cat, tgrad.stack, tgrad.hstack):
        with pytest.raises(TypeError, match="torch.cat\\(\\): input types can't be cast to the "
                                            "desired output type Long"):
            fn([spd, spd], out=tgrad.empty(0, dtype=tgrad.int64))
    out = tgrad.empty(4, 2, dtype=tgrad.float32)  # a lower float precision is fine
    tgrad.cat([spd, spd], out=out)
    np.testing.assert_array_equal(out.numpy(), [[4, 1], [1, 3], [4, 1], [1, 3]])
    # lse of [4, 1] and [1, 3] by hand
    lse = tgrad.logsumexp(spd, 0, out=tgrad.empty(2, dtype=tgrad.float32))
    np.testing.assert_allclose(lse.numpy(), [np.log(np.exp(4) + np.exp(1)),
                                             np.log(np.exp(1) + np.exp(3))], rtol=1e-6)
    for fn in (tgrad.median, tgrad.nanmedian):
        with pytest.raises(TypeError, match=f'{fn.__name__}\\(\\) missing 1 required '
                                            f'positional arguments: "dim"'):
            fn(spd, out=tgrad.empty(()))


def test_ormqr_input_checks():
    """PyTorch's ormqr checks: tau holds min(m, n) reflectors, other's m-side matches."""
    a = tgrad.eye(3, dtype=tgrad.float64)
    c = tgrad.ones(3, 2, dtype=tgrad.float64)
    tau2 = tgrad.zeros(2, dtype=tgrad.float64)
    with pytest.raises(RuntimeError, match=r"torch.ormqr: tau.shape\[-1\] must be equal to "
                                           r"min\(other.shape\[-2\], input.shape\[-1\]\)"):
        tgrad.ormqr(a, tau2, c)
    with pytest.raises(RuntimeError, match=r"torch.ormqr: other.shape\[-1\] must be equal to "
                                           r"input.shape\[-2\]"):
        tgrad.ormqr(a, tgrad.zeros(3, dtype=tgrad.float64), c, left=False)
    with pytest.raises(RuntimeError, match="torch.ormqr: input must have at least 2 "
                                           "dimensions"):
        tgrad.ormqr(tgrad.ones(3, dtype=tgrad.float64), tau2, c)
    with pytest.raises(RuntimeError, match="Expected input and tau to have the same dtype"):
        tgrad.ormqr(a, tgrad.zeros(3), c)
    with pytest.raises(RuntimeError, match="householder_product: Expected tau to have one "
                                           "dimension less than input"):
        tgrad.orgqr(a.expand(2, 3, 3), tgrad.zeros(2, dtype=tgrad.float64))
    # a 3 x 2 input with its 2 reflectors, tau 0: Q is the identity, Q C = C
    got = tgrad.ormqr(tgrad.ones(3, 2, dtype=tgrad.float64), tau2, c)
    np.testing.assert_array_equal(got.numpy(), np.ones((3, 2)))


def test_a_binary_op_does_not_resize_an_input_given_as_out():
    # PyTorch's TensorIterator: out=b with b an input of a smaller, broadcast shape raises
    # (tgrad resized b to the broadcast shape, overwriting an input); a reduction into its
    # input still resizes (PyTorch warns)
    a, b = tgrad.ones(2, 3), tgrad.tensor([0.5, 1.0, 2.0])
    for op in (tgrad.add, tgrad.mul, tgrad.eq, tgrad.pow, tgrad.maximum):
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                               r"broadcast shape \[2, 3\]"):
            op(b, a, out=b)
        assert b.tolist() == [0.5, 1.0, 2.0]
    assert tgrad.add(a, a, out=a).tolist() == [[2.0] * 3] * 2
    x = tgrad.arange(4.0)
    with pytest.warns(UserWarning, match="was resized"):
        tgrad.sum(x, 0, keepdim=True, out=x)
    assert x.tolist() == [6.0]
