"""``affine_grid`` and ``grid_sample`` (2-D: 4-D inputs; 3-D: 5-D volumetric inputs),
PyTorch's spatial-transformer pair. affine_grid is composed of tgrad ops; grid_sample is one
node (GridSampler2DBackward0 / GridSampler3DBackward0) over the backends' fused
grid_sample_fwd / grid_sample_bwd (tgrad/backends/_numpy_grid_sample.py,
tgrad/kernels/grid_sample.py), with _grid_sample_composed (tgrad ops) as the reference its
double backward differentiates.

affine_grid(theta (N, 2, 3), size (N, C, H, W)): grid[n, h, w] = theta[n] @ (x_w, y_h, 1)
with x_w, y_h the normalized pixel coordinates in [-1, 1] (align_corners: the corner
pixels' centres are -1 and 1; otherwise their outer edges are); volumetric:
theta (N, 3, 4), size (N, C, D, H, W), grid[n, d, h, w] = theta[n] @ (x_w, y_h, z_d, 1).

grid_sample(input (N, C, H, W), grid (N, Ho, Wo, 2)): out[n, :, i, j] samples input at
(x, y) = grid[n, i, j] (x along W, y along H), unnormalized to pixel units as
    align_corners:  ix = (x + 1) / 2 (W - 1)     else  ix = ((x + 1) W - 1) / 2
then, by padding_mode, taps outside the image read 0 ('zeros'), or coordinates are clipped
to the image ('border') or reflected at its edges ('reflection', PyTorch's rule), and
mode 'bilinear' mixes the 4 neighbouring pixels with weights (1 - fx, fx) x (1 - fy, fy),
'nearest' takes the pixel at the coordinates rounded half to even. Volumetric
(input (N, C, D, H, W), grid (N, Do, Ho, Wo, 3), (x, y, z) along (W, H, D)): the same per
dim, 'bilinear' being trilinear over the 8 neighbours.
'bicubic' (4-D only, as PyTorch): the padding is applied not to (ix, iy) but to each of the
4 x 4 integer taps floor(ix) - 1 .. floor(ix) + 2 (likewise y), mixed with Keys' cubic
convolution weights, A = -0.75, of t = ix - floor(ix):
    w0 = c2(t + 1), w1 = c1(t), w2 = c1(1 - t), w3 = c2(2 - t),
    c1(x) = ((A + 2) x - (A + 3)) x^2 + 1,  c2(x) = ((A x - 5A) x + 8A) x - 4A.

Each tap is a gather of the flattened image (its backward a deterministic scatter-add into
input) times a weight that is linear in the coordinates (the gradient to grid), so the
gradients are PyTorch's: d input scatters g * weight, d grid = g * (d weight / d coords)
* (d coords / d grid), zero where a clip is active. The fused backward computes exactly
these (on the GPU d input is index_add's deterministic segmented sum: no float atomics);
NaN / inf coordinates give what the composition gives.
"""

from __future__ import annotations

import itertools
import math
import warnings

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE, enable_grad
from tgrad.nn.functional import _check_tensor
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    backend_of,
    fresh,
    register_op,
    rounded_to,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange, ones
from tgrad.ops.shape import stack
from tgrad.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]


