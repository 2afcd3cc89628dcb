"""A small project, as a user has it: written to a folder, migrated by the real `hcmigrate`
command, then run under current JAX; the same program run unmigrated under real jax 0.4.30
(the legacy reference) must print the same."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.cli_helpers import REPO, program


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def migrate(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`hcmigrate --no-cache ARGS .` in `root`; a second run must change nothing."""
    res = program("--no-cache", "-j1", *args, ".", cwd=root, timeout=600)
    again = program("--no-cache", "-j1", "--check", *args, ".", cwd=root, timeout=600)
    assert b"would rewrite" not in again.stdout + again.stderr, again.stdout + again.stderr
    return res


def run_script(python, root: Path, *args: str, timeout: int = 600) -> str:
    """`python ARGS` (a script, or `-m module`) from `root`, as a user runs it: its stdout; a
    failure fails the test with its output."""
    res = subprocess.run(
        [str(python), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def current_python() -> str:
    return sys.executable


__all__ = ["REPO", "current_python", "migrate", "run_script", "write_tree"]
