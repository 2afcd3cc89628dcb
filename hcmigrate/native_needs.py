"""The oldest JAX a module's code runs on, computed from what it is written with: each name the
native rewrite writes (facts.NATIVE_SINCE, facts.NATIVE_KEYWORD_SINCE) and each replacement
spelling of the JAX-removals table (jax_removals, `replacement_since`), resolved through the
module's own imports. HCB008 and the raised floor (hcmigrate.projects.floors) read it: on a
module the run rewrites, for the names the rewrite added (written_needs: the project's own uses
need nothing of the run); on a module the run leaves, on the code as written (a tree migrated
already; the project's floor reads what changed since the last commit there, so that a rerun
completes an interrupted run: hcmigrate.projects.metadata_plan). A name first seen in the oldest release measured
(facts.OLDEST_MEASURED_JAX: "that old or older") needs nothing.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from hcmigrate.facts import (
    COMPAT_PACKAGE_JAX_FLOOR,
    NATIVE_KEYWORD_SINCE,
    NATIVE_SINCE,
    OLDEST_MEASURED_JAX,
    ORDERED_IO_SEVERAL_DEVICES_SINCE,
    SHARDED_PROGRAM_APIS,
)
from hcmigrate.jax_removals import REMOVED_APIS, version


def _table() -> dict[str, tuple[int, ...]]:
    since = dict(NATIVE_SINCE)
    for row in REMOVED_APIS:
        if row.replacement and row.replacement_since and row.replacement.startswith("jax"):
            old = since.get(row.replacement, (0,))
            since[row.replacement] = max(old, version(row.replacement_since))
    return since


SINCE = _table()


@dataclass
class Needs:
    """The newest release a module's constructs need, and what needs it (name, line)."""

    jax: tuple[int, ...] = (0,)
    uses: list[tuple[str, int, tuple[int, ...]]] = field(default_factory=list)

    def add(self, name: str, line: int, since: tuple[int, ...]) -> None:
        self.uses.append((name, line, since))
        self.jax = max(self.jax, since)

    def above(self, target: tuple[int, ...]) -> list[tuple[str, int, tuple[int, ...]]]:
        """The uses that need a JAX newer than `target`, newest first."""
        by_line = sorted((u for u in self.uses if u[2] > tuple(target)), key=lambda u: u[1])
        return sorted(by_line, key=lambda u: u[2], reverse=True)


def needs_of(code: str, several_devices: bool = False) -> Needs:
    """What the module `code` needs (nothing for code that does not parse). `several_devices`:
    the project says its code runs on several devices (the several-devices setting); a module
    that names a sharded-program API (facts.SHARDED_PROGRAM_APIS) says so itself."""
    needs = Needs()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return needs
    aliases = _aliases(tree)
    several_devices = several_devices or _names_sharded_programs(tree)
    for node in _unguarded_nodes(tree):
        if _imports_compat_package(node):
            needs.add("hcmigrate_compat", node.lineno, COMPAT_PACKAGE_JAX_FLOOR)
        if isinstance(node, (ast.Attribute, ast.Name)):
            dotted = _dotted(node, aliases)
            if dotted in SINCE and SINCE[dotted] > OLDEST_MEASURED_JAX:
                needs.add(dotted, node.lineno, SINCE[dotted])
        if isinstance(node, ast.Call):
            callee = _dotted(node.func, aliases)
            for keyword in node.keywords:
                since = NATIVE_KEYWORD_SINCE.get((callee, keyword.arg))
                if since:
                    needs.add(f"{callee}({keyword.arg}=)", node.lineno, since)
            if several_devices and _ordered_io(callee, node):
                needs.add(
                    f"{callee}(ordered=True) on several devices",
                    node.lineno,
                    ORDERED_IO_SEVERAL_DEVICES_SINCE,
                )
    return needs


def _ordered_io(callee: str | None, node: ast.Call) -> bool:
    return callee == "jax.experimental.io_callback" and any(
        k.arg == "ordered" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in node.keywords
    )


