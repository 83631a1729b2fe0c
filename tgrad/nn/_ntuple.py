"""``_ntuple(value, n, cast)``: an int-or-sequence argument (kernel_size, stride, padding,
output_size, output_ratio...) as a tuple, PyTorch's ``nn.modules.utils._ntuple`` rule
shared by the functional ops and the modules."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def _ntuple(value, n: int, cast: Callable | None = None) -> tuple:
    """``value``'s entries when it is iterable (a tuple, list, array...; not a str), else
    ``value`` repeated n times; ``cast`` (e.g. int) applied to each entry. The length of
    an iterable ``value`` is the caller's to check (a 1-entry one stays 1 entry)."""
    if isinstance(value, Iterable) and not isinstance(value, str):
        vals = tuple(value)
    else:
        vals = (value,) * n
    return vals if cast is None else tuple(cast(v) for v in vals)
