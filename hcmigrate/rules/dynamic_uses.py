"""HCB009: host_callback reached through a string that is code, where no rule can follow it:
`importlib.import_module("jax.experimental.host_callback")`, code run with `exec`/`eval`/
`compile` or by `python -c` in a subprocess, a name looked up with `getattr` or patched with
`mock.patch`. Each such string that names host_callback is reported for a human, so that
`--check` does not pass such a module. Other strings (a message, a regex, a JSON payload that
mention the module) are text, not uses. Magics of notebooks: hcmigrate.notebook.
"""

from __future__ import annotations

import ast
import re

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import ModuleSite, ReportContext
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
                "3:1 HCB009 [manual] a string names host_callback (import_module, exec/eval, python -c or getattr): hcmigrate cannot follow it; port this use by hand",
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
    lines = sorted({node.lineno for node in code_strings(tree) if _NAMES_LEGACY.search(node.value)})
    for line in lines:
        ctx.report(
            DYNAMIC_USE,
            None,
            "a string names host_callback (import_module, exec/eval, python -c or getattr): "
            "hcmigrate cannot follow it; port this use by hand",
            line=line,
        )


# Calls whose string arguments are code, a module's name or a name looked up in a module:
# builtins called by name (`re.compile` is not one), and functions reached through a module.
_CODE_BUILTINS = {
    "exec",
    "eval",
    "compile",
    "__import__",
    "getattr",
    "hasattr",
    "setattr",
    "delattr",
}
_CODE_FUNCTIONS = {"import_module", "find_spec", "run_module", "patch", "object"}  # (patch.object)


def code_strings(tree: ast.AST):
    """The string constants of `tree` that are code: the arguments of the calls above, and the
    command after `-c` in an argument list (`[sys.executable, "-c", code]`); a name given
    there stands for the strings assigned to it."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in _CODE_BUILTINS) or (
            isinstance(func, ast.Attribute) and func.attr in _CODE_FUNCTIONS | {"exec", "eval"}
        ):
            code = [*node.args, *(k.value for k in node.keywords)]
        else:
            code = [
                after
                for arg in node.args
                if isinstance(arg, (ast.List, ast.Tuple))
                for before, after in zip(arg.elts, arg.elts[1:])
                if isinstance(before, ast.Constant) and before.value == "-c"
            ]
        for expr in code:
            yield from _strings_of(expr, assigned)


def _strings_of(expr: ast.expr, assigned: dict[str, list[ast.expr]]):
    values = [expr]
    if isinstance(expr, ast.Name):
        values += assigned.get(expr.id, [])
    for value in values:
        for node in ast.walk(value):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node
