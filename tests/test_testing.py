"""tgrad.testing (assert_close, make_tensor) against torch.testing's documented behaviour:
every expected message below is the text torch.testing 2.14 gives for the same inputs
(torch's ``torch.Size([2])`` / ``torch.float32`` / ``torch.Tensor`` written as tgrad's
``(2,)`` / ``tgrad.float32`` / ``tgrad.tensor.Tensor``). Closeness decisions are checked
against NumPy's own |a - e| <= atol + rtol |e|."""

from __future__ import annotations

import textwrap
from collections import OrderedDict

import ml_dtypes
import numpy as np
import pytest
from interpreted import run_json

import tgrad
from tgrad import nn
from tgrad.testing import assert_close, make_tensor

T = tgrad.tensor


def _raises(exc: type, text: str, *args, **kwargs) -> None:
    with pytest.raises(exc) as info:
        assert_close(*args, **kwargs)
    assert str(info.value) == text


# ---------------------------------------------------------------- tensors: messages


@pytest.mark.parametrize("actual, expected, kwargs, text", [
    (T([1., 2., 3.]), T([1., 2.5, 3.]), {},
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"),
    (T([1., 2., 3.]), T([1., 2.5, 3.]), dict(rtol=0, atol=0),
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\n"
     "Greatest absolute difference: 0.5 at index (1,)\n"
     "Greatest relative difference: 0.20000000298023224 at index (1,)"),
    (T([1, 2, 3]), T([1, 5, 3]), {},
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\n"
     "Greatest absolute difference: 3 at index (1,)\n"
     "Greatest relative difference: 0.6000000238418579 at index (1,)"),
    (T([True, False]), T([True, True]), {},
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\n"
     "Greatest relative difference: 1.0 at index (1,)"),
    (T([[1., 2.], [3., 4.]]), T([[1., 2.], [3., 4.5]]), {},
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 4 (25.0%)\n"
     "Greatest absolute difference: 0.5 at index (1, 1) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.1111111119389534 at index (1, 1) (up to 1.3e-06 allowed)"),
    (T([1., 2., 3., 4.]), T([1.1, 2., 3.3, 4.]), {},  # the two maxima at different places
     "Tensor-likes are not close!\n\nMismatched elements: 2 / 4 (50.0%)\n"
     "Greatest absolute difference: 0.2999999523162842 at index (2,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.09090910851955414 at index (0,) (up to 1.3e-06 allowed)"),
    (T([1., 2.]), T([2., 3.]), {},  # ties: the first index
     "Tensor-likes are not close!\n\nMismatched elements: 2 / 2 (100.0%)\n"
     "Greatest absolute difference: 1.0 at index (0,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.5 at index (0,) (up to 1.3e-06 allowed)"),
    (T([1., 0.]), T([1., 2e-5]), {},
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1.9999999494757503e-05 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 1.0 at index (1,) (up to 1.3e-06 allowed)"),
    (T([1.5, 2.5]), T([0., 0.]), {},  # relative difference to 0: inf
     "Tensor-likes are not close!\n\nMismatched elements: 2 / 2 (100.0%)\n"
     "Greatest absolute difference: 2.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: inf at index (0,) (up to 1.3e-06 allowed)"),
    (T([5, 7]), T([1, 2]), {},
     "Tensor-likes are not equal!\n\nMismatched elements: 2 / 2 (100.0%)\n"
     "Greatest absolute difference: 5 at index (1,)\n"
     "Greatest relative difference: 4.0 at index (0,)"),
    (T([1, 2]), T([1, 4]), dict(rtol=0.1, atol=0.),
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 2 at index (1,) (up to 0.0 allowed)\n"
     "Greatest relative difference: 0.5 at index (1,) (up to 0.1 allowed)"),
    (T([1., 2.], dtype=tgrad.float16), T([1., 2.01], dtype=tgrad.float16), {},
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.009765625 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.00485992431640625 at index (1,) (up to 0.001 allowed)"),
    (T([1., 2.], dtype=tgrad.bfloat16), T([1., 2.1], dtype=tgrad.bfloat16), {},
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.09375 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.044677734375 at index (1,) (up to 0.016 allowed)"),
    (T([1, 2], dtype=tgrad.int32), T([1, 3]), dict(check_dtype=False),  # promoted to int64
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\n"
     "Greatest relative difference: 0.3333333432674408 at index (1,)"),
])
def test_tensor_mismatch_messages(actual, expected, kwargs, text):
    _raises(AssertionError, text, actual, expected, **kwargs)


def test_nan_and_inf_messages():
    nan, inf = float("nan"), float("inf")
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
            "Greatest absolute difference: nan at index (0,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: nan at index (0,) (up to 1.3e-06 allowed)",
            T([nan]), T([nan]))
    assert_close(T([nan]), T([nan]), equal_nan=True)
    assert_close(T([1., nan]), T([1., nan]), rtol=0, atol=0, equal_nan=True)
    _raises(AssertionError,
            "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: nan at index (1,)\n"
            "Greatest relative difference: nan at index (1,)",
            T([1., nan]), T([1., nan]), rtol=0, atol=0)
    _raises(AssertionError,  # a NaN is the greatest difference even after a larger finite one
            "Tensor-likes are not close!\n\nMismatched elements: 3 / 3 (100.0%)\n"
            "Greatest absolute difference: nan at index (2,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: nan at index (2,) (up to 1.3e-06 allowed)",
            T([1., 2., nan]), T([2., 3., 1.]))
    _raises(AssertionError,  # equal_nan does not excuse the other element
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: 1.0 at index (0,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: 0.5 at index (0,) (up to 1.3e-06 allowed)",
            T([1., nan]), T([2., nan]), equal_nan=True)
    assert_close(T([inf, -inf]), T([inf, -inf]))
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: inf at index (0,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: nan at index (0,) (up to 1.3e-06 allowed)",
            T([inf, 1.]), T([-inf, 1.]))
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: inf at index (0,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: inf at index (0,) (up to 1.3e-06 allowed)",
            T([inf, 1.]), T([1e30, 1.]))


@pytest.mark.parametrize("actual, expected, text", [
    (T(1.5), T(1.0), "Scalars are not close!\n\nExpected 1.0 but got 1.5.\n"
     "Absolute difference: 0.5 (up to 1e-05 allowed)\n"
     "Relative difference: 0.5 (up to 1.3e-06 allowed)"),
    (T(1.5, dtype=tgrad.float64), T(1.0, dtype=tgrad.float64),
     "Scalars are not close!\n\nExpected 1.0 but got 1.5.\n"
     "Absolute difference: 0.5 (up to 1e-07 allowed)\n"
     "Relative difference: 0.5 (up to 1e-07 allowed)"),
    (T(3), T(4), "Scalars are not equal!\n\nExpected 4 but got 3.\nAbsolute difference: 1\n"
     "Relative difference: 0.25"),
    (T(True), T(False), "Scalars are not equal!\n\nExpected False but got True.\n"
     "Absolute difference: 1\nRelative difference: inf"),
    (T(float("nan")), T(float("nan")), "Scalars are not close!\n\nExpected nan but got nan.\n"
     "Absolute difference: nan (up to 1e-05 allowed)\n"
     "Relative difference: nan (up to 1.3e-06 allowed)"),
    (np.array(1.0), np.array(2.0), "Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
     "Absolute difference: 1.0 (up to 1e-07 allowed)\n"
     "Relative difference: 0.5 (up to 1e-07 allowed)"),
])
def test_zero_dim_tensors_give_the_scalar_message(actual, expected, text):
    _raises(AssertionError, text, actual, expected)


def test_attribute_mismatches():
    _raises(AssertionError, "The values for attribute 'shape' do not match: (2,) != (3,).",
            T([1., 2.]), T([1., 2., 3.]))
    _raises(AssertionError, "The values for attribute 'shape' do not match: (0, 3) != (0, 2).",
            tgrad.empty(0, 3), tgrad.empty(0, 2))
    _raises(AssertionError,
            "The values for attribute 'dtype' do not match: tgrad.float32 != tgrad.float64.",
            T([1., 2.]), T([1., 2.], dtype=tgrad.float64))
    _raises(AssertionError,
            "The values for attribute 'dtype' do not match: tgrad.int64 != tgrad.float32.",
            T([1, 2, 3]), T([1., 2., 3.]))
    assert_close(T([1., 2.]), T([1., 2.], dtype=tgrad.float64), check_dtype=False)
    assert_close(T([True, False]), T([1, 0]), check_dtype=False)
    # float16 with bfloat16: compared in float32 with the larger tolerances of the two
    assert_close(T([1., 2.], dtype=tgrad.float16), T([1., 2.01], dtype=tgrad.bfloat16),
                 check_dtype=False)
    t = T([[1., 2.], [3., 4.]]).t()
    _raises(AssertionError, "The values for attribute 'stride()' do not match: (1, 2) != (2, 1).",
            t, T([[1., 3.], [2., 4.]]), check_stride=True)
    assert_close(t, T([[1., 3.], [2., 4.]]))  # strides are not checked by default
    assert_close(t, T([[1., 3.], [2., 4.]]), check_layout=False)  # every tgrad tensor: strided


def test_tolerances_must_come_together():
    _raises(ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol.",
            T([1., 2.]), T([1., 2.]), rtol=1e-3)
    _raises(ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no rtol.",
            T([1., 2.]), T([1., 2.]), atol=1e-3)
    _raises(ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol.",
            1.0, 1.0, rtol=1e-3)


# ---------------------------------------------------------------- closeness decisions

_DEFAULTS = {tgrad.float16: (1e-3, 1e-5), tgrad.bfloat16: (1.6e-2, 1e-5),
             tgrad.float32: (1.3e-6, 1e-5), tgrad.float64: (1e-7, 1e-7)}


def _np_close(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool):
    """The reference: equal, both NaN with equal_nan, or a finite |a - e| <= atol + rtol |e|
    (float64 maths over values that are exact in every tested dtype's grid)."""
    a, e = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.abs(a - e)
    ok = (a == e) | (np.isfinite(d) & (d <= atol + rtol * np.abs(e)))
    if equal_nan:
        ok |= np.isnan(a) & np.isnan(e)
    return ok


@pytest.mark.parametrize("dtype", list(_DEFAULTS))
@pytest.mark.parametrize("equal_nan", [False, True])
def test_default_tolerances_against_numpy(dtype, equal_nan):
    rtol, atol = _DEFAULTS[dtype]
    rng = np.random.default_rng(3)
    e = rng.uniform(-4, 4, 64).astype(dtype.np)
    e[:4] = [0.0, np.inf, -np.inf, np.nan]
    e_np = e.astype(np.float64)
    # perturbations of 0.25x and 4x the allowed error, rounded to the dtype (far enough
    # from the boundary that the rounding of the allowed error itself cannot matter)
    for factor in (0.0, 0.25, 4.0):
        a = (e_np + factor * (atol + rtol * np.abs(e_np))).astype(dtype.np)
        a[:4] = [0.0, np.inf, np.inf, np.nan]  # 0 == 0, inf == inf, -inf != inf, NaN
        want = _np_close(a, e, rtol, atol, equal_nan)
        for i in range(0, 64, 8):
            ai, ei = T(a[i:i + 8], dtype=dtype), T(e[i:i + 8], dtype=dtype)
            if want[i:i + 8].all():
                assert_close(ai, ei, equal_nan=equal_nan)
            else:
                with pytest.raises(AssertionError, match="Tensor-likes are not close!") as info:
                    assert_close(ai, ei, equal_nan=equal_nan)
                n_bad = int((~want[i:i + 8]).sum())
                assert f"Mismatched elements: {n_bad} / 8 " in str(info.value)


@pytest.mark.parametrize("rtol, atol", [(0.1, 0.0), (0.0, 0.25), (0.05, 0.05)])
def test_explicit_tolerances_against_numpy(rtol, atol):
    rng = np.random.default_rng(4)
    e = rng.uniform(-2, 2, (5, 7))
    a = e + rng.uniform(-0.3, 0.3, (5, 7))
    want = _np_close(a, e, rtol, atol, False)
    assert 0 < want.sum() < want.size
    with pytest.raises(AssertionError) as info:
        assert_close(T(a), T(e), rtol=rtol, atol=atol)
    assert f"Mismatched elements: {int((~want).sum())} / 35 " in str(info.value)
    assert_close(T(np.where(want, a, e)), T(e), rtol=rtol, atol=atol)
    # integers with tolerances: |a - e| <= atol + rtol |e|
    ai, ei = T([10, 20, 30]), T([11, 20, 40])
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 3 "):
        assert_close(ai, ei, rtol=0.1, atol=0.0)  # |10-11| = 1 <= 1.1, |30-40| > 4


def test_noncontiguous_empty_and_requires_grad():
    base = T(np.arange(12.0).reshape(3, 4), dtype=tgrad.float32)
    view = base[:, 1::2]  # non-contiguous
    assert not view.is_contiguous()
    assert_close(view, T([[1., 3.], [5., 7.], [9., 11.]]))
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 6 (16.7%)\n"
            "Greatest absolute difference: 1.0 at index (2, 0) (up to 1e-05 allowed)\n"
            "Greatest relative difference: 0.125 at index (2, 0) (up to 1.3e-06 allowed)",
            view, T([[1., 3.], [5., 7.], [8., 11.]]))
    assert_close(tgrad.empty(0), tgrad.empty(0))
    assert_close(tgrad.empty(2, 0, dtype=tgrad.int64), tgrad.empty(2, 0, dtype=tgrad.int64))
    w = T([1., 2.], requires_grad=True)
    y = w * 2
    assert_close(y, T([2., 4.]))  # values only, no graph recorded
    assert w.grad is None and y.grad_fn is not None
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: 0.20000000298023224 at index (1,) "
            "(up to 1.3e-06 allowed)", w, T([1., 2.5]))
    p = nn.Parameter(T([1., 2.]))
    assert_close(p, T([1., 2.]))  # a subclass is directly related
    _raises(TypeError, "No comparison pair was able to handle inputs of type "
            "<class 'tgrad.nn.parameter.Parameter'> and <class 'tgrad.tensor.Tensor'>.",
            p, T([1., 2.]), allow_subclasses=False)


# ---------------------------------------------------------------- numbers and containers


def test_numbers():
    _raises(AssertionError, "Scalars are not close!\n\nExpected 1.0 but got 1.5.\n"
            "Absolute difference: 0.5 (up to 1e-07 allowed)\n"
            "Relative difference: 0.5 (up to 1e-07 allowed)", 1.5, 1.0)
    _raises(AssertionError, "Scalars are not equal!\n\nExpected 2 but got 1.\n"
            "Absolute difference: 1\nRelative difference: 0.5", 1, 2)
    _raises(AssertionError, "The (d)types do not match: <class 'float'> != <class 'int'>.",
            1.0, 1)
    assert_close(1.0, 1, check_dtype=False)
    assert_close(1.0, 1.0 + 1e-8)
    assert_close(float("inf"), float("inf"))
    _raises(AssertionError, "Scalars are not close!\n\nExpected 1e+308 but got inf.\n"
            "Absolute difference: inf (up to 1e-07 allowed)\n"
            "Relative difference: inf (up to 1e-07 allowed)", float("inf"), 1e308)
    _raises(AssertionError, "Scalars are not close!\n\nExpected nan but got nan.\n"
            "Absolute difference: nan (up to 1e-07 allowed)\n"
            "Relative difference: nan (up to 1e-07 allowed)", float("nan"), float("nan"))
    assert_close(float("nan"), float("nan"), equal_nan=True)
    _raises(AssertionError, "Scalars are not close!\n\nExpected (1+2j) but got (1+1j).\n"
            "Absolute difference: 1.0 (up to 1e-07 allowed)\n"
            "Relative difference: 0.4472135954999579 (up to 1e-07 allowed)", 1 + 1j, 1 + 2j)
    assert_close(np.float64(1.0), 1.0)
    assert_close(np.float32(1.0), 1.0)  # a NumPy scalar compares as its Python value
    assert_close(np.bool_(True), True)
    _raises(AssertionError, "Booleans mismatch: True is not False", True, False)
    _raises(AssertionError, "None mismatch: None is not 1", None, 1)
    assert_close(None, None)


def test_unrelated_types():
    _raises(TypeError, "No comparison pair was able to handle inputs of type "
            "<class 'tgrad.tensor.Tensor'> and <class 'float'>.", T([1.]), 1.0)
    _raises(TypeError, "No comparison pair was able to handle inputs of type "
            "<class 'tgrad.tensor.Tensor'> and <class 'numpy.ndarray'>.", T([1.]), np.array([1.]))
    _raises(TypeError, "No comparison pair was able to handle inputs of type "
            "<class 'str'> and <class 'str'>.", "a", "a")


def test_numpy_arrays_compare_as_tensors():
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: 0.10000000000000009 at index (1,) "
            "(up to 1e-07 allowed)\n"
            "Greatest relative difference: 0.04761904761904766 at index (1,) "
            "(up to 1e-07 allowed)", np.array([1., 2.]), np.array([1., 2.1]))
    _raises(AssertionError, "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: 1 at index (1,)\n"
            "Greatest relative difference: 0.3333333432674408 at index (1,)",
            np.array([1, 2], dtype=np.int32), np.array([1, 3], dtype=np.int32))
    bf = np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16)
    assert_close(bf, bf.copy())


