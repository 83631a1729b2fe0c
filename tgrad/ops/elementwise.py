"""Elementwise ops: one table row per op (forward primitive + derivative rule).

Rules are written in differentiable tgrad ops, so ``create_graph=True`` works for every op.
Binary rules return gradients in the broadcast shape; the engine's gradient validation
reduces them to each input's shape with ``sum_to`` (un-broadcasting), as PyTorch's does.
Notation in the rules: ``g`` incoming gradient, ``x``/``a``/``b`` inputs, ``y`` the output.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from tgrad import dtypes
from tgrad.autograd import function as _function
from tgrad.autograd import profiler_hooks
from tgrad.autograd.function import _NOT_TENSOR, Function, differentiable_formula
from tgrad.autograd.grad_mode import STATE
from tgrad.backends import _BACKENDS
from tgrad.backends.numpy import _clamp as _numpy_clamp
from tgrad.backends.numpy import _relu as _numpy_relu
from tgrad.ops._common import (
    backend_of,
    broadcast_or_raise,
    register_op,
    require_tensor,
    route_sparse,
    same_device,
    tensor_method,
    wrap,
)
from tgrad.ops.complex_ops import no_complex as _no_complex
from tgrad.tensor import Tensor, _int_arg

__all__ = ["neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
           "sigmoid", "erf", "reciprocal", "square", "sign", "floor", "ceil", "round",
           "trunc", "log2", "log10", "exp2", "sinh", "cosh", "tan", "atan", "asin", "acos",
           "arctan", "arcsin", "arccos", "atan2", "arctan2",
           "relu", "tanh_backward", "sigmoid_backward", "relu_backward",
           "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "clamp",
           "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
           "floor_divide", "remainder", "fmod", "true_divide", "divide", "subtract", "multiply",
           "negative", "clip", "isnan", "isinf", "isfinite"]


def _zero(g, *_):
    from tgrad.ops.creation import zeros_like
    return zeros_like(g)


# ------------------------------------------------------------------------------ fused rules
def grad_formula(name: str, g: Tensor, *saved) -> Tensor:
    """Backend primitive ``grad_formula``: the backward formula ``name`` of an elementwise op
    in one pass (one kernel on the GPU). Not recorded in the graph (it runs only without
    create_graph); the profiler lists it as the op ``<name>_backward``."""
    arrays = [s._data if isinstance(s, Tensor) else s for s in saved]
    prof = profiler_hooks.ACTIVE
    if prof is None:
        return wrap(backend_of(g).grad_formula(name, g._data, *arrays), g.device)
    handle = prof.op_start(_formula_op(name), (g, *saved))
    out = None
    try:
        out = wrap(backend_of(g).grad_formula(name, g._data, *arrays), g.device)
    finally:
        prof.op_end(handle, out)
    return out


_FORMULA_OPS: dict = {}


def _formula_op(name: str) -> type:
    """What the profiler records for a fused formula: a class with the op's ``name``."""
    op = _FORMULA_OPS.get(name)
    if op is None:
        op = _FORMULA_OPS[name] = type(f"{name}_backward", (), {"name": f"{name}_backward"})
    return op


def _unobserved() -> bool:
    """True in a plain backward (nothing recorded, no profiler, no autocast region, no
    forward-AD level): an op called there through ``Function.apply`` makes no node (grad
    mode is off), no profiler event, no casts and no tangents, so a rule may run the op's
    primitive on the backend arrays itself and get the very same tensor."""
    # differentiable_formula() inlined (this runs once per rule call on the hot path)
    return (not STATE.enabled and (not _function._FW_ACTIVE or STATE.fw_level is None)
            and profiler_hooks.ACTIVE is None and STATE.autocast is None)


_RULE_PRODUCT_OPS = {"mul": operator.mul, "div": operator.truediv}


def _rule_product(name: str, g: Tensor, s) -> Tensor:
    """``g * s`` or ``g / s`` in a backward rule (``name`` "mul" or "div": g * b, g * y,
    g / b). When ``_unobserved()`` and g, s are plain tensors of one float dtype on one
    device, this is the binary op's forward fast path without the Function call around it
    (the same ``be.binary`` on the same arrays); anything else (numbers, promotion, devices,
    shapes that do not broadcast) takes the op itself."""
    if (type(s) is Tensor and type(g) is Tensor and s._dtype is g._dtype
            and s._device is g._device and g._dtype.is_floating_point
            # _unobserved(), inlined (a product node's backward runs this twice)
            and not STATE.enabled and (not _function._FW_ACTIVE or STATE.fw_level is None)
            and profiler_hooks.ACTIVE is None and STATE.autocast is None):
        try:  # (wrap, inlined)
            be = _BACKENDS.get(g._device.type) or backend_of(g)
            return Tensor(be.binary(name, g._data, s._data), None, g._device)
        except ValueError:
            pass  # not broadcastable (a node called by hand): the op raises its own error
    return _RULE_PRODUCT_OPS[name](g, s)


def _fused(formula: str, composite, select=None):
    """A rule that runs as the single primitive ``formula`` on ``select(*saved)`` (default:
    the saved values as they are) when no graph is recorded, and as ``composite``
    (differentiable tgrad ops, the primitive's test oracle) under create_graph=True or
    inside a forward-AD level, so higher-order gradients and forward over reverse work."""
    def rule(g, *saved):
        if differentiable_formula():
            return composite(g, *saved)
        return grad_formula(formula, g, *(saved if select is None else select(*saved)))
    return rule


def _unary_fused(formula: str, composite):
    # unary rules take (g, x, y) with only the saved one of x, y set
    return _fused(formula, composite, lambda x, y: (y if x is None else x,))


# ------------------------------------------------------------------------------ unary
_LN2, _LN10 = math.log(2.0), math.log(10.0)


class _OneMinusSquare(Function):
    """p = 1 - x^2, evaluated as (1 - x)(1 + x) (accurate near +-1);  dx = g conj(-2 x).
    One node rather than the product's two: at x = +-1 an infinite incoming gradient then
    gives +-inf (the product rule's second term would be inf * 0 = NaN), so asin's and acos's
    second derivatives at +-1 are PyTorch's infinities."""

    node_name = "OneMinusSquareBackward"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (1.0 - x) * (x + 1.0)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.complex_ops import conj_of
        (x,) = ctx.saved_tensors
        return g * conj_of(x * -2.0) if x.dtype.is_complex else g * (x * -2.0)


def _sqrt_1mx2(x):
    """sqrt(1 - x^2) as sqrt((1 - x)(1 + x)) (accurate near +-1; NaN for |x| > 1); a
    differentiable composite (the create_graph form of asin's / acos's rule)."""
    return sqrt(_OneMinusSquare.apply(x))


# name: (saves "x" / "y" / "", float-only (ints promote to the default float), rule(g, x, y))
# Rules of more than one op are fused (_unary_fused): one primitive in a plain backward.
UNARY_RULES = {
    "neg":        ("",  False, lambda g, x, y: -g),
    "abs":        ("x", False, _unary_fused("abs", lambda g, x, y: g * sign(x))),
    "exp":        ("y", True,  lambda g, x, y: _rule_product("mul", g, y)),
    "log":        ("x", True,  lambda g, x, y: g / x),
    "log1p":      ("x", True,  _unary_fused("log1p", lambda g, x, y: g / (x + 1.0))),
    "expm1":      ("y", True,  _unary_fused("expm1", lambda g, x, y: g * (y + 1.0))),
    "sqrt":       ("y", True,  _unary_fused("sqrt", lambda g, x, y: g / (y * 2.0))),
    "rsqrt":      ("y", True,  _unary_fused("rsqrt", lambda g, x, y: g * (y * y * y) * -0.5)),
    "sin":        ("x", True,  _unary_fused("sin", lambda g, x, y: g * cos(x))),
    "cos":        ("x", True,  _unary_fused("cos", lambda g, x, y: -g * sin(x))),
    "tanh":       ("y", True,  lambda g, x, y: tanh_backward(g, y)),
    "sigmoid":    ("y", True,  lambda g, x, y: sigmoid_backward(g, y)),
    "erf":        ("x", True,  _unary_fused("erf", lambda g, x, y: g * exp(-square(x))
                                            * (2.0 / math.sqrt(math.pi)))),
    "reciprocal": ("y", True,  _unary_fused("reciprocal", lambda g, x, y: -g * (y * y))),
    "square":     ("x", False, _unary_fused("square", lambda g, x, y: g * x * 2.0)),
    "sign":       ("",  False, _zero),
    "floor":      ("",  False, _zero),
    "ceil":       ("",  False, _zero),
    "round":      ("",  False, _zero),
    "trunc":      ("",  False, _zero),
    "log2":       ("x", True,  _unary_fused("log2", lambda g, x, y: g / (x * _LN2))),
    "log10":      ("x", True,  _unary_fused("log10", lambda g, x, y: g / (x * _LN10))),
    "exp2":       ("y", True,  _unary_fused("exp2", lambda g, x, y: g * y * _LN2)),
    "sinh":       ("x", True,  _unary_fused("sinh", lambda g, x, y: g * cosh(x))),
    "cosh":       ("x", True,  _unary_fused("cosh", lambda g, x, y: g * sinh(x))),
    "tan":        ("y", True,  _unary_fused("tan", lambda g, x, y: g * (y * y + 1.0))),
    # atan' = 1 / (1 + x^2);  asin' = 1 / sqrt(1 - x^2) = -acos' (inf at +-1, NaN past them)
    "atan":       ("x", True,  _unary_fused("atan", lambda g, x, y: g / (x * x + 1.0))),
    "asin":       ("x", True,  _unary_fused("asin", lambda g, x, y: g / _sqrt_1mx2(x))),
    "acos":       ("x", True,  _unary_fused("acos", lambda g, x, y: -g / _sqrt_1mx2(x))),
}

# f'(z) of the ops PyTorch defines for complex z, from the saved x or y as in UNARY_RULES:
# the gradient is g * conj(f'(z)) (PyTorch's convention; see tgrad.ops.complex_ops). abs
# is not holomorphic: its gradient is g * sgn(z) (the rule below). Ops missing here raise
# for complex inputs (PyTorch's errors: no order, no rounding, no erf).
COMPLEX_DERIVATIVES = {
    "exp": lambda x, y: y,
    "log": lambda x, y: reciprocal(x),
    "log1p": lambda x, y: reciprocal(x + 1.0),
    "expm1": lambda x, y: y + 1.0,
    "sqrt": lambda x, y: reciprocal(y * 2.0),
    "rsqrt": lambda x, y: y * y * y * -0.5,
    "sin": lambda x, y: cos(x),
    "cos": lambda x, y: -sin(x),
    "tanh": lambda x, y: 1.0 - y * y,
    "sigmoid": lambda x, y: y * (1.0 - y),
    "reciprocal": lambda x, y: -(y * y),
    "square": lambda x, y: x * 2.0,
    "log2": lambda x, y: reciprocal(x * _LN2),
    "log10": lambda x, y: reciprocal(x * _LN10),
    "exp2": lambda x, y: y * _LN2,
    "sinh": lambda x, y: cosh(x),
    "cosh": lambda x, y: sinh(x),
    "tan": lambda x, y: 1.0 + y * y,
    "atan": lambda x, y: reciprocal(x * x + 1.0),
    "asin": lambda x, y: reciprocal(_sqrt_1mx2(x)),
    "acos": lambda x, y: -reciprocal(_sqrt_1mx2(x)),
}
_COMPLEX_ERRORS = {
    "sign": "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
            "use torch.sgn instead.",
    "floor": "floor is not supported for complex inputs",
    "ceil": "ceil is not supported for complex inputs",
    "round": "round is not supported for complex inputs",
    "trunc": "trunc is not supported for complex inputs",
}


