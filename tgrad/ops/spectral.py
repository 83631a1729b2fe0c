"""stft / istft: PyTorch's short-time Fourier transform and its inverse (CPU, as
tgrad.fft; return_complex=True only for stft), composed of tgrad ops (pad, unfold, the
tgrad.fft transforms, index_add), so they are differentiable to any order.

Shapes: stft input (L) or (B, L) -> (F, T) or (B, F, T) complex, F = n_fft // 2 + 1
(onesided) or n_fft, T = 1 + (L' - n_fft) // hop_length with L' = L + 2 (n_fft // 2) when
``center`` (the signal padded by ``pad_mode``), else L. Frame t, bin f:
sum_k w[k] x[t hop + k] e^{-2 pi i f k / n_fft}, times n_fft^-1/2 when ``normalized``; the
window w (default ones(win_length)) is zero-padded on both sides to n_fft.
istft inverts it by overlap-add: y = sum_t w * irfft(X[:, t]) / sum_t w^2 (each shifted to
t hop; w^2, not |w|^2, for a complex window), trimmed by n_fft // 2 at both ends when
``center`` (or to ``length``).
"""

from __future__ import annotations

import warnings

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.ops._common import require_tensor, tensor_method
from tgrad.tensor import Tensor

__all__ = ["stft", "istft"]


def _window(op: str, window, win_length: int, n_fft: int, like: Tensor) -> Tensor:
    """The window (default ones) zero-padded on both sides to n_fft: (n_fft,)."""
    from tgrad.nn import functional as F
    from tgrad.ops.creation import ones
    if window is None:
        window = ones(win_length, dtype=dtypes.to_real(like.dtype), device=like.device)
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = F.pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(op: str, n_fft: int, hop_length, win_length) -> tuple:
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def _istft_call(input: Tensor, n_fft: int, hop: int, win: int, window, center: bool,  # noqa: A002
                normalized: bool, onesided, length, return_complex: bool) -> str:
    """PyTorch's istft error prefix: 'istft(CPUComplexFloatType[5, 11], n_fft=8, ...,
    return_complex=0)' (bools as 0 / 1, unset optionals as None)."""
    def opt(v):
        return "None" if v is None else str(int(v))
    def name(dt):
        return dtypes.SCALAR_TYPE_NAMES.get(dt, dt.name)
    dev, kind = input.device.type.upper(), name(input.dtype)
    w = "None" if window is None else f"tgrad.{name(window.dtype)}Tensor{{{list(window.shape)}}}"
    return (f"istft({dev}{kind}Type{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w}, center={int(center)}, "
            f"normalized={int(normalized)}, onesided={opt(onesided)}, length={opt(length)}, "
            f"return_complex={int(return_complex)})")


@tensor_method("stft")
@autocast_policy(None, cpu="fp32")
def stft(input: Tensor, n_fft: int, hop_length: int | None = None,  # noqa: A002
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform (PyTorch's torch.stft, return_complex=True only):
    (L) or (B, L) -> (n_fft // 2 + 1 or n_fft, frames) or (B, ., frames) complex."""
    from tgrad import fft
    from tgrad.nn import functional as F
    require_tensor("stft", input)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"stft: expected a tensor of floating point or complex values "
                           f"(got {input.dtype.name}); convert it with .float()")
    is_complex = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not is_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if return_complex is False:
        raise NotImplementedError("stft: return_complex=False (deprecated in PyTorch) is not "
                                  "supported by tgrad; pass return_complex=True and use "
                                  "view_as_real on the result for the old format")
    if align_to_window is not None:
        if center:
            raise RuntimeError("stft align_to_window should only be set when center = false")
        if align_to_window:
            raise NotImplementedError("stft: align_to_window=True is not supported by tgrad")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D "
                           f"(shape {list(input.shape)})")
    if onesided and is_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    onesided = not is_complex if onesided is None else onesided
    x = input if input.ndim == 2 else input.unsqueeze(0)  # (B, L)
    if center:
        pad = n_fft // 2
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length} (the padded signal length), "
                           f"but got n_fft={n_fft}")
    hop, win = _lengths("stft", n_fft, hop_length, win_length)
    w = _window("stft", window, win, n_fft, x)
    frames = x.unfold(-1, n_fft, hop) * w  # (B, T, n_fft)
    norm = "ortho" if normalized else "backward"
    spec = (fft.rfft if onesided else fft.fft)(frames, dim=-1, norm=norm)  # (B, T, F)
    spec = spec.transpose(-1, -2)  # (B, F, T)
    return spec if input.ndim == 2 else spec.squeeze(0)


