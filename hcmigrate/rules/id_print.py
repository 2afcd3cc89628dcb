"""HCB201/HCB202: `id_print` -> `jax.debug.callback` of a module helper that prints legacy's text.

Legacy printed the extra keywords as sorted `k: v` pairs on one line, then the value: arrays
by numpy's array2string, tuples, lists and dicts as `( a b )`, `[ a b ]`, `{ k=v }`, broken
over lines at 80 columns. No format of jax.debug.print prints that text (a 0-d float32
`2.` / `3.762` comes out as `2.0` / `3.76200008392334`, a container it cannot see by repr()),
and the codemod cannot know a value's shape, so every print goes to the module's
`_print_like_id_print` (hcmigrate.codemod.module_helpers; imported from one module of the
package where two or more of its modules need it, hcmigrate.shared_helpers), given the keywords by
functools.partial as legacy gave them to its printer. Prints join the ordered jax.debug chain
of the module's taps, which runs under vmap (per element), grad and cond; ordered
io_callbacks (impure calls whose result is used) are a separate chain, said in the diagnostic.
"""

from __future__ import annotations


import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import LEGACY_MODULE, ONE_ARRAY_FUNCTIONS, ONE_ARRAY_METHODS
from hcmigrate.rules.compat_reasons import (
    patches_internals,
    io_chain_note,
    compat_reason,
    several_devices_reason,
    no_native_spelling,
    tap_note,
)
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, call, literal_value, parse
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles
from hcmigrate.rules.values import with_legacy_value