def _complex_unary_grad(name: str, g, x, y):
    from tgrad.ops.complex_ops import complex_sgn, conj_of
    if name == "neg":
        return -g
    if name == "abs":  # |z|: d/dRe + i d/dIm = z / |z|
        return g * complex_sgn(x)
    return g * conj_of(COMPLEX_DERIVATIVES[name](x, y))


# Node names follow PyTorch's (TanhBackward0, ...); "neg" is NegBackward0, etc., but
# log1p's is Log1PBackward0 and square's PowBackward0 (PyTorch's square is pow(x, 2))
_UNARY_NODE_NAMES = {"log1p": "Log1PBackward0", "square": "PowBackward0"}


def _node(name: str) -> str:
    return _UNARY_NODE_NAMES.get(name) or \
        "".join(p.capitalize() for p in name.split("_")) + "Backward0"


def _make_unary(name: str, saves: str, float_only: bool, rule):
    def forward(ctx, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
        data = x._data
        if x.dtype.is_complex and name not in COMPLEX_DERIVATIVES \
                and name not in ("neg", "abs"):
            raise NotImplementedError(_COMPLEX_ERRORS.get(
                name, f"{name}: \"{name}_cpu\" not implemented for "
                      f"'{dtypes.SCALAR_TYPE_NAMES[x.dtype]}'"))
        if float_only and not (x.dtype.is_floating_point or x.dtype.is_complex):
            data = backend_of(x).cast(data, dtypes.get_default_dtype().np)  # (any device)
        elif x.dtype is dtypes.bool_ and name != "sign":
            if name == "abs":  # PyTorch's error (sign takes bools; abs does not)
                raise NotImplementedError("abs: \"abs_cpu\" not implemented for 'Bool'; "
                                          "convert with .int() or .float() first")
            if name in ("floor", "ceil", "round", "trunc"):  # PyTorch has no bool kernel
                raise NotImplementedError(f"{name}: not supported for bool tensors; convert "
                                          f"with .float() (\"{name}_vml_cpu\" not "
                                          f"implemented for 'Bool')")
            if name == "neg":  # PyTorch's text
                raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not "
                                   "supported. If you are trying to invert a mask, use the `~` "
                                   "or `logical_not()` operator instead.")
            raise RuntimeError(f"{name}: not supported for bool tensors; convert with .float()")
        y = wrap(backend_of(x).unary(name, data), x.device)
        if saves == "x":
            ctx.save_for_backward(x)
        elif saves == "y":
            ctx.save_for_backward(y)
        return y

    def backward(ctx, g):
        saved = ctx.saved_tensors
        x = saved[0] if saves == "x" else None
        y = saved[0] if saves == "y" else None
        if (x if x is not None else y if y is not None else g).dtype.is_complex:
            return _complex_unary_grad(name, g, x, y)
        return rule(g, x, y)

    cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": _node(name),
        # PyTorch's names for what the node saved (Function.saved_attributes): x is self,
        # y the result
        "saved_attributes": {"x": {"_saved_self": 0}, "y": {"_saved_result": 0}}.get(saves),
        "forward": staticmethod(forward), "backward": staticmethod(backward)})
    return register_op(cls)


_UNARY = {n: _make_unary(n, *spec) for n, spec in UNARY_RULES.items()}


def _unary_fn(name: str):
    cls = _UNARY[name]

    def fn(input: Tensor) -> Tensor:  # noqa: A002
        try:
            return cls.apply(input)
        except RuntimeError as e:  # (free when nothing raises) a sparse COO input: its
            return route_sparse(name, e, input)  # own method (tgrad.sparse), else e
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}."
    return tensor_method(name)(fn)


neg = _unary_fn("neg")
abs = _unary_fn("abs")  # noqa: A001
exp = _unary_fn("exp")
log = _unary_fn("log")
log1p = _unary_fn("log1p")
expm1 = _unary_fn("expm1")
sqrt = _unary_fn("sqrt")
rsqrt = _unary_fn("rsqrt")
sin = _unary_fn("sin")
cos = _unary_fn("cos")
tanh = _unary_fn("tanh")
sigmoid = _unary_fn("sigmoid")
erf = _unary_fn("erf")
reciprocal = _unary_fn("reciprocal")
_square = _unary_fn("square")


