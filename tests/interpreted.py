"""Run a script on the ``cuda`` device emulated by Triton's interpreter (TRITON_INTERPRET=1,
a fresh process, since the mode is read at import) and read the JSON object it prints
last."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpreter_env(**extra: str) -> dict:
    """This environment with TRITON_INTERPRET=1 and the repository first on the path
    (``extra`` set on top), for a subprocess on the emulated cuda device."""
    return dict(os.environ, TRITON_INTERPRET="1",
                PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def run_json(script: str, timeout: float = 600) -> dict:
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_json_file(script: str, folder, name: str, timeout: float = 300) -> dict:
    """``script`` written to ``folder/name`` (triton.jit reads a kernel's source from its
    file) and run like ``run_json``, with the repository on the path."""
    path = os.path.join(str(folder), name)
    with open(path, "w") as f:
        f.write(script)
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True,
                          env=interpreter_env(), timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
