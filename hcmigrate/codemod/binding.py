"""Binding a legacy call's arguments to the legacy signature (hcmigrate.facts), as Python would."""

from __future__ import annotations

import libcst as cst

from hcmigrate.facts import LEGACY_FUNCTIONS


class CannotBind(Exception):
    """The call's arguments cannot be bound statically (*args, **kwargs, unknown keyword)."""


def bind_argument_nodes(
    legacy_name: str, call: cst.Call
) -> tuple[dict[str, cst.Arg], dict[str, cst.Arg]]:
    """(bound, extra keywords): the call's `cst.Arg` nodes by legacy parameter name (seed
    spellings mapped), and id_print's extra keywords. Raises CannotBind for star-args or
    unknown keywords."""
    signature = LEGACY_FUNCTIONS[legacy_name]
    bound: dict[str, cst.Arg] = {}
    extra: dict[str, cst.Arg] = {}
    positional = list(signature.positional)
    for arg in call.args:
        if arg.star:
            raise CannotBind(f"`{arg.star}` arguments cannot be bound statically")
        if arg.keyword is None:
            if not positional:
                raise CannotBind(f"too many positional arguments for {legacy_name}")
            bound[positional.pop(0)] = arg
            continue
        name = arg.keyword.value
        name = signature.seed_aliases.get(name, name)
        if (
            name in signature.positional
            or name in signature.keyword_only
            or name in signature.seed_aliases.values()
        ):
            if name in bound:
                raise CannotBind(f"argument {name!r} given twice")
            if name in positional:
                positional.remove(name)
            bound[name] = arg
        elif signature.accepts_extra_keywords:
            extra[name] = arg
        else:
            raise CannotBind(f"{legacy_name} has no parameter {name!r}")
    return bound, extra
