"""``tgrad.fft``: PyTorch's ``torch.fft`` (discrete Fourier transforms), on the CPU.

Three primitive Functions do the work, through NumPy's pocketfft:

- ``_C2C``: complex -> complex along ``dims`` (fftn / ifftn);
- ``_R2C``: real -> complex, the last of ``dims`` one-sided (n // 2 + 1 bins: rfftn);
- ``_C2R``: one-sided complex -> real, the last of ``dims`` of output size n (irfftn: a
  c2c inverse along the other dims, then c2r along the last, which reads only the real
  parts of its bin 0 and, for even n, of bin n / 2).

Every public transform is one of them after resizing the input along ``dims`` (``n`` /
``s``: zero-padding at the end or trimming, both differentiable tgrad ops), and hfft /
ihfft are irfft / rfft with the input / output conjugated and the norm swapped.

``norm`` scales the transform: "backward" (the default) scales the inverse by 1/N (N the
product of the signal sizes), "forward" the forward one, "ortho" both by 1/sqrt(N).

Gradients follow PyTorch's convention (dL/dRe + i dL/dIm, see tgrad.ops.complex_ops):
- c2c: the adjoint, the transform of the other direction with the swapped norm;
- r2c (PyTorch's fft_r2c_backward): the one-sided gradient zero-padded to the full n
  bins, c2c-inverted with the swapped norm, real part;
- c2r (PyTorch's fft_c2r_backward): the r2c transform of the gradient with the swapped
  norm, bins 1 .. n - (n // 2 + 1) doubled (each stands for itself and its conjugate).
Backward rules are tgrad ops, so double backward works.

Dtypes as PyTorch 2.13 on the CPU: float32/float64 -> complex64/complex128, integers and
bool promote to the default float dtype, float16/bfloat16 raise "Unsupported dtype Half".
The transforms run on the CPU only (cuda raises NotImplementedError); fftfreq / rfftfreq /
fftshift / ifftshift are tgrad ops and work on every device.
"""

from __future__ import annotations

import numbers

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad._layout import check_layout
from tgrad.autograd.function import Function
from tgrad.ops._common import int_tuple, register_op, require_tensor, wrap
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "forward", "ortho")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# ------------------------------------------------------------------------- primitives
class _C2C(Function):
    """y = DFT of x along ``dims`` (sign -1 if ``forward`` else +1), scaled per ``norm``;
    x, y: same shape, complex.  dx = _C2C(g, dims, not forward, swapped norm) (the
    adjoint)."""

    name = "fft_c2c"
    node_name = "FftC2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, forward, norm):
        ctx.args = (dims, forward, norm)
        if not dims:
            return wrap(x._data.copy(), x.device)
        f = np.fft.fftn if forward else np.fft.ifftn
        return wrap(f(x._data, axes=dims, norm=norm).astype(x.dtype.np, copy=False), x.device)

    @staticmethod
    def backward(ctx, g):
        dims, forward, norm = ctx.args
        return _C2C.apply(g, dims, not forward, _SWAP[norm]), None, None, None


class _R2C(Function):
    """y = forward DFT of real x along ``dims`` scaled per ``norm``, one-sided along
    dims[-1]: x (..., n, ...) real -> y (..., n // 2 + 1, ...) complex.
    dx = Re _C2C(g zero-padded to n bins along dims[-1], dims, inverse, swapped norm)."""

    name = "fft_r2c"
    node_name = "FftR2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm):
        ctx.args = (dims, norm, x.shape[dims[-1]])
        y = np.fft.rfftn(x._data, axes=dims, norm=norm)
        return wrap(y.astype(dtypes.to_complex(x.dtype).np, copy=False), x.device)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.complex_ops import real
        dims, norm, n = ctx.args
        full = _resize(g, (dims[-1],), (n,))
        return real(_C2C.apply(full, dims, False, _SWAP[norm])), None, None


