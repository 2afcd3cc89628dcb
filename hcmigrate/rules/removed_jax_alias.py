"""JAX103: `jax.jax.<name>`, the accidental self-alias gone in JAX 0.10.1."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

JAX_ALIAS = register(
    Rule(
        code="JAX103",
        name="jax-jax-alias",
        level=Level.FIXED,
        legacy="jax.jax.lax.cond(p, f, g, x)",
        modern="jax.lax.cond(p, f, g, x)",
        summary="`jax.jax` was `jax` itself (a side effect of an import inside JAX); the extra "
        "`jax.` is dropped.",
        examples=(
            Example(
                before="""\
import jax

y = jax.jax.lax.cond(True, lambda v: v, lambda v: -v, 1.0)
""",
                after="""\
import jax

y = jax.lax.cond(True, lambda v: v, lambda v: -v, 1.0)
""",
                diagnostics=("3:5 JAX103 [fixed] `jax.jax` -> `jax`",),
            ),
        ),
    )
)


@handles(RemovedJaxApi(JAX_ALIAS.code), reports=(JAX_ALIAS,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, JAX_ALIAS)