def test_sequences_and_mappings():
    assert_close([T([1.]), 2.0, np.array(3.0)], (T([1.]), 2.0, np.array(3.0)))
    assert_close(OrderedDict([("foo", T(1.0)), ("bar", 2.0)]), {"bar": 2.0, "foo": T(1.0)})
    _raises(AssertionError, "The length of the sequences mismatch: 2 != 1",
            [T(1.), 2.], [T(1.)])
    _raises(AssertionError, "The length of the sequences mismatch: 2 != 3", (1, 2), [1, 2, 3])
    _raises(AssertionError, "The keys of the mappings do not match:\n"
            "Missing keys in the actual mapping: ['c']\n"
            "Additional keys in the actual mapping: ['b']", {"a": 1, "b": 2}, {"a": 1, "c": 2})
    _raises(AssertionError,
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: 1.0 at index (1,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: 0.3333333432674408 at index (1,) "
            "(up to 1.3e-06 allowed)\n\nThe failure occurred for item [1]['x']",
            [1, {"x": T([1., 2.])}], [1, {"x": T([1., 3.])}])
    _raises(AssertionError, "Scalars are not close!\n\nExpected 1.5 but got 1.0.\n"
            "Absolute difference: 0.5 (up to 1e-07 allowed)\n"
            "Relative difference: 0.3333333333333333 (up to 1e-07 allowed)\n\n"
            "The failure occurred for item [0]", [1.0], [1.5])
    _raises(AssertionError, "Scalars are not close!\n\nExpected 2.5 but got 2.0.\n"
            "Absolute difference: 0.5 (up to 1e-07 allowed)\n"
            "Relative difference: 0.2 (up to 1e-07 allowed)\n\n"
            "The failure occurred for item ['b'][1]", {"b": [1.0, 2.0]}, {"b": [1.0, 2.5]})
    # tolerance errors are found before any value is compared
    _raises(ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."
            "\n\nThe failure occurred for item [0]",
            [T([1.]), T([2.])], [T([5.]), T([2.])], rtol=1e-3)
    # structure errors ignore ``msg`` (as torch's)
    _raises(AssertionError, "The length of the sequences mismatch: 2 != 1", [1., 2.], [1.],
            msg="custom")
    _raises(AssertionError, "The keys of the mappings do not match:\n"
            "Missing keys in the actual mapping: ['b']\n"
            "Additional keys in the actual mapping: ['a']", {"a": 1}, {"b": 1},
            msg=lambda m: "X" + m)


def test_msg_string_and_callable():
    a, e = T([1., 2., 3.]), T([1., 2.5, 3.])
    generated = ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                 "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                 "Greatest relative difference: 0.20000000298023224 at index (1,) "
                 "(up to 1.3e-06 allowed)")
    _raises(AssertionError, "custom", a, e, msg="custom")
    _raises(AssertionError, "H\n" + generated + "\nF", a, e, msg=lambda m: "H\n" + m + "\nF")
    _raises(AssertionError, "H\n" + generated + "\n\nThe failure occurred for item [0]\nF",
            [a], [e], msg=lambda m: "H\n" + m + "\nF")
    _raises(AssertionError, "custom", 1.0, 2.0, msg="custom")
    _raises(AssertionError, "The values for attribute 'shape' do not match: (3,) != (2,).",
            a, e[:2], msg=lambda m: m)


