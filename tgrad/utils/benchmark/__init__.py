"""``tgrad.utils.benchmark``: PyTorch's ``torch.utils.benchmark`` core, torch-free.

``Timer`` (``timeit``, ``blocked_autorange``, ``adaptive_autorange``) returns a
``Measurement`` (median / mean / IQR / significant figures, torch's repr and warnings), and
``Compare`` prints many of them as tables grouped by label, with rows by sub_label and columns
by description. The default timer synchronizes tgrad's GPU before reading the clock.

Differences from PyTorch: Python only (``language="cpp"`` and ``collect_callgrind`` raise
NotImplementedError, no Fuzzer); ``stmt`` / ``setup`` may also be zero-argument callables;
``tgrad`` (not ``torch``) is added to ``globals``; ``Compare`` also renders measurements
whose ``description`` or ``env`` is None (torch raises TypeError).
"""

from tgrad.utils.benchmark.utils.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from tgrad.utils.benchmark.utils.compare import Colorize, Compare
from tgrad.utils.benchmark.utils.timer import Language, Timer, timer

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize",
           "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]
