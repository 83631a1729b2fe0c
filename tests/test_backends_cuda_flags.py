"""tgrad.backends.cuda.matmul.allow_tf32 (PyTorch's torch.backends.cuda.matmul.allow_tf32):
default False, settable, stored in tgrad.kernels.matmul.FLAGS (read by every matmul launch),
and lazy: importing tgrad or tgrad.backends.cuda imports no Triton."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import tgrad.backends.cuda as bcuda


def test_import_is_lazy():
    code = textwrap.dedent("""
        import sys
        import tgrad, tgrad.backends.cuda
        assert "triton" not in sys.modules and "tgrad.kernels.matmul" not in sys.modules
        assert "torch" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.skipif(not bcuda.is_built(), reason="Triton not installed (no GPU backend)")
def test_allow_tf32_reaches_the_matmul_flags():
    from tgrad.kernels.matmul import FLAGS
    assert bcuda.matmul.allow_tf32 is False
    try:
        bcuda.matmul.allow_tf32 = True
        assert FLAGS.allow_tf32 is True and bcuda.matmul.allow_tf32 is True
        assert "allow_tf32=True" in repr(bcuda.matmul)
    finally:
        bcuda.matmul.allow_tf32 = False
    assert FLAGS.allow_tf32 is False


def test_bad_flag_names_and_values():
    with pytest.raises(AttributeError, match="Unknown attribute allow_fp8"):
        bcuda.matmul.allow_fp8 = True
    with pytest.raises(AttributeError, match="Unknown attribute nope"):
        bcuda.matmul.nope  # noqa: B018
    with pytest.raises(TypeError, match="must be a bool, got int"):
        bcuda.matmul.allow_tf32 = 1
