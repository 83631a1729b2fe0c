"""Random sampling beyond rand/randn/randint: PyTorch's in-place fills (``uniform_``,
``normal_``, ``bernoulli_``, ``exponential_``, ``log_normal_``, ``cauchy_``, ``geometric_``,
``random_``) and ``normal``, ``bernoulli``, ``multinomial``. All are built on the uniform and
normal primitives (tgrad's generator, so ``tgrad.manual_seed`` reproduces them; the GPU
draws from Philox), by inverse transforms:

- uniform_(a, b) = a + (b - a) u;  normal_(m, s) = m + s z;  log_normal_ = exp(normal);
- exponential_(l) = -log(1 - u) / l  (u < 1, so finite);
- cauchy_(m, s) = m + s tan(pi (u - 1/2));  geometric_(p) = ceil(log(1 - u) / log(1 - p))
  (u = 0 gives 1: the support starts at 1);
- bernoulli(p) = [u < p] in p's dtype;  random_(lo, hi) = floor(lo + (hi - lo) u);
- multinomial with replacement: per row, the inverse CDF (searchsorted of u in the
  normalised cumulative weights, right side, so zero-weight categories are never drawn);
  without replacement: the top ``num_samples`` of log(w) + Gumbel noise (the Gumbel-top-k
  trick: a draw without replacement in proportion to w).

An in-place fill of a tensor that requires grad is recorded like any in-place op (the
filled values do not depend on the old ones: zero gradient to them), and on a leaf that
requires grad it raises, as PyTorch does.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.generator import drawing_from
from tgrad.ops import elementwise as ew
from tgrad.ops._common import tensor_method
from tgrad.ops.creation import (
    _FLOAT_DIGITS,
    check_random_bounds,
    full,
    rand,
    rand_like,
    randn,
    random_integers,
)
from tgrad.ops.inplace import apply_inplace
from tgrad.tensor import Tensor

__all__ = ["normal", "bernoulli", "multinomial"]


def _float_only(op: str, t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point tensor, got {t.dtype.name}")


# the in-place fills' errors for a dtype they do not take, PyTorch's texts: the kernel's
# NotImplementedError, or exponential_'s / cauchy_'s RuntimeError
_FILL_KERNELS = {"uniform_": "check_uniform_bounds", "normal_": "normal_kernel_cpu",
                 "log_normal_": "log_normal_cpu", "geometric_": "geometric_cpu"}
_CONTINUOUS = {"exponential_": ("Exponential", True), "cauchy_": ("Cauchy", False)}


def _fill_dtype_check(op: str, t: Tensor) -> None:
    """``op`` fills float tensors (geometric_ also integer ones); else PyTorch's error."""
    dt = t.dtype
    if dt.is_floating_point or (op == "geometric_" and not dt.is_complex
                                and dt is not dtypes.bool_):
        return
    if op in _CONTINUOUS:
        name, scalar_type = _CONTINUOUS[op]
        from tgrad.ops.creation import _C_TYPE_NAMES
        spelled = dtypes.SCALAR_TYPE_NAMES[dt] if scalar_type else _C_TYPE_NAMES.get(
            dt.name, dt.name)
        raise RuntimeError(f"{op}: {name} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{spelled}")
    extra = " (tgrad fills real tensors only: build a complex one from two real fills with " \
        "tgrad.complex(re, im))" if dt.is_complex else ""
    raise NotImplementedError(f"{op}: \"{_FILL_KERNELS[op]}\" not implemented for "
                              f"'{dtypes.SCALAR_TYPE_NAMES[dt]}'{extra}")


def _fill(self: Tensor, op: str, sample, generator=None) -> Tensor:
    """Write ``sample(x)`` (a tensor of self's shape, not recorded, drawn from ``generator``
    when given) into self in place. When recorded, the new values are where(True, sample,
    old): the old values get an exact zero gradient (PyTorch's rule for these fills), not
    none."""
    def fn(x):
        with no_grad(), drawing_from(generator, x.device, op):
            s = sample(x).to(self.dtype)
        if not x.requires_grad:
            return s
        keep_sample = full(x.shape, True, dtype=dtypes.bool_, device=x.device)
        return ew.where(keep_sample, s, x)
    return apply_inplace(self, op, fn)


def _draw_dtype(x: Tensor):
    """Samples are drawn in x's dtype, in float32 for halves (then rounded once), in
    float64 for integer dtypes (geometric_)."""
    if not x.dtype.is_floating_point:
        return dtypes.float64
    return dtypes.float32 if x.dtype.itemsize == 2 else x.dtype


def _u(x: Tensor) -> Tensor:
    """Uniform [0, 1) of x's shape, on x's dtype's grid (so u < 1 survives the rounding
    back to a half dtype), in the draw dtype."""
    u = rand(x.shape, dtype=_draw_dtype(x) if not x.dtype.is_floating_point else x.dtype,
             device=x.device)
    return u if u.dtype is _draw_dtype(x) else u.to(_draw_dtype(x))


