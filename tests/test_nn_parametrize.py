"""tgrad.nn.utils.parametrize and parametrizations (weight_norm, spectral_norm), against
NumPy float64 evaluations of PyTorch's definitions: values, gradients through the originals
(gradcheck), state-dict keys, assignment through right_inverse, caching, removal, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.autograd import gradcheck
from tgrad.nn.utils import parametrizations as PS
from tgrad.nn.utils import parametrize as P

F64 = tgrad.float64


class Symmetric(nn.Module):
    calls = 0

    def forward(self, x):
        Symmetric.calls += 1
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return 2.0 * x


class SplitSum(nn.Module):  # two originals: right_inverse returns a tuple
    def forward(self, a, b):
        return a + b

    def right_inverse(self, x):
        return x * 0.25, x * 0.75


def _linear(n=3, m=3):
    tgrad.manual_seed(0)
    return nn.Linear(n, m, dtype=F64)


def test_register_chain_assign_and_state_dict():
    lin = _linear()
    w0 = lin.weight.detach().numpy().copy()
    P.register_parametrization(lin, "weight", Symmetric())
    assert type(lin).__name__ == "ParametrizedLinear" and isinstance(lin, nn.Linear)
    assert P.is_parametrized(lin) and P.is_parametrized(lin, "weight")
    assert not P.is_parametrized(lin, "bias")
    assert P.type_before_parametrizations(lin) is nn.Linear
    want = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_allclose(lin.weight.detach().numpy(), want, rtol=0, atol=0)
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.original"]
    P.register_parametrization(lin, "weight", Scale())  # applied after Symmetric
    np.testing.assert_allclose(lin.weight.detach().numpy(), 2 * want, rtol=0, atol=0)
    x = np.random.default_rng(0).standard_normal((2, 3))
    y = lin(tgrad.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), x @ (2 * want).T + lin.bias.detach().numpy(),
                               rtol=1e-12)
    y.sum().backward()  # the gradient reaches the original through both parametrizations
    g_w = np.ones((2, 3)).T @ x  # dL/dW for L = sum(x W^T)
    g_sym = 2 * g_w
    want_g = np.triu(g_sym) + np.tril(g_sym, -1).T  # W = triu(X) + triu(X, 1)^T
    np.testing.assert_allclose(lin.parametrizations.weight.original.grad.numpy(), want_g,
                               rtol=1e-12)
    lin2 = _linear()
    P.register_parametrization(lin2, "weight", Symmetric())
    target = np.arange(9.0).reshape(3, 3)
    target = target + target.T
    lin2.weight = tgrad.tensor(target)  # right_inverse stores triu(target)
    np.testing.assert_allclose(lin2.parametrizations.weight.original.detach().numpy(),
                               np.triu(target))
    np.testing.assert_allclose(lin2.weight.detach().numpy(), target)


def test_tuple_originals_cached_and_remove():
    lin = _linear()
    w0 = lin.weight.detach().numpy().copy()
    P.register_parametrization(lin, "weight", SplitSum())
    pl = lin.parametrizations.weight
    np.testing.assert_allclose(pl.original0.detach().numpy(), 0.25 * w0)
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0, rtol=1e-15)
    assert isinstance(pl.original1, nn.Parameter)
    with pytest.raises(ValueError, match="leave_parametrized=False"):
        P.remove_parametrizations(lin, "weight", leave_parametrized=False)
    P.remove_parametrizations(lin, "weight")
    assert type(lin) is nn.Linear and isinstance(lin.weight, nn.Parameter)
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0, rtol=1e-15)
    assert sorted(lin.state_dict()) == ["bias", "weight"]

    lin = _linear()
    P.register_parametrization(lin, "weight", Symmetric())
    Symmetric.calls = 0
    with P.cached():
        a, b = lin.weight, lin.weight
    assert a is b and Symmetric.calls == 1
    lin.weight  # noqa: B018 - outside the block: computed again
    assert Symmetric.calls == 2
    original = lin.parametrizations.weight.original
    P.remove_parametrizations(lin, "weight", leave_parametrized=False)
    assert lin.weight is original  # the unconstrained original comes back


def test_parametrize_errors():
    lin = _linear()
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'nope'"):
        P.register_parametrization(lin, "nope", Scale())

    class Flatten(nn.Module):
        def forward(self, x):
            return x.reshape(-1)
    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        P.register_parametrization(lin, "weight", Flatten())
    P.register_parametrization(lin, "weight", Flatten(), unsafe=True)
    assert lin.weight.shape == (9,)
    lin = _linear()
    P.register_parametrization(lin, "weight", Scale())
    with pytest.raises(RuntimeError, match="parametrization Scale does not implement "
                                           "right_inverse"):
        lin.weight = tgrad.zeros(3, 3, dtype=F64)
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(lin, "bias")


class _Inv(nn.Module):
    """forward / right_inverse given as functions."""

    def __init__(self, fwd, inv):
        super().__init__()
        self.fwd, self.inv = fwd, inv

    def forward(self, *x):
        return self.fwd(*x)

    def right_inverse(self, x):
        return self.inv(x)


def _same(x):
    return x


def test_right_inverse_and_forward_must_keep_dtype_and_shape():
    # PyTorch's ParametrizationList: a single tensor from right_inverse replaces the
    # original, so it may never change its dtype (unsafe or not); without unsafe the
    # parametrized tensor forward(right_inverse(W)) must have W's dtype and shape (W's as
    # registered: a shape right_inverse changed does not count).
    for unsafe in (False, True):
        with pytest.raises(ValueError, match="When `right_inverse` outputs one tensor, it may "
                                             "not change the dtype.\noriginal.dtype: "
                                             "tgrad.float64\nright_inverse\\(original\\)."
                                             "dtype: tgrad.float32"):
            P.register_parametrization(_linear(), "weight",
                                       _Inv(_same, lambda x: x.float()), unsafe=unsafe)
    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless "
                                         "`unsafe` flag is enabled.\nunparametrized shape: "
                                         "\\(3, 3\\)\nparametrized shape: \\(1, 3\\)"):
        P.register_parametrization(_linear(), "weight", _Inv(_same, lambda x: x[:1]))
    lin = P.register_parametrization(_linear(), "weight", _Inv(_same, lambda x: x[:1]),
                                     unsafe=True)
    assert lin.weight.shape == (1, 3)
    with pytest.raises(ValueError, match="may not change the dtype of the tensor, unless "
                                         "`unsafe` flag is enabled.\nunparametrized dtype: "
                                         "tgrad.float64\nparametrized dtype: tgrad.float32"):
        P.register_parametrization(_linear(), "weight", _Inv(lambda x: x.float(), _same))
    with pytest.raises(ValueError, match="Got element 1 of the sequence with type int."):
        P.register_parametrization(_linear(), "weight", _Inv(_same, lambda x: (x, 3)))



def test_parametrization_must_return_tensors_of_the_same_shape():
    # PyTorch 2.13's texts, for a first and an added parametrization
    with pytest.raises(ValueError, match="^A parametrization must return a tensor. Got int.$"):
        P.register_parametrization(_linear(), "weight", _Inv(lambda x: 3, _same))
    lin = P.register_parametrization(_linear(), "weight", _Inv(_same, _same))
    with pytest.raises(ValueError, match="^A parametrization must return a tensor. Got int.$"):
        P.register_parametrization(lin, "weight", _Inv(lambda x: 3, _same))
    with pytest.raises(ValueError, match="The tensor returned by parametrization.right_inverse "
                                         "must have the same shape as module.weight, unless the "
                                         "`unsafe` flag is enabled.\nmodule.weight.shape: "
                                         "\\(3, 3\\)\nreturned shape: \\(1, 3\\)$"):
        P.register_parametrization(lin, "weight", _Inv(_same, lambda x: x[:1]))


def test_added_parametrization_and_assignment_checks():
    lin = P.register_parametrization(_linear(), "weight", _Inv(_same, _same))
    with pytest.raises(ValueError, match="may not change the dtype of the tensor, unless the "
                                         "`unsafe` flag is enabled.\nmodule.weight.dtype: "
                                         "tgrad.float64\nparametrization\\(module.weight\\)."
                                         "dtype: tgrad.float32"):
        P.register_parametrization(lin, "weight", _Inv(lambda x: x.float(), _same))
    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless the "
                                         "`unsafe` flag is enabled.\nmodule.weight.shape: "
                                         "\\(3, 3\\)"):
        P.register_parametrization(lin, "weight", _Inv(lambda x: x[:1], _same))
    with pytest.raises(ValueError, match="The tensor returned by parametrization.right_inverse "
                                         "must have the same dtype as module.weight, unless the "
                                         "`unsafe` flag is enabled.\nmodule.weight.dtype: "
                                         "tgrad.float64\nreturned dtype: tgrad.float32"):
        P.register_parametrization(lin, "weight", _Inv(_same, lambda x: x.float()))
    with pytest.raises(ValueError, match="parametrization.right_inverse must return a tensor. "
                                         "Got: int"):
        P.register_parametrization(lin, "weight", _Inv(_same, lambda x: 3))
    P.register_parametrization(lin, "weight", _Inv(_same, lambda x: x.float()), unsafe=True)
    assert len(lin.parametrizations.weight) == 2
    # assignment of a tuple-originals parametrization: a sequence of the originals' dtypes
    pair = P.register_parametrization(_linear(), "weight",
                                      _Inv(lambda a, b: a + b, lambda x: (x / 2, x / 2)))
    w = tgrad.tensor(np.arange(9.0).reshape(3, 3))
    pair.weight = w
    np.testing.assert_array_equal(pair.weight.detach().numpy(), w.numpy())
    pair.parametrizations.weight[0].inv = lambda x: (x, x.float())
    with pytest.raises(ValueError, match="Tensor 1 returned by `right_inverse` has dtype "
                                         "tgrad.float32 while `original1` has dtype "
                                         "tgrad.float64"):
        pair.weight = w
    pair.parametrizations.weight[0].inv = lambda x: (x,)
    with pytest.raises(ValueError, match="of length 2. Got a sequence of length 1."):
        pair.weight = w
    pair.parametrizations.weight[0].inv = lambda x: x
    with pytest.raises(ValueError, match="must return a sequence of tensors. Got Tensor."):
        pair.weight = w


# ---------------------------------------------------------------------------- weight_norm
@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm(dim):
    tgrad.manual_seed(1)
    conv = nn.Conv1d(2, 3, 2, dtype=F64)  # weight (3, 2, 2)
    w0 = conv.weight.detach().numpy().copy()
    PS.weight_norm(conv, dim=dim)
    g = conv.parametrizations.weight.original0.detach().numpy()
    axes = None if dim in (None, -1) else tuple(d for d in range(3) if d != dim)
    np.testing.assert_allclose(g, np.sqrt((w0 ** 2).sum(axis=axes, keepdims=axes is not None)),
                               rtol=1e-14)
    np.testing.assert_allclose(conv.weight.detach().numpy(), w0, rtol=1e-14)
    with tgrad.no_grad():  # a new magnitude: weight = g v / ||v||
        conv.parametrizations.weight.original0.mul_(2.0)
    np.testing.assert_allclose(conv.weight.detach().numpy(), 2 * w0, rtol=1e-14)
    x = tgrad.tensor(np.random.default_rng(2).standard_normal((1, 2, 4)))
    pl = conv.parametrizations.weight
    g0 = pl.original0.detach().clone().requires_grad_()
    v0 = pl.original1.detach().clone().requires_grad_()
    assert gradcheck(lambda g, v: pl[0](g, v), (g0, v0))
    conv(x).sum().backward()
    assert pl.original0.grad is not None and pl.original1.grad is not None


def test_weight_norm_gradient_against_finite_differences():
    tgrad.manual_seed(3)
    lin = nn.Linear(3, 2, dtype=F64)
    PS.weight_norm(lin)
    x = tgrad.tensor(np.random.default_rng(3).standard_normal((4, 3)))
    pl = lin.parametrizations.weight
    g0 = pl.original0.detach().clone().requires_grad_()
    v0 = pl.original1.detach().clone().requires_grad_()
    assert gradcheck(lambda g, v: pl[0](g, v), (g0, v0))  # the parametrization's module
    y = lin(x).sum()
    y.backward()
    g, v = pl.original0.detach().numpy(), pl.original1.detach().numpy()
    n = np.linalg.norm(v, axis=1, keepdims=True)
    dw = np.ones((4, 2)).T @ x.numpy()  # dL/dW
    np.testing.assert_allclose(pl.original0.grad.numpy(), (dw * v / n).sum(1, keepdims=True),
                               rtol=1e-12)
    want_v = g / n * dw - g * v * (dw * v).sum(1, keepdims=True) / n ** 3
    np.testing.assert_allclose(pl.original1.grad.numpy(), want_v, rtol=1e-12)


# -------------------------------------------------------------------------- spectral_norm
def test_spectral_norm_power_iteration_and_modes():
    tgrad.manual_seed(4)
    lin = nn.Linear(5, 4, dtype=F64)
    w0 = lin.weight.detach().numpy().copy()
    PS.spectral_norm(lin)
    sn = lin.parametrizations.weight[0]
    u, v = sn._u.numpy(), sn._v.numpy()
    assert u.shape == (4,) and v.shape == (5,)
    np.testing.assert_allclose(np.linalg.norm(u), 1.0, rtol=1e-12)
    for _ in range(30):  # training mode: each access runs one more power iteration
        w = lin.weight
    sigma = np.linalg.svd(w0, compute_uv=False)[0]
    np.testing.assert_allclose(w.detach().numpy(), w0 / sigma, rtol=1e-8)
    u, v = sn._u.numpy(), sn._v.numpy()
    np.testing.assert_allclose(lin.weight.detach().numpy(),
                               w0 / (u @ w0 @ v), rtol=1e-12)  # this access: W / u^T W v
    lin.eval()
    u_before = sn._u.numpy().copy()
    lin.weight  # noqa: B018 - eval: no iteration
    np.testing.assert_allclose(sn._u.numpy(), u_before, rtol=0, atol=0)
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.0._u",
                                        "parametrizations.weight.0._v",
                                        "parametrizations.weight.original"]
    x = tgrad.tensor(np.random.default_rng(5).standard_normal((2, 5)), requires_grad=True)
    assert gradcheck(lambda a: lin(a), (x,))  # eval mode: a fixed u, v


def test_spectral_norm_complex_weight_and_in_place_buffers():
    # complex weights (PyTorch's: u, v complex, sigma = u^H W v, v <- W^H u); the
    # buffers are refined in place, so a state_dict taken earlier follows them
    w0 = np.random.default_rng(8).standard_normal((3, 4, 2)) @ [1.0, 1j]
    mod = nn.Module()
    mod.register_parameter("weight", nn.Parameter(tgrad.tensor(w0)))
    tgrad.manual_seed(9)
    PS.spectral_norm(mod)
    sn = mod.parametrizations.weight[0]
    assert sn._u.dtype == sn._v.dtype == tgrad.complex128
    u_buf, saved = sn._u, mod.state_dict()["parametrizations.weight.0._u"]
    for _ in range(40):
        w = mod.weight
    assert sn._u is u_buf
    np.testing.assert_allclose(saved.numpy(), sn._u.numpy(), rtol=0, atol=0)
    sigma = np.linalg.svd(w0, compute_uv=False)[0]
    np.testing.assert_allclose(w.detach().numpy(), w0 / sigma, rtol=1e-8)
    mod.eval()
    u, v = sn._u.numpy(), sn._v.numpy()
    np.testing.assert_allclose(np.linalg.norm(u), 1.0, rtol=1e-12)
    np.testing.assert_allclose(mod.weight.detach().numpy(), w0 / (u.conj() @ w0 @ v),
                               rtol=1e-12)


def test_spectral_norm_conv_transpose_vector_and_errors():
    tgrad.manual_seed(6)
    ct = nn.ConvTranspose2d(3, 2, 2, dtype=F64)  # weight (3, 2, 2, 2): dim 1 by default
    PS.spectral_norm(ct)
    sn = ct.parametrizations.weight[0]
    assert sn.dim == 1 and sn._u.shape == (2,) and sn._v.shape == (12,)
    emb = nn.Module()
    emb.register_parameter("w", nn.Parameter(tgrad.tensor([3.0, 4.0], dtype=F64)))
    PS.spectral_norm(emb, "w")
    np.testing.assert_allclose(emb.w.detach().numpy(), [0.6, 0.8], rtol=1e-15)
    with pytest.raises(ValueError, match="n_power_iterations=0"):
        PS.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        PS.spectral_norm(nn.Linear(2, 2), dim=2)


# ----------------------------------------------------------------------------- orthogonal
def _orthonormal_error(w: np.ndarray) -> float:
    n, k = w.shape[-2:]
    g = np.swapaxes(w, -1, -2) @ w if n >= k else w @ np.swapaxes(w, -1, -2)
    return float(np.abs(g - np.eye(min(n, k))).max())


@pytest.mark.parametrize("shape,orthogonal_map", [
    ((4, 4), None), ((5, 3), None), ((3, 5), None), ((4, 4), "cayley"), ((5, 3), "cayley"),
    ((3, 5), "matrix_exp"), ((4, 4), "householder")])
def test_orthogonal_with_trivialization(shape, orthogonal_map):
    tgrad.manual_seed(7)
    lin = nn.Linear(shape[1], shape[0], dtype=F64)
    w0 = lin.weight.detach().numpy().copy()
    PS.orthogonal(lin, orthogonal_map=orthogonal_map)
    w = lin.weight.detach().numpy()
    assert _orthonormal_error(w) < 1e-14
    if shape[0] >= shape[1]:  # starts at w0's Q (R's diagonal made positive)
        q, r = np.linalg.qr(w0)
        np.testing.assert_allclose(w[:, :shape[1]], q * np.sign(np.diag(r)), atol=1e-14)
    base = lin.parametrizations.weight[0].base
    assert base is not None and sorted(lin.state_dict())[1:] == [
        "parametrizations.weight.0.base", "parametrizations.weight.original"]
    pl = lin.parametrizations.weight
    noise = np.random.default_rng(8).standard_normal(shape)
    noise = np.tril(noise, -1) if shape[0] >= shape[1] else np.triu(noise, 1)
    # (below the diagonal: householder reads the diagonal as fixed signs, +-1)
    x = pl.original.detach().clone() + 0.1 * tgrad.tensor(noise)
    assert _orthonormal_error(pl[0](x).detach().numpy()) < 1e-13  # stays orthogonal
    diag = pl.original.detach().clone()  # -I: the fixed signs
    strict = (lambda a: a.tril(-1)) if shape[0] >= shape[1] else (lambda a: a.triu(1))
    assert gradcheck(lambda a: pl[0](diag + strict(a)), ((x - diag).requires_grad_(),))
    target = np.linalg.qr(np.random.default_rng(9).standard_normal((max(shape), min(shape))))[0]
    target = target if shape[0] >= shape[1] else target.T
    lin.weight = tgrad.tensor(target)  # an orthogonal value: kept as the new base
    np.testing.assert_allclose(lin.weight.detach().numpy(), target, atol=1e-14)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_householder_without_trivialization(shape):
    tgrad.manual_seed(10)
    lin = nn.Linear(shape[1], shape[0], dtype=F64)
    PS.orthogonal(lin, orthogonal_map="householder", use_trivialization=False)
    assert "base" not in lin.parametrizations.weight[0]._buffers
    assert _orthonormal_error(lin.weight.detach().numpy()) < 1e-14
    target = np.linalg.qr(np.random.default_rng(11).standard_normal((max(shape), min(shape))))[0]
    target = target if shape[0] >= shape[1] else target.T
    lin.weight = tgrad.tensor(target)  # geqrf's reflectors reproduce it
    np.testing.assert_allclose(lin.weight.detach().numpy(), target, atol=1e-14)
    lin(tgrad.ones(2, shape[1], dtype=F64)).sum().backward()
    assert lin.parametrizations.weight.original.grad.shape == shape


def test_orthogonal_errors_and_matrix_exp_without_trivialization():
    lin = nn.Linear(3, 3, dtype=F64)
    PS.orthogonal(lin, orthogonal_map="matrix_exp", use_trivialization=False)
    assert _orthonormal_error(lin.weight.detach().numpy()) < 1e-14
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        lin.weight = tgrad.eye(3, dtype=F64)
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp"'):
        PS.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        PS.orthogonal(nn.Linear(2, 2), name="bias")


def _unitary_error(w: np.ndarray) -> float:
    n, k = w.shape[-2:]
    wh = np.swapaxes(w, -1, -2).conj()
    g = wh @ w if n >= k else w @ wh
    return float(np.abs(g - np.eye(min(n, k))).max())


@pytest.mark.parametrize("shape,orthogonal_map,triv", [
    ((3, 3), None, True), ((4, 2), None, True), ((2, 4), "cayley", True),
    ((2, 3, 3), "cayley", False), ((4, 2), "matrix_exp", False)])
def test_orthogonal_complex_weights_are_unitary(shape, orthogonal_map, triv):
    # complex weights were silently not unitary (X - X^T is not skew-Hermitian; the QR
    # signs were taken with d < 0) or failed (normal_ on complex). PyTorch: A = X - X^H,
    # signs sgn(diag R), and matrix_exp as the default map of a complex weight
    w0 = np.random.default_rng(18).standard_normal(shape + (2,)) @ [1.0, 1j]
    mod = nn.Module()
    mod.register_parameter("weight", nn.Parameter(tgrad.tensor(w0)))
    tgrad.manual_seed(19)
    PS.orthogonal(mod, orthogonal_map=orthogonal_map, use_trivialization=triv)
    orth = mod.parametrizations.weight[0]
    assert orth.orthogonal_map == (orthogonal_map or "matrix_exp")
    assert ("parametrizations.weight.0.base" in mod.state_dict()) == triv
    assert mod.weight.dtype == tgrad.complex128
    assert _unitary_error(mod.weight.detach().numpy()) < 1e-13
    if triv and shape[-2] >= shape[-1]:  # starts at w0's Q, columns scaled by sgn(R_ii)
        q, r = np.linalg.qr(w0)
        d = np.diagonal(r, axis1=-2, axis2=-1)
        np.testing.assert_allclose(mod.weight.detach().numpy(),
                                   q * (d / np.abs(d))[..., None, :], atol=1e-13)
    x = tgrad.tensor(np.random.default_rng(20).standard_normal(shape + (2,)) @ [0.3, 0.3j])
    assert _unitary_error(orth(mod.parametrizations.weight.original + x).detach().numpy()) \
        < 1e-12
    (mod.weight.abs() ** 2 * tgrad.tensor(np.abs(w0))).sum().backward()
    assert mod.parametrizations.weight.original.grad.shape == shape
    with pytest.raises(ValueError, match="householder parametrization does not support "
                                         "complex tensors"):
        PS.orthogonal(mod, orthogonal_map="householder")


# ------------------------------------------------- the older hook-based weight/spectral norm
def test_hook_weight_norm_and_removal():
    from tgrad.nn.utils import remove_weight_norm, weight_norm
    tgrad.manual_seed(12)
    lin = nn.Linear(3, 2, dtype=F64)
    w0 = lin.weight.detach().numpy().copy()
    weight_norm(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(lin.weight_g.detach().numpy(),
                               np.linalg.norm(w0, axis=1, keepdims=True), rtol=1e-14)
    with tgrad.no_grad():
        lin.weight_g.mul_(3.0)
    x = np.random.default_rng(13).standard_normal((4, 3))
    y = lin(tgrad.tensor(x))  # the pre-hook recomputes weight = g v / ||v||
    np.testing.assert_allclose(y.detach().numpy(), x @ (3 * w0).T + lin.bias.detach().numpy(),
                               rtol=1e-12)
    y.sum().backward()
    assert lin.weight_g.grad is not None and lin.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        weight_norm(lin)
    remove_weight_norm(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), 3 * w0, rtol=1e-14)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(lin)


def test_hook_spectral_norm_and_removal():
    from tgrad.nn.utils import remove_spectral_norm, spectral_norm
    tgrad.manual_seed(14)
    lin = nn.Linear(5, 3, dtype=F64)
    w0 = lin.weight.detach().numpy().copy()
    spectral_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    x = tgrad.tensor(np.random.default_rng(15).standard_normal((2, 5)))
    for _ in range(30):
        lin(x)  # training mode: one power iteration per call
    u, v = lin.weight_u.numpy(), lin.weight_v.numpy()
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0 / (u @ w0 @ v), rtol=1e-12)
    np.testing.assert_allclose(lin.weight.detach().numpy(),
                               w0 / np.linalg.svd(w0, compute_uv=False)[0], rtol=1e-8)
    lin.eval()
    lin(x)
    np.testing.assert_allclose(lin.weight_u.numpy(), u, rtol=0, atol=0)  # eval: no step
    out = lin(x)
    out.sum().backward()
    assert lin.weight_orig.grad is not None
    remove_spectral_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0 / (u @ w0 @ v), rtol=1e-12)


def test_hook_spectral_norm_complex_weight():
    # registering failed (normal_ refuses complex); sigma = u^H W v, v <- W^H u converges to
    # the largest singular value (NumPy's svd)
    from tgrad.nn.utils import spectral_norm
    w0 = np.random.default_rng(16).standard_normal((4, 3, 2)) @ [1.0, 1j]
    mod = nn.Module()
    mod.register_parameter("weight", nn.Parameter(tgrad.tensor(w0)))
    tgrad.manual_seed(17)
    spectral_norm(mod)
    hook = next(iter(mod._forward_pre_hooks.values()))
    for _ in range(40):
        hook(mod, ())
    u, v = mod.weight_u.numpy(), mod.weight_v.numpy()
    np.testing.assert_allclose(mod.weight.detach().numpy(), w0 / (u.conj() @ w0 @ v),
                               rtol=1e-12)
    np.testing.assert_allclose(mod.weight.detach().numpy(),
                               w0 / np.linalg.svd(w0, compute_uv=False)[0], rtol=1e-8)


@pytest.mark.parametrize("old_form", [False, True])
def test_weight_norm_of_conv_weights_and_dim_range(old_form):
    """g is the 2-norm over every dim but ``dim`` of a 4-D/5-D weight (PyTorch's
    norm_except_dim; NumPy reference), and an out-of-range dim raises IndexError."""
    wn = nn.utils.weight_norm if old_form else PS.weight_norm
    for conv, dim in ((nn.Conv2d(2, 3, 2), 0), (nn.Conv3d(2, 3, 2), 1), (nn.Conv2d(2, 3, 2), -2)):
        w = conv.weight.detach().numpy().astype(np.float64)
        wn(conv, dim=dim)
        g = conv.weight_g if old_form else conv.parametrizations.weight.original0
        d = dim % w.ndim
        want = np.sqrt((w ** 2).sum(axis=tuple(i for i in range(w.ndim) if i != d),
                                    keepdims=True))
        np.testing.assert_allclose(g.detach().numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(conv.weight.detach().numpy(), w, rtol=1e-5, atol=1e-7)
    for bad in (2, -3):
        with pytest.raises(IndexError, match="Dimension out of range"):
            wn(nn.Linear(3, 2), dim=bad)


@pytest.mark.parametrize("dim", [0, None])
def test_weight_norm_loads_a_state_dict_of_the_old_hook_form(dim):
    # PyTorch's parametrizations.weight_norm has a load_state_dict pre-hook that renames
    # the old weight_g / weight_v to parametrizations.weight.original0 / original1 (inside
    # containers too); the reverse direction is not converted (PyTorch raises too).
    old = nn.utils.weight_norm(_linear(3, 2), dim=dim)
    with tgrad.no_grad():
        old.weight_g.mul_(3.0)
    old(tgrad.zeros(1, 3, dtype=F64))  # the hook form recomputes weight in a forward pre-hook
    g, v = old.weight_g.detach().numpy(), old.weight_v.detach().numpy()
    axes = None if dim is None else (1,)
    want = g * v / np.sqrt((v ** 2).sum(axis=axes, keepdims=dim is not None))
    new = nn.Sequential(PS.weight_norm(_linear(3, 2), dim=dim))
    result = new.load_state_dict({"0." + k: t for k, t in old.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_allclose(new[0].weight.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(new[0].parametrizations.weight.original0.detach().numpy(), g)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "weight_g", '
                                           '"weight_v"'):
        nn.utils.weight_norm(_linear(3, 2), dim=dim).load_state_dict(new[0].state_dict())


def test_functional_call_on_a_parametrized_tensor_goes_through_its_setter():
    # PyTorch: the given value is set through right_inverse for the call (no graph to it),
    # the originals are restored after; without a right_inverse it raises
    class Sym(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).mT

        def right_inverse(self, a):
            return a.triu()

    m = nn.Linear(2, 2, bias=False)
    P.register_parametrization(m, "weight", Sym())
    before = m.parametrizations.weight.original.detach().clone()
    w = tgrad.tensor([[1.0, 2.0], [2.0, 3.0]])
    y = tgrad.func.functional_call(m, {"weight": w}, (tgrad.tensor([[1.0, 1.0]]),))
    assert y.tolist() == [[3.0, 5.0]]  # x @ w.T
    assert m.parametrizations.weight.original.tolist() == before.tolist()

    class Twice(nn.Module):
        def forward(self, x):
            return x * 2

    m2 = nn.Linear(2, 2, bias=False)
    P.register_parametrization(m2, "weight", Twice())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        tgrad.func.functional_call(m2, {"weight": w}, (tgrad.tensor([[1.0, 1.0]]),))


def test_old_spectral_norm_updates_its_buffers_in_place():
    # PyTorch's normalize(out=u): the same buffer objects, new values, so a state_dict or a
    # reference taken before a training forward follows the power iteration
    tgrad.manual_seed(0)
    m = nn.utils.spectral_norm(nn.Linear(3, 4))
    u, v = m.weight_u, m.weight_v
    before = u.clone()
    m(tgrad.randn(2, 3))
    assert m.weight_u is u and m.weight_v is v and not np.allclose(u.numpy(), before.numpy())
    w = m.weight_orig.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(u.numpy(), w @ v.numpy() / np.linalg.norm(w @ v.numpy()),
                               rtol=1e-5)
