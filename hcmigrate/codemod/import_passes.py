"""The passes over import statements, after the rewrite: thin drivers of the import rules.

`CleanUpImports` (both strategies) gives each import statement to the `LegacyImport` handlers
and drops a guard (`try: import ...host_callback / except ImportError: hcb = None`) whose
import went and whose fallback name nobody reads. `PointAtCompat` (--strategy compat) gives
imports and spelled-out uses of the legacy module to the `CompatStrategy` handlers, in the pass
that also runs the removed-JAX-API rules. The `ImportRulesContext` is what those handlers may
ask (hcmigrate.rules.context.ImportContext).
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.codemod.comments import KeepCommentsOfRemovedLines
from hcmigrate.codemod.context import ModuleContext
from hcmigrate.codemod.usage import Usage
from hcmigrate.codemod.rewrite import Rewriter
from hcmigrate.codemod.walk import Transformer
from hcmigrate.diagnostics import Level
from hcmigrate.facts import LEGACY_MODULE
from hcmigrate.rules.context import ImportSite
from hcmigrate.rules.nodes import dotted_name
from hcmigrate.rules.spec import Handler, Rule


class ImportRulesContext:
    """hcmigrate.rules.context.ImportContext over a module's context and usage."""

    def __init__(self, ctx: ModuleContext, usage: Usage):
        self._ctx = ctx
        self.usage = usage
        self.reexports = usage.reexports
        self.exported_here = usage.exported_here
        self.published_here = usage.published_here
        self.passed_on = usage.passed_on
        self.still_used = usage.still_used
        self.ever_used = usage.ever_used
        self.imported_elsewhere = usage.imported_elsewhere
        self.star_names_still_used = usage.star_names_still_used
        self.qualified = ctx.resolver.qualified
        self.import_module = ctx.import_module
        self.options = ctx.options
        self.define_after_imports = ctx.define_after_imports
        self.use_module_helper = ctx.use_module_helper

    def at_module_level(self, node: cst.CSTNode) -> bool:
        """Is the import statement `node` a statement of the module itself (not in a block)?"""
        line = self._ctx.resolver.parent(node)
        return line is not None and isinstance(self._ctx.resolver.parent(line), cst.Module)

    def report(
        self, rule: Rule, node: cst.CSTNode | None, message: str, level: Level | None = None
    ) -> None:
        self._ctx.report_for_module(rule, node, message, level)

    def suppressed(self, node: cst.CSTNode, code: str) -> bool:
        return self._ctx.reporter.suppressed(node, code)

    def run(self, handlers: list[Handler], original, updated):
        """The first handler's new node that is not None (`updated`: none has one)."""
        site = ImportSite(original, updated)
        for handler in handlers:
            result = handler(site, self)
            if result is not None:
                return result
        return updated


class CleanUpImports(KeepCommentsOfRemovedLines, Transformer):
    def __init__(self, ctx: ImportRulesContext, handlers: list[Handler]):
        super().__init__()
        self._ctx = ctx
        self._handlers = handlers

    def leave_Import(self, original_node, updated_node):
        return self._ctx.run(self._handlers, original_node, updated_node)

    def leave_ImportFrom(self, original_node, updated_node):
        return self._ctx.run(self._handlers, original_node, updated_node)

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
                if (
                    target is None
                    or anchor is None
                    or self._ctx.usage.name_still_read(anchor, target)
                ):
                    return updated_node
        kept = [line for line in original_node.leading_lines if line.comment is not None]
        if kept:
            self._orphans().setdefault(self._current_block(), []).extend(kept)
        return cst.RemovalSentinel.REMOVE


class PointAtCompat(Rewriter):
    """--strategy compat: the imports and spelled-out uses of the legacy module go to the
    `CompatStrategy` handlers, and every other site to the removed-JAX-API rules, as under the
    native strategy (a module kept on the compat runtime still has to run on the current JAX).
    The host_callback rules' calls and references are not dispatched."""

    def __init__(self, ctx: ModuleContext, imports: ImportRulesContext, handlers: list[Handler]):
        index = ctx.resolver.index
        removed = ctx.dispatch.removed
        hot = ctx.resolver.with_ancestors(
            [
                *index.import_nodes,
                *(name for name in index.name_nodes if name.value in index.legacy_roots),
                *(removed.hot_nodes() if removed is not None else ()),
            ]
        )
        super().__init__(ctx, hot)
        self._imports = imports
        self._handlers = handlers

    def visit_Call(self, node: cst.Call) -> None:
        pass  # (no legacy call is rewritten)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return dotted_name(node) != LEGACY_MODULE  # (handled whole at leave_Attribute)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        return self._import(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        return self._import(original_node, updated_node)

    def _import(self, original_node, updated_node):
        result = self._ctx.dispatch.removed_import(original_node, updated_node)
        if result is not updated_node:
            return result
        return self._imports.run(self._handlers, original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        return self._ctx.dispatch.removed_call(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        if dotted_name(original_node) == LEGACY_MODULE:
            return self._imports.run(self._handlers, original_node, updated_node)
        return self._ctx.dispatch.removed_use(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name):
        return updated_node  # (a bare name is never a removed API's site: its import is)


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
