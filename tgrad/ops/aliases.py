"""PyTorch's other names and trivial forms of ops tgrad has, so code written for PyTorch
runs unchanged:

- in-place comparisons and logical ops (``eq_``, ``lt_``, ``logical_and_`` ...): the bool
  result written into self as 1/0 of self's dtype; gradient 0 for every input (PyTorch's);
- in-place arithmetic names (``multiply_``, ``divide_``, ``subtract_``, ``true_divide_``,
  ``negative_``, ``fix``/``fix_``, ``hypot_``, ``copysign_``...);
- the complex-number API (complex tensors: ``tgrad.ops.complex``): ``conj``,
  ``conj_physical`` and ``resolve_conj`` conjugate a complex tensor (a new tensor: no lazy
  conjugate bit, so ``is_conj`` is always False) and return a real one as it is;
  ``resolve_neg`` returns the tensor, ``is_neg`` is False; ``real`` is a view of a complex
  tensor's real parts (the tensor itself when real), ``imag`` of its imaginary parts (real
  tensors raise PyTorch's error); ``t.real = v`` / ``t.imag = v`` copy ``v`` into those
  views (PyTorch's setters); ``isreal`` is imag == 0; ``mH``/``H``/``adjoint`` are
  conjugate transposes (on a 0-d tensor PyTorch's deprecation warning, then ``conj()``);
- metadata: ``ndimension``, ``nbytes``, ``itemsize``, ``is_cpu``, ``get_device``,
  ``is_signed``, ``is_same_size``; ``layout`` (always ``tgrad.strided``) and PyTorch's
  other-kind flags ``is_sparse``, ``is_sparse_csr``, ``is_quantized``, ``is_meta``,
  ``is_nested``, ``is_mkldnn``, ``is_xpu``, ``is_mps``, ``is_vulkan``, ``is_ipu``,
  ``is_maia``, ``is_mtia``, ``is_xla`` (always False);
- ``positive``, ``sgn`` (= sign for real numbers), ``ravel``, ``split_with_sizes``,
  ``is_nonzero``;
- top-level in-place functions (``tgrad.abs_(x)`` is ``x.abs_()``, ``exp_``, ``relu_``,
  ``zero_``, ``fill_``, ``index_put_``, ``as_strided_``...) and ``fill(x, value)`` (a
  filled copy); ``rsub(input, other, alpha)`` = other - alpha input; ``can_cast(from_,
  to)``: PyTorch's casting rule (no cast to a lower category: float to integer, or
  anything but bool to bool).
"""

from __future__ import annotations

import warnings

from tgrad import _layout, dtypes
from tgrad.autograd.function import Function
from tgrad.ops import complex_ops as cx
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor, route_sparse, tensor_method
from tgrad.ops.composite import logical_xor
from tgrad.ops.inplace import apply_inplace, inplace_method
from tgrad.ops.logmath import copysign, hypot
from tgrad.ops.shape import split
from tgrad.tensor import Tensor

__all__ = ["positive", "sgn", "ravel", "fix", "conj", "conj_physical", "resolve_conj",
           "resolve_neg", "is_conj", "is_neg", "is_complex", "isreal", "real", "imag",
           "adjoint", "is_nonzero", "is_same_size", "is_signed", "rsub", "can_cast",
           "fill"]


# --------------------------------------------------------------- in-place comparisons
class CompareInto(Function):
    """y = compare(x, other) as x's dtype (1 where true, else 0);  dx = 0, dother = 0 (a
    comparison has no gradient; PyTorch's in-place comparisons give zeros)."""

    node_name = "CompareBackward0"

    @staticmethod
    def forward(ctx, x, other, compare):
        ctx.other_like = other if isinstance(other, Tensor) else None
        return compare(x, other).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros_like
        other = ctx.other_like
        return zeros_like(g), None if other is None else zeros_like(other), None


def _inplace_compare(name: str, compare) -> None:
    def method(self: Tensor, other) -> Tensor:
        return apply_inplace(self, name, lambda x, o: CompareInto.apply(x, o, compare), other)

    method.__name__ = method.__qualname__ = name
    tensor_method(name)(method)


for _name, _compare in (("eq_", ew.eq), ("ne_", ew.ne), ("lt_", ew.lt), ("le_", ew.le),
                        ("gt_", ew.gt), ("ge_", ew.ge), ("not_equal_", ew.ne),
                        ("less_", ew.lt), ("less_equal_", ew.le), ("greater_", ew.gt),
                        ("greater_equal_", ew.ge), ("logical_and_", ew.logical_and),
                        ("logical_or_", ew.logical_or)):
    _inplace_compare(_name, _compare)


