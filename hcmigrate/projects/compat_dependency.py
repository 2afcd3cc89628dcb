"""A project whose code now imports `hcmigrate_compat` says so where it declares its
dependencies (issue 27): `hcmigrate-compat` (the compat runtime alone: jax and numpy, see
packaging/hcmigrate-compat) is added, with the smallest text edit, to the first of

- pyproject.toml `[project] dependencies` (a static list),
- setup.cfg `[options] install_requires`,
- setup.py `install_requires=[...]` (a literal list of strings),
- requirements.txt (where pip-compile wrote it, a lock, its source requirements.in; a lock
  without its source is not edited: one manual finding),

and the file read back must declare exactly one more requirement. Where none of them can be
edited safely (a computed list, `dynamic = ["dependencies"]`), nothing is edited and the
run reports one manual finding naming the file to edit. A project that declares nothing
(scripts) is left alone. `--no-compat` is the other choice: no code points at the compat
runtime then.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.projects.ownership import read_metadata
from hcmigrate.verify.project_deps import compiled_from, requirements_file_of

DISTRIBUTION = "hcmigrate-compat"
# Distributions that ship the compat runtime: a project that is one of them (hcmigrate's own
# tree, where the README's demo migrates) needs no dependency on it.
_PROVIDERS = ("hcmigrate", DISTRIBUTION)
_NAMED = re.compile(r"^\s*hcmigrate[-_.]compat\b", re.IGNORECASE | re.MULTILINE)


@dataclass
class Declaration:
    path: Path | None  # the file that declares the project's dependencies
    where: str = ""  # e.g. "[project] dependencies"
    new_text: str | None = None  # the edited file (None: already declared, or not safely)
    problem: str | None = None  # why it cannot be edited safely
    shown_as: str | None = None  # the path relative to the project root, when not its name
    # the same edit in the variants of a requirements file (requirements-cuda.txt beside
    # requirements.txt): each file that installs jax installs the code that imports the compat
    # runtime
    also: list[Declaration] = field(default_factory=list)
    lock: str | None = None  # the pip-compile output of the edited requirements.in

    def message(self, written: bool) -> str:
        if self.problem is not None:
            return (
                f"{self.path.name}: manual: this project now imports hcmigrate_compat; add "
                f"`{DISTRIBUTION}` to its dependencies there by hand ({self.problem})"
            )
        verb = "added" if written else "would add"
        edits = [self, *self.also]
        files = ", ".join(f"{d.shown_as or d.path.name} {d.where}".rstrip() for d in edits)
        # (the distribution is built from this repository, not taken from PyPI: without it on
        # the project's index, `pip install` of the project fails where the run succeeded)
        said = (
            f"{verb} `{DISTRIBUTION}` to {files} (build its wheel from "
            "packaging/hcmigrate-compat and publish it where the project installs from: "
            "docs/compat.md)"
        )
        locks = [d.lock for d in edits if d.lock]
        if locks:  # (hcmigrate never edits a lock: pip-compile pins the new dependency there)
            said += f"; re-run pip-compile to update {', '.join(locks)}"
        return said


_IMPORTS_COMPAT = re.compile(rb"^[ \t]*(?:from|import)[ \t]+hcmigrate_compat\b", re.MULTILINE)


def imports_compat(paths) -> bool:
    """Does any of the files import hcmigrate_compat (a unreadable file: no)?"""
    for path in paths:
        try:
            if _IMPORTS_COMPAT.search(Path(path).read_bytes()):
                return True
        except OSError:
            continue
    return False


_BAZEL_FILES = ("BUILD", "BUILD.bazel")


def bazel_targets_to_edit(paths) -> list[str]:
    """Manual lines for a project built with Bazel (saxml): the BUILD file beside a module
    that imports hcmigrate_compat lists that module's dependencies in its target, which
    hcmigrate does not edit. Only files beside a BUILD file are read."""
    lines = []
    builds: dict[Path, Path | None] = {}  # folder -> its BUILD file (looked up once a folder)
    for path in map(Path, paths):
        folder = path.parent
        if folder not in builds:
            builds[folder] = next(
                (folder / n for n in _BAZEL_FILES if (folder / n).is_file()), None
            )
        build = builds[folder]
        if build is None or not imports_compat([path]):
            continue
        text = read_metadata(build) or ""
        if f'"{path.name}"' in text and "hcmigrate" not in text:
            lines.append(
                f"{build}: manual: the Bazel target whose srcs has {path.name} lists its "
                f"dependencies: add `{DISTRIBUTION}` (imported as hcmigrate_compat) there by hand"
            )
    return lines


def declare_compat(root: Path, overlay: dict[Path, str] | None = None) -> Declaration | None:
    """What declaring the compat runtime takes in the project at `root`; None: nothing to do
    (already declared, or the project declares no dependencies). `overlay`: files' texts as
    other edits of the run leave them (a raised floor), read instead of the disk's."""
    overlay = overlay or {}

    def read(path: Path) -> str | None:
        return overlay[path] if path in overlay else read_metadata(path)

    for reader in (_pyproject, _setup_cfg, _setup_py, _requirements):
        found = reader(root, read=read)
        if found is not None:
            if found.new_text is not None:
                # (and each requirements file that installs jax: the environments the project
                # installs from them run the code that imports the compat runtime)
                found.also = _variants(root, found.path, read)
            return found if (found.new_text is not None or found.problem) else None
    return None


