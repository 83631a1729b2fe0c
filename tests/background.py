"""Slow subprocess checks, started as soon as pytest has collected the tests that read them,
so that they run beside the rest of the suite: pytest runs tests on one core, and CI's
machine has two (the interpreter runners and the Triton 3.6 compiles took about half of
CI's time, with the second core idle while pytest itself ran).

A test module with such checks defines ``start_background()``, which starts its jobs with
``start(name, args, ...)``; tests/conftest.py calls it once, after collection (not for
``--collect-only``). The tests read a job with ``result(name)``, calling the module's
``start_background()`` first, so a job also runs when nothing started it early (the call
is idempotent). Each job's output goes to temporary files, so a job never blocks on a full
pipe while nobody reads it. Jobs still running when the session ends are killed."""

from __future__ import annotations

import subprocess
import tempfile

_JOBS: dict[str, tuple[subprocess.Popen, object, object]] = {}


def start(name: str, args: list[str], **popen_kwargs) -> None:
    """Start ``args`` as job ``name`` unless a job of that name exists."""
    if name in _JOBS:
        return
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(args, stdout=out, stderr=err, text=True, **popen_kwargs)
    _JOBS[name] = (proc, out, err)


def result(name: str) -> subprocess.CompletedProcess:
    """Wait for job ``name``; its exit status and whole output (read again on each call)."""
    proc, out, err = _JOBS[name]
    proc.wait()
    out.seek(0)
    err.seek(0)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())


def stop_all() -> None:
    """Kill the jobs still running (the session ended without reading them)."""
    for proc, _, _ in _JOBS.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
