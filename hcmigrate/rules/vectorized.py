"""HCB601: existing `pure_callback(..., vectorized=B)` -> `vmap_method=...`.

`vectorized=` was removed in JAX 0.6; since 0.10 it is silently forwarded to the callback.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import PURE_CALLBACK_NAMES, VMAP_METHOD_FOR_VECTORIZED, VMAP_METHOD_SINCE
from hcmigrate.rules.context import ModernCallSite, RuleContext
from hcmigrate.rules.nodes import literal_value, string
from hcmigrate.rules.spec import Example, ModernCall, Rule, handles

VECTORIZED = Rule(
    code="HCB601",
    name="pure-callback-vectorized",
    level=Level.FIXED,
    legacy="jax.pure_callback(f, S, x, vectorized=True)",
    modern='jax.pure_callback(f, S, x, vmap_method="legacy_vectorized")',
    summary="Modernise pure_callback's removed `vectorized=` keyword.",
    examples=(
        Example(
            before="""\
import jax

y = jax.pure_callback(f, shape, x, vectorized=True)
""",
            after="""\
import jax

y = jax.pure_callback(f, shape, x, vmap_method="legacy_vectorized")
""",
            diagnostics=('3:5 HCB601 [fixed] vectorized=True -> vmap_method="legacy_vectorized"',),
        ),
    ),
)


@handles(ModernCall(PURE_CALLBACK_NAMES, keyword="vectorized"), reports=(VECTORIZED,))
def rewrite(site: ModernCallSite, ctx: RuleContext) -> cst.Call | None:
    if not ctx.target_at_least(VMAP_METHOD_SINCE):
        return None
    call = site.updated
    for i, a in enumerate(call.args):
        if a.keyword is not None and a.keyword.value == "vectorized":
            value = literal_value(a.value)
            if value not in VMAP_METHOD_FOR_VECTORIZED:
                ctx.report(
                    VECTORIZED,
                    site.original,
                    "`vectorized=` is not a literal True/False; set vmap_method= by hand",
                    level=Level.MANUAL,
                )
                return None
            method = VMAP_METHOD_FOR_VECTORIZED[value]
            ctx.report(VECTORIZED, site.original, f'vectorized={value} -> vmap_method="{method}"')
            new_arg = a.with_changes(keyword=cst.Name("vmap_method"), value=string(method))
            return call.with_changes(args=[*call.args[:i], new_arg, *call.args[i + 1 :]])
    return None
