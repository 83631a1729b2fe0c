"""The op library: one definition per op (forward primitive + backward rule + metadata).

Importing this package attaches the ops to Tensor as methods and operators.
"""

from tgrad.ops import (
    composite,
    creation,
    einsum,
    elementwise,
    extras,
    gathering,
    index,
    inplace,
    layout,
    logmath,
    matmul,
    movement,
    products,
    reduce,
    sampling,
    scan,
    searching,
    shape,
    sorting,
)
from tgrad.ops._common import OPS

__all__ = [n for m in (composite, creation, einsum, elementwise, extras, gathering, layout,
                       logmath, matmul, movement, products, reduce, sampling, scan,
                       searching, shape, sorting)
           for n in m.__all__]

from tgrad.ops.composite import *  # noqa: E402,F401,F403
from tgrad.ops.creation import *  # noqa: E402,F401,F403
from tgrad.ops.einsum import *  # noqa: E402,F401,F403
from tgrad.ops.elementwise import *  # noqa: E402,F401,F403
from tgrad.ops.extras import *  # noqa: E402,F401,F403
from tgrad.ops.gathering import *  # noqa: E402,F401,F403
from tgrad.ops.layout import *  # noqa: E402,F401,F403
from tgrad.ops.logmath import *  # noqa: E402,F401,F403
from tgrad.ops.matmul import *  # noqa: E402,F401,F403
from tgrad.ops.movement import *  # noqa: E402,F401,F403
from tgrad.ops.products import *  # noqa: E402,F401,F403
from tgrad.ops.reduce import *  # noqa: E402,F401,F403
from tgrad.ops.sampling import *  # noqa: E402,F401,F403
from tgrad.ops.scan import *  # noqa: E402,F401,F403
from tgrad.ops.searching import *  # noqa: E402,F401,F403
from tgrad.ops.shape import *  # noqa: E402,F401,F403
from tgrad.ops.sorting import *  # noqa: E402,F401,F403

_ = (index, inplace, OPS)
