"""Slow subprocess checks, started as soon as pytest has collected the tests that read them,
so that they run beside the rest of the suite: pytest runs tests on one core, and CI's
machine has two (the interpreter runners and the Triton 3.6 compiles took about half of
CI's time, with the second core idle while pytest itself ran).

A test module with such checks defines ``start_background()``, which starts its jobs with
``start(name, args, ...)``, or ``start_after(name, deps, make)`` for one that needs other
jobs' files; tests/conftest.py calls it once, after collection (not for ``--collect-only``).
The tests read a job with ``result(name)``, calling the module's ``start_background()``
first, so a job also runs when nothing started it early (the call is idempotent). Each job's
output goes to temporary files, so a job never blocks on a full pipe while nobody reads it.
Jobs still running when the session ends are killed."""

from __future__ import annotations

import subprocess
import tempfile
import threading

_JOBS: dict[str, tuple[subprocess.Popen, object, object]] = {}
_WAITERS: dict[str, tuple[threading.Thread, list]] = {}  # start_after's, and their errors
_STOPPING = threading.Event()


def start(name: str, args: list[str], **popen_kwargs) -> None:
    """Start ``args`` as job ``name`` unless a job of that name exists."""
    if name in _JOBS:
        return
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(args, stdout=out, stderr=err, text=True, **popen_kwargs)
    _JOBS[name] = (proc, out, err)


def start_after(name: str, deps: list[str], make) -> None:
    """Start job ``name`` once the jobs ``deps`` have exited, with the (args, popen_kwargs)
    that ``make()`` returns then (a thread waits; an error of ``make`` is raised by
    ``result(name)``)."""
    if name in _JOBS or name in _WAITERS:
        return
    errors: list = []

    def wait_then_start():
        for d in deps:
            _JOBS[d][0].wait()
        if _STOPPING.is_set():
            return
        try:
            args, popen_kwargs = make()
            start(name, args, **popen_kwargs)
        except Exception as e:  # noqa: BLE001 - handed to result()
            errors.append(e)

    thread = threading.Thread(target=wait_then_start, name=f"background {name}", daemon=True)
    _WAITERS[name] = (thread, errors)
    thread.start()


def result(name: str) -> subprocess.CompletedProcess:
    """Wait for job ``name``; its exit status and whole output (read again on each call)."""
    if name in _WAITERS:
        thread, errors = _WAITERS[name]
        thread.join()
        if errors:
            raise errors[0]
    proc, out, err = _JOBS[name]
    proc.wait()
    out.seek(0)
    err.seek(0)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())


def stop_all() -> None:
    """Kill the jobs still running (the session ended without reading them)."""
    _STOPPING.set()
    for proc, _, _ in list(_JOBS.values()):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for thread, _ in _WAITERS.values():
        thread.join()
    for proc, _, _ in _JOBS.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