@tensor_method("square")
def square(input: Tensor) -> Tensor:  # noqa: A002
    """input * input; bools square to int64 (PyTorch's square is pow(input, 2))."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool_ and not input._sparse:
        return input ** 2
    return _square(input)
sign = _unary_fn("sign")
floor = _unary_fn("floor")
ceil = _unary_fn("ceil")
_round_half_even = _unary_fn("round")
trunc = _unary_fn("trunc")
log2 = _unary_fn("log2")
log10 = _unary_fn("log10")
exp2 = _unary_fn("exp2")
sinh = _unary_fn("sinh")
cosh = _unary_fn("cosh")
tan = _unary_fn("tan")
atan = _unary_fn("atan")
asin = _unary_fn("asin")
acos = _unary_fn("acos")
arctan, arcsin, arccos = atan, asin, acos  # NumPy's names, as PyTorch has them
tensor_method("arctan")(atan)
tensor_method("arcsin")(asin)
tensor_method("arccos")(acos)


class _RoundDecimals(Function):
    """round(x, decimals=d) as PyTorch computes it: in the compute dtype (float32 for
    float16/bfloat16, rounded to the input's dtype once) with s = 10^|d| in that dtype (inf
    past its range: every output NaN then, as PyTorch's), nearbyint(x * s) / s for d > 0 and
    nearbyint(x / s) * s for d < 0; zero gradient (PyTorch's RoundBackward1)."""

    name = "round"
    node_name = "RoundBackward1"

    @staticmethod
    def forward(ctx, x, decimals):
        cd = dtypes.float32 if x.dtype.itemsize == 2 else x.dtype
        try:
            scale = 10.0 ** (decimals if decimals > 0 else -decimals)
        except OverflowError:
            scale = math.inf
        with np.errstate(over="ignore"):  # 1e39 is inf in float32, as in PyTorch
            scale = float(cd.np.type(scale))
        w = x if x.dtype is cd else x.to(cd)
        y = (_round_half_even(w * scale) / scale if decimals > 0
             else _round_half_even(w / scale) * scale)
        return y if y.dtype is x.dtype else y.to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return _zero(g), None


@tensor_method("round")
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001,A002
    """Round half to even, to ``decimals`` decimal places (PyTorch: round(x * 10^d) / 10^d,
    and round(x / 10^-d) * 10^-d for negative d, halves in float32; see ``_RoundDecimals``);
    zero gradient."""
    if decimals == 0:
        return _round_half_even(input)
    decimals = _int_arg("round", "decimals", decimals)  # (int() truncated 1.5; rare branch)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"round: decimals is only supported for floating point "
                                  f"tensors, got {input.dtype}")
    return _RoundDecimals.apply(input, decimals)
negative = neg
tensor_method("negative", "__neg__")(neg)
tensor_method("__abs__")(abs)


# ------------------------------------------------------------------- paired backward ops
# The backward of tanh and sigmoid is one primitive (one kernel on the GPU); each is itself
# differentiable.  tanh_backward(g, y) = g (1 - y^2);  sigmoid_backward(g, y) = g y (1 - y);
# relu_backward(g, y) = g * [y != 0] (y = relu(x) is >= 0 or NaN; piecewise constant in y: no
# gradient for y).
PAIRED_RULES = {
    "relu_backward": lambda gg, g, y: (relu_backward(gg, y), None),
    # name: rule(gg, g, y) -> (d/dg, d/dy)
    "tanh_backward": lambda gg, g, y: (tanh_backward(gg, y), gg * g * y * -2.0),
    "sigmoid_backward": lambda gg, g, y: (sigmoid_backward(gg, y),
                                          gg * g * (1.0 - y * 2.0)),
}


def _make_paired(name: str, rule):
    def forward(ctx, g, y):
        ctx.save_for_backward(g, y)
        return wrap(getattr(backend_of(g), name)(g._data, y._data), g.device)

    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        return rule(gg, g, y)

    cls = type(_node(name)[:-9], (Function,), {
        "name": name, "node_name": _node(name),
        "forward": staticmethod(forward), "backward": staticmethod(backward)})
    return register_op(cls)


_PAIRED = {n: _make_paired(n, r) for n, r in PAIRED_RULES.items()}


def _paired(name: str, grad: Tensor, output: Tensor) -> Tensor:
    """The paired op ``name``; when ``_unobserved()`` (every plain backward of relu, tanh,
    sigmoid), its forward's one primitive without the Function call (the same result: the
    forward checks nothing and saves only into a ctx nobody keeps)."""
    if type(grad) is Tensor and type(output) is Tensor and _unobserved():
        return wrap(getattr(backend_of(grad), name)(grad._data, output._data), grad.device)
    return _PAIRED[name].apply(grad, output)


def relu_backward(grad: Tensor, output: Tensor) -> Tensor:
    return _paired("relu_backward", grad, output)


def tanh_backward(grad: Tensor, output: Tensor) -> Tensor:
    return _paired("tanh_backward", grad, output)


def sigmoid_backward(grad: Tensor, output: Tensor) -> Tensor:
    return _paired("sigmoid_backward", grad, output)


# ------------------------------------------------------------------------------ binary
def _pow_base_composite(g, a, b, y):
    if not isinstance(b, Tensor):
        return g * b * pow(a, b - 1.0)
    return g * where(eq(b, 0.0), 0.0, b * pow(a, b - 1.0))


def _pow_exponent_composite(g, a, b, y):
    if not isinstance(a, Tensor):  # Python-scalar base (2.0 ** t)
        if a == 0:
            return g * where(ge(b, 0.0), 0.0, y * -math.inf)
        return g * y * (math.log(a) if a > 0 else math.nan)
    return g * where(logical_and(eq(a, 0.0), ge(b, 0.0)), 0.0, y * log(a))


# d a^b / da = b a^(b-1), defined as 0 where b == 0 (also at a == 0, as PyTorch);
# d a^b / db = a^b log a, defined as 0 where a == 0 and b >= 0 (as PyTorch). Fused, each
# recomputes a^b (or a^(b-1)) in its kernel rather than reading a fourth operand.
_POW_BASE = _fused("pow_base", _pow_base_composite, lambda a, b, y: (a, b))
_POW_EXPONENT = _fused("pow_exponent", _pow_exponent_composite, lambda a, b, y: (a, b))


def _pow_grad_base(g, a, b, y):
    if not isinstance(b, Tensor) and b == 0:
        return _zero(g)
    return _POW_BASE(g, a, b, y)


def _max_share(a, b):
    """Gradient share of ``a`` in maximum/minimum: 1 where it wins, 1/2 on ties."""
    return (eq(a, b) * 0.5 + 0.0)


def _winner_rule(pick):
    """maximum/minimum gradient of one input: g * (1 - [p < q] - [p == q] / 2) with
    (p, q) = pick(a, b): (a, b) for maximum's a, (b, a) for its b, and the reverse for
    minimum (a < b is b > a). Where a NaN operand makes every comparison false, both inputs
    get the whole gradient, as PyTorch's rule gives. Fused: max_share(g, p, q)."""
    return _fused("max_share", lambda g, a, b, y: _winner_share(g, *pick(a, b)),
                  lambda a, b, y: pick(a, b))


def _winner_share(g, p, q):
    return where(lt(p, q), 0.0, g * (1.0 - _max_share(p, q)))


def _atan2_recip(a, b):
    """1 / (a^2 + b^2), and 0 where a^2 + b^2 == 0 (PyTorch's mask: atan2's gradient is 0
    at the origin, and where the squares underflow)."""
    d = a * a + b * b
    return where(eq(d, 0.0), 0.0, reciprocal(d))


# d atan2(a, b)/da = b / (a^2 + b^2);  d atan2(a, b)/db = -a / (a^2 + b^2) (PyTorch's
# order: (g b) r and (g (-a)) r = -(g a) r with r = _atan2_recip; a may be a bool or
# integer tensor, which has no negation). Fused: each one kernel.
_ATAN2_A = _fused("atan2_a", lambda g, a, b, y: g * b * _atan2_recip(a, b),
                  lambda a, b, y: (a, b))
_ATAN2_B = _fused("atan2_b", lambda g, a, b, y: -(g * a) * _atan2_recip(a, b),
                  lambda a, b, y: (a, b))


# name: ((what the a rule reads, what the b rule reads) out of "a", "b", "y", rule for
# grad_a, rule for grad_b), rules (g, a, b, y). A rule only runs when its input needs a
# gradient, and only what the running rules read is saved (as PyTorch: x * c with c not
# requiring grad saves c alone, so x may be modified in place before the backward).
BINARY_RULES = {
    "add": (("", ""), lambda g, a, b, y: g, lambda g, a, b, y: g),
    "sub": (("", ""), lambda g, a, b, y: g, lambda g, a, b, y: -g),
    "mul": (("b", "a"), lambda g, a, b, y: _rule_product("mul", g, b),
            lambda g, a, b, y: _rule_product("mul", g, a)),
    # d(a/b)/da = 1 / b;  d(a/b)/db = -a / b^2 = -(g / b) a / b, from a and b, not the
    # output (as PyTorch: y = a / b may be modified in place before the backward). The two
    # share g / b: see _div_grads.
    "div": (("b", "ab"), None, None),
    "pow": (("ab", "aby"), _pow_grad_base, _POW_EXPONENT),
    # a mod b = a - q b with q = floor(a / b) (remainder) or trunc(a / b) (fmod), piecewise
    # constant: d/da = 1, d/db = -q, q as PyTorch's div(a, b, rounding_mode=...): recorded
    # with zero gradients (DivBackward2), so d/db is differentiable under create_graph
    "remainder": (("", "ab"), lambda g, a, b, y: g,
                  lambda g, a, b, y: -g * div(a, b, rounding_mode="floor")),
    "fmod": (("", "ab"), lambda g, a, b, y: g,
             lambda g, a, b, y: -g * div(a, b, rounding_mode="trunc")),
    "atan2": (("ab", "ab"), _ATAN2_A, _ATAN2_B),
    "maximum": (("ab", "ab"), _winner_rule(lambda a, b: (a, b)),
                _winner_rule(lambda a, b: (b, a))),
    "minimum": (("ab", "ab"), _winner_rule(lambda a, b: (b, a)),
                _winner_rule(lambda a, b: (a, b))),
}


# -(q a) / b with q = g / b: div's gradient of b (fused: one kernel)
_DIV_B = _fused("div_b", lambda q, a, b: -(q * a) / b)


def _div_grads(g, a, b, y, need_a: bool, need_b: bool) -> tuple:
    """div's two gradients computing g / b once (4 passes over memory on the CPU for both);
    under create_graph with both wanted, db's g / b is computed again, so each gradient has
    nodes of its own (as PyTorch's formulas) and differentiating one without retain_graph
    leaves the other's graph whole (the same values, bit for bit, as without a graph)."""
    q = _rule_product("div", g, b)
    if need_a and need_b and differentiable_formula():
        return q, _DIV_B(_rule_product("div", g, b), a, b)
    return (q if need_a else None), (_DIV_B(q, a, b) if need_b else None)


_JOINT_RULES = {"div": _div_grads}  # binary ops whose two gradients share work

# Ops PyTorch does not define for complex numbers (orderings, rounding divisions, bitwise;
# maximum / minimum raise a RuntimeError of their own in _prepare)
_NO_COMPLEX_BINARY = ("lt", "le", "gt", "ge", "atan2", "remainder",
                      "fmod", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
                      "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm")


def _complex_binary_grads(name: str, g, a, b, y, need_a: bool, need_b: bool) -> tuple:
    """Gradients of a holomorphic binary op computed in complex: g * conj(df/da) and
    g * conj(df/db) (PyTorch's convention: the gradient is dL/d Re + i dL/d Im). A real
    input gets the real part (the engine takes it).
      add: (g, g);  sub: (g, -g);  mul: (g conj(b), g conj(a));
      div: (g / conj(b), -(g / conj(b)) conj(a / b));
      pow: (g conj(b a^(b-1)), 0 where b == 0;  g conj(a^b log a), 0 where a == 0 and
            Re b >= 0: PyTorch's masks)."""
    from tgrad.ops.complex_ops import conj_of as cj
    if name == "add":
        return (g if need_a else None), (g if need_b else None)
    if name == "sub":
        return (g if need_a else None), (-g if need_b else None)
    if name == "mul":
        return (g * cj(b) if need_a else None), (g * cj(a) if need_b else None)
    if name == "div":
        q = g / cj(b)
        return (q if need_a else None), (-(q * cj(a)) / cj(b) if need_b else None)
    if name == "pow":
        ga = gb = None
        if need_a:
            if isinstance(b, Tensor):
                ga = where(eq(b, 0), 0.0, g * cj(b * pow(a, b - 1)))
            else:
                ga = _zero(g) if b == 0 else g * cj(b * pow(a, b - 1))
        if need_b:
            from tgrad.ops.complex_ops import real
            if isinstance(a, Tensor):  # (b is a tensor: it needs a gradient)
                mask = logical_and(eq(a, 0), ge(real(b), 0.0))
                # a real base is promoted first (as PyTorch): log of a negative real is
                # log|a| + i pi, not NaN
                ac = a if a.dtype.is_complex else a.to(y.dtype)
                # log of 1 where masked: y log a is 0 there, and so are its derivatives (a
                # forward-AD tangent, a double backward), not 0 * inf
                gb = g * cj(y * log(where(mask, 1.0, ac)))
            elif a == 0:  # d/db 0^b = y log 0: 0 where Re b >= 0 (the mask above), as a
                # constant factor, so no derivative reads 0 * inf either
                gb = g * cj(y * where(ge(real(b), 0.0), 0.0, -math.inf))
            else:
                gb = g * cj(y * np.log(complex(a)))
        return ga, gb
    raise RuntimeError(f"{name}: the derivative for complex inputs is not implemented")


def _save_plan(reads: tuple) -> dict:
    """needs_input_grad -> (save a, save b, save y) for a binary op whose rules read
    ``reads`` (see BINARY_RULES)."""
    plan = {}
    for need_a in (False, True):
        for need_b in (False, True):
            keys = (reads[0] if need_a else "") + (reads[1] if need_b else "")
            plan[need_a, need_b] = ("a" in keys, "b" in keys, "y" in keys)
    return plan


# Not differentiable: bool results, floor_divide (piecewise constant; PyTorch too), the
# bitwise ops (bool and integer tensors only) and the integer-only ops (shifts, gcd, lcm).
_INT_ONLY = ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
               "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", *_INT_ONLY)
_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", *_INT_ONLY)
# PyTorch's CPU kernel names in its NotImplementedError for float / bool operands of these
_INT_KERNELS = {"bitwise_and": "bitwise_and_cpu", "bitwise_or": "bitwise_or_cpu",
                "bitwise_xor": "bitwise_xor_cpu", "bitwise_left_shift": "lshift_cpu",
                "bitwise_right_shift": "rshift_cpu", "gcd": "gcd_cpu", "lcm": "lcm_cpu"}
# floor_divide's float result requires grad and its backward raises, as PyTorch's node
# "NotImplemented" (a silent zero gradient would hide the missing derivative)
_NO_DERIVATIVE = ("floor_divide",)
_NODE_NAMES = {"maximum": "MaximumBackward0", "minimum": "MinimumBackward0",
               "floor_divide": "NotImplemented"}


def _operand(x, dt, backend, name: str = ""):
    """Backend array (or NumPy scalar) of ``x`` in dtype ``dt``."""
    if isinstance(x, Tensor):
        return backend.cast(x._data, dt.np)
    try:
        return _number_as(dt.np.type, x)
    except OverflowError:  # a Python int outside an integer dtype's range...
        if not dt.is_signed and dt is not dtypes.bool_ and -np.iinfo(dt.np).max <= x < 0:
            return dtypes.number_as(x, dt)  # ...but PyTorch wraps -255..-1 into uint8
        raise RuntimeError(f"{name}: value {x} cannot be converted to type {dt.name} without "
                           f"overflow; use a tensor of a wider dtype (e.g. .long())") from None


def _check_operand(name: str, x) -> None:
    if not isinstance(x, (Tensor, int, float, complex, bool, np.number, np.bool_)):
        raise TypeError(f"{name}(): unsupported operand type {type(x).__name__}; expected a "
                        f"Tensor or a Python number")


def _dtype_name(x) -> str:
    return x.dtype.name if isinstance(x, Tensor) else type(x).__name__