def _u_fine(x: Tensor) -> Tensor:
    """Uniform [0, 1) on the draw dtype's grid (float32's 2^-24 for halves, not their 2^-11
    or 2^-8), for the transforms whose result may be rounded freely: the tails of
    exponential_ / cauchy_ / geometric_ are not cut at -log(2^-8) = 5.5 in bfloat16."""
    return rand(x.shape, dtype=_draw_dtype(x), device=x.device)


def _z(x: Tensor) -> Tensor:
    """Standard normal of x's shape."""
    return randn(x.shape, dtype=_draw_dtype(x), device=x.device)


@tensor_method("uniform_")
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator=None) -> Tensor:
    _fill_dtype_check("uniform_", self)
    lo, hi = float(dtypes.finfo(self.dtype).min), float(dtypes.finfo(self.dtype).max)
    for value, what in ((from_, "from"), (to, "to")):  # NaN and inf fail too
        if not lo <= value <= hi:
            from tgrad.ops.creation import _C_TYPE_NAMES
            raise RuntimeError(f"uniform_: {what} is out of bounds for "
                               f"{_C_TYPE_NAMES[self.dtype.name]} (got {value}; it must be "
                               f"finite and within [{lo}, {hi}])")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{dtypes.SCALAR_TYPE_NAMES[self.dtype]}>::max(), but found "
                           f"to={to} and from={from_} which result in to-from to exceed the "
                           f"limit")
    return _fill(self, "uniform_", lambda x: _u(x) * (to - from_) + from_, generator)


@tensor_method("normal_")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    _fill_dtype_check("normal_", self)
    if not std >= 0:  # (NaN too)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(self, "normal_", lambda x: _z(x) * std + mean, generator)


@tensor_method("log_normal_")
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator=None) -> Tensor:
    _fill_dtype_check("log_normal_", self)
    if not std > 0:  # (NaN too)
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill(self, "log_normal_", lambda x: (_z(x) * std + mean).exp(), generator)


@tensor_method("exponential_")
def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    _fill_dtype_check("exponential_", self)
    if not lambd > 0:  # (NaN too)
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, "exponential_", lambda x: -ew.log1p(-_u_fine(x)) / lambd, generator)


@tensor_method("cauchy_")
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator=None) -> Tensor:
    _fill_dtype_check("cauchy_", self)
    if not sigma > 0:  # (NaN too)
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _fill(self, "cauchy_",
                 lambda x: ew.tan((_u_fine(x) - 0.5) * math.pi) * sigma + median, generator)


@tensor_method("geometric_")
def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Trials to the first success, 1, 2, ... (any real or integer dtype but bool)."""
    _fill_dtype_check("geometric_", self)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, "geometric_",
                 lambda x: ew.clamp(ew.ceil(ew.log1p(-_u_fine(x)) / math.log1p(-p)), 1.0),
                 generator)


class _NoTo:
    """random_'s default ``to``: random_(to) as opposed to random_(from, None) (shown as
    None, PyTorch's documented default)."""

    def __repr__(self) -> str:
        return "None"


_NO_TO = _NoTo()


@tensor_method("random_")
def random_(self: Tensor, from_: int | None = None, to=_NO_TO, *,
            generator=None) -> Tensor:
    """Integers uniform on [from, to); ``random_(to)`` means [0, to) (so random_(0) raises);
    ``random_(from, None)`` means [from, top] and no bounds [0, top], top being 2^digits for
    floats (every integer up to it is exact) and the max for integer dtypes (PyTorch's
    ranges). from and to - 1 must fit self's dtype (PyTorch's check_random_bounds)."""
    if self.dtype.is_floating_point:
        top = 2 ** _FLOAT_DIGITS[self.dtype.name]
    elif self.dtype is dtypes.bool_:
        top = 1
    elif self.dtype.is_complex:
        top = 0  # (refused by check_random_bounds)
    else:
        top = int(np.iinfo(self.dtype.np).max)
    to_given = to is not None and from_ is not None
    if from_ is None:
        from_, to = 0, top + 1
    elif to is _NO_TO:
        from_, to = 0, from_
    elif to is None:
        to = top + 1
    check_random_bounds("random_", from_, to, self.dtype, to_given)
    return _fill(self, "random_",
                 lambda x: random_integers(tuple(x.shape), from_, to, x.device), generator)


