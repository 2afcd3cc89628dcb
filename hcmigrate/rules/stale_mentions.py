"""HCB010: a docstring or comment that names the removed API at a site the rewrite changed
(a docstring "Wrapper around host_callback.id_print" above a function whose print is now a
`jax.debug.callback`) is flagged, not left silently stale: the codemod never rewrites prose.

Read from the module's text once it is migrated: the module's docstring, the docstrings of the
functions holding a rewritten site, and the comments on a rewritten site's line or in the block
of comment lines right above it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from hcmigrate.diagnostics import Level
from hcmigrate.rules.context import ModuleSite, ReportContext
from hcmigrate.rules.spec import Example, ModuleEnd, Rule, handles

STALE_MENTION = Rule(
    code="HCB010",
    name="stale-mention-of-removed-api",
    level=Level.NOTE,  # (prose: nothing rewritten, the run does not fail on it)
    legacy='"""Prints through host_callback.id_print."""  (above a rewritten site)',
    modern="(reported: the text is left for its author)",
    summary="A docstring or comment at a rewritten site that still names the removed API is "
    "pointed out; the codemod does not rewrite prose.",
    examples=(
        Example(
            before='''\
from jax.experimental import host_callback as hcb


def show(x):
    """Wrapper around host_callback.id_print."""
    return hcb.id_print(x * 2.0, what="x")
''',
            after='''\
import jax
import numpy as np


def show(x):
    """Wrapper around host_callback.id_print."""
    value = x * 2.0
    jax.debug.callback(
        lambda v: print("what: x", np.array2string(np.asarray(v)), sep="\\n"),
        value,
        ordered=True,
    )
    return value
''',
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "6:12 HCB201 [fixed-with-behaviour-note] id_print -> jax.debug.callback(lambda v: print(...), ..., ordered=True), printing legacy's text: under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
                "5:1 HCB010 [note] the docstring of `show` still names the removed host_callback API (`host_callback.id_print`), which the rewrite at line 6 replaced: update its text by hand",
            ),
        ),
    ),
)

# The codes of sites the rewrite changed into modern code (not imports, not notes).
_REWRITTEN = re.compile(r"HCB[1-4]\d\d")
# (the legacy module by its full name or with one of its functions, or a function's name;
# a bare `host_callback` may be another module of that name)
_MENTION = re.compile(
    r"\b(?:jax\.experimental\.host_callback|(?:host_callback|hcb)\.(?:id_tap|id_print|call|"
    r"barrier_wait)|id_tap|id_print|barrier_wait|outside_call_p)\b"
)


@handles(ModuleEnd(), reports=(STALE_MENTION,))
def report_stale_mentions(site: ModuleSite, ctx: ReportContext) -> None:
    lines = sorted(
        {
            d.line
            for d in site.diagnostics
            if _REWRITTEN.fullmatch(d.code) and d.level in (Level.FIXED, Level.FIXED_WITH_NOTE)
        }
    )
    if not lines or site.options.strategy != "native":
        return
    tree = site.tree if site.tree is not None else _parse(site.text)
    if tree is None:
        return
    for where, line, text, rewritten in _docstrings(tree, lines):
        _report(ctx, f"the docstring of {where}", line, text, rewritten)
    for line, text, rewritten in _comments(site.text, lines):
        _report(ctx, "this comment", line, text, rewritten)


def _report(ctx: ReportContext, what: str, line: int, text: str, rewritten: int) -> None:
    found = _MENTION.search(text)
    if found is None:
        return
    ctx.report(
        STALE_MENTION,
        None,
        f"{what} still names the removed host_callback API (`{found.group(0)}`), which the "
        f"rewrite at line {rewritten} replaced: update its text by hand",
        line=line,
    )


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _docstrings(tree: ast.Module, lines: list[int]):
    """(what, line, text, a rewritten line) of the module's docstring and of each function's
    holding a rewritten line."""
    found = []
    doc = _docstring_node(tree)
    if doc is not None:
        found.append(("the module", doc.lineno, doc.value.value, lines[0]))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inside = [n for n in lines if node.lineno <= n <= (node.end_lineno or node.lineno)]
        doc = _docstring_node(node)
        if inside and doc is not None:
            found.append((f"`{node.name}`", doc.lineno, doc.value.value, inside[0]))
    return found


def _docstring_node(node) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[0]
    return None


def _comments(text: str, lines: list[int]):
    """(line, text, the rewritten line) of comments on a rewritten line or in the block of
    comment lines right above it."""
    comments: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    source = text.splitlines()
    found = []
    for line in lines:
        if line in comments:
            found.append((line, comments[line], line))
        above = line - 1
        while above in comments and source[above - 1].lstrip().startswith("#"):
            found.append((above, comments[above], line))
            above -= 1
    return found
