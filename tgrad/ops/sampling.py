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
import warnings

import numpy as np

from tgrad import dtypes
from tgrad.autograd.grad_mode import is_grad_enabled, no_grad
from tgrad.generator import drawing_from
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor, tensor_method
from tgrad.ops.creation import (
    _FLOAT_DIGITS,
    check_random_bounds,
    float_draw_bounds,
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
    if dt.is_complex and op in ("uniform_", "normal_"):
        return  # (PyTorch fills the real view: _complex_parts)
    if op in _CONTINUOUS:
        name, scalar_type = _CONTINUOUS[op]
        from tgrad.ops.creation import _C_TYPE_NAMES
        spelled = dtypes.SCALAR_TYPE_NAMES[dt] if scalar_type else _C_TYPE_NAMES.get(
            dt.name, dt.name)
        raise RuntimeError(f"{op}: {name} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{spelled}")
    extra = " (of the fills only uniform_ and normal_ take complex tensors: build one from " \
        "two real fills with tgrad.complex(re, im))" if dt.is_complex else ""
    raise NotImplementedError(f"{op}: \"{_FILL_KERNELS[op]}\" not implemented for "
                              f"'{dtypes.SCALAR_TYPE_NAMES[dt]}'{extra}")


def _complex_parts(sample):
    """``sample`` for a complex tensor x fills x's real view (x.shape + (2,), as PyTorch's
    uniform_ / normal_ do): real and imaginary parts drawn independently, each with the
    parameters ``sample`` was given. Real tensors: ``sample`` itself."""
    def draw(x: Tensor) -> Tensor:
        if not x.dtype.is_complex:
            return sample(x)
        from tgrad.ops.complex_ops import view_as_complex
        from tgrad.ops.creation import empty
        parts = empty(tuple(x.shape) + (2,), dtype=dtypes.to_real(x.dtype), device=x.device)
        return view_as_complex(sample(parts).contiguous())
    return draw


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


def _keyword_from(op: str, from_, default, kwargs: dict):
    """PyTorch's keyword ``from`` (a Python keyword, so passed as ``**{"from": v}``) in
    place of tgrad's ``from_``; any other extra keyword is Python's TypeError."""
    if "from" in kwargs:
        if from_ is not default:
            raise TypeError(f"{op}() got multiple values for argument 'from'")
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return from_


@tensor_method("uniform_")
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator=None,
             **kwargs) -> Tensor:
    """Uniform on [from, to) (keyword ``from`` as PyTorch: ``**{"from": a}``); a complex
    tensor gets both parts uniform on [from, to), independently."""
    from_ = _keyword_from("uniform_", from_, 0.0, kwargs)
    _fill_dtype_check("uniform_", self)
    part = dtypes.to_real(self.dtype)
    lo, hi = float(dtypes.finfo(part).min), float(dtypes.finfo(part).max)
    for value, what in ((from_, "from"), (to, "to")):  # NaN and inf fail too
        if not lo <= value <= hi:
            from tgrad.ops.creation import _C_TYPE_NAMES
            raise RuntimeError(f"uniform_: {what} is out of bounds for "
                               f"{_C_TYPE_NAMES[part.name]} (got {value}; it must be "
                               f"finite and within [{lo}, {hi}])")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{dtypes.SCALAR_TYPE_NAMES[part]}>::max(), but found "
                           f"to={to} and from={from_} which result in to-from to exceed the "
                           f"limit")
    return _fill(self, "uniform_", _complex_parts(lambda x: _uniform(x, from_, to)), generator)


def _uniform(x: Tensor, from_: float, to: float) -> Tensor:
    """from + (to - from) u on [from, to): float32 / float64 on their own grids (PyTorch's);
    a float16 / bfloat16 draw on float32's fine grid rounded down to the half grid, as
    PyTorch's: each half value of [from, to) as likely as its width, never ``to`` (u on the
    half's own grid put results halfway between half values, rounded to even 3:1, and the
    top draw up to ``to``)."""
    if x.dtype.itemsize != 2:
        return _u(x) * (to - from_) + from_
    v = _u_fine(x) * (to - from_) + from_
    r = v.to(x.dtype)
    wide = r.float()
    down = ew.gt(wide, v)
    if to > from_:  # (from == to: every draw is from, which [from, to) cannot exclude)
        down = ew.logical_or(down, ew.ge(wide, to))
    from tgrad.ops.pointwise_extras import nextafter
    below = nextafter(r, full((), -math.inf, dtype=x.dtype, device=x.device))
    return ew.where(down, below, r)


