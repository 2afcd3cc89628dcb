"""HCB601: existing `pure_callback(..., vectorized=B)` -> `vmap_method=...`.

`vectorized=` was removed in JAX 0.6; since 0.10 it is silently forwarded to the callback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.nodes import string
from hcmigrate.facts import VMAP_METHOD_FOR_VECTORIZED, VMAP_METHOD_SINCE
from hcmigrate.rules.base import Rule, literal_value

if TYPE_CHECKING:
    from hcmigrate.codemod.pipeline import Context

VECTORIZED = Rule(
    code="HCB601",
    name="pure-callback-vectorized",
    level=Level.FIXED,
    legacy="jax.pure_callback(f, S, x, vectorized=True)",
    modern='jax.pure_callback(f, S, x, vmap_method="legacy_vectorized")',
    summary="Modernise pure_callback's removed `vectorized=` keyword.",
)
RULES = (VECTORIZED,)

PURE_CALLBACK = ("jax.pure_callback", "jax._src.callback.pure_callback")


def rewrite(call: cst.Call, qualified_names: set[str], ctx: "Context") -> cst.Call | None:
    if not (qualified_names & set(PURE_CALLBACK)) or not ctx.target_at_least(VMAP_METHOD_SINCE):
        return None
    for i, a in enumerate(call.args):
        if a.keyword is not None and a.keyword.value == "vectorized":
            value = literal_value(a.value)
            if value not in VMAP_METHOD_FOR_VECTORIZED:
                ctx.report(
                    VECTORIZED,
                    call,
                    "`vectorized=` is not a literal True/False; set vmap_method= by hand",
                    level=Level.MANUAL,
                )
                return None
            method = VMAP_METHOD_FOR_VECTORIZED[value]
            ctx.report(VECTORIZED, call, f'vectorized={value} -> vmap_method="{method}"')
            new_arg = a.with_changes(keyword=cst.Name("vmap_method"), value=string(method))
            return call.with_changes(args=[*call.args[:i], new_arg, *call.args[i + 1 :]])
    return None
