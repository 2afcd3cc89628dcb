"""A module of the project named like JAX (`jax.py`, a `jax/` package) that a module's own
import path finds before the installed JAX: then `import jax` there is the project's module,
and no rule may rewrite anything in it as if it were JAX (`jax.tree_map` of a local `jax.py`
is the project's function, and `jax.tree.map` an AttributeError).

The folders a module's import path holds, as Python builds it: the module's own folder where
it is run as a script (a folder that is no package: `python tool.py`, pytest's rootdir
insertion), the folder above its top-level package (where `python -m pkg.mod` and importers
run from), and the project's root (the nearest folder above with pyproject.toml, setup.py,
setup.cfg or .git: the working directory of `python -m` and of pytest). A `jax/` folder without
`__init__.py` is a namespace package, which an installed JAX always wins over: no shadow.
"""

from __future__ import annotations

import os
from pathlib import Path

_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


class LocalJax:
    """Which local module named like JAX each file's import path finds (each folder looked
    at once a run)."""

    def __init__(self) -> None:
        self._in_folder: dict[Path, Path | None] = {}

    def shadowing(self, path: str) -> str | None:
        """The local `jax` (its path as the run shows paths) that shadows JAX for the module
        at `path`; None: its `import jax` is the installed JAX."""
        file = Path(path).absolute()
        for folder in _import_path(file):
            found = self._jax_in(folder)
            if found is not None:
                return _shown(found)
        return None

    def _jax_in(self, folder: Path) -> Path | None:
        if folder not in self._in_folder:
            module, package = folder / "jax.py", folder / "jax" / "__init__.py"
            self._in_folder[folder] = (
                module if module.is_file() else package.parent if package.is_file() else None
            )
        return self._in_folder[folder]


def _import_path(file: Path) -> list[Path]:
    folder = file.parent
    folders = []
    if not (folder / "__init__.py").is_file():
        folders.append(folder)  # (a script: its own folder is first on the path)
    root = folder
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent  # (above the top-level package)
    folders.append(root)
    for above in [folder, *folder.parents]:
        if any((above / marker).exists() for marker in _PROJECT_MARKERS):
            folders.append(above)
            break
    return list(dict.fromkeys(folders))


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # (another drive)
        return str(path)
