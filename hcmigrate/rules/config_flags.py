"""HCB404: `jax.config.update("jax_host_callback_...", v)` removed (the flags no longer exist)."""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import CONFIG_UPDATE_NAMES, LEGACY_CONFIG_FLAGS
from hcmigrate.rules.context import REMOVE_STATEMENT, ModernCallSite, RuleContext
from hcmigrate.rules.nodes import literal_value
from hcmigrate.rules.spec import Example, ModernCall, Rule, handles

CONFIG_FLAG = Rule(
    code="HCB404",
    name="legacy-config-flag",
    level=Level.FIXED_WITH_NOTE,
    legacy='jax.config.update("jax_host_callback_inline", True)',
    modern="(removed)",
    summary="host_callback's config flags are gone; updating them raises on modern JAX.",
    behaviour_note="The flag tuned the legacy implementation only (inline vs outfeed, queue size); modern callbacks have no such knob.",
    examples=(
        Example(
            before="""\
import jax

jax.config.update("jax_host_callback_inline", True)
""",
            after="""\
import jax
""",
            diagnostics=(
                "3:1 HCB404 [fixed-with-behaviour-note] `jax_host_callback_inline` no longer exists; the update is removed",
            ),
        ),
    ),
)


@handles(
    ModernCall(CONFIG_UPDATE_NAMES, first_argument=LEGACY_CONFIG_FLAGS), reports=(CONFIG_FLAG,)
)
def rewrite(site: ModernCallSite, ctx: RuleContext):
    flag = literal_value(site.original.args[0].value)
    ctx.report(CONFIG_FLAG, site.original, f"`{flag}` no longer exists; the update is removed")
    return cst.Name("None") if site.value_used else REMOVE_STATEMENT
