"""Running the real `hcmigrate` command: in-process (click's runner) from a given folder, or as
the real program in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from hcmigrate.cli import cli

REPO = Path(__file__).resolve().parent.parent


def default_signals() -> None:
    """A `preexec_fn` giving the program under test the default disposition of the signals a
    user stops a run with. A suite started in the background (`&`, `nohup`) inherits SIGINT or
    SIGHUP ignored, and Python keeps an inherited SIG_IGN, as it should (nohup's promise)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def run(args, cwd, input=None):
    """`hcmigrate -j1 ARGS` with `cwd` as the working directory; returns click's Result."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, ["-j1", *args], input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


def program(*args, cwd, input=None, timeout=120, prefix=(), module="hcmigrate", **popen):
    """The real program (this checkout's code, `python -m MODULE ARGS`) in a subprocess; bytes
    in and out. A hang fails the test (`timeout`) instead of stalling the suite, and a
    traceback in its output fails it too."""
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", module, *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        **popen,
    )
    output = proc.stdout + proc.stderr
    assert b"Traceback" not in output, output.decode(errors="replace")
    return proc


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    kids = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            kids.append(int(stat_file.parent.name))
    return kids


def site_packages(python) -> str:
    """Where the interpreter `python` (of a virtualenv) installs packages (its purelib)."""
    return subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
