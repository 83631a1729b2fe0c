"""Anomaly detection: record each node's forward traceback and check backward outputs for NaN."""

from __future__ import annotations

import warnings

from tgrad.autograd.grad_mode import SHARED, _DecoratorContextManager


class detect_anomaly(_DecoratorContextManager):
    """Context manager / decorator enabling anomaly detection.

    While enabled, every node remembers the traceback of the forward call that created it;
    a backward that raises, or returns NaN ("Function 'XBackward0' returned nan values in
    its 0th output."), warns with that traceback.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = SHARED.anomaly
        self.prev_nan = SHARED.anomaly_check_nan
        SHARED.anomaly = True
        SHARED.anomaly_check_nan = self.check_nan

    def __exit__(self, *exc) -> None:
        SHARED.anomaly = self.prev
        SHARED.anomaly_check_nan = self.prev_nan

    def clone(self):
        obj = type(self).__new__(type(self))
        obj.check_nan = self.check_nan
        return obj


class set_detect_anomaly(_DecoratorContextManager):
    """Turn anomaly detection on or off now; as a context manager, restore it on exit."""

    _bare_decorator = False

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = SHARED.anomaly
        self.prev_nan = SHARED.anomaly_check_nan
        self.mode = bool(mode)
        self.check_nan = check_nan
        SHARED.anomaly = self.mode
        SHARED.anomaly_check_nan = check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        SHARED.anomaly = self.prev
        SHARED.anomaly_check_nan = self.prev_nan

    def __call__(self, func):
        # Used as a decorator: undo the switch made in __init__; apply it per call instead.
        SHARED.anomaly = self.prev
        SHARED.anomaly_check_nan = self.prev_nan
        return super().__call__(func)

    def clone(self):
        return _AnomalyScope(self.mode, self.check_nan)


class _AnomalyScope:
    """Sets anomaly mode on enter and restores it on exit (one decorated call)."""

    def __init__(self, mode: bool, check_nan: bool) -> None:
        self.mode, self.check_nan = mode, check_nan

    def __enter__(self) -> None:
        self.prev, self.prev_nan = SHARED.anomaly, SHARED.anomaly_check_nan
        SHARED.anomaly, SHARED.anomaly_check_nan = self.mode, self.check_nan

    def __exit__(self, *exc) -> None:
        SHARED.anomaly, SHARED.anomaly_check_nan = self.prev, self.prev_nan


def is_anomaly_enabled() -> bool:
    return SHARED.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return SHARED.anomaly_check_nan
