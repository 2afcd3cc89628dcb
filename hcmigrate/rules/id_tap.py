"""HCB101/HCB102: `id_tap` -> `io_callback(tap, None, arg, ordered=True)` (or compat)."""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.compat_reasons import compat_reason
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, parse
from hcmigrate.rules.spec import LegacyCall, Rule, handles
from hcmigrate.rules.values import with_legacy_value

NATIVE = Rule(
    code="HCB101",
    name="id-tap-to-io-callback",
    level=Level.FIXED,
    legacy="id_tap(tap, arg, result=r)",
    modern="io_callback(tap1, None, arg, ordered=True)  # value: r (or arg)",
    summary="Tap through an ordered io_callback; the tap loses its transforms/device parameters.",
    behaviour_note=(
        "Taps receive jax.Array leaves instead of numpy arrays; an ordered io_callback cannot be "
        "vmapped or differentiated (legacy tapped the whole batch once, or the primal); a tap that "
        "reads `transforms` now always gets ()."
    ),
)
COMPAT = Rule(
    code="HCB102",
    name="id-tap-compat",
    level=Level.COMPAT_FALLBACK,
    legacy="id_tap(tap, arg, tap_with_device=True) using the device; device_index != 0; callback_flavor=",
    modern="hcb_compat.id_tap(...)",
    summary="No faithful modern spelling: the call site uses the compat runtime, which keeps legacy semantics.",
)


def plan(site: CallSite, planner) -> None:
    """The tap function is adapted before the rewrite (its def may lose parameters), and a
    native tap joins the module's ordered io_callbacks."""
    if planner.suppressed(site.original, NATIVE):
        return  # left as is: it joins no ordered chain
    adaptation = planner.adapt(
        site,
        site.args.get("tap_func"),
        passes_transforms=site.literal("tap_with_transform", True) is not False,
        passes_device=site.literal("tap_with_device", False) is True,
    )
    if adaptation.mode != "compat" and compat_reason(site, "tap_with_device") is None:
        planner.joins_ordered_io()


@handles(LegacyCall("id_tap"), reports=(NATIVE, COMPAT), plan=plan)
def rewrite(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    reason = compat_reason(site, "tap_with_device")
    adaptation = ctx.adaptation(site)
    if reason is None and adaptation.mode == "compat":
        reason = f"the tap function {adaptation.reason}"
    if reason is not None:
        ctx.report(COMPAT, site.original, f"id_tap kept on the compat runtime: {reason}")
        return site.updated.with_changes(func=ctx.compat("id_tap"))

    tap = ctx.adapted_function(
        site, adaptation, pass_transforms=site.literal("tap_with_transform", True) is not False
    )
    io_callback = parse(ctx.modern("io_callback"))
    level = Level.FIXED_WITH_NOTE if adaptation.transforms_used else Level.FIXED
    note = (
        " (the tap reads `transforms`; it now always gets ())" if adaptation.transforms_used else ""
    )
    ctx.report(
        NATIVE, site.original, f"id_tap -> io_callback(..., ordered=True){note}", level=level
    )
    return with_legacy_value(
        site,
        ctx,
        lambda value: site.call_like(
            io_callback,
            (arg(tap), "tap_func"),
            (arg(cst.Name("None")), None),
            (arg(value), "arg"),
            (arg(cst.Name("True"), "ordered"), "result"),
        ),
    )
