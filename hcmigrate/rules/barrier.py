"""HCB401/HCB402: `barrier_wait()` -> `jax.effects_barrier()`; `stop_outfeed_receiver()` removed."""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import REMOVE_STATEMENT, CallSite, RuleContext
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles

# What jax.effects_barrier() does differently from legacy barrier_wait (measured on jax
# 0.10.2 with 4 CPU devices; docs/callback-semantics.md).
BARRIER_NOTE = (
    "after a callback failed on several devices (pmap) every later barrier raises that error "
    "again (legacy returned)"
)
BARRIER = Rule(
    code="HCB401",
    name="barrier-wait-to-effects-barrier",
    level=Level.FIXED_WITH_NOTE,
    legacy="barrier_wait(logging_name=None)",
    modern="jax.effects_barrier()",
    summary="Wait for pending callbacks with jax.effects_barrier().",
    behaviour_note=(
        "Errors raised in callbacks surface at the call as jax.errors.JaxRuntimeError, not "
        "from the barrier as CallbackException (legacy on an accelerator); after a callback "
        "failed on several devices (pmap) every later jax.effects_barrier() raises that error "
        "again, where legacy barrier_wait returned. The compat runtime's barrier_wait behaves "
        "as legacy's. In a module whose other host_callback sites are left as they are "
        "(manual), the barrier stays with them: legacy's waits for their taps, and raises "
        "their errors, where jax.effects_barrier() does not on an accelerator before JAX 0.4.35."
    ),
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
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "4:1 HCB401 [fixed-with-behaviour-note] barrier_wait() -> jax.effects_barrier(): after a callback failed on several devices (pmap) every later barrier raises that error again (legacy returned)",
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
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "6:5 HCB402 [fixed] stop_outfeed_receiver() removed: nothing to stop",
            ),
        ),
    ),
)


@handles(LegacyCall("barrier_wait"), reports=(BARRIER,))
def rewrite_barrier(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    ctx.report(BARRIER, site.original, f"barrier_wait() -> jax.effects_barrier(): {BARRIER_NOTE}")
    return site.call_like(parse(ctx.modern("effects_barrier")))


@handles(LegacyCall("stop_outfeed_receiver"), reports=(STOP_OUTFEED,))
def rewrite_stop_outfeed(site: CallSite, ctx: RuleContext):
    ctx.report(STOP_OUTFEED, site.original, "stop_outfeed_receiver() removed: nothing to stop")
    if site.value_used:
        return cst.Name("None")
    return REMOVE_STATEMENT