class _C2R(Function):
    """y = inverse DFT along ``dims`` scaled per ``norm`` of the Hermitian signal whose
    one-sided half along dims[-1] is x: x (..., n // 2 + 1, ...) complex -> y (..., n, ...)
    real (bin 0's and, for even n, bin n/2's imaginary parts along dims[-1] are ignored).
    dx = _R2C(g, dims, swapped norm) with bins 1 .. n - (n // 2 + 1) doubled."""

    name = "fft_c2r"
    node_name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx, x, dims, n, norm):
        ctx.args = (dims, n, norm, x.ndim)
        s = [x.shape[d] for d in dims[:-1]] + [n]
        y = np.fft.irfftn(x._data, s=s, axes=dims, norm=norm)
        return wrap(y.astype(dtypes.to_real(x.dtype).np, copy=False), x.device)

    @staticmethod
    def backward(ctx, g):
        dims, n, norm, ndim = ctx.args
        gx = _R2C.apply(g, dims, _SWAP[norm])
        w = np.ones(n // 2 + 1, dtypes.to_real(g.dtype).np)
        w[1:n - (n // 2 + 1) + 1] = 2.0
        shape = [1] * ndim
        shape[dims[-1]] = n // 2 + 1
        return gx * wrap(w.reshape(shape), g.device), None, None, None


for _c in (_C2C, _R2C, _C2R):
    register_op(_c)


# ------------------------------------------------------------------------- argument checks
def _check_norm(norm) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str):  # (PyTorch's TypeError)
        raise TypeError(f"argument 'norm' must be str, not {type(norm).__name__}")
    if norm not in _NORMS:
        raise RuntimeError(f"Invalid normalization mode: \"{norm}\"")
    return norm


def _check_n(n) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _int(op: str, name: str, v) -> int:
    """tensor._int_arg under PyTorch's fft_<op> name: ints, NumPy integers and 0-d integer
    tensors; a bool or a float is its TypeError ("fft_fft(): argument 'n' must be int")."""
    return v if type(v) is int else _int_arg(f"fft_{op}", name, v, allow_bool=False)


def _input(op: str, x, kind: str) -> Tensor:
    """``x`` in the dtype the transform computes in: ``kind`` "c" (complex: real floats
    become complex of their width), "r" (real float; complex raises PyTorch's error),
    integers and bool in the default float dtype first."""
    require_tensor(op, x)
    if x.device.type != "cpu":
        raise NotImplementedError(f"tgrad.fft.{op}: the FFTs run on the CPU only for now (got a "
                                  f"tensor on {x.device}); move it with .cpu() first")
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"{op}: Unsupported dtype {dtypes.SCALAR_TYPE_NAMES[x.dtype]} (the "
                           f"FFTs take float32/float64/complex64/complex128 on the CPU, as "
                           f"PyTorch's); convert it with .float() first")
    if kind == "r":
        if x.dtype.is_complex:
            raise RuntimeError(f"{op} expects a real input tensor, but got "
                               f"{dtypes.SCALAR_TYPE_NAMES[x.dtype]}")
    if not x.dtype.is_complex and not x.dtype.is_floating_point:
        x = x.to(dtypes.get_default_dtype())
    if kind == "c" and not x.dtype.is_complex:
        x = x.to(dtypes.to_complex(x.dtype))
    return x


def _resize(x: Tensor, dims, sizes) -> Tensor:
    """``x`` trimmed (a narrow) or zero-padded at the end along each of ``dims`` to
    ``sizes`` (both differentiable: their adjoints are each other)."""
    from tgrad.ops.creation import zeros
    from tgrad.ops.shape import cat, narrow
    for d, n in zip(dims, sizes):
        cur = x.shape[d]
        if n < cur:
            x = narrow(x, d, 0, n)
        elif n > cur:
            shape = list(x.shape)
            shape[d] = n - cur
            x = cat([x, zeros(*shape, dtype=x.dtype, device=x.device)], d)
    return x


def _wrap(op: str, d, ndim: int) -> int:
    if ndim == 0:  # PyTorch's IndexError (tgrad's _wrap_dim lets a 0-d tensor take dim 0)
        raise IndexError(f"{op}: Dimension specified as {d} but tensor has no dimensions")
    return _wrap_dim(d, ndim, op)


def _dim_1d(op: str, x: Tensor, n, dim) -> tuple:
    """(dims, sizes) of a one-dim transform, n defaulting to the input's size."""
    d = _wrap(op, _int(op, "dim", dim), x.ndim)
    size = x.shape[d] if n is None else _int(op, "n", n)
    return (d,), [size]


def _dims_nd(op: str, x: Tensor, s, dim) -> tuple:
    """(dims, sizes) as PyTorch's canonicalize_fft_shape_and_dim_args: ``dim`` given:
    those dims (unique), ``s`` then of the same length; only ``s``: the last len(s) dims;
    neither: all dims. An entry -1 of ``s`` keeps the input's size. The 2-D forms need a
    ``dim`` and none takes a Tensor ``s`` (PyTorch's TypeErrors)."""
    if isinstance(s, (int, np.integer)):
        s = (s,)
    if isinstance(s, Tensor):
        raise TypeError(f"fft_{op}(): argument 's' must be tuple of ints, not Tensor")
    if dim is None and op.endswith("2"):
        raise TypeError(f"fft_{op}(): argument 'dim' must be tuple of ints, not NoneType")
    if dim is not None:  # ints (a float or str dim was iterated over or truncated)
        dim = int_tuple(op, "dim", dim)
        dims = tuple(_wrap(op, d, x.ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}: FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError(f"{op}: When given, dim and shape arguments must have the same "
                               f"length (got s={list(s)} and dim={list(dim)})")
    elif s is not None:
        if len(s) > x.ndim:
            raise RuntimeError(f"{op}: Got shape with {len(s)} values but input tensor only "
                               f"has {x.ndim} dimensions.")
        dims = tuple(range(x.ndim - len(s), x.ndim))
    else:
        dims = tuple(range(x.ndim))
    if s is None:
        return dims, [x.shape[d] for d in dims]
    sizes = []
    for d, n in zip(dims, s):
        n = _int(op, "s", n)
        sizes.append(x.shape[d] if n == -1 else n)
    return dims, sizes


# ------------------------------------------------------------------------- drivers
def _c2c(input, dims, sizes, forward: bool, norm) -> Tensor:  # noqa: A002
    norm = _check_norm(norm)
    for n in sizes:
        _check_n(n)
    x = _resize(input, dims, sizes)
    return _C2C.apply(x, tuple(dims), forward, norm)


def _r2c(op: str, x: Tensor, dims, sizes, norm, conj_out: bool) -> Tensor:
    norm = _check_norm(norm)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    for n in sizes:
        _check_n(n)
    x = _resize(x, dims, sizes)
    if conj_out:  # ihfft: conj(rfft(x)) with the norm swapped (x real: ifft(x) = conj fft x / N)
        from tgrad.ops.complex_ops import complex_conj
        return complex_conj(_R2C.apply(x, tuple(dims), _SWAP[norm]))
    return _R2C.apply(x, tuple(dims), norm)


def _c2r(op: str, x: Tensor, dims, sizes, last_given: bool, norm, conj_in: bool) -> Tensor:
    """irfftn / hfftn: ``sizes`` are the output sizes; the last, when not given, is
    2 (m - 1) for an input of m bins along dims[-1]."""
    norm = _check_norm(norm)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    sizes = list(sizes)
    if not last_given:
        sizes[-1] = 2 * (x.shape[dims[-1]] - 1)
    for n in sizes:
        _check_n(n)
    n_last = sizes[-1]
    x = _resize(x, dims, sizes[:-1] + [n_last // 2 + 1])
    if conj_in:  # hfft: irfft(conj(x)) with the norm swapped
        from tgrad.ops.complex_ops import complex_conj
        x = complex_conj(x)
        norm = _SWAP[norm]
    return _C2R.apply(x, tuple(dims), n_last, norm)


def _last_given(s) -> bool:
    if s is None:
        return False
    last = s if isinstance(s, (int, np.integer)) else (s[-1] if len(s) else -1)
    return last != -1


# ------------------------------------------------------------------------- public API
@autocast_policy(None, cpu="fp32")
def fft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """The 1-D discrete Fourier transform along ``dim``; ``n`` zero-pads or trims the
    signal first. Real input gives complex of its width."""
    x = _input("fft", input, "c")
    dims, sizes = _dim_1d("fft", x, n, dim)
    return _c2c(x, dims, sizes, True, norm)


@autocast_policy(None, cpu="fp32")
def ifft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
         norm: str | None = None) -> Tensor:
    """The 1-D inverse discrete Fourier transform along ``dim`` (``n``: as fft)."""
    x = _input("ifft", input, "c")
    dims, sizes = _dim_1d("ifft", x, n, dim)
    return _c2c(x, dims, sizes, False, norm)


@autocast_policy(None, cpu="fp32")
def fftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D discrete Fourier transform over ``dim`` (default: the last len(s) dims, or
    all), each signal zero-padded or trimmed to ``s``."""
    x = _input("fftn", input, "c")
    dims, sizes = _dims_nd("fftn", x, s, dim)
    return _c2c(x, dims, sizes, True, norm)


@autocast_policy(None, cpu="fp32")
def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D inverse discrete Fourier transform (``s``, ``dim``: as fftn)."""
    x = _input("ifftn", input, "c")
    dims, sizes = _dims_nd("ifftn", x, s, dim)
    return _c2c(x, dims, sizes, False, norm)


@autocast_policy(None, cpu="fp32")
def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """fftn over the last two dims."""
    x = _input("fft2", input, "c")
    dims, sizes = _dims_nd("fft2", x, s, dim)
    return _c2c(x, dims, sizes, True, norm)


@autocast_policy(None, cpu="fp32")
def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """ifftn over the last two dims."""
    x = _input("ifft2", input, "c")
    dims, sizes = _dims_nd("ifft2", x, s, dim)
    return _c2c(x, dims, sizes, False, norm)


@autocast_policy(None, cpu="fp32")
def rfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
         norm: str | None = None) -> Tensor:
    """The 1-D Fourier transform of a real signal: the n // 2 + 1 non-negative frequency
    bins (the rest are their conjugates)."""
    x = _input("rfft", input, "r")
    dims, sizes = _dim_1d("rfft", x, n, dim)
    return _r2c("rfft", x, dims, sizes, norm, False)


@autocast_policy(None, cpu="fp32")
def irfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
          norm: str | None = None) -> Tensor:
    """The inverse of rfft: ``n`` real outputs (default 2 (m - 1) for m input bins) from
    the one-sided spectrum, trimmed or zero-padded to n // 2 + 1 bins."""
    x = _input("irfft", input, "c")
    dims, sizes = _dim_1d("irfft", x, n, dim)
    return _c2r("irfft", x, dims, sizes, n is not None, norm, False)


@autocast_policy(None, cpu="fp32")
def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D Fourier transform of a real signal, one-sided along the last of ``dim``."""
    x = _input("rfftn", input, "r")
    dims, sizes = _dims_nd("rfftn", x, s, dim)
    return _r2c("rfftn", x, dims, sizes, norm, False)


@autocast_policy(None, cpu="fp32")
def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of rfftn; ``s`` gives the output sizes (the last defaults to
    2 (m - 1))."""
    x = _input("irfftn", input, "c")
    dims, sizes = _dims_nd("irfftn", x, s, dim)
    return _c2r("irfftn", x, dims, sizes, _last_given(s), norm, False)


@autocast_policy(None, cpu="fp32")
def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """rfftn over the last two dims."""
    x = _input("rfft2", input, "r")
    dims, sizes = _dims_nd("rfft2", x, s, dim)
    return _r2c("rfft2", x, dims, sizes, norm, False)


@autocast_policy(None, cpu="fp32")
def irfft2(input: Tensor, s=None, dim=(-2, -1),  # noqa: A002
           norm: str | None = None) -> Tensor:
    """irfftn over the last two dims."""
    x = _input("irfft2", input, "c")
    dims, sizes = _dims_nd("irfft2", x, s, dim)
    return _c2r("irfft2", x, dims, sizes, _last_given(s), norm, False)


@autocast_policy(None, cpu="fp32")
def hfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
         norm: str | None = None) -> Tensor:
    """The Fourier transform of a Hermitian-symmetric signal given by its one-sided half:
    ``n`` real outputs (default 2 (m - 1)); irfft(conj(input)) with the norm swapped."""
    x = _input("hfft", input, "c")
    dims, sizes = _dim_1d("hfft", x, n, dim)
    return _c2r("hfft", x, dims, sizes, n is not None, norm, True)