_inplace_compare("logical_xor_", logical_xor)
tensor_method("logical_not_")(lambda self: apply_inplace(
    self, "logical_not_", lambda x: CompareInto.apply(x, 0, ew.eq)))


# ------------------------------------------------------------------ arithmetic names
def _method(name: str):
    return getattr(Tensor, name)


for _alias, _target in (("multiply_", "mul_"), ("divide_", "div_"), ("subtract_", "sub_"),
                        ("true_divide_", "div_"), ("negative_", "neg_"), ("fix_", "trunc_")):
    tensor_method(_alias)(_method(_target))
inplace_method("hypot_", hypot)
inplace_method("copysign_", copysign)


@tensor_method("fix")
def fix(input: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's other name of ``trunc`` (round towards zero)."""
    return ew.trunc(input)


@tensor_method("positive", "__pos__")
def positive(input: Tensor) -> Tensor:  # noqa: A002
    """``input`` itself (unary plus); bool tensors raise, as in PyTorch."""
    require_tensor("positive", input)
    if input.dtype is dtypes.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# sgn of a real tensor: sign's node under PyTorch's name for it
_RealSgn = type("Sgn", (ew._UNARY["sign"],), {"node_name": "SgnBackward0"})


@tensor_method("sgn")
def sgn(input: Tensor) -> Tensor:  # noqa: A002
    """sign(x) for real x; x / |x| (0 at 0) for complex x."""
    try:
        if isinstance(input, Tensor) and input.dtype.is_complex:
            return cx.complex_sgn(input)
        return _RealSgn.apply(input)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("sgn", e, input)


inplace_method("sgn_", sgn)


@tensor_method("ravel")
def ravel(input: Tensor) -> Tensor:  # noqa: A002
    """The elements as a 1-D tensor: a view when the layout allows, else a copy."""
    require_tensor("ravel", input)
    return input.reshape(-1)


@tensor_method("split_with_sizes")
def split_with_sizes(self: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split`` with a list of sizes (views along ``dim``)."""
    return split(self, list(split_sizes), dim)


# ------------------------------------------------------------------- complex API
def _self(name: str):
    def same(input: Tensor) -> Tensor:  # noqa: A002
        require_tensor(name, input)
        return input

    same.__name__ = same.__qualname__ = name
    same.__doc__ = f"``input`` itself: tgrad has no lazy negation, so {name} has nothing to do."
    return tensor_method(name)(same)


def _conj(name: str):
    def fn(input: Tensor) -> Tensor:  # noqa: A002
        try:
            return cx.complex_conj(input)
        except RuntimeError as e:  # (free when nothing raises) a sparse COO input
            return route_sparse(name, e, input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = ("The complex conjugate, materialised (tgrad has no lazy conjugate bit); a "
                  "real tensor is returned as it is.")
    return tensor_method(name)(fn)


conj = _conj("conj")
conj_physical = _conj("conj_physical")
resolve_conj = _self("resolve_conj")  # nothing is ever lazily conjugated
resolve_neg = _self("resolve_neg")
inplace_method("conj_physical_", conj_physical)


@tensor_method("is_conj")
def is_conj(input: Tensor) -> bool:  # noqa: A002
    """False: tgrad never builds lazily conjugated tensors (conj() materialises)."""
    require_tensor("is_conj", input)
    return False


@tensor_method("is_neg")
def is_neg(input: Tensor) -> bool:  # noqa: A002
    """False: tgrad never builds lazily negated tensors."""
    require_tensor("is_neg", input)
    return False


@tensor_method("is_complex")
def is_complex(input: Tensor) -> bool:  # noqa: A002
    """Whether ``input`` has a complex dtype (complex64, complex128)."""
    require_tensor("is_complex", input)
    return input.dtype.is_complex


@tensor_method("isreal")
def isreal(input: Tensor) -> Tensor:  # noqa: A002
    """imag == 0 for a complex tensor; all True for a real one (bool, input's shape)."""
    require_tensor("isreal", input)
    from tgrad.ops.creation import ones_like
    if input.dtype.is_complex:
        return ew.eq(cx.imag(input), 0)
    return ones_like(input, dtype=dtypes.bool_)


real = cx.real
imag = cx.imag


def _part_setter(part):
    def setter(self: Tensor, value) -> None:
        """``t.real = value`` / ``t.imag = value``: PyTorch's ``t.real.copy_(value)`` (a
        number or a tensor broadcast to t's shape; in place, so autograd records it)."""
        if not isinstance(value, Tensor):
            from tgrad.ops.creation import tensor
            value = tensor(value, device=self.device)
        part(self).copy_(value)

    return setter


Tensor.real = property(real, _part_setter(real))
Tensor.imag = property(imag, _part_setter(imag))


@tensor_method("adjoint")
def adjoint(input: Tensor) -> Tensor:  # noqa: A002
    """The conjugate transpose of the last two dims (a transpose, for real tensors)."""
    require_tensor("adjoint", input)
    if input.ndim == 0:  # PyTorch 2.13: deprecated, x.conj()
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=2)
        return cx.complex_conj(input)
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    return cx.complex_conj(input.transpose(-2, -1))


def _matrix_h(self: Tensor) -> Tensor:
    if self.ndim == 0:  # PyTorch 2.13: deprecated, x.conj() (the tensor itself: tgrad is real)
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=2)
        return cx.complex_conj(self)
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH"
                              if self.ndim > 2 else ""))
    return cx.complex_conj(self.transpose(0, 1))