@tensor_method("normal_")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """N(mean, std^2); a complex tensor gets each part N(mean, std^2 / 2) independently
    (PyTorch's: E|x - mean (1 + i)|^2 = std^2)."""
    _fill_dtype_check("normal_", self)
    if not std >= 0:  # (NaN too)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    part_std = std / math.sqrt(2.0) if self.dtype.is_complex else std
    return _fill(self, "normal_", _complex_parts(lambda x: _z(x) * part_std + mean),
                 generator)


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
    return _fill(self, "exponential_", lambda x: -ew.log1p(-_positive(_u_fine(x))) / lambd,
                 generator)


def _positive(u: Tensor) -> Tensor:
    """``u`` (uniform on [0, 1)) with 0 read as a quarter of the grid's step, so
    -log1p(-u) is never 0 (PyTorch's exponential_ is never 0 since 2.1: gumbel_softmax's
    -log of it was NaN)."""
    return ew.clamp(u, min=dtypes.finfo(u.dtype).eps / 4)


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


def _int_bound(v):
    """A random_ bound as PyTorch takes it: an int (a 0-d integer tensor read as one), or
    None / the no-bound marker; a float is PyTorch's TypeError (it drew non-integers)."""
    if v is None or v is _NO_TO:
        return v
    if isinstance(v, Tensor) and v.ndim == 0 and not (v.dtype.is_floating_point
                                                      or v.dtype.is_complex):
        return int(v.item())
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"random_() received an invalid combination of arguments - got a "
                        f"bound of type {type(v).__name__}, but expected ints (from, to)")
    return int(v)


@tensor_method("random_")
def random_(self: Tensor, from_: int | None = None, to=_NO_TO, *,
            generator=None, **kwargs) -> Tensor:
    """Integers uniform on [from, to); ``random_(to)`` means [0, to) (so random_(0) raises);
    ``random_(from, None)`` means [from, top] and no bounds [0, top], top being 2^digits for
    floats (every integer up to it is exact) and the max for integer dtypes (PyTorch's
    ranges). from and to - 1 must fit self's dtype (PyTorch's check_random_bounds).
    Keyword ``from`` as PyTorch (``**{"from": a, "to": b}``; it needs ``to``)."""
    if "from" in kwargs and to is _NO_TO:
        raise TypeError("random_() received an invalid combination of arguments - got "
                        "(from=int, ): 'from' needs 'to' (random_(from, to) or random_(to))")
    from_ = _keyword_from("random_", from_, None, kwargs)
    from_, to = (_int_bound(v) for v in (from_, to))
    if self.dtype.is_floating_point:
        top = 2 ** _FLOAT_DIGITS[self.dtype.name]
    elif self.dtype is dtypes.bool_:
        top = 1
    elif self.dtype.is_complex:
        raise NotImplementedError(f"random_: \"random_kernel_cpu\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[self.dtype]}' (random_ fills "
                                  f"real and bool tensors)")
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
    from_, to = float_draw_bounds(from_, to, self.dtype, to_given)
    return _fill(self, "random_",
                 lambda x: random_integers(tuple(x.shape), from_, to, x.device), generator)


@tensor_method("bernoulli_")
def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Self filled with 1 with probability p (a number or a tensor broadcast to self), else
    0."""
    _bernoulli_dtype_check(self, "bernoulli_tensor_cpu_self_" if isinstance(p, Tensor)
                           else "bernoulli_scalar_cpu_")
    if isinstance(p, Tensor):
        _check_probabilities("bernoulli_", p)
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, "bernoulli_", lambda x: ew.lt(
        rand(x.shape, dtype=dtypes.float64, device=x.device),
        p.detach().to(dtypes.float64) if isinstance(p, Tensor) else float(p)), generator)


def _bernoulli_dtype_check(t: Tensor, kernel: str) -> None:
    """bernoulli fills real and bool tensors; complex ones raise PyTorch's kernel error
    (``kernel``: bernoulli_scalar_cpu_ for a number p, else bernoulli_tensor_cpu_self_)."""
    if t.dtype.is_complex:
        raise NotImplementedError(f"bernoulli: \"{kernel}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[t.dtype]}' (bernoulli draws "
                                  f"into real and bool tensors)")


def _check_probabilities(op: str, p: Tensor) -> None:
    """Probabilities are a float tensor (PyTorch's kernel error otherwise) in [0, 1]."""
    if p.dtype.is_complex:
        _bernoulli_dtype_check(p, "bernoulli_tensor_cpu_self_")
    if not p.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: \"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[p.dtype]}' (probabilities "
                                  f"must be a floating point tensor, got {p.dtype.name})")
    if p.numel():
        lo, hi = float(p.detach().amin()), float(p.detach().amax())
        if not (0.0 <= lo and hi <= 1.0):  # NaN fails too
            raise RuntimeError(f"{op}: expected all probabilities in [0, 1], got values in "
                               f"[{lo}, {hi}]")


