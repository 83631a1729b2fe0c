"""tgrad.testing: ``torch.testing``'s ``assert_close``, ``make_tensor`` and the deprecated
``assert_allclose`` for tgrad tensors.

``assert_close(actual, expected)`` compares tensors, Python numbers (and NumPy scalars),
NumPy arrays (with each other: converted by ``tgrad.as_tensor``), ``None`` and booleans,
recursing through sequences and mappings, with PyTorch's rules, default tolerances and
error messages. Tensor values are compared by ``tgrad.isclose`` on their device (copied
to the host only to describe a mismatch) and without recording a graph. ``make_tensor``
draws a random tensor of a shape, dtype and device from tgrad's generator
(``tgrad.manual_seed`` makes it reproducible).
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings
from typing import Any, Callable, NoReturn

import ml_dtypes
import numpy as np

from tgrad import dtypes
from tgrad.tensor import Tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# PyTorch's default (rtol, atol) per dtype; every other dtype (integers, bool) is (0, 0).
_DTYPE_PRECISIONS = {
    dtypes.float16: (0.001, 1e-5),
    dtypes.bfloat16: (0.016, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
    dtypes.complex64: (1.3e-6, 1e-5),
    dtypes.complex128: (1e-7, 1e-7),  # also Python complex numbers
}


class _FailureError(Exception):
    """A failure found while comparing: its exception type, message and the item id."""

    def __init__(self, type_: type, msg: str, *, id_: tuple = ()) -> None:
        super().__init__(msg)
        self.type = type_
        self.msg = msg
        self.id = id_

    def to_error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              f"{''.join(str([item]) for item in self.id)}")
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _UnsupportedError(Exception):
    """A pair kind cannot handle the inputs: try the next kind."""


def _tolerances(*keys, rtol: float | None, atol: float | None, id_: tuple) -> tuple:
    if (rtol is None) ^ (atol is None):
        raise _FailureError(ValueError,
                         f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.", id_=id_)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(k, (0.0, 0.0)) for k in keys])
    return max(rtols), max(atols)


def _mismatch_msg(identifier: str, extra: str, abs_diff, abs_idx, atol: float, rel_diff,
                  rel_idx, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind: str, diff, idx, tol: float) -> str:
        if idx is None:
            text = f"{kind.title()} difference: {diff}"
        else:
            text = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            text += f" (up to {tol} allowed)"
        return text + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


class _NonePair:
    def __init__(self, actual, expected, id_: tuple, **_options) -> None:
        if not (actual is None or expected is None):
            raise _UnsupportedError
        self.actual, self.expected, self.id = actual, expected, id_

    def compare(self) -> None:
        if not (self.actual is None and self.expected is None):
            raise _FailureError(AssertionError,
                             f"None mismatch: {self.actual} is not {self.expected}", id_=self.id)


class _BooleanPair:
    def __init__(self, actual, expected, id_: tuple, **_options) -> None:
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _UnsupportedError
        self.actual, self.expected, self.id = bool(actual), bool(expected), id_

    def compare(self) -> None:
        if self.actual is not self.expected:
            raise _FailureError(AssertionError,
                             f"Booleans mismatch: {self.actual} is not {self.expected}",
                             id_=self.id)


def _number_key(x) -> object:
    if isinstance(x, complex):
        return dtypes.complex128
    return dtypes.float64 if isinstance(x, float) else dtypes.int64


class _NumberPair:
    def __init__(self, actual, expected, id_: tuple, *, rtol, atol, equal_nan: bool,
                 check_dtype: bool, **_options) -> None:
        if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
            raise _UnsupportedError
        self.actual, self.expected = (x.item() if isinstance(x, np.number) else x
                                      for x in (actual, expected))
        self.id = id_
        self.rtol, self.atol = _tolerances(_number_key(self.actual), _number_key(self.expected),
                                           rtol=rtol, atol=atol, id_=id_)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self) -> None:
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            raise _FailureError(AssertionError,
                             f"The (d)types do not match: {type(a)} != {type(e)}.", id_=self.id)
        if a == e:
            return
        if self.equal_nan and cmath.isnan(a) and cmath.isnan(e):
            return
        abs_diff = abs(a - e)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(e):
            return
        raise _FailureError(AssertionError, _scalar_mismatch_msg(a, e, self.rtol, self.atol),
                         id_=self.id)


def _to_tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from tgrad.ops.creation import as_tensor
    try:
        return as_tensor(x)
    except Exception:
        raise _UnsupportedError from None


def _host(t: Tensor) -> np.ndarray:
    """The values of ``t`` as a NumPy array on the host (no graph recorded)."""
    return np.asarray(t.detach().cpu().numpy())


def _matches(a: Tensor, e: Tensor, dt: dtypes.DType, rtol: float, atol: float,
             equal_nan: bool) -> Tensor:
    """tgrad.isclose of a and e in the comparison dtype ``dt``, on their device (the host
    when they differ): a bool tensor, nothing copied to the host. A floating ``dt`` takes
    the tolerances rounded to it, as NumPy's arithmetic with Python floats does (so a half
    dtype's boundary cases stay as before)."""
    from tgrad.ops.composite import isclose
    if a.device != e.device:
        a, e = a.cpu(), e.cpu()
    if dt.is_floating_point:
        rtol, atol = (float(np.asarray(tol).astype(dt.np)) for tol in (rtol, atol))
    return isclose(a.detach().to(dt), e.detach().to(dt), rtol, atol, equal_nan)


