"""Imports of the legacy module.

HCB001: with the native strategy, an import of host_callback that nothing uses any more is
removed (a guarded `try: import ... / except ImportError: hcb = None` goes as a whole).
HCB701: with `--strategy compat`, every import (and full dotted use) is pointed at
`compat.host_callback`, one line per import, nothing else changes.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from hcmigrate.codemod.comments import KeepCommentsOfRemovedLines
from hcmigrate.diagnostics import Level
from hcmigrate.rules.nodes import parse
from hcmigrate.facts import COMPAT_MODULE, LEGACY_MODULE
from hcmigrate.codemod.legacy_names import dotted_name
from hcmigrate.rules.base import Rule
from hcmigrate.codemod.walk import Transformer

UNUSED_IMPORT = Rule(
    code="HCB001",
    name="legacy-import",
    level=Level.FIXED,
    legacy="import jax.experimental.host_callback as hcb (nothing left uses it)",
    modern="(removed)",
    summary="The import fails on JAX >= 0.8; once no use is left it is removed.",
)
GUARD_KEPT = Rule(
    code="HCB004",
    name="guarded-import-still-used",
    level=Level.MANUAL,
    legacy="try: import ...host_callback as hcb / except ImportError: hcb = None, with `hcb` still tested",
    modern="(left alone)",
    summary="On JAX >= 0.8 the guarded name is always None: code guarded by it silently stops running.",
)
REEXPORT_KEPT = Rule(
    code="HCB005",
    name="reexported-import-kept",
    level=Level.COMPAT_FALLBACK,
    legacy="from jax.experimental.host_callback import id_tap  # imported from here by other modules",
    modern="from compat.host_callback import id_tap",
    summary="A legacy name other modules import from this one is pointed at the compat runtime instead of removed, so importers outside the migrated tree keep working.",
)
REEXPORT_IMPORTER = Rule(
    code="HCB006",
    name="reexport-importer",
    level=Level.MANUAL,
    legacy="from mypkg.taps import id_tap  # mypkg.taps re-exports a legacy name",
    modern="(reported)",
    summary="The file imports legacy names through another module in a way the codemod could not follow; check its uses by hand.",
)
STAR_IMPORT = Rule(
    code="HCB007",
    name="legacy-star-import",
    level=Level.COMPAT_FALLBACK,
    legacy="from jax.experimental.host_callback import *  (a name from it still used)",
    modern="from compat.host_callback import *",
    summary="Uses resolved through the star import are rewritten; if one is left, the star import is pointed at the compat runtime.",
)
COMPAT_IMPORT = Rule(
    code="HCB701",
    name="compat-strategy-import",
    level=Level.FIXED,
    legacy="from jax.experimental import host_callback as hcb",
    modern="from compat import host_callback as hcb",
    summary="--strategy compat: point the import at the compat runtime (no behaviour change).",
)
RULES = (UNUSED_IMPORT, GUARD_KEPT, REEXPORT_KEPT, REEXPORT_IMPORTER, STAR_IMPORT, COMPAT_IMPORT)

_PARENT, _LEAF = LEGACY_MODULE.rsplit(".", 1)  # "jax.experimental", "host_callback"
_COMPAT_PARENT, _COMPAT_LEAF = COMPAT_MODULE.rsplit(".", 1)

Report = Callable[[Rule, cst.CSTNode, str, "Level | None"], None]


def legacy_aliases(
    node: cst.Import | cst.ImportFrom, reexports: dict[str, str] | None = None
) -> list[tuple[cst.ImportAlias, str]]:
    """(alias, bound name) for every alias of `node` that imports the legacy module or a member
    (directly, or a name another module re-exports)."""
    found = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            if dotted_name(alias.name) == LEGACY_MODULE:
                bound = alias.asname.name.value if alias.asname else LEGACY_MODULE
                found.append((alias, bound))
        return found
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return found
    module = dotted_name(node.module)
    for alias in node.names:
        name = alias.name.value
        bound = alias.asname.name.value if alias.asname else name
        if (
            module == LEGACY_MODULE
            or (module == _PARENT and name == _LEAF)
            or f"{module}.{name}" in (reexports or {})
        ):
            found.append((alias, bound))
    return found


def import_to_compat(original: cst.Import | cst.ImportFrom, updated: cst.Import | cst.ImportFrom):
    """The same import pointed at compat.host_callback (aliases kept; other names untouched)."""
    found = legacy_aliases(original)
    if isinstance(original, cst.Import):
        if len(found) == len(updated.names) and all(a.asname for a, _ in found):
            # `import jax.experimental.host_callback as hcb` -> `from compat import host_callback as hcb`
            return cst.ImportFrom(
                module=parse(_COMPAT_PARENT),
                names=[
                    cst.ImportAlias(name=cst.Name(_COMPAT_LEAF), asname=a.asname) for a, _ in found
                ],
            )
        return updated.with_changes(
            names=[
                a.with_changes(name=parse(COMPAT_MODULE))
                if dotted_name(a.name) == LEGACY_MODULE
                else a
                for a in updated.names
            ]
        )
    module = dotted_name(original.module)
    if module == LEGACY_MODULE:
        return updated.with_changes(module=parse(COMPAT_MODULE))
    # from jax.experimental import host_callback [as X][, other]
    if len(found) == len(updated.names):
        return updated.with_changes(module=parse(_COMPAT_PARENT))
    legacy_ids = {id(a) for a, _ in found}
    others = _without(
        updated.names, [u for o, u in zip(original.names, updated.names) if id(o) in legacy_ids]
    )
    compat = cst.ImportFrom(
        module=parse(_COMPAT_PARENT),
        names=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a, _ in found],
    )
    return cst.FlattenSentinel([updated.with_changes(names=others), compat])


def _without(names, drop):
    kept = [a for a in names if not any(a is d for d in drop)]
    if kept:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return kept


class RemoveUnusedLegacyImports(KeepCommentsOfRemovedLines, Transformer):
    """Runs over the rewritten module. Whether a name is still used is answered by the
    codemod from its first scope analysis (the uses it replaced are gone), so this pass needs
    no second one."""

    def __init__(
        self,
        report: Report,
        still_used: Callable[[cst.CSTNode, str], bool],
        name_read: Callable[[cst.CSTNode, str], bool],
        reexports: dict[str, str] | None = None,
        exported_here: frozenset[str] = frozenset(),
        star_still_used: Callable[[], bool] = lambda: True,
        imported_elsewhere: Callable[[cst.CSTNode, str], bool] = lambda node, module: False,
    ):
        super().__init__()
        self._imported_elsewhere = (
            imported_elsewhere  # (import node, module) -> another import binds it too
        )
        self._star_still_used = star_still_used
        self._report = report
        self._still_used = still_used  # (import node, bound name) -> bool
        self._name_read = name_read  # (a node in the name's scope, name) -> bool
        self._reexports = reexports or {}
        self._exported_here = exported_here

    def _unused(self, node: cst.CSTNode, bound: str) -> bool:
        return not self._still_used(node, bound)

    def _prune_star(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        if self._star_still_used() or "*" in self._exported_here:
            self._report(
                STAR_IMPORT,
                original,
                f"names of the star import are still used: pointed at {COMPAT_MODULE}",
                None,
            )
            return updated.with_changes(module=parse(COMPAT_MODULE))
        self._report(UNUSED_IMPORT, original, "unused star import of host_callback removed", None)
        return cst.RemovalSentinel.REMOVE

    def _prune(self, original, updated):
        if (
            isinstance(original, cst.ImportFrom)
            and isinstance(original.names, cst.ImportStar)
            and original.module is not None
            and not original.relative
            and dotted_name(original.module) == LEGACY_MODULE
        ):
            return self._prune_star(original, updated)
        unused = [
            (alias, bound)
            for alias, bound in legacy_aliases(original, self._reexports)
            if self._unused(original, bound)
        ]
        exported = [bound for _, bound in unused if bound in self._exported_here]
        if exported:
            # Other modules import these names from here: keep them importable.
            if legacy_aliases(original):
                self._report(
                    REEXPORT_KEPT,
                    original,
                    f"{', '.join(sorted(exported))} imported from this module by other modules: pointed at {COMPAT_MODULE}",
                    None,
                )
                return import_to_compat(original, updated)
            return updated
        drop = [alias for alias, _ in unused]
        if not drop:
            return updated
        names = [a.evaluated_name for a in drop]
        self._report(UNUSED_IMPORT, original, f"unused import of {', '.join(names)} removed", None)
        keep = _without(
            updated.names,
            [u for o, u in zip(original.names, updated.names) if any(o is d for d in drop)],
        )
        if not keep:
            if (
                isinstance(original, cst.Import)
                and any(dotted_name(a.name) == LEGACY_MODULE and not a.asname for a in drop)
                and not self._imported_elsewhere(original, "jax")
            ):
                # `import jax.experimental.host_callback` also bound `jax`; keep that binding.
                return updated.with_changes(names=[cst.ImportAlias(name=cst.Name("jax"))])
            return cst.RemovalSentinel.REMOVE
        return updated.with_changes(names=keep)

    def leave_Import(self, original_node, updated_node):
        return self._prune(original_node, updated_node)

    def leave_ImportFrom(self, original_node, updated_node):
        return self._prune(original_node, updated_node)

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try):
        """I7: drop a guard whose import is gone and whose fallback name nobody reads."""
        body_left = [s for s in updated_node.body.body if not _is_pass(s)]
        if (
            body_left
            or updated_node.orelse
            or updated_node.finalbody
            or len(updated_node.body.body) == len(original_node.body.body)
        ):
            return updated_node
        anchor = next(
            (
                small
                for line in original_node.body.body
                if isinstance(line, cst.SimpleStatementLine)
                for small in line.body
            ),
            None,
        )
        for handler in updated_node.handlers:
            for stmt in handler.body.body:
                if _is_pass(stmt):
                    continue
                target = _none_assignment_target(stmt)
                if target is None or anchor is None or self._name_read(anchor, target):
                    return updated_node
        kept = [line for line in original_node.leading_lines if line.comment is not None]
        if kept:
            self._orphans().setdefault(self._block_of(original_node), []).extend(kept)
        return cst.RemovalSentinel.REMOVE


def _is_pass(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) for s in stmt.body
    )


def _none_assignment_target(stmt: cst.BaseStatement) -> str | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
        ):
            if isinstance(small.value, cst.Name) and small.value.value == "None":
                return small.targets[0].target.value
    return None


class PointImportsAtCompat(Transformer):
    """--strategy compat: imports and full dotted uses point at compat.host_callback."""

    def __init__(
        self,
        report: Report,
        suppressed: Callable[[cst.CSTNode, str], bool],
        used: Callable[[cst.CSTNode], bool],
        qualified: Callable[[cst.CSTNode], set[str]],
    ):
        super().__init__()
        self._qualified = qualified  # node -> the qualified names it may refer to
        self._report = report
        self._suppressed = suppressed
        self._used = (
            used  # an import nothing uses is removed (by the clean-up), not pointed at compat
        )
        self.needs_dotted_import = False

    def _point(self, original_node, updated_node):
        if (
            not legacy_aliases(original_node)
            or not self._used(original_node)
            or self._suppressed(original_node, COMPAT_IMPORT.code)
        ):
            return updated_node
        self._report(COMPAT_IMPORT, original_node, f"import pointed at {COMPAT_MODULE}", None)
        return import_to_compat(original_node, updated_node)

    # Import nodes are not descended into: they stay the very nodes the scope analysis saw.
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        return self._point(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        return self._point(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        if dotted_name(original_node) == LEGACY_MODULE:
            if LEGACY_MODULE in self._qualified(original_node) and not self._suppressed(
                original_node, COMPAT_IMPORT.code
            ):
                self.needs_dotted_import = True
                return parse(COMPAT_MODULE)
        return updated_node
