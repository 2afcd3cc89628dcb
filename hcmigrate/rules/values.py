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

    Where the call is a statement's whole value (`y = tap(...)`, `return tap(...)`), the
    callback becomes a statement of its own, as a person would write it; inside a larger
    expression (a lambda, an operand) it is `(callback, value)[1]`.
    """
    arg = site.args.get("arg", cst.Name("None"))
    result = site.args.get("result")
    if not site.value_used:
        effect = make_effect(arg)
        # `result` was evaluated by the old code too (at trace time); keep it unless trivial.
        return effect if result is None or is_simple(result) else keep_value(effect, result)
    own_statement = (
        ctx.is_returned(site.original) or ctx.assignment_target(site.original) is not None
    )
    value = result if result is not None else (arg if is_simple(arg) else None)
    if value is not None:
        if own_statement:
            ctx.insert_before(site.original, cst.Expr(make_effect(arg)))
            if isinstance(value, cst.Name) and ctx.assignment_target(site.original) == value.value:
                ctx.replace_statement(site.original)  # `x = id_tap(f, x)`: no `x = x` left
            return value
        return keep_value(make_effect(arg), value)
    target = ctx.assignment_target(site.original)
    if target is not None:
        # `y = id_print(x * 2)` -> `y = x * 2`, then the callback on `y`.
        ctx.insert_after(site.original, cst.Expr(make_effect(cst.Name(target))))
        return arg
    if ctx.is_returned(site.original):
        # `return id_print(x * 2)` -> `value = x * 2`, the callback on `value`, `return value`.
        name = ctx.fresh_name("value")
        ctx.insert_before(
            site.original, cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=arg)
        )
        ctx.insert_before(site.original, cst.Expr(make_effect(cst.Name(name))))
        return cst.Name(name)
    name = ctx.fresh_name("_hcb_value")
    return keep_value(make_effect(walrus(name, arg)), cst.Name(name))
