"""What verify needs to know about the project under test: its layout (`src/`) and its
`[tool.hcmigrate]` settings (its own dependencies: hcmigrate.verify.project_deps)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hcmigrate.config import ConfigError, find_pyproject, load_config, parse_version


@dataclass
class Project:
    root: Path | None  # the folder of the project's pyproject.toml
    strategy: str = "native"
    target_jax: tuple[int, ...] | None = None
    config_file: Path | None = None
    per_file_strategy: tuple[tuple[str, str], ...] = ()  # [tool.hcmigrate.per-file-strategy]


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
        per_file_strategy=tuple(values.get("per-file-strategy", {}).items()),
    )
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
