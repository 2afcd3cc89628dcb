"""HCB004: a guarded import's name still tested (`if hcb is not None:`) is left for a human.

`try: import jax.experimental.host_callback as hcb / except ImportError: hcb = None` and then
`if hcb is not None: ...`: on JAX >= 0.8 the import always fails, so the guarded code silently
stops running, whatever the rewrite does inside it. Whether that code should now always run,
or never, only its author knows: the test is left as it is, and so are the import it needs and
the code it guards, which runs only where host_callback imports (hcmigrate.codemod.
version_guards: rewriting it would add imports and helpers every JAX loads, for code current
JAX never runs).
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
try:
    import jax.experimental.host_callback as hcb
except ImportError:
    hcb = None


def trace(x):
    if hcb is not None:
        hcb.id_print(x)
    return x
""",
            diagnostics=(
                "8:8 HCB004 [manual] `hcb` tells whether host_callback could be imported: on JAX >= 0.8 it never can, so the code this test guards no longer runs (left as it is); decide by hand",
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
        "so the code this test guards no longer runs (left as it is); decide by hand",
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
