"""A project's style facts (issue 34, issue 37): the line length its formatter or linter is
held to, wherever the project says it (pyproject `[tool.ruff]`/`[tool.black]`/`[tool.yapf]`,
setup.cfg, tox.ini, .flake8, pylintrc, and the commands its CI workflows, Makefile, tox.ini
and pre-commit hooks run: `black -l 100 --check`, a hook's `args: [--line-length=100]`; a
formatter's length before a linter's), its import sorting settings, its yapf style file, and
the name its modules import numpy as. Read from the project's own root, once per project."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.projects.import_style import ImportStyle, read_import_style, ruff_toml
from hcmigrate.projects.ownership import Project

# `black -l 100`, `black --line-length=100`, `ruff format --line-length 100`,
# `flake8 --max-line-length 100`, `yapf --style='{column_limit: 100}'`
_COMMAND_LENGTH = re.compile(
    r"\b(?P<tool>black|ruff|yapf|flake8|pycodestyle|pylint|isort)\b[^\n]*?"
    r"(?:\s-l\s*|--line-length[= ]\s*|--max-line-length[= ]\s*|column_limit\W+)(?P<n>\d{2,3})\b"
)
# A YAML item that runs a tool: a pre-commit hook (`- id: black`) or a workflow step using an
# action (`uses: psf/black@stable`); its options are on the lines below it, in its own keys
# (`args: [--line-length=100]`, `args:\n  - -l\n  - "100"`, `with: options: "-l 100"`).
_YAML_TOOL = re.compile(
    r"^(?P<indent>[ \t]*(?:-[ \t]+)?)(?:id|uses):[ \t]*[\"']?(?:[\w.-]+/)?"
    r"(?P<tool>black|black-jupyter|ruff-format|ruff|yapf|flake8|pycodestyle|pylint|isort)\b",
    re.MULTILINE,
)
_OPTION_LENGTH = re.compile(
    r"(?:(?<![\w-])-l|--line-length|--max-line-length|column_limit)[\"']?"
    r"(?:[ \t]*[=,:][ \t]*|\s+)(?:-[ \t]+)?[\"']?(?P<n>\d{2,3})\b"
)
_DEFAULT_LENGTH = {"black": 88, "black-jupyter": 88, "ruff-format": 88}
_FORMATTERS = ("black", "black-jupyter", "ruff-format", "ruff", "yapf")
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
    numpy_alias: str = "np"  # the name the project's modules import numpy as


_NUMPY_IMPORT = re.compile(rb"^import numpy as (\w+)[ \t]*(?:#[^\n]*)?$", re.MULTILINE)
_SKIPPED_FOLDERS = frozenset(
    {"build", "dist", "node_modules", "site-packages", "venv", "env", "__pycache__"}
)


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
    formatter, linter = command_line_lengths(root)
    ruff = ruff_toml(root)  # (ruff's own file wins over pyproject's [tool.ruff], as for ruff)
    length = (
        formatter_line_length({"tool": {"ruff": ruff}} if ruff else pyproject)
        or formatter_line_length(pyproject)
        or formatter
        or ini_line_length(root)
        or linter
    )
    yapf = yapf_style_file(root)
    return ProjectStyle(
        length, read_import_style(root), str(yapf) if yapf else None, _numpy_alias(root)
    )


def _numpy_alias(root: Path, most_files: int = 3000) -> str:
    """The name the project's modules bind numpy to at module level (`import numpy as onp`
    in most of those that import it, at least two): code the run writes in a module that
    does not import numpy yet says it the same way. `np` where the project says nothing."""
    import os

    counts: dict[str, int] = {}
    seen = 0
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".") and f not in _SKIPPED_FOLDERS]
        for name in files:
            if not name.endswith(".py"):
                continue
            seen += 1
            if seen > most_files:
                break
            try:
                with open(os.path.join(folder, name), "rb") as file:
                    head = file.read(1 << 16)
            except OSError:
                continue
            for alias in set(_NUMPY_IMPORT.findall(head)):
                counts[alias.decode()] = counts.get(alias.decode(), 0) + 1
    if not counts:
        return "np"
    alias, count = max(counts.items(), key=lambda item: (item[1], item[0] == "np"))
    return alias if count >= 2 and count * 2 > sum(counts.values()) else "np"


def command_line_length(root: Path) -> int | None:
    """The line length a formatter (else a linter) is run with in the project's CI workflows,
    Makefile, tox.ini, noxfile or pre-commit hooks."""
    formatter, linter = command_line_lengths(root)
    return formatter or linter


def command_line_lengths(root: Path) -> tuple[int | None, int | None]:
    """(the line length a formatter is run with, the one a linter is run with) in the
    project's CI workflows, Makefile, tox.ini, noxfile or pre-commit hooks, the first found
    of each: a formatter's lays the code out, a linter's only bounds it."""
    files = [root / n for n in _COMMAND_FILES]
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        files += sorted(workflows.glob("*.y*ml"))
    found: dict[bool, int] = {}
    for path in files:
        try:
            text = path.read_bytes()[: 1 << 20].decode("utf-8", "replace")
        except OSError:
            continue
        for tool, length in _lengths_in(text, yaml=path.suffix in (".yml", ".yaml")):
            found.setdefault(tool in _FORMATTERS, length)
    return found.get(True), found.get(False)


def _lengths_in(text: str, yaml: bool):
    """(tool, line length) of each command line and, in YAML, each hook or action item."""
    for m in _COMMAND_LENGTH.finditer(text):
        if 20 <= int(m.group("n")) <= 400:
            yield m.group("tool"), int(m.group("n"))
    if not yaml:
        return
    lines = text.splitlines()
    starts = {text.count("\n", 0, m.start()): m for m in _YAML_TOOL.finditer(text)}
    for row, m in starts.items():
        column = len(m.group("indent").expandtabs())  # (the item's keys stand at this column)
        block = [lines[row][m.end() - m.start() :]]
        for line in lines[row + 1 :]:
            if line.strip() and len(line) - len(line.lstrip()) < column:
                break
            block.append(line)
        option = _OPTION_LENGTH.search("\n".join(block))
        if option and 20 <= int(option.group("n")) <= 400:
            yield m.group("tool"), int(option.group("n"))
        elif m.group("tool") in _DEFAULT_LENGTH:  # (a formatter hook run with its default)
            yield m.group("tool"), _DEFAULT_LENGTH[m.group("tool")]
