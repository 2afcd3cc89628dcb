"""HCB008: a project whose dependency pins allow a JAX older than the native rewrite's code
runs on (facts.NATIVE_OUTPUT_SINCE) is told to raise its pin: in each module the rewrite
changed to the modern API, and, in a tree migrated already (what `--check` sees on the
migration's branch), at each ordered callback the rewrite writes (`jax.debug.callback(...,
ordered=True)`, `jax.debug.print`, `io_callback`). `--target-jax`, `[tool.hcmigrate]
target-jax` or the lowest version the project's `jax` requirement allows set the target
(hcmigrate.config.pinned_jax).
"""

from __future__ import annotations

from hcmigrate.diagnostics import Level
from hcmigrate.facts import (
    MODERN_API_CODES,
    NATIVE_OUTPUT_SINCE,
    ORDERED_CALLBACK_NAMES,
    ORDERED_PRINT_NAMES,
)
from hcmigrate.rules.context import ModernCallSite, ModuleSite, ReportContext, RuleContext
from hcmigrate.rules.nodes import literal_value
from hcmigrate.rules.spec import Example, ModernCall, ModuleEnd, Rule, handles

_SINCE = ".".join(map(str, NATIVE_OUTPUT_SINCE))

TARGET_TOO_OLD = Rule(
    code="HCB008",
    name="target-jax-too-old",
    level=Level.MANUAL,
    legacy="a project pinned to `jax>=0.1.67`, rewritten to the modern callbacks",
    modern="(reported: raise the pin)",
    summary=f"The rewritten code needs JAX >= {_SINCE}; a lower pin installs a JAX it fails on.",
    examples=(
        Example(
            title="the project's requirement allows jax 0.1.67",
            before="""\
from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_print(x)
""",
            after="""\
import jax
import numpy as np


def _print_like_id_print(value, /, **header):
    \"\"\"Print as the removed `id_print` did: the keywords as sorted `k: v` pairs, then
    the value, arrays as numpy prints them, tuples, lists and dicts as `( a b )`,
    `[ a b ]`, `{ k=v }`, one element a line (indented by 2) where wider than 80
    columns.\"\"\"

    def text(v, column, indent):  # the text of `v` from `column`, the column after it
        if not isinstance(v, (tuple, list, dict)):
            shown = np.array2string(v) if isinstance(v, np.ndarray) else str(v)
            return shown, column + len(shown)
        if isinstance(v, dict):
            opening, closing = "{}"
            items = [(f"{k}=", e) for k, e in sorted(v.items())]
        else:
            opening, closing = "()" if isinstance(v, tuple) else "[]"
            items = [("", e) for e in v]
        # on one line (from far left, everything fits), if that fits in 80 columns
        flat = " ".join(key + text(e, -float("inf"), 0)[0] for key, e in items)
        if column + len(flat) + 4 <= 80:
            return f"{opening} {flat} {closing}", column + len(flat) + 4
        shown, column = opening + " ", column + 2
        for n, (key, e) in enumerate(items):
            if n:
                shown, column = shown + "\\n" + " " * (indent + 2), indent + 2
            part, column = text(e, column + len(key), indent + 2)
            shown += key + part
        return shown + " " + closing, column + 2

    if header:
        print(" ".join(f"{k}: {v}" for k, v in sorted(header.items())))
    print(text(jax.tree.map(np.asarray, value), 0, 0)[0])


def step(x):
    jax.debug.callback(_print_like_id_print, x, ordered=True)
""",
            diagnostics=(
                "1:1 HCB001 [fixed] unused import of host_callback removed",
                "5:5 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit)",
                "1:1 HCB008 [manual] the rewritten code needs JAX >= 0.4.26 (ordered jax.debug callbacks, io_callback, jax.tree.map); the target JAX is 0.1.67: raise the project's `jax` requirement, or migrate with --strategy compat",
            ),
            options={"target_jax": (0, 1, 67)},
        ),
        Example(
            title="a module migrated already, the requirement still allows jax 0.4.20",
            before="""\
import jax


def step(x):
    jax.debug.print("{}", x, ordered=True)
""",
            after="""\
import jax


def step(x):
    jax.debug.print("{}", x, ordered=True)
""",
            diagnostics=(
                "5:5 HCB008 [manual] jax.debug.print(..., ordered=True), as the host_callback migration writes it, needs JAX >= 0.4.26; the target JAX is 0.4.20: raise the project's `jax` requirement",
            ),
            options={"target_jax": (0, 4, 20)},
        ),
    ),
)


@handles(ModuleEnd(), reports=(TARGET_TOO_OLD,))
def report_old_target(site: ModuleSite, ctx: ReportContext) -> None:
    target = site.options.target_jax
    if (
        site.options.strategy != "native"
        or target is None
        or tuple(target) >= NATIVE_OUTPUT_SINCE
        or not any(d.code in MODERN_API_CODES for d in site.diagnostics)
        or any(d.code == TARGET_TOO_OLD.code for d in site.diagnostics)
    ):
        return
    ctx.report(
        TARGET_TOO_OLD,
        None,
        f"the rewritten code needs JAX >= {_SINCE} (ordered jax.debug callbacks, io_callback, "
        f"jax.tree.map); the target JAX is {'.'.join(map(str, target))}: raise the project's "
        "`jax` requirement, or migrate with --strategy compat",
    )


@handles(ModernCall(ORDERED_CALLBACK_NAMES, keyword="ordered"), reports=(TARGET_TOO_OLD,))
def report_migrated_callback_on_old_target(site: ModernCallSite, ctx: RuleContext) -> None:
    """An ordered callback in a module migrated already: the module-end report above only sees
    modules the rewrite changes, and the migration's branch has none left."""
    _report_migrated_call(site, ctx, ORDERED_CALLBACK_NAMES)


@handles(ModernCall(ORDERED_PRINT_NAMES, keyword="ordered"), reports=(TARGET_TOO_OLD,))
def report_migrated_print_on_old_target(site: ModernCallSite, ctx: RuleContext) -> None:
    """The same for an ordered jax.debug.print (what the migration writes for id_print)."""
    _report_migrated_call(site, ctx, ORDERED_PRINT_NAMES)


def _report_migrated_call(site: ModernCallSite, ctx: RuleContext, names: tuple[str, ...]) -> None:
    target = ctx.target_jax
    ordered = next(
        a.value for a in site.original.args if a.keyword and a.keyword.value == "ordered"
    )
    if target is None or target >= NATIVE_OUTPUT_SINCE or literal_value(ordered) is False:
        return
    callee = next(n for n in names if n in site.qualified_names)
    ctx.report(
        TARGET_TOO_OLD,
        site.original,
        f"{callee}(..., ordered=True), as the host_callback migration writes it, needs JAX >= "
        f"{_SINCE}; the target JAX is {'.'.join(map(str, target))}: raise the project's `jax` "
        "requirement",
    )