def _variants(root: Path, edited: Path, read) -> list[Declaration]:
    """The edit in each other requirements*.txt of the project root that lists jax (or in its
    pip-compile source), where one can be made: a variant of the same install for other
    hardware (saxml's requirements-cuda.txt). Files that do not install jax (docs, lint
    stacks) are left alone."""
    out = []
    for path in sorted(root.glob("requirements*.txt")):
        text = read(path)
        if text is None or not re.search(r"^\s*jax\b(?![-_.\w])", text, re.MULTILINE):
            continue
        found = _requirements(root, path.name, read=read)
        if found is None or found.new_text is None:
            continue
        if found.path != edited and all(found.path != d.path for d in out):
            out.append(found)
    return out


def _pyproject(root: Path, read=None) -> Declaration | None:
    read = read or read_metadata
    path = root / "pyproject.toml"
    text = read(path)
    if text is None:
        return None
    try:
        project = tomllib.loads(text).get("project")
    except tomllib.TOMLDecodeError:
        return None
    if not isinstance(project, dict):
        return None
    if project.get("name") in _PROVIDERS:  # (it ships the compat runtime itself)
        return Declaration(path, "[project] name")
    where = "[project] dependencies"
    deps = project.get("dependencies")
    if "dependencies" in project.get("dynamic", []) or not isinstance(deps, list):
        if deps is None and "dependencies" not in project.get("dynamic", []):
            return _inserted(path, where, text, _new_toml_list(text), _toml_deps)
        return Declaration(path, where, problem="its dependencies are dynamic")
    if any(_NAMED.match(d) for d in deps):
        return Declaration(path, where)
    return _inserted(path, where, text, _toml_list_insert(text), _toml_deps)


def _toml_deps(text: str) -> list[str]:
    return list(tomllib.loads(text)["project"].get("dependencies", []))


_TOML_LIST = re.compile(r"^dependencies\s*=\s*\[", re.MULTILINE)
_TABLE = re.compile(r"^\[", re.MULTILINE)


def _project_table(text: str) -> tuple[int, int] | None:
    m = re.search(r"^\[project\]\s*$", text, re.MULTILINE)
    if m is None:
        return None
    end = _TABLE.search(text, m.end())
    return m.end(), end.start() if end else len(text)