@tensor_method("istft")
def istft(input: Tensor, n_fft: int, hop_length: int | None = None,  # noqa: A002
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of stft by windowed overlap-add (PyTorch's torch.istft): (F, T) or
    (B, F, T) complex -> (L) or (B, L), real unless return_complex."""
    from tgrad import fft
    from tgrad.nn import functional as F
    from tgrad.ops.creation import arange, zeros
    require_tensor("istft", input)
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    # PyTorch's prefix of istft's errors: the call with its sizes and arguments
    call = _istft_call(input, n_fft, hop, win, window, center, normalized, onesided, length,
                       return_complex)
    if input.numel() == 0:
        raise RuntimeError(f"{call} : input tensor cannot be empty.")
    if input.ndim not in (2, 3):  # PyTorch counts view_as_real's last dim: ndim + 1
        raise RuntimeError(f"{call} : expected a tensor with 3 or 4 dimensions, but got "
                           f"{input.ndim + 1} (counting the real and "
                           f"imaginary parts as a dimension, as PyTorch does: the complex "
                           f"input must be (F, T) or (B, F, T), this one is {input.ndim}-D)")
    fft_size = input.shape[-2]
    onesided = fft_size != n_fft if onesided is None else onesided
    want = n_fft // 2 + 1 if onesided else n_fft
    if fft_size != want:
        raise RuntimeError(f"{call} : expected the frequency dimension (3rd to the last) of "
                           f"the input tensor to match n_fft{' / 2 + 1' if onesided else ''} "
                           f"when onesided={bool(onesided)}, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(f"{call} : expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{call} : expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{call} : Invalid window shape. window has to be 1D and length of "
                           f"`win_length`")
    if return_complex and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    w = _window("istft", window, win, n_fft, spec)
    norm = "ortho" if normalized else "backward"
    spec = spec.transpose(-1, -2)  # (B, T, F)
    if return_complex:
        frames = fft.ifft(spec, dim=-1, norm=norm)
    else:
        if w.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = fft.irfft(spec[..., :n_fft // 2 + 1], n=n_fft, dim=-1, norm=norm)
    frames = frames * w  # (B, T, n_fft)
    batch, n_frames = frames.shape[0], frames.shape[1]
    total = n_fft + hop * (n_frames - 1)
    # position of frame t's sample k in the output: t hop + k
    pos = (arange(n_frames, device=w.device).unsqueeze(1) * hop
           + arange(n_fft, device=w.device)).reshape(-1)
    y = zeros(batch, total, dtype=frames.dtype, device=w.device).index_add(
        -1, pos, frames.reshape(batch, -1))
    # the envelope sum_t w^2 (not |w|^2: frames are w * x, so a complex w inverts by w^2,
    # as PyTorch's window.pow(2)); complex for a complex window
    env = zeros(total, dtype=w.dtype, device=w.device).index_add(
        0, pos, (w * w).expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = total - n_fft // 2
    else:
        end = total
    end = min(end, total)
    env = env[start:end]
    if not env.numel():  # PyTorch's min() of the empty envelope fails here
        raise RuntimeError(f"{call} : no output samples are left (samples {start} to {end} "
                           f"of the {total} overlap-added ones; PyTorch fails here with "
                           f"'min(): Expected reduction dim to be specified for "
                           f"input.numel() == 0'): pass a length > 0, more frames or "
                           f"center=False")
    least = float(env.abs().min())
    if least < 1e-11:
        raise RuntimeError(f"{call} window overlap add min: 1 (the overlap-added squared "
                           f"window's minimum {least:.3g} < 1e-11: it vanishes somewhere in "
                           f"the output, e.g. a periodic Hann window with center=False); use "
                           f"another window, a smaller hop_length or center=True")
    y = y[:, start:end] / env
    if length is not None and y.shape[-1] < length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = F.pad(y, (0, length - y.shape[-1]))
    return y if input.ndim == 3 else y.squeeze(0)
