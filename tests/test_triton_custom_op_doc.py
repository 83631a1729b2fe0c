"""docs/triton_op.md ("write your own Triton op") cannot rot: its ```python blocks run in
order, in one namespace, in a subprocess with TRITON_INTERPRET=1 (Triton reads the variable
when a kernel is decorated and tgrad.cuda when it first picks a runtime, so it cannot be
switched on inside the test process). tests/test_docs.py runs every other page in-process
and leaves this one to this test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "triton_op.md"
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)  # as tests/test_docs.py

RUNNER = r"""
import re, sys
path = sys.argv[1]
text = open(path).read()
ns = {"__name__": "docs_triton_op"}
for m in re.finditer(sys.argv[2], text, re.S | re.M):
    line = text.count("\n", 0, m.start()) + 2
    exec(compile("\n" * (line - 1) + m.group(1), path, "exec"), ns)  # real .md line numbers
print("BLOCKS RUN:", len(re.findall(sys.argv[2], text, re.S | re.M)))
"""


def test_triton_op_page_runs_in_the_interpreter(tmp_path):
    n_blocks = len(BLOCK.findall(PAGE.read_text()))
    assert n_blocks >= 5
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(PAGE), BLOCK.pattern],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"BLOCKS RUN: {n_blocks}" in proc.stdout
    assert "FusedSiLUBackward cuda:0" in proc.stdout
    assert "Jacobian mismatch for output 0 with respect to input 0" in proc.stdout
    assert "CUDA total" in proc.stdout
    assert (tmp_path / "fused_silu_trace.json").exists()
