"""HCB009: host_callback reached through a string, where no rule can follow it:
`importlib.import_module("jax.experimental.host_callback")`, code run with `exec`/`eval`,
`getattr(module, "id_tap")` on such a module. Each string (not a docstring) that names
host_callback is reported for a human, so that `--check` does not pass such a module.
"""

from __future__ import annotations

import ast
import re

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import ModuleSite, ReportContext
from hcmigrate.syntax import non_docstring_strings
from hcmigrate.rules.spec import Example, ModuleEnd, Rule, handles

_NAMES_LEGACY = re.compile(r"\bhost_callback\b")
_QUOTED_LEGACY = re.compile(r"[\"'][^\n]*\bhost_callback\b")

DYNAMIC_USE = Rule(
    code="HCB009",
    name="dynamic-use",
    level=Level.MANUAL,
    legacy='importlib.import_module("jax.experimental.host_callback"), exec("... host_callback ...")',
    modern="(reported)",
    summary="A string that names host_callback is code the codemod cannot see: check it by hand.",
    examples=(
        Example(
            title="the module imported by name",
            before="""\
import importlib

hcb = importlib.import_module("jax.experimental.host_callback")
""",
            after="""\
import importlib

hcb = importlib.import_module("jax.experimental.host_callback")
""",
            diagnostics=(
                "3:1 HCB009 [manual] a string names host_callback (import_module, exec/eval or getattr): hcmigrate cannot follow it; port this use by hand",
            ),
        ),
    ),
)


@handles(ModuleEnd(), reports=(DYNAMIC_USE,))
def report_dynamic_uses(site: ModuleSite, ctx: ReportContext) -> None:
    if not _QUOTED_LEGACY.search(site.text):
        return  # (no quote before `host_callback` on its line: no string names it)
    tree = site.tree
    if tree is None:
        try:
            tree = ast.parse(site.text)
        except (SyntaxError, ValueError):
            return
    lines = sorted(
        {node.lineno for node in non_docstring_strings(tree) if _NAMES_LEGACY.search(node.value)}
    )
    for line in lines:
        ctx.report(
            DYNAMIC_USE,
            None,
            "a string names host_callback (import_module, exec/eval or getattr): "
            "hcmigrate cannot follow it; port this use by hand",
            line=line,
        )