def _prepare_out(op: str, out, shape: tuple, device, inputs: list, warn: bool,
                 grad: bool = True) -> None:
    """PyTorch's out= rules for the samplers: ``out`` a Tensor on ``device``, not requiring
    grad nor any of ``inputs`` (when ``grad`` and grad mode is on), not an inference tensor
    nor partly overlapping an input; then resized to ``shape`` (contiguous; PyTorch's
    UserWarning when ``warn`` and it had elements: normal's tensor overloads warn,
    bernoulli / multinomial / normal(number, number, size) resize silently)."""
    from tgrad._out import _check_overlap, _resize, check_out_grad, check_out_tensor
    from tgrad.tensor import check_not_inference
    check_out_tensor(op, out)
    if grad and is_grad_enabled():
        check_out_grad(op, [out], inputs)
    if out.device != device:
        raise RuntimeError(f"{op}(): Expected out tensor to have device {device}, but got "
                           f"{out.device} instead")
    check_not_inference(out)
    _check_overlap(op, out, inputs)
    if tuple(out.shape) != tuple(shape):
        with warnings.catch_warnings():
            if not warn:
                warnings.simplefilter("ignore")
            _resize(out, tuple(shape))


def _write_out(out: Tensor, res: Tensor) -> Tensor:
    """``res`` (out's shape) written into ``out`` in place (version bump); returns out."""
    with no_grad():
        out.copy_(res)
    return out