def test_reachable_from_tgrad():
    assert tgrad.testing.assert_close is assert_close
    assert tgrad.testing.make_tensor is make_tensor


# ---------------------------------------------------------------- make_tensor


@pytest.mark.parametrize("dtype, low, high", [
    (tgrad.float32, -9, 9), (tgrad.float64, -9, 9), (tgrad.float16, -9, 9),
    (tgrad.bfloat16, -9, 9), (tgrad.int32, -9, 9), (tgrad.int64, -9, 9), (tgrad.bool, 0, 1)])
def test_make_tensor_defaults(dtype, low, high):
    t = make_tensor(4000, dtype=dtype, device="cpu")
    v = t.numpy().astype(np.float64)
    assert t.shape == (4000,) and t.dtype is dtype and t.device == tgrad.device("cpu")
    assert not t.requires_grad and t.is_contiguous()
    assert v.min() >= low and v.max() <= high
    if dtype.is_floating_point:
        assert v.min() < -8.5 and v.max() > 8.5 and len(np.unique(v)) > 100
    else:  # every integer of the range is drawn
        assert set(np.unique(v).tolist()) == set(range(low, high + 1))


def test_make_tensor_shapes_bounds_and_seed():
    assert make_tensor(2, 3, dtype=tgrad.float32, device="cpu").shape == (2, 3)
    assert make_tensor((2, 3), dtype=tgrad.float32, device="cpu").shape == (2, 3)
    assert make_tensor([2, 3], dtype=tgrad.float32, device="cpu").shape == (2, 3)
    assert make_tensor(dtype=tgrad.float32, device="cpu").shape == ()
    assert make_tensor(0, 4, dtype=tgrad.int64, device="cpu").shape == (0, 4)
    tgrad.manual_seed(7)
    a = make_tensor(5, 6, dtype=tgrad.float32, device="cpu", low=-1, high=1)
    tgrad.manual_seed(7)
    b = make_tensor(5, 6, dtype=tgrad.float32, device="cpu", low=-1, high=1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    v = a.numpy()
    assert v.min() >= -1 and v.max() < 1
    i = make_tensor(1000, dtype=tgrad.int32, device="cpu", low=0.5, high=2.5)  # ceil: [1, 3)
    assert set(np.unique(i.numpy()).tolist()) == {1, 2}
    i = make_tensor(2000, dtype=tgrad.int64, device="cpu", low=-20)  # default high 10
    assert i.numpy().min() == -20 and i.numpy().max() == 9
    big = make_tensor(1000, dtype=tgrad.float32, device="cpu", low=-1e39, high=1e39)
    fmax = float(np.finfo(np.float32).max)  # clamped to float32's range, drawn without inf
    assert np.isfinite(big.numpy()).all() and np.abs(big.numpy()).max() > fmax / 2
    with pytest.warns(FutureWarning, match="Passing `low==high` to "
                      "`torch.testing.make_tensor` for floating or complex types is deprecated"):
        same = make_tensor(2, 3, dtype=tgrad.float32, device="cpu", low=1.0, high=1.0)
    assert same.tolist() == [[1.0] * 3] * 2


def test_make_tensor_noncontiguous_exclude_zero_requires_grad():
    t = make_tensor(2, 3, dtype=tgrad.float32, device="cpu", noncontiguous=True)
    assert t.shape == (2, 3) and not t.is_contiguous() and t.stride() == (6, 2)
    one = make_tensor(1, dtype=tgrad.float32, device="cpu", noncontiguous=True)
    assert one.is_contiguous()  # fewer than two elements: ignored
    g = make_tensor(2, 2, dtype=tgrad.float64, device="cpu", requires_grad=True,
                    noncontiguous=True)
    assert g.requires_grad and g.grad_fn is None and not g.is_contiguous()
    (g * g).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), 2 * g.detach().numpy())
    z = make_tensor(1000, dtype=tgrad.int64, device="cpu", low=-0.5, high=1.5,
                    exclude_zero=True)  # [0, 2) without 0
    assert set(np.unique(z.numpy()).tolist()) == {1}
    zb = make_tensor(1000, dtype=tgrad.bool, device="cpu", exclude_zero=True)
    assert zb.numpy().all()
    for dt in (tgrad.float16, tgrad.float32):
        tgrad.manual_seed(1)
        plain = make_tensor(300, dtype=dt, device="cpu", low=-1e-3, high=1e-3)
        tgrad.manual_seed(1)
        nz = make_tensor(300, dtype=dt, device="cpu", low=-1e-3, high=1e-3, exclude_zero=True)
        p, n = plain.numpy(), nz.numpy()
        tiny = ml_dtypes.finfo(dt.np).tiny
        np.testing.assert_array_equal(n, np.where(p == 0, tiny, p))
    tgrad.manual_seed(0)
    nz = make_tensor(4, 4, dtype=tgrad.float32, device="cpu", low=0, high=1e-30,
                     exclude_zero=True, noncontiguous=True)
    assert (nz.numpy() != 0).all() and not nz.is_contiguous()


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(dtype=tgrad.int64, requires_grad=True), ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
     "dtype=tgrad.int64"),
    (dict(dtype=tgrad.bool, requires_grad=True), ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
     "dtype=tgrad.bool"),
    (dict(dtype=tgrad.float32, low=2, high=1), ValueError,
     "`low` must be less than `high`, but got 2 >= 1"),
    (dict(dtype=tgrad.int32, low=3, high=3), ValueError,
     "`low` must be less than `high`, but got 3 >= 3"),
    (dict(dtype=tgrad.int64, low=12), ValueError,
     "`low` must be less than `high`, but got 12 >= 10"),
    (dict(dtype=tgrad.float32, low=float("nan"), high=1), ValueError,
     "`low` and `high` cannot be NaN, but got low=nan and high=1"),
    (dict(dtype=tgrad.int32, low=2 ** 40, high=2 ** 41), ValueError,
     "The value interval specified by `low` and `high` is [1099511627776, 2199023255552), but "
     "tgrad.int32 only supports [-2147483648, 2147483648)"),
    (dict(dtype=tgrad.float16, low=1e6, high=1e7), ValueError,
     "The value interval specified by `low` and `high` is [1000000.0, 10000000.0), but "
     "tgrad.float16 only supports [-65504.0, 65504.0)"),
    (dict(dtype=tgrad.bool, low=5, high=10), ValueError,
     "The value interval specified by `low` and `high` is [5, 10), but tgrad.bool only "
     "supports [0, 2)"),
])
def test_make_tensor_errors(kwargs, exc, text):
    with pytest.raises(exc) as info:
        make_tensor(2, 3, device="cpu", **kwargs)
    assert str(info.value) == text


