"""JAX109: removed APIs with no mechanical replacement (`jax.xla_computation`, `pjit_p`, `jax.random.shuffle`, `jax.experimental.maps`, ...): a
manual finding that says what to do instead."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

NO_REPLACEMENT = register(
    Rule(
        code="JAX109",
        name="removed-without-replacement",
        level=Level.MANUAL,
        legacy="jax.xla_computation(f)(x)",
        modern="(reported: what to write instead)",
        summary="A removed API whose successor needs the code around it rewritten is reported "
        "with what to use instead; nothing is changed.",
        examples=(
            Example(
                before="""\
import jax

hlo = jax.xla_computation(lambda v: v * 2)(1.0).as_hlo_text()
""",
                after="""\
import jax

hlo = jax.xla_computation(lambda v: v * 2)(1.0).as_hlo_text()
""",
                diagnostics=(
                    "3:7 JAX109 [manual] `jax.xla_computation` was removed in JAX 0.4.34: jax.xla_computation(f)(*args) is jax.jit(f).lower(*args).compiler_ir('hlo')",
                ),
            ),
        ),
    )
)


@handles(RemovedJaxApi(NO_REPLACEMENT.code), reports=(NO_REPLACEMENT,))
def report(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, NO_REPLACEMENT)
