"""``affine_grid`` and ``grid_sample`` (2-D: 4-D inputs), PyTorch's spatial-transformer pair,
composed of tgrad ops.

affine_grid(theta (N, 2, 3), size (N, C, H, W)): grid[n, h, w] = theta[n] @ (x_w, y_h, 1)
with x_w, y_h the normalized pixel coordinates in [-1, 1] (align_corners: the corner
pixels' centres are -1 and 1; otherwise their outer edges are).

grid_sample(input (N, C, H, W), grid (N, Ho, Wo, 2)): out[n, :, i, j] samples input at
(x, y) = grid[n, i, j] (x along W, y along H), unnormalized to pixel units as
    align_corners:  ix = (x + 1) / 2 (W - 1)     else  ix = ((x + 1) W - 1) / 2
then, by padding_mode, taps outside the image read 0 ('zeros'), or coordinates are clipped
to the image ('border') or reflected at its edges ('reflection', PyTorch's rule), and
mode 'bilinear' mixes the 4 neighbouring pixels with weights (1 - fx, fx) x (1 - fy, fy),
'nearest' takes the pixel at the coordinates rounded half to even.

Each tap is a gather of the flattened image (its backward a deterministic scatter-add into
input) times a weight that is linear in the coordinates (the gradient to grid), so the
gradients are PyTorch's: d input scatters g * weight, d grid = g * (d weight / d coords)
* (d coords / d grid), zero where a clip is active.
"""

from __future__ import annotations

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.nn.functional import _check_tensor
from tgrad.ops import elementwise as ew
from tgrad.ops._common import rounded_to, widen_halves
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


def affine_grid(theta: Tensor, size, align_corners: bool = False) -> Tensor:
    """The (N, H, W, 2) sampling grid of the affine maps theta (N, 2, 3) for an output of
    ``size`` (N, C, H, W)."""
    _check_tensor("affine_grid", theta, "theta")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype.name}")
    size = list(size)
    if len(size) == 5:
        raise NotImplementedError("affine_grid: volumetric (5-D) grids are not supported in "
                                  "tgrad; use a 4-D size")
    if len(size) != 4:
        raise ValueError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                         f"transforms, respectively. Got size {size}.")
    n, _, h, w = size
    if theta.ndim != 3 or tuple(theta.shape) != (n, 2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{size}. Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    (theta,), half = widen_halves(theta)  # halves: float32, rounded once
    xs = _base(w, align_corners, theta).reshape(1, w).expand(h, w)
    ys = _base(h, align_corners, theta).reshape(h, 1).expand(h, w)
    base = stack([xs, ys, ones(h, w, dtype=theta.dtype, device=theta.device)], -1)  # (H, W, 3)
    return rounded_to((base.reshape(1, h * w, 3) @ theta.mT).reshape(n, h, w, 2), half)


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


def _source(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


@autocast_policy("promote", cpu="fp32")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample input (N, C, H, W) at the normalized locations grid (N, Ho, Wo, 2) ->
    (N, C, Ho, Wo); see the module docstring."""
    _check_tensor("grid_sample", input)
    _check_tensor("grid_sample", grid, "grid")
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'"
                         + (" (bicubic is not supported in tgrad)" if mode == "bicubic"
                            else ""))
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if input.ndim == 5:
        raise NotImplementedError("grid_sample: volumetric (5-D) inputs are not supported in "
                                  "tgrad; use 4-D inputs")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of "
                           f"dimensions and last dim 2, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {input.dtype.name} and grid has {grid.dtype.name}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"grid_sample: not implemented for {input.dtype.name}")
    align = bool(align_corners)
    (input, grid), half = widen_halves(input, grid)  # noqa: A001 - halves: float32
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    ix = _source(grid[..., 0], w, padding_mode, align)  # (N, Ho, Wo)
    iy = _source(grid[..., 1], h, padding_mode, align)
    flat = input.reshape(n, c, h * w)

    def tap(xi: Tensor, yi: Tensor) -> Tensor:
        """input at integer pixel (xi, yi), 0 outside the image: (N, C, Ho, Wo)."""
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        pos = (ew.where(inside, yi, 0) * w + ew.where(inside, xi, 0)).to(dtypes.int64)
        vals = flat.gather(2, pos.reshape(n, 1, ho * wo).expand(n, c, ho * wo))
        return ew.where(inside.reshape(n, 1, ho * wo), vals, 0.0).reshape(n, c, ho, wo)

    if mode == "nearest":
        return rounded_to(tap(ew.round(ix), ew.round(iy)), half)
    x0, y0 = ew.floor(ix), ew.floor(iy)
    fx, fy = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)  # the weights' gradient path
    out = (tap(x0, y0) * (1 - fx) * (1 - fy) + tap(x0 + 1, y0) * fx * (1 - fy)
           + tap(x0, y0 + 1) * (1 - fx) * fy + tap(x0 + 1, y0 + 1) * fx * fy)
    return rounded_to(out, half)