# ---------------------------------------------------------------- cuda (interpreter)

CUDA_SCRIPT = textwrap.dedent(r"""
    import json
    import numpy as np
    import tgrad
    from tgrad.testing import assert_close, make_tensor
    assert tgrad.cuda.is_interpreted()
    res = {}
    a = tgrad.tensor([1.0, 2.0, 3.0], device="cuda")
    assert_close(a, tgrad.tensor([1.0, 2.0, 3.0], device="cuda"))
    def err(*args, **kw):
        try:
            assert_close(*args, **kw)
        except AssertionError as e:
            return str(e)
    res["values"] = err(a, tgrad.tensor([1.0, 2.5, 3.0], device="cuda"))
    res["device"] = err(a, tgrad.tensor([1.0, 2.0, 3.0]))
    res["host"] = err(a, tgrad.tensor([1.0, 2.0, 3.0]), check_device=False)
    tgrad.manual_seed(5)
    m = make_tensor(3, 4, dtype=tgrad.float32, device="cuda", low=-2, high=2,
                    noncontiguous=True, exclude_zero=True, requires_grad=True)
    tgrad.manual_seed(5)
    m2 = make_tensor(3, 4, dtype=tgrad.float32, device="cuda", low=-2, high=2,
                     noncontiguous=True, exclude_zero=True, requires_grad=True)
    res["make"] = [str(m.device), list(m.shape), m.is_contiguous(), m.requires_grad]
    res["same_seed"] = err(m, m2)
    v = m.detach().cpu().numpy()
    res["range"] = bool(v.min() >= -2 and v.max() < 2 and (v != 0).all())
    i = make_tensor(500, dtype=tgrad.int32, device="cuda")
    res["ints"] = sorted(set(i.cpu().numpy().tolist()))
    print(json.dumps(res))
""")