@autocast_policy(None, cpu="fp32")
def ihfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
          norm: str | None = None) -> Tensor:
    """The inverse of hfft: the n // 2 + 1 one-sided bins of ifft of a real signal."""
    x = _input("ihfft", input, "r")
    dims, sizes = _dim_1d("ihfft", x, n, dim)
    return _r2c("ihfft", x, dims, sizes, norm, True)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D hfft: irfftn(conj(input)) with the norm swapped."""
    x = _input("hfftn", input, "c")
    dims, sizes = _dims_nd("hfftn", x, s, dim)
    return _c2r("hfftn", x, dims, sizes, _last_given(s), norm, True)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D ihfft: conj(rfftn(input)) with the norm swapped."""
    x = _input("ihfftn", input, "r")
    dims, sizes = _dims_nd("ihfftn", x, s, dim)
    return _r2c("ihfftn", x, dims, sizes, norm, True)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """hfftn over the last two dims."""
    x = _input("hfft2", input, "c")
    dims, sizes = _dims_nd("hfft2", x, s, dim)
    return _c2r("hfft2", x, dims, sizes, _last_given(s), norm, True)


def ihfft2(input: Tensor, s=None, dim=(-2, -1),  # noqa: A002
           norm: str | None = None) -> Tensor:
    """ihfftn over the last two dims."""
    x = _input("ihfft2", input, "r")
    dims, sizes = _dims_nd("ihfft2", x, s, dim)
    return _r2c("ihfft2", x, dims, sizes, norm, True)


