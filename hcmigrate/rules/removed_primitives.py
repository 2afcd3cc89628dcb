"""JAX111: JAX's internal primitives that projects match jaxpr equations on (`pjit_p`,
`xla_pmap_p`), imported guarded where no one spelling spans the project's JAX range.

`jax.experimental.pjit.pjit_p` is the primitive `jax.jit` emits up to 0.6.2; from 0.7.0 the
same primitive is `jax.extend.core.primitives.jit_p`, and no release has both: where the
project's range starts before 0.7.0 its import tries the new name and falls back to the old
one (measured: scripts/measure_jax_removals.py runs the guarded import on jax 0.4.30, 0.6.2
and the current JAX; the primitive of a jitted call's equation is the one it binds). From
0.10.0 `jax.pmap` has no primitive: `xla_pmap_p` is imported guarded, None where JAX lacks it.
"""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

PRIMITIVES = register(
    Rule(
        code="JAX111",
        name="removed-primitives",
        level=Level.FIXED,
        legacy="from jax.experimental.pjit import pjit_p",
        modern="try: from jax.extend.core.primitives import jit_p as pjit_p / except "
        "ImportError: from jax.experimental.pjit import pjit_p",
        summary="Imports of the primitives of jit and pmap become guarded imports that work "
        "on every release of the project's JAX range; `jax.experimental.pjit.pjit_p` spelled "
        "out is renamed where the range starts at 0.7.0, else reported.",
        behaviour_note="On JAX >= 0.10.0 `xla_pmap_p` is None: `jax.pmap` traces to a `jit` "
        "equation holding a `shard_map` one, so code keyed on pmap's primitive never matches "
        "(the `jit` equation's own rule, if any, applies instead).",
        examples=(
            Example(
                title="the project allows JAX older than 0.7.0",
                before="""\
from jax.experimental.pjit import pjit_p
from jax.interpreters.pxla import xla_pmap_p

RULES = {pjit_p: "jit", xla_pmap_p: "pmap"}
""",
                after="""\
try:
    from jax.extend.core.primitives import jit_p as pjit_p
except ImportError:
    from jax.experimental.pjit import pjit_p

try:
    from jax.interpreters.pxla import xla_pmap_p
except ImportError:
    xla_pmap_p = None

RULES = {pjit_p: "jit", xla_pmap_p: "pmap"}
""",
                diagnostics=(
                    "1:35 JAX111 [fixed] import of `jax.experimental.pjit.pjit_p` -> guarded: `jax.extend.core.primitives.jit_p`, else `jax.experimental.pjit.pjit_p`",
                    "2:35 JAX111 [fixed-with-behaviour-note] import of `jax.interpreters.pxla.xla_pmap_p` guarded: `xla_pmap_p = None` on JAX >= 0.10.0, where code keyed on it never matches",
                ),
                options={"target_jax": (0, 4, 14)},
            ),
            Example(
                title="the project needs JAX 0.7.0 or newer",
                before="""\
from jax.experimental.pjit import pjit_p
""",
                after="""\
from jax.extend.core.primitives import jit_p as pjit_p
""",
                diagnostics=(
                    "1:35 JAX111 [fixed] import of `jax.experimental.pjit.pjit_p` -> `jax.extend.core.primitives.jit_p`",
                ),
                options={"target_jax": (0, 7, 0)},
            ),
        ),
    )
)


@handles(RemovedJaxApi(PRIMITIVES.code), reports=(PRIMITIVES,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, PRIMITIVES)