def test_interpreted_cuda():
    res = run_json(CUDA_SCRIPT)
    assert res["values"] == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1,) "
        "(up to 1.3e-06 allowed)")
    assert res["device"] == "The values for attribute 'device' do not match: cuda:0 != cpu."
    assert res["host"] is None
    assert res["make"] == ["cuda:0", [3, 4], False, True]
    assert res["same_seed"] is None and res["range"]
    assert res["ints"] == list(range(-9, 10))


def test_complex_tensors_use_complex_tolerances_and_moduli():
    # complex64/complex128 take float32's / float64's default tolerances; differences are
    # moduli |a - e| (hand-computed: |(2+1j) - (2+3j)| = 2, relative 2 / |2+3j| = 2/sqrt(13))
    a = tgrad.tensor([1 + 1j, 2 + 1j, 3 + 1j], dtype=tgrad.complex128)
    assert_close(a, a + 5e-8)  # within float64's rtol 1e-7 / atol 1e-7
    e = tgrad.tensor([1 + 1j, 2 + 3j, 3 + 1j], dtype=tgrad.complex128)
    with pytest.raises(AssertionError) as info:
        assert_close(a, e)
    assert str(info.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 2.0 at index (1,) (up to 1e-07 allowed)\n"
        f"Greatest relative difference: {2 / abs(2 + 3j)} at index (1,) (up to 1e-07 allowed)")
    c64 = tgrad.tensor([1 + 1j], dtype=tgrad.complex64)
    assert_close(c64, c64 * (1 + 1e-6))  # float32's rtol 1.3e-6
    with pytest.raises(AssertionError, match=r"difference: nan at index \(0,\)"):
        assert_close(c64, tgrad.tensor([complex("nan+1j")], dtype=tgrad.complex64))
    with pytest.raises(AssertionError) as info:  # a 0-d complex tensor: the scalar message
        assert_close(tgrad.tensor(2 + 0j, dtype=tgrad.complex128),
                     tgrad.tensor(2.5 + 0j, dtype=tgrad.complex128))
    assert str(info.value) == (
        "Scalars are not close!\n\nExpected (2.5+0j) but got (2+0j).\n"
        "Absolute difference: 0.5 (up to 1e-07 allowed)\nRelative difference: 0.2 (up to 1e-07 "
        "allowed)")


