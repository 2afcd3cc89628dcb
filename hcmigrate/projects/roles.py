"""A file's role in its project (issue 34): distribution code, tests, or docs.

Only distribution code ships, so only it raises the project's floors or declares its runtime
dependencies; tests, docs, examples, notebooks, scripts and benchmarks are reported (what they
need) but never raise a distribution's floor.

- tests: a file in a folder named like a test folder (`tests`, `test`, `testing`), or named
  `test_*.py`, `*_test.py`, `conftest.py`;
- code: a file inside a package the project ships: the packages its metadata lists where it
  lists them literally (setuptools `packages`, poetry `packages`, hatch's wheel `packages`), else
  the top-level packages (folders with `__init__.py`) at the root or under `src/`, and the
  modules setup.py's `py_modules` names. A project that ships no package it can find (a folder
  of scripts with a requirements file) ships all its Python files but tests and docs;
- docs: everything else: notebooks always, docs, examples, scripts, benchmarks.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from pathlib import Path

from hcmigrate.projects.ownership import Project, read_metadata

CODE, TESTS, DOCS = "code", "tests", "docs"
TEST_FOLDERS = frozenset({"tests", "test", "testing", "unittests", "unit_tests"})
DOC_FOLDERS = frozenset(
    {
        "docs",
        "doc",
        "examples",
        "example",
        "notebooks",
        "notebook",
        "tutorials",
        "tutorial",
        "benchmarks",
        "benchmark",
        "bench",
        "scripts",
        "demo",
        "demos",
    }
)
_NOT_SHIPPED_MODULES = frozenset(
    {"setup.py", "conftest.py", "noxfile.py", "tasks.py", "fabfile.py"}
)


def role_of(project: Project, path: Path) -> str:
    """CODE, TESTS or DOCS for `path` (a file of `project`)."""
    path = Path(path).resolve()
    try:
        parts = path.relative_to(project.root).parts
    except ValueError:
        return DOCS
    name = parts[-1]
    folders = [p.lower() for p in parts[:-1]]
    if (
        any(f in TEST_FOLDERS for f in folders)
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    ):
        return TESTS
    if name.endswith(".ipynb"):
        return DOCS
    shipped = project.fact("shipped", _shipped)
    if shipped is None:  # (nothing found to ship: the project's Python files are its code)
        return DOCS if any(f in DOC_FOLDERS for f in folders) else CODE
    packages, modules = shipped
    if len(parts) == 1:
        return CODE if name in modules else DOCS
    for base in ((), ("src",)):
        n = len(base)
        if tuple(parts[:n]) == base and len(parts) > n + 1 and parts[n] in packages:
            return CODE
    return DOCS


def _shipped(project: Project) -> tuple[frozenset, frozenset] | None:
    """(top-level package names, top-level module file names) the project ships; None where
    it ships none that can be found."""
    root = project.root
    listed = _listed_packages(project.metadata_root)
    packages = set(listed) if listed else set()
    if not packages:
        for base in (root, root / "src"):
            if not base.is_dir():
                continue
            for child in base.iterdir():
                if (
                    child.is_dir()
                    and (child / "__init__.py").is_file()
                    and child.name.lower() not in TEST_FOLDERS | DOC_FOLDERS
                    and not child.name.startswith(".")
                ):
                    packages.add(child.name)
    modules = {f"{m}.py" for m in _py_modules(project.metadata_root)}
    if not packages and not modules:
        return None
    return frozenset(packages), frozenset(modules - _NOT_SHIPPED_MODULES)


def _listed_packages(root: Path) -> list[str]:
    """Top-level package names the metadata lists literally (none: found from the tree)."""
    out: list[str] = []
    text = read_metadata(root / "pyproject.toml")
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = {}
        tool = data.get("tool") or {}
        setuptools = (tool.get("setuptools") or {}) if isinstance(tool, dict) else {}
        if isinstance(setuptools.get("packages"), list):
            out += [p for p in setuptools["packages"] if isinstance(p, str)]
        poetry = (tool.get("poetry") or {}) if isinstance(tool, dict) else {}
        for entry in poetry.get("packages") or []:
            if isinstance(entry, dict) and isinstance(entry.get("include"), str):
                out.append(entry["include"])
        wheel = (
            (((tool.get("hatch") or {}).get("build") or {}).get("targets") or {}).get("wheel")
            if isinstance(tool, dict)
            else None
        )
        if isinstance(wheel, dict) and isinstance(wheel.get("packages"), list):
            out += [Path(p).name for p in wheel["packages"] if isinstance(p, str)]
    cfg = read_metadata(root / "setup.cfg")
    if cfg is not None:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(cfg)
            value = parser.get("options", "packages", fallback="")
        except configparser.Error:
            value = ""
        if value.strip() and not value.strip().startswith("find"):
            out += [v.strip() for v in re.split(r"[\s,]+", value) if v.strip()]
    setup_py = read_metadata(root / "setup.py")
    if setup_py is not None:
        value = _setup_keyword(setup_py, "packages")
        if isinstance(value, list):
            out += [p for p in value if isinstance(p, str)]
    return sorted({p.split(".")[0] for p in out if p})


def _py_modules(root: Path) -> list[str]:
    setup_py = read_metadata(root / "setup.py")
    value = _setup_keyword(setup_py, "py_modules") if setup_py is not None else None
    return [m for m in value if isinstance(m, str)] if isinstance(value, list) else []


def _setup_keyword(text: str, keyword: str):
    """A literal value of `setup(keyword=...)`; None where it is not literal or absent."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == keyword:
            try:
                return ast.literal_eval(node.value)
            except (ValueError, SyntaxError):
                return None
    return None
