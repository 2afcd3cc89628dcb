"""Which project owns a file (issue 34).

A file's project is the nearest folder above it with packaging metadata: a pyproject.toml that
declares a build or a project (`[build-system]`, `[project]`, `[tool.poetry]`, ...), a
setup.py, or a setup.cfg with `[metadata]` or `[options]`. Only where none is found, the
nearest folder with requirements files (a folder of scripts) owns it. Between the two: a
folder whose metadata lives in a subfolder beside its code (METADATA_FOLDERS: praxis's
praxis/pip_package holds its setup.py, the requirements.in that setup.py reads and the
requirements.txt its CI installs): the folder above that package is the project, its metadata
read and edited in the subfolder. The search never goes
above a VCS root (a folder with `.git`, `.hg`, `.svn` or `.jj`), and it never looks at the
working folder or a `--config` file's folder unless the file is inside them: a run on
`../target` edits nothing of the folder it was started from.
"""

from __future__ import annotations

import configparser
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.files import read_regular

PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
REQUIREMENT_PATTERNS = ("requirements*.txt", "requirements*.in")
VCS_MARKERS = (".git", ".hg", ".svn", ".jj")
# pyproject tables that make a folder a project (a pyproject.toml that only configures tools,
# `[tool.black]`, is not packaging metadata)
_PACKAGING_TABLES = ("build-system", "project")
_PACKAGING_TOOLS = ("poetry", "flit", "pdm", "hatch", "setuptools", "uv")
_MAX_READ = 4 * 1024 * 1024
# Subfolders that hold a package's metadata beside its code, where no folder above the code has
# any: Google's pip_package layout (praxis, paxml: setup.py, requirements.in, the pip-compiled
# requirements.txt that CI installs, and the script that copies setup.py to the root to build).
METADATA_FOLDERS = ("pip_package",)


def read_metadata(path: Path) -> str | None:
    """The text of a metadata file (a regular UTF-8 file); None where there is none, or it
    cannot be read (every reader of the layer)."""
    try:
        # (a byte-order mark is no part of the text: the write puts it back, files.SourceFile)
        return read_regular(path).decode("utf-8-sig") if path.is_file() else None
    except Exception:  # (unreadable: not a declaration this run can edit)
        return None


@dataclass(eq=False)
class Project:
    """A project of the run: its root folder, how it was found, and (lazily) its facts."""

    root: Path  # resolved
    packaging: bool  # found by packaging metadata (False: by requirements files only)
    vcs_root: Path | None = None
    # the folder of its metadata where that is not the root (praxis/pip_package)
    metadata: Path | None = None
    _facts: dict = field(default_factory=dict, repr=False)

    def __hash__(self) -> int:
        return hash(self.root)

    def __eq__(self, other) -> bool:
        return isinstance(other, Project) and other.root == self.root

    @property
    def metadata_root(self) -> Path:
        """Where its packaging metadata and requirements files are read and edited."""
        return self.metadata or self.root

    def contains(self, path: Path) -> bool:
        try:
            Path(path).resolve().relative_to(self.root)
        except ValueError:
            return False
        return True

    def fact(self, key: str, compute):
        """A fact of the project, computed once (the layer's cache)."""
        if key not in self._facts:
            self._facts[key] = compute(self)
        return self._facts[key]


def is_packaging_file(path: Path) -> bool:
    """Does `path` declare a project (not only configure tools)? An unreadable or invalid file
    counts: it is the project's, and its problems are reported where it is edited."""
    if not path.is_file():
        return False
    if path.name == "setup.py":
        return True
    try:
        data = path.read_bytes()[:_MAX_READ].decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return True
    if path.name == "pyproject.toml":
        try:
            table = tomllib.loads(data)
        except (tomllib.TOMLDecodeError, RecursionError):
            return True
        tool = table.get("tool") if isinstance(table.get("tool"), dict) else {}
        return any(k in table for k in _PACKAGING_TABLES) or any(
            k in tool for k in _PACKAGING_TOOLS
        )
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data)
    except configparser.Error:
        return True
    return parser.has_section("metadata") or parser.has_section("options")


def _has_requirements(folder: Path) -> bool:
    return any(p.is_file() for pattern in REQUIREMENT_PATTERNS for p in folder.glob(pattern))


def _is_vcs_root(folder: Path) -> bool:
    return any((folder / m).exists() for m in VCS_MARKERS)


class ProjectIndex:
    """The projects of a run: `owner(path)` for each file, each folder looked at once."""

    def __init__(self) -> None:
        self._by_folder: dict[Path, Project | None] = {}
        self._projects: dict[Path, Project] = {}

    def owner(self, path: Path | str) -> Project | None:
        """The project that owns `path` (a file or a folder); None where no folder up to the
        VCS root has metadata."""
        path = Path(path).absolute()
        folder = path if path.is_dir() else path.parent
        folder = folder.resolve()
        if folder not in self._by_folder:
            self._by_folder[folder] = self._find(folder)
        return self._by_folder[folder]

    def _find(self, folder: Path) -> Project | None:
        chain = []
        for candidate in (folder, *folder.parents):
            chain.append(candidate)
            if _is_vcs_root(candidate):
                break
        vcs = chain[-1] if _is_vcs_root(chain[-1]) else None
        for candidate in chain:
            if any(is_packaging_file(candidate / n) for n in PACKAGING_FILES):
                return self._project(candidate, True, vcs)
        for i, candidate in enumerate(chain):
            for name in METADATA_FOLDERS:
                beside = candidate / name
                if any(is_packaging_file(beside / n) for n in PACKAGING_FILES):
                    # (in a package, the project is the folder above it, where the build runs
                    # setup.py and finds the package)
                    package = (candidate / "__init__.py").is_file() and i + 1 < len(chain)
                    return self._project(chain[i + 1] if package else candidate, True, vcs, beside)
        for candidate in chain:
            if _has_requirements(candidate):
                return self._project(candidate, False, vcs)
        return None

    def _project(
        self, root: Path, packaging: bool, vcs: Path | None, metadata: Path | None = None
    ) -> Project:
        if root not in self._projects:
            self._projects[root] = Project(root, packaging, vcs, metadata)
        return self._projects[root]

    def group(self, paths) -> dict[Project, list[Path]]:
        """`paths` by the project that owns each (files no project owns are left out), in the
        order the projects are first met."""
        out: dict[Project, list[Path]] = {}
        for path in paths:
            project = self.owner(path)
            if project is not None:
                out.setdefault(project, []).append(Path(path))
        return out
