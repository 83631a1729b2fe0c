"""tgrad.nn.init: orthogonal_, eye_, dirac_, sparse_ and PyTorch's deprecated aliases,
checked against their defining properties (orthogonality, exact structure, per-column
sparsity, the standard deviation of the draws) and PyTorch's error texts."""

import math

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.nn import functional as F
from tgrad.nn import init

F64 = tgrad.float64


# ----------------------------------------------------------------- orthogonal_
@pytest.mark.parametrize("shape", [(6, 6), (4, 9), (9, 4), (3, 2, 2, 2), (1, 5), (5, 1)])
@pytest.mark.parametrize("gain", [1.0, 0.5, 3.0])
def test_orthogonal_gram_matrix_is_gain_squared_identity(shape, gain):
    w = init.orthogonal_(tgrad.empty(shape, dtype=F64), gain=gain).numpy()
    m = w.reshape(shape[0], -1)
    rows, cols = m.shape
    # rows <= cols: orthonormal rows (m m^T); else orthonormal columns (m^T m)
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(min(rows, cols)), rtol=0, atol=1e-12)


def test_orthogonal_is_reproducible_and_varies_with_the_seed():
    tgrad.manual_seed(3)
    a = init.orthogonal_(tgrad.empty(5, 5, dtype=F64)).numpy()
    tgrad.manual_seed(3)
    b = init.orthogonal_(tgrad.empty(5, 5, dtype=F64)).numpy()
    c = init.orthogonal_(tgrad.empty(5, 5, dtype=F64)).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


# ----------------------------------------------------------------- eye_
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (1, 1)])
def test_eye_exact_structure(shape):
    w = nn.Parameter(tgrad.full(shape, 7.0, dtype=F64))
    out = init.eye_(w)
    assert out is w and w.is_leaf and w.requires_grad and w.grad_fn is None
    expected = np.zeros(shape)
    for i in range(min(shape)):
        expected[i, i] = 1.0
    np.testing.assert_array_equal(w.detach().numpy(), expected)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4)])
def test_eye_rejects_non_matrices(shape):
    with pytest.raises(ValueError, match="^Only tensors with 2 dimensions are supported$"):
        init.eye_(tgrad.empty(shape))


# ----------------------------------------------------------------- dirac_
def _dirac_expected(shape, groups):
    out = np.zeros(shape)
    per_group = shape[0] // groups
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(per_group, shape[1])):
            out[(g * per_group + d, d) + centre] = 1.0
    return out


