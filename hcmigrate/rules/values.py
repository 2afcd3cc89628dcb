"""Keeping the value a legacy call evaluated to (`id_tap`/`id_print` returned `arg`, or `result`).

Nothing the old code computed may turn into None: when the call's value is used, the new
code evaluates to the same value, with `arg` evaluated once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import libcst as cst

from hcmigrate.exprs import is_simple, keep_value, walrus

if TYPE_CHECKING:
    from hcmigrate.codemod import Context
    from hcmigrate.rules.base import CallSite


def with_legacy_value(
    site: "CallSite", ctx: "Context", make_effect: Callable[[cst.BaseExpression], cst.BaseExpression]
) -> cst.BaseExpression:
    """Build `make_effect(arg)` and make the whole expression evaluate to `result` or `arg`."""
    arg = site.args.get("arg", cst.Name("None"))
    result = site.args.get("result")
    if result is not None:
        effect = make_effect(arg)
        # `result` was evaluated by the old code too (at trace time); keep it unless trivial.
        if not site.value_used and is_simple(result):
            return effect
        return keep_value(effect, result)
    if not site.value_used:
        return make_effect(arg)
    if is_simple(arg):
        return keep_value(make_effect(arg), arg)
    target = ctx.assignment_target(site.original)
    if target is not None:
        # `y = id_print(x * 2)` -> `y = x * 2` then the callback on `y`, as a person would write it.
        ctx.run_after_statement(site.original, make_effect(cst.Name(target)))
        return arg
    name = ctx.fresh_name("_hcb_value")
    return keep_value(make_effect(walrus(name, arg)), cst.Name(name))
