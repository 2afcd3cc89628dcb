"""JAX108: removed methods of jax.Array (`x.device_buffer`, `x.device_buffers`, `x.device()`).

A method has no import to resolve: `device_buffer(s)` are JAX's alone, so any use is one;
`x.device()` is also torch's and many classes', so only a receiver that is visibly a JAX
array (the value of a call into `jax`) is reported, and never rewritten (`x.devices()` is a
set, not a device).
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import code_of, register, report_manual
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

ARRAY_METHODS = register(
    Rule(
        code="JAX108",
        name="removed-array-methods",
        level=Level.FIXED_WITH_NOTE,
        legacy="x.device_buffer",
        modern="x.addressable_data(0)",
        summary="`x.device_buffer` -> `x.addressable_data(0)` (the name is JAX's alone, so "
        "the receiver is taken to be a jax.Array); `x.device_buffers` and `x.device()` are "
        "manual findings.",
        behaviour_note="The receiver is not known to be a jax.Array: only the method's name, "
        "which no other library uses, says so.",
        examples=(
            Example(
                before="""\
import jax.numpy as jnp

x = jnp.arange(3.0)
buffer = x.device_buffer
device = x.device()
""",
                after="""\
import jax.numpy as jnp

x = jnp.arange(3.0)
buffer = x.addressable_data(0)
device = x.device()
""",
                diagnostics=(
                    "4:10 JAX108 [fixed-with-behaviour-note] `x.device_buffer` -> `x.addressable_data(0)`: the receiver is taken to be a jax.Array",
                    "5:10 JAX108 [manual] `jax.Array.device` was removed in JAX 0.4.27: x.devices() is a set of devices on every version; the x.device property exists from 0.4.31",
                ),
            ),
            Example(
                title="a class of its own with .device() is left alone",
                before="""\
import jax


class Tensor:
    def device(self):
        return "cpu"


where = Tensor().device()
""",
                after="""\
import jax


class Tensor:
    def device(self):
        return "cpu"


where = Tensor().device()
""",
                diagnostics=(),
            ),
        ),
    )
)


@handles(RemovedJaxApi(ARRAY_METHODS.code), reports=(ARRAY_METHODS,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    row = site.row
    if not row.mechanical or not isinstance(site.updated, cst.Attribute):
        return report_manual(site, ctx, ARRAY_METHODS)
    if isinstance(ctx.parent(site.original), cst.MatchValue):
        # (`case x.addressable_data(0):` would compile as a class pattern: another test)
        ctx.report(
            ARRAY_METHODS,
            site.original,
            f"`{row.name}` was removed in JAX {row.removed_in}: a `case` pattern takes no "
            f"call, so `{row.replacement}` cannot stand here; match on a name bound to it",
            level=Level.MANUAL,
        )
        return None
    # The replacement is a method call (`addressable_data(0)`) on the same receiver.
    new = parse(f"_.{row.replacement}")
    new = new.with_changes(func=new.func.with_changes(value=site.updated.value))
    ctx.report(
        ARRAY_METHODS,
        site.original,
        f"`{code_of(site.original)}` -> `{code_of(new)}`: the receiver is taken to be a jax.Array",
    )
    return new
