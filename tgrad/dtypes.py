"""tgrad's dtypes and PyTorch's type-promotion rules.

A DType wraps the NumPy dtype that stores it (bfloat16 comes from ml_dtypes). Promotion
follows PyTorch: categories bool < integer < floating < complex; within a category the
wider type wins (float16 with bfloat16 gives float32, uint8 with int8 gives int16); a
complex type with a float type takes the wider of their widths (complex64 with float64
gives complex128); across priorities (dimensioned tensors, then 0-d tensors, then Python
scalars) a lower-priority operand only changes the result when it is of a higher category,
and a complex one then keeps the higher-priority float's width (a float64 tensor plus 1j
is complex128, a float32 tensor plus a 0-d complex128 tensor complex64).

complex64/complex128 (CPU only) are stored as NumPy's complex64/complex128. PyTorch's
complex32 (ComplexHalf) does not exist in tgrad: where PyTorch would make it (a float16
tensor plus 1j) tgrad gives complex64.

The float8 dtypes (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
float8_e8m0fnu; the last three CPU only) are stored as ml_dtypes' types and, as in PyTorch,
are storage formats: they are made, converted (``to_float8``: PyTorch's rounding, not
NumPy's), viewed, indexed, joined and compared for equality, but most arithmetic raises
PyTorch's NotImplementedError and they promote with no other dtype ("Promotion for Float8
Types is not supported").
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np


class DType:
    """A tensor element type, printed as ``tgrad.float32``."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "category",
                 "rank")

    def __init__(self, name: str, np_dtype, category: int, rank: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2  # False for complex dtypes, as PyTorch
        self.is_complex = category == 3
        self.rank = rank  # width order inside the category

    @property
    def is_signed(self) -> bool:
        # bool, uint8 and float8_e8m0fnu (no sign bit) are unsigned
        return self.category != 0 and self.np.kind != "u" and self.name != "float8_e8m0fnu"

    def to_complex(self) -> DType:
        """PyTorch's ``torch.dtype.to_complex``: the complex dtype of this width (float32
        and bfloat16 -> complex64, float64 -> complex128, a complex dtype itself). float16
        -> complex32 raises (tgrad has no complex32); bool, integer and float8 dtypes raise
        PyTorch's RuntimeError."""
        if self.is_complex:
            return self
        if self is float16:
            raise RuntimeError("float16.to_complex(): its complex dtype is complex32 "
                               "(ComplexHalf), which tgrad does not have; convert to "
                               "float32 first (float32.to_complex() is complex64)")
        if self in (bfloat16, float32):
            return complex64
        if self is float64:
            return complex128
        raise RuntimeError(f"Unknown Complex ScalarType for {SCALAR_TYPE_NAMES[self]}")

    def to_real(self) -> DType:
        """PyTorch's ``torch.dtype.to_real``: the dtype of a complex dtype's parts
        (complex64 -> float32, complex128 -> float64); every real dtype is returned as is."""
        if self is complex64:
            return float32
        return float64 if self is complex128 else self

    def __repr__(self) -> str:
        return f"tgrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = DType("bool", np.bool_, 0, 0)
uint8 = DType("uint8", np.uint8, 1, 0)
int8 = DType("int8", np.int8, 1, 0)
int16 = DType("int16", np.int16, 1, 1)
int32 = DType("int32", np.int32, 1, 2)
int64 = DType("int64", np.int64, 1, 3)
float16 = DType("float16", np.float16, 2, 1)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, 2, 1)
float32 = DType("float32", np.float32, 2, 2)
float64 = DType("float64", np.float64, 2, 3)
# complex: the rank is that of the float type of each part (complex64 pairs float32s)
complex64 = DType("complex64", np.complex64, 3, 2)
complex128 = DType("complex128", np.complex128, 3, 3)
# float8 (storage types: see the module docstring); e8m0fnu is unsigned (powers of two only)
float8_e4m3fn = DType("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 2, 0)
float8_e5m2 = DType("float8_e5m2", ml_dtypes.float8_e5m2, 2, 0)
float8_e4m3fnuz = DType("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 2, 0)
float8_e5m2fnuz = DType("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 2, 0)
float8_e8m0fnu = DType("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 2, 0)

# The real dtypes (every device); the complex ones are CPU-only
ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
FLOATING_DTYPES = (float16, bfloat16, float32, float64)
COMPLEX_DTYPES = (complex64, complex128)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
FLOAT8_NP = frozenset(d.np for d in FLOAT8_DTYPES)
FLOAT8_CUDA = (float8_e4m3fn, float8_e5m2)  # the float8 dtypes the cuda device has
SUPPORTED_DTYPES = ALL_DTYPES + COMPLEX_DTYPES + FLOAT8_DTYPES
_BY_NP = {d.np: d for d in SUPPORTED_DTYPES}
_BY_NAME = {d.name: d for d in SUPPORTED_DTYPES}
# Aliases PyTorch users type.
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128})

# The largest float16: every float dtype holds the numbers up to it in magnitude (the fast
# path of the number-conversion checks)
FLOAT16_MAX = 65504.0

# PyTorch's ScalarType names, which its error texts use ("result type Float can't be cast
# to the desired output type Long")
SCALAR_TYPE_NAMES = {bool_: "Bool", uint8: "Byte", int8: "Char", int16: "Short", int32: "Int",
                     int64: "Long", float16: "Half", bfloat16: "BFloat16", float32: "Float",
                     float64: "Double", complex64: "ComplexFloat", complex128: "ComplexDouble",
                     float8_e4m3fn: "Float8_e4m3fn", float8_e5m2: "Float8_e5m2",
                     float8_e4m3fnuz: "Float8_e4m3fnuz", float8_e5m2fnuz: "Float8_e5m2fnuz",
                     float8_e8m0fnu: "Float8_e8m0fnu"}

_default_float = float32


def _by_name(name: str) -> DType:
    return _BY_NAME[name]


def get_default_dtype() -> DType:
    return _default_float


def get_default_complex_dtype() -> DType:
    """complex128 when the default dtype is float64, else complex64 (PyTorch's rule: the
    dtype a Python complex number takes)."""
    return complex128 if _default_float is float64 else complex64


def to_complex(dt: DType) -> DType:
    """The complex dtype of a float (or complex) dtype's width: float64 -> complex128, the
    others -> complex64 (tgrad has no complex32)."""
    if dt.is_complex:
        return dt
    return complex128 if dt is float64 else complex64


def to_real(dt: DType) -> DType:
    """The dtype of a complex dtype's parts (complex64 -> float32); real dtypes unchanged."""
    if not dt.is_complex:
        return dt
    return float64 if dt is complex128 else float32


def set_default_dtype(dtype: DType) -> None:
    """The dtype of Python floats and of float factories: float16, bfloat16, float32 or
    float64, given as a tgrad dtype (PyTorch's rule: no name, no ``float``, no None, no
    float8 storage type, each a TypeError)."""
    global _default_float
    if not isinstance(dtype, DType):
        raise TypeError(f"set_default_dtype: invalid dtype object: only floating-point types "
                        f"are supported as the default type, got {dtype!r}; pass a tgrad "
                        f"dtype such as tgrad.float64")
    if not dtype.is_floating_point or dtype in FLOAT8_DTYPES:
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the "
                        f"default type (float16, bfloat16, float32, float64), got {dtype}")
    _default_float = dtype


def from_numpy_dtype(np_dtype) -> DType:
    """The tgrad dtype for a NumPy dtype; unsupported ones raise a clear TypeError."""
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(
            f"tgrad does not support NumPy dtype {np.dtype(np_dtype)}; supported dtypes are "
            f"{', '.join(x.name for x in SUPPORTED_DTYPES)}. Convert the array first, e.g. "
            f"arr.astype(np.float32)")
    return d


def as_dtype(dtype) -> DType:
    """Accept a DType, its name, a NumPy dtype or Python's float/int/bool."""
    if isinstance(dtype, DType):
        return dtype
    if dtype is float:  # Python's float is a double, as in PyTorch (not the default dtype)
        return float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if dtype is complex:  # Python's complex is a pair of doubles, as in PyTorch
        return complex128
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    try:
        np_dtype = np.dtype(dtype)
    except Exception:
        raise TypeError(f"tgrad: {dtype!r} is not a dtype; use one of "
                        f"{', '.join('tgrad.' + x.name for x in SUPPORTED_DTYPES)}") from None
    return from_numpy_dtype(np_dtype)


def check_complex_device(op: str, dt: DType, device) -> None:
    """Complex tensors live on the CPU only (Triton has no complex type): a clear error when
    one would be made on another device."""
    if dt.is_complex and device.type != "cpu":
        raise RuntimeError(f"{op}: complex dtypes are CPU-only in tgrad (got {dt} on "
                           f"{device}); keep complex tensors on the CPU, or move "
                           f"view_as_real(x) (a real tensor) instead")


def check_float8_device(op: str, dt: DType, device) -> None:
    """float8_e4m3fn and float8_e5m2 live on every device (on cuda: Triton's fp8e4nv and
    fp8e5); the fnuz types and float8_e8m0fnu on the CPU only: a clear error elsewhere."""
    if dt in FLOAT8_DTYPES and dt not in FLOAT8_CUDA and device.type != "cpu":
        raise RuntimeError(f"{op}: {dt} is CPU-only in tgrad (on {device}: float8_e4m3fn and "
                           f"float8_e5m2); keep the tensor on the CPU, or move a "
                           f"float32/bfloat16/float16 tensor to {device} instead")


def kernel_not_implemented(kernel: str, dt: DType, explanation: str = "") -> NotImplementedError:
    """PyTorch's error for a dtype its kernel ``kernel`` lacks: '"kernel" not implemented for
    'Long'' (dt's scalar type name), followed by ``explanation`` as given (" (...)", ": ...",
    "; convert ..." - tgrad's hint)."""
    return NotImplementedError(f"\"{kernel}\" not implemented for "
                               f"'{SCALAR_TYPE_NAMES[dt]}'{explanation}")


def float8_not_implemented(kernel: str, dt: DType) -> NotImplementedError:
    """PyTorch's error for an op its float8 dtypes lack (most arithmetic):
    '"add_stub" not implemented for 'Float8_e4m3fn'' (``kernel`` names tgrad's op)."""
    return kernel_not_implemented(kernel, dt)


def refuse_float8(kernel: str, *dts) -> None:
    """Raise PyTorch's NotImplementedError when one of ``dts`` is a float8 dtype (an op
    PyTorch's CPU kernels lack for float8, refused before any work)."""
    for dt in dts:
        if dt in FLOAT8_DTYPES:
            raise float8_not_implemented(kernel, dt)


_F8_E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
_F8_E5M2 = np.dtype(ml_dtypes.float8_e5m2)
_F8_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def to_float8(x, np_dtype) -> np.ndarray:
    """A real array (or number) rounded into a float8 NumPy dtype as PyTorch's CPU does it:
    through float32 (PyTorch's float8 types are made from a float; a float64 or int64 is
    rounded to float32 first), then round-to-nearest-even (ml_dtypes' rounding), except:
    - float8_e4m3fn (no inf) saturates: a finite number past 448 (from 464 up, which rounds
      past the largest value) and +-inf give +-448 (ml_dtypes gives NaN); NaN stays NaN;
    - float8_e5m2: NaN has PyTorch's bits 0x7f / 0xff (ml_dtypes 0x7e);
    - fnuz types: overflow, inf and NaN give the one NaN (0x80), as ml_dtypes;
    - float8_e8m0fnu (powers of two 2^-127..2^127, no sign, no zero): |x| (the sign is
      dropped), 2^e * 1.m rounds up to 2^(e+1) from m >= 0.5 (3 -> 4), a float32 subnormal
      gives 2^-126 above 2^-127 and else 2^-127 (0 too), inf/NaN/overflow NaN (0xff).
    """
    dst = np.dtype(np_dtype)
    with np.errstate(all="ignore"):
        f = np.asarray(x).astype(np.float32)
    if dst == _F8_E8M0:
        bits = np.abs(f).view(np.uint32)
        e, m = bits >> 23, bits & 0x7FFFFF
        r = np.where(e == 0, (m > 0x400000).astype(np.uint32),
                     np.minimum(e + (m >= 0x400000), 255))
        return np.where(e == 255, 255, r).astype(np.uint8).view(dst)
    with np.errstate(all="ignore"):
        out = f.astype(dst)
    if dst == _F8_E4M3FN:
        over = np.isnan(out) & ~np.isnan(f)
        if over.any():
            out = np.where(over, np.copysign(np.float32(448), f).astype(dst), out)
    elif dst == _F8_E5M2:
        nan = np.isnan(f)
        if nan.any():
            bits = np.where(np.signbit(f), 0xFF, 0x7F).astype(np.uint8)
            out = np.where(nan, bits, out.view(np.uint8)).view(dst)
    return out


def check_tensor_value_fits(op: str, value, dt: DType) -> None:
    """``check_value_fits`` for a 0-d tensor ``value`` of another dtype than ``dt``: PyTorch
    reads it as a number (``item()``, a device value included) before filling, so 300 into
    int8, NaN into int64 and 1e6 into float16 raise as a number would."""
    if value.dtype is not dt:
        check_value_fits(op, value.item(), dt)


def check_value_fits(op: str, value, dt: DType) -> None:
    """PyTorch's overflow check of a Python number going into a tensor of dtype ``dt``
    (c10::checked_convert): the number itself, unrounded, must lie in the dtype's finite
    range [lowest, max] (65519.0 does not fit float16 although it rounds to 65504; 255.5
    does not fit uint8); a float dtype also takes inf and NaN, an integer dtype neither (but
    uint8 also takes the ints -255..-1, which wrap as two's complement: PyTorch's rule, see
    ``number_as``); a bool fits everything. A Python int outside the 64-bit range PyTorch
    reads numbers from raises OverflowError first. Item assignment (``__setitem__``) of a
    float16/bfloat16 tensor is not checked in PyTorch (it copies a 0-d tensor filled through
    float32): an overflowing value is inf."""
    if dt is bool_ or isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (complex, np.complexfloating)):
        if dt.is_complex:
            return
        if value.imag != 0:  # PyTorch's error; a zero imaginary part converts (1+0j is 1)
            raise RuntimeError(f"{op}: value cannot be converted to type {dt.name} without "
                               f"overflow (a complex number into a real dtype); use a "
                               f"complex dtype")
        value = float(value.real)
    if dt.is_complex:
        return  # any real number fits (a float past complex64's range becomes inf)
    if isinstance(value, (int, np.integer)) and not -2 ** 63 <= int(value) < 2 ** 64:
        raise OverflowError(f"{op}: int too big to convert ({value} is outside the 64-bit "
                            f"range of a number argument)")
    if dt in FLOAT8_DTYPES:  # no check: the number rounds as a cast does (to_float8: 1e6 is
        return  # 448 in float8_e4m3fn, inf in float8_e5m2, NaN in the fnuz types)
    if dt.is_floating_point:
        if -FLOAT16_MAX <= value <= FLOAT16_MAX:  # fits every float dtype (the common case)
            return
        if dt.itemsize == 2 and op == "__setitem__":
            return
        limit = float(ml_dtypes.finfo(dt.np).max)
        # exact comparisons of the number with the limit (Python compares ints and floats
        # exactly); NaN compares False, inf is excluded
        if abs(value) > limit and not (isinstance(value, (float, np.floating))
                                       and math.isinf(value)):
            raise RuntimeError(f"{op}: value {value} cannot be converted to type {dt.name} "
                               f"without overflow")
        return
    info = np.iinfo(dt.np)
    if isinstance(value, (float, np.floating)):
        value = float(value)  # unrounded, as PyTorch: NaN and inf never fit
        ok = info.min <= value <= info.max
    elif info.min == 0:  # PyTorch lets a negative int wrap into an unsigned type (-1 is 255)
        ok = -info.max <= int(value) <= info.max
    else:
        ok = info.min <= int(value) <= info.max
    if not ok:
        raise RuntimeError(f"{op}: value {value} cannot be converted to type {dt.name} without "
                           f"overflow")


