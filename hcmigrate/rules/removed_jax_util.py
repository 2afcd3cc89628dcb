"""JAX112: `jax.util.safe_map` / `safe_zip` (jax.util was internal, gone from JAX 0.8.0): a
call becomes the builtin's, in a list; the import of `jax.util` goes once no use is left.

`safe_map(f, *xs)` was `list(map(f, *xs))` and `safe_zip(*xs)` `list(zip(*xs))`, after a check
that the sequences have one length (ValueError where not): the rewrite drops the check (its
behaviour note). Other `jax.util` names have no public home: the import that takes them stays,
a manual finding. The calls are the sites (any import style: `import jax.util as util`, `from
jax import util`, `from jax.util import safe_map`); the clean-up after the rewrite removes the
import of what is no longer used.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.jax_removals import BY_KEY
from hcmigrate.rules.context import ImportContext, ImportSite, RemovedApiSite, RuleContext
from hcmigrate.rules.nodes import dotted_name, parse
from hcmigrate.rules.removed_api_rewrite import code_of, register, rename
from hcmigrate.rules.spec import Example, LegacyImport, RemovedJaxApi, Rule, handles

_MODULE = "jax.util"

JAX_UTIL = register(
    Rule(
        code="JAX112",
        name="removed-jax-util",
        level=Level.FIXED_WITH_NOTE,
        legacy="util.safe_map(f, xs, ys); util.safe_zip(xs, ys)",
        modern="list(map(f, xs, ys)); list(zip(xs, ys))",
        summary="`jax.util.safe_map`/`safe_zip` calls -> `list(map(...))`/`list(zip(...))`; "
        "the `jax.util` import goes when nothing else uses it (other `jax.util` names: a "
        "manual finding).",
        behaviour_note="No check that the sequences have one length: where they differ, "
        "`safe_map`/`safe_zip` raised ValueError and `map`/`zip` stop at the shortest.",
        examples=(
            Example(
                before="""\
import jax
import jax.util as util
from jax.util import safe_zip


def pairs(xs, ys):
    return util.safe_map(lambda a, b: a + b, xs, ys), safe_zip(xs, ys)
""",
                after="""\
import jax


def pairs(xs, ys):
    return list(map(lambda a, b: a + b, xs, ys)), list(zip(xs, ys))
""",
                diagnostics=(
                    "2:1 JAX112 [fixed] import of `jax.util` removed: no use left",
                    "3:1 JAX112 [fixed] import of `jax.util.safe_zip` removed: no use left",
                    "7:12 JAX112 [fixed-with-behaviour-note] `util.safe_map(...)` -> `list(map(...))`: no length check",
                    "7:55 JAX112 [fixed-with-behaviour-note] `safe_zip(...)` -> `list(zip(...))`: no length check",
                ),
            ),
            Example(
                title="another jax.util name stays: a manual finding",
                before="""\
from jax import util

firsts, seconds = util.unzip2([(1, 2), (3, 4)])
""",
                after="""\
from jax import util

firsts, seconds = util.unzip2([(1, 2), (3, 4)])
""",
                diagnostics=(
                    "1:1 JAX112 [manual] `jax.util` was removed in JAX 0.8.0: jax.util was internal: safe_map(f, *xs) is list(map(f, *xs)) and safe_zip(*xs) is list(zip(*xs)) where the lengths agree (they raised ValueError where not); copy any other helper you need",
                ),
            ),
        ),
    )
)


@handles(RemovedJaxApi(JAX_UTIL.code), reports=(JAX_UTIL,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    if isinstance(site.original, (cst.Import, cst.ImportFrom)):
        return None  # (decided once the calls are rewritten: `clean_up` below)
    row = site.row
    if not isinstance(site.original, cst.Call) or row.call_form is None:
        return rename(site, ctx, JAX_UTIL)  # (a use that is no call: a manual finding)
    call = site.updated
    args = code_of(call.with_changes(func=cst.Name("f"))).strip()[2:-1]
    new = parse(row.call_form.format(args=args))
    name = row.call_form.split("(", 2)[1]
    ctx.report(
        JAX_UTIL,
        site.original,
        f"`{code_of(site.original.func)}(...)` -> `list({name}(...))`: no length check",
    )
    return new


@handles(LegacyImport(), reports=(JAX_UTIL,))
def clean_up(site: ImportSite, ctx: ImportContext):
    """After the rewrite: an import of `jax.util` (or of names from it) whose names nothing
    uses any more goes; one still used is a manual finding."""
    original, updated = site.original, site.updated
    if not isinstance(original, (cst.Import, cst.ImportFrom)) or isinstance(
        original.names, cst.ImportStar
    ):
        return None
    taken = [(a, real, bound) for a, real, bound in _aliases(original) if _is_jax_util(real)]
    if not taken:
        return None
    unused = [(a, real) for a, real, bound in taken if not ctx.still_used(original, bound)]
    if len(unused) < len(taken):
        ctx.report(JAX_UTIL, original, _manual_message(), level=Level.MANUAL)
        return None
    for _, real in unused:
        ctx.report(JAX_UTIL, original, f"import of `{real}` removed: no use left", Level.FIXED)
    dropped = {id(a) for a, _ in unused}
    keep = [u for o, u in zip(original.names, updated.names) if id(o) not in dropped]
    if not keep:
        return cst.RemovalSentinel.REMOVE
    keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return updated.with_changes(names=keep)


def _aliases(node: cst.Import | cst.ImportFrom):
    """(alias, what it imports, the name it binds); none for a bare `import jax.util`, which
    binds `jax` (left as it is)."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            if alias.asname is not None:
                yield alias, dotted_name(alias.name) or "", alias.asname.name.value
        return
    if node.relative or node.module is None:
        return
    module = dotted_name(node.module) or ""
    for alias in node.names:
        name = dotted_name(alias.name) or ""
        yield alias, f"{module}.{name}", alias.asname.name.value if alias.asname else name


def _is_jax_util(real: str) -> bool:
    return real == _MODULE or real.startswith(_MODULE + ".")


def _manual_message() -> str:
    row = BY_KEY[_MODULE]
    return f"`{row.name}` was removed in JAX {row.removed_in}: {row.advice}"
