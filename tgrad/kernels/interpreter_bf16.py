"""bfloat16 in Triton's interpreter, computed on values as the GPU does.

Triton's interpreter (3.6 to 3.9) keeps bfloat16 as its bits in uint16 arrays, and:
- converts float32 to bfloat16 by dropping the low 16 bits (truncation; the GPU's
  ``cvt.rn`` rounds to nearest even), so a stored bfloat16 result could be 1 ulp off;
- converts float64, float16 and integers to and from bfloat16 with ``astype`` on the bits,
  as if they were integers (float64 2.5 became the bfloat16 with bits 2, about 1e-40);
- computes arithmetic, comparisons, math functions, clamps, ``tl.dot`` and ``tl.sum`` of
  bfloat16 operands on those integers: -x, x + y, x < y, clamps, matmuls and sums gave
  garbage, and -0.0 != 0.

``install()`` (called once when the interpreter-mode runtime starts) replaces, for
operands or results in bfloat16 only:
- ``InterpreterBuilder.cast_impl``, and ``create_fp_to_fp`` in its round-to-nearest-even and
  default modes, by ml_dtypes' conversion of the values (round to nearest even, NaN and inf
  kept);
- ``binary_op``, ``unary_op``, clamps (``ternary_op`` with ``np.clip``), ``create_dot`` and
  ``ReduceOps.sum``: computed on the values in float32 and a float result rounded once to
  bfloat16 (comparisons give bools; a dot accumulates in its accumulator's dtype). That is
  what the GPU's bfloat16 instructions give, but for sums: the GPU adds bfloat16 in a tree
  of rounded steps, so a sum (and, rarely, an addition whose exact value needs more than
  float32's 24 bits) can differ from it in the last bits.
Everything else runs Triton's code unchanged: selects move bits, which is right as it is,
and ``tl.max``/``tl.min`` promote bfloat16 to float32 themselves. Scans over bfloat16 values
are not covered (tgrad's kernels scan in float32).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

_BF16 = np.dtype(ml_dtypes.bfloat16)


def install() -> None:
    from triton import language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_tgrad_bf16_casts", False):
        return
    triton_cast, triton_fp_to_fp = builder.cast_impl, builder.create_fp_to_fp
    bf16 = tl.bfloat16
    # rounding modes that mean "to nearest even": the default (None) and RTNE
    nearest = {None}
    modes = getattr(getattr(interpreter, "_ir", None), "ROUNDING_MODE", None)
    if modes is not None and hasattr(modes, "RTNE"):
        nearest.add(modes.RTNE)

    def bf16_values(handle) -> np.ndarray | None:
        """The bfloat16 numbers a handle holds, or None when it holds no bfloat16 bits (a
        comparison of bfloat16 operands keeps their dtype on a handle of bools)."""
        data = np.asarray(handle.data)
        if handle.dtype.scalar == bf16 and data.dtype == np.uint16:
            return data.view(_BF16)
        return None

    def cast_impl(self, src, dst_type):
        dst = dst_type.scalar
        vals = bf16_values(src)
        if vals is None and dst != bf16:
            return triton_cast(self, src, dst_type)
        if vals is None:
            vals = np.asarray(src.data)
        if dst == bf16:
            out = vals.astype(_BF16).view(np.uint16)
        else:
            out = vals.astype(interpreter._get_np_dtype(dst_type))
        return interpreter.TensorHandle(out, dst)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if rounding_mode in nearest and (
                dst_type.scalar == bf16 or bf16_values(src) is not None):
            return cast_impl(self, src, dst_type)
        return triton_fp_to_fp(self, src, dst_type, rounding_mode)

    triton_binary, triton_unary, triton_ternary = (builder.binary_op, builder.unary_op,
                                                   builder.ternary_op)

    def float_args(*handles) -> list | None:
        """The operands as float32 values when one of them holds bfloat16, else None."""
        vals = [bf16_values(h) for h in handles]
        if all(v is None for v in vals):
            return None
        return [np.asarray(h.data) if v is None else v.astype(np.float32)
                for h, v in zip(handles, vals)]

    def rounded(out: np.ndarray, dtype):
        """A float32 result back to bfloat16 bits; bools (comparisons) as they are."""
        if out.dtype.kind == "f":
            out = out.astype(_BF16).view(np.uint16)
        return interpreter.TensorHandle(out, dtype)

    def binary_op(self, lhs, rhs, op):
        args = float_args(lhs, rhs)
        if args is None:
            return triton_binary(self, lhs, rhs, op)
        return rounded(op(*args), lhs.dtype.scalar)

    def unary_op(self, arg, op):
        args = float_args(arg)
        if args is None:
            return triton_unary(self, arg, op)
        return rounded(op(*args), arg.dtype.scalar)

    def ternary_op(self, lhs, rhs, other, op):
        args = float_args(lhs, rhs, other) if op is np.clip else None
        if args is None:
            return triton_ternary(self, lhs, rhs, other, op)
        return rounded(op(*args), other.dtype.scalar)

    triton_dot = builder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        args = float_args(a, b)
        if args is None:
            return triton_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
        acc = bf16_values(d)
        if acc is None:  # the usual float32 accumulator
            out = np.matmul(*args, dtype=d.data.dtype) + d.data
            return interpreter.TensorHandle(out, d.dtype.scalar)
        return rounded(np.matmul(*args, dtype=np.float32) + acc.astype(np.float32),
                       d.dtype.scalar)

    reduce_ops = interpreter.ReduceOps
    triton_sum = reduce_ops.sum

    def reduce_sum(self, tensor):
        vals = bf16_values(tensor.handle)
        if vals is None:
            return triton_sum(self, tensor)
        out = np.sum(vals.astype(np.float32), axis=self.axis, keepdims=self.keep_dims)
        return self.to_tensor(np.asarray(out).astype(_BF16).view(np.uint16), tensor.dtype)

    reduce_ops.sum = reduce_sum
    builder.cast_impl = cast_impl
    builder.create_fp_to_fp = create_fp_to_fp
    builder.binary_op, builder.unary_op, builder.ternary_op = binary_op, unary_op, ternary_op
    builder.create_dot = create_dot
    # the per-op entry points (create_fp_trunc, create_fadd, create_exp, ...) are lambdas
    # calling self.cast_impl / self.binary_op / ...: they now reach these
    builder._tgrad_bf16_casts = True
