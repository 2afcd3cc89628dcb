"""Small builders for the expressions rules generate, and the literal values rules read."""

from __future__ import annotations

import re

import libcst as cst

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def parse(code: str) -> cst.BaseExpression:
    if _DOTTED.fullmatch(code):  # most generated code is a name like `jax.pure_callback`:
        return dotted(code)  # built directly, far cheaper than running the parser
    return cst.parse_expression(code)


def dotted(name: str) -> cst.Name | cst.Attribute:
    """`a.b.c` as a Name / Attribute chain."""
    first, *rest = name.split(".")
    node: cst.Name | cst.Attribute = cst.Name(first)
    for part in rest:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` -> 'a.b.c' for Name/Attribute chains, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def string(value: str) -> cst.SimpleString:
    """A double-quoted Python string literal for `value`."""
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return cst.SimpleString(f'"{escaped}"')


def arg(value: cst.BaseExpression, keyword: str | None = None) -> cst.Arg:
    if keyword is None:
        return cst.Arg(value=value)
    return cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def call(func: cst.BaseExpression, *args: cst.Arg) -> cst.Call:
    fixed = []
    for i, a in enumerate(args):
        comma = (
            cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            if i < len(args) - 1
            else cst.MaybeSentinel.DEFAULT
        )
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
        return all(
            not el.__class__.__name__.startswith("Starred") and is_simple(el.value)
            for el in node.elements
        )
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


def call_like(
    template: cst.Call, func: cst.BaseExpression, args: list[cst.Arg], origins: list[cst.Arg | None]
) -> cst.Call:
    """A call of `func(*args)` in the layout of `template`.

    A one-line template gives a one-line call. A multi-line template gives a multi-line call
    with the same indentation and trailing comma; every new argument derived from an old one
    (`origins[i]`) keeps the comment that stood after the old one, and comments of old
    arguments that have no counterpart are kept before the closing parenthesis: user
    comments are never lost.
    """
    line_breaks = [
        ws for ws in _arg_whitespace(template) if isinstance(ws, cst.ParenthesizedWhitespace)
    ]
    before = template.whitespace_before_args
    if not args:  # (the comments inside the old call stay inside the new one)
        comments = [c for old in template.args for c in _comments(old)]
        if isinstance(before, cst.ParenthesizedWhitespace):
            lines = [cst.EmptyLine(indent=True, comment=c) for c in comments]
            return cst.Call(
                func=func,
                whitespace_before_args=before.with_changes(
                    empty_lines=[*before.empty_lines, *lines]
                ),
            )
        if comments:
            return cst.Call(
                func=func,
                whitespace_before_args=cst.ParenthesizedWhitespace(
                    first_line=cst.TrailingWhitespace(
                        whitespace=cst.SimpleWhitespace("  "), comment=comments[0]
                    ),
                    empty_lines=[cst.EmptyLine(indent=True, comment=c) for c in comments[1:]],
                    indent=True,
                ),
            )
        return call(func)
    if not template.args or not (line_breaks or isinstance(before, cst.ParenthesizedWhitespace)):
        return call(func, *args)
    between = before if isinstance(before, cst.ParenthesizedWhitespace) else line_breaks[0]
    if not isinstance(before, cst.ParenthesizedWhitespace):
        between = _realigned(between, template.func, func)
    last = template.args[-1]
    trailing_comma = isinstance(last.comma, cst.Comma)
    closing = last.comma.whitespace_after if trailing_comma else last.whitespace_after_arg
    # `)` right after the last argument (`f(a,\n  b)`): it stays there, unless a comment must
    # be kept before it; then it goes on a line of its own, aligned with the arguments.
    hugging = not isinstance(closing, cst.ParenthesizedWhitespace)
    if hugging:
        closing = cst.ParenthesizedWhitespace(indent=between.indent, last_line=between.last_line)
    used = {id(o) for o in origins if o is not None}
    # A comment on a line of its own between two arguments is about the one below it (`#
    # pack args and kwargs together` above `(args, kwargs)`): it moves with that argument.
    # One after an argument on its line stays with that argument.
    above = _comment_lines_above(template)
    moved = [
        i > 0 and origin is not None and id(origin) in above and id(above[id(origin)][1]) in used
        for i, origin in enumerate(origins)
    ]
    moving = {id(above[id(o)][1]) for o, m in zip(origins, moved) if m}
    orphans = [
        cst.EmptyLine(
            indent=True, whitespace=cst.SimpleWhitespace(between.last_line.value), comment=comment
        )
        for old in template.args
        if id(old) not in used
        for comment in _comments(old)
    ]
    laid_out = []
    for i, (new, origin) in enumerate(zip(args, origins)):
        own = next(
            (
                ws
                for ws in (_arg_whitespace_of(origin) if origin is not None else ())
                if isinstance(ws, cst.ParenthesizedWhitespace)
            ),
            None,
        )
        is_last = i == len(args) - 1
        kept_below = list(own.empty_lines) if own and id(origin) not in moving else []
        following = origins[i + 1] if not is_last else None
        if not is_last and moved[i + 1]:
            kept_below += list(above[id(following)][0])
        if is_last and hugging and own is None and not orphans:
            comma = cst.Comma() if trailing_comma else cst.MaybeSentinel.DEFAULT
            laid_out.append(
                new.with_changes(comma=comma, whitespace_after_arg=cst.SimpleWhitespace(""))
            )
            continue
        ws = cst.ParenthesizedWhitespace(
            first_line=own.first_line if own else cst.TrailingWhitespace(),
            empty_lines=[*kept_below, *(orphans if is_last else ())],
            indent=closing.indent if is_last else between.indent,
            last_line=closing.last_line if is_last else between.last_line,
        )
        if is_last and not trailing_comma:
            laid_out.append(
                new.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=ws)
            )
        else:
            laid_out.append(
                new.with_changes(
                    comma=cst.Comma(whitespace_after=ws),
                    whitespace_after_arg=cst.SimpleWhitespace(""),
                )
            )
    return cst.Call(
        func=func,
        args=laid_out,
        whitespace_before_args=before,
        lpar=template.lpar,
        rpar=template.rpar,
    )


