"""The files a verify run works on: the scratch folder it writes to, the entry point of an
original folder, and the copy of the original the codemod migrates into the candidate
(`SKIP_DIRS`: the tool and build folders left out of copies).

What verify is given is looked at before it is read (check_input): an original or a candidate
that is not a regular file or a folder (/dev/zero, a FIFO) is refused, and the copy into the
scratch folder is bounded (MAX_COPY_BYTES in all; special files inside a folder are left out).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from hcmigrate.config import strategy_for
from hcmigrate.files import kind_of
from hcmigrate.verify.launch import forget_bytecode
from hcmigrate.verify.outcome import CannotRun


SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".venv",
    "venv",
    "env",
    ".tox",
    ".nox",
    "build",
    "dist",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "node_modules",
    ".ipynb_checkpoints",
}


def project_files(folder: Path, suffixes: tuple[str, ...] | None = None) -> Iterator[Path]:
    """The files of a project folder in a stable order, less the tool and build folders
    (SKIP_DIRS, `*.egg-info`); with `suffixes`, only the names ending with one of them."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if suffixes is None or name.endswith(suffixes):
                yield Path(root) / name


# The most the migrated copy of an original may hold (docs/verify.md): a project folder is far
# smaller; more means something that is not a project (a home folder, a data set).
MAX_COPY_BYTES = 1024 * 1024 * 1024


def check_input(path: Path, role: str = "") -> None:
    """CannotRun unless `path` (ORIGINAL, or `role` "--candidate ") is a regular file or a
    folder: a device or a FIFO would never end, or block, when read or copied."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CannotRun(f"{role}{path}: no such file or folder") from None
    except OSError as exc:
        raise CannotRun(f"{role}{path}: cannot read: {exc.strerror or exc}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise CannotRun(f"{role}{path}: not a regular file or folder ({kind_of(mode)}); not read")


class _BoundedCopy:
    """shutil's copy function for the copy of an original: regular files only (a FIFO or a
    symlink to a device inside a folder is left out), at most MAX_COPY_BYTES in all."""

    def __init__(self, limit: int = MAX_COPY_BYTES):
        self.left = limit

    def __call__(self, src, dst):
        try:
            st = os.stat(src)
        except OSError:
            return dst  # (a broken symlink: nothing to copy)
        if not stat.S_ISREG(st.st_mode):
            return dst
        self.left -= st.st_size
        if self.left < 0:
            raise CannotRun(
                f"the original holds more than {MAX_COPY_BYTES // (1024 * 1024)} MiB to copy "
                "into the scratch folder; give a project folder (or --candidate)"
            )
        return shutil.copy2(src, dst)


def find_entry(folder: Path, entry_file: str | None = None) -> Path:
    if entry_file:
        p = folder / entry_file
        if not p.is_file():
            raise CannotRun(f"entry file {entry_file} not found in {folder}")
        return p
    for name in ("__main__.py", "main.py"):
        if (folder / name).is_file():
            return folder / name
    guarded = [
        p
        for p in sorted(folder.glob("*.py"))
        if p.is_file()  # (not a FIFO: it would block)
        and "__name__" in (t := p.read_text(encoding="utf-8", errors="replace"))
        and "__main__" in t
    ]
    if len(guarded) == 1:
        return guarded[0]
    if not guarded:
        raise CannotRun(
            f'{folder}: no entry point (no __main__.py, main.py or file with `if __name__ == "__main__":`); '
            "pass --entry-file"
        )
    raise CannotRun(
        f"{folder}: several possible entry points ({', '.join(p.name for p in guarded)}); pass --entry-file"
    )


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(
        src,
        dst,
        ignore=lambda d, names: [n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")],
        copy_function=_BoundedCopy(),
    )


def migrate_copy(
    original: Path, workdir: Path, options=None, per_file_strategy=()
) -> tuple[Path, list[str]]:
    """Migrate a temporary copy with the codemod (`options`: the project's [tool.hcmigrate],
    e.g. strategy = "compat", and its per-file-strategy table, patterns relative to the
    folder migrated); .py files and notebooks. Returns (copy, notes)."""
    try:
        from hcmigrate.api import MigrationError, Options, migrate_source
        from hcmigrate.notebook import NotebookError, migrate_notebook
    except ImportError as e:  # pragma: no cover - only while the codemod is missing
        raise CannotRun(f"the codemod is not available ({e}); pass --candidate MIGRATED") from None
    options = options or Options()
    check_input(original)
    dest = workdir / "candidate"
    if original.is_dir():
        _copy_tree(original, dest / original.name)
        root = dest / original.name
        files = sorted([*root.rglob("*.py"), *root.rglob("*.ipynb")])
    else:
        root = dest
        root.mkdir(parents=True, exist_ok=True)
        _BoundedCopy()(original, root / original.name)
        files = [root / original.name]
    notes = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        shown = f.relative_to(root.parent) if original.is_dir() else f.name
        if per_file_strategy and original.is_dir():
            rel = f.relative_to(root).as_posix()
            strategy = strategy_for(rel, options.strategy, per_file_strategy)
            file_options = dataclasses.replace(options, strategy=strategy)
        else:
            file_options = options
        try:
            if f.suffix == ".ipynb":
                result = migrate_notebook(text, file_options, filename=str(f))
            else:
                result = migrate_source(text, file_options, filename=str(f))
        except NotebookError as e:
            raise CannotRun(f"the codemod could not migrate {shown}: {e.message}") from None
        except MigrationError as e:
            raise CannotRun(
                f"the codemod could not migrate {shown}: {e.message} (line {e.line})"
            ) from None
        if result.changed:
            f.write_text(result.code, encoding="utf-8")
            notes.append(f"migrated {shown}")
        for d in result.diagnostics:
            if d.level.needs_human:
                notes.append(f"codemod left for a human: {d.format(str(shown))}")
    return (root if original.is_dir() else root / original.name), notes


@contextlib.contextmanager
def scratch_folder(keep: bool = False) -> Iterator[Path]:
    """A private scratch folder for one verify run (traces, migrated copy), removed afterwards
    whatever happens (unless `keep`, for --keep: the report's candidate paths stay valid):
    every caller goes through here so no run leaves a folder in the temp dir."""
    path = Path(tempfile.mkdtemp(prefix="hcmigrate-verify-"))
    try:
        yield path
    finally:
        forget_bytecode(path)  # (the bytecode of the migrated copy, cached by the pytest sides)
        if not keep:
            shutil.rmtree(path, ignore_errors=True)
