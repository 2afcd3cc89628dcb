"""Where a rewritten tap can become a statement of its own, as a person would write it.

`y = id_tap(f, x * 2) + 1` is rewritten as `value = x * 2`, the callback on `value`, then
`y = value + 1`; `lax.cond(p, lambda _: id_tap(f, i, result=i), ...)` as a local `def` whose
body is the callback and `return i`, passed instead of the lambda. Either moves the call out
of its expression, which keeps the program's behaviour only when the call ran first, and
exactly once, when its statement (or the lambda's body) ran. That is what these questions
decide, on original nodes:

- `runs_first(node, root)`: `node` is evaluated unconditionally each time `root` is (not in
  the right operand of `and`/`or`, a branch of `x if c else y`, a lambda or a comprehension),
  and nothing that can have an effect is evaluated before it (a call of something other than
  a known pure function, or another legacy call that cannot move first itself);
- `liftable_lambda(node)`: the lambda whose body holds `node`, when it can become a `def`
  placed just before its statement (a plain statement line in a function or module body, no
  default values, not inside another lambda, a comprehension or a class body).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import libcst as cst

from hcmigrate.codemod.resolution import Resolver
from hcmigrate.codemod.statement_edits import StatementEdits
from hcmigrate.rules.nodes import literal_value

# Functions that cannot have an effect the reordering could show (the names are qualified).
PURE_PREFIXES = ("jax.numpy.", "jax.lax.", "numpy.", "math.", "jax.tree.", "jax.tree_util.")
IMPURE_BUILTINS = frozenset(
    {"print", "input", "open", "exec", "eval", "next", "setattr", "delattr", "__import__"}
)
_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class Hoisting:
    def __init__(self, resolver: Resolver, is_legacy_call: Callable[[cst.Call], bool]):
        self._resolver = resolver
        self._is_legacy_call = is_legacy_call

    # ------------------------------------------------------------------ questions
    def statement_root(self, node: cst.CSTNode) -> cst.BaseSmallStatement | None:
        """The small statement holding `node`, when it is alone on a plain statement line."""
        parent = self._resolver.parent
        child, current = node, parent(node)
        while current is not None and not isinstance(current, cst.SimpleStatementLine):
            child, current = current, parent(current)
        if current is None or len(current.body) != 1:
            return None
        return child if isinstance(child, cst.BaseSmallStatement) else None

    def runs_first(self, node: cst.CSTNode, root: cst.CSTNode) -> bool:
        """Is `node` evaluated first (of what can have an effect) and always, when `root` is?"""
        parent = self._resolver.parent
        child = node
        while child is not root:
            above = parent(child)
            if above is None or not _unconditional(above, child):
                return False
            child = above
        return not self._effect_before(root, node)

    def liftable_lambda(self, node: cst.CSTNode) -> cst.Lambda | None:
        """The lambda whose body holds `node`, when it can become a def before its statement
        and `node` runs first in its body."""
        parent = self._resolver.parent
        current = parent(node)
        while current is not None and not isinstance(current, _SCOPES):
            current = parent(current)
        if not isinstance(current, cst.Lambda) or _has_defaults(current):
            return None
        if not self.runs_first(node, current.body):
            return None
        above = parent(current)
        while above is not None and not isinstance(above, cst.SimpleStatementLine):
            if isinstance(above, _SCOPES):
                return None
            above = parent(above)
        if above is None or len(above.body) != 1:
            return None
        owner = parent(above)
        while owner is not None and not isinstance(owner, (cst.FunctionDef, cst.Module)):
            if isinstance(owner, cst.ClassDef):
                return None  # (a def in a class body would be a method of the class)
            owner = parent(owner)
        return current

    # ------------------------------------------------------------------ evaluation order
    def _effect_before(self, root: cst.CSTNode, target: cst.CSTNode) -> bool:
        """Does anything that can have an effect run before `target` when `root` runs?"""
        found = False

        def walk(node: cst.CSTNode) -> bool:  # True: stop (target reached, or an effect)
            nonlocal found
            if node is target:
                return True
            if isinstance(node, _SCOPES) and node is not root:
                return False  # (a lambda's body does not run where it is written)
            children = node.children
            if isinstance(node, cst.Assign):  # (the value runs before the targets)
                children = [node.value]
            if any(walk(child) for child in children):
                return True
            # (a call has its effect after its callee and arguments ran: `print(f"{tap(x)}")`
            # runs the tap first)
            if isinstance(node, cst.Call) and not self._harmless(node):
                found = True
                return True
            return False

        walk(root)
        return found

    def _harmless(self, call: cst.Call) -> bool:
        if self._is_legacy_call(call):
            return False
        names = self._resolver.qualified(call.func)
        return bool(names) and all(
            name.startswith(PURE_PREFIXES)
            or (name.startswith("builtins.") and name[9:] not in IMPURE_BUILTINS)
            for name in names
        )


def _has_defaults(lam: cst.Lambda) -> bool:
    params = lam.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    return any(p.default is not None for p in every)


def _unconditional(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Does `parent` evaluate `child` exactly once, whenever it is evaluated itself?"""
    if isinstance(parent, cst.BooleanOperation):
        return child is parent.left
    if isinstance(parent, cst.IfExp):
        return child is parent.test
    if isinstance(parent, cst.Comparison):
        return child is parent.left or (bool(parent.comparisons) and child is parent.comparisons[0])
    if isinstance(parent, cst.ComparisonTarget):
        return child is parent.comparator
    return isinstance(
        parent,
        (
            cst.Arg,
            cst.Call,
            cst.BinaryOperation,
            cst.UnaryOperation,
            cst.Tuple,
            cst.List,
            cst.Set,
            cst.Element,
            cst.StarredElement,
            cst.Dict,
            cst.DictElement,
            cst.StarredDictElement,
            cst.Subscript,
            cst.SubscriptElement,
            cst.Index,
            cst.Slice,
            cst.Attribute,
            cst.Assign,
            cst.AnnAssign,
            cst.AugAssign,
            cst.Return,
            cst.Expr,
            cst.NamedExpr,
            # an f-string evaluates each `{expression}` once, in order (its format spec too)
            cst.FormattedString,
            cst.FormattedStringExpression,
        ),
    )


