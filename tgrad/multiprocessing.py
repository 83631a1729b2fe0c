"""``tgrad.multiprocessing``: PyTorch's ``torch.multiprocessing`` for scripts that import it.
Python's ``multiprocessing`` names (``Process``, ``Queue``, ``Pool``, ``get_context``,
``set_start_method``...) are re-exported unchanged, and ``spawn`` / ``start_processes`` run
``fn(i, *args)`` in ``nprocs`` processes with PyTorch's semantics (join; an exception in a
child re-raised in the parent as ``ProcessRaisedException`` with its traceback; a child that
dies as ``ProcessExitedException``). tgrad tensors sent between processes are pickled
copies: tgrad has no shared-memory tensor transport, so the sharing strategies are
accepted names only."""

from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing import *  # noqa: F401,F403  (PyTorch re-exports them too)
from typing import Any, Callable

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException", "set_sharing_strategy", "get_sharing_strategy",
           "get_all_sharing_strategies"] + list(multiprocessing.__all__)

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepted for PyTorch's names (tgrad pickles tensors; nothing is shared)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}; one of "
                             f"{sorted(_STRATEGIES)}")
    _strategy = new_strategy


class ProcessRaisedException(Exception):  # noqa: N818  (PyTorch's name)
    """A child process raised: ``msg`` holds its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, error_pid


class ProcessExitedException(Exception):  # noqa: N818  (PyTorch's name)
    """A child process ended with a non-zero exit code (or by a signal)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid, self.exit_code = msg, error_index, error_pid, \
            exit_code


def _wrap(fn: Callable, i: int, args: tuple, errors: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1) from None


class ProcessContext:
    """The processes ``start_processes(join=False)`` started; ``join()`` waits for them
    (True when all ended) and raises the first failure."""

    def __init__(self, processes: list, errors: Any) -> None:
        self.processes, self.error_queue = processes, errors

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        for p in self.processes:
            p.join(timeout)
        if not self.error_queue.empty():
            i, tb = self.error_queue.get()
            for p in self.processes:
                if p.is_alive():
                    p.terminate()
            raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following "
                                         f"error:\n{tb}", i, self.processes[i].pid)
        for i, p in enumerate(self.processes):
            if p.exitcode not in (0, None):
                raise ProcessExitedException(f"process {i} terminated with exit code "
                                             f"{p.exitcode}", i, p.pid, p.exitcode)
        return all(not p.is_alive() for p in self.processes)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs), each in a process of ``start_method``;
    with ``join`` wait and return None (re-raising a child's failure), else return the
    ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn"):
    """``start_processes`` with the ``spawn`` start method (PyTorch's)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