NATIVE = Rule(
    code="HCB201",
    name="id-print-to-debug-callback",
    level=Level.FIXED_WITH_NOTE,
    legacy='id_print(x, what="w", result=r)',
    modern=(
        'jax.debug.callback(functools.partial(_print_like_id_print, what="w"), x, '
        "ordered=True)  # value: r (or x)"
    ),
    summary=(
        "Print through jax.debug.callback and a module helper that prints legacy's text "
        "(the `k: v` header, numpy's array2string, `( a b )` containers); the value is kept."
    ),
    behaviour_note=(
        "Under a vmap this module does not show the print runs once per element "
        "(legacy: once, with a `transforms:` header); it fails on more than one device (on "
        "several devices through sharded jit, or under the `several-devices` setting, it is "
        "an ordered io_callback, which fails under vmap and grad); ordered apart from "
        "ordered io_callbacks (this module's or another's). The text is "
        "legacy's for every value: `_print_like_id_print` formats it as jax 0.4.30 did."
    ),
    examples=(
        Example(
            title="legacy's header (`what: x`) and numpy's text, from one module helper",
            before="""\
from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_print(x, what="x")
    return x
""",
            after="""\
import functools

import jax
import numpy as np


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


def step(x):
    jax.debug.callback(
        functools.partial(_print_like_id_print, what="x"), x, ordered=True
    )
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:5 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
            ),
        ),
        Example(
            title="a tuple held in a name prints in legacy's layout, `( a b )`",
            before="""\
from jax.experimental import host_callback as hcb


def step(x):
    pair = (x.min(), x.max())
    hcb.id_print(pair, what="range")
    return x
""",
            after="""\
import functools

import jax
import numpy as np


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


def step(x):
    pair = (x.min(), x.max())
    jax.debug.callback(
        functools.partial(_print_like_id_print, what="range"), pair, ordered=True
    )
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "6:5 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
            ),
        ),
        Example(
            title="a keyword computed at run time is bound by functools.partial, as legacy bound it",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, label):
    return hcb.id_print(x, what=label, step=3)
""",
            after="""\
import functools

import jax
import numpy as np


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


def show(x, label):
    jax.debug.callback(
        functools.partial(_print_like_id_print, what=label, step=3), x, ordered=True
    )
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:12 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
            ),
        ),
    ),
)
NO_NATIVE = Rule(
    code="HCB202",
    name="id-print-no-native-spelling",
    level=Level.MANUAL,
    legacy=(
        "id_print(x, output_stream=s) / threshold= / tap_with_device=True / non-literal "
        "keywords where prints join the io_callback chain / under a jax.vmap the module shows "
        "/ several devices where ordered callbacks fail"
    ),
    modern="(left as it is: a hand port, or the compat strategy)",
    summary="Output stream, threshold, device, vmap or devices: no native spelling prints as "
    "legacy did; the site is left for a hand port or the compat runtime chosen for the project.",
    examples=(
        Example(
            title="a print to another stream",
            before="""\
import sys

from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_print(x, output_stream=sys.stderr)
    return x
""",
            after="""\
import sys

from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_print(x, output_stream=sys.stderr)
    return x
""",
            diagnostics=(
                '7:5 HCB202 [manual] id_print left as it is, no native spelling keeps legacy behaviour: `output_stream=` has no jax.debug.print equivalent; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
        Example(
            title="a print in a lambda given to jax.vmap (legacy printed the batch once)",
            before="""\
import jax
from jax.experimental import host_callback as hcb


def rows(xs):
    return jax.vmap(lambda row: hcb.id_print(row * 2, what="row"))(xs)
""",
            after="""\
import jax
from jax.experimental import host_callback as hcb


def rows(xs):
    return jax.vmap(lambda row: hcb.id_print(row * 2, what="row"))(xs)
""",
            diagnostics=(
                '6:33 HCB202 [manual] id_print left as it is, no native spelling keeps legacy behaviour: it runs under jax.vmap (line 6), where legacy printed the whole batch once, under a `transforms:` header (jax.debug.print would print each element); port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
    ),
)

_PRINTER_ONLY = ("output_stream", "threshold")


def plan(site: CallSite, planner) -> None:
    """A print under a jax.vmap the module shows is left as it is (no native spelling prints
    the batch once); any other print is on the module's ordered chain."""
    if (why := patches_internals(planner)) is not None:
        planner.left_as_is(site, why)
        return
    if not planner.suppressed(site.original, NATIVE) and planner.left_under_vmap(
        site,
        "legacy printed the whole batch once, under a `transforms:` header (jax.debug.print "
        "would print each element)",
    ):
        return
    planner.on_ordered_chain(site)


@handles(LegacyCall("id_print"), reports=(NATIVE, NO_NATIVE), plan=plan)
def rewrite(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    reason = patches_internals(ctx) or compat_reason(site, "tap_with_device")
    if reason is None:
        given = [
            p for p in _PRINTER_ONLY if p in site.args and literal_value(site.args[p]) is not None
        ]
        if given:
            reason = f"`{given[0]}=` has no jax.debug.print equivalent"
    if reason is None:
        reason = several_devices_reason(ctx, site)
    adaptation = ctx.adaptation(site)
    if reason is None and adaptation.mode == "compat":
        reason = f"it {adaptation.reason}"
    if reason is not None:
        ctx.report(NO_NATIVE, site.original, no_native_spelling("id_print", reason, ctx))
        return None

    header = _literal_header(site)
    if header is not None and _one_array(site.args.get("arg"), ctx):
        return _print_one_array(site, ctx, header)
    # The keywords are bound when the print is traced and printed by str() on the host, as
    # legacy's functools.partial of its printer did (a value computed at run time included).
    helper = cst.Name(ctx.use_helper("id_print"))
    keywords = list(site.extra_keywords)
    printer: cst.BaseExpression = helper
    if keywords:
        printer = call(
            parse(ctx.dotted("functools.partial")),
            arg(helper),
            *[arg(site.extra_keywords[k], k) for k in keywords],
        )
    # (the first keyword's trailing comment goes with the printer)
    printer_origin = keywords[0] if keywords else None

    def make_effect(printed: cst.BaseExpression) -> cst.BaseExpression:
        if ctx.taps_join_ordered_io:
            return site.call_like(
                parse(ctx.modern("io_callback")),
                (arg(printer), printer_origin),
                (arg(cst.Name("None")), None),
                (arg(printed), "arg"),
                (arg(cst.Name("True"), "ordered"), "result"),
            )
        return site.call_like(
            parse(ctx.modern("debug_callback")),
            (arg(printer), printer_origin),
            (arg(printed), "arg"),
            (arg(cst.Name("True"), "ordered"), "result"),
        )

    target, note = f"jax.debug.callback({helper.value}, ..., ordered=True)", tap_note(ctx)
    if ctx.taps_join_ordered_io:
        target, note = (
            f"io_callback({helper.value}, None, ..., ordered=True)",
            io_chain_note(ctx, site),
        )
    ctx.report(
        NATIVE,
        site.original,
        f"id_print -> {target}, printing legacy's text: {note}",
        level=Level.FIXED_WITH_NOTE,
    )
    return with_legacy_value(site, ctx, make_effect)


def _literal_header(site: CallSite) -> str | None:
    """Legacy's header line of the print's keywords when each is a literal (`what: x`; "" for
    none), None where one is computed at run time."""
    pairs = []
    for key, node in site.extra_keywords.items():
        value = literal_value(node)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return None
        pairs.append(f"{key}: {value}")
    return " ".join(sorted(pairs))


def _one_array(node: cst.BaseExpression | None, ctx: RuleContext, depth: int = 0) -> bool:
    """Does the code show that `node` is one array (or number), never a tuple, list or dict
    (which only the layout of `_print_like_id_print` prints as legacy did)?"""
    if node is None or depth > 8:
        return False
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name):
        value = ctx.visible_value(node)
        return value is not None and _one_array(value, ctx, depth + 1)
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return _one_array(node.expression, ctx, depth + 1)
    if isinstance(node, cst.BinaryOperation):
        left, right = (_one_array(n, ctx, depth + 1) for n in (node.left, node.right))
        if isinstance(node.operator, (cst.Add, cst.Multiply, cst.Modulo)):
            # (`pair + other_pair`, `pair * 2`, `"%s" % v` are no arrays; an array, or a float,
            # beside anything is one)
            return left or right or any(isinstance(n, cst.Float) for n in (node.left, node.right))
        containers = (cst.Tuple, cst.List, cst.Dict, cst.SimpleString, cst.FormattedString)
        # (`-`, `/`, `**`, `@`, `&` ... exist for no container)
        return not isinstance(node.left, containers) and not isinstance(node.right, containers)
    if isinstance(node, cst.Comparison):
        return True  # (a comparison of arrays is an array; of containers, a bool)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ONE_ARRAY_METHODS:
            return True  # (methods only arrays have)
        names = ctx.qualified(func)
        if names and names <= ONE_ARRAY_CALLBACKS:  # (a legacy `call` of one result shape)
            shape = next((a.value for a in node.args if _keyword(a) == "result_shape"), None)
            return isinstance(shape, cst.Call) and _callee_name(shape.func) == "ShapeDtypeStruct"
        return bool(names) and names <= ONE_ARRAY_FUNCTIONS
    return False


ONE_ARRAY_CALLBACKS = frozenset({f"{LEGACY_MODULE}.call"})


def _keyword(argument: cst.Arg) -> str | None:
    return argument.keyword.value if argument.keyword is not None else None


def _callee_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


def _print_one_array(site: CallSite, ctx: RuleContext, header: str) -> cst.BaseExpression:
    """One array or number printed as legacy did, in one line: the header, then numpy's text
    of the value (`2.` for a 0-d float, `[1 2]`), which `print(x)` alone does not give."""
    np = ctx.numpy()
    value = "v"  # (a parameter of its own: nothing outside the lambda is read by that name)
    shown = f"{np}.array2string({np}.asarray({value}))"
    text = f'print({header!r}, {shown}, sep="\\n")' if header else f"print({shown})"
    if header and '"' not in header and "\\" not in header:
        text = f'print("{header}", {shown}, sep="\\n")'
    printer = parse(f"lambda {value}: {text}")
    target, note = "jax.debug.callback(lambda v: print(...), ..., ordered=True)", tap_note(ctx)
    if ctx.taps_join_ordered_io:
        target, note = (
            "io_callback(lambda v: print(...), None, ..., ordered=True)",
            io_chain_note(ctx, site),
        )
    ctx.report(
        NATIVE,
        site.original,
        f"id_print -> {target}, printing legacy's text: {note}",
        level=Level.FIXED_WITH_NOTE,
    )

    def make_effect(printed: cst.BaseExpression) -> cst.BaseExpression:
        if ctx.taps_join_ordered_io:
            return site.call_like(
                parse(ctx.modern("io_callback")),
                (arg(printer), None),
                (arg(cst.Name("None")), None),
                (arg(printed), "arg"),
                (arg(cst.Name("True"), "ordered"), "result"),
            )
        return site.call_like(
            parse(ctx.modern("debug_callback")),
            (arg(printer), None),
            (arg(printed), "arg"),
            (arg(cst.Name("True"), "ordered"), "result"),
        )

    return with_legacy_value(site, ctx, make_effect)
