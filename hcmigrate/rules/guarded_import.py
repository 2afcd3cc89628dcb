"""HCB004: a guarded import's name still tested (`if hcb is not None:`) is left for a human.

`try: import jax.experimental.host_callback as hcb / except ImportError: hcb = None` and then
`if hcb is not None: ...`: on JAX >= 0.8 the import always fails, so the guarded code silently
stops running, whatever the rewrite does inside it. Whether that code should now always run,
or never, only its author knows: the test is left as it is (and so is the import it needs).
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import ReferenceSite, RuleContext
from hcmigrate.rules.spec import Example, LegacyReference, Rule, handles

GUARD_KEPT = Rule(
    code="HCB004",
    name="guarded-import-still-used",
    level=Level.MANUAL,
    legacy="try: import ...host_callback as hcb / except ImportError: hcb = None, with `hcb` still tested",
    modern="(left alone)",
    summary="On JAX >= 0.8 the guarded name is always None: code guarded by it silently stops running.",
    examples=(
        Example(
            title="a guarded import's name still tested",
            before="""\
try:
    import jax.experimental.host_callback as hcb
except ImportError:
    hcb = None


def trace(x):
    if hcb is not None:
        hcb.id_print(x)
    return x
""",
            after="""\
import jax

try:
    import jax.experimental.host_callback as hcb
except ImportError:
    hcb = None


def trace(x):
    if hcb is not None:
        jax.debug.print("{}", x, ordered=True)
    return x
""",
            diagnostics=(
                "8:8 HCB004 [manual] `hcb` tells whether host_callback could be imported: on JAX >= 0.8 it never can, so the code this test guards no longer runs; decide by hand",
                "9:9 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.print(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit); the printed text differs for a 0-d float (`2.0`, `3.76200008392334` where legacy printed numpy's `2.`, `3.762`) and for a tuple or list held in a variable (`(Array(...), ...)`)",
            ),
        ),
    ),
)

_NONE_TESTS = (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)


@handles(LegacyReference(guard_fallback=True), reports=(GUARD_KEPT,))
def report_guard_test(site: ReferenceSite, ctx: RuleContext) -> None:
    node = site.original
    if not _tested(node, ctx):
        return  # a use of the name as a value: the other reference rules take it
    name = cst.Module(body=[]).code_for_node(node)
    ctx.report(
        GUARD_KEPT,
        node,
        f"`{name}` tells whether host_callback could be imported: on JAX >= 0.8 it never can, "
        "so the code this test guards no longer runs; decide by hand",
    )


def _tested(node: cst.CSTNode, ctx: RuleContext) -> bool:
    """Is `node` tested for truth or for None (`if hcb:`, `not hcb`, `hcb is not None`)?"""
    parent = ctx.parent(node)
    if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)):
        return parent.test is node
    if isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
        return not isinstance(parent, cst.UnaryOperation) or isinstance(parent.operator, cst.Not)
    if isinstance(parent, cst.ComparisonTarget):  # `None is hcb`
        parent = ctx.parent(parent)
    if isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1:
        target = parent.comparisons[0]
        other = target.comparator if parent.left is node else parent.left
        return (
            isinstance(target.operator, _NONE_TESTS)
            and isinstance(other, cst.Name)
            and other.value == "None"
        )
    return False
