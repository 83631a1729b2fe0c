"""``tgrad.autocast`` / ``tgrad.amp.autocast``: PyTorch's automatic mixed precision region.

Inside ``with tgrad.autocast("cuda"):`` (dtype float16 by default; "cpu": bfloat16; inside
another region for that device type, enabled or not, that region's dtype) the ops
of the three lists below cast their floating arguments on that device type first
(tgrad/_autocast.py): matrix products and convolutions run in the lower precision,
numerically sensitive ops (exp, log, pow, sums, softmax, norms, the losses) in float32, and
ops mixing dtypes on the widest one. Everything else runs in its inputs' dtypes. The
registered ops get their policy on the Function class (the table below); composite
functions (F.linear, the convolutions, matmul, the losses...) carry
``tgrad._autocast.autocast_policy`` where they are defined. Backward
ops run in the dtypes the forward chose (each cast is recorded like any ``.to``). PyTorch's
op lists, per device type (CPU's are much shorter: exp, sum, softmax... keep their input's
dtype there); float64 is never cast; F.binary_cross_entropy raises inside a CUDA region
(PyTorch's "unsafe to autocast" error; float32 in a CPU one). ``dtype`` other than float16 /
bfloat16 on "cpu" warns and disables the region (PyTorch's). Regions nest;
``enabled=False`` turns a region off inside another (keeping its dtype, as PyTorch's).
``cache_enabled`` is accepted (tgrad casts again at every use).
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any

from tgrad import dtypes
from tgrad.autograd.grad_mode import STATE

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "custom_fwd",
           "custom_bwd", "LOWER_OPS", "FP32_OPS", "PROMOTE_OPS", "CPU_LOWER_OPS",
           "CPU_FP32_OPS", "CPU_PROMOTE_OPS"]

# Registered ops (tgrad/ops/_common.OPS names) by policy; their Function.apply casts.
# PyTorch's CUDA lists (also tgrad's "cuda" interpreter device):
LOWER_OPS = ("matmul",)
FP32_OPS = ("acos", "asin", "cosh", "sinh", "tan", "exp", "exp2", "expm1", "log", "log10",
            "log1p", "log2", "pow", "reciprocal", "rsqrt", "sum", "prod", "cumsum", "norm",
            "softmax", "log_softmax", "cross_entropy", "layer_norm", "softplus",
            "logsumexp")
PROMOTE_OPS = ("atan2", "dot", "index_put", "cat")
# PyTorch's CPU lists (aten/src/ATen/autocast_mode.cpp, KERNEL_CPU): much shorter; the ops
# above missing here (exp, log, pow, sum, softmax, layer_norm, norm, dot...) run on CPU in
# their inputs' dtypes.
CPU_LOWER_OPS = ("matmul",)
CPU_FP32_OPS = ("prod", "cross_entropy")
CPU_PROMOTE_OPS = ("cat",)

_DEFAULT_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}
_LOCAL = threading.local()  # .dtypes: see _dtypes()


def _install() -> None:
    """Each listed op's Function gets its policy: {device type: kind or None}."""
    from tgrad.ops._common import OPS
    policies: dict = {}
    for device_type, tables in (("cuda", (LOWER_OPS, FP32_OPS, PROMOTE_OPS)),
                                ("cpu", (CPU_LOWER_OPS, CPU_FP32_OPS, CPU_PROMOTE_OPS))):
        for names, kind in zip(tables, ("lower", "fp32", "promote")):
            for n in names:
                policies.setdefault(n, {"cuda": None, "cpu": None})[device_type] = kind
    for n, policy in policies.items():
        if n in OPS:
            OPS[n].autocast = policy


_install()


