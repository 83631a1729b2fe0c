"""tgrad.nn: functional ops (``tgrad.nn.functional``), Module, Parameter and layers."""

from tgrad.nn import attention, functional, grad, init, parallel, utils
from tgrad.nn.modules import *  # noqa: F401,F403
from tgrad.nn.modules import __all__ as _modules_all
from tgrad.nn.parallel import DataParallel
from tgrad.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["attention", "functional", "grad", "init", "parallel", "utils", "Parameter", "Buffer",
           "UninitializedParameter", "UninitializedBuffer", "DataParallel"] + list(_modules_all)
