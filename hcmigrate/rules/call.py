"""HCB301/HCB302/HCB303: `call(f, arg, result_shape=S)`.

-> `jax.pure_callback(f, SDS, arg, vmap_method="sequential")` when `f` is visibly free of
side effects and the result is used; otherwise `io_callback(f, SDS, arg, ordered=True)`.
Never a pure_callback whose result is unused: the compiler drops it.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import DEFAULT_VMAP_METHOD, VMAP_METHOD_SINCE
from hcmigrate.rules.compat_reasons import compat_reason
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, literal_value, parse, string
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles

PURE = Rule(
    code="HCB301",
    name="call-to-pure-callback",
    level=Level.FIXED,
    legacy="call(f, arg, result_shape=S)  # f visibly pure, result used",
    modern='jax.pure_callback(f, SDS(S), arg, vmap_method="sequential")',
    summary="A pure host computation becomes pure_callback; result_shape becomes ShapeDtypeStruct leaves.",
    behaviour_note="The callback receives jax.Array leaves; under vmap it now runs per element (legacy call failed under vmap).",
    examples=(
        Example(
            title="a numpy function whose result is used; the scalar `result_shape` becomes a float32[] leaf",
            before="""\
import numpy as np
from jax.experimental import host_callback as hcb


def norm(x):
    return hcb.call(np.linalg.norm, x, result_shape=1.0)
""",
            after="""\
import numpy as np
import jax


def norm(x):
    return jax.pure_callback(np.linalg.norm, jax.ShapeDtypeStruct((), "float32"), x, vmap_method="sequential")
""",
            diagnostics=(
                "2:1 HCB001 [fixed] unused import of host_callback removed",
                "6:12 HCB301 [fixed] call -> jax.pure_callback",
            ),
        ),
    ),
)
IO = Rule(
    code="HCB302",
    name="call-to-io-callback",
    level=Level.FIXED,
    legacy="call(f, arg, result_shape=S)  # side effects, or result unused",
    modern="io_callback(f, SDS(S), arg, ordered=True)",
    summary="A host call with side effects (or an unused result) becomes an ordered io_callback.",
    behaviour_note="The callback receives jax.Array leaves; like legacy call, it fails under vmap and grad.",
    examples=(
        Example(
            title="a callback with side effects",
            before="""\
import jax
import numpy as np
from jax.experimental import host_callback as hcb


def save(x):
    np.save("x.npy", x)
    return x


def step(x):
    return hcb.call(save, x, result_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))
""",
            after="""\
import jax
import numpy as np
from jax.experimental import io_callback


def save(x):
    np.save("x.npy", x)
    return x


def step(x):
    return io_callback(save, jax.ShapeDtypeStruct(x.shape, jax.dtypes.canonicalize_dtype(x.dtype)), x, ordered=True)
""",
            diagnostics=(
                "3:1 HCB001 [fixed] unused import of host_callback removed",
                "12:12 HCB302 [fixed] call -> io_callback(..., ordered=True): the callback may have side effects",
            ),
        ),
    ),
)
COMPAT = Rule(
    code="HCB303",
    name="call-compat",
    level=Level.COMPAT_FALLBACK,
    legacy="call(f, arg, call_with_device=True) using the device; device_index != 0; callback_flavor=",
    modern="hcb_compat.call(...)",
    summary="No faithful modern spelling: the call site uses the compat runtime.",
    examples=(
        Example(
            title="a call on another device's host",
            before="""\
import numpy as np
from jax.experimental import host_callback as hcb


def norm(x):
    return hcb.call(np.linalg.norm, x, result_shape=1.0, device_index=1)
""",
            after="""\
import numpy as np
from hcmigrate_compat import host_callback as hcb_compat


def norm(x):
    return hcb_compat.call(np.linalg.norm, x, result_shape=1.0, device_index=1)
""",
            diagnostics=(
                "2:1 HCB001 [fixed] unused import of host_callback removed",
                "6:12 HCB303 [compat-fallback] call kept on the compat runtime: device_index= picks which device's host runs the callback",
            ),
        ),
    ),
)


def plan(site: CallSite, planner) -> None:
    """The callback is adapted before the rewrite; a call that becomes an ordered io_callback
    joins the module's ordered chain."""
    if planner.suppressed(site.original, IO):
        return  # left as is: it joins no ordered chain
    func = site.args.get("callback_func")
    adaptation = planner.adapt(
        site,
        func,
        passes_transforms=False,
        passes_device=site.literal("call_with_device", False) is True,
    )
    native = adaptation.mode != "compat" and compat_reason(site, "call_with_device") is None
    if native and (_no_result(site) or not site.value_used or not planner.is_pure(func)):
        planner.joins_ordered_io()


def _no_result(site: CallSite) -> bool:
    shape = site.args.get("result_shape")
    return (
        shape is None
        or literal_value(shape) is None
        or (isinstance(shape, cst.Tuple) and not shape.elements)
    )


@handles(LegacyCall("call"), reports=(PURE, IO, COMPAT), plan=plan)
def rewrite(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    reason = compat_reason(site, "call_with_device")
    adaptation = ctx.adaptation(site)
    if reason is None and adaptation.mode == "compat":
        reason = f"the callback {adaptation.reason}"
    if reason is not None:
        ctx.report(COMPAT, site.original, f"call kept on the compat runtime: {reason}")
        return site.updated.with_changes(func=ctx.compat("call"))

    func = ctx.adapted_function(site, adaptation, pass_transforms=False)
    shapes = ctx.shapes.convert(site.original_args.get("result_shape"))
    shape_expr = shapes.expr if shapes.expr is not None else cst.Name("None")
    value = site.args.get("arg", cst.Name("None"))
    note = " (result_shape converted at trace time)" if shapes.general else ""
    if site.value_used and not shapes.is_empty and ctx.is_pure(site.original_args["callback_func"]):
        extra = []
        if ctx.target_at_least(VMAP_METHOD_SINCE):
            extra.append(arg(string(DEFAULT_VMAP_METHOD), "vmap_method"))
        ctx.report(PURE, site.original, f"call -> jax.pure_callback{note}")
        return site.call_like(
            parse(ctx.modern("pure_callback")),
            (arg(func), "callback_func"),
            (arg(shape_expr), "result_shape"),
            (arg(value), "arg"),
            *[(e, None) for e in extra],
        )
    if shapes.is_empty:
        why = "it returns no result (result_shape None or ())"
    elif not site.value_used:
        why = "its result is unused"
    else:
        why = "the callback may have side effects"
    ctx.report(IO, site.original, f"call -> io_callback(..., ordered=True): {why}{note}")
    return site.call_like(
        parse(ctx.modern("io_callback")),
        (arg(func), "callback_func"),
        (arg(shape_expr), "result_shape"),
        (arg(value), "arg"),
        (arg(cst.Name("True"), "ordered"), None),
    )
