"""HCB201/HCB202: `id_print` -> `jax.debug.print` with the legacy header in the format string.

Legacy printed the extra keywords as sorted `k: v` pairs on one line, then the value
(np.array2string; tuples as `( a b )`). jax.debug.print formats arrays the same way.
Prints join the ordered jax.debug chain of the module's taps, which runs under vmap (per
element), grad and cond; ordered io_callbacks (impure calls whose result is used) are a
separate chain, said in the diagnostic.
"""

from __future__ import annotations


import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.compat_reasons import (
    patches_internals,
    FOLLOWS_COMPAT,
    IO_CHAIN_NOTE,
    compat_reason,
    several_devices_reason,
    tap_note,
    PRINT_TEXT_NOTE,
)
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, literal_value, parse, string
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles
from hcmigrate.rules.values import with_legacy_value

NATIVE = Rule(
    code="HCB201",
    name="id-print-to-debug-print",
    level=Level.FIXED_WITH_NOTE,
    legacy='id_print(x, what="w", result=r)',
    modern='jax.debug.print("what: w\\n{}", x, ordered=True)  # value: r (or x)',
    summary="Print through jax.debug.print with the legacy `k: v` header; the value is kept.",
    behaviour_note=(
        "Under a vmap this module does not show jax.debug.print prints once per element "
        "(legacy: once, with a `transforms:` header); it fails on more than one device; "
        "ordered apart from ordered io_callbacks (this module's or another's). A "
        "tuple, list or dict literal, written out or held in a name bound to one, prints in "
        "legacy's `( a b )` / `[ a b ]` / `{ k=v }` layout (a format starting with an escaped "
        'brace gets a `"{"` placeholder first); other pytrees are formatted by str(). '
        "A 0-d float prints as Python prints floats (`2.0`, `3.76200008392334`), where "
        "legacy printed numpy's `2.`, `3.762`."
    ),
    examples=(
        Example(
            title="the legacy header (`what: x`) is kept in the format string",
            before="""\
from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_print(x, what="x")
    return x
""",
            after="""\
import jax


def step(x):
    jax.debug.print("what: x\\n{}", x, ordered=True)
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "5:5 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.print(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit); the printed text differs for a 0-d float (`2.0`, `3.76200008392334` where legacy printed numpy's `2.`, `3.762`) and for a tuple or list held in a variable (`(Array(...), ...)`)",
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
import jax


def step(x):
    pair = (x.min(), x.max())
    jax.debug.print("what: range\\n( {} {} )", pair[0], pair[1], ordered=True)
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "6:5 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.print(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit); the printed text differs for a 0-d float (`2.0`, `3.76200008392334` where legacy printed numpy's `2.`, `3.762`) and for a tuple or list held in a variable (`(Array(...), ...)`)",
            ),
        ),
        Example(
            title="a keyword computed at run time is printed by a placeholder, as legacy printed str(v)",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, label):
    return hcb.id_print(x, what=label, step=3)
""",
            after="""\
import jax


def show(x, label):
    jax.debug.print("step: 3 what: {}\\n{}", label, x, ordered=True)
    return x
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "5:12 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.print(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit); the printed text differs for a 0-d float (`2.0`, `3.76200008392334` where legacy printed numpy's `2.`, `3.762`) and for a tuple or list held in a variable (`(Array(...), ...)`)",
            ),
        ),
    ),
)
COMPAT = Rule(
    code="HCB202",
    name="id-print-compat",
    level=Level.COMPAT_FALLBACK,
    legacy=(
        "id_print(x, output_stream=s) / threshold= / tap_with_device=True / non-literal "
        "keywords where prints join the io_callback chain / under a jax.vmap the module shows "
        "/ several devices / other calls of the module on the compat runtime"
    ),
    modern="hcb_compat.id_print(...)",
    summary="Output stream, threshold, device, vmap or devices: the compat runtime prints exactly as legacy.",
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

from hcmigrate_compat import host_callback as hcb_compat


def step(x):
    hcb_compat.id_print(x, output_stream=sys.stderr)
    return x
""",
            diagnostics=(
                "3:1 HCB001 [fixed] unused import of host_callback removed",
                "7:5 HCB202 [compat-fallback] id_print kept on the compat runtime: `output_stream=` has no jax.debug.print equivalent",
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
from hcmigrate_compat import host_callback as hcb_compat


def rows(xs):
    return jax.vmap(lambda row: hcb_compat.id_print(row * 2, what="row"))(xs)
""",
            diagnostics=(
                "2:1 HCB001 [fixed] unused import of host_callback removed",
                "6:33 HCB202 [compat-fallback] id_print kept on the compat runtime: it runs under jax.vmap (line 6), where legacy printed the whole batch once, under a `transforms:` header (jax.debug.print would print each element)",
            ),
        ),
    ),
)

_PRINTER_ONLY = ("output_stream", "threshold")


def legacy_layout(
    shape: cst.BaseExpression, access: cst.BaseExpression | None
) -> tuple[str, list[cst.BaseExpression]] | None:
    """The format text and leaf values that print a tuple, list or dict literal `shape` as
    legacy id_print laid pytrees out (`( a b )`, `[ a b ]`, `{ k=v }` with sorted keys);
    leaves are the literal's own expressions (`access` None) or subscripts of `access`
    (a name holding the literal). None: not such a literal."""

    def item(key: cst.BaseExpression) -> cst.BaseExpression:
        return cst.Subscript(access, [cst.SubscriptElement(cst.Index(key))])

    def part(node, sub_access):
        nested = legacy_layout(node, sub_access)
        return nested or ("{}", [sub_access if sub_access is not None else node])

    if isinstance(shape, (cst.Tuple, cst.List)):
        if not shape.elements or any(isinstance(e, cst.StarredElement) for e in shape.elements):
            return None
        parts = [
            part(e.value, item(cst.Integer(str(i))) if access is not None else None)
            for i, e in enumerate(shape.elements)
        ]
        opening, closing = ("( ", " )") if isinstance(shape, cst.Tuple) else ("[ ", " ]")
    elif isinstance(shape, cst.Dict):
        keys = [
            literal_value(e.key) if isinstance(e, cst.DictElement) else ... for e in shape.elements
        ]
        if (
            not shape.elements
            or not all(isinstance(k, str) for k in keys)
            or len(set(keys)) < len(keys)
        ):
            return None
        ordered = sorted(zip(keys, shape.elements), key=lambda pair: pair[0])
        parts = [
            (
                f"{key.replace('{', '{{').replace('}', '}}')}=" + text,
                leaves,
            )
            for key, element in ordered
            for text, leaves in [
                part(element.value, item(element.key) if access is not None else None)
            ]
        ]
        opening, closing = ("{{ ", " }}")
    else:
        return None
    text = opening + " ".join(p[0] for p in parts) + closing
    return text, [leaf for _, leaves in parts for leaf in leaves]


def _placeholder_first(
    fmt: str, values: list[cst.BaseExpression]
) -> tuple[str, list[cst.BaseExpression]]:
    """`fmt` and its values, spelled so that a placeholder comes before any escaped brace.
    jax.debug.print formats only when the first piece `string.Formatter().parse` gives has a
    field (JAX 0.10 prints `{{ max={} }} 2.0` for `{{ max={} }}`), and `{{` or `}}` ends a
    piece: the first escaped brace becomes a `{}` filled with the brace itself."""
    i = 0
    while i < len(fmt):
        if fmt[i] in "{}":
            if fmt[i : i + 2] not in ("{{", "}}"):
                return fmt, values  # a field comes first
            return fmt[:i] + "{}" + fmt[i + 2 :], [string(fmt[i]), *values]
        i += 1
    return fmt, values


def printer_of(header: str, fmt: str, ctx: RuleContext) -> cst.BaseExpression:
    """A host function printing what `jax.debug.print(fmt, value)` prints: `print` itself,
    `functools.partial(print, header, sep="\\n")` for one value under a header, else a lambda
    formatting `fmt` (a tuple's elements)."""
    if fmt == "{}":
        return cst.Name("print")
    if header and fmt.endswith("\n{}"):
        partial = ctx.dotted("functools.partial")
        return parse(f'{partial}(print, {string(header).value}, sep="\\n")')
    return parse(f"lambda *values: print({string(fmt).value}.format(*values))")


def plan(site: CallSite, planner) -> None:
    """A print under a jax.vmap the module shows stays on the compat runtime (and with it
    the module's other taps and prints: hcmigrate.codemod.plan); any other print follows the
    module's calls there, if some stay."""
    if (why := patches_internals(planner)) is not None:
        planner.keeps_compat(site, why)
        return
    if not planner.suppressed(site.original, NATIVE) and planner.keeps_compat_under_vmap(
        site,
        "legacy printed the whole batch once, under a `transforms:` header (jax.debug.print "
        "would print each element)",
    ):
        return
    planner.may_follow_compat(site)


@handles(LegacyCall("id_print"), reports=(NATIVE, COMPAT), plan=plan)
def rewrite(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    reason = patches_internals(ctx) or compat_reason(site, "tap_with_device")
    if reason is None:
        given = [
            p for p in _PRINTER_ONLY if p in site.args and literal_value(site.args[p]) is not None
        ]
        if given:
            reason = f"`{given[0]}=` has no jax.debug.print equivalent"
    header_values = {k: literal_value(v) for k, v in site.extra_keywords.items()}
    computed = [k for k, v in header_values.items() if v is ...]
    if reason is None and any(isinstance(v, bytes) for v in header_values.values()):
        reason = "a keyword is a bytes literal"
    if reason is None and computed and ctx.taps_join_ordered_io:
        # (io_callback takes arrays only: the value cannot reach the printer as an argument)
        reason = f"keyword `{computed[0]}=` is computed at run time"
    if reason is None:
        reason = several_devices_reason(ctx)
    adaptation = ctx.adaptation(site)
    if reason is None and adaptation.follows_compat:
        reason = adaptation.reason or FOLLOWS_COMPAT
    elif reason is None and adaptation.mode == "compat":
        reason = f"it {adaptation.reason}"
    if reason is not None:
        ctx.report(COMPAT, site.original, f"id_print kept on the compat runtime: {reason}")
        return site.updated.with_changes(func=ctx.compat("id_print"))

    raw_header = " ".join(f"{k}: {header_values[k]}" for k in sorted(header_values))
    # A computed keyword's value is printed by a placeholder, as str() (legacy printed
    # `k: v` with str(v) too); its expression becomes an argument before the values.
    header = " ".join(
        f"{k}: {{}}"
        if k in computed
        else f"{k}: {header_values[k]}".replace("{", "{{").replace("}", "}}")
        for k in sorted(header_values)
    )
    computed_keywords = [k for k in sorted(header_values) if k in computed]
    header_args = [site.extra_keywords[k] for k in computed_keywords]
    original = site.original_args.get("arg")
    # a container written out, or held in a name the code visibly bound to one
    shown = ctx.visible_value(original) if isinstance(original, cst.Name) else original
    text_keyword = next((k for k in site.extra_keywords if k not in computed), None)

    def make_effect(printed: cst.BaseExpression) -> cst.BaseExpression:
        laid_out = None
        if isinstance(printed, (cst.Tuple, cst.List, cst.Dict)):
            laid_out = legacy_layout(printed, None)
        elif isinstance(printed, cst.Name) and shown is not None:
            laid_out = legacy_layout(shown, printed)
        placeholders, values = laid_out or ("{}", [printed])
        # where each argument comes from (its comments go with it): a computed keyword's
        # value, the printed value (when it stays whole), the first literal keyword's text
        origins = [*computed_keywords, *(["arg"] if laid_out is None else [None] * len(values))]
        values = [*header_args, *values]
        fmt = f"{header}\n{placeholders}" if header else placeholders
        if ctx.taps_join_ordered_io:
            printer = printer_of(raw_header, fmt, ctx)
            return site.call_like(
                parse(ctx.modern("io_callback")),
                (arg(printer), text_keyword),
                (arg(cst.Name("None")), None),
                *[(arg(v), origin) for v, origin in zip(values, origins)],
                (arg(cst.Name("True"), "ordered"), "result"),
            )
        fmt, placed = _placeholder_first(fmt, values)
        origins = [None] * (len(placed) - len(values)) + origins
        return site.call_like(
            parse(ctx.modern("debug_print")),
            (arg(string(fmt)), text_keyword),
            *[(arg(v), origin) for v, origin in zip(placed, origins)],
            (arg(cst.Name("True"), "ordered"), "result"),
        )

    target = "jax.debug.print(..., ordered=True)"
    note = f"{tap_note(ctx)}; {PRINT_TEXT_NOTE}"
    if ctx.taps_join_ordered_io:
        target = "io_callback(print, ..., ordered=True)"
        note = f"{IO_CHAIN_NOTE}; {PRINT_TEXT_NOTE}"
    ctx.report(
        NATIVE,
        site.original,
        f"id_print -> {target}: {note}",
        level=Level.FIXED_WITH_NOTE,
    )
    return with_legacy_value(site, ctx, make_effect)
