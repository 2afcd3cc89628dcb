"""One cheap pass over a module: parents, names, calls, and which local names can be legacy.

libcst's QualifiedNameProvider and ParentNodeProvider cost ~20x a parse on their own; the
codemod only needs qualified names for expressions rooted at a name that an import of the
legacy module (or of a re-exported legacy name) bound, and parents of a few nodes. This
pass finds those roots so the codemod asks libcst's scope analysis about them alone.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.facts import LEGACY_MODULE, LEGACY_PUBLIC_NAMES
from hcmigrate.resolve import dotted_name, import_guard_fallbacks

_PARENT, _LEAF = LEGACY_MODULE.rsplit(".", 1)


class Survey(cst.CSTVisitor):
    def __init__(self, text: str, reexports: dict[str, str]):
        super().__init__()
        self.parents: dict[int, cst.CSTNode] = {}
        self.names: set[str] = set()
        self.calls: list[cst.Call] = []
        self.legacy_roots: set[str] = set()
        if LEGACY_MODULE in text:
            self.legacy_roots.add(LEGACY_MODULE.split(".", 1)[0])  # I5: `jax.experimental.host_callback.f`
        self._reexports = reexports
        self._stack: list[cst.CSTNode] = []
        self.legacy_star = False  # `from jax.experimental.host_callback import *`
        self.guard_fallbacks: set[str] = set()  # I7: `except ImportError: hcb = None`

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[id(node)] = self._stack[-1]
        self._stack.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        super().on_leave(original_node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Try(self, node: cst.Try) -> None:
        self.guard_fallbacks |= import_guard_fallbacks(node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name == LEGACY_MODULE or self._reexported_module(name):
                self.legacy_roots.add(alias.asname.name.value if alias.asname else name.split(".", 1)[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module) or ""
        if isinstance(node.names, cst.ImportStar):
            if module == LEGACY_MODULE:
                self.legacy_star = True
                self.legacy_roots |= LEGACY_PUBLIC_NAMES
            return
        for alias in node.names:
            name = alias.name.value
            bound = alias.asname.name.value if alias.asname else name
            full = f"{module}.{name}"
            if module == LEGACY_MODULE or full == LEGACY_MODULE or full in self._reexports or self._reexported_module(full):
                self.legacy_roots.add(bound)

    def worth_migrating(self) -> bool:
        """Could any rule apply? False for modules that only mention host_callback in passing
        (comments, other names) without importing it, and call no pure_callback(vectorized=)
        or host_callback config update: they are left alone without the costly analysis."""
        if self.legacy_roots:
            return True
        for call in self.calls:
            tail = dotted_name(call.func) or ""
            if tail.endswith("pure_callback") and any(a.keyword is not None and a.keyword.value == "vectorized" for a in call.args):
                return True
            if tail.endswith("update") and call.args and "host_callback" in cst.Module(body=[]).code_for_node(call.args[0].value):
                return True
        return False

    def _reexported_module(self, module: str) -> bool:
        return any(key.startswith(module + ".") for key in self._reexports)


def root_name(node: cst.CSTNode) -> str | None:
    """`a` for `a`, `a.b.c`; None for anything else."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None