def _max_at(x: np.ndarray) -> tuple:
    """torch.max(x, 0) of a flat array: the maximum (NaN if any) and its first index."""
    nans = np.flatnonzero(np.isnan(x.astype(np.float64)))
    idx = int(nans[0]) if nans.size else int(np.argmax(x))
    return x[idx], idx


def _tensor_mismatch_msg(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float,
                         atol: float) -> str:
    n = matches.size
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    # complex differences are moduli: real floats, as PyTorch's abs of a complex tensor
    floating = a.dtype.kind in "fc" or a.dtype == ml_dtypes.bfloat16
    a_flat, e_flat, m_flat = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if not floating:
        a_flat, e_flat = a_flat.astype(np.int64), e_flat.astype(np.int64)
    def modulus(x: np.ndarray) -> np.ndarray:  # hypot: NumPy's complex abs can be an ulp off
        return np.hypot(x.real, x.imag) if x.dtype.kind == "c" else np.abs(x)

    with np.errstate(all="ignore"):
        abs_diff = modulus(a_flat - e_flat)
        abs_diff[m_flat] = 0
        if floating:
            rel_diff = abs_diff / modulus(e_flat)
        else:  # true division of integers: the default float dtype
            default = dtypes.get_default_dtype().np
            rel_diff = abs_diff.astype(default) / np.abs(e_flat).astype(default)
    rel_diff[m_flat] = 0
    max_abs, abs_idx = _max_at(abs_diff)
    max_rel, rel_idx = _max_at(rel_diff)
    as_py = float if floating else int

    def unravel(i: int) -> tuple:
        return tuple(int(k) for k in np.unravel_index(i, matches.shape))

    return _mismatch_msg("Tensor-likes", extra, as_py(max_abs), unravel(abs_idx), atol,
                         float(max_rel), unravel(rel_idx), rtol)


