"""JAX109: removed APIs with no mechanical replacement (`jax.random.shuffle`,
`jax.experimental.maps`, `jax.clear_backends`, `jaxlib.xla_extension`, ...): a manual finding
that says what to do instead."""

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
        legacy="jax.clear_backends()",
        modern="(reported: what to write instead)",
        summary="A removed API whose successor needs the code around it rewritten is reported "
        "with what to use instead; nothing is changed.",
        examples=(
            Example(
                before="""\
import jax

jax.clear_backends()
""",
                after="""\
import jax

jax.clear_backends()
""",
                diagnostics=(
                    "3:1 JAX109 [manual] `jax.clear_backends` was removed in JAX 0.4.36: jax.clear_caches() clears compiled code; backends are no longer cleared",
                ),
            ),
            Example(
                title="a removed module: jaxlib's extension, whose names have public homes",
                before="""\
from jaxlib.xla_extension import XlaRuntimeError

try:
    run()
except XlaRuntimeError:
    pass
""",
                after="""\
from jaxlib.xla_extension import XlaRuntimeError

try:
    run()
except XlaRuntimeError:
    pass
""",
                diagnostics=(
                    "1:34 JAX109 [manual] `jaxlib.xla_extension` was removed in JAX 0.6.1: JAX internal, renamed jaxlib._jax: Device is jax.Device, ArrayImpl is jax.Array (and the older DeviceArray), XlaRuntimeError is jax.errors.JaxRuntimeError (JAX >= 0.4.34; for older JAX keep the old import in an `except ImportError:`)",
                ),
            ),
        ),
    )
)


@handles(RemovedJaxApi(NO_REPLACEMENT.code), reports=(NO_REPLACEMENT,))
def report(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, NO_REPLACEMENT)
