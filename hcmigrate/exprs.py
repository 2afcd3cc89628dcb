"""Small builders for the expressions rules generate."""

from __future__ import annotations

import libcst as cst


def parse(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def string(value: str) -> cst.SimpleString:
    """A double-quoted Python string literal for `value`."""
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )
    return cst.SimpleString(f'"{escaped}"')


def arg(value: cst.BaseExpression, keyword: str | None = None) -> cst.Arg:
    if keyword is None:
        return cst.Arg(value=value)
    return cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def call(func: cst.BaseExpression, *args: cst.Arg) -> cst.Call:
    fixed = []
    for i, a in enumerate(args):
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT
        fixed.append(a.with_changes(comma=comma))
    return cst.Call(func=func, args=fixed)


def is_simple(node: cst.BaseExpression) -> bool:
    """Cheap and side-effect free to evaluate twice: names, attribute chains, literals,
    and tuples/lists of those."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return True
    if isinstance(node, cst.Attribute):
        return is_simple(node.value)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(not el.__class__.__name__.startswith("Starred") and is_simple(el.value) for el in node.elements)
    if isinstance(node, cst.UnaryOperation):
        return is_simple(node.expression)
    return False


def keep_value(effect: cst.BaseExpression, value: cst.BaseExpression) -> cst.Subscript:
    """`(effect, value)[1]`: run the callback, evaluate to what the legacy call returned."""
    pair = cst.Tuple(
        elements=[
            cst.Element(effect, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Element(value),
        ]
    )
    return cst.Subscript(value=pair, slice=[cst.SubscriptElement(cst.Index(cst.Integer("1")))])


def walrus(name: str, value: cst.BaseExpression) -> cst.NamedExpr:
    return cst.NamedExpr(
        target=cst.Name(name),
        value=value,
        lpar=[cst.LeftParen()],
        rpar=[cst.RightParen()],
    )


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node
