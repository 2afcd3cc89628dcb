"""JAX107: `jax.core` names that moved to `jax.extend.core` (JAX 0.7), `jax.core.get_aval`
(`jax.typeof`, JAX 0.5.3), and `jax.core` internals with no public home."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

CORE_NAMES = register(
    Rule(
        code="JAX107",
        name="removed-core-names",
        level=Level.FIXED,
        legacy="jax.core.Primitive('p'); jax.core.get_aval(x)",
        modern="jax.extend.core.Primitive('p'); jax.typeof(x)",
        summary="`jax.core` names that moved -> `jax.extend.core` (a guarded import of both "
        "where the project allows a JAX older than 0.4.27); `get_aval` -> `jax.typeof` "
        "(a manual finding where the project allows a JAX without it); internals with no "
        "public home are manual findings.",
        behaviour_note="`jax.typeof` gives a ShapedArray where `get_aval` gave a "
        "ConcreteArray for a concrete value.",
        examples=(
            Example(
                before="""\
from jax import core
from jax.core import ClosedJaxpr

double_p = core.Primitive("double")
""",
                after="""\
import jax
import jax.extend.core
from jax import core
from jax.extend.core import ClosedJaxpr

double_p = jax.extend.core.Primitive("double")
""",
                diagnostics=(
                    "2:22 JAX107 [fixed] import of `jax.core.ClosedJaxpr` -> `jax.extend.core.ClosedJaxpr`",
                    "4:12 JAX107 [fixed] `core.Primitive` -> `jax.extend.core.Primitive`",
                ),
            ),
            Example(
                title="the project allows jax 0.4.14, older than jax.extend.core: guarded imports",
                before="""\
import jax.core as core
from jax.core import ClosedJaxpr

double_p = core.Primitive("double")
""",
                after="""\
import jax.core as core

try:
    from jax.extend.core import ClosedJaxpr
except ImportError:
    from jax.core import ClosedJaxpr

try:
    from jax.extend.core import Primitive
except ImportError:
    from jax.core import Primitive


double_p = Primitive("double")
""",
                diagnostics=(
                    "2:22 JAX107 [fixed] import of `jax.core.ClosedJaxpr` -> guarded: `jax.extend.core.ClosedJaxpr`, else `jax.core.ClosedJaxpr`",
                    "4:12 JAX107 [fixed] `core.Primitive` -> `Primitive`, a guarded import: `jax.extend.core.Primitive`, else `jax.core.Primitive`",
                ),
                options={"target_jax": (0, 4, 14)},
            ),
            Example(
                title="several names used from `jax.core`: one guarded import binds them all",
                before="""\
import jax

# Types for annotation
Var = jax.core.Var
double_p = jax.core.Primitive("double")


def is_var(v):
    return isinstance(v, jax.core.Var) and not isinstance(v, jax.core.Literal)
""",
                after="""\
import jax

try:
    from jax.extend.core import Literal, Primitive, Var
except ImportError:
    from jax.core import Literal, Primitive, Var


# Types for annotation
double_p = Primitive("double")


def is_var(v):
    return isinstance(v, Var) and not isinstance(v, Literal)
""",
                diagnostics=(
                    "4:7 JAX107 [fixed] `jax.core.Var` -> `Var`, a guarded import: `jax.extend.core.Var`, else `jax.core.Var`",
                    "5:12 JAX107 [fixed] `jax.core.Primitive` -> `Primitive`, a guarded import: `jax.extend.core.Primitive`, else `jax.core.Primitive`",
                    "9:26 JAX107 [fixed] `jax.core.Var` -> `Var`, a guarded import: `jax.extend.core.Var`, else `jax.core.Var`",
                    "9:62 JAX107 [fixed] `jax.core.Literal` -> `Literal`, a guarded import: `jax.extend.core.Literal`, else `jax.core.Literal`",
                ),
                options={"target_jax": (0, 4, 14)},
            ),
            Example(
                title="the project allows jax 0.4.30, which has no jax.typeof",
                before="""\
import jax

aval = jax.core.get_aval(1.0)
""",
                after="""\
import jax

aval = jax.core.get_aval(1.0)
""",
                diagnostics=(
                    "3:8 JAX107 [manual] `jax.core.get_aval` is gone from JAX 0.10.0 and `jax.typeof` needs JAX >= 0.5.3, older than the target JAX allows: no one spelling works across the project's JAX range; raise its `jax` requirement, or branch on jax.__version__",
                ),
                options={"target_jax": (0, 4, 30)},
            ),
        ),
    )
)


@handles(RemovedJaxApi(CORE_NAMES.code), reports=(CORE_NAMES,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    if site.row.mechanical and site.row.advice:  # (get_aval: what differs is the row's advice)
        return rename_or_import(site, ctx, CORE_NAMES, Level.FIXED_WITH_NOTE, site.row.advice)
    return rename_or_import(site, ctx, CORE_NAMES)
