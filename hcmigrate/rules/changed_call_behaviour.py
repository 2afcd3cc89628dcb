"""JAX115: a call whose meaning changed with no name removed (`jnp.linalg.solve` with a batch
of vectors as `b`, JAX 0.5.0): a manual finding at each call, from the measured row of the
table.

The shapes are not visible in the code, so nothing is rewritten, and the call may raise on
current JAX: `manual` (a human checks the shapes), not a fix. The finding says for which
arguments the result changed and what keeps the old meaning on every version
(`jnp.linalg.solve(a, b[..., None])[..., 0]`; measured in docs/jax_removals.json: jax 0.4.30
solves a (3, 2, 2) against b (3, 2) with a deprecation warning, jax 0.10.2 raises `Invalid
shapes for solve`).
"""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import code_of
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

CHANGED_CALL = Rule(
    code="JAX115",
    name="changed-call-behaviour",
    # (nothing is rewritten, and for some arguments the call raises on current JAX or means
    # something else: a human must check the shapes, so `manual`, not a fix)
    level=Level.MANUAL,
    legacy="jnp.linalg.solve(a, b)  # a (k, n, n), b (k, n)",
    modern="jnp.linalg.solve(a, b[..., None])[..., 0]",
    summary="A call whose meaning changed for some arguments, with no name removed "
    "(`jnp.linalg.solve` with a batch of vectors, JAX 0.5.0): left as it is, each call "
    "reported for a human to check its arguments' shapes, saying which arguments changed "
    "and what keeps the old meaning.",
    behaviour_note="Nothing is rewritten: for the arguments the finding names, the call raises "
    "or means something else on current JAX.",
    examples=(
        Example(
            before="""\
import jax.numpy as jnp

x = jnp.linalg.solve(a, b)
""",
            after="""\
import jax.numpy as jnp

x = jnp.linalg.solve(a, b)
""",
            diagnostics=(
                "3:5 JAX115 [manual] `jnp.linalg.solve(a, b)`: left as it is (the shapes are not known here): changed in JAX 0.5.0: where `b` has one dimension fewer than `a` and more than one (a batch of vectors: a (k, n, n), b (k, n)), jax < 0.5.0 solved each vector; from 0.5.0 that raises `Invalid shapes for solve` (and a b of (n, n) against a (k, n, n) now solves matrices where it raised); `jnp.linalg.solve(a, b[..., None])[..., 0]` solves the vectors on every version",
            ),
        ),
    ),
)


@handles(RemovedJaxApi(CHANGED_CALL.code), reports=(CHANGED_CALL,))
def note(site: RemovedApiSite, ctx: RuleContext) -> None:
    row = site.row
    ctx.report(
        CHANGED_CALL,
        site.original,
        f"`{code_of(site.original)}`: left as it is (the shapes are not known here): "
        f"changed in JAX {row.removed_in}: {row.advice}",
    )
    return None