def _base(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """The n normalized pixel coordinates along one dim."""
    if n <= 1 and align_corners:
        return ones(n, dtype=like.dtype, device=like.device) * 0.0
    idx = arange(n, dtype=like.dtype, device=like.device)
    if align_corners:
        return idx * (2.0 / (n - 1)) - 1.0
    return (idx * 2.0 + 1.0) / n - 1.0




_DEFAULT_ALIGN = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The (N, H, W, 2) sampling grid of the affine maps theta (N, 2, 3) for an output of
    ``size`` (N, C, H, W); volumetric: (N, D, H, W, 3) of theta (N, 3, 4) for size
    (N, C, D, H, W). align_corners None means False, with PyTorch's UserWarning; True
    with a spatial size of 1 gives PyTorch's unit-size UserWarning."""
    if align_corners is None:
        warnings.warn(_DEFAULT_ALIGN, stacklevel=2)
        align_corners = False
    _check_tensor("affine_grid", theta, "theta")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype.name}")
    size = list(size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    k = len(size) - 2  # spatial dims
    n, spatial = size[0], size[2:]
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for "
                         f"size {size}. Got {list(theta.shape)}.")
    if theta.shape[0] != n:  # (PyTorch: the RuntimeError of its batched matmul)
        raise RuntimeError(f"affine_grid: Expected theta's batch size {theta.shape[0]} to match "
                           f"size[0] = {n} (theta of shape {list(theta.shape)}, size {size})")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    (theta,), half = widen_halves(theta)  # halves: float32, rounded once
    # base[..., j] is the coordinate along spatial dim k - 1 - j (x along W first), then 1
    cols = []
    for j in range(k):
        d = k - 1 - j
        view = [1] * k
        view[d] = spatial[d]
        cols.append(_base(spatial[d], align_corners, theta).reshape(*view).expand(*spatial))
    cols.append(ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = stack(cols, -1)  # (*spatial, k + 1)
    numel = base.numel() // (k + 1)
    out = base.reshape(1, numel, k + 1) @ theta.mT  # (N, numel, k)
    return fresh(rounded_to(out.reshape(n, *spatial, k), half))  # (not a view: PyTorch's)


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """PyTorch's reflect_coordinates: fold coord into [low, high] by mirror images."""
    if twice_low == twice_high:
        return coord * 0.0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    d = (coord - low).abs()
    extra = ew.fmod(d, span)
    flips = ew.floor(d / span)
    even = ew.fmod(flips, 2) == 0
    return ew.where(even, extra + low, span - extra + low)


def _pad_coord(c: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's compute_coordinates: pixel coordinate c clipped ('border') or reflected
    ('reflection') into [0, size - 1] (a NaN clipped to 0, PyTorch's clip_coordinates);
    unchanged for 'zeros'."""
    if padding_mode == "zeros":
        return c
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    return ew.where(ew.isnan(c), 0.0, c).clamp(0, size - 1)


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_weights(t: Tensor) -> list:
    """Keys' cubic convolution weights of the 4 taps floor - 1 .. floor + 2 at fraction t."""
    a = _CUBIC_A

    def c1(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def _check_grid_sample(input: Tensor, grid: Tensor, mode: str,  # noqa: A002
                       padding_mode: str) -> None:
    """PyTorch's checks, in its order (check_grid_sampler_common, then the 2d/3d ones)."""
    _check_tensor("grid_sample", input)
    _check_tensor("grid_sample", grid, "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.ndim == 0 or grid.ndim == 0 or input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got {sizes}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")
    if input.ndim == 4:
        if grid.ndim != 4:
            raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number "
                               f"of dimensions, but got {sizes}")
    else:
        if input.ndim != 5 or grid.ndim != 5:
            raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number "
                               f"of dimensions, but got {sizes}")
        if mode == "bicubic":
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {input.dtype.name} and grid has {grid.dtype.name}")
    if not input.dtype.is_floating_point:  # PyTorch's NotImplementedError, its kernel named
        kernel = "grid_sampler_2d_cpu_kernel_impl" if input.ndim == 4 else "grid_sampler3d_cpu"
        raise dtypes.kernel_not_implemented(kernel, input.dtype, f" (grid_sample of "
                                            f"{input.dtype.name} tensors; convert them with "
                                            f".float())")


def _grid_sample_composed(input: Tensor, grid: Tensor, mode: str,  # noqa: A002
                          padding_mode: str, align: bool) -> Tensor:
    """grid_sample of float32/float64 tensors composed of tgrad ops (gathers, wheres,
    floors...): the reference the double backward differentiates (GridSamplerBackward)."""
    n, c, *spatial = input.shape
    k = len(spatial)
    out_sp = tuple(grid.shape[1:-1])
    p = 1
    for s in out_sp:
        p *= s
    # unnormalized coordinates in dim order (grid's last axis lists W first): (N, *out_sp)
    coords = [_unnormalize(grid[..., k - 1 - d], spatial[d], align) for d in range(k)]
    flat = input.reshape(n, c, math.prod(spatial))
    strides = [1] * k
    for d in range(k - 2, -1, -1):
        strides[d] = strides[d + 1] * spatial[d + 1]

    def tap(idx: list) -> Tensor:
        """input at integer pixel idx (one (N, *out_sp) tensor per dim), 0 outside the
        image: (N, C, *out_sp)."""
        inside = None
        pos = None
        for d in range(k):
            ok = (idx[d] >= 0) & (idx[d] <= spatial[d] - 1)
            inside = ok if inside is None else inside & ok
        for d in range(k):  # (each dim's index truncated first, PyTorch's int64 cast:
            # a reflected tap of a huge coordinate may be no integer)
            term = ew.trunc(ew.where(inside, idx[d], 0)) * strides[d]
            pos = term if pos is None else pos + term
        pos = pos.to(dtypes.int64).reshape(n, 1, p).expand(n, c, p)
        vals = flat.gather(2, pos)
        return ew.where(inside.reshape(n, 1, p), vals, 0.0).reshape(n, c, *out_sp)

    if mode == "bicubic":  # 4-D only; padding per integer tap (PyTorch's get_value_bounded)
        fl = [ew.floor(cd) for cd in coords]
        wts = [_cubic_weights((cd - f).unsqueeze(1)) for cd, f in zip(coords, fl)]
        taps = [[_pad_coord(f + (j - 1), spatial[d], padding_mode, align) for j in range(4)]
                for d, f in enumerate(fl)]
        out = None
        for i in range(4):  # rows (y): each a cubic mix along x, then mixed along y
            row = None
            for j in range(4):
                term = tap([taps[0][i], taps[1][j]]) * wts[1][j]
                row = term if row is None else row + term
            term = row * wts[0][i]
            out = term if out is None else out + term
        return out
    coords = [_pad_coord(cd, spatial[d], padding_mode, align) for d, cd in enumerate(coords)]
    if mode == "nearest":
        return tap([ew.round(cd) for cd in coords])
    fl = [ew.floor(cd) for cd in coords]
    fr = [(cd - f).unsqueeze(1) for cd, f in zip(coords, fl)]  # the weights' gradient path
    out = None
    for corner in itertools.product((0, 1), repeat=k):  # (bi/tri)linear: 2^k neighbours
        term = tap([f + b for f, b in zip(fl, corner)])
        for f, b in zip(fr, corner):
            term = term * (f if b else 1 - f)
        out = term if out is None else out + term
    return out


_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


class GridSampler2D(Function):
    """out = grid_sample(x, grid): one node whose forward is the backend's fused
    grid_sample_fwd (one kernel on the GPU); backward: GridSamplerBackward (d x, d grid)."""

    name = "grid_sample"
    node_name = "GridSampler2DBackward0"
    saved_attributes = {"_saved_input": 0, "_saved_grid": 1,
                        "_saved_interpolation_mode": "mode_index",
                        "_saved_padding_mode": "padding_index",
                        "_saved_align_corners": "align"}

    @staticmethod
    def forward(ctx, x, grid, mode, padding, align):
        ctx.mode, ctx.padding, ctx.align = mode, padding, align
        ctx.mode_index, ctx.padding_index = _MODES.index(mode), _PADDINGS.index(padding)
        ctx.save_for_backward(x, grid)
        out = backend_of(x).grid_sample_fwd(x._data, grid._data, mode, padding, align)
        return wrap(out, x.device)

    @staticmethod
    def backward(ctx, g):
        x, grid = ctx.saved_tensors
        cls = GridSampler2DBackward if x.ndim == 4 else GridSampler3DBackward
        dx, dgrid = cls.apply(g, x, grid, ctx.mode, ctx.padding, ctx.align)
        need_x, need_grid = ctx.needs_input_grad[:2]
        return (dx if need_x else None), (dgrid if need_grid else None), None, None, None


class GridSampler3D(GridSampler2D):
    """Volumetric grid_sample (5-D input): PyTorch's GridSampler3DBackward0 node."""

    node_name = "GridSampler3DBackward0"
    saved_attributes = GridSampler2D.saved_attributes


class GridSampler2DBackward(Function):
    """(d x, d grid) = grid_sample_bwd(g, x, grid): the backend's fused backward (the GPU:
    one kernel for d grid and the taps, then index_add's deterministic scatter-add for d x).
    Its own backward differentiates the composed reference (_grid_sample_composed):
    d x = J_x(grid)^T g and d grid = J_grid(x, grid)^T g are re-derived under enable_grad
    and their vector-Jacobian product with (gg_x, gg_grid) taken by autograd.grad."""

    name = "grid_sample_backward"
    node_name = "GridSampler2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, x, grid, mode, padding, align):
        ctx.args = (mode, padding, align)
        ctx.save_for_backward(g, x, grid)
        dx, dgrid = backend_of(g).grid_sample_bwd(g._data, x._data, grid._data, mode,
                                                  padding, align)
        return wrap(dx, g.device), wrap(dgrid, g.device)

    @staticmethod
    def backward(ctx, gg_x, gg_grid):
        g, x, grid = ctx.saved_tensors
        return (*_double_backward((g, x, grid), (gg_x, gg_grid), ctx.args,
                                  ctx.needs_input_grad[:3]), None, None, None)


class GridSampler3DBackward(GridSampler2DBackward):
    node_name = "GridSampler3DBackwardBackward0"


def _double_backward(saved: tuple, ggs: tuple, args: tuple, needs: tuple) -> tuple:
    """d/d(g, x, grid) of <gg_x, d x> + <gg_grid, d grid>, (d x, d grid) = the composed
    grid_sample's vector-Jacobian product with g. Under create_graph (grad mode on here) the
    saved tensors that require grad enter as aliases (``view_as``), so the result stays
    differentiable through them; an alias is a node of its own, where the inner ``grad``
    stops, so a saved tensor that depends on another (g on x, as in a Hessian) does not pass
    that one its part a second time. The others enter as fresh leaves."""
    from tgrad.autograd import grad
    record = STATE.enabled
    if not any(needs):
        return None, None, None
    with enable_grad():
        g, x, grid = (t.view_as(t) if record and t.requires_grad else t.detach().requires_grad_()
                      for t in saved)
        out = _grid_sample_composed(x, grid, *args)
        firsts = grad(out, (x, grid), g, create_graph=True, materialize_grads=True)
        pairs = [(d, gg) for d, gg in zip(firsts, ggs) if gg is not None and d.requires_grad]
        wrt = [t for t, need in zip((g, x, grid), needs) if need]
        if not pairs:
            return None, None, None
        res = iter(grad([d for d, _ in pairs], wrt, [gg for _, gg in pairs],
                        create_graph=record, allow_unused=True))
    return tuple(next(res) if need else None for need in needs)


register_op(GridSampler2D)
register_op(GridSampler2DBackward)


@autocast_policy("promote", cpu="fp32")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample input (N, C, H, W) at the normalized locations grid (N, Ho, Wo, 2) ->
    (N, C, Ho, Wo), or volumetric input (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3) ->
    (N, C, Do, Ho, Wo); see the module docstring. One node (GridSampler2DBackward0 /
    GridSampler3DBackward0) over the backend's fused kernels."""
    _check_grid_sample(input, grid, mode, padding_mode)
    if align_corners is None:  # PyTorch's UserWarning, then False
        warnings.warn(_DEFAULT_ALIGN, stacklevel=2)
    align = bool(align_corners)
    (input, grid), half = widen_halves(input, grid)  # noqa: A001 - halves: float32
    cls = GridSampler2D if input.ndim == 4 else GridSampler3D
    return rounded_to(cls.apply(input, grid, mode, padding_mode, align), half)
