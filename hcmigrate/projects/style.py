"""A project's style facts (issue 34, issue 37): the line length its formatter or linter is
held to, wherever the project says it (pyproject `[tool.ruff]`/`[tool.black]`/`[tool.yapf]`,
setup.cfg, tox.ini, .flake8, pylintrc, and the commands its CI workflows, Makefile, tox.ini
and pre-commit hooks run: `black -l 100 --check`), its import sorting settings, and its yapf
style file. Read from the project's own root, once per project."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.projects.import_style import ImportStyle, read_import_style
from hcmigrate.projects.ownership import Project

# `black -l 100`, `black --line-length=100`, `ruff format --line-length 100`,
# `flake8 --max-line-length 100`, `yapf --style='{column_limit: 100}'`
_COMMAND_LENGTH = re.compile(
    r"\b(?:black|ruff|flake8|pycodestyle|pylint|isort)\b[^\n]*?"
    r"(?:\s-l\s*|--line-length[= ]\s*|--max-line-length[= ]\s*)(?P<n>\d{2,3})\b"
)
_COMMAND_FILES = (
    "Makefile",
    "makefile",
    "tox.ini",
    "noxfile.py",
    ".pre-commit-config.yaml",
)


@dataclass(frozen=True)
class ProjectStyle:
    line_length: int | None
    import_style: ImportStyle
    yapf_style: str | None


def project_style(project: Project) -> ProjectStyle:
    return project.fact("style", _style)


def _style(project: Project) -> ProjectStyle:
    from hcmigrate.config import formatter_line_length, ini_line_length, yapf_style_file

    root = project.root
    pyproject = {}
    try:
        pyproject = tomllib.loads((root / "pyproject.toml").read_bytes().decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass
    length = formatter_line_length(pyproject) or ini_line_length(root) or command_line_length(root)
    yapf = yapf_style_file(root)
    return ProjectStyle(length, read_import_style(root), str(yapf) if yapf else None)


def command_line_length(root: Path) -> int | None:
    """The line length a formatter or linter is run with in the project's CI workflows,
    Makefile, tox.ini, noxfile or pre-commit hooks (the first found)."""
    files = [root / n for n in _COMMAND_FILES]
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        files += sorted(workflows.glob("*.y*ml"))
    for path in files:
        try:
            text = path.read_bytes()[: 1 << 20].decode("utf-8", "replace")
        except OSError:
            continue
        m = _COMMAND_LENGTH.search(text)
        if m and 20 <= int(m.group("n")) <= 400:
            return int(m.group("n"))
    return None