def is_small_int_cast(src: np.dtype, dst: np.dtype) -> bool:
    """Whether casting ``src`` to ``dst`` is a float (bfloat16's NumPy kind is "V") into
    uint8/int8/int16, which ``float_to_small_int_source`` reads."""
    return src.kind in "fV" and dst.kind in "iu" and dst.itemsize < 4


def float_to_small_int_source(be, x, dst: np.dtype):
    """The one rule of PyTorch's CPU (x86) cast of floats into uint8/int8/int16, for every
    backend ``be`` (its unary, binary, where and cast): ``x`` truncated toward zero into
    int64, which the caller casts (wraps) to ``dst`` (300.0 -> 44 in uint8, -1.5 -> 255).
    PyTorch reads the float through int64 for uint8 (c10's explicit step) and through int32
    for int8/int16 (C++'s cast); past that intermediate's range, inf and NaN give x86's
    "integer indefinite" minimum, whose low bits are 0 (1e10 -> 0 in int16, 2**32 + 7.0 ->
    7 in uint8), here without relying on that undefined conversion. NumPy's direct cast
    saturates or gives 0 instead."""
    limit = 2.0 ** 63 if np.dtype(dst) == np.uint8 else 2.0 ** 31  # (-limit itself gives 0
    inside = be.binary("lt", be.unary("abs", x), limit)  # either way); NaN is outside
    return be.cast(be.where(inside, x, x.dtype.type(0)), np.int64)


