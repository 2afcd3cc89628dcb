"""HCB404: `jax.config.update("jax_host_callback_...", v)` removed (the flags no longer exist)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import LEGACY_CONFIG_FLAGS
from hcmigrate.rules.base import Rule, literal_value

if TYPE_CHECKING:
    from hcmigrate.codemod.pipeline import Context

CONFIG_FLAG = Rule(
    code="HCB404",
    name="legacy-config-flag",
    level=Level.FIXED_WITH_NOTE,
    legacy='jax.config.update("jax_host_callback_inline", True)',
    modern="(removed)",
    summary="host_callback's config flags are gone; updating them raises on modern JAX.",
    behaviour_note="The flag tuned the legacy implementation only (inline vs outfeed, queue size); modern callbacks have no such knob.",
)
RULES = (CONFIG_FLAG,)

CONFIG_UPDATE = ("jax.config.update", "jax.config.config.update", "jax._src.config.config.update")


def matches(call: cst.Call, qualified_names: set[str]) -> str | None:
    if not (qualified_names & set(CONFIG_UPDATE)) or not call.args:
        return None
    flag = literal_value(call.args[0].value)
    return flag if isinstance(flag, str) and flag in LEGACY_CONFIG_FLAGS else None


def rewrite(call: cst.Call, flag: str, value_used: bool, ctx: "Context"):
    ctx.report(CONFIG_FLAG, call, f"`{flag}` no longer exists; the update is removed")
    return cst.Name("None") if value_used else ctx.REMOVE_STATEMENT
