"""JAX110: JAX's random numbers changed in 0.5.0 (`jax_threefry_partitionable` became the
default): a note naming the flag that restores the old stream. Nothing is rewritten: the new
stream is what the project runs on from now.

The rule notes the first random call of a module; a run says it once (hcmigrate.report
.OncePerRun: on the first file with something else to migrate, or, where none has, once at
the end), not once per module. The pre-filter selects such files by the same rows
(hcmigrate.removed_api_scan), and a module where only this note can apply has only its random
calls parsed (docs/jax-removals.md).
"""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

RANDOM_STREAM = Rule(
    code="JAX110",
    name="random-stream-changed",
    # Nothing to change for the module to run on current JAX (so not `manual`, which fails
    # the run), and nothing was rewritten (so not a fix): what differs is its numbers, a note.
    level=Level.NOTE,
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
import numpy as np


def _print_like_id_print(value, /, **header):
    \"\"\"Print as the removed `id_print` did: sorted `k: v` keywords, the value
    in numpy's text, `( a b )`, `[ a b ]`, `{ k=v }`, wrapped at 80.\"\"\"

    def text(v, column, indent):  # (`v`'s text from `column`, column after)
        if not isinstance(v, (tuple, list, dict)):
            shown = np.array2string(v) if isinstance(v, np.ndarray) else str(v)
            return shown, column + len(shown)
        is_dict = isinstance(v, dict)
        ends = "{}" if is_dict else "()" if isinstance(v, tuple) else "[]"
        pairs = sorted(v.items()) if is_dict else enumerate(v)
        items = [(f"{k}=" if is_dict else "", e) for k, e in pairs]
        flat = " ".join(key + text(e, -float("inf"), 0)[0] for key, e in items)
        if column + len(flat) + 4 <= 80:
            return f"{ends[0]} {flat} {ends[1]}", column + len(flat) + 4
        shown, column = ends[0] + " ", column + 2
        for n, (key, e) in enumerate(items):
            if n:
                shown, column = shown + "\\n" + " " * (indent + 2), indent + 2
            part, column = text(e, column + len(key), indent + 2)
            shown += key + part
        return shown + " " + ends[1], column + 2

    if header:
        print(" ".join(f"{k}: {v}" for k, v in sorted(header.items())))
    print(text(jax.tree_util.tree_map(np.asarray, value), 0, 0)[0])


key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (3,))
jax.debug.callback(_print_like_id_print, x, ordered=True)
""",
            diagnostics=(
                "2:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                '4:7 JAX110 [note] the project draws random numbers (said once a run): from JAX 0.5.0 they differ for the same key; jax.config.update("jax_threefry_partitionable", False) right after `import jax` restores the random numbers of jax < 0.5.0 (the default of jax_threefry_partitionable became True)',
                "6:1 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
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
        f"the project draws random numbers (said once a run): from JAX {site.row.removed_in} "
        f"they differ for the same key; {site.row.advice}",
    )
    return None
