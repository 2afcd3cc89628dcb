"""Which files a run looks at: folder walking, skipped folders, .gitignore, --exclude/--include.

Rules (documented in docs/cli.md):
* Folders are walked; ``.git``, virtualenvs (any folder with a ``pyvenv.cfg``), build, cache and
  tool folders (see SKIP_DIRS) are skipped. Symlinked folders are not followed (no loops) and
  symlinked files met while walking are skipped (they are never written through).
* In a git work tree, ``.gitignore`` files (at every level) and ``.git/info/exclude`` apply.
* ``--exclude`` patterns (gitignore syntax) apply to walked files and folders; to explicitly named
  files only with ``--force-exclude``. ``--include`` patterns pick which walked files count
  (default ``*.py`` and ``*.ipynb``). Explicitly named files are always processed otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs",
        ".venv", "venv", ".env", "env", "virtualenv", ".virtualenv", "site-packages", "dist-packages",
        "build", "dist", "_build", "buck-out", ".eggs",
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".cache",
        ".ipynb_checkpoints", ".pytype", ".direnv",
        "node_modules", ".tox", ".nox",
    }
)
DEFAULT_INCLUDE = ("*.py", "*.ipynb")


@dataclass(frozen=True)
class Target:
    path: Path  # as given / found (relative to cwd when given relative)
    notebook: bool
    explicit: bool = False  # named on the command line

    @property
    def display(self) -> str:
        return str(self.path)


@dataclass
class Selection:
    targets: list[Target] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason), for -v
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): exit 2


def _spec(patterns) -> pathspec.PathSpec | None:
    patterns = [p for p in patterns if p and p.strip()]
    return pathspec.PathSpec.from_lines("gitignore", patterns) if patterns else None


def find_git_root(start: Path) -> Path | None:
    cur = start.resolve()
    for d in (cur, *cur.parents):
        if (d / ".git").exists():
            return d
    return None


class _GitIgnore:
    """.gitignore files at every level of a git work tree, read lazily per folder."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[Path, pathspec.PathSpec | None] = {}
        info = root / ".git" / "info" / "exclude"
        self.info = _spec(info.read_text(errors="replace").splitlines()) if info.is_file() else None

    def _dir_spec(self, d: Path) -> pathspec.PathSpec | None:
        if d not in self._cache:
            gi = d / ".gitignore"
            try:
                self._cache[d] = _spec(gi.read_text(errors="replace").splitlines()) if gi.is_file() else None
            except OSError:
                self._cache[d] = None
        return self._cache[d]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """`path` absolute (resolved parents), inside root."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return False
        suffix = "/" if is_dir else ""
        if self.info is not None and self.info.match_file(str(rel) + suffix):
            return True
        # Each .gitignore from the root down to the file's folder, matched relative to its folder.
        d = self.root
        parts = rel.parts
        for i in range(len(parts)):
            spec = self._dir_spec(d)
            if spec is not None and spec.match_file("/".join(parts[i:]) + suffix):
                return True
            d = d / parts[i]
        return False


class Selector:
    def __init__(
        self,
        root: Path,
        exclude=(),
        include=None,
        force_exclude: bool = False,
        respect_gitignore: bool = True,
    ):
        self.root = root.resolve()
        self.exclude = _spec(exclude)
        self.include = _spec(include or DEFAULT_INCLUDE)
        self.force_exclude = force_exclude
        git_root = find_git_root(self.root) if respect_gitignore else None
        self.gitignore = _GitIgnore(git_root) if git_root else None
        self._git_roots: dict[Path, _GitIgnore | None] = {}

    def _rel(self, abspath: Path) -> str | None:
        try:
            return str(abspath.relative_to(self.root))
        except ValueError:
            return None

    def excluded(self, abspath: Path, is_dir: bool) -> bool:
        if self.exclude is None:
            return False
        rel = self._rel(abspath)
        name = abspath.name + ("/" if is_dir else "")
        if rel is not None and self.exclude.match_file(rel + ("/" if is_dir else "")):
            return True
        return self.exclude.match_file(name)

    def _gitignore_for(self, abspath: Path) -> _GitIgnore | None:
        if self.gitignore is not None and abspath.is_relative_to(self.gitignore.root):
            return self.gitignore
        return None

    def select(self, paths: list[str]) -> Selection:
        sel = Selection()
        seen: set[Path] = set()
        for raw in paths:
            p = Path(raw)
            absp = Path(os.path.abspath(p))
            if p.is_symlink() and not p.exists():
                sel.errors.append((raw, "broken symlink or symlink loop"))
                continue
            if not os.path.lexists(p):
                sel.errors.append((raw, "no such file or directory"))
                continue
            if p.is_dir():
                if self.force_exclude and self.excluded(absp, True):
                    sel.skipped.append((raw, "excluded"))
                    continue
                self._walk(p, sel, seen)
                continue
            if self.force_exclude:
                if self.excluded(absp, False):
                    sel.skipped.append((raw, "excluded (--force-exclude)"))
                    continue
                gi = self._gitignore_for(absp)
                if gi is not None and gi.ignored(absp, False):
                    sel.skipped.append((raw, "ignored by .gitignore (--force-exclude)"))
                    continue
            key = Path(os.path.realpath(p))
            if key in seen:
                continue
            seen.add(key)
            sel.targets.append(Target(p, p.suffix == ".ipynb", explicit=True))
        return sel

    def _walk(self, top: Path, sel: Selection, seen: set[Path]) -> None:
        stack = [top]
        while stack:
            d = stack.pop()
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except PermissionError:
                sel.errors.append((str(d), "permission denied (folder is not readable)"))
                continue
            except OSError as exc:
                sel.errors.append((str(d), f"cannot list folder: {exc.strerror}"))
                continue
            subdirs = []
            for e in entries:
                path = Path(e.path)
                absp = Path(os.path.abspath(path))
                if e.is_symlink():
                    if e.name.endswith((".py", ".ipynb")) or os.path.isdir(path):
                        sel.skipped.append((e.path, "symlink (not followed, never written through)"))
                    continue
                try:
                    is_dir = e.is_dir()
                except OSError:
                    continue
                if is_dir:
                    if e.name in SKIP_DIRS or e.name.endswith(".egg-info") or (path / "pyvenv.cfg").exists():
                        continue
                    if self.excluded(absp, True):
                        sel.skipped.append((e.path, "excluded"))
                        continue
                    gi = self._gitignore_for(absp)
                    if gi is not None and gi.ignored(absp, True):
                        continue
                    subdirs.append(path)
                    continue
                if not self.include.match_file(e.name):
                    continue
                if e.name.endswith(".hcmigrate-tmp"):
                    continue
                if self.excluded(absp, False):
                    sel.skipped.append((e.path, "excluded"))
                    continue
                gi = self._gitignore_for(absp)
                if gi is not None and gi.ignored(absp, False):
                    continue
                key = absp
                if key in seen:
                    continue
                seen.add(key)
                sel.targets.append(Target(path, e.name.endswith(".ipynb")))
            stack.extend(reversed(subdirs))
