"""Branches kept for old JAX: code that only runs below a JAX version, by a guard the module
writes itself (`if jax.__version__ < "0.4.26":`, `if version.parse(jax.__version__) <
version.parse("0.5"): ... else: ...`, `OLD_JAX = ...` tested later, `__version_info__`
tuples). The host_callback code of such a branch is what that old JAX runs: the codemod leaves
it as it is, imports included (rewriting it broke what the project keeps it for, e.g. `grad` of
an io_callback, which jax 0.4.30 refuses), and HCB009 says so, or that the project's floor
never runs it, or that it fails where host_callback is a stub (jax 0.4.35 up to its bound).

Read from Python's ast, once per text: the line spans of the branches, each with its bound.
An import guard (`try: import ...host_callback as hcb / except ImportError: hcb = None`, then
`if hcb is not None:`) keeps no branch: jax 0.4.35 to 0.7 import the stub module, so that code
runs there and fails unless rewritten (HCB004 reports the test; fixtures/fidelity/
c11_guarded_import runs on jax 0.6.2).
"""

from __future__ import annotations

import ast
import functools
import re
import weakref
from dataclasses import dataclass

_VERSION_ATTRIBUTES = frozenset({"__version__", "__version_info__", "_version"})


@dataclass(frozen=True)
class LegacyBranch:
    first_line: int  # the branch's first and last lines (its body, not the `if` line)
    last_line: int
    test_line: int  # the line of the guard
    bound: tuple[int, ...]  # it runs on JAX below this version (at or below, with `inclusive`)
    inclusive: bool = False

    def holds(self, line: int) -> bool:
        return self.first_line <= line <= self.last_line

    @property
    def shown_bound(self) -> str:
        return ("<= " if self.inclusive else "< ") + ".".join(map(str, self.bound))


