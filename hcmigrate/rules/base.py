"""What every rule is made of: a Rule record (code, level, docs) and the CallSite it rewrites."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import LEGACY_FUNCTIONS


@dataclass(frozen=True)
class Rule:
    """A rule, Ruff-style: a code, a name, a default level and what it does to behaviour."""

    code: str
    name: str
    level: Level
    legacy: str  # the legacy form it matches
    modern: str  # what it writes
    summary: str
    behaviour_note: str = ""  # what changes at run time (README table, --list-rules)


class UnbindableCall(Exception):
    """The call's arguments cannot be bound statically (*args, **kwargs, unknown keyword)."""


@dataclass
class CallSite:
    """A call of a legacy function, with its arguments bound to legacy parameter names."""

    legacy_name: str
    original: cst.Call  # node in the tree the metadata describes
    updated: cst.Call  # node with inner rewrites already applied
    args: dict[str, cst.BaseExpression]
    extra_keywords: dict[str, cst.BaseExpression] = field(default_factory=dict)  # id_print's **kwargs
    value_used: bool = True  # False when the call is a statement of its own
    original_args: dict[str, cst.BaseExpression] = field(default_factory=dict)  # for metadata lookups

    def has(self, param: str) -> bool:
        return param in self.args

    def literal(self, param: str, default=None):
        """The Python value of a literal argument (True/False/None/number/str), else `...`."""
        if param not in self.args:
            return default
        return literal_value(self.args[param])


def literal_value(node: cst.BaseExpression):
    """Python value of a simple literal node, or Ellipsis when it is not a literal."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return node.evaluated_value
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else ...
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        return -inner if isinstance(inner, (int, float, complex)) and not isinstance(inner, bool) else ...
    return ...


def bind_arguments(legacy_name: str, call: cst.Call) -> tuple[dict[str, cst.BaseExpression], dict[str, cst.BaseExpression]]:
    """Bind a call's arguments to the legacy signature (seed spellings mapped).

    Returns (bound, extra_keywords). Raises UnbindableCall for star-args or unknown keywords
    (except id_print, whose extra keywords are printed).
    """
    signature = LEGACY_FUNCTIONS[legacy_name]
    bound: dict[str, cst.BaseExpression] = {}
    extra: dict[str, cst.BaseExpression] = {}
    positional = list(signature.positional)
    for arg in call.args:
        if arg.star:
            raise UnbindableCall(f"`{arg.star}` arguments cannot be bound statically")
        if arg.keyword is None:
            if not positional:
                raise UnbindableCall(f"too many positional arguments for {legacy_name}")
            bound[positional.pop(0)] = arg.value
            continue
        name = arg.keyword.value
        name = signature.seed_aliases.get(name, name)
        if name in signature.positional or name in signature.keyword_only or name in signature.seed_aliases.values():
            if name in bound:
                raise UnbindableCall(f"argument {name!r} given twice")
            if name in positional:
                positional.remove(name)
            bound[name] = arg.value
        elif signature.accepts_extra_keywords:
            extra[name] = arg.value
        else:
            raise UnbindableCall(f"{legacy_name} has no parameter {name!r}")
    return bound, extra
