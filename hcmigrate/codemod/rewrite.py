"""The rewrite: a thin libcst transformer that hands every site to the rules' handlers.

It walks only down to the nodes a rule may change (names the legacy module can be bound to,
calls a modern-call trigger may match, defs whose signature the plan changes); whatever it
does not walk stays the very object it was. For each site it asks the registry which handlers
apply and lets the context run them (hcmigrate.codemod.context); statements get what the
rules queued around them (hcmigrate.codemod.statement_edits).
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.codemod.comments import KeepCommentsOfRemovedLines
from hcmigrate.codemod.context import ModuleContext
from hcmigrate.codemod.host_functions import drop_params, with_item
from hcmigrate.codemod.walk import Transformer
from hcmigrate.rules.context import REMOVE_STATEMENT


class Rewriter(KeepCommentsOfRemovedLines, Transformer):
    def __init__(self, ctx: ModuleContext, hot: set[int]):
        Transformer.__init__(self)
        self._ctx = ctx
        self._hot = hot  # ids of the original nodes to walk (hcmigrate.codemod.pipeline)
        self.descend = lambda node: id(node) in hot
        self._callees: set[int] = set()  # callee nodes of legacy calls (not references)
        self._removed_calls: set[int] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # (imports are the clean-up's)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    # (an import of a removed JAX name is a site of its own: hcmigrate.codemod.removed_apis)
    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        result = self._ctx.dispatch.removed_import(original_node, updated_node)
        # (JAX105: `import jax.config` beside the module's own `import jax` goes)
        return cst.RemovalSentinel.REMOVE if result is REMOVE_STATEMENT else result

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        result = self._ctx.dispatch.removed_import(original_node, updated_node)
        # (JAX113: an import whose every use was rewritten goes)
        return cst.RemovalSentinel.REMOVE if result is REMOVE_STATEMENT else result

    def visit_Call(self, node: cst.Call) -> None:
        if self._ctx.dispatch.legacy_function(node) is not None:
            self._callees.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # A legacy reference is handled whole at leave_Attribute; its parts are not visited.
        return id(node) not in self._callees and self._ctx.resolver.legacy_ref(node) is None

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        dispatch = self._ctx.dispatch
        if id(original_node) in self._ctx.plan.scalar_items:
            return with_item(updated_node)  # (`int(v)` in a host function: `int(v.item())`)
        if id(original_node.func) in self._callees:
            result = dispatch.legacy_call(original_node, updated_node)
        else:
            result = dispatch.modern_call(original_node, updated_node)
            if result is updated_node:
                result = dispatch.removed_call(original_node, updated_node)
        if result is REMOVE_STATEMENT:
            self._removed_calls.add(id(original_node))
            return updated_node
        return result

    def _reference(self, original: cst.BaseExpression, updated: cst.BaseExpression):
        if id(original) in self._callees:
            return updated
        return self._ctx.dispatch.reference(original, updated)

    def leave_Attribute(self, original_node, updated_node) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if is_binding_or_label(original_node, self._ctx.resolver.parent(original_node)):
            return updated_node
        return self._reference(original_node, updated_node)

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda):
        return self._ctx.lifted_def(original_node, updated_node) or updated_node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr):
        if id(original_node.value) in self._removed_calls:
            return cst.RemovalSentinel.REMOVE
        return updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        drop = self._ctx.plan.def_drops.get(id(original_node))
        if drop:
            updated_node = updated_node.with_changes(params=drop_params(updated_node.params, drop))
        return self._ctx.edits.with_todos(original_node, updated_node)

    def on_leave(self, original_node, updated_node):
        result = super().on_leave(original_node, updated_node)
        if id(original_node) in self._hot:  # (what was not walked has nothing queued)
            result = self._ctx.edits.apply(original_node, result)
        self._ctx.note_rebuilt(original_node, result)
        return result


def is_binding_or_label(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """A Name that is not a use of a value: an attribute label, a keyword, a parameter, a
    def/class name, an import alias."""
    if isinstance(parent, cst.Attribute):
        return parent.attr is name
    if isinstance(parent, cst.Arg):
        return parent.keyword is name
    if isinstance(
        parent,
        (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.NameItem),
    ):
        return True
    if isinstance(
        parent,
        (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr),
    ):
        return parent.target is name  # (re)binding the name, not using it
    return False