class autocast:  # noqa: N801 - PyTorch's name
    """A context manager (and decorator) for an autocast region on ``device_type``
    ('cuda' or 'cpu') with ``dtype`` (float16 or bfloat16)."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if device_type not in _DEFAULT_DTYPE:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device_type = device_type
        # PyTorch's default: the dtype in force for device_type (an enclosing region's)
        self.fast_dtype = dtypes.as_dtype(dtype if dtype is not None
                                          else get_autocast_dtype(device_type))
        enabled = bool(enabled)
        if self.fast_dtype.name not in ("float16", "bfloat16") and enabled:
            if device_type == "cpu":  # PyTorch's: a warning, and the region is disabled
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", stacklevel=2)
                enabled = False
            else:
                raise RuntimeError(f"In {device_type} autocast, but the target dtype is not "
                                   f"supported. Supported dtypes: torch.float16, "
                                   f"torch.bfloat16 (got {self.fast_dtype})")
        self._enabled = enabled
        self.cache_enabled = cache_enabled
        self._prev: list = []

    def __enter__(self) -> autocast:
        # the state to restore, on a stack: one instance may be entered again inside itself
        self._prev.append((STATE.autocast, _dtypes()))
        region = dict(STATE.autocast or {})
        if self._enabled:
            region[self.device_type] = self.fast_dtype
        else:
            region.pop(self.device_type, None)
        STATE.autocast = region or None
        # the region's dtype is get_autocast_dtype's answer inside it, enabled or not
        _LOCAL.dtypes = {**_dtypes(), self.device_type: self.fast_dtype}
        return self

    def __exit__(self, *exc) -> None:
        STATE.autocast, _LOCAL.dtypes = self._prev.pop()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled,
                          self.cache_enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether an autocast region for ``device_type`` is in force in this thread."""
    return STATE.autocast is not None and device_type in STATE.autocast


_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                       "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu",
                       "mtia", "privateuseone")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on ``device_type``: True for 'cpu' and 'cuda' (tgrad's
    devices); False for PyTorch's other device types; an unknown name raises as in
    PyTorch."""
    if not isinstance(device_type, str):
        raise TypeError("is_autocast_available(): argument 'device_type' (position 1) must be "
                        f"str, not {type(device_type).__name__}")
    kind = device_type.split(":")[0]
    if kind not in _TORCH_DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at "
                           f"start of device string: {device_type}")
    return kind in ("cpu", "cuda")


def _dtypes() -> dict:
    """{device type: dtype} of the innermost regions entered in this thread, enabled or not."""
    return getattr(_LOCAL, "dtypes", None) or {}


def get_autocast_dtype(device_type: str = "cuda"):
    """The dtype autocast uses on ``device_type``: the innermost region's (also one entered
    with ``enabled=False``: PyTorch keeps the dtype apart from the on/off state), else the
    default (float16 on 'cuda', bfloat16 on 'cpu')."""
    region = STATE.autocast or {}
    return (region.get(device_type) or _dtypes().get(device_type)
            or dtypes.as_dtype(_DEFAULT_DTYPE[device_type]))


def _cast_floats(value, device_type: str, dtype):
    from tgrad.tensor import Tensor
    if isinstance(value, Tensor):
        if (value.dtype.is_floating_point and value.device.type == device_type
                and value.dtype.name != "float64"):  # PyTorch's: float64 is left alone
            return value.to(dtype)
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast_floats(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floats(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: remembers the autocast state for
    ``custom_bwd``; with ``cast_inputs`` (a dtype) the forward runs outside autocast on
    inputs cast to that dtype when called inside a region (floating tensors on
    ``device_type`` but float64 ones, also inside lists, tuples and dicts)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        ctx._fwd_used_autocast = is_autocast_enabled(device_type)
        if cast_inputs is None or not ctx._fwd_used_autocast:
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type, enabled=False):
            return fwd(*_cast_floats(args, device_type, cast_inputs),
                       **_cast_floats(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom Function's ``backward``: it runs in the autocast state its
    ``custom_fwd`` forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, dtype=ctx._dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)
    return decorate_bwd