def _batched_h(self: Tensor) -> Tensor:
    if self.ndim == 0:  # PyTorch 2.13: deprecated, x.conj() (the tensor itself: tgrad is real)
        warnings.warn("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=2)
        return cx.complex_conj(self)
    if self.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return cx.complex_conj(self.transpose(-2, -1))


Tensor.mH = property(_batched_h)
Tensor.H = property(_matrix_h)


# ------------------------------------------------------------------------- metadata
@tensor_method("is_nonzero")
def is_nonzero(input: Tensor) -> bool:  # noqa: A002
    """Whether the single element of ``input`` is nonzero (PyTorch's errors otherwise)."""
    require_tensor("is_nonzero", input)
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@tensor_method("is_same_size")
def is_same_size(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    """Whether the two tensors have the same shape."""
    require_tensor("is_same_size", input)
    require_tensor("is_same_size", other, "other", 2)
    return tuple(input.shape) == tuple(other.shape)


@tensor_method("is_signed")
def is_signed(input: Tensor) -> bool:  # noqa: A002
    """Whether the dtype holds negative values (every dtype but bool)."""
    require_tensor("is_signed", input)
    return input.dtype.is_signed


tensor_method("ndimension")(lambda self: self.ndim)
Tensor.itemsize = property(lambda self: self.element_size())
Tensor.nbytes = property(lambda self: self.element_size() * self.numel())
Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
tensor_method("get_device")(lambda self: -1 if self.device.type == "cpu" else
                            self.device.index or 0)
# every tgrad tensor is dense and strided, on the cpu or cuda: PyTorch's layout and
# other-backend flags, for code that checks them
Tensor.layout = property(lambda self: _layout.strided)
for _flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested", "is_mkldnn",
              "is_xpu", "is_mps", "is_vulkan", "is_ipu", "is_maia", "is_mtia", "is_xla"):
    setattr(Tensor, _flag, property(lambda self: False))


# --------------------------------------------------------------- top-level in-place forms
_TOP_INPLACE = ("abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
                "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_",
                "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_",
                "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_",
                "fix_", "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_",
                "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
                "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
                "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
                "trunc_", "xlogy_", "zero_", "addmv_", "as_strided_", "resize_as_")


def _top_inplace(name: str):
    def fn(input: Tensor, *args, **kwargs) -> Tensor:  # noqa: A002
        require_tensor(name, input)
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)`` (PyTorch's top-level in-place form)."
    return fn


for _name in _TOP_INPLACE:
    globals()[_name] = _top_inplace(_name)
__all__ += list(_TOP_INPLACE)


def fill(input: Tensor, value) -> Tensor:  # noqa: A002
    """A copy of ``input`` with every element ``value`` (a number or a 0-d tensor)."""
    require_tensor("fill", input)
    from tgrad.ops.movement import clone
    return clone(input).fill_(value)


def rsub(input: Tensor, other, *, alpha=1) -> Tensor:  # noqa: A002
    """``other - alpha * input`` (PyTorch's reversed subtraction; node RsubBackward1 for a
    number ``other``, RsubBackward0 for a tensor)."""
    require_tensor("rsub", input)
    return ew.rsub_apply(input, other, alpha)


def can_cast(from_: dtypes.DType, to: dtypes.DType) -> bool:
    """Whether PyTorch's casting rule allows ``from_`` to ``to``: not to a lower category
    (floating > integer > bool)."""
    return dtypes.as_dtype(from_).category <= dtypes.as_dtype(to).category
