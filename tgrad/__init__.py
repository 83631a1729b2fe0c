"""tgrad: a torch-free autograd framework with PyTorch's torch.autograd API.

Ops run on NumPy on the CPU and as Triton kernels on ``cuda`` (a real GPU, or Triton's
interpreter with TRITON_INTERPRET=1); the API (Tensor, backward/grad, no_grad, Function,
hooks, gradcheck, profiler) follows PyTorch's names and semantics.
"""

import builtins as _builtins

from tgrad import _out, autograd
from tgrad._layout import (
    _mkldnn,  # noqa: F401  (torch._mkldnn)
    jagged,
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from tgrad._tensor_str import set_printoptions
from tgrad.autograd import (
    Function,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from tgrad.device import Device as _Device
from tgrad.device import Device as device  # noqa: N813  (PyTorch's name)
from tgrad.device import get_default_device, set_default_device
from tgrad.dtypes import (
    DType,
    bfloat16,
    complex64,
    complex128,
    finfo,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_complex_dtype,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from tgrad.dtypes import bool_ as bool  # noqa: A001,A004
from tgrad.generator import Generator, default_generator, initial_seed, seed
from tgrad.ops import *  # noqa: F401,F403
from tgrad.ops import __all__ as _ops_all
from tgrad.tensor import Size, Tensor

_out.install(globals())  # PyTorch's out= keyword on the torch-level functions

half = float16
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128
dtype = DType

# nn, optim, sparse (COO tensors: after the ops, whose Tensor methods it stubs on its class)
# and save/load build on the core above.
from tgrad import (  # noqa: E402,F401  (random: torch.random)
    cuda,
    nn,
    optim,
    random,
    sparse,
)
from tgrad.cuda.interop import from_dlpack, to_dlpack  # noqa: E402
from tgrad.serialization import load, save  # noqa: E402
from tgrad.sparse import sparse_coo_tensor  # noqa: E402
from tgrad.storage import TypedStorage, UntypedStorage  # noqa: E402

__version__ = "0.1.0"

# PyTorch's constants: torch.pi, torch.e, torch.inf, torch.nan (Python floats, math's) and
# torch.newaxis (None, for indexing: x[:, tgrad.newaxis]).
import math as _math  # noqa: E402

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

__all__ = ["Tensor", "Size", "Generator", "default_generator", "seed", "initial_seed", "autograd",
           "Function", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "inference_mode", "is_inference_mode_enabled",
           "set_detect_anomaly", "device", "get_default_device",
           "set_default_device", "dtype", "bool", "uint8", "int8", "int16", "int32", "int64",
           "float16", "bfloat16", "float32", "float64", "half", "float", "double", "long", "int",
           "short", "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn",
           "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
           "get_default_complex_dtype",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "finfo",
           "iinfo",
           "save", "load", "nn", "optim", "cuda", "from_dlpack", "is_tensor",
           "is_storage", "softmax",
           "log_softmax", "dropout", "cosine_similarity", "set_printoptions",
           "pi", "e", "inf", "nan", "newaxis", "layout", "strided", "sparse_coo", "sparse_csr",
           "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged", "get_device",
           "get_device_module", "to_dlpack", "UntypedStorage", "TypedStorage", "sparse",
           "sparse_coo_tensor"] + list(_ops_all)


def is_tensor(obj: object) -> _builtins.bool:
    """True if ``obj`` is a tgrad Tensor."""
    return isinstance(obj, Tensor)


def is_storage(obj: object) -> _builtins.bool:
    """True if ``obj`` is a tgrad storage (UntypedStorage or TypedStorage), as PyTorch's."""
    return isinstance(obj, UntypedStorage)


def get_device(input: Tensor) -> _builtins.int:  # noqa: A002
    """The index of a cuda tensor's device; -1 for a CPU tensor (PyTorch's)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.get_device()


def get_device_module(device=None) -> object:
    """The module of ``device`` (a tgrad.device or its string): ``tgrad.cuda`` or
    ``tgrad.cpu``; None: the accelerator's module (tgrad.cuda when available), else
    ``tgrad.cpu``."""
    import importlib
    if device is None:
        kind = "cuda" if cuda.is_available() else "cpu"
    elif isinstance(device, (str, _Device)):
        kind = device.split(":")[0] if isinstance(device, str) else device.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect tgrad.device, str, or "
                           f"None")
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'tgrad.{kind}'.")
    return importlib.import_module("tgrad." + kind)


# torch.softmax / torch.log_softmax / torch.dropout: nn.functional's ops under PyTorch's
# top-level signatures (dtype third, and dropout's ``train`` positional).
def softmax(input: Tensor, dim: _builtins.int, dtype=None) -> Tensor:  # noqa: A002
    return nn.functional.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: _builtins.int, dtype=None) -> Tensor:  # noqa: A002
    return nn.functional.log_softmax(input, dim, dtype=dtype)


softmax = _out.with_out(softmax, "softmax")  # (defined after _out.install)
log_softmax = _out.with_out(log_softmax, "log_softmax")


def dropout(input: Tensor, p: _builtins.float, train: _builtins.bool) -> Tensor:  # noqa: A002
    return nn.functional.dropout(input, p, training=train)


# torch.cosine_similarity: nn.functional's (x1 . x2 / (max(||x1||, eps) max(||x2||, eps))).
cosine_similarity = nn.functional.cosine_similarity


_LINALG_ALIASES = ("inverse", "det", "logdet", "matrix_power")
_LEGACY_LINALG = ("qr", "svd", "slogdet", "pinverse", "matrix_exp", "cholesky",
                  "cholesky_inverse", "lu", "lu_solve", "lu_unpack", "triangular_solve",
                  "geqrf", "orgqr", "ormqr")


_LAZY_OUT: dict = {}  # the lazily imported torch-level functions given out= (one wrapper each)


def _lazy_out(name: str, fn):
    """``fn`` with PyTorch's out= when torch.<name> takes it (_out.OUT_FUNCTIONS), cached."""
    if name not in _out.OUT_FUNCTIONS:
        return fn
    return _LAZY_OUT.setdefault(name, _out.with_out(fn, name))


def __getattr__(name: str) -> object:
    # tgrad.accelerator, amp, compiler, cpu, distributed, distributions, fft, func, jit,
    # linalg, multiprocessing, profiler, signal, special, testing and utils are imported on
    # first use (as torch.distributions and torch.utils.checkpoint are reachable).
    if name in ("accelerator", "amp", "compiler", "cpu", "distributed", "distributions",
                "fft", "func", "jit", "linalg", "multiprocessing", "profiler", "signal",
                "special", "testing", "utils"):
        import importlib
        return importlib.import_module("tgrad." + name)
    if name == "OutOfMemoryError":  # torch.OutOfMemoryError is torch.cuda's
        from tgrad.cuda import OutOfMemoryError
        return OutOfMemoryError
    if name in ("autocast", "is_autocast_enabled", "get_autocast_dtype",  # torch.autocast
                "GradScaler"):
        from tgrad import amp
        return getattr(amp, name)
    if name in _LAZY_OUT:
        return _LAZY_OUT[name]
    if name == "cholesky_solve":  # torch.cholesky_solve(B, L, upper=False)
        from tgrad.linalg import cholesky_solve
        return _lazy_out(name, cholesky_solve)
    if name in _LINALG_ALIASES:  # torch.inverse, torch.det, torch.logdet
        from tgrad.linalg import _lu
        return _lazy_out(name, getattr(_lu, name))
    if name in ("svd_lowrank", "pca_lowrank"):  # randomized low-rank SVD / PCA
        from tgrad.linalg import _lowrank
        return getattr(_lowrank, name)
    if name in _LEGACY_LINALG:  # torch.qr, torch.svd, torch.slogdet, torch.pinverse, torch.lu, ...
        from tgrad.linalg import _legacy
        return _lazy_out(name, getattr(_legacy, name))
    raise AttributeError(f"module 'tgrad' has no attribute {name!r}")
