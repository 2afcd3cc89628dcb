"""The project's JAX floor raised where the native rewrite needs it (issue 27).

The run writes its code for facts.NATIVE_OUTPUT_SINCE; the project's `jax` floor rises only to
what the written code needs (hcmigrate.native_needs: each construct's first release,
measured), in the same pull request, where the project declares it (the files
hcmigrate.projects.compat_dependency edits: pyproject.toml `[project]` and poetry, setup.cfg, setup.py
(a literal list, or the requirements file its computed list reads), requirements*.txt (a lock
pip-compile wrote: its requirements.in)): `jax>=0.4.13` -> `jax>=0.4.25`, poetry `^0.4.1` ->
`^0.4.25`, extras, markers and upper bounds kept. What that JAX itself requires rises with it
(facts.JAX_RELEASE_REQUIRES): a `jaxlib` floor below its minimum jaxlib, and a declared Python
floor below its Requires-Python (`requires-python`, poetry's `python`, `python_requires`:
`>=3.7` -> `>=3.9`, `~=3.8` -> `~=3.9`, `^3.8` -> `^3.9`). Nothing is edited where one of them
cannot be raised alone: an exact pin, an upper bound below the floor needed, a form whose
upper bound would move, a pin setup.py computes, a lock without its source; the rewrite then
targets the declared floor and HCB008 stays manual, with the reason. The run decides once
(hcmigrate.project.plan_run) and the rules target the raised floor.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from hcmigrate.projects.ownership import read_metadata
from hcmigrate.facts import NATIVE_OUTPUT_SINCE, release_requires
from hcmigrate.verify.project_deps import (  # (setup.py's one reader)
    _constants,
    _literal,
    compiled_from,
    poetry_constraint,
    requirements_file_of,
    setup_py_declarations,
    setup_py_value,
)

_dotted = ".".join
# A PEP 508 requirement: its name and extras, its version specifier, its marker.
_PEP508 = re.compile(
    r"^(?P<head>\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*)(?P<spec>[^;]*)"
)
_CLAUSE = re.compile(
    r"(?P<pre>\s*)(?P<op>===|==|>=|~=|>|<=|<|!=)(?P<mid>\s*)(?P<version>\S+?)(?P<post>\s*)"
)


class Unsafe(Exception):
    """A requirement that cannot be raised alone (the reason is the message)."""


@dataclass(frozen=True)
class Python:
    """A declared Python floor: `requires-python`, or setup.py's/setup.cfg's
    `python_requires` (poetry's `python` is a poetry entry)."""

    spec: str


def needs_for(jax: tuple[int, ...]) -> dict[str, str]:
    """The floor each name needs for JAX `jax`: jax itself, the jaxlib and Python it requires
    (facts.JAX_RELEASE_REQUIRES)."""
    jaxlib, python = release_requires(jax) or release_requires(NATIVE_OUTPUT_SINCE)
    return {
        "jax": _dotted(map(str, jax)),
        "jaxlib": _dotted(map(str, jaxlib)),
        "python": _dotted(map(str, python)),
    }


@dataclass
class Change:
    path: Path
    line: int
    col: int
    old: str
    new: str
    name: str = "jax"  # jax, jaxlib or python


@dataclass
class FloorRaise:
    """The files to edit (path -> new text) and each requirement raised."""

    needs: dict[str, str]
    texts: dict[Path, str] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    # side requirement files (tests, docs, CI) whose pin could not be raised alone (kfac's
    # `jax==0.3.15` in requirements_tests.txt, its oldest-versions test): (path, reason), told
    # by hand; they do not keep the install floor from rising
    left: list[tuple[Path, str]] = field(default_factory=list)

    def said(self, c: Change, written: bool, reason: str) -> str:
        """What is said of one change: `reason` is the line of code that needs the floor."""
        python = self.needs["python"]
        if c.name == "classifier":
            verb = "dropped" if written else "would drop"
            return (
                f"{verb} the classifier `{c.old}`: below the project's new Python floor, {python}"
            )
        verb = "raised" if written else "would raise"
        why = {
            "jax": "",
            "jaxlib": f" (which imports with jaxlib >= {self.needs['jaxlib']})",
            "python": f" (which requires Python >= {python})",
        }[c.name]
        return (
            f"{verb} the project's {'Python' if c.name == 'python' else 'JAX'} floor `{c.old}` "
            f"-> `{c.new}`: {reason}{why}"
        )


@dataclass
class Kept:
    """Why the floor is not raised (nothing is edited), and the file that says so."""

    path: Path
    reason: str


def plan_raise(root: Path, jax: tuple[int, ...] = NATIVE_OUTPUT_SINCE) -> FloorRaise | Kept | None:
    """The edits that raise every declared `jax` floor below `jax` (and the jaxlib and Python
    floors below what that JAX requires); None when no jax floor is below; Kept when one of
    them cannot be raised safely (then nothing is edited)."""
    plan = FloorRaise(needs_for(jax))
    install = _install_requirement_files(root)
    for path in _metadata_files(root):
        text = read_metadata(path)
        if text is None:
            continue
        try:
            if _kind(path) == "txt" and compiled_from(path, text) is not False:
                _check_lock(path, text, plan.needs)
                continue
            new, changes = _raised(path, text, plan.needs)
        except Unsafe as why:
            if _kind(path) == "txt" and path not in install:
                plan.left.append((path, str(why)))
                continue
            return Kept(path, str(why))
        if changes:
            plan.texts[path] = new
            plan.changes += changes
    if not any(c.name == "jax" for c in plan.changes):
        return None  # (a jaxlib or Python floor alone is not this migration's business)
    return plan


def _check_lock(path: Path, text: str, needs: dict[str, str]) -> None:
    """A requirements file pip-compile wrote is never edited (its source, requirements.in, is
    raised instead): Unsafe where it pins a JAX (or jaxlib) below what the code needs, which
    takes compiling it again."""
    for entry in _entries("txt", text):
        name, m = _name(entry), _PEP508.match(entry)
        if name in ("jax", "jaxlib") and m and "@" not in entry:
            if _allows_below(_specifier(m.group("spec")), needs[name]):
                source = compiled_from(path, text)
                raise Unsafe(
                    f"{path.name} is pip-compile's output (a lock) and pins `{entry}`: raise "
                    f"the floor in {source.name if source else 'its source'} and compile it again"
                )


def _metadata_files(root: Path) -> list[Path]:
    """The files that declare the project's requirements: its metadata, the requirements file
    setup.py's computed list reads (the one the compat dependency goes to), requirements*.txt
    and their pip-compile sources (requirements*.in)."""
    names = [root / n for n in ("pyproject.toml", "setup.cfg", "setup.py")]
    setup_py = read_metadata(root / "setup.py")
    read = requirements_file_of(root, setup_py) if setup_py is not None else None
    files = names + ([read] if read is not None else [])
    for found in sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements*.in")):
        if found not in files:
            files.append(found)
    return files


def _install_requirement_files(root: Path) -> set[Path]:
    """The requirement files that say what the project installs: the one setup.py's computed
    list reads, else `requirements.txt` (the others, `requirements_tests.txt`,
    `requirements-dev.txt`, ..., set up its tests, docs or CI)."""
    setup_py = read_metadata(root / "setup.py")
    read = requirements_file_of(root, setup_py) if setup_py is not None else None
    return {read} if read is not None else {root / "requirements.txt"}


def _name(requirement) -> str:
    if not isinstance(requirement, str):
        return ""
    m = _PEP508.match(requirement)
    return canonicalize_name(m.group("head").split("[")[0].strip()) if m else ""


# -- one requirement ---------------------------------------------------------------------------


def raised_requirement(requirement: str, needs: dict[str, str]) -> str:
    """`requirement` with its floor raised to what `needs` says for its name (the same text
    when it needs nothing); Unsafe when that cannot be done alone."""
    need = needs.get(_name(requirement)) if _name(requirement) != "python" else None
    m = _PEP508.match(requirement)
    if need is None or m is None:
        return requirement
    spec = m.group("spec")
    if spec.lstrip().startswith("@"):  # (a URL: no version floor to raise, `jax @ git+...`)
        return requirement
    new_spec = _raised_spec(spec, need)
    return requirement[: m.start("spec")] + new_spec + requirement[m.end("spec") :]


def _raised_spec(spec: str, need: str) -> str:
    """A pip specifier whose lowest version is raised to `need`, the rest of it kept."""
    old = _specifier(spec)
    if not _allows_below(old, need):
        return spec
    clauses = spec.split(",")
    raised = False
    for i, clause in enumerate(clauses):
        m = _CLAUSE.fullmatch(clause)
        if m is None:
            raise Unsafe(f"`{spec}` is not a specifier pip reads")
        op, version = m.group("op"), m.group("version")
        if op in ("==", "==="):
            raise Unsafe(f"`{op}{version}` is an exact pin")
        if op in (">=", ">", "~=") and _version(version) < Version(need):
            new_op = "~=" if op == "~=" else ">="
            clauses[i] = f"{m.group('pre')}{new_op}{m.group('mid')}{need}{m.group('post')}"
            raised = True
    new = ",".join(clauses)
    if not raised:
        raise Unsafe(f"`{spec}` has no lower bound to raise")
    _check_same_above(old, _specifier(new), need, spec)
    return new


def _raised_poetry(constraint: str, need: str) -> str:
    """Poetry's constraint (`^0.4.1`, `~0.4.1`, `>=0.4.1,<0.5`) with its floor raised."""
    as_pip = poetry_constraint(constraint)
    if as_pip is None:
        raise Unsafe(f"`{constraint}` is a constraint this run does not read")
    old = _specifier(as_pip)
    if not _allows_below(old, need):
        return constraint
    m = re.fullmatch(r"(\s*)([\^~]=?)(\s*)(\d+(?:\.\d+)*)(\s*)", constraint)
    if m is None:
        if re.fullmatch(r"\s*\d+(?:\.\d+)*(?:\.\*)?\s*", constraint):
            raise Unsafe(f"`{constraint}` is an exact pin")
        return _raised_spec(constraint, need)
    new = f"{m.group(1)}{m.group(2)}{m.group(3)}{need}{m.group(5)}"
    _check_same_above(old, _specifier(poetry_constraint(new)), need, constraint)
    return new


def _specifier(spec: str) -> SpecifierSet:
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        raise Unsafe(f"`{spec}` is not a specifier pip reads") from None


def _version(text: str) -> Version:
    try:
        return Version(text.rstrip(".*"))
    except InvalidVersion:
        raise Unsafe(f"`{text}` is not a version") from None


def _allows_below(spec: SpecifierSet, need: str) -> bool:
    """Does `spec` have a floor, and allow a version below `need`?"""
    floors = [_version(s.version) for s in spec if s.operator in (">=", ">", "~=", "==", "===")]
    return bool(floors) and min(floors) < Version(need)


def _check_same_above(old: SpecifierSet, new: SpecifierSet, need: str, shown: str) -> None:
    """The raised specifier allows `need`, and from there on exactly what the old one allowed
    (its upper bounds and exclusions kept), probed at every version either names and the
    releases after each."""
    if not new.contains(need, prereleases=True):
        raise Unsafe(f"`{shown}` does not allow {need} (an upper bound below it)")
    probes = {Version(need)}
    for spec in (*old, *new):
        v = _version(spec.version).release + (0, 0)
        for k in range(3):
            bumped = list(v[:3])
            bumped[k] += 1
            bumped[k + 1 :] = [0] * (2 - k)
            probes |= {Version(_dotted(map(str, v[:3]))), Version(_dotted(map(str, bumped)))}
    for probe in probes:
        if probe >= Version(need) and old.contains(probe, True) != new.contains(probe, True):
            raise Unsafe(f"`{shown}` cannot be raised without changing its upper bound")


# -- one file ----------------------------------------------------------------------------------


def _raised(path: Path, text: str, needs: dict[str, str]) -> tuple[str, list[Change]]:
    """The file's text with its JAX floors raised, and the changes; Unsafe where one cannot
    be, or where the file read back does not declare what it should."""
    kind = _kind(path)
    computed: list[Change] = []
    if kind == "py":
        text, computed = _raised_computed(path, text, needs)
    entries = _entries(kind, text)
    wanted = [_raised_entry(e, needs) for e in entries]
    changes, new = [], text
    for old, replacement in {(o, w) for o, w in zip(entries, wanted) if o != w}:
        new, places = _replace(kind, new, old, replacement, entries.count(old))
        name = _entry_name(old)
        changes += [
            Change(path, *at, _shown(kind, old), _shown(kind, replacement), name) for at in places
        ]
    if changes and _entries(kind, new) != wanted:
        raise Unsafe(f"{path.name} could not be edited safely")
    changes += computed
    if any(c.name == "python" for c in changes):
        new, dropped = _without_old_classifiers(kind, new, needs["python"])
        changes += [Change(path, line, 1, c, "", "classifier") for line, c in dropped]
    return new, sorted(changes, key=lambda c: (c.line, c.col))


# `"Programming Language :: Python :: 3.8",` alone on its line (a list item of classifiers)
_CLASSIFIER = re.compile(
    r"^[ \t]*(?P<q>[\"']?)(?P<c>Programming Language :: Python :: 3\.(?P<minor>\d+))(?P=q)"
    r"[ \t]*,?[ \t]*\r?\n",
    re.MULTILINE,
)


def _without_old_classifiers(kind: str, text: str, python: str) -> tuple[str, list]:
    """The text less the trove classifiers of Python versions below the new Python floor
    (each on a line of its own, as a maintainer raising the floor drops them), and those
    dropped (line, classifier); the text as it was where the file would not read back."""
    floor = int(python.split(".")[1])
    span = _classifier_list(kind, text)
    if span is None:
        return text, []
    found = [
        m
        for m in _CLASSIFIER.finditer(text, *span)
        if int(m.group("minor")) < floor and m.end() <= span[1]
    ]
    new = text
    for m in reversed(found):
        new = new[: m.start()] + new[m.end() :]
    try:
        if kind == "toml":
            tomllib.loads(new)
        elif kind == "py":
            ast.parse(new)
    except (tomllib.TOMLDecodeError, SyntaxError, ValueError):
        return text, []
    return new, [(text.count("\n", 0, m.start()) + 1, m.group("c")) for m in found]


def _classifier_list(kind: str, text: str) -> tuple[int, int] | None:
    """Where the classifier list's items are (start, end offsets): `classifiers = [...]` in
    pyproject's [project], setup.py's `classifiers=[...]`, setup.cfg's `classifiers =` lines;
    None elsewhere. Only its own lines are ever dropped: the same words in a
    `long_description` string or a readme text are prose, never edited."""
    if kind == "toml":
        m = re.search(r"^\[project\][ \t]*\r?$", text, re.MULTILINE)
        if m is None:
            return None
        end = re.compile(r"^\[", re.MULTILINE).search(text, m.end())
        table_end = end.start() if end else len(text)
        lst = re.compile(r"^classifiers[ \t]*=[ \t]*\[", re.MULTILINE).search(
            text, m.end(), table_end
        )
        if lst is None:
            return None
        from hcmigrate.projects.compat_dependency import _closing_bracket

        close = _closing_bracket(text, lst.end() - 1)
        return None if close is None else (lst.end(), close)
    if kind == "py":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "classifiers":
                if not isinstance(node.value, (ast.List, ast.Tuple)):
                    return None
                starts = [0]
                for line in text.splitlines(keepends=True):
                    starts.append(starts[-1] + len(line))
                v = node.value
                return (
                    starts[v.lineno - 1] + v.col_offset + 1,
                    starts[v.end_lineno - 1] + v.end_col_offset - 1,
                )
        return None
    if kind == "cfg":
        m = re.search(
            r"^classifiers[ \t]*=[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", text, re.MULTILINE
        )
        return None if m is None else m.span(1)
    return None


def _raised_computed(path: Path, text: str, needs: dict[str, str]) -> tuple[str, list[Change]]:
    """setup.py's floors computed from a module-level string constant (numpyro's
    `f"jax{_jax_version_constraints}"` beside `_jax_version_constraints = ">=0.4.14"`; read by
    the one reader, hcmigrate.verify.project_deps): the constant's literal is edited, where the
    requirement is the constant between fixed text and the raised one keeps that text, and the
    file read back declares the raised requirement. Unsafe otherwise (a constant two different
    requirements read, a version made by arithmetic or a call)."""
    try:
        declared = setup_py_declarations(text)
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    constants = _constants(tree)
    edits: dict[str, tuple[ast.Constant, str, Change]] = {}
    for _, requirements in declared:
        for requirement, literal in requirements or []:
            raised = raised_requirement(requirement, needs)
            if literal or raised == requirement:
                continue
            edit = _constant_edit(tree, constants, requirement, raised)
            if edit is None or (edit[0] in edits and edits[edit[0]][1] != edit[2]):
                raise Unsafe(f"setup.py computes `{requirement}` (raise it where it is computed)")
            name, node, value = edit
            change = Change(
                path, node.lineno, node.col_offset + 1, requirement, raised, _name(requirement)
            )
            edits[name] = (node, value, change)
    if not edits:
        return text, []
    lines = text.splitlines(keepends=True)
    for node, value, _ in sorted(edits.values(), key=lambda e: (-e[0].lineno, -e[0].col_offset)):
        line = lines[node.lineno - 1]
        old = line[node.col_offset : node.end_col_offset]
        quote = old[0] if old[:1] in "'\"" else '"'
        lines[node.lineno - 1] = (
            line[: node.col_offset] + f"{quote}{value}{quote}" + line[node.end_col_offset :]
        )
    new = "".join(lines)
    wanted = {raised_requirement(r, needs) for _, rs in declared for r, lit in rs or [] if not lit}
    read_back = {r for _, rs in setup_py_declarations(new) for r, lit in rs or [] if not lit}
    if read_back != wanted:
        raise Unsafe("setup.py could not be edited safely")
    return new, [change for _, _, change in edits.values()]


def _constant_edit(tree: ast.Module, constants: dict, requirement: str, raised: str):
    """(the constant's name, its literal node, its new value) for a requirement that is an
    f-string of fixed text around one module-level string constant; None otherwise."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        names = [
            v.value.id
            for v in node.values
            if isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
        ]
        if len(names) != 1 or len(node.values) - 1 != sum(
            isinstance(v, ast.Constant) for v in node.values
        ):
            continue
        value = constants.get(names[0])
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        if value.lineno != value.end_lineno or _literal(node, constants) != requirement:
            continue
        prefix, _, suffix = requirement.partition(value.value)
        if requirement != prefix + value.value + suffix:
            continue
        if not (raised.startswith(prefix) and raised.endswith(suffix)):
            return None
        return names[0], value, raised[len(prefix) : len(raised) - len(suffix) or None]
    return None


def _kind(path: Path) -> str:
    return {"pyproject.toml": "toml", "setup.cfg": "cfg", "setup.py": "py"}.get(path.name, "txt")


def _entry_name(entry) -> str:
    if isinstance(entry, Python):
        return "python"
    return canonicalize_name(entry[0]) if isinstance(entry, tuple) else _name(entry)


def _shown(kind: str, entry) -> str:
    if isinstance(entry, Python):
        key = "requires-python" if kind == "toml" else "python_requires"
        return f'{key} = "{entry.spec}"' if kind != "cfg" else f"{key} = {entry.spec}"
    return entry if isinstance(entry, str) else f'{entry[0]} = "{entry[1]}"'


def _raised_entry(entry, needs: dict[str, str]):
    if isinstance(entry, Python):
        return Python(_raised_spec(entry.spec, needs["python"]))
    if isinstance(entry, tuple):  # (poetry: name, constraint)
        name, constraint = entry
        need = needs.get(canonicalize_name(name))
        return entry if need is None else (name, _raised_poetry(constraint, need))
    return raised_requirement(entry, needs)


def _entries(kind: str, text: str) -> list:
    """The requirements a file declares, in order (poetry's as (name, constraint)), and its
    Python floor (Python)."""
    try:
        if kind == "toml":
            return _toml_entries(tomllib.loads(text))
        if kind == "cfg":
            return _cfg_entries(text)
        if kind == "py":
            return _py_entries(text)
    except (tomllib.TOMLDecodeError, configparser.Error, SyntaxError, ValueError):
        return []
    return [_requirement_line(line) for line in text.splitlines() if _requirement_line(line)]


def _requirement_line(line: str) -> str:
    line = line.split(" #", 1)[0].split("#", 1)[0].strip()
    return "" if line.startswith("-") else line


def _toml_entries(data: dict) -> list:
    project = data.get("project") or {}
    out: list = [d for d in project.get("dependencies") or [] if isinstance(d, str)]
    for extra in (project.get("optional-dependencies") or {}).values():
        out += [d for d in extra or [] if isinstance(d, str)]
    if isinstance(project.get("requires-python"), str):
        out.append(Python(project["requires-python"]))
    poetry = (data.get("tool") or {}).get("poetry") or {}
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables += [(g or {}).get("dependencies") for g in (poetry.get("group") or {}).values()]
    for table in tables:
        for name, spec in (table or {}).items():
            if isinstance(spec, dict):
                spec = spec.get("version")
            if isinstance(spec, str):
                out.append((name, spec))
    return out


def _cfg_entries(text: str) -> list:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    values = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values += [v for _, v in parser.items("options.extras_require")]
    out: list = [r for v in values for r in map(_requirement_line, v.splitlines()) if r]
    if parser.has_option("options", "python_requires"):
        out.append(Python(parser.get("options", "python_requires").strip()))
    return out


def _py_entries(text: str) -> list:
    """setup.py's requirements written as literal strings (the one reader:
    hcmigrate.verify.project_deps) and its `python_requires=` when a literal string."""
    out: list = [
        requirement
        for _, requirements in setup_py_declarations(text)
        for requirement, literal in requirements or []
        if literal
    ]
    python = setup_py_value(text, "python_requires")
    if isinstance(python, str):
        out.append(Python(python))
    return out


def _replace(kind: str, text: str, old, new, count: int) -> tuple[str, list[tuple[int, int]]]:
    """`text` with each place that declares `old` declaring `new`, and those places (line,
    column); Unsafe unless the places found are as many as the requirements read (nothing
    else, a comment, is touched)."""
    if isinstance(old, tuple):  # poetry: `jax = "^0.4.1"` or `jax = {version = "^0.4.1", ...}`
        name = re.escape(old[0])
        pattern = (
            rf"^[ \t]*[\"']?{name}[\"']?[ \t]*=[ \t]*(?:\{{[^}}\n]*?\bversion[ \t]*=[ \t]*)?"
            rf"(?P<q>[\"']){re.escape(old[1])}(?P=q)"
        )
        value = f"{new[1]}"
        span_of = lambda m: (m.end() - 1 - len(old[1]), m.end() - 1)  # noqa: E731
    elif isinstance(old, Python) and kind != "py":  # `requires-python = ">=3.8"`
        key = "requires-python" if kind == "toml" else "python_requires"
        spec = re.escape(old.spec)
        value_re = (
            rf"[ \t]*(?P<v>{spec})[ \t]*\r?$"
            if kind == "cfg"
            else rf"(?P<q>[\"'])(?P<v>{spec})(?P=q)"
        )
        pattern = rf"^[ \t]*{key}[ \t]*=[ \t]*{value_re}"
        value = new.spec
        span_of = lambda m: m.span("v")  # noqa: E731
    elif kind in ("toml", "py"):  # (setup.py's python_requires too: its string, where it is)
        old, new = (old.spec, new.spec) if isinstance(old, Python) else (old, new)
        pattern = rf"(?P<q>[\"']){re.escape(old)}(?P=q)"
        value = new
        span_of = lambda m: (m.start() + 1, m.end() - 1)  # noqa: E731
    else:
        # (a line of its own, or setup.cfg's first value after `key =`)
        key = r"(?:[\w.-]+[ \t]*=[ \t]*)?" if kind == "cfg" else ""
        pattern = rf"^[ \t]*{key}{re.escape(old)}(?=[ \t]*(?:#[^\n]*)?\r?$)"
        value = new
        span_of = lambda m: (m.end() - len(old), m.end())  # noqa: E731
    found = list(re.finditer(pattern, text, re.MULTILINE))
    if len(found) != count:
        raise Unsafe(f"`{_shown(kind, old)}` is written {len(found)} times, declared {count}")
    places = []
    for m in found:
        start = span_of(m)[0]
        places.append((text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)))
    for m in reversed(found):
        start, end = span_of(m)
        text = text[:start] + value + text[end:]
    return text, places
