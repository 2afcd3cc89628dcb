"""Keeping the value a legacy call evaluated to (`id_tap`/`id_print` returned `arg`, or `result`).

Nothing the old code computed may turn into None: when the call's value is used, the new
code evaluates to the same value, with `arg` evaluated once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import libcst as cst

from hcmigrate.rules.nodes import is_simple, keep_value, walrus

if TYPE_CHECKING:
    from hcmigrate.rules.context import CallSite, RuleContext


def with_legacy_value(
    site: CallSite,
    ctx: RuleContext,
    make_effect: Callable[[cst.BaseExpression], cst.BaseExpression],
) -> cst.BaseExpression:
    """Build `make_effect(arg)` and make the whole expression evaluate to `result` or `arg`.

    The callback becomes a statement of its own, as a person would write it, wherever it can
    run first (hcmigrate.codemod.hoisting): before the statement that holds it, or in a local
    def that replaces the lambda that holds it. Only where no statement can hold it (a branch
    of `a if c else b`, a comprehension) is it `(callback, value)[1]`.
    """
    arg = site.args.get("arg", cst.Name("None"))
    result = site.args.get("result")
    if not site.value_used:
        effect = make_effect(arg)
        # `result` was evaluated by the old code too (at trace time); keep it unless trivial.
        return effect if result is None or is_simple(result) else keep_value(effect, result)
    bare = arg
    if isinstance(arg, cst.NamedExpr) and not arg.lpar:
        # `id_print(y := x)`: the value becomes a statement's (`value = (y := x)`, `return`),
        # where a walrus must be in parentheses.
        arg = arg.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    own_statement = (
        ctx.is_returned(site.original) or ctx.assignment_target(site.original) is not None
    )
    value = result if result is not None else (arg if is_simple(arg) else None)
    if own_statement and value is not None:
        ctx.insert_before(site.original, cst.Expr(make_effect(arg)))
        if isinstance(value, cst.Name) and ctx.assignment_target(site.original) == value.value:
            ctx.replace_statement(site.original)  # `x = id_tap(f, x)`: no `x = x` left
        return value
    target = ctx.assignment_target(site.original)
    if target is not None:
        # `y = id_print(x * 2)` -> `y = x * 2`, then the callback on `y`.
        ctx.insert_after(site.original, cst.Expr(make_effect(cst.Name(target))))
        return arg
    if ctx.runs_before_its_statement(site.original):
        # `y = id_tap(f, x * 2) + 1` -> `value = x * 2`, the callback, `y = value + 1`.
        def run_first(statement: cst.BaseSmallStatement) -> None:
            ctx.insert_before(site.original, statement)

    elif (lam := ctx.liftable_lambda(site.original)) is not None:
        # `lambda _: id_tap(f, i, result=i)` -> a local def: the callback, then `return i`.
        def run_first(statement: cst.BaseSmallStatement) -> None:
            ctx.run_first_in_lambda(lam, statement, def_name(site))  # (names to try)

    else:  # (an expression only: a branch of `a if c else b`, a comprehension ...)
        if value is not None:
            return keep_value(make_effect(arg), value)
        if _in_comprehension(site.original, ctx):
            # (a walrus is refused in a comprehension in a class body or in its iterable)
            name = ctx.fresh_name("value")
            once = cst.Lambda(
                params=cst.Parameters(params=[cst.Param(cst.Name(name))]),
                body=keep_value(make_effect(cst.Name(name)), cst.Name(name)),
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            )
            return cst.Call(once, [cst.Arg(bare)])
        name = ctx.fresh_name("_hcb_value")
        return keep_value(make_effect(walrus(name, arg)), cst.Name(name))
    if value is None:
        name = ctx.fresh_name("value")
        run_first(cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=arg))
        arg = value = cst.Name(name)
    run_first(cst.Expr(make_effect(arg)))
    return value


def def_name(site: CallSite) -> tuple[str, ...]:
    """The name of the def a lambda holding the site becomes: what it does (`tap_update_bar`
    for a tap of `_update_bar`, `print_value` for an id_print), and where a def of the module
    has that name already, with what it taps (`tap_update_bar_remainder`)."""
    base = (
        "print_value"
        if site.function == "id_print"
        else f"tap_{last_name(site.original_args.get('tap_func')) or ''}".rstrip("_")
    )
    tapped = last_name(site.original_args.get("arg"))
    return (base, f"{base}_{tapped}") if tapped else (base,)


_CONSTANTS = frozenset({"None", "True", "False"})


def last_name(node: cst.BaseExpression | None) -> str | None:
    """`_update_bar` of `_update_bar` or `self._update_bar`, without its underscores."""
    name = node.value if isinstance(node, cst.Name) and node.value not in _CONSTANTS else None
    name = name or (node.attr.value if isinstance(node, cst.Attribute) else None)
    return name.strip("_") or None if name else None


def tapped_name(arg: cst.BaseExpression | None) -> str | None:
    """What a tap's argument is, for the name of a def that taps it: `tokens` of `tokens` or
    `self.tokens`, `done` of `NestedMap(done=True)` (its first keyword), `loss` of
    `x['loss']` or `{'loss': x}`; None where it says nothing."""
    if isinstance(arg, cst.Call):
        keyword = next((a.keyword.value for a in arg.args if a.keyword is not None), None)
        return keyword.strip("_") or None if keyword else None
    key = None
    if isinstance(arg, cst.Subscript) and len(arg.slice) == 1:
        key = getattr(arg.slice[0].slice, "value", None)
    elif isinstance(arg, cst.Dict) and arg.elements:
        key = getattr(arg.elements[0], "key", None)
    if key is not None:
        text = key.evaluated_value if isinstance(key, cst.SimpleString) else None
        return text.strip("_") or None if isinstance(text, str) and text.isidentifier() else None
    return last_name(arg)


def _in_comprehension(node: cst.CSTNode, ctx: RuleContext) -> bool:
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return True
        node = ctx.parent(node)
    return False