def _toml_list_insert(text: str) -> str | None:
    """`text` with the requirement added at the end of `[project]`'s dependencies list."""
    table = _project_table(text)
    if table is None:
        return None
    m = _TOML_LIST.search(text, *table)
    if m is None:
        return None
    close = _closing_bracket(text, m.end() - 1)
    if close is None:
        return None
    inside = text[m.end() : close]
    if "\n" not in inside:  # dependencies = ["jax"]
        sep = ", " if inside.strip() else ""
        return f'{text[:close].rstrip()}{sep}"{DISTRIBUTION}"{text[close:]}'
    lines = inside.rstrip(" \t").split("\n")
    items = [line for line in lines if line.strip() and not line.strip().startswith("#")]
    indent = re.match(r"\s*", items[-1]).group() if items else "    "
    body = inside.rstrip(" \t")
    if items and not _ends_with_comma(items[-1]):
        return None  # (the last item has no trailing comma: not edited by a blind insert)
    return f'{text[: m.end()]}{body}{indent}"{DISTRIBUTION}",\n{text[close:]}'


def _ends_with_comma(line: str) -> bool:
    return line.split("#")[0].rstrip().endswith(",")


def _new_toml_list(text: str) -> str | None:
    table = _project_table(text)
    if table is None:
        return None
    _, end = table
    head = text[:end].rstrip("\n")
    return f'{head}\ndependencies = ["{DISTRIBUTION}"]\n' + (
        "\n" + text[end:] if text[end:] else ""
    )


def _closing_bracket(text: str, start: int) -> int | None:
    depth, quote = 0, None
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            i = text.find("\n", i)
            if i < 0:
                return None
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _setup_cfg(root: Path, read=None) -> Declaration | None:
    read = read or read_metadata
    path = root / "setup.cfg"
    text = read(path)
    if text is None:
        return None
    deps = _cfg_deps(text)
    if deps is None:
        return None
    where = "[options] install_requires"
    if any(_NAMED.match(d) for d in deps):
        return Declaration(path, where)
    m = re.search(r"^install_requires\s*=[^\n]*\n((?:[ \t]+[^\n]*\n)*)", text, re.MULTILINE)
    if m is None or not m.group(1):
        return Declaration(path, where, problem="install_requires is not a list of lines")
    indent = re.match(r"[ \t]+", m.group(1)).group()
    new = f"{text[: m.end()]}{indent}{DISTRIBUTION}\n{text[m.end() :]}"
    return _inserted(path, where, text, new, _cfg_deps)


def _cfg_deps(text: str) -> list[str] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    if not parser.has_option("options", "install_requires"):
        return None
    return [d for d in parser.get("options", "install_requires").splitlines() if d.strip()]


def _setup_py(root: Path, read=None) -> Declaration | None:
    read = read or read_metadata
    path = root / "setup.py"
    text = read(path)
    if text is None or "install_requires" not in text:
        return None
    where = "install_requires"
    value = _setup_py_list(text)
    if value is not None and any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAMED.match(n.value)
        for n in ast.walk(value)
    ):
        return Declaration(path, where)  # (declared, in whatever form: added by hand)
    if not isinstance(value, ast.List) or not all(_requirement_item(e) for e in value.elts):
        listed = requirements_file_of(root, text)  # (`_parse_requirements("requirements.txt")`)
        if listed is not None:
            return _requirements(root, str(listed.relative_to(root)), read=read)
        return Declaration(path, where, problem="install_requires is not a literal list")
    if any(isinstance(e, ast.Constant) and _NAMED.match(e.value) for e in value.elts):
        return Declaration(path, where)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = text.encode()
    close = offsets[value.end_lineno - 1] + value.end_col_offset - 1  # (the `]`)
    # (the list's own quotes: 'jax' gets 'hcmigrate-compat')
    quote = (
        "'"
        if value.elts
        and lines[value.elts[-1].lineno - 1][
            value.elts[-1].col_offset : value.elts[-1].col_offset + 1
        ]
        == "'"
        else '"'
    )
    item = f"{quote}{DISTRIBUTION}{quote}"
    if value.elts and value.elts[-1].end_lineno != value.end_lineno:
        last = value.elts[-1]
        indent = re.match(r"\s*", lines[last.lineno - 1]).group()
        after_last = data[offsets[last.end_lineno - 1] + last.end_col_offset : close].decode()
        if not after_last.lstrip().startswith(","):
            return Declaration(path, where, problem="its last requirement has no trailing comma")
        line_end = offsets[last.end_lineno]
        new = data[:line_end] + f"{indent}{item},\n".encode() + data[line_end:]
    else:
        sep = b", " if value.elts else b""
        new = data[:close].rstrip() + sep + item.encode() + data[close:]
    return _inserted(path, where, text, new.decode(), _setup_py_deps)


