"""HCB101/HCB102: `id_tap` -> `io_callback(tap, None, arg, ordered=True)` (or compat)."""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.compat_reasons import compat_reason
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, parse
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles
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
    examples=(
        Example(
            title="a tap defined in the module loses its `transforms` parameter; the value flows by name",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(x)


def step(x):
    x = hcb.id_tap(show, x)
    return x * 2
""",
            after="""\
from jax.experimental import io_callback


def show(x):
    print(x)


def step(x):
    io_callback(show, None, x, ordered=True)
    return x * 2
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "9:9 HCB101 [fixed] id_tap -> io_callback(..., ordered=True)",
            ),
        ),
        Example(
            title="inside an expression the new code still evaluates to the tapped value",
            before="""\
from jax.experimental import host_callback as hcb


def step(i):
    return jax.lax.cond(i > 0, lambda v: hcb.id_tap(show, v), lambda v: v, i)
""",
            after="""\
from jax.experimental import io_callback


def step(i):
    return jax.lax.cond(i > 0, lambda v: (io_callback(lambda arg: show(arg, ()), None, v, ordered=True), v)[1], lambda v: v, i)
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "5:42 HCB101 [fixed] id_tap -> io_callback(..., ordered=True)",
            ),
        ),
    ),
)
COMPAT = Rule(
    code="HCB102",
    name="id-tap-compat",
    level=Level.COMPAT_FALLBACK,
    legacy="id_tap(tap, arg, tap_with_device=True) using the device; device_index != 0; callback_flavor=",
    modern="hcb_compat.id_tap(...)",
    summary="No faithful modern spelling: the call site uses the compat runtime, which keeps legacy semantics.",
    examples=(
        Example(
            title="a tap that uses its `device` argument",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, transforms, device):
    print(device, x)


def step(x):
    hcb.id_tap(show, x, tap_with_device=True)
    return x
""",
            after="""\
from hcmigrate_compat import host_callback as hcb_compat


def show(x, transforms, device):
    print(device, x)


def step(x):
    hcb_compat.id_tap(show, x, tap_with_device=True)
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "9:5 HCB102 [compat-fallback] id_tap kept on the compat runtime: the tap function uses the `device` argument",
            ),
        ),
    ),
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
