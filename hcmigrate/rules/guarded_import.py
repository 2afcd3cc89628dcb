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
import numpy as np

try:
    import jax.experimental.host_callback as hcb
except ImportError:
    hcb = None


def _print_like_id_print(value, /, **header):
    \"\"\"Print as the removed `id_print` did: sorted `k: v` keywords, the value
    in numpy's text, `( a b )`, `[ a b ]`, `{ k=v }`, wrapped at 80.\"\"\"

    def text(v, column, indent):  # (`v`'s text from `column`, column after)
        if not isinstance(v, (tuple, list, dict)):
            shown = np.array2string(v) if isinstance(v, np.ndarray) else str(v)
            return shown, column + len(shown)
        is_dict = isinstance(v, dict)
        ends = "{}" if is_dict else "()" if isinstance(v, tuple) else "[]"
        pairs = sorted(v.items()) if is_dict else enumerate(v)
        items = [(f"{k}=" if is_dict else "", e) for k, e in pairs]
        flat = " ".join(key + text(e, -float("inf"), 0)[0] for key, e in items)
        if column + len(flat) + 4 <= 80:
            return f"{ends[0]} {flat} {ends[1]}", column + len(flat) + 4
        shown, column = ends[0] + " ", column + 2
        for n, (key, e) in enumerate(items):
            if n:
                shown, column = shown + "\\n" + " " * (indent + 2), indent + 2
            part, column = text(e, column + len(key), indent + 2)
            shown += key + part
        return shown + " " + ends[1], column + 2

    if header:
        print(" ".join(f"{k}: {v}" for k, v in sorted(header.items())))
    print(text(jax.tree_util.tree_map(np.asarray, value), 0, 0)[0])


def trace(x):
    if hcb is not None:
        jax.debug.callback(_print_like_id_print, x, ordered=True)
    return x
""",
            diagnostics=(
                "8:8 HCB004 [manual] `hcb` tells whether host_callback could be imported: on JAX >= 0.8 it never can, so the code this test guards no longer runs; decide by hand",
                "9:9 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
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
