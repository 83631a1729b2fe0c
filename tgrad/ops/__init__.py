"""The op library: one definition per op (forward primitive + backward rule + metadata).

Importing this package attaches the ops to Tensor as methods and operators.
"""

from tgrad.ops import (
    aliases,
    bessel,
    complex_ops,
    composite,
    creation,
    distances,
    einsum,
    elementwise,
    erfs,
    extras,
    gathering,
    hyperbolic,
    incomplete_gamma,
    index,
    inplace,
    layout,
    logmath,
    mathcomposites,
    matmul,
    movement,
    numerics,
    pointwise_extras,
    products,
    quantiles,
    reduce,
    sampling,
    scan,
    scatter_reduce,
    scatters,
    searching,
    settings,
    shape,
    small_extras,
    sorting,
    special,
    spectral,
    statistics,
    tensor_extras,
    tensor_legacy,
    torch_aliases,
    torch_utils,
    windows,
)
from tgrad.ops._common import OPS, tensor_first, tensors_only
from tgrad.tensor import Tensor

__all__ = [n for m in (aliases, bessel, complex_ops, composite, creation, distances, einsum,
                       elementwise, erfs, extras, gathering, hyperbolic, incomplete_gamma,
                       layout, logmath, mathcomposites, matmul, numerics, movement,
                       pointwise_extras, products,
                       quantiles, reduce, sampling, scan,
                       scatter_reduce, scatters, searching, settings, shape, small_extras, sorting,
                       special, spectral, statistics, tensor_extras, tensor_legacy, torch_aliases,
                       torch_utils, windows)
           for n in m.__all__]

from tgrad.ops.aliases import *  # noqa: E402,F401,F403
from tgrad.ops.bessel import *  # noqa: E402,F401,F403
from tgrad.ops.complex_ops import *  # noqa: E402,F401,F403
from tgrad.ops.composite import *  # noqa: E402,F401,F403
from tgrad.ops.creation import *  # noqa: E402,F401,F403
from tgrad.ops.distances import *  # noqa: E402,F401,F403
from tgrad.ops.einsum import *  # noqa: E402,F401,F403
from tgrad.ops.elementwise import *  # noqa: E402,F401,F403
from tgrad.ops.erfs import *  # noqa: E402,F401,F403
from tgrad.ops.extras import *  # noqa: E402,F401,F403
from tgrad.ops.gathering import *  # noqa: E402,F401,F403
from tgrad.ops.hyperbolic import *  # noqa: E402,F401,F403
from tgrad.ops.incomplete_gamma import *  # noqa: E402,F401,F403
from tgrad.ops.layout import *  # noqa: E402,F401,F403
from tgrad.ops.logmath import *  # noqa: E402,F401,F403
from tgrad.ops.mathcomposites import *  # noqa: E402,F401,F403
from tgrad.ops.matmul import *  # noqa: E402,F401,F403
from tgrad.ops.movement import *  # noqa: E402,F401,F403
from tgrad.ops.numerics import *  # noqa: E402,F401,F403
from tgrad.ops.pointwise_extras import *  # noqa: E402,F401,F403
from tgrad.ops.products import *  # noqa: E402,F401,F403
from tgrad.ops.quantiles import *  # noqa: E402,F401,F403
from tgrad.ops.reduce import *  # noqa: E402,F401,F403
from tgrad.ops.sampling import *  # noqa: E402,F401,F403
from tgrad.ops.scan import *  # noqa: E402,F401,F403
from tgrad.ops.scatter_reduce import *  # noqa: E402,F401,F403
from tgrad.ops.scatters import *  # noqa: E402,F401,F403
from tgrad.ops.searching import *  # noqa: E402,F401,F403
from tgrad.ops.settings import *  # noqa: E402,F401,F403
from tgrad.ops.shape import *  # noqa: E402,F401,F403
from tgrad.ops.small_extras import *  # noqa: E402,F401,F403
from tgrad.ops.sorting import *  # noqa: E402,F401,F403
from tgrad.ops.special import *  # noqa: E402,F401,F403
from tgrad.ops.spectral import *  # noqa: E402,F401,F403
from tgrad.ops.statistics import *  # noqa: E402,F401,F403
from tgrad.ops.tensor_extras import *  # noqa: E402,F401,F403
from tgrad.ops.tensor_legacy import *  # noqa: E402,F401,F403
from tgrad.ops.torch_aliases import *  # noqa: E402,F401,F403
from tgrad.ops.torch_utils import *  # noqa: E402,F401,F403
from tgrad.ops.windows import *  # noqa: E402,F401,F403

_ = (index, inplace, OPS)

# PyTorch's maximum/minimum/atan2/logical_* take two tensors (no number operand); the
# module functions (ew.maximum ...) keep taking numbers for tgrad's own formulas
for _name in ("maximum", "minimum", "atan2", "arctan2", "logical_and", "logical_or",
              "logical_xor", "gcd", "lcm", "fmax", "fmin", "hypot", "nextafter", "igamma",
              "igammac", "ldexp"):
    globals()[_name], _method = tensors_only(_name, globals()[_name])
    setattr(Tensor, _name, _method)
Tensor.heaviside = tensors_only("heaviside", heaviside, "values")[1]  # noqa: F405
# PyTorch's comparisons and fmod take a number only as ``other``: torch.eq(2.0, x) is its
# no-matching-overload TypeError (the operators and methods are untouched: self is a Tensor)
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "fmod"):
    globals()[_name] = tensor_first(_name, globals()[_name])
del _name, _method
