"""The progress bar: on stderr when it is a terminal (a real pseudo-terminal here), never
when it is not (CI logs, pipes)."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", "hcmigrate", "--check", "-j", "1", "many"]


def _tree(tmp_path: Path, files: int = 30) -> Path:
    (tmp_path / "many").mkdir()
    for i in range(files):
        shutil.copy(REPO / "fixtures" / "t1_progress_bar.in.py", tmp_path / "many" / f"m{i}.py")
    return tmp_path


def _run_in_terminal(cwd: Path) -> str:
    """Run COMMAND with stdout and stderr on a pseudo-terminal; return what it wrote."""
    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        COMMAND,
        cwd=cwd,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
        close_fds=True,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the terminal closes when the process exits
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal(tmp_path):
    out = _run_in_terminal(_tree(tmp_path))
    assert "30/30" in out and "\u2501" in out  # rich's bar, counting files
    assert "30 files scanned, 30 would be rewritten" in out


def test_no_progress_bar_when_not_a_terminal(tmp_path):
    proc = subprocess.run(COMMAND, cwd=_tree(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "\u2501" not in proc.stderr + proc.stdout and "30/30" not in proc.stderr + proc.stdout
    assert "30 files scanned, 30 would be rewritten" in proc.stdout + proc.stderr
