"""Legacy names passed from module to module: which names a module binds to the legacy API at
module level (and so re-exports), which names a module imports from others, and from both the
re-export table of a run (which qualified names stand for legacy ones, and which modules take
them from where).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.errors import FileError
from hcmigrate.facts import LEGACY_MODULE as LEGACY
from hcmigrate.syntax import non_docstring_strings
from hcmigrate.files import read_regular

_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class ReExport:
    module: str  # dotted module name of the re-exporting file (best effort from the path)
    names: frozenset[str]  # names it binds at module level that are (or hold) legacy objects
    targets: tuple[tuple[str, str], ...] = ()  # (name, legacy qualified name it stands for)


def module_name(path: str | Path) -> str:
    """Dotted module name from the file's place among packages (folders with __init__.py)."""
    path = Path(path).resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    d = path.parent
    while (d / "__init__.py").exists() and d != d.parent:
        parts.append(d.name)
        d = d.parent
    return ".".join(reversed(parts)) or path.stem


def legacy_binding_targets(
    text: str, extra_modules: dict[str, dict[str, str]] | None = None
) -> dict[str, str]:
    """As legacy_bindings, with what each name stands for: `{"hcb": "jax.experimental.host_callback",
    "tap": "jax.experimental.host_callback.id_tap"}` (targets through `extra_modules`, a map of
    module -> {name: target}, come from the module that re-exports them)."""
    try:
        tree = ast.parse(text)
        return binding_targets(tree, extra_modules or {})
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # (too deep: nothing known)
        return {}


def binding_targets(tree: ast.Module, extra_modules: dict[str, dict[str, str]]) -> dict[str, str]:
    names: dict[str, str] = {}

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == LEGACY or a.name.startswith(LEGACY + "."):
                        if a.asname:
                            names[a.asname] = a.name
                        else:
                            names[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                for a in node.names:
                    full = f"{mod}.{a.name}"
                    if mod == LEGACY or full == LEGACY or mod.startswith(LEGACY + "."):
                        names[a.asname or a.name] = full
                    else:
                        last = mod.rsplit(".", 1)[-1] if mod else ""
                        for key, exported in extra_modules.items():
                            stem = key.rsplit(".", 1)[-1]
                            if (last == stem or mod.endswith(key)) and (
                                a.name in exported or a.name == "*"
                            ):
                                if a.name == "*":
                                    names.update(exported)
                                else:
                                    names[a.asname or a.name] = exported[a.name]
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                visit(getattr(node, "finalbody", []))
            elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
                # `tap = hcb.id_tap` / `hcb2 = hcb`
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in names:
                    dotted = ast.unparse(node.value)
                    target = names[root.id] + dotted[len(root.id) :] if names[root.id] else ""
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            names[t.id] = target

    visit(tree.body)
    return names


def imported_names(text: str, own_module: str, is_package: bool = False) -> set[str]:
    """Qualified names a module takes from other modules: `from M import N` gives "M.N"
    (relative imports resolved against `own_module`, a package's `__init__` when
    `is_package`), `import M` then `M.N` gives "M.N"."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    bound_modules: dict[str, str] = {}
    package = own_module.rsplit(".", 1)[0] if "." in own_module else ""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "import " in node.value
        ):
            # code kept in a string (model definitions run with `exec`) imports too
            found |= imported_names(node.value, own_module, is_package)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = own_module.split(".") + (["__init__"] if is_package else [])
                anchor = (
                    ".".join(parts[: max(0, len(parts) - node.level)]) if own_module else package
                )
                base = f"{anchor}.{base}".strip(".") if base else anchor
            for alias in node.names:
                found.add(f"{base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound_modules[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.Attribute):
            chain = []
            root = node
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound_modules:
                found.add(".".join([bound_modules[root.id], *reversed(chain)]))
    return found


@dataclass(frozen=True)
class ReexportPlan:
    """What a run knows across modules (hcmigrate.api.Options.reexports and .reexporters_imported)."""

    table: tuple[tuple[str, str], ...]  # ("pkg.mod.name", legacy qualified name) taken elsewhere
    importers: dict[int, tuple[tuple[str, tuple[str, ...]], ...]]  # file index -> (module, names)


def plan_reexports(scanned, targets) -> ReexportPlan:
    """From a pre-filter scan (hcmigrate.prefilter.ScanResult) over `targets`
    (hcmigrate.discover.Target): the legacy names that modules of the tree import from other
    modules of the tree (the codemod resolves them in the importers, and keeps them importable
    in the exporting module), and for each file the re-exporting modules it imports."""
    table: tuple[tuple[str, str], ...] = ()
    used_by: dict[int, set[str]] = {}  # importer -> the names its code uses (not docstrings)
    if scanned.reexports and scanned.reexport_hits:  # some module takes legacy names from another
        taken: set[str] = set()
        for i in scanned.candidates:
            if not targets[i].notebook:
                path = targets[i].path
                try:
                    text = read_regular(path).decode("utf-8-sig")
                    taken |= imported_names(
                        text, module_name(path), is_package=path.name == "__init__.py"
                    )
                    if i in scanned.reexport_hits:
                        used_by[i] = _names_in_code(text)
                except (
                    FileError,
                    UnicodeDecodeError,
                    SyntaxError,
                    ValueError,
                    RecursionError,
                    MemoryError,
                ):
                    continue  # (the per-file step reports what is wrong with it)
        table = tuple(
            sorted(
                (f"{r.module}.{name}", target)
                for r in scanned.reexports
                for name, target in r.targets
                if target
                and (
                    f"{r.module}.{name}" in taken
                    or any(t.startswith(f"{r.module}.{name}.") for t in taken)
                )
            )
        )
    exports = {r.module: r.names for r in scanned.reexports}
    kept = {key for key, _ in table}  # names the exporting module keeps importable
    importers = {}
    for i, mods in scanned.reexport_hits.items():
        used = used_by.get(i)  # (None: a notebook, or a file the per-file step will report)
        importers[i] = tuple(
            (m, tuple(sorted(names)))
            for m in mods
            if m in exports
            and (names := {n for n in exports[m] if f"{m}.{n}" not in kept})
            and (used is None or not used.isdisjoint(names))
        )
    return ReexportPlan(table, importers)


def _names_in_code(text: str) -> set[str]:
    """The identifiers a module's code uses, and the words of its strings that are not
    docstrings (code run with `exec`). A name mentioned only in a docstring or a comment is
    no use of it. Raises what `ast.parse` raises."""
    tree = ast.parse(text)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.split(".")[0])
            found.add(node.name.rsplit(".", 1)[-1])
    for node in non_docstring_strings(tree):
        found.update(_WORDS.findall(node.value))
    return found