def number_as(value, dt: DType):
    """The Python number ``value`` as a NumPy scalar of ``dt``, converted as PyTorch's CPU
    casts do: an int wraps modulo 2^bits (uint8: -1 is 255), a float into an integer dtype
    truncates toward zero, then wraps (``float_to_small_int_source``'s rule; int32/int64
    cast directly). Check the range first (``check_value_fits``) where PyTorch does."""
    x = np.asarray(value)
    if dt in FLOAT8_DTYPES:
        return to_float8(x, dt.np)[()]
    if is_small_int_cast(x.dtype, dt.np):
        from tgrad.backends import numpy as np_backend  # (the backends import dtypes)
        x = float_to_small_int_source(np_backend, x, dt.np)
    return x.astype(dt.np)[()]


def promote_types(type1: DType, type2: DType) -> DType:
    """PyTorch's promote_types for two dtypes."""
    if type1 is type2:
        return type1
    if type1 in FLOAT8_DTYPES or type2 in FLOAT8_DTYPES:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{SCALAR_TYPE_NAMES[type1]} and {SCALAR_TYPE_NAMES[type2]}")
    if type1.category != type2.category:
        hi, lo = (type1, type2) if type1.category > type2.category else (type2, type1)
        if hi.is_complex and lo.is_floating_point and lo.rank > hi.rank:
            return to_complex(lo)  # complex64 with float64: complex128
        return hi
    if type1.rank != type2.rank:
        return type1 if type1.rank > type2.rank else type2
    # two types of one width: float16 with bfloat16 gives float32, uint8 with int8 int16
    # (the narrowest type holding both ranges)
    return float32 if type1.is_floating_point else int16


