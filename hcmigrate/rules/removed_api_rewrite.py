"""What the JAX-removals rules (JAX1xx, hcmigrate/rules/removed_*.py) share: the spelling a
row's replacement gets at a site, and the rewrite of imports of removed names.

Every name and version comes from the row (hcmigrate.jax_removals); a rule says only how
its rows' uses are rewritten or reported, and how safe that is (its level).
"""

from __future__ import annotations

import re

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.jax_removals import (
    IMPORTED_WITH_JAX,
    Kind,
    RemovedApi,
    guard_of,
    replacement_first,
    version,
)
from hcmigrate.removed_api_scan import ROOT
from hcmigrate.rules.context import REMOVE_STATEMENT, RemovedApiSite, RuleContext
from hcmigrate.rules.nodes import dotted, dotted_name, parse
from hcmigrate.rules.spec import Rule

_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_NUMBER = re.compile(r"-?\d[\d.]*")

# The rule of each code, for the imports of removed names (one import statement may take
# names of several rules): each rule module registers its record.
RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    RULES[rule.code] = rule
    return rule


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def replacement_for(row: RemovedApi, ctx: RuleContext, prefer_portable: bool = False) -> str | None:
    """The spelling of the row's replacement that exists in the oldest JAX the project
    declares (the target JAX): the replacement, or the portable spelling where the target
    predates the replacement; None where neither works across the declared range. Where the
    run raises the floor, a portable spelling the declared floor has is preferred: only what
    the host_callback rewrite needs raises it."""
    if row.replacement is None:
        return None
    if prefer_portable and row.portable:
        return row.portable
    since = version(row.replacement_since) if row.replacement_since else None
    if since and row.portable and not ctx.declared_at_least(since):
        return row.portable
    if since and not ctx.target_at_least(since):
        return row.portable
    return row.replacement


def too_new_message(row: RemovedApi, ctx: RuleContext) -> str:
    return (
        f"is gone from JAX {row.removed_in} and `{row.replacement}` needs JAX >= "
        f"{row.replacement_since}, older than the target JAX allows: no one spelling works "
        "across the project's JAX range; raise its `jax` requirement, or branch on "
        "jax.__version__"
    )


# ------------------------------------------------------------------------------ uses
def spelled(site: RemovedApiSite, ctx: RuleContext, replacement: str) -> cst.BaseExpression:
    """The replacement (`jax.tree.map`, `-jax.numpy.inf`, `0.0`) as this site spells its
    modules: the site's own prefix where the replacement shares it (`jnp.round_` ->
    `jnp.round`), else from an import of `jax` (and of the submodule `import jax` does not
    load)."""
    if _NUMBER.fullmatch(replacement):
        return parse(replacement)
    negative = replacement.startswith("-")
    name = replacement.lstrip("-")
    expression = _respelled(site, ctx, name)
    if not negative:
        return expression
    minus = cst.UnaryOperation(cst.Minus(), expression)
    parent = ctx.parent(site.original)
    binds_tighter = (
        isinstance(parent, (cst.Attribute, cst.Subscript))
        or (isinstance(parent, cst.Call) and parent.func is site.original)
        or (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Power))
    )
    if binds_tighter:
        return minus.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return minus


def _respelled(site: RemovedApiSite, ctx: RuleContext, name: str) -> cst.BaseExpression:
    old, new = site.qualified.split("."), name.split(".")
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    node = site.updated
    for _ in range(len(old) - common):
        node = node.value if isinstance(node, cst.Attribute) else None
    if common and isinstance(node, (cst.Name, cst.Attribute)):
        for part in new[common:]:
            node = cst.Attribute(value=node, attr=cst.Name(part))
        _import_module_of(ctx, new, common)
        return node
    _import_module_of(ctx, new, 1)
    return dotted(ctx.dotted(name))


def _import_module_of(ctx: RuleContext, parts: list[str], common: int) -> None:
    """`import jax.extend.core` where the new spelling reaches into a module that neither the
    site's prefix nor `import jax` loads."""
    module = ".".join(parts[:-1])
    if len(parts) - 1 > max(common, 1) and module not in IMPORTED_WITH_JAX:
        ctx.import_submodule(module)