def _check_sub_operands(a, b) -> None:
    """PyTorch's errors for a bool operand of sub / rsub: bool tensors and Python bools
    (x - True) alike, whatever alpha."""
    bools = [getattr(x, "dtype", None) is dtypes.bool_ or isinstance(x, (bool, np.bool_))
             for x in (a, b)]
    if all(bools):
        raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is "
                           "not supported. Use the `^` or `logical_xor()` operator "
                           "instead.")
    if any(bools):
        raise RuntimeError("sub: Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


# the binary ops PyTorch also takes two numbers for (the others raise its TypeError)
_NUMBER_PAIR_OPS = frozenset(("add", "sub", "mul", "div", "true_divide", "floor_divide"))


def _prepare(name: str, is_logical: bool, a, b) -> tuple:
    """Check the operands and promote them: (device, backend, array a, array b)."""
    _check_operand(name, a)
    _check_operand(name, b)
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        if name not in _NUMBER_PAIR_OPS:
            raise TypeError(f"{name}(): expected at least one Tensor argument, got "
                            f"{type(a).__name__} and {type(b).__name__}")
        from tgrad.ops.creation import tensor  # the first number as a 0-d tensor, as
        a = tensor(a)  # PyTorch's (add(2.0, 3.0) is tensor(5.), mul(2, 3) tensor(6))
    if name == "sub":
        _check_sub_operands(a, b)
    t = a if isinstance(a, Tensor) else b
    dev = same_device(name, a, b) if isinstance(a, Tensor) and isinstance(b, Tensor) \
        else t.device
    be = backend_of(t)
    if is_logical:
        dt = dtypes.bool_
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype is not b.dtype:
            a, b = _in_common_dtype(a, b)
    else:
        dt = dtypes.result_type(a, b)
        if dt.is_complex:
            if name in ("maximum", "minimum"):  # PyTorch's RuntimeError for these two
                raise RuntimeError(f"{name} not implemented for complex tensors (complex "
                                   f"numbers have no order; apply it to .real, .imag or "
                                   f".abs() instead)")
            if name in _NO_COMPLEX_BINARY:
                raise NotImplementedError(
                    f"{name}: \"{name}_cpu\" not implemented for "
                    f"'{dtypes.SCALAR_TYPE_NAMES[dt]}' (operands {_dtype_name(a)} and "
                    f"{_dtype_name(b)}): complex numbers have no order; apply it to .real, "
                    f".imag or .abs() instead")
            # a real GPU tensor with a complex number (x + 1j): complex is CPU-only there
            dtypes.check_complex_device(name, dt, dev)
        if name in ("div", "atan2") and not (dt.is_floating_point or dt.is_complex):
            dt = dtypes.get_default_dtype()  # true division / atan2 of integers (and bools)
        elif dt is dtypes.bool_ and name in _BOOL_KERNELS:
            raise NotImplementedError(f"\"{_BOOL_KERNELS[name]}\" not implemented for 'Bool' "
                                      f"({name}: convert bool tensors with .int() or .float() "
                                      f"first)")
        elif name in _INT_ONLY and (dt.is_floating_point or dt is dtypes.bool_):
            raise NotImplementedError(
                f"{name}: not implemented for {dt.name} (operands {_dtype_name(a)} and "
                f"{_dtype_name(b)}); it takes integer tensors, as in PyTorch (\""
                f"{_INT_KERNELS[name]}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dt]}')")
        elif dt.is_floating_point and name in _BITWISE:
            raise NotImplementedError(
                f"{name}: not implemented for {dt.name} (operands {_dtype_name(a)} and "
                f"{_dtype_name(b)}); bitwise ops take bool or integer tensors, as in PyTorch "
                f"(\"{_INT_KERNELS[name]}\" not implemented for "
                f"'{dtypes.SCALAR_TYPE_NAMES[dt]}')")
    return dev, be, _operand(a, dt, be, name), _operand(b, dt, be, name)


def _in_common_dtype(a: Tensor, b: Tensor) -> tuple:
    """Two tensors of different dtypes cast to their promoted dtype, as PyTorch reads the
    operands of a logical op: a 0-d operand that does not fit wraps or rounds first (a 0-d
    int64 256 with a uint8 tensor is 0, false; a 0-d float64 1e-50 with float32 is 0.0)."""
    ct = dtypes.result_type(a, b)
    return (a if a.dtype is ct else a.detach().to(ct)), (b if b.dtype is ct else b.detach().to(ct))


# PyTorch's kernel names in its NotImplementedError for bool operands
_BOOL_KERNELS = {"pow": "pow", "floor_divide": "div_floor_cpu", "remainder": "remainder_cpu",
                 "fmod": "fmod_cpu"}


class RoundingModeError(RuntimeError, ValueError):
    """div's bad ``rounding_mode``: PyTorch raises RuntimeError; it is a ValueError too (a
    bad argument value), so either ``except`` catches it."""


class IntegerDivisionByZeroError(RuntimeError, ZeroDivisionError):
    """PyTorch raises RuntimeError("ZeroDivisionError") for an integer division by zero;
    this is both, so ``except RuntimeError`` and ``except ZeroDivisionError`` catch it."""


def _nonzero_int_divisor(name: str, be, a, b) -> None:
    """Integer floor division by zero raises, as in Python and PyTorch (NumPy gives 0 and a
    GPU kernel something undefined), unless there is nothing to divide (an empty result, as
    PyTorch checks each element). On the GPU the check is a device-to-host sync."""
    if a.dtype.kind not in "iub" or a.size == 0:
        return
    if isinstance(b, np.generic):  # a number operand
        zero = b == 0
    else:
        zero = be.to_host(be.any_(be.binary("eq", b, b.dtype.type(0)), None, False))
    if bool(zero):
        raise IntegerDivisionByZeroError(f"{name}: integer division by zero")


def _nonnegative_number_exponent(a: Tensor, b) -> None:
    """An integer tensor to a negative Python/NumPy integer power raises (PyTorch's check),
    on the number itself: once converted to the tensor's dtype a uint8 exponent of -1 is
    255. A tensor of negative integer exponents computes PyTorch's 1, -1 or 0 (the
    backends' pow)."""
    if (isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_)) and b < 0
            and a.dtype.np.kind in "iub"):  # (a bool base: an int64 result, checked too)
        raise RuntimeError(f"pow: integers to negative integer powers are not allowed "
                           f"(a {a.dtype} base, exponent {int(b)}); use a float base "
                           f"(.float()) or a float exponent ({int(b)}.0)")


# Checks of the promoted operands (backend arrays) before an op runs.
_OPERAND_CHECKS = {"floor_divide": _nonzero_int_divisor, "remainder": _nonzero_int_divisor,
                   "fmod": _nonzero_int_divisor}


_F32 = np.float32
_FLOAT16_MAX = dtypes.FLOAT16_MAX


def _number_as(to, x):
    """The Python number ``x`` as the NumPy scalar type ``to``. Past a float dtype's range it
    becomes inf without NumPy's overflow warning (PyTorch converts silently: x_half > 70000
    compares with inf); an int outside an integer dtype raises OverflowError as NumPy does."""
    if type(x) is complex or isinstance(x, np.complexfloating):
        return to(x)  # a complex number into a complex dtype (promotion made it one)
    if isinstance(x, np.integer):  # read as the Python int (np.int8(np.uint8(200)) wraps)
        x = int(x)
    if -_FLOAT16_MAX <= x <= _FLOAT16_MAX:  # every float dtype holds these (the common case)
        return to(x)
    with np.errstate(over="ignore"):
        return to(x)


def _keeps_f32(a, b, xa, dev) -> bool:
    """Whether mul / div / floor_divide(a, b) reads b in float32: a one-element tensor of
    another dtype than the float16/bfloat16 result, read as PyTorch's CPU kernels read it,
    its own value in float32 (``iter.original_scalar_value``), not rounded to the half dtype
    first, as a Python number (x * tensor(1e5) is -50912 for x = -0.5091, not -inf). Only
    the second operand (PyTorch rounds a one-element first one) and only on the CPU
    (PyTorch's rule is for CPU scalars)."""
    return (type(a) is Tensor and type(b) is Tensor and xa.dtype.itemsize == 2
            and xa.dtype.kind in "fV" and b.dtype.np != xa.dtype and b.numel() == 1
            and dev.type == "cpu")


def _big_int_in_f32(name: str, a, b, be, xa, xb, narrow_to) -> tuple:
    """A Python int operand of mul/div/floor_divide past _FAST_INT (|i| >= 2^62, the
    checked path) with a float16/bfloat16 tensor, read in float32 as the fast path reads
    every number (PyTorch's opmath: 0 * (2^63 - 1) is 0, not 0 * inf = NaN). Only the
    second operand, and mul's first (the fast path's rules); (xa, xb, narrow_to)."""
    if type(b) is int and type(a) is Tensor and a.dtype.is_floating_point \
            and a.dtype.itemsize == 2:
        return xa, _number_as(_F32, b), narrow_to
    if name == "mul" and type(a) is int and type(b) is Tensor \
            and b.dtype.is_floating_point and b.dtype.itemsize == 2:
        return _number_as(_F32, a), be.cast(b._data, _F32), b.dtype.np
    return xa, xb, narrow_to


# Python ints below this in magnitude convert to any float dtype without OverflowError (they
# may round, or become inf in float16, like a float of that value); larger ones take the
# checked path (_operand's error)
_FAST_INT = 2**62


def _wrapped_number(i: int):
    """Number operand ``i`` of a binary node as PyTorch's saved wrapped number: a 0-d CPU
    tensor (float64 for a float, int64 for an int, bool, complex128)."""
    def value(node):
        x = node.scalars[i] if node.scalars is not None else None
        if x is None:
            return None
        dt = (dtypes.bool_ if isinstance(x, (bool, np.bool_)) else
              dtypes.int64 if isinstance(x, (int, np.integer)) else
              dtypes.complex128 if isinstance(x, (complex, np.complexfloating))
              else dtypes.float64)
        from tgrad.ops.creation import tensor
        return tensor(x, dtype=dt)
    return value


def _number(i: int):
    """Number operand ``i`` of a binary node as it was given (pow's saved Scalar)."""
    return lambda node: node.scalars[i] if node.scalars is not None else None


def _alpha_one(node) -> int:
    # tgrad's add/sub nodes always add other as given: add(x, y, alpha=a) records
    # other * a (a MulBackward0) first, so the node's own alpha is 1
    return 1


_SELF_OTHER = {"_saved_self": _function.SavedSlot(0, _wrapped_number(0)),
               "_saved_other": _function.SavedSlot(1, _wrapped_number(1))}
# PyTorch's names for what a binary node saved (Function.saved_attributes): saved_tensors
# is (a, b, y), None where not saved (see _save_plan), number operands in ctx.scalars
_BINARY_SAVED = {
    "add": {"_saved_alpha": _alpha_one}, "sub": {"_saved_alpha": _alpha_one},
    "mul": _SELF_OTHER, "div": _SELF_OTHER, "maximum": _SELF_OTHER,
    "minimum": _SELF_OTHER, "atan2": _SELF_OTHER,
    # PowBackward0 (tensor ** number); PowBackward1/2 also have the result (_POW_SAVED)
    "pow": {"_saved_self": 0, "_saved_exponent": _function.SavedSlot(1, _number(1))},
}
_POW_SAVED = {"_saved_self": _function.SavedSlot(0, _number(0)),
              "_saved_exponent": _function.SavedSlot(1, _number(1)), "_saved_result": 2}


def _refuse_float8_scalar_mul(dt) -> None:
    """PyTorch's CPU error for a float8 product whose second operand is one value (only a
    float8 dtype is floating with itemsize 1)."""
    dtypes.refuse_float8("mul_cpu_reduced_float", dt)


def _refuse_float8_mul_by_one_value(xb) -> None:
    """PyTorch's CPU mul takes its reduced-float kernel, which float8 lacks, when its SECOND
    operand is one value over the whole result (TensorIterator's is_scalar(2)): a number or
    an array each of whose dims has size 1 or (a nonempty dim) stride 0 (a 0-d or
    one-element tensor, an expanded one). ``xb`` is that operand in the result's dtype; a
    first operand of one value is fine (s * x of a 0-d s works, x * s raises)."""
    dt = getattr(xb, "dtype", None)
    if dt in dtypes.FLOAT8_NP and all(n == 1 or (n and st == 0) for n, st in
                                      zip(np.shape(xb), getattr(xb, "strides", ()))):
        _refuse_float8_scalar_mul(dtypes.from_numpy_dtype(dt))