class _TensorLikePair:
    def __init__(self, actual, expected, id_: tuple, *, allow_subclasses: bool, rtol, atol,
                 equal_nan: bool, check_device: bool, check_dtype: bool, check_layout: bool,
                 check_stride: bool, **_options) -> None:
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _UnsupportedError
        self.actual, self.expected = _to_tensor(actual), _to_tensor(expected)
        self.id = id_
        self.rtol, self.atol = _tolerances(self.actual.dtype, self.expected.dtype, rtol=rtol,
                                           atol=atol, id_=id_)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_stride = check_stride  # tgrad tensors are all strided: check_layout is moot

    def _fail(self, msg: str) -> NoReturn:
        raise _FailureError(AssertionError, msg, id_=self.id)

    def _attribute(self, name: str, a, e) -> None:
        if a != e:
            self._fail(f"The values for attribute '{name}' do not match: {a} != {e}.")

    def compare(self) -> None:
        a, e = self.actual, self.expected
        self._attribute("shape", tuple(a.shape), tuple(e.shape))
        if self.check_stride:
            self._attribute("stride()", tuple(a.stride()), tuple(e.stride()))
        if self.check_device:
            self._attribute("device", a.device, e.device)
        if self.check_dtype:
            self._attribute("dtype", a.dtype, e.dtype)
        dt = dtypes.promote_types(a.dtype, e.dtype)
        bitwise = dt.is_floating_point and dt.itemsize == 1  # float8: compared exactly
        if bitwise and (self.rtol != 0.0 or self.atol != 0.0):
            self._fail(f"Rtol={self.rtol} and atol={self.atol} are not supported for bitwise "
                       f"comparison of low dimensional floats. Please use rtol=0.0 and "
                       f"atol=0.0.")
        matches = _matches(a, e, dt, self.rtol, self.atol, self.equal_nan)
        if bool(matches.all()):  # the one read of the device on success
            return
        a_np, e_np = (_host(t).astype(dt.np, copy=False) for t in (a, e))
        matches = _host(matches)
        if a_np.shape == ():
            as_py = (lambda x: x.item()) if dt.category < 2 else (
                complex if dt.is_complex else float)
            self._fail(_scalar_mismatch_msg(as_py(a_np), as_py(e_np), self.rtol, self.atol))
        if bitwise:
            n, mismatches = matches.size, matches.size - int(matches.sum())
            first = tuple(int(i) for i in np.argwhere(~matches)[0])
            self._fail(f"Tensor-likes are not 'equal'!\n\nMismatched elements: {mismatches} / "
                       f"{n} ({mismatches / n:.1%})\nThe first mismatched element is at index "
                       f"{first}.")
        self._fail(_tensor_mismatch_msg(a_np, e_np, matches, self.rtol, self.atol))


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate(actual, expected, id_: tuple, options: dict) -> list:
    if (isinstance(actual, collections.abc.Sequence) and not isinstance(actual, str)
            and isinstance(expected, collections.abc.Sequence)
            and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _FailureError(AssertionError, f"The length of the sequences mismatch: "
                             f"{len(actual)} != {len(expected)}", id_=id_)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_originate(actual[i], expected[i], (*id_, i), options))
        return pairs
    if (isinstance(actual, collections.abc.Mapping)
            and isinstance(expected, collections.abc.Mapping)):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _FailureError(AssertionError,
                             f"The keys of the mappings do not match:\n"
                             f"Missing keys in the actual mapping: "
                             f"{sorted(expected_keys - actual_keys)}\n"
                             f"Additional keys in the actual mapping: "
                             f"{sorted(actual_keys - expected_keys)}", id_=id_)
        keys: Any = actual_keys
        with contextlib.suppress(Exception):  # a deterministic order where keys sort
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_originate(actual[key], expected[key], (*id_, key), options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id_, **options)]
        except _UnsupportedError:
            continue
    raise _FailureError(TypeError, f"No comparison pair was able to handle inputs of type "
                     f"{type(actual)} and {type(expected)}.", id_=id_)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Assert that ``actual`` and ``expected`` are close (``torch.testing.assert_close``).

    Tensors (any shape, including 0-d and empty; both must have the same shape) are close
    when every element satisfies |actual - expected| <= atol + rtol * |expected|; infinities
    only match themselves and NaN matches NaN only with ``equal_nan``. Unless disabled they
    must also have the same device (``check_device``; otherwise both are compared on the
    host) and dtype (``check_dtype``; otherwise both are promoted by ``promote_types``), and
    with ``check_stride`` the same strides. Default tolerances per dtype (for two dtypes,
    the larger of each): float16 1e-3 / 1e-5, bfloat16 1.6e-2 / 1e-5, float32 1.3e-6 / 1e-5,
    float64 1e-7 / 1e-7, complex64 and complex128 as float32 and float64 (differences are
    moduli), integers, bool and float8 0 / 0 (float8 only compares exactly, as PyTorch's
    bitwise comparison); ``rtol`` and ``atol`` must be given
    together. Python numbers (int as int64, float as float64, complex) and NumPy scalars are
    compared likewise (mixed int/float only with ``check_dtype=False``), two NumPy arrays as
    tensors, ``None`` and booleans by identity; sequences (not strings) and mappings are
    compared item by item. A tensor is never compared with a number or an array (TypeError).

    Raises AssertionError with PyTorch's message ("Tensor-likes are not close!" and the
    mismatch statistics, "Scalars are not close!", "... not equal!" when both tolerances are
    0, "The values for attribute 'shape' do not match: (2,) != (3,).", ...); ``msg`` replaces
    it (a string) or rewrites it (a callable taking the generated message). ValueError when
    only one of ``rtol`` / ``atol`` is given, TypeError for inputs no rule handles.
    """
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        pairs = _originate(actual, expected, (), options)
    except _FailureError as error:
        raise error.to_error() from None  # as PyTorch: structure errors ignore ``msg``
    for pair in pairs:
        try:
            pair.compare()
        except _FailureError as error:
            raise error.to_error(msg) from None


# assert_allclose's own defaults (float16 1e-3 / 1e-3, float32 1e-4 / 1e-5, float64 1e-5 / 1e-8)
_ALLCLOSE_PRECISIONS = {
    dtypes.float16: (1e-3, 1e-3),
    dtypes.float32: (1e-4, 1e-5),
    dtypes.float64: (1e-5, 1e-8),
}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated ``torch.testing.assert_allclose``: warns (FutureWarning) and compares with
    ``assert_close(..., check_dtype=False, check_device=True, check_stride=False)``.

    Non-tensors are made tensors (``expected`` in ``actual``'s dtype); NaN equals NaN by
    default; when neither tolerance is given they are the larger of each dtype's (float16
    1e-3 / 1e-3, float32 1e-4 / 1e-5, float64 1e-5 / 1e-8, others 0 / 0).
    """
    __tracebackhide__ = True
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    from tgrad.ops.creation import tensor
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtols, atols = zip(*[_ALLCLOSE_PRECISIONS.get(t.dtype, (0.0, 0.0))
                             for t in (actual, expected)])
        rtol, atol = max(rtols), max(atols)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


