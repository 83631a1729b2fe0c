"""PyTorch's global settings functions (``torch.set_num_threads``,
``torch.use_deterministic_algorithms``, ``torch.set_float32_matmul_precision`` ...):

- threads: ``set_num_threads`` / ``set_num_interop_threads`` record the value that the
  getters return (default: os.cpu_count()). tgrad's CPU backend is NumPy, whose BLAS
  thread count is fixed when NumPy loads (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
  MKL_NUM_THREADS in the environment before ``import tgrad``), so the recorded value does not
  change it;
- determinism: every tgrad op is deterministic (scatter-adds are segmented sums with no
  atomics, reductions have a fixed order), so ``use_deterministic_algorithms(True)`` has
  nothing to turn off or warn about; it records the mode (and the debug mode 0/1/2 of
  ``get_deterministic_debug_mode``) and, as PyTorch, makes ``empty`` and its relatives fill
  their result (``tgrad.utils.deterministic.fill_uninitialized_memory``);
- ``set_flush_denormal(mode)``: NumPy has no control over the CPU's flush-to-zero modes, so
  it changes nothing and returns False, PyTorch's answer on a CPU without them;
- ``set_float32_matmul_precision('highest' | 'high' | 'medium')`` sets
  ``tgrad.backends.cuda.matmul.allow_tf32`` (True unless 'highest'), and
  ``get_float32_matmul_precision`` follows that flag, as PyTorch's: allow_tf32 = True
  reads 'high' (or the 'medium' set), False reads 'highest'. Another string warns and
  changes nothing;
- ``set_anomaly_enabled(enabled, check_nan=True)`` (tgrad.autograd's anomaly mode),
  ``is_anomaly_enabled``, ``is_anomaly_check_nan_enabled``;
- autocast queries: ``is_autocast_cpu_enabled`` / ``get_autocast_cpu_dtype`` /
  ``get_autocast_gpu_dtype`` (deprecated in PyTorch: they warn and call
  ``is_autocast_enabled('cpu')`` / ``get_autocast_dtype(...)``), ``is_autocast_cache_enabled``
  (True: tgrad accepts cache_enabled but keeps no cast cache to turn off);
- ``is_inference(input)``: whether ``input`` is an inference tensor (made inside
  inference_mode; docs/autograd.md);
- ``set_warn_always`` / ``is_warn_always_enabled``: a recorded flag (tgrad's warnings go
  through Python's ``warnings`` filters, which decide how often each shows).
"""

from __future__ import annotations

import os
import warnings

from tgrad.ops._common import require_tensor
from tgrad.tensor import InferenceStorage, Tensor

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "is_anomaly_enabled", "set_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "is_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "is_autocast_cache_enabled",
           "is_inference", "set_warn_always", "is_warn_always_enabled", "set_flush_denormal"]

_SETTINGS = {"num_threads": os.cpu_count() or 1, "num_interop_threads": os.cpu_count() or 1,
             "deterministic": False, "warn_only": False, "precision": "highest",
             "warn_always": False}
_PRECISIONS = ("highest", "high", "medium")


def _check_bool(op: str, name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{op}(): argument '{name}' (position 1) must be bool, not "
                        f"{type(value).__name__}")


