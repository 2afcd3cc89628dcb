"""`--project-deps`: the project's own dependencies, for the legacy reference environment.

Read from the project's metadata as its packaging tools declare them, never by running
anything: `[project]` (dependencies and the test extras), poetry's
`[tool.poetry.dependencies]` (and its `test` group; `dev` when asked), setup.cfg's
`install_requires` (and test extras), and setup.py's `install_requires` when it is a literal
list (read with `ast`). The `dev` extras only when asked (--project-deps-dev), and never the
development tooling an extra lists (pre-commit, tox, sphinx, linters: DEV_TOOLING). Requirement files only when chosen (`--project-deps-from FILE`): a
repository's `requirements-doc.txt` is a docs stack, not what its tests need. What could not be
used (a git URL, a local path, a computed list) is skipped and said, with why.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# Requirements verify pins or brings itself: never taken from the project.
OWN_REQUIREMENTS = {"jax", "jaxlib", "pytest", "pytest-xdist", "hcmigrate"}
TEST_EXTRAS = ("test", "tests", "testing")
RUNTIME_SOURCES = ("[project] dependencies", "install_requires", "[tool.poetry.dependencies]")
DEV_EXTRAS = ("dev",)  # (only with --project-deps-dev: a contributor's whole toolbox)
# Development tooling a test run never imports (hooks, task runners, docs builders, linters,
# release tools): left out of every extra, said in the report.
DEV_TOOLING = re.compile(
    r"^(pre-commit|tox|nox|sphinx.*|myst-.*|nbsphinx|jupyter-book|mkdocs.*|furo|"
    r"pydata-sphinx-theme|black|ruff|flake8.*|pylint|mypy|isort|yapf|autopep8|pyflakes|"
    r"pycodestyle|pydocstyle|pyright|codespell|build|twine|bump2version|pip-tools|"
    r"setuptools-scm|setuptools_scm|types-.*)$",
    re.I,
)
POETRY_TEST_GROUPS = ("test", "tests", "testing")
METADATA_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


@dataclass
class Dependencies:
    requirements: list[str] = field(default_factory=list)
    used: list[str] = field(default_factory=list)  # sources read, e.g. "setup.cfg install_requires"
    skipped: list[str] = field(default_factory=list)  # what was left out, and why
    # (source, requirement) of every requirement taken, the project's own pins of jax included
    # (the codemod reads its JAX pin from here: hcmigrate.config.pinned_jax)
    declared: list[tuple[str, str]] = field(default_factory=list)
    tooling: list[str] = field(default_factory=list)  # dev tooling an extra lists, left out
    with_dev: bool = False  # --project-deps-dev: the dev extras as they are, tooling included
    # requirements files read because setup.py reads install_requires from them (resolved)
    read_files: set = field(default_factory=set)

    def add(self, source: str, requirements: list[str]) -> None:
        """Take `requirements` from `source` (those that pip can install from a registry)."""
        taken = 0
        for requirement in requirements:
            why = _unusable(requirement)
            if why:
                self.skipped.append(f"{requirement} ({source}: {why})")
                continue
            name = _name(requirement)
            if not name:
                self.skipped.append(f"{requirement} ({source}: not a requirement)")
                continue
            if (
                not self.with_dev
                and DEV_TOOLING.match(name)
                and not source.endswith(RUNTIME_SOURCES)
            ):
                self.tooling.append(name)
                continue
            taken += 1
            self.declared.append((source, requirement))
            if name not in OWN_REQUIREMENTS and requirement not in self.requirements:
                self.requirements.append(requirement)
        if taken:
            self.used.append(source)

    def notes(self) -> list[str]:
        used = ", ".join(self.used) or "none found"
        notes = [f"project dependencies from: {used}"]
        skipped = list(self.skipped)
        if self.tooling:
            names = ", ".join(dict.fromkeys(self.tooling))
            skipped.append(f"{names} (development tooling, not what the tests import)")
        if skipped:
            notes.append(f"project dependencies skipped: {'; '.join(skipped)}")
        return notes


def dependency_root(start: Path) -> Path | None:
    """The project folder: the project layer's owner of `start` (the nearest folder above it
    with packaging metadata, never past a VCS root: hcmigrate.projects.ownership)."""
    from hcmigrate.projects.ownership import ProjectIndex

    owner = ProjectIndex().owner(start)
    return owner.root if owner is not None else None


def project_dependencies(
    root: Path, chosen_files: tuple[Path, ...] = (), *, dev: bool = False
) -> Dependencies:
    """The dependencies of the project in `root` (see the module's docstring). `dev`: poetry's
    dev group too."""
    deps = Dependencies(with_dev=dev)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            deps.skipped.append(f"pyproject.toml (cannot be read: {e})")
            data = {}
        _pep621(data, deps, dev)
        _poetry(data, deps, dev)
    if (root / "setup.cfg").is_file():
        _setup_cfg(root / "setup.cfg", deps, dev)
    if (root / "setup.py").is_file():
        _setup_py(root / "setup.py", deps, dev)
    for path in chosen_files:
        deps.add(str(path), _requirement_file(path, deps))
    chosen = {p.resolve() for p in chosen_files} | deps.read_files
    for path in sorted(root.glob("requirements*.txt")):
        if path.resolve() not in chosen:
            deps.skipped.append(f"{path.name} (not chosen: --project-deps-from {path.name})")
    return deps


def _extras(dev: bool) -> tuple[str, ...]:
    return TEST_EXTRAS + (DEV_EXTRAS if dev else ())


def _pep621(data: dict, deps: Dependencies, dev: bool = False) -> None:
    project = data.get("project") or {}
    deps.add("pyproject.toml [project] dependencies", list(project.get("dependencies") or []))
    if "dependencies" in (project.get("dynamic") or []):
        deps.skipped.append("pyproject.toml [project] dependencies (dynamic: set by the build)")
    extras = project.get("optional-dependencies") or {}
    for extra in _extras(dev):
        if extra in extras:
            deps.add(f"pyproject.toml [project] extra {extra!r}", list(extras[extra] or []))


def _poetry(data: dict, deps: Dependencies, dev: bool) -> None:
    poetry = (data.get("tool") or {}).get("poetry") or {}
    tables = [("[tool.poetry.dependencies]", poetry.get("dependencies") or {})]
    groups = poetry.get("group") or {}
    wanted = POETRY_TEST_GROUPS + (("dev",) if dev else ())
    for group in wanted:
        if group in groups:
            table = (groups[group] or {}).get("dependencies") or {}
            tables.append((f"[tool.poetry.group.{group}.dependencies]", table))
    if dev and poetry.get("dev-dependencies"):
        tables.append(("[tool.poetry.dev-dependencies]", poetry["dev-dependencies"]))
    if not dev and ("dev" in groups or poetry.get("dev-dependencies")):
        deps.skipped.append("poetry's dev group (not asked: --project-deps-dev)")
    for title, table in tables:
        requirements = []
        for name, spec in table.items():
            if name.lower() == "python":
                continue
            requirement, why = _from_poetry(name, spec)
            if why:
                deps.skipped.append(f"{name} (pyproject.toml {title}: {why})")
            else:
                requirements.append(requirement)
        deps.add(f"pyproject.toml {title}", requirements)


def _from_poetry(name: str, spec) -> tuple[str, str | None]:
    """A PEP 508 requirement for one poetry dependency, or why there is none."""
    extras = ""
    if isinstance(spec, list):
        return "", "several constraints (one per Python version or platform)"
    if isinstance(spec, dict):
        for key, why in (("git", "a git URL"), ("path", "a local path"), ("url", "a URL")):
            if key in spec:
                return "", why
        if spec.get("optional"):
            return "", "optional (installed by an extra)"
        if spec.get("extras"):
            extras = f"[{','.join(spec['extras'])}]"
        spec = spec.get("version", "*")
    constraint = poetry_constraint(str(spec))
    if constraint is None:
        return "", f"a constraint pip does not read ({spec})"
    return f"{name}{extras}{constraint}", None


def poetry_constraint(spec: str) -> str | None:
    """Poetry's version constraint as pip's: `^1.2` is `>=1.2,<2`, `~1.2` is `>=1.2,<1.3`, a bare
    version is `==`, `*` is any; pip's own operators pass through."""
    spec = spec.strip()
    if spec in ("", "*"):
        return ""
    if "||" in spec:
        return None
    parts = []
    for piece in spec.split(","):
        piece = piece.strip()
        m = re.fullmatch(r"([\^~]=?)?\s*(\d+(?:\.\d+)*)(\.\*)?", piece)
        if m is None:
            if not re.fullmatch(r"(==|!=|<=|>=|<|>|~=)\s*[\w.*+!-]+", piece):
                return None
            parts.append(piece.replace(" ", ""))
            continue
        op, version, star = m.groups()
        numbers = [int(n) for n in version.split(".")]
        if op is None:
            parts.append(f"=={version}{star or ''}")
            continue
        if op == "^":
            bump = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
        else:  # ~ and ~=: the minor version (the major one when only that is given)
            bump = min(1, len(numbers) - 1)
        upper = numbers[: bump + 1]
        upper[-1] += 1
        parts.append(f">={version},<{'.'.join(map(str, upper))}")
    return ",".join(parts)


def _setup_cfg(path: Path, deps: Dependencies, dev: bool = False) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as e:
        deps.skipped.append(f"setup.cfg (cannot be read: {e})")
        return
    if parser.has_option("options", "install_requires"):
        value = parser.get("options", "install_requires")
        if value.strip().startswith(("file:", "attr:")):
            deps.skipped.append(f"setup.cfg install_requires ({value.strip()}: set by the build)")
        else:
            deps.add("setup.cfg install_requires", _lines(value))
    if parser.has_section("options.extras_require"):
        for extra in _extras(dev):
            if parser.has_option("options.extras_require", extra):
                value = parser.get("options.extras_require", extra)
                deps.add(f"setup.cfg extra {extra!r}", _lines(value))


def _setup_py(path: Path, deps: Dependencies, dev: bool = False) -> None:
    """install_requires (and the test extras) of setup.py's `setup(...)` call, when they are
    literals, or strings computed from module-level constants (`f"jax>={_JAX_VERSION}"`,
    `"jax>=" + V`, `"jax>={}".format(V)`, `_JAX_VERSION = "0.4.25"` bound once, at the top
    level, to a literal); never executed."""
    try:
        text = path.read_text(encoding="utf-8")
        declared = setup_py_declarations(text)
    except (OSError, SyntaxError, ValueError) as e:
        deps.skipped.append(f"setup.py (cannot be parsed: {e})")
        return
    for keyword, value in declared:
        if keyword == "install_requires":
            listed = None if value is not None else requirements_file_of(path.parent, text)
            if value is not None:
                deps.add("setup.py install_requires", [r for r, _ in value])
            elif listed is not None:  # (the requirements file setup.py reads them from)
                deps.add(
                    f"setup.py install_requires (read from {listed.name})",
                    _requirement_file(listed, deps),
                )
                deps.read_files.add(listed.resolve())
            else:
                deps.skipped.append("setup.py install_requires (not a literal list)")
        elif keyword == "extras_require":
            deps.skipped.append("setup.py extras_require (not a literal dict)")
        elif keyword not in _extras(dev):
            continue  # (an extra the tests do not need: docs, examples, cuda, ...)
        elif value is None:
            deps.skipped.append(f"setup.py extra {keyword!r} (not a literal list)")
        else:
            deps.add(f"setup.py extra {keyword!r}", [r for r, _ in value])


def setup_py_declarations(text: str) -> list[tuple[str, list[tuple[str, bool]] | None]]:
    """The one reader of setup.py's requirements (`--project-deps`, and the JAX floor the
    codemod raises: hcmigrate.projects.floors): ("install_requires", requirements) and (extra's
    name, requirements) for each extra, each requirement as (its text, written as a literal
    string there); None where the value is not a list read from literals (an extras dict that
    is not one: ("extras_require", None)). SyntaxError for a file Python does not parse."""
    tree = ast.parse(text)
    literals = _constants(tree)
    out: list[tuple[str, list[tuple[str, bool]] | None]] = []
    for call in _setup_calls(tree):
        # install_requires's own name (`install_requires=requirements`): an extra written as
        # `requirements + test_deps` (hoi 0.0.1) repeats it, and it is read with install_requires
        covered = next(
            (
                k.value.id
                for k in call.keywords
                if k.arg == "install_requires" and isinstance(k.value, ast.Name)
            ),
            None,
        )
        for keyword in call.keywords:
            if keyword.arg == "install_requires":
                out.append(("install_requires", _requirements_of(keyword.value, literals)))
            elif keyword.arg == "extras_require":
                node = keyword.value
                if isinstance(node, ast.Name) and node.id in literals:
                    node = literals[node.id]
                if not isinstance(node, ast.Dict) or None in node.keys:
                    out.append(("extras_require", None))
                    continue
                for key, value in zip(node.keys, node.values):
                    name = _literal(key, literals)
                    if not isinstance(name, str):
                        out.append(("extras_require", None))
                        continue
                    out.append((name, _requirements_of(value, literals, covered)))
    return out


def setup_py_value(text: str, keyword: str):
    """The value of `keyword` in setup.py's `setup(...)` call (`python_requires`), read as the
    requirements are: a literal, or computed from module-level constants; None otherwise."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    literals = _constants(tree)
    for call in _setup_calls(tree):
        for k in call.keywords:
            if k.arg == keyword:
                return _literal(k.value, literals)
    return None


def _setup_calls(tree: ast.Module) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "setup"
    ]


def _requirements_of(
    node: ast.expr, literals: dict, covered: str | None = None
) -> list[tuple[str, bool]] | None:
    """A list of requirements (each with: written as a literal string) or None. In an extra
    that repeats install_requires's own name (`covered`), a sum of lists (`requirements +
    test_deps`) is read part by part, that name adding nothing here (it is read with
    install_requires); a computed install_requires stays unread (the codemod names it)."""
    if covered is not None and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        out = []
        for side in (node.left, node.right):
            if covered is not None and isinstance(side, ast.Name) and side.id == covered:
                continue
            part = _requirements_of(side, literals, covered)
            if part is None:
                return None
            out += part
        return out
    if isinstance(node, ast.Name) and node.id in literals:
        node = literals[node.id]
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out = []
    for element in node.elts:
        value = _literal(element, literals)
        if not isinstance(value, str):
            return None
        out.append((value, isinstance(element, ast.Constant)))
    return out


def requirements_file_of(root: Path, setup_py_text: str) -> Path | None:
    """The requirements file a computed install_requires reads (chex:
    `_parse_requirements(os.path.join(here, "requirements", "requirements.txt"))`), when the
    expression names it with string parts; None otherwise. The compat dependency is written
    there, and the JAX floor read and raised there (hcmigrate.projects.compat_dependency,
    hcmigrate.projects.floors)."""
    try:
        tree = ast.parse(setup_py_text)
    except (SyntaxError, ValueError):
        return None
    calls = _setup_calls(tree)
    values = [k.value for c in calls for k in c.keywords if k.arg == "install_requires"]
    if not values or isinstance(values[0], (ast.List, ast.Tuple)):
        return None
    parts = [
        n.value
        for n in ast.walk(values[0])
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    if isinstance(values[0], ast.Name) and not parts:
        # `install_requires=install_requires`, computed from `open("requirements.txt")`
        # elsewhere in the module (SCICO): the one requirements file its value is read from
        named = {
            text
            for text in _strings_flowing_into(tree, values[0].id)
            if text.endswith(".txt") and not Path(text).is_absolute() and (root / text).is_file()
        }
        return root / named.pop() if len(named) == 1 else None
    if not parts or not parts[-1].endswith(".txt"):
        return None
    for k in range(len(parts), 0, -1):
        candidate = Path(*parts[-k:])
        if not candidate.is_absolute() and (root / candidate).is_file():
            return root / candidate
    return None


def _strings_flowing_into(tree: ast.Module, name: str) -> set[str]:
    """The string constants a module-level `name` is computed from: the values assigned to it
    and, in turn, to the names those values read, and the items of a `with` block (`with
    open("requirements.txt") as f:`) whose body assigns one of them. (SCICO:
    `install_requires = [line.strip() for line in lines]`, `lines = f.readlines()` inside
    `with open("requirements.txt") as f`; its `dev_requirements.txt`, read into the extras,
    does not flow there.)"""
    follow, found = {name}, set()
    for _ in range(6):  # (a few hops: constant -> lines -> requirements)
        before = len(follow)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if not any(isinstance(t, ast.Name) and t.id in follow for t in targets):
                    continue
                value = node.value
                if value is None:
                    continue
                follow |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                found |= _strings_in(value)
            elif isinstance(node, ast.With):
                assigned = {
                    t.id
                    for statement in node.body
                    for n in ast.walk(statement)
                    if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Name)
                }
                if assigned & follow:
                    for item in node.items:
                        found |= _strings_in(item.context_expr)
                        if isinstance(item.optional_vars, ast.Name):
                            follow.add(item.optional_vars.id)
        if len(follow) == before:
            break
    return found


def _strings_in(node: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


# pip-compile's header (pip-tools): "This file is autogenerated by pip-compile with Python 3.10"
_PIP_COMPILE = re.compile(r"^#.*\bautogenerated by pip-compile\b", re.IGNORECASE | re.MULTILINE)


def compiled_from(path: Path, text: str) -> Path | None | bool:
    """For a requirements file pip-compile wrote (a lock: never edited by hand), its source
    (`requirements.in` beside it, which pip-compile reads), or None when there is none; False
    for a file pip-compile did not write."""
    if not _PIP_COMPILE.search(text[:2000]):
        return False
    source = path.with_suffix(".in")
    return source if source.is_file() else None


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The names a module binds once, by a top-level `NAME = value` (a name bound anywhere
    else too, by an assignment, a loop, an import or a def, is not a constant)."""
    bound: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names = list(node.names)
        for name in names:
            bound[name] = bound.get(name, 0) + 1
    return {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and bound.get(node.targets[0].id) == 1
    }


def _literal(node: ast.expr, names: dict[str, ast.expr], depth: int = 0):
    """The value of a literal, or of a string computed from `names`' literals (an f-string,
    `+`, `%`, `str.format`); None for anything else."""
    if depth > 20:
        return None

    def again(inner: ast.expr):
        return _literal(inner, names, depth + 1)

    if isinstance(node, ast.Name):
        return again(names[node.id]) if node.id in names else None
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [again(e) for e in node.elts]
        if any(i is None for i in items):
            return None
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        keys, values = [again(k) for k in node.keys if k], [again(v) for v in node.values]
        if len(keys) != len(node.keys) or None in keys or any(v is None for v in values):
            return None
        return dict(zip(keys, values))
    if isinstance(node, ast.JoinedStr):
        parts = [again(v) for v in node.values]
        return "".join(parts) if all(isinstance(p, str) for p in parts) else None
    if isinstance(node, ast.FormattedValue):
        value = again(node.value)
        if node.format_spec is not None or node.conversion not in (-1, ord("s")):
            return None
        return str(value) if isinstance(value, (str, int, float)) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left, right = again(node.left), again(node.right)
        if not isinstance(left, str):
            return None
        if isinstance(node.op, ast.Add):
            return left + right if isinstance(right, str) else None
        return _formatted(left.__mod__, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and not node.keywords
    ):
        template, args = again(node.func.value), [again(a) for a in node.args]
        if isinstance(template, str):
            return _formatted(lambda a: template.format(*a), args)
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _formatted(format_with, args):
    """A string formatted from literal arguments (None: an argument is not one, or the
    format does not apply)."""
    values = args if isinstance(args, (list, tuple)) else [args]
    if any(not isinstance(v, (str, int, float)) for v in values):
        return None
    try:
        return format_with(args)
    except (ValueError, TypeError, KeyError, IndexError):
        return None


def _requirement_file(path: Path, deps: Dependencies) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        deps.skipped.append(f"{path} (cannot be read: {e.strerror})")
        return []
    out = []
    for line in _lines(text):
        if line.startswith("-"):  # -r other.txt, -e ., --index-url ...: pip options
            deps.skipped.append(f"{line} ({path}: a pip option)")
        else:
            out.append(line)
    return out


def _lines(text: str) -> list[str]:
    lines = (line.split(" #", 1)[0].split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def _unusable(requirement: str) -> str | None:
    lowered = requirement.lower()
    if "git+" in lowered or lowered.startswith("git:"):
        return "a git URL"
    if "://" in lowered or " @ " in lowered:
        return "a URL"
    if lowered.startswith((".", "/", "file:")):
        return "a local path"
    return None


def _name(requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(requirement).name.lower().replace("_", "-")
    except InvalidRequirement:
        return ""