def test_float8_tensors_compare_bitwise():
    x = tgrad.tensor([1.0, 2.0, 3.0]).to(tgrad.float8_e4m3fn)
    assert_close(x, x.clone())
    with pytest.raises(AssertionError) as info:
        assert_close(x, tgrad.tensor([1.0, 2.0, 4.0]).to(tgrad.float8_e4m3fn))
    assert str(info.value) == ("Tensor-likes are not 'equal'!\n\nMismatched elements: 1 / 3 "
                               "(33.3%)\nThe first mismatched element is at index (2,).")
    with pytest.raises(AssertionError, match=r"^Rtol=0.1 and atol=0.1 are not supported for "
                                             r"bitwise comparison of low dimensional floats"):
        assert_close(x, x, rtol=0.1, atol=0.1)


def test_assert_allclose_is_deprecated_with_its_own_defaults():
    from tgrad.testing import assert_allclose
    x = tgrad.tensor([1.0, 2.0, float("nan")])
    with pytest.warns(FutureWarning, match=r"assert_allclose\(\)` is deprecated"):
        assert_allclose(x, [1.0, 2.00015, float("nan")])  # rtol 1e-4, NaN == NaN, a list
    with pytest.warns(FutureWarning), pytest.raises(AssertionError) as info:
        assert_allclose(x, [1.0, 2.0003, float("nan")])
    assert "at index (1,) (up to 1e-05 allowed)" in str(info.value)
    assert "at index (1,) (up to 0.0001 allowed)" in str(info.value)
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="NaN"):
        assert_allclose(x, x, equal_nan=False, msg="NaN")
    with pytest.warns(FutureWarning):  # check_dtype=False: float64 vs float32, their defaults
        assert_allclose(tgrad.tensor([1.0], dtype=tgrad.float64), tgrad.tensor([1.00005]))