def _make_binary(name: str, reads: tuple, rule_a, rule_b):
    joint = _JOINT_RULES.get(name)
    is_cmp = rule_a is None and joint is None
    no_derivative = name in _NO_DERIVATIVE
    # remainder(number, tensor): PyTorch has no derivative for the tensor (its Scalar_Tensor
    # overload), so its backward raises rather than give -floor(a / b)
    number_first_raises = name == "remainder"
    plan = _save_plan(reads)
    saves = any(reads)
    is_logical = name.startswith("logical")
    plain_float = not (is_logical or name in _BITWISE)  # float operands take a fast path
    # PyTorch's mul, div and floor_divide keep a Python number operand of a float16/bfloat16
    # tensor in float32 (x * 70000 is 63008 for x = 0.9, not inf); the others round it first
    f32_number = name in ("mul", "div", "floor_divide")
    is_pow = name == "pow"  # a number exponent of a half tensor must fit its dtype
    is_mul = name == "mul"  # float8 (1-byte floats) multiply only tensor by tensor
    check = _OPERAND_CHECKS.get(name)

    def forward(ctx, a, b):
        narrow_to = None  # a dtype to round the result to (a number over a half tensor)
        op = name  # the backend's op (name, but for pow(bool tensor, bool))
        if (type(a) is Tensor and type(b) is Tensor and a._dtype is b._dtype
                and a._device is b._device and a._dtype.is_floating_point and plain_float):
            # Fast path (the common case): two float tensors of one dtype on one device,
            # so no promotion, casts or operand checks.
            if is_mul and a._dtype.itemsize == 1:  # float8: PyTorch's reduced-float mul
                _refuse_float8_mul_by_one_value(b._data)
            dev = a._device
            be = _BACKENDS.get(dev.type) or backend_of(a)  # (backend_of, inlined)
            xa, xb = a._data, b._data
        elif (type(b) is float or (type(b) is int and -_FAST_INT < b < _FAST_INT)) \
                and type(a) is Tensor and a._dtype.is_floating_point and plain_float:
            # A float tensor and a Python number (x * 0.5, g / n, x + 1, x ** 2): the
            # tensor's dtype (a number does not promote a float tensor) and no operand
            # checks apply. Python ints take the same rules as floats, as in PyTorch.
            dev, be, xa = a._device, backend_of(a), a._data
            if is_mul and a._dtype.itemsize == 1:  # a float8 tensor times a number
                _refuse_float8_scalar_mul(a._dtype)
            if a._dtype.itemsize == 2 and is_pow:  # PyTorch: pow(half, 1e5) raises
                dtypes.check_value_fits(name, b, a._dtype)
            xb = _number_as(_F32 if f32_number and a._dtype.itemsize == 2 else a._dtype.np.type, b)
            if is_pow and type(b) is float and a._dtype is dtypes.float32 and \
                    b not in _POW_F32_EXPONENTS and dev.type == "cpu":
                # the exponent rounded to float32, as PyTorch's vectorized CPU loop, and the
                # power computed in double, rounded once (powf is off by an ulp in ~8% of
                # results; PyTorch's kernel in ~1%)
                xa, xb, narrow_to = xa.astype(np.float64), np.float64(np.float32(b)), _F32
        elif (type(a) is float or (type(a) is int and -_FAST_INT < a < _FAST_INT)) \
                and type(b) is Tensor and b.dtype.is_floating_point \
                and plain_float:  # the reflected form (1.0 - x, 2 ** x)
            # (mul(c, x) of a float8 x works, as PyTorch's; c * x is mul(x, c), which raises)
            if name == "mul" and b.dtype.itemsize == 2:  # the float32 number goes second
                dev, be, xa, xb = b.device, backend_of(b), b._data, _number_as(_F32, a)
            elif name == "div" and b.dtype.itemsize == 2:
                # div(c, x) of a half x (PyTorch rejects a number first; the operator c / x
                # is __rtruediv__, x.reciprocal() * c): the float32 number over x widened,
                # rounded once
                dev, be = b.device, backend_of(b)
                xa, xb = _number_as(_F32, a), be.cast(b._data, _F32)
                narrow_to = b.dtype.np
            else:
                dev, be, xa, xb = b.device, backend_of(b), _number_as(b.dtype.np.type, a), b._data
        elif is_pow and type(a) is Tensor and a.dtype is dtypes.bool_ \
                and isinstance(b, (bool, np.bool_)):
            # PyTorch's pow(x, number) copies x for 1 and fills 1 for 0 before any kernel,
            # so a bool tensor takes a bool exponent: x ** True = x, x ** False = True
            # (x | not b; other bool powers raise in _prepare)
            dev, be = a.device, backend_of(a)
            xa, xb, op = a._data, np.bool_(not b), "logical_or"
        else:
            if is_pow and isinstance(a, Tensor):
                _nonnegative_number_exponent(a, b)
            dev, be, xa, xb = _prepare(name, is_logical, a, b)
            if check is not None:
                check(name, be, xa, xb)
            if is_mul:  # x * True, x * tensor(2) of a float8 x: PyTorch's reduced-float mul
                _refuse_float8_mul_by_one_value(xb)
            if f32_number and _keeps_f32(a, b, xa, dev):
                xb = be.cast(b._data, _F32)
            elif f32_number and (type(b) is int and not -_FAST_INT < b < _FAST_INT
                                 or type(a) is int and not -_FAST_INT < a < _FAST_INT):
                xa, xb, narrow_to = _big_int_in_f32(name, a, b, be, xa, xb, narrow_to)
        try:
            out = be.binary(op, xa, xb)
            if narrow_to is not None:
                out = be.cast(out, narrow_to)
            y = Tensor(out, None, dev)  # (wrap, inlined)
        except ValueError:
            # PyTorch's text, the same on every backend (NumPy's own text differs by backend:
            # a ufunc's on the CPU, np.broadcast_shapes' on cuda)
            sa, sb = getattr(a, "shape", ()), getattr(b, "shape", ())
            try:
                broadcast_or_raise(name, sa, sb)
            except RuntimeError as err:  # PyTorch's text, then both shapes
                raise RuntimeError(f"{err} (shapes {list(sa)} and {list(sb)})") from None
            raise  # the shapes broadcast: another cause, NumPy's own error
        if is_cmp:
            if not (no_derivative and y.dtype.is_floating_point):
                ctx.mark_non_differentiable(y)
        elif saves and True in ctx.needs_input_grad:  # recording: keep what backward reads
            save_a, save_b, save_y = plan[ctx.needs_input_grad]
            if is_pow and type(b) is Tensor:  # PowBackward1/2 always save their result
                save_y = True  # (PyTorch's, read by _saved_result)
            ta = a if isinstance(a, Tensor) else None
            tb = b if isinstance(b, Tensor) else None
            if ta is None or tb is None:  # a number operand (tensors go to saved_tensors)
                ctx.scalars = (a if ta is None else None, b if tb is None else None)
            # ctx.save_for_backward(...), inlined (it only sets to_save): hot path
            ctx.to_save = (ta if save_a else None, tb if save_b else None,
                           y if save_y else None)
        return y

    def backward(ctx, g):
        # Gradients come back in the broadcast shape; the engine's gradient validation
        # sums them to each input's shape (PyTorch's validate_outputs does the same).
        if no_derivative:
            raise RuntimeError(f"derivative for aten::{name} is not implemented")
        a = b = y = None
        if saves:
            a, b, y = ctx.saved_tensors  # None where not saved (not read; see _save_plan)
            scalars = ctx.scalars
            if scalars is not None:
                a = scalars[0] if scalars[0] is not None else a
                b = scalars[1] if scalars[1] is not None else b
        need_a, need_b = ctx.needs_input_grad
        if number_first_raises and need_b and not isinstance(a, Tensor):
            raise RuntimeError(f"derivative for aten::{name} is not implemented")
        if g._dtype.is_complex:  # computed in complex: PyTorch's conjugate convention
            return _complex_binary_grads(name, g, a, b, y, need_a, need_b)
        if joint is not None:
            return joint(g, a, b, y, need_a, need_b)
        return (rule_a(g, a, b, y) if need_a else None,
                rule_b(g, a, b, y) if need_b else None)

    node = _NODE_NAMES.get(name, _node(name))
    cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": node, "scalar_edges": name not in _NUMBER_NO_EDGE,
        "saved_attributes": _BINARY_SAVED.get(name),
        "forward": staticmethod(forward), "backward": staticmethod(backward)})
    cls._backward_cls.scalars = None  # forward sets (number or None, number or None)
    return register_op(cls)


# ops whose PyTorch node has no slot for a number operand (a Scalar overload): pow's, and
# fmod's / remainder's (FmodBackward0 / RemainderBackward0 of (tensor, number) have one edge)
_NUMBER_NO_EDGE = ("pow", "fmod", "remainder")
_BINARY = {n: _make_binary(n, *spec) for n, spec in BINARY_RULES.items()}
_BINARY.update({n: _make_binary(n, ("", ""), None, None) for n in COMPARISONS})


def _name_by_operands(name: str, two_tensors: str) -> None:
    """PyTorch names fmod's / remainder's node by overload: ``two_tensors`` (FmodBackward1)
    for two tensors, the class's node_name (FmodBackward0) with a number operand. Read from
    the node's argument kinds when asked (nothing added to the op's call)."""
    node = _BINARY[name]._backward_cls
    number = node._node_name
    node.name = lambda self: number if _NOT_TENSOR in self._in_meta else two_tensors


_name_by_operands("fmod", "FmodBackward1")
_name_by_operands("remainder", "RemainderBackward1")


def _cpu_scalars_moved(a, b) -> tuple:
    """PyTorch lets a 0-d CPU tensor take part in an op on another device as a scalar
    (``cuda_x * torch.tensor(0.5)``): it is moved there (a recorded copy, so its gradient
    comes back to the CPU). Other device mixes are left for the op's own error."""
    if type(a) is Tensor and type(b) is Tensor and a.device is not b.device:
        if b.ndim == 0 and b.device.type == "cpu":
            b = b.to(a.device)
        elif a.ndim == 0 and a.device.type == "cpu":
            a = a.to(b.device)
    return a, b


def node_variant(base: type, node_name: str, **attrs) -> type:
    """Op class ``base`` (the same forward and backward) under another of PyTorch's node
    names, which depend on the overload (PowBackward1/2, RsubBackward1,
    SpecialXlogyBackward1/2...), with class attributes ``attrs``: ``scalar_edges`` False
    (a number operand gets no next_functions slot: RsubBackward1's only edge is self's) or
    ``hidden_edges`` (positions of a number made a 0-d tensor), ``saved_attributes``. The
    caller picks the class when it selects the op (nothing is added to the op's call);
    fmod's / remainder's, which share the binary operators' function, are named by the
    node instead (_name_by_operands)."""
    cls = type(base.__name__, (base,), {"node_name": node_name, **attrs})
    if hasattr(base._backward_cls, "scalars"):  # a binary op's (set by its forward)
        cls._backward_cls.scalars = None
    return cls


def _node_variant(name: str, node_name: str, scalar_edges: bool | None = None):
    """Binary op ``name`` as node_variant (pow's saved attributes are PyTorch's per
    overload, _POW_SAVED)."""
    base = _BINARY[name]
    return node_variant(base, node_name,
                        saved_attributes=_POW_SAVED if name == "pow" else base.saved_attributes,
                        scalar_edges=base.scalar_edges if scalar_edges is None else scalar_edges)


