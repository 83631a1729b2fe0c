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


class Jobs:
    """Named subprocesses; ``JOBS`` below is the session's (tests may make their own)."""

    def __init__(self) -> None:
        self._procs: dict[str, tuple[subprocess.Popen, object, object]] = {}
        self._waiters: dict[str, tuple[threading.Thread, list]] = {}  # start_after's
        self._stopping = threading.Event()

    def start(self, name: str, args: list[str], **popen_kwargs) -> None:
        """Start ``args`` as job ``name`` unless a job of that name exists."""
        if name in self._procs:
            return
        out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        proc = subprocess.Popen(args, stdout=out, stderr=err, text=True, **popen_kwargs)
        self._procs[name] = (proc, out, err)

    def start_after(self, name: str, deps: list[str], make) -> None:
        """Start job ``name`` once the (started) jobs ``deps`` have exited, with the
        (args, popen_kwargs) that ``make()`` returns then; a thread waits, and an error on
        the way is raised by ``result(name)``."""
        if name in self._procs or name in self._waiters:
            return
        errors: list = []
        waiting_for = [self._procs[d][0] for d in deps]

        def wait_then_start():
            try:
                for proc in waiting_for:
                    proc.wait()
                if not self._stopping.is_set():
                    args, popen_kwargs = make()
                    self.start(name, args, **popen_kwargs)
            except Exception as e:  # noqa: BLE001 - handed to result()
                errors.append(e)

        thread = threading.Thread(target=wait_then_start, name=f"job {name}", daemon=True)
        self._waiters[name] = (thread, errors)
        thread.start()

    def result(self, name: str) -> subprocess.CompletedProcess:
        """Wait for job ``name``: its exit status and whole output (read again each call)."""
        if name in self._waiters:
            thread, errors = self._waiters[name]
            thread.join()
            if errors:
                raise errors[0]
        proc, out, err = self._procs[name]
        proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())

    def stop_all(self) -> None:
        """Kill the jobs still running, and start no waiting one (the session ended)."""
        self._stopping.set()
        self._kill_running()
        for thread, _ in self._waiters.values():
            thread.join()
        self._kill_running()   # one a waiter started while the first kills ran

    def _kill_running(self) -> None:
        for proc, _, _ in list(self._procs.values()):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


JOBS = Jobs()
start, start_after, result, stop_all = JOBS.start, JOBS.start_after, JOBS.result, JOBS.stop_all
