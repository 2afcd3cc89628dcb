"""The merge corpus (fixtures/merge/CASE/): small projects, each with its real configuration
files around the file to migrate, judged as a pull request to that project would be (issue 27).

A case is `before/` (the project's tree), `after/` (the files the migration changes, as
reviewed), `report.txt` (the diagnostics the run prints) and, optionally, `args` (options of
the run, one a line). `scripts/regen_merge_fixtures.py` writes `after/` and `report.txt` from
the current codemod, to be read before they are committed.
"""

from __future__ import annotations

import ast
import configparser
import difflib
import re
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from click.testing import CliRunner

from hcmigrate.cli import cli
from hcmigrate.projects.compat_dependency import DISTRIBUTION
from hcmigrate.config import yapf_style_file
from hcmigrate.jax_removals import lookup
from hcmigrate.project_model.bindings import legacy_binding_targets

MERGE = Path(__file__).resolve().parent.parent / "fixtures" / "merge"
SUMMARY_PREFIXES = ("rewrote ", "would rewrite ")


def cases() -> list[Path]:
    return sorted(p for p in MERGE.iterdir() if (p / "before").is_dir())


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under `root`."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".hcmigrate_cache" not in p.parts
    }


def migrate_case(case: Path, into: Path) -> tuple[dict[str, bytes], str]:
    """Copy the case's project into `into`, run `hcmigrate` there as a user would; the files it
    changed (path -> new bytes) and the diagnostics it printed."""
    shutil.copytree(case / "before", into)
    args_file = case / "args"
    output = run_hcmigrate(into, args_file.read_text().split() if args_file.is_file() else [])
    before, after = tree(case / "before"), tree(into)
    changed = {path: data for path, data in after.items() if before.get(path) != data}
    report = "".join(
        line + "\n"
        for line in output.splitlines()
        if ": HCB" in line or "error" in line or DISTRIBUTION in line
    )
    return changed, report


def run_hcmigrate(project: Path, args: list[str]) -> str:
    """`hcmigrate ARGS .` run in `project`; what it printed."""
    old = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(cli, ["-j1", "--no-cache", *args, "."], catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.output


def configured_checkers(root: Path) -> list[list[str]]:
    """The checkers the project configures (each a command, to which a file is appended):
    ruff's linter with the project's rules (a project that configures no ruff: pyflakes' rules,
    and isort's `I` unless it configures isort itself), ruff's formatter or black where the
    project formats with one, isort where it configures isort, yapf where it formats with
    yapf."""
    pyproject = root / "pyproject.toml"
    tool = tomllib.loads(pyproject.read_text()).get("tool", {}) if pyproject.is_file() else {}
    ruff = tool.get("ruff")
    uses_isort = "isort" in tool or _ini_has(root, "isort", (".isort.cfg", "setup.cfg", "tox.ini"))
    lint = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise"]
    if ruff is None:
        lint += ["--select", "E9,F" if uses_isort else "E9,F,I"]
    checkers = [lint]
    if "black" in tool:
        checkers.append([sys.executable, "-m", "black", "--check", "-q"])
    elif ruff is not None and "format" in ruff:
        checkers.append([sys.executable, "-m", "ruff", "format", "--check", "--no-cache"])
    if uses_isort:
        checkers.append(
            [sys.executable, "-m", "isort", "--check-only", "--settings-path", str(root)]
        )
    if yapf_style_file(root) is not None:  # (yapf finds the project's style from the file)
        checkers.append([sys.executable, "-m", "yapf", "--diff"])
    return checkers


def _ini_has(root: Path, tool: str, names: tuple[str, ...]) -> bool:
    for name in names:
        parser = configparser.ConfigParser(interpolation=None)
        if (root / name).is_file():
            parser.read(root / name)
            if parser.has_section(tool) or parser.has_section(f"tool:{tool}"):
                return True
    return False


def findings(root: Path, path: str) -> list[str]:
    """What the project's checkers say about the file `path` of the project at `root`: one
    entry per checker that fails on it, with what it printed."""
    found = []
    for command in configured_checkers(root):
        proc = subprocess.run(
            [*command, path], cwd=root, capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            found.append(f"{' '.join(command[2:4])}: {proc.stdout}{proc.stderr}".strip())
    return found


def lines_touched_without_need(source: str, new: str) -> list[str]:
    """The lines of `source` the migration replaced or removed that it did not need to: each
    must be blank, or belong to a statement that uses a legacy name (or imports one)."""
    names = set(legacy_binding_targets(source)) | {"host_callback"}
    uses = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    old = source.splitlines()
    spans = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.stmt)
        and _needs_migration("\n".join(old[node.lineno - 1 : node.end_lineno]), uses)
    ]
    new_lines = new.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new_lines, autojunk=False)
    needless = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for line in range(i1 + 1, i2 + 1) if tag in ("replace", "delete") else ():
            if (
                old[line - 1].strip()
                and not any(a <= line <= b for a, b in spans)
                and not any(_extends(old[line - 1], n) for n in new_lines[j1:j2])
            ):
                needless.append(f"{line}: {old[line - 1]}")
    return needless


def _needs_migration(statement: str, uses: re.Pattern) -> bool:
    """Does the statement use a legacy name, or a JAX API removed since (`jax.tree_map`,
    `jnp.trapz` as the usual alias spells it)?"""
    dotted = re.findall(r"\bjax(?:\.\w+)+", statement)
    dotted += ["jax.numpy" + rest for rest in re.findall(r"\bjnp((?:\.\w+)+)", statement)]
    return bool(uses.search(statement)) or any(lookup(name) is not None for name in dotted)


def _extends(old: str, new: str) -> bool:
    """Is `new` the one-line `from M import ...` `old` with names added (the module's own
    import of M joined, rather than a second import of M beside it)?"""
    try:
        before, after = ast.parse(old.strip()).body, ast.parse(new.strip()).body
    except SyntaxError:
        return False
    if not (before and after and isinstance(before[0], ast.ImportFrom)):
        return False
    names = [(a.name, a.asname) for a in before[0].names]
    return (
        isinstance(after[0], ast.ImportFrom)
        and (after[0].module, after[0].level) == (before[0].module, before[0].level)
        and set(names) < {(a.name, a.asname) for a in after[0].names}
    )