# PyTorch's pow overloads: PowBackward0 tensor ** number (_BINARY["pow"]), PowBackward1
# tensor ** tensor, PowBackward2 number ** tensor; rsub (other - input, the reflected
# operator and tgrad.rsub): RsubBackward0 of two tensors, RsubBackward1 of a number other
_POW_TT = _node_variant("pow", "PowBackward1")
_POW_NT = _node_variant("pow", "PowBackward2")
class _RSUB_TT(_BINARY["sub"]):  # noqa: N801
    """rsub(input, other) = other - input of two tensors (and ``other - input`` by
    input.__rsub__): PyTorch's RsubBackward0, whose edges are (input, other) in that order
    (sub(other, input) listed them swapped). d input = -g;  d other = g."""

    node_name = "RsubBackward0"

    @staticmethod
    def forward(ctx, input, other):  # noqa: A002
        return _BINARY["sub"].forward(ctx, other, input)

    @staticmethod
    def backward(ctx, g):
        need_input, need_other = ctx.needs_input_grad
        return (neg(g) if need_input else None), (g if need_other else None)


_RSUB_TT._backward_cls.scalars = None
_RSUB_NT = _node_variant("sub", "RsubBackward1", scalar_edges=False)


# number exponents PyTorch's CPU pow computes in the tensor's own dtype (x * x, sqrt...,
# NumPy's fast paths for 2, 0.5 and -1 alike)
_POW_F32_EXPONENTS = frozenset((2.0, 3.0, 0.5, -0.5, -1.0, -2.0))


def _pow_class(base, exponent):
    if isinstance(exponent, Tensor):
        return _POW_TT if isinstance(base, Tensor) else _POW_NT
    return _BINARY["pow"]


# what an operator dunder computes with; any other operand (a NumPy array, a str, a list,
# an object with its own reflected method) gives NotImplemented, as PyTorch's dunders do,
# so that Python tries the operand's __radd__... (or NumPy computes ndarray's) and raises
# its own "unsupported operand type(s)" TypeError when none applies. Checked only in the
# operators' except branches (free when nothing raises).
OPERANDS = (Tensor, int, float, complex, np.number, np.bool_)


def _binary_fn(name: str, methods=(), reflected=()):
    cls = _BINARY[name]

    def make(operator: bool):
        """The function (``operator`` False) or its operator (``t + x``, ``operator`` True,
        the same body): an operator given a NumPy array returns NotImplemented, as
        PyTorch's, so that NumPy computes ``t + ndarray`` (ndarray.__radd__, made a tensor
        by Tensor.__array_wrap__) and ``ndarray + t`` is Python's TypeError; so does any
        operand that is no Tensor or number (OPERANDS: obj.__radd__ is called)."""
        def fn(input, other) -> Tensor:  # noqa: A002
            if type(other) is Tensor and type(input) is Tensor and \
                    other._device is not input._device:
                input, other = _cpu_scalars_moved(input, other)  # noqa: A001
            try:
                return cls.apply(input, other)
            except RuntimeError as e:  # (free when nothing raises) a sparse COO operand
                return route_sparse(name, e, input, other)
            except TypeError:  # (free when nothing raises) an unusual operand
                if operator and not isinstance(other, OPERANDS):
                    return NotImplemented
                raise
        return fn

    fn = make(False)

    def rfn(self, other) -> Tensor:
        try:
            return cls.apply(other, self)
        except TypeError:  # ndarray op t, str op t: Python's TypeError, as PyTorch's
            if not isinstance(other, OPERANDS):
                return NotImplemented
            raise

    if name in ("mul", "add"):  # c * x is x * c and c + x is x + c (PyTorch's __rmul__ /
        # __radd__): the number is _saved_other, the edges (x's, None)
        def rfn(self, other) -> Tensor:  # noqa: F811
            try:
                return cls.apply(self, other)
            except TypeError:
                if not isinstance(other, OPERANDS):
                    return NotImplemented
                raise
    elif name == "sub":  # other - self: rsub's nodes
        def rfn(self, other) -> Tensor:  # noqa: F811
            try:
                if isinstance(other, Tensor):
                    return _RSUB_TT.apply(self, other)
                return _RSUB_NT.apply(other, self)
            except TypeError:
                if not isinstance(other, OPERANDS):
                    return NotImplemented
                raise

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting and PyTorch type promotion."
    tensor_method(name)(fn)
    if methods:
        op = make(True)
        op.__name__, op.__doc__ = methods[0], fn.__doc__
        tensor_method(*methods)(op)
    if reflected:
        tensor_method(*reflected)(rfn)
    return fn


def _alpha_apply(name: str, apply, input, other, alpha) -> Tensor:  # noqa: A002
    """``apply(input, other * alpha)`` with PyTorch's checks of alpha (add/sub/rsub)."""
    if type(other) is Tensor and type(input) is Tensor and other.device is not input.device:
        input, other = _cpu_scalars_moved(input, other)  # noqa: A001
    if alpha == 1 and alpha is not True:
        return apply(input, other)
    if name in ("sub", "rsub"):  # before the operands are cast for the scaling
        _check_sub_operands(input, other)
    dt = dtypes.result_type(input, other)
    dtypes.refuse_float8("add_stub", dt)  # (not the scaling's mul kernel: PyTorch's add)
    if isinstance(alpha, (bool, np.bool_)):
        if dt is not dtypes.bool_:
            raise RuntimeError(f"{name}: Boolean alpha only supported for Boolean "
                               f"results (got alpha={alpha} for {dt.name})")
        if alpha:
            return apply(input, other)
    if isinstance(alpha, float) and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name}: for integral input tensors, argument alpha "
                           f"must not be a floating point number (got {alpha})")
    dtypes.check_value_fits(name, alpha, dt)  # PyTorch: alpha=1e5 for halves raises
    # other * alpha in the result's compute dtype (float32 for halves), rounded once at
    # the end, as PyTorch computes input + alpha * other; a tensor of another dtype is cast
    # to the result dtype first, as promotion casts it (an int64 65520 is inf in float16)
    cd = dtypes.float32 if dt.is_floating_point and dt.itemsize == 2 else dt
    if cd is not dt:  # halves: PyTorch's kernel reads alpha, and a number operand, as
        # values of the half dtype (sub(ones(2, float16), 1e5, alpha=0.3) is -inf there)
        with np.errstate(over="ignore"):  # (a number past the half range is inf)
            alpha = float(np.asarray(alpha, dt.np))
            input, other = (t if isinstance(t, Tensor)  # noqa: A001
                            else float(np.asarray(t, dt.np)) for t in (input, other))
    x, y = ((t if t.dtype is dt else t.to(dt)).to(cd) if isinstance(t, Tensor)
            and (t.dtype is not cd or cd is not dt) else t for t in (input, other))
    out = apply(x, y * alpha)
    return out if out.dtype is dt else out.to(dt)


def rsub_apply(input: Tensor, other, alpha=1) -> Tensor:  # noqa: A002
    """``other - alpha * input`` under rsub's node (RsubBackward0/1, PyTorch's names)."""
    if isinstance(other, Tensor):  # the node's edges in rsub's order (input, other)
        return _alpha_apply("sub", lambda o, i: _RSUB_TT.apply(i, o), other, input, alpha)
    return _alpha_apply("sub", _RSUB_NT.apply, other, input, alpha)


def _with_alpha(fn):
    """PyTorch's ``add``/``sub`` signature: ``fn(input, other * alpha)``."""
    name = fn.__name__
    apply = _BINARY[name].apply  # called directly: one Python call less

    def op(input, other, *, alpha=1) -> Tensor:  # noqa: A002
        try:
            if alpha == 1 and alpha is not True and not (
                    type(other) is Tensor and type(input) is Tensor
                    and other.device is not input.device):
                return apply(input, other)  # the common case
            return _alpha_apply(name, apply, input, other, alpha)
        except RuntimeError as e:  # (free when nothing raises) a sparse COO operand
            return route_sparse(name, e, input, other, alpha=alpha)
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"{fn.__doc__[:-1]}; ``other`` is scaled by ``alpha`` first."
    tensor_method(fn.__name__)(op)
    return op


# the operators keep the plain two-argument function (the hot path)
add = _with_alpha(_binary_fn("add", ("__add__",), ("__radd__",)))
sub = _with_alpha(_binary_fn("sub", ("__sub__",), ("__rsub__",)))
mul = _binary_fn("mul", ("__mul__",), ("__rmul__",))
div = _binary_fn("div", ("__truediv__",))


@tensor_method("__rtruediv__")
def _rtruediv(self: Tensor, other) -> Tensor:
    """``other / self`` is ``self.reciprocal() * other``: PyTorch's own definition (its
    grad_fn is MulBackward0, and a half tensor's reciprocal is rounded before the product:
    10 / float16(3) is 3.332, 1e-3 / float16(1e-5) is inf), ``ndarray / t`` too (the
    product ``t.reciprocal() * ndarray``: float32 for a float32 array over an int tensor,
    as PyTorch's)."""
    try:
        return mul(reciprocal(self), other)
    except TypeError:
        if not isinstance(other, OPERANDS):  # PyTorch's reciprocal() * other: the
            try:  # operator, so other.__rmul__ may answer; none: Python's TypeError
                return reciprocal(self) * other
            except TypeError:
                return NotImplemented
        raise


# pow's one place for devices and operand kinds (Tensor.pow, ** and the reflected **): a
# 0-d CPU tensor meets a tensor on another device as a scalar (_cpu_scalars_moved), and
# _pow_class picks the node by the operand kinds
@tensor_method("pow")
def pow(input, exponent) -> Tensor:  # noqa: A001,A002
    """``input ** exponent`` elementwise (PyTorch's argument names: pow(x, exponent=2));
    the node is PowBackward0, 1 or 2 as PyTorch's overloads (number exponent, two tensors,
    number base)."""
    if type(exponent) is Tensor and type(input) is Tensor and \
            exponent.device is not input.device:
        input, exponent = _cpu_scalars_moved(input, exponent)  # noqa: A001
    return _pow_class(input, exponent).apply(input, exponent)


_NO_MODULO = object()  # pow(t, e) passes no modulo; an explicit one, even None, is refused


@tensor_method("__pow__")
def _pow_operator(self, exponent, modulo=_NO_MODULO) -> Tensor:
    """``t ** exponent``: pow's body; a NumPy array exponent gives NotImplemented (NumPy
    computes it, as for PyTorch's operator: see _binary_fn), as does any exponent that is
    no Tensor or number and a ``modulo`` (three-argument pow(t, e, m): Python's TypeError,
    as PyTorch's; t.__pow__(e, None) too, as PyTorch's: pow(t, e, None) calls __pow__(e))."""
    if modulo is not _NO_MODULO:
        return NotImplemented
    if type(exponent) is Tensor and type(self) is Tensor and exponent.device is not self.device:
        self, exponent = _cpu_scalars_moved(self, exponent)
    try:
        return _pow_class(self, exponent).apply(self, exponent)
    except TypeError:
        if not isinstance(exponent, OPERANDS):
            return NotImplemented
        raise


