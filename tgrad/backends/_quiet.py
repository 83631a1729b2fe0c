"""Quiet floating-point errors for the NumPy backend and its helpers.

PyTorch never warns on inf/nan, so every op runs under np.errstate(all="ignore"). That
context manager costs ~1.6 µs per call; NumPy implements it by setting one context
variable, so ops set that variable directly (~0.4 µs: thread- and asyncio-safe, and the
caller's settings come back on exit exactly as with np.errstate). Other NumPy versions fall
back to np.errstate. Its own module so the backend's helper modules can import it at their
top (tgrad.backends.numpy imports them while it loads).
"""

from __future__ import annotations

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_VAR
    from numpy._core.umath import _make_extobj
except ImportError:  # pragma: no cover - older/newer NumPy layouts
    _ERR_VAR = None

if _ERR_VAR is not None:
    _err_get, _err_set, _err_reset = _ERR_VAR.get, _ERR_VAR.set, _ERR_VAR.reset
    # [(caller's extobj, the same with all errors ignored)]: one tuple, swapped atomically.
    _QUIET_CACHE = [(None, None)]

    def quiet_enter():
        """Ignore floating-point errors until ``quiet_exit(token)``; returns the token."""
        cur = _err_get()
        pair = _QUIET_CACHE[0]
        if pair[0] is not cur:
            # Made while the caller's state is active: keeps their bufsize and callback.
            pair = _QUIET_CACHE[0] = (cur, _make_extobj(all="ignore"))
        return _err_set(pair[1])

    quiet_exit = _err_reset
else:  # pragma: no cover
    def quiet_enter():
        ctx = np.errstate(all="ignore")
        ctx.__enter__()
        return ctx

    def quiet_exit(token) -> None:
        token.__exit__(None, None, None)


class quiet:  # noqa: N801 - used like np.errstate
    """The same as ``np.errstate(all="ignore")`` as a context manager, cheaper."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = quiet_enter()

    def __exit__(self, *exc) -> None:
        quiet_exit(self.token)
