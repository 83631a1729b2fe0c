"""``Timer``: torch.utils.benchmark.Timer over the standard library's ``timeit.Timer``
(which compiles ``setup`` and ``stmt`` into one function, runs ``setup`` once per timing and
turns the garbage collector off while it times), with torch's warm-up, thread count and
block-size rules, returning ``Measurement`` objects."""

from __future__ import annotations

import enum
import textwrap
import timeit as _timeit
from collections.abc import Callable
from typing import Any, NoReturn

from tgrad.utils.benchmark.utils import common

__all__ = ["Timer", "timer", "Language"]

_MAX_BLOCK = 2147483647  # torch stops growing the block here (its C++ int limit)


def timer() -> float:
    """``timeit.default_timer()`` (perf_counter), after ``tgrad.cuda.synchronize()`` when a
    real GPU backs tgrad.cuda, so a timing includes the kernels queued in it (torch
    synchronizes its accelerator the same way). No synchronization without cuda or under
    Triton's interpreter (``TRITON_INTERPRET=1``), where work is already synchronous."""
    import tgrad.cuda as cuda
    if cuda.is_available() and not cuda.is_interpreted():
        cuda.synchronize()
    return _timeit.default_timer()


class Language(enum.Enum):
    """Timer's language: PYTHON (CPP is torch's, not supported here)."""

    PYTHON = 0
    CPP = 1


def _clean(code: str) -> str:
    """Dedented, without the leading newline of a block string and trailing whitespace."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


def _describe(code: Any, what: str) -> tuple[Any, str]:
    """(what timeit runs, the string TaskSpec records) for a str or zero-arg callable."""
    if isinstance(code, str):
        code = _clean(code)
        return code, code
    if callable(code):
        name = getattr(code, "__qualname__", None) or type(code).__name__
        return code, f"{name}()"
    raise ValueError(f"`{what}` must be a str or a zero-argument callable, got "
                     f"{type(code).__name__}")


class Timer:
    """Times ``stmt`` (after ``setup``) with torch.utils.benchmark.Timer's arguments and
    methods.

    ``stmt`` and ``setup`` are code strings run with ``globals`` (copied; ``tgrad`` is added
    when absent, as torch adds ``torch``) or, unlike torch, zero-argument callables (the
    TaskSpec then records ``name()``). ``timer`` defaults to :func:`timer`, which
    synchronizes tgrad's GPU. ``num_threads`` is set with ``tgrad.set_num_threads`` while
    timing and restored after. ``label``, ``sub_label``, ``description`` and ``env`` only
    name the Measurement (Compare groups by them). Python only: ``language="cpp"`` raises
    NotImplementedError.
    """

    def __init__(self, stmt: str | Callable[[], Any] = "pass",
                 setup: str | Callable[[], Any] = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer,
                 globals: dict[str, Any] | None = None,  # noqa: A002 (torch's name)
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("tgrad.utils.benchmark.Timer times Python only: C++ "
                                      "snippets (language='cpp') are not supported")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             "this code can simply be moved to `setup`.")
        stmt, stmt_text = _describe(stmt, "stmt")
        setup, setup_text = _describe(setup, "setup")
        import tgrad
        self._globals = dict(globals or {})  # a copy: exec adds __builtins__ to it
        self._globals.setdefault("tgrad", tgrad)
        self._language = Language.PYTHON
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer,
                                    globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt_text, setup=setup_text, global_setup=global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    # -------------------------------------------------------------- one timing
    def _timeit(self, number: int) -> float:
        """Seconds for ``number`` runs (setup first), at least 1 ns (no division by 0)."""
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number: int, times: list[float]) -> common.Measurement:
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """``timeit.Timer.timeit``: one block of ``number`` runs, after a warm-up block of
        ``max(number // 100, 2)``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return self._measurement(number, [self._timeit(number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not provided, as in torch: use blocked_autorange."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        """Not provided, as in torch: use blocked_autorange."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    # -------------------------------------------------------------- autoranging
    def _block_size(self, min_run_time: float) -> int:
        """Runs per block: grown tenfold from 1 until the clock's overhead (median of five
        empty timings) is at most 1e-4 of a block lasting at least min_run_time / 1000, or
        one block outlasts min_run_time. Doubles as the warm-up."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = sorted(self._timeit(0) for _ in range(5))[2]
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    return number
                if taken > min_run_time or number * 10 > _MAX_BLOCK:
                    return number
                number *= 10

    def _loop(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
              max_run_time: float | None, callback) -> list[float]:
        """Time blocks until their total reaches min_run_time and ``stop(times)`` holds, or
        the total passes max_run_time."""
        times: list[float] = []
        total, can_stop = 0.0, False
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                t = self._timeit(number)
                times.append(t)
                total += t
                if callback:
                    callback(number, t)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def blocked_autorange(self, callback: Callable[[int, float], NoReturn] | None = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Blocks of a size chosen so the clock's overhead is negligible (see _block_size),
        timed until they add up to ``min_run_time`` seconds; ``callback(number, seconds)``
        after each block."""
        number = self._block_size(min_run_time)
        return self._measurement(
            number, self._loop(number, lambda _: True, min_run_time, None, callback))

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], NoReturn] | None = None,
                           ) -> common.Measurement:
        """As blocked_autorange (block size chosen for 0.05 s), but keeps timing blocks until
        there are more than 3, they add up to ``min_run_time`` and IQR / median <
        ``threshold``, or they add up to more than ``max_run_time``."""
        number = self._block_size(0.05)

        def confident(times: list[float]) -> bool:
            return len(times) > 3 and self._measurement(number, times).meets_confidence(
                threshold=threshold)

        return self._measurement(
            number, self._loop(number, confident, min_run_time, max_run_time, callback))

    def collect_callgrind(self, *args, **kwargs) -> NoReturn:
        """Not available in tgrad (torch runs the statement under Valgrind)."""
        raise NotImplementedError("tgrad.utils.benchmark has no Callgrind support: "
                                  "collect_callgrind is not available")
