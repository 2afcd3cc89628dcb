"""HCB008: a project whose dependency pins allow a JAX older than the migrated code runs on is
told to raise its pin. What the code needs is computed from what it is written with (each
construct's first release, measured: hcmigrate.native_needs), in each module the rewrite
changed to the modern API and in each module that uses what the rewrite writes (a tree
migrated already, what `--check` sees on the migration's branch: the same answer as the run
that migrated it). `--target-jax`, `[tool.hcmigrate] target-jax` or the lowest version the
project's `jax` requirement allows set the target (hcmigrate.config.pinned_jax); when the run
raises the project's floor (hcmigrate.projects.floors) it raises it to what the code needs, and
a module that needs no more than the run can raise it to says nothing of its own (the metadata
line does: Options.floor_raisable_to). In a module the run rewrites, only what the rewrite added
counts (hcmigrate.native_needs.written_needs).
"""

from __future__ import annotations

from hcmigrate.codemod.line_diff import source_line
from hcmigrate.diagnostics import Level
from hcmigrate.facts import (
    MODERN_API_CODES,
    NATIVE_SINCE,
    ORDERED_CALLBACK_NAMES,
    ORDERED_PRINT_NAMES,
)
from hcmigrate.native_needs import needs_of, written_needs
from hcmigrate.rules.context import ModernCallSite, ModuleSite, ReportContext, RuleContext
from hcmigrate.rules.spec import Example, ModernCall, ModuleEnd, Rule, handles

TARGET_TOO_OLD = Rule(
    code="HCB008",
    name="target-jax-too-old",
    level=Level.MANUAL,
    legacy="a project pinned to `jax>=0.1.67`, rewritten to the modern callbacks",
    modern="(reported: raise the pin)",
    summary="The rewritten code needs a newer JAX than the pin allows (computed from what it "
    "uses); a lower pin installs a JAX it fails on.",
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
    jax.debug.callback(_print_like_id_print, x, ordered=True)
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:5 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(_print_like_id_print, ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
                "5:1 HCB008 [manual] the rewritten code needs JAX >= 0.3.17 (jax.debug.callback); the target JAX is 0.1.67: raise the project's `jax` requirement, or migrate with --strategy compat",
            ),
            options={"target_jax": (0, 1, 67)},
        ),
        Example(
            title="a module migrated already, the requirement still allows jax 0.4.20",
            before="""\
import jax


def step(x):
    jax.debug.print("{}", jax.tree.map(abs, x), ordered=True)
""",
            after="""\
import jax


def step(x):
    jax.debug.print("{}", jax.tree.map(abs, x), ordered=True)
""",
            diagnostics=(
                "5:1 HCB008 [manual] the rewritten code needs JAX >= 0.4.25 (jax.tree.map); the target JAX is 0.4.20: raise the project's `jax` requirement, or migrate with --strategy compat",
            ),
            options={"target_jax": (0, 4, 20)},
        ),
    ),
)


@handles(ModuleEnd(), reports=(TARGET_TOO_OLD,))
def report_old_target(site: ModuleSite, ctx: ReportContext) -> None:
    """The module as written needs a JAX newer than the target: computed from its code
    (hcmigrate.native_needs), in a module the rewrite changed to the modern API or one that
    uses what it writes (a tree migrated already), so a second run says what the first did."""
    target = site.options.target_jax
    if (
        site.options.strategy != "native"
        or target is None
        or any(d.code == TARGET_TOO_OLD.code for d in site.diagnostics)
    ):
        return
    rewritten = site.code is not None and site.code != site.text
    # (in a module the run rewrites, what the rewrite added: the project's own uses need
    # nothing of the run; in one it leaves, what it uses)
    several = site.options.several_devices
    needs = (
        written_needs(site.text, site.code, several) if rewritten else needs_of(site.text, several)
    )
    above = needs.above(target)
    raisable = site.options.floor_raisable_to
    if above and raisable is not None and above[0][2] <= raisable:
        return  # (the run raises the project's floor to it: its metadata line says so)
    if not above or not (
        any(d.code in MODERN_API_CODES for d in site.diagnostics)
        or any(name.split("(")[0] in NATIVE_SINCE for name, _, _ in needs.uses)
    ):
        return
    newest = above[0][2]
    names = ", ".join(dict.fromkeys(name for name, _, since in above if since == newest))
    ctx.report(
        TARGET_TOO_OLD,
        None,
        f"the rewritten code needs JAX >= {_shown(newest)} ({names}); the target JAX is "
        f"{_shown(target)}: raise the project's `jax` requirement, or migrate with "
        "--strategy compat",
        line=source_line(site.text, site.code, above[0][1]) if site.code else above[0][1],
    )


def _shown(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


# What the rewrite writes, as triggers: a module migrated already holds no legacy name, and
# only these bring it to the module-end check above (the pre-filter reads each rule's
# triggers); the check itself is report_old_target's, once per module, on its whole code.
@handles(ModernCall(ORDERED_CALLBACK_NAMES, keyword="ordered"), reports=(TARGET_TOO_OLD,))
def visit_migrated_callback(site: ModernCallSite, ctx: RuleContext) -> None:
    """An ordered jax.debug.callback or io_callback: see report_old_target."""


@handles(ModernCall(ORDERED_PRINT_NAMES, keyword="ordered"), reports=(TARGET_TOO_OLD,))
def visit_migrated_print(site: ModernCallSite, ctx: RuleContext) -> None:
    """An ordered jax.debug.print: see report_old_target."""