def rename(
    site: RemovedApiSite,
    ctx: RuleContext,
    rule: Rule,
    level: Level | None = None,
    note: str = "",
) -> cst.BaseExpression | None:
    """Rewrite a use of a renamed or moved name; a manual finding where no spelling exists
    in the declared JAX range, or the row has no mechanical replacement."""
    row = site.row
    replacement = replacement_for(row, ctx)
    if row.mechanical and replacement is None and _guard_for(row, row.name, ctx):
        return _guarded_use(site, ctx, rule)
    if not row.mechanical or replacement is None:
        return report_manual(site, ctx, rule)
    new = spelled(site, ctx, replacement)
    old = f"`{code_of(site.original)}`"
    if site.star_import:  # (a bare name: say where it came from)
        old += f" (bound by `from {site.star_import} import *`)"
    message = f"{old} -> `{code_of(new)}`" + (f": {note}" if note else "")
    ctx.report(rule, site.original, message, level=level)
    return new


def _guarded_use(site: RemovedApiSite, ctx: RuleContext, rule: Rule):
    """`core.Literal` where the project's range starts before `jax.extend.core.Literal` and
    `jax.core.Literal` is gone from the current JAX: the name a module-level guarded import
    binds (`try: from jax.extend.core import Literal / except ImportError: from jax.core
    import Literal`), added once after the module's imports."""
    row = site.row
    module, _, name = row.name.rpartition(".")

    def statement(bound: str) -> str:
        asname = None if bound == name else cst.AsName(name=cst.Name(bound))
        alias = cst.ImportAlias(name=cst.Name(name), asname=asname)
        return code_of(guarded_import(row, module, alias, row.replacement))

    local = ctx.module_binding(f"guarded:{row.name}", name, statement)
    if local is None:  # (the site's scope binds the name the guarded import binds)
        return report_manual(site, ctx, rule)
    ctx.report(
        rule,
        site.original,
        f"`{code_of(site.original)}` -> `{local}`, a guarded import: `{row.replacement}`, "
        f"else `{row.name}`",
    )
    return cst.Name(local)


def report_manual(site: RemovedApiSite, ctx: RuleContext, rule: Rule) -> None:
    row = site.row
    if row.replacement is not None and row.mechanical and row.replacement_since:
        why = too_new_message(row, ctx)
    else:
        why = f"was removed in JAX {row.removed_in}: {row.advice or row.replacement}"
    ctx.report(rule, site.original, f"`{row.name}` {why}", level=Level.MANUAL)
    return None


def report_target(site: RemovedApiSite, ctx: RuleContext, what: str) -> None:
    """A removed name of JAX's own modules that the code sets or deletes (`del jax.tree_map`,
    a shim `jax.tree_map = jax.tree_util.tree_map`): kept as it is, a manual finding. Its
    replacement there would set or delete JAX's current API (`del jax.tree.map`) for the
    whole process."""
    row = site.row
    new = replacement_for(row, ctx) if row.mechanical else None
    instead = f"; renaming it would change JAX's own `{new}`" if new else ""
    ctx.report(
        RULES[row.rule],
        site.original,
        f"`{code_of(site.original)}` is {what}: a removed JAX name is only rewritten where "
        f"it is read, so this is left as it is{instead}; JAX {row.removed_in} has no "
        f"`{row.name}`: drop or guard this by hand",
        level=Level.MANUAL,
    )
    return None


def rename_or_import(
    site: RemovedApiSite,
    ctx: RuleContext,
    rule: Rule,
    level: Level | None = None,
    note: str = "",
):
    """The usual handler of a rule of renamed names: imports rewritten, uses renamed."""
    if isinstance(site.original, (cst.Import, cst.ImportFrom)):
        return rewrite_import(site, ctx)
    return rename(site, ctx, rule, level, note)


