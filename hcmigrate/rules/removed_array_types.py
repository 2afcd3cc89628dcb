"""JAX104: `jax.random.PRNGKeyArray`, `KeyArray`, `jnp.DeviceArray`, `XLACompatibleSharding`:
removed type names whose successor is a wider type."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

NOTE = "isinstance now holds for every value of the wider type"

ARRAY_TYPES = register(
    Rule(
        code="JAX104",
        name="removed-array-types",
        level=Level.FIXED_WITH_NOTE,
        legacy="def f(key: jax.random.PRNGKeyArray): ...",
        modern="def f(key: jax.Array): ...",
        summary="Removed type names (`jax.random.PRNGKeyArray`/`KeyArray`, `jnp.DeviceArray`, "
        "`jax.sharding.XLACompatibleSharding`) -> the type that replaced them, in annotations "
        "and isinstance checks.",
        behaviour_note="An isinstance check against the new type also accepts arrays that are "
        "not keys (jax.Array) or shardings of any kind (Sharding).",
        examples=(
            Example(
                before="""\
import jax


def draw(key: jax.random.PRNGKeyArray, n: int):
    assert isinstance(key, jax.random.KeyArray)
    return jax.random.uniform(key, (n,))
""",
                after="""\
import jax


def draw(key: jax.Array, n: int):
    assert isinstance(key, jax.Array)
    return jax.random.uniform(key, (n,))
""",
                diagnostics=(
                    "4:15 JAX104 [fixed-with-behaviour-note] `jax.random.PRNGKeyArray` -> `jax.Array`: isinstance now holds for every value of the wider type",
                    "5:28 JAX104 [fixed-with-behaviour-note] `jax.random.KeyArray` -> `jax.Array`: isinstance now holds for every value of the wider type",
                    '6:12 JAX110 [note] the project draws random numbers (said once a run): from JAX 0.5.0 they differ for the same key; jax.config.update("jax_threefry_partitionable", False) right after `import jax` restores the random numbers of jax < 0.5.0 (the default of jax_threefry_partitionable became True)',
                ),
            ),
        ),
    )
)


@handles(RemovedJaxApi(ARRAY_TYPES.code), reports=(ARRAY_TYPES,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, ARRAY_TYPES, note=NOTE)
