"""Every rule the codemod applies, one module per concern, each rule with a code and a level.

`RULES` is the registry the CLI (`--list-rules`, `--select/--ignore`) and the README table
read; `CALL_RULES` maps each legacy function to the rewrite of its call sites.
"""

from __future__ import annotations

from hcmigrate.rules import (
    barrier,
    call,
    config_flags,
    id_print,
    id_tap,
    imports,
    references,
    vectorized,
)
from hcmigrate.rules.base import Rule

RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            *imports.RULES,
            *references.RULES,
            *id_tap.RULES,
            *id_print.RULES,
            *call.RULES,
            *barrier.RULES,
            *config_flags.RULES,
            *vectorized.RULES,
        ),
        key=lambda r: r.code,
    )
)
RULES_BY_CODE = {r.code: r for r in RULES}

CALL_RULES = {
    "id_tap": id_tap.rewrite,
    "id_print": id_print.rewrite,
    "call": call.rewrite,
    "barrier_wait": barrier.rewrite_barrier,
    "stop_outfeed_receiver": barrier.rewrite_stop_outfeed,
}

__all__ = ["CALL_RULES", "RULES", "RULES_BY_CODE", "Rule"]
