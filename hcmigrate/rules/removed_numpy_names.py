"""JAX106: removed `jax.numpy` aliases and constants (`jnp.round_`, `jnp.NINF`, `jnp.product`,
`jnp.trapz`, ...)."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

NUMPY_NAMES = register(
    Rule(
        code="JAX106",
        name="removed-numpy-names",
        level=Level.FIXED,
        legacy="jnp.round_(x, 2) * jnp.NINF",
        modern="jnp.round(x, 2) * -jnp.inf",
        summary="`jax.numpy` aliases and constants NumPy 2 dropped -> the names they stood for.",
        examples=(
            Example(
                before="""\
import jax.numpy as np

y = np.round_(np.product(np.arange(1, 4)) / 7, 2)
low = np.NINF
""",
                after="""\
import jax.numpy as np

y = np.round(np.prod(np.arange(1, 4)) / 7, 2)
low = -np.inf
""",
                diagnostics=(
                    "3:5 JAX106 [fixed] `np.round_` -> `np.round`",
                    "3:15 JAX106 [fixed] `np.product` -> `np.prod`",
                    "4:7 JAX106 [fixed] `np.NINF` -> `-np.inf`",
                ),
            ),
            Example(
                title="numpy's own names are left alone",
                before="""\
import numpy as np

y = np.round_(np.product(np.arange(1, 4)) / 7, 2)
""",
                after="""\
import numpy as np

y = np.round_(np.product(np.arange(1, 4)) / 7, 2)
""",
                diagnostics=(),
            ),
        ),
    )
)


@handles(RemovedJaxApi(NUMPY_NAMES.code), reports=(NUMPY_NAMES,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, NUMPY_NAMES)
