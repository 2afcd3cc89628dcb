"""The project's own style (issue 37): small library-shaped projects (a pyproject with a name,
a package, the project's formatter settings where it keeps them), migrated by the real
command, then checked by the project's own checker with the project's own settings (black,
ruff format, isort): every written file that passed before passes after, and the lines the
rewrite did not change keep their bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import run

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "stylelib"
version = "0.1"
dependencies = ["jax>=0.4.30", "numpy"]
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    files = {"pyproject.toml": PYPROJECT, "src/stylelib/__init__.py": "", **files}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _migrate(root: Path) -> str:
    result = run(["--no-cache", "."], root)
    assert result.exit_code == 0, result.output
    return result.output


def _check(root: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=root, capture_output=True, text=True
    )


# A tap whose rewrite is 95 columns on one line: black lays it out at 88 in three lines
# (no trailing comma), which black at 100 joins again.
TAP_95 = """\
import jax
from jax.experimental import host_callback as hcb


def _log(arg, transforms):
    print("step", arg)


def train_step(params):
    hcb.id_tap(_log, params["w"][:, -1], result=None)
    return params
"""


@pytest.mark.parametrize(
    "where, text",
    [
        (
            ".github/workflows/format.yml",
            "name: format\non: [push]\njobs:\n  fmt:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n      - run: pip install black\n"
            "      - run: black -l 100 --check .\n",
        ),
        (
            ".pre-commit-config.yaml",
            "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.1.0\n    hooks:\n"
            "      - id: black\n        args: [--line-length=100]\n"
            "  - repo: https://github.com/pycqa/flake8\n    rev: 7.0.0\n    hooks:\n"
            "      - id: flake8\n        args: [--max-line-length=120]\n",
        ),
        (
            ".pre-commit-config.yaml",
            "repos:\n- repo: https://github.com/psf/black\n  rev: 24.1.0\n  hooks:\n"
            "  - id: black\n    args:\n    - --line-length\n    - '100'\n",
        ),
        (
            ".github/workflows/lint.yml",
            "jobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n      - uses: psf/black@stable\n"
            "        with:\n          options: --check --verbose -l 100\n",
        ),
    ],
    ids=["workflow-command", "pre-commit-args", "pre-commit-arg-list", "black-action"],
)
def test_the_line_length_stated_only_in_ci_lays_the_new_lines_out(tmp_path, where, text):
    root = _project(tmp_path / "p", {where: text, "src/stylelib/train.py": TAP_95})
    assert _check(root, "black", "-q", "-l", "100", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/train.py").read_text()
    assert "jax.debug.callback(" in written and "hcb" not in written
    checked = _check(root, "black", "-l", "100", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr
    assert max(len(line) for line in written.splitlines()) <= 100