@functools.lru_cache(maxsize=16)
def legacy_branches(text: str) -> tuple[LegacyBranch, ...]:
    """The branches of `text` that run only below some JAX version."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    jax_names = _jax_names(tree)
    flags = _version_flags(tree, jax_names)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = _below(node.test, jax_names, flags)
            if test is None:
                continue
            below, (bound, inclusive) = test
            block = node.body if below else node.orelse
            if not block:
                continue
            found.append(
                LegacyBranch(
                    block[0].lineno,
                    max(getattr(s, "end_lineno", s.lineno) for s in block),
                    node.lineno,
                    bound,
                    inclusive,
                )
            )
    return tuple(found)


def branch_at(text: str, line: int) -> LegacyBranch | None:
    """The innermost legacy branch holding `line`, if any."""
    holding = [b for b in legacy_branches(text) if b.holds(line)]
    return min(holding, key=lambda b: b.last_line - b.first_line) if holding else None


def kept_branches(index) -> list[tuple[LegacyBranch, int]]:
    """The legacy branches that hold a name bound to host_callback (what the rewrite leaves),
    each with the line of its first such name (hcmigrate.codemod.node_index.NodeIndex)."""
    if not legacy_branches(index.text):
        return []
    first: dict[LegacyBranch, int] = {}
    for name in index.name_nodes:
        if name.value in index.legacy_roots and (position := index.start(name)) is not None:
            branch = branch_at(index.text, position[0])
            if branch is not None:
                first[branch] = min(first.get(branch, position[0]), position[0])
    return sorted(first.items(), key=lambda item: item[1])


def in_kept_branch(index, node) -> bool:
    """Does `node` (an original node) stand in a legacy branch that holds host_callback
    code? Then nothing in it is rewritten: the branch is for old JAX as a whole."""
    if not legacy_branches(index.text):
        return False
    position = index.start(node)
    if position is None:
        return False
    kept = _KEPT.get(index)
    if kept is None:
        kept = _KEPT[index] = [branch for branch, _ in kept_branches(index)]
    return any(branch.holds(position[0]) for branch in kept)


def in_legacy_branch(index, node) -> bool:
    """Does `node` stand in any branch that runs only below a JAX version the module tests?
    A removed JAX API there is what that old JAX has: the JAX1xx rules leave it (rewriting it
    broke the branch the project keeps for old JAX: BrainPy's `else: jnp.trapz`)."""
    branches = legacy_branches(index.text)
    position = index.start(node) if branches else None
    return position is not None and any(b.holds(position[0]) for b in branches)


# the kept branches of each node index, found once (an index lives as long as its migration)
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jax_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names of the jax module, and module-level names bound to its version (`JAX_VERSION =
    tuple(int(p) for p in jax.__version__.split("."))`, `from jax import __version__`)."""
    modules, versions = {"jax"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == "jax" and a.asname}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module in ("jax", "jax.version"):
            versions |= {
                a.asname or a.name for a in statement.names if a.name in _VERSION_ATTRIBUTES
            }
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and not isinstance(statement.value, ast.Compare)
            and _is_jax_version(statement.value, (modules, versions))
        ):
            versions.add(statement.targets[0].id)
    return modules, versions


def _version_flags(tree: ast.Module, jax_names) -> dict[str, tuple[bool, tuple]]:
    """Module-level names bound once to a JAX version test (`OLD_JAX = jax.__version__ <
    "0.5"`): what `if OLD_JAX:` means."""
    flags: dict[str, tuple[bool, tuple]] = {}
    bound_twice = set()
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            name = statement.targets[0].id
            test = _below(statement.value, jax_names, {})
            if name in flags:
                bound_twice.add(name)
            if test is not None:
                flags[name] = test
    return {k: v for k, v in flags.items() if k not in bound_twice}


def _below(test: ast.expr, jax_names, flags) -> tuple[bool, tuple] | None:
    """(True if the test holds below the bound / False if it holds at or above it, (bound,
    inclusive)), or None where `test` is no comparison of the JAX version with a literal."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _below(test.operand, jax_names, flags)
        return None if inner is None else (not inner[0], inner[1])
    if isinstance(test, ast.Name):
        return flags.get(test.id)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if _is_jax_version(right, jax_names):
        left, right = right, left
        op = {ast.Lt: ast.Gt(), ast.LtE: ast.GtE(), ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(
            type(op), op
        )
    if not _is_jax_version(left, jax_names):
        return None
    bound = _literal_version(right)
    if bound is None:
        return None
    if isinstance(op, ast.Lt):
        return True, (bound, False)
    if isinstance(op, ast.LtE):
        return True, (bound, True)
    if isinstance(op, ast.GtE):  # the else branch runs below the bound
        return False, (bound, False)
    if isinstance(op, ast.Gt):
        return False, (bound, True)
    return None


def _is_jax_version(node: ast.expr, jax_names) -> bool:
    """`jax.__version__`, `jax.version.__version__`, `jax.__version_info__`, a call given the
    distribution's name (`version("jax")`), or one of them handed to a version parser (`version.parse(...)`, `Version(...)`, `LooseVersion(...)`,
    `tuple(map(int, jax.__version__.split(".")[:2]))`)."""
    modules, versions = jax_names
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in versions:
            return True
        # (the installed distribution's version: `importlib.metadata.version("jax")`,
        # netket's own `module_version("jax")`)
        if isinstance(sub, ast.Call) and any(
            isinstance(a, ast.Constant) and a.value == "jax" for a in sub.args
        ):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in _VERSION_ATTRIBUTES:
            root = sub.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules:
                return True
    return False


def _literal_version(node: ast.expr) -> tuple[int, ...] | None:
    """`"0.4.26"`, `version.parse("0.5")`, `Version("0.5.0")`, `(0, 5)`."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = re.fullmatch(r"(\d+(?:\.\d+)*)", node.value.strip())
        return tuple(int(p) for p in match.group(1).split(".")) if match else None
    if isinstance(node, ast.Tuple) and node.elts:
        parts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(parts) == len(node.elts) and all(isinstance(p, int) for p in parts):
            return tuple(parts)
    return None
