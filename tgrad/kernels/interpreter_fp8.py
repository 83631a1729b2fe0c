"""float8 conversions in Triton's interpreter, by value as the GPU converts.

Triton's interpreter (3.6 to 3.9) keeps float8 values as their bits in uint8 arrays and
converts them to and from other floats (``create_fp_to_fp``) with a bit-field rewrite that
is not the GPU's: it rounds ties away from zero (the GPU's ``cvt.rn`` rounds to nearest
even), maps float8_e5m2's inf and NaN (exponent 31) to finite float32 values (0x7c became
65536) and has no NaN for float8_e4m3fn.

``install()`` (called once when the interpreter-mode runtime starts, after
interpreter_bf16's) replaces ``create_fp_to_fp``, for a float8 source or destination in the
round-to-nearest-even and default modes, by ml_dtypes' conversion of the values: exact out
of float8 (inf and NaN kept), round to nearest even into it. Out of range, ml_dtypes gives
NaN (e4m3fn) or inf (e5m2) where the GPU's ``cvt.rn.satfinite`` gives the largest finite
value: tgrad's cast formulas (kernels/elementwise.py ``f_to_float8*``) convert only values in
range and set the overflow bits themselves, so both agree there. Other modes (RTZ) run
Triton's code unchanged.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

_BF16 = np.dtype(ml_dtypes.bfloat16)


def install() -> None:
    from triton import language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_tgrad_fp8_casts", False):
        return
    f8 = {tl.float8e4nv: np.dtype(ml_dtypes.float8_e4m3fn),
          tl.float8e5: np.dtype(ml_dtypes.float8_e5m2),
          tl.float8e4b8: np.dtype(ml_dtypes.float8_e4m3fnuz),
          tl.float8e5b16: np.dtype(ml_dtypes.float8_e5m2fnuz)}
    nearest = {None}
    modes = getattr(getattr(interpreter, "_ir", None), "ROUNDING_MODE", None)
    if modes is not None and hasattr(modes, "RTNE"):
        nearest.add(modes.RTNE)
    triton_fp_to_fp = builder.create_fp_to_fp

    def values(handle) -> np.ndarray:
        """The numbers a handle holds (float8 and bfloat16 are kept as their bits)."""
        data = np.asarray(handle.data)
        dt = handle.dtype.scalar
        if dt in f8:
            return data.view(f8[dt])
        if dt == tl.bfloat16 and data.dtype == np.uint16:
            return data.view(_BF16)
        return data

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        dst = dst_type.scalar
        if rounding_mode not in nearest or (src.dtype.scalar not in f8 and dst not in f8):
            return triton_fp_to_fp(self, src, dst_type, rounding_mode)
        with np.errstate(all="ignore"):
            vals = values(src)
            if dst in f8:
                out = vals.astype(f8[dst]).view(np.uint8)
            elif dst == tl.bfloat16:
                out = vals.astype(np.float32).astype(_BF16).view(np.uint16)
            else:
                out = vals.astype(interpreter._get_np_dtype(dst_type))
        return interpreter.TensorHandle(out, dst)

    builder.create_fp_to_fp = create_fp_to_fp
    builder._tgrad_fp8_casts = True
