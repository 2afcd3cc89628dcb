"""Which files a run looks at: folder walking, skipped folders, .gitignore, --exclude/--include.

Rules (documented in docs/cli.md):
* Folders are walked; ``.git``, virtualenvs (any folder with a ``pyvenv.cfg``), build, cache and
  tool folders (see SKIP_DIRS) are skipped. Symlinked folders are not followed (no loops) and
  symlinked files met while walking are skipped (they are never written through).
* In a git work tree, ``.gitignore`` files (at every level) and ``.git/info/exclude`` apply.
* ``--exclude`` patterns (gitignore syntax) apply to walked files and folders; to explicitly named
  files only with ``--force-exclude``. ``--include`` patterns pick which walked files count
  (default ``*.py`` and ``*.ipynb``). Explicitly named files are always processed otherwise.

The walk is on the hot path of a whole-tree run (tens of thousands of files): it works on path
strings from ``os.scandir`` (no Path object or stat call per file), and pathspec (slow to import,
slow to match) is only imported and consulted where a pattern, a ``.gitignore`` or an
``info/exclude`` actually exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "_darcs",
        ".venv",
        "venv",
        ".env",
        "env",
        "virtualenv",
        ".virtualenv",
        "site-packages",
        "dist-packages",
        "build",
        "dist",
        "_build",
        "buck-out",
        ".eggs",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hcmigrate_cache",
        ".hypothesis",
        ".cache",
        ".ipynb_checkpoints",
        ".pytype",
        ".direnv",
        "node_modules",
        ".tox",
        ".nox",
    }
)
# gitignore's `*.py` matched against a bare file name is exactly a suffix test.
_DEFAULT_SUFFIXES = (".py", ".ipynb")
_IGNORE_FILE_LIMIT = 4 * 1024 * 1024
_TEMP_SUFFIX = ".hcmigrate-tmp"  # (hcmigrate.files.TEMP_SUFFIX)
_SEP = os.sep


@dataclass(frozen=True, slots=True)
class Target:
    display: (
        str  # the path as given / found (relative to cwd when given relative), pathlib-normalised
    )
    notebook: bool
    explicit: bool = False  # named on the command line

    @property
    def path(self) -> Path:
        return Path(self.display)


@dataclass
class Selection:
    targets: list[Target] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason), for -v
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): exit 2
    temp_files: list[str] = field(default_factory=list)  # hcmigrate's temporary files met


def _spec(patterns):
    """A gitignore-style PathSpec, or None when there is no pattern (pathspec not imported).
    Raises ValueError naming the first pattern that is not a valid one."""
    patterns = [p for p in patterns if p and p.strip()]
    if not patterns:
        return None
    import pathspec

    try:
        return pathspec.PathSpec.from_lines("gitignore", patterns)
    except Exception:  # (pathspec raises ValueError, or re.error for `[z-a]`)
        pass
    for pattern in patterns:
        try:
            pathspec.PathSpec.from_lines("gitignore", [pattern])
        except Exception as exc:
            raise ValueError(f"invalid pattern {pattern!r} ({exc})") from None
    raise ValueError("invalid patterns")  # pragma: no cover (each alone is valid)


def check_patterns(patterns, where: str) -> None:
    """Raise ConfigError when one of `patterns` (--exclude, [tool.hcmigrate] include...) is not
    a valid gitignore-style pattern."""
    from hcmigrate.errors import ConfigError

    try:
        _spec(patterns)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _lenient_spec(lines):
    """A .gitignore's spec: as git does, a line that is no valid pattern is ignored."""
    try:
        return _spec(lines)
    except ValueError:
        good = []
        for line in lines:
            try:
                _spec([line])
            except ValueError:
                continue
            good.append(line)
        return _spec(good)


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` (both absolute, normalised), "." for root itself, else None."""
    if path == root:
        return "."
    prefix = root if root.endswith(_SEP) else root + _SEP
    return path[len(prefix) :] if path.startswith(prefix) else None


def find_git_root(start: Path) -> Path | None:
    cur = start.resolve()
    for d in (cur, *cur.parents):
        if (d / ".git").exists():
            return d
    return None


# The .gitignore specs that apply inside one folder: (spec, prefix) pairs, where an entry named
# `name` in the folder is matched as `prefix + name` (its path relative to the spec's folder).
Chain = tuple[tuple[object, str], ...]


class _GitIgnore:
    """.gitignore files at every level of a git work tree (each matched relative to its own folder;
    a match at any level ignores the path), plus ``.git/info/exclude``, read once per folder."""

    def __init__(self, root: Path):
        self.root = str(root)
        self.problems: list[tuple[str, str]] = []  # (path, reason): files that could not be read
        self.info = self._read_spec(str(root / ".git" / "info" / "exclude"))
        self._chains: dict[str, Chain] = {}

    def _read_spec(self, path: str):
        """The spec of an ignore file; None when there is none. One that is no regular file
        (a FIFO, a device) or is too large is not read, and reported."""
        from hcmigrate.errors import FileError
        from hcmigrate.files import read_regular

        try:
            data = read_regular(path, limit=_IGNORE_FILE_LIMIT)
        except FileError as exc:
            if exc.message.startswith(("not a regular file", "file too large")):
                self.problems.append((path, f"{exc.message} (git ignore rules not applied)"))
            return None
        return _lenient_spec(data.decode("utf-8", "replace").splitlines())

    def _own_spec(self, folder: str):
        return self._read_spec(os.path.join(folder, ".gitignore"))

    def chain(self, folder: str) -> Chain:
        """Specs for entries of `folder` (absolute, normalised); () outside the work tree."""
        if folder in self._chains:
            return self._chains[folder]
        rel = _under(folder, self.root)
        if rel is None:
            chain: Chain = ()
        elif rel == ".":
            chain = tuple((s, "") for s in (self.info, self._own_spec(folder)) if s is not None)
        else:
            parent, name = os.path.split(folder)
            chain = tuple((s, f"{p}{name}/") for s, p in self.chain(parent))
            own = self._own_spec(folder)
            if own is not None:
                chain += ((own, ""),)
        self._chains[folder] = chain
        return chain

    def ignored(self, path: str, is_dir: bool) -> bool:
        """`path` absolute and normalised; False outside the work tree."""
        chain = self.chain(os.path.dirname(path))
        return bool(chain) and _matches(chain, os.path.basename(path) + ("/" if is_dir else ""))


def _matches(chain: Chain, name: str) -> bool:
    return any(spec.match_file(prefix + name) for spec, prefix in chain)


class Selector:
    def __init__(
        self,
        root: Path,
        exclude=(),
        include=None,
        force_exclude: bool = False,
        respect_gitignore: bool = True,
    ):
        self.root = str(root.resolve())
        self.exclude = _spec(exclude)
        # None: the default *.py / *.ipynb, tested as a suffix.
        self.include = _spec(include) if include else None
        self.force_exclude = force_exclude
        git_root = find_git_root(Path(self.root)) if respect_gitignore else None
        self.gitignore = _GitIgnore(git_root) if git_root else None

    def excluded(self, abspath: str, is_dir: bool) -> bool:
        """`abspath` absolute, normalised (not resolved): matched relative to the root, and by name."""
        if self.exclude is None:
            return False
        suffix = "/" if is_dir else ""
        rel = _under(abspath, self.root)
        if rel is not None and self.exclude.match_file(rel + suffix):
            return True
        return self.exclude.match_file(os.path.basename(abspath) + suffix)

    def _included(self, name: str) -> bool:
        if self.include is None:
            return name.endswith(_DEFAULT_SUFFIXES)
        return self.include.match_file(name)

    def _chain(self, absdir: str) -> Chain:
        return self.gitignore.chain(absdir) if self.gitignore is not None else ()

    def select(self, paths: list[str]) -> Selection:
        sel = Selection()
        # Only overlapping arguments can name a file twice (the walk follows no symlink).
        seen: set[str] | None = set() if len(paths) > 1 else None
        for raw in paths:
            p = Path(raw)
            absp = os.path.abspath(raw)
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
                self._walk(str(p), sel, seen)
                continue
            if self.force_exclude:
                if self.excluded(absp, False):
                    sel.skipped.append((raw, "excluded (--force-exclude)"))
                    continue
                if self.gitignore is not None and self.gitignore.ignored(absp, False):
                    sel.skipped.append((raw, "ignored by .gitignore (--force-exclude)"))
                    continue
            if seen is not None:
                key = os.path.realpath(p)
                if key in seen:
                    continue
                seen.add(key)
            sel.targets.append(Target(str(p), p.suffix == ".ipynb", explicit=True))
        if self.gitignore is not None:
            sel.errors += self.gitignore.problems
        return sel

    def _walk(self, top: str, sel: Selection, seen: set[str] | None) -> None:
        """Depth first, entries in name order, a folder's files before its subfolders.

        `top` is pathlib-normalised; so are the folders pushed, so `folder + sep + name` is the
        normalised path of an entry (what Target.display shows), except under "." where entries
        are shown without "./" (as pathlib does) while messages show os.scandir's "./name".
        """
        stack = [top]
        targets = sel.targets
        while stack:
            d = stack.pop()
            try:
                with os.scandir(d) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except PermissionError:
                sel.errors.append((d, "permission denied (folder is not readable)"))
                continue
            except OSError as exc:
                sel.errors.append((d, f"cannot list folder: {exc.strerror}"))
                continue
            shown = "" if d == "." else d if d.endswith(_SEP) else d + _SEP
            absd = os.path.abspath(d)
            absprefix = absd if absd.endswith(_SEP) else absd + _SEP
            chain = self._chain(absd)
            subdirs = []
            for e in entries:
                name = e.name
                if e.is_symlink():
                    if name.endswith(_DEFAULT_SUFFIXES) or os.path.isdir(e.path):
                        sel.skipped.append(
                            (e.path, "symlink (not followed, never written through)")
                        )
                    continue
                try:
                    is_dir = e.is_dir()
                except OSError:
                    continue
                if is_dir:
                    if (
                        name in SKIP_DIRS
                        or name.endswith(".egg-info")
                        or os.path.exists(e.path + _SEP + "pyvenv.cfg")
                    ):
                        continue
                    if self.exclude is not None and self.excluded(absprefix + name, True):
                        sel.skipped.append((e.path, "excluded"))
                        continue
                    if chain and _matches(chain, name + "/"):
                        continue
                    subdirs.append(shown + name)
                    continue
                if name.endswith(_TEMP_SUFFIX):
                    sel.temp_files.append(shown + name)
                    continue
                if not self._included(name):
                    continue
                if self.exclude is not None and self.excluded(absprefix + name, False):
                    sel.skipped.append((e.path, "excluded"))
                    continue
                if chain and _matches(chain, name):
                    continue
                if seen is not None:
                    key = absprefix + name
                    if key in seen:
                        continue
                    seen.add(key)
                targets.append(Target(shown + name, name.endswith(".ipynb")))
            stack.extend(reversed(subdirs))
