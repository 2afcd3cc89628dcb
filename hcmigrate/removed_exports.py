"""A run's modules that export a JAX function that lost a keyword under their own names, and
the modules that may call it through them (issue 36).

`backend.py` binds `clip = jnp.clip` (or `from jax.numpy import clip`, a namespace or a class
body holding it); `model.py` does `from pkg import backend as xnp` and calls
`xnp.clip(x, a_min=0)`, which fails on the JAX that removed `a_min`. `model.py` names no JAX
API the pre-filter looks for, so the run would never read it. This pass reads the run's
candidates that bind such a function at module level (hcmigrate.codemod.removed_aliases:
`exports_of`), and makes candidates of the other modules that pass a removed keyword and name
one of those modules; each candidate's options then carry the table ("pkg.backend.clip" ->
"jax.numpy.clip"), which the codemod's JAX102 rule reads where a call's callee resolves to one
of them.
"""

from __future__ import annotations

import ast
import re

from hcmigrate.codemod.removed_aliases import ValueAliases, exports_of
from hcmigrate.codemod.scopes import ScopeAnalysis
from hcmigrate.jax_removals import REMOVED_APIS, Kind
from hcmigrate.project_model.bindings import module_name
from hcmigrate.prefilter import read_bytes

FUNCTIONS = frozenset(r.name for r in REMOVED_APIS if r.kind is Kind.KEYWORD)
# (`a=` alone is too common a word to select files by; a call passing only it is still
# rewritten in the modules the run reads)
_KEYWORDS = re.compile(
    rb"\b(?:"
    + b"|".join(
        re.escape(k.encode())
        for k in sorted({r.keyword for r in REMOVED_APIS if r.kind is Kind.KEYWORD})
        if len(k) > 1
    )
    + rb")\s*="
)
_LAST_NAMES = tuple(sorted({name.rsplit(".", 1)[1].encode() for name in FUNCTIONS}))


def find(scanned, targets) -> tuple[tuple[tuple[str, str], ...], set[int]]:
    """(the run's table of exported names, the targets that may call through them and are
    not candidates yet) for a pre-filter scan (hcmigrate.prefilter.ScanResult)."""
    table: dict[str, str] = {}
    for i in sorted(scanned.candidates):
        if targets[i].notebook:
            continue
        data = read_bytes(targets[i].display)
        if data is None or not any(name in data for name in _LAST_NAMES):
            continue
        try:
            text = data.decode("utf-8-sig")
            scopes = ScopeAnalysis(text, ast.parse(text))
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue  # (the per-file step reports what is wrong with it)
        module = module_name(targets[i].display)
        for name, qualified in exports_of(scopes, ValueAliases(scopes, FUNCTIONS)).items():
            table[f"{module}.{name}"] = qualified
    if not table:
        return (), set()
    stems = {name.rsplit(".", 1)[0].rsplit(".", 1)[-1].encode() for name in table}
    words = re.compile(rb"\b(?:" + b"|".join(re.escape(s) for s in sorted(stems)) + rb")\b")
    callers = set()
    for i, target in enumerate(targets):
        if i in scanned.candidates or i in scanned.generated or target.notebook:
            continue
        data = read_bytes(target.display)
        if data is not None and _KEYWORDS.search(data) and words.search(data):
            callers.add(i)
    return tuple(sorted(table.items())), callers


def add_callers(scanned, callers: set[int]) -> None:
    """The callers become candidates of the JAX1xx rules alone (hcmigrate.prefilter)."""
    scanned.candidates |= callers
    scanned.unparsed |= callers  # (not parsed by the pre-filter: checked before libcst)
    scanned.removed_only |= callers
