"""JAX114: `jax.xla_computation(f)(*args)` (removed in JAX 0.4.34) ->
`jax.jit(f).lower(*args).compiler_ir("hlo")`, the same XlaComputation on every release the table
covers.

Measured on jax 0.4.30 (tests/test_removed_xla_computation.py): both give an `XlaComputation`
with the same methods (`as_hlo_text`, `as_hlo_module`, `program_shape`, ...) and the same
operations; the HLO module is named `jit_f` instead of `xla_computation_f`, and its result is
the value itself where xla_computation wrapped it in a 1-tuple: a behaviour note. Only the form
called at once with the function alone is rewritten (the row's `applied_form`); a keyword of
xla_computation (`static_argnums`, `axis_env`, `return_shape`, ...) or its result kept in a
name stays a manual finding.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import REMOVE_STATEMENT, RemovedApiSite, RuleContext
from hcmigrate.rules.nodes import dotted_name, parse
from hcmigrate.rules.removed_api_rewrite import code_of, register, rename_or_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

XLA_COMPUTATION = register(
    Rule(
        code="JAX114",
        name="xla-computation",
        level=Level.FIXED_WITH_NOTE,
        legacy="jax.xla_computation(f)(x)",
        modern='jax.jit(f).lower(x).compiler_ir("hlo")',
        summary="`jax.xla_computation(f)(*args)` -> `jax.jit(f).lower(*args)"
        '.compiler_ir("hlo")`; other uses are reported with that replacement.',
        behaviour_note="The HLO module is named `jit_<f>` instead of `xla_computation_<f>`, and "
        "its result is no longer wrapped in a 1-tuple.",
        examples=(
            Example(
                before="""\
import jax

hlo = jax.xla_computation(lambda v: v * 2)(1.0).as_hlo_text()
""",
                after="""\
import jax

hlo = jax.jit(lambda v: v * 2).lower(1.0).compiler_ir("hlo").as_hlo_text()
""",
                diagnostics=(
                    '3:7 JAX114 [fixed-with-behaviour-note] `jax.xla_computation(lambda v: v * 2)(1.0)` -> `jax.jit(lambda v: v * 2).lower(1.0).compiler_ir("hlo")`: the HLO module is named jit_<f> and its result is no longer a 1-tuple',
                ),
            ),
        ),
    )
)

_NOTE = "the HLO module is named jit_<f> and its result is no longer a 1-tuple"


@handles(RemovedJaxApi(XLA_COMPUTATION.code), reports=(XLA_COMPUTATION,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    row = site.row
    if isinstance(site.original, cst.ImportFrom) and site.via:
        return _import(site, ctx)
    if not (isinstance(site.original, cst.Call) and isinstance(site.original.func, cst.Call)):
        return rename_or_import(site, ctx, XLA_COMPUTATION)  # (reported: not mechanical)
    call: cst.Call = site.updated
    function = code_of(call.func.args[0].value)
    args = ", ".join(code_of(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in call.args)
    jax = ctx.dotted("jax")
    new = parse(row.applied_form.replace("jax.", f"{jax}.", 1).format(function=function, args=args))
    ctx.report(
        XLA_COMPUTATION,
        site.original,
        f"`{code_of(site.original)}` -> `{code_of(new)}`: {_NOTE}",
    )
    return new


def _import(site: RemovedApiSite, ctx: RuleContext):
    """`from jax import xla_computation`: the name goes where each use is rewritten."""
    node: cst.ImportFrom = site.updated
    gone = {
        (dotted_name(a.name), a.asname and a.asname.name.value)
        for a, row, _ in site.aliases
        if site.via.get(id(a), (False,))[0]
    }
    if len(gone) != len(site.aliases):
        return rename_or_import(site, ctx, XLA_COMPUTATION)
    for alias, _, real in site.aliases:
        ctx.report(
            XLA_COMPUTATION,
            alias,
            f"import of `{real}` removed: every use is rewritten",
            level=Level.FIXED,
        )
    kept = [
        a for a in node.names if (dotted_name(a.name), a.asname and a.asname.name.value) not in gone
    ]
    if not kept:
        return REMOVE_STATEMENT
    last = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=[*kept[:-1], last])