def _positive_int(op: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuntimeError(f"{op} expects an int, but got {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{op} expects a positive integer (got {value})")
    return value


# ------------------------------------------------------------------ threads
def set_num_threads(int: int) -> None:  # noqa: A002  (PyTorch's parameter name)
    """Record the intra-op thread count (NumPy's BLAS threads are fixed at import)."""
    _SETTINGS["num_threads"] = _positive_int("set_num_threads", int)


def get_num_threads() -> int:
    """The recorded intra-op thread count (default os.cpu_count())."""
    return _SETTINGS["num_threads"]


def set_num_interop_threads(int: int) -> None:  # noqa: A002
    """Record the inter-op thread count (tgrad runs ops on the calling thread)."""
    _SETTINGS["num_interop_threads"] = _positive_int("set_num_interop_threads", int)


def get_num_interop_threads() -> int:
    return _SETTINGS["num_interop_threads"]


# ------------------------------------------------------------------ determinism
def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the mode; every tgrad op is already deterministic (module doc)."""
    _check_bool("use_deterministic_algorithms", "mode", mode)
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = mode, bool(warn_only)


def set_flush_denormal(mode: bool) -> bool:
    """PyTorch's switch of the CPU's flush-to-zero / denormals-are-zero modes. NumPy offers
    no control over them, so this changes nothing and returns False ("not supported", what
    PyTorch returns on a CPU without the modes): subnormal numbers stay exact."""
    _check_bool("set_flush_denormal", "mode", mode)
    return False


def are_deterministic_algorithms_enabled() -> bool:
    return _SETTINGS["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _SETTINGS["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """0 / 'default': off; 1 / 'warn': deterministic, warn only; 2 / 'error': deterministic."""
    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = names[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _SETTINGS["deterministic"]:
        return 0
    return 1 if _SETTINGS["warn_only"] else 2


# ------------------------------------------------------------------ matmul precision
def set_float32_matmul_precision(precision: str) -> None:
    """'highest': float32 matmuls in full float32 (allow_tf32 = False); 'high' / 'medium':
    TF32 tensor cores allowed on cuda (allow_tf32 = True)."""
    from tgrad.backends import cuda
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _SETTINGS["precision"] = precision
    cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """The precision set, as tgrad.backends.cuda.matmul.allow_tf32 now reads."""
    from tgrad.backends import cuda
    set_ = _SETTINGS["precision"]
    if cuda.matmul.allow_tf32:
        return "high" if set_ == "highest" else set_
    return "highest"


# ------------------------------------------------------------------ anomaly mode
def is_anomaly_enabled() -> bool:
    from tgrad.autograd.anomaly_mode import is_anomaly_enabled as enabled
    return enabled()


def is_anomaly_check_nan_enabled() -> bool:
    from tgrad.autograd.anomaly_mode import is_anomaly_check_nan_enabled as enabled
    return enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off, for every thread as PyTorch's (no context: see
    tgrad.autograd.set_detect_anomaly for one)."""
    from tgrad.autograd.grad_mode import SHARED
    _check_bool("set_anomaly_enabled", "enabled", enabled)
    SHARED.anomaly, SHARED.anomaly_check_nan = enabled, bool(check_nan)


# ------------------------------------------------------------------ autocast queries
def is_autocast_cpu_enabled() -> bool:
    warnings.warn("torch.is_autocast_cpu_enabled() is deprecated. Please use "
                  "torch.is_autocast_enabled('cpu') instead.", DeprecationWarning, stacklevel=2)
    from tgrad.amp import is_autocast_enabled
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    warnings.warn("torch.get_autocast_cpu_dtype() is deprecated. Please use "
                  "torch.get_autocast_dtype('cpu') instead.", DeprecationWarning, stacklevel=2)
    from tgrad.amp import get_autocast_dtype
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    warnings.warn("torch.get_autocast_gpu_dtype() is deprecated. Please use "
                  "torch.get_autocast_dtype('cuda') instead.", DeprecationWarning, stacklevel=2)
    from tgrad.amp import get_autocast_dtype
    return get_autocast_dtype("cuda")


def is_autocast_cache_enabled() -> bool:
    """True (tgrad keeps no cast cache, so there is none to disable)."""
    return True


# ------------------------------------------------------------------ misc
def is_inference(input: Tensor) -> bool:  # noqa: A002
    """True for an inference tensor: one made inside ``inference_mode()`` (an op's result, a
    creation function), or a view of one; views of normal tensors made there are normal
    (PyTorch's rules). Outside inference mode an inference tensor cannot be saved for
    backward, updated in place or made to require grad; ``clone()`` gives a normal tensor."""
    require_tensor("is_inference", input)
    return isinstance(input._storage, InferenceStorage)


def _tensor_is_inference(self: Tensor) -> bool:
    return isinstance(self._storage, InferenceStorage)


_tensor_is_inference.__doc__ = is_inference.__doc__
Tensor.is_inference = _tensor_is_inference


def set_warn_always(b: bool) -> None:
    """Record the flag (Python's warnings filters decide how often a warning shows)."""
    if not isinstance(b, bool):
        raise RuntimeError(f"set_warn_always expects a bool, but got {type(b).__name__}")
    _SETTINGS["warn_always"] = b


def is_warn_always_enabled() -> bool:
    return _SETTINGS["warn_always"]