@pytest.mark.parametrize("shape, groups", [
    ((4, 4, 3), 1), ((3, 5, 4), 1), ((6, 2, 5), 1),          # temporal, out <, > in
    ((4, 4, 3, 3), 1), ((6, 4, 3, 3), 2), ((6, 2, 2, 4), 3),  # spatial, grouped
    ((4, 2, 3, 3, 3), 2), ((2, 3, 1, 2, 5), 1),             # volumetric
])
def test_dirac_exact_structure(shape, groups):
    w = nn.Parameter(tgrad.randn(*shape, dtype=F64))
    out = init.dirac_(w, groups=groups)
    assert out is w and w.is_leaf and w.requires_grad and w.grad_fn is None
    got = w.detach().numpy()
    np.testing.assert_array_equal(got, _dirac_expected(shape, groups))
    assert got.sum() == groups * min(shape[0] // groups, shape[1])


def test_dirac_matches_pytorch_grouped_pattern():
    # PyTorch's dirac_(empty(6, 4, 3, 3), groups=2).nonzero(), written out literally
    w = init.dirac_(tgrad.empty(6, 4, 3, 3), groups=2)
    assert np.argwhere(w.numpy()).tolist() == [[0, 0, 1, 1], [1, 1, 1, 1], [2, 2, 1, 1],
                                               [3, 0, 1, 1], [4, 1, 1, 1], [5, 2, 1, 1]]


def test_dirac_convolution_is_the_identity():
    x = tgrad.randn(2, 3, 7, 6, dtype=F64)
    w = init.dirac_(tgrad.empty(3, 3, 3, 5, dtype=F64))
    y = F.conv2d(x, w, padding=(1, 2))
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    x1 = tgrad.randn(2, 4, 9, dtype=F64)
    w1 = init.dirac_(tgrad.empty(4, 2, 3, dtype=F64), groups=2)  # 2 in-channels per group
    y1 = F.conv1d(x1, w1, padding=1, groups=2)
    np.testing.assert_array_equal(y1.numpy()[:, [0, 2]], x1.numpy()[:, [0, 2]])


@pytest.mark.parametrize("make, msg", [
    (lambda: init.dirac_(tgrad.empty(3, 3)),
     "Only tensors with 3, 4, or 5 dimensions are supported"),
    (lambda: init.dirac_(tgrad.empty(1, 1, 1, 1, 1, 1)),
     "Only tensors with 3, 4, or 5 dimensions are supported"),
    (lambda: init.dirac_(tgrad.empty(3, 2, 3), groups=2), "dim 0 must be divisible by groups"),
])
def test_dirac_errors(make, msg):
    with pytest.raises(ValueError, match=f"^{msg}$"):
        make()


# ----------------------------------------------------------------- sparse_
@pytest.mark.parametrize("rows, cols, sparsity", [(10, 7, 0.3), (9, 4, 0.5), (5, 3, 0.01),
                                                  (6, 2, 0.0), (4, 3, 1.0)])
def test_sparse_zeros_per_column(rows, cols, sparsity):
    w = init.sparse_(tgrad.empty(rows, cols, dtype=F64), sparsity).numpy()
    zeros_per_col = (w == 0).sum(axis=0)
    assert zeros_per_col.tolist() == [math.ceil(sparsity * rows)] * cols


def test_sparse_std_and_mean_of_the_nonzeros():
    rows, cols, std = 2000, 40, 0.05
    w = init.sparse_(tgrad.empty(rows, cols, dtype=F64), 0.25, std=std).numpy()
    assert ((w == 0).sum(axis=0) == 500).all()
    nz = w[w != 0]
    assert nz.size == 1500 * cols
    # 60000 normal samples: the sample std's relative error is ~ 1 / sqrt(2 n) = 0.3 %
    assert abs(nz.std() / std - 1) < 0.02
    assert abs(nz.mean()) < 4 * std / math.sqrt(nz.size)


def test_sparse_replays_tgrads_generator():
    """PyTorch's order of draws: the normal values, then one randperm(rows) per column
    whose first ceil(sparsity * rows) rows are zeroed."""
    rows, cols, sparsity, std = 7, 5, 0.4, 0.3
    tgrad.manual_seed(11)
    w = init.sparse_(tgrad.empty(rows, cols, dtype=F64), sparsity, std=std).numpy()
    tgrad.manual_seed(11)
    expected = tgrad.randn(rows, cols, dtype=F64).numpy() * std
    for c in range(cols):
        expected[tgrad.randperm(rows).numpy()[:math.ceil(sparsity * rows)], c] = 0.0
    np.testing.assert_array_equal(w, expected)
    tgrad.manual_seed(11)
    again = init.sparse_(tgrad.empty(rows, cols, dtype=F64), sparsity, std=std).numpy()
    np.testing.assert_array_equal(w, again)


def test_sparse_keeps_parameter_and_dtype():
    p = nn.Parameter(tgrad.empty(6, 4))
    out = init.sparse_(p, 0.5)
    assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p.dtype is tgrad.float32
    assert ((p.detach().numpy() == 0).sum(axis=0) == 3).all()


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_sparse_rejects_non_matrices(shape):
    with pytest.raises(ValueError, match="^Only tensors with 2 dimensions are supported$"):
        init.sparse_(tgrad.empty(shape), 0.1)


# ----------------------------------------------------------------- deprecated aliases
@pytest.mark.parametrize("old, args", [
    ("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("eye", ()), ("xavier_uniform", ()),
    ("xavier_normal", ()), ("kaiming_uniform", ()), ("kaiming_normal", ()), ("orthogonal", ()),
    ("sparse", (0.5,)),
])
def test_deprecated_aliases_warn_and_match(old, args):
    tgrad.manual_seed(5)
    want = getattr(init, old + "_")(tgrad.empty(4, 6, dtype=F64), *args).numpy()
    tgrad.manual_seed(5)
    with pytest.warns(FutureWarning, match=f"^`nn.init.{old}` is now deprecated in favor of "
                                           f"`nn.init.{old}_`.$"):
        got = getattr(init, old)(tgrad.empty(4, 6, dtype=F64), *args).numpy()
    np.testing.assert_array_equal(got, want)


def test_deprecated_dirac_alias():
    with pytest.warns(FutureWarning, match="nn.init.dirac` is now deprecated"):
        w = init.dirac(tgrad.empty(2, 2, 3))
    np.testing.assert_array_equal(w.numpy(), _dirac_expected((2, 2, 3), 1))


# ----------------------------------------------------------------- complex tensors
def test_uniform_and_normal_fill_complex_parts_independently():
    # PyTorch fills view_as_real(t): uniform_(a, b) gives U(a, b) real and imaginary
    # parts; normal_(mean, std) gives parts each N(mean, std^2 / 2)
    g = tgrad.Generator().manual_seed(0)
    u = init.uniform_(tgrad.empty(20000, dtype=tgrad.complex128), -2.0, 3.0, generator=g)
    assert u.dtype == tgrad.complex128
    for part in (u.real.numpy(), u.imag.numpy()):
        assert part.min() >= -2.0 and part.max() < 3.0
        assert abs(part.mean() - 0.5) < 0.05  # U(-2, 3): mean 0.5, sd 5/sqrt(12) ~ 1.44
    assert abs(np.corrcoef(u.real.numpy(), u.imag.numpy())[0, 1]) < 0.05
    n = init.normal_(tgrad.empty(20000, dtype=tgrad.complex64), 1.0, 2.0, generator=g)
    for part in (n.real.numpy().astype(np.float64), n.imag.numpy().astype(np.float64)):
        assert abs(part.mean() - 1.0) < 0.05
        assert abs(part.std() - 2.0 / math.sqrt(2.0)) < 0.05


def test_complex_layers_initialise():
    lin = nn.Linear(4, 3, dtype=tgrad.complex64)
    assert lin.weight.dtype == tgrad.complex64 and lin.bias.dtype == tgrad.complex64
    bound = 1 / math.sqrt(4)  # kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(in), 1/sqrt(in)) parts
    w = lin.weight.detach().numpy()
    assert np.abs(w.real).max() <= bound and np.abs(w.imag).max() <= bound
    assert np.abs(w.imag).max() > 0
    conv = nn.Conv2d(2, 2, 3, dtype=tgrad.complex128)
    assert conv.weight.dtype == tgrad.complex128
    s = init.sparse_(tgrad.empty(6, 5, dtype=tgrad.complex64), 0.5)
    assert ((s.numpy() == 0).sum(axis=0) >= 3).all() and s.dtype == tgrad.complex64


def test_complex_refused_by_trunc_normal_and_orthogonal():
    for fill in (init.trunc_normal_, init.orthogonal_):
        with pytest.raises(NotImplementedError, match="complex64"):
            fill(tgrad.empty(3, 3, dtype=tgrad.complex64))


def test_init_checks_in_pytorchs_order():
    # std < 0 is checked before the dtype; the dimension before the dtype
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        init.normal_(tgrad.empty(3, dtype=tgrad.int64), 0.0, -1.0)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(tgrad.empty(4, dtype=tgrad.int64))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.sparse_(tgrad.empty(4, dtype=tgrad.int64), 0.5)
    with pytest.raises(NotImplementedError, match="int64"):
        init.sparse_(tgrad.empty(4, 2, dtype=tgrad.int64), 0.5)


def test_calculate_gain_linear_ones_are_int_one():
    # PyTorch returns the int 1 for the linear functions and sigmoid
    for name in ("linear", "conv1d", "conv_transpose3d", "sigmoid"):
        g = init.calculate_gain(name)
        assert g == 1 and type(g) is int


@pytest.mark.parametrize("fill", [init.kaiming_uniform_, init.kaiming_normal_])
def test_kaiming_mode_is_case_insensitive(fill):
    # PyTorch lowers ``mode``: 'FAN_OUT' is fan_out = 40 * 3 = 120 for a (40, 200, 3) weight
    w = fill(tgrad.empty(40, 200, 3, dtype=F64), mode="FAN_OUT", nonlinearity="relu")
    std = math.sqrt(2.0) / math.sqrt(120)  # gain / sqrt(fan); uniform: bound / sqrt(3)
    assert abs(w.numpy().std() / std - 1) < 0.05
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported"):
        fill(tgrad.empty(3, 4), mode="Fan_Avg")


def test_empty_tensors_of_any_dtype_are_a_no_op():
    # nothing to draw: PyTorch's normal_ / orthogonal_ / sparse_ accept an empty int tensor
    for dt in (tgrad.int64, tgrad.bool):
        for fill, args in ((init.normal_, ()), (init.xavier_normal_, ()),
                           (init.orthogonal_, ()), (init.sparse_, (0.5,))):
            t = tgrad.empty(0, 3, dtype=dt)
            version = t._version
            assert fill(t, *args) is t and t.shape == (0, 3) and t.dtype == dt
            # PyTorch still runs normal_ (a version bump); orthogonal_ returns at once
            assert t._version - version == (0 if fill is init.orthogonal_ else 1)
    with pytest.raises(NotImplementedError, match="int64"):
        init.normal_(tgrad.empty(1, 3, dtype=tgrad.int64))