def bernoulli(input: Tensor, p: float | None = None, *, generator=None,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """1 with probability input[i] (or ``p``), else 0, in input's dtype; with a
    probability tensor that requires grad the result does too, its gradient to it 0
    (PyTorch's BernoulliBackward0). ``out=`` (not with ``p``, as PyTorch): any real or bool
    dtype, resized to input's shape without a warning (PyTorch's bernoulli_out)."""
    require_tensor("bernoulli", input)
    if out is not None:
        if p is not None:
            raise TypeError("bernoulli(): out= is not supported together with p (PyTorch's "
                            "bernoulli(input, p) takes no out=): use "
                            "out.bernoulli_(p) instead")
        _prepare_out("bernoulli", out, tuple(input.shape), input.device, [input], warn=False)
        _bernoulli_dtype_check(out, "bernoulli_tensor_cpu_self_")
        _check_probabilities("bernoulli", input)
        with no_grad():
            return out.bernoulli_(input.detach(), generator=generator)
    if p is not None:
        return input.detach().clone().bernoulli_(p, generator=generator)
    _check_probabilities("bernoulli", input)
    with no_grad(), drawing_from(generator, input.device, "bernoulli"):
        sample = ew.lt(rand_like(input, dtype=dtypes.float64), input.to(dtypes.float64)) \
            .to(input.dtype)
    if input.requires_grad and is_grad_enabled():  # PyTorch's node, a zero gradient
        return _BernoulliZeroGrad.apply(input, sample)
    return sample


from tgrad.ops.torch_utils import _ZeroGrad  # noqa: E402  (poisson's node, in torch_utils)


class _BernoulliZeroGrad(_ZeroGrad):
    """y = a draw of Bernoulli(p);  dp = 0 (PyTorch's BernoulliBackward0)."""

    node_name = "BernoulliBackward0"


@tensor_method("bernoulli")
def _bernoulli_method(self: Tensor, p: float | None = None, *, generator=None) -> Tensor:
    """Tensor.bernoulli: tgrad.bernoulli without out= (as PyTorch's method)."""
    return bernoulli(self, p, generator=generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False, out: Tensor | None = None) -> Tensor:
    """Normal samples: tensor ``mean`` and/or ``std`` (broadcast; the result takes their
    shape), or two numbers and ``size``. The dtype is mean's when mean is a tensor, else
    std's (as PyTorch: float32 mean with float64 std gives float32). The result does not
    require grad (PyTorch records a node whose gradients to mean and std are zeros: a
    documented difference).

    ``out=`` (PyTorch's rules): the samples are drawn in out's dtype (a float or complex
    one) and written into it, resized to the result's shape; with tensor mean/std a resize
    warns and neither they nor out may require grad; with number mean/std out's dtype and
    device stand in for dtype= / device= (a different dtype= raises), the resize is silent
    and requires_grad=True makes out require grad."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(): with number mean and std, pass size=")
        if not std >= 0:  # (NaN too)
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        if out is not None:
            return _normal_numbers_out(mean, std, size, generator, dtype, device,
                                       requires_grad, out)
        out = randn(size, generator=generator, dtype=dtype, device=device) * std + mean
    else:
        if size is not None:
            raise TypeError("normal(): size= is only for number mean and std")
        if isinstance(std, Tensor) and std.numel() and not bool(
                (std.detach() >= 0).all()):  # (NaN fails too)
            raise RuntimeError("normal expects all elements of std >= 0.0")
        if not isinstance(std, Tensor) and not std >= 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        if out is not None:
            from tgrad._out import check_out_grad
            if is_grad_enabled():  # (checked here: the draw below runs under no_grad)
                check_out_grad("normal", [out], tensors)
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
            if out is not None:  # drawn in out's dtype: out.normal_(0, 1) * std + mean
                _prepare_out("normal", out, shape, ref.device, tensors, warn=True)
                z = randn(shape, generator=generator, dtype=out.dtype, device=out.device)
                return _write_out(out, ((z * s).to(out.dtype) + m).to(out.dtype))
            z = randn(shape, generator=generator, dtype=ref.dtype, device=ref.device)
            # PyTorch's z.mul_(std).add_(mean): each step rounded into z's dtype
            out = ((z * s).to(ref.dtype) + m).to(ref.dtype)
    out = out.detach()
    return out.requires_grad_(True) if requires_grad else out


def _normal_numbers_out(mean: float, std: float, size, generator, dtype, device,
                        requires_grad: bool, out) -> Tensor:
    """normal(number, number, size, out=out): a creation function's out= (see normal)."""
    if isinstance(out, Tensor) and dtype is not None and dtypes.as_dtype(dtype) is not out.dtype:
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(f"dtype {names[dtypes.as_dtype(dtype)]} does not match dtype of out "
                           f"parameter ({names[out.dtype]})")
    from tgrad.device import as_device
    from tgrad.ops.creation import _shape
    shape = _shape(size if isinstance(size, (tuple, list)) else (size,), "normal")
    if isinstance(out, Tensor) and device is None:
        device = out.device
    _prepare_out("normal", out, shape, as_device(device), [], warn=False)
    with no_grad():
        z = randn(shape, generator=generator, dtype=out.dtype, device=out.device)
        _write_out(out, (z * std + mean).to(out.dtype))
    return out.requires_grad_(True) if requires_grad else out


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator=None, out: Tensor | None = None) -> Tensor:
    """``num_samples`` category indices per row of non-negative weights ``input`` (1-d or
    2-d), int64. ``out=``: an int64 tensor (PyTorch's error otherwise), resized without a
    warning; input may require grad (the draw is not differentiable)."""
    require_tensor("multinomial", input)
    if out is not None:
        from tgrad._out import check_out_tensor
        check_out_tensor("multinomial", out)
        if out.dtype is not dtypes.int64:
            raise RuntimeError(f"multinomial expects Long tensor out, got: "
                               f"{dtypes.SCALAR_TYPE_NAMES[out.dtype]}")
        res = multinomial(input, num_samples, replacement, generator=generator)
        _prepare_out("multinomial", out, tuple(res.shape), input.device, [input], warn=False,
                     grad=False)
        return _write_out(out, res)
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


@tensor_method("multinomial")
def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *,
                        generator=None) -> Tensor:
    """Tensor.multinomial: tgrad.multinomial without out= (as PyTorch's method)."""
    return multinomial(self, num_samples, replacement, generator=generator)