@tensor_method("__rpow__")
def _rpow(self: Tensor, other, modulo=_NO_MODULO) -> Tensor:
    """``other ** self`` (other a number: PowBackward2; Python calls this only when other is
    not a tensor, so pow's device handling has nothing to do); a ``modulo``: NotImplemented,
    as __pow__'s."""
    if modulo is not _NO_MODULO:
        return NotImplemented
    try:
        return _pow_class(other, self).apply(other, self)
    except TypeError:  # ndarray ** t, str ** t: Python's TypeError, as PyTorch's
        if not isinstance(other, OPERANDS):
            return NotImplemented
        raise


atan2 = _binary_fn("atan2")
arctan2 = atan2
tensor_method("arctan2")(atan2)
maximum = _binary_fn("maximum")
minimum = _binary_fn("minimum")
eq = _binary_fn("eq")
ne = _binary_fn("ne")


def _comparison_operator(fn):
    """``t == None`` is False and ``t != None`` True (Python's fallback, as in PyTorch):
    operands that are not tensors or numbers give NotImplemented instead of an error."""
    numbers = (Tensor, int, float, complex, bool, np.number, np.bool_)

    def operator(self, other):
        if not isinstance(other, numbers):
            if isinstance(other, np.ndarray):  # compared elementwise, as PyTorch does
                from tgrad.ops.creation import as_tensor
                return fn(self, as_tensor(other, device=self.device))
            return NotImplemented
        return fn(self, other)
    return operator


tensor_method("__eq__")(_comparison_operator(eq))
tensor_method("__ne__")(_comparison_operator(ne))
lt = _binary_fn("lt", ("__lt__",))
le = _binary_fn("le", ("__le__",))
gt = _binary_fn("gt", ("__gt__",))
ge = _binary_fn("ge", ("__ge__",))
logical_and = _binary_fn("logical_and")
logical_or = _binary_fn("logical_or")
# &, |, ^ are bitwise, as in PyTorch: on bool tensors the same as the logical ops
bitwise_and = _binary_fn("bitwise_and", ("__and__",), ("__rand__",))
bitwise_or = _binary_fn("bitwise_or", ("__or__",), ("__ror__",))
bitwise_xor = _binary_fn("bitwise_xor", ("__xor__",), ("__rxor__",))
# a << b, a >> b as PyTorch (and NumPy) define them for any count: a count outside
# [0, width) gives 0 (left) or the sign, a >> (width - 1) (right); left shifts wrap
bitwise_left_shift = _binary_fn("bitwise_left_shift", ("__lshift__",), ("__rlshift__",))
bitwise_right_shift = _binary_fn("bitwise_right_shift", ("__rshift__",), ("__rrshift__",))
# gcd(a, b) of |a| and |b| (gcd(0, 0) = 0); lcm(a, b) = |a / gcd(a, b) * b| (0 if a or b is)
gcd = _binary_fn("gcd", ("gcd",))
lcm = _binary_fn("lcm", ("lcm",))
floor_divide = _binary_fn("floor_divide", ("__floordiv__",), ("__rfloordiv__",))
remainder = _binary_fn("remainder", ("__mod__",), ("__rmod__",))
fmod = _binary_fn("fmod")


class _RoundedDiv(Function):
    """div(a, b, rounding_mode='trunc'|'floor') of floats: piecewise constant, so the
    gradients are exact zeros of a's and b's shapes (PyTorch's DivBackward2), even where
    b is 0 or an input is not finite. Its parts are registered ops (no kernel of its own)."""

    name = "div"
    node_name = "DivBackward2"

    @staticmethod
    def forward(ctx, a, b, mode):
        ctx.shapes = tuple(t.shape if isinstance(t, Tensor) else None for t in (a, b))
        if mode == "floor":
            return floor_divide(a, b)
        dt = dtypes.result_type(a, b)
        if dt in dtypes.FLOAT8_DTYPES:  # PyTorch's kernel names (b one value: reduced float)
            one = not isinstance(b, Tensor) or b.numel() == 1
            dtypes.refuse_float8("div_trunc_cpu_reduced_float" if one else "div_trunc_cpu", dt)
        if dt.itemsize == 2:  # halves: the quotient truncated in float32, rounded once;
            # a tensor of another dtype is first cast to the half dtype, as promotion casts it
            # (an int64 70000 is inf in float16), but a one-element second operand of a CPU
            # op, read in float32 (PyTorch's CPU scalar, _keeps_f32's rule)
            if isinstance(a, Tensor) and a.dtype is not dt:
                a = a.to(dt)
            if isinstance(b, Tensor) and b.dtype is not dt and not (
                    b.numel() == 1 and isinstance(a, Tensor) and a.device.type == "cpu"):
                b = b.to(dt)
            a, b = (t.to(dtypes.float32) if isinstance(t, Tensor) else t for t in (a, b))
        q = _BINARY["div"].apply(a, b)
        q = where(lt(q, 0.0), ceil(q), floor(q))
        return q if q.dtype is dt else q.to(dt)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros
        need = ctx.needs_input_grad
        return tuple(zeros(s, dtype=g.dtype, device=g.device) if n else None
                     for s, n in zip(ctx.shapes, need[:2])) + (None,)


def _with_rounding_mode(true_div):
    """PyTorch's ``div(input, other, *, rounding_mode=None)``: "floor" is floor_divide;
    "trunc" rounds toward zero (integers: C division; floats: the true quotient
    truncated). Both are piecewise constant: zero gradient, as PyTorch's."""
    apply = _BINARY["div"].apply

    def div(input, other, *, rounding_mode=None) -> Tensor:  # noqa: A002
        try:
            if rounding_mode is None:  # the common case first
                return apply(input, other)
            if rounding_mode not in ("trunc", "floor"):
                raise RoundingModeError(f"div expected rounding_mode to be one of None, "
                                        f"'trunc', or 'floor' but found '{rounding_mode}'")
            if dtypes.result_type(input, other).is_floating_point:
                return _RoundedDiv.apply(input, other, rounding_mode)
            if rounding_mode == "floor":
                return floor_divide(input, other)
            q = floor_divide(input, other)  # (checks division by zero) moved toward zero:
            return where(logical_and(ne(q * other, input), lt(q, 0)), q + 1, q)
        except RuntimeError as e:  # (free when nothing raises) a sparse COO operand
            return route_sparse("div", e, input, other, rounding_mode=rounding_mode)
    div.__qualname__ = "div"  # (Python's own TypeErrors name the op)
    div.__doc__ = f"{true_div.__doc__[:-1]}; ``rounding_mode`` None, 'trunc' or 'floor'."
    return tensor_method("div", "true_divide", "divide")(div)


div = _with_rounding_mode(div)  # the / operator keeps the plain two-argument function
true_divide = divide = div
subtract = sub
multiply = mul
tensor_method("subtract")(sub)
tensor_method("multiply")(mul)


class LogicalNot(Function):
    name = "logical_not"
    node_name = "LogicalNotBackward0"

    @staticmethod
    def forward(ctx, x):
        return wrap(backend_of(x).unary("logical_not", x._data), x.device)


register_op(LogicalNot)


@tensor_method("logical_not")
def logical_not(input: Tensor) -> Tensor:  # noqa: A002
    require_tensor("logical_not", input)
    return LogicalNot.apply(input)


class BitwiseNot(Function):
    """~x: logical not of a bool tensor, two's-complement not of an integer one."""

    name = "bitwise_not"
    node_name = "BitwiseNotBackward0"

    @staticmethod
    def forward(ctx, x):
        if x.dtype.is_floating_point or x.dtype.is_complex:
            raise NotImplementedError(
                f"bitwise_not: not implemented for {x.dtype.name}; the ~ operator takes bool or "
                f"integer tensors, as in PyTorch (\"bitwise_not_cpu\" not implemented for "
                f"'{dtypes.SCALAR_TYPE_NAMES[x.dtype]}')")
        return wrap(backend_of(x).unary("bitwise_not", x._data), x.device)


register_op(BitwiseNot)


@tensor_method("bitwise_not")
def bitwise_not(input: Tensor) -> Tensor:  # noqa: A002
    """Elementwise ~ of a bool or integer tensor (not differentiable)."""
    require_tensor("bitwise_not", input)
    return BitwiseNot.apply(input)


@tensor_method("__invert__")
def _invert(self: Tensor) -> Tensor:
    """``~t``: bitwise_not; a float or complex t raises PyTorch's operator TypeError (the
    function's error is the kernel's NotImplementedError)."""
    try:
        return BitwiseNot.apply(self)
    except NotImplementedError:  # (free when nothing raises)
        if not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise  # another kernel gap (an integer dtype on some backend): its own error
        raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type "
                        f"tensors (got {self.dtype.name}); use logical_not() for a truth "
                        f"value") from None


# ------------------------------------------------------------------------------ where
class Where(Function):
    """out = cond ? a : b;  da = g where cond else 0;  db = g where not cond else 0."""

    name = "where"
    node_name = "WhereBackward0"
    # PyTorch's node: edges for input and other (a number keeps its slot), none for cond
    scalar_edges = True
    hidden_edges = (0,)

    @staticmethod
    def forward(ctx, cond, a, b):
        if not isinstance(cond, Tensor):  # (PyTorch's argument parser: a TypeError)
            raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not "
                            f"{type(cond).__name__}")
        if cond.dtype is not dtypes.bool_:
            name = dtypes.SCALAR_TYPE_NAMES.get(cond.dtype, cond.dtype.name)
            got = f"dtype {name} ({cond.dtype})"
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with {got}; compare it first, e.g. condition != 0")
        t = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else cond
        dev = same_device("where", cond, a, b)
        dt = (a._dtype if type(a) is Tensor and type(b) is Tensor and a._dtype is b._dtype
              else dtypes.result_type(a, b))
        if dt.is_complex:  # where(x > 0, x, 1j) of a real GPU tensor: complex is CPU-only
            dtypes.check_complex_device("where", dt, dev)
        be = backend_of(t)
        ctx.save_for_backward(cond)  # versioned: changing the mask later raises in backward
        try:
            out = be.where(cond._data, _operand(a, dt, be, "where"), _operand(b, dt, be, "where"))
        except ValueError:
            raise RuntimeError(
                f"where: condition {list(cond.shape)}, input {list(getattr(a, 'shape', ()))} "
                f"and other {list(getattr(b, 'shape', ()))} must broadcast to one shape") from None
        return wrap(out, dev)

    @staticmethod
    def backward(ctx, g):
        _, need_a, need_b = ctx.needs_input_grad
        (cond,) = ctx.saved_tensors
        # Broadcast-shaped gradients: the engine sums them to each input's shape.
        ga = where(cond, g, 0.0) if need_a else None
        gb = where(cond, 0.0, g) if need_b else None
        return None, ga, gb


register_op(Where)