def make_tensor(*shape: int | tuple | list, dtype: Any, device: Any,
                low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` (ints, or one tuple/list) with values drawn uniformly from
    [low, high) by tgrad's generator (``torch.testing.make_tensor``). ``memory_format``:
    the layout (``contiguous_format``, ``preserve_format``: row-major; ``channels_last`` /
    ``channels_last_3d``: PyTorch's NHWC / NDHWC strides); with ``noncontiguous`` PyTorch's
    ValueError.

    Defaults: bool [0, 2), integers [-9, 10), floats [-9, 9) (complex: both parts; float8:
    drawn in float32, then rounded; float8_e8m0fnu is a TypeError). Bounds outside the dtype's
    finite range are clamped to it; integer bounds are rounded up. ``noncontiguous`` (for
    more than one element) returns every second element of a tensor twice as long in the
    last dim (offset 1); ``exclude_zero`` replaces zeros by 1 (bool, integers) or the
    dtype's smallest normal number; ``requires_grad`` is for floating and complex dtypes
    (float8 results never require grad, as PyTorch's).

    Raises ValueError (PyTorch's texts) for ``requires_grad`` with a bool or integer dtype,
    NaN bounds, ``low >= high``, or an interval outside the dtype's range; ``low == high``
    for a floating dtype warns (FutureWarning) and fills with that value.
    """
    if memory_format is not None:
        if noncontiguous:
            raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                             f"exclusive, but got noncontiguous={noncontiguous} and "
                             f"memory_format={memory_format}")
    dt = dtypes.as_dtype(dtype)
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    float8 = dt in dtypes.FLOAT8_DTYPES
    if dt is dtypes.float8_e8m0fnu:  # not in PyTorch's make_tensor either
        raise TypeError(f"The requested dtype '{dt}' is not supported by "
                        f"torch.testing.make_tensor(). To request support, file an issue at: "
                        f"https://github.com/pytorch/pytorch/issues")
    floating = (dt.is_floating_point and not float8) or dt.is_complex  # PyTorch's set
    integral = dt.category < 2  # bool and integers
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dt}")

    def bounds(lowest: float, highest: float, default_low: float, default_high: float):
        lo = low if low is not None else default_low
        hi = high if high is not None else default_high
        if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
        if lo == hi and floating:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                          "complex types is deprecated since 2.1 and will be removed in 2.3. "
                          "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
        elif lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        elif hi < lowest or lo >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is [{lo}, "
                             f"{hi}), but {dt} only supports [{lowest}, {highest})")
        lo, hi = min(max(lo, lowest), highest), min(max(hi, lowest), highest)
        return (math.ceil(lo), math.ceil(hi)) if integral else (lo, hi)

    from tgrad.ops.complex_ops import view_as_real
    from tgrad.ops.creation import empty, randint

    def uniform_(t: Tensor, lo: float, hi: float) -> None:
        if hi - lo >= float(ml_dtypes.finfo(t.dtype.np).max):  # the span overflows: draw
            t.uniform_(lo / 2, hi / 2).mul_(2)                 # half of it, then double
        else:
            t.uniform_(lo, hi)

    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dt is dtypes.bool_:
        lo, hi = bounds(0, 2, 0, 2)
        result = randint(lo, hi, shape, dtype=dtypes.int64, device=device) != 0
    elif integral:
        info = np.iinfo(dt.np)
        # randint cannot draw int64's maximum (as PyTorch's): the bound stays exclusive.
        lo, hi = bounds(int(info.min), int(info.max) + (dt is not dtypes.int64), -9, 10)
        result = randint(lo, hi, shape, dtype=dt, device=device)
    else:
        info = ml_dtypes.finfo(dt.np)  # NumPy's finfo, bfloat16's and float8's too
        lo, hi = bounds(float(info.min), float(info.max), -9, 9)
        if float8:  # drawn in float32, then rounded (as PyTorch)
            result = empty(shape, dtype=dtypes.float32, device=device)
            uniform_(result, lo, hi)
            result = result.to(dt)
        else:  # complex: real and imaginary parts drawn alike
            result = empty(shape, dtype=dt, device=device)
            uniform_(view_as_real(result) if dt.is_complex else result, lo, hi)
    if noncontiguous:
        result = result[..., 1::2]
    if exclude_zero:
        result.masked_fill_(result == 0, 1 if integral else float(info.tiny))
    if floating:
        result.requires_grad_(requires_grad)
    if memory_format is not None:
        from tgrad.ops.movement import _check_format, laid_out
        _check_format("make_tensor", result, memory_format)
        result = laid_out(result, memory_format)
    return result
