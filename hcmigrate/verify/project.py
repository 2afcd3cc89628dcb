"""What verify needs to know about the project under test: its layout (`src/`), its
`[tool.hcmigrate]` settings and its own dependencies (for the reference environment)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.config import ConfigError, find_pyproject, load_config, parse_version

# Requirements verify pins or brings itself: never taken from the project.
OWN_REQUIREMENTS = {"jax", "jaxlib", "pytest", "pytest-xdist", "hcmigrate"}
TEST_EXTRAS = ("test", "tests", "testing", "dev")


@dataclass
class Project:
    root: Path | None  # the folder of the project's pyproject.toml
    strategy: str = "native"
    target_jax: tuple[int, ...] | None = None
    config_file: Path | None = None
    dependencies: list[str] = field(default_factory=list)


def find_project(start: Path) -> Project:
    """The project `start` belongs to (nearest pyproject.toml) and its [tool.hcmigrate]."""
    pyproject = find_pyproject(start)
    try:
        config = load_config(start)
    except ConfigError as e:
        raise ValueError(str(e)) from None
    values = config.values
    target = values.get("target-jax")
    project = Project(
        root=pyproject.parent if pyproject else None,
        strategy=values.get("strategy", "native"),
        target_jax=parse_version(target) if target else None,
        config_file=config.path,
    )
    if project.root is not None:
        project.dependencies = project_requirements(project.root)
    return project


def source_paths(folder: Path) -> list[Path]:
    """Import roots inside a package folder: `src/` for a src layout (what an editable install
    or `PYTHONPATH=src` gives a plain run)."""
    src = folder / "src"
    if src.is_dir() and any(
        (p / "__init__.py").is_file() or p.suffix == ".py" for p in src.iterdir()
    ):
        return [src]
    return []


def _name(requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(requirement).name.lower().replace("_", "-")
    except InvalidRequirement:
        return ""


def project_requirements(root: Path) -> list[str]:
    """The project's runtime and test dependencies: [project] dependencies and the test/dev
    extras of pyproject.toml, then requirements*.txt; without jax/jaxlib (the reference pins
    its own) and pytest (verify brings the same one to both sides)."""
    found: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            data = {}
        project = data.get("project", {}) or {}
        found += list(project.get("dependencies", []) or [])
        extras = project.get("optional-dependencies", {}) or {}
        for extra in TEST_EXTRAS:
            found += list(extras.get(extra, []) or [])
    for req in sorted(root.glob("requirements*.txt")):
        for line in req.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-"):
                found.append(line)
    out = []
    for requirement in found:
        name = _name(requirement)
        if name and name not in OWN_REQUIREMENTS and requirement not in out:
            out.append(requirement)
    return out