def _names_sharded_programs(tree: ast.AST) -> bool:
    return any(
        (getattr(n, "id", None) or getattr(n, "attr", None)) in SHARDED_PROGRAM_APIS
        for n in ast.walk(tree)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


def written_needs(original: str, code: str, several_devices: bool = False) -> Needs:
    """What `code`, the rewrite of `original`, needs for what the rewrite wrote: the uses of
    each name beyond those the original has (its own uses, and its other names, need nothing
    of the run), those on lines the rewrite wrote first."""
    from hcmigrate.codemod.line_diff import opcodes

    if original == code:
        return Needs()
    before = Counter(name for name, _, _ in needs_of(original, several_devices).uses)
    after = needs_of(code, several_devices)
    added = Counter(name for name, _, _ in after.uses) - before
    out = Needs()
    if not added:
        return out
    kept = set()  # (the lines of `code` the rewrite kept as they were, 1-based)
    for tag, _, _, j1, j2 in opcodes(original.splitlines(), code.splitlines()):
        if tag == "equal":
            kept.update(range(j1 + 1, j2 + 1))
    for name, count in added.items():
        uses = sorted((u for u in after.uses if u[0] == name), key=lambda u: (u[1] in kept, u[1]))
        for use in sorted(uses[:count], key=lambda u: u[1]):
            out.add(*use)
    return out


# A use the code itself guards needs nothing of the declared range: the body of an `if` that
# compares a version (`if module_version("jax") >= (0, 3, 17): from jax import pure_callback`,
# netket's switch) and of a `try:` whose handler catches the missing name or module.
_MISSING_NAME_ERRORS = frozenset(
    {"ImportError", "ModuleNotFoundError", "AttributeError", "Exception"}
)


def _unguarded_nodes(tree: ast.AST):
    """The nodes of `tree` outside version switches and import fallbacks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        guarded = _guarded_bodies(node)  # (once per node, not once per child)
        stack.extend(c for c in ast.iter_child_nodes(node) if c not in guarded)


def _guarded_bodies(node: ast.AST) -> set:
    if _tests_version(node):
        # (both branches: the code chooses by version itself, and the branch for older JAX
        # is the one a floor must not be raised for)
        return set(node.body) | set(node.orelse)
    if isinstance(node, ast.Try) and any(
        _catches_missing_names(handler.type) for handler in node.handlers
    ):
        return set(node.body)
    return _after_version_exit(node)


def _tests_version(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and any(
        "version" in (getattr(n, "id", None) or getattr(n, "attr", None) or "").lower()
        for n in ast.walk(node.test)
    )


def _after_version_exit(node: ast.AST) -> set:
    """The statements of a block after a version test that leaves it (`if module_version("jax")
    < (0, 3, 17): raise RuntimeError(...)`, netket's nn/utils.py): they run only past the
    test, which the code makes itself."""
    body = getattr(node, "body", None)
    if not isinstance(body, list):
        return set()
    for i, statement in enumerate(body):
        if (
            _tests_version(statement)
            and statement.body
            and isinstance(statement.body[-1], (ast.Raise, ast.Return))
        ):
            return set(body[i + 1 :])
    return set()


def _catches_missing_names(kind: ast.expr | None) -> bool:
    if kind is None:
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(getattr(k, "id", None) in _MISSING_NAME_ERRORS for k in kinds)


def _imports_compat_package(node: ast.AST) -> bool:
    """`from hcmigrate_compat import host_callback as hcb`, `import hcmigrate_compat...`."""
    if isinstance(node, ast.ImportFrom):
        return not node.level and (node.module or "").split(".")[0] == "hcmigrate_compat"
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "hcmigrate_compat" for a in node.names)
    return False


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it stands for, from the module's imports of jax."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "jax":
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else "jax"
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] == "jax":
                for a in node.names:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])