@pytest.mark.parametrize("dtype", [tgrad.complex64, tgrad.complex128])
def test_make_tensor_complex(dtype):
    tgrad.manual_seed(0)
    x = make_tensor(50, dtype=dtype, device="cpu", low=-2, high=3, requires_grad=True)
    assert x.dtype is dtype and x.shape == (50,) and x.requires_grad
    parts = tgrad.view_as_real(x.detach()).numpy()  # both parts drawn from [low, high)
    assert parts.min() >= -2 and parts.max() < 3 and np.unique(parts[:, 1]).size > 10
    y = make_tensor(3, 4, dtype=dtype, device="cpu", noncontiguous=True, exclude_zero=True)
    assert y.shape == (3, 4) and not y.is_contiguous() and bool((y != 0).all())


@pytest.mark.parametrize("dtype", [tgrad.float8_e4m3fn, tgrad.float8_e5m2])
def test_make_tensor_float8(dtype):
    tgrad.manual_seed(0)
    x = make_tensor(40, dtype=dtype, device="cpu", low=-1, high=1, requires_grad=True)
    assert x.dtype is dtype and not x.requires_grad  # as PyTorch: float8 never requires grad
    v = x.to(tgrad.float32).numpy()
    assert v.min() >= -1 and v.max() <= 1  # rounded from float32 draws in [-1, 1)
    z = make_tensor(8, dtype=dtype, device="cpu", low=-1e-9, high=1e-9, exclude_zero=True)
    tiny = float(ml_dtypes.finfo(dtype.np).tiny)
    assert (z.to(tgrad.float32).numpy() == tiny).all()  # every draw rounds to 0: replaced
    with pytest.raises(ValueError, match="`low` must be less than `high`"):  # no full() warning
        make_tensor(2, dtype=dtype, device="cpu", low=1, high=1)
    with pytest.raises(TypeError, match="float8_e8m0fnu' is not supported"):
        make_tensor(2, dtype=tgrad.float8_e8m0fnu, device="cpu")


