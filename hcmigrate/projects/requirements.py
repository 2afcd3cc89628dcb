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


def unread_jax_declarations(root: Path) -> list[tuple[Path, str]]:
    """Where the project may declare jax in a form the run does not read (so cannot raise):
    (file, the form, in words). Each becomes a manual finding when the floor must rise."""
    import ast
    import tomllib

    from hcmigrate.projects.ownership import read_metadata
    from hcmigrate.verify.project_deps import requirements_file_of, setup_py_declarations

    out: list[tuple[Path, str]] = []
    pyproject = root / "pyproject.toml"
    text = read_metadata(pyproject)
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            out.append((pyproject, f"a file that is not valid TOML ({exc})"))
            data = {}
        project = data.get("project") if isinstance(data.get("project"), dict) else {}
        if "dependencies" in (project.get("dynamic") or []):
            out.append((pyproject, '`dynamic = ["dependencies"]` (computed by the build)'))
        poetry = (
            ((data.get("tool") or {}).get("poetry") or {})
            if isinstance(data.get("tool"), dict)
            else {}
        )
        tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
        tables += [(g or {}).get("dependencies") for g in (poetry.get("group") or {}).values()]
        for table in tables:
            for name, spec in (table or {}).items() if isinstance(table, dict) else ():
                if name.lower() in ("jax", "jaxlib") and isinstance(spec, list):
                    out.append((pyproject, f"a poetry list of constraints for `{name}`"))
    setup_py = root / "setup.py"
    text = read_metadata(setup_py)
    if text is not None and "jax" in text:
        try:
            declared = setup_py_declarations(text)
        except (SyntaxError, ValueError):
            declared = []
        computed = any(reqs is None for key, reqs in declared if key == "install_requires")
        if computed and requirements_file_of(root, text) is None:
            try:
                tree = ast.parse(text)
                value = next(
                    k.value
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Call)
                    for k in n.keywords
                    if k.arg == "install_requires"
                )
                shown = ast.unparse(value)
            except (StopIteration, SyntaxError, ValueError):
                shown = "..."
            if len(shown) > 40:
                shown = shown[:37] + "..."
            out.append((setup_py, f"a computed install_requires (`{shown}`)"))
    return out