# ------------------------------------------------------------------------- helpers
def _freq(op: str, n: int, d: float, onesided: bool, dtype, device,
          requires_grad: bool) -> Tensor:
    from tgrad.ops.creation import tensor
    n = _int(op, "n", n)
    if isinstance(d, (str, bytes)) or not isinstance(d, (numbers.Real, np.generic, Tensor)):
        raise TypeError(f"{op}(): argument 'd' (position 2) must be float, not "
                        f"{type(d).__name__}")
    if n < 0:
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {n}: [{n}]")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{op} requires a floating point or complex dtype (got {dt})")
    k = np.arange(n // 2 + 1 if onesided else n, dtype=np.float64)
    if not onesided:
        k[(n + 1) // 2:] -= n
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.float64(1.0) / (np.float64(n) * np.float64(d))
        vals = k * scale
    return tensor(vals, dtype=dt, device=device, requires_grad=requires_grad)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of fft of a length-``n`` signal with spacing ``d``:
    [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d n). out= (tgrad/_out.py):
    written into out, whose dtype and device stand in for missing dtype= / device=."""
    check_layout("fftfreq", layout)
    return _freq("fftfreq", n, d, False, dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of rfft of a length-``n`` signal: [0, 1, ..., n // 2] /
    (d n). out= (tgrad/_out.py): written into out, whose dtype and device stand in for
    missing dtype= / device=."""
    check_layout("rfftfreq", layout)
    return _freq("rfftfreq", n, d, True, dtype, device, requires_grad)


def _shift(op: str, input: Tensor, dim, inverse: bool) -> Tensor:  # noqa: A002
    from tgrad.ops.composite import roll
    require_tensor(op, input)
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        dims = tuple(_wrap(op, d, input.ndim) for d in int_tuple(op, "dim", dim))
    if not dims:  # a 0-d input (dim None) or dim=(): PyTorch's roll error
        raise RuntimeError(f"{op}: `shifts` required (no dim to shift: the input is 0-d or "
                           f"dim is empty; a 0-d tensor is its own shift, use it as is)")
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """The zero-frequency bin moved to the centre: a roll by size // 2 along ``dim``
    (default: all dims)."""
    return _shift("fftshift", input, dim, False)


def ifftshift(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """The inverse of fftshift: a roll by (size + 1) // 2 along ``dim``."""
    return _shift("ifftshift", input, dim, True)


from tgrad import _out  # noqa: E402

_out.install(globals(), "fft")  # PyTorch's out= on the transforms and fftfreq / rfftfreq
