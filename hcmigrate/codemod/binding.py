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
    for n, arg in enumerate(call.args):
        if arg.star:
            element = _the_one_element(arg, call.args[n + 1 :], positional)
            if element is None:
                raise CannotBind(f"`{arg.star}` arguments cannot be bound statically")
            bound[positional.pop(0)] = cst.Arg(value=element)
            continue
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


def _the_one_element(star: cst.Arg, after, positional: list[str]) -> cst.BaseExpression | None:
    """What `*X` binds where it can only fill the one positional parameter left (GPJax's
    `id_tap(func, *args, result=r)`: legacy's `arg`; more elements were a TypeError there):
    the element of a one-element tuple or list, or `X[0]` for a name. None otherwise (`**`,
    several parameters left, positional arguments after it, other expressions)."""
    if star.star != "*" or len(positional) != 1:
        return None
    if any(a.keyword is None for a in after):
        return None
    value = star.value
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = value.elements
        if len(elements) == 1 and not isinstance(elements[0], cst.StarredElement):
            return elements[0].value
        return None
    if isinstance(value, cst.Name):
        return cst.Subscript(value, [cst.SubscriptElement(cst.Index(cst.Integer("0")))])
    return None