def where(condition: Tensor, input=None, other=None) -> Tensor | tuple:  # noqa: A002
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (broadcast).
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``, as in PyTorch."""
    if input is None and other is None:
        from tgrad.ops.gathering import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes the condition alone or with both input and other "
                        "(where(condition, input, other))")
    dev = condition.device if isinstance(condition, Tensor) else None
    if dev is not None:  # 0-d CPU tensors join a cuda condition as scalars (PyTorch)
        if condition.dtype is dtypes.uint8:  # PyTorch still takes it: nonzero is true
            import warnings
            warnings.warn("where received a uint8 condition tensor. This behavior is "
                          "deprecated and will be removed in a future version of PyTorch. "
                          "Use a boolean condition instead.", UserWarning, stacklevel=2)
            condition = condition != 0
        _, input = _cpu_scalars_moved(condition, input)  # noqa: A001
        _, other = _cpu_scalars_moved(condition, other)
    return Where.apply(condition, input, other)


tensor_method("where")(lambda self, condition, other: where(condition, self, other))


# ------------------------------------------------------------------------------ relu, clamp
def _relu_refuse(dt) -> None:
    """PyTorch's errors for relu of a bool, complex or float8 tensor (its relu is
    clamp_min(x, 0))."""
    if dt.is_complex:
        raise NotImplementedError(f"clamp is not supported for complex types (relu: got {dt}); "
                                  f"apply it to .real or .abs()")
    if dt is dtypes.bool_:
        raise RuntimeError("relu: Boolean inputs not supported for relu; convert with .int() "
                           "or .float() first")
    dtypes.refuse_float8("clamp_min_scalar_cpu", dt)


class Relu(Function):
    """y = max(x, 0);  dx = g where y > 0."""

    name = "relu"
    node_name = "ReluBackward0"
    saved_attributes = {"_saved_result": 0}

    @staticmethod
    def forward(ctx, x):
        if x.dtype.itemsize == 1 or x.dtype.is_complex:  # (int8/uint8 pass)
            _relu_refuse(x.dtype)
        y = wrap(_numpy_relu(x._data) if x._device.type == "cpu"  # (a faster NumPy loop)
                 else backend_of(x).binary("maximum", x._data, x.dtype.np.type(0)), x.device)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return relu_backward(g, y)


register_op(Relu)


@tensor_method("relu")
def relu(input: Tensor) -> Tensor:  # noqa: A002
    try:
        return Relu.apply(input)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("relu", e, input)
    except (AttributeError, TypeError):  # not a tensor: PyTorch's TypeError naming relu
        require_tensor("relu", input)
        raise


# g where x == y, else exactly 0: amax/amin's gradient mask, one kernel when fused
_EQ_MASK = _fused("eq_mask", lambda g, x, y: where(eq(x, y), g, 0.0))


# clamp's gradient: g where lo < x (gt_mask) and where x < hi (lt_mask), else exactly 0
_GT_MASK = _fused("gt_mask", lambda g, x, lo: where(gt(x, lo), g, 0.0))
_LT_MASK = _fused("lt_mask", lambda g, x, hi: where(lt(x, hi), g, 0.0))


class Clamp(Function):
    """y = min(max(x, lo), hi);  dx = g where lo < x < hi, else exactly 0 (bounds are
    numbers or None). At a bound: the minimum-norm subgradient, 0, as current PyTorch
    (checked with 2.14), relu and hardtanh. Only x is saved, as PyTorch's, so y may be
    modified in place before the backward."""

    name = "clamp"
    node_name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        if lo is None and hi is None:
            raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
        be = backend_of(x)
        dt = dtypes.result_type(x, *(v for v in (lo, hi) if v is not None))
        if dt in dtypes.FLOAT8_DTYPES or dt is dtypes.bool_:  # PyTorch's kernel names, by
            kernel = ("clamp_min_scalar_cpu" if hi is None else "clamp_max_scalar_cpu"  # the
                      if lo is None else "clamp_scalar_cpu")  # bounds given
            if dt is dtypes.bool_:  # (a bool tensor with bool bounds: no kernel either)
                raise NotImplementedError(f"clamp: \"{kernel}\" not implemented for 'Bool'; "
                                          f"convert the tensor first, e.g. input.int()")
            dtypes.refuse_float8(kernel, dt)
        for v in (lo, hi):  # a bound past the dtype's range raises, as PyTorch's clamp
            if v is not None:
                dtypes.check_value_fits("clamp", v, dt)
        # the bounds in the result dtype (1.7 is 1.703125 in bfloat16), the same for backward
        lo, hi = (None if v is None else _operand(v, dt, be, "clamp") for v in (lo, hi))
        y = be.cast(x._data, dt.np)
        if x._device.type == "cpu":  # (NumPy's one-pass clip where it gives the same bits)
            y = _numpy_clamp(y, lo, hi)
        else:
            # the bound first: NumPy's maximum/minimum return their second operand on ties,
            # so a tie keeps x, as PyTorch's clamp (clamp(-0.0, min=0.0) is -0.0)
            if lo is not None:
                y = be.binary("maximum", lo, y)
            if hi is not None:
                y = be.binary("minimum", hi, y)
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        # x passes through where lo < x < hi (nowhere when lo >= hi: every output is hi;
        # nowhere for a NaN x)
        if ctx.lo is not None:
            g = _GT_MASK(g, x, float(ctx.lo))
        if ctx.hi is not None:
            g = _LT_MASK(g, x, float(ctx.hi))
        return g, None, None


register_op(Clamp)


class ClampTensor(Function):
    """clamp with a tensor bound (either bound may be None, a number or a tensor that
    broadcasts): y = min(max(x, lo), hi), x and the bounds cast to their common dtype first.

    Gradients, current PyTorch's minimum-norm subgradients (checked with 2.14):
    - lo < hi: dx = g where lo < x < hi; dlo = g where x < lo; dhi = g where x > hi; where
      x equals a tensor bound the two share g evenly (g/2 each, as maximum/minimum do);
      where x equals a number bound, x gets 0 (as in ``Clamp``);
    - lo == hi: dx = g where x == lo, dlo = g where x < lo, dhi = g where x > hi;
    - lo > hi: every output is hi, so dhi = g and dx = dlo = 0.
    A NaN x is its own output and gets g (PyTorch too); the bounds get none from it."""

    name = "clamp_tensor"
    node_name = "ClampBackward0"

    @staticmethod
    def forward(ctx, x, lo, hi):
        if lo is not None and hi is not None and x.dtype in dtypes.FLOAT8_DTYPES:
            dtypes.refuse_float8("clamp_cpu", x.dtype)  # (one bound: maximum_cpu/minimum_cpu)
        y = x if lo is None else maximum(x, lo)
        y = y if hi is None else minimum(y, hi)
        ctx.save_for_backward(x, *(b if isinstance(b, Tensor) else None for b in (lo, hi)))
        ctx.bounds = (lo, hi)
        return y

    @staticmethod
    def backward(ctx, g):
        x, tlo, thi = ctx.saved_tensors
        lo = ctx.bounds[0] if tlo is None else tlo
        hi = ctx.bounds[1] if thi is None else thi
        _, need_lo, need_hi = ctx.needs_input_grad
        half = g * 0.5
        nan_x = ne(x, x)
        glo = ghi = None
        if lo is None:
            at_hi = eq(x, hi)
            gx = where(logical_or(lt(x, hi), nan_x), g,
                       where(at_hi, half, 0.0) if thi is not None else 0.0)
            ghi = where(gt(x, hi), g, where(at_hi, half, 0.0)) if need_hi else None
            return gx, None, ghi
        if hi is None:
            at_lo = eq(x, lo)
            gx = where(logical_or(gt(x, lo), nan_x), g,
                       where(at_lo, half, 0.0) if tlo is not None else 0.0)
            glo = where(lt(x, lo), g, where(at_lo, half, 0.0)) if need_lo else None
            return gx, glo, None
        ordered = lt(lo, hi)
        at_lo = logical_and(eq(x, lo), ordered)
        at_hi = logical_and(eq(x, hi), ordered)
        passes = logical_or(logical_or(logical_and(gt(x, lo), lt(x, hi)), nan_x),
                            logical_and(eq(x, lo), eq(lo, hi)))
        tie = where(at_lo, half if tlo is not None else 0.0,
                    where(at_hi, half if thi is not None else 0.0, 0.0))
        gx = where(passes, g, tie)
        if need_lo:
            glo = where(logical_and(lt(x, lo), le(lo, hi)), g, where(at_lo, half, 0.0))
        if need_hi:
            ghi = where(logical_or(gt(x, hi), lt(hi, lo)), g, where(at_hi, half, 0.0))
        return gx, glo, ghi


register_op(ClampTensor)


def _real_bound(value: complex) -> float:
    """A complex number bound of clamp as PyTorch's real Scalar: 2+0j is 2.0, a nonzero
    imaginary part raises (clamp(x, 1j) made a complex result)."""
    if value.imag != 0:
        raise RuntimeError("clamp: value cannot be converted to type double without overflow "
                           "(a complex bound; clamp takes real numbers)")
    return float(value.real)


@tensor_method("clamp", "clip")
def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (either bound may be None; numbers or tensors that
    broadcast with ``input``; tensor bounds also receive gradient where they bind)."""
    require_tensor("clamp", input)
    _no_complex("clamp", input, "clamp is not supported for complex types")
    for name, bound in (("min", min), ("max", max)):
        if isinstance(bound, np.ndarray) and bound.ndim:
            raise TypeError(f"clamp(): argument '{name}' must be a number or a Tensor, not a "
                            f"NumPy array of shape {list(bound.shape)}; wrap it with "
                            f"tgrad.as_tensor() first")
    if isinstance(min, (complex, np.complexfloating)):
        min = _real_bound(min)  # noqa: A001
    if isinstance(max, (complex, np.complexfloating)):
        max = _real_bound(max)  # noqa: A001
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if min is None and max is None:
            raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
        # PyTorch promotes the three operands at once (not pairwise: an int8 x under a
        # uint8 bound is compared as int16)
        dt = dtypes.result_type(*(b for b in (input, min, max) if b is not None))
        input, min, max = (b.to(dt) if isinstance(b, Tensor) and b.dtype is not dt  # noqa: A001
                           else b for b in (input, min, max))
        return ClampTensor.apply(input, min, max)
    return Clamp.apply(input, min, max)


clip = clamp


def isnan(input: Tensor) -> Tensor:  # noqa: A002
    try:
        return ne(input, input)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("isnan", e, input)


def isinf(input: Tensor) -> Tensor:  # noqa: A002
    require_tensor("isinf", input)
    try:
        x = input.detach()
        if x.dtype in dtypes.FLOAT8_DTYPES:  # PyTorch has it for float8_e5m2 only
            if x.dtype is not dtypes.float8_e5m2:
                dtypes.refuse_float8("isinf", x.dtype)
            x = x.float()
        if x.dtype is dtypes.bool_:  # (abs refuses bools): never infinite
            return ne(x, x)
        return eq(abs(x), math.inf)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("isinf", e, input)


def isfinite(input: Tensor) -> Tensor:  # noqa: A002
    require_tensor("isfinite", input)
    x = input.detach()
    if x.dtype in dtypes.FLOAT8_DTYPES:  # PyTorch has it for float8_e5m2 and e8m0fnu only
        if x.dtype not in (dtypes.float8_e5m2, dtypes.float8_e8m0fnu):
            dtypes.refuse_float8("isfinite", x.dtype)
        x = x.float()
    if x.dtype is dtypes.bool_:
        return eq(x, x)
    return logical_and(eq(x, x), ne(abs(x), math.inf))


tensor_method("isnan")(isnan)
tensor_method("isinf")(isinf)
tensor_method("isfinite")(isfinite)

