"""The docs cannot rot: every ```python block of docs/*.md and README.md runs (the blocks of
one file in order, in one namespace), docs/api.md matches the code, and the README keeps
the two set-up commands."""

import importlib.util
import re
from pathlib import Path

import pytest

import tgrad

ROOT = Path(__file__).resolve().parent.parent
# Pages whose blocks need TRITON_INTERPRET=1 before Triton is imported run in a subprocess
# (tests/test_triton_custom_op_doc.py) instead of here.
SUBPROCESS_DOCS = {"triton_op.md"}
DOC_FILES = sorted(p for p in (ROOT / "docs").glob("*.md")
                   if p.name not in SUBPROCESS_DOCS) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line number, code) of every ```python block."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


@pytest.fixture
def clean_state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files a doc writes land in a temporary directory
    dtype, device = tgrad.get_default_dtype(), tgrad.get_default_device()
    yield
    tgrad.set_default_dtype(dtype)
    tgrad.set_default_device(device)
    tgrad.set_grad_enabled(True)


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_code_blocks_run(path, clean_state, capsys):
    blocks = python_blocks(path)
    namespace = {"__name__": f"docs_{path.stem}"}
    for line, code in blocks:
        # compile with the real line numbers so a failure points into the .md file
        exec(compile("\n" * (line - 1) + code, str(path), "exec"), namespace)


def test_collector_finds_the_blocks():
    counts = {p.name: len(python_blocks(p)) for p in DOC_FILES}
    for name in ("index.md", "autograd.md", "nn.md", "backends.md", "README.md"):
        assert counts[name] >= 1, name
    assert counts["autograd.md"] >= 8


def test_api_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    assert (ROOT / "docs" / "api.md").read_text() == gen_api.generate(), \
        "docs/api.md is out of date: run python docs/gen_api.py"


def test_api_reference_lists_every_public_name():
    text = (ROOT / "docs" / "api.md").read_text()
    for mod in (tgrad, tgrad.autograd, tgrad.nn, tgrad.optim):
        for name in mod.__all__:
            assert f"`{mod.__name__}.{name}" in text, f"{mod.__name__}.{name}"


def test_readme_keeps_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    commands = [b.strip() for b in re.findall(r"^```\n(.*?)^```", text, re.S | re.M)]
    assert commands == ['pip install -e . && python -m tgrad demo',
                        'pip install -e ".[test]" && pytest']
