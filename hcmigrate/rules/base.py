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
    extra_keywords: dict[str, cst.BaseExpression] = field(
        default_factory=dict
    )  # id_print's **kwargs
    value_used: bool = True  # False when the call is a statement of its own
    original_args: dict[str, cst.BaseExpression] = field(
        default_factory=dict
    )  # for metadata lookups
    arg_nodes: dict[str, cst.Arg] = field(
        default_factory=dict
    )  # updated call's Arg nodes (layout, comments)

    def call_like(self, func: cst.BaseExpression, *args: tuple[cst.Arg, str | None]) -> cst.Call:
        """A new call laid out like this site's call; each argument that comes from a legacy
        argument keeps that argument's trailing comment."""
        from hcmigrate.rules.nodes import call_like

        return call_like(
            self.updated,
            func,
            [a for a, _ in args],
            [self.arg_nodes.get(o) if o else None for _, o in args],
        )

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
        return (
            -inner
            if isinstance(inner, (int, float, complex)) and not isinstance(inner, bool)
            else ...
        )
    return ...


def bind_arguments(
    legacy_name: str, call: cst.Call
) -> tuple[dict[str, cst.BaseExpression], dict[str, cst.BaseExpression]]:
    """Bind a call's arguments to the legacy signature (seed spellings mapped).

    Returns (bound, extra_keywords) as values. Raises UnbindableCall for star-args or unknown
    keywords (except id_print, whose extra keywords are printed).
    """
    bound, extra = bind_argument_nodes(legacy_name, call)
    return {k: a.value for k, a in bound.items()}, {k: a.value for k, a in extra.items()}


def bind_argument_nodes(
    legacy_name: str, call: cst.Call
) -> tuple[dict[str, cst.Arg], dict[str, cst.Arg]]:
    """As bind_arguments, but the whole `cst.Arg` nodes (their commas carry the layout and comments)."""
    signature = LEGACY_FUNCTIONS[legacy_name]
    bound: dict[str, cst.Arg] = {}
    extra: dict[str, cst.Arg] = {}
    positional = list(signature.positional)
    for arg in call.args:
        if arg.star:
            raise UnbindableCall(f"`{arg.star}` arguments cannot be bound statically")
        if arg.keyword is None:
            if not positional:
                raise UnbindableCall(f"too many positional arguments for {legacy_name}")
            bound[positional.pop(0)] = arg
            continue
        name = arg.keyword.value
        name = signature.seed_aliases.get(name, name)
        if (
            name in signature.positional
            or name in signature.keyword_only
            or name in signature.seed_aliases.values()
        ):
            if name in bound:
                raise UnbindableCall(f"argument {name!r} given twice")
            if name in positional:
                positional.remove(name)
            bound[name] = arg
        elif signature.accepts_extra_keywords:
            extra[name] = arg
        else:
            raise UnbindableCall(f"{legacy_name} has no parameter {name!r}")
    return bound, extra
