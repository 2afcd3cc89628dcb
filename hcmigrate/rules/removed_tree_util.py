"""JAX101: `jax.tree_map` and the other top-level tree functions, removed in JAX 0.6."""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

TREE_UTIL = register(
    Rule(
        code="JAX101",
        name="tree-util-top-level",
        level=Level.FIXED,
        legacy="jax.tree_map(f, tree)",
        modern="jax.tree.map(f, tree)",
        summary="`jax.tree_*` at top level -> `jax.tree.*` (or `jax.tree_util.tree_*` where the "
        "project allows a JAX without `jax.tree`, or states no floor, as in the example); `from "
        "jax import tree_map` imports it from `jax.tree_util`.",
        examples=(
            Example(
                before="""\
import jax
from jax import tree_map as tmap

a = jax.tree_map(lambda v: v + 1, {"x": 1})
b = tmap(lambda v: v * 2, [1, 2])
leaves = jax.tree_leaves(a)
""",
                after="""\
import jax
from jax.tree_util import tree_map as tmap

a = jax.tree_util.tree_map(lambda v: v + 1, {"x": 1})
b = tmap(lambda v: v * 2, [1, 2])
leaves = jax.tree_util.tree_leaves(a)
""",
                diagnostics=(
                    "2:17 JAX101 [fixed] import of `jax.tree_map` -> `jax.tree_util.tree_map`",
                    "4:5 JAX101 [fixed] `jax.tree_map` -> `jax.tree_util.tree_map`",
                    "6:10 JAX101 [fixed] `jax.tree_leaves` -> `jax.tree_util.tree_leaves`",
                ),
            ),
            Example(
                title="the project allows jax 0.4.16, which has no `jax.tree`",
                before="""\
import jax

a = jax.tree_map(lambda v: v + 1, {"x": 1})
""",
                after="""\
import jax

a = jax.tree_util.tree_map(lambda v: v + 1, {"x": 1})
""",
                diagnostics=("3:5 JAX101 [fixed] `jax.tree_map` -> `jax.tree_util.tree_map`",),
                options={"target_jax": (0, 4, 16)},
            ),
            Example(
                title="a function of its own named tree_map is left alone",
                before="""\
def tree_map(f, xs):
    return [f(x) for x in xs]


ys = tree_map(abs, [-1, 2])
""",
                after="""\
def tree_map(f, xs):
    return [f(x) for x in xs]


ys = tree_map(abs, [-1, 2])
""",
                diagnostics=(),
            ),
        ),
    )
)


@handles(RemovedJaxApi(TREE_UTIL.code), reports=(TREE_UTIL,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    return rename_or_import(site, ctx, TREE_UTIL)
