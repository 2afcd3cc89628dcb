"""Which names a module binds to the legacy API at module level (and so may re-export), read
leniently (the pre-filter's phase 2 follows them from module to module), and a file's dotted
module name. The project model (hcmigrate.project_model.model) resolves them exactly.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.facts import LEGACY_MODULE as LEGACY


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
