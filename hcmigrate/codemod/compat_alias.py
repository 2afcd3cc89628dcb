"""The compat runtime under the module's own name for the legacy module.

A site kept on the compat runtime is spelled `hcb_compat.id_tap(...)` with
`from hcmigrate_compat import host_callback as hcb_compat`: a name that cannot clash with what
the module binds while its other sites are rewritten. Where the legacy import went (no site is
left on it) and its name is used for nothing else, a maintainer would instead write
`from hcmigrate_compat import host_callback as hcb`, and every line that only changed the module
it names stays as it was (no longer, so no new long line). That is what this pass does on the
printed module, before the written lines are laid out.
"""

from __future__ import annotations

import ast
import re

from hcmigrate.codemod.scopes import IMPORT, ScopeAnalysis
from hcmigrate.facts import COMPAT_ALIAS, COMPAT_MODULE, LEGACY_MODULE

_COMPAT_LEAF = COMPAT_MODULE.rsplit(".", 1)[1]
_GENERATED = re.compile(rf"\b{COMPAT_ALIAS}\b")


def with_module_alias(source: str, code: str, scopes: ScopeAnalysis) -> str:
    """`code` (the rewrite of `source`) with the compat alias renamed to the name the module
    imported the legacy module as, where that name is free in `code`."""
    if COMPAT_ALIAS not in code or COMPAT_ALIAS in source:
        return code  # (every `hcb_compat` of `code` is ours only when `source` has none)
    aliases = [
        key
        for key, bindings in scopes.module.bindings.items()
        if "." not in key and any(b.kind == IMPORT and b.real == LEGACY_MODULE for b in bindings)
    ]
    if not aliases:
        return code
    try:
        taken = _identifiers(ast.parse(code))
    except SyntaxError:
        return code  # (the compile check reports it)
    free = [alias for alias in aliases if alias not in taken]
    if not free:
        return code
    if free[0] == _COMPAT_LEAF:  # (`from hcmigrate_compat import host_callback`, no alias)
        code = code.replace(f"{_COMPAT_LEAF} as {COMPAT_ALIAS}", _COMPAT_LEAF)
    return _GENERATED.sub(free[0], code)


def _identifiers(tree: ast.AST) -> set[str]:
    """Every name `tree` binds or reads, in any scope."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names
