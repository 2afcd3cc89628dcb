"""A project's requirement declarations as the layer reads them (issue 34): which files
declare its requirements, and its declared `jax` floor. The readers of each form live in
hcmigrate.verify.project_deps (the one reader of setup.py and poetry) and
hcmigrate.projects.floors (each file's entries); this module is where the project layer asks."""

from __future__ import annotations

from pathlib import Path

from hcmigrate.projects.ownership import PACKAGING_FILES


def metadata_files(root: Path) -> list[Path]:
    """Every file that declares the project's requirements (those present or linked)."""
    from hcmigrate.projects.floors import _metadata_files

    files = [root / n for n in PACKAGING_FILES]
    for path in _metadata_files(root):
        if path not in files:
            files.append(path)
    return [p for p in files if p.exists() or p.is_symlink()]


def declared_jax_floor(root: Path) -> tuple[tuple[int, ...], str] | None:
    """The highest lowest-allowed jax the project declares, and where (None: no floor)."""
    from hcmigrate.config import pinned_jax
    from hcmigrate.errors import ConfigError

    try:
        return pinned_jax(root, [])
    except ConfigError:
        return None