def scalar_dtype(value) -> DType:
    """The dtype a Python scalar takes when it stands alone."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (complex, np.complexfloating)):
        return get_default_complex_dtype()
    return _default_float


def _category_of_scalar(value) -> int:
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    if isinstance(value, (complex, np.complexfloating)):
        return 3
    return 2


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's combine_categories: a lower-priority dtype changes the result only when its
    category is higher; a complex one then keeps a float result's width."""
    if higher is None:
        return lower
    if lower is None or lower.category <= higher.category:
        return higher
    if lower.is_complex and higher.is_floating_point:
        if higher in FLOAT8_DTYPES:  # float8 has no complex type: PyTorch's toComplexType
            raise RuntimeError(f"Unknown Complex ScalarType for {SCALAR_TYPE_NAMES[higher]}")
        return to_complex(higher)  # float64 tensor + 1j: complex128
    return lower


def result_type(*operands) -> DType:
    """PyTorch's result_type over tensors and Python scalars.

    Priority: tensors with dims > 0-d tensors > Python scalars. A lower-priority operand
    changes the result only if its category (bool < int < float < complex) is higher; then
    the result is its dtype (0-d tensor) or the default dtype of its category (Python
    scalar), except that a complex one over a float result keeps the float's width
    (``_combine``).
    """
    dim_t = zero_t = None
    scalar_cat = -1
    for op in operands:
        dt = getattr(op, "dtype", None)
        if isinstance(dt, DType):
            if op.ndim:
                dim_t = dt if dim_t is None else promote_types(dim_t, dt)
            else:
                zero_t = dt if zero_t is None else promote_types(zero_t, dt)
        elif op is not None:
            scalar_cat = max(scalar_cat, _category_of_scalar(op))
    wrapped = None
    if scalar_cat >= 0:
        wrapped = (bool_, int64, _default_float, get_default_complex_dtype())[scalar_cat]
    result = _combine(dim_t, _combine(zero_t, wrapped))
    if result is None:
        raise TypeError("result_type needs at least one tensor or scalar")
    return result


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype (the default dtype when None), as
    ``torch.finfo``: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``)
    and ``resolution`` as Python floats, ``dtype`` as its name. ``finfo(tgrad.float16).min``
    is the mask value float16 code uses where -1e9 would not fit."""

    def __init__(self, dtype=None) -> None:
        dt = get_default_dtype() if dtype is None else as_dtype(dtype)
        if dt.is_complex:  # PyTorch: the limits of its parts' float type
            dt = to_real(dt)
        if not dt.is_floating_point:
            raise TypeError(f"finfo() requires a floating point input type. Use iinfo to "
                            f"handle '{dt!r}'")
        info = ml_dtypes.finfo(dt.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)  # float8_e8m0fnu: 2^-127 (no sign, PyTorch's too)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # PyTorch's: 10^-(decimal digits); float8 types have none (1.0)
        self.resolution = 1.0 if dt in FLOAT8_DTYPES else 10.0 ** -int(info.precision)
        self.dtype = dt.name

    def __repr__(self) -> str:  # PyTorch's: 6 significant digits ("min=-65504")
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    def __eq__(self, other: object) -> bool:  # PyTorch's: the same dtype's limits
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))


class iinfo:  # noqa: N801 - PyTorch's name
    """Limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``min``, ``max`` (ints) and
    ``dtype`` (its name)."""

    def __init__(self, dtype) -> None:
        dt = as_dtype(dtype)
        if dt is bool_:
            raise TypeError(f"{dt!r} is not supported by tgrad.iinfo")
        if dt.is_floating_point or dt.is_complex:
            raise TypeError(f"iinfo() requires an integer input type. Use finfo to handle "
                            f"'{dt!r}'")
        info = np.iinfo(dt.np)
        self.bits, self.min, self.max, self.dtype = int(info.bits), int(info.min), \
            int(info.max), dt.name

    def __repr__(self) -> str:  # PyTorch's: 6 significant digits ("min=-2.14748e+09")
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))
