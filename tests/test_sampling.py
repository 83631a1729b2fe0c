"""tgrad/ops/sampling.py: in-place random fills, normal, bernoulli and multinomial. Moments
are checked against the distributions' closed forms with tolerances of about 6 standard
errors (seeded, so the draws are fixed); supports and errors exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad

N = 200_000


def _fresh(dtype=tgrad.float64, n=N):
    tgrad.manual_seed(1234)
    return tgrad.empty(n, dtype=dtype)


def _moments(t):
    x = t.double().numpy()
    return x.mean(), x.std()


def test_uniform_normal_and_log_normal_moments():
    x = _fresh()
    m, s = _moments(x.uniform_(-2.0, 3.0))
    assert abs(m - 0.5) < 6 * 5 / math.sqrt(12 * N) and abs(s - 5 / math.sqrt(12)) < 0.01
    assert x.min().item() >= -2.0 and x.max().item() < 3.0
    m, s = _moments(x.normal_(1.0, 2.0))
    assert abs(m - 1.0) < 6 * 2 / math.sqrt(N) and abs(s - 2.0) < 0.02
    m, _ = _moments(x.log_normal_(0.0, 0.5))
    assert abs(m - math.exp(0.125)) < 0.01  # E = exp(mu + sigma^2 / 2)


def test_exponential_geometric_cauchy_and_random_():
    x = _fresh()
    m, s = _moments(x.exponential_(2.0))
    assert abs(m - 0.5) < 6 * 0.5 / math.sqrt(N) and x.min().item() >= 0.0
    m, _ = _moments(x.geometric_(0.25))  # support 1, 2, ...; mean 1 / p
    assert abs(m - 4.0) < 0.05 and x.min().item() == 1.0
    assert np.array_equal(np.unique(x.numpy()), np.unique(np.round(x.numpy())))
    med = np.median(x.cauchy_(3.0, 2.0).numpy())
    assert abs(med - 3.0) < 0.05  # the median is the location
    vals = x.random_(2, 7).numpy()
    assert set(np.unique(vals)) == {2.0, 3.0, 4.0, 5.0, 6.0}
    counts = np.bincount(vals.astype(np.int64))[2:]
    assert np.abs(counts / N - 0.2).max() < 0.01
    i = tgrad.empty(1000, dtype=tgrad.int64).random_(5)
    assert i.min().item() >= 0 and i.max().item() <= 4


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_fills_stay_in_range(dtype):
    x = _fresh(getattr(tgrad, dtype))
    assert x.uniform_().max().item() < 1.0
    assert not x.exponential_().isinf().any().item()


def test_bernoulli_forms():
    x = _fresh()
    assert abs(x.bernoulli_(0.3).mean().item() - 0.3) < 6 * math.sqrt(0.21 / N)
    assert set(np.unique(x.numpy())) == {0.0, 1.0}
    p = tgrad.tensor([0.0, 1.0, 0.5], dtype=tgrad.float64).expand(N // 3, 3)
    draws = tgrad.bernoulli(p).numpy()
    assert draws[:, 0].max() == 0.0 and draws[:, 1].min() == 1.0
    assert abs(draws[:, 2].mean() - 0.5) < 6 * 0.5 / math.sqrt(N // 3)
    with pytest.raises(RuntimeError, match="probabilities in"):
        tgrad.bernoulli(tgrad.tensor([1.5]))
    with pytest.raises(RuntimeError, match=r"p to be in \[0, 1\]"):
        x.bernoulli_(2.0)


def test_normal_overloads():
    tgrad.manual_seed(0)
    mean = tgrad.tensor([0.0, 10.0], dtype=tgrad.float64).expand(N // 2, 2)
    out = tgrad.normal(mean, 2.0).numpy()
    assert out.shape == (N // 2, 2)
    assert np.abs(out.mean(0) - [0.0, 10.0]).max() < 6 * 2 / math.sqrt(N // 2)
    assert tgrad.normal(tgrad.zeros(2, 1), tgrad.ones(3)).shape == (2, 3)
    s = tgrad.normal(2.0, 3.0, size=(N,)).numpy()
    assert abs(s.mean() - 2.0) < 6 * 3 / math.sqrt(N) and abs(s.std() - 3.0) < 0.03
    with pytest.raises(RuntimeError, match="std >= 0"):
        tgrad.normal(tgrad.zeros(2), -tgrad.ones(2))


def test_multinomial_with_and_without_replacement():
    tgrad.manual_seed(0)
    w = tgrad.tensor([0.1, 0.0, 0.6, 0.3], dtype=tgrad.float64)
    s = tgrad.multinomial(w, N, replacement=True).numpy()
    freq = np.bincount(s, minlength=4) / N
    assert freq[1] == 0.0 and np.abs(freq - [0.1, 0.0, 0.6, 0.3]).max() < 0.01
    rows = tgrad.multinomial(w.expand(3000, 4), 3)  # without replacement: distinct
    r = rows.numpy()
    assert r.shape == (3000, 3) and all(len(set(row)) == 3 for row in r)
    assert 1 not in r  # a zero weight is never drawn
    first = np.bincount(r[:, 0], minlength=4) / 3000  # the first draw follows w
    assert np.abs(first - [0.1, 0.0, 0.6, 0.3]).max() < 0.04
    with pytest.raises(RuntimeError, match="not enough"):
        tgrad.multinomial(w, 4)
    with pytest.raises(RuntimeError, match="element < 0"):
        tgrad.multinomial(tgrad.tensor([0.5, -0.1]), 1)


def test_in_place_fills_follow_autograd_rules():
    p = tgrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        p.uniform_()
    with tgrad.no_grad():
        p.normal_()
    assert p.requires_grad
    x = tgrad.ones(3, requires_grad=True)
    y = x * 2.0
    y.uniform_()  # the filled values do not depend on the old ones: zero gradient
    (y * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented "
                                                  "for 'Long'"):  # PyTorch's error
        tgrad.zeros(2, dtype=tgrad.int64).uniform_()


def test_seeded_fills_are_reproducible():
    tgrad.manual_seed(7)
    a = tgrad.empty(5).normal_().tolist()
    tgrad.manual_seed(7)
    assert tgrad.empty(5).normal_().tolist() == a


def test_sampling_argument_edges():
    with pytest.raises(RuntimeError, match="from=0 >= to=0"):
        tgrad.zeros(3).random_(0)  # random_(to=0), as PyTorch reads it
    assert tgrad.multinomial(tgrad.ones(0, 4), 2).shape == (0, 2)
    with pytest.raises(RuntimeError, match="std >= 0"):
        tgrad.normal(tgrad.zeros(3), -1.0)
    with pytest.raises(OverflowError, match="int too big to convert"):  # PyTorch's
        tgrad.full((1,), 10**400, dtype=tgrad.float32)
    with pytest.raises(RuntimeError, match="without overflow"):
        tgrad.tensor([2**64])


def test_random_bounds_must_fit_the_dtype():
    # PyTorch's check_random_bounds: from and to - 1 must lie in the dtype's range (no
    # wrapping of a negative into uint8); bool is [0, 1]; complex is refused
    for call, text in [
            (lambda: tgrad.zeros(3, dtype=tgrad.uint8).random_(-3, 7),
             "random_: from is out of bounds for unsigned char"),
            (lambda: tgrad.randint(-5, 5, (3,), dtype=tgrad.uint8),
             "randint: from is out of bounds for unsigned char"),
            (lambda: tgrad.zeros(3, dtype=tgrad.int8).random_(0, 256),
             "random_: to - 1 is out of bounds for signed char"),
            (lambda: tgrad.zeros(3, dtype=tgrad.int16).random_(0, 2**53),
             "to - 1 is out of bounds for short int"),
            (lambda: tgrad.zeros(3, dtype=tgrad.bool).random_(3),
             "to - 1 is out of bounds for bool"),
            (lambda: tgrad.zeros(3, dtype=tgrad.float16).random_(0, 2**24),
             "to - 1 is out of bounds for c10::Half"),
            (lambda: tgrad.randint(0, 3, (2,), dtype=tgrad.complex64),
             "handles only integral, floating-point and boolean types")]:
        with pytest.raises(RuntimeError, match=text):
            call()
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        tgrad.randint(0, 2**63, (2,))
    tgrad.manual_seed(3)
    b = tgrad.randint(0, 2, (400,), dtype=tgrad.bool)  # bool is allowed, as in PyTorch
    assert b.dtype is tgrad.bool and 100 < int(b.sum()) < 300
    assert set(tgrad.zeros(400, dtype=tgrad.bool).random_().int().tolist()) == {0, 1}


def test_random_from_none_and_full_64_bit_ranges():
    tgrad.manual_seed(5)
    # random_(from, None): [from, max] (int8: 133 values; each end missed with prob ~e^-30)
    v = tgrad.zeros(4000, dtype=tgrad.int8).random_(-5, None).numpy()
    assert v.min() == -5 and v.max() == 127
    assert tgrad.zeros(4000, dtype=tgrad.float16).random_(2000, None).max().item() == 2048
    # 64-bit ranges draw every bit: about half the values odd (not multiples of 2^11, as
    # floor(u * 2^63) of a 53-bit u would be), and about half negative over int64's range
    for x in (tgrad.zeros(4000, dtype=tgrad.int64).random_(),
              tgrad.zeros(4000, dtype=tgrad.int64).random_(-2**63, 2**63 - 1),
              tgrad.randint(-2**63, 2**63 - 1, (4000,))):
        a = x.numpy()
        assert 0.45 < (a % 2).mean() < 0.55
    a = tgrad.randint(-2**63, 2**63 - 1, (4000,)).numpy()
    assert 0.45 < (a < 0).mean() < 0.55
    assert tgrad.zeros(4000, dtype=tgrad.int64).random_().min().item() >= 0
    hi = 3 * 2**40 + 5  # a span past 2^32 that is no multiple of it
    a = tgrad.randint(7, hi, (4000,)).numpy().astype(np.float64)
    assert a.min() >= 7 and a.max() < hi and abs(a.mean() / hi - 0.5) < 0.03


def test_fill_argument_checks_follow_pytorch():
    # NaN parameters and non-finite uniform_ bounds raise (they gave NaN / inf silently)
    nan, inf = float("nan"), float("inf")
    for call, text in [(lambda: tgrad.zeros(3).uniform_(0.0, inf), "to is out of bounds for float"),
                       (lambda: tgrad.zeros(3).uniform_(nan, 1.0), "from is out of bounds"),
                       (lambda: tgrad.zeros(3, dtype=tgrad.float16).uniform_(0.0, 7e4),
                        "to is out of bounds for c10::Half"),
                       (lambda: tgrad.zeros(3).uniform_(-3e38, 3e38), "to-from <= "),
                       (lambda: tgrad.zeros(3).normal_(0.0, nan), "std >= 0.0"),
                       (lambda: tgrad.zeros(3).log_normal_(0.0, nan), "std > 0.0"),
                       (lambda: tgrad.zeros(3).exponential_(nan), "lambda > 0.0"),
                       (lambda: tgrad.zeros(3).cauchy_(0.0, nan), "sigma > 0.0"),
                       (lambda: tgrad.normal(tgrad.zeros(2), tgrad.tensor([1.0, nan])),
                        "all elements of std >= 0.0"),
                       (lambda: tgrad.normal(0.0, nan, size=(2,)), "std >= 0.0"),
                       (lambda: tgrad.normal(tgrad.zeros(2), tgrad.ones(3)),
                        "normal: mean \\(2,\\) and std \\(3,\\) do not broadcast"),
                       (lambda: tgrad.zeros(3, dtype=tgrad.int32).exponential_(),
                        "Exponential distribution is a continuous probability distribution"),
                       (lambda: tgrad.zeros(3, dtype=tgrad.bool).cauchy_(), "specified bool")]:
        with pytest.raises(RuntimeError, match=text):
            call()
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                                                  "'Int'"):
        tgrad.zeros(3, dtype=tgrad.int32).normal_()
    with pytest.raises(NotImplementedError, match="\"geometric_cpu\" not implemented"):
        tgrad.zeros(3, dtype=tgrad.bool).geometric_(0.5)


def test_geometric_fills_integer_tensors_and_half_tails_are_not_cut():
    tgrad.manual_seed(11)
    g = tgrad.zeros(20000, dtype=tgrad.int32).geometric_(0.25)  # PyTorch takes int dtypes
    v = g.numpy()
    assert g.dtype is tgrad.int32 and v.min() == 1 and abs(v.mean() - 4.0) < 0.1
    # bfloat16 draws on float32's grid: P(X > 6) = e^-6 ~ 0.25% of 20000 draws exceed the
    # 5.5 that u on bfloat16's 2^-8 grid capped exponential_ at; no exact zeros (1/256 before)
    x = tgrad.zeros(20000, dtype=tgrad.bfloat16).exponential_().float().numpy()
    assert (x > 6.0).sum() > 10 and (x == 0).sum() == 0 and abs(x.mean() - 1.0) < 0.05


def test_rand_like_and_randn_like_take_a_generator():
    for like, draw in ((tgrad.rand_like, "random"), (tgrad.randn_like, "standard_normal")):
        g = tgrad.Generator().manual_seed(42)
        out = like(tgrad.zeros(2, 3, dtype=tgrad.float64), generator=g)
        ref = getattr(np.random.default_rng(42), draw)((2, 3))  # the CPU generator is PCG64
        np.testing.assert_array_equal(out.numpy(), ref)


def test_complex_uniform_and_normal_fill_both_parts():
    # PyTorch fills the real view: both parts uniform on [from, to) / N(mean, std^2 / 2),
    # independently (so E|x - mean (1 + i)|^2 = std^2)
    n = 40000
    tgrad.manual_seed(5)
    u = tgrad.zeros(n, dtype=tgrad.complex64).uniform_(2.0, 3.0).numpy()
    for part in (u.real, u.imag):
        assert 2.0 <= part.min() and part.max() < 3.0
        assert abs(part.mean() - 2.5) < 6 / math.sqrt(12 * n)
    assert abs(np.corrcoef(u.real, u.imag)[0, 1]) < 0.03
    z = tgrad.zeros(n, dtype=tgrad.complex128).normal_(1.0, 2.0).numpy()
    for part in (z.real, z.imag):  # variance std^2 / 2 = 2 each, mean 1 each
        assert abs(part.mean() - 1.0) < 6 * math.sqrt(2.0 / n) and abs(part.var() - 2.0) < 0.1
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.03
    t = tgrad.zeros(4, 3, dtype=tgrad.complex64).t().normal_()  # a non-contiguous view
    assert t.dtype is tgrad.complex64 and np.all(t.numpy() != 0)
    for call, kernel in [(lambda: tgrad.zeros(2, dtype=tgrad.complex64).bernoulli_(0.5),
                          "bernoulli_scalar_cpu_"),
                         (lambda: tgrad.zeros(2, dtype=tgrad.complex64).random_(),
                          "random_kernel_cpu"),
                         (lambda: tgrad.bernoulli(tgrad.zeros(2, dtype=tgrad.int64)),
                          "bernoulli_tensor_cpu_p_"),
                         (lambda: tgrad.zeros(2, dtype=tgrad.complex64).log_normal_(),
                          "log_normal_cpu")]:
        with pytest.raises(NotImplementedError, match=kernel):
            call()


def test_from_keyword_and_rand_size_and_dtype_errors():
    x = tgrad.zeros(500, dtype=tgrad.float64)
    v = x.uniform_(**{"from": 1.0, "to": 2.0}).numpy()
    assert 1.0 <= v.min() and v.max() < 2.0
    v = x.random_(**{"from": 1, "to": 5}).numpy()
    assert set(v.tolist()) == {1.0, 2.0, 3.0, 4.0}
    with pytest.raises(TypeError, match="random_\\(\\) received an invalid combination"):
        x.random_(**{"from": 1})  # PyTorch: from needs to
    with pytest.raises(TypeError, match="multiple values for argument 'from'"):
        x.uniform_(0.5, **{"from": 1.0})
    for fn in (tgrad.rand, tgrad.randn):
        with pytest.raises(TypeError, match="received an invalid combination of arguments"):
            fn()
        assert fn(()).shape == () and fn([]).shape == () and fn(size=()).shape == ()
    for fn in (tgrad.zeros, tgrad.ones, tgrad.empty):  # PyTorch's TypeError, not a 0-d
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "size"'):
            fn()
        assert fn(()).shape == () and fn(size=[]).shape == ()
    np.testing.assert_array_equal(tgrad.ones(()).numpy(), np.ones(()))
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented "
                                                  "for 'Long'"):
        tgrad.rand(3, dtype=tgrad.int64)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                                                  "'Bool'"):
        tgrad.randn_like(tgrad.zeros(2, dtype=tgrad.bool))


def test_bernoulli_normal_multinomial_out():
    tgrad.manual_seed(3)
    p = tgrad.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    for dt in (tgrad.float64, tgrad.int64, tgrad.bool):  # any real or bool out dtype
        out = tgrad.empty(5, dtype=dt)  # resized silently, as PyTorch's bernoulli_out
        assert tgrad.bernoulli(p, out=out) is out and out.dtype is dt
        np.testing.assert_array_equal(out.double().numpy(), p.double().numpy())
    with pytest.raises(TypeError, match="out= is not supported together with p"):
        tgrad.bernoulli(p, 0.5, out=tgrad.empty(2, 3))
    with pytest.raises(RuntimeError, match="bernoulli\\(\\): functions with out=.*"
                                           "requires grad"):
        tgrad.bernoulli(p.clone().requires_grad_(), out=tgrad.empty(2, 3))
    # tensor overloads draw in out's dtype: N(mean, std^2) per element
    mean = tgrad.tensor([[-5.0], [5.0]], dtype=tgrad.float32).expand(2, 4000)
    out = tgrad.empty(2, 4000, dtype=tgrad.float64)
    assert tgrad.normal(mean, 0.5, out=out) is out and out.dtype is tgrad.float64
    assert np.any(v64 := out.numpy()) and np.any(v64 != v64.astype(np.float32))  # float64 draws
    v = out.numpy()
    assert np.abs(v.mean(1) - [-5.0, 5.0]).max() < 0.05 and np.abs(v.std(1) - 0.5).max() < 0.03
    with pytest.warns(UserWarning, match="was resized"):
        tgrad.normal(tgrad.zeros(3), tgrad.ones(3), out=tgrad.empty(4))
    with pytest.raises(RuntimeError, match="normal\\(\\): functions with out="):
        tgrad.normal(tgrad.zeros(3, requires_grad=True), 1.0, out=tgrad.empty(3))
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        tgrad.normal(tgrad.zeros(3), 1.0, out=tgrad.empty(3, dtype=tgrad.int64))
    # number overload: out's dtype stands in for dtype=; requires_grad=True sets it on out
    out = tgrad.empty(7, dtype=tgrad.float64)
    r = tgrad.normal(3.0, 0.0, (2, 2), out=out, requires_grad=True)
    assert r is out and out.shape == (2, 2) and out.requires_grad
    np.testing.assert_array_equal(out.detach().numpy(), np.full((2, 2), 3.0))
    with pytest.raises(RuntimeError, match="dtype Float does not match dtype of out"):
        tgrad.normal(0.0, 1.0, (2,), dtype=tgrad.float32, out=tgrad.empty(2, dtype=tgrad.float64))
    # multinomial: int64 out only; the weights may require grad
    w = tgrad.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]], requires_grad=True)
    out = tgrad.empty(7, dtype=tgrad.int64)
    assert tgrad.multinomial(w, 2, replacement=True, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [[1, 1], [2, 2]])
    with pytest.raises(RuntimeError, match="multinomial expects Long tensor out, got: Int"):
        tgrad.multinomial(w, 2, out=tgrad.empty(2, 2, dtype=tgrad.int32))
    with pytest.raises(TypeError):  # the Tensor methods take no out=, as PyTorch's
        p.bernoulli(out=tgrad.empty(2, 3))


def test_integer_draws_into_a_float_dtype_stay_below_to():
    # PyTorch's update_to: to - 1 that rounds up to `to` in the dtype moves `to` down by the
    # dtype's spacing there (float16 spacing in [2^15, 2^16) is 32, bfloat16's in
    # [2^39, 2^40) is 2^32), so no drawn value equals `to` after the cast
    import warnings
    tgrad.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's precision warning past 2^digits)
        h = tgrad.zeros(50000, dtype=tgrad.float16).random_(0, 60000)
        assert float(h.max()) <= 60000 - 32
        b = tgrad.zeros(50000, dtype=tgrad.bfloat16).random_(0, 2 ** 40)
        assert float(b.max()) <= 2 ** 40 - 2 ** 32
        r = tgrad.randint(0, 60000, (50000,), dtype=tgrad.float16)
        assert float(r.max()) <= 60000 - 32 and float(r.min()) >= 0
    # exact ranges (every integer representable) are untouched
    x = tgrad.zeros(2000, dtype=tgrad.float32).random_(0, 100)
    assert float(x.max()) == 99.0 and float(x.min()) == 0.0


@pytest.mark.parametrize("dtype", [tgrad.float16, tgrad.bfloat16])
def test_half_uniform_is_even_over_the_half_grid_and_never_to(dtype):
    # PyTorch's half uniform_: each half value of [from, to) as likely as its width, never
    # `to`. u on the half's own grid put results halfway between half values: rounded to
    # even 3:1, and the top draw rounded up to `to` (0.4% of bfloat16 draws in [1, 2))
    tgrad.manual_seed(0)
    n = 400_000
    x = tgrad.empty(n, dtype=dtype).uniform_(1, 2)
    xf = x.float().numpy()
    assert xf.min() >= 1.0 and xf.max() < 2.0
    values, counts = np.unique(xf, return_counts=True)
    steps = 128 if dtype is tgrad.bfloat16 else 1024  # the half values in [1, 2)
    assert len(values) == steps
    expected = n / steps  # equal widths: equal counts (chi-square, steps - 1 dof)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < steps + 6 * math.sqrt(2 * steps)
    even = (x.view(tgrad.int16).numpy() % 2 == 0).mean()
    assert abs(even - 0.5) < 0.01
    w = tgrad.nn.init.uniform_(tgrad.empty(n, dtype=dtype), -1, 1).float().numpy()
    assert w.min() >= -1.0 and w.max() < 1.0


def test_exponential_is_never_zero():
    # PyTorch's exponential_ (since 2.1) never returns 0: u == 0 gave -log1p(-0) = 0, and
    # gumbel_softmax's -log of it made every output NaN
    tgrad.manual_seed(21)
    e = tgrad.empty(1_000_000).exponential_()
    assert (e > 0).all().item()
    assert abs(e.mean().item() - 1.0) < 0.01
    tgrad.manual_seed(21)
    g = tgrad.nn.functional.gumbel_softmax(tgrad.zeros(1_000_000), dim=0)
    assert not tgrad.isnan(g).any().item()
    np.testing.assert_allclose(g.sum().item(), 1.0, rtol=1e-4)


def test_bernoulli_records_a_zero_gradient_node():
    # PyTorch's BernoulliBackward0: the draw requires grad when p does, its gradient is 0
    p = tgrad.full((3,), 0.5, dtype=tgrad.float64, requires_grad=True)
    y = tgrad.bernoulli(p)
    assert y.requires_grad and y.grad_fn.name() == "BernoulliBackward0"
    assert set(y.tolist()) <= {0.0, 1.0}
    (y * 3).sum().backward()
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    assert not tgrad.bernoulli(tgrad.full((2,), 0.5)).requires_grad
    with tgrad.no_grad():
        assert not tgrad.bernoulli(p).requires_grad


def test_random_bounds_are_ints():
    # PyTorch: a float bound is a TypeError (tgrad drew non-integers like 1.5), a 0-d
    # integer tensor is read as its int
    with pytest.raises(TypeError, match="expected ints"):
        tgrad.zeros(6).random_(0.5, 3.5)
    tgrad.manual_seed(3)
    r = tgrad.zeros(200, dtype=tgrad.int64).random_(tgrad.tensor(5))
    assert set(r.tolist()) == {0, 1, 2, 3, 4}