@dataclass(eq=False)
class _LambdaDef:
    name: str
    statements: list[cst.BaseSmallStatement]
    owner: object  # the site record that asked first (hcmigrate.codemod.context.SiteRecord)


class LambdaDefs:
    """Lambdas that become local defs, placed before their statement: `def name(params):`,
    the statements the sites inside asked to run first, then `return` the lambda's value."""

    def __init__(self, resolver: Resolver, edits: StatementEdits, fresh_name):
        self._resolver = resolver
        self._edits = edits
        self._fresh_name = fresh_name
        self._defs: dict[int, _LambdaDef] = {}  # id(original lambda) -> its def

    def run_first(self, lam: cst.Lambda, statement, owner, names: tuple[str, ...]) -> None:
        lifted = self._defs.get(id(lam))
        if lifted is None or lifted.owner.retracted:
            lifted = self._defs[id(lam)] = _LambdaDef(self._fresh_name(*names), [], owner)
        lifted.statements.append(statement)

    def replace(self, original: cst.Lambda, updated: cst.Lambda) -> cst.Name | None:
        """The def's name (the def queued before the lambda's statement), or None."""
        lifted = self._defs.get(id(original))
        if lifted is None or lifted.owner.retracted:
            return None
        body = [cst.SimpleStatementLine([s]) for s in lifted.statements]
        value = updated.body
        if isinstance(value, cst.Tuple) and value.elements:
            value = value.with_changes(lpar=[], rpar=[])  # `return a, b`
        if literal_value(value) is not None:
            body.append(cst.SimpleStatementLine([cst.Return(value)]))
        statement = self._resolver.enclosing_statement(original)
        block = self._resolver.parent(statement)
        first_in_block = isinstance(block, cst.IndentedBlock) and block.body[0] is statement
        definition = cst.FunctionDef(
            name=cst.Name(lifted.name),
            params=updated.params,
            body=cst.IndentedBlock(body=body),
            leading_lines=[] if first_in_block else [cst.EmptyLine(indent=False)],
        )
        self._edits.insert_before(statement, definition, lifted.owner)
        return cst.Name(lifted.name)
