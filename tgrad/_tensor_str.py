"""How a Tensor prints: PyTorch's layout, worked out on one host copy of the values.

The rules (PyTorch's, with its defaults):

- Floating tensors print with ``precision`` (4) digits after the point. One format serves
  the whole tensor, chosen from its nonzero finite values: "int mode" (``1.``, ``-3.``)
  when all of them are whole numbers; scientific (``1.0000e-08``) when max/min of their
  magnitudes exceeds 1000, or the max exceeds 1e8, or the min is below 1e-4; fixed point
  (``1.5000``) otherwise. nan, inf and zeros never steer the choice.
- Every element is right-aligned to one common width (the widest formatted nonzero finite
  value, or the widest value of an integer or bool tensor).
- A tensor of more than ``threshold`` (1000) elements is summarized: each dimension longer
  than ``2 * edgeitems`` shows its first and last ``edgeitems`` (3) entries around
  ``...``; the common width then comes from the shown values only.
- A row wraps to ``linewidth`` (80) characters; inner brackets are indented one space per
  level and consecutive rows of a k-d tensor are separated by k - 1 line breaks.
- A complex tensor formats its real and imaginary parts each as a floating tensor of its
  own (format and width from that part's values) and prints ``re+imj`` (``1.0000+2.0000j``,
  ``nan+infj``, ``1.-0.j``); elements per line count both widths and the ``j``.
- The suffixes (``device=``, ``size=``, ``dtype=``, ``grad_fn=``/``requires_grad=``) go on
  the last line, or on a line of their own once that line would pass ``linewidth``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from tgrad import dtypes


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print (PyTorch's ``torch.set_printoptions``).

    ``precision``: digits after the point (4); ``threshold``: element count above which a
    tensor is summarized (1000); ``edgeitems``: entries kept at each end of a summarized
    dimension (3); ``linewidth``: characters per line before wrapping (80); ``profile``:
    ``'default'``, ``'short'`` (precision 2, edgeitems 2) or ``'full'`` (never summarize),
    applied first so the other arguments override it; ``sci_mode``: force (True) or forbid
    (False) scientific notation, None lets each tensor choose. As in PyTorch, a call that
    omits ``sci_mode`` resets it to None."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; use 'default', "
                             f"'short' or 'full'")
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


class _Formatter:
    """Turns one element into text of the tensor's common width."""

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not floating:
            for v in values.ravel().tolist():
                self.width = max(self.width, len(str(v)))
            return
        vals = values.ravel()
        vals = vals[np.isfinite(vals) & (vals != 0)]
        if vals.size == 0:  # only zeros, nan and inf: nothing to choose a format from
            return
        mags = np.abs(vals)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = bool(PRINT_OPTS.sci_mode)
        p = PRINT_OPTS.precision
        if self.sci_mode:
            spec, extra = f".{p}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "."
        else:
            spec, extra = f".{p}f", 0
        for v in vals.tolist():
            self.width = max(self.width, len(format(v, spec)) + extra)

    def __call__(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f".{PRINT_OPTS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."  # marks a floating tensor (nan and inf need no mark)
        else:
            text = format(value, f".{PRINT_OPTS.precision}f")
        return text.rjust(self.width)


def _shown(arr: np.ndarray) -> np.ndarray:
    """The entries a summarized print shows (the first and last edgeitems of each long
    dimension), which alone set the common width."""
    e = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if e <= 0:  # only "..." shows
        return arr if arr.ndim == 1 else arr[(slice(0, 0),) * arr.ndim]
    index = [np.r_[0:e, n - e:n] if n > 2 * e else np.arange(n) for n in arr.shape]
    return arr[np.ix_(*index)]


class _ComplexFormatter:
    """A complex element as PyTorch prints it: the real part by one formatter, then the
    imaginary part by another with its sign (``+`` added unless it starts with ``-``/``+``)
    and ``j``; the imaginary part's padding is dropped."""

    def __init__(self, values: np.ndarray) -> None:
        self.re = _Formatter(values.real, True)
        self.im = _Formatter(values.imag, True)
        self.width = self.re.width + self.im.width + 1  # + the "j" (per-line count)

    def __call__(self, value: Any) -> str:
        value = complex(value)
        imag = (self.im(value.imag) + "j").lstrip()
        return self.re(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _vector_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    e = PRINT_OPTS.edgeitems
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width + 2)))
    if summarize and not e:
        items = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        items = ([fmt(v) for v in arr[:e].tolist()] + [" ..."]
                 + [fmt(v) for v in arr[-e:].tolist()])
    else:
        items = [fmt(v) for v in arr.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    n, e = arr.shape[0], PRINT_OPTS.edgeitems
    if summarize and n > 2 * e:
        rows = ([_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                + [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        rows = [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int, last: int | None = None) -> str:
    # PyTorch's measure of the last line (two more than its length); kept so that lines
    # break where PyTorch's do (``last``: given after a forced newline, as PyTorch's)
    if last is None:
        last = len(text) - text.rfind("\n") + 1
    parts = [text]
    for s in suffixes:
        if last + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def _values_str(arr: np.ndarray, dtype, indent: int) -> str:
    """The bracketed values of the non-empty host array ``arr`` of tgrad dtype ``dtype``
    (PyTorch's ``_tensor_str``), continuation lines indented by ``indent``."""
    floating = dtype.is_floating_point
    if floating:
        arr = arr.astype(np.float64)  # exact for every float dtype, bfloat16 included
    summarize = arr.size > PRINT_OPTS.threshold
    if dtype.is_complex:
        arr = arr.astype(np.complex128)
        fmt = _ComplexFormatter(_shown(arr) if summarize else arr)
    else:
        fmt = _Formatter(_shown(arr) if summarize else arr, floating)
    return _nested_str(arr, indent, summarize, fmt)


def sparse_repr(t: Any, indices: np.ndarray, values: np.ndarray) -> str:
    """PyTorch's ``repr`` of a sparse COO tensor: ``tensor(indices=tensor(...),`` /
    ``values=tensor(...),`` / ``size=..., nnz=..., [dtype=...,] layout=tgrad.sparse_coo``
    (the first suffix always on a new line, as PyTorch's force_newline)."""
    prefix = "tensor("
    indent = len(prefix)
    parts = []
    for name, arr, dt in (("indices", indices, dtypes.int64), ("values", values, t.dtype)):
        head = f"{name}=tensor("
        body = (_values_str(arr, dt, indent + len(head)) if arr.size
                else f"[], size={tuple(arr.shape)}")
        parts.append(head + body + ")")
    suffixes = [f"size={tuple(t.shape)}", f"nnz={values.shape[0]}"]
    if t.dtype not in (dtypes.get_default_dtype(), dtypes.get_default_complex_dtype(),
                       dtypes.int64, dtypes.bool_):
        suffixes.append(f"dtype={t.dtype}")
    suffixes.append("layout=tgrad.sparse_coo")
    gf = t._grad_fn
    if gf is not None:
        suffixes.append(f"grad_fn=<{gf.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + (",\n" + " " * indent).join(parts)
    return _add_suffixes(text + ",\n" + " " * indent + suffixes[0], suffixes[1:], indent,
                         last=indent + len(suffixes[0]))


def tensor_repr(t: Any) -> str:
    """PyTorch's ``repr`` of the Tensor ``t``, from one host copy of its values."""
    prefix = "tensor("
    indent = len(prefix)
    arr = np.asarray(t.numpy(force=True))  # the one read-back of a GPU tensor
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default_float = t.dtype in (dtypes.get_default_dtype(), dtypes.get_default_complex_dtype())
    if arr.size == 0:
        # As PyTorch (and NumPy): the shape shows unless it is (0,); no value implies the
        # dtype, so it shows unless it is the default float itself (the default complex
        # dtype shows too: ``tensor([], dtype=tgrad.complex64)``).
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if t.dtype is not dtypes.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        # The printed values imply the default float, int64 and bool.
        if not (default_float or t.dtype in (dtypes.int64, dtypes.bool_)):
            suffixes.append(f"dtype={t.dtype}")
        body = _values_str(arr, t.dtype, indent)
    gf = t._grad_fn
    if gf is not None:
        suffixes.append(f"grad_fn=<{gf.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
