"""JAX105: removed modules whose contents live elsewhere (`jax.config`, `jax.linear_util`,
`jax.experimental.optimizers`/`stax`, `jax.abstract_arrays`)."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

REMOVED_MODULES = register(
    Rule(
        code="JAX105",
        name="removed-modules",
        level=Level.FIXED,
        legacy="from jax.config import config",
        modern="from jax import config",
        summary="Imports and uses of removed modules point at the module that has the same "
        "names now (`jax.extend.linear_util`, `jax.example_libraries.optimizers`, ...).",
        examples=(
            Example(
                before="""\
from jax.config import config
from jax.experimental import optimizers

config.update("jax_enable_x64", True)
opt_init, opt_update, get_params = optimizers.sgd(0.1)
""",
                after="""\
from jax import config
from jax.example_libraries import optimizers

config.update("jax_enable_x64", True)
opt_init, opt_update, get_params = optimizers.sgd(0.1)
""",
                diagnostics=(
                    "1:24 JAX105 [fixed] import of `jax.config.config` -> `jax.config`",
                    "2:30 JAX105 [fixed] import of `jax.experimental.optimizers` -> `jax.example_libraries.optimizers`",
                ),
            ),
            Example(
                title="`jax.config.update` and `from jax import config` still work",
                before="""\
import jax
from jax import config

jax.config.update("jax_enable_x64", True)
config.update("jax_debug_nans", True)
""",
                after="""\
import jax
from jax import config

jax.config.update("jax_enable_x64", True)
config.update("jax_debug_nans", True)
""",
                diagnostics=(),
            ),
            Example(
                title="the project allows jax 0.3.16, older than jax.extend.linear_util (0.4.16): "
                "a guarded import, no floor to raise",
                before="""\
from jax import linear_util as lu

f = lu.wrap_init(abs)
""",
                after="""\
try:
    from jax.extend import linear_util as lu
except ImportError:
    from jax import linear_util as lu

f = lu.wrap_init(abs)
""",
                diagnostics=(
                    "1:17 JAX105 [fixed] import of `jax.linear_util` -> guarded: `jax.extend.linear_util`, else `jax.linear_util`",
                ),
                options={"target_jax": (0, 3, 16)},
            ),
        ),
    )
)


@handles(RemovedJaxApi(REMOVED_MODULES.code), reports=(REMOVED_MODULES,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, REMOVED_MODULES)
