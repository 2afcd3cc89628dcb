"""The base revision as the project builds it: Python files its build generates into a package
folder, which git ignores and so `git archive` leaves out (setuptools_scm's `pkg/_version.py`,
a versioneer or build-time config module), carried over from the working tree into the exported
original, so that the original imports as the working tree's code does.

Only ignored `.py` files inside a folder that is a package in the exported revision (it has an
`__init__.py` there) and missing from it are carried: never a virtualenv, a build folder,
caches or data."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hcmigrate.verify.workspace import SKIP_DIRS


def ignored_sources(repo: Path) -> list[str]:
    """The ignored `.py` files of the work tree (paths relative to it); folders git ignores
    as a whole (a venv, `build/`) are not walked."""
    done = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        return []
    names = [n for n in done.stdout.decode(errors="replace").split("\0") if n]
    return [n for n in names if n.endswith(".py") and not n.endswith("/")]


def carry_generated(repo: Path, exported: Path) -> list[str]:
    """Copy into `exported` (the revision's files) the ignored generated sources of the work
    tree `repo` that it lacks; the relative paths carried."""
    carried = []
    for rel in ignored_sources(repo):
        parts = Path(rel).parts
        if any(p in SKIP_DIRS or p.endswith(".egg-info") for p in parts):
            continue
        target = exported / rel
        if not (target.parent / "__init__.py").is_file():
            continue  # (only into a package of the revision)
        source = repo / rel
        if not source.is_file() or source.is_symlink():
            continue
        if target.is_file() and target.read_bytes() == source.read_bytes():
            carried.append(rel)
            continue
        if target.exists() and not _was_carried(exported, rel):
            continue  # (the revision has its own file there)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
        _mark_carried(exported, rel)
        carried.append(rel)
    return sorted(carried)


_MARK = ".hcmigrate-carried"


def _was_carried(exported: Path, rel: str) -> bool:
    try:
        return rel in (exported / _MARK).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False


def _mark_carried(exported: Path, rel: str) -> None:
    if not _was_carried(exported, rel):
        with open(exported / _MARK, "a", encoding="utf-8") as f:
            f.write(rel + "\n")