# ------------------------------------------------------------------------------ imports
def rewrite_import(site: RemovedApiSite, ctx: RuleContext):
    """`from jax import tree_map as tm` -> `from jax.tree_util import tree_map as tm` (every
    use of `tm` keeps working), `from jax.config import config` -> `from jax import config`,
    `import jax.linear_util as lu` -> `import jax.extend.linear_util as lu`; a name no one
    spelling serves across the project's JAX range, where its row says how, becomes a guarded
    import (`guarded_import`). Names with no importable replacement are reported, and the
    statement is left as it is."""
    found = _moves(site, ctx)
    if found is None:
        return None
    moves, guarded = found
    node = site.updated
    if isinstance(node, cst.Import) and guarded:
        return _guarded_statement(site, ctx, node, guarded)
    if isinstance(node, cst.Import):
        new_names = [moves.get(id(a), a) for a in node.names]
        # (`import jax.config` -> `import jax` beside the module's own `import jax`: a second
        # one is flake8's F811; the name is bound already)
        unmoved = {id(b) for b in node.names}
        plain = {dotted_name(b.name) for b in new_names if id(b) in unmoved and b.asname is None}
        new_names = [
            a
            for a in new_names
            if id(a) in unmoved
            or a.asname is not None
            or not (
                dotted_name(a.name) in plain
                or ctx.imported_plainly(dotted_name(a.name) or "", site.original)
            )
        ]
        if not new_names:
            return REMOVE_STATEMENT
        if len(new_names) == len(node.names):
            return node.with_changes(names=new_names)
        last = new_names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return node.with_changes(names=[*new_names[:-1], last])
    kept = [a for a in node.names if id(a) not in moves and id(a) not in guarded]
    groups: dict[str, list[cst.ImportAlias]] = {}
    for alias in node.names:
        if id(alias) in moves:
            module, new_alias = moves[id(alias)]
            groups.setdefault(module, []).append(new_alias)
    statements = [
        cst.ImportFrom(module=dotted(module), names=_with_commas(aliases, False))
        for module, aliases in groups.items()
    ]
    tries = list(guarded.values())
    if not kept and not statements:  # (the guarded imports replace the statement)
        for statement in tries:
            ctx.insert_before(site.original, statement)
        ctx.replace_statement(site.original)
        return node
    if not kept:
        first, *rest = statements
        result = node.with_changes(module=first.module, names=_with_commas(first.names, node))
    else:
        result, rest = node.with_changes(names=_with_commas(kept, node)), statements
    for statement in [*rest, *tries]:
        ctx.insert_after(site.original, statement)
    return result


def _guarded_statement(site: RemovedApiSite, ctx: RuleContext, node: cst.Import, guarded: dict):
    """`import jax.linear_util as lu, numpy as np` where the project's floor predates
    `jax.extend.linear_util`: the guarded import of each moved module before the statement,
    which keeps its other names (or goes)."""
    for alias in node.names:
        if id(alias) in guarded:
            ctx.insert_before(site.original, guarded[id(alias)])
    kept = [a for a in node.names if id(a) not in guarded]
    if not kept:
        ctx.replace_statement(site.original)
        return node
    last = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=[*kept[:-1], last])


def guarded_import(row: RemovedApi, module: str, alias: cst.ImportAlias, newest: str | None):
    """`from module import <alias>` guarded: it tries `newest` (a dotted name; None: the name
    as imported) and, where that import fails, falls back to the removed spelling (guard
    "old", jax_removals.guard_of) or binds None ("none"). `module` None: `import <alias>`
    (a module bound by its `as` name), which tries `import <newest> as ...`. Also what
    scripts/measure_jax_removals.py runs on real JAX."""
    name = dotted_name(alias.name) or ""
    if module is None:
        bound = alias.asname.name.value if alias.asname else name
        imported = f"import {name} as {bound}"
        tried = f"import {newest} as {bound}" if newest is not None else imported
    else:
        bound = alias.asname.name.value if alias.asname else name
        imported = f"from {module} import {name}" + (f" as {bound}" if bound != name else "")
        tried = imported
        if newest is not None:
            new_module, _, new_name = newest.rpartition(".")
            tried = f"from {new_module} import {new_name}" + (
                f" as {bound}" if bound != new_name else ""
            )
    fallback = imported if guard_of(row) == "old" else f"{bound} = None"
    return cst.parse_statement(f"try:\n    {tried}\nexcept ImportError:\n    {fallback}\n")