@tensor_method("bernoulli_")
def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Self filled with 1 with probability p (a number or a tensor broadcast to self), else
    0."""
    if isinstance(p, Tensor):
        _check_probabilities("bernoulli_", p)
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, "bernoulli_", lambda x: ew.lt(
        rand(x.shape, dtype=dtypes.float64, device=x.device),
        p.detach().to(dtypes.float64) if isinstance(p, Tensor) else float(p)), generator)


def _check_probabilities(op: str, p: Tensor) -> None:
    _float_only(op, p)
    if p.numel():
        lo, hi = float(p.detach().amin()), float(p.detach().amax())
        if not (0.0 <= lo and hi <= 1.0):  # NaN fails too
            raise RuntimeError(f"{op}: expected all probabilities in [0, 1], got values in "
                               f"[{lo}, {hi}]")


@tensor_method("bernoulli")
def bernoulli(input: Tensor, p: float | None = None, *, generator=None) -> Tensor:  # noqa: A002
    """1 with probability input[i] (or ``p``), else 0, in input's dtype (not
    differentiable)."""
    if p is not None:
        return input.detach().clone().bernoulli_(p, generator=generator)
    _check_probabilities("bernoulli", input)
    with no_grad(), drawing_from(generator, input.device, "bernoulli"):
        return ew.lt(rand_like(input, dtype=dtypes.float64), input.to(dtypes.float64)) \
            .to(input.dtype)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Normal samples: tensor ``mean`` and/or ``std`` (broadcast; the result takes their
    shape), or two numbers and ``size``. The dtype is mean's when mean is a tensor, else
    std's (as PyTorch: float32 mean with float64 std gives float32). The result does not
    require grad (PyTorch records a node whose gradients to mean and std are zeros: a
    documented difference)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(): with number mean and std, pass size=")
        if not std >= 0:  # (NaN too)
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        out = randn(size, generator=generator, dtype=dtype, device=device) * std + mean
    else:
        if size is not None:
            raise TypeError("normal(): size= is only for number mean and std")
        if isinstance(std, Tensor) and std.numel() and not bool(
                (std.detach() >= 0).all()):  # (NaN fails too)
            raise RuntimeError("normal expects all elements of std >= 0.0")
        if not isinstance(std, Tensor) and not std >= 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        with no_grad():
            m = mean.detach() if isinstance(mean, Tensor) else mean
            s = std.detach() if isinstance(std, Tensor) else std
            ref = tensors[0]  # mean when a tensor, else std: its dtype is the result's
            from tgrad.ops.pointwise_extras import broadcast_shapes
            try:
                shape = broadcast_shapes(*(t.shape for t in tensors))
            except RuntimeError as e:
                raise RuntimeError(f"normal: mean {tuple(mean.shape)} and std "
                                   f"{tuple(std.shape)} do not broadcast: {e}") from None
            z = randn(shape, generator=generator, dtype=ref.dtype, device=ref.device)
            # PyTorch's z.mul_(std).add_(mean): each step rounded into z's dtype
            out = ((z * s).to(ref.dtype) + m).to(ref.dtype)
    out = out.detach()
    return out.requires_grad_(True) if requires_grad else out


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator=None) -> Tensor:
    """``num_samples`` category indices per row of non-negative weights ``input`` (1-d or
    2-d), int64."""
    from tgrad.ops.searching import searchsorted
    from tgrad.ops.sorting import topk
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}")
    _float_only("multinomial", input)
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           "without replacement")
    w = input.detach().to(dtypes.float64)
    rows = w.reshape(1, n) if w.ndim == 1 else w
    if rows.shape[0] == 0:  # an empty batch: no draws
        return full((0, num_samples), 0, dtype=dtypes.int64, device=input.device)
    if rows.numel() and (float(rows.amin()) < 0 or not bool(rows.isfinite().all())):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    positive = (rows > 0).sum(-1)
    if int(positive.amin()) == 0:
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of "
                           "probabilities <= 0)")
    if not replacement and int(positive.amin()) < num_samples:
        raise RuntimeError("multinomial: invalid multinomial distribution (with replacement="
                           "False, not enough non-negative category to sample)")
    with no_grad(), drawing_from(generator, input.device, "multinomial"):
        if replacement:
            cdf = rows.cumsum(-1)
            cdf = cdf / cdf[:, -1:]
            u = rand(rows.shape[0], num_samples, dtype=dtypes.float64, device=rows.device)
            out = ew.minimum(searchsorted(cdf, u, right=True), n - 1)
        else:
            g = -ew.log(-ew.log(_open_uniform(rows.shape, rows.device)))
            keys = ew.where(rows > 0, ew.log(rows) + g, -math.inf)
            out = topk(keys, num_samples, -1).indices
    return out.reshape(-1) if input.ndim == 1 else out


def _open_uniform(shape: tuple, device) -> Tensor:
    """Uniform on (0, 1): [0, 1) draws with 0 moved to the smallest positive float64."""
    u = rand(shape, dtype=dtypes.float64, device=device)
    return ew.maximum(u, full((), 2.0 ** -1074, dtype=dtypes.float64, device=device))


tensor_method("multinomial")(multinomial)
