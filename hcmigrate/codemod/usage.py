"""What is still used once the rewrite is done, from the one scope analysis taken before it.

A use is gone when it lies inside a node the rewrite replaced or removed, unless a site
between them was left as it is and kept in the new code (a manual finding's legacy reference
inside a rewritten call); no second scope analysis of the rewritten module is needed.
"""

from __future__ import annotations

import re

import libcst as cst

from hcmigrate.options import Options
from hcmigrate.codemod.legacy_names import dunder_all
from hcmigrate.codemod.resolution import Resolver


class Usage:
    def __init__(
        self, resolver: Resolver, replaced: set[int], options: Options, module, left=frozenset
    ):
        self._resolver = resolver
        self._left = left  # () -> ids of original sites left as they are, in the new code
        self._index = resolver.index
        self._scopes = resolver.scopes
        self._replaced = replaced  # ids of original nodes the rewrite replaced or removed
        self.reexports = resolver.reexports
        self.exported_here = _exported_here(module, options, resolver.index.text)
        # (of those, the names it publishes: `__all__`, or its whole namespace "*"; the others
        # only modules of this run take, and the run rewrote their uses)
        self.published_here = frozenset(dunder_all(module)) | (
            {"*"} if "*" in self.exported_here else set()
        )
        # the packages above this module that hand on a legacy name (their __init__'s
        # `from .taps import id_tap`, which names no legacy module: no run rewrites it):
        # name -> their dotted names
        here = options.module_name or ""
        self.passed_on: dict[str, tuple[str, ...]] = {}
        for key in dict(options.reexports):
            package, _, name = key.rpartition(".")
            if package and here.startswith(package + "."):
                self.passed_on[name] = (*self.passed_on.get(name, ()), package)

    def gone(self, node: cst.CSTNode) -> bool:
        left = self._left()
        while node is not None:
            if id(node) in left:
                return False
            if id(node) in self._replaced:
                return True
            node = self._resolver.parent(node)
        return False

    def _still_used(self, bindings) -> bool:
        return any(self._use_left(offset) for binding in bindings for offset in binding.accesses)

    def _use_left(self, offset: int) -> bool:
        name = self._index.name_at(offset)
        return name is None or not self.gone(name)

    def still_used(self, import_node: cst.CSTNode, bound: str) -> bool:
        offset = self._index.start_offset(import_node)
        if offset is None:
            return True
        return self._still_used(b for b in self._scopes.imports.get(offset, ()) if b.key == bound)

    def ever_used(self, import_node: cst.CSTNode, bound: str) -> bool:
        offset = self._index.start_offset(import_node)
        if offset is None:
            return True
        return any(b.accesses for b in self._scopes.imports.get(offset, ()) if b.key == bound)

    def imported_elsewhere(self, import_node: cst.CSTNode, module: str) -> bool:
        offset = self._index.start_offset(import_node)
        if offset is None:
            return False
        return any(
            b.real == module and b.statement != offset
            for b in self._scopes.bindings_at_statement(offset, module)
        )

    def name_still_read(self, anchor: cst.CSTNode, name: str) -> bool:
        """Is `name`, as bound in the scope of `anchor`, still read anywhere (any scope)?"""
        offset = self._index.start_offset(anchor)
        return offset is None or self._still_used(self._scopes.bindings_at(offset, name))

    def star_names_still_used(self) -> bool:
        return any(not self.gone(n) for n in self._resolver.star_refs.values())


# The module's namespace handed to code that reads any name from it: copied (`globals().copy()`,
# `dict(globals())`, `{**globals()}`) or passed to exec/eval. A lookup by a name the module
# spells (`globals()["f"]`) is not that.
_HANDS_OUT_NAMESPACE = re.compile(
    r"\b(?:globals|vars)\(\s*\)\s*\.copy\(|\bdict\(\s*(?:globals|vars)\(\s*\)\s*\)"
    r"|\*\*\s*(?:globals|vars)\(\s*\)|\b(?:exec|eval)\([^)]*\b(?:globals|vars)\(\s*\)"
)


def _exported_here(module: cst.Module, options: Options, text: str) -> frozenset[str]:
    """Names of this module that other modules import: listed in `__all__`, or imported from
    it by another module of the migrated tree; "*" when the module hands out its whole
    namespace (`globals()`, as a namespace for `exec`)."""
    names = set(dunder_all(module))
    if _HANDS_OUT_NAMESPACE.search(text):
        names.add("*")
    prefix = f"{options.module_name}." if options.module_name else None
    if prefix is not None:
        names |= {
            k[len(prefix) :]
            for k in dict(options.reexports)
            if k.startswith(prefix) and "." not in k[len(prefix) :]
        }
    return frozenset(names)
