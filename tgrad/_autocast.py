"""Autocast's cast policies (tgrad.amp), applied where an op starts: ``Function.apply`` for
the registered ops given a policy (tgrad/amp/autocast_mode.py's table), the
``autocast_policy`` decorator on composite functions (F.linear, the convolutions, matmul,
the losses...), written where each is defined. PyTorch's three kinds:

    "lower":   float32 tensors, and the other half dtype, on an autocast device -> that
               device's autocast dtype (float16 / bfloat16): matmul, linear, convolutions...
               (PyTorch's cached_cast: a float16 tensor in a bfloat16 region is cast too)
    "fp32":    float16 / bfloat16 tensors -> float32: exp, log, pow, sum, softmax, the losses
    "promote": every floating tensor but float64 ones -> the widest floating dtype among
               them (a float64 tensor is neither cast nor counted, as in PyTorch)
    "native":  no cast (PyTorch runs it as one kernel autocast does not see into: mv, dot on
               CPU)
A decorated function given a policy (any of the four) runs with autocast off on that
device type after its casts, as PyTorch's listed ops run their kernels: the ops it is made
of are not cast again (the matmuls inside an "fp32" linalg.inv stay in float32).

The lists differ by device type, as PyTorch's do: a policy is one kind for every device
type, or a dict {device type: kind or None} (``autocast_policy(kind, cpu=...)``; the
registered ops' tables in tgrad/amp/autocast_mode.py). The CPU lists are short: exp, log,
sum, softmax, the norms... keep their input's dtype there, mv and dot are not lowered.
float64 tensors, and tensors on devices outside the autocast region, are left alone.
"""

from __future__ import annotations

import functools
from typing import Callable

from tgrad.autograd.grad_mode import STATE

__all__ = ["cast_args", "autocast_policy", "refuse_in_region", "UNSAFE_BCE", "pad_cpu_policy",
           "max_pool3d_cpu_policy"]

UNSAFE_BCE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")


def refuse_in_region(message: str, *tensors, device_type: str = "cuda") -> None:
    """Raise ``message`` when one of ``tensors`` is on ``device_type`` inside an autocast
    region for it (ops PyTorch refuses to autocast there: its refusal is registered for
    CUDA only, so on CPU binary_cross_entropy runs, with the "fp32" policy)."""
    region = STATE.autocast
    if region is not None and device_type in region and any(
            getattr(getattr(t, "device", None), "type", None) == device_type
            for t in tensors):
        raise RuntimeError(message)


def pad_cpu_policy(args: tuple, kwargs: dict) -> str | None:
    """The CPU policy of reflect / replicate padding (nn/_pad.py's pad_nonconstant(input, pad,
    mode, value)): PyTorch's CPU list has reflection_pad1d/2d and replication_pad1d/2d/3d in
    float32; reflection_pad3d and circular padding are not listed."""
    pad, mode = args[1], args[2]
    k = len(pad) // 2
    return "fp32" if mode == "replicate" or (mode == "reflect" and k < 3) else None


def max_pool3d_cpu_policy(args: tuple, kwargs: dict) -> str | None:
    """The CPU policy of F.max_pool3d(input, kernel_size, stride, padding, dilation,
    ceil_mode, return_indices): PyTorch's CPU list has max_pool3d in float32, not
    max_pool3d_with_indices (what return_indices=True calls)."""
    return None if kwargs.get("return_indices", len(args) > 6 and args[6]) else "fp32"


def _cast(t, kind: str, low, widest):
    dt = t.dtype
    if not dt.is_floating_point or dt.name == "float64":  # PyTorch's is_eligible: no float64
        return t
    if kind == "lower":  # every floating dtype but float64 and the target itself
        return t.to(low) if dt is not low else t
    if kind == "fp32":
        return t.to(_float32()) if dt.itemsize == 2 else t
    return t.to(widest) if dt is not widest else t


def _float32():
    from tgrad import dtypes
    return dtypes.float32


def cast_args(kind: str | dict, args: tuple, kwargs: dict | None = None) -> tuple:
    """(args, kwargs) cast by ``kind`` (or by ``kind[device type]`` for a per-device dict,
    the device type of the first tensor argument on an autocast device) for the autocast
    region in force (STATE.autocast)."""
    from tgrad.tensor import Tensor
    region = STATE.autocast
    tensors = [a for a in args if isinstance(a, Tensor)]
    if kwargs:
        tensors += [v for v in kwargs.values() if isinstance(v, Tensor)]
    dev = next((t.device.type for t in tensors if t.device.type in region), None)
    if dev is None:
        return args, kwargs
    if isinstance(kind, dict):
        kind = kind.get(dev)
    if kind is None or kind == "native":  # the op runs in its inputs' dtypes
        return args, kwargs
    widest = None
    if kind == "promote":
        from tgrad import dtypes
        # PyTorch's promote_type: over the eligible tensors (float64 ones are not)
        floats = [t.dtype for t in tensors
                  if t.dtype.is_floating_point and t.dtype.name != "float64"]
        if not floats:
            return args, kwargs
        widest = floats[0]
        for d in floats[1:]:
            widest = dtypes.promote_types(widest, d)  # float16 with bfloat16: float32

    def one(a):
        if isinstance(a, Tensor) and a.device.type in region:
            return _cast(a, kind, region[a.device.type], widest)
        return a
    new_args = tuple(one(a) for a in args)
    new_kwargs = {k: one(v) for k, v in kwargs.items()} if kwargs else kwargs
    return new_args, new_kwargs


def autocast_policy(kind: str | Callable | None, *,
                    cpu: str | Callable | None = "same") -> Callable:
    """Decorator: inside an autocast region the function's tensor arguments are cast by
    ``kind`` first (one thread-local read outside one); ``cpu`` is the policy on CPU tensors
    where PyTorch's CPU list differs from its CUDA one (None: no cast on CPU; "native": no
    cast; a callable: the kind for the call's (args, kwargs), as pad_cpu_policy). Where a
    policy applies (any kind but None) the function then runs with autocast off on that
    device type, as PyTorch runs a listed op's kernel: the ops inside it are
    not cast again (an "fp32" linalg op's inner matmuls stay in float32)."""
    policy = kind if cpu == "same" else {"cuda": kind, "cpu": cpu}

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            region = STATE.autocast
            if region is None:
                return fn(*args, **kwargs)
            from tgrad.tensor import Tensor
            dev = next((a.device.type for a in (*args, *kwargs.values())
                        if isinstance(a, Tensor) and a.device.type in region), None)
            if dev is None:
                return fn(*args, **kwargs)
            k = policy.get(dev) if isinstance(policy, dict) else policy
            if callable(k):
                k = k(args, kwargs)
            if k is None:  # not listed on this device type: autocast sees the ops inside
                return fn(*args, **kwargs)
            if k != "native":
                args, kwargs = cast_args(k, args, kwargs)
            # one kernel: no autocast inside it on this device type
            STATE.autocast = {d: t for d, t in region.items() if d != dev} or None
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.autocast = region
        return wrapper
    return deco