def _realigned(
    between: cst.ParenthesizedWhitespace, old: cst.BaseExpression, new: cst.BaseExpression
) -> cst.ParenthesizedWhitespace:
    """Continuation lines aligned with the opening bracket (`call(a,\n     b)`) stay aligned
    with it when the callee's name changes length."""
    printer = cst.Module(body=[])
    shift = len(printer.code_for_node(new)) - len(printer.code_for_node(old))
    spaces = between.last_line.value
    if not shift or spaces.strip(" ") or len(spaces) + shift < 1:
        return between
    return between.with_changes(last_line=cst.SimpleWhitespace(" " * (len(spaces) + shift)))


def _comment_lines_above(call: cst.Call) -> dict[int, tuple[list[cst.EmptyLine], cst.Arg]]:
    """id(argument) -> (the comment lines on lines of their own above it, the argument they
    follow), for the arguments after the first that have such lines."""
    found = {}
    for previous, arg in zip(call.args, call.args[1:]):
        ws = next(
            (w for w in _arg_whitespace_of(previous) if isinstance(w, cst.ParenthesizedWhitespace)),
            None,
        )
        if ws is not None and any(line.comment is not None for line in ws.empty_lines):
            found[id(arg)] = (list(ws.empty_lines), previous)
    return found


def _arg_whitespace_of(arg: cst.Arg):
    return (
        arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None,
        arg.whitespace_after_arg,
    )


def _arg_whitespace(call: cst.Call):
    for a in call.args:
        yield from _arg_whitespace_of(a)


def _comments(arg: cst.Arg) -> list[cst.Comment]:
    found = []
    for ws in _arg_whitespace_of(arg):
        if isinstance(ws, cst.ParenthesizedWhitespace):
            if ws.first_line.comment is not None:
                found.append(ws.first_line.comment)
            found.extend(line.comment for line in ws.empty_lines if line.comment is not None)
    return found


def constant_index(node: cst.Subscript) -> str | None:
    """The constant of `x[0]` / `x['key']` (its value's repr), else None."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    index = node.slice[0].slice.value
    if isinstance(index, cst.Integer):
        return str(int(index.value, 0))
    if isinstance(index, cst.SimpleString):
        return repr(index.evaluated_value)
    return None


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