def test_make_tensor_low_equal_high_and_memory_format():
    # low == high fills with that value in every floating dtype (the half draw's "below
    # high" rounding pushed it one step down); exclude_zero then gives the smallest normal
    for dt in (tgrad.float16, tgrad.bfloat16, tgrad.float32):
        with pytest.warns(FutureWarning, match="low==high"):
            t = make_tensor(3, dtype=dt, device="cpu", low=5, high=5)
        assert t.tolist() == [5.0, 5.0, 5.0]
    with pytest.warns(FutureWarning):
        z = make_tensor(2, dtype=tgrad.float16, device="cpu", low=0, high=0, exclude_zero=True)
    assert z.tolist() == [float(np.finfo(np.float16).tiny)] * 2
    assert tgrad.empty(2, dtype=tgrad.bfloat16).uniform_(1.5, 1.5).tolist() == [1.5, 1.5]
    t = make_tensor(2, 3, dtype=tgrad.float32, device="cpu", memory_format=tgrad.contiguous_format)
    assert t.shape == (2, 3) and t.is_contiguous()
    with pytest.raises(ValueError, match="`noncontiguous` and `memory_format` are mutually "
                                         "exclusive"):
        make_tensor(2, dtype=tgrad.float32, device="cpu", noncontiguous=True,
                    memory_format=tgrad.contiguous_format)
    cl = make_tensor(1, 2, 3, 4, dtype=tgrad.float32, device="cpu",
                     memory_format=tgrad.channels_last)
    assert cl.is_contiguous(memory_format=tgrad.channels_last) and cl.stride() == (24, 1, 8, 2)
