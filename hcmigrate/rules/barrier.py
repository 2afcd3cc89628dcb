"""HCB401/HCB402: `barrier_wait()` -> `jax.effects_barrier()`; `stop_outfeed_receiver()` removed."""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import REMOVE_STATEMENT, CallSite, RuleContext
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles

BARRIER = Rule(
    code="HCB401",
    name="barrier-wait-to-effects-barrier",
    level=Level.FIXED,
    legacy="barrier_wait(logging_name=None)",
    modern="jax.effects_barrier()",
    summary="Wait for pending callbacks with jax.effects_barrier().",
    behaviour_note="Errors raised in callbacks surface at the call as jax.errors.JaxRuntimeError, not from the barrier as CallbackException.",
    examples=(
        Example(
            before="""\
from jax.experimental import host_callback as hcb

run(data)
hcb.barrier_wait()
""",
            after="""\
import jax

run(data)
jax.effects_barrier()
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "4:1 HCB401 [fixed] barrier_wait() -> jax.effects_barrier()",
            ),
        ),
    ),
)
STOP_OUTFEED = Rule(
    code="HCB402",
    name="stop-outfeed-receiver-removed",
    level=Level.FIXED,
    legacy="stop_outfeed_receiver()",
    modern="(removed)",
    summary="Modern callbacks have no outfeed receiver to stop.",
    examples=(
        Example(
            title="the statement goes; its comments stay",
            before="""\
from jax.experimental import host_callback as hcb


def shutdown():
    # nothing to flush any more
    hcb.stop_outfeed_receiver()
    close_files()
""",
            after="""\


def shutdown():
    # nothing to flush any more
    close_files()
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "6:5 HCB402 [fixed] stop_outfeed_receiver() removed: nothing to stop",
            ),
        ),
    ),
)


@handles(LegacyCall("barrier_wait"), reports=(BARRIER,))
def rewrite_barrier(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    ctx.report(BARRIER, site.original, "barrier_wait() -> jax.effects_barrier()")
    return site.call_like(parse(ctx.modern("effects_barrier")))


@handles(LegacyCall("stop_outfeed_receiver"), reports=(STOP_OUTFEED,))
def rewrite_stop_outfeed(site: CallSite, ctx: RuleContext):
    ctx.report(STOP_OUTFEED, site.original, "stop_outfeed_receiver() removed: nothing to stop")
    if site.value_used:
        return cst.Name("None")
    return REMOVE_STATEMENT
