"""JAX110: JAX's random numbers changed in 0.5.0 (`jax_threefry_partitionable` became the
default): one note per module that calls into `jax.random`, naming the flag that restores
the old stream. Nothing is rewritten: the new stream is what the project runs on from now.

Every module that calls into `jax.random` gets it: the pre-filter selects such files by the
same rows (hcmigrate.removed_api_scan), and a module where only this note can apply has only
its random calls parsed (docs/jax-removals.md).
"""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

RANDOM_STREAM = Rule(
    code="JAX110",
    name="random-stream-changed",
    # Nothing to change for the module to run on current JAX (so not `manual`, which fails
    # the run); what differs is its numbers: a behaviour note.
    level=Level.FIXED_WITH_NOTE,
    legacy="jax.random.normal(jax.random.PRNGKey(0), (3,))",
    modern="(reported: the flag that restores the old numbers)",
    summary="A module that draws random numbers gets other numbers from jax 0.5.0 on; the "
    "note names the flag that gives the old ones.",
    examples=(
        Example(
            before="""\
import jax
from jax.experimental import host_callback as hcb

key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (3,))
hcb.id_print(x)
""",
            after="""\
import jax

key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (3,))
jax.debug.print("{}", x, ordered=True)
""",
            diagnostics=(
                "2:1 HCB001 [fixed] unused import of host_callback removed",
                '4:7 JAX110 [fixed-with-behaviour-note] this module draws random numbers: from JAX 0.5.0 they differ for the same key; jax.config.update("jax_threefry_partitionable", False) right after `import jax` restores the random numbers of jax < 0.5.0 (the default of jax_threefry_partitionable became True)',
                "6:1 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.print(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit); the printed text differs for a 0-d float (`2.0`, `3.76200008392334` where legacy printed numpy's `2.`, `3.762`) and for a tuple or list held in a variable (`(Array(...), ...)`)",
            ),
        ),
    ),
)


@handles(RemovedJaxApi(RANDOM_STREAM.code), reports=(RANDOM_STREAM,))
def note(site: RemovedApiSite, ctx: RuleContext) -> None:
    if ctx.reported(RANDOM_STREAM):
        return None
    ctx.report(
        RANDOM_STREAM,
        site.original,
        f"this module draws random numbers: from JAX {site.row.removed_in} they differ for "
        f"the same key; {site.row.advice}",
    )
    return None