def _setup_py_list(text: str):
    """setup.py's `install_requires=` value: the list itself, or the literal list a module-level
    name it passes is bound to once (`install_requires=requirements`)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires":
            if isinstance(node.value, ast.Name):
                bound = [
                    s.value
                    for s in tree.body
                    if isinstance(s, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == node.value.id for t in s.targets)
                ]
                if len(bound) == 1 and isinstance(bound[0], ast.List):
                    return bound[0]
            return node.value
    return None


def _setup_py_deps(text: str) -> list[str]:
    """The list's items as written (an f-string item as its source text)."""
    return [
        e.value if isinstance(e, ast.Constant) else ast.unparse(e)
        for e in _setup_py_list(text).elts
    ]


def _requirement_item(node: ast.expr) -> bool:
    """A string, or an f-string (numpyro's `f"jax{_jax_version_constraints}"`): an item the
    list holds as it is, beside which one more string is appended safely."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(
        node, ast.JoinedStr
    )


def _requirements(root: Path, name: str = "requirements.txt", read=None) -> Declaration | None:
    read = read or read_metadata
    path = root / name
    text = read(path)
    if text is None:
        return None
    source = compiled_from(path, text)
    if source is None:
        return Declaration(
            path, problem=f"{name} is pip-compile's output, and its source is not here"
        )
    if source:  # (a lock: its source, requirements.in, is where the dependency goes)
        found = _requirements(root, str(source.relative_to(root)), read=read)
        if found is not None and found.new_text is not None:
            found.lock = name
        return found
    if _NAMED.search(text):
        return Declaration(path)
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text if not text or text.endswith(("\n", "\r")) else text + newline
    lines = body.splitlines(keepends=True)
    at = _sorted_position(lines)
    lines.insert(len(lines) if at is None else at, f"{DISTRIBUTION}{newline}")
    return Declaration(path, "", new_text="".join(lines), shown_as=name)


_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _sorted_position(lines: list[str]) -> int | None:
    """Where the new requirement goes in a file whose requirement lines are sorted by name
    (chex: `absl-py` ... `toolz`): before the first that sorts after it; None (at the end)
    where they are not sorted, or a line is more than a requirement (`-r`, a URL, `\\`)."""
    named = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _REQUIREMENT_NAME.match(stripped)
        if match is None or stripped.endswith("\\") or "://" in stripped:
            return None
        named.append((re.sub(r"[-_.]+", "-", match.group()).lower(), index))
    names = [name for name, _ in named]
    if len(names) < 2 or names != sorted(names):
        return None
    return next((index for name, index in named if name > DISTRIBUTION), None)


def _inserted(path: Path, where: str, old: str, new: str | None, read) -> Declaration:
    """The edit, if the file read back declares exactly the old requirements and the new one."""
    try:
        ok = new is not None and read(new) == [*_or_empty(read, old), DISTRIBUTION]
    except Exception:
        ok = False
    if not ok:
        return Declaration(path, where, problem=f"{where} could not be edited safely")
    return Declaration(path, where, new_text=new)


def _or_empty(read, text: str) -> list[str]:
    try:
        return read(text)
    except Exception:
        return []