def _guard_for(row: RemovedApi, real: str, ctx: RuleContext) -> str | None:
    """The name a guarded import of `real` tries first ("": the name as imported); None where
    no guarded import is written (the row has no guard, or one spelling serves the range).
    What decides is the floor the project declares, not the one the run may raise it to: only
    what the host_callback rewrite needs raises the floor (netket: `from jax import
    linear_util as lu` on a jax>=0.3.16 floor is guarded, not a raise to 0.4.16 and of its
    Python floor to 3.9). With no floor known, the name moves (the floor it then needs is
    said). A moved module's names are guarded as the module is (`from jax.linear_util import
    wrap_init`)."""
    guard = guard_of(row)
    inside = row.kind is Kind.MODULE and real.startswith(row.name + ".")
    if guard is None or not (real == row.name or inside):
        return None
    if guard == "none":  # (None from the release that removed it, whatever the range)
        return "" if real == row.name else None
    first = replacement_first(row)
    if not row.replacement or first is None or ctx.target_jax is None:
        return None  # (no floor known: moved to the replacement, which says what it needs)
    if ctx.declared_at_least(first):
        return None  # (the replacement alone serves the range: moved as usual)
    return row.replacement + real[len(row.name) :]


def _moves(site: RemovedApiSite, ctx: RuleContext) -> tuple[dict, dict] | None:
    """For each alias of the import taking a removed name: its new form (Import: the alias;
    ImportFrom: (module, alias)), or its guarded import (a `try` statement). None: a name has
    no importable replacement (reported)."""
    moves: dict = {}
    guarded: dict = {}
    for alias, row, real in site.aliases:
        rule = RULES[row.rule]
        # (`import jax.linear_util as lu` is guarded as `from jax import linear_util as lu`
        # is; `import jax.linear_util` binds `jax`, whose uses are renamed)
        guardable = isinstance(site.original, cst.ImportFrom) or (
            alias.asname is not None and row.kind is Kind.MODULE
        )
        newest = _guard_for(row, real, ctx) if guardable else None
        if newest is not None:
            module = real.rpartition(".")[0] if isinstance(site.original, cst.ImportFrom) else None
            guarded[id(alias)] = guarded_import(row, module, alias, newest or None)
            bound = alias.asname.name.value if alias.asname else real.rpartition(".")[2]
            if guard_of(row) == "old":
                ctx.report(rule, alias, f"import of `{real}` -> guarded: `{newest}`, else `{real}`")
            else:
                ctx.report(
                    rule,
                    alias,
                    f"import of `{real}` guarded: `{bound} = None` on JAX >= {row.removed_in}, "
                    "where code keyed on it never matches",
                    level=Level.FIXED_WITH_NOTE,
                )
            continue
        replacement = replacement_for(row, ctx, prefer_portable=True)
        if not row.mechanical or replacement is None or not _DOTTED.fullmatch(replacement):
            ctx.report(rule, alias, *_import_manual(row, ctx))
            return None
        new_real = replacement + real[len(row.name) :]
        if isinstance(site.original, cst.Import):
            moves[id(alias)] = alias.with_changes(name=dotted(new_real))
        else:
            module, _, last = new_real.rpartition(".")
            bound = alias.asname.name.value if alias.asname else dotted_name(alias.name)
            if not module or module == ROOT and last == ROOT:
                ctx.report(rule, alias, *_import_manual(row, ctx))
                return None
            asname = None if bound == last else cst.AsName(name=cst.Name(bound))
            moves[id(alias)] = (module, cst.ImportAlias(name=cst.Name(last), asname=asname))
        ctx.report(rule, alias, f"import of `{real}` -> `{new_real}`")
    return moves, guarded


def _import_manual(row: RemovedApi, ctx: RuleContext) -> tuple[str, Level]:
    if row.replacement is not None and row.mechanical and row.replacement_since:
        return f"`{row.name}` {too_new_message(row, ctx)}", Level.MANUAL
    return (
        f"`{row.name}` was removed in JAX {row.removed_in}: "
        f"{row.advice or f'use {row.replacement}'}",
        Level.MANUAL,
    )


def _with_commas(aliases, node) -> list[cst.ImportAlias]:
    """The aliases with a comma after each but the last (which keeps one only inside
    parentheses)."""
    parenthesised = bool(node) and node.lpar is not None
    out = []
    for i, alias in enumerate(aliases):
        last = i == len(aliases) - 1
        if last and not parenthesised:
            out.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        elif not last and alias.comma is cst.MaybeSentinel.DEFAULT:
            out.append(
                alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            )
        else:
            out.append(alias)
    return out
