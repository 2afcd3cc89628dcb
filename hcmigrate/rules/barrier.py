"""HCB401/HCB402: `barrier_wait()` -> `jax.effects_barrier()`; `stop_outfeed_receiver()` removed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.base import CallSite, Rule

if TYPE_CHECKING:
    from hcmigrate.codemod.pipeline import Context

BARRIER = Rule(
    code="HCB401",
    name="barrier-wait-to-effects-barrier",
    level=Level.FIXED,
    legacy="barrier_wait(logging_name=None)",
    modern="jax.effects_barrier()",
    summary="Wait for pending callbacks with jax.effects_barrier().",
    behaviour_note="Errors raised in callbacks surface at the call as jax.errors.JaxRuntimeError, not from the barrier as CallbackException.",
)
STOP_OUTFEED = Rule(
    code="HCB402",
    name="stop-outfeed-receiver-removed",
    level=Level.FIXED,
    legacy="stop_outfeed_receiver()",
    modern="(removed)",
    summary="Modern callbacks have no outfeed receiver to stop.",
)
RULES = (BARRIER, STOP_OUTFEED)


def rewrite_barrier(site: CallSite, ctx: "Context") -> cst.BaseExpression | None:
    ctx.report(BARRIER, site.original, "barrier_wait() -> jax.effects_barrier()")
    return cst.Call(func=parse(ctx.name("effects_barrier")))


def rewrite_stop_outfeed(site: CallSite, ctx: "Context") -> cst.BaseExpression | None:
    ctx.report(STOP_OUTFEED, site.original, "stop_outfeed_receiver() removed: nothing to stop")
    if site.value_used:
        return cst.Name("None")
    return ctx.REMOVE_STATEMENT
